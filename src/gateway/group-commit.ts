/**
 * Group commit for intake. Rows of every request that arrives in one turn of the event
 * loop are inserted and committed together when the loop goes idle (setImmediate), on
 * the main thread, through a connection of their own with prepared statements. That
 * connection commits without SQLite's fsync; the sync thread (wal-sync-worker.ts)
 * fsyncs the WAL file and only then are the callers answered. So with `--sync FULL`
 * "OK" still means "on disk, survives a power cut", but the main thread never waits
 * for the disk, and several commits share one fsync while the previous one runs.
 *
 * Why not the whole commit on a storage thread: handing rows across threads cost the
 * main thread about as much as inserting them, and the other thread twice that.
 */
import { Database, type Statement } from "bun:sqlite";
import { locateWorkerFile } from "../lib/worker-file";

export interface EventRow {
  workspaceId: string;
  sourceId: string;
  messageId: string;
  userKey: string;
  type: string;
  payload: string;
  receivedAt: number;
}

interface Pending {
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class GroupCommitWriter {
  private db: Database;
  private insert: Statement;
  private commitRows: (rows: EventRow[]) => void;
  private worker: Worker;
  private rows: EventRow[] = [];
  private pending: Pending[] = [];
  private scheduled = false;
  /** Commits waiting for their fsync, by sequence number. */
  private unsynced = new Map<number, Pending[]>();
  private seq = 0;
  private afterCommit: Array<(lastEventId: number) => void> = [];
  private idle: Array<() => void> = [];
  /** The newest id given to an event; ids are assigned here (see db/schema/pipeline.ts). */
  private lastEventId: number;
  private closed = false;
  private broken: Error | undefined;
  private ready: Promise<void>;

  constructor(
    path: string,
    private synchronous: "FULL" | "NORMAL",
    /** No event may get an id at or below this (the processor's cursor, ids deliveries refer to). */
    idFloor = 0,
  ) {
    this.db = new Database(path, { strict: true });
    this.db.exec("PRAGMA busy_timeout = 5000");
    this.db.exec("PRAGMA journal_mode = WAL");
    // Durability comes from the sync thread's fsync before anyone is answered (see above).
    this.db.exec("PRAGMA synchronous = OFF");
    // Checkpoints run on the sync thread, whose connection syncs the database file.
    this.db.exec("PRAGMA wal_autocheckpoint = 0");
    const newest = (this.db.query("SELECT max(id) AS id FROM events").get() as { id: number | null }).id ?? 0;
    // Ids only grow, even after the newest events were deleted: an id the processor has
    // passed must never be given again, or its new event would never be routed.
    this.lastEventId = Math.max(newest, idFloor);
    this.insert = this.db.prepare(
      "INSERT INTO events (id, workspace_id, source_id, message_id, user_key, type, payload, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    );
    this.commitRows = this.db.transaction((rows: EventRow[]) => {
      let id = this.lastEventId;
      for (const r of rows) this.insert.run(++id, r.workspaceId, r.sourceId, r.messageId, r.userKey, r.type, r.payload, r.receivedAt);
      this.lastEventId = id;
    }).immediate;

    this.worker = new Worker(locateWorkerFile(import.meta.url, "wal-sync-worker", "src/gateway/wal-sync-worker.ts"));
    this.ready = new Promise((resolve, reject) => {
      const onInit = (e: MessageEvent) => {
        if (e.data?.type === "ready") resolve();
        else if (e.data?.type === "init-failed") reject(new Error(`the sync thread could not open the database: ${e.data.error}`));
        else return;
        this.worker.removeEventListener("message", onInit);
      };
      this.worker.addEventListener("message", onInit);
    });
    this.worker.addEventListener("message", (e: MessageEvent) => this.onSynced(e.data));
    this.worker.addEventListener("error", (e) => this.failUnsynced(new Error(`the sync thread failed: ${(e as ErrorEvent).message}`)));
    this.worker.postMessage({ type: "init", path });
  }

  /** Resolves when the sync thread has opened the database. */
  start(): Promise<void> {
    return this.ready;
  }

  /** Resolves once the rows are committed (and, with FULL, fsynced). */
  write(rows: EventRow[]): Promise<void> {
    if (this.closed) return Promise.reject(new Error("storage is shutting down"));
    if (this.broken) return Promise.reject(this.broken);
    return new Promise((resolve, reject) => {
      for (const r of rows) this.rows.push(r);
      this.pending.push({ resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Runs after every commit that is durable, with the newest event id (the processor's wake-up). */
  onCommit(fn: (lastEventId: number) => void) {
    this.afterCommit.push(fn);
  }

  /** Resolves when everything written so far is committed and synced (or failed). */
  settled(): Promise<void> {
    this.flush();
    if (this.unsynced.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private flush() {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const rows = this.rows;
    const pending = this.pending;
    this.rows = [];
    this.pending = [];
    try {
      try {
        this.commitRows(rows);
      } catch (err) {
        // Something else stored an event (a hand edit, a restored backup): take ids above it.
        if ((err as { code?: string }).code !== "SQLITE_CONSTRAINT_PRIMARYKEY") throw err;
        this.lastEventId = Math.max(this.lastEventId, (this.db.query("SELECT max(id) AS id FROM events").get() as { id: number | null }).id ?? 0);
        this.commitRows(rows);
      }
    } catch (err) {
      // The transaction rolled back whole: every caller of this turn is told, none half-stored.
      for (const p of pending) p.reject(err);
      return;
    }
    if (this.synchronous === "NORMAL") {
      // Committed to the WAL through the OS: survives a crash of this process, not a power cut.
      for (const p of pending) p.resolve();
      this.committed();
      return;
    }
    const seq = ++this.seq;
    this.unsynced.set(seq, pending);
    this.worker.postMessage(seq);
  }

  private onSynced(msg: any) {
    if (msg?.type !== "synced" && msg?.type !== "sync-failed") return;
    const err = msg.type === "sync-failed" ? new Error(`fsync failed: ${msg.error}`) : undefined;
    // One fsync covers every commit made before it started.
    for (const [seq, pending] of this.unsynced) {
      if (seq > msg.seq) break;
      this.unsynced.delete(seq);
      for (const p of pending) err ? p.reject(err) : p.resolve();
    }
    if (!err) this.committed();
    if (this.unsynced.size === 0) for (const fn of this.idle.splice(0)) fn();
  }

  private committed() {
    for (const fn of this.afterCommit) fn(this.lastEventId);
  }

  private failUnsynced(err: Error) {
    // Without the sync thread nothing can be made durable: refuse (503) rather than hang.
    this.broken = err;
    for (const pending of this.unsynced.values()) for (const p of pending) p.reject(err);
    this.unsynced.clear();
    for (const p of this.pending.splice(0)) p.reject(err);
    this.rows = [];
    for (const fn of this.idle.splice(0)) fn();
  }

  /** Stops taking writes, commits and syncs what is queued, and closes both connections. */
  async close() {
    if (this.closed) return;
    this.closed = true;
    await this.settled();
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
    // Closed before the main connection: the last connection to close checkpoints the WAL,
    // and this one would do it without syncing the database file.
    this.db.close();
  }
}
