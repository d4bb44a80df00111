/**
 * Delivery outcomes are written in groups: every outcome of one turn of the event
 * loop goes into one transaction, flushed when the loop goes idle. A crash before the
 * flush leaves the rows pending, so they are delivered again (at least once).
 */
import type { Database, Statement } from "bun:sqlite";
import type { Logger } from "../lib/logger";
import { type StorageHealth, isStorageFailure, storageHealth } from "../lib/storage-health";

/**
 * Outcomes kept in memory while the database refuses writes (a full disk). Beyond this the
 * oldest are let go: their rows stay pending and are delivered again after a restart (at
 * least once), where keeping them all would grow memory with every delivery.
 */
const KEEP_WHILE_FAILING = 100_000;

export interface OutcomeRow {
  id: number;
  state: "pending" | "retrying" | "succeeded" | "aborted" | "filtered";
  attempts: number;
  nextAttemptAt: number;
  firstAttemptAt: number | null;
  lastStatus: number | null;
  lastResponse: string | null;
  lastError: string | null;
  attemptLog: string | null;
  updatedAt: number;
}

export class OutcomeWriter {
  private queue: OutcomeRow[] = [];
  private scheduled = false;
  private update: Statement;
  private commit: (rows: OutcomeRow[]) => void;
  private storage: StorageHealth;
  /** Set while outcomes that could not be written wait to be tried again. */
  private retryTimer: Timer | undefined;

  constructor(sqlite: Database, private log: Logger) {
    this.storage = storageHealth(sqlite.filename);
    this.update = sqlite.prepare(
      `UPDATE deliveries SET state = ?, attempts = ?, next_attempt_at = ?, first_attempt_at = ?, last_status = ?,
         last_response = ?, last_error = ?, attempt_log = ?, updated_at = ? WHERE id = ?`,
    );
    const update = this.update;
    this.commit = sqlite.transaction((rows: OutcomeRow[]) => {
      for (const r of rows) {
        update.run(r.state, r.attempts, r.nextAttemptAt, r.firstAttemptAt, r.lastStatus, r.lastResponse, r.lastError, r.attemptLog, r.updatedAt, r.id);
      }
    }).immediate;
  }

  write(row: OutcomeRow) {
    this.queue.push(row);
    if (!this.scheduled && !this.retryTimer) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  flush() {
    this.scheduled = false;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    if (!this.queue.length) return;
    const rows = this.queue;
    this.queue = [];
    try {
      this.commit(rows);
    } catch (err) {
      if (!isStorageFailure(err)) {
        // The rows stay pending in the database and are delivered again after a restart.
        this.log.error("could not record delivery outcomes", { err, count: rows.length });
        return;
      }
      // Kept, in order (a later outcome of the same delivery must be written after), and tried
      // again once a second until the database takes writes.
      this.queue = rows.concat(this.queue);
      const over = this.queue.length - KEEP_WHILE_FAILING;
      if (over > 0) this.queue.splice(0, over);
      if (this.storage.failed("outcomes", err)) this.log.error("could not record delivery outcomes; kept in memory and retried every second until the database takes writes", { err, count: rows.length });
      this.retryTimer = setTimeout(() => this.flush(), 1000);
      return;
    }
    if (this.storage.recovered("outcomes")) this.log.info("delivery outcomes are recorded again");
  }
}
