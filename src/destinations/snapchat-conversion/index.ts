/**
 * SNAPCHAT_CONVERSION: Snap's Conversions API, as RudderStack sends it. track events become the
 * Snap event their name (in snake case) or `rudderEventsToSnapEvents` names; page events are
 * PAGE_VIEW. `apiVersion: newApi` takes the v3 API (v3.ts); `legacyApi` or none, v2 (v2.ts).
 * Personal data goes SHA-256 hashed; batch.ts merges the calls as RudderStack's router.
 */
import { isEventAllowed } from "../shared";
import { type DestinationDefinition, TransformError, configKeys, configOf, requiredKeysOf } from "../types";
import { batchSnapchat } from "./batch";
import { SnapchatConversionConfig, mappedEvents } from "./common";
import { sendV2 } from "./v2";
import { sendV3 } from "./v3";

export { SnapchatConversionConfig };

export const snapchatConversion: DestinationDefinition = {
  name: "SNAPCHAT_CONVERSION",
  displayName: "Snapchat Conversion",
  config: {
    defaultConfig: configKeys(SnapchatConversionConfig, ["connectionMode", "consentManagement", "oneTrustCookieCategories", "ketchConsentPurposes"]),
    supportedMessageTypes: ["track", "page"],
    requiredKeys: requiredKeysOf(SnapchatConversionConfig),
  },
  configSchema: SnapchatConversionConfig,
  transform(event, ctx) {
    const config = configOf(ctx, SnapchatConversionConfig);
    if (!event.type) throw new TransformError("Event type is required");
    const type = String(event.type).toLowerCase();
    if (type !== "track" && type !== "page") throw new TransformError(`Event type ${type} is not supported`);
    if (!isEventAllowed(event, config)) return [];
    const send = config.apiVersion === "newApi" ? sendV3 : sendV2;
    if (type === "page") return send(event, ctx, ["page_view"]);
    const mapped = mappedEvents(event, config);
    return send(event, ctx, mapped.length > 0 ? mapped : [event.event]);
  },
  batch: (requests) => batchSnapchat(requests),
};
