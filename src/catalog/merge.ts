/**
 * A flush's arithmetic, pure: the stored rows plus the observer's deltas, within the bounds.
 * Counts add, first seen takes the earlier, last seen the later, days add and only the last 30
 * are kept, paths merge up to the bound per model (occurrences of paths beyond it are counted),
 * and at most `maxModels` models a source are kept (events of the others are counted, and each
 * refused pair once). Two instances' flushes of the same models therefore add up, in any order.
 */
import { setOwn } from "../lib/safe-keys";
import { MAX_EXAMPLES, type ModelDelta, type SourceDelta, type SourcePolicy, exampleAllowed } from "./observer";
import type { CatalogModelRow, FlushWrite, PathStats, StoredSource } from "./store";

/** Days of daily counts kept, today included. */
export const DAYS_KEPT = 30;
const DAY_MS = 86_400_000;

export interface MergeOptions {
  maxModels: number;
  maxPaths: number;
  /** The flush's time: the 30 days end on its day. */
  now: number;
  policy(sourceId: string): SourcePolicy;
  /** Whether this process already counted the pair as refused (it is counted in `models` once). */
  wasRefused(sourceId: string, key: string): boolean;
  /** Per source, the keys whose paths this flush merges (the rest: counts only). */
  pathKeys: ReadonlyMap<string, ReadonlySet<string>>;
}

export interface MergeOutcome extends FlushWrite {
  /** Per source, the keys now stored. */
  stored: Map<string, string[]>;
  /** Per source, the keys refused by the bound of models. */
  refused: Map<string, string[]>;
}

/** The first day kept ("YYYY-MM-DD", UTC) at `now`. */
export function firstDayKept(now: number): string {
  return new Date(Math.floor(now / DAY_MS) * DAY_MS - (DAYS_KEPT - 1) * DAY_MS).toISOString().slice(0, 10);
}

/** Days on or after `from`, in date order. */
export function daysFrom(daily: Record<string, number>, from: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const day of Object.keys(daily).sort()) if (day >= from && daily[day]) out[day] = daily[day]!;
  return out;
}

export function mergeFlush(stored: StoredSource[], deltas: ReadonlyMap<string, SourceDelta>, opts: MergeOptions): MergeOutcome {
  const out: MergeOutcome = { models: [], overflow: [], stored: new Map(), refused: new Map() };
  for (const s of stored) {
    const delta = deltas.get(s.sourceId);
    if (!delta) continue;
    const policy = opts.policy(s.sourceId);
    const pathKeys = opts.pathKeys.get(s.sourceId);
    const storedKeys: string[] = [];
    const refusedKeys: string[] = [];
    let count = s.modelCount;
    let overflowModels = 0;
    let overflowEvents = delta.overflowEvents;
    for (const [key, d] of delta.models) {
      const existing = s.models.get(key);
      // A delta kept for its paths alone (counts flushed before) has no events to start a row with.
      if (!existing && d.count === 0) continue;
      if (existing || count < opts.maxModels) {
        if (!existing) count++;
        out.models.push(mergeModel(existing, d, s, policy, opts, pathKeys?.has(key) ?? false));
        storedKeys.push(key);
      } else {
        overflowEvents += d.count;
        if (!opts.wasRefused(s.sourceId, key)) overflowModels++;
        refusedKeys.push(key);
      }
    }
    if (overflowModels || overflowEvents) out.overflow.push({ sourceId: s.sourceId, workspaceId: s.workspaceId, models: overflowModels, events: overflowEvents });
    out.stored.set(s.sourceId, storedKeys);
    if (refusedKeys.length) out.refused.set(s.sourceId, refusedKeys);
  }
  return out;
}

function mergeModel(row: CatalogModelRow | undefined, d: ModelDelta, s: StoredSource, policy: SourcePolicy, opts: MergeOptions, withPaths: boolean): CatalogModelRow {
  const out: CatalogModelRow = row ?? {
    workspaceId: s.workspaceId,
    sourceId: s.sourceId,
    type: d.type,
    event: d.event,
    firstSeen: d.firstSeen,
    lastSeen: d.lastSeen,
    count: 0,
    daily: {},
    sampled: 0,
    paths: {},
    overflowPaths: 0,
  };
  if (d.count > 0) {
    out.count += d.count;
    out.firstSeen = Math.min(out.firstSeen, d.firstSeen);
    out.lastSeen = Math.max(out.lastSeen, d.lastSeen);
  }
  const daily: Record<string, number> = { ...out.daily };
  for (const [day, n] of d.daily) daily[day] = (daily[day] ?? 0) + n;
  out.daily = daysFrom(daily, firstDayKept(opts.now));
  if (!withPaths) return out;
  out.sampled += d.sampled;
  let paths = Object.keys(out.paths).length;
  for (const [path, p] of d.paths) {
    const e = Object.hasOwn(out.paths, path) ? out.paths[path] : undefined;
    if (e) {
      for (const [type, n] of Object.entries(p.types)) e.types[type as keyof PathStats["types"]] = (e.types[type as keyof PathStats["types"]] ?? 0) + n!;
      e.present += p.present;
      e.firstSeen = Math.min(e.firstSeen, p.firstSeen);
      e.lastSeen = Math.max(e.lastSeen, p.lastSeen);
      for (const x of p.examples ?? []) {
        if ((e.examples?.length ?? 0) >= MAX_EXAMPLES) break;
        if (!e.examples?.includes(x)) (e.examples ??= []).push(x);
      }
    } else if (paths < opts.maxPaths) {
      paths++;
      const stats: PathStats = { types: { ...p.types }, present: p.present, firstSeen: p.firstSeen, lastSeen: p.lastSeen };
      if (p.examples?.length) stats.examples = [...p.examples];
      setOwn(out.paths, path, stats);
    } else out.overflowPaths += p.present;
  }
  out.overflowPaths += d.overflowPaths;
  // Examples kept before a source turned them off (or turned personal ones off) go at its next flush.
  for (const [path, stats] of Object.entries(out.paths)) {
    if (!stats.examples) continue;
    const kept = stats.examples.filter((x) => exampleAllowed(path, x, policy));
    if (kept.length) stats.examples = kept;
    else delete stats.examples;
  }
  return out;
}
