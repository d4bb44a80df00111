/**
 * INTERCOM: identify, track and group for both of RudderStack's API versions (RudderStack runs
 * both through one workflow, chosen by `apiVersion`). `v1` (Intercom-Version 1.4) sends POST
 * /users, /events, /companies (+ /users to add the group's user to the company). `v2` (2.10, the
 * default) searches the contact first, as RudderStack does: an identify updates the contact it
 * finds (PUT /contacts/{id}) or creates one, a group adds the contact it finds to the company.
 * `apiServer: eu | au` picks Intercom's regional API for v2.
 *
 * RudderStack makes every group call itself while transforming and marks its output as already
 * sent. Sluice makes, while transforming, only the calls whose answer it needs (the search, and
 * the company's creation when its Intercom id is needed) and returns the calls after those as
 * the event's requests: each call is made once, in RudderStack's order.
 */
import { endpointFor } from "../base-url";
import { isEventAllowed, isPlainObject } from "../shared";
import { type DestinationContext, type DestinationRequest, TransformError, configKeys, configOf, requiredKeysOf, restRequest } from "../types";
import type { DestinationDefinition, SluiceEvent } from "../types";
import { IntercomConfig } from "./config";
import { type Service, createOrUpdateCompany, detachContactFromCompany, searchContact } from "./lookups";
import { type ApiVersion, companyPayload, retlView, trackPayload, v1Membership, v1User, v2Contact } from "./payloads";

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

/** The API the kind's requests and lookups go to, with their headers. */
function serviceOf(ctx: DestinationContext, version: ApiVersion): Service {
  const config = configOf(ctx, IntercomConfig);
  return { base: endpointFor(ctx, baseUrl(config, version)), headers: headers(String(config.apiKey), version) };
}

function request(ctx: DestinationContext, version: ApiVersion, method: "POST" | "PUT", path: string, json: Record<string, unknown>): DestinationRequest {
  const api = serviceOf(ctx, version);
  return restRequest({ method, endpoint: `${api.base}/${path}`, headers: api.headers, json });
}

function post(ctx: DestinationContext, version: ApiVersion, path: string, json: Record<string, unknown>): DestinationRequest {
  return request(ctx, version, "POST", path, json);
}

async function identify(event: SluiceEvent, ctx: DestinationContext, version: ApiVersion): Promise<DestinationRequest[]> {
  const config = configOf(ctx, IntercomConfig);
  if (version === "v1") {
    const user = v1User(event, config);
    if (!user.user_id && !user.email) throw new TransformError("Either of `email` or `userId` is required for Identify call");
    return [post(ctx, version, "users", user)];
  }
  const view = retlView(event, version);
  const contactId = await searchContact(ctx, serviceOf(ctx, version), view);
  const contact = v2Contact(event, config);
  if (!contact.external_id && !contact.email) throw new TransformError("Either email or userId is required for Identify call");
  if (!contactId) return [post(ctx, version, "contacts", contact)];
  const company = view.traits?.company || view.context?.traits?.company;
  if (isPlainObject(company) && company.remove) await detachContactFromCompany(ctx, serviceOf(ctx, version), contactId, company);
  return [request(ctx, version, "PUT", `contacts/${contactId}`, contact)];
}

function track(event: SluiceEvent, ctx: DestinationContext, version: ApiVersion): DestinationRequest[] {
  const config = configOf(ctx, IntercomConfig);
  const payload = trackPayload(event, config, version);
  if (!payload.event_name) throw new TransformError("Event name is required for track call");
  if (!payload.user_id && !payload.email) throw new TransformError("Either email or userId is required for Track call");
  return [post(ctx, version, "events", payload)];
}

/** The tags (`context.traits.tags`) RudderStack puts on the group's company, one POST /tags each. */
function tagRequests(ctx: DestinationContext, version: ApiVersion, event: SluiceEvent, companyId: string): DestinationRequest[] {
  const tags = event.context?.traits?.tags;
  if (!Array.isArray(tags)) return [];
  return tags.map((name) => post(ctx, version, "tags", { name, companies: [{ id: companyId }] }));
}

async function group(event: SluiceEvent, ctx: DestinationContext, version: ApiVersion): Promise<DestinationRequest[]> {
  const contactId = version === "v2" ? await searchContact(ctx, serviceOf(ctx, version), retlView(event, version)) : undefined;
  if (!event.groupId) throw new TransformError("groupId is required for group call");
  const company = companyPayload(event, version);
  const tagged = Array.isArray(event.context?.traits?.tags) && event.context.traits.tags.length > 0;
  // The company's Intercom id is needed to add the contact or the tags to it; without those the
  // creation is the event's own request.
  if (contactId === undefined && !tagged) {
    const requests = [post(ctx, version, "companies", company)];
    const membership = version === "v1" ? v1Membership(event, configOf(ctx, IntercomConfig)) : undefined;
    if (membership) requests.push(post(ctx, version, "users", membership));
    return requests;
  }
  const companyId = await createOrUpdateCompany(ctx, serviceOf(ctx, version), company);
  const requests: DestinationRequest[] = [];
  if (contactId !== undefined) requests.push(post(ctx, version, `contacts/${contactId}/companies`, { id: companyId }));
  if (version === "v1") {
    const membership = v1Membership(event, configOf(ctx, IntercomConfig));
    if (membership) requests.push(post(ctx, version, "users", membership));
  }
  return [...requests, ...tagRequests(ctx, version, event, companyId)];
}

export const intercom: DestinationDefinition<Promise<DestinationRequest[]>> = {
  name: "INTERCOM",
  displayName: "Intercom",
  config: {
    defaultConfig: configKeys(IntercomConfig, ["oneTrustCookieCategories", "consentManagement", "useNativeSDK", "connectionMode"]),
    supportedMessageTypes: ["identify", "track", "group"],
    requiredKeys: requiredKeysOf(IntercomConfig),
  },
  configSchema: IntercomConfig,
  async transform(event, ctx) {
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
