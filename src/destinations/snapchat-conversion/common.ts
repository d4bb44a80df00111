/**
 * SNAPCHAT_CONVERSION's config, event names and the parts both API paths share: which Snap
 * event a RudderStack event is, the conversion type, hashing, the event time and the products.
 */
import { createHash } from "node:crypto";
import { type Static, t } from "elysia";
import { getPath, isPresent, setPath } from "../shared";
import { type SluiceEvent, TransformError } from "../types";

export const SnapchatConversionConfig = t.Object(
  {
    apiKey: t.String(),
    pixelId: t.Optional(t.String()),
    snapAppId: t.Optional(t.String()),
    appId: t.Optional(t.String()),
    rudderEventsToSnapEvents: t.Optional(t.Array(t.Object({ from: t.Optional(t.Any()), to: t.Optional(t.Any()) }, { additionalProperties: true }))),
    enableDeduplication: t.Optional(t.Union([t.Boolean(), t.String()])),
    deduplicationKey: t.Optional(t.String()),
    /** `newApi`: Conversions API v3; `legacyApi` (RudderStack's default) or absent: v2. */
    apiVersion: t.Optional(t.String()),
  },
  { additionalProperties: true },
);
export type SnapchatConversionConfig = Static<typeof SnapchatConversionConfig>;

/** Snap's event types, by RudderStack's event name in snake case. */
const SNAP_EVENTS: Record<string, string> = {
  products_searched: "SEARCH",
  product_list_viewed: "VIEW_CONTENT",
  promotion_viewed: "AD_VIEW",
  promotion_clicked: "AD_CLICK",
  product_viewed: "VIEW_CONTENT",
  product_added: "ADD_CART",
  checkout_started: "START_CHECKOUT",
  payment_info_entered: "ADD_BILLING",
  order_completed: "PURCHASE",
  product_added_to_wishlist: "ADD_TO_WISHLIST",
  sign_up: "SIGN_UP",
  app_open: "APP_OPEN",
  save: "SAVE",
  subscribe: "SUBSCRIBE",
  complete_tutorial: "COMPLETE_TUTORIAL",
  level_complete: "LEVEL_COMPLETE",
  invite: "INVITE",
  login: "LOGIN",
  share: "SHARE",
  reserve: "RESERVE",
  achievement_unlocked: "ACHIEVEMENT_UNLOCKED",
  spent_credits: "SPENT_CREDITS",
  rate: "RATE",
  start_trial: "START_TRIAL",
  list_view: "LIST_VIEW",
  page_view: "PAGE_VIEW",
  app_install: "APP_INSTALL",
  custom_event_1: "CUSTOM_EVENT_1",
  custom_event_2: "CUSTOM_EVENT_2",
  custom_event_3: "CUSTOM_EVENT_3",
  custom_event_4: "CUSTOM_EVENT_4",
  custom_event_5: "CUSTOM_EVENT_5",
};

export const snapEventFor = (key: string): string | undefined => (Object.hasOwn(SNAP_EVENTS, key) ? SNAP_EVENTS[key] : undefined);

/** An event name as Snap's table keys it: trimmed, runs of spaces as one underscore. */
export const snakeName = (name: unknown): string => String(name).trim().replace(/\s+/g, "_");

/** The Snap events `rudderEventsToSnapEvents` maps the track event to (none: the event's own name is used). */
export function mappedEvents(event: SluiceEvent, config: SnapchatConversionConfig): string[] {
  if (!event.event) throw new TransformError("Event name is required");
  const name = snakeName(event.event).toLowerCase();
  const out: string[] = [];
  const list = config.rudderEventsToSnapEvents;
  if (!Array.isArray(list)) return out;
  for (const m of list) {
    const valid = (m?.from || m?.from === "") && (m?.to || m?.to === "");
    if (!valid) continue;
    if (snakeName(m.from).toLowerCase() === name && !out.includes(m.to)) out.push(m.to);
  }
  return out;
}

const CONVERSION_TYPES: Record<string, string> = { web: "WEB", mobile: "MOBILE_APP", mobile_app: "MOBILE_APP", offline: "OFFLINE" };
const conversionOf = (v: unknown): string | undefined => {
  if (typeof v !== "string") return undefined;
  const k = v.toLowerCase();
  return Object.hasOwn(CONVERSION_TYPES, k) ? CONVERSION_TYPES[k] : undefined;
};

/**
 * `properties.eventConversionType`, else the channel: WEB, MOBILE_APP or OFFLINE. As RudderStack
 * reads it, a conversion type Snap does not know beside a known channel gives none at all.
 */
export function conversionTypeOf(event: SluiceEvent): string | undefined {
  const given = event.properties?.eventConversionType;
  if (conversionOf(given) || conversionOf(event.channel)) return given ? conversionOf(given) : conversionOf(event.channel);
  return "OFFLINE";
}

export function checkIds(conversionType: string | undefined, config: SnapchatConversionConfig): void {
  if ((conversionType === "WEB" || conversionType === "OFFLINE") && !config.pixelId) throw new TransformError("Pixel Id is required for web and offline events");
  if (conversionType === "MOBILE_APP" && !(config.appId && config.snapAppId)) {
    throw new TransformError(`${config.snapAppId ? "App Id" : "Snap App Id"} is required for app events`);
  }
}

/**
 * The Snap event a track is sent as (v2's event_type, v3's event_name): its mapped name in snake
 * case (the key of the e-commerce field tables), its conversion type, checked against the ids the
 * config holds, and Snap's name for it; a name Snap lacks is refused in RudderStack's words.
 */
export function snapEventOf(event: SluiceEvent, config: SnapchatConversionConfig, snapEvent: unknown): { key: string; conversionType: string | undefined; snapName: string } {
  const name = snakeName(snapEvent);
  const key = name.toLowerCase();
  const conversionType = conversionTypeOf(event);
  checkIds(conversionType, config);
  const snapName = snapEventFor(key);
  if (!snapName) throw new TransformError(`Event ${name} doesn't match with Snapchat Events!`);
  return { key, conversionType, snapName };
}

/** Events whose item ids and price come from the products list (both API versions). */
export const PRODUCT_EVENTS: readonly string[] = ["product_list_viewed", "checkout_started", "order_completed"];

const SHA256_HEX = /^[\da-f]{64}$/i;

/** SHA-256 in hex, unless the value already is one. */
export function hashed(value: unknown): string | undefined {
  if (!value) return undefined;
  const s = String(value);
  return SHA256_HEX.test(s) ? s : createHash("sha256").update(s).digest("hex");
}

/** The first present value of these paths (RudderStack's list semantics: 0 and false count, "" does not). */
export function firstValue(event: SluiceEvent, paths: readonly string[]): any {
  for (const p of paths) {
    const v = getPath(event, p);
    if (isPresent(v)) return v;
  }
  return undefined;
}

const traitPaths = (...keys: string[]) => [...keys.map((k) => `traits.${k}`), ...keys.map((k) => `context.traits.${k}`)];
const ZIP = ["zip", "zipcode", "zip_code", "zipCode", "postalcode", "postal_code", "postalCode"];
const ADDRESS_ZIP = ["zipcode", "zip_code", "zip", "zipCode", "postalcode", "postal_code", "postalCode"];

/** RudderStack's generic fields as these mappings read them. */
export const GENERIC = {
  firstName: traitPaths("firstName", "firstname", "first_name"),
  lastName: traitPaths("lastName", "lastname", "last_name"),
  middleName: traitPaths("middleName", "middle_name"),
  city: ["traits.address.city", "context.traits.address.city"],
  state: traitPaths("state"),
  country: traitPaths("country"),
  region: traitPaths("region"),
  gender: traitPaths("gender"),
  zipcode: [
    ...ZIP.map((k) => `traits.${k}`),
    ...ADDRESS_ZIP.map((k) => `traits.address.${k}`),
    ...ZIP.map((k) => `context.traits.${k}`),
    ...ZIP.map((k) => `context.traits.address.${k}`),
  ],
  email: [...traitPaths("email"), "properties.email", "context.externalId.0.id"],
  emailOnly: [...traitPaths("email"), "properties.email"],
  phone: [...traitPaths("phone"), "properties.phone"],
  pageUrl: ["context.page.url", "properties.url"],
  timestamp: ["timestamp", "originalTimestamp"],
} as const;

/** The phone number as digits without leading zeros (a SHA-256 hex is kept as it is). */
export function normalizedPhone(event: SluiceEvent): string | undefined {
  const phone = firstValue(event, GENERIC.phone);
  if (!phone) return undefined;
  if (SHA256_HEX.test(String(phone))) return String(phone);
  return String(phone).replace(/\D/g, "").replace(/^0+/, "") || undefined;
}

/** `context.device.attTrackingStatus` 2 (denied) asks Snap to limit the data's use. */
export const dataUseOf = (event: SluiceEvent): string | undefined => (getPath(event, "context.device.attTrackingStatus") === 2 ? "['lmu']" : undefined);

/** The event time in seconds, as text; refused when older than `days` days by the clock. */
export function eventTimeOf(event: SluiceEvent, now: number, days: number): string | undefined {
  const ts = firstValue(event, GENERIC.timestamp);
  if (!ts) return undefined;
  const ms = new Date(ts).getTime();
  const ageDays = Math.ceil((Math.floor(now / 1000) - Math.floor(ms / 1000)) / 86400);
  if (ageDays > days) throw new TransformError(`Events must be sent within ${days} days of their occurrence`);
  return String(ms * 1000 + (((ms % 1000) + 1000) % 1000)).slice(0, 10);
}

/** The products' ids (null without a products list). */
export function productIds(event: SluiceEvent): unknown[] | null {
  const products = event.properties?.products;
  if (!Array.isArray(products)) return null;
  return products.map((p: any) => p?.product_id).filter((id) => !!id);
}

/** The products' price × quantity summed, as text ("null" without a products list, as RudderStack sends it). */
export function priceSum(event: SluiceEvent): string {
  const products = event.properties?.products;
  if (!Array.isArray(products)) return "null";
  let sum = 0;
  for (const p of products) {
    const price = p?.price;
    const quantity = p?.quantity === undefined ? 1 : p.quantity;
    if (price && !Number.isNaN(Number.parseFloat(price)) && !Number.isNaN(Number.parseInt(quantity, 10))) sum += Number.parseFloat(price) * Number.parseInt(quantity, 10);
  }
  return String(sum);
}

export interface FieldMapping {
  to: string;
  from: string | readonly string[];
  format?: "isArray" | "toLower";
}

/** A field table's row, written short. */
export const f = (to: string, from: FieldMapping["from"]): FieldMapping => ({ to, from });

/** A mapping read as RudderStack reads its mapping files (see tiktok-ads/mapping.ts for the same rules). */
export function mapFields(event: SluiceEvent, fields: readonly FieldMapping[]): Record<string, any> {
  const payload: Record<string, any> = {};
  for (const f of fields) {
    let v = typeof f.from === "string" ? getPath(event, f.from) : firstValue(event, f.from);
    if (v !== undefined && v !== null) {
      if (f.format === "isArray" && !Array.isArray(v)) v = undefined;
      else if (f.format === "toLower") v = String(v).toLowerCase();
    }
    if (isPresent(v)) setPath(payload, f.to, v !== null && typeof v === "object" ? structuredClone(v) : v);
  }
  return payload;
}

/** A config switch: true, or the text "true" that exported configs hold. */
export const isOn = (v: unknown): boolean => v === true || v === "true";

export const withoutNullish = (o: Record<string, any>): Record<string, any> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));
