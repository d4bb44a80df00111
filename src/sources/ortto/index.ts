/**
 * Ortto's activity webhook (a Webhook data source with "send activity payload"): one activity of
 * one contact per request. It becomes a track named after the activity (`act::o` → `Opened
 * email`), with the contact as traits and the rest of the payload, flattened, as properties, as
 * rudder-transformer's `ortto` source makes it. Ortto's test activity is answered with its own
 * body and makes no event.
 */
import { copyFields, flattenJson, getPath, jsonBody, newMessage } from "../common";
import { mappingError, type SourceMapping } from "../types";
import { setOwn } from "../../lib/safe-keys";
import { ACTIVITY_NAMES, TEST_ACTIVITY } from "./activities";

const INTEGRATION = "ortto";
const UNKNOWN_ACTIVITY = "custom event triggered";

const CONTACT_FIELDS = [
  ["contact.email", "context.traits.email"],
  ["contact.external_id", "userId"],
  ["contact.country.name", "context.traits.address.country"],
  ["contact.city.name", "context.traits.address.city"],
  ["contact.postal", "context.traits.address.postalCode"],
  ["id", "messageId"],
  ["time", "originalTimestamp"],
  ["contact.first_name", "context.traits.firstName"],
  ["contact.last_name", "context.traits.lastName"],
] as const;

/** Flattened fields already mapped above, so not repeated in properties. */
const MAPPED_FIELDS = [
  "contact.email", "contact.contact_id", "id", "time", "activity.field_id", "contact.external_id", "contact.country.name",
  "contact.city.name", "contact.postal", "contact.first_name", "contact.last_name", "contact.birthday.day",
  "contact.birthday.month", "contact.birthday.year", "contact.phone_number.c", "contact.phone_number", "contact.phone_number.n",
];

const isRecord = (v: unknown): v is Record<string, any> => v !== null && typeof v === "object" && !Array.isArray(v);

/** A JSON value as a JavaScript template literal writes it (`${v}`), without calling anything the payload defines. */
function text(v: unknown): string {
  if (Array.isArray(v)) return v.map((x) => (x === null || x === undefined ? "" : text(x))).join(",");
  return isRecord(v) ? "[object Object]" : String(v);
}

/** A birthday part padded to two digits when below 10, as JavaScript's `part < 10` decides for a JSON value. */
function twoDigits(part: unknown): string {
  const n = part === undefined || isRecord(part) ? NaN : Array.isArray(part) ? Number(text(part)) : Number(part);
  return n < 10 ? `0${text(part)}` : text(part);
}

/** Ortto's time (RFC 3339 with nanoseconds) cut to whole seconds, as RudderStack does. */
function toSeconds(time: unknown): string {
  const ms = typeof time === "number" || typeof time === "string" ? new Date(time).getTime() : typeof time === "boolean" ? Number(time) : NaN;
  const date = new Date(Math.floor(ms / 1000) * 1000);
  if (Number.isNaN(date.getTime())) throw mappingError("Invalid time value");
  return date.toISOString();
}

export const ortto: SourceMapping = {
  name: "ortto",
  displayName: "Ortto",
  setup:
    "In Ortto, go to Data sources → New data source → Webhook (advanced), paste the URL as the Webhook URL with method POST and tick Send activity payload if relevant; then use the webhook from a journey or playbook, or on an activity. Each activity becomes a track named after it (e.g. `Opened email`); Ortto's test call is answered and makes no event.",
  sample: {
    body: {
      activity: {
        id: "0066a1b2c3d4e5f601234567",
        field_id: "act::c",
        created: "2024-06-01T09:41:07Z",
        attr: { "str::cmp": "June product update", "str::u": "https://www.example.com/changelog" },
      },
      contact: {
        contact_id: "0066a1b2c3d4e5f6aa00bb11",
        external_id: "crm-58201",
        email: "alex.martin@example.com",
        first_name: "Alex",
        last_name: "Martin",
        city: { name: "Lyon", id: 2996944 },
        country: { name: "France", id: 3017382 },
        postal: "69002",
        birthday: { year: 1990, month: 7, day: 3, timezone: "Europe/Paris" },
        phone_number: { c: "33", n: "612345678" },
      },
      id: "0066a1b2c3d4e5f6cc22dd33",
      time: "2024-06-01T09:41:08.318204551Z",
      webhook_id: "66a0f1e2d3c4b5a697887766",
    },
  },
  map(request, ctx) {
    const body = jsonBody(request);
    const fieldId = getPath(body, "activity.field_id");
    if (fieldId === TEST_ACTIVITY) return { events: [], answer: { body: JSON.stringify(body), contentType: "application/json" } };
    // RudderStack fails on a body without an activity (it reads activity.field_id); a clear 400 here.
    if (!isRecord(body) || !isRecord(body.activity)) throw mappingError("Ortto payload has no activity object");

    const message = newMessage(INTEGRATION);
    message.type = "track";
    copyFields(message, body, CONTACT_FIELDS);
    if (!message.userId) message.anonymousId = ctx.uuid();

    const contact = isRecord(body.contact) ? body.contact : {};
    if (contact.birthday) {
      const b = contact.birthday;
      message.context.traits ??= {};
      message.context.traits.birthday = `${text(getPath(b, "year"))}-${twoDigits(getPath(b, "month"))}-${twoDigits(getPath(b, "day"))}`;
    }
    if (contact.phone_number) {
      const p = contact.phone_number;
      message.context.traits ??= {};
      message.context.traits.phone = `${text(getPath(p, "c"))}${text(getPath(p, "n"))}`;
    }
    if (message.originalTimestamp) message.originalTimestamp = toSeconds(message.originalTimestamp);

    message.event = (typeof fieldId === "string" && ACTIVITY_NAMES.get(fieldId)) || UNKNOWN_ACTIVITY;
    if (contact.contact_id) message.context.externalId = [{ type: "orttoPersonId", id: contact.contact_id }];

    const properties: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(flattenJson(body))) if (v !== null && v !== undefined) setOwn(properties, k, v);
    for (const k of MAPPED_FIELDS) delete properties[k];
    message.properties = properties;
    return { events: [message] };
  },
};
