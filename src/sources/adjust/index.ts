/**
 * Adjust's real-time callbacks: Adjust calls the URL (GET) with the placeholders the user put in
 * its query (`event_name={event_name}&gps_adid={gps_adid}&created_at={created_at}...`). The
 * body is not read. Each call becomes one track named after `event_name`, with the device ids and
 * app in context, the known tracker fields and every other parameter as properties.
 */
import { copyFields, firstValues, newMessage, setPath } from "../common";
import { mappingError, type SourceMapping } from "../types";

const INTEGRATION = "Adjust";

/**
 * Where the known parameters go. `adid` goes to a key `"id "` (trailing space) under
 * context.device, exactly as RudderStack's mapping writes it, so both pipelines store the same
 * event; `idfv` (set first) takes the real `context.device.id`.
 */
const FIELDS: ReadonlyArray<readonly [string, string | readonly string[]]> = [
  ["activity_kind", "properties.activity_kind"],
  ["event", "properties.event_token"],
  ["event_name", "event"],
  ["gps_adid", "properties.gps_adid"],
  ["idfa", "context.device.advertisingId"],
  ["idfv", "context.device.id"],
  ["adid", "context.device.id "],
  ["tracker", "properties.tracker"],
  ["tracker_name", "properties.tracker_name"],
  ["tracker_token", "properties.tracker_token"],
  ["app_name", "context.app.name"],
  ["ip_address", ["context.ip", "request_ip"]],
  ["tracking_enabled", "properties.tracking_enabled"],
];

/** Parameters that are not copied into properties as they are: mapped above, the time, and Sluice's own write key. */
const NOT_CUSTOM = new Set([...FIELDS.map(([from]) => from), "created_at", "writeKey"]);

/** Adjust's `created_at` (Unix seconds) as an ISO time, with RudderStack's error texts. */
function createdAtIso(raw: string): string {
  const seconds = Number(raw);
  if (Number.isNaN(seconds)) throw mappingError(`Failed to parse timestamp: "${raw}"`);
  const date = new Date(seconds * 1000);
  if (Number.isNaN(date.getTime())) throw mappingError(`Failed to create valid date for timestamp "${raw}"`);
  return date.toISOString();
}

export const adjust: SourceMapping = {
  name: "adjust",
  // rudder-server forwards GET requests to the mapping for Adjust only (Gateway.webhook.forwardGetRequestForSrcs).
  takesGet: true,
  displayName: "Adjust",
  setup:
    "In Adjust, open your app → All Settings → Raw data export → Real-time callbacks, edit the global callback (or one event's callback) and paste the URL, adding the placeholders to receive, e.g. &event_name={event_name}&activity_kind={activity_kind}&created_at={created_at}&gps_adid={gps_adid}&idfa={idfa}&tracker_name={tracker_name}&ip_address={ip_address}. Adjust calls it with GET; every parameter becomes part of the event.",
  sample: {
    query: {
      activity_kind: "event",
      event: "k8m2qz",
      event_name: "Purchase",
      created_at: "1715678400",
      gps_adid: "5f2d8a1c-3b4e-4f6a-9c7d-0e1b2a3c4d5e",
      adid: "a0c4e1f29b7d3e5f8a6c2b1d0e9f7a3c",
      app_name: "ShopEasy",
      tracker: "abc123",
      tracker_name: "Organic",
      ip_address: "192.0.2.77",
      country: "de",
      revenue_float: "19.99",
      currency: "EUR",
    },
    body: {},
  },
  map(request, ctx) {
    const params = firstValues(request.query_parameters);
    if (Object.keys(request.query_parameters ?? {}).length === 0) throw mappingError("Query_parameters is missing");

    const message = newMessage(INTEGRATION);
    message.type = "track";
    copyFields(message, params, FIELDS);
    const custom: Record<string, unknown> = {};
    // A dotted parameter name nests, as RudderStack's set-value writes it.
    for (const [key, value] of Object.entries(params)) if (!NOT_CUSTOM.has(key)) setPath(custom, key, value);
    message.properties = { ...message.properties, ...custom };
    // An empty created_at is no time at all (RudderStack skips it the same way).
    if (params.created_at) message.originalTimestamp = message.timestamp = createdAtIso(params.created_at);
    // Adjust has no user: a fresh anonymousId lets the event in.
    message.anonymousId = ctx.uuid();
    return { events: [message] };
  },
};
