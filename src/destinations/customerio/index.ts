/**
 * CUSTOMERIO: Customer.io's Track API (Basic auth siteID:apiKey) — identify as PUT
 * /customers/{id}, events to /customers/{id}/events or /events for anonymous users, device
 * tokens, merges, objects (group) through /v2/batch, and deletion as DELETE /customers/{id}.
 * These v1 calls are what RudderStack sends by default. A destination that sets
 * `useTrackApiV2Batch` sends every event as a Track API v2 operation in `/v2/batch` envelopes
 * instead (track-api-v2.ts), as RudderStack's router does for the workspaces its operator names
 * (CUSTOMERIO_BATCHING_FRAMEWORK_ENABLED_WORKSPACE_IDS, unset by default).
 */
import { type Static, t } from "elysia";
import { endpointFor } from "../base-url";
import { basicAuth, batchConsecutive, chunkItems, firstPresent, getPath, isAppleFamily, isEventAllowed, eventFilteringSchema, withoutUndefined } from "../shared";
import { type DestinationContext, type DestinationDefinition, type SluiceEvent, TransformError, configKeys, configOf, requireConfig, restRequest } from "../types";
import { readBatchAnswer } from "./batch-answer";
import { ADDRESS_FIELDS, DEVICE_DELETE_EVENT, DEVICE_EVENTS, EMAIL, TIMESTAMP, USER_ID, isEmail, objectOperation, setAttributePath, withExternalId } from "./event-fields";
import { envelopes, trackApiV2Request, usesTrackApiV2 } from "./track-api-v2";

type Obj = Record<string, any>;

const API_US = "https://track.customer.io/api";
const API_EU = "https://track-eu.customer.io/api";
// The v1 calls' objects go to /v2/batch at most 1000 and 500KB per call, as RudderStack's v1 router sends them.
const BATCH_MAX = 1000;
const BATCH_MAX_BYTES = 500_000;
/** Identifiers and createdAt are sent through their own fields, not as attributes. */
const NOT_ATTRIBUTES = ["address", "createdAt", "userId", "anonymousId"];

export const CustomerIoConfig = t.Object(
  {
    apiKey: t.String({ minLength: 1 }),
    siteID: t.String({ minLength: 1 }),
    datacenter: t.Optional(t.String()),
    deviceTokenEventName: t.Optional(t.String()),
    // Sluice's own key: every event as a Track API v2 operation in /v2/batch envelopes (track-api-v2.ts).
    useTrackApiV2Batch: t.Optional(t.Boolean()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);
export type CustomerIoConfig = Static<typeof CustomerIoConfig>;

const api = (config: CustomerIoConfig) => (config.datacenter === "EU" ? API_EU : API_US);
/** Ids and tokens are URL-encoded in paths (an email's "@" included), as RudderStack does. */
const pathParam = (v: unknown) => (typeof v === "string" ? encodeURIComponent(v) : String(v));
const seconds = (ts: unknown) => Math.floor(new Date(String(ts)).getTime() / 1000);

/** Cuts a string to at most `max` UTF-8 bytes without splitting a character. */
function truncateBytes(s: string, max: number): string {
  let bytes = 0;
  let out = "";
  for (const ch of s) {
    bytes += Buffer.byteLength(ch);
    if (bytes > max) break;
    out += ch;
  }
  return out;
}

type Built = { method: "PUT" | "POST" | "DELETE"; url: string; body: Obj };

/**
 * RudderStack escapes only the first dot of a trait name before writing it as a path, so
 * `a.b` stays one attribute and `a.b.c` becomes `{"a.b": {c}}`; names that could reach an
 * object's prototype are skipped, as RudderStack's safe setter does.
 */
function setTraitAttribute(body: Obj, key: string, value: unknown): void {
  const [first, second, ...rest] = key.split(".");
  setAttributePath(body, second === undefined ? [first!] : [`${first}.${second}`, ...rest], value);
}

function identify(event: SluiceEvent, userId: unknown, base: string): Built {
  const id = userId || firstPresent(event, EMAIL);
  if (!id) throw new TransformError("userId or email is not present");
  const traits: Obj = (event.traits ? event.traits : event.context?.traits) ?? {};
  const body: Obj = {};
  for (const f of ADDRESS_FIELDS) body[f] = getPath(traits, `address.${f}`);
  for (const [key, value] of Object.entries(traits)) if (!NOT_ATTRIBUTES.includes(key)) setTraitAttribute(body, key, value);
  // user_properties is a deprecated place for attributes that RudderStack still honours; it writes
  // each name as a path, unescaped, so `a.b` nests where a trait of that name would not.
  if (event.user_properties && typeof event.user_properties === "object") {
    for (const [key, value] of Object.entries(event.user_properties)) setAttributePath(body, key.split("."), value);
  }
  const createdAt = firstPresent(event, ["traits.createdAt", "context.traits.createdAt"]);
  if (createdAt) body.created_at = seconds(createdAt);
  const ts = firstPresent(event, TIMESTAMP);
  if (ts) body._timestamp = seconds(ts);
  if (event.anonymousId) body.anonymous_id = event.anonymousId;
  return { method: "PUT", url: `${base}/v1/customers/${pathParam(id)}`, body };
}

function alias(event: SluiceEvent, userId: unknown, base: string): Built {
  if (!userId || !event.previousId) throw new TransformError("Both userId and previousId are mandatory for merge operation");
  return {
    method: "POST",
    url: `${base}/v1/merge_customers`,
    body: {
      primary: { [isEmail(userId) ? "email" : "id"]: userId },
      secondary: { [isEmail(event.previousId) ? "email" : "id"]: event.previousId },
    },
  };
}

function device(event: SluiceEvent, token: unknown): Obj {
  const dev: Obj = { ...event.properties, id: token, last_used: seconds(event.timestamp || event.originalTimestamp) };
  const type = getPath(event, "context.device.type");
  if (type && typeof type === "string") dev.platform = isAppleFamily(type) ? "ios" : type.toLowerCase();
  return dev;
}

/** Customer.io limits anonymous event names to 100 bytes. */
function anonymousName(event: SluiceEvent, name: unknown): string {
  if (event.type === "screen") return `Viewed ${truncateBytes(String(event.event || event.properties?.name || ""), 86)} Screen`;
  if (typeof name !== "string") throw new TransformError("Event Name type should be a string");
  return truncateBytes(name, 100);
}

function eventCall(event: SluiceEvent, name: string | undefined, evType: string, userId: unknown, base: string, config: CustomerIoConfig): Built {
  const rawId = userId || firstPresent(event, EMAIL);
  const id = rawId ? pathParam(rawId) : undefined;
  const token = getPath(event, "context.device.token");
  if (name === DEVICE_DELETE_EVENT) {
    if (!id || !token) throw new TransformError("userId/email or device_token not present");
    return { method: "DELETE", url: `${base}/v1/customers/${id}/devices/${pathParam(token)}`, body: {} };
  }
  const isDeviceEvent = DEVICE_EVENTS.includes(name as string) || config.deviceTokenEventName === name;
  if (isDeviceEvent && id && token) return { method: "PUT", url: `${base}/v1/customers/${id}/devices`, body: { device: device(event, token) } };
  const ts = firstPresent(event, TIMESTAMP);
  const body: Obj = { data: event.properties, name, type: evType, timestamp: ts ? seconds(ts) : undefined };
  if (id) return { method: "POST", url: `${base}/v1/customers/${id}/events`, body };
  const anonName = anonymousName(event, name);
  if (!event.anonymousId) throw new TransformError("Anonymous id/ user id is required");
  return { method: "POST", url: `${base}/v1/events`, body: { ...body, anonymous_id: event.anonymousId, name: anonName } };
}

/** The event name (and Customer.io event type) of page, screen and track calls. */
function eventName(event: SluiceEvent): { name: string | undefined; evType: string } {
  if (event.type === "page") {
    const name = event.name || event.properties?.url;
    // Customer.io names page views by type "page"; everything else is type "event".
    return { name: name ? String(name) : undefined, evType: "page" };
  }
  if (event.type === "screen") return { name: `Viewed ${event.event || event.properties?.name} Screen`, evType: "event" };
  if (!event.event || typeof event.event !== "string") throw new TransformError("Event is a required field and should be a string");
  return { name: event.event, evType: "event" };
}

function build(source: SluiceEvent, ctx: DestinationContext): Built {
  const event = withExternalId(source);
  const config = configOf(ctx, CustomerIoConfig);
  const base = api(config);
  const userId = firstPresent(event, USER_ID);
  switch (event.type) {
    case "identify":
      return identify(event, userId, base);
    case "alias":
      return alias(event, userId, base);
    case "group":
      // RudderStack's processor gives the bare operation; its router (batch() here) wraps them in `batch`.
      return { method: "POST", url: `${base}/v2/batch`, body: objectOperation(event) };
    case "page":
    case "screen":
    case "track": {
      const { name, evType } = eventName(event);
      return eventCall(event, name, evType, userId, base, config);
    }
    default:
      throw new TransformError(`could not determine type ${event.type}`);
  }
}

function authHeader(ctx: DestinationContext): string {
  return basicAuth(String(requireConfig(ctx, "siteID")), String(requireConfig(ctx, "apiKey")));
}

export const customerio: DestinationDefinition = {
  name: "CUSTOMERIO",
  displayName: "Customer IO",
  config: {
    defaultConfig: configKeys(CustomerIoConfig, ["dataUseInApp", "useNativeSDK", "sendPageNameInSDK", "oneTrustCookieCategories", "ketchConsentPurposes"]),
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
    // Listed rather than requiredKeysOf: the schema follows RudderStack's key order (apiKey
    // first), while GET /destination-definitions has always named siteID first.
    requiredKeys: ["siteID", "apiKey"],
  },
  configSchema: CustomerIoConfig,
  transform(event, ctx) {
    const config = configOf(ctx, CustomerIoConfig);
    if (usesTrackApiV2(config)) return isEventAllowed(event, config) ? [trackApiV2Request(event, ctx, config, api(config))] : [];
    // RudderStack's own check and words (siteID first); deleteUsers keeps Sluice's, as RudderStack has no deletion here.
    for (const key of ["siteID", "apiKey"] as const) if (!config[key]) throw new TransformError(`${key} not found in Configs`);
    const authorization = authHeader(ctx);
    if (!isEventAllowed(event, config)) return [];
    const built = build(event, ctx);
    return [restRequest({ method: built.method, endpoint: endpointFor(ctx, built.url), headers: { Authorization: authorization }, json: withoutUndefined(built.body) })];
  },
  batch(requests, ctx) {
    // With the v2 envelope every request is an operation for /v2/batch, so all of them merge.
    const v2 = usesTrackApiV2(configOf(ctx, CustomerIoConfig));
    return batchConsecutive(
      requests,
      (r) => (r.endpoint.endsWith("/v2/batch") ? JSON.stringify([r.endpoint, r.headers]) : null),
      (run) => {
        const ops = run.map((r) => r.body.JSON as Obj);
        return (v2 ? envelopes(ops) : chunkItems(ops, BATCH_MAX, BATCH_MAX_BYTES)).map((batch) =>
          // Labelled JSON, as RudderStack's router labels these (sending would label any JSON body anyway).
          restRequest({ endpoint: run[0]!.endpoint, headers: { ...run[0]!.headers, "Content-Type": "application/json" }, json: { batch } }),
        );
      },
    );
  },
  checkResponse: readBatchAnswer,
  deleteUsers(users, ctx) {
    const authorization = authHeader(ctx);
    const base = api(configOf(ctx, CustomerIoConfig));
    return users
      .filter((u) => !!u.userId)
      .map((u) =>
        restRequest({
          method: "DELETE",
          endpoint: endpointFor(ctx, `${base}/v1/customers/${encodeURIComponent(u.userId)}`),
          headers: { Authorization: authorization },
        }),
      );
  },
};
