/**
 * TIKTOK_ADS: TikTok's Events API (business-api.tiktok.com/open_api/v1.3), `Access-Token`
 * header, as RudderStack sends it: track events only, named by TikTok's standard events
 * (RudderStack's e-commerce names, or the config's `eventsToStandard`; other names only with
 * `sendCustomEvents`). `version: v2` takes Events 2.0 (`/event/track/`, v2.ts); any other
 * value Events 1.0 (`/pixel/track/`, v1.ts). batch.ts merges the calls as RudderStack's router.
 */
import { isEventAllowed } from "../shared";
import { type DestinationDefinition, type ResponseVerdict, TransformError, configKeys, configOf, requiredKeysOf } from "../types";
import { batchTiktok } from "./batch";
import { TiktokAdsConfig } from "./events";
import { trackV1 } from "./v1";
import { trackV2 } from "./v2";

export { TiktokAdsConfig };

/**
 * TikTok answers 200 with its own code: 0 (or 20001, partly accepted) is success, 40100 a rate
 * limit, 40001 and 40002 a refusal (no permission, invalid field). Other codes are left to the
 * HTTP status, as RudderStack's response handler leaves them.
 */
export function readTiktokAnswer(text: string): ResponseVerdict {
  let code: unknown;
  try {
    code = JSON.parse(text)?.code;
  } catch {
    return { outcome: "ok" };
  }
  if (code === 40100) return { outcome: "retry", error: `Request failed with status: ${code}` };
  if (code === 40001 || code === 40002) return { outcome: "abort", error: `Request failed with status: ${code}` };
  return { outcome: "ok" };
}

export const tiktokAds: DestinationDefinition = {
  name: "TIKTOK_ADS",
  displayName: "TikTok Ads",
  config: {
    defaultConfig: configKeys(TiktokAdsConfig, ["useNativeSDK", "connectionMode", "consentManagement", "oneTrustCookieCategories", "ketchConsentPurposes"]),
    supportedMessageTypes: ["track"],
    requiredKeys: requiredKeysOf(TiktokAdsConfig),
  },
  configSchema: TiktokAdsConfig,
  transform(event, ctx) {
    const config = configOf(ctx, TiktokAdsConfig);
    const v2 = config.version === "v2";
    // Events 1.0's text ends in a space, as RudderStack's does.
    if (!config.accessToken) throw new TransformError(v2 ? "Access Token not found. Aborting" : "Access Token not found. Aborting ");
    if (!config.pixelCode) throw new TransformError("Pixel Code not found. Aborting");
    if (!event.type) throw new TransformError("Event type is required");
    const type = String(event.type).toLowerCase();
    if (type !== "track") throw new TransformError(`Event type ${type} is not supported`);
    if (!isEventAllowed(event, config)) return [];
    return v2 ? trackV2(event, ctx) : trackV1(event, ctx);
  },
  batch: (requests) => batchTiktok(requests),
  checkResponse: (answer) => readTiktokAnswer(answer.body),
};
