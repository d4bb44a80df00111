/**
 * GA4: events through the Measurement Protocol (`/mp/collect`), for web (gtag: client_id +
 * measurement_id) or app (firebase: app_instance_id + firebase_app_id) clients. RudderStack's
 * ecommerce events map to GA4's recommended events; page → page_view, group → join_group.
 */
import { t } from "elysia";
import { endpointFor } from "../base-url";
import {
  EVENT_FILTERING_KEYS,
  compact,
  eventFilteringSchema,
  firstOf,
  flattenJson,
  getPath,
  isEventAllowed,
  isPlainObject,
  timestampOf,
  toMillis,
} from "../shared";
import { type DestinationDefinition, type SluiceEvent, TransformError, requireConfig, restRequest } from "../types";

type Obj = Record<string, any>;

const ENDPOINT = "https://www.google-analytics.com/mp/collect";
const DEBUG_ENDPOINT = "https://www.google-analytics.com/debug/mp/collect";
// GA4 drops events outside this window, so RudderStack rejects them up front.
const MAX_PAST_MS = 72 * 3600 * 1000;
const MAX_FUTURE_MS = 15 * 60 * 1000;

export const Ga4Config = t.Object(
  {
    apiSecret: t.String({ minLength: 1 }),
    typesOfClient: t.Union([t.Literal("gtag"), t.Literal("firebase")]),
    measurementId: t.Optional(t.String()),
    firebaseAppId: t.Optional(t.String()),
    debugMode: t.Optional(t.Boolean()),
    piiPropertiesToIgnore: t.Optional(t.Array(t.Any())),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);

/** A GA4 parameter: where it comes from, and whether the event is invalid without it. */
type Param = { key: string; from: string[]; number?: boolean; required?: boolean; fallback?: unknown };
type Standard = { name: string; params: Param[]; item?: "required" | "optional"; itemList?: "required" | "optional" };

const p = (key: string, from: string | string[], extra: Partial<Param> = {}): Param => ({
  key,
  from: (Array.isArray(from) ? from : [from]).map((f) => `properties.${f}`),
  ...extra,
});
const VALUE = ["total", "value", "revenue"];

/** RudderStack's ecommerce spec → GA4 recommended events, keyed by the upper-cased event name. */
const STANDARD_EVENTS: Record<string, Standard> = {
  PRODUCTS_SEARCHED: { name: "search", params: [p("search_term", "query", { required: true })] },
  PRODUCT_LIST_VIEWED: { name: "view_item_list", params: [p("item_list_id", "list_id"), p("item_list_name", "category")], itemList: "required" },
  PROMOTION_VIEWED: {
    name: "view_promotion",
    params: [p("creative_name", "creative"), p("creative_slot", "position"), p("promotion_id", "promotion_id"), p("promotion_name", "name")],
    itemList: "optional",
  },
  PROMOTION_CLICKED: {
    name: "select_promotion",
    params: [p("creative_name", "creative"), p("creative_slot", "position"), p("promotion_id", "promotion_id"), p("promotion_name", "name")],
    itemList: "optional",
  },
  PRODUCT_CLICKED: { name: "select_item", params: [p("item_list_id", "list_id"), p("item_list_name", "category")], item: "required" },
  PRODUCT_VIEWED: { name: "view_item", params: [p("currency", "currency", { required: true }), p("value", ["total", "price", "value", "revenue"], { number: true, required: true })], item: "required" },
  PRODUCT_ADDED: { name: "add_to_cart", params: [p("currency", "currency", { fallback: "USD" }), p("value", [...VALUE, "price"], { number: true })], item: "required", itemList: "optional" },
  PRODUCT_REMOVED: { name: "remove_from_cart", params: [p("currency", "currency", { fallback: "USD" }), p("value", [...VALUE, "price"], { number: true })], item: "required", itemList: "optional" },
  CART_VIEWED: { name: "view_cart", params: [p("currency", "currency", { fallback: "USD" }), p("value", VALUE, { number: true, required: true })], itemList: "required" },
  CHECKOUT_STARTED: { name: "begin_checkout", params: [p("currency", "currency", { required: true }), p("value", VALUE, { number: true, required: true }), p("coupon", "coupon")], itemList: "required" },
  PAYMENT_INFO_ENTERED: { name: "add_payment_info", params: [p("currency", "currency"), p("value", VALUE, { number: true }), p("coupon", "coupon"), p("payment_type", "payment_method")], itemList: "required" },
  ORDER_COMPLETED: {
    name: "purchase",
    params: [
      p("currency", "currency", { required: true }), p("transaction_id", "order_id", { required: true }),
      p("value", VALUE, { number: true, required: true }), p("coupon", "coupon"),
      p("shipping", "shipping", { number: true }), p("tax", "tax", { number: true }),
    ],
    itemList: "required",
  },
  ORDER_REFUNDED: {
    name: "refund",
    params: [
      p("currency", "currency", { required: true }), p("transaction_id", "order_id", { required: true }),
      p("value", VALUE, { number: true, required: true }), p("affiliation", "affiliation"), p("coupon", "coupon"),
      p("shipping", "shipping", { number: true }), p("tax", "tax", { number: true }),
    ],
    itemList: "optional",
  },
  PRODUCT_ADDED_TO_WISHLIST: { name: "add_to_wishlist", params: [p("currency", "currency", { fallback: "USD" }), p("value", [...VALUE, "price"], { number: true })], item: "required", itemList: "optional" },
  PRODUCT_SHARED: { name: "share", params: [p("method", "share_via"), p("content_type", "category"), p("item_id", "product_id")] },
  CART_SHARED: { name: "share", params: [p("method", "share_via"), p("content_type", "category"), p("item_id", "cart_id")] },
};

/** GA4 item fields and the product fields RudderStack reads them from. */
const ITEM_FIELDS: Array<[string, string[], boolean?]> = [
  ["item_id", ["item_id", "itemId", "product_id"]],
  ["item_name", ["item_name", "itemName", "name"]],
  ["coupon", ["coupon"]],
  ["item_category", ["item_category", "itemCategory", "category"]],
  ["item_brand", ["item_brand", "itemBrand", "brand"]],
  ["item_variant", ["item_variant", "itemVariant", "variant"]],
  ["price", ["price"], true],
  ["quantity", ["quantity"], true],
  ["index", ["index", "position"], true],
  ["affiliation", ["affiliation"]],
  ["currency", ["currency"]],
  ["discount", ["discount"], true],
  ["item_list_id", ["item_list_id"]],
  ["item_list_name", ["item_list_name"]],
  ["location_id", ["location_id"]],
];
const ITEM_SOURCE_KEYS = ITEM_FIELDS.flatMap(([, from]) => from);

const RESERVED_EVENTS = [
  "ad_activeview", "ad_click", "ad_exposure", "ad_impression", "ad_query", "adunit_exposure", "app_clear_data",
  "app_install", "app_update", "app_remove", "error", "first_open", "first_visit", "in_app_purchase",
  "notification_dismiss", "notification_foreground", "notification_open", "notification_receive", "os_update",
  "screen_view", "session_start", "user_engagement",
];
const RESERVED_WEB_EVENTS = [
  "app_remove", "app_store_refund", "app_store_subscription_cancel", "app_store_subscription_convert",
  "app_store_subscription_renew", "first_open", "first_visit", "in_app_purchase", "session_start", "user_engagement",
];
const RESERVED_PREFIXES = ["google_", "ga_", "firebase_"];
const PARAM_EXCLUSIONS = ["firebase_conversion", "user_properties", "engagementTimeMsec", "sessionId"];
const RESERVED_USER_PROPERTIES = ["first_open_time", "first_visit_time", "last_deep_link_referrer", "user_id", "first_open_after_install"];

const toNumber = (v: unknown) => (v === undefined || v === null || v === "" ? undefined : Number(v));

function mapParams(event: SluiceEvent, params: Param[]): Obj {
  const out: Obj = {};
  for (const param of params) {
    let v = firstOf(event, param.from);
    if (v === undefined && param.fallback !== undefined) v = param.fallback;
    if (v === undefined && param.required) throw new TransformError(`Missing required value from ${JSON.stringify(param.from)}`);
    if (v !== undefined) out[param.key] = param.number ? toNumber(v) : v;
  }
  return out;
}

/** Only scalar, non-empty values are valid item parameters. */
function scalarOnly(obj: Obj): Obj {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== null && typeof v !== "object" && v !== ""));
}

function mapItem(product: Obj): Obj {
  const item: Obj = {};
  for (const [key, from, numeric] of ITEM_FIELDS) {
    const v = firstOf(product, from);
    if (v !== undefined) item[key] = numeric ? toNumber(v) : v;
  }
  return scalarOnly(item);
}

function itemsFromProducts(event: SluiceEvent, required: boolean): Obj[] {
  const products = event.properties?.products;
  if (required && (!Array.isArray(products) || products.length === 0)) {
    throw new TransformError(`Products is an required field for '${event.event}' event`);
  }
  if (!Array.isArray(products)) return [];
  return products.map((product: Obj) => {
    const item = mapItem(product ?? {});
    if (item.item_id === undefined && item.item_name === undefined) throw new TransformError("One of product_id or name is required");
    const custom = Object.fromEntries(Object.entries(product ?? {}).filter(([k]) => !ITEM_SOURCE_KEYS.includes(k)));
    return { ...item, ...scalarOnly(flattenJson(custom, "_", true)) };
  });
}

function itemFromProperties(event: SluiceEvent): Obj[] {
  const item = mapItem(event.properties ?? {});
  if (item.item_id === undefined && item.item_name === undefined) throw new TransformError("One of product_id or name is required");
  return [item];
}

/** Properties not already sent as mapped parameters, flattened with `_` as GA4 params must be flat. */
function customParams(source: unknown, excluded: string[]): Obj {
  if (!isPlainObject(source)) return {};
  const rest = Object.fromEntries(Object.entries(source).filter(([k]) => !excluded.includes(k)));
  return flattenJson(rest, "_", true);
}

function commonTrackParams(event: SluiceEvent): Obj {
  return compact({
    engagement_time_msec: firstOf(event, ["properties.engagementTimeMsec", "properties.engagement_time_msec"]) ?? 1,
    session_id: firstOf(event, ["properties.sessionId", "properties.session_id", "context.sessionId"]),
    session_number: firstOf(event, ["properties.sessionNumber", "properties.session_number"]),
    page_referrer: getPath(event, "context.page.referrer"),
    page_title: getPath(event, "context.page.title"),
    page_location: getPath(event, "context.page.url"),
  });
}

function validateCustomName(name: string): void {
  const lower = name.toLowerCase();
  if (RESERVED_WEB_EVENTS.includes(lower)) throw new TransformError("Reserved custom event names are not allowed");
  if (["_", "firebase_", "ga_", "google_", "gtag."].some((prefix) => lower.startsWith(prefix))) {
    throw new TransformError("Reserved custom prefix names are not allowed");
  }
  if (!/^[A-Za-z]\w*$/.test(name)) {
    throw new TransformError("Event name must start with a letter and can only contain letters, numbers, and underscores");
  }
}

/** The single GA4 event (name + params) for a RudderStack event. */
function ga4Event(event: SluiceEvent): { name: string; params: Obj } {
  if (event.type === "page") {
    const params = { page_referrer: getPath(event, "context.page.referrer"), page_title: getPath(event, "context.page.title"), page_location: getPath(event, "context.page.url") };
    return { name: "page_view", params: { ...params, ...customParams(event.properties, PARAM_EXCLUSIONS), ...commonTrackParams(event) } };
  }
  if (event.type === "group") {
    const groupId = firstOf(event, ["groupId", "traits.groupId"]);
    const traits = firstOf(event, ["traits", "context.traits"]);
    const common = compact({
      engagement_time_msec: firstOf(event, ["traits.engagementTimeMsec", "context.traits.engagementTimeMsec", "traits.engagement_time_msec", "context.traits.engagement_time_msec"]) ?? 1,
      session_id: firstOf(event, ["traits.sessionId", "context.traits.sessionId", "traits.session_id", "context.traits.session_id", "context.sessionId"]),
      session_number: firstOf(event, ["traits.sessionNumber", "traits.session_number", "context.traits.sessionNumber", "context.traits.session_number"]),
    });
    return { name: "join_group", params: { group_id: groupId, ...customParams(traits, [...PARAM_EXCLUSIONS, "groupId"]), ...common } };
  }
  if (typeof event.event !== "string" || event.event.trim() === "") throw new TransformError("Event name is required");
  // RudderStack's normalisation: trim and join words with underscores; case is kept.
  const name = event.event.trim().replace(/\s+/g, "_");
  if (RESERVED_EVENTS.includes(name.toLowerCase())) throw new TransformError("track:: Reserved event names are not allowed");
  const standard = STANDARD_EVENTS[name.toUpperCase()];
  if (!standard) {
    validateCustomName(name);
    return { name, params: { ...customParams(event.properties, PARAM_EXCLUSIONS), ...commonTrackParams(event) } };
  }
  const params = mapParams(event, standard.params);
  let excluded = [...standard.params.flatMap((x) => x.from.map((f) => f.split(".").pop()!)), "products", ...PARAM_EXCLUSIONS];
  if (standard.itemList) params.items = itemsFromProducts(event, standard.itemList === "required" && !standard.item);
  if (standard.item && !(params.items?.length > 0)) {
    params.items = itemFromProperties(event);
    // Product fields went into the item, so they are not repeated as event parameters.
    excluded = [...excluded, ...ITEM_SOURCE_KEYS];
  }
  return { name: standard.name, params: { ...params, ...customParams(event.properties, excluded), ...commonTrackParams(event) } };
}

function externalId(event: SluiceEvent, type: string): unknown {
  const ids = event.context?.externalId;
  return Array.isArray(ids) ? ids.find((x: any) => x?.type === type)?.id : undefined;
}

/** context.traits and properties.user_properties as GA4 user properties ({key: {value}}), invalid ones dropped. */
function userProperties(event: SluiceEvent, config: Obj): Obj | undefined {
  const pii = (Array.isArray(config.piiPropertiesToIgnore) ? config.piiPropertiesToIgnore : []).map((x: any) => x?.piiProperty);
  const out: Obj = {};
  for (const source of [getPath(event, "properties.user_properties"), getPath(event, "context.traits")]) {
    if (!isPlainObject(source)) continue;
    for (const [key, value] of Object.entries(source)) {
      if (RESERVED_USER_PROPERTIES.includes(key) || pii.includes(key)) continue;
      const validKey = /^[A-Za-z]\w{0,23}$/.test(key) && !RESERVED_PREFIXES.some((x) => key.toLowerCase().startsWith(x));
      const validValue =
        (typeof value === "string" && value.trim() !== "" && value.trim().length <= 36) ||
        (typeof value === "number" && String(value).length <= 36) ||
        typeof value === "boolean";
      if (validKey && validValue) out[key] = { value };
    }
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

export const ga4: DestinationDefinition = {
  name: "GA4",
  displayName: "Google Analytics 4 (GA4)",
  config: {
    defaultConfig: ["apiSecret", "debugMode", "typesOfClient", "measurementId", "firebaseAppId", "piiPropertiesToIgnore", ...EVENT_FILTERING_KEYS],
    supportedMessageTypes: ["track", "page", "group"],
    requiredKeys: ["apiSecret", "typesOfClient"],
  },
  configSchema: Ga4Config,
  transform(event, ctx) {
    const apiSecret = String(requireConfig(ctx, "apiSecret"));
    const client = requireConfig(ctx, "typesOfClient");
    if (client !== "gtag" && client !== "firebase") throw new TransformError("destination config 'typesOfClient' must be gtag or firebase");
    const params: Record<string, string> = { api_secret: apiSecret };
    if (client === "gtag") params.measurement_id = String(requireConfig(ctx, "measurementId"));
    else params.firebase_app_id = String(requireConfig(ctx, "firebaseAppId"));
    if (!isEventAllowed(event, ctx.config)) return [];
    if (!["track", "page", "group"].includes(event.type)) throw new TransformError(`Message type ${event.type} not supported`);

    const body: Obj = {};
    if (client === "gtag") {
      body.client_id = externalId(event, "ga4ClientId") ?? event.anonymousId ?? event.rudderId;
      if (body.client_id === undefined) throw new TransformError("ga4ClientId, anonymousId or messageId must be provided");
    } else {
      body.app_instance_id = externalId(event, "ga4AppInstanceId");
      if (body.app_instance_id === undefined) throw new TransformError("ga4AppInstanceId must be provided under externalId");
    }
    const userId = firstOf(event, ["userId", "traits.userId", "traits.id", "context.traits.userId", "context.traits.id"]);
    if (userId !== undefined) body.user_id = String(userId);
    const ms = toMillis(timestampOf(event));
    if (ms !== undefined) {
      const now = Date.now();
      if (ms < now - MAX_PAST_MS) throw new TransformError("Allowed timestamp is [72 hours] into the past");
      if (ms > now + MAX_FUTURE_MS) throw new TransformError("Allowed timestamp is [15 minutes] into the future");
      body.timestamp_micros = ms * 1000;
    }
    const adTracking = getPath(event, "context.device.adTrackingEnabled");
    if ([true, "true", 1, "1"].includes(adTracking)) body.non_personalized_ads = false;
    if ([false, "false", 0, "0"].includes(adTracking)) body.non_personalized_ads = true;
    body.user_properties = userProperties(event, ctx.config);

    const { name, params: eventParams } = ga4Event(event);
    for (const key of Object.keys(eventParams)) {
      if (RESERVED_PREFIXES.some((x) => key.toLowerCase().startsWith(x))) delete eventParams[key];
    }
    const cleaned = compact(eventParams);
    body.events = [Object.keys(cleaned).length > 0 ? { name, params: cleaned } : { name }];

    return [
      restRequest({
        endpoint: endpointFor(ctx, ctx.config.debugMode ? DEBUG_ENDPOINT : ENDPOINT),
        headers: { HOST: "www.google-analytics.com", "Content-Type": "application/json" },
        params,
        json: compact(body),
      }),
    ];
  },
};
