/**
 * The calls ZENDESK makes to Zendesk before it answers, as RudderStack's transformer makes them:
 * custom fields created for new traits, users found by e-mail (or created), the organization
 * upserted for its id, memberships and identities listed. A call whose answer the requests need
 * is made here; a write RudderStack makes and then also returns (identity and membership
 * changes) is returned only, for delivery to make once.
 */
import { withoutUndefined } from "../shared";
import { type DestinationContext, type LookupAnswer, type LookupClient, RetryableTransformError, TransformError, lookupOf } from "../types";

type Obj = Record<string, any>;

export interface Api {
  /** `https://<domain>.zendesk.com/api/v2/` (or the override), ending in a slash. */
  base: string;
  /** Auth and content type, what RudderStack sends on its own calls. */
  headers: Record<string, string>;
  /** The headers of the returned requests: those plus the marketplace headers. */
  requestHeaders: Record<string, string>;
  lookup: LookupClient;
}

export function lookupApi(ctx: DestinationContext, base: string, headers: Record<string, string>, requestHeaders: Record<string, string>): Api {
  // Taken when first used, so that an event refused before any call needs no client.
  return { base, headers, requestHeaders, lookup: (req) => lookupOf(ctx)(req) };
}

const ok = (a: LookupAnswer) => a.status >= 200 && a.status < 300;
/** A field of an answer's JSON body; a text body has none, as RudderStack reads it. */
const bodyOf = (a: LookupAnswer): Obj => (a.body && typeof a.body === "object" ? a.body : {});

function get(api: Api, path: string, params?: Record<string, unknown>) {
  return api.lookup({ method: "GET", endpoint: `${api.base}${path}`, headers: api.headers, params });
}

function post(api: Api, path: string, json: Obj) {
  return api.lookup({ method: "POST", endpoint: `${api.base}${path}`, headers: api.headers, json });
}

/** Keys Zendesk has a field of its own for: never created as custom fields. */
const OWN_KEYS: Record<"user_fields" | "organization_fields", string[]> = {
  user_fields: ["email", "name", "organizationId", "timezone", "phone", "userId", "id"],
  organization_fields: ["name", "domainNames", "tags", "groupId", "url", "deleted"],
};

/**
 * Creates a custom field for each scalar trait Zendesk does not have one for yet, so that the
 * upsert's `user_fields` / `organization_fields` are kept. RudderStack goes on when the list
 * cannot be read or a field is refused: the upsert then just drops that value.
 */
export async function ensureCustomFields(api: Api, traits: Obj | undefined, kind: "user_fields" | "organization_fields"): Promise<void> {
  const list = await get(api, `${kind}.json`);
  if (!ok(list)) return;
  const fields = bodyOf(list)[kind];
  // Zendesk has been seen answering a string here; RudderStack then creates nothing.
  if (!Array.isArray(fields) || !traits || typeof traits !== "object") return;
  const known = new Set([...fields.map((f: Obj) => f?.key), ...OWN_KEYS[kind]]);
  const missing = Object.keys(traits).filter((k) => !known.has(k) && typeof traits[k] !== "object");
  const singular = kind.slice(0, -1);
  await Promise.all(missing.map((key) => post(api, `${kind}.json`, { [singular]: { title: key, active: true, key, description: key } })));
}

/** The Zendesk user id of the first user the e-mail search finds; none when the search fails or finds none. */
export async function findUserId(api: Api, traits: Obj | undefined): Promise<unknown> {
  const email = traits?.email || traits?.primaryEmail;
  if (!email) return undefined;
  const found = await get(api, "users/search.json", { query: email });
  if (!ok(found)) return undefined;
  const body = bodyOf(found);
  if (body.count === 0) return undefined;
  return body.users?.[0]?.id;
}

/**
 * Creates (or updates) the user from its name, e-mail and the event's user id, for a track or
 * group whose user Zendesk does not know yet. Throws RudderStack's "Couldn't find user: <name>"
 * when Zendesk answers without a user.
 */
export async function createUser(api: Api, traits: Obj | undefined, externalId: unknown, verified: boolean): Promise<{ id: unknown; email: unknown }> {
  const name = traits?.name;
  const user: Obj = { name, external_id: externalId, email: traits?.email };
  if (verified) user.verified = true;
  const created = await post(api, "users/create_or_update.json", { user: withoutUndefined(user) });
  const id = bodyOf(created).user?.id;
  if (!ok(created) || !id) throw new TransformError(`Couldn't find user: ${name}`);
  return { id, email: bodyOf(created).user?.email };
}

/** Upserts the user for its Zendesk id (identify's e-mail update needs it); undefined when Zendesk names none. */
export async function upsertUser(api: Api, payload: Obj): Promise<unknown> {
  const res = await post(api, "users/create_or_update.json", payload);
  if (!ok(res)) throw new TransformError("[Zendesk]: unable to create or update user");
  return bodyOf(res).user?.id;
}

/**
 * The identities to change so that `email` is the user's primary e-mail: the same address held
 * as a secondary identity (deleted), and the primary e-mail identity holding another address
 * (given the new one). None when the list cannot be read for any reason, as RudderStack then skips
the update.
 */
export async function emailIdentityChanges(api: Api, userId: unknown, email: unknown): Promise<{ duplicate?: unknown; primary?: unknown }> {
  let res: LookupAnswer;
  try {
    res = await get(api, `users/${userId}/identities`);
  } catch (err) {
    // Not answered, or answered 5xx/429: RudderStack skips the update then too; the user is still sent.
    if (err instanceof RetryableTransformError) return {};
    throw err;
  }
  if (!ok(res)) return {};
  const identities = bodyOf(res).identities;
  if (!Array.isArray(identities)) return {};
  const duplicate = identities.find((i: Obj) => i?.type === "email" && i.value === email && i.primary !== true);
  const primary = identities.find((i: Obj) => i?.type === "email" && i.value !== email && i.primary === true);
  return { duplicate: duplicate?.id, primary: primary?.id };
}

/**
 * The user's first organization membership (Zendesk lists memberships oldest first); none when
 * the list cannot be read. `doubledSlash` spells the URL as RudderStack's group check does
 * (`api/v2//users/…`), so that the check gets the answer RudderStack's gets.
 */
export async function firstMembership(api: Api, userId: unknown, doubledSlash = false): Promise<Obj | undefined> {
  const res = await get(api, `${doubledSlash ? "/" : ""}users/${userId}/organization_memberships.json`);
  if (!ok(res)) return undefined;
  const list = bodyOf(res).organization_memberships;
  return Array.isArray(list) && list.length > 0 ? list[0] : undefined;
}

/** Upserts the organization for its id; undefined when Zendesk does not answer one. */
export async function upsertOrganization(api: Api, payload: Obj): Promise<unknown> {
  const res = await post(api, "organizations/create_or_update.json", payload);
  if (!ok(res) || !bodyOf(res).organization) return undefined;
  return bodyOf(res).organization.id;
}
