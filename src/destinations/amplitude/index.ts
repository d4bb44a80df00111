/**
 * AM (Amplitude): events through the HTTP API v2 (`/2/httpapi`, a user's events batched through `/batch`),
 * user and group properties as `$identify` events plus the Group Identify API, aliases
 * through the User Mapping API, and deletion through the User Privacy API — the calls
 * RudderStack's AM destination makes for the same events.
 */
import { endpointFor } from "../base-url";
import {
  basicAuth,
  chunkItems,
  compact,
  getPath,
  isDefined,
  isEventAllowed,
  isPlainObject,
  refusedConfigPath,
  refusedListField,
  timestampOf,
  toMillis,
  traitsOf,
  withoutUndefined,
} from "../shared";
import {
  type DestinationContext,
  type DestinationDefinition,
  type SluiceEvent,
  TransformError,
  configKeys,
  configOf,
  requireConfig,
  requiredKeysOf,
  restRequest,
} from "../types";
import { batchByUser } from "./batch";
import { AmplitudeConfig } from "./config";
import { withExternalId } from "./external-id";
import { type MappingKind, addLocation, addMobileIds, mappedFields } from "./fields";
import { moveToSet, setDotted, traitUserProperties } from "./user-properties";

export { AmplitudeConfig };

type Obj = Record<string, any>;

const BASE_US = "https://api2.amplitude.com";
const BASE_EU = "https://api.eu.amplitude.com";
const DELETE_US = "https://amplitude.com/api/2/deletions/users";
const DELETE_EU = "https://analytics.eu.amplitude.com/api/2/deletions/users";
// The User Privacy API takes at most 100 ids per request.
const DELETE_MAX_IDS = 100;
const MISSING_EVENT_TYPE = "Event type is missing. Please send it under `event.type`. For page/screen events, send it under `event.name`";

const base = (config: AmplitudeConfig) => (config.residencyServer === "EU" ? BASE_EU : BASE_US);
const isInteger = (v: unknown) => (typeof v === "number" && Number.isInteger(v)) || (typeof v === "string" && /^-?\d+$/.test(v));

/** Amplitude's session id: from `session_id` ("anon:123" → 123), else `context.sessionId`, else -1. */
function sessionId(event: SluiceEvent): number {
  const root = event.session_id;
  if (root) {
    if (typeof root !== "string") return Number(root);
    const last = root.split(":").pop();
    if (isInteger(last)) return Number(last);
  }
  const ctxId = getPath(event, "context.sessionId");
  return ctxId && isInteger(ctxId) ? Number(ctxId) : -1;
}

/**
 * A user-defined page/screen name. As in RudderStack, every `{{ … }}` placeholder is
 * replaced by the value at the path named in the first one, and an empty template means the
 * event's name.
 */
function customName(event: SluiceEvent, template: unknown): unknown {
  if (typeof template !== "string") return undefined;
  const tpl = template.trim();
  if (tpl === "") return event.name;
  const path = tpl.substring(tpl.indexOf("{") + 2, tpl.indexOf("}")).trim();
  const value = getPath(event, path);
  return tpl.replace(/{{([^{}]+)}}/g, () => String(value));
}

/** Group type/value from the traits named in config, or the integrations object's groups. */
function groupInfo(event: SluiceEvent, config: AmplitudeConfig): Obj | undefined {
  const fromIntegrations = getPath(event, "integrations.Amplitude.groups") || undefined;
  if (!config.groupTypeTrait || !config.groupValueTrait) return fromIntegrations;
  const traits = traitsOf(event);
  const type = getPath(traits, config.groupTypeTrait);
  const value = getPath(traits, config.groupValueTrait);
  if (type && typeof type === "string" && value && (typeof value === "string" || typeof value === "number")) {
    return { group_type: type, group_value: value, group_properties: traits };
  }
  throw new TransformError("Group call parameters are not valid");
}

/** utm_* from the campaign and the initial referrer: RudderStack puts these on every call's user_properties. */
function baseUserProperties(event: SluiceEvent): Obj {
  const props: Obj = {
    initial_referrer: getPath(event, "context.page.initial_referrer"),
    initial_referring_domain: getPath(event, "context.page.initial_referring_domain"),
  };
  const campaign = getPath(event, "context.campaign");
  if (isPlainObject(campaign)) for (const [k, v] of Object.entries(campaign)) props[`utm_${k}`] = v;
  return props;
}

type Built = { eventType: string; kind: MappingKind; isRevenue?: boolean; group?: Obj };

/** Top-level revenue fields; price, product_id, quantity and revenue then leave event_properties. */
function addRevenue(payload: Obj, properties: Obj | undefined): void {
  const p = properties ?? {};
  const hasPrice = isDefined(p.price);
  Object.assign(payload, {
    productId: p.product_id,
    revenueType: p.revenueType || p.revenue_type || "Purchased",
    price: hasPrice ? p.price : p.revenue,
    quantity: hasPrice ? p.quantity || 1 : 1,
    revenue: p.revenue,
  });
  if (isPlainObject(payload.event_properties)) {
    for (const k of ["price", "product_id", "quantity", "revenue"]) delete payload.event_properties[k];
  }
}

/** The user_properties, groups, type and event fields for one message type. */
function typeFields(event: SluiceEvent, b: Built, config: AmplitudeConfig, payload: Obj): void {
  const traits = traitsOf(event);
  let props = baseUserProperties(event);
  let groups: Obj | undefined;
  if (event.type === "identify") {
    payload.event_type = "$identify";
    props = traitUserProperties(event, traits, config, props);
  } else if (event.type === "group") {
    payload.event_type = "$identify";
    if (b.group?.group_type && b.group?.group_value) {
      groups = { [b.group.group_type]: b.group.group_value };
      setDotted(props, String(b.group.group_type), b.group.group_value);
    }
  } else {
    if (config.enableEnhancedUserOperations) props = traitUserProperties(event, traits, config, props);
    payload.event_properties = isPlainObject(event.properties) ? { ...event.properties } : event.properties;
    if (traits) props = { ...props, ...traits };
    payload.event_type = b.eventType;
    payload.user_id = event.userId;
    if (b.isRevenue) addRevenue(payload, event.properties);
    groups = b.group ? structuredClone(b.group) : undefined;
  }
  props = withoutUndefined(props);
  payload.user_properties = config.enableEnhancedUserOperations ? moveToSet(props) : props;
  payload.groups = groups;
}

/** RudderStack sends city and country as top-level fields only. */
function dropCityAndCountry(props: Obj): void {
  delete props.city;
  delete props.country;
  if (isPlainObject(props.address)) {
    const { city: _c, country: _k, ...address } = props.address;
    props.address = address;
  }
}

/** One event for /2/httpapi, built the way RudderStack's AM transform builds it. */
function amplitudeEvent(original: SluiceEvent, b: Built, config: AmplitudeConfig): Obj {
  const source = withExternalId(original);
  // Mapping consumes some top-level traits, so it works on a copy of them.
  const event = isPlainObject(source.traits) ? { ...source, traits: { ...source.traits } } : source;
  const payload = mappedFields(event, b.kind, config);
  typeFields(event, b, config, payload);
  if (event.channel === "mobile") addMobileIds(event, payload, config);
  payload.time = toMillis(timestampOf(event));
  if (event.userId) payload.user_id = event.userId;
  payload.session_id = sessionId(event);
  addLocation(event, payload);
  dropCityAndCountry(payload.user_properties);
  if (!payload.user_id && !payload.device_id) throw new TransformError("Either of user ID or device ID fields must be specified");
  payload.ip = getPath(event, "context.ip") || event.request_ip;
  payload.library = "rudderstack";
  if (getPath(event, "integrations.Amplitude.skipUserPropertiesSync")) payload.$skip_user_properties_sync = true;
  return compact(payload);
}

const revenueKind = (properties: Obj | undefined): MappingKind =>
  isDefined(properties?.revenue) && isDefined(properties?.revenue_type) ? "revenue" : "track";

/** Track events with revenue become the revenue event plus, per config, one "Product Purchased" per product. */
function trackEvents(event: SluiceEvent, config: AmplitudeConfig): Array<{ event: SluiceEvent; built: Omit<Built, "group"> }> {
  const properties = event.properties;
  const single = (e: SluiceEvent, isRevenue = false) => ({ event: e, built: { eventType: e.event, kind: revenueKind(e.properties), isRevenue } });
  if (!isDefined(properties?.revenue)) return [single(event)];
  const products = Array.isArray(properties.products) && properties.products.length > 0 ? properties.products : undefined;
  let original = event;
  let isRevenue = false;
  if (config.trackProductsOnce === false) {
    if (products) {
      const { products: _split, ...rest } = properties;
      original = { ...event, properties: rest };
    } else isRevenue = true;
  } else if (!products) isRevenue = true;
  if (config.trackRevenuePerProduct === false) isRevenue = true;
  const out = [single(original, isRevenue)];
  if (products && (config.trackRevenuePerProduct === true || config.trackProductsOnce === false)) {
    // Amplitude dedups on insert_id, so each split-out product needs its own.
    products.forEach((product: Obj, i: number) =>
      out.push(single({ ...event, event: "Product Purchased", properties: product, messageId: `${event.messageId}-${i + 1}` }, config.trackRevenuePerProduct === true)),
    );
  }
  return out;
}

/** The event type of a page or screen call: "Viewed <name> Page|Screen", or the user-defined template. */
function pageOrScreenType(event: SluiceEvent, config: AmplitudeConfig): { eventType: string; name: unknown } {
  const isPage = event.type === "page";
  const category = getPath(event, "properties.category");
  const name = isPage ? event.name || category : event.name || event.event || category;
  const eventType = (isPage ? config.useUserDefinedPageEventName : config.useUserDefinedScreenEventName)
    ? customName(event, isPage ? config.userProvidedPageEventString : config.userProvidedScreenEventString)
    : `Viewed ${name || ""} ${isPage ? "Page" : "Screen"}`;
  if (eventType === undefined || eventType === null || eventType === "") throw new TransformError(MISSING_EVENT_TYPE);
  return { eventType: String(eventType), name };
}

/** The User Mapping API call for an alias (or an unmapping with `integrations.Amplitude.unmap`). */
function aliasMapping(original: SluiceEvent, config: AmplitudeConfig): Obj {
  const event = withExternalId(original);
  // As in every AM mapping, a top-level trait named like the field wins.
  const trait = (key: string) => (isPlainObject(event.traits) && isDefined(event.traits[key]) ? event.traits[key] : undefined);
  const integrationEventId = getPath(event, "integrations.Amplitude.event_id");
  const props = withoutUndefined(baseUserProperties(event));
  const mapping = withoutUndefined({
    global_user_id: trait("global_user_id") ?? event.userId,
    user_id: trait("user_id") ?? event.previousId,
    // A string event_id from the integrations object is dropped (Amplitude wants an integer); a trait is taken as is.
    event_id: trait("event_id") ?? (typeof integrationEventId === "string" ? undefined : integrationEventId),
    user_properties: config.enableEnhancedUserOperations ? moveToSet(props) : props,
  });
  const unmap = getPath(event, "integrations.Amplitude.unmap");
  if (unmap) {
    mapping.user_id = unmap;
    delete mapping.global_user_id;
    mapping.unmap = true;
  }
  return mapping;
}

export const amplitude: DestinationDefinition = {
  name: "AM",
  displayName: "Amplitude",
  config: {
    defaultConfig: configKeys(AmplitudeConfig, [
      "trackAllPages", "trackCategorizedPages", "trackNamedPages", "versionName", "oneTrustCookieCategories", "enableEnhncedUserOpertaions", "useNativeSDK", "connectionMode", "preferAnonymousIdForDeviceId", "attribution", "eventUploadThreshold", "eventUploadPeriodMillis", "trackNewCampaigns", "proxyServerUrl", "enableLocationListening", "trackSessionEvents", "useAdvertisingIdForDeviceId", "useIdfaAsDeviceId",
    ]),
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
    requiredKeys: requiredKeysOf(AmplitudeConfig),
  },
  configSchema: AmplitudeConfig,
  // Trait names in these lists and the group traits are dotted paths into the traits.
  checkConfig: (c) =>
    refusedListField(c, "traitsToIncrement", "traits") ??
    refusedListField(c, "traitsToSetOnce", "traits") ??
    refusedListField(c, "traitsToAppend", "traits") ??
    refusedListField(c, "traitsToPrepend", "traits") ??
    refusedConfigPath("groupTypeTrait", c.groupTypeTrait) ??
    refusedConfigPath("groupValueTrait", c.groupValueTrait),
  transform(event, ctx) {
    const apiKey = String(requireConfig(ctx, "apiKey"));
    const c = configOf(ctx, AmplitudeConfig);
    if (!isEventAllowed(event, c)) return [];
    const httpapi = (events: Obj[]) =>
      restRequest({
        endpoint: endpointFor(ctx, `${base(c)}/2/httpapi`),
        headers: { "Content-Type": "application/json" },
        json: { api_key: apiKey, events, options: { min_id_length: 1 } },
      });
    // RudderStack sends its form calls without headers; the form content type comes with the body.
    const form = (path: string, body: Obj) => restRequest({ endpoint: endpointFor(ctx, `${base(c)}/${path}`), form: { api_key: apiKey, ...body } });
    const integrationGroups = getPath(event, "integrations.Amplitude.groups") || undefined;

    switch (event.type) {
      case "track": {
        if (event.event === undefined || event.event === null || event.event === "") throw new TransformError("Event not present. Please send event field");
        return trackEvents(event, c).map(({ event: e, built }) => httpapi([amplitudeEvent(e, { ...built, group: integrationGroups }, c)]));
      }
      case "page":
      case "screen": {
        const { eventType, name } = pageOrScreenType(event, c);
        const withName = { ...event, properties: { ...event.properties, name } };
        const kind = event.type === "page" ? "page" : "screen";
        return [httpapi([amplitudeEvent(withName, { eventType, kind, group: integrationGroups }, c)])];
      }
      case "identify":
        return [httpapi([amplitudeEvent(event, { eventType: "$identify", kind: "identify" }, c)])];
      case "group": {
        // RudderStack's group_properties are the traits object it later adds the external id to, so they carry it too.
        const group = groupInfo(withExternalId(event), c);
        const requests = [httpapi([amplitudeEvent(event, { eventType: "$identify", kind: "group", group }, c)])];
        if (group) requests.push(form("groupidentify", { identification: [JSON.stringify(compact(group))] }));
        return requests;
      }
      case "alias":
        return [form("usermap", { mapping: [JSON.stringify(aliasMapping(event, c))] })];
      default:
        throw new TransformError("message type not supported");
    }
  },
  // Per user, as RudderStack's router batches (batch.ts).
  batch: (requests) => batchByUser(requests),
  deleteUsers(users, ctx: DestinationContext) {
    const apiKey = String(requireConfig(ctx, "apiKey"));
    const apiSecret = String(requireConfig(ctx, "apiSecret"));
    const ids = users.map((u) => u.userId).filter((id) => !!id);
    const url = endpointFor(ctx, configOf(ctx, AmplitudeConfig).residencyServer === "EU" ? DELETE_EU : DELETE_US);
    return chunkItems(ids, DELETE_MAX_IDS).map((userIds) =>
      restRequest({
        endpoint: url,
        headers: { "Content-Type": "application/json", Authorization: basicAuth(apiKey, apiSecret) },
        json: { user_ids: userIds, requester: "RudderStack", ignore_invalid_id: "true" },
      }),
    );
  },
};
