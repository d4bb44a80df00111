/**
 * SIGNL4 outbound webhooks: one alert or duty event, its kind in the numeric `eventType`. It
 * becomes one anonymous track named after the kind, with the whole payload flattened into
 * properties (`alert.statusCode`, `alert.acknowledgedUserIds[0]`). SIGNL4's test event
 * (`eventType` 1) is answered with its own body and makes no event.
 */
import { copyFields, jsonBody, newMessage } from "../common";
import { setOwn } from "../../lib/safe-keys";
import { mappingError, type SourceMapping } from "../types";

const INTEGRATION = "Signl4";
const TEST_EVENT = 1;

const FIELDS = [
  ["user.username", "context.traits.name"],
  ["user.mailaddress", "context.traits.email"],
  ["id", "messageId"],
  ["eventRaisedUtc", "originalTimestamp"],
] as const;

/** Mapped above, so not repeated in properties. */
const MAPPED_KEYS = ["user.username", "user.mailaddress", "user.id", "id", "eventRaisedUtc"];

const EVENT_NAMES: Record<number, string> = {
  200: "New Alert Created",
  202: "Alert Escalated",
  203: "Alert Annotated",
  300: "Duty Period Started",
  301: "Duty Period Ended",
  302: "Somebody Punched-In",
  303: "Somebody Punched-Out",
};
const ALERT_RESOLVED = 4;

const isObject = (v: unknown): v is Record<string, any> => typeof v === "object" && v !== null && !Array.isArray(v);

function eventName(body: Record<string, any>): string {
  const type = body.eventType;
  // 201 is any change of an alert's status; status code 4 means it was closed.
  if (type === 201) return isObject(body.alert) && body.alert.statusCode === ALERT_RESOLVED ? "Alert Resolved" : "Alert Confirmed";
  return (typeof type === "number" && Object.hasOwn(EVENT_NAMES, type) ? EVENT_NAMES[type] : undefined) ?? "Alert Updated";
}

/**
 * The payload as one level of keys, as RudderStack flattens it: objects by `.`, arrays by `[i]`;
 * empty objects and arrays stay as values, nulls are dropped.
 */
function flatten(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const walk = (value: unknown, path: string) => {
    if (Array.isArray(value)) {
      if (value.length === 0) setOwn(out, path, []);
      value.forEach((item, i) => walk(item, `${path}[${i}]`));
    } else if (isObject(value)) {
      const keys = Object.keys(value);
      if (keys.length === 0 && path) setOwn(out, path, {});
      for (const key of keys) walk(value[key], path ? `${path}.${key}` : key);
    } else if (value !== null && value !== undefined) {
      setOwn(out, path, value);
    }
  };
  walk(body, "");
  return out;
}

/** The time in RudderStack's form, cut to whole seconds (SIGNL4 sends 7 fractional digits, RudderStack drops them all). */
function toWholeSecondIso(value: unknown): string {
  const ms = new Date(value as string | number).getTime();
  // RudderStack fails here too (RangeError: Invalid time value).
  if (Number.isNaN(ms)) throw mappingError(`Invalid eventRaisedUtc: ${JSON.stringify(value)}`);
  return new Date(Math.floor(ms / 1000) * 1000).toISOString();
}

export const signl4: SourceMapping = {
  name: "signl4",
  displayName: "SIGNL4",
  setup:
    "In the SIGNL4 web portal, open Teams → Developer (Outbound Webhooks), add a webhook with a name and the URL, and click Add. SIGNL4 then posts alert and duty events of the team; its test event is answered without making an event.",
  sample: {
    body: {
      eventType: 201,
      eventRaisedUtc: "2024-05-14T06:58:03.2219847Z",
      subscription: { id: "6b1f8a3e-2c4d-4e5f-9a0b-1c2d3e4f5a6b" },
      team: { id: "c7d8e9f0-1a2b-4c3d-8e4f-5a6b7c8d9e0f" },
      user: { username: "Priya Natarajan", mailaddress: "priya.n@example.com", id: "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d" },
      alert: {
        statusCode: 2,
        eventId: "2517398120448823311_7e6f5d4c-3b2a-4190-8f7e-6d5c4b3a2910",
        externalEventId: "PUMP-7-PRESSURE",
        acknowledgedUserIds: ["a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"],
        id: "2517398120451193902_0f1e2d3c-4b5a-4697-8877-66554433a2b1",
      },
      id: "9e8d7c6b-5a4f-4e3d-2c1b-0a9f8e7d6c5b",
    },
  },
  map(request, ctx) {
    const body = jsonBody(request);
    if (!isObject(body)) throw mappingError("SIGNL4 payload must be a JSON object");
    if (body.eventType === TEST_EVENT) return { events: [], answer: { body: JSON.stringify(body), contentType: "application/json" } };

    const message = newMessage(INTEGRATION);
    message.type = "track";
    message.anonymousId = ctx.uuid();
    copyFields(message, body, FIELDS);
    if (message.originalTimestamp) message.originalTimestamp = toWholeSecondIso(message.originalTimestamp);
    message.event = eventName(body);
    if (isObject(body.user) && body.user.id) message.context.externalId = [{ type: "signl4UserId", id: body.user.id }];
    const properties = flatten(body);
    for (const key of MAPPED_KEYS) delete properties[key];
    message.properties = properties;
    return { events: [message] };
  },
};
