/**
 * ITERABLE batching, grouped as RudderStack's router groups a batch: every users/update of the
 * batch goes into users/bulkUpdate calls (1,000 users a chunk, split again at 4,000,000 bytes of
 * users), each call followed by the token registrations of the identifies it carries; then each
 * catalog's rows as one bulk item upsert (1,000 rows); then every events/track as
 * events/trackBulk (1,000 events a chunk, split again at 4,000,000 bytes); then every other
 * request (commerce, updateEmail) unchanged, in the batch's order.
 *
 * Why a user's order may change, and why that is safe: a user whose identify lies between two of
 * their tracks has the identify sent first and both tracks together after it. Iterable keeps the
 * two apart: a profile update writes the user's fields, an event is appended to the user's event
 * history, and neither write reads the other, so their order changes nothing Iterable stores.
 * Updates going first only means a user an identify creates exists before their events arrive.
 * Within one kind each user's order is kept: a bulk body lists its items in the batch's order, and
 * the unbatched calls (cart, purchase, updateEmail) keep theirs. An alias's updateEmail changes the
 * key the other calls find a user by and is not independent of them; it is sent last, as
 * RudderStack sends it. The pipeline hands batch() a user's queued events together (as
 * RudderStack's router hands its transformer a user's jobs), so the grouping is RudderStack's.
 */
import { jsonBytes } from "../shared";
import type { DestinationContext, DestinationRequest } from "../types";
import { restRequest } from "../types";

type Obj = Record<string, any>;

const CHUNK = 1000;
const MAX_BYTES = 4_000_000;
const MAX_CATALOG_ROWS = 1000;

type Kind = "users" | "events" | "catalog" | "token";

function kindOf(r: DestinationRequest): Kind | null {
  if (r.endpoint.endsWith("/users/update")) return "users";
  if (r.endpoint.endsWith("/events/track")) return "events";
  if (/\/catalogs\/[^/]+\/items$/.test(r.endpoint)) return "catalog";
  if (r.endpoint.endsWith("/users/registerDeviceToken") || r.endpoint.endsWith("/users/registerBrowserToken")) return "token";
  return null;
}

function chunk<T>(list: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}

/** RudderStack's size split: an item whose size takes the running total past the limit starts the next call. */
function splitBySize<T>(items: T[], bodyOf: (item: T) => unknown): T[][] {
  const out: T[][] = [];
  let cur: T[] = [];
  let size = 0;
  for (const item of items) {
    const bytes = jsonBytes(bodyOf(item));
    size += bytes;
    if (size > MAX_BYTES && cur.length > 0) {
      out.push(cur);
      cur = [];
      size = bytes;
    }
    cur.push(item);
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/** A user update and the token registrations its identify made (sent after the bulk call carrying it). */
type UserItem = { body: Obj; tokens: DestinationRequest[] };

/** Requests of one endpoint and api key: the unit one bulk call is made of. */
type Group<T> = { endpoint: string; headers: Record<string, string>; items: T[] };

function groupFor<T>(groups: Map<string, Group<T>>, r: DestinationRequest): Group<T> {
  const key = JSON.stringify([r.endpoint, r.headers]);
  let group = groups.get(key);
  if (!group) groups.set(key, (group = { endpoint: r.endpoint, headers: r.headers, items: [] }));
  return group;
}

export function batchIterable(requests: DestinationRequest[], _ctx: DestinationContext): DestinationRequest[] {
  const users = new Map<string, Group<UserItem>>();
  const catalogs = new Map<string, Group<Obj>>();
  const events = new Map<string, Group<Obj>>();
  const others: DestinationRequest[] = [];
  // An identify's registration comes right after its users/update in the transform's output;
  // RudderStack pairs them by job, which is the same pairing.
  let lastUser: UserItem | undefined;
  for (const r of requests) {
    const kind = kindOf(r);
    if (kind !== "token") lastUser = undefined;
    switch (kind) {
      case "users":
        lastUser = { body: r.body.JSON, tokens: [] };
        groupFor(users, r).items.push(lastUser);
        break;
      case "token":
        if (lastUser) lastUser.tokens.push(r);
        else others.push(r);
        break;
      case "catalog":
        groupFor(catalogs, r).items.push(r.body.JSON);
        break;
      case "events":
        groupFor(events, r).items.push(r.body.JSON);
        break;
      default:
        others.push(r);
    }
  }

  const out: DestinationRequest[] = [];
  for (const { endpoint, headers, items } of users.values()) {
    for (const part of chunk(items, CHUNK).flatMap((c) => splitBySize(c, (u) => u.body))) {
      out.push(restRequest({ endpoint: endpoint.replace(/\/users\/update$/, "/users/bulkUpdate"), headers, json: { users: part.map((u) => u.body) } }));
      out.push(...part.flatMap((u) => u.tokens));
    }
  }
  // One call per catalog: RudderStack puts every catalog row of a batch in one call to the first
  // row's catalog, which would write another catalog's rows into it.
  for (const { endpoint, headers, items } of catalogs.values()) {
    for (const rows of chunk(items, MAX_CATALOG_ROWS)) {
      // Later rows for the same item replace earlier ones, as in RudderStack's merged documents.
      const documents = Object.fromEntries(rows.flatMap((row) => Object.entries(row.documents as Obj)));
      out.push(restRequest({ endpoint, headers, json: { documents, replaceUploadedFieldsOnly: true } }));
    }
  }
  for (const { endpoint, headers, items } of events.values()) {
    for (const part of chunk(items, CHUNK).flatMap((c) => splitBySize(c, (e) => e))) {
      out.push(restRequest({ endpoint: endpoint.replace(/\/events\/track$/, "/events/trackBulk"), headers, json: { events: part } }));
    }
  }
  out.push(...others);
  return out;
}
