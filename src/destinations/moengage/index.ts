/**
 * MOENGAGE: MoEngage's Data API on the region's host (US api-01, EU api-02, IND api-03), Basic
 * apiId:apiKey plus the `MOE-APPKEY` header. identify updates the customer (and, with a device
 * type and push token in the context, the device), track sends one action, alias merges the
 * previous user into the new one. One request per event, as RudderStack sends them.
 */
import { t } from "elysia";
import { endpointFor } from "../base-url";
import { genericField } from "../generic-fields";
import { basicAuth, compact, EVENT_FILTERING_KEYS, firstPresent, flattenJson, getPath, isAppleFamily, isEventAllowed, isPlainObject, isPresent, traitValue, eventFilteringSchema, withoutUndefined } from "../shared";
import { type DestinationContext, type DestinationDefinition, type DestinationRequest, type SluiceEvent, TransformError, requireConfig, restRequest } from "../types";

type Obj = Record<string, any>;

export const MoengageConfig = t.Object(
  {
    apiId: t.String({ minLength: 1 }),
    apiKey: t.String({ minLength: 1 }),
    region: t.String({ minLength: 1 }),
    useObjectData: t.Optional(t.Boolean()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);

const HOSTS: Record<string, string> = { US: "https://api-01.moengage.com", EU: "https://api-02.moengage.com", IND: "https://api-03.moengage.com" };

/** Traits MoEngage has standard attributes for (or that are ids), so they are not copied again. */
const IDENTIFY_EXCLUDES = new Set([
  "_id", "age", "email", "firstName", "first_name", "firstname", "gender", "id", "lastName", "lastSeen", "last_name", "last_seen",
  "lastname", "mobile", "moeUnsubscribe", "moe_unsubscribe", "revenue", "source", "transactions",
]);
const DEVICE_EXCLUDES = new Set(["active", "push_preference", "id", "_id", "pushPreference"]);

const asText = (v: unknown) => (isPresent(v) ? String(v) : undefined);
// A value that is not a number is sent as null, as JSON writes RudderStack's NaN.
const asNumber = (v: unknown) => (isPresent(v) ? (Number.isNaN(Number(v)) ? null : Number(v)) : undefined);

/** An object's entries but the excluded ones: RudderStack merges them into the attributes. */
function without(value: unknown, exclude: Set<string>): Obj {
  return isPlainObject(value) ? Object.fromEntries(Object.entries(value).filter(([k]) => !exclude.has(k))) : {};
}

/** MoEngage takes flat attributes unless the account stores objects (`useObjectData`). */
const shaped = (attributes: Obj, config: Obj) => (config.useObjectData ? attributes : flattenJson(attributes));

function customerAttributes(event: SluiceEvent, config: Obj): Obj {
  // Only missing values are left out: a number that does not convert goes as null, as RudderStack's NaN does.
  const standard = withoutUndefined({
    name: asText(traitValue(event, "name")),
    first_name: asText(traitValue(event, "firstname", "first_name", "firstName")),
    last_name: asText(traitValue(event, "lastname", "last_name", "lastName")),
    email: asText(traitValue(event, "email")),
    age: asNumber(traitValue(event, "age")),
    gender: asText(traitValue(event, "gender")),
    mobile: asText(traitValue(event, "mobile")),
    source: asText(traitValue(event, "source")),
    created_time: traitValue(event, "createdAt"),
    last_seen: firstPresent(event, ["traits.last_seen", "context.traits.last_seen", "traits.lastSeen", "context.traits.lastSeen"]),
    transactions: asNumber(traitValue(event, "transactions")),
    revenue: asNumber(traitValue(event, "revenue")),
    moe_unsubscribe: firstPresent(event, ["traits.moe_unsubscribe", "context.traits.moe_unsubscribe", "traits.moeUnsubscribe", "context.traits.moeUnsubscribe"]),
  });
  return shaped({ ...standard, ...without(firstPresent(event, ["traits", "context.traits"]), IDENTIFY_EXCLUDES) }, config);
}

function platform(value: unknown): unknown {
  return isAppleFamily(value) ? "iOS" : value;
}

function deviceAttributes(event: SluiceEvent): Obj {
  const attributes = {
    ...compact({
      platform: platform(getPath(event, "context.device.type")),
      push_id: getPath(event, "context.device.token"),
      model: getPath(event, "context.device.model"),
      push_preference: firstPresent(event, ["properties.push_preference", "properties.pushPreference"]),
      app_version: getPath(event, "context.app.version"),
      os_version: getPath(event, "context.os.version"),
      active: getPath(event, "properties.active"),
    }),
    ...without(event.properties, DEVICE_EXCLUDES),
  };
  return flattenJson(attributes);
}

/** An IANA time zone's current offset from UTC in seconds (e.g. Asia/Kolkata → 19800); unknown zones give nothing. */
export function offsetSeconds(zone: unknown): number | undefined {
  if (typeof zone !== "string" || !zone) return undefined;
  try {
    const part = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "longOffset" }).formatToParts(new Date()).find((p) => p.type === "timeZoneName")?.value;
    const m = /GMT([+-])(\d{2}):(\d{2})/.exec(part ?? "");
    if (!m) return 0;
    const seconds = Number(m[2]) * 3600 + Number(m[3]) * 60;
    return m[1] === "-" ? -seconds : seconds;
  } catch {
    return undefined;
  }
}

function action(event: SluiceEvent, config: Obj): Obj {
  if (!isPresent(event.event)) throw new TransformError('Missing required value from "event"');
  const properties = isPlainObject(event.properties) ? event.properties : undefined;
  return compact({
    action: event.event,
    attributes: properties ? shaped(properties, config) : undefined,
    platform: platform(firstPresent(event, ["context.device.type", "channel"])),
    app_version: getPath(event, "context.app.version"),
    current_time: firstPresent(event, ["timestamp", "originalTimestamp"]),
    user_timezone_offset: offsetSeconds(getPath(event, "context.timezone")),
  });
}

function customerId(event: SluiceEvent): unknown {
  const id = genericField(event, "userId");
  if (!isPresent(id)) {
    throw new TransformError('Missing required value from ["userId","traits.userId","traits.id","context.traits.userId","context.traits.id","anonymousId"]');
  }
  return id;
}

export const moengage: DestinationDefinition = {
  name: "MOENGAGE",
  displayName: "MoEngage",
  config: {
    defaultConfig: [
      "apiId", "apiKey", "region", "useObjectData", ...EVENT_FILTERING_KEYS, "oneTrustCookieCategories", "useNativeSDK", "debug",
      "connectionMode", "consentManagement",
    ],
    supportedMessageTypes: ["identify", "track", "alias"],
    requiredKeys: ["apiId", "apiKey", "region"],
  },
  configSchema: MoengageConfig,
  transform(event, ctx: DestinationContext): DestinationRequest[] {
    const apiId = String(requireConfig(ctx, "apiId"));
    const apiKey = String(requireConfig(ctx, "apiKey"));
    const host = HOSTS[String(requireConfig(ctx, "region"))];
    if (!host) throw new TransformError("The region is not valid");
    if (!isEventAllowed(event, ctx.config)) return [];
    const auth = basicAuth(apiId, apiKey);
    const headers = { "Content-Type": "application/json", "MOE-APPKEY": apiId, Authorization: auth };
    const post = (path: string, json: Obj, h: Record<string, string> = headers) => restRequest({ endpoint: endpointFor(ctx, `${host}${path}`), headers: h, json });
    switch (event.type) {
      case "identify": {
        const id = customerId(event);
        const requests = [post(`/v1/customer/${apiId}`, { customer_id: id, type: "customer", attributes: customerAttributes(event, ctx.config) })];
        if (getPath(event, "context.device.type") && getPath(event, "context.device.token")) {
          requests.push(post(`/v1/device/${apiId}`, { customer_id: id, type: "device", attributes: deviceAttributes(event) }));
        }
        return requests;
      }
      case "track":
        return [post(`/v1/event/${apiId}`, { customer_id: customerId(event), type: "event", actions: [action(event, ctx.config)] })];
      case "alias": {
        if (!event.userId) throw new TransformError('Missing required value from "userId"');
        if (!event.previousId) throw new TransformError('Missing required value from "previousId"');
        if (event.userId === event.previousId) throw new TransformError("userId and previousId must be different");
        // The merge API takes the app id as a query parameter and no MOE-APPKEY header.
        return [post(`/v1/customer/merge?app_id=${apiId}`, { merge_data: [{ retained_user: event.userId, merged_user: event.previousId }] }, { "Content-Type": "application/json", Authorization: auth })];
      }
      default:
        throw new TransformError("Message type not supported");
    }
  },
};
