/**
 * SatisMeter webhooks: one survey response (`response`) with the event that fired it
 * (`completed` or `dismissed`). It becomes one track `Survey <event>` with the answers as
 * properties and the respondent's traits, device, location and campaign in context.
 */
import { copyFields, jsonBody, newMessage } from "../common";
import { setOwn } from "../../lib/safe-keys";
import { mappingError, type SourceMapping } from "../types";

const INTEGRATION = "SATISMETER";

const FIELDS = [
  ["traits", "context.traits"],
  ["response.user.userId", "userId"],
  ["response.user.id", "anonymousId"],
  ["response.answers", "properties.answers"],
  ["response.pending", "properties.surveyPending"],
  ["response.dismissed", "properties.surveyDismissed"],
  ["response.created", "properties.receivedAt"],
  ["campaign", "context.campaign"],
  ["response.category", "properties.category"],
  ["response.location", "context.location"],
  ["response.user.deleted", "context.traits.userDeleted"],
  ["response.user.groups", "traits.groups"],
  ["response.device", "context.device"],
  ["response.language", "context.locale"],
  ["response.referrer", "context.page.referrer"],
] as const;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The message without its empty parts, as RudderStack's refinePayload: null and "" values go,
 * objects are cleaned through and dropped when nothing is left; arrays are kept whole unless empty.
 */
function refined(obj: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(obj)) {
    if (isObject(value)) {
      const inner = refined(value);
      if (Object.keys(inner).length > 0) setOwn(out, key, inner);
    } else if (typeof value === "boolean" || typeof value === "number") {
      setOwn(out, key, value);
    } else if ((typeof value === "string" || Array.isArray(value)) && value.length > 0) {
      setOwn(out, key, value);
    }
  }
  return out;
}

export const satismeter: SourceMapping = {
  name: "satismeter",
  displayName: "SatisMeter",
  setup:
    "In SatisMeter, go to Settings → Integrations → Webhooks, paste the URL and choose when to send (a user answering all questions, or a user dismissing the survey), then save.",
  sample: {
    body: {
      event: "completed",
      response: {
        id: "6641f0c2a9b8e21d4c7f3a90",
        created: "2024-05-13T10:42:18.305Z",
        rating: 9,
        feedback: "Setup took five minutes.",
        completed: true,
        dismissed: false,
        pending: false,
        answers: [
          { id: "2f0a6c10-1110-11ef-9b1d-4d7e1a2b3c4d", label: "How likely are you to recommend us to a friend?", name: "SM_rating", type: "scale", metric: "nps", value: 9 },
          { id: "2f0a6c11-1110-11ef-9b1d-4d7e1a2b3c4d", label: "What is the main reason for your score?", name: "SM_comment", type: "long-text", value: "Setup took five minutes." },
        ],
        category: "promoter",
        score: 100,
        method: "In-app",
        referrer: "https://app.tallyhq.example/dashboard",
        project: "65f1c0a7d2e3b4a5c6d7e8f9",
        campaign: "6600a1b2c3d4e5f6a7b8c9d0",
        language: "en",
        device: { os: "Windows", type: "desktop" },
        location: { country: "NL", city: "Utrecht", short: "Utrecht", long: "Utrecht, Netherlands" },
        user: {
          id: "6641ef90a9b8e21d4c7f3a11",
          userId: "u-7731",
          name: "Joost de Vries",
          email: "joost@tallyhq.example",
          deleted: false,
          groups: { company: "tallyhq" },
          traits: { plan: "business" },
        },
      },
      traits: { name: "Joost de Vries", email: "joost@tallyhq.example", plan: "business" },
      campaign: { id: "6600a1b2c3d4e5f6a7b8c9d0", name: "Quarterly NPS" },
    },
  },
  map(request) {
    const body = jsonBody(request);
    // RudderStack falls back to response.id for the anonymousId and fails (TypeError) without a response.
    if (!isObject(body) || !isObject(body.response)) throw mappingError("response object is not present in the SatisMeter payload");

    const message = newMessage(INTEGRATION);
    message.type = "track";
    copyFields(message, body, FIELDS);
    message.event = `Survey ${String(body.event)}`;
    // response.id is always there: the last resort so that every event names someone.
    if (!message.userId && !message.anonymousId) message.anonymousId = body.response.id;
    return { events: [refined(message)] };
  },
};
