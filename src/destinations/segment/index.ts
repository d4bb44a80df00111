/**
 * SEGMENT: forwards events to Segment's HTTP Tracking API the way RudderStack's SEGMENT
 * destination does: every call type goes to `/v1/batch` as one item carrying only the ids,
 * type, event name, traits, properties and `timeStamp`, authenticated with the writeKey
 * (Basic auth, key as user, empty password).
 */
import { type Static, t } from "elysia";
import { endpointFor } from "../base-url";
import { basicAuth, batchConsecutive, chunkItems, compact, firstPresent, requestKey } from "../shared";
import { type DestinationDefinition, type SluiceEvent, configKeys, requireConfig, requiredKeysOf, restRequest } from "../types";

const BATCH_API = "https://api.segment.io/v1/batch";

export const SegmentConfig = t.Object({ writeKey: t.String({ minLength: 1 }) }, { additionalProperties: true });
export type SegmentConfig = Static<typeof SegmentConfig>;

// Segment's documented limits: 32KB per message and 500KB per batch call.
const MAX_BATCH_BYTES = 500 * 1024;

// Read with firstPresent, which skips empty strings: SDKs send `userId: ""` for anonymous users,
// and the anonymousId must win then.
const USER_ID_PATHS = ["userId", "traits.userId", "traits.id", "context.traits.userId", "context.traits.id", "anonymousId"];

function traitsWithoutAnonymousId(event: SluiceEvent): unknown {
  const traits = firstPresent(event, ["traits", "context.traits"]);
  if (!traits || typeof traits !== "object" || !(traits as Record<string, unknown>).anonymousId) return traits;
  const { anonymousId: _dropped, ...rest } = traits as Record<string, unknown>;
  return rest;
}

/**
 * The batch item RudderStack builds, field for field. `timeStamp` is spelled as RudderStack
 * spells it (Segment ignores it and stamps its own receipt time); no messageId, as RudderStack.
 */
export function segmentItem(event: SluiceEvent): Record<string, unknown> {
  return compact({
    anonymousId: event.anonymousId,
    type: event.type,
    userId: firstPresent(event, USER_ID_PATHS),
    event: event.event || undefined,
    traits: traitsWithoutAnonymousId(event),
    properties: event.properties || undefined,
    timeStamp: firstPresent(event, ["timestamp", "originalTimestamp"]),
  });
}

export const segment: DestinationDefinition = {
  name: "SEGMENT",
  displayName: "Segment",
  config: {
    defaultConfig: configKeys(SegmentConfig, ["oneTrustCookieCategories", "connectionMode", "consentManagement"]),
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
    requiredKeys: requiredKeysOf(SegmentConfig),
  },
  configSchema: SegmentConfig,
  transform(event, ctx) {
    const writeKey = String(requireConfig(ctx, "writeKey"));
    return [
      restRequest({
        endpoint: endpointFor(ctx, BATCH_API),
        headers: { "Content-Type": "application/json", Authorization: basicAuth(writeKey) },
        json: { batch: [segmentItem(event)] },
      }),
    ];
  },
  batch(requests) {
    // Every request is already a one-item batch, so consecutive ones for the same key concatenate.
    return batchConsecutive(requests, requestKey, (run) => {
      const items = run.flatMap((r) => (Array.isArray(r.body.JSON.batch) ? r.body.JSON.batch : []));
      return chunkItems(items, Infinity, MAX_BATCH_BYTES - 32).map((batch) =>
        restRequest({ endpoint: run[0]!.endpoint, headers: run[0]!.headers, json: { batch } }),
      );
    });
  },
};
