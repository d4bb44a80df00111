/**
 * SNAPCHAT_CONVERSION through Snap's Conversions API v2 (`apiVersion` `legacyApi` or absent):
 * `POST https://tr.snapchat.com/v2/conversion`, `Authorization: Bearer <apiKey>`, one flat
 * body per Snap event, personal data SHA-256 hashed. The router sends them as JSON arrays of up
 * to 2,000 (batch.ts).
 */
import { getPath, isAppleFamily } from "../shared";
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

export const ENDPOINT_V2 = "https://tr.snapchat.com/v2/conversion";

const TRANSACTION = ["properties.transaction_id", "properties.transactionId"];
const ORDER = ["properties.order_id", "properties.orderId"];
const QUANTITY = ["properties.number_items", "properties.quantity"];
const PRICE = ["properties.price", "properties.value", "properties.revenue"];
const SIGN_UP = ["properties.signUpMethod", "properties.sign_up_method"];

/** The fields most Snap events take, in the order RudderStack's default mapping lists them. */
const DEFAULT: readonly FieldMapping[] = [
  f("transaction_id", TRANSACTION),
  f("item_ids", "properties.item_ids"),
  f("item_category", "properties.category"),
  f("number_items", QUANTITY),
  f("price", PRICE),
  f("currency", "properties.currency"),
  f("search_string", "properties.search_string"),
  f("sign_up_method", SIGN_UP),
  f("client_dedup_id", "properties.client_dedup_id"),
];

/** Each e-commerce event's own fields; events not listed take DEFAULT. */
const BY_EVENT: Record<string, readonly FieldMapping[]> = {
  products_searched: [f("search_string", "properties.query"), ...DEFAULT],
  product_list_viewed: DEFAULT.filter((m) => m.to !== "item_ids"),
  promotion_viewed: DEFAULT,
  promotion_clicked: DEFAULT,
  product_viewed: DEFAULT.map((m) => (m.to === "item_ids" ? f("item_ids", "properties.product_id") : m)),
  product_added: DEFAULT.map((m) => (m.to === "item_ids" ? f("item_ids", "properties.product_id") : m)),
  product_added_to_wishlist: DEFAULT.map((m) =>
    m.to === "item_ids" ? f("item_ids", "properties.product_id") : m.to === "sign_up_method" ? f("sign_up_method", ["properties.sign_up_method", "properties.signUpMethod"]) : m,
  ),
  checkout_started: [
    f("transaction_id", ORDER),
    f("item_category", "properties.category"),
    f("number_items", QUANTITY),
    f("currency", "properties.currency"),
    f("search_string", "properties.search_string"),
    f("client_dedup_id", "properties.client_dedup_id"),
    f("price", PRICE),
  ],
  payment_info_entered: DEFAULT.map((m) => (m.to === "transaction_id" ? f("transaction_id", ["properties.checkout_id", "properties.transactionId"]) : m)),
  order_completed: [
    f("transaction_id", ORDER),
    f("item_category", ["properties.item_category", "properties.category"]),
    f("number_items", QUANTITY),
    f("currency", "properties.currency"),
    f("client_dedup_id", "properties.client_dedup_id"),
    f("price", PRICE),
  ],
  sign_up: DEFAULT,
};

const COMMON: readonly FieldMapping[] = [
  f("description", "properties.description"),
  { to: "brands", from: "properties.brands", format: "isArray" },
  f("event_tag", "properties.event_tag"),
  f("click_id", "properties.click_id"),
  f("level", "properties.level"),
  f("uuid_c1", "properties.uuid_c1"),
  f("customer_status", "properties.customer_status"),
  f("data", "properties.data"),
  f("att_status", "properties.att_status"),
  f("sign_up_method", "properties.sign_up_method"),
  f("advertiser_cookie_1", "properties.advertiser_cookie_1"),
  f("delivery_method", "properties.delivery_method"),
  f("device_model", "context.device.model"),
  f("country", GENERIC.country),
  f("region", GENERIC.region),
  { to: "user_agent", from: "context.userAgent", format: "toLower" },
];

const hashedText = (v: unknown) => (v ? hashed(String(v).toLowerCase().trim()) : undefined);

function hashedFields(event: SluiceEvent): Record<string, unknown> {
  const idfv = event.properties?.idfv || getPath(event, "context.device.id");
  const adId = event.properties?.adId || getPath(event, "context.device.advertisingId");
  const phone = normalizedPhone(event);
  const ip = getPath(event, "context.ip") || event.request_ip;
  return {
    hashed_first_name_sha: hashedText(firstValue(event, GENERIC.firstName)),
    hashed_middle_name_sha: hashedText(firstValue(event, GENERIC.middleName)),
    hashed_last_name_sha: hashedText(firstValue(event, GENERIC.lastName)),
    hashed_city_sha: hashedText(firstValue(event, GENERIC.city)),
    hashed_zip: hashedText(firstValue(event, GENERIC.zipcode)),
    hashed_state_sha: hashedText(firstValue(event, GENERIC.state)),
    hashed_email: hashedText(firstValue(event, GENERIC.email)),
    hashed_phone_number: phone ? hashedText(phone) : undefined,
    hashed_ip_address: hashedText(ip),
    // The IDFV is Apple's: sent only from an Apple device.
    hashed_idfv: isAppleFamily(getPath(event, "context.device.type")) && idfv ? hashed(idfv) : undefined,
    hashed_mobile_ad_id: adId ? hashed(adId) : undefined,
  };
}

function snapBody(event: SluiceEvent, ctx: DestinationContext, snapEvent: unknown): Record<string, unknown> {
  const config = configOf(ctx, SnapchatConversionConfig);
  const { key, conversionType, snapName } = snapEventOf(event, config, snapEvent);
  let payload: Record<string, any> = mapFields(event, BY_EVENT[key] ?? DEFAULT);
  payload.event_type = snapName;
  if (PRODUCT_EVENTS.includes(key)) {
    payload.item_ids = productIds(event);
    payload.price = payload.price || priceSum(event);
  }
  payload = { ...payload, ...mapFields(event, COMMON) };
  Object.assign(payload, hashedFields(event));
  const p = payload;
  if (!p.hashed_email && !p.hashed_phone_number && !p.hashed_mobile_ad_id && !(p.hashed_ip_address && p.user_agent)) {
    throw new TransformError("At least one of email or phone or advertisingId or ip and userAgent is required");
  }
  payload.timestamp = eventTimeOf(event, nowOf(ctx), 37);
  payload.data_use = dataUseOf(event);
  payload.event_conversion_type = conversionType;
  if (conversionType === "WEB") {
    payload.pixel_id = config.pixelId;
    payload.page_url = firstValue(event, GENERIC.pageUrl);
  } else if (conversionType === "MOBILE_APP") {
    payload.snap_app_id = config.snapAppId;
    payload.app_id = config.appId;
  } else if (conversionType === "OFFLINE") payload.pixel_id = config.pixelId;
  if (isOn(config.enableDeduplication)) payload.client_dedup_id = getPath(event, config.deduplicationKey || "messageId");
  return withoutNullish(payload);
}

export function sendV2(event: SluiceEvent, ctx: DestinationContext, snapEvents: unknown[]): DestinationRequest[] {
  const config = configOf(ctx, SnapchatConversionConfig);
  const headers = { Authorization: `Bearer ${config.apiKey}`, "Content-Type": "application/json" };
  return snapEvents.map((e) => restRequest({ endpoint: endpointFor(ctx, ENDPOINT_V2), headers, json: snapBody(event, ctx, e) }));
}
