/**
 * FACEBOOK_CONVERSIONS' standard events and the custom data each carries, and the app data of
 * app events, as RudderStack's Conversions destination builds them. The server-event parts both
 * Facebook kinds share are in ../facebook-pixel/conversions-api.ts.
 */
import { isAppleFamily } from "../shared";
import { type SluiceEvent, TransformError } from "../types";
import { type Field, contentCategory, contentType, isObject, mapFields, textOf } from "../facebook-pixel/conversions-api";

type Obj = Record<string, any>;

export interface Category {
  type: string;
  standard: boolean;
  eventName?: string;
  /** The custom-data fields the category maps from the event. */
  fields: Field[];
}

/** Meta's value: `$` dropped, a number with at most two decimals. */
function revenue(v: any): number {
  const text = typeof v === "string" && v.charAt(0) === "$" ? v.substring(1) : v;
  let number: number;
  try {
    number = Number(text || 0);
  } catch {
    number = Number.NaN; // an object that cannot be made a number
  }
  const value = Number.parseFloat(number.toFixed(2));
  if (Number.isNaN(value)) throw new TransformError("Revenue is not in the correct format");
  return value;
}

const CONTENT_IDS: Field = { key: "content_ids", from: "", default: () => [] };
const CONTENTS: Field = { key: "contents", from: "", default: () => [] };
const PRODUCT_TYPE: Field = { key: "content_type", from: "", default: () => "product" };
const CATEGORY: Field = { key: "content_category", from: "properties.category" };
const LIST_NAME: Field = { key: "content_name", from: ["properties.content_name", "properties.contentName"] };
const PRODUCT_NAME: Field = { key: "content_name", from: ["properties.name", "properties.product_name"] };
const CURRENCY: Field = { key: "currency", from: "properties.currency", default: () => "USD" };
const VALUE: Field = { key: "value", from: ["properties.revenue", "properties.value", "properties.price", "properties.total"], format: revenue };

const SIMPLE_FIELDS = [VALUE, CURRENCY];

/** Meta's e-commerce standard events, found by the spec's name (lower case) or by Meta's. */
const ECOMMERCE: Category[] = [
  { type: "product list viewed", eventName: "ViewContent", standard: true, fields: [CONTENT_IDS, CONTENTS, PRODUCT_TYPE, CATEGORY, LIST_NAME, CURRENCY, VALUE] },
  { type: "product viewed", eventName: "ViewContent", standard: true, fields: [CONTENT_IDS, CONTENTS, PRODUCT_TYPE, CATEGORY, PRODUCT_NAME, CURRENCY, VALUE] },
  { type: "product added", eventName: "AddToCart", standard: true, fields: [CONTENT_IDS, CONTENTS, PRODUCT_TYPE, CATEGORY, PRODUCT_NAME, CURRENCY, VALUE] },
  { type: "order completed", eventName: "Purchase", standard: true, fields: [CONTENT_IDS, CONTENTS, PRODUCT_TYPE, CATEGORY, LIST_NAME, CURRENCY, VALUE] },
  {
    type: "products searched",
    eventName: "Search",
    standard: true,
    fields: [CONTENT_IDS, CONTENTS, PRODUCT_TYPE, CATEGORY, CURRENCY, VALUE, { key: "search_string", from: "properties.query" }],
  },
  { type: "checkout started", eventName: "InitiateCheckout", standard: true, fields: [CONTENT_IDS, CONTENTS, PRODUCT_TYPE, CATEGORY, CURRENCY, VALUE] },
  { type: "payment info entered", eventName: "AddPaymentInfo", standard: true, fields: [CONTENT_IDS, CONTENTS, CATEGORY, CURRENCY, VALUE] },
  { type: "product added to wishlist", eventName: "AddToWishlist", standard: true, fields: [CONTENT_IDS, CONTENTS, CATEGORY, PRODUCT_NAME, CURRENCY, VALUE] },
];

/** Meta's other standard events, sent by name with value and currency. */
const OTHER_STANDARD_EVENTS = ["Lead", "CompleteRegistration", "Contact", "CustomizeProduct", "Donate", "FindLocation", "Schedule", "StartTrial", "SubmitApplication", "Subscribe"];

/** Page and screen calls, and a track mapped to it. */
export const PAGE_VIEW: Category = { type: "page_view", standard: true, eventName: "PageView", fields: SIMPLE_FIELDS };

/** The category of a track by its (mapped or lower-cased) name; a custom event when none. */
export function categoryOf(name: string): Category {
  const ecommerce = ECOMMERCE.find((c) => name === c.type || name === c.eventName);
  if (ecommerce) return ecommerce;
  if (OTHER_STANDARD_EVENTS.includes(name)) return { type: "otherStandard", standard: true, eventName: name, fields: SIMPLE_FIELDS };
  if (name === "PageView") return PAGE_VIEW;
  return { type: "simple track", standard: false, fields: SIMPLE_FIELDS };
}

/** content_ids and contents of the products that have an id. */
function productContents(products: unknown, fallbackQuantity?: unknown, fallbackDelivery?: unknown): { ids: unknown[]; contents: Obj[] } {
  const ids: unknown[] = [];
  const contents: Obj[] = [];
  if (!Array.isArray(products)) return { ids, contents };
  for (const p of products) {
    if (!isObject(p)) continue;
    const id = p.product_id || p.sku || p.id;
    if (!id) continue;
    ids.push(id);
    contents.push({ id, quantity: p.quantity || fallbackQuantity || 1, item_price: p.price, delivery_category: p.delivery_category || fallbackDelivery });
  }
  return { ids, contents };
}

/** The products of the event: single-product events are their own product. */
function productsOf(props: Obj | undefined, type: string): unknown {
  if (["product added", "product viewed", "products searched"].includes(type)) return [props];
  const products = props?.products;
  if (["payment info entered", "product added to wishlist"].includes(type) && !Array.isArray(products)) return [props];
  return products;
}

/** The category's custom data, over the properties (PII rules already applied). */
export function customDataOf(customData: Obj, event: SluiceEvent, category: Category, categoryToContent: unknown, options: Obj | undefined): Obj {
  const props: Obj | undefined = event.properties;
  let data = mapFields(event, category.fields);
  const products = productsOf(props, category.type);
  const typeOr = (fallback: unknown) => props?.content_type || contentType(event, fallback, categoryToContent, options);
  switch (category.type) {
    case "product list viewed": {
      const { ids, contents } = productContents(products, props?.quantity);
      const cc = data.content_category;
      let fallback: string | undefined;
      if (ids.length > 0) fallback = "product";
      else if (cc) {
        ids.push(cc);
        contents.push({ id: cc, quantity: 1 });
        fallback = "product_group";
      }
      data = { ...data, content_ids: ids, contents, content_type: typeOr(fallback), content_category: contentCategory(cc) };
      break;
    }
    case "product added":
    case "product viewed":
    case "products searched": {
      const cc = data.content_category;
      const type = typeOr(data.content_type);
      const { ids, contents } = productContents(products);
      data = { ...data, content_ids: ids.length === 1 ? ids[0] : ids, contents, content_type: type, content_category: contentCategory(cc) };
      const query = data.search_string;
      if (query && !["string", "number", "boolean"].includes(typeof query)) throw new TransformError("'query' should be in string format only");
      break;
    }
    case "payment info entered":
    case "product added to wishlist":
    case "order completed":
    case "checkout started": {
      const { ids, contents } = productContents(products, props?.quantity, props?.delivery_category);
      const cc = data.content_category;
      data = { ...data, content_ids: ids, contents, content_type: typeOr(data.content_type), content_category: contentCategory(cc), num_items: ids.length };
      break;
    }
    default:
      break;
  }
  return { ...customData, ...data };
}

// ---- app data --------------------------------------------------------------------------------

/** The 16 parts of Meta's extended device information, where each is read. */
const EXTINFO: Array<{ from: string; required?: boolean; format?: (v: any) => any }> = [
  { from: "context.device.type", required: true, format: (v) => textOf(v).toLowerCase() },
  { from: "context.app.namespace" },
  { from: "context.app.build" },
  { from: "context.app.version" },
  { from: "context.os.version", required: true },
  { from: "context.device.model" },
  { from: "context.locale" },
  { from: "context.abv_timezone" },
  { from: "context.network.carrier" },
  { from: "context.screen.width" },
  { from: "context.screen.height" },
  { from: "context.screen.density" },
  { from: "context.cpu_cores" },
  { from: "context.ext_storage_size" },
  { from: "context.avl_storage_size" },
  { from: "context.timezone" },
];

const APP_FIELDS: Field[] = [
  { key: "advertiser_tracking_enabled", from: "context.device.adTrackingEnabled", required: true },
  { key: "application_tracking_enabled", from: "properties.application_tracking_enabled", required: true },
  ...EXTINFO.map((e, i) => ({ key: `extinfo.${i}`, ...e })),
  { key: "campaign_ids", from: ["properties.campaignId", "context.traits.campaignId", "context.campaign.name"] },
  { key: "install_referrer", from: "properties.install_referrer" },
  { key: "installer_package", from: "properties.installer_package" },
  { key: "url_schemes", from: "properties.url_schemes" },
  { key: "windows_attribution_id", from: "properties.windows_attribution_id" },
];

/**
 * app_data of an app event: tracking flags and Meta's 16-part `extinfo` (`a2` for Android, `i2`
 * for Apple platforms first, blanks for parts the event lacks).
 */
export function appDataOf(event: SluiceEvent): Obj {
  const mapped = mapFields(event, APP_FIELDS);
  const extinfo: unknown[] = EXTINFO.map((_, i) => mapped[`extinfo.${i}`]);
  const platform = extinfo[0];
  if (platform === "android") extinfo[0] = "a2";
  else if (isAppleFamily(platform)) extinfo[0] = "i2";
  else {
    throw new TransformError('Extended device information i.e, "context.device.type" is not a valid value. It should be either android or ios/watchos/ipados/tvos');
  }
  const out: Obj = {};
  for (const [key, value] of Object.entries(mapped)) {
    if (key === "extinfo.0") out.extinfo = extinfo.map((v) => v || "");
    else if (!key.startsWith("extinfo.")) out[key] = value;
  }
  return out;
}
