/**
 * One Pinterest conversion event per event name, built as RudderStack's pinterest_tag workflow
 * builds it: the common fields, `user_data` (hashed with SHA-256 unless the sender hashed it
 * already), and for tracks `custom_data` from the e-commerce properties.
 * ref: https://developers.pinterest.com/docs/api/v5/events-create/
 */
import { createHash } from "node:crypto";
import { GENERIC_PATHS } from "../generic-fields";
import { firstOf, getPath, isPlainObject } from "../shared";
import { type SluiceEvent, TransformError } from "../types";
import { type PinterestTagConfig, isOn, usesV5 } from "./config";

type Obj = Record<string, any>;

export const VALID_ACTION_SOURCES = ["app_android", "app_ios", "web", "offline"];

/** RudderStack's e-commerce events and the Pinterest event each becomes (matched in lower case). */
const ECOM_EVENTS: Array<{ src: string[]; dest: string }> = [
  { src: ["order completed"], dest: "checkout" },
  { src: ["product added"], dest: "add_to_cart" },
  { src: ["products searched", "product list filtered"], dest: "search" },
];

/** user_data keys Pinterest takes as one plain string; every other key is a list of hashes. */
const SINGLE_VALUE_KEYS = new Set(["client_user_agent", "client_ip_address", "click_id", "partner_id"]);

const GENDERS: Array<[string[], string]> = [
  [["f", "F", "Female", "female", "FEMALE"], "f"],
  [["m", "M", "Male", "male", "MALE"], "m"],
  [["n", "N", "non-binary", "non binary", "Non-Binary", "Non Binary"], "n"],
];

/** The first of `paths` that is neither undefined nor null (the workflow's `??` chains). */
const coalesce = (event: SluiceEvent, paths: string[]) => firstOf(event, paths);

/** The workflow's convertToString: text as it is, other values as JSON, nothing for nothing. */
function asText(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  return typeof v === "string" ? v : JSON.stringify(v);
}

/** `v ? text(v) : undefined`, the workflow's guard on the optional text fields. */
const textIfSet = (v: unknown): string | undefined => (v ? asText(v) : undefined);

const withoutUndefined = (obj: Obj): Obj => Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined));

/**
 * lodash's isEmpty as RudderStack's removeUndefinedAndNullAndEmptyValues reads it: a number or a
 * boolean counts as empty too, so user fields sent as numbers (a phone of digits) are dropped.
 */
function isEmptyValue(v: unknown): boolean {
  if (v === undefined || v === null) return true;
  if (typeof v === "string" || Array.isArray(v)) return v.length === 0;
  if (typeof v === "object") return Object.keys(v).length === 0;
  return true;
}

const toList = (v: unknown): unknown[] => (Array.isArray(v) ? v : [v]);

/** How Pinterest wants each field normalised before hashing (its Conversions API rules). */
function normalised(key: string, value: unknown): string {
  const text = typeof value === "string" ? value : String(value);
  switch (key) {
    case "em":
    case "ct":
    case "st":
    case "country":
    case "ln":
    case "fn":
    case "ge":
      return text.trim().toLowerCase();
    case "ph":
      return text.replace(/\D/g, "").replace(/^0+/, "");
    case "zp":
      return text.trim().replace(/\D/g, "");
    default:
      return text;
  }
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

function mappedGender(gender: unknown): unknown {
  if (!gender) return gender;
  for (const [spellings, code] of GENDERS) if (typeof gender === "string" && spellings.includes(gender)) return code;
  return gender;
}

export function commonFields(event: SluiceEvent, config: PinterestTagConfig): Obj {
  const v5 = usesV5(config);
  const adTracking = getPath(event, "context.device.adTrackingEnabled");
  const timestamp = coalesce(event, GENERIC_PATHS.timestamp);
  const ms = timestamp === undefined ? NaN : new Date(timestamp).getTime();
  const dedupPath = config.deduplicationKey;
  const partnerName = getPath(event, "properties.partnerName");
  const fields: Obj = {
    event_time: ms ? Math.floor(ms / 1000) : undefined,
    event_source_url: coalesce(event, ["context.page.url", "properties.url"]) || undefined,
    action_source: coalesce(event, [
      "traits.action_source",
      "context.traits.action_source",
      "traits.actionSource",
      "context.traits.actionSource",
      "properties.action_source",
      "properties.actionSource",
      "channel",
    ]),
    app_name: coalesce(event, ["properties.appName", "context.app.name"]),
    app_version: coalesce(event, ["properties.appVersion", "context.app.version"]),
    device_brand: coalesce(event, ["properties.manufacturer", "context.device.manufacturer"]),
    device_model: coalesce(event, ["properties.deviceModel", "context.device.model"]),
    device_type: coalesce(event, ["properties.deviceType", "context.device.type"]),
    os_version: getPath(event, "context.os.version") || undefined,
    language: coalesce(event, ["properties.language", "context.traits.language", "context.locale"]),
    advertiser_tracking_enabled: v5 && typeof adTracking === "boolean" ? adTracking : undefined,
    opt_out: adTracking !== undefined ? !adTracking : undefined,
    event_id: (dedupPath ? coalesce(event, [dedupPath]) : undefined) ?? event.messageId,
    app_id: config.appId,
    advertiser_id: v5 ? undefined : config.advertiserId,
    partner_name: partnerName ? asText(partnerName) : undefined,
    // RudderStack reads the carrier only when a partner name is given; kept so, the same bodies.
    device_carrier: partnerName ? asText(getPath(event, "context.network.carrier")) : undefined,
    wifi: getPath(event, "context.network.wifi") ? true : undefined,
  };
  const out = withoutUndefined(fields);
  if (!out.event_time) throw new TransformError("event_time is required");
  if (!out.action_source) throw new TransformError("action_source is required");
  if (!VALID_ACTION_SOURCES.includes(out.action_source)) throw new TransformError(`Action source must be one of ${VALID_ACTION_SOURCES.join(", ")}`);
  return out;
}

export function userData(event: SluiceEvent, config: PinterestTagConfig): Obj {
  const rawGender = coalesce(event, ["traits.gender", "context.traits.gender"]);
  const partnerId = coalesce(event, ["traits.partnerId", "context.traits.partnerId"]);
  const clickId = getPath(event, "properties.clickId");
  const fields: Obj = {
    em: coalesce(event, GENERIC_PATHS.email),
    ph: coalesce(event, GENERIC_PATHS.phone),
    ge: mappedGender(rawGender),
    db: coalesce(event, GENERIC_PATHS.birthday),
    ln: coalesce(event, GENERIC_PATHS.lastName),
    fn: coalesce(event, GENERIC_PATHS.firstName),
    ct: coalesce(event, ["traits.address.city", "context.traits.address.city"]),
    st: coalesce(event, ["traits.address.state", "context.traits.address.state"]),
    zp: coalesce(event, ["traits.address.zip", "context.traits.address.zip"]),
    country: coalesce(event, ["traits.address.country", "context.traits.address.country"]),
    hashed_maids: getPath(event, "context.device.advertisingId"),
    client_ip_address: coalesce(event, ["context.ip", "request_ip"]),
    client_user_agent: getPath(event, "context.userAgent"),
    external_id: isOn(config.sendExternalId) ? coalesce(event, GENERIC_PATHS.userId) : undefined,
    click_id: clickId ? asText(clickId) : undefined,
    partner_id: partnerId ? asText(partnerId) : undefined,
  };
  const present = Object.fromEntries(Object.entries(fields).filter(([, v]) => !isEmptyValue(v)));
  const out: Obj = {};
  if (isOn(config.sendingUnHashedData ?? false)) {
    for (const [key, value] of Object.entries(present)) {
      out[key] = SINGLE_VALUE_KEYS.has(key) ? String(value) : toList(value).map((v) => sha256(normalised(key, v)));
    }
  } else {
    // The sender hashed the values: each goes as it came, in a list; the gender as sent, unmapped.
    for (const [key, value] of Object.entries(present)) out[key] = SINGLE_VALUE_KEYS.has(key) ? value : toList(value);
    const gender = getPath(event, "traits.gender") || getPath(event, "context.traits.gender");
    if (gender) out.ge = toList(gender);
  }
  if (!(out.em || out.hashed_maids || (out.client_ip_address && out.client_user_agent))) {
    throw new TransformError("It is required at least one of em, hashed_maids or pair of client_ip_address and client_user_agent");
  }
  return out;
}

/** Values of `key` over the products, as the workflow's path over a list reads them (missing ones skipped). */
const each = (products: unknown[], key: string): unknown[] =>
  products.map((p) => (isPlainObject(p) ? p[key] : undefined)).filter((v) => v !== undefined && v !== null);

export function customData(event: SluiceEvent): Obj {
  const props: Obj = isPlainObject(event.properties) ? event.properties : {};
  const numOfItems = props.numOfItems;
  const custom = withoutUndefined({
    currency: props.currency,
    value: props.value !== undefined ? asText(props.value) : props.total !== undefined ? asText(props.total) : props.revenue !== undefined ? asText(props.revenue) : undefined,
    num_items: numOfItems ? Number(numOfItems) : numOfItems,
    order_id: textIfSet(props.order_id),
    search_string: props.query,
    opt_out_type: props.optOutType,
    content_name: textIfSet(props.contentName),
    content_category: textIfSet(props.contentCategory),
    content_brand: textIfSet(props.contentBrand),
    np: textIfSet(props.np),
  });
  let product: Obj;
  if (props.products) {
    const products = toList(props.products);
    const total = each(products, "quantity").reduce<number>((sum, q) => sum + Number(q), 0);
    const ids = products
      .map((p) => (isPlainObject(p) ? asText(p.product_id ?? p.sku ?? p.id) : undefined))
      .filter((id): id is string => id !== undefined);
    product = withoutUndefined({
      num_items: total || 0,
      // A list whenever products are given, empty when none has an id, as RudderStack sends it. A null
      // id is skipped where RudderStack sends the text "null": no product has that id.
      content_ids: ids,
      contents: products.map((raw) => {
        const p: Obj = isPlainObject(raw) ? raw : {};
        const id = p.product_id ?? p.sku;
        return withoutUndefined({
          quantity: Number(p.quantity ?? props.quantity ?? 1),
          item_price: asText(p.price ?? props.price),
          item_name: asText(p.name),
          id: id ? asText(id) : undefined,
          item_category: textIfSet(p.category),
          item_brand: textIfSet(p.brand),
        });
      }),
    });
  } else {
    const id = props.product_id ?? props.sku;
    const contentId = asText(props.product_id ?? props.sku ?? props.id);
    product = withoutUndefined({
      num_items: Number(props.quantity) || 0,
      content_ids: contentId === undefined ? undefined : [contentId],
      contents: [
        withoutUndefined({
          quantity: Number(props.quantity) || 1,
          item_price: textIfSet(props.price),
          item_name: textIfSet(props.name),
          id: id ? asText(id) : undefined,
          item_category: textIfSet(props.category),
          item_brand: textIfSet(props.brand),
        }),
      ],
    });
  }
  return { ...product, ...custom };
}

/** RudderStack's snake case of the dashboard's event names: `WatchVideo` → `watch_video`. */
const snakeCase = (name: string) =>
  name
    .replace(/([a-z])([A-Z])/g, "$1_$2")
    .replace(/\s+/g, "_")
    .toLowerCase();

/** The Pinterest event names an event goes out as (one payload each). */
export function eventNames(event: SluiceEvent, config: PinterestTagConfig): string[] {
  if (String(event.type).toLowerCase() === "page") return event.category ? ["view_category"] : ["page_visit"];
  const name = event.event ?? event.name;
  if (!name || typeof name !== "string") throw new TransformError("Event is a required field and should be a string");
  const mapped = (config.eventsMapping ?? [])
    .filter((m) => isPlainObject(m) && m.from === name && m.to !== undefined && m.to !== null)
    .map((m) => snakeCase(String(m.to)));
  if (mapped.length > 0) return mapped;
  const lower = name.toLowerCase();
  const ecom = ECOM_EVENTS.filter((m) => m.src.includes(lower)).map((m) => m.dest);
  if (ecom.length > 0) return ecom;
  if (isOn(config.sendAsCustomEvent)) return ["custom"];
  return [name];
}
