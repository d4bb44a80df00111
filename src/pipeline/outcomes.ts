/**
 * Delivery outcomes are written in groups: every outcome of one turn of the event
 * loop goes into one transaction, flushed when the loop goes idle. A crash before the
 * flush leaves the rows pending, so they are delivered again (at least once).
 */
import type { Database, Statement } from "bun:sqlite";
import type { Logger } from "../lib/logger";

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

  constructor(sqlite: Database, private log: Logger) {
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
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  flush() {
    this.scheduled = false;
    if (!this.queue.length) return;
    const rows = this.queue;
    this.queue = [];
    try {
      this.commit(rows);
    } catch (err) {
      // The rows stay pending in the database and are delivered again after a restart.
      this.log.error("could not record delivery outcomes", { err, count: rows.length });
    }
  }
}
