/**
 * SNAPCHAT_CONVERSION through Snap's Conversions API v3 (`apiVersion: newApi`):
 * `POST https://tr.snapchat.com/v3/<pixelId or snapAppId>/events?access_token=<apiKey>`, a
 * `data` list of events in Snap's CAPI shape (`user_data` hashed, `custom_data`, `app_data`
 * with `extinfo` for app events). A track mapped to several Snap events sends them in one call;
 * the router merges calls to the same URL, 2,000 events a call (batch.ts).
 */
import { getPath, isAppleFamily, isEmail, isPlainObject } from "../shared";
import { type DestinationContext, type DestinationRequest, type SluiceEvent, TransformError, configOf, nowOf, restRequest } from "../types";
import { endpointFor } from "../base-url";
import {
  type FieldMapping,
  GENERIC,
  PRODUCT_EVENTS,
  SnapchatConversionConfig,
  dataUseOf,
  eventTimeOf,
  f,
  firstValue,
  hashed,
  isOn,
  mapFields,
  normalizedPhone,
  priceSum,
  productIds,
  snapEventOf,
  withoutNullish,
} from "./common";

const QUANTITY = ["properties.number_items", "properties.quantity"];
const PRICE = ["properties.price", "properties.value", "properties.revenue"];
const dedupFrom = (...ids: string[]) => ["properties.client_dedup_id", ...ids];
const TRANSACTION = dedupFrom("properties.transaction_id", "properties.transactionId");

const DEFAULT: readonly FieldMapping[] = [
  f("custom_data.content_ids", "properties.item_ids"),
  f("custom_data.content_category", "properties.category"),
  f("custom_data.num_items", QUANTITY),
  f("custom_data.value", PRICE),
  f("custom_data.currency", "properties.currency"),
  f("custom_data.search_string", "properties.search_string"),
  f("event_id", TRANSACTION),
];
const withIds = (from: string) => DEFAULT.map((m) => (m.to === "custom_data.content_ids" ? f(m.to, from) : m));
const withoutIds = DEFAULT.filter((m) => m.to !== "custom_data.content_ids");
/** Promotions name the amount `price`, not `value`. */
const promotion = DEFAULT.map((m) => (m.to === "custom_data.value" ? f("custom_data.price", PRICE) : m));

const BY_EVENT: Record<string, readonly FieldMapping[]> = {
  products_searched: DEFAULT.map((m) => (m.to === "custom_data.search_string" ? f(m.to, ["properties.search_string", "properties.query"]) : m)),
  product_list_viewed: withoutIds,
  promotion_viewed: promotion,
  promotion_clicked: promotion,
  product_viewed: withIds("properties.product_id"),
  product_added: withIds("properties.product_id"),
  product_added_to_wishlist: withIds("properties.product_id"),
  checkout_started: withoutIds.map((m) => (m.to === "event_id" ? f("event_id", dedupFrom("properties.order_id", "properties.orderId")) : m)),
  payment_info_entered: DEFAULT.map((m) => (m.to === "event_id" ? f("event_id", dedupFrom("properties.checkout_id", "properties.transactionId")) : m)),
  order_completed: withoutIds
    .filter((m) => m.to !== "custom_data.search_string")
    .map((m) =>
      m.to === "event_id"
        ? f("event_id", dedupFrom("properties.order_id", "properties.orderId"))
        : m.to === "custom_data.content_category"
          ? f(m.to, ["properties.item_category", "properties.category"])
          : m,
    ),
  sign_up: DEFAULT,
};

const COMMON: readonly FieldMapping[] = [
  { to: "custom_data.brand", from: ["properties.brands", "properties.brand"], format: "isArray" },
  f("user_data.sc_click_id", "properties.click_id"),
  f("user_data.sc_cookie1", "properties.uuid_c1"),
  f("app_data.advertiser_tracking_enabled", "properties.att_status"),
  f("user_data.client_ip_address", ["context.ip", "request_ip"]),
  f("user_data.client_user_agent", "context.userAgent"),
  f("user_data.idfv", ["properties.idfv", "context.device.id"]),
  f("user_data.madid", ["properties.adId", "context.device.advertisingId"]),
];

/** Snap's `contents`: the products, or the event's own product fields when it lists none. */
function contentsOf(event: SluiceEvent): Record<string, unknown>[] {
  const content = (p: any) =>
    withoutNullish({ id: p?.product_id || p?.sku || p?.id, item_price: p?.price, quantity: p?.quantity, delivery_category: p?.delivery_category, brand: p?.brand });
  const products = event.properties?.products;
  if (!Array.isArray(products) || products.length === 0) {
    const own = content(event.properties);
    return Object.keys(own).length === 0 ? [] : [own];
  }
  return products.filter(isPlainObject).map(content).filter((c) => Object.keys(c).length > 0);
}

/** Locales whose short zone names cover the abbreviations moment-timezone knows (PDT, CET, IST, AEST). */
const ZONE_LOCALES = ["en-US", "en-GB", "en-IN", "en-AU", "en-NZ"];

/**
 * The zone's abbreviation now (IST, PDT), as moment-timezone names it, from the runtime's zone
 * names; an offset (`+04`, `+0530`) where the zone has none, as moment-timezone writes those.
 */
function zoneAbbreviation(zone: string, now: number): string {
  let offset = "";
  for (const locale of ZONE_LOCALES) {
    let name: string | undefined;
    try {
      name = new Intl.DateTimeFormat(locale, { timeZone: zone, timeZoneName: "short" }).formatToParts(new Date(now)).find((p) => p.type === "timeZoneName")?.value;
    } catch {
      return "";
    }
    if (!name) continue;
    const gmt = /^(?:GMT|UTC)([+-])(\d{1,2})(?::(\d{2}))?$/.exec(name);
    if (!gmt) return name;
    offset ||= `${gmt[1]}${gmt[2]!.padStart(2, "0")}${gmt[3] ?? ""}`;
  }
  return offset;
}

/** Snap's `extinfo`: the app's and device's details in Snap's fixed order, "" where unknown. */
function extInfoOf(event: SluiceEvent, now: number): string[] {
  const text = (path: string) => {
    const v = getPath(event, path);
    return v === undefined || v === null ? "" : String(v);
  };
  const zone = text("context.timezone");
  return [
    isAppleFamily(getPath(event, "context.device.type")) ? "i2" : "a2",
    text("context.app.namespace"),
    text("context.app.build"),
    text("context.app.version"),
    text("context.os.version"),
    text("context.device.model"),
    text("context.locale"),
    zone ? zoneAbbreviation(zone, now) : "",
    text("context.network.carrier"),
    text("context.screen.width"),
    text("context.screen.height"),
    text("context.screen.density"),
    text("properties.cpu_cores"),
    text("properties.storage"),
    text("properties.free_storage"),
    zone,
  ];
}


const hashedTrait = (v: unknown) => {
  const text = v === undefined || v === null ? "" : String(v).trim().toLowerCase();
  return text ? hashed(text) : undefined;
};

function dataEntry(event: SluiceEvent, ctx: DestinationContext, snapEvent: unknown): { entry: Record<string, any>; id: string | undefined } {
  const config = configOf(ctx, SnapchatConversionConfig);
  const { key, conversionType: actionSource, snapName } = snapEventOf(event, config, snapEvent);
  const entry: Record<string, any> = mapFields(event, BY_EVENT[key] ?? DEFAULT);
  entry.event_name = snapName;
  if (PRODUCT_EVENTS.includes(key)) {
    entry.custom_data ??= {};
    entry.custom_data.content_ids = productIds(event);
    entry.custom_data.value = entry.custom_data.value || priceSum(event);
  }
  const contents = contentsOf(event);
  if (contents.length > 0) {
    entry.custom_data ??= {};
    entry.custom_data.contents = contents;
  }
  const common = mapFields(event, COMMON);
  if (common.user_data) entry.user_data = { ...entry.user_data, ...common.user_data };
  if (common.custom_data) entry.custom_data = { ...entry.custom_data, ...common.custom_data };
  if (common.app_data) entry.app_data = { ...entry.app_data, ...common.app_data };

  const user: Record<string, any> = {
    ...entry.user_data,
    fn: hashedTrait(firstValue(event, GENERIC.firstName)),
    ln: hashedTrait(firstValue(event, GENERIC.lastName)),
    ge: hashedTrait(firstValue(event, GENERIC.gender)),
    ct: hashedTrait(firstValue(event, GENERIC.city)),
    zp: hashedTrait(firstValue(event, GENERIC.zipcode)),
    st: hashedTrait(firstValue(event, GENERIC.state)),
    country: hashedTrait(firstValue(event, GENERIC.country)),
  };
  const email = firstValue(event, GENERIC.emailOnly);
  const emailText = email === undefined ? "" : String(email).toLowerCase().trim();
  // RudderStack's check: validator's isEmail (shared.ts), which refuses `.vanderberg@…` (issue 50).
  if (emailText && isEmail(emailText)) user.em = hashed(emailText);
  const phone = normalizedPhone(event)?.toLowerCase().trim();
  if (phone) user.ph = hashed(phone);
  entry.user_data = withoutNullish(user);
  if (!(user.em || user.ph || user.madid || (user.client_ip_address && user.client_user_agent))) {
    throw new TransformError("At least one of email or phone or advertisingId or ip and clientUserAgent is required");
  }
  const now = nowOf(ctx);
  entry.event_time = eventTimeOf(event, now, 7);
  entry.data_processing_options = dataUseOf(event);
  entry.action_source = actionSource;
  if (actionSource === "WEB") entry.event_source_url = firstValue(event, GENERIC.pageUrl);
  if (actionSource === "MOBILE_APP") entry.app_data = { ...entry.app_data, app_id: config.appId, extinfo: extInfoOf(event, now) };
  if (isOn(config.enableDeduplication)) entry.event_id = getPath(event, config.deduplicationKey || "messageId");
  return { entry: withoutNullish(entry), id: actionSource === "MOBILE_APP" ? config.snapAppId : config.pixelId };
}

export function sendV3(event: SluiceEvent, ctx: DestinationContext, snapEvents: unknown[]): DestinationRequest[] {
  const config = configOf(ctx, SnapchatConversionConfig);
  const built = snapEvents.map((e) => dataEntry(event, ctx, e));
  // The call goes to the first Snap event's pixel or app, with every entry.
  const id = built[0]!.id;
  return [
    restRequest({
      endpoint: endpointFor(ctx, `https://tr.snapchat.com/v3/${id}/events`),
      headers: { "Content-Type": "application/json" },
      params: { access_token: config.apiKey },
      json: { data: built.map((b) => b.entry) },
    }),
  ];
}
