/** REDIS's config schema and the writes its transform hands its client (index.ts, store.ts). */
import { type Static, t } from "elysia";

/**
 * RudderStack's exported configs hold the database as text ("3"), Sluice's API may hold a number.
 * Text that is not a number means database 0, as rudder-server reads it (strconv.Atoi).
 */
const DatabaseNumber = t.Union([t.Integer({ minimum: 0 }), t.String()]);

export const RedisConfig = t.Object(
  {
    /** host:port; in cluster mode a comma-separated list of nodes. */
    address: t.String({ minLength: 1 }),
    database: t.Optional(DatabaseNumber),
    password: t.Optional(t.String()),
    prefix: t.Optional(t.String()),
    secure: t.Optional(t.Boolean()),
    skipVerify: t.Optional(t.Boolean()),
    caCertificate: t.Optional(t.String()),
    /** RudderStack takes any value other than false (absent included) as cluster mode. */
    clusterMode: t.Optional(t.Boolean()),
    useJSONModule: t.Optional(t.Boolean()),
  },
  { additionalProperties: true },
);
export type RedisConfig = Static<typeof RedisConfig>;

/** What a Redis request's body holds: RudderStack's transformer output, or a deletion. */
export type RedisWrite =
  | { message: { key: string; fields: Record<string, string> }; userId: unknown }
  | { message: { hash: string; key: string; value: string }; userId: unknown }
  | { message: { key: string; path?: string; value: unknown }; userId: unknown }
  | { delete: string[] };

/** RudderStack takes any clusterMode other than false (absent included) as cluster mode. */
export const isClusterMode = (c: RedisConfig): boolean => c.clusterMode !== false;

/**
 * The database a write selects: the configured number outside cluster mode (Redis Cluster has
 * database 0 only); none when text that is no number, which rudder-server reads as 0.
 */
export function databaseOf(c: RedisConfig): number | undefined {
  const text = c.database === undefined ? "" : String(c.database).trim();
  return !isClusterMode(c) && /^[0-9]+$/.test(text) ? Number(text) : undefined;
}
