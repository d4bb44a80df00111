/**
 * POSTGRES: a warehouse kind (docs/warehouse.md). Events are not sent one by one: the router stages
 * their rows on Sluice's disk and src/warehouse/loads.ts loads them into the user's database
 * every `syncFrequency` minutes. Config keys follow RudderStack's POSTGRES definition
 * (rudder-integrations-config db-config.json) so workspace files carry over; its object-storage,
 * SSH and client-certificate keys are accepted and ignored, because Sluice stages on its own
 * disk and connects directly.
 */
import { t } from "elysia";
import type { PostgresConfig, PostgresSslMode } from "./config";
import { type DestinationDefinition, TransformError, configKeys, requiredKeysOf } from "../types";

const SSL_MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] as const;

/** RudderStack's exported configs carry numbers as strings ("5432", "30"); both are taken. */
const NumberOrText = t.Union([t.Integer({ minimum: 1 }), t.String({ pattern: "^[0-9]+$" })]);

export const PostgresDestinationConfig = t.Object(
  {
    host: t.String({ minLength: 1 }),
    database: t.String({ minLength: 1 }),
    user: t.String({ minLength: 1 }),
    password: t.Optional(t.String()),
    port: t.Optional(NumberOrText),
    namespace: t.Optional(t.String()),
    sslMode: t.Optional(t.Union(SSL_MODES.map((m) => t.Literal(m)))),
    skipTracksTable: t.Optional(t.Boolean()),
    skipUsersTable: t.Optional(t.Boolean()),
    /** Builds rudder_identity_merge_rules and rudder_identity_mappings (src/warehouse/identity.ts). */
    enableIDResolution: t.Optional(t.Union([t.Boolean(), t.Literal("true"), t.Literal("false")])),
    /** Minutes between loads. */
    syncFrequency: t.Optional(NumberOrText),
    /** "HH:MM" (UTC): loads run at this time of day plus multiples of syncFrequency. */
    syncStartAt: t.Optional(t.String({ pattern: "^$|^([01]?[0-9]|2[0-3]):[0-5][0-9]$" })),
    /** No scheduled load starts between these times of day (UTC); a sync asked for through the API still runs. */
    excludeWindow: t.Optional(
      t.Object(
        {
          excludeWindowStartTime: t.Optional(t.String()),
          excludeWindowEndTime: t.Optional(t.String()),
        },
        { additionalProperties: true },
      ),
    ),
  },
  { additionalProperties: true },
);

/** Keys of RudderStack's definition that Sluice stores but does not use. */
const IGNORED_KEYS = [
  "useSSH",
  "sshHost",
  "sshPort",
  "sshUser",
  "preferAppend",
  "sshPublicKey",
  "bucketProvider",
  "bucketName",
  "iamRoleARN",
  "roleBasedAuth",
  "accessKeyID",
  "accessKey",
  "accountName",
  "accountKey",
  "useSASTokens",
  "sasToken",
  "credentials",
  "secretAccessKey",
  "useSSL",
  "containerName",
  "endPoint",
  "jsonPaths",
  "useRudderStorage",
  "clientKey",
  "clientCert",
  "serverCA",
  "oneTrustCookieCategories",
  "consentManagement",
  "connectionMode",
];

export const DEFAULT_SYNC_FREQUENCY_MINUTES = 30;

/** The loader's connection settings from a destination's stored config. */
export function postgresConnection(config: Record<string, unknown>): PostgresConfig {
  const port = Number(config.port ?? 5432);
  return {
    host: String(config.host ?? ""),
    port: Number.isFinite(port) && port > 0 ? port : 5432,
    database: String(config.database ?? ""),
    user: String(config.user ?? ""),
    password: typeof config.password === "string" ? config.password : "",
    sslMode: (SSL_MODES as readonly string[]).includes(String(config.sslMode)) ? (config.sslMode as PostgresSslMode) : "disable",
  };
}

/** Minutes between scheduled loads; RudderStack's default is 30. */
export function syncFrequencyMinutes(config: Record<string, unknown>): number {
  const n = Number(config.syncFrequency);
  return Number.isFinite(n) && n > 0 ? n : DEFAULT_SYNC_FREQUENCY_MINUTES;
}

export const postgres: DestinationDefinition = {
  name: "POSTGRES",
  displayName: "Postgres",
  config: {
    defaultConfig: configKeys(PostgresDestinationConfig, IGNORED_KEYS),
    // merge gives no event rows, only identity merge rules (when enableIDResolution is on).
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias", "merge"],
    requiredKeys: requiredKeysOf(PostgresDestinationConfig),
  },
  configSchema: PostgresDestinationConfig,
  serverDelivered: true,
  // Never called by the pipeline: the router stages warehouse kinds (src/warehouse/staging.ts).
  transform() {
    throw new TransformError("POSTGRES destinations are loaded by the warehouse loader, not sent per event");
  },
};
