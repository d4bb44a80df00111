/**
 * AM's batching, as RudderStack's router does it: Amplitude limits events per user and device,
 * so each user's events (by `userKey`, the event's userId, else its anonymousId) go in calls of
 * their own. A user with two or more events whose requests are all JSON has them merged into
 * `/batch` calls (the first request's body, `options` included, with every event); a user's lone
 * event, and events with a form call (group's `/groupidentify`, alias's `/usermap`), are sent as
 * transformed.
 *
 * batch() sees requests, not events, so an event's requests are found again by the shapes the
 * transform gives them: a group's `/2/httpapi` call is followed by its `/groupidentify` call, and
 * a revenue event's split-out products follow it with insert_ids `<its insert_id>-1`, `-2`, ….
 * An event's requests are never split between calls.
 *
 * Where RudderStack sends a user's batched events before a form call that came between them,
 * Sluice ends the batch at the form call, so a user's calls keep the order of the events.
 */
import { chunkItems, jsonBytes } from "../shared";
import { type DestinationRequest, restRequest } from "../types";

type Obj = Record<string, any>;

/**
 * RudderStack's most events per user call, under the name of its config module: the comparison
 * with its published cases lowers it as those cases do (scripts/compare-rudderstack/kinds.ts).
 * Read at each batch(), not copied at import.
 */
export const AM_BATCH_LIMITS: { MAX_USERS_DEVICES_PER_BATCH: number } = { MAX_USERS_DEVICES_PER_BATCH: 1000 };
/** The Batch Event Upload API refuses a JSON payload over 20MB. */
const BATCH_MAX_BYTES = 20 * 1024 * 1024;
/** Room for `api_key`, `options` and the object around the events. */
const ENVELOPE_BYTES = 1024;

/** One event's requests, where they stood in batch()'s input, and whether they can join a /batch call. */
interface EventRequests {
  at: number;
  requests: DestinationRequest[];
  batchable: boolean;
}

interface Call {
  at: number;
  requests: DestinationRequest[];
}

const isHttpApi = (r: DestinationRequest) => r.endpoint.endsWith("/2/httpapi");
const onlyEvent = (r: DestinationRequest): Obj | undefined => {
  const events = r.body.JSON.events;
  return Array.isArray(events) && events.length === 1 ? (events[0] as Obj) : undefined;
};

/** Whether `next` is one more of the requests the transform made for the event `first` began. */
function sameEvent(first: DestinationRequest, sofar: number, next: DestinationRequest): boolean {
  if (next.userKey !== first.userKey || !isHttpApi(first)) return false;
  if (sofar === 1 && next.endpoint.endsWith("/groupidentify")) return true;
  if (!isHttpApi(next)) return false;
  const base = onlyEvent(first)?.insert_id;
  return base !== undefined && onlyEvent(next)?.insert_id === `${base}-${sofar}`;
}

/** batch()'s requests as the events they came from, in order. */
function eventsOf(requests: DestinationRequest[]): EventRequests[] {
  const events: EventRequests[] = [];
  requests.forEach((r, at) => {
    const last = events[events.length - 1];
    if (last && sameEvent(last.requests[0]!, last.requests.length, r)) last.requests.push(r);
    else events.push({ at, requests: [r], batchable: true });
  });
  for (const e of events) e.batchable = e.requests.every((r) => isHttpApi(r) && Object.keys(r.body.JSON).length > 0);
  return events;
}

/**
 * A user's run of batchable events as /batch calls: events join the open call while it stays
 * within the count and size limits, else open the next; an event too big for one call alone is
 * cut at those limits.
 */
function batchCalls(run: EventRequests[]): Call[] {
  const max = AM_BATCH_LIMITS.MAX_USERS_DEVICES_PER_BATCH;
  const groups: Array<{ at: number; parts: DestinationRequest[]; bytes: number }> = [];
  for (const e of run) {
    const bytes = e.requests.reduce((n, r) => n + jsonBytes(r.body.JSON.events), 0);
    const open = groups[groups.length - 1];
    if (open && open.parts.length + e.requests.length <= max && open.bytes + bytes <= BATCH_MAX_BYTES - ENVELOPE_BYTES) {
      open.parts.push(...e.requests);
      open.bytes += bytes;
    } else groups.push({ at: e.at, parts: [...e.requests], bytes });
  }
  return groups.flatMap((g) => {
    const first = g.parts[0]!;
    const endpoint = first.endpoint.replace(/\/2\/httpapi$/, "/batch");
    const events = g.parts.flatMap((r) => r.body.JSON.events as Obj[]);
    return chunkItems(events, max, BATCH_MAX_BYTES - ENVELOPE_BYTES).map((chunk) => {
      const merged = restRequest({ endpoint, headers: first.headers, json: { ...first.body.JSON, events: chunk } });
      return { at: g.at, requests: [first.userKey === undefined ? merged : { ...merged, userKey: first.userKey }] };
    });
  });
}

/** One user's events as calls, in the user's order. */
function userCalls(events: EventRequests[]): Call[] {
  const alone = (e: EventRequests): Call => ({ at: e.at, requests: e.requests });
  // RudderStack sends a user's only batchable event as it is.
  if (events.filter((e) => e.batchable).length < 2) return events.map(alone);
  const calls: Call[] = [];
  let run: EventRequests[] = [];
  for (const e of events) {
    if (e.batchable) {
      run.push(e);
      continue;
    }
    calls.push(...batchCalls(run), alone(e));
    run = [];
  }
  calls.push(...batchCalls(run));
  return calls;
}

/**
 * The calls for one destination's requests: per user as above, then ordered by where each
 * call's first event stood, as RudderStack orders its output by the smallest job id of each.
 */
export function batchByUser(requests: DestinationRequest[]): DestinationRequest[] {
  const byUser = new Map<string | undefined, EventRequests[]>();
  for (const e of eventsOf(requests)) {
    const user = e.requests[0]!.userKey;
    const mine = byUser.get(user);
    if (mine) mine.push(e);
    else byUser.set(user, [e]);
  }
  return [...byUser.values()]
    .flatMap(userCalls)
    .sort((a, b) => a.at - b.at)
    .flatMap((c) => c.requests);
}
