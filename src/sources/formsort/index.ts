/**
 * Formsort webhooks: a flow's answers, posted when a responder loads (or progresses through) a
 * flow and again when they finish it (`finalized`). Each delivery becomes one track,
 * `FlowLoaded` or `FlowFinalized`, with the answers as properties.
 */
import { copyFields, jsonBody, newMessage } from "../common";
import { mappingError, type SourceMapping } from "../types";

const INTEGRATION = "Formsort";

const FIELDS = [
  ["responder_uuid", "userId"],
  ["created_at", "originalTimestamp"],
  ["answers", "properties"],
  ["flow_label", "context.page.title"],
  ["variant_label", "context.variantLabel"],
  ["variant_uuid", "context.variantUuid"],
] as const;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

export const formsort: SourceMapping = {
  name: "formsort",
  displayName: "Formsort",
  setup:
    "In Formsort Studio, open the flow's Integrations tab, choose Webhooks and add the URL as a destination. Give the responder UUID the alias `responder_uuid`, nest the answers under `answers` (the shape this mapping reads), pick the posting frequency (e.g. On Finalize) and save.",
  sample: {
    body: {
      responder_uuid: "3c9e5b1a-7f2d-4a86-9e0b-d41f6c2a8e57",
      flow_label: "mortgage-prequal",
      variant_label: "short-form",
      variant_uuid: "b7e2a9d4-1c3f-4e58-a6b0-92d8f1e3c7a5",
      created_at: "2024-05-09T18:22:47+00:00",
      finalized: true,
      answers: {
        first_name: "Tomás",
        email_address: "tomas.r@example.net",
        home_price: 425000,
        down_payment_percent: 20,
        first_time_buyer: true,
        credit_score_range: "720-759",
      },
    },
  },
  map(request, ctx) {
    const body = jsonBody(request);
    // RudderStack reads `finalized` off whatever it parsed and fails (TypeError) on null.
    if (!isObject(body)) throw mappingError("Formsort payload must be a JSON object");
    const message = newMessage(INTEGRATION);
    message.type = "track";
    copyFields(message, body, FIELDS);
    if (message.userId === undefined || message.userId === null) message.anonymousId = ctx.uuid();
    message.event = body.finalized ? "FlowFinalized" : "FlowLoaded";
    return { events: [message] };
  },
};
