/**
 * Refiner webhooks: one delivery per trigger (a survey interaction, a segment entered), carrying
 * the user, their account and, for surveys, the form and the response. Each delivery becomes an
 * identify of the user, a track of the triggering event and, when the user belongs to an
 * account with an id, a group.
 */
import { copyFields, jsonBody, newMessage, withoutEmpty } from "../common";
import { mappingError, type SourceMapping } from "../types";

const INTEGRATION = "Refiner";

/**
 * The user's traits come from `email`, else from `attributes`: as in RudderStack, `attributes`
 * only fills context.traits when there is no email (the email sets it first), and the segments
 * join whichever it is.
 */
const IDENTIFY_FIELDS = [
  ["email", "context.traits.email"],
  ["remote_id", "userId"],
  ["attributes", "context.traits"],
  ["response.data", "traits"],
  ["form.uuid", "context.formUuid"],
  ["form.name", "context.formName"],
  ["segments", "context.traits.segments"],
  ["response.received_at", "originalTimestamp"],
] as const;

const TRACK_FIELDS = [
  ["triggered_event", "event"],
  ["remote_id", "userId"],
  ["response.received_at", "originalTimestamp"],
  ["response", "properties.response"],
  ["form.uuid", ["properties.refiner_form_uuid", "context.formUuid"]],
  ["form.name", ["properties.refiner_form_name", "context.formName"]],
] as const;

const GROUP_FIELDS = [
  ["remote_id", "userId"],
  ["account.remote_id", "groupId"],
  ["response.received_at", "originalTimestamp"],
  ["account.attributes", "traits"],
] as const;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The value's entries without null ones; nothing becomes {} (lodash's pickBy, as RudderStack filters these). */
const definedEntries = (value: unknown) => withoutEmpty((value ?? {}) as Record<string, unknown>);

export const refiner: SourceMapping = {
  name: "refiner",
  displayName: "Refiner",
  setup:
    "In Refiner, go to Integrations → Webhooks and click Create Webhook. Give it a name, paste the URL as the target URL and choose the trigger event (e.g. a survey interaction or a user entering a segment), then save.",
  sample: {
    body: {
      uuid: "5c1e4f20-0b7a-11ef-9d2e-3f6a2b8c9d10",
      project_uuid: "a8d3b6e0-f2c1-11ee-8a4b-71c2d9e5f001",
      remote_id: "usr_48213",
      email: "maria.lopez@brightwave.example",
      display_name: "Maria Lopez",
      first_seen_at: "2024-04-18T09:12:40.000000Z",
      last_seen_at: "2024-05-06T14:02:11.000000Z",
      attributes: {
        email: "maria.lopez@brightwave.example",
        name: "Maria Lopez",
        plan: "growth",
        form_views_count: "3",
        form_submissions_count: "1",
        last_form_submission_at: "2024-05-06T14:03:27.000000Z",
      },
      segments: [{ uuid: "b0f1c2d3-0a1b-11ef-8c7d-0242ac120002", name: "Active trial users", created_at: "2024-04-18T09:12:41.000000Z", updated_at: "2024-05-06T14:02:11.000000Z" }],
      account: {
        uuid: "5c20a7b0-0b7a-11ef-b3c4-5d8e7f6a1b2c",
        remote_id: "acct_9921",
        domain: "brightwave.example",
        display_name: "Brightwave Ltd",
        attributes: { name: "Brightwave Ltd", seats: 25, industry: "Media", churn_risk: null },
      },
      triggered_event: "Completed Survey",
      form: { uuid: "0f4e2b60-0a11-11ef-a1b2-6b7c8d9e0f12", name: "Onboarding NPS" },
      response: {
        uuid: "6a7b8c90-0b7a-11ef-9e8f-1a2b3c4d5e6f",
        first_shown_at: "2024-05-06T14:02:58.000000Z",
        last_shown_at: "2024-05-06T14:02:58.000000Z",
        show_counter: null,
        first_data_reception_at: "2024-05-06T14:03:27.000000Z",
        last_data_reception_at: "2024-05-06T14:03:27.000000Z",
        completed_at: "2024-05-06T14:03:27.000000Z",
        dismissed_at: null,
        received_at: "2024-05-06T14:03:27.000000Z",
        data: { how_likely_are_you_to_recommend_us: 9, what_should_we_improve: "More export formats" },
        tags: [],
      },
    },
  },
  map(request) {
    const body = jsonBody(request);
    if (!isObject(body)) throw mappingError("Refiner payload must be a JSON object");

    const identify = newMessage(INTEGRATION);
    identify.type = "identify";
    copyFields(identify, body, IDENTIFY_FIELDS);
    identify.context.traits = definedEntries(identify.context.traits);

    const track = newMessage(INTEGRATION);
    track.type = "track";
    copyFields(track, body, TRACK_FIELDS);
    // RudderStack fails here (TypeError) when nothing filled the track's properties.
    if (!track.properties) throw mappingError("Refiner payload has neither response nor form");
    track.properties.response = definedEntries(track.properties.response);

    const events = [identify, track];
    const group = newMessage(INTEGRATION);
    group.type = "group";
    copyFields(group, body, GROUP_FIELDS);
    group.traits = definedEntries(group.traits);
    if (group.groupId) events.push(group);
    return { events };
  },
};
