/**
 * KLAVIYO's batching, as RudderStack's router does it. The requests are read back into the
 * events they came from (an identify's profile request and the subscription job after it, a
 * group's job, a track's or screen's event request) and grouped by event type as RudderStack's
 * router groups them: each event joins the oldest group of its type that comes no earlier than
 * its user's previous event. Each group then goes out as RudderStack sends it:
 *
 * - tracks and screens: one request each, in order;
 * - identifies and groups (v2, v3): per list, the subscribing jobs and then the unsubscribing
 *   ones, up to 100 profiles a job, each job after the profile requests of its identifies;
 *   then the profile requests of identifies without a subscription;
 * - identifies and groups (v1): one `list_id` job per list, the profile requests of every
 *   subscribing identify after the first job; then the identifies without a subscription.
 *
 * A user's several identifies (or group calls) share a group as in RudderStack's router when that
 * keeps their writes to the same thing in order: when the later one subscribes to (or
 * unsubscribes from) the same list in the same way as the user's others in the group, or has no
 * subscription. Their profile requests then go in order, all before the one job that lists their
 * subscriptions in order; the user's first subscription is sent after their later profile update,
 * which is safe because the two are independent writes at Klaviyo: a profile import sets the
 * profile's attributes, a subscription job sets consent on the profiles it names by their own
 * e-mail and phone, and neither reads what the other writes.
 *
 * Otherwise the later one goes to a later group, where RudderStack's would put it in the same one
 * and reverse writes that are not independent: the profile of an identify without a subscription
 * after the user's later subscribing one (the earlier attributes would win), a subscription to
 * one list before an earlier unsubscription from it. The pipeline's batches take one delivery
 * per user, so either happens only when a user transformation makes several events of one
 * delivery.
 */
import { getPath } from "../shared";
import { type DestinationRequest, restRequest } from "../types";
import type { Obj } from "./common";

// Klaviyo's bulk subscription jobs take at most 100 profiles.
const MAX_PROFILES = 100;

const isJob = (r: DestinationRequest) => /\/api\/profile-subscription-bulk-(create|delete)-jobs$/.test(r.endpoint);
const isProfile = (r: DestinationRequest) => /\/api\/(profile-import|profiles\/[^/]+)$/.test(r.endpoint);
const isEvent = (r: DestinationRequest) => /\/api\/events$/.test(r.endpoint);
const isCreate = (r: DestinationRequest) => r.endpoint.endsWith("create-jobs");
/** v1 jobs name the list in `list_id` and carry `subscriptions`; the later ones relate to a list and carry `profiles`. */
const isV1Job = (r: DestinationRequest) => getPath(r.body.JSON, "data.attributes.subscriptions") !== undefined;
const listOf = (r: DestinationRequest) => getPath(r.body.JSON, isV1Job(r) ? "data.attributes.list_id" : "data.relationships.list.data.id");
const entries = (r: DestinationRequest): unknown[] => getPath(r.body.JSON, isV1Job(r) ? "data.attributes.subscriptions" : "data.attributes.profiles.data") ?? [];

/** An event type as the requests show it: a screen's request is a track's, so both are "event". */
type Kind = "identify" | "group" | "event" | "other";

/** One event's requests: an identify's profile request and its job, a group's job, or one other request. */
interface Unit {
  kind: Kind;
  profile?: DestinationRequest;
  job?: DestinationRequest;
  single?: DestinationRequest;
  userKey?: string;
}

function unitsOf(requests: DestinationRequest[]): Unit[] {
  const units: Unit[] = [];
  for (let i = 0; i < requests.length; i++) {
    const r = requests[i]!;
    if (isProfile(r)) {
      const next = requests[i + 1];
      const unit: Unit = { kind: "identify", profile: r, userKey: r.userKey };
      if (next && isJob(next) && next.userKey === r.userKey) {
        unit.job = next;
        i++;
      }
      units.push(unit);
    } else if (isJob(r)) units.push({ kind: "group", job: r, userKey: r.userKey });
    else units.push({ kind: isEvent(r) ? "event" : "other", single: r, userKey: r.userKey });
  }
  return units;
}

/**
 * Where a unit's requests go in its group's output: its list and direction, or none (a profile
 * without a subscription, sent after every job of the group).
 */
const placeOf = (u: Unit) => (u.job ? JSON.stringify([isCreate(u.job), listOf(u.job)]) : undefined);

/**
 * RudderStack's grouping by event type: an event goes to the oldest group of its type at or
 * after the group its user's previous event went to, else to a new group; an identify or group
 * call joins a group holding others of its user only as said above (its place is theirs, or it
 * has none). Requests without a user key count as one user, as RudderStack's router counts
 * events without one.
 */
function groupByType(units: Unit[]): Unit[][] {
  const groups: Array<{ kind: Kind; units: Unit[]; places: Map<string | undefined, Set<string | undefined>> }> = [];
  const lastGroup = new Map<string | undefined, number>();
  for (const unit of units) {
    const place = placeOf(unit);
    const keepsOrder = (g: (typeof groups)[number]) => {
      if (unit.kind !== "identify" && unit.kind !== "group") return true;
      const theirs = g.places.get(unit.userKey);
      return !theirs || place === undefined || [...theirs].every((p) => p === place);
    };
    let target = groups.findIndex((g, i) => i >= (lastGroup.get(unit.userKey) ?? 0) && g.kind === unit.kind && keepsOrder(g));
    if (target === -1) target = groups.push({ kind: unit.kind, units: [], places: new Map() }) - 1;
    const group = groups[target]!;
    group.units.push(unit);
    let places = group.places.get(unit.userKey);
    if (!places) group.places.set(unit.userKey, (places = new Set()));
    places.add(place);
    lastGroup.set(unit.userKey, target);
  }
  return groups.map((g) => g.units);
}

/**
 * Units keyed by list as lodash's groupBy keys them, the order included: the keys of a plain
 * object, so list ids that read as array indexes come first, in numeric order.
 */
function byList(units: Unit[]): Array<[string, Unit[]]> {
  const groups: Record<string, Unit[]> = Object.create(null);
  for (const u of units) (groups[String(listOf(u.job!))] ??= []).push(u);
  return Object.keys(groups).map((k) => [k, groups[k]!]);
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** A merged request belongs to one user only if every event in it did. */
function withUserKey(r: DestinationRequest, units: Unit[]): DestinationRequest {
  const keys = new Set(units.map((u) => u.userKey));
  const key = units[0]?.userKey;
  return keys.size === 1 && key !== undefined ? { ...r, userKey: key } : r;
}

/**
 * One job for the units' subscriptions. RudderStack's later router names the list by its
 * grouping key, so a list id given as a number is sent as text; v1's keeps the first job's body.
 */
function mergeJobs(units: Unit[], listKey: string): DestinationRequest {
  const first = units[0]!.job!;
  const data = (first.body.JSON as Obj).data as Obj;
  const merged = units.flatMap((u) => entries(u.job!));
  const body = isV1Job(first)
    ? { data: { ...data, attributes: { ...data.attributes, subscriptions: merged } } }
    : { data: { type: data.type, attributes: { profiles: { data: merged } }, relationships: { list: { data: { type: "list", id: listKey } } } } };
  return withUserKey(restRequest({ endpoint: first.endpoint, headers: first.headers, json: body }), units);
}

/** A group of identifies or group calls of the later API versions. */
function sendLater(units: Unit[]): DestinationRequest[] {
  const entriesOut: Array<{ profiles: DestinationRequest[]; job?: DestinationRequest }> = [];
  const entryOf = new Map<Unit, number>();
  for (const create of [true, false]) {
    const jobs = units.filter((u) => u.job && isCreate(u.job) === create);
    for (const [list, group] of byList(jobs)) {
      for (const chunk of chunks(group, MAX_PROFILES)) {
        for (const u of chunk) entryOf.set(u, entriesOut.length);
        entriesOut.push({ profiles: [], job: mergeJobs(chunk, list) });
      }
    }
  }
  for (const u of units) {
    if (!u.profile) continue;
    const at = entryOf.get(u);
    if (at === undefined) entriesOut.push({ profiles: [u.profile] });
    else entriesOut[at]!.profiles.push(u.profile);
  }
  return entriesOut.flatMap((e) => (e.job ? [...e.profiles, e.job] : e.profiles));
}

/** A group of v1 identifies or group calls. */
function sendV1(units: Unit[]): DestinationRequest[] {
  const subscribing = units.filter((u) => u.job);
  const jobs = byList(subscribing).flatMap(([list, group]) => chunks(group, MAX_PROFILES).map((chunk) => mergeJobs(chunk, list)));
  const profiles = subscribing.flatMap((u) => (u.profile ? [u.profile] : []));
  const rest = units.filter((u) => !u.job).map((u) => u.profile!);
  return [...jobs.slice(0, 1), ...profiles, ...jobs.slice(1), ...rest];
}

function sendGroup(units: Unit[]): DestinationRequest[] {
  const kind = units[0]!.kind;
  if (kind === "event" || kind === "other") return units.map((u) => u.single!);
  const job = units.find((u) => u.job)?.job;
  return job && isV1Job(job) ? sendV1(units) : sendLater(units);
}

export function batchKlaviyo(requests: DestinationRequest[]): DestinationRequest[] {
  return groupByType(unitsOf(requests)).flatMap(sendGroup);
}
