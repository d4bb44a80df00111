/**
 * KLAVIYO: Klaviyo's JSON:API, `Authorization: Klaviyo-API-Key <privateApiKey>`, in the
 * request family the config's `apiVersion` picks, as RudderStack does: `v2` (revision
 * 2024-10-15) and `v3` (2026-04-15) upsert profiles through `/api/profile-import`, send events
 * with the profile inline and (un)subscribe through bulk jobs; `v1`, and a config without the
 * key, use revision 2023-02-22's event and subscription shapes (see v1.ts for its identify).
 * identify upserts the profile and, with `traits.properties.subscribe` and a list, subscribes
 * or unsubscribes it; track and screen create events; group subscribes to the groupId's list.
 */
import { isEventAllowed } from "../shared";
import { type DestinationContext, type DestinationDefinition, type DestinationRequest, TransformError, configKeys, configOf } from "../types";
import { batchKlaviyo } from "./batch";
import { versionOf } from "./common";
import { KlaviyoConfig } from "./config";
import { v1Event, v1Group, v1Identify } from "./v1";
import { v2Event, v2Group, v2Identify } from "./v2";

export { KlaviyoConfig };

export const klaviyo: DestinationDefinition<Promise<DestinationRequest[]>> = {
  name: "KLAVIYO",
  displayName: "Klaviyo",
  config: {
    defaultConfig: configKeys(KlaviyoConfig, ["useNativeSDK", "connectionMode", "sendPageAsTrack", "additionalPageInfo", "oneTrustCookieCategories"]),
    supportedMessageTypes: ["identify", "track", "screen", "group"],
    // Listed rather than requiredKeysOf: the transform refuses an event without privateApiKey, but
    // the schema leaves it optional, as a config saved without it has always been accepted.
    requiredKeys: ["privateApiKey"],
  },
  configSchema: KlaviyoConfig,
  async transform(event, ctx: DestinationContext): Promise<DestinationRequest[]> {
    const config = configOf(ctx, KlaviyoConfig);
    const version = versionOf(config);
    if (!event.type) throw new TransformError("Event type is required");
    if (!config.privateApiKey) throw new TransformError(`Private API Key is a required field for ${event.type} events`);
    if (!isEventAllowed(event, config)) return [];
    const type = String(event.type).toLowerCase();
    switch (type) {
      case "identify":
        return version.importApi ? v2Identify(event, ctx, version) : v1Identify(event, ctx);
      case "track":
      case "screen":
        return [version.importApi ? v2Event(event, ctx, version) : v1Event(event, ctx)];
      case "group":
        return version.importApi ? v2Group(event, ctx, version) : v1Group(event, ctx);
      default:
        throw new TransformError(`Event type ${type} is not supported`);
    }
  },
  batch: (requests) => batchKlaviyo(requests),
};
