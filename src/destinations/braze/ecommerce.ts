/**
 * Braze's recommended ecommerce events (config `useEcommerceRecommendedEvents`): RudderStack
 * ecommerce track events become `ecommerce.*` custom events whose properties follow Braze's
 * schema. Like RudderStack, missing required fields never drop the event: Braze reports them.
 */
import { ownValue } from "../../lib/safe-keys";
import { firstPresent, isPlainObject } from "../shared";
import type { SluiceEvent } from "../types";

type Obj = Record<string, any>;
type FieldType = "String" | "Float" | "Integer" | "Array";
/** A Braze property, where it is read from (first present wins) and the type it is coerced to. */
type Field = [dest: string, sources: string[], type?: FieldType];

type CartAction = "add" | "remove";
type EcommerceEvent = { name: string; action?: CartAction };

const PRODUCT_VIEWED = "ecommerce.product_viewed";
const CART_UPDATED = "ecommerce.cart_updated";

/** RudderStack event name (trimmed, lower case) → Braze event. */
const EVENTS: Record<string, EcommerceEvent> = {
  "product viewed": { name: PRODUCT_VIEWED },
  "product added": { name: CART_UPDATED, action: "add" },
  "product removed": { name: CART_UPDATED, action: "remove" },
  "checkout started": { name: "ecommerce.checkout_started" },
  "order completed": { name: "ecommerce.order_placed" },
  "order refunded": { name: "ecommerce.order_refunded" },
  "order cancelled": { name: "ecommerce.order_cancelled" },
};

const TOTAL: Field = ["total_value", ["properties.total", "properties.revenue", "properties.value"], "Float"];
const CURRENCY: Field = ["currency", ["properties.currency"], "String"];
const TAX: Field = ["tax", ["properties.tax"], "Float"];
const SHIPPING: Field = ["shipping", ["properties.shipping"], "Float"];
const SUBTOTAL: Field = ["subtotal_value", ["properties.subtotal_value"], "Float"];
const CART_ID: Field = ["cart_id", ["properties.cart_id"], "String"];
const ORDER_ID: Field = ["order_id", ["properties.order_id"], "String"];
const TOTAL_DISCOUNTS: Field = ["total_discounts", ["properties.discount", "properties.total_discounts"], "Float"];
const DISCOUNTS: Field = ["discounts", ["properties.discounts"], "Array"];

/** Event-level properties of each Braze event, read from the whole event. */
const EVENT_FIELDS: Record<string, Field[]> = {
  [PRODUCT_VIEWED]: [
    ["product_id", ["properties.product_id", "properties.sku"], "String"],
    ["product_name", ["properties.name"], "String"],
    ["variant_id", ["properties.variant", "properties.sku", "properties.product_id"], "String"],
    ["price", ["properties.price"], "Float"],
    CURRENCY,
    ["image_url", ["properties.image_url"], "String"],
    ["product_url", ["properties.url"], "String"],
    ["type", ["properties.type"], "Array"],
  ],
  [CART_UPDATED]: [CART_ID, TOTAL, SUBTOTAL, TAX, SHIPPING, CURRENCY],
  // RudderStack's mapping for this event declares no types, so nothing is coerced.
  "ecommerce.checkout_started": [
    ["checkout_id", ["properties.checkout_id", "properties.order_id"]],
    ["cart_id", ["properties.cart_id"]],
    [TOTAL[0], TOTAL[1]],
    [SUBTOTAL[0], SUBTOTAL[1]],
    [TAX[0], TAX[1]],
    [SHIPPING[0], SHIPPING[1]],
    [CURRENCY[0], CURRENCY[1]],
  ],
  "ecommerce.order_placed": [ORDER_ID, TOTAL, CURRENCY, CART_ID, TAX, SHIPPING, TOTAL_DISCOUNTS, SUBTOTAL, DISCOUNTS],
  "ecommerce.order_refunded": [ORDER_ID, TOTAL, CURRENCY, TOTAL_DISCOUNTS, DISCOUNTS],
  "ecommerce.order_cancelled": [
    ORDER_ID,
    TOTAL,
    CURRENCY,
    ["cancel_reason", ["properties.cancel_reason", "properties.reason"], "String"],
    TAX,
    SHIPPING,
    TOTAL_DISCOUNTS,
    SUBTOTAL,
    DISCOUNTS,
  ],
};

/** Properties of each product, read from the product object. */
const PRODUCT_FIELDS: Field[] = [
  ["product_id", ["product_id", "sku"], "String"],
  ["product_name", ["name"], "String"],
  ["variant_id", ["variant", "sku", "product_id"], "String"],
  ["quantity", ["quantity"], "Integer"],
  ["price", ["price"], "Float"],
  ["image_url", ["image_url"], "String"],
  ["product_url", ["url"], "String"],
];

/** Braze custom event properties it reserves for the event itself. */
const RESERVED = ["time", "event_name"];

/** The Braze recommended event for a track event's name, if it is one. */
export function ecommerceEventFor(name: unknown): EcommerceEvent | undefined {
  // An event named `constructor` must not find Object's constructor in the table.
  return typeof name === "string" ? ownValue(EVENTS, name.trim().toLowerCase()) : undefined;
}

/** Only conversions that lose nothing: numeric strings to numbers, finite numbers to strings. */
function coerce(value: unknown, type: FieldType | undefined): unknown {
  if (type === "Float" && typeof value === "string" && value.trim() !== "") {
    const n = Number(value.trim());
    return Number.isFinite(n) ? n : value;
  }
  if (type === "Integer" && typeof value === "string" && /^-?\d+$/.test(value.trim())) return parseInt(value, 10);
  if (type === "String" && typeof value === "number" && Number.isFinite(value)) return String(value);
  return value;
}

/** Present in Braze's eyes: not null, not blank, not an empty object or array (0 and false are). */
function isPresent(v: unknown): boolean {
  if (v === undefined || v === null || Number.isNaN(v)) return false;
  if (typeof v === "string") return v.trim() !== "";
  if (typeof v === "object") return Object.keys(v as object).length > 0;
  return true;
}

function presentOnly(obj: Obj): Obj {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => isPresent(v)));
}

function mapFields(source: unknown, fields: Field[]): Obj {
  const out: Obj = {};
  for (const [dest, sources, type] of fields) {
    const value = firstPresent(source, sources);
    if (value !== undefined) out[dest] = coerce(value, type);
  }
  return out;
}

const sourceKeys = (fields: Field[], prefix = "") =>
  new Set(fields.flatMap(([, sources]) => sources.filter((s) => s.startsWith(prefix)).map((s) => s.slice(prefix.length))));

/** `source` keys not in `consumed`, blanks dropped: Braze's free-form `metadata`. */
function unmapped(source: Obj, consumed: Set<string>): Obj {
  return presentOnly(Object.fromEntries(Object.entries(source).filter(([k]) => !consumed.has(k))));
}

/**
 * `products[]`: each product mapped with its other keys as its metadata; a cart update
 * without a products array describes its one product in the top-level properties.
 */
function products(properties: Obj, brazeEvent: string): Obj[] {
  if (brazeEvent === CART_UPDATED && !Array.isArray(properties.products)) {
    const product = presentOnly(mapFields(properties, PRODUCT_FIELDS));
    return Object.keys(product).length > 0 ? [product] : [];
  }
  const consumed = sourceKeys(PRODUCT_FIELDS);
  const list: unknown[] = Array.isArray(properties.products) ? properties.products : [];
  return list
    .map((raw) => {
      const item = isPlainObject(raw) ? raw : {};
      const product = presentOnly(mapFields(item, PRODUCT_FIELDS));
      const metadata = unmapped(item, consumed);
      if (Object.keys(metadata).length > 0) product.metadata = metadata;
      return product;
    })
    .filter((p) => Object.keys(p).length > 0);
}

/** Braze's `source`: an explicit web/ios/android, else from the channel (and OS on mobile), else web. */
function sourceOf(event: SluiceEvent): string {
  const explicit = String(event.properties?.source ?? "").trim().toLowerCase();
  if (["web", "ios", "android"].includes(explicit)) return explicit;
  const channel = String(event.context?.channel || event.channel || "").toLowerCase();
  if (channel === "mobile") {
    const os = String(event.context?.os?.name || "").toLowerCase();
    if (os.includes("ios")) return "ios";
    if (os.includes("android")) return "android";
  }
  return "web";
}

/** The properties of a recommended ecommerce event. */
export function ecommerceProperties(event: SluiceEvent, brazeEvent: EcommerceEvent): Obj {
  const properties: Obj = isPlainObject(event.properties) ? event.properties : {};
  const fields = EVENT_FIELDS[brazeEvent.name]!;
  const withProducts = brazeEvent.name !== PRODUCT_VIEWED;
  const payload: Obj = mapFields(event, fields);
  if (withProducts) payload.products = products(properties, brazeEvent.name);
  payload.source = sourceOf(event);
  if (brazeEvent.action) payload.action = brazeEvent.action;

  const consumed = sourceKeys(fields, "properties.");
  consumed.add("source");
  if (brazeEvent.action) consumed.add("action");
  if (withProducts) consumed.add("products");
  // A cart update's single product was read from the top level, so its keys are used up.
  if (brazeEvent.name === CART_UPDATED && !Array.isArray(properties.products)) for (const k of sourceKeys(PRODUCT_FIELDS)) consumed.add(k);
  const metadata = unmapped(properties, consumed);
  for (const k of RESERVED) delete metadata[k];
  if (Object.keys(metadata).length > 0) payload.metadata = metadata;
  return presentOnly(payload);
}
