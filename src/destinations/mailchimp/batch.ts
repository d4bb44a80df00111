/**
 * MAILCHIMP's batching, as RudderStack's router does it: member upserts (the transform's `PUT
 * …/members/{hash}`) are grouped by list into `POST /3.0/lists/{list}` batch subscribes of at
 * most 500 members with `update_existing: true`; member events go one by one after them.
 * Lists go in the order of a plain object's keys, as lodash's groupBy leaves them (lists that
 * read as array indexes first, in numeric order, then the others as first seen).
 *
 * Where that grouping would send a user's request ahead of an earlier one of the same user (an
 * upsert after that user's event, or two upserts in lists sent the other way round), the list
 * of requests is cut there and each part is grouped on its own. The pipeline hands batch() one
 * event per user, so there the result is RudderStack's.
 */
import { endpointFor } from "../base-url";
import { type DestinationContext, type DestinationRequest, restRequest } from "../types";

// Mailchimp's batch subscribe takes at most 500 members per call.
const MAX_MEMBERS = 500;

/** A member upsert as the transform gives it, with the list it goes to (RudderStack's `audienceId`). */
export type MemberRequest = DestinationRequest & { audienceId?: string };

export const isEventRequest = (r: DestinationRequest) => r.endpoint.endsWith("/events");

/** The list of an upsert: the key the transform set, else read back from its path. */
function listOf(r: MemberRequest): string {
  if (typeof r.audienceId === "string") return r.audienceId;
  return /\/lists\/([^/]+)\/members\//.exec(r.endpoint)?.[1] ?? "";
}

const isIndexKey = (k: string) => /^(0|[1-9]\d*)$/.test(k) && Number(k) < 2 ** 32 - 1;

function goesBefore(a: string, b: string, seen: Map<string, number>): boolean {
  if (isIndexKey(a) !== isIndexKey(b)) return isIndexKey(a);
  if (isIndexKey(a)) return Number(a) < Number(b);
  return (seen.get(a) ?? Infinity) < (seen.get(b) ?? Infinity);
}

export interface BatchTarget {
  /** The batch subscribe URL of a list (the config's datacenter and merge-field setting). */
  url(list: string): string;
  headers: Record<string, string>;
}

function route(part: MemberRequest[], target: BatchTarget, ctx: DestinationContext): DestinationRequest[] {
  const groups: Record<string, MemberRequest[]> = Object.create(null);
  for (const r of part) if (!isEventRequest(r)) (groups[listOf(r)] ??= []).push(r);
  const out: DestinationRequest[] = [];
  for (const list of Object.keys(groups)) {
    const group = groups[list]!;
    for (let i = 0; i < group.length; i += MAX_MEMBERS) {
      const chunk = group.slice(i, i + MAX_MEMBERS);
      const merged = restRequest({
        method: "POST",
        endpoint: endpointFor(ctx, target.url(list)),
        headers: target.headers,
        json: { members: chunk.map((r) => r.body.JSON), update_existing: true },
      });
      const users = new Set(chunk.map((r) => r.userKey));
      out.push(users.size === 1 && chunk[0]!.userKey !== undefined ? { ...merged, userKey: chunk[0]!.userKey } : merged);
    }
  }
  for (const r of part) if (isEventRequest(r)) out.push(r);
  return out;
}

type Place = { event: true } | { event: false; list: string };

export function batchMailchimp(requests: MemberRequest[], target: BatchTarget, ctx: DestinationContext): DestinationRequest[] {
  const out: DestinationRequest[] = [];
  let part: MemberRequest[] = [];
  let lastOf = new Map<string, Place>();
  let seen = new Map<string, number>();
  const cut = () => {
    out.push(...route(part, target, ctx));
    part = [];
    lastOf = new Map();
    seen = new Map();
  };
  for (const r of requests) {
    const place: Place = isEventRequest(r) ? { event: true } : { event: false, list: listOf(r) };
    const before = r.userKey === undefined ? undefined : lastOf.get(r.userKey);
    // Upserts go ahead of every event, and lists in their key order: only these move a request forward.
    const overtakes =
      before !== undefined &&
      ((!place.event && before.event) || (!place.event && !before.event && before.list !== place.list && goesBefore(place.list, before.list, seen)));
    if (overtakes) cut();
    part.push(r);
    if (!place.event && !seen.has(place.list)) seen.set(place.list, seen.size);
    if (r.userKey !== undefined) lastOf.set(r.userKey, place);
  }
  cut();
  return out;
}
