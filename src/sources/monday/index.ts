/**
 * monday.com's board webhooks: `{event: {type, userId, triggerTime, ...}}` becomes one track
 * named after the type (`create_pulse` → `Create Pulse`), with the event's fields as properties,
 * as rudder-transformer's `monday` source makes it. When the webhook is added, monday.com first
 * posts `{challenge}` and expects the same JSON back: that is the answer, and no event.
 */
import { createHash } from "node:crypto";
import { jsonBody, newMessage, withoutEmpty } from "../common";
import { mappingError, type SourceMapping } from "../types";

const INTEGRATION = "MONDAY";

const isRecord = (v: unknown): v is Record<string, any> => v !== null && typeof v === "object" && !Array.isArray(v);

/** `change_column_value` → `Change Column Value`. */
const eventName = (type: string) =>
  type
    .split("_")
    .map((s) => s.charAt(0).toUpperCase() + s.slice(1))
    .join(" ");

export const monday: SourceMapping = {
  name: "monday",
  displayName: "Monday Source",
  setup:
    "On the monday.com board, open the Automations Center → Integrations, search for Webhooks, pick a recipe (e.g. when an item is created or a column changes) and paste the URL; monday.com verifies it with a challenge, which Sluice answers. Each board event becomes a track named after its type.",
  sample: {
    body: {
      event: {
        app: "monday",
        type: "change_column_value",
        triggerTime: "2024-06-01T09:30:12.512Z",
        subscriptionId: 402117733,
        userId: 51230987,
        originalTriggerUuid: null,
        boardId: 6120447781,
        groupId: "topics",
        pulseId: 6120450213,
        pulseName: "Launch landing page",
        columnId: "status",
        columnType: "color",
        columnTitle: "Status",
        value: { label: { index: 1, text: "Done" } },
        previousValue: { label: { index: 0, text: "Working on it" } },
        isTopGroup: true,
        triggerUuid: "b2d41f7e9c0a4e3f8d15a6c7e8f90123",
      },
    },
  },
  map(request) {
    const body = jsonBody(request);
    if (isRecord(body) && body.challenge) return { events: [], answer: { body: JSON.stringify(body), contentType: "application/json" } };

    const event = isRecord(body) ? body.event : undefined;
    // RudderStack fails on an event without a type (it splits it); a clear 400 here.
    if (!isRecord(event) || typeof event.type !== "string") throw mappingError("Monday event has no type");
    if (!event.userId) throw mappingError("UserId not found");
    if (typeof event.userId === "object") throw mappingError("Monday event userId must be a string or a number");

    const message = newMessage(INTEGRATION);
    message.type = "track";
    message.event = eventName(event.type);
    // The first 36 hex characters of the user's hash: a stable anonymousId per monday.com user.
    message.anonymousId = createHash("sha256").update(String(event.userId)).digest("hex").slice(0, 36);
    message.context.externalId = [{ type: "mondayUserId", id: event.userId }];
    if (event.triggerTime !== undefined && event.triggerTime !== null) {
      message.timestamp = event.triggerTime;
      message.originalTimestamp = event.triggerTime;
    }
    // The event's own fields, but for the time and the user already mapped above.
    const { triggerTime: _time, userId: _user, ...properties } = event;
    message.properties = properties;
    return { events: [withoutEmpty(message)] };
  },
};
