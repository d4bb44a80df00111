/**
 * SENDGRID's batching, as RudderStack's router does it: the transform gives an identify as
 * RudderStack's processor does, `{contactDetails, contactListIds}`, and only here does it become
 * SendGrid's upsert. Of a list of requests, the mail sends go first, in order; then the contacts,
 * grouped by their list combination (in the order of the keys of a plain object, as lodash's
 * groupBy leaves them: combinations that read as array indexes first, in numeric order, then the
 * others as first seen), 30,000 to a `PUT /v3/marketing/contacts` with `list_ids` (none for an
 * empty combination).
 *
 * One difference keeps each user's events in order: where that grouping would send a user's
 * request ahead of an earlier one of the same user (a mail after a contact upsert of that
 * user, or two upserts in groups that go out the other way round), the list is cut before that
 * request and each part is grouped on its own. Every user has one event in each list the
 * pipeline hands in, so there the result is RudderStack's.
 */
import { type DestinationRequest, restRequest } from "../types";

type Obj = Record<string, any>;

// SendGrid's contacts upsert takes at most 30,000 contacts per call.
const MAX_CONTACTS = 30_000;

/** An identify as the transform leaves it: the contact and its list combination, not yet SendGrid's body. */
export function isContactDetails(r: DestinationRequest): boolean {
  return Object.hasOwn(r.body.JSON, "contactDetails");
}

/** The grouping key of a contact: its list combination as text, as an object key takes it. */
const combinationOf = (r: DestinationRequest) => String(r.body.JSON.contactListIds);

/** A key a plain object puts first, in numeric order: an array index. */
const isIndexKey = (k: string) => /^(0|[1-9]\d*)$/.test(k) && Number(k) < 2 ** 32 - 1;

/** Whether combination `a` goes out before `b`, given the order in which the list's combinations were first seen. */
function goesBefore(a: string, b: string, seen: Map<string, number>): boolean {
  if (isIndexKey(a) !== isIndexKey(b)) return isIndexKey(a);
  if (isIndexKey(a)) return Number(a) < Number(b);
  // A combination not seen yet is added after every one that was.
  return (seen.get(a) ?? Infinity) < (seen.get(b) ?? Infinity);
}

/** RudderStack's router output for one part of the list. */
function route(part: DestinationRequest[]): DestinationRequest[] {
  const out = part.filter((r) => !isContactDetails(r));
  const groups: Record<string, DestinationRequest[]> = Object.create(null);
  for (const r of part) if (isContactDetails(r)) (groups[combinationOf(r)] ??= []).push(r);
  for (const combination of Object.keys(groups)) {
    const group = groups[combination]!;
    for (let i = 0; i < group.length; i += MAX_CONTACTS) {
      const chunk = group.slice(i, i + MAX_CONTACTS);
      const contacts = chunk.map((r) => r.body.JSON.contactDetails);
      const json: Obj = combination ? { list_ids: combination.split(","), contacts } : { contacts };
      const merged = restRequest({ method: "PUT", endpoint: chunk[0]!.endpoint, headers: chunk[0]!.headers, json });
      const keys = new Set(chunk.map((r) => r.userKey));
      out.push(keys.size === 1 && chunk[0]!.userKey !== undefined ? { ...merged, userKey: chunk[0]!.userKey } : merged);
    }
  }
  return out;
}

/**
 * Where a request goes within its part: a mail in order ahead of every contact; a contact in
 * its combination's group, after the contacts already there.
 */
type Place = { mail: true } | { mail: false; combination: string };

export function batchSendgrid(requests: DestinationRequest[]): DestinationRequest[] {
  const out: DestinationRequest[] = [];
  let part: DestinationRequest[] = [];
  let lastOf = new Map<string, Place>();
  let seen = new Map<string, number>();
  const cut = () => {
    out.push(...route(part));
    part = [];
    lastOf = new Map();
    seen = new Map();
  };
  for (const r of requests) {
    const place: Place = isContactDetails(r) ? { mail: false, combination: combinationOf(r) } : { mail: true };
    const before = r.userKey === undefined ? undefined : lastOf.get(r.userKey);
    // The grouping only ever moves a request ahead of another by these two rules, so comparing
    // with the user's previous request is enough.
    const overtakes =
      before !== undefined &&
      ((place.mail && !before.mail) || (!place.mail && !before.mail && before.combination !== place.combination && goesBefore(place.combination, before.combination, seen)));
    if (overtakes) cut();
    part.push(r);
    if (!place.mail && !seen.has(place.combination)) seen.set(place.combination, seen.size);
    if (r.userKey !== undefined) lastOf.set(r.userKey, place);
  }
  cut();
  return out;
}
