/**
 * Visual Studio App Center webhooks: a build, release or crash notification becomes one track
 * ("Build Succeeded", "Build Failed", "Released Version <v>", "App Crashed") with the
 * notification as properties. App Center's test notification (`{text, sent_at, url}`) is answered
 * with itself, as JSON, and makes no event.
 */
import { assignOwn } from "../../lib/safe-keys";
import { getPath, jsonBody, newMessage, setPath, withoutEmpty } from "../common";
import { mappingError, type SourceMapping } from "../types";

const INTEGRATION = "APPCENTER";
const UNKNOWN = "Unknown event type from Appcenter";

const isSet = (v: unknown) => v !== undefined && v !== null;
const isRecord = (v: unknown): v is Record<string, any> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Notification field(s) → event field(s). Where several fields are listed the first one that is
 * truthy (or false, or 0) is taken, as RudderStack's mappings read alternatives, so an empty
 * `app_name` gives way to `app_display_name`.
 * The misspelled `originalTimeStamp` is RudderStack's and kept so events are the same.
 */
const FIELDS: ReadonlyArray<readonly [readonly string[], readonly string[]]> = [
  [["app_name", "app_display_name"], ["context.app.name"]],
  [["build_id"], ["context.app.build"]],
  [["os", "platform"], ["context.device.type", "context.os.name"]],
  [["start_time"], ["originalTimeStamp"]],
  [["sent_at"], ["sentAt"]],
  [["short_version", "app_version"], ["context.app.version"]],
  [["bundle_identifier"], ["context.app.namespace"]],
];

/** The value RudderStack takes for a field list: a lone field as it is, else the first usable one. */
function pick(body: Record<string, unknown>, fields: readonly string[]): unknown {
  if (fields.length === 1) return getPath(body, fields[0]!);
  for (const f of fields) {
    const v = getPath(body, f);
    if (v || v === false || v === 0) return v;
  }
  return undefined;
}

/** A value as a JavaScript template literal shows it (`Released Version ${short_version}`). */
function shown(v: unknown): string {
  if (Array.isArray(v)) return v.map((x) => (x === null || x === undefined ? "" : shown(x))).join(",");
  if (typeof v === "object" && v !== null) return "[object Object]";
  return String(v);
}

function eventName(body: Record<string, any>): string {
  if (body.build_status === "Succeeded") return "Build Succeeded";
  if (body.build_status === "Broken") return "Build Failed";
  if (body.release_id && body.short_version) return `Released Version ${shown(body.short_version)}`;
  if (body.id && body.reason) return "App Crashed";
  throw mappingError(UNKNOWN);
}

export const appcenter: SourceMapping = {
  name: "Appcenter",
  displayName: "App Center",
  setup:
    "In App Center open your app, go to Settings > Webhooks, create a webhook, paste the URL and pick the events to send (build success or failure, new crash group, new release). App Center's test notification is answered with itself and makes no event.",
  sample: {
    body: {
      app_name: "FieldNotes-Android",
      branch: "main",
      build_status: "Succeeded",
      build_id: "214",
      build_link: "https://appcenter.ms/users/dev-team/apps/FieldNotes-Android/build/branches/main/builds/214",
      build_reason: "continuous",
      finish_time: "2024-02-27T10:18:52.4471903Z",
      icon_link: null,
      notification_settings_link: "https://appcenter.ms/users/dev-team/apps/FieldNotes-Android/settings/notifications",
      os: "Android",
      start_time: "2024-02-27T10:09:31.1086544Z",
      source_version: "3f9c2e7a41b05d8e6c1f7a92b4d0e8c35a6f1b27",
      sent_at: "2024-02-27T10:19:05.2210937Z",
    },
  },
  map(request, ctx) {
    const body = jsonBody(request);
    // The test notification, sent from the webhook's settings page, is the one with a text.
    if (isRecord(body) && body.text) {
      return { events: [], answer: { body: JSON.stringify(body), contentType: "application/json" } };
    }
    if (!isRecord(body)) throw mappingError(UNKNOWN);

    const message = newMessage(INTEGRATION);
    message.type = "track";
    message.event = eventName(body);
    message.properties = assignOwn({}, body);
    for (const [from, to] of FIELDS) {
      const value = pick(body, from);
      if (!isSet(value)) continue;
      for (const dest of to) if (!isSet(getPath(message, dest))) setPath(message, dest, value);
    }
    // App Center has no user: a fresh anonymousId lets the event through.
    message.anonymousId = ctx.uuid();
    return { events: [withoutEmpty(message)] };
  },
};
