/**
 * WAL checkpoints, so the WAL neither grows without end nor stalls the main thread.
 *
 * Four times a second the checkpoint thread (checkpoint-worker.ts) copies the WAL into the
 * database file (PASSIVE: writers go on meanwhile). Under steady load that copy never
 * catches up with the newest frame, and SQLite starts the WAL over only when every frame
 * has been copied, so on its own the WAL grows for ever (measured: 6 GB in 90 s). So when
 * the WAL holds more than RESTART_BYTES, the thread first copies again, with more
 * PASSIVE passes, what was written during the pass before, until a pass finds little; then
 * intake's commits are held back (requests wait; the main thread goes on reading them) while
 * the thread checkpoints the few frames written meanwhile with RESTART; then the next commit
 * writes the WAL from its start.
 *
 * The RESTART ran on the main thread at first: its copy and two fsyncs took 4.5 ms median
 * under full load, four times a second, and showed in intake's p99. Other writers of the
 * main thread (delivery state) may still wait for a RESTART if they write during one.
 */
import type { Logger } from "../lib/logger";
import { Counter, type Metrics } from "../lib/metrics";
import { type StorageHealth, isStorageFailure, storageHealth } from "../lib/storage-health";
import { locateWorkerFile } from "../lib/worker-file";

/**
 * The WAL file settles near this plus what is written between two checks and during the
 * passes. In bytes, not frames, as the page size may differ between databases: 2,000 frames
 * of 16 KB pages held intake's commits longer (batch p99 37 against 27 ms in an A/B).
 */
const RESTART_BYTES = 8 * 1024 * 1024;
/**
 * A RESTART starts the WAL over but leaves its file at its high-water size (122 MB in a soak:
 * retention's deletes and backups write more than 8 MB between two restarts). Each writing
 * connection sets this as its journal_size_limit, so its first commit after a restart cuts the
 * file back to it. Not to RESTART_BYTES: a file that keeps growing again costs every fdatasync
 * a journaled size change.
 */
export const WAL_FILE_LIMIT_BYTES = 64 * 1024 * 1024;
/**
 * Intake is held only once a PASSIVE pass found at most this much newly written to copy: the
 * RESTART then copies about as much. Holding right after the first pass, which under batch
 * load left some 10 MB written during it, held commits 25 ms four times a second; now about 5.
 */
const HOLD_BYTES = 1024 * 1024;
/** PASSIVE passes in a row before holding anyway (the disk cannot keep up with the writes). */
const MAX_PASSES = 4;

/** What the checkpoint thread needs of intake: its commits held back during a RESTART. */
export interface Holdable {
  hold(): void;
  release(): void;
}

type Result = { mode: "PASSIVE" | "RESTART"; busy?: number; log?: number; checkpointed?: number; error?: string; code?: string };

export class Checkpoints {
  private worker: Worker;
  private timer: Timer | undefined;
  private running = false;
  private restartAfter = 0;
  /** Frames copied by the checkpoints since the WAL started over, and PASSIVE passes in a row. */
  private backfilled = 0;
  private passes = 0;
  private ready: Promise<void>;
  private restarts: Counter;
  /** RESTART_BYTES and HOLD_BYTES in frames (one page each) of this database. */
  private restartFrames = 0;
  private holdFrames = 0;
  private storage: StorageHealth;

  constructor(
    path: string,
    private intake: Holdable,
    private log: Logger,
    metrics: Metrics,
    private intervalMs = 250,
  ) {
    this.storage = storageHealth(path);
    this.restarts = metrics.register(new Counter("sluice_wal_restarts_total", "Times the WAL was checkpointed whole and started over (it stays near 8 MB plus what is written between two checks)."));
    this.worker = new Worker(locateWorkerFile(import.meta.url, "checkpoint-worker", "src/gateway/checkpoint-worker.ts"));
    this.ready = new Promise((resolve, reject) => {
      const onInit = (e: MessageEvent) => {
        if (e.data?.type === "ready") {
          this.restartFrames = Math.ceil(RESTART_BYTES / e.data.pageSize);
          this.holdFrames = Math.ceil(HOLD_BYTES / e.data.pageSize);
          resolve();
        }
        else if (e.data?.type === "init-failed") reject(new Error(`the checkpoint thread could not open the database: ${e.data.error}`));
        else return;
        this.worker.removeEventListener("message", onInit);
      };
      this.worker.addEventListener("message", onInit);
    });
    this.worker.addEventListener("message", (e: MessageEvent) => {
      if (e.data?.type === "checkpointed") this.done(e.data as Result);
    });
    this.worker.postMessage({ type: "init", path });
  }

  async start() {
    await this.ready;
    this.timer = setInterval(() => this.tick(), this.intervalMs);
  }

  private tick() {
    if (this.running) return;
    this.running = true;
    this.worker.postMessage({ type: "checkpoint", mode: "PASSIVE" });
  }

  /**
   * A checkpoint that cannot grow the database file (a full disk) fails four times a second:
   * logged when it starts and when it ends, and shown by /health meanwhile. The WAL keeps
   * every commit until then, and grows.
   */
  private report(r: Result, wrote: boolean): void {
    if (!r.error) {
      // A pass that found nothing to copy proves nothing about the disk.
      if (wrote && this.storage.recovered("checkpoint")) this.log.info("WAL checkpoints write again");
      return;
    }
    const err = { message: r.error, code: r.code };
    if (!isStorageFailure(err)) this.log.warn(r.mode === "RESTART" ? "WAL restart failed" : "WAL checkpoint failed", { error: r.error });
    else if (this.storage.failed("checkpoint", err)) this.log.warn("WAL checkpoints fail: the database file cannot be written; the WAL keeps every commit and grows until they succeed", { error: r.error, code: r.code });
  }

  private done(r: Result) {
    if (r.mode === "RESTART") {
      this.report(r, true);
      this.intake.release();
      this.running = false;
      this.backfilled = 0;
      this.passes = 0;
      if (r.error) return;
      if (!r.busy) this.restarts.inc();
      // A reader elsewhere (another process) kept the WAL: do not hold intake again soon.
      else this.restartAfter = Date.now() + 2000;
      return;
    }
    const checkpointed = r.checkpointed ?? 0;
    const copied = checkpointed >= this.backfilled ? checkpointed - this.backfilled : checkpointed;
    this.report(r, copied > 0);
    this.backfilled = checkpointed;
    if (r.error || (r.log ?? 0) < this.restartFrames || Date.now() < this.restartAfter) {
      this.running = false;
      this.passes = 0;
      return;
    }
    // What this pass copied was written during the one before: copy again, without holding
    // intake, until a pass finds little, so the RESTART that holds it is short.
    if (copied > this.holdFrames && ++this.passes < MAX_PASSES) {
      this.worker.postMessage({ type: "checkpoint", mode: "PASSIVE" });
      return;
    }
    this.passes = 0;
    this.intake.hold();
    this.worker.postMessage({ type: "checkpoint", mode: "RESTART" });
  }

  async close() {
    clearInterval(this.timer);
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 5000);
      this.worker.addEventListener("message", (e: MessageEvent) => {
        if (e.data?.type === "closed") {
          clearTimeout(t);
          resolve();
        }
      });
      this.worker.postMessage({ type: "close" });
    });
    this.worker.terminate();
    // A RESTART cut short by the close must not leave intake's commits held.
    this.intake.release();
  }
}
