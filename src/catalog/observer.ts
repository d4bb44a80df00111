/**
 * The catalog's memory between two flushes: per source, per (type, event), how many events,
 * when, on which days, and the property paths of a sample of them. Fed event by event by the
 * reader (reader.ts); merged into the store by a flush (merge.ts), then forgotten.
 *
 * Counts are exact: every event is counted, and its name costs a string search, not a parse.
 * Property statistics come from a sample: at most `samplePerSecond` payloads a second are
 * parsed for the whole process, plus the first GUARANTEED_SAMPLES of each model since start so
 * that a rare event still shows its properties. `sampled` counts them per model: `present` and
 * the type counts are out of it.
 *
 * Memory is bounded: at most `maxModels` models a source not yet known to be stored (beyond,
 * their events are counted as overflow for this flush), at most `maxPaths` paths a model (beyond,
 * occurrences are counted), and the reader flushes early when the paths held pass
 * FLUSH_AT_PATHS.
 */
import { BIT_TYPES, flattenEvent, isPersonalPath, isPersonalValue, withoutNul } from "./paths";
import type { CatalogEvent, Example, JsonType } from "./store";
import { modelKey } from "./store";

/** How a source wants its examples kept, and whether its track events always carry `event` at the top. */
export interface SourcePolicy {
  /** Keep example values (source setting catalogExamples, default true). */
  examples: boolean;
  /** Keep them for e-mail, phone and IP-like paths and values too (catalogPersonalExamples, default false). */
  personal: boolean;
  /** Track events are checked to have a top-level `event` (not lenient, not a webhook source). */
  strictNames: boolean;
}

export const DEFAULT_POLICY: SourcePolicy = Object.freeze({ examples: true, personal: false, strictNames: false });

export interface ObserverOptions {
  maxModels: number;
  maxPaths: number;
  /** Payloads parsed a second for property statistics, for the whole process; 0: counts only. */
  samplePerSecond: number;
  policy(sourceId: string): SourcePolicy;
  /** Milliseconds, for the sampling budget's one-second windows. */
  clock(): number;
}

/** A model's first events since start are sampled whatever the budget, so a rare model shows its paths. */
export const GUARANTEED_SAMPLES = 10;
/** Distinct refused pairs remembered per source (each is counted once in overflow.models). */
const REFUSED_MEMORY = 10_000;
/** Paths held in memory over all deltas at which the reader flushes before its interval is up. */
export const FLUSH_AT_PATHS = 100_000;
export const MAX_EXAMPLES = 3;

export interface PathDelta {
  types: Partial<Record<JsonType, number>>;
  present: number;
  examples?: Example[];
  firstSeen: number;
  lastSeen: number;
}

export interface ModelDelta {
  type: string;
  event: string;
  count: number;
  firstSeen: number;
  lastSeen: number;
  /** "YYYY-MM-DD" (UTC) → events. */
  daily: Map<string, number>;
  sampled: number;
  paths: Map<string, PathDelta>;
  overflowPaths: number;
}

export interface SourceDelta {
  sourceId: string;
  workspaceId: string;
  models: Map<string, ModelDelta>;
  /** Events refused in memory or of pairs the store refused before. */
  overflowEvents: number;
}

interface SourceState {
  delta: SourceDelta;
  policy: SourcePolicy;
  /** Keys the store holds (learned from flushes): always taken into memory. */
  stored: Set<string>;
  /** Keys the store refused (the bound was reached): counted as overflow at once. */
  refused: Set<string>;
  /** Delta models whose key is not known to be stored. */
  unknown: number;
  /** Samples taken per model since start (for GUARANTEED_SAMPLES). */
  sampledSince: Map<string, number>;
}

export interface ObserverCounters {
  /** Events counted since start. */
  events: number;
  /** Payloads parsed for property statistics. */
  sampled: number;
  /** Payloads that could not be parsed (never expected: intake stores JSON). */
  unreadable: number;
}

const DAY_MS = 86_400_000;

export class CatalogObserver {
  private sources = new Map<string, SourceState>();
  private windowStart = -Infinity;
  private windowSamples = 0;
  private dayNumber = Number.NaN;
  private dayText = "";
  /** Path entries held over all deltas. */
  private pathEntries = 0;
  private pending = 0;
  readonly counters: ObserverCounters = { events: 0, sampled: 0, unreadable: 0 };

  constructor(private readonly opts: ObserverOptions) {}

  /** Events counted since the last flush. */
  get pendingEvents(): number {
    return this.pending;
  }

  /** True when memory asks for a flush before the interval is up. */
  get full(): boolean {
    return this.pathEntries >= FLUSH_AT_PATHS;
  }

  observe(e: CatalogEvent): void {
    const s = this.stateOf(e.sourceId, e.workspaceId);
    const d = s.delta;
    this.counters.events++;
    this.pending++;
    let parsed: Record<string, unknown> | undefined;
    let event = "";
    if (e.type === "track") {
      const fast = s.policy.strictNames ? trackNameFast(e.payload) : undefined;
      if (fast !== undefined) event = fast;
      else {
        parsed = parsePayload(e.payload, this.counters);
        event = typeof parsed?.event === "string" ? parsed.event : "";
      }
      event = withoutNul(event);
    }
    const key = modelKey(e.type, event);
    let m = d.models.get(key);
    if (!m) {
      if (s.refused.has(key)) {
        d.overflowEvents++;
        return;
      }
      const known = s.stored.has(key);
      // Memory's own bound: more new models than the store could take. Their events count as
      // overflow; the pair is not remembered as refused (the store may hold it: after a restart
      // nothing is known yet), so the next flush tries it again.
      if (!known && s.unknown >= this.opts.maxModels) {
        d.overflowEvents++;
        return;
      }
      if (!known) s.unknown++;
      m = { type: e.type, event, count: 0, firstSeen: e.receivedAt, lastSeen: e.receivedAt, daily: new Map(), sampled: 0, paths: new Map(), overflowPaths: 0 };
      d.models.set(key, m);
    }
    m.count++;
    if (e.receivedAt < m.firstSeen) m.firstSeen = e.receivedAt;
    if (e.receivedAt > m.lastSeen) m.lastSeen = e.receivedAt;
    const day = this.dayOf(e.receivedAt);
    m.daily.set(day, (m.daily.get(day) ?? 0) + 1);
    if (this.shouldSample(s, key)) {
      parsed ??= parsePayload(e.payload, this.counters);
      if (parsed) this.sample(s, m, parsed, e.receivedAt);
    }
  }

  /** The deltas to flush (sources with something counted). */
  deltas(): SourceDelta[] {
    const out: SourceDelta[] = [];
    for (const s of this.sources.values()) if (s.delta.models.size || s.delta.overflowEvents) out.push(s.delta);
    return out;
  }

  /** Models holding sampled paths not yet written. */
  get pendingPathModels(): number {
    let n = 0;
    for (const s of this.sources.values()) for (const m of s.delta.models.values()) if (m.sampled || m.overflowPaths) n++;
    return n;
  }

  /**
   * After a flush committed: what it wrote goes. A flush without paths wrote the counts only,
   * so models keep their sampled paths (and lose their counts) until a flush with paths. The
   * keys the store took and refused are remembered; policies are read again (a source's
   * settings may have changed).
   */
  flushed(outcome: { stored: Map<string, string[]>; refused: Map<string, string[]> }, withPaths: boolean): void {
    for (const [sourceId, keys] of outcome.stored) {
      const s = this.sources.get(sourceId);
      if (s) for (const k of keys) if (s.stored.size < this.opts.maxModels) s.stored.add(k);
    }
    for (const [sourceId, keys] of outcome.refused) {
      const s = this.sources.get(sourceId);
      if (s) for (const k of keys) if (s.refused.size < REFUSED_MEMORY) s.refused.add(k);
    }
    let entries = 0;
    for (const [id, s] of this.sources) {
      const models = new Map<string, ModelDelta>();
      if (!withPaths) {
        for (const [key, m] of s.delta.models) {
          if (s.refused.has(key) || !(m.sampled || m.overflowPaths)) continue;
          m.count = 0;
          m.daily.clear();
          m.firstSeen = Number.POSITIVE_INFINITY;
          m.lastSeen = Number.NEGATIVE_INFINITY;
          models.set(key, m);
          entries += m.paths.size;
        }
      }
      s.delta = { sourceId: id, workspaceId: s.delta.workspaceId, models, overflowEvents: 0 };
      s.unknown = 0;
      for (const key of models.keys()) if (!s.stored.has(key)) s.unknown++;
      s.policy = this.opts.policy(id);
    }
    this.pathEntries = entries;
    this.pending = 0;
  }

  /** Whether a pair was refused by the store before (its events are overflow; counted once in `models`). */
  wasRefused(sourceId: string, key: string): boolean {
    return this.sources.get(sourceId)?.refused.has(key) ?? false;
  }

  private stateOf(sourceId: string, workspaceId: string): SourceState {
    let s = this.sources.get(sourceId);
    if (!s) {
      s = {
        delta: { sourceId, workspaceId, models: new Map(), overflowEvents: 0 },
        policy: this.opts.policy(sourceId),
        stored: new Set(),
        refused: new Set(),
        unknown: 0,
        sampledSince: new Map(),
      };
      this.sources.set(sourceId, s);
    }
    return s;
  }

  private dayOf(ms: number): string {
    const n = Math.floor(ms / DAY_MS);
    if (n !== this.dayNumber) {
      this.dayNumber = n;
      this.dayText = new Date(n * DAY_MS).toISOString().slice(0, 10);
    }
    return this.dayText;
  }

  private shouldSample(s: SourceState, key: string): boolean {
    if (this.opts.samplePerSecond <= 0) return false;
    const now = this.opts.clock();
    if (now - this.windowStart >= 1000) {
      this.windowStart = now;
      this.windowSamples = 0;
    }
    const taken = s.sampledSince.get(key) ?? 0;
    if (taken >= GUARANTEED_SAMPLES && this.windowSamples >= this.opts.samplePerSecond) return false;
    this.windowSamples++;
    if (taken > 0 || s.sampledSince.size < this.opts.maxModels * 2) s.sampledSince.set(key, taken + 1);
    return true;
  }

  private sample(s: SourceState, m: ModelDelta, event: Record<string, unknown>, at: number): void {
    this.counters.sampled++;
    m.sampled++;
    const { paths, tooLong } = flattenEvent(event);
    m.overflowPaths += tooLong;
    const keep = s.policy.examples;
    for (const [path, o] of paths) {
      let p = m.paths.get(path);
      if (!p) {
        if (m.paths.size >= this.opts.maxPaths) {
          m.overflowPaths++;
          continue;
        }
        p = { types: {}, present: 0, firstSeen: at, lastSeen: at };
        m.paths.set(path, p);
        this.pathEntries++;
      }
      p.present++;
      if (at < p.firstSeen) p.firstSeen = at;
      if (at > p.lastSeen) p.lastSeen = at;
      for (const [type, bit] of BIT_TYPES) if (o.types & bit) p.types[type] = (p.types[type] ?? 0) + 1;
      const ex = o.example;
      if (keep && ex !== undefined && (p.examples?.length ?? 0) < MAX_EXAMPLES && exampleAllowed(path, ex, s.policy) && !p.examples?.includes(ex)) (p.examples ??= []).push(ex);
    }
  }
}

/** Whether an example may be kept under the source's policy. */
export function exampleAllowed(path: string, value: Example, policy: SourcePolicy): boolean {
  if (!policy.examples) return false;
  return policy.personal || (!isPersonalPath(path) && !isPersonalValue(value));
}

/**
 * A track's top-level `event` without parsing, when the source's events are checked to carry one
 * (a string): the key occurs once in the text, so that once is the top level. (`"event":` can only
 * be a key in JSON: a quote inside a string is escaped.) Undefined when that cannot be told this
 * way (the key nested too, an escape in the name): the caller parses.
 */
export function trackNameFast(payload: string): string | undefined {
  const i = payload.indexOf('"event":');
  if (i < 0 || payload.charCodeAt(i + 8) !== 34 || payload.indexOf('"event":', i + 8) >= 0) return undefined;
  const start = i + 9;
  const end = payload.indexOf('"', start);
  if (end < 0) return undefined;
  const name = payload.slice(start, end);
  return name.includes("\\") ? undefined : name;
}

function parsePayload(payload: string, counters: ObserverCounters): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(payload);
    if (v !== null && typeof v === "object" && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {}
  counters.unreadable++;
  return undefined;
}
