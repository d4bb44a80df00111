/**
 * RudderStack's GA4 mapping tables: which track events become GA4 recommended events, where each
 * parameter is read from, and how products become GA4 items. Kept as data so each row can be
 * checked against RudderStack's mapping files one by one.
 */
import { getPath, isPresent } from "../shared";
import { TransformError } from "../types";

type Obj = Record<string, any>;

/**
 * A product of paths, the value RudderStack derives for cart events (price × quantity). Kept in
 * RudderStack's own shape because its "missing required value" error quotes the source list
 * as JSON; an argument is read with `defaultVal` when absent.
 */
type Product = { operation: "multiplication"; args: Array<{ sourceKeys: string; defaultVal?: number; default?: number }> };
/** Where a parameter's value is read from: paths tried in order, or a product of paths. */
export type Source = string | Product;

export interface Param {
  key: string;
  from: Source[];
  number?: boolean;
  required?: boolean;
  /** Used when every source is missing (undefined or null). */
  fallback?: unknown;
}

export interface Standard {
  name: string;
  params: Param[];
  /** `properties.products` → items, and whether the event is invalid without them. */
  itemList?: "required" | "optional";
  /** The root properties as the one item when there is no product list; the event is invalid without it. */
  item?: boolean;
}

export const p = (key: string, from: Source | Source[], extra: Partial<Param> = {}): Param => ({
  key,
  from: Array.isArray(from) ? from : [from],
  ...extra,
});

const prop = (...names: string[]) => names.map((n) => `properties.${n}`);

function productOf({ args }: Product, source: unknown): number | undefined {
  const values = args.map(({ sourceKeys, defaultVal }) => {
    const v = getPath(source, sourceKeys);
    return isPresent(v) ? v : defaultVal;
  });
  if (values.some((a) => a === undefined || a === null)) return undefined;
  const numbers = values.map(Number);
  return numbers.some(Number.isNaN) ? undefined : numbers.reduce((a, b) => a * b, 1);
}

/**
 * One source is read as is; with several, the first present one wins. The difference matters:
 * an empty string from a single source keeps a default from applying, as in RudderStack.
 */
function read(source: unknown, from: Source[]): unknown {
  const [only] = from;
  if (from.length === 1 && typeof only === "string") return getPath(source, only);
  for (const s of from) {
    const v = typeof s === "string" ? getPath(source, s) : productOf(s, source);
    if (isPresent(v)) return v;
  }
  return undefined;
}

const describe = (from: Source[]) =>
  JSON.stringify(from.length === 1 && typeof from[0] === "string" ? from[0] : from);

/** The parameters `params` read from `source`; a missing required one aborts the event. */
export function mapParams(source: unknown, params: Param[]): Obj {
  const out: Obj = {};
  for (const param of params) {
    let v = read(source, param.from);
    if ((v === undefined || v === null) && param.fallback !== undefined) v = param.fallback;
    if (param.number && v !== undefined && v !== null) v = Number(v);
    if (isPresent(v)) out[param.key] = v;
    else if (param.required) throw new TransformError(`Missing required value from ${describe(param.from)}`);
  }
  return out;
}

/** The last segment of each path a mapping reads: those properties are not repeated as custom parameters. */
export function sourceNames(params: Param[]): string[] {
  return params.flatMap((param) => param.from.filter((s): s is string => typeof s === "string").map((s) => s.split(".").pop()!));
}

// No ecommerce event needs a currency: RudderStack's mappings all default it to USD.
const currency = p("currency", "properties.currency", { fallback: "USD" });
const value = (...names: string[]) => p("value", prop(...names), { number: true, required: true });
const priceTimesQuantity = (quantity: { defaultVal?: number; default?: number }): Product => ({
  operation: "multiplication",
  args: [{ sourceKeys: "properties.price" }, { sourceKeys: "properties.quantity", ...quantity }],
});
const cartValue = (quantity: { defaultVal?: number; default?: number }) =>
  p("value", [...prop("total", "value", "revenue"), priceTimesQuantity(quantity)], { number: true, required: true });
const coupon = p("coupon", "properties.coupon");
/**
 * The engagement time of RudderStack's lead and login mappings. The track parameters every event
 * ends with set it again from the properties alone (default 1), so what it adds is that its
 * source names are not repeated as custom parameters.
 */
const engagementFromTraits = p(
  "engagement_time_msec",
  ["engagementTimeMsec", "engagement_time_msec"].flatMap((k) => [`traits.${k}`, `properties.${k}`, `context.traits.${k}`]),
  { fallback: 1 },
);
const promotion = [
  p("creative_name", prop("creative_name", "creative")),
  p("creative_slot", prop("creative_slot", "position")),
  p("promotion_id", "properties.promotion_id"),
  p("promotion_name", prop("promotion_name", "name")),
];
const campaign = (key: string, field: string) => p(key, [`context.campaign.${field}`, `properties.campaign.${field}`]);
const order = (extra: Param[]) => [
  currency,
  p("transaction_id", "properties.order_id", { required: true }),
  value("total", "value", "revenue"),
  ...extra,
  coupon,
  p("shipping", "properties.shipping", { number: true }),
  p("tax", "properties.tax", { number: true }),
];

export const PAGE_PARAMS = [
  p("page_referrer", "context.page.referrer"),
  p("page_title", "context.page.title"),
  p("page_location", "context.page.url"),
];
// RudderStack reads the generic groupId; a track named "group" sends its properties.group_id as a custom parameter.
export const GROUP_PARAMS = [p("group_id", ["groupId", "traits.groupId"])];

/** Parameters every track and page event carries, after its own ones. */
export const TRACK_PAGE_COMMON = [
  p("engagement_time_msec", prop("engagementTimeMsec", "engagement_time_msec"), { fallback: 1 }),
  p("session_id", [...prop("sessionId", "session_id"), "context.sessionId"]),
  p("session_number", prop("sessionNumber", "session_number")),
  ...PAGE_PARAMS,
];

/** The same for group events, read from the traits. */
export const GROUP_COMMON = [
  p("engagement_time_msec", ["traits.engagementTimeMsec", "context.traits.engagementTimeMsec", "traits.engagement_time_msec", "context.traits.engagement_time_msec"], { fallback: 1 }),
  p("session_id", ["traits.sessionId", "context.traits.sessionId", "traits.session_id", "context.traits.session_id", "context.sessionId"]),
  p("session_number", ["traits.sessionNumber", "traits.session_number", "context.traits.sessionNumber", "context.traits.session_number"]),
];

/**
 * Track events RudderStack sends as GA4 recommended events, keyed by the event name upper-cased
 * after spaces become underscores (so "Order Completed" and "order completed" both match).
 */
export const STANDARD_EVENTS: Record<string, Standard> = {
  PRODUCTS_SEARCHED: { name: "search", params: [p("search_term", "properties.query", { required: true })] },
  PRODUCT_LIST_VIEWED: {
    name: "view_item_list",
    params: [p("item_list_id", "properties.list_id"), p("item_list_name", "properties.category")],
    itemList: "required",
  },
  PROMOTION_VIEWED: { name: "view_promotion", params: promotion, itemList: "required" },
  PROMOTION_CLICKED: { name: "select_promotion", params: promotion, itemList: "optional" },
  PRODUCT_CLICKED: {
    name: "select_item",
    params: [p("item_list_id", "properties.list_id"), p("item_list_name", "properties.category")],
    item: true,
  },
  PRODUCT_VIEWED: { name: "view_item", params: [currency, value("total", "price", "value", "revenue")], item: true },
  PRODUCT_ADDED: { name: "add_to_cart", params: [currency, cartValue({ defaultVal: 1 })], itemList: "optional", item: true },
  // RudderStack's mapping names this default `default`, a key its operation does not read, so
  // remove_from_cart has no quantity 1: price alone gives no value.
  PRODUCT_REMOVED: { name: "remove_from_cart", params: [currency, cartValue({ default: 1 })], itemList: "optional", item: true },
  CART_VIEWED: { name: "view_cart", params: [currency, value("total", "value", "revenue")], itemList: "required" },
  CHECKOUT_STARTED: { name: "begin_checkout", params: [currency, value("total", "value", "revenue"), coupon], itemList: "required" },
  PAYMENT_INFO_ENTERED: {
    name: "add_payment_info",
    params: [currency, value("total", "value", "revenue"), coupon, p("payment_type", "properties.payment_method")],
    itemList: "required",
  },
  CHECKOUT_STEP_COMPLETED: {
    name: "add_shipping_info",
    params: [currency, value("total", "value", "revenue"), coupon, p("shipping_tier", "properties.shipping_method")],
    itemList: "required",
  },
  ORDER_COMPLETED: { name: "purchase", params: order([]), itemList: "required" },
  ORDER_REFUNDED: { name: "refund", params: order([p("affiliation", "properties.affiliation")]), itemList: "optional" },
  PRODUCT_ADDED_TO_WISHLIST: {
    name: "add_to_wishlist",
    params: [currency, value("total", "price", "value", "revenue")],
    itemList: "optional",
    item: true,
  },
  PRODUCT_SHARED: {
    name: "share",
    params: [p("method", "properties.share_via"), p("content_type", "properties.content_type"), p("item_id", prop("item_id", "product_id", "sku"))],
  },
  CART_SHARED: {
    name: "share",
    params: [p("method", "properties.share_via"), p("content_type", "properties.content_type"), p("item_id", prop("item_id", "cart_id"))],
  },
  VIEW_SEARCH_RESULTS: { name: "view_search_results", params: [p("search_term", "properties.search_term")], itemList: "required" },
  GENERATE_LEAD: { name: "generate_lead", params: [currency, value("value", "total", "price", "revenue"), engagementFromTraits] },
  LOGIN: { name: "login", params: [p("method", ["traits.method", "properties.method"]), engagementFromTraits] },
  SIGN_UP: { name: "sign_up", params: [p("method", ["traits.method", "properties.method"]), engagementFromTraits] },
  CAMPAIGN_DETAILS: {
    name: "campaign_details",
    params: [
      campaign("campaign_id", "id"),
      campaign("campaign", "name"),
      ...["source", "medium", "term", "content"].map((field) => campaign(field, field)),
    ],
  },
  // Track events literally named "page" or "group" take those calls' mappings.
  PAGE: { name: "page", params: PAGE_PARAMS },
  GROUP: { name: "group", params: GROUP_PARAMS },
};

/** A product in `properties.products` as a GA4 item; its other fields follow as custom item parameters. */
export const PRODUCT_ITEM = [
  p("item_id", ["item_id", "itemId", "product_id"]),
  p("item_name", ["item_name", "itemName", "name"]),
  p("coupon", "coupon"),
  p("item_category", ["item_category", "itemCategory", "category"]),
  p("item_brand", ["item_brand", "itemBrand", "brand"]),
  p("item_variant", ["item_variant", "itemVariant", "variant"]),
  p("price", "price", { number: true }),
  p("quantity", "quantity", { number: true }),
  p("index", ["index", "position"], { number: true }),
];

/** The root properties as the single item of a product event (no custom item parameters here). */
export const ROOT_ITEM = [
  p("item_id", "product_id"),
  p("item_name", "name"),
  p("coupon", "coupon"),
  p("item_category", "category"),
  p("item_brand", "brand"),
  p("item_variant", "variant"),
  p("price", "price", { number: true }),
  p("quantity", "quantity", { number: true }),
  p("index", "position", { number: true }),
  ...["affiliation", "currency", "discount", "item_category2", "item_category3", "item_category4", "item_category5", "item_list_id", "item_list_name", "location_id"].map(
    (field) => p(field, field),
  ),
];
