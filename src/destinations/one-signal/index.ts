/**
 * ONE_SIGNAL: OneSignal, in the request family the config's `version` picks, as RudderStack does:
 * `V2` uses OneSignal's user model (users/create, with subscriptions, properties and tags; see
 * users.ts); anything else, the default, the device (player) API v1 (devices and tags; see
 * players.ts). identify, track and group are taken; every request is its event's own (RudderStack
 * batches none).
 */
import { type DestinationDefinition, TransformError, configKeys, configOf, requiredKeysOf } from "../types";
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
};
