/**
 * GET /sourceConfig: what RudderStack's control plane serves the SDKs, from Sluice's config. The
 * SDKs load a device-mode integration for each destination listed here (the JS SDK by
 * `destinationDefinition.displayName`, from its `destSDKBaseURL`) and send to it from the device;
 * everything else is delivered by the server (cloud mode) and stays out of the list.
 */
import { connectionModeOf } from "../control-plane/destinations";
import type { DestinationRuntime, RoutingSnapshot, SourceRuntime } from "../control-plane/config-store";

/** The keys of its config the SDK reads to tell device and hybrid from cloud mode. */
const MODE_KEYS = ["connectionMode", "useNativeSDK", "useNativeSDKToSend"];

/** Server-side credentials by their name; a device config never needs them (apiKey is public in device mode: not listed). */
const SECRET_NAME = /(secret|password|passcode|token)$/i;

const stringList = (v: unknown): string[] | undefined => (Array.isArray(v) ? v.filter((k): k is string => typeof k === "string") : undefined);

/**
 * The config a browser may see: anyone with the write key reads this answer, as on RudderStack.
 * RudderStack's definition names the keys its SDK integration needs (`includeKeys`) and those that
 * are secret (`secretKeys`); without a definition, names that read as credentials stay out.
 */
export function deviceConfig(d: Pick<DestinationRuntime, "config" | "rudderDefinition">): Record<string, unknown> {
  const def = d.rudderDefinition?.config ?? {};
  const include = stringList(def.includeKeys);
  const exclude = new Set([...(stringList(def.secretKeys) ?? []), ...(stringList(def.excludeKeys) ?? [])]);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(d.config)) {
    if (exclude.has(key)) continue;
    const wanted = include?.length ? include.includes(key) || MODE_KEYS.includes(key) : !SECRET_NAME.test(key);
    if (wanted) out[key] = value;
  }
  return out;
}

function destinationItem(d: DestinationRuntime) {
  const name = d.rudderDefinition?.name ?? d.type;
  return {
    id: d.id,
    name: d.name,
    enabled: true,
    config: deviceConfig(d),
    destinationDefinition: { name, displayName: d.rudderDefinition?.displayName ?? d.definition?.displayName ?? name },
    // Sluice has no /transform endpoint for the SDK to call: a transformation runs only for
    // events the server delivers.
    areTransformationsConnected: false,
    shouldApplyDeviceModeTransformation: false,
    propagateEventsUntransformedOnError: false,
  };
}

/**
 * The source as the SDKs read it. Lists the enabled device-mode and hybrid destinations
 * connected to it, whether or not this version of Sluice has their kind: the SDK brings its own
 * integration.
 */
export function sourceConfig(source: SourceRuntime, snapshot: RoutingSnapshot) {
  const destinations = (snapshot.bySource.get(source.id) ?? []).filter((d) => d.enabled && connectionModeOf(d.config) !== "cloud").map(destinationItem);
  return {
    source: { id: source.id, name: source.name, workspaceId: source.workspaceId, enabled: source.enabled, config: {}, destinations },
  };
}
