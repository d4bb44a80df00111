/**
 * Batching as RudderStack's Braze router does it: with supportDedup, attributes deduplicated
 * within the batch; then per batch of events /users/track (75 attributes, 75 events, 75
 * purchases and 75 distinct external ids per call, items sorted by external id), then
 * subscription status (25 groups per call, same group and state combined), then /users/merge
 * (50 per call). The /users/identify merges are no requests of the batch: the transforms make
 * them (lookups.ts), 50 aliases per call, before the batch is sent.
 */
import { batchConsecutive, chunkItems, compact } from "../shared";
import { type BatchRefusal, type DestinationRequest, restRequest } from "../types";
import { dedupBatch } from "./dedup";

type Obj = Record<string, any>;

export const PARTNER = "RudderStack";
const TRACK_MAX = 75;
const TRACK_MAX_EXTERNAL_IDS = 75;
const MERGE_MAX = 50;
const SUBSCRIPTION_MAX = 25;

/** The order RudderStack sends a batch's requests in; also the batchable endpoints. */
const STAGES = ["users/track", "v2/subscription/status/set", "users/merge"] as const;
type Stage = (typeof STAGES)[number];

function stageOf(r: DestinationRequest): Stage | undefined {
  return STAGES.find((s) => r.endpoint.endsWith(`/${s}`));
}

/**
 * Puts each stretch of requests in stage order, as RudderStack does for a whole batch,
 * without changing any one user's order: a request whose user already has a later stage
 * in the current stretch starts a new stretch. Requests without a userKey count as one user.
 */
function inStageOrder(requests: DestinationRequest[]): DestinationRequest[] {
  const out: DestinationRequest[] = [];
  let stretch: DestinationRequest[] = [];
  let latest = new Map<string | undefined, number>();
  const flush = () => {
    const rank = (r: DestinationRequest) => STAGES.indexOf(stageOf(r)!);
    out.push(...stretch.map((r, i) => [r, i] as const).sort(([a, i], [b, j]) => rank(a) - rank(b) || i - j).map(([r]) => r));
    stretch = [];
    latest = new Map();
  };
  for (const r of requests) {
    const stage = stageOf(r);
    if (!stage) {
      flush();
      out.push(r);
      continue;
    }
    const rank = STAGES.indexOf(stage);
    if ((latest.get(r.userKey) ?? -1) > rank) flush();
    latest.set(r.userKey, Math.max(rank, latest.get(r.userKey) ?? -1));
    stretch.push(r);
  }
  flush();
  return out;
}

type TrackItem = { kind: "attributes" | "events" | "purchases"; data: Obj };

/** lodash sortBy's order for external ids: ascending, ids missing last, ties kept in place. */
function byExternalId(a: TrackItem, b: TrackItem): number {
  const x = a.data.external_id;
  const y = b.data.external_id;
  if (x === y) return 0;
  if (x === undefined || x === null) return 1;
  if (y === undefined || y === null) return -1;
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * /users/track bodies for a run: items interleaved (i-th attribute, event, purchase), sorted
 * by external id, then cut whenever a kind reaches 75 items or a 76th distinct external id
 * (anonymous items count as one) would join.
 */
export function trackBodies(bodies: Obj[]): Obj[] {
  const list = (kind: TrackItem["kind"]) => bodies.flatMap((b) => (Array.isArray(b[kind]) ? b[kind] : [])).filter((x) => x);
  const lists = { attributes: list("attributes"), events: list("events"), purchases: list("purchases") };
  const items: TrackItem[] = [];
  const longest = Math.max(lists.attributes.length, lists.events.length, lists.purchases.length);
  for (let i = 0; i < longest; i++) {
    for (const kind of ["attributes", "events", "purchases"] as const) if (lists[kind][i]) items.push({ kind, data: lists[kind][i] });
  }
  const sorted = items.map((item, i) => [item, i] as const).sort(([a, i], [b, j]) => byExternalId(a, b) || i - j);

  type Chunk = { attributes: Obj[]; events: Obj[]; purchases: Obj[]; ids: Set<unknown> };
  const chunks: Chunk[] = [];
  const fresh = (): Chunk => ({ attributes: [], events: [], purchases: [], ids: new Set() });
  let cur = fresh();
  for (const [item] of sorted) {
    const id = item.data.external_id;
    const idFits = (id && cur.ids.has(id)) || cur.ids.size < TRACK_MAX_EXTERNAL_IDS;
    if (!idFits || cur[item.kind].length >= TRACK_MAX) {
      chunks.push(cur);
      cur = fresh();
    }
    cur[item.kind].push(item.data);
    cur.ids.add(id);
  }
  if (cur.ids.size > 0) chunks.push(cur);
  const nonEmpty = (a: Obj[]) => (a.length > 0 ? a : undefined);
  return chunks.map((c) => compact({ partner: PARTNER, attributes: nonEmpty(c.attributes), events: nonEmpty(c.events), purchases: nonEmpty(c.purchases) }));
}

/** Subscription groups of one call with the same group and state merged, ids deduplicated. */
export function combineSubscriptionGroups(groups: Obj[]): Obj[] {
  const merged = new Map<string, { group: Obj; emails: unknown[]; phones: unknown[]; ids: unknown[] }>();
  for (const g of groups) {
    const key = `${g.subscription_group_id}-${g.subscription_state}`;
    let m = merged.get(key);
    if (!m) merged.set(key, (m = { group: g, emails: [], phones: [], ids: [] }));
    m.emails.push(...(g.emails ?? []));
    m.phones.push(...(g.phones ?? []));
    m.ids.push(...(g.external_ids ?? []));
  }
  return [...merged.values()].map(({ group, emails, phones, ids }) => {
    const out: Obj = { subscription_group_id: group.subscription_group_id, subscription_state: group.subscription_state };
    if (emails.length) out.emails = [...new Set(emails)];
    if (phones.length) out.phones = [...new Set(phones)];
    if (ids.length) out.external_ids = [...new Set(ids)];
    return out;
  });
}

/**
 * With `dedup` (the config's supportDedup), a user's later attributes in the batch carry only what
 * the earlier ones did not send, and an identify left with nothing is refused (dedup.ts).
 */
export function batchBraze(requests: DestinationRequest[], dedup = false, refuse?: BatchRefusal): DestinationRequest[] {
  return batchConsecutive(
    inStageOrder(dedup ? dedupBatch(requests, refuse) : requests),
    (r) => (stageOf(r) ? JSON.stringify([r.endpoint, r.headers]) : null),
    (run) => {
      const { endpoint, headers } = run[0]!;
      const bodies = run.map((r) => r.body.JSON as Obj);
      const list = (key: string) => bodies.flatMap((b) => (Array.isArray(b[key]) ? b[key] : []));
      const make = (json: Obj) => restRequest({ endpoint, headers, json });
      switch (stageOf(run[0]!)) {
        case "users/merge":
          return chunkItems(list("merge_updates"), MERGE_MAX).map((m) => make({ merge_updates: m }));
        case "v2/subscription/status/set":
          return chunkItems(list("subscription_groups"), SUBSCRIPTION_MAX).map((s) => make({ subscription_groups: combineSubscriptionGroups(s) }));
        default:
          return trackBodies(bodies).map(make);
      }
    },
  );
}
