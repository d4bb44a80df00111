/**
 * HEAP: server-side track (`/api/track`) and user properties (`/api/add_user_properties`),
 * one request per event as RudderStack sends them, with properties flattened to dotted keys.
 * `dataResidency: eu` sends to Heap's EU collector instead of heapanalytics.com.
 */
import { type Static, t } from "elysia";
import { endpointFor } from "../base-url";
import { GENERIC_PATHS } from "../generic-fields";
import { compact, eventFilteringSchema, flattenJson, getPath, isEventAllowed, timestampOf, traitsOf } from "../shared";
import { type DestinationDefinition, type SluiceEvent, TransformError, configKeys, configOf, requireConfig, requiredKeysOf, restRequest } from "../types";

const API = { US: "https://heapanalytics.com/api", EU: "https://c.eu.heap-api.com/api" };
/**
 * RudderStack's generic userId chain read with `||`: the first truthy id, the anonymousId last.
 * A blank userId falls through to the next id, and an identify without a user id sets the
 * properties of its anonymousId, as RudderStack's workflow sends them to Heap.
 */
function identityOf(event: SluiceEvent): unknown {
  for (const path of GENERIC_PATHS.userId) {
    const v = getPath(event, path);
    if (v) return v;
  }
  return undefined;
}
const HEADERS = { Accept: "application/json", "Content-Type": "application/json" };

export const HeapConfig = t.Object(
  {
    appId: t.String({ minLength: 1 }),
    dataResidency: t.Optional(t.String()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);
export type HeapConfig = Static<typeof HeapConfig>;

// RudderStack's form stores `eu`; Sluice's docs have always said `EU`, so any case counts.
function apiBase(config: HeapConfig): string {
  return String(config.dataResidency ?? "").toUpperCase() === "EU" ? API.EU : API.US;
}

/** Heap takes no event without an identity: with no id at all, RudderStack's own refusal. */
function requireIdentity(event: SluiceEvent): unknown {
  const identity = identityOf(event);
  if (!identity) throw new TransformError("userId is required");
  return identity;
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
      const traits = traitsOf(event);
      if (!traits) throw new TransformError("traits are required");
      return [
        restRequest({
          endpoint: endpointFor(ctx, `${api}/add_user_properties`),
          headers: HEADERS,
          json: compact({ identity: requireIdentity(event), properties: heapProperties(traits), app_id: appId }),
        }),
      ];
    }
    if (event.type === "track") {
      if (!event.event) throw new TransformError("event is required");
      const json: Record<string, unknown> = compact({
        identity: requireIdentity(event),
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
