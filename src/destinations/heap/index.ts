/**
 * HEAP: server-side track (`/api/track`) and user properties (`/api/add_user_properties`),
 * one request per event as RudderStack sends them, with properties flattened to dotted keys.
 */
import { t } from "elysia";
import { endpointFor } from "../base-url";
import { EVENT_FILTERING_KEYS, compact, eventFilteringSchema, flattenJson, genericUserId, isEventAllowed, timestampOf, traitsOf } from "../shared";
import { type DestinationDefinition, TransformError, requireConfig, restRequest } from "../types";

const API = "https://heapanalytics.com/api";
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
      const json: Record<string, unknown> = compact({
        identity,
        properties: heapProperties(event.properties),
        app_id: appId,
        event: event.event,
        timestamp: timestampOf(event),
      });
      // An empty key would make Heap deduplicate unrelated events, so only a real one is sent.
      if (event.properties?.idempotencyKey) json.idempotency_key = event.properties.idempotencyKey;
      return [restRequest({ endpoint: endpointFor(ctx, `${API}/track`), headers: HEADERS, json })];
    }
    throw new TransformError(`message type ${event.type} is not supported`);
  },
};
