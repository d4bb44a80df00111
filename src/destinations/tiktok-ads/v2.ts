/**
 * TIKTOK_ADS Events 2.0 (`version: v2`): `POST /event/track/` with one `data` entry per TikTok
 * event, user fields hashed with `hashUserProperties` (names and zip code always, as TikTok
 * takes them hashed only). The router merges the calls per event source (batch.ts).
 */
import { getPath, isAppleFamily } from "../shared";
import { type DestinationContext, type DestinationRequest, type SluiceEvent, TransformError, configOf, restRequest } from "../types";
import { endpointFor } from "../base-url";
import { API_BASE, PARTNER_NAME, TiktokAdsConfig, configuredEvents, eventNameOf, notMapped, standardEventFor } from "./events";
import { type FieldMapping, firstExternalId, isNonEmpty, isOn, mapFields, sha256 } from "./mapping";
import { contentsFromProducts } from "./v1";

export const TRACK_V2 = `${API_BASE}/event/track/`;

const traitsThenContext = (key: string) => [`traits.${key}`, `context.traits.${key}`];
const FIRST_NAME = ["firstName", "firstname", "first_name"];
const LAST_NAME = ["lastName", "lastname", "last_name"];
const ZIP_KEYS = ["zip", "zipcode", "zip_code", "zipCode", "postalcode", "postal_code", "postalCode"];
const ADDRESS_ZIP_KEYS = ["zipcode", "zip_code", "zip", "zipCode", "postalcode", "postal_code", "postalCode"];
const CONTEXT_ADDRESS_ZIP_KEYS = ["zip", "zipcode", "zip_code", "zipCode", "postalcode", "postal_code", "postalCode"];

const FIELDS: readonly FieldMapping[] = [
  { to: "event_id", from: ["properties.eventId", "properties.event_id", "messageId"] },
  { to: "event_time", from: ["timestamp", "originalTimestamp"], formats: ["secondTimestamp"], required: true, named: "timestamp" },
  { to: "limited_data_use", from: "properties.limited_data_use" },
  { to: "properties.contents", from: "properties.contents" },
  { to: "properties.content_type", from: ["properties.contentType", "properties.content_type"] },
  { to: "properties.search_string", from: ["properties.query"] },
  { to: "properties.shop_id", from: ["properties.shop_id", "properties.shopId"], formats: ["toString"] },
  { to: "properties.order_id", from: ["properties.order_id", "properties.orderId"], formats: ["toString"] },
  { to: "properties.currency", from: "properties.currency" },
  { to: "properties.value", from: "properties.value" },
  { to: "properties.description", from: "properties.description" },
  { to: "properties.query", from: "properties.query" },
  { to: "page.url", from: ["properties.context.page.url", "properties.url", "context.page.url"] },
  { to: "page.referrer", from: ["properties.context.page.referrer", "properties.referrer", "context.page.referrer"] },
  { to: "user.locale", from: ["properties.context.user.locale", "context.locale"] },
  { to: "user.ttclid", from: "properties.ttclid" },
  { to: "user.ttp", from: ["properties.context.user.ttp", "properties.ttp"] },
  {
    to: "user.email",
    from: ["properties.context.user.email", "context.user.email", "traits.email", "context.traits.email", "properties.email"],
    formats: ["trim", "toLower"],
  },
  { to: "user.phone", from: ["properties.context.user.phone", "traits.phone", "context.traits.phone", "properties.phone"] },
  { to: "user.ip", from: ["properties.context.user.ip", "context.ip", "request_ip"] },
  { to: "user.user_agent", from: ["properties.context.user.userAgent", "context.userAgent"] },
  {
    to: "user.first_name",
    from: [...FIRST_NAME.map((k) => `traits.${k}`), ...FIRST_NAME.map((k) => `context.traits.${k}`)],
    formats: ["trim", "toLower", "sha256"],
  },
  {
    to: "user.last_name",
    from: [...LAST_NAME.map((k) => `traits.${k}`), ...LAST_NAME.map((k) => `context.traits.${k}`)],
    formats: ["trim", "toLower", "sha256"],
  },
  { to: "user.city", from: ["context.traits.city", "context.traits.address.city", "properties.city"] },
  { to: "user.country", from: ["context.traits.country", "context.traits.address.country", "properties.country"] },
  { to: "user.state", from: ["context.traits.address.state", "context.traits.state", "properties.state"] },
  {
    to: "user.zip_code",
    from: [
      ...ZIP_KEYS.map((k) => `traits.${k}`),
      ...ADDRESS_ZIP_KEYS.map((k) => `traits.address.${k}`),
      ...ZIP_KEYS.map((k) => `context.traits.${k}`),
      ...CONTEXT_ADDRESS_ZIP_KEYS.map((k) => `context.traits.address.${k}`),
    ],
    formats: ["removeSpacesAndDashes", "sha256"],
  },
  { to: "user.idfa", from: "context.device.advertisingId", formats: ["trim"] },
  { to: "user.idfv", from: "context.device.id" },
  { to: "user.gaid", from: "context.device.advertisingId", formats: ["trim", "toLower"] },
  { to: "user.att_status", from: "properties.att_status", formats: ["toString", "attStatus"] },
  { to: "app.app_id", from: ["properties.appId", "properties.app_id", "context.app.namespace"] },
  { to: "app.app_name", from: ["properties.appName", "properties.app_name", "context.app.name"] },
  { to: "app.app_version", from: ["properties.appVersion", "properties.app_version", "context.app.version"] },
  { to: "ad.callback", from: ["properties.callBack"] },
  { to: "ad.campaign_id", from: ["properties.campaignId", "properties.campaign_id"] },
  { to: "ad.ad_id", from: ["properties.adId", "properties.ad_id"] },
  { to: "ad.creative_id", from: ["properties.creativeId", "properties.creative_id"] },
  { to: "ad.is_retargeting", from: ["properties.isRetargeting", "properties.is_retargeting"] },
  { to: "ad.attributed", from: ["properties.attributed"] },
  { to: "ad.attribution_type", from: ["properties.attributionType", "properties.attribution_type"] },
  { to: "ad.attribution_provider", from: ["properties.attributionProvider", "properties.attribution_provider"] },
  { to: "lead.lead_id", from: ["properties.leadId", "properties.lead_id"] },
  { to: "lead.lead_event_source", from: ["properties.leadEventSource", "properties.lead_event_source"] },
];

/** Events TikTok recommends a content type for: these get `product` when the event names none. */
const WITH_CONTENT_TYPE = ["AddToCart", "CompletePayment", "PlaceAnOrder", "ViewContent"];

const EVENT_SOURCES = ["web", "app", "offline", "crm"];

/** `properties.eventSource`, else `properties.event_source`, when TikTok knows it; else web. */
export function eventSourceOf(event: SluiceEvent): string {
  const p = event.properties ?? {};
  for (const s of [p.eventSource, p.event_source]) if (EVENT_SOURCES.includes(s)) return s;
  return "web";
}

const hashText = (v: unknown) => sha256(String(v).trim());

/** The user fields TikTok takes hashed: external ids and phone numbers one by one when there are several. */
function hashUser(user: Record<string, any>): Record<string, any> {
  const out = { ...user };
  const { email, phone, external_id: externalId, idfa, gaid } = user;
  if (externalId) out.external_id = Array.isArray(externalId) ? externalId.map(hashText) : hashText(externalId);
  if (email && email.length > 0) out.email = hashText(email);
  if (phone && phone.length > 0) out.phone = Array.isArray(phone) ? phone.map(hashText) : hashText(phone);
  if (idfa) out.idfa = hashText(idfa).toLowerCase();
  if (gaid) out.gaid = hashText(gaid);
  return out;
}

function dataEntry(event: SluiceEvent, config: TiktokAdsConfig, tiktokEvent: string): Record<string, unknown> {
  const payload = mapFields(event, FIELDS);
  if (payload.properties?.contents && !Array.isArray(payload.properties.contents)) payload.properties.contents = [payload.properties.contents];
  if (!payload.properties?.contents && event.properties?.products) {
    payload.properties ??= {};
    payload.properties.contents = contentsFromProducts(event, false);
  }
  const contents = payload.properties?.contents;
  if (Array.isArray(contents) && contents.length > 0) {
    const ids = contents.map((c: any) => c?.content_id).filter(Boolean);
    if (ids.length > 0) {
      payload.properties.contents_ids = ids;
      payload.properties.num_items = ids.length;
    }
  }
  const externalId = firstExternalId(event, "tiktokExternalId");
  if (isNonEmpty(externalId)) {
    payload.user ??= {};
    payload.user.external_id = externalId;
  }
  if (isOn(config.hashUserProperties) && isNonEmpty(payload.user)) payload.user = hashUser(payload.user);
  const os = getPath(event, "context.os.name");
  if (os !== undefined && os !== null && payload.user) {
    if (isAppleFamily(os)) delete payload.user.gaid;
    else if (String(os).toLowerCase() === "android") {
      delete payload.user.idfa;
      delete payload.user.idfv;
    }
  }
  if (!payload.properties?.content_type && WITH_CONTENT_TYPE.includes(tiktokEvent)) {
    payload.properties ??= {};
    payload.properties.content_type = "product";
  }
  payload.event = tiktokEvent;
  return Object.fromEntries(Object.entries(payload).filter(([, v]) => v !== undefined && v !== null));
}

export function trackV2(event: SluiceEvent, ctx: DestinationContext): DestinationRequest[] {
  const config = configOf(ctx, TiktokAdsConfig);
  const name = eventNameOf(event).toLowerCase().trim();
  if (!name) throw new TransformError("Event name is required");
  const configured = configuredEvents(config.eventsToStandard).get(name);
  const standard = standardEventFor(name);
  if (!isOn(config.sendCustomEvents) && standard === undefined && !configured) throw notMapped(name);
  // A configured mapping wins; else the standard name, else the event's own name as sent (a custom event).
  const tiktokEvents = configured ?? [standard ?? (event.event as string)];
  const body: Record<string, unknown> = {
    event_source: eventSourceOf(event),
    event_source_id: config.pixelCode,
    partner_name: PARTNER_NAME,
    data: tiktokEvents.map((e) => dataEntry(event, config, e)),
  };
  const testCode = event.properties?.testEventCode;
  if (testCode !== undefined && testCode !== null) body.test_event_code = testCode;
  const headers = { "Access-Token": String(config.accessToken), "Content-Type": "application/json" };
  return [restRequest({ endpoint: endpointFor(ctx, TRACK_V2), headers, json: body })];
}
