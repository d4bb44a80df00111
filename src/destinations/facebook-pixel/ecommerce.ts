/**
 * FACEBOOK_PIXEL's standard events: which track events are which of Meta's standard events, and
 * the custom data each takes (content_ids, contents, content_type, value, …), built as
 * RudderStack's Pixel destination builds it from the e-commerce spec's properties.
 */
import { TransformError } from "../types";
import type { SluiceEvent } from "../types";
import { contentCategory, contentType, isObject, textOf } from "./conversions-api";

type Obj = Record<string, any>;

export interface Category {
  type: string;
  standard: boolean;
  /** Meta's standard event name, for standard categories. */
  eventName?: string;
}

/** E-commerce events: Meta's name for each, by the spec's event name (in lower case) and by Meta's own. */
const ECOMMERCE: Array<{ type: string; eventName: string; alsoByMetaName: boolean }> = [
  { type: "product list viewed", eventName: "ViewContent", alsoByMetaName: true },
  { type: "product viewed", eventName: "ViewContent", alsoByMetaName: false },
  { type: "product added", eventName: "AddToCart", alsoByMetaName: true },
  { type: "order completed", eventName: "Purchase", alsoByMetaName: true },
  { type: "products searched", eventName: "Search", alsoByMetaName: true },
  { type: "checkout started", eventName: "InitiateCheckout", alsoByMetaName: true },
];

/** The e-commerce events whose custom data carries a currency (USD unless the event names one). */
export const ECOMMERCE_TYPES = ECOMMERCE.map((e) => e.type);

/** Meta's other standard events, sent by name with the event's properties. */
const OTHER_STANDARD_EVENTS = [
  "AddToWishlist",
  "AddPaymentInfo",
  "Lead",
  "CompleteRegistration",
  "Contact",
  "CustomizeProduct",
  "Donate",
  "FindLocation",
  "Schedule",
  "StartTrial",
  "SubmitApplication",
  "Subscribe",
];

/** Properties that stay lists in custom data (everything else is flattened). */
export const UNFLATTENED = ["content_ids", "contents"];

export const PAGE: Category = { type: "page", standard: false, eventName: "PageView" };
export const IDENTIFY: Category = { type: "identify", standard: false };

/** The category of a track, by its (mapped or lower-cased) name. */
export function categoryOf(name: string): Category {
  if (OTHER_STANDARD_EVENTS.includes(name)) return { type: "otherStandard", standard: true, eventName: name };
  const ecommerce = ECOMMERCE.find((e) => e.type === name || (e.alsoByMetaName && e.eventName === name));
  if (ecommerce) return { type: ecommerce.type, standard: true, eventName: ecommerce.eventName };
  if (name === "PageView") return { type: "page_view", standard: true, eventName: "PageView" };
  return { type: "simple track", standard: false };
}

/** Meta's value: a number with at most two decimals. */
export function revenueOf(revenue: unknown): number {
  const value = Number.parseFloat(Number.parseFloat(textOf(revenue || "0")).toFixed(2));
  if (Number.isNaN(value)) throw new TransformError("Revenue could not be converted to number");
  return value;
}

const idOf = (p: any) => p?.product_id || p?.sku || p?.id;

/** Order Completed and Checkout Started: every product with an id, the order's revenue as value. */
function orderData(event: SluiceEvent, props: Obj, categoryToContent: unknown, options: Obj | undefined): Obj {
  const { products, revenue, category, quantity, price, currency, contentName, delivery_category: deliveryCategory } = props;
  const value = revenueOf(revenue);
  const type = props.content_type || contentType(event, "product", categoryToContent, options);
  const contentIds: unknown[] = [];
  const contents: Obj[] = [];
  if (products) {
    if (!(products.length > 0 && Array.isArray(products))) throw new TransformError("'properties.products' is not sent as an Array<Object>");
    for (const product of products) {
      const id = idOf(product);
      if (!id) continue;
      contentIds.push(id);
      contents.push({ id, quantity: product.quantity || quantity || 1, item_price: product.price || price, delivery_category: product.delivery_category || deliveryCategory });
    }
  }
  return {
    content_category: contentCategory(category),
    content_ids: contentIds,
    content_type: type,
    currency: currency || "USD",
    value,
    contents,
    num_items: contentIds.length,
    content_name: contentName,
  };
}

/** Product List Viewed: its products, or its category as a product group when none has an id. */
function productListData(event: SluiceEvent, props: Obj, categoryToContent: unknown, options: Obj | undefined): Obj {
  const { products, category, quantity, value, contentName, content_type: type } = props;
  const contentIds: unknown[] = [];
  const contents: Obj[] = [];
  if (products && products.length > 0 && Array.isArray(products)) {
    products.forEach((product, index) => {
      if (!isObject(product)) throw new TransformError(`'properties.products[${index}]' is not an object`);
      const id = idOf(product);
      if (!id) return;
      contentIds.push(id);
      contents.push({ id, quantity: product.quantity || quantity || 1, item_price: product.price });
    });
  }
  let fallbackType: string | undefined;
  if (contentIds.length > 0) fallbackType = "product";
  else if (category) {
    contentIds.push(category);
    contents.push({ id: category, quantity: 1 });
    fallbackType = "product_group";
  }
  return {
    content_ids: contentIds,
    content_type: type || contentType(event, fallbackType, categoryToContent, options),
    contents,
    content_category: contentCategory(category),
    content_name: contentName,
    value: revenueOf(value),
  };
}

/** The event's one product as content ids and contents (none without an id). */
function oneProduct(props: Obj): { contentIds: unknown[]; contents: Obj[] } {
  const id = idOf(props);
  return id ? { contentIds: [id], contents: [{ id, quantity: props.quantity || 1, item_price: props.price }] } : { contentIds: [], contents: [] };
}

/** Product Viewed and Product Added: the one product, valued at its price (or `value`, as the config says). */
function productData(event: SluiceEvent, props: Obj, categoryToContent: unknown, valueField: unknown, options: Obj | undefined): Obj {
  const { contentIds, contents } = oneProduct(props);
  return {
    content_ids: contentIds,
    content_type: props.content_type || contentType(event, "product", categoryToContent, options),
    content_name: props.product_name || props.name || "",
    content_category: contentCategory(props.category || ""),
    currency: props.currency || "USD",
    value: valueField === "properties.value" ? revenueOf(props.value) : revenueOf(props.price),
    contents,
  };
}

/** Products Searched: the query as search_string (text, a number or a boolean; Meta takes all three). */
function searchData(props: Obj): Obj {
  const query = props.query;
  if (query && !["string", "number", "boolean"].includes(typeof query)) throw new TransformError("'query' should be in string format only");
  const { contentIds, contents } = oneProduct(props);
  return {
    content_ids: contentIds,
    content_category: contentCategory(props.category || ""),
    value: revenueOf(props.value),
    contents,
    search_string: query,
  };
}

/** The event's content_ids and contents as the event sent them (lists are not flattened). */
export function withListsKept(customData: Obj, props: Obj): Obj {
  const out = { ...customData };
  for (const key of UNFLATTENED) if (props[key]) out[key] = props[key];
  return out;
}

/** Custom data of a standard event: the properties left, then what Meta's standard event takes. */
export function standardCustomData(
  customData: Obj,
  event: SluiceEvent,
  props: Obj,
  category: Category,
  config: { categoryToContent?: unknown; valueFieldIdentifier?: unknown },
  options: Obj | undefined,
): Obj {
  const c2c = config.categoryToContent;
  switch (category.type) {
    case "product list viewed":
      return { ...customData, ...productListData(event, props, c2c, options) };
    case "product viewed":
    case "product added":
      return { ...customData, ...productData(event, props, c2c, config.valueFieldIdentifier, options) };
    case "order completed":
      return { ...customData, ...orderData(event, props, c2c, options) };
    case "products searched":
      return { ...customData, ...searchData(props) };
    case "checkout started": {
      const { content_name: _name, ...order } = orderData(event, props, c2c, options);
      return { ...customData, ...order };
    }
    default:
      // page_view, a standard page call, other standard events
      return withListsKept(customData, props);
  }
}
