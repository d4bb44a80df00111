/**
 * Group commit for intake. Rows of every request in one turn of the event loop go to
 * the storage thread (event-writer-worker.ts) as one message; it commits them
 * together with whatever else arrived meanwhile. A caller's promise settles only once
 * the transaction holding its rows has committed, so "OK" always means "on disk".
 */
import { locateWorkerFile } from "../lib/worker-file";
import { type EventRow, RowBatch } from "./row-codec";

export type { EventRow };

interface Pending {
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class GroupCommitWriter {
  private worker: Worker;
  private nextId = 1;
  private waiting = new Map<number, Pending[]>();
  private batch: { id: number; rows: RowBatch; pending: Pending[] } | undefined;
  private afterCommit: Array<() => void> = [];
  private idle: Array<() => void> = [];
  private closed = false;
  private ready: Promise<void>;

  constructor(path: string, synchronous: "FULL" | "NORMAL") {
    this.worker = new Worker(locateWorkerFile(import.meta.url, "event-writer-worker", "src/gateway/event-writer-worker.ts"));
    this.ready = new Promise((resolve, reject) => {
      const onInit = (e: MessageEvent) => {
        if (e.data?.type === "ready") resolve();
        else if (e.data?.type === "init-failed") reject(new Error(`event writer could not open the database: ${e.data.error}`));
        else return;
        this.worker.removeEventListener("message", onInit);
      };
      this.worker.addEventListener("message", onInit);
    });
    this.worker.addEventListener("message", (e: MessageEvent) => this.onMessage(e.data));
    this.worker.addEventListener("error", (e) => this.failAll(new Error(`event writer failed: ${(e as ErrorEvent).message}`)));
    this.worker.postMessage({ type: "init", path, synchronous });
  }

  /** Resolves when the storage thread has opened the database. */
  start(): Promise<void> {
    return this.ready;
  }

  /** Resolves once the rows are committed. */
  write(rows: EventRow[]): Promise<void> {
    if (this.closed) return Promise.reject(new Error("storage is shutting down"));
    return new Promise((resolve, reject) => {
      if (!this.batch) {
        this.batch = { id: this.nextId++, rows: new RowBatch(), pending: [] };
        setImmediate(() => this.send());
      }
      for (const r of rows) this.batch.rows.add(r);
      this.batch.pending.push({ resolve, reject });
    });
  }

  /** Runs after every commit (the processor's wake-up signal). */
  onCommit(fn: () => void) {
    this.afterCommit.push(fn);
  }

  /** Resolves when everything written so far is committed (or failed). */
  settled(): Promise<void> {
    this.send();
    if (this.waiting.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private send() {
    const b = this.batch;
    if (!b) return;
    this.batch = undefined;
    this.waiting.set(b.id, b.pending);
    const { bytes, index, rows } = b.rows;
    this.worker.postMessage({ type: "write", id: b.id, bytes, index, rows }, [bytes.buffer as ArrayBuffer, index.buffer as ArrayBuffer]);
  }

  private onMessage(msg: any) {
    if (msg?.type !== "committed" && msg?.type !== "failed") return;
    const err = msg.type === "failed" ? new Error(msg.error) : undefined;
    for (const id of msg.ids as number[]) {
      const pending = this.waiting.get(id);
      this.waiting.delete(id);
      if (!pending) continue;
      for (const p of pending) err ? p.reject(err) : p.resolve();
    }
    if (!err) for (const fn of this.afterCommit) fn();
    if (this.waiting.size === 0 && !this.batch) for (const fn of this.idle.splice(0)) fn();
  }

  private failAll(err: Error) {
    for (const pending of this.waiting.values()) for (const p of pending) p.reject(err);
    this.waiting.clear();
    for (const fn of this.idle.splice(0)) fn();
  }

  /** Stops taking writes, commits what is queued, and closes the storage thread's connection. */
  async close() {
    if (this.closed) return;
    this.closed = true;
    this.send();
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
  }
}
