/**
 * The catalog's reader: reads committed events after its own cursors (one per partition this
 * instance works, apart from the processor's), counts them into the observer, and flushes the
 * observer into the store every `flushMs`, the cursors with it.
 *
 * Why its own cursor rather than the processor's batches: the processor reads no payload for a
 * source without destinations, and nothing at all while no connection exists (it moves its
 * cursor to the newest event). Counting those events in the processor's run would put every
 * event's read (about 1 µs of the main thread with SQLite, besides intake's 20-30 µs a call)
 * right behind intake's commits, at full intake speed too. Here the reading is paced instead
 * (ReaderPace): while the machine is busy it takes MIN_SHARE of the main thread, more the
 * further it is behind, so at full intake speed the catalog falls behind (the events wait on
 * disk) and catches up when the machine has CPU to spare. Counts stay exact: every event is
 * read once, and a delta is saved in one transaction with the cursor it reached.
 */
import type { LeaseFence } from "../cluster/types";
import { type Cursors, type EventCursor, type PartitionWork, fencesOf } from "../pipeline/store";
import type { ConfigStore } from "../control-plane/config-store";
import type { Logger } from "../lib/logger";
import { Gauge } from "../lib/metrics";
import { readFileSync } from "node:fs";
import { type DemandReader, mainThreadDemand } from "../warehouse/intake-yield";
import { type MergeOutcome, mergeFlush } from "./merge";
import { CatalogObserver, DEFAULT_POLICY, type SourcePolicy } from "./observer";
import type { CatalogStore, StoredSource } from "./store";

export interface CatalogSettings {
  maxModels: number;
  maxPaths: number;
  samplePerSecond: number;
  flushMs: number;
}

/** Share of the main thread the reader takes while the machine is busy and it is not far behind. */
export const MIN_SHARE = 0.01;
/** Share it takes while catching up on a machine with CPU to spare. */
const IDLE_SHARE = 0.3;
/**
 * While busy, its share grows with how far behind it is, reaching LAGGING_SHARE an hour behind
 * (more than MIN_SHARE from about 2.5 minutes): under a sustained load it still catches up, long
 * before retention deletes what it has not read, while a burst of a few minutes costs intake
 * no more than MIN_SHARE.
 */
const LAGGING_SHARE = 0.25;
const LAG_FULL_MS = 60 * 60_000;
/** Busy: the rest of the main thread wanted more than this share of a CPU, or the machine's CPUs were idle less than IDLE_CPU. */
const BUSY_THREAD = 0.5;
const IDLE_CPU = 0.25;
/** How often the load is read again: busy counts from the first busy window... */
const WINDOW_MS = 100;
/** ...quiet only after this many quiet ones in a row (intake often pauses between bursts). */
const QUIET_WINDOWS = 5;
/** A pause between two slices is at most this long. */
const MAX_PAUSE_MS = 1000;
/** How often it looks for new events once it has caught up. */
const IDLE_POLL_MS = 250;
/** A slice aims at this much work, so it never holds the loop long. */
const SLICE_MS = 2;
const MIN_BATCH = 50;
const MAX_BATCH = 2000;
/** After a failed read or flush (a database restart), it tries again this much later. */
const RETRY_MS = 1000;
/**
 * Paths are written with every PATHS_EVERY-th flush (and whenever few models hold some, memory
 * is full, or at shutdown): a model's paths may be hundreds, and rewriting each sampled model's
 * paths every few seconds would cost more than the counts. Until then they wait in memory; a
 * crash loses those samples, never a count.
 */
const PATHS_EVERY = 6;
const FEW_PATH_MODELS = 20;

/** What the machine is doing: Linux's /proc; undefined where it cannot be read. */
export interface LoadProbe {
  /** Nanoseconds the main thread has run plus waited to run. */
  mainThread(): number | undefined;
  /** The machine's CPU time so far, and how much of it was idle (any unit). */
  cpus(): { idle: number; total: number } | undefined;
}

export function linuxLoad(): LoadProbe {
  const demand: DemandReader = mainThreadDemand();
  return {
    mainThread: demand,
    cpus() {
      try {
        const line = readFileSync("/proc/stat", "utf8");
        const f = line.slice(0, line.indexOf("\n")).trim().split(/\s+/).slice(1).map(Number);
        // user nice system idle iowait irq softirq steal (guest time is counted in user already)
        const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
        return { idle: f[3]! + f[4]!, total };
      } catch {
        return undefined;
      }
    },
  };
}

/**
 * The reader's share of the main thread. While the machine is busy (the main thread wanted a CPU
 * more than half the time besides the reader's own slices, or the machine's CPUs were mostly
 * busy: wrk, PostgreSQL, another program), MIN_SHARE, growing with how far behind the reader is;
 * otherwise IDLE_SHARE, so it catches up while nobody needs the CPU.
 */
export class ReaderPace {
  private windowStart?: { at: number; thread?: number; cpus?: { idle: number; total: number }; own: number };
  private own = 0;
  private busy = true;
  private quiet = 0;
  private lastShare = MIN_SHARE;

  constructor(
    private readonly probe: LoadProbe = linuxLoad(),
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /** How long to wait after a slice of `workMs` while `lagMs` behind, so that slices take the current share. */
  pauseAfter(workMs: number, lagMs: number): number {
    this.own += workMs;
    this.update();
    const share = this.busy ? Math.min(LAGGING_SHARE, Math.max(MIN_SHARE, (LAGGING_SHARE * lagMs) / LAG_FULL_MS)) : IDLE_SHARE;
    this.lastShare = share;
    return Math.min(MAX_PAUSE_MS, (workMs * (1 - share)) / share);
  }

  get current(): number {
    return this.lastShare;
  }

  private update(): void {
    const at = this.clock();
    if (this.windowStart && at - this.windowStart.at < WINDOW_MS) return;
    const thread = this.probe.mainThread();
    const cpus = this.probe.cpus();
    const w = this.windowStart;
    if (w) {
      const span = at - w.at;
      const others = thread !== undefined && w.thread !== undefined ? ((thread - w.thread) / 1e6 - (this.own - w.own)) / span : undefined;
      const idle = cpus && w.cpus && cpus.total > w.cpus.total ? (cpus.idle - w.cpus.idle) / (cpus.total - w.cpus.total) : undefined;
      // Blind (no /proc): taken as busy, the careful side.
      const busyNow = others === undefined || others > BUSY_THREAD || (idle !== undefined && idle < IDLE_CPU);
      this.quiet = busyNow ? 0 : this.quiet + 1;
      this.busy = this.quiet < QUIET_WINDOWS;
    }
    this.windowStart = { at, thread, cpus, own: this.own };
  }
}

export class CatalogReader {
  readonly observer: CatalogObserver;
  private cursors = new Map<number, EventCursor>();
  private batch = 200;
  private stopped = true;
  private loopDone: Promise<void> = Promise.resolve();
  private sleeping: { timer: Timer; resolve: () => void } | undefined;
  /** performance.now() of the last flush (intervals go by the monotonic clock; `now` dates the days). */
  private lastFlush = performance.now();
  private flushes = 0;
  private failing = false;
  /** Milliseconds of the main thread its slices took so far (reads, counting, flushes). */
  workMs = 0;
  /** receivedAt of the last event read while more were waiting; 0 once it has caught up. */
  private behindSince = 0;

  constructor(
    private readonly store: CatalogStore,
    private readonly config: ConfigStore,
    private readonly work: PartitionWork,
    private readonly log: Logger,
    private readonly settings: CatalogSettings,
    private readonly now: () => number,
    private readonly pace = new ReaderPace(),
  ) {
    this.observer = new CatalogObserver({
      maxModels: settings.maxModels,
      maxPaths: settings.maxPaths,
      samplePerSecond: settings.samplePerSecond,
      policy: (id) => this.policy(id),
      clock: () => performance.now(),
    });
  }

  /** Its figures for /metrics. */
  gauges(): Gauge[] {
    const c = this.observer.counters;
    return [
      new Gauge("sluice_catalog_events_read", "Events the event catalog has counted since start.", () => c.events),
      new Gauge("sluice_catalog_sampled_events", "Events whose properties the catalog read since start (--catalog-sample-per-second).", () => c.sampled),
      new Gauge("sluice_catalog_work_seconds", "Main-thread time the catalog's reading, counting and saving took since start.", () => this.workMs / 1000),
      new Gauge("sluice_catalog_lag_seconds", "How far behind the newest committed events the catalog is reading (0 once it has caught up); it falls behind while intake keeps the machine busy.", () => (this.behindSince ? Math.max(0, this.now() - this.behindSince) / 1000 : 0)),
    ];
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.loopDone = this.loop();
  }

  /** Stops reading and flushes what was read (the rest is read after the next start). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeUp();
    await this.loopDone;
    try {
      await this.flush(true);
    } catch (err) {
      this.log.warn("the event catalog could not save its last counts; their events are read again at the next start", { err });
    }
  }

  /** A source's settings as the catalog applies them; a deleted source's events keep the defaults. */
  private policy(sourceId: string): SourcePolicy {
    const s = this.config.snapshot().sources.get(sourceId);
    if (!s) return DEFAULT_POLICY;
    return {
      examples: s.settings.catalogExamples !== false,
      personal: s.settings.catalogPersonalExamples === true,
      // Webhook mappings' events and lenient sources may lack a top-level `event`.
      strictNames: !s.settings.lenientValidation && s.category !== "webhook",
    };
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      let wait = IDLE_POLL_MS;
      const started = performance.now();
      try {
        const { read, full, newest } = await this.readSlice();
        this.behindSince = full ? newest : 0;
        if (this.observer.full || (performance.now() - this.lastFlush >= this.settings.flushMs && (this.observer.pendingEvents || this.observer.pendingPathModels))) await this.flush(false);
        const worked = performance.now() - started;
        this.workMs += worked;
        if (read > 0) this.batch = Math.max(MIN_BATCH, Math.min(MAX_BATCH, Math.round((this.batch * SLICE_MS) / Math.max(worked, 0.1))));
        const pause = this.pace.pauseAfter(worked, full ? Math.max(0, this.now() - newest) : 0);
        if (full) wait = pause;
        if (this.failing) {
          this.failing = false;
          this.log.info("the event catalog reads and saves again");
        }
      } catch (err) {
        if (!this.failing) this.log.error("the event catalog could not read events or save its counts; retrying", { err });
        this.failing = true;
        wait = RETRY_MS;
      }
      if (!this.stopped) await this.sleep(wait);
    }
  }

  /** One slice: the next events of the partitions held, counted; `full` when more are waiting; `newest`: the last one's receivedAt. */
  private async readSlice(): Promise<{ read: number; full: boolean; newest: number }> {
    const held = this.work.partitions();
    const missing = held.filter((p) => !this.cursors.has(p));
    if (missing.length) for (const [p, c] of await this.store.readCursors(missing)) this.cursors.set(p, c);
    const heldSet = new Set(held);
    // A partition lost: its new holder reads on from the cursor saved with the last flush.
    for (const p of this.cursors.keys()) if (!heldSet.has(p)) this.cursors.delete(p);
    if (this.cursors.size === 0) return { read: 0, full: false, newest: 0 };
    const limit = this.batch;
    const { events, next } = await this.store.readEvents(this.cursors, limit);
    for (let i = 0; i < events.length; i++) this.observer.observe(events[i]!);
    for (const [p, c] of next) if (this.cursors.has(p)) this.cursors.set(p, c);
    return { read: events.length, full: events.length >= limit, newest: events.length ? events[events.length - 1]!.receivedAt : 0 };
  }

  /** Saves what the observer holds with the cursors it reached; `last`: at shutdown, paths too. */
  private async flush(last: boolean): Promise<void> {
    const at = this.now();
    if (this.observer.deltas().length) {
      const withPaths = last || this.observer.full || this.flushes % PATHS_EVERY === 0 || this.observer.pendingPathModels <= FEW_PATH_MODELS;
      const cursors = new Map(this.cursors);
      await flushObserver(this.store, this.observer, {
        maxModels: this.settings.maxModels,
        maxPaths: this.settings.maxPaths,
        now: at,
        policy: (id) => this.policy(id),
        withPaths,
        cursors,
        fences: fencesOf(this.work, cursors.keys()),
      });
      this.flushes++;
    }
    this.lastFlush = performance.now();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.sleeping = undefined;
        resolve();
      }, ms);
      this.sleeping = { timer, resolve };
    });
  }

  private wakeUp(): void {
    const s = this.sleeping;
    if (!s) return;
    this.sleeping = undefined;
    clearTimeout(s.timer);
    s.resolve();
  }
}

export interface FlushOptions {
  maxModels: number;
  maxPaths: number;
  now: number;
  policy(sourceId: string): SourcePolicy;
  /** Merge and write sampled paths too (else counts only; the paths stay in the observer). */
  withPaths: boolean;
  /** The positions the observer's counts reach, saved with them. */
  cursors: Cursors;
  fences: readonly LeaseFence[];
}

/** One flush: the observer's deltas merged into the store in one transaction, with the cursors. */
export async function flushObserver(store: CatalogStore, observer: CatalogObserver, opts: FlushOptions): Promise<void> {
  const deltas = observer.deltas();
  if (deltas.length === 0) return;
  const bySource = new Map(deltas.map((d) => [d.sourceId, d]));
  const pathKeys = new Map<string, ReadonlySet<string>>();
  const sources = deltas
    .map((d) => {
      const keys: string[] = [];
      const withSamples = new Set<string>();
      for (const [key, m] of d.models) {
        const sampled = opts.withPaths && (m.sampled > 0 || m.overflowPaths > 0);
        if (sampled) withSamples.add(key);
        if (m.count > 0 || sampled) keys.push(key);
      }
      pathKeys.set(d.sourceId, withSamples);
      return { sourceId: d.sourceId, workspaceId: d.workspaceId, keys, pathKeys: withSamples };
    })
    .sort((a, b) => (a.sourceId < b.sourceId ? -1 : a.sourceId > b.sourceId ? 1 : 0));
  let outcome: MergeOutcome | undefined;
  const merge = (stored: StoredSource[]) =>
    (outcome = mergeFlush(stored, bySource, {
      maxModels: opts.maxModels,
      maxPaths: opts.maxPaths,
      now: opts.now,
      policy: opts.policy,
      wasRefused: (id, key) => observer.wasRefused(id, key),
      pathKeys,
    }));
  await store.flush(sources, merge, opts.cursors, opts.fences);
  if (outcome) observer.flushed(outcome, opts.withPaths);
}
