/**
 * TIKTOK_ADS Events 1.0 (any `version` but `v2`): one `POST /pixel/track/` per TikTok event, the
 * `context` object TikTok's pixel API reads, e-mail, phone number and external id hashed with
 * `hashUserProperties`. The router sends them through `/pixel/batch/` (batch.ts).
 */
import { firstOf, isPlainObject } from "../shared";
import { type DestinationContext, type DestinationRequest, type SluiceEvent, configOf, restRequest } from "../types";
import { endpointFor } from "../base-url";
import { API_BASE, PARTNER_NAME, TiktokAdsConfig, configuredEvents, eventNameOf, notMapped, standardEventFor } from "./events";
import { type FieldMapping, firstExternalId, isNonEmpty, isOn, mapFields, sha256 } from "./mapping";

export const TRACK_V1 = `${API_BASE}/pixel/track/`;

const FIELDS: readonly FieldMapping[] = [
  { to: "event_id", from: ["properties.eventId", "properties.event_id", "messageId"] },
  { to: "timestamp", from: "timestamp" },
  { to: "test_event_code", from: "properties.testEventCode" },
  { to: "properties.contents", from: "properties.contents" },
  { to: "properties.content_category", from: "properties.category" },
  { to: "properties.status", from: "properties.status" },
  { to: "properties.content_name", from: "properties.name" },
  { to: "properties.content_id", from: ["properties.product_id", "properties.productId"], formats: ["toString"] },
  { to: "properties.shop_id", from: ["properties.shop_id", "properties.shopId"], formats: ["toString"] },
  { to: "properties.order_id", from: ["properties.order_id", "properties.orderId"], formats: ["toString"] },
  { to: "properties.content_type", from: ["properties.contentType", "properties.content_type"] },
  { to: "properties.currency", from: "properties.currency" },
  { to: "properties.value", from: "properties.value" },
  { to: "properties.description", from: "properties.description" },
  { to: "properties.query", from: "properties.query" },
  { to: "context.ad", from: ["properties.context.ad", "context.ad"] },
  { to: "context.ad.callback", from: "properties.clickId" },
  { to: "context.page", from: ["properties.context.page", "context.page"] },
  { to: "context.user", from: "properties.context.user" },
  { to: "context.ip", from: ["context.ip", "request_ip"] },
  { to: "context.user_agent", from: "context.userAgent" },
];

/** `properties.products` as TikTok's contents, each with a content type. */
export function contentsFromProducts(event: SluiceEvent, withType: boolean): Record<string, unknown>[] {
  const props = event.properties ?? {};
  const products = props.products;
  if (!Array.isArray(products)) return [];
  return products.map((p: any) => {
    const content: Record<string, unknown> = {
      content_type: withType ? p?.contentType || props.contentType || props.content_type || "product" : undefined,
      content_id: String(p?.product_id),
      content_category: p?.category,
      content_name: p?.name,
      price: p?.price,
      quantity: p?.quantity,
      description: p?.description,
      brand: p?.brand,
    };
    return Object.fromEntries(Object.entries(content).filter(([, v]) => v !== undefined && v !== null));
  });
}

function trackBody(event: SluiceEvent, config: TiktokAdsConfig, tiktokEvent: string): Record<string, unknown> {
  const payload = mapFields(event, FIELDS);
  const props = payload.properties;
  if (props?.contents && !Array.isArray(props.contents)) props.contents = [props.contents];
  if (props && !props.contents && event.properties?.products) props.contents = contentsFromProducts(event, true);
  if (Array.isArray(props?.contents)) {
    for (const content of props.contents) if (isPlainObject(content) && !content.content_type) content.content_type = event.properties?.contentType || "product_group";
  }
  const externalId = firstExternalId(event, "tiktokExternalId");
  const user = (): Record<string, any> => {
    payload.context ??= {};
    payload.context.user ??= {};
    return payload.context.user;
  };
  if (isNonEmpty(externalId)) user().external_id = externalId;
  const traits = firstOf(event, ["traits", "context.traits"]);
  if (!isNonEmpty(payload.context?.user?.email) && traits?.email) user().email = traits.email;
  if (!isNonEmpty(payload.context?.user?.phone_number) && traits?.phone) user().phone_number = traits.phone;

  if (isOn(config.hashUserProperties)) {
    const u = payload.context?.user;
    if (isNonEmpty(u?.external_id)) u.external_id = sha256(String(u.external_id).trim());
    if (isNonEmpty(u?.email)) u.email = sha256(String(u.email).trim().toLowerCase());
    if (isNonEmpty(u?.phone_number)) u.phone_number = sha256(String(u.phone_number).trim());
  }
  const body: Record<string, unknown> = { pixel_code: config.pixelCode, event: tiktokEvent, ...payload, partner_name: PARTNER_NAME };
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined && v !== null));
}

export function trackV1(event: SluiceEvent, ctx: DestinationContext): DestinationRequest[] {
  const config = configOf(ctx, TiktokAdsConfig);
  const name = eventNameOf(event).toLowerCase().trim();
  const configured = configuredEvents(config.eventsToStandard).get(name);
  const standard = standardEventFor(name);
  if (!isOn(config.sendCustomEvents) && standard === undefined && !configured) throw notMapped(name);
  // A configured mapping wins; else the standard name, else the event's own name as sent (a custom event).
  const tiktokEvents = configured ?? [standard ?? (event.event as string)];
  const headers = { "Access-Token": String(config.accessToken), "Content-Type": "application/json" };
  return tiktokEvents.map((e) => restRequest({ endpoint: endpointFor(ctx, TRACK_V1), headers, json: trackBody(event, config, e) }));
}
