/**
 * BRAZE `supportDedup`: RudderStack's deduplication of user attributes, which Braze bills per
 * data point. RudderStack's router first asks Braze for the batch's users (POST
 * `/users/export/ids`, 50 identifiers a call) and keeps, per external id, what Braze holds and
 * what the batch has sent since; an attributes object then carries only the attributes that
 * differ, and one with nothing left is not sent. Sluice makes no such lookup: what it keeps is
 * the batch's own memory, so a user's first attributes in a batch go whole, as RudderStack sends
 * them for a user Braze does not know, and a later one in the same batch only what changed.
 */
import { isPlainObject } from "../shared";
import type { DestinationRequest } from "../types";

type Obj = Record<string, any>;

/** Keys that name the user, never compared. */
const IDENTIFIERS = new Set(["external_id", "user_alias", "appboy_id", "braze_id", "custom_events"]);
/** Attributes Braze does not bill: always sent again, as RudderStack does. */
const NON_BILLABLE = ["country", "language", "email_subscribe", "push_subscribe", "subscription_groups"];
/** Nested array operations change an attribute relative to its value, so they are not compared; RudderStack leaves them out of a deduplicated object. */
const OPERATIONS = ["$add", "$update", "$remove"];

export const DUPLICATE_USER = "[Braze Deduplication]: Duplicate user detected, the user is dropped";

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

/**
 * What of `attributes` differs from what is `known` of the user (Braze's custom attributes read
 * as top-level ones): changed values, a null only where a value is known, and the non-billable
 * attributes. Null when nothing is left; otherwise with the identifiers, and `remember` gets the
 * user's new state.
 */
function changedAttributes(attributes: Obj, known: Obj, remember: (state: Obj) => void): Obj | null {
  const stored: Obj = { ...known, ...(isPlainObject(known.custom_attributes) ? known.custom_attributes : {}) };
  delete stored.custom_attributes;
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
  remember({ ...stored, ...changed });
  return Object.fromEntries(Object.entries(changed).filter(([, v]) => v !== undefined));
}

const isTrack = (r: DestinationRequest) => r.endpoint.endsWith("/users/track");

/**
 * The batch's /users/track requests with each attributes object reduced to what the batch has
 * not already sent for its user (by external id; RudderStack's memory finds an alias-only user
 * only through its lookup). An object with nothing left is dropped, and so is a request left
 * with nothing to send.
 */
export function dedupBatch(requests: DestinationRequest[]): DestinationRequest[] {
  const memory = new Map<unknown, Obj>();
  const out: DestinationRequest[] = [];
  for (const r of requests) {
    const body = r.body.JSON as Obj;
    if (!isTrack(r) || !Array.isArray(body.attributes)) {
      out.push(r);
      continue;
    }
    const attributes: Obj[] = [];
    for (const item of body.attributes) {
      if (!isPlainObject(item)) {
        attributes.push(item);
        continue;
      }
      const id = item.external_id;
      const aliasName = isPlainObject(item.user_alias) ? item.user_alias.alias_name : undefined;
      const known = (id ? memory.get(id) : undefined) ?? (aliasName ? memory.get(aliasName) : undefined);
      let kept: Obj | null = item;
      if (known) kept = changedAttributes(item, known, (state) => memory.set(id || aliasName, state));
      else if (id) memory.set(id, item);
      if (kept && !onlyIdentifiers(kept)) attributes.push(kept);
    }
    const { attributes: _all, ...rest } = body;
    const json = attributes.length > 0 ? { ...rest, attributes } : rest;
    if (!json.attributes && !json.events && !json.purchases) continue;
    out.push({ ...r, body: { ...r.body, JSON: json } });
  }
  return out;
}
