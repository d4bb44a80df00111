/**
 * ZENDESK: identify upserts a Zendesk user (`users/create_or_update.json`), track records a
 * Sunshine event on the user's profile, group upserts an organization and makes the user
 * one of its members. Auth is Zendesk's API-token Basic auth (`email/token:apiToken`), with
 * the marketplace headers RudderStack's app sends.
 *
 * RudderStack looks users and organizations up (search by email, list identities and
 * memberships, create missing custom fields) before it answers; a Sluice transform makes no
 * calls, so each of those becomes the upsert Zendesk documents for it (see zendesk/README.md).
 */
import { type Static, t } from "elysia";
import { endpointFor } from "../base-url";
import { basicAuth, chunkItems, traitsOf, withoutUndefined } from "../shared";
import { type DestinationDefinition, type DestinationContext, type SluiceEvent, TransformError, configKeys, configOf, requireConfig, requiredKeysOf, restRequest } from "../types";
import { organizationPayload, userPayload } from "./mapping";

const MARKETPLACE_HEADERS = {
  "X-Zendesk-Marketplace-Name": "RudderStack",
  "X-Zendesk-Marketplace-Organization-Id": "3339",
  "X-Zendesk-Marketplace-App-Id": "263241",
};
/** Zendesk's bulk user deletion takes at most 100 ids per call. */
const DELETE_CHUNK = 100;

export const ZendeskConfig = t.Object(
  {
    email: t.String({ minLength: 1 }),
    apiToken: t.String({ minLength: 1 }),
    domain: t.String({ minLength: 1 }),
    createUsersAsVerified: t.Optional(t.Boolean()),
    sendGroupCallsWithoutUserId: t.Optional(t.Boolean()),
    removeUsersFromOrganization: t.Optional(t.Boolean()),
    searchByExternalId: t.Optional(t.Boolean()),
    sourceName: t.Optional(t.String()),
  },
  { additionalProperties: true },
);
export type ZendeskConfig = Static<typeof ZendeskConfig>;

interface Api {
  base: string;
  headers: Record<string, string>;
}

function apiOf(ctx: DestinationContext): Api {
  const email = String(requireConfig(ctx, "email"));
  const apiToken = String(requireConfig(ctx, "apiToken"));
  const domain = String(requireConfig(ctx, "domain"));
  return {
    base: endpointFor(ctx, `https://${domain}.zendesk.com/api/v2/`),
    headers: { Authorization: basicAuth(`${email}/token`, apiToken), "Content-Type": "application/json", ...MARKETPLACE_HEADERS },
  };
}

function post(api: Api, path: string, json: Record<string, unknown>) {
  return restRequest({ endpoint: `${api.base}${path}`, headers: api.headers, json });
}

function requireUserId(event: SluiceEvent): void {
  if (!event.userId) throw new TransformError(`UserId is a mandatory field for ${event.type}`);
}

/** Zendesk reserves the source `zendesk` for itself, so RudderStack refuses it. */
function sourceNameOf(config: ZendeskConfig): string {
  const name = config.sourceName;
  if (typeof name === "string" && name.trim().toLowerCase() === "zendesk") {
    throw new TransformError("Invalid source name. The source name `zendesk` is not allowed.");
  }
  return name ? String(name) : "Rudder";
}

function identify(event: SluiceEvent, ctx: DestinationContext, api: Api) {
  requireUserId(event);
  const payload = userPayload(traitsOf(event), event.userId, !!configOf(ctx, ZendeskConfig).createUsersAsVerified);
  return [post(api, "users/create_or_update.json", payload)];
}

/**
 * RudderStack finds (or creates) the user by email and posts to `users/{id}/events`; the
 * profile endpoint takes the same body and resolves the user from the email identifier itself.
 */
function track(event: SluiceEvent, ctx: DestinationContext, api: Api) {
  requireUserId(event);
  const email = traitsOf(event)?.email;
  if (!email) throw new TransformError("email not found in traits.");
  const source = sourceNameOf(configOf(ctx, ZendeskConfig));
  const body = {
    event: withoutUndefined({ description: event.event, type: event.event, source, properties: event.properties }),
    profile: withoutUndefined({ type: event.event, source, identifiers: [{ type: "email", value: email }] }),
  };
  return [post(api, "user_profiles/events", body)];
}

/**
 * The user's side of a membership, addressed by external id; Zendesk attaches the user to
 * the organization named here. The user's name and email come along so that a user Zendesk
 * does not know yet can be created, as RudderStack creates one from the same traits.
 */
function membership(event: SluiceEvent, ctx: DestinationContext, orgName: unknown): Record<string, unknown> {
  const traits = event.context?.traits;
  const user: Record<string, unknown> = { external_id: event.userId };
  if (traits?.name) user.name = traits.name;
  if (traits?.email) user.email = traits.email;
  user.organization = { name: orgName };
  if (configOf(ctx, ZendeskConfig).createUsersAsVerified) user.verified = true;
  return { user };
}

function group(event: SluiceEvent, ctx: DestinationContext, api: Api) {
  const withoutUser = !!configOf(ctx, ZendeskConfig).sendGroupCallsWithoutUserId && !event.userId;
  if (!withoutUser) requireUserId(event);
  if (event.traits === undefined || event.traits === null) throw new TransformError("Organisation Traits are missing. Aborting.");
  const payload = organizationPayload(event);
  const requests = [post(api, "organizations/create_or_update.json", payload)];
  const orgName = (payload.organization as Record<string, unknown>).name;
  // Zendesk names organizations uniquely, so the name is what a user can be attached by.
  if (!withoutUser && orgName !== undefined) requests.push(post(api, "users/create_or_update.json", membership(event, ctx, orgName)));
  return requests;
}

export const zendesk: DestinationDefinition = {
  name: "ZENDESK",
  displayName: "Zendesk",
  config: {
    defaultConfig: configKeys(ZendeskConfig, ["connectionMode", "consentManagement", "oneTrustCookieCategories", "ketchConsentPurposes"]),
    supportedMessageTypes: ["identify", "track", "group"],
    requiredKeys: requiredKeysOf(ZendeskConfig),
    hostKeys: ["domain"],
  },
  configSchema: ZendeskConfig,
  transform(event, ctx) {
    const api = apiOf(ctx);
    switch (event.type) {
      case "identify":
        return identify(event, ctx, api);
      case "track":
        return track(event, ctx, api);
      case "group":
        return group(event, ctx, api);
      default:
        throw new TransformError(`Event type ${event.type} is not supported`);
    }
  },
  /**
   * RudderStack has no deletion for Zendesk; Zendesk's bulk delete takes external ids, which
   * is what identify sets to the userId. Zendesk soft-deletes these users (see zendesk/README.md).
   */
  deleteUsers(users, ctx) {
    const api = apiOf(ctx);
    const ids = users.map((u) => u.userId).filter((id) => !!id);
    return chunkItems(ids, DELETE_CHUNK).map((chunk) =>
      restRequest({ method: "DELETE", endpoint: `${api.base}users/destroy_many.json`, headers: api.headers, params: { external_ids: chunk.join(",") } }),
    );
  },
};
