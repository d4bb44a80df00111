/**
 * AM (Amplitude): events through the HTTP API v2 (`/2/httpapi`, batched through `/batch`),
 * user and group properties as `$identify` events plus the Group Identify API, aliases
 * through the User Mapping API, and deletion through the User Privacy API — the calls
 * RudderStack's AM destination makes for the same events.
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
  isPlainObject,
  timestampOf,
  toMillis,
  traitsOf,
} from "../shared";
import { type DestinationContext, type DestinationDefinition, type SluiceEvent, TransformError, requireConfig, restRequest } from "../types";

type Obj = Record<string, any>;

const BASE_US = "https://api2.amplitude.com";
const BASE_EU = "https://api.eu.amplitude.com";
const DELETE_US = "https://amplitude.com/api/2/deletions/users";
const DELETE_EU = "https://analytics.eu.amplitude.com/api/2/deletions/users";
// Batch Event Upload API limits as RudderStack applies them.
const BATCH_MAX_EVENTS = 500;
const BATCH_MAX_BYTES = 20 * 1024 * 1024;
// The User Privacy API takes at most 100 ids per request.
const DELETE_MAX_IDS = 100;

const TraitList = t.Optional(t.Array(t.Object({ traits: t.Optional(t.String()) }, { additionalProperties: true })));

export const AmplitudeConfig = t.Object(
  {
    apiKey: t.String({ minLength: 1 }),
    apiSecret: t.Optional(t.String()),
    residencyServer: t.Optional(t.String()),
    groupTypeTrait: t.Optional(t.String()),
    groupValueTrait: t.Optional(t.String()),
    traitsToIncrement: TraitList,
    traitsToSetOnce: TraitList,
    traitsToAppend: TraitList,
    traitsToPrepend: TraitList,
    trackProductsOnce: t.Optional(t.Boolean()),
    trackRevenuePerProduct: t.Optional(t.Boolean()),
    mapDeviceBrand: t.Optional(t.Boolean()),
    useUserDefinedPageEventName: t.Optional(t.Boolean()),
    userProvidedPageEventString: t.Optional(t.String()),
    useUserDefinedScreenEventName: t.Optional(t.Boolean()),
    userProvidedScreenEventString: t.Optional(t.String()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);

const base = (config: Obj) => (config.residencyServer === "EU" ? BASE_EU : BASE_US);

/** Amplitude's session id: a number from `session_id` ("anon:123" → 123) or `context.sessionId`, else -1. */
function sessionId(event: SluiceEvent): number {
  const root = event.session_id;
  if (root !== undefined && root !== null && root !== "") {
    const last = typeof root === "string" ? root.split(":").pop()! : root;
    if (Number.isInteger(Number(last))) return Number(last);
  }
  const ctxId = getPath(event, "context.sessionId");
  return ctxId !== undefined && Number.isInteger(Number(ctxId)) ? Number(ctxId) : -1;
}

/** `{{ path }}` placeholders in a user-defined page/screen name, filled from the event. */
function customName(event: SluiceEvent, template: unknown): string | undefined {
  const tpl = typeof template === "string" ? template.trim() : "";
  if (tpl === "") return event.name;
  return tpl.replace(/\{\{\s*([^{}]+?)\s*\}\}/g, (_, path: string) => String(getPath(event, path) ?? ""));
}

/** Moves configured traits under Amplitude's user-property operations ($add, $setOnce, ...). */
function traitOperations(traits: Obj, config: Obj): Obj {
  const out = structuredClone(traits);
  const ops: Array<[string, unknown]> = [
    ["$add", config.traitsToIncrement],
    ["$setOnce", config.traitsToSetOnce],
    ["$append", config.traitsToAppend],
    ["$prepend", config.traitsToPrepend],
  ];
  for (const [op, list] of ops) {
    if (!Array.isArray(list)) continue;
    const moved: Obj = {};
    for (const item of list) {
      const key = item?.traits;
      if (typeof key === "string" && key !== "" && key in out) {
        moved[key] = out[key];
        delete out[key];
      }
    }
    if (Object.keys(moved).length > 0) out[op] = moved;
  }
  return out;
}

const ADDRESS_FIELDS = ["city", "country", "postalCode", "state", "street"];

/** user_properties for identify: traits (address spread to top-level fields) plus operations. */
function identifyUserProperties(event: SluiceEvent, config: Obj, current: Obj): Obj {
  const props: Obj = { ...current, ...(event.userProperties ?? {}) };
  const traits = traitsOf(event);
  if (!traits) return props;
  for (const [key, value] of Object.entries(traitOperations(traits, config))) {
    if (key === "address") {
      for (const f of ADDRESS_FIELDS) if (props[f] === undefined) props[f] = getPath(value, f);
    } else {
      props[key] = value;
    }
  }
  return props;
}

/** Device, app and location fields every Amplitude event carries. */
function deviceFields(event: SluiceEvent, config: Obj): Obj {
  const channel = typeof event.channel === "string" ? event.channel.toLowerCase() : undefined;
  const deviceType = getPath(event, "context.device.type");
  const eventId = getPath(event, "integrations.Amplitude.event_id");
  const fields: Obj = {
    os_name: getPath(event, "context.os.name"),
    os_version: getPath(event, "context.os.version"),
    device_model: getPath(event, "context.device.model"),
    device_manufacturer: getPath(event, "context.device.manufacturer"),
    platform: channel === "web" ? "Web" : channel === "server" ? "Server" : deviceType || "Server",
    device_brand: config.mapDeviceBrand ? getPath(event, "context.device.brand") : undefined,
    event_id: typeof eventId === "number" ? eventId : undefined,
    device_id: event.anonymousId,
    carrier: getPath(event, "context.network.carrier"),
    app_name: getPath(event, "context.app.name"),
    app_version: getPath(event, "context.app.version"),
    language: getPath(event, "context.locale"),
    insert_id: event.messageId,
  };
  if (channel === "mobile") {
    if (!config.mapDeviceBrand) fields.device_brand = getPath(event, "context.device.manufacturer");
    const advertisingId = getPath(event, "context.device.advertisingId");
    const type = typeof deviceType === "string" ? deviceType.toLowerCase() : "";
    if (["ios", "ipados", "watchos", "tvos", "macos"].includes(type)) {
      fields.idfa = advertisingId;
      fields.idfv = getPath(event, "context.device.id");
    } else if (type === "android") {
      fields.adid = advertisingId;
    }
  }
  return fields;
}

const LOCATION: Array<[string, string[]]> = [
  ["region", ["context.location.region"]],
  ["location_lat", ["context.location.latitude"]],
  ["location_lng", ["context.location.longitude"]],
  ["dma", ["context.location.dma"]],
  ["country", ["context.location.country", "traits.address.country", "context.traits.address.country"]],
  ["city", ["context.location.city", "traits.address.city", "context.traits.address.city"]],
];

/** Group type/value from the traits named in config, or the integrations object's groups. */
function groupInfo(event: SluiceEvent, config: Obj): Obj | undefined {
  const fromIntegrations = getPath(event, "integrations.Amplitude.groups");
  if (!config.groupTypeTrait || !config.groupValueTrait) return fromIntegrations;
  const traits = traitsOf(event) ?? {};
  const type = getPath(traits, config.groupTypeTrait);
  const value = getPath(traits, config.groupValueTrait);
  if (typeof type !== "string" || !type || !(typeof value === "string" || typeof value === "number") || value === "") {
    throw new TransformError("Group call parameters are not valid");
  }
  return { group_type: type, group_value: value, group_properties: traits };
}

type Built = { eventType: string; properties?: Obj; isRevenue?: boolean; group?: Obj };

/** One event for /2/httpapi, built the way RudderStack's AM transform builds it. */
function amplitudeEvent(event: SluiceEvent, b: Built, config: Obj): Obj {
  const campaign = isPlainObject(event.context?.campaign) ? event.context.campaign : {};
  let userProperties: Obj = {
    initial_referrer: getPath(event, "context.page.initial_referrer"),
    initial_referring_domain: getPath(event, "context.page.initial_referring_domain"),
  };
  for (const [k, v] of Object.entries(campaign)) userProperties[`utm_${k}`] = v;

  const payload: Obj = { ...deviceFields(event, config), event_type: b.eventType };
  let groups: Obj | undefined;
  if (event.type === "identify") {
    userProperties = identifyUserProperties(event, config, userProperties);
  } else if (event.type === "group") {
    if (b.group?.group_type && b.group?.group_value !== undefined) {
      groups = { [b.group.group_type]: b.group.group_value };
      userProperties[b.group.group_type] = b.group.group_value;
    }
  } else {
    payload.event_properties = b.properties === undefined ? undefined : { ...b.properties };
    userProperties = { ...userProperties, ...structuredClone(traitsOf(event) ?? {}) };
    payload.user_id = event.userId;
    groups = b.group ? structuredClone(b.group) : undefined;
    if (b.isRevenue) {
      const p = b.properties ?? {};
      const hasPrice = p.price !== undefined && p.price !== null;
      Object.assign(payload, {
        productId: p.product_id,
        revenueType: p.revenueType || p.revenue_type || "Purchased",
        price: hasPrice ? p.price : p.revenue,
        quantity: hasPrice ? p.quantity || 1 : 1,
        revenue: p.revenue,
      });
      if (payload.event_properties) for (const k of ["price", "product_id", "quantity", "revenue"]) delete payload.event_properties[k];
    }
  }
  // Only absent values are dropped: a null trait is passed on, as RudderStack does.
  payload.user_properties = Object.fromEntries(Object.entries(userProperties).filter(([, v]) => v !== undefined));
  payload.groups = groups;

  payload.time = toMillis(timestampOf(event));
  if (event.userId) payload.user_id = event.userId;
  payload.session_id = sessionId(event);
  for (const [key, paths] of LOCATION) if (payload[key] === undefined) payload[key] = firstOf(event, paths);
  // RudderStack sends city and country as top-level fields only.
  delete payload.user_properties.city;
  delete payload.user_properties.country;
  if (isPlainObject(payload.user_properties.address)) {
    const { city: _c, country: _k, ...address } = payload.user_properties.address;
    payload.user_properties.address = address;
  }
  if (!payload.user_id && !payload.device_id) throw new TransformError("Either of user ID or device ID fields must be specified");
  payload.ip = firstOf(event, ["context.ip", "request_ip"]);
  payload.library = "rudderstack";
  return compact(payload);
}

/** Track events with revenue become the revenue event plus, per config, one "Product Purchased" per product. */
function trackEvents(event: SluiceEvent, config: Obj): Array<{ event: SluiceEvent; built: Built }> {
  const properties = event.properties;
  const revenue = properties?.revenue;
  if (revenue === undefined || revenue === null) return [{ event, built: { eventType: event.event, properties } }];
  const products = Array.isArray(properties.products) && properties.products.length > 0 ? properties.products : undefined;
  let original: Obj = properties;
  let isRevenue = false;
  if (config.trackProductsOnce === false) {
    if (products) {
      const { products: _split, ...rest } = properties;
      original = rest;
    } else isRevenue = true;
  } else if (!products) isRevenue = true;
  if (config.trackRevenuePerProduct === false) isRevenue = true;
  const out: Array<{ event: SluiceEvent; built: Built }> = [{ event, built: { eventType: event.event, properties: original, isRevenue } }];
  if (products && (config.trackRevenuePerProduct === true || config.trackProductsOnce === false)) {
    // Amplitude dedups on insert_id, so each split-out product needs its own.
    products.forEach((product: Obj, i: number) =>
      out.push({
        event: { ...event, event: "Product Purchased", properties: product, messageId: `${event.messageId}-${i + 1}` },
        built: { eventType: "Product Purchased", properties: product, isRevenue: config.trackRevenuePerProduct === true },
      }),
    );
  }
  return out;
}

const formHeaders = { "Content-Type": "application/x-www-form-urlencoded" };

export const amplitude: DestinationDefinition = {
  name: "AM",
  displayName: "Amplitude",
  config: {
    defaultConfig: [
      "apiKey", "apiSecret", "residencyServer", "groupTypeTrait", "groupValueTrait", "traitsToIncrement", "traitsToSetOnce",
      "traitsToAppend", "traitsToPrepend", "trackProductsOnce", "trackRevenuePerProduct", "mapDeviceBrand",
      "userProvidedPageEventString", "useUserDefinedPageEventName", "userProvidedScreenEventString",
      "useUserDefinedScreenEventName", ...EVENT_FILTERING_KEYS,
    ],
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
    requiredKeys: ["apiKey"],
  },
  configSchema: AmplitudeConfig,
  transform(event, ctx) {
    const apiKey = String(requireConfig(ctx, "apiKey"));
    if (!isEventAllowed(event, ctx.config)) return [];
    const c = ctx.config;
    const httpapi = (events: Obj[]) =>
      restRequest({
        endpoint: endpointFor(ctx, `${base(c)}/2/httpapi`),
        headers: { "Content-Type": "application/json" },
        json: { api_key: apiKey, events, options: { min_id_length: 1 } },
      });

    switch (event.type) {
      case "track": {
        if (typeof event.event !== "string" || event.event === "") throw new TransformError("Event not present. Please send event field");
        const group = getPath(event, "integrations.Amplitude.groups");
        return trackEvents(event, c).map(({ event: e, built }) => httpapi([amplitudeEvent(e, { ...built, group }, c)]));
      }
      case "page":
      case "screen": {
        const kind = event.type === "page" ? "Page" : "Screen";
        const name = event.type === "page" ? event.name : event.name || event.event;
        const useCustom = event.type === "page" ? c.useUserDefinedPageEventName : c.useUserDefinedScreenEventName;
        const template = event.type === "page" ? c.userProvidedPageEventString : c.userProvidedScreenEventString;
        const eventType = useCustom ? customName(event, template) : `Viewed ${name || getPath(event, "properties.category") || ""} ${kind}`;
        if (!eventType) throw new TransformError(`${kind} event name is required`);
        const properties = { ...event.properties, name: name || getPath(event, "properties.category") };
        const group = getPath(event, "integrations.Amplitude.groups");
        return [httpapi([amplitudeEvent(event, { eventType, properties, group }, c)])];
      }
      case "identify":
        return [httpapi([amplitudeEvent(event, { eventType: "$identify" }, c)])];
      case "group": {
        const group = groupInfo(event, c);
        const requests = [httpapi([amplitudeEvent(event, { eventType: "$identify", group }, c)])];
        if (group) {
          requests.push(
            restRequest({
              endpoint: endpointFor(ctx, `${base(c)}/groupidentify`),
              headers: formHeaders,
              form: { api_key: apiKey, identification: [JSON.stringify(compact(group))] },
            }),
          );
        }
        return requests;
      }
      case "alias": {
        if (!event.userId || !event.previousId) throw new TransformError("Alias events need both userId and previousId");
        const unmap = getPath(event, "integrations.Amplitude.unmap");
        const mapping: Obj = unmap
          ? { user_id: unmap, unmap: true }
          : { global_user_id: event.userId, user_id: event.previousId };
        return [
          restRequest({
            endpoint: endpointFor(ctx, `${base(c)}/usermap`),
            headers: formHeaders,
            form: { api_key: apiKey, mapping: [JSON.stringify(mapping)] },
          }),
        ];
      }
      default:
        throw new TransformError(`Event type ${event.type} is not supported`);
    }
  },
  batch(requests) {
    // Amplitude rejects batched user_ids shorter than 5 characters, so those events go alone.
    const batchable = (r: (typeof requests)[number]) => {
      if (!r.endpoint.endsWith("/2/httpapi")) return false;
      const userId = (r.body.JSON.events as Obj[] | undefined)?.[0]?.user_id;
      return userId === undefined || String(userId).length >= 5;
    };
    return batchConsecutive(
      requests,
      (r) => (batchable(r) ? JSON.stringify([r.endpoint, r.body.JSON.api_key]) : null),
      (run) => {
        const events = run.flatMap((r) => r.body.JSON.events as Obj[]);
        const endpoint = run[0]!.endpoint.replace(/\/2\/httpapi$/, "/batch");
        return chunkItems(events, BATCH_MAX_EVENTS, BATCH_MAX_BYTES).map((chunk) =>
          restRequest({ endpoint, headers: run[0]!.headers, json: { api_key: run[0]!.body.JSON.api_key, events: chunk } }),
        );
      },
    );
  },
  deleteUsers(users, ctx: DestinationContext) {
    const apiKey = String(requireConfig(ctx, "apiKey"));
    const apiSecret = String(requireConfig(ctx, "apiSecret"));
    const ids = users.map((u) => u.userId).filter((id) => !!id);
    const url = endpointFor(ctx, ctx.config.residencyServer === "EU" ? DELETE_EU : DELETE_US);
    return chunkItems(ids, DELETE_MAX_IDS).map((userIds) =>
      restRequest({
        endpoint: url,
        headers: { "Content-Type": "application/json", Authorization: basicAuth(apiKey, apiSecret) },
        json: { user_ids: userIds, requester: "RudderStack", ignore_invalid_id: "true" },
      }),
    );
  },
};
