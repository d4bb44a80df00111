/**
 * Shopify, as rudder-transformer's `shopify` source takes it: three kinds of request share the URL.
 *  - the web pixel's events and identifier calls (a body with `pixelEventLabel`): pixel.ts;
 *  - the store's webhooks for RudderStack's pixel app (`version=pixel` in the query): server.ts;
 *  - everything else, the legacy app's webhooks and storefront identifier calls: tracker.ts.
 * A webhook's topic is the `topic` query parameter (`orders_create`); Shopify answers `OK` for
 * a topic it does not map.
 */
import { header, jsonBody } from "../common";
import { mappingError, type SourceMapping, type WebhookRequest } from "../types";
import { isPixelIdentifier, pixelEvent, pixelIdentifier } from "./pixel";
import { pixelAppWebhook } from "./server";
import { isTrackerIdentifier, trackerIdentifier, trackerWebhook } from "./tracker";
import { isObject, type Json } from "./util";

/**
 * The webhook's topic, with RudderStack's error texts. Sluice also takes Shopify's own
 * `X-Shopify-Topic` header (`orders/create`) when the URL names no topic, so one URL can serve
 * every webhook made in the Shopify admin.
 */
function topicOf(request: WebhookRequest): string {
  const query = request.query_parameters ?? {};
  const fromHeader = header(request, "X-Shopify-Topic");
  if (!Object.hasOwn(query, "topic") && fromHeader) return fromHeader.replace(/\//g, "_");
  // rudder-server always sends the query (the write key is in it); an empty one stands for none.
  if (Object.keys(query).length === 0) throw mappingError("Query_parameters is missing");
  const topic = query.topic;
  if (!Array.isArray(topic)) throw mappingError("Invalid topic in query_parameters");
  if (topic.length === 0) throw mappingError("Topic not found");
  return String(topic[0]);
}

function bodyOf(request: WebhookRequest): Json {
  const body: unknown = jsonBody(request);
  if (!isObject(body)) throw mappingError("Invalid payload: a Shopify webhook body is a JSON object");
  // RudderStack puts the request's query where a body's own `query_parameters` would be, and drops it.
  const { query_parameters: _, ...rest } = body;
  return rest;
}

export const shopify: SourceMapping = {
  name: "Shopify",
  displayName: "Shopify",
  setup:
    "In the Shopify admin, open Settings → Notifications → Webhooks (or register subscriptions through the Admin API), choose JSON, and paste the URL with the topic added, e.g. `&topic=orders_create` (topics as Shopify names them, with `_` for `/`). Without a `topic` parameter Sluice reads Shopify's `X-Shopify-Topic` header. Add `&version=pixel` for the webhooks of RudderStack's pixel app; its web pixel posts to the same URL.",
  sample: {
    query: { topic: "orders_create" },
    body: {
      id: 5812394721081,
      email: "maya.okafor@example.com",
      created_at: "2025-03-14T10:12:44-04:00",
      updated_at: "2025-03-14T10:12:46-04:00",
      cart_token: "c1-8f2a6b0d4e9c47f1a3b5d7e9f0a2c4e6",
      checkout_token: "7d1e3b5a9c2f4e6a8b0c1d3e5f7a9b2c",
      currency: "EUR",
      total_price: "84.90",
      total_tax: "13.56",
      financial_status: "paid",
      note_attributes: [],
      line_items: [
        { id: 14012345678901, product_id: 8123456789012, variant_id: 45123456789012, name: "Linen Apron - Sage", title: "Linen Apron", variant_title: "Sage", sku: "APR-LIN-SAGE", vendor: "Field & Loom", price: "39.95", quantity: 2 },
      ],
      customer: { id: 7234567890123, email: "maya.okafor@example.com", first_name: "Maya", last_name: "Okafor", phone: "+31612345678", state: "enabled", currency: "EUR" },
      shipping_address: { first_name: "Maya", last_name: "Okafor", address1: "Prinsengracht 263", city: "Amsterdam", zip: "1016 GV", country: "Netherlands", country_code: "NL" },
    },
  },
  async map(request, ctx) {
    const body = bodyOf(request);
    const pixelApp = request.query_parameters?.version?.[0] === "pixel";
    if (body.pixelEventLabel) return isPixelIdentifier(body) ? pixelIdentifier(body, ctx) : pixelEvent(body, ctx);
    if (pixelApp) return pixelAppWebhook(body, topicOf(request), ctx);
    if (isTrackerIdentifier(body)) return trackerIdentifier(body, ctx);
    return trackerWebhook(body, topicOf(request), ctx);
  },
};
