/**
 * ITERABLE batching, with RudderStack's router limits: consecutive users/update requests go as
 * users/bulkUpdate (1,000 users and 4,000,000 bytes of users a call), events/track as
 * events/trackBulk (8,000 events), and rows of one catalog as one bulk item upsert (1,000 rows).
 */
import { batchConsecutive, jsonBytes } from "../shared";
import type { DestinationContext, DestinationRequest } from "../types";
import { restRequest } from "../types";

type Obj = Record<string, any>;

const MAX_USERS = 1000;
const MAX_USER_BYTES = 4_000_000;
const MAX_EVENTS = 8000;
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

/** RudderStack's size split: a user whose size takes the running total past the limit starts the next call. */
function splitBySize(users: Obj[]): Obj[][] {
  const out: Obj[][] = [];
  let cur: Obj[] = [];
  let size = 0;
  for (const user of users) {
    const bytes = jsonBytes(user);
    size += bytes;
    if (size > MAX_USER_BYTES && cur.length > 0) {
      out.push(cur);
      cur = [];
      size = bytes;
    }
    cur.push(user);
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/**
 * RudderStack sends an identify's token registration after the bulk update holding its user, so a
 * run of user updates is not broken by them: registrations move to the end of the run, unless a
 * later update is for the same user (that user's own order is kept).
 */
function deferTokenRegistrations(requests: DestinationRequest[]): DestinationRequest[] {
  const out: DestinationRequest[] = [];
  let deferred: DestinationRequest[] = [];
  let inUsersRun = false;
  const flush = () => {
    out.push(...deferred);
    deferred = [];
  };
  for (const r of requests) {
    const kind = kindOf(r);
    if (kind === "users") {
      if (r.userKey !== undefined && deferred.some((d) => d.userKey === r.userKey)) flush();
      out.push(r);
      inUsersRun = true;
    } else if (kind === "token" && inUsersRun) {
      deferred.push(r);
    } else {
      flush();
      inUsersRun = false;
      out.push(r);
    }
  }
  flush();
  return out;
}

export function batchIterable(requests: DestinationRequest[], _ctx: DestinationContext): DestinationRequest[] {
  return batchConsecutive(
    deferTokenRegistrations(requests),
    (r) => {
      const kind = kindOf(r);
      return kind && kind !== "token" ? JSON.stringify([kind, r.endpoint, r.headers]) : null;
    },
    (run) => {
      const { endpoint, headers } = run[0]!;
      const bodies = run.map((r) => r.body.JSON);
      switch (kindOf(run[0]!)) {
        case "users":
          return chunk(bodies, MAX_USERS)
            .flatMap(splitBySize)
            .map((users) => restRequest({ endpoint: endpoint.replace(/\/users\/update$/, "/users/bulkUpdate"), headers, json: { users } }));
        case "events":
          return chunk(bodies, MAX_EVENTS).map((events) => restRequest({ endpoint: endpoint.replace(/\/events\/track$/, "/events/trackBulk"), headers, json: { events } }));
        default:
          // Later rows for the same item replace earlier ones, as in RudderStack's merged documents.
          return chunk(bodies, MAX_CATALOG_ROWS).map((rows) =>
            restRequest({
              endpoint,
              headers,
              json: { documents: Object.fromEntries(rows.flatMap((row) => Object.entries(row.documents as Obj))), replaceUploadedFieldsOnly: true },
            }),
          );
      }
    },
  );
}
