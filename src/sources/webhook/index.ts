/**
 * RudderStack's generic webhook source: the body becomes one track `webhook_source_event` with
 * the body as `properties` and a fresh anonymousId. With `putRequestDetailsInContext` in the
 * source's config, the request's method, url, proto, headers and query (first values) go into
 * `context` too.
 */
import { firstValues, jsonBody } from "../common";
import type { SourceMapping } from "../types";

export const WEBHOOK_EVENT = "webhook_source_event";

export const webhook: SourceMapping = {
  name: "webhook",
  displayName: "Webhook Source",
  setup: "Paste the URL into any service that posts JSON, form or multipart bodies. Each request becomes one track event `webhook_source_event` whose properties are the body.",
  sample: { body: { event: "order_shipped", orderId: "1001", carrier: "UPS", items: [{ sku: "SKU-1", quantity: 2 }] } },
  map(request, ctx) {
    const properties = jsonBody(request);
    const event: Record<string, unknown> = { type: "track", event: WEBHOOK_EVENT, anonymousId: ctx.uuid() };
    // A JSON null body leaves the event without properties, as RudderStack drops null values.
    // Another non-object (a list, a string) is refused by intake: Sluice's properties are an object.
    if (properties !== null) event.properties = properties;
    // Any truthy value, as RudderStack reads it (the string "false" included).
    if (Boolean(ctx.source.config.putRequestDetailsInContext)) {
      event.context = {
        method: request.method,
        url: request.url,
        proto: request.proto,
        headers: firstValues(request.headers),
        query_parameters: firstValues(request.query_parameters),
      };
    }
    return { events: [event] };
  },
};
