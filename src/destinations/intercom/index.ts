/**
 * INTERCOM: identify, track and group for both of RudderStack's API versions.
 * `apiVersion: v1` (the default before v2 existed, Intercom-Version 1.4) is stateless in
 * RudderStack too and is matched exactly: POST /users, /events, /companies (+ /users to add
 * the group's user to the company). `apiVersion: v2` (2.10, the default) makes RudderStack
 * search the contact first; Sluice cannot look up, so identify always creates the contact
 * (POST /contacts) and group always creates-or-updates the company (POST /companies).
 * `apiServer: eu | au` picks Intercom's regional API for v2.
 */
import { endpointFor } from "../base-url";
import { isEventAllowed } from "../shared";
import { type DestinationContext, type DestinationRequest, TransformError, configKeys, configOf, requiredKeysOf, restRequest } from "../types";
import type { DestinationDefinition, SluiceEvent } from "../types";
import { IntercomConfig } from "./config";
import { type ApiVersion, companyPayload, trackPayload, v1Membership, v1User, v2Contact } from "./payloads";

export { IntercomConfig };

const API = { standard: "https://api.intercom.io", eu: "https://api.eu.intercom.io", au: "https://api.au.intercom.io" };
const SUPPORTED = ["identify", "track", "group"];

function apiVersionOf(config: IntercomConfig): ApiVersion {
  return config.apiVersion === "v1" ? "v1" : "v2";
}

/** Regional servers exist for the 2.x API only; 1.4 is served from api.intercom.io. */
function baseUrl(config: IntercomConfig, version: ApiVersion): string {
  if (version === "v1") return API.standard;
  return config.apiServer === "eu" ? API.eu : config.apiServer === "au" ? API.au : API.standard;
}

function headers(apiKey: string, version: ApiVersion): Record<string, string> {
  return {
    "Content-Type": "application/json",
    Authorization: `Bearer ${apiKey}`,
    Accept: "application/json",
    "Intercom-Version": version === "v1" ? "1.4" : "2.10",
    "User-Agent": "RudderStack",
  };
}

function post(ctx: DestinationContext, version: ApiVersion, path: string, json: Record<string, unknown>): DestinationRequest {
  const config = configOf(ctx, IntercomConfig);
  return restRequest({
    endpoint: endpointFor(ctx, `${baseUrl(config, version)}/${path}`),
    headers: headers(String(config.apiKey), version),
    json,
  });
}

function identify(event: SluiceEvent, ctx: DestinationContext, version: ApiVersion): DestinationRequest[] {
  const config = configOf(ctx, IntercomConfig);
  if (version === "v1") {
    const user = v1User(event, config);
    if (!user.user_id && !user.email) throw new TransformError("Either of `email` or `userId` is required for Identify call");
    return [post(ctx, version, "users", user)];
  }
  const contact = v2Contact(event, config);
  if (!contact.external_id && !contact.email) throw new TransformError("Either email or userId is required for Identify call");
  return [post(ctx, version, "contacts", contact)];
}

function track(event: SluiceEvent, ctx: DestinationContext, version: ApiVersion): DestinationRequest[] {
  const config = configOf(ctx, IntercomConfig);
  const payload = trackPayload(event, config, version);
  if (!payload.event_name) throw new TransformError("Event name is required for track call");
  if (!payload.user_id && !payload.email) throw new TransformError("Either email or userId is required for Track call");
  return [post(ctx, version, "events", payload)];
}

function group(event: SluiceEvent, ctx: DestinationContext, version: ApiVersion): DestinationRequest[] {
  if (!event.groupId) throw new TransformError("groupId is required for group call");
  const requests = [post(ctx, version, "companies", companyPayload(event, version))];
  if (version === "v1") {
    const membership = v1Membership(event, configOf(ctx, IntercomConfig));
    if (membership) requests.push(post(ctx, version, "users", membership));
  }
  return requests;
}

export const intercom: DestinationDefinition = {
  name: "INTERCOM",
  displayName: "Intercom",
  config: {
    defaultConfig: configKeys(IntercomConfig, ["oneTrustCookieCategories", "consentManagement", "useNativeSDK", "connectionMode"]),
    supportedMessageTypes: ["identify", "track", "group"],
    requiredKeys: requiredKeysOf(IntercomConfig),
  },
  configSchema: IntercomConfig,
  transform(event, ctx) {
    const type = typeof event.type === "string" ? event.type.toLowerCase() : "";
    if (!type) throw new TransformError("message Type is not present. Aborting");
    if (!SUPPORTED.includes(type)) throw new TransformError(`message type ${type} is not supported`);
    const config = configOf(ctx, IntercomConfig);
    if (!config.apiKey) throw new TransformError("Access Token is not present. Aborting");
    if (!isEventAllowed(event, config)) return [];
    const version = apiVersionOf(config);
    if (type === "identify") return identify(event, ctx, version);
    if (type === "track") return track(event, ctx, version);
    return group(event, ctx, version);
  },
  deleteUsers(users, ctx) {
    const config = configOf(ctx, IntercomConfig);
    if (!config) throw new TransformError("Config for deletion not present");
    if (!config.apiKey) throw new TransformError("api key for deletion not present");
    // RudderStack sends the user id as Intercom's own user id, which is what its deletion endpoint takes.
    return users
      .filter((u) => !!u.userId)
      .map((u) =>
        restRequest({
          endpoint: endpointFor(ctx, `${API.standard}/user_delete_requests`),
          headers: { Authorization: `Bearer ${config.apiKey}`, Accept: "application/json" },
          json: { intercom_user_id: u.userId },
        }),
      );
  },
};
