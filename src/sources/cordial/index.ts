/**
 * Cordial webhooks: each `{contact, event}` (one, or an array of them from a batched webhook)
 * becomes one track named after the event's action (`a`), with the contact as context.traits and
 * the event's fields and custom properties as properties. The contact's `_id` is the userId.
 */
import { assignOwn } from "../../lib/safe-keys";
import { copyFields, jsonBody, newMessage } from "../common";
import { mappingError, type MapContext, type SourceMapping } from "../types";

const INTEGRATION = "Cordial";

/** Cordial's app events, named as RudderStack's mobile lifecycle events. */
const LIFECYCLE_EVENTS: Readonly<Record<string, string>> = {
  crdl_app_install: "Application Installed",
  crdl_app_open: "Application Opened",
};

const FIELDS = [
  ["event._id", "properties.event_id"],
  ["contact._id", ["context.traits.userId", "userId"]],
  ["event.d", "context.device"],
  ["contact.channels.email.address", "context.traits.email"],
] as const;

const isObject = (v: unknown): v is Record<string, any> => typeof v === "object" && v !== null;
const isRecord = (v: unknown): v is Record<string, any> => isObject(v) && !Array.isArray(v);
const field = (v: unknown, key: string): any => (isObject(v) && Object.hasOwn(v, key) ? (v as Record<string, unknown>)[key] : undefined);

/** The keys `{...value}` gives: an object's own fields, a string's characters or an array's items by index. */
function spread(value: unknown): Record<string, unknown> {
  if (typeof value === "string") return Object.fromEntries(Array.from({ length: value.length }, (_, i) => [String(i), value[i]]));
  return isObject(value) ? assignOwn({}, value) : {};
}

/** The event time: `ts`, else `ats`, taking the first that is truthy (or false, or 0) as RudderStack does. */
function eventTime(event: unknown): unknown {
  for (const key of ["ts", "ats"]) {
    const v = field(event, key);
    if (v || v === false || v === 0) return v;
  }
  return undefined;
}

function toEvent(item: unknown, ctx: MapContext): Record<string, unknown> {
  if (!isRecord(item)) throw mappingError("Cordial webhook item must be a JSON object with contact and event");
  const { contact, event } = item;

  const message = newMessage(INTEGRATION);
  message.type = "track";
  let name = field(event, "a") || field(event, "action");
  if (typeof name === "string" && Object.hasOwn(LIFECYCLE_EVENTS, name)) name = LIFECYCLE_EVENTS[name];
  if (name !== undefined) message.event = name;
  copyFields(message, item, FIELDS);
  const time = eventTime(event);
  if (time !== undefined) {
    message.timestamp = time;
    message.sentAt = time;
    message.originalTimestamp = time;
  }
  message.context.externalId = field(contact, "cID") ? [{ type: "cordialContactId", id: contact.cID }] : [];
  if (message.userId === undefined) message.anonymousId = ctx.uuid();

  // The whole contact joins the traits, and the whole event (custom properties first) the properties.
  message.context.traits = assignOwn(message.context.traits ?? {}, spread(contact));
  const properties = assignOwn(assignOwn(message.properties ?? {}, spread(field(event, "properties"))), spread(event));
  delete properties.properties;
  delete properties.d;
  delete properties._id;
  message.properties = properties;
  return message;
}

export const cordial: SourceMapping = {
  name: "cordial",
  displayName: "Cordial",
  setup:
    "In Cordial open Integrations > Webhooks > New, paste the URL as the Webhook URL (single or batched requests both work), then choose under Trigger Events which contact activity events each channel sends.",
  sample: {
    body: {
      contact: {
        _id: "65f1c2a9e4b0d71f3a9c8e52",
        cID: "65f1c2a9e4b0d71f3a9c8e52",
        channels: { email: { address: "lena.fischer@example.com", subscribeStatus: "subscribed", subscribedAt: "2024-03-13T15:04:41+0000" } },
        first_name: "Lena",
        last_name: "Fischer",
        lang_locale: "de-DE",
        createdAt: "2024-03-13T15:04:41+0000",
        lastModified: "2024-04-02T08:30:12+0000",
        lastUpdateSource: "api",
      },
      event: {
        _id: "660bc1d4a7e2f9034b61c0d8",
        cID: "65f1c2a9e4b0d71f3a9c8e52",
        ts: "2024-04-02T08:30:12+00:00",
        ats: "2024-04-02T08:30:09+0000",
        a: "cart",
        action: "cart",
        UID: "b2f94e7c1a0d45e8a3c6f1d27e9b4a50",
        tzo: 2,
        rl: "7",
        time: "2024-04-02T08:30:09+0000",
        d: { type: "mobile", device: "iPhone", platform: "iOS", browser: "Mobile Safari", robot: false },
        properties: { product_id: "TR-2291", product_name: "Trail Runner 2", price: 129.0, quantity: 1, currency: "EUR" },
      },
    },
  },
  map(request, ctx) {
    const body = jsonBody(request);
    const items = Array.isArray(body) ? body : [body];
    return { events: items.map((item) => toEvent(item, ctx)) };
  },
};
