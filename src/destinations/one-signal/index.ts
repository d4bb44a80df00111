/**
 * ONE_SIGNAL: OneSignal, in the request family the config's `version` picks, as RudderStack does:
 * `V2` uses OneSignal's user model (users/create, with subscriptions, properties and tags; see
 * users.ts); anything else, the default, the device (player) API v1 (devices and tags; see
 * players.ts). identify, track and group are taken; every request is its event's own (RudderStack
 * batches none).
 */
import { endpointFor } from "../base-url";
import { type DestinationDefinition, TransformError, configKeys, configOf, requiredKeysOf, restRequest } from "../types";
import { OneSignalConfig } from "./common";
import { playersTransform } from "./players";
import { usersTransform } from "./users";

export { OneSignalConfig };

export const oneSignal: DestinationDefinition = {
  name: "ONE_SIGNAL",
  displayName: "OneSignal",
  config: {
    defaultConfig: configKeys(OneSignalConfig, ["connectionMode", "consentManagement", "oneTrustCookieCategories", "ketchConsentPurposes"]),
    supportedMessageTypes: ["identify", "track", "group"],
    requiredKeys: requiredKeysOf(OneSignalConfig),
  },
  configSchema: OneSignalConfig,
  transform(event, ctx) {
    const config = configOf(ctx, OneSignalConfig);
    if (!event.type) throw new TransformError("Event type is required");
    if (!config.appId) throw new TransformError("appId is a required field");
    const type = String(event.type).toLowerCase();
    return config.version === "V2" ? usersTransform(type, event, config, ctx) : playersTransform(type, event, config, ctx);
  },
  /**
   * OneSignal's "Delete user" (`DELETE /apps/{appId}/users/by/external_id/{userId}`, asynchronous
   * at OneSignal): it takes the App API key, Sluice's own `appApiKey` key.
   */
  deleteUsers(users, ctx) {
    const config = configOf(ctx, OneSignalConfig);
    const key = config.appApiKey?.trim();
    if (!key) throw new TransformError("OneSignal deletes users with the app's App API key: set 'appApiKey' in the destination's config");
    return users.map((u) =>
      restRequest({
        method: "DELETE",
        endpoint: endpointFor(ctx, `https://api.onesignal.com/apps/${encodeURIComponent(config.appId)}/users/by/external_id/${encodeURIComponent(u.userId)}`),
        headers: { Authorization: `Key ${key}` },
      }),
    );
  },
};
