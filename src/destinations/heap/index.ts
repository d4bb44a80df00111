/**
 * HEAP: server-side track (`/api/track`) and user properties (`/api/add_user_properties`),
 * one request per event as RudderStack sends them, with properties flattened to dotted keys.
 * `dataResidency: EU` (a Sluice key; RudderStack's HEAP has no region setting) sends to Heap's
 * EU collector instead of heapanalytics.com.
 */
import { type Static, t } from "elysia";
import { endpointFor } from "../base-url";
import { GENERIC_PATHS } from "../generic-fields";
import { compact, eventFilteringSchema, firstOf, firstPresent, flattenJson, isEventAllowed, timestampOf, traitsOf } from "../shared";
import { type DestinationDefinition, type SluiceEvent, TransformError, configKeys, configOf, requireConfig, requiredKeysOf, restRequest } from "../types";

const API = { US: "https://heapanalytics.com/api", EU: "https://c.eu.heap-api.com/api" };
// RudderStack's generic userId chain with nullish fallback: a blank userId on a track is sent as
// it is, and a track without any user id goes as its anonymousId.
const identityOf = (event: SluiceEvent) => firstOf(event, GENERIC_PATHS.userId);
// User properties belong to a known user: an identify takes the first non-blank user id and is
// refused without one. This differs from RudderStack, whose current workflow sends them under
// the anonymousId (making Heap create a user for it): listed as open work in
// src/destinations/heap/README.md.
const USER_PATHS = GENERIC_PATHS.userId.filter((p) => p !== "anonymousId");
const HEADERS = { Accept: "application/json", "Content-Type": "application/json" };

export const HeapConfig = t.Object(
  {
    appId: t.String({ minLength: 1 }),
    dataResidency: t.Optional(t.String()),
    blacklistedEvents: eventFilteringSchema.blacklistedEvents,
    whitelistedEvents: eventFilteringSchema.whitelistedEvents,
    eventFilteringOption: eventFilteringSchema.eventFilteringOption,
  },
  { additionalProperties: true },
);
export type HeapConfig = Static<typeof HeapConfig>;

function apiBase(config: HeapConfig): string {
  return String(config.dataResidency ?? "").toUpperCase() === "EU" ? API.EU : API.US;
}

/** Flattened properties without idempotencyKey, which Heap takes as a separate field. */
function heapProperties(source: unknown): Record<string, unknown> {
  const { idempotencyKey: _separate, ...rest } = flattenJson(source ?? {});
  return rest;
}

export const heap: DestinationDefinition = {
  name: "HEAP",
  displayName: "Heap.io",
  config: {
    defaultConfig: configKeys(HeapConfig, ["useNativeSDK", "connectionMode", "consentManagement", "oneTrustCookieCategories", "ketchConsentPurposes"]),
    supportedMessageTypes: ["identify", "track"],
    requiredKeys: requiredKeysOf(HeapConfig),
  },
  configSchema: HeapConfig,
  transform(event, ctx) {
    const appId = String(requireConfig(ctx, "appId"));
    const config = configOf(ctx, HeapConfig);
    if (!isEventAllowed(event, config)) return [];
    const api = apiBase(config);
    if (event.type === "identify") {
      const identity = firstPresent(event, USER_PATHS);
      if (identity === undefined) throw new TransformError("userId is required");
      const traits = traitsOf(event);
      if (!traits) throw new TransformError("traits are required");
      return [
        restRequest({
          endpoint: endpointFor(ctx, `${api}/add_user_properties`),
          headers: HEADERS,
          json: compact({ identity, properties: heapProperties(traits), app_id: appId }),
        }),
      ];
    }
    if (event.type === "track") {
      if (!event.event) throw new TransformError("event is required");
      const json: Record<string, unknown> = compact({
        identity: identityOf(event),
        properties: heapProperties(event.properties),
        app_id: appId,
        event: event.event,
        timestamp: timestampOf(event),
      });
      // An empty key would make Heap deduplicate unrelated events, so only a real one is sent.
      if (event.properties?.idempotencyKey) json.idempotency_key = event.properties.idempotencyKey;
      return [restRequest({ endpoint: endpointFor(ctx, `${api}/track`), headers: HEADERS, json })];
    }
    throw new TransformError(`message type ${event.type} is not supported`);
  },
};
