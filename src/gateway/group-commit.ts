/**
 * Group commit for intake. Rows of every request that arrives in one turn of the event
 * loop are inserted and committed together when the loop goes idle (setImmediate), on
 * the main thread, through a connection of their own with prepared statements. That
 * connection commits without SQLite's fsync; with `--sync FULL` the WAL file is then
 * fdatasync'ed on Bun's I/O thread pool (node:fs's asynchronous call) and only then are
 * the callers answered. So "OK" still means "on disk, survives a power cut", and the main
 * thread never waits for the disk. Rows that arrive during an fsync are committed together
 * when it ends, and share the next one: one commit per fsync.
 *
 * WAL checkpoints are not done here (checkpoints.ts): their bulk copy runs on a thread
 * of its own, so it never holds up the fsyncs requests wait for.
 *
 * Why not the whole commit on a storage thread: handing rows across threads cost the
 * main thread about as much as inserting them, and the other thread twice that.
 */
import { Database, type Statement } from "bun:sqlite";
import { closeSync, fdatasync, fstatSync, openSync, statSync } from "node:fs";
import { newestEventId } from "../../db";
import { type StorageHealth, storageHealth } from "../lib/storage-health";
import { WAL_FILE_LIMIT_BYTES } from "./checkpoints";
import type { EventRow } from "./store";

interface Pending {
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class GroupCommitWriter {
  private db: Database;
  private insert: Statement;
  private commitRows: (rows: EventRow[]) => void;
  private rows: EventRow[] = [];
  private pending: Pending[] = [];
  private scheduled = false;
  /** Callers of the commit whose fsync is under way (one at most: commits wait for it). */
  private unsynced: Pending[] = [];
  private walPath: string;
  private walFd: number | undefined;
  private syncs = 0;
  /** An fdatasync is under way; rows that arrive meanwhile are committed when it ends. */
  private syncing = false;
  private afterCommit: Array<(lastEventId: number) => void> = [];
  private idle: Array<() => void> = [];
  /** The newest id given to an event; ids are assigned here (see db/schema/pipeline.ts). */
  private lastEventId: number;
  private closed = false;
  /** Commits are held back while the checkpoint thread starts the WAL over (checkpoints.ts). */
  private held = false;
  /** Groups that failed (commit or fsync) so far, and why the last one did (see whenDurable). */
  private failures = 0;
  private lastFailure: unknown;
  /** Whether the data dir takes writes, for /health (lib/storage-health.ts). */
  readonly storage: StorageHealth;

  constructor(
    path: string,
    private synchronous: "FULL" | "NORMAL",
    /** No event may get an id at or below this (the processor's cursor, ids deliveries refer to). */
    idFloor = 0,
  ) {
    this.db = new Database(path, { strict: true });
    this.db.exec("PRAGMA busy_timeout = 5000");
    this.db.exec("PRAGMA journal_mode = WAL");
    // Durability comes from the fdatasync of the WAL before anyone is answered (see above).
    this.db.exec("PRAGMA synchronous = OFF");
    // Checkpoints run elsewhere (checkpoints.ts), through connections that sync the database file.
    this.db.exec("PRAGMA wal_autocheckpoint = 0");
    this.db.exec(`PRAGMA journal_size_limit = ${WAL_FILE_LIMIT_BYTES}`);
    this.walPath = `${path}-wal`;
    this.storage = storageHealth(path);
    // Ids only grow, even after the newest events were deleted: an id the processor has
    // passed must never be given again, or its new event would never be routed.
    this.lastEventId = Math.max(newestEventId(this.db), idFloor);
    this.insert = this.db.prepare(
      "INSERT INTO events (id, workspace_id, source_id, message_id, user_key, type, payload, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    );
    this.commitRows = this.db.transaction((rows: EventRow[]) => {
      let id = this.lastEventId;
      for (const r of rows) this.insert.run(++id, r.workspaceId, r.sourceId, r.messageId, r.userKey, r.type, r.payload, r.receivedAt);
      this.lastEventId = id;
    }).immediate;
  }

  /** Resolves once the rows are committed (and, with FULL, fsynced). */
  write(rows: EventRow[]): Promise<void> {
    if (this.closed) return Promise.reject(new Error("storage is shutting down"));
    return new Promise((resolve, reject) => {
      for (const r of rows) this.rows.push(r);
      this.pending.push({ resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /**
   * Resolves once every row handed over before this call is durable; rejects if any group
   * that held some of them failed. For a request whose events are duplicates of ones still
   * in flight: it must not be acknowledged before they are on disk, and must fail if they
   * never get there (their keys are then forgotten, and the client's retry is stored).
   */
  whenDurable(): Promise<void> {
    if (this.pending.length === 0 && this.unsynced.length === 0) return Promise.resolve();
    const failuresBefore = this.failures;
    // An empty entry joins the group now forming; groups settle in order, so when it does
    // every earlier one has too.
    return this.write([]).then(() => {
      if (this.failures !== failuresBefore) throw this.lastFailure;
    });
  }

  /** Runs after every commit that is durable, with the newest event id (the processor's wake-up). */
  onCommit(fn: (lastEventId: number) => void) {
    this.afterCommit.push(fn);
  }

  /** Resolves when everything written so far is committed and synced (or failed). */
  settled(): Promise<void> {
    this.flush();
    if (this.unsynced.length === 0 && this.pending.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Holds commits back (rows queue in memory) until release(); requests simply wait. */
  hold() {
    this.held = true;
  }

  release() {
    this.held = false;
    this.flush();
  }

  private flush() {
    this.scheduled = false;
    // With FULL, rows that arrive during an fsync wait for it to end and then go in as one
    // commit: they could not be answered before the next fsync anyway, and every commit
    // costs the main thread its WAL writes and locks whatever its size (about 90 µs here).
    if (this.pending.length === 0 || this.held || this.syncing) return;
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
        this.lastEventId = Math.max(this.lastEventId, newestEventId(this.db));
        this.commitRows(rows);
      }
    } catch (err) {
      // The transaction rolled back whole: every caller of this turn is told, none half-stored.
      this.failures++;
      this.lastFailure = err;
      for (const p of pending) p.reject(err);
      this.notifyIdle();
      return;
    }
    if (this.synchronous === "NORMAL") {
      // Committed to the WAL through the OS: survives a crash of this process, not a power cut.
      for (const p of pending) p.resolve();
      this.committed();
      this.notifyIdle();
      return;
    }
    this.unsynced = pending;
    this.sync();
  }

  /** fdatasync of the WAL on the I/O pool, for the commit just made. */
  private sync() {
    let fd: number;
    try {
      fd = this.walDescriptor();
    } catch (err) {
      this.synced(err);
      return;
    }
    this.syncing = true;
    fdatasync(fd, (err) => {
      this.syncing = false;
      this.synced(err);
      this.flush();
    });
  }

  /**
   * The WAL's descriptor; fsync on Linux flushes the file whichever descriptor asks. SQLite
   * replaces the file only when its last connection closes, which cannot happen while this
   * one is open; it is still checked every 256 syncs (two stat calls each time were 3% of a
   * request's CPU).
   */
  private walDescriptor(): number {
    if (this.walFd !== undefined && (++this.syncs & 255) !== 0) return this.walFd;
    if (this.walFd !== undefined && fstatSync(this.walFd).ino === statSync(this.walPath).ino) return this.walFd;
    if (this.walFd !== undefined) closeSync(this.walFd);
    this.walFd = openSync(this.walPath, "r");
    return this.walFd;
  }

  private synced(error: unknown) {
    // The cause keeps the errno (ENOSPC, EIO) that tells a storage failure from others.
    const err = error ? new Error(`fsync of the WAL failed: ${(error as Error).message ?? error}`, { cause: error }) : undefined;
    if (err) {
      this.failures++;
      this.lastFailure = err;
    }
    const waiting = this.unsynced;
    this.unsynced = [];
    for (const p of waiting) err ? p.reject(err) : p.resolve();
    if (!err) this.committed();
    this.notifyIdle();
  }

  /** Wakes settled() once nothing is queued, held back or waiting for its fsync. */
  private notifyIdle() {
    if (this.unsynced.length === 0 && this.pending.length === 0) for (const fn of this.idle.splice(0)) fn();
  }

  private committed() {
    for (const fn of this.afterCommit) fn(this.lastEventId);
  }

  /** Stops taking writes, commits and syncs what is queued, and closes intake's connection. */
  async close() {
    if (this.closed) return;
    this.closed = true;
    await this.settled();
    if (this.walFd !== undefined) closeSync(this.walFd);
    // Closed before the main connection: the last connection to close checkpoints the WAL,
    // and this one would do it without syncing the database file.
    this.db.close();
  }
}
