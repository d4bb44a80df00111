/**
 * AppsFlyer Push API: every message (an install, re-engagement or in-app event) becomes one
 * track named after `event_name`. The message's fields are the properties, except those that
 * went to the user, app, device, OS, network and address fields of the event.
 */
import { assignOwn } from "../../lib/safe-keys";
import { copyFields, jsonBody, newMessage, withoutEmpty } from "../common";
import { mappingError, type SourceMapping } from "../types";

const INTEGRATION = "AF";

/** Push API field → event field(s); these fields leave the properties once read. */
const FIELDS = [
  ["customer_user_id", ["userId", "context.traits.userId"]],
  ["event_time", ["timestamp", "originalTimestamp"]],
  ["ip", "context.ip"],
  ["selected_timezone", "context.timezone"],
  ["user_agent", "context.userAgent"],
  ["bundle_id", "context.app.namespace"],
  ["app_version", "context.app.version"],
  ["app_name", "context.app.name"],
  ["device_type", "context.device.model"],
  ["wifi", "context.network.wifi"],
  ["carrier", "context.network.carrier"],
  ["platform", ["platform", "context.os.name"]],
  ["os_version", "context.os.version"],
  ["city", ["traits.address.city", "context.traits.address.city"]],
  ["postal_code", ["traits.address.zip", "context.traits.address.zip"]],
  ["country_code", ["traits.address.country", "context.traits.address.country"]],
] as const;

const APPLE_PLATFORMS = new Set(["ios", "watchos", "ipados", "tvos"]);

const isRecord = (v: unknown): v is Record<string, any> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The device's advertising id: IDFA on Apple platforms, the Android id on Android. */
function advertisingId(message: Record<string, any>): unknown {
  if (typeof message.platform !== "string") return undefined;
  const platform = message.platform.toLowerCase();
  if (APPLE_PLATFORMS.has(platform)) return message.idfa;
  if (platform === "android") return message.android_id;
  return undefined;
}

export const appsflyer: SourceMapping = {
  name: "appsflyer",
  displayName: "AppsFlyer",
  setup:
    "In AppsFlyer open Integration > API access (Push API in newer dashboards), add an endpoint with method POST, paste the URL, choose the message types, in-app events and fields to send, and save.",
  sample: {
    body: {
      event_name: "af_purchase",
      event_time: "2024-04-18 11:42:05.317",
      event_time_selected_timezone: "2024-04-18 13:42:05.317+0200",
      event_value: '{"af_revenue":"24.99","af_currency":"EUR","af_content_id":"sku-1187"}',
      event_revenue: "24.99",
      event_revenue_currency: "EUR",
      event_source: "SDK",
      appsflyer_id: "1713440000123-4412987",
      customer_user_id: "user-20931",
      app_id: "com.example.bikeshare",
      app_name: "Bikeshare",
      app_version: "5.2.0",
      bundle_id: "com.example.bikeshare",
      platform: "android",
      os_version: "14",
      device_type: "Pixel 8",
      android_id: "9774d56d682e549c",
      advertising_id: "38400000-8cf0-11bd-b23e-10b96e40000d",
      ip: "198.51.100.77",
      user_agent: "Dalvik/2.1.0 (Linux; U; Android 14; Pixel 8 Build/UQ1A.240205.004)",
      wifi: true,
      carrier: "Vodafone",
      language: "de-DE",
      country_code: "DE",
      city: "Hamburg",
      postal_code: "20095",
      selected_timezone: "Europe/Berlin",
      selected_currency: "EUR",
      media_source: "organic",
      install_time: "2024-04-01 08:15:44.902",
      sdk_version: "v6.13.0",
    },
  },
  map(request, ctx) {
    const body = jsonBody(request);
    if (!isRecord(body) || !body.event_name) throw mappingError("Unknown event type from Appsflyer");

    const message = newMessage(INTEGRATION);
    message.type = "track";
    message.event = body.event_name;
    const properties: Record<string, unknown> = assignOwn({}, body);
    message.properties = properties;
    copyFields(message, body, FIELDS);

    const moved: string[] = FIELDS.map(([from]) => from);
    message.context.device ??= {};
    if (body.platform) {
      const adId = advertisingId(body);
      if (adId) {
        message.context.device.advertisingId = adId;
        message.context.device.adTrackingEnabled = true;
      }
      // Both ids leave the properties whenever there is a platform, used or not.
      moved.push("idfa", "android_id");
    }
    if (body.appsflyer_id) {
      message.context.externalId = [{ type: "appsflyerExternalId", value: body.appsflyer_id }];
      moved.push("appsflyer_id");
    }
    message.anonymousId = ctx.uuid();
    // A moved field leaves the properties even when it was null (and so went nowhere).
    for (const key of moved) delete properties[key];
    return { events: [withoutEmpty(message)] };
  },
};
