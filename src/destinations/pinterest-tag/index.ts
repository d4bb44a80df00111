/**
 * PINTEREST_TAG: Pinterest's Conversions API, as RudderStack's pinterest_tag workflow sends it.
 * `apiVersion` `legacyApi` (the default) posts to `https://ct.pinterest.com/events/v3` with the
 * advertiser id in each event; `newApi` posts to API v5's
 * `https://api.pinterest.com/v5/ad_accounts/{adAccountId}/events` with
 * `Authorization: Bearer <conversionToken>`. track, page and screen each become one event per
 * Pinterest event name (the dashboard's mapping, the e-commerce names, `custom`, or the event's
 * own name); batch() sends them as `{data: [...]}`, up to 1000 per call.
 */
import { batchConsecutive, chunkItems, isEventAllowed, requestKey } from "../shared";
import { endpointFor } from "../base-url";
import { type DestinationContext, type DestinationDefinition, type DestinationRequest, type SluiceEvent, TransformError, configKeys, configOf, restRequest } from "../types";
import { PinterestTagConfig, isOn, usesV5 } from "./config";
import { commonFields, customData, eventNames, userData } from "./payload";

export { PinterestTagConfig };

export const V3_ENDPOINT = "https://ct.pinterest.com/events/v3";
export const v5Endpoint = (adAccountId: string) => `https://api.pinterest.com/v5/ad_accounts/${adAccountId}/events`;
/** Pinterest takes at most 1000 events per call (Conversions API reference); RudderStack's router batches so. */
export const MAX_EVENTS_PER_CALL = 1000;

const SUPPORTED = ["track", "page", "screen"];

function checkConfig(config: PinterestTagConfig): void {
  if (!usesV5(config)) {
    if (!config.advertiserId) throw new TransformError("Advertiser Id not found. Aborting");
    return;
  }
  if (!config.adAccountId) throw new TransformError("Ad Account ID not found. Aborting");
  if (!config.conversionToken) throw new TransformError("Conversion Token not found. Aborting");
}

/** The events' requests before batch(): one Pinterest event each, in the body as RudderStack's processor shows it. */
function transform(event: SluiceEvent, ctx: DestinationContext): DestinationRequest[] {
  const config = configOf(ctx, PinterestTagConfig);
  checkConfig(config);
  const type = typeof event.type === "string" ? event.type.toLowerCase() : "";
  if (!type) throw new TransformError("Message type is not present. Aborting message.");
  if (!SUPPORTED.includes(type)) throw new TransformError(`message type ${type} is not supported`);
  if (type === "track" && !(event.event || event.name)) throw new TransformError("event_name could not be mapped. Aborting.");
  if (!isEventAllowed(event, config)) return [];

  const base: Record<string, unknown> = { ...commonFields(event, config), user_data: userData(event, config) };
  if (type === "track") base.custom_data = customData(event);
  const names = eventNames(event, config);

  const v5 = usesV5(config);
  const endpoint = endpointFor(ctx, v5 ? v5Endpoint(String(config.adAccountId)) : V3_ENDPOINT);
  const headers: Record<string, string> = { "Content-Type": "application/json" };
  if (v5) headers.Authorization = `Bearer ${config.conversionToken}`;
  const params = isOn(config.sendAsTestEvent) ? { test: true } : {};
  return names.map((event_name) => restRequest({ endpoint, headers, params, json: { ...base, event_name } }));
}

/** Consecutive events for the same endpoint, headers and test flag go out as `{data: [...]}`, 1000 per call. */
function batch(requests: DestinationRequest[]): DestinationRequest[] {
  return batchConsecutive(requests, requestKey, (run) =>
    chunkItems(run, MAX_EVENTS_PER_CALL).map((chunk) => ({
      ...chunk[0]!,
      body: { ...chunk[0]!.body, JSON: { data: chunk.map((r) => r.body.JSON) } },
    })),
  );
}

export const pinterestTag: DestinationDefinition = {
  name: "PINTEREST_TAG",
  displayName: "Pinterest Tag",
  config: {
    defaultConfig: configKeys(PinterestTagConfig, ["useNativeSDK", "connectionMode", "consentManagement", "oneTrustCookieCategories", "ketchConsentPurposes"]),
    supportedMessageTypes: ["page", "screen", "track"],
  },
  configSchema: PinterestTagConfig,
  transform,
  batch,
};
