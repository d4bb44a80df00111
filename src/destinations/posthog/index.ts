/**
 * POSTHOG: events to PostHog's capture API (`<instance>/batch`), mapped to PostHog's own
 * event names ($identify, $pageview, $screen, $groupidentify, $create_alias) as RudderStack does.
 */
import { t } from "elysia";
import { endpointFor } from "../base-url";
import {
  EVENT_FILTERING_KEYS,
  batchConsecutive,
  chunkItems,
  compact,
  eventFilteringSchema,
  firstOf,
  genericUserId,
  getPath,
  isEventAllowed,
  traitsOf,
} from "../shared";
import { type DestinationDefinition, type SluiceEvent, TransformError, requireConfig, restRequest } from "../types";

const DEFAULT_INSTANCE = "https://app.posthog.com";
// RudderStack caps a PostHog batch call at 10MB.
const MAX_BATCH_BYTES = 10 * 1024 * 1024;

export const PostHogConfig = t.Object(
  {
    teamApiKey: t.String({ minLength: 1 }),
    yourInstance: t.Optional(t.String()),
    useV2Group: t.Optional(t.Boolean()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);

/** PostHog property name → where RudderStack reads it from. */
const PROPERTY_MAP: Array<[string, string[]]> = [
  ["$os", ["context.os.name"]],
  ["$current_url", ["context.page.url"]],
  ["$pathname", ["context.page.path"]],
  ["$screen_height", ["context.screen.height"]],
  ["$screen_width", ["context.screen.width"]],
  ["$lib", ["context.library.name"]],
  ["$lib_version", ["context.library.version"]],
  ["$time", ["timestamp", "originalTimestamp"]],
  ["$device_id", ["context.device.id"]],
  ["$ip", ["context.ip", "request_ip"]],
  ["$timestamp", ["timestamp", "originalTimestamp"]],
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

/** PostHog's default properties, built from the event's context. */
function contextProperties(event: SluiceEvent): Record<string, unknown> {
  let props: Record<string, unknown> = {};
  for (const [key, paths] of PROPERTY_MAP) props[key] = firstOf(event, paths);
  if (event.type === "screen") props.$screen_name = event.event;
  try {
    if (typeof props.$current_url === "string") props.$host = new URL(props.$current_url).host;
  } catch {
    // not a URL: PostHog simply gets no $host
  }
  if (typeof props.distinct_id === "number") props.distinct_id = String(props.distinct_id);
  // Every call but identify also updates the person with the traits it carries.
  if (event.type !== "identify" && event.context?.traits) props = { $set: event.context.traits, ...props };
  return compact(props);
}

function stringId(v: unknown): string | undefined {
  return v === undefined || v === null ? undefined : String(v);
}

/** The call-specific part of the payload, before the default properties are merged in. */
function callPayload(event: SluiceEvent, useV2Group: boolean): { type: string; body: Record<string, any> } {
  const distinct_id = stringId(genericUserId(event));
  const common = { distinct_id, messageId: event.messageId };
  switch (event.type) {
    case "track":
      if (!event.event) throw new TransformError("Event name is required");
      return {
        type: "capture",
        body: { ...common, event: event.event, properties: event.properties, timestamp: firstOf(event, ["timestamp", "originalTimestamp"]) },
      };
    case "identify":
      return {
        type: "identify",
        body: { ...common, event: "$identify", $set: traitsOf(event), timestamp: firstOf(event, ["originalTimestamp", "timestamp"]) },
      };
    case "page":
      return {
        type: "page",
        body: {
          ...common, event: "$pageview", properties: event.properties, category: event.category, name: event.name,
          timestamp: firstOf(event, ["originalTimestamp", "timestamp"]),
        },
      };
    case "screen":
      return {
        type: "screen",
        body: {
          ...common, event: "$screen", properties: event.properties, category: event.category, name: event.name,
          timestamp: firstOf(event, ["timestamp", "originalTimestamp"]),
        },
      };
    case "alias":
      if (!event.previousId) throw new TransformError("previousId is required for alias events");
      return {
        type: "alias",
        body: {
          event: "$create_alias",
          properties: { alias: stringId(genericUserId(event)), distinct_id: String(event.previousId) },
          timestamp: firstOf(event, ["originalTimestamp", "timestamp"]),
        },
      };
    case "group": {
      const groupId = firstOf(event, ["groupId", "traits.groupId"]);
      const timestamp = firstOf(event, ["timestamp", "originalTimestamp"]);
      if (!useV2Group) {
        return { type: "group", body: { ...common, event: "$groupidentify", groupId, traits: traitsOf(event), timestamp } };
      }
      const groupType = getPath(event, "traits.groupType");
      const { groupType: _mapped, ...groupSet } = event.traits ?? {};
      const properties: Record<string, unknown> = compact({ $group_key: groupId, $group_set: event.traits ? groupSet : undefined, $group_type: groupType });
      if (groupType && groupId) properties.$groups = { [groupType]: groupId };
      return { type: "group", body: { ...common, event: "$groupidentify", properties, timestamp } };
    }
    default:
      throw new TransformError(`Event type ${event.type} is not supported`);
  }
}

export const posthog: DestinationDefinition = {
  name: "POSTHOG",
  displayName: "PostHog",
  config: {
    defaultConfig: ["teamApiKey", "yourInstance", "useV2Group", ...EVENT_FILTERING_KEYS],
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
    requiredKeys: ["teamApiKey"],
  },
  configSchema: PostHogConfig,
  transform(event, ctx) {
    const apiKey = String(requireConfig(ctx, "teamApiKey"));
    if (!isEventAllowed(event, ctx.config)) return [];
    if (!event.userId && !event.anonymousId) throw new TransformError("Either userId or anonymousId must be provided");
    const { type, body } = callPayload(event, ctx.config.useV2Group === true);
    const payload: Record<string, any> = compact(body);
    if (payload.timestamp === undefined && payload.properties?.timestamp !== undefined) payload.timestamp = payload.properties.timestamp;
    payload.properties = { ...contextProperties(event), ...payload.properties };
    const instance = String(ctx.config.yourInstance || DEFAULT_INSTANCE).replace(/\/+$/, "");
    return [
      restRequest({
        endpoint: endpointFor(ctx, `${instance}/batch`),
        headers: { "Content-Type": "application/json" },
        json: { ...payload, api_key: apiKey, type },
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
