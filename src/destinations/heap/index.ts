/**
 * HEAP: server-side track (`/api/track`) and user properties (`/api/add_user_properties`),
 * with properties flattened to dotted keys as Heap expects; consecutive calls merge into
 * Heap's bulk forms of the same endpoints.
 */
import { t } from "elysia";
import { endpointFor } from "../base-url";
import {
  EVENT_FILTERING_KEYS,
  batchConsecutive,
  chunkItems,
  compact,
  eventFilteringSchema,
  flattenJson,
  genericUserId,
  isEventAllowed,
  timestampOf,
  traitsOf,
} from "../shared";
import { type DestinationDefinition, TransformError, requireConfig, restRequest } from "../types";

const API = "https://heapanalytics.com/api";
// Heap's bulk track and bulk user-properties calls take at most 1000 entries.
const BULK_LIMIT = 1000;
const HEADERS = { Accept: "application/json", "Content-Type": "application/json" };

export const HeapConfig = t.Object({ appId: t.String({ minLength: 1 }), ...eventFilteringSchema }, { additionalProperties: true });

/** Flattened properties without idempotencyKey, which Heap takes as a separate field. */
function heapProperties(source: unknown): Record<string, unknown> {
  const { idempotencyKey: _separate, ...rest } = flattenJson(source ?? {});
  return rest;
}

export const heap: DestinationDefinition = {
  name: "HEAP",
  displayName: "Heap.io",
  config: {
    defaultConfig: ["appId", ...EVENT_FILTERING_KEYS],
    supportedMessageTypes: ["identify", "track"],
    requiredKeys: ["appId"],
  },
  configSchema: HeapConfig,
  transform(event, ctx) {
    const appId = String(requireConfig(ctx, "appId"));
    if (!isEventAllowed(event, ctx.config)) return [];
    const identity = genericUserId(event);
    if (event.type === "identify") {
      const traits = traitsOf(event);
      if (!traits) throw new TransformError("traits are required");
      return [
        restRequest({
          endpoint: endpointFor(ctx, `${API}/add_user_properties`),
          headers: HEADERS,
          json: compact({ identity, properties: heapProperties(traits), app_id: appId }),
        }),
      ];
    }
    if (event.type === "track") {
      if (!event.event) throw new TransformError("event is required");
      const idempotencyKey = event.properties?.idempotencyKey;
      return [
        restRequest({
          endpoint: endpointFor(ctx, `${API}/track`),
          headers: HEADERS,
          json: compact({
            identity,
            properties: heapProperties(event.properties),
            app_id: appId,
            event: event.event,
            timestamp: timestampOf(event),
            idempotency_key: idempotencyKey,
          }),
        }),
      ];
    }
    throw new TransformError(`message type ${event.type} is not supported`);
  },
  batch(requests) {
    const listKey = (endpoint: string) =>
      endpoint.endsWith("/api/track") ? "events" : endpoint.endsWith("/api/add_user_properties") ? "users" : null;
    return batchConsecutive(
      requests,
      (r) => (listKey(r.endpoint) && r.body.JSON.app_id ? JSON.stringify([r.endpoint, r.body.JSON.app_id]) : null),
      (run) => {
        const key = listKey(run[0]!.endpoint)!;
        const appId = run[0]!.body.JSON.app_id;
        const entries = run.map((r) => {
          const { app_id: _wrapper, ...entry } = r.body.JSON;
          return entry;
        });
        return chunkItems(entries, BULK_LIMIT).map((chunk) =>
          restRequest({ endpoint: run[0]!.endpoint, headers: run[0]!.headers, json: { app_id: appId, [key]: chunk } }),
        );
      },
    );
  },
};
