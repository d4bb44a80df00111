/**
 * The warehouse loader's own thread. A load parses tens of thousands of staged rows, encodes
 * them for COPY and waits on PostgreSQL for seconds; on the main thread that work would hold
 * up intake (event calls share that thread). So WarehouseLoads (loads.ts) asks this thread,
 * which reads the staged rows itself (load-worker.ts) from whichever store Sluice runs on,
 * through a connection of its own, loads them, marks there the exact staged rows it loaded, and
 * answers with the outcome; the main thread only records it.
 *
 * The thread starts with the first load and ends after a minute without work, so a Sluice
 * without warehouse destinations never has it. If it dies, the calls in flight fail (a load
 * cut off is rolled back by PostgreSQL) and the next call starts a new one.
 */
import { AppError, type ErrorCode } from "../lib/errors";
import { locateWorkerFile } from "../lib/worker-file";
import type { IntakeYieldSettings } from "./intake-yield";
import type { PostgresConfig } from "../destinations/postgres/config";
import type { StagedRowsLocation } from "./store";

/** What the thread needs to load one destination's staged rows. */
export interface LoadJob {
  destinationId: string;
  connection: PostgresConfig;
  loadId: string;
  /** The load's time, written as every row's uuid_ts. */
  uuidTs: string;
  rowsPerLoad: number;
  /** Rows read, and loaded (PostgresWarehouse.load per namespace), at a time. */
  pageRows: number;
  /** When a load pauses for intake (intake-yield.ts). */
  intakeYield: IntakeYieldSettings;
}

/** A namespace whose load failed, and why. */
export interface NamespaceFailure {
  namespace: string;
  code: ErrorCode;
  message: string;
}

export interface LoadOutcome {
  /** Rows written per table, over the namespaces that loaded. */
  rows: Record<string, number>;
  discards: number;
  failures: NamespaceFailure[];
  /** Staged rows read (a full load, rowsPerLoad of them, means more may wait). */
  count: number;
  /** Milliseconds the thread's loads paused for intake while this one ran. */
  yieldedMs: number;
}

export type WorkerRequest =
  | { type: "load"; seq: number; staged: StagedRowsLocation; job: LoadJob }
  | { type: "deleteUsers"; seq: number; connection: PostgresConfig; namespace: string; userIds: string[] }
  | { type: "purge"; seq: number; staged: StagedRowsLocation; destinationId: string; finishedBefore: number }
  | { type: "close"; seq: number };

export type WorkerReply = { seq: number; ok: true; value: unknown } | { seq: number; ok: false; code: ErrorCode; message: string };

const IDLE_MS = 60_000;

export class LoadThread {
  private worker?: Worker;
  private seq = 0;
  private pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  private idleTimer?: Timer;

  /** `staged`: Sluice's own database, where the thread reads the staged rows. */
  constructor(private readonly staged: StagedRowsLocation) {}

  load(job: LoadJob): Promise<LoadOutcome> {
    return this.call({ type: "load", staged: this.staged, job }) as Promise<LoadOutcome>;
  }

  /**
   * Deletes the destination's staged rows of loads that finished before `finishedBefore`,
   * slowly: it is background work with hours of slack (StagedRowsReader.purgeLoaded). While one
   * runs for the destination, another is not started.
   */
  purgeLoaded(destinationId: string, finishedBefore: number): Promise<void> {
    return this.call({ type: "purge", staged: this.staged, destinationId, finishedBefore }) as Promise<void>;
  }

  deleteUsers(connection: PostgresConfig, namespace: string, userIds: string[]): Promise<number> {
    return this.call({ type: "deleteUsers", connection, namespace, userIds }) as Promise<number>;
  }

  /** Closes the thread's connections and ends it. */
  async close(): Promise<void> {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const worker = this.worker;
    if (!worker) return;
    await Promise.race([this.call({ type: "close" }).catch(() => {}), new Promise((r) => setTimeout(r, 2000))]);
    worker.terminate();
    if (this.worker === worker) this.worker = undefined;
  }

  private call(msg: { type: WorkerRequest["type"] } & Record<string, unknown>): Promise<unknown> {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const worker = this.worker ?? this.spawn();
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      this.pending.set(seq, { resolve, reject });
      worker.postMessage({ ...msg, seq });
    });
  }

  private spawn(): Worker {
    const worker = new Worker(locateWorkerFile(import.meta.url, "load-worker", "src/warehouse/load-worker.ts"));
    worker.onmessage = (e: MessageEvent<WorkerReply>) => {
      const reply = e.data;
      const p = this.pending.get(reply.seq);
      if (!p) return;
      this.pending.delete(reply.seq);
      if (reply.ok) p.resolve(reply.value);
      else p.reject(new AppError(reply.code, reply.message));
      if (this.pending.size === 0) this.scheduleIdle();
    };
    worker.onerror = (e) => {
      // The thread died: everything asked of it fails, and the next call starts a new one.
      if (this.worker === worker) this.worker = undefined;
      const err = new AppError("INTERNAL", `the warehouse load thread stopped: ${e.message}`);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      worker.terminate();
    };
    this.worker = worker;
    return worker;
  }

  private scheduleIdle() {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.pending.size === 0) void this.close();
    }, IDLE_MS);
    // An idle thread must not keep a stopping process alive.
    this.idleTimer.unref?.();
  }
}
