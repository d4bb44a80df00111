/**
 * ZENDESK: identify upserts a Zendesk user (`users/create_or_update.json`), track records an
 * event on the user found (or created) by e-mail (`users/{id}/events`), group upserts the
 * organization and adds the user to it (`organization_memberships.json`). Auth is Zendesk's
 * API-token Basic auth (`email/token:apiToken`), with the marketplace headers RudderStack's app
 * sends.
 *
 * As RudderStack's, the transform asks Zendesk first (lookups.ts): custom fields for new
 * traits, the user's and the organization's ids, identities and memberships.
 */
import { type Static, t } from "elysia";
import { endpointFor } from "../base-url";
import { basicAuth, chunkItems, genericUserId, traitsOf, withoutUndefined } from "../shared";
import {
  type DestinationContext,
  type DestinationDefinition,
  type DestinationRequest,
  type SluiceEvent,
  TransformError,
  configKeys,
  configOf,
  requireConfig,
  requiredKeysOf,
  restRequest,
} from "../types";
import { type Api, createUser, emailIdentityChanges, ensureCustomFields, findUserId, firstMembership, lookupApi, upsertOrganization, upsertUser } from "./lookups";
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

function baseOf(ctx: DestinationContext): { base: string; headers: Record<string, string> } {
  const email = String(requireConfig(ctx, "email"));
  const apiToken = String(requireConfig(ctx, "apiToken"));
  const domain = String(requireConfig(ctx, "domain"));
  return {
    base: endpointFor(ctx, `https://${domain}.zendesk.com/api/v2/`),
    headers: { Authorization: basicAuth(`${email}/token`, apiToken), "Content-Type": "application/json" },
  };
}

function apiOf(ctx: DestinationContext): Api {
  const { base, headers } = baseOf(ctx);
  return lookupApi(ctx, base, headers, { ...headers, ...MARKETPLACE_HEADERS });
}

function request(api: Api, method: DestinationRequest["method"], path: string, json?: Record<string, unknown>) {
  return restRequest({ method, endpoint: `${api.base}${path}`, headers: api.requestHeaders, json });
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

/**
 * The user upsert, preceded by what RudderStack also changes: with searchByExternalId, the
 * e-mail identities that make the traits' e-mail the primary one (which needs the user's id,
 * so the upsert is made once here to learn it); with removeUsersFromOrganization and
 * `traits.company: {id, remove: true}`, the user's membership of that organization.
 */
async function identify(event: SluiceEvent, ctx: DestinationContext, api: Api) {
  requireUserId(event);
  const config = configOf(ctx, ZendeskConfig);
  const traits = traitsOf(event);
  const payload = userPayload(traits, event.userId, !!config.createUsersAsVerified);
  await ensureCustomFields(api, traits, "user_fields");
  const requests: DestinationRequest[] = [];

  const email = traits?.email;
  if (config.searchByExternalId && email) {
    const userId = await upsertUser(api, payload);
    if (userId) {
      const change = await emailIdentityChanges(api, userId, email);
      if (change.duplicate) requests.push(request(api, "DELETE", `users/${userId}/identities/${change.duplicate}`));
      if (change.primary) {
        const identity = { type: "email", value: `${email}`, verified: !!config.createUsersAsVerified };
        requests.push(request(api, "PUT", `users/${userId}/identities/${change.primary}`, { identity }));
      }
    }
  }

  const company = traits?.company;
  if (company?.remove && config.removeUsersFromOrganization && company.id) {
    const userId = await findUserId(api, traits);
    if (userId) {
      const membership = await firstMembership(api, userId);
      // RudderStack compares as they are, so an id sent as text never matches Zendesk's number.
      if (membership && membership.organization_id === company.id) {
        requests.push(request(api, "DELETE", `users/${userId}/organization_memberships/${membership.id}.json`));
      }
    }
  }

  requests.push(request(api, "POST", "users/create_or_update.json", payload));
  return requests;
}

/** The user is found by the traits' e-mail, or created from its name and e-mail, then the event goes to its profile. */
async function track(event: SluiceEvent, ctx: DestinationContext, api: Api) {
  requireUserId(event);
  const traits = traitsOf(event);
  let email = traits?.email;
  if (!email) throw new TransformError("email not found in traits.");
  const config = configOf(ctx, ZendeskConfig);
  const source = sourceNameOf(config);
  const found = await api.lookup({ method: "GET", endpoint: `${api.base}users/search.json`, headers: api.headers, params: { query: email } });
  const body = found.body && typeof found.body === "object" ? found.body : {};
  if (found.status < 200 || found.status >= 300) throw new TransformError(`Failed to fetch user with email: ${email} due to ${body.error}`);
  let userId = body.users?.[0]?.id;
  if (!userId || body.count === 0) {
    let created;
    try {
      created = await createUser(api, traits, genericUserId(event), !!config.createUsersAsVerified);
    } catch (err) {
      if (err instanceof TransformError) throw new TransformError(`Failed to fetch user with email: ${email} due to ${err.message}`);
      throw err;
    }
    if (!created.email) throw new TransformError(`Failed to fetch user with email: ${email} due to User email not found`);
    userId = created.id;
    // Zendesk may have matched another user by external id: its e-mail is the one to name.
    email = created.email;
  }
  const json = {
    event: withoutUndefined({ description: event.event, type: event.event, source, properties: event.properties }),
    profile: withoutUndefined({ type: event.event, source, identifiers: [{ type: "email", value: email }] }),
  };
  return [request(api, "POST", `users/${userId}/events`, json)];
}

/**
 * The organization is upserted (for its id) and the user found by e-mail, or created from the
 * context traits' name and e-mail, then made a member. Without a userId and with
 * sendGroupCallsWithoutUserId, only the organization upsert is sent.
 */
async function group(event: SluiceEvent, ctx: DestinationContext, api: Api) {
  const config = configOf(ctx, ZendeskConfig);
  const withoutUser = !!config.sendGroupCallsWithoutUserId && !event.userId;
  if (!withoutUser) requireUserId(event);
  if (event.traits === undefined || event.traits === null) throw new TransformError("Organisation Traits are missing. Aborting.");
  await ensureCustomFields(api, event.traits, "organization_fields");
  const payload = organizationPayload(event);
  if (withoutUser) return [request(api, "POST", "organizations/create_or_update.json", payload)];

  const orgId = await upsertOrganization(api, payload);
  if (!orgId) {
    throw new TransformError(`Couldn't create user membership for user having external id ${event.userId} as Organization ${event.traits?.name} wasn't created`);
  }
  const traits = event.context?.traits;
  let userId = await findUserId(api, traits);
  if (!userId) {
    if (!(traits?.name && traits.email)) throw new TransformError("User not found");
    userId = (await createUser(api, traits, genericUserId(event), !!config.createUsersAsVerified)).id;
  }
  if ((await firstMembership(api, userId, true))?.organization_id === orgId) throw new TransformError("User is already associated with organization");
  return [request(api, "POST", "organization_memberships.json", { organization_membership: { user_id: userId, organization_id: orgId } })];
}

export const zendesk: DestinationDefinition<Promise<DestinationRequest[]>> = {
  name: "ZENDESK",
  displayName: "Zendesk",
  config: {
    defaultConfig: configKeys(ZendeskConfig, ["connectionMode", "consentManagement", "oneTrustCookieCategories", "ketchConsentPurposes"]),
    supportedMessageTypes: ["identify", "track", "group"],
    requiredKeys: requiredKeysOf(ZendeskConfig),
    hostKeys: ["domain"],
  },
  configSchema: ZendeskConfig,
  async transform(event, ctx) {
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
    const { base, headers } = baseOf(ctx);
    const ids = users.map((u) => u.userId).filter((id) => !!id);
    return chunkItems(ids, DELETE_CHUNK).map((chunk) =>
      restRequest({ method: "DELETE", endpoint: `${base}users/destroy_many.json`, headers: { ...headers, ...MARKETPLACE_HEADERS }, params: { external_ids: chunk.join(",") } }),
    );
  },
};
