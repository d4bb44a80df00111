/**
 * MOENGAGE: MoEngage's Data API on the region's host (US api-01, EU api-02, IND api-03), Basic
 * apiId:apiKey plus the `MOE-APPKEY` header. identify updates the customer (and, with a device
 * type and push token in the context, the device), track sends one action, alias merges the
 * previous user into the new one. One request per event, as RudderStack sends them.
 */
import { type Static, t } from "elysia";
import { endpointFor } from "../base-url";
import { GENERIC_PATHS, genericField } from "../generic-fields";
import { basicAuth, compact, firstPresent, flattenJson, getPath, isAppleFamily, isEventAllowed, isPlainObject, isPresent, requireValue, traitValue, eventFilteringSchema } from "../shared";
import { type DestinationContext, type DestinationDefinition, type DestinationRequest, type SluiceEvent, TransformError, configKeys, configOf, nowOf, requireConfig, requiredKeysOf, restRequest } from "../types";

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
export type MoengageConfig = Static<typeof MoengageConfig>;

const HOSTS: Record<string, string> = { US: "https://api-01.moengage.com", EU: "https://api-02.moengage.com", IND: "https://api-03.moengage.com" };

/** Traits MoEngage has standard attributes for (or that are ids), so they are not copied again. */
const IDENTIFY_EXCLUDES = new Set([
  "_id", "age", "email", "firstName", "first_name", "firstname", "gender", "id", "lastName", "lastSeen", "last_name", "last_seen",
  "lastname", "mobile", "moeUnsubscribe", "moe_unsubscribe", "revenue", "source", "transactions",
]);
const DEVICE_EXCLUDES = new Set(["active", "push_preference", "id", "_id", "pushPreference"]);

const asText = (v: unknown) => (isPresent(v) ? String(v) : undefined);
// A value that is not a number is left out, as RudderStack's mapping drops the NaN it converts to.
const asNumber = (v: unknown) => (isPresent(v) && !Number.isNaN(Number(v)) ? Number(v) : undefined);
const present = (v: unknown) => (isPresent(v) ? v : undefined);

/** An object's entries but the excluded ones: RudderStack merges them into the attributes. */
function without(value: unknown, exclude: Set<string>): Obj {
  return isPlainObject(value) ? Object.fromEntries(Object.entries(value).filter(([k]) => !exclude.has(k))) : {};
}

/** MoEngage takes flat attributes unless the account stores objects (`useObjectData`). */
const shaped = (attributes: Obj, config: MoengageConfig) => (config.useObjectData ? attributes : flattenJson(attributes));

function customerAttributes(event: SluiceEvent, config: MoengageConfig): Obj {
  const standard = compact({
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

function deviceAttributes(event: SluiceEvent, config: MoengageConfig): Obj {
  const attributes = {
    ...compact({
      platform: platform(getPath(event, "context.device.type")),
      push_id: getPath(event, "context.device.token"),
      model: present(getPath(event, "context.device.model")),
      push_preference: firstPresent(event, ["properties.push_preference", "properties.pushPreference"]),
      app_version: present(getPath(event, "context.app.version")),
      os_version: present(getPath(event, "context.os.version")),
      active: present(getPath(event, "properties.active")),
    }),
    ...without(present(event.properties), DEVICE_EXCLUDES),
  };
  return shaped(attributes, config);
}

/** An IANA time zone's offset from UTC in seconds at `at` (e.g. Asia/Kolkata → 19800); unknown zones give nothing. */
export function offsetSeconds(zone: unknown, at: number = Date.now()): number | undefined {
  if (typeof zone !== "string" || !zone) return undefined;
  try {
    const part = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "longOffset" }).formatToParts(new Date(at)).find((p) => p.type === "timeZoneName")?.value;
    const m = /GMT([+-])(\d{2}):(\d{2})/.exec(part ?? "");
    if (!m) return 0;
    const seconds = Number(m[2]) * 3600 + Number(m[3]) * 60;
    return m[1] === "-" ? -seconds : seconds;
  } catch {
    return undefined;
  }
}

function action(event: SluiceEvent, config: MoengageConfig, now: number): Obj {
  if (!isPresent(event.event)) throw new TransformError('Missing required value from "event"');
  const properties = isPlainObject(event.properties) ? event.properties : undefined;
  return compact({
    action: event.event,
    attributes: properties ? shaped(properties, config) : undefined,
    platform: platform(firstPresent(event, ["context.device.type", "channel"])),
    app_version: present(getPath(event, "context.app.version")),
    current_time: firstPresent(event, ["timestamp", "originalTimestamp"]),
    user_timezone_offset: offsetSeconds(getPath(event, "context.timezone"), now),
  });
}

/** RudderStack names the whole generic userId chain when none of it is present. */
function customerId(event: SluiceEvent): unknown {
  return requireValue(genericField(event, "userId"), GENERIC_PATHS.userId);
}

export const moengage: DestinationDefinition = {
  name: "MOENGAGE",
  displayName: "MoEngage",
  config: {
    defaultConfig: configKeys(MoengageConfig, ["oneTrustCookieCategories", "useNativeSDK", "debug", "connectionMode", "consentManagement"]),
    supportedMessageTypes: ["identify", "track", "alias"],
    requiredKeys: requiredKeysOf(MoengageConfig),
  },
  configSchema: MoengageConfig,
  transform(event, ctx: DestinationContext): DestinationRequest[] {
    const apiId = String(requireConfig(ctx, "apiId"));
    const apiKey = String(requireConfig(ctx, "apiKey"));
    if (!isPresent(event.type)) throw new TransformError("Event type is required");
    const type = String(event.type).toLowerCase();
    if (type !== "identify" && type !== "track" && type !== "alias") throw new TransformError(`Event type ${type} is not supported`);
    const config = configOf(ctx, MoengageConfig);
    if (!isEventAllowed(event, config)) return [];
    const auth = basicAuth(apiId, apiKey);
    const headers = { "Content-Type": "application/json", "MOE-APPKEY": apiId, Authorization: auth };
    // As in RudderStack, the user's id is checked before the region, and the region before the rest of the body.
    const post = (path: string, body: () => Obj, h: Record<string, string> = headers) => {
      const region = config.region;
      const host = typeof region === "string" && Object.hasOwn(HOSTS, region) ? HOSTS[region] : undefined;
      if (!host) throw new TransformError("The region is not valid");
      return restRequest({ endpoint: endpointFor(ctx, `${host}${path}`), headers: h, json: body() });
    };
    const deviceId = present(getPath(event, "context.device.id"));
    switch (type) {
      case "identify": {
        const id = customerId(event);
        const requests = [post(`/v1/customer/${apiId}`, () => ({ customer_id: id, type: "customer", attributes: customerAttributes(event, config) }))];
        if (getPath(event, "context.device.type") && getPath(event, "context.device.token")) {
          requests.push(post(`/v1/device/${apiId}`, () => compact({ customer_id: id, device_id: deviceId, type: "device", attributes: deviceAttributes(event, config) })));
        }
        return requests;
      }
      case "track": {
        const id = customerId(event);
        return [post(`/v1/event/${apiId}`, () => compact({ customer_id: id, device_id: deviceId, type: "event", actions: [action(event, config, nowOf(ctx))] }))];
      }
      default: {
        const retained = requireValue(event.userId, "userId");
        const merged = requireValue(event.previousId, "previousId");
        // The merge API takes the app id as a query parameter and no MOE-APPKEY header.
        return [post(`/v1/customer/merge?app_id=${apiId}`, () => ({ merge_data: [{ retained_user: retained, merged_user: merged }] }), { "Content-Type": "application/json", Authorization: auth })];
      }
    }
  },
};
