/**
 * Segment's Webhooks destination: Segment posts its own events (track, identify, page, ...),
 * which already follow the spec RudderStack shares with Segment. They pass through unchanged:
 * an object is one event, a list (Segment's batched webhooks) is one event per element.
 */
import { jsonBody } from "../common";
import { mappingError, type SourceMapping } from "../types";

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

export const segment: SourceMapping = {
  name: "Segment",
  displayName: "Segment",
  setup:
    "In Segment, open Connections → Destinations → Add Destination, pick Webhooks (Actions) (or the classic Webhooks destination), connect it to the Segment source to forward, and paste the URL as the webhook URL of its Send mapping with method POST. Segment's events arrive as they are.",
  sample: {
    body: {
      type: "track",
      event: "Order Completed",
      userId: "user-90211",
      anonymousId: "2f1e0c43-8a5b-4d7e-9c61-b04a3e8d5f27",
      messageId: "ajs-next-1715678400123-7c3d2e1f-0a9b-4c8d",
      timestamp: "2024-05-14T09:20:00.123Z",
      properties: { orderId: "SO-10482", total: 86.5, currency: "USD", products: [{ product_id: "p-19", quantity: 2, price: 43.25 }] },
      context: { ip: "198.51.100.23", library: { name: "analytics.js", version: "next-1.64.0" }, page: { path: "/checkout/done" } },
    },
  },
  map(request) {
    const body = jsonBody(request);
    const events = Array.isArray(body) ? body : [body];
    // RudderStack fails on these with an internal error; they are no events, so say so.
    if (!events.every(isObject)) throw mappingError("Segment webhook body must be an event object or a list of event objects");
    return { events };
  },
};
