/**
 * WAL checkpoints in two steps, so the WAL neither grows without end nor stalls intake.
 *
 * Four times a second the checkpoint thread (checkpoint-worker.ts) copies the WAL into the
 * database file (PASSIVE: writers go on meanwhile). Under steady load that copy never
 * catches up with the newest frame, and SQLite starts the WAL over only when every frame
 * has been copied, so on its own the WAL grows for ever (measured: 6 GB in 90 s). So when
 * the WAL holds more than RESTART_FRAMES frames, the main thread, right after the thread's
 * copy, runs a RESTART checkpoint of the few frames written meanwhile, through its own
 * synchronous=FULL connection; nothing else runs on the main thread during it, so it
 * completes and the next commit writes the WAL from its start. It costs the main thread a
 * short copy and two fsyncs, at most four times a second: measured under full intake load,
 * 4.5 ms median (7.5 ms at most), which shows in intake's p99. Moving those fsyncs to the
 * checkpoint thread (holding intake's commits meanwhile) is the next step for the p99.
 */
import { Database } from "bun:sqlite";
import type { Logger } from "../lib/logger";
import { Counter, type Metrics } from "../lib/metrics";
import { locateWorkerFile } from "../lib/worker-file";

/** 2,000 frames of 4 KB: the WAL file settles near 8 MB plus what is written between two checks. */
const RESTART_FRAMES = 2000;

export class Checkpoints {
  private worker: Worker;
  private db: Database;
  private timer: Timer | undefined;
  private running = false;
  private ready: Promise<void>;
  private restarts: Counter;

  constructor(
    path: string,
    private log: Logger,
    metrics: Metrics,
    private intervalMs = 250,
  ) {
    this.restarts = metrics.register(new Counter("sluice_wal_restarts_total", "Times the WAL was checkpointed whole and started over (it stays near 8 MB plus what is written between two checks)."));
    this.db = new Database(path);
    // Never wait on the main thread: a busy checkpoint is simply tried again next time.
    this.db.exec("PRAGMA busy_timeout = 0");
    this.db.exec("PRAGMA synchronous = FULL");
    this.db.exec("PRAGMA wal_autocheckpoint = 0");
    this.worker = new Worker(locateWorkerFile(import.meta.url, "checkpoint-worker", "src/gateway/checkpoint-worker.ts"));
    this.ready = new Promise((resolve, reject) => {
      const onInit = (e: MessageEvent) => {
        if (e.data?.type === "ready") resolve();
        else if (e.data?.type === "init-failed") reject(new Error(`the checkpoint thread could not open the database: ${e.data.error}`));
        else return;
        this.worker.removeEventListener("message", onInit);
      };
      this.worker.addEventListener("message", onInit);
    });
    this.worker.addEventListener("message", (e: MessageEvent) => {
      if (e.data?.type === "checkpointed") this.afterCopy(e.data);
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
    this.worker.postMessage({ type: "checkpoint" });
  }

  private afterCopy(r: { busy?: number; log?: number; error?: string }) {
    this.running = false;
    if (r.error) {
      this.log.warn("WAL checkpoint failed", { error: r.error });
      return;
    }
    if ((r.log ?? 0) < RESTART_FRAMES) return;
    try {
      const r = this.db.query("PRAGMA wal_checkpoint(RESTART)").get() as { busy: number };
      if (!r.busy) this.restarts.inc();
    } catch (err) {
      this.log.warn("WAL restart failed", { err });
    }
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
    this.db.close();
  }
}
