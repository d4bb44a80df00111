/**
 * CUSTOMERIO: Customer.io's Track API (Basic auth siteID:apiKey) — identify as PUT
 * /customers/{id}, events to /customers/{id}/events or /events for anonymous users, device
 * tokens, merges, objects (group) through /v2/batch, and deletion as DELETE /customers/{id}.
 */
import { t } from "elysia";
import { endpointFor } from "../base-url";
import {
  EVENT_FILTERING_KEYS,
  basicAuth,
  batchConsecutive,
  chunkItems,
  compact,
  eventFilteringSchema,
  firstOf,
  getPath,
  isEventAllowed,
  timestampOf,
  traitsOf,
} from "../shared";
import { type DestinationContext, type DestinationDefinition, type SluiceEvent, TransformError, requireConfig, restRequest } from "../types";

type Obj = Record<string, any>;

const API_US = "https://track.customer.io/api";
const API_EU = "https://track-eu.customer.io/api";
// Customer.io's /v2/batch takes at most 1000 operations and 500KB per call.
const BATCH_MAX = 1000;
const BATCH_MAX_BYTES = 500_000;
const DEVICE_EVENTS = ["Application Installed", "Application Opened", "Application Uninstalled"];
const OBJECT_ACTIONS = ["identify", "delete", "add_relationships", "delete_relationships"];
const ADDRESS_FIELDS = ["city", "country", "postalCode", "state", "street"];

export const CustomerIoConfig = t.Object(
  {
    siteID: t.String({ minLength: 1 }),
    apiKey: t.String({ minLength: 1 }),
    datacenter: t.Optional(t.String()),
    deviceTokenEventName: t.Optional(t.String()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);

const api = (config: Obj) => (config.datacenter === "EU" || config.datacenterEU === true ? API_EU : API_US);
const isEmail = (v: unknown) => typeof v === "string" && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v);
/** Ids containing "/" would change the path, so only those are encoded (as RudderStack does). */
const pathId = (id: unknown) => (typeof id === "string" && id.includes("/") ? encodeURIComponent(id) : String(id));
const seconds = (ts: unknown) => Math.floor(new Date(String(ts)).getTime() / 1000);
const truncateBytes = (s: string, max: number) => {
  const bytes = Buffer.from(s);
  return bytes.length <= max ? s : bytes.subarray(0, max).toString().replace(/\uFFFD$/, "");
};

type Built = { method: "PUT" | "POST" | "DELETE"; url: string; body: Obj };

function identify(event: SluiceEvent, userId: unknown, base: string): Built {
  const id = userId || firstOf(event, ["traits.email", "context.traits.email", "properties.email"]);
  if (!id) throw new TransformError("userId or email is not present");
  const traits = traitsOf(event) ?? {};
  const body: Obj = {};
  for (const f of ADDRESS_FIELDS) body[f] = getPath(traits, `address.${f}`);
  for (const [key, value] of Object.entries(traits)) {
    // Identifiers and createdAt are sent through their own fields, not as attributes.
    if (["address", "createdAt", "userId", "anonymousId"].includes(key)) continue;
    body[key] = value;
  }
  const createdAt = firstOf(event, ["traits.createdAt", "context.traits.createdAt"]);
  if (createdAt) body.created_at = seconds(createdAt);
  const ts = timestampOf(event);
  if (ts) body._timestamp = seconds(ts);
  if (event.anonymousId) body.anonymous_id = event.anonymousId;
  return { method: "PUT", url: `${base}/v1/customers/${pathId(id)}`, body };
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

/** A group becomes a Customer.io object, related to the user who sent it. */
function group(event: SluiceEvent, base: string): Built {
  const objectId = firstOf(event, ["groupId", "traits.groupId"]);
  if (objectId === undefined) throw new TransformError("groupId is required for group events");
  const { action: _inAction, ...attributes } = event.traits ?? {};
  const action = firstOf(event, ["traits.action", "properties.action"]);
  const op: Obj = {
    identifiers: { object_id: String(objectId), object_type_id: String(getPath(event, "traits.objectTypeId") ?? "1") },
    type: "object",
    action: OBJECT_ACTIONS.includes(action) ? action : "identify",
    attributes,
    cio_relationships: [],
  };
  const userId = firstOf(event, ["userId", "traits.userId", "traits.id", "context.traits.userId", "context.traits.id"]);
  const who = userId !== undefined ? String(userId) : firstOf(event, ["context.traits.email", "properties.email", "context.externalId.0.id"]);
  if (who) op.cio_relationships.push({ identifiers: { [isEmail(who) ? "email" : "id"]: who } });
  return { method: "POST", url: `${base}/v2/batch`, body: { batch: [op] } };
}

function eventCall(event: SluiceEvent, name: string, evType: string, userId: unknown, base: string, config: Obj): Built {
  const id = userId || firstOf(event, ["traits.email", "context.traits.email", "properties.email"]);
  const token = getPath(event, "context.device.token");
  if (name === "Application Uninstalled") {
    if (!id || !token) throw new TransformError("userId/email or device_token not present");
    return { method: "DELETE", url: `${base}/v1/customers/${pathId(id)}/devices/${token}`, body: {} };
  }
  const isDeviceEvent = DEVICE_EVENTS.includes(name) || config.deviceTokenEventName === name;
  if (isDeviceEvent && id && token) {
    const device: Obj = { ...event.properties, id: token, last_used: seconds(timestampOf(event)) };
    const type = getPath(event, "context.device.type");
    if (typeof type === "string") device.platform = ["ios", "ipados", "watchos", "tvos"].includes(type.toLowerCase()) ? "ios" : type.toLowerCase();
    return { method: "PUT", url: `${base}/v1/customers/${pathId(id)}/devices`, body: { device } };
  }
  const body: Obj = { data: event.properties, name, type: evType };
  const ts = timestampOf(event);
  if (ts) body.timestamp = seconds(ts);
  if (id) return { method: "POST", url: `${base}/v1/customers/${pathId(id)}/events`, body };
  if (!event.anonymousId) throw new TransformError("Anonymous id/ user id is required");
  // Customer.io limits anonymous event names to 100 bytes.
  body.name = event.type === "screen"
    ? `Viewed ${truncateBytes(String(event.event || event.properties?.name), 86)} Screen`
    : truncateBytes(name, 100);
  body.anonymous_id = event.anonymousId;
  return { method: "POST", url: `${base}/v1/events`, body };
}

export const customerio: DestinationDefinition = {
  name: "CUSTOMERIO",
  displayName: "Customer IO",
  config: {
    defaultConfig: ["apiKey", "siteID", "datacenter", "deviceTokenEventName", ...EVENT_FILTERING_KEYS],
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
    requiredKeys: ["siteID", "apiKey"],
  },
  configSchema: CustomerIoConfig,
  transform(event, ctx) {
    const siteId = String(requireConfig(ctx, "siteID"));
    const apiKey = String(requireConfig(ctx, "apiKey"));
    if (!isEventAllowed(event, ctx.config)) return [];
    const base = api(ctx.config);
    const userId = firstOf(event, ["userId", "traits.userId", "traits.id", "context.traits.userId", "context.traits.id"]);
    let built: Built;
    switch (event.type) {
      case "identify":
        built = identify(event, userId, base);
        break;
      case "alias":
        built = alias(event, userId, base);
        break;
      case "group":
        built = group(event, base);
        break;
      case "page": {
        const name = event.name || event.properties?.url;
        if (name === undefined || name === null || name === "") throw new TransformError("page events need a name or properties.url");
        // Customer.io names page views by type "page"; everything else is type "event".
        built = eventCall(event, String(name), "page", userId, base, ctx.config);
        break;
      }
      case "screen":
        built = eventCall(event, `Viewed ${event.event || event.properties?.name} Screen`, "event", userId, base, ctx.config);
        break;
      case "track":
        if (typeof event.event !== "string" || event.event.trim() === "") throw new TransformError("Event name is required and must be a string");
        built = eventCall(event, event.event.trim(), "event", userId, base, ctx.config);
        break;
      default:
        throw new TransformError(`could not determine type ${event.type}`);
    }
    const headers: Record<string, string> = { Authorization: basicAuth(siteId, apiKey) };
    if (built.method !== "DELETE") headers["Content-Type"] = "application/json";
    return [restRequest({ method: built.method, endpoint: endpointFor(ctx, built.url), headers, json: compact(built.body) })];
  },
  batch(requests) {
    return batchConsecutive(
      requests,
      (r) => (r.endpoint.endsWith("/v2/batch") ? JSON.stringify([r.endpoint, r.headers]) : null),
      (run) =>
        chunkItems(run.flatMap((r) => r.body.JSON.batch as Obj[]), BATCH_MAX, BATCH_MAX_BYTES).map((batch) =>
          restRequest({ endpoint: run[0]!.endpoint, headers: run[0]!.headers, json: { batch } }),
        ),
    );
  },
  deleteUsers(users, ctx: DestinationContext) {
    const siteId = String(requireConfig(ctx, "siteID"));
    const apiKey = String(requireConfig(ctx, "apiKey"));
    return users
      .filter((u) => !!u.userId)
      .map((u) =>
        restRequest({
          method: "DELETE",
          endpoint: endpointFor(ctx, `${api(ctx.config)}/v1/customers/${encodeURIComponent(u.userId)}`),
          headers: { Authorization: basicAuth(siteId, apiKey) },
        }),
      );
  },
};
