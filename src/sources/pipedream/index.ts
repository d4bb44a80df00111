/**
 * Pipedream workflows posting to Sluice. A body that already is a RudderStack call (a known
 * `type` and someone to attribute it to) goes through as it is; anything else becomes one track
 * `pipedream_source_event` with the body as its properties.
 */
import { jsonBody, newMessage } from "../common";
import { mappingError, type SourceMapping } from "../types";

const INTEGRATION = "PIPEDREAM";
export const PIPEDREAM_EVENT = "pipedream_source_event";

const CALL_TYPES = new Set(["identify", "track", "group", "alias", "page", "screen"]);

const isObject = (v: unknown): v is Record<string, any> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Who the body is about, in RudderStack's order of preference: a user id (at the top, in traits,
 * in context.traits, then their `id`s), else the anonymousId. Truthiness decides, as there.
 */
function identityOf(body: Record<string, any>): unknown {
  const traits = isObject(body.traits) ? body.traits : undefined;
  const contextTraits = isObject(body.context) && isObject(body.context.traits) ? body.context.traits : undefined;
  return body.userId || traits?.userId || contextTraits?.userId || traits?.id || contextTraits?.id || body.anonymousId;
}

export const pipedream: SourceMapping = {
  name: "pipedream",
  displayName: "Pipedream",
  setup:
    "In a Pipedream workflow, add an HTTP request step (Send any HTTP Request, or code using fetch) that POSTs JSON to the URL. Send a RudderStack-shaped call (type plus userId or anonymousId) to have it taken as it is; any other JSON object becomes a `pipedream_source_event` track.",
  sample: {
    body: {
      type: "track",
      event: "Invoice Paid",
      userId: "cus_PzQ81mWv",
      properties: { invoiceId: "in_1OxR2k", amount: 4900, currency: "usd", plan: "team-monthly" },
      context: { traits: { email: "billing@northwind.example" } },
      timestamp: "2024-05-02T16:04:11.000Z",
    },
  },
  map(request, ctx) {
    const body = jsonBody(request);
    // RudderStack would wrap a bare array or scalar as properties; an event's properties are an object.
    if (!isObject(body)) throw mappingError("Pipedream payload must be a JSON object");
    const id = identityOf(body);
    if (body.type) {
      // RudderStack calls toLowerCase() on any truthy type and fails on a non-string one.
      if (typeof body.type !== "string") throw mappingError("type must be a string");
      if (CALL_TYPES.has(body.type.toLowerCase()) && id) return { events: [body] };
    }
    const message = newMessage(INTEGRATION);
    message.type = "track";
    message.event = PIPEDREAM_EVENT;
    message.properties = body;
    message.anonymousId = id || ctx.uuid();
    return { events: [message] };
  },
};
