/**
 * Braze Currents (the RudderStack export): Braze posts batches `{events: [...]}` (or a list whose
 * first element is such a batch). Each Currents event becomes one track named after its
 * `event_type`, renamed by the source's `customMapping`, with Braze's user ids, device and OS in
 * the usual RudderStack places and its other properties kept as properties.
 */
import { copyFields, jsonBody, newMessage, setPath, withoutEmpty } from "../common";
import { mappingError, type SourceMapping } from "../types";

const INTEGRATION = "Braze";

/** Where each field of a Currents event goes. */
const FIELDS: ReadonlyArray<readonly [string, string]> = [
  ["id", "messageId"],
  ["user.user_id", "anonymousId"],
  ["user.external_user_id", "userId"],
  ["user.device_id", "context.device.id"],
  ["user.timezone", "context.timezone"],
  ["properties.device_model", "context.device.model"],
  ["properties.os_version", "context.os.version"],
  ["properties.platform", "context.os.name"],
  ["properties.email_address", "traits.email"],
  ["properties.user_agent", "context.userAgent"],
  ["properties.to_phone_number", "traits.phone"],
  ["properties.ad_id", "context.device.advertisingId"],
  ["properties.ad_tracking_enabled", "context.device.adTrackingEnabled"],
];

/** Properties FIELDS already placed elsewhere: not repeated in `properties`. */
const MOVED_PROPERTIES = new Set(FIELDS.filter(([from]) => from.startsWith("properties.")).map(([from]) => from.slice("properties.".length)));

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** The source's `customMapping` ([{from, to}]) as Braze event type → event name. */
function renames(config: Record<string, unknown>): Map<string, unknown> {
  const out = new Map<string, unknown>();
  const list = config.customMapping;
  if (!Array.isArray(list)) return out;
  // As RudderStack's getHashFromArray: a later row wins, a row without a non-empty `from` text is skipped.
  for (const row of list) if (isObject(row) && typeof row.from === "string" && row.from !== "") out.set(row.from, row.to);
  return out;
}

/** Braze's `time` (Unix seconds, read as an integer like parseInt) as an ISO time, or undefined. */
function timeIso(time: unknown): string | undefined {
  const seconds = Number.parseInt(String(time), 10);
  if (Number.isNaN(seconds)) return undefined;
  const date = new Date(seconds * 1000);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** One Currents event as a track, or null when it has no type or no user to attach it to. */
function toTrack(event: unknown, names: Map<string, unknown>): Record<string, unknown> | null {
  if (!isObject(event) || !event.event_type) return null;
  const message = newMessage(INTEGRATION);
  message.type = "track";
  message.event = names.get(String(event.event_type)) || event.event_type;
  copyFields(message, event, FIELDS);
  if (event.time) {
    const ts = timeIso(event.time);
    if (ts) message.timestamp = ts;
  }
  if (isObject(event.properties)) {
    for (const [key, value] of Object.entries(event.properties)) {
      // A dotted key nests, as RudderStack's set-value writes it.
      if (!MOVED_PROPERTIES.has(key)) setPath(message, `properties.${key}`, value);
    }
  }
  if (!message.userId && !message.anonymousId) return null;
  return withoutEmpty(message);
}

export const braze: SourceMapping = {
  name: "Braze",
  displayName: "Braze",
  setup:
    "In Braze, open Partner Integrations → Data Export (Currents), choose Create Current → RudderStack Export, give it a name and contact email, paste the URL into the key field, then pick the message engagement and behavior events to export and launch the Current. Optional: the source's customMapping ([{from: Braze event type, to: event name}]) renames events.",
  sample: {
    body: {
      events: [
        {
          event_type: "users.messages.email.Open",
          id: "3f6c1b2a-7d4e-4a91-b8c2-5e0f9d7a6b13",
          time: 1715678400,
          user: {
            user_id: "65f1c0a9e4b0d21a7c3e9f42",
            external_user_id: "user-40718",
            timezone: "Europe/Berlin",
          },
          properties: {
            campaign_id: "8a1d2c3e-4f50-6172-8394-a5b6c7d8e9f0",
            campaign_name: "May newsletter",
            dispatch_id: "d-7781c2",
            email_address: "lena.fischer@example.com",
            user_agent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15",
            machine_open: "false",
          },
        },
        {
          event_type: "users.behaviors.Purchase",
          id: "9b0e7d21-4c3a-4f8e-a6b5-2d1c0e9f8a74",
          time: 1715678462,
          user: {
            user_id: "65f1c0a9e4b0d21a7c3e9f42",
            external_user_id: "user-40718",
            device_id: "c2f0a7e1-5b3d-4c9a-8e6f-1d2b3a4c5e6f",
          },
          properties: {
            app_id: "f1e2d3c4-b5a6-9788-6950-4a3b2c1d0e9f",
            platform: "ios",
            os_version: "iOS 17.4",
            device_model: "iPhone15,2",
            product_id: "sku-2231",
            price: 49.9,
            currency: "EUR",
          },
        },
      ],
    },
  },
  map(request, ctx) {
    const body = jsonBody(request);
    // Braze sends {events: [...]}; a list of such batches is read by its first one only, as RudderStack does.
    const batch = Array.isArray(body) ? (body.length > 0 ? body[0] : undefined) : body;
    const list = isObject(batch) ? batch.events : undefined;
    if (!Array.isArray(list)) throw mappingError("eventList should be an array");

    const names = renames(ctx.source.config ?? {});
    const events: Record<string, unknown>[] = [];
    for (const event of list) {
      const track = toTrack(event, names);
      if (track) events.push(track);
    }
    if (events.length === 0) throw mappingError("All requests in the batch failed");
    return { events };
  },
};
