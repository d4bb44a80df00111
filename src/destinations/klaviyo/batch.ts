/**
 * KLAVIYO's batching, as RudderStack's router does it for a run of identify (or of group)
 * events: the subscription jobs for one list become one job of up to 100 profiles, next to
 * the profile requests of the identifies it came from (after them; before them for v1's
 * `list_id` jobs, as RudderStack's v1 router sends them); identifies without a
 * subscription follow with their profile requests. Events, and anything between runs, keep
 * their place.
 */
import { getPath } from "../shared";
import { type DestinationRequest, restRequest } from "../types";
import type { Obj } from "./common";

// Klaviyo's bulk subscription jobs take at most 100 profiles.
const MAX_PROFILES = 100;

const isJob = (r: DestinationRequest) => /\/api\/profile-subscription-bulk-(create|delete)-jobs$/.test(r.endpoint);
const isProfile = (r: DestinationRequest) => /\/api\/(profile-import|profiles\/[^/]+)$/.test(r.endpoint);
const isCreate = (r: DestinationRequest) => r.endpoint.endsWith("create-jobs");
/** v1 jobs name the list in `list_id` and carry `subscriptions`; the later ones relate to a list and carry `profiles`. */
const isV1Job = (r: DestinationRequest) => getPath(r.body.JSON, "data.attributes.subscriptions") !== undefined;
const listOf = (r: DestinationRequest) => getPath(r.body.JSON, isV1Job(r) ? "data.attributes.list_id" : "data.relationships.list.data.id");
const entries = (r: DestinationRequest): unknown[] => getPath(r.body.JSON, isV1Job(r) ? "data.attributes.subscriptions" : "data.attributes.profiles.data") ?? [];

/** One event's share of a run: an identify's profile request and its job, or a group's job. */
interface Unit {
  profile?: DestinationRequest;
  job?: DestinationRequest;
  userKey?: string;
}

function mergeJobs(jobs: DestinationRequest[]): DestinationRequest {
  const first = jobs[0]!;
  const data = (first.body.JSON as Obj).data as Obj;
  const merged = jobs.flatMap(entries);
  const attributes = isV1Job(first) ? { ...data.attributes, subscriptions: merged } : { profiles: { data: merged } };
  return restRequest({ endpoint: first.endpoint, headers: first.headers, json: { data: { ...data, attributes } } });
}

function withUserKey(r: DestinationRequest, units: Unit[]): DestinationRequest {
  const keys = new Set(units.map((u) => u.userKey));
  const key = units[0]?.userKey;
  return keys.size === 1 && key !== undefined ? { ...r, userKey: key } : r;
}

function mergeRun(units: Unit[]): DestinationRequest[] {
  const groups = new Map<string, Unit[]>();
  // RudderStack sends the subscribing jobs of a run before the unsubscribing ones.
  for (const create of [true, false]) {
    for (const u of units) {
      if (!u.job || isCreate(u.job) !== create) continue;
      const key = JSON.stringify([u.job.endpoint, u.job.headers, listOf(u.job)]);
      groups.set(key, [...(groups.get(key) ?? []), u]);
    }
  }
  const out: DestinationRequest[] = [];
  for (const group of groups.values()) {
    for (let i = 0; i < group.length; i += MAX_PROFILES) {
      const chunk = group.slice(i, i + MAX_PROFILES);
      const profiles = chunk.flatMap((u) => (u.profile ? [u.profile] : []));
      const job = withUserKey(mergeJobs(chunk.map((u) => u.job!)), chunk);
      // RudderStack's v1 router sends the subscription job ahead of the profiles; v2 and v3 send it after them.
      out.push(...(isV1Job(job) ? [job, ...profiles] : [...profiles, job]));
    }
  }
  out.push(...units.filter((u) => !u.job).map((u) => u.profile!));
  return out;
}

export function batchKlaviyo(requests: DestinationRequest[]): DestinationRequest[] {
  const out: DestinationRequest[] = [];
  let run: Unit[] = [];
  const flush = () => {
    if (run.length > 0) out.push(...mergeRun(run));
    run = [];
  };
  for (let i = 0; i < requests.length; i++) {
    const r = requests[i]!;
    let unit: Unit;
    if (isProfile(r)) {
      const next = requests[i + 1];
      unit = { profile: r, userKey: r.userKey };
      if (next && isJob(next) && next.userKey === r.userKey) {
        unit.job = next;
        i++;
      }
    } else if (isJob(r)) unit = { job: r, userKey: r.userKey };
    else {
      flush();
      out.push(r);
      continue;
    }
    const last = run[run.length - 1];
    // Identifies and groups batch separately, as RudderStack batches runs of one event type;
    // a user seen again ends the run, so each user's requests keep their order.
    const sameKind = last && !!last.profile === !!unit.profile;
    const repeated = unit.userKey !== undefined && run.some((u) => u.userKey === unit.userKey);
    if (!sameKind || repeated) flush();
    run.push(unit);
  }
  flush();
  return out;
}
