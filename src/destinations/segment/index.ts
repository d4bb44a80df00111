/**
 * SEGMENT: forwards events to a Segment-compatible HTTP Tracking API, authenticated with
 * the source's writeKey (Basic auth, key as user, empty password).
 */
import { t } from "elysia";
import { endpointFor } from "../base-url";
import { basicAuth, batchConsecutive, chunkItems, compact, timestampOf, traitsOf } from "../shared";
import { type DestinationDefinition, type SluiceEvent, TransformError, requireConfig, restRequest } from "../types";

const API = "https://api.segment.io/v1";

export const SegmentConfig = t.Object({ writeKey: t.String({ minLength: 1 }) }, { additionalProperties: true });

// Segment's documented limits: 32KB per message and 500KB per batch call.
const MAX_BATCH_BYTES = 500 * 1024;

/** The fields of the Segment spec that each call type carries. */
function segmentMessage(event: SluiceEvent): Record<string, unknown> {
  let traits = traitsOf(event);
  if (traits && "anonymousId" in traits) {
    const { anonymousId: _dropped, ...rest } = traits;
    traits = rest;
  }
  const base = {
    userId: event.userId,
    anonymousId: event.anonymousId,
    messageId: event.messageId,
    timestamp: timestampOf(event),
    context: event.context,
  };
  switch (event.type) {
    case "identify":
      return compact({ ...base, traits });
    case "track":
      if (!event.event) throw new TransformError("Event name is required");
      return compact({ ...base, event: event.event, properties: event.properties });
    case "page":
    case "screen":
      return compact({ ...base, name: event.name, category: event.category, properties: event.properties });
    case "group":
      if (!event.groupId) throw new TransformError("groupId is required for group events");
      return compact({ ...base, groupId: event.groupId, traits: event.traits });
    case "alias":
      if (!event.previousId) throw new TransformError("previousId is required for alias events");
      return compact({ ...base, previousId: event.previousId });
    default:
      throw new TransformError(`Event type ${event.type} is not supported`);
  }
}

export const segment: DestinationDefinition = {
  name: "SEGMENT",
  displayName: "Segment",
  config: {
    defaultConfig: ["writeKey"],
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
    requiredKeys: ["writeKey"],
  },
  configSchema: SegmentConfig,
  transform(event, ctx) {
    const writeKey = String(requireConfig(ctx, "writeKey"));
    if (!event.userId && !event.anonymousId) throw new TransformError("Either userId or anonymousId is required");
    return [
      restRequest({
        endpoint: endpointFor(ctx, `${API}/${event.type}`),
        headers: { "Content-Type": "application/json", Authorization: basicAuth(writeKey) },
        json: segmentMessage(event),
      }),
    ];
  },
  batch(requests) {
    // Any call type can ride in /v1/batch, each item naming its type.
    const isSingle = (endpoint: string) => /\/v1\/(identify|track|page|screen|group|alias)$/.exec(endpoint);
    return batchConsecutive(
      requests,
      (r) => (isSingle(r.endpoint) ? JSON.stringify([r.headers.Authorization, r.endpoint.replace(/\/v1\/\w+$/, "")]) : null),
      (run) => {
        const items = run.map((r) => ({ ...r.body.JSON, type: isSingle(r.endpoint)![1] }));
        const endpoint = run[0]!.endpoint.replace(/\/v1\/\w+$/, "/v1/batch");
        return chunkItems(items, Infinity, MAX_BATCH_BYTES - 32).map((batch) =>
          restRequest({ endpoint, headers: run[0]!.headers, json: { batch } }),
        );
      },
    );
  },
};
