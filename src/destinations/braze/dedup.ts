/**
 * BRAZE `supportDedup`: RudderStack's deduplication of user attributes, which Braze bills per
 * data point. RudderStack's router asks Braze what it holds of a batch's users
 * (`POST /users/export/ids`, lookups.ts) and keeps, per user, what Braze holds and what the batch
 * has sent since; an attributes object then carries only the attributes that differ, and one with
 * nothing left is not sent. Here the transform makes the lookup and reduces each event's
 * attributes against Braze's answer (reduceAttributes); batch() then reduces a user's later
 * attributes in the same batch against what the earlier ones sent (dedupBatch).
 */
import { isPlainObject } from "../shared";
import type { BatchRefusal, DestinationRequest } from "../types";

type Obj = Record<string, any>;

/** Keys that name the user, never compared. */
const IDENTIFIERS = new Set(["external_id", "user_alias", "appboy_id", "braze_id", "custom_events"]);
/** Attributes Braze does not bill: always sent again, as RudderStack does. */
const NON_BILLABLE = ["country", "language", "email_subscribe", "push_subscribe", "subscription_groups"];
/** Nested array operations change an attribute relative to its value, so they are not compared; RudderStack leaves them out of a deduplicated object. */
const OPERATIONS = ["$add", "$update", "$remove"];

export const DUPLICATE_USER = "[Braze Deduplication]: Duplicate user detected, the user is dropped";

/** Braze's users by the identifier an attributes object names them with (RudderStack's user store). */
export type UserStore = Map<unknown, Obj>;

/**
 * The users an export answered, as RudderStack files them: by external id, else (a user Braze
 * knows by aliases only) by the name of each of its rudder_id aliases.
 */
export function userStoreOf(users: unknown): UserStore {
  const store: UserStore = new Map();
  if (!Array.isArray(users)) return store;
  for (const user of users) {
    if (!isPlainObject(user)) continue;
    if (user.external_id) store.set(user.external_id, user);
    else if (Array.isArray(user.user_aliases)) {
      for (const alias of user.user_aliases) if (alias?.alias_label === "rudder_id") store.set(alias.alias_name, user);
    }
  }
  return store;
}

const aliasNameOf = (attributes: Obj): unknown => (isPlainObject(attributes.user_alias) ? attributes.user_alias.alias_name : undefined);

/** What the store holds of the user an attributes object names: by its external id, else by its alias name. */
export function knownUser(store: UserStore | undefined, attributes: Obj): Obj | undefined {
  if (!store) return undefined;
  return store.get(attributes.external_id) ?? store.get(aliasNameOf(attributes));
}

/** An attributes object with nothing but the user's identifiers (nothing to update). */
export function onlyIdentifiers(attributes: Obj): boolean {
  return Object.keys(attributes).every((k) => k === "external_id" || k === "user_alias");
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Number.isNaN(a) && Number.isNaN(b)) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => sameValue(v, b[i]));
  }
  if (!isPlainObject(a) || !isPlainObject(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && sameValue(a[k], b[k]));
}

/** A user as Braze's export gives it, with its custom attributes read as top-level ones. */
function flattened(user: Obj): Obj {
  const state: Obj = { ...user, ...(isPlainObject(user.custom_attributes) ? user.custom_attributes : {}) };
  delete state.custom_attributes;
  return state;
}

/**
 * What of `attributes` differs from what is `known` of the user: changed values, a null only
 * where a value is known, and the non-billable attributes. Null when nothing is left; otherwise
 * with the identifiers.
 */
function changedAttributes(attributes: Obj, known: Obj): Obj | null {
  const stored = flattened(known);
  const out: Obj = {};
  for (const [key, value] of Object.entries(attributes)) {
    if (IDENTIFIERS.has(key) || NON_BILLABLE.includes(key)) continue;
    if (isPlainObject(value) && OPERATIONS.some((op) => Object.hasOwn(value, op))) continue;
    // Braze unsets an attribute sent as null: worth sending only where it holds a value.
    if (value === null ? stored[key] !== undefined && stored[key] !== null : !sameValue(value, stored[key])) out[key] = value;
  }
  for (const key of NON_BILLABLE) if (attributes[key] !== undefined) out[key] = attributes[key];
  if (Object.keys(out).length === 0) return null;
  const changed = { ...out, external_id: attributes.external_id, user_alias: attributes.user_alias };
  return Object.fromEntries(Object.entries(changed).filter(([, v]) => v !== undefined));
}

/**
 * One event's attributes as RudderStack's router sends them: whole for a user Braze does not
 * know (`known` undefined: not found, or the lookup failed), else only what differs from Braze's
 * profile. Null when nothing would be updated (RudderStack then drops a track's attributes and
 * refuses an identify).
 */
export function reduceAttributes(attributes: Obj, known: Obj | undefined): Obj | null {
  const kept = known ? changedAttributes(attributes, known) : attributes;
  return kept && !onlyIdentifiers(kept) ? kept : null;
}

/** What the transform reduced a /users/track body's attributes from: the event's whole attributes and Braze's profile of the user. */
interface Origin {
  whole: Obj;
  known: Obj | undefined;
}
/**
 * Keyed by the body object, which batch() receives as the transform made it (the pipeline copies
 * requests shallowly); a body without one (not deduplicated: supportDedup off, a group's
 * attribute) is left as it is.
 */
const ORIGINS = new WeakMap<object, Origin>();

/** Notes what a deduplicated body's attributes were reduced from, for batch(). */
export function rememberOrigin(body: Obj, whole: Obj, known: Obj | undefined): void {
  ORIGINS.set(body, { whole, known });
}

const isTrack = (r: DestinationRequest) => r.endpoint.endsWith("/users/track");

/**
 * A user's second and later attributes in one batch, reduced as RudderStack's router reduces
 * them: against what Braze held (the transform's lookup) and what the batch's earlier objects
 * for the user sent. The first one of each user stays as the transform reduced it. An object with
 * nothing left is dropped; a request left with nothing to send (an identify's: a track keeps its
 * event) is not sent and refused, so its event fails as RudderStack's router fails it. A user
 * named only by an alias Braze did not know is not remembered (RudderStack files it under the
 * alias object, where it is never found again).
 */
export function dedupBatch(requests: DestinationRequest[], refuse?: BatchRefusal): DestinationRequest[] {
  const memory: UserStore = new Map();
  const out: DestinationRequest[] = [];
  for (const r of requests) {
    const body = r.body.JSON as Obj;
    const origin = isTrack(r) ? ORIGINS.get(body) : undefined;
    if (!origin) {
      out.push(r);
      continue;
    }
    const { whole, known } = origin;
    const key = whole.external_id || aliasNameOf(whole);
    const earlier = knownUser(memory, whole);
    if (!earlier) {
      const sent = Array.isArray(body.attributes) ? body.attributes[0] : undefined;
      if (known) memory.set(key, { ...flattened(known), ...sent });
      else if (whole.external_id) memory.set(whole.external_id, whole);
      out.push(r);
      continue;
    }
    const kept = changedAttributes(whole, earlier);
    if (kept) memory.set(key, { ...flattened(earlier), ...kept });
    const { attributes: _reduced, ...rest } = body;
    const json = kept && !onlyIdentifiers(kept) ? { ...rest, attributes: [kept] } : rest;
    if (!json.attributes && !json.events && !json.purchases) {
      refuse?.(r, DUPLICATE_USER);
      continue;
    }
    out.push({ ...r, body: { ...r.body, JSON: json } });
  }
  return out;
}
