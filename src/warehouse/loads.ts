/**
 * Loads of warehouse destinations: staged rows (staging.ts) into the user's database
 * (postgres-loader.ts), every `syncFrequency` minutes and on demand (POST /v2/destinations/{id}/sync).
 *
 * Every load is a `warehouse_loads` row: queued → running → succeeded | failed. A load takes
 * the destination's staged rows not yet loaded (up to `rowsPerLoad`) and loads them per
 * namespace, on the load thread (load-thread.ts) so that intake's thread never waits for it.
 * That thread also marks the rows it loaded, page by page; the outcome is then recorded with the
 * load queued after it (one `finishLoad` of the warehouse store, store.ts).
 *
 * Nothing is lost and nothing is loaded twice: a failed load leaves its rows staged for the
 * next one, and a load whose PostgreSQL commit went through but whose marking did not
 * (a crash in between) is simply loaded again, which inserts nothing new because the loader
 * skips ids already in their table. A retryable failure (database unreachable) queues a retry
 * with backoff; other failures wait for the next scheduled or requested load.
 */
import type { ConfigStore, DestinationRuntime } from "../control-plane/config-store";
import { postgresConnection, syncFrequencyMinutes } from "../destinations/postgres";
import { badRequest, notFound } from "../lib/errors";
import type { Logger } from "../lib/logger";
import { SerialPass } from "../lib/serial-pass";
import { DEFAULT_INTAKE_YIELD, type IntakeYieldSettings } from "./intake-yield";
import type { LoadOutcome, LoadThread } from "./load-thread";
import type { PostgresConfig } from "../destinations/postgres/config";
import { isWarehouseKind, namespaceFor } from "./staging";
import type { LoadRow, LoadStatus, NewLoad, WarehouseStore } from "./store";

export type { LoadStatus } from "./store";

export interface LoadView {
  id: string;
  destinationId: string;
  status: LoadStatus;
  trigger: string;
  attempt: number;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  rows: Record<string, number>;
  discards: number;
  error: string | null;
}

export interface WarehouseLoadSettings {
  /** Most staged rows one load takes; the rest follow in the next load at once. */
  rowsPerLoad: number;
  /** Rows a load reads, and commits, at a time; it reads the next page while one loads. */
  pageRows: number;
  /** First retry delay after a retryable failure; doubles per attempt up to the sync frequency. */
  retryBackoffMs: number;
  /** Seconds the loader waits for a connection. */
  connectTimeoutSeconds: number;
  /** How long staged rows stay after their load succeeded (for inspection), then go. */
  keepLoadedMs: number;
  /** When a load pauses for intake. */
  intakeYield: IntakeYieldSettings;
}

export const DEFAULT_LOAD_SETTINGS: WarehouseLoadSettings = {
  rowsPerLoad: 200_000,
  pageRows: 50_000,
  retryBackoffMs: 10_000,
  connectTimeoutSeconds: 10,
  keepLoadedMs: 24 * 3600_000,
  intakeYield: DEFAULT_INTAKE_YIELD,
};

/** The scheduler looks again at least this often (config changes, new destinations). */
const MAX_IDLE_MS = 60_000;

/** Minutes since midnight UTC of "HH:MM", or undefined. */
function minutesOfDay(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const m = /^(\d{1,2}):(\d{2})$/.exec(value.trim());
  if (!m) return undefined;
  const h = Number(m[1]);
  const min = Number(m[2]);
  return h < 24 && min < 60 ? h * 60 + min : undefined;
}

/**
 * The next scheduled load after `now`: `syncStartAt` (UTC, default midnight) plus a multiple of
 * the frequency, as RudderStack lays out its sync times over the day.
 */
export function nextSyncAt(config: Record<string, unknown>, now: number): number {
  const period = syncFrequencyMinutes(config) * 60_000;
  const day = Math.floor(now / 86_400_000) * 86_400_000;
  const start = day + (minutesOfDay(config.syncStartAt) ?? 0) * 60_000;
  const k = Math.floor((now - start) / period) + 1;
  return start + k * period;
}

/** True when `now` falls inside the config's excludeWindow (UTC times of day; may wrap midnight). */
export function inExcludeWindow(config: Record<string, unknown>, now: number): boolean {
  const w = config.excludeWindow as Record<string, unknown> | undefined;
  const from = minutesOfDay(w?.excludeWindowStartTime);
  const to = minutesOfDay(w?.excludeWindowEndTime);
  if (from === undefined || to === undefined || from === to) return false;
  const m = Math.floor((now % 86_400_000) / 60_000);
  return from < to ? m >= from && m < to : m >= from || m < to;
}

/** Most due loads one scheduling pass looks at. */
const DUE_PER_PASS = 100;
const INTERRUPTED = "interrupted by a restart; rows it had not marked loaded stay staged for the next load";

export class WarehouseLoads {
  private stopped = true;
  private timer?: Timer;
  private readonly passes = new SerialPass(() => this.schedule(), () => !this.stopped);
  /** Per destination: the load or deletion running now; one at a time keeps loads and deletions apart. */
  private busy = new Map<string, Promise<unknown>>();
  private scheduledAt = new Map<string, number>();
  /** Loads that ran but whose outcome the store could not record; closed as failed on a later tick. */
  private unrecorded = new Map<string, { workspaceId: string; destinationId: string; attempt: number; error: string }>();

  /**
   * `thread` reads the staged rows itself, from the database it was made with (load-worker.ts,
   * the same one as `store`), and answers the exact staged ids it loaded; the store records the rest.
   */
  constructor(
    private store: WarehouseStore,
    private thread: LoadThread,
    private config: ConfigStore,
    private log: Logger,
    private settings: WarehouseLoadSettings = DEFAULT_LOAD_SETTINGS,
    private now: () => number = Date.now,
  ) {}

  /** Loads a crash interrupted are recorded as failed and queued again; then the scheduler runs. */
  async start() {
    const count = await this.store.failInterrupted(this.now(), INTERRUPTED);
    if (count) this.log.info("warehouse loads interrupted by a restart run again", { count });
    this.stopped = false;
    this.wake();
  }

  /** Stops starting loads and waits (bounded) for running ones; a load cut off runs again after a restart. */
  async stop(deadlineMs = 5000) {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await Promise.race([Promise.allSettled([...this.busy.values()]), new Promise((r) => setTimeout(r, deadlineMs))]);
    await this.thread.close().catch(() => {});
  }

  wake() {
    this.passes.wake();
  }

  /**
   * Starts a load of the destination now (POST /v2/destinations/{id}/sync). A load already
   * queued is made due now and its id returned: it takes every row staged by the time it starts.
   */
  async requestSync(workspaceId: string, destinationId: string): Promise<{ id: string }> {
    const dest = this.warehouseDestination(workspaceId, destinationId);
    const id = await this.enqueue(dest.workspaceId, dest.id, "api", this.now());
    this.wake();
    return { id };
  }

  /** The destination's loads, newest first. */
  async listSyncs(workspaceId: string, destinationId: string, limit = 50): Promise<LoadView[]> {
    this.warehouseDestination(workspaceId, destinationId);
    return (await this.store.listLoads(destinationId, limit)).map(loadView);
  }

  /**
   * Deletes users from the destination's warehouse (suppress_with_delete): their staged rows
   * first, then their rows in every namespace the destination has loaded into. Runs between
   * loads, so no load in flight can write the users' rows back afterwards.
   */
  async deleteUsers(dest: DestinationRuntime, userIds: string[]): Promise<number> {
    return this.exclusive(dest.id, async () => {
      await this.store.deleteStaged(dest.id, userIds);
      let deleted = 0;
      for (const namespace of await this.namespacesOf(dest)) deleted += await this.thread.deleteUsers(this.connectionOf(dest), namespace, userIds);
      return deleted;
    });
  }

  private warehouseDestination(workspaceId: string, destinationId: string): DestinationRuntime {
    const dest = this.config.snapshot().destinations.get(destinationId);
    if (!dest || dest.workspaceId !== workspaceId) throw notFound(`destination '${destinationId}' not found`);
    if (!isWarehouseKind(dest.type)) {
      throw badRequest(`destination '${destinationId}' is a ${dest.type} destination; only warehouse destinations (POSTGRES) have syncs`);
    }
    return dest;
  }

  /** Namespaces the destination may hold rows in: those staged for it, its configured one, its sources' defaults. */
  private async namespacesOf(dest: DestinationRuntime): Promise<string[]> {
    const out = new Set(await this.store.stagedNamespaces(dest.id));
    const snap = this.config.snapshot();
    for (const [sourceId, dests] of snap.bySource) {
      if (!dests.some((d) => d.id === dest.id)) continue;
      const source = snap.sources.get(sourceId);
      if (source) out.add(namespaceFor(dest, source.name));
    }
    return [...out];
  }

  /** Queues a load, or brings the already queued one forward; returns its id. */
  private enqueue(workspaceId: string, destinationId: string, trigger: string, dueAt: number, attempt = 1): Promise<string> {
    return this.store.queueLoad(this.newLoad(workspaceId, destinationId, trigger, dueAt, attempt));
  }

  private newLoad(workspaceId: string, destinationId: string, trigger: string, dueAt: number, attempt = 1): NewLoad {
    return { workspaceId, destinationId, trigger, attempt, dueAt, createdAt: this.now() };
  }

  private async schedule() {
    if (this.timer) clearTimeout(this.timer);
    const now = this.now();
    let wakeAt = now + MAX_IDLE_MS;
    try {
      const snap = this.config.snapshot();
      for (const [id, l] of this.unrecorded) {
        const error = `its outcome could not be recorded (${l.error}); rows it did not mark loaded stay staged for the next load`;
        const dest = snap.destinations.get(l.destinationId);
        await this.store.finishLoad({
          loadId: id,
          destinationId: l.destinationId,
          status: "failed",
          finishedAt: now,
          rows: {},
          discards: 0,
          error,
          next: dest ? this.newLoad(l.workspaceId, l.destinationId, "retry", now + this.retryDelay(dest, l.attempt), l.attempt + 1) : undefined,
        });
        this.unrecorded.delete(id);
      }
      for (const dest of snap.destinations.values()) {
        if (!isWarehouseKind(dest.type) || !dest.enabled) continue;
        let at = this.scheduledAt.get(dest.id);
        if (at === undefined) this.scheduledAt.set(dest.id, (at = nextSyncAt(dest.config, now)));
        if (at <= now) {
          if (!inExcludeWindow(dest.config, now)) await this.enqueue(dest.workspaceId, dest.id, "schedule", now);
          this.scheduledAt.set(dest.id, (at = nextSyncAt(dest.config, now)));
        }
        wakeAt = Math.min(wakeAt, at);
      }
      for (const load of await this.store.dueLoads(now, DUE_PER_PASS)) {
        if (this.stopped) break;
        if (this.busy.has(load.destinationId)) continue;
        const dest = snap.destinations.get(load.destinationId);
        if (!dest) {
          await this.store.cancelQueued(load.destinationId, now, "destination deleted");
          continue;
        }
        // A disabled destination keeps its loads queued until it is enabled again.
        if (!dest.enabled) continue;
        if (!(await this.store.startLoad(load.id, now))) continue;
        void this.exclusive(dest.id, () => this.run(dest, load)).catch((err) =>
          this.log.error("warehouse load failed unexpectedly", { err, destinationId: dest.id, loadId: load.id }),
        );
      }
      const next = await this.store.nextDueAt();
      if (next !== null) wakeAt = Math.min(wakeAt, Math.max(next, now + 1000));
    } catch (err) {
      this.log.error("could not schedule warehouse loads", { err });
    }
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), Math.max(10, wakeAt - now));
  }

  /** Runs fn when the destination has nothing else running; loads and deletions of one destination never overlap. */
  private async exclusive<T>(destinationId: string, fn: () => Promise<T>): Promise<T> {
    for (let running = this.busy.get(destinationId); running; running = this.busy.get(destinationId)) await running.catch(() => {});
    const p = fn();
    this.busy.set(destinationId, p);
    try {
      return await p;
    } finally {
      if (this.busy.get(destinationId) === p) this.busy.delete(destinationId);
      this.wake();
    }
  }

  /** Backoff before attempt `attempt + 1`: doubling from retryBackoffMs, at most the sync frequency. */
  private retryDelay(dest: Pick<DestinationRuntime, "config">, attempt: number): number {
    const cap = syncFrequencyMinutes(dest.config) * 60_000;
    return Math.min(cap, this.settings.retryBackoffMs * 2 ** Math.min(attempt - 1, 20));
  }

  private connectionOf(dest: DestinationRuntime): PostgresConfig {
    return { ...postgresConnection(dest.config), connectTimeoutSeconds: this.settings.connectTimeoutSeconds };
  }

  private async run(dest: DestinationRuntime, load: LoadRow): Promise<void> {
    const started = this.now();
    let outcome: LoadOutcome;
    try {
      outcome = await this.thread.load({
        destinationId: dest.id,
        connection: this.connectionOf(dest),
        loadId: load.id,
        uuidTs: new Date(started).toISOString(),
        rowsPerLoad: this.settings.rowsPerLoad,
        pageRows: this.settings.pageRows,
        intakeYield: this.settings.intakeYield,
      });
    } catch (err) {
      // The load thread died, or could not read or mark the staged rows (a full disk, say): the
      // rows it did not mark wait for the retry, which skips the ids already loaded.
      const message = (err as Error)?.message ?? String(err);
      outcome = { rows: {}, discards: 0, count: 0, yieldedMs: 0, failures: [{ namespace: "", code: "UNAVAILABLE", message }] };
    }
    const { rows, discards } = outcome;
    for (const f of outcome.failures) {
      this.log.warn("warehouse load failed", { error: f.message, destinationId: dest.id, loadId: load.id, namespace: f.namespace });
    }
    const failure = outcome.failures[0];
    const finished = this.now();
    const error = failure?.message ?? null;
    // yieldedMs: how long it paused for busy intake (intake-yield.ts), part of its time.
    if (error === null) this.log.info("warehouse load finished", { destinationId: dest.id, loadId: load.id, stagedRows: outcome.count, ms: finished - started, yieldedMs: outcome.yieldedMs });
    let next: NewLoad | undefined;
    if (failure !== undefined) {
      // Retryable (isRetryableLoadError): the database was unreachable or busy.
      if (failure.code === "UNAVAILABLE") next = this.newLoad(dest.workspaceId, dest.id, "retry", finished + this.retryDelay(dest, load.attempt), load.attempt + 1);
    } else if (outcome.count >= this.settings.rowsPerLoad) {
      next = this.newLoad(dest.workspaceId, dest.id, "more", finished);
    }
    try {
      await this.store.finishLoad({
        loadId: load.id,
        destinationId: dest.id,
        status: error === null ? "succeeded" : "failed",
        finishedAt: finished,
        rows,
        discards,
        error,
        next,
      });
    } catch (err) {
      // The store could not record the outcome (a full disk, say). Rows it did not mark loaded
      // stay staged and the next load takes them again, which the loader dedupes; until the record can be written
      // the load would show `running`, so each tick tries again to close it as failed.
      this.log.error("could not record a warehouse load's outcome; it will be loaded again", { err, destinationId: dest.id, loadId: load.id });
      this.unrecorded.set(load.id, { workspaceId: dest.workspaceId, destinationId: dest.id, attempt: load.attempt, error: (err as Error)?.message ?? String(err) });
    }
    // Staged rows of loads finished keepLoadedMs ago go after the load, not in its time: deleting
    // them costs about as much as loading them, with a day of slack. Loads may run meanwhile.
    this.thread
      .purgeLoaded(dest.id, started - this.settings.keepLoadedMs)
      .catch((err) => this.log.warn("could not delete a warehouse destination's loaded staged rows; the next load tries again", { err, destinationId: dest.id }));
  }
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

function loadView(r: LoadRow): LoadView {
  return {
    id: r.id,
    destinationId: r.destinationId,
    status: r.status,
    trigger: r.trigger,
    attempt: r.attempt,
    createdAt: new Date(r.createdAt).toISOString(),
    startedAt: iso(r.startedAt),
    finishedAt: iso(r.finishedAt),
    rows: r.rows ? JSON.parse(r.rows) : {},
    discards: r.discards ?? 0,
    error: r.error,
  };
}
