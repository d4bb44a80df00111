/**
 * REDIS: identify traits kept as a hash per user, as RudderStack's REDIS destination keeps them.
 * The transform makes what RudderStack's transformer makes (`{message: {key, fields}, userId}`,
 * or the profiles and JSON-module shapes), carried as the request's JSON body; the kind's own
 * client (store.ts, over Bun's built-in Redis client) then writes it as rudder-server's router
 * does: HSET of the fields, HSET of one field for profiles, or a merged JSON.SET with the JSON
 * module. Deletion removes the user's key.
 */
import { isPlainObject } from "../shared";
import { type DestinationContext, type DestinationDefinition, type DestinationRequest, type SluiceEvent, TransformError, configKeys, configOf, requiredKeysOf, restRequest } from "../types";
import { RedisConfig, type RedisWrite, databaseOf } from "./config";
import { sendToRedis } from "./store";

export { RedisConfig, type RedisWrite } from "./config";

const blank = (v: unknown) => v === undefined || v === null || String(v).trim() === "";

/**
 * The `flat` package's dotted flattening as RudderStack calls it (safe: arrays stay values):
 * nested objects become `a.b.c` keys, an empty object stays an (empty) object value.
 */
function flatten(value: Record<string, unknown>, into: Record<string, unknown> = {}, prefix = ""): Record<string, unknown> {
  for (const [k, v] of Object.entries(value)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (isPlainObject(v) && Object.keys(v).length) flatten(v, into, key);
    else into[key] = v;
  }
  return into;
}

/** Values as Redis keeps them: text; lists as JSON; nulls and objects left out. */
function hashFields(flat: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(flat)) {
    if (v === null || v === undefined || isPlainObject(v)) continue;
    out[k] = Array.isArray(v) ? JSON.stringify(v) : String(v);
  }
  return out;
}

function profilesOf(event: SluiceEvent): { entity: string; idType: string; model: string } | undefined {
  const s = event.context?.sources;
  if (!isPlainObject(s) || blank(s.profiles_entity) || blank(s.profiles_id_type) || blank(s.profiles_model)) return undefined;
  return { entity: String(s.profiles_entity), idType: String(s.profiles_id_type), model: String(s.profiles_model) };
}

/** RudderStack's key: `<prefix>:user:<userId>`, the prefix trimmed, none when blank. */
export function userKeyOf(prefix: string | undefined, userId: unknown): string {
  return `${blank(prefix) ? "" : `${prefix!.trim()}:`}user:${String(userId)}`;
}

/** Where the requests go, for the Test API's view and the delivery log; the client reads the config itself. */
function endpointOf(c: RedisConfig): string {
  const first = c.address.split(",")[0]!.trim();
  const database = databaseOf(c);
  const db = database === undefined ? "" : `/${database}`;
  return `${c.secure ? "rediss" : "redis"}://${first}${db}`;
}

export function redisWrite(event: SluiceEvent, ctx: DestinationContext): RedisWrite {
  const c = configOf(ctx, RedisConfig);
  if (String(event.type).toLowerCase() !== "identify") throw new TransformError("Only Identify calls are supported");
  if (blank(event.userId)) throw new TransformError("Blank userId passed in identify event");
  const traits = isPlainObject(event.traits) ? event.traits : isPlainObject(event.context?.traits) ? event.context.traits : undefined;
  const profiles = profilesOf(event);
  if (profiles) {
    const key = `${ctx.destination.workspaceId}:${ctx.destination.id}:${profiles.entity}:${profiles.idType}:${String(event.userId)}`;
    if (c.useJSONModule) return { message: { key, path: profiles.model, value: traits ?? {} }, userId: event.userId };
    // RudderStack would send HMSET with no fields here, which Redis refuses on every retry.
    if (event.traits === undefined) throw new TransformError("context or context.traits or traits is empty");
    return { message: { hash: key, key: profiles.model, value: JSON.stringify(event.traits) }, userId: event.userId };
  }
  const key = userKeyOf(c.prefix, event.userId);
  if (c.useJSONModule) return { message: { key, value: traits ?? {} }, userId: event.userId };
  const flat: Record<string, unknown> = {};
  if (isPlainObject(event.context?.traits)) flatten(event.context.traits, flat);
  if (isPlainObject(event.traits)) flatten(event.traits, flat);
  const fields = hashFields(flat);
  if (!Object.keys(fields).length) throw new TransformError("context or context.traits or traits is empty");
  return { message: { key, fields }, userId: event.userId };
}

function asRequest(c: RedisConfig, write: RedisWrite): DestinationRequest {
  return restRequest({ endpoint: endpointOf(c), json: write as unknown as Record<string, unknown> });
}

export const redis: DestinationDefinition = {
  name: "REDIS",
  displayName: "Redis",
  config: {
    defaultConfig: configKeys(RedisConfig, ["consentManagement", "connectionMode", "oneTrustCookieCategories", "ketchConsentPurposes"]),
    supportedMessageTypes: ["identify"],
    requiredKeys: requiredKeysOf(RedisConfig),
  },
  configSchema: RedisConfig,
  transform(event, ctx) {
    return [asRequest(configOf(ctx, RedisConfig), redisWrite(event, ctx))];
  },
  /** rudder-server's regulation worker deletes `user:<userId>`; Sluice deletes the key it wrote, prefix included. */
  deleteUsers(users, ctx) {
    const c = configOf(ctx, RedisConfig);
    return [asRequest(c, { delete: users.map((u) => userKeyOf(c.prefix, u.userId)) })];
  },
  send: sendToRedis,
  deletionByUserIdOnly: true,
  notInTestApi: "a key-value store",
};
