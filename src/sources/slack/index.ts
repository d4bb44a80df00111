/**
 * Slack's Events API: Slack posts `{type: "event_callback", event: {...}, event_time, ...}` for
 * each subscribed event. Each becomes one event named after `event.type` in title case
 * (`member_joined_channel` → `Member Joined Channel`): an identify for `team_join` and
 * `user_change`, a track otherwise, with the Slack event as properties and the user's profile in
 * context.traits. Slack's `url_verification` is answered with its challenge and stored as nothing.
 */
import { createHash } from "node:crypto";
import { assignOwn } from "../../lib/safe-keys";
import { copyFields, jsonBody, newMessage, withoutEmpty } from "../common";
import { mappingError, type MapContext, type SourceMapping } from "../types";

const INTEGRATION = "SLACK";
const IDENTIFY_TYPES = new Set(["team_join", "user_change"]);

/** Where the Slack fields go; of the four names the first one set wins `context.traits.name`. */
const FIELDS: ReadonlyArray<readonly [string, string]> = [
  ["event.user.tz", "timezone"],
  ["event.user.profile.email", "context.traits.email"],
  ["event.user.profile.phone", "context.traits.phone"],
  ["event.user.profile.real_name_normalized", "context.traits.name"],
  ["event.user.profile.real_name", "context.traits.name"],
  ["event.user.profile.display_name_normalized", "context.traits.name"],
  ["event.user.profile.display_name", "context.traits.name"],
  ["event.user.profile.first_name", "context.traits.firstName"],
  ["event.user.profile.last_name", "context.traits.lastName"],
  ["event.user.profile.image_original", "context.traits.avatar"],
  ["event.user.profile.title", "context.traits.title"],
];

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** `member_joined_channel` → `Member Joined Channel`; anything but text → "undefined", as RudderStack names it. */
function titleCase(type: unknown): string {
  if (typeof type !== "string") return "undefined";
  return type
    .split("_")
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join(" ");
}

/**
 * A Slack time (`"1709441309.308399"`, seconds with a fraction) as an ISO time; now when there is
 * none, undefined when it is not a number.
 */
function slackTime(ts: unknown, ctx: MapContext): string | undefined {
  if (!ts) return new Date(ctx.now()).toISOString();
  const ms = Number.parseFloat(String(ts)) * 1000;
  if (Number.isNaN(ms)) return undefined;
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** Slack's user id: `event.user` is the id itself, or the user object for team_join/user_change. */
function userIdOf(user: unknown): unknown {
  return isObject(user) ? user.id : user;
}

export const slack: SourceMapping = {
  name: "slack",
  displayName: "Slack",
  setup:
    "At api.slack.com/apps, open your app → Event Subscriptions, turn events on and paste the URL as the Request URL (Slack's verification challenge is answered automatically), then subscribe to the bot or workspace events to send (message.channels, team_join, user_change, ...) and reinstall the app.",
  sample: {
    body: {
      token: "vT4kq9Zp2LmX7wB1cR8sD3fG",
      team_id: "T05KQ2M8ZRB",
      api_app_id: "A06F3L9JQ2D",
      event: {
        type: "member_joined_channel",
        user: "U06BQ7T2KFA",
        channel: "C05R8N1PX4E",
        channel_type: "C",
        team: "T05KQ2M8ZRB",
        inviter: "U05M3Z8Q1HD",
        event_ts: "1715678400.004200",
      },
      type: "event_callback",
      event_id: "Ev07AB3CD4EF",
      event_time: 1715678400,
      authorizations: [{ enterprise_id: null, team_id: "T05KQ2M8ZRB", user_id: "U06A2KD9LQM", is_bot: true, is_enterprise_install: false }],
      is_ext_shared_channel: false,
    },
  },
  map(request, ctx) {
    const body = jsonBody(request);
    if (isObject(body) && body.type === "url_verification" && body.challenge) {
      return { events: [], answer: { body: JSON.stringify({ challenge: body.challenge }), contentType: "application/json" } };
    }
    if (!isObject(body) || !body.event) throw mappingError("Missing the required event data");
    const event = body.event as Record<string, any>;

    const message = newMessage(INTEGRATION);
    message.type = IDENTIFY_TYPES.has(event.type) ? "identify" : "track";
    message.event = titleCase(event.type);
    if (!event.user) throw mappingError("UserId not found");
    const userId = userIdOf(event.user);
    // A stable anonymousId per Slack user: the first 36 hex digits of the id's sha256.
    message.anonymousId = userId ? createHash("sha256").update(String(userId)).digest("hex").slice(0, 36) : ctx.uuid();
    message.context.externalId = [{ type: "slackUserId", id: userId }];
    message.originalTimestamp = slackTime(event.ts || event.event_ts || body.event_time, ctx);
    message.sentAt = slackTime(body.event_time, ctx);
    copyFields(message, body, FIELDS);
    message.properties = assignOwn(message.properties ?? {}, isObject(event) ? event : {});
    return { events: [withoutEmpty(message)] };
  },
};
