/**
 * POSTHOG: events to PostHog's capture API (`<instance>/batch`), mapped to PostHog's own
 * event names ($identify, $pageview, $screen, $groupidentify, $create_alias) as RudderStack does.
 */
import { type Static, t } from "elysia";
import { endpointFor } from "../base-url";
import {
  batchConsecutive,
  chunkItems,
  compact,
  eventFilteringSchema,
  firstPresent,
  getPath,
  isEventAllowed,
  isPresent,
  jsonBytes,
  requireValue,
} from "../shared";
import { type DestinationDefinition, type SluiceEvent, TransformError, configKeys, configOf, requireConfig, requiredKeysOf, restRequest } from "../types";
import { parseUserAgent } from "../user-agent";

type Obj = Record<string, any>;

const DEFAULT_INSTANCE = "https://app.posthog.com";
// RudderStack caps a PostHog batch call at 10MB.
const MAX_BATCH_BYTES = 10 * 1024 * 1024;
// PostHog documents 1MB per event but refuses some smaller ones too; RudderStack aborts events over
// this, measured without the api key, instead of sending them.
const MAX_EVENT_BYTES = 900_000;

const USER_ID = ["userId", "traits.userId", "traits.id", "context.traits.userId", "context.traits.id", "anonymousId"];
const TRAITS = ["traits", "context.traits"];
// timestamp, $time and $timestamp all read the event's timestamp first, as RudderStack's mapping does.
const TIMESTAMP = ["timestamp", "originalTimestamp"];

export const PostHogConfig = t.Object(
  {
    teamApiKey: t.String({ minLength: 1 }),
    yourInstance: t.Optional(t.String()),
    ...eventFilteringSchema,
    useV2Group: t.Optional(t.Boolean()),
  },
  { additionalProperties: true },
);
export type PostHogConfig = Static<typeof PostHogConfig>;

/** An object of the present values only, as RudderStack's mapping files build it. */
function mapped(entries: Array<[string, unknown]>): Obj {
  return Object.fromEntries(entries.filter(([, v]) => isPresent(v)));
}

/** PostHog property name → where RudderStack reads it from. */
const PROPERTY_MAP: Array<[string, string[]]> = [
  ["$os", ["context.os.name"]],
  ["$current_url", ["context.page.url"]],
  ["$pathname", ["context.page.path"]],
  ["$screen_height", ["context.screen.height"]],
  ["$screen_width", ["context.screen.width"]],
  ["$lib", ["context.library.name"]],
  ["$lib_version", ["context.library.version"]],
  ["$time", TIMESTAMP],
  ["$device_id", ["context.device.id"]],
  ["$ip", ["context.ip", "request_ip"]],
  ["$timestamp", TIMESTAMP],
  ["$anon_distinct_id", ["anonymousId"]],
  ["distinct_id", ["userId", "anonymousId"]],
  ["$screen_density", ["context.screen.density"]],
  ["$device_manufacturer", ["context.device.manufacturer"]],
  ["$os_version", ["context.os.version"]],
  ["$timezone", ["context.timezone"]],
  ["$locale", ["context.locale"]],
  ["$useragent", ["context.userAgent"]],
  ["$app_version", ["context.app.version"]],
  ["$device_name", ["context.device.name"]],
  ["$network_carrier", ["context.network.carrier"]],
  ["$app_name", ["context.app.name"]],
  ["$device_model", ["context.device.model"]],
  ["$app_namespace", ["context.app.namespace"]],
  ["$app_build", ["context.app.build"]],
  ["$viewport_height", ["properties.viewport_height"]],
  ["$viewport_width", ["properties.viewport_width"]],
  ["utm_source", ["context.campaign.source"]],
  ["utm_medium", ["context.campaign.medium"]],
  ["utm_campaign", ["context.campaign.name"]],
  ["utm_content", ["context.campaign.content"]],
  ["utm_term", ["context.campaign.term"]],
  ["$performance_page_loaded", ["context.page.loaded"]],
];

/** Web events carry no usable OS or browser in their context, so both come from the user agent. */
function userAgentProperties(event: SluiceEvent): Obj {
  const ua = getPath(event, "context.userAgent");
  if (event.channel !== "web" || !ua) return {};
  const { browser, os } = parseUserAgent(String(ua));
  return { $os: os.name, $browser: browser.name, $browser_version: browser.version };
}

/** PostHog's default properties, built from the event's context. */
function contextProperties(event: SluiceEvent): Obj {
  let props: Obj = mapped(PROPERTY_MAP.map(([key, paths]) => [key, firstPresent(event, paths)]));
  props = { ...props, ...userAgentProperties(event) };
  if (event.type === "screen") props.$screen_name = event.event;
  try {
    if (typeof props.$current_url === "string") props.$host = new URL(props.$current_url).host;
  } catch {
    // not a URL: PostHog simply gets no $host
  }
  // Every call but identify also updates the person with the traits it carries.
  if (event.type !== "identify" && event.context?.traits) props = { $set: event.context.traits, ...props };
  return compact(props);
}

/** Throws like RudderStack's required mappings, naming the mapping's source (`source`) when none of `paths` holds a value. */
/** The first present value of the paths, refused in RudderStack's words when there is none. */
function required(event: SluiceEvent, paths: string[], source: string): any {
  return requireValue(firstPresent(event, paths), source);
}

function groupPayload(event: SluiceEvent, useV2Group: boolean): Obj {
  const common = mapped([
    ["timestamp", firstPresent(event, TIMESTAMP)],
    ["distinct_id", required(event, USER_ID, "userId")],
    ["messageId", event.messageId],
  ]);
  const groupId = firstPresent(event, ["groupId", "traits.groupId"]);
  if (!useV2Group) return { ...common, ...mapped([["groupId", groupId], ["traits", firstPresent(event, TRAITS)]]) };
  // groupType goes to $group_type, so it is left out of the group's own properties.
  const { groupType: _mapped, ...groupSet } = event.traits ?? {};
  const properties = mapped([
    ["$group_key", groupId],
    ["$group_set", isPresent(event.traits) ? groupSet : undefined],
    ["$group_type", getPath(event, "traits.groupType")],
  ]);
  if (isPresent(properties.$group_type) && isPresent(properties.$group_key)) properties.$groups = { [properties.$group_type]: properties.$group_key };
  return { ...common, properties };
}

/** The call-specific payload (RudderStack's per-type mapping) and its PostHog type. */
function callPayload(event: SluiceEvent, useV2Group: boolean): { type: string; event: string; body: Obj } {
  const userId = () => required(event, USER_ID, "userId");
  const pageLike = (timestampPaths: string[]) =>
    mapped([
      ["properties", event.properties],
      ["timestamp", firstPresent(event, timestampPaths)],
      ["category", event.category],
      ["distinct_id", userId()],
      ["name", event.name],
      ["messageId", event.messageId],
    ]);
  switch (event.type) {
    case "track":
      return {
        type: "capture",
        event: required(event, ["event"], "event"),
        body: mapped([
          ["distinct_id", userId()],
          ["messageId", event.messageId],
          ["properties", event.properties],
          ["timestamp", firstPresent(event, TIMESTAMP)],
        ]),
      };
    case "identify":
      return {
        type: "identify",
        event: "$identify",
        body: mapped([
          ["distinct_id", userId()],
          ["timestamp", firstPresent(event, TIMESTAMP)],
          ["messageId", event.messageId],
          ["$set", required(event, TRAITS, "traits")],
        ]),
      };
    case "page":
      return { type: "page", event: "$pageview", body: pageLike(TIMESTAMP) };
    case "screen":
      return { type: "screen", event: "$screen", body: pageLike(TIMESTAMP) };
    case "alias":
      return {
        type: "alias",
        event: "$create_alias",
        // The person merged is the previous id, the surviving one the userId (PostHog's $create_alias).
        body: {
          properties: { alias: required(event, ["previousId"], "previousId"), distinct_id: userId() },
          ...mapped([["timestamp", firstPresent(event, TIMESTAMP)]]),
        },
      };
    case "group":
      return { type: "group", event: "$groupidentify", body: groupPayload(event, useV2Group) };
    default:
      throw new TransformError(`Event type ${event.type} is not supported`);
  }
}

/** The whole event body, as RudderStack builds it before the api key is added. */
function eventBody(event: SluiceEvent, useV2Group: boolean): { type: string; body: Obj } {
  const { type, event: name, body } = callPayload(event, useV2Group);
  const payload: Obj = { ...body };
  if (!payload.timestamp && payload.properties?.timestamp != null) payload.timestamp = payload.properties.timestamp;
  payload.properties = { ...contextProperties(event), ...payload.properties };
  // PostHog wants distinct ids as strings; RudderStack converts whatever it found.
  if (payload.distinct_id != null) payload.distinct_id = String(payload.distinct_id);
  if (payload.properties.distinct_id != null) payload.properties.distinct_id = String(payload.properties.distinct_id);
  payload.event = name;
  return { type, body: payload };
}

export const posthog: DestinationDefinition = {
  name: "POSTHOG",
  displayName: "PostHog",
  config: {
    defaultConfig: configKeys(PostHogConfig, [
      "oneTrustCookieCategories",
      "useNativeSDK",
      "autocapture",
      "capturePageView",
      "disableSessionRecording",
      "propertyBlackList",
      "xhrHeaders",
      "enableLocalStoragePersistence",
    ]),
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
    requiredKeys: requiredKeysOf(PostHogConfig),
    urlKeys: ["yourInstance"],
  },
  configSchema: PostHogConfig,
  transform(event, ctx) {
    const apiKey = String(requireConfig(ctx, "teamApiKey"));
    const config = configOf(ctx, PostHogConfig);
    if (!isEventAllowed(event, config)) return [];
    // RudderStack's router refuses this in its input check, which names the field checked.
    if (!event.userId && !event.anonymousId) throw new TransformError("message: Either userId or anonymousId must be provided");
    const { type, body } = eventBody(event, config.useV2Group === true);
    const json = { ...body, type };
    const size = jsonBytes(json);
    if (size > MAX_EVENT_BYTES) {
      throw new TransformError(
        `Event size (${size} bytes) exceeds PostHog's 1 MB limit. PostHog will reject this event with "maximum event size exceeded". Please reduce the size of the event properties to stay within the limit.`,
      );
    }
    const instance = String(config.yourInstance || DEFAULT_INSTANCE).replace(/\/+$/, "");
    return [
      restRequest({
        endpoint: endpointFor(ctx, `${instance}/batch`),
        headers: { "Content-Type": "application/json" },
        json: { ...body, api_key: apiKey, type },
      }),
    ];
  },
  batch(requests) {
    // /batch takes {api_key, batch: [...]}; the key moves from each event to the wrapper.
    return batchConsecutive(
      requests,
      (r) => (r.endpoint.endsWith("/batch") && r.body.JSON.api_key !== undefined ? JSON.stringify([r.endpoint, r.body.JSON.api_key]) : null),
      (run) => {
        const apiKey = run[0]!.body.JSON.api_key as string;
        const events = run.map((r) => {
          const { api_key: _moved, ...rest } = r.body.JSON;
          return rest;
        });
        return chunkItems(events, Infinity, MAX_BATCH_BYTES).map((batch) =>
          restRequest({ endpoint: run[0]!.endpoint, headers: run[0]!.headers, json: { api_key: apiKey, batch } }),
        );
      },
    );
  },
};
