/**
 * Loads of warehouse destinations: staged rows (staging.ts) into the user's database
 * (postgres.ts), every `syncFrequency` minutes and on demand (POST /v2/destinations/{id}/sync).
 *
 * Every load is a `warehouse_loads` row: queued → running → succeeded | failed. A load takes
 * the destination's staged rows not yet loaded (up to `rowsPerLoad`) and loads them per
 * namespace, on the load thread (load-thread.ts) so that intake's thread never waits for it. On
 * success the rows are marked loaded in the same SQLite transaction that records the load.
 *
 * Nothing is lost and nothing is loaded twice: a failed load leaves its rows staged for the
 * next one, and a load whose PostgreSQL commit went through but whose SQLite marking did not
 * (a crash in between) is simply loaded again, which inserts nothing new because the loader
 * skips ids already in their table. A retryable failure (database unreachable) queues a retry
 * with backoff; other failures wait for the next scheduled or requested load.
 */
import type { Statement } from "bun:sqlite";
import type { Db } from "../../db";
import type { ConfigStore, DestinationRuntime } from "../control-plane/config-store";
import { postgresConnection, syncFrequencyMinutes } from "../destinations/postgres";
import { badRequest, notFound } from "../lib/errors";
import type { Logger } from "../lib/logger";
import { type LoadOutcome, LoadThread } from "./load-thread";
import type { PostgresConfig } from "./postgres";
import { isWarehouseKind, namespaceFor } from "./staging";

export type LoadStatus = "queued" | "running" | "succeeded" | "failed";

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
  /** First retry delay after a retryable failure; doubles per attempt up to the sync frequency. */
  retryBackoffMs: number;
  /** Seconds the loader waits for a connection. */
  connectTimeoutSeconds: number;
  /** How long staged rows stay after their load succeeded (for inspection), then go. */
  keepLoadedMs: number;
}

export const DEFAULT_LOAD_SETTINGS: WarehouseLoadSettings = {
  rowsPerLoad: 200_000,
  retryBackoffMs: 10_000,
  connectTimeoutSeconds: 10,
  keepLoadedMs: 24 * 3600_000,
};

interface LoadRow {
  id: string;
  workspaceId: string;
  destinationId: string;
  status: LoadStatus;
  trigger: string;
  attempt: number;
  dueAt: number;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  rows: string | null;
  discards: number | null;
  error: string | null;
}

const LOAD_COLUMNS = `id, workspace_id AS workspaceId, destination_id AS destinationId, status, trigger, attempt, due_at AS dueAt,
  created_at AS createdAt, started_at AS startedAt, finished_at AS finishedAt, rows, discards, error`;
/** The scheduler looks again at least this often (config changes, new destinations). */
const MAX_IDLE_MS = 60_000;

function newLoadId(): string {
  return `whl_${Bun.randomUUIDv7("hex").replaceAll("-", "")}`;
}

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

export class WarehouseLoads {
  private stopped = true;
  private timer?: Timer;
  private wakeScheduled = false;
  /** Per destination: the load or deletion running now; one at a time keeps loads and deletions apart. */
  private busy = new Map<string, Promise<unknown>>();
  private thread: LoadThread;
  private scheduledAt = new Map<string, number>();
  /** Loads that ran but whose outcome SQLite could not record; closed as failed on a later tick. */
  private unrecorded = new Map<string, { workspaceId: string; destinationId: string; attempt: number; error: string }>();
  private s: Record<
    "insert" | "queuedFor" | "makeDue" | "due" | "nextDue" | "markRunning" | "finish" | "interrupted" | "markLoaded" | "purgeLoaded" | "list" | "namespaces" | "deleteStaged" | "cancelQueued",
    Statement
  >;

  constructor(
    private db: Db,
    private config: ConfigStore,
    private log: Logger,
    private settings: WarehouseLoadSettings = DEFAULT_LOAD_SETTINGS,
    private now: () => number = Date.now,
  ) {
    const c = db.$client;
    this.thread = new LoadThread(c.filename);
    this.s = {
      insert: c.prepare(
        `INSERT INTO warehouse_loads (id, workspace_id, destination_id, status, trigger, attempt, due_at, created_at) VALUES (?, ?, ?, 'queued', ?, ?, ?, ?)`,
      ),
      queuedFor: c.prepare(`SELECT id, due_at AS dueAt FROM warehouse_loads WHERE destination_id = ? AND status = 'queued' ORDER BY due_at LIMIT 1`),
      makeDue: c.prepare(`UPDATE warehouse_loads SET due_at = ? WHERE id = ? AND due_at > ?`),
      due: c.prepare(`SELECT ${LOAD_COLUMNS} FROM warehouse_loads WHERE status = 'queued' AND due_at <= ? ORDER BY due_at, id LIMIT 100`),
      nextDue: c.prepare(`SELECT MIN(due_at) AS at FROM warehouse_loads WHERE status = 'queued'`),
      markRunning: c.prepare(`UPDATE warehouse_loads SET status = 'running', started_at = ? WHERE id = ? AND status = 'queued'`),
      finish: c.prepare(`UPDATE warehouse_loads SET status = ?, finished_at = ?, rows = ?, discards = ?, error = ? WHERE id = ?`),
      interrupted: c.prepare(
        `UPDATE warehouse_loads SET status = 'failed', finished_at = ?, error = 'interrupted by a restart; its rows stay staged for the next load'
          WHERE status = 'running' RETURNING destination_id AS destinationId, workspace_id AS workspaceId`,
      ),
      // By id range: staged rows only get higher ids, so the rows at or below the load's last id
      // still waiting are exactly the ones it read (minus any a regulation deleted meanwhile).
      markLoaded: c.prepare(
        `UPDATE warehouse_staged SET load_id = ? WHERE destination_id = ? AND load_id IS NULL AND id <= ?
           AND namespace IN (SELECT value FROM json_each(?))`,
      ),
      purgeLoaded: c.prepare(
        `DELETE FROM warehouse_staged WHERE load_id IN
           (SELECT id FROM warehouse_loads WHERE destination_id = ? AND status = 'succeeded' AND finished_at < ?)`,
      ),
      list: c.prepare(`SELECT ${LOAD_COLUMNS} FROM warehouse_loads WHERE destination_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`),
      namespaces: c.prepare(`SELECT DISTINCT namespace FROM warehouse_staged WHERE destination_id = ?`),
      deleteStaged: c.prepare(`DELETE FROM warehouse_staged WHERE destination_id = ? AND user_key IN (SELECT value FROM json_each(?))`),
      cancelQueued: c.prepare(`UPDATE warehouse_loads SET status = 'failed', finished_at = ?, error = ? WHERE destination_id = ? AND status = 'queued'`),
    };
  }

  /** Loads a crash interrupted are recorded as failed and queued again; then the scheduler runs. */
  start() {
    this.stopped = false;
    const now = this.now();
    const interrupted = this.s.interrupted.all(now) as Array<{ destinationId: string; workspaceId: string }>;
    for (const l of interrupted) this.enqueue(l.workspaceId, l.destinationId, "retry", now);
    if (interrupted.length) this.log.info("warehouse loads interrupted by a restart run again", { count: interrupted.length });
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
    if (this.wakeScheduled || this.stopped) return;
    this.wakeScheduled = true;
    setImmediate(() => {
      this.wakeScheduled = false;
      this.tick();
    });
  }

  /**
   * Starts a load of the destination now (POST /v2/destinations/{id}/sync). A load already
   * queued is made due now and its id returned: it takes every row staged by the time it starts.
   */
  requestSync(workspaceId: string, destinationId: string): { id: string } {
    const dest = this.warehouseDestination(workspaceId, destinationId);
    const id = this.enqueue(dest.workspaceId, dest.id, "api", this.now());
    this.wake();
    return { id };
  }

  /** The destination's loads, newest first. */
  listSyncs(workspaceId: string, destinationId: string, limit = 50): LoadView[] {
    this.warehouseDestination(workspaceId, destinationId);
    return (this.s.list.all(destinationId, limit) as LoadRow[]).map(loadView);
  }

  /**
   * Deletes users from the destination's warehouse (suppress_with_delete): their staged rows
   * first, then their rows in every namespace the destination has loaded into. Runs between
   * loads, so no load in flight can write the users' rows back afterwards.
   */
  async deleteUsers(dest: DestinationRuntime, userIds: string[]): Promise<number> {
    return this.exclusive(dest.id, async () => {
      this.s.deleteStaged.run(dest.id, JSON.stringify(userIds));
      let deleted = 0;
      for (const namespace of this.namespacesOf(dest)) deleted += await this.thread.deleteUsers(this.connectionOf(dest), namespace, userIds);
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
  private namespacesOf(dest: DestinationRuntime): string[] {
    const out = new Set((this.s.namespaces.all(dest.id) as Array<{ namespace: string }>).map((r) => r.namespace));
    const snap = this.config.snapshot();
    for (const [sourceId, dests] of snap.bySource) {
      if (!dests.some((d) => d.id === dest.id)) continue;
      const source = snap.sources.get(sourceId);
      if (source) out.add(namespaceFor(dest, source.name));
    }
    return [...out];
  }

  /** Queues a load, or brings the already queued one forward; returns its id. */
  private enqueue(workspaceId: string, destinationId: string, trigger: string, dueAt: number, attempt = 1): string {
    const queued = this.s.queuedFor.get(destinationId) as { id: string; dueAt: number } | null;
    if (queued) {
      this.s.makeDue.run(dueAt, queued.id, dueAt);
      return queued.id;
    }
    const id = newLoadId();
    this.s.insert.run(id, workspaceId, destinationId, trigger, attempt, dueAt, this.now());
    return id;
  }

  private tick() {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    const now = this.now();
    let wakeAt = now + MAX_IDLE_MS;
    try {
      const snap = this.config.snapshot();
      for (const [id, l] of this.unrecorded) {
        const error = `its outcome could not be recorded (${l.error}); its rows stay staged for the next load`;
        const dest = snap.destinations.get(l.destinationId);
        this.db.$client.transaction(() => {
          this.s.finish.run("failed", now, "{}", 0, error, id);
          if (dest) this.enqueue(l.workspaceId, l.destinationId, "retry", now + this.retryDelay(dest, l.attempt), l.attempt + 1);
        })();
        this.unrecorded.delete(id);
      }
      for (const dest of snap.destinations.values()) {
        if (!isWarehouseKind(dest.type) || !dest.enabled) continue;
        let at = this.scheduledAt.get(dest.id);
        if (at === undefined) this.scheduledAt.set(dest.id, (at = nextSyncAt(dest.config, now)));
        if (at <= now) {
          if (!inExcludeWindow(dest.config, now)) this.enqueue(dest.workspaceId, dest.id, "schedule", now);
          this.scheduledAt.set(dest.id, (at = nextSyncAt(dest.config, now)));
        }
        wakeAt = Math.min(wakeAt, at);
      }
      for (const load of this.s.due.all(now) as LoadRow[]) {
        if (this.busy.has(load.destinationId)) continue;
        const dest = snap.destinations.get(load.destinationId);
        if (!dest) {
          this.s.cancelQueued.run(now, "destination deleted", load.destinationId);
          continue;
        }
        // A disabled destination keeps its loads queued until it is enabled again.
        if (!dest.enabled) continue;
        if (this.s.markRunning.run(now, load.id).changes === 0) continue;
        void this.exclusive(dest.id, () => this.run(dest, load)).catch((err) =>
          this.log.error("warehouse load failed unexpectedly", { err, destinationId: dest.id, loadId: load.id }),
        );
      }
      const next = (this.s.nextDue.get() as { at: number | null } | null)?.at;
      if (next !== null && next !== undefined) wakeAt = Math.min(wakeAt, Math.max(next, now + 1000));
    } catch (err) {
      this.log.error("could not schedule warehouse loads", { err });
    }
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
    this.s.purgeLoaded.run(dest.id, started - this.settings.keepLoadedMs);
    let outcome: LoadOutcome;
    try {
      outcome = await this.thread.load({
        destinationId: dest.id,
        connection: this.connectionOf(dest),
        loadId: load.id,
        uuidTs: new Date(started).toISOString(),
        rowsPerLoad: this.settings.rowsPerLoad,
      });
    } catch (err) {
      // The load thread died or could not read the staged rows: nothing was marked loaded, so
      // the rows wait for the retry.
      const message = (err as Error)?.message ?? String(err);
      outcome = { rows: {}, discards: 0, loaded: [], count: 0, lastId: 0, failures: [{ namespace: "", code: "UNAVAILABLE", message }] };
    }
    const { rows, discards, loaded, lastId } = outcome;
    for (const f of outcome.failures) {
      this.log.warn("warehouse load failed", { error: f.message, destinationId: dest.id, loadId: load.id, namespace: f.namespace });
    }
    const failure = outcome.failures[0];
    const finished = this.now();
    const error = failure?.message ?? null;
    try {
      this.db.$client.transaction(() => {
        if (loaded.length) this.s.markLoaded.run(load.id, dest.id, lastId, JSON.stringify(loaded));
        this.s.finish.run(error === null ? "succeeded" : "failed", finished, JSON.stringify(rows), discards, error, load.id);
      })();
    } catch (err) {
      // SQLite could not record the outcome (a full disk, say). The rows stay staged and the
      // next load takes them again, which the loader dedupes; until the record can be written
      // the load would show `running`, so each tick tries again to close it as failed.
      this.log.error("could not record a warehouse load's outcome; it will be loaded again", { err, destinationId: dest.id, loadId: load.id });
      this.unrecorded.set(load.id, { workspaceId: dest.workspaceId, destinationId: dest.id, attempt: load.attempt, error: (err as Error)?.message ?? String(err) });
      return;
    }

    if (failure !== undefined) {
      // Retryable (isRetryableLoadError): the database was unreachable or busy.
      if (failure.code === "UNAVAILABLE") {
        this.enqueue(dest.workspaceId, dest.id, "retry", finished + this.retryDelay(dest, load.attempt), load.attempt + 1);
      }
    } else if (outcome.count >= this.settings.rowsPerLoad) {
      this.enqueue(dest.workspaceId, dest.id, "more", finished);
    }
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
