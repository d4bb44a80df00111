/**
 * Group commit: concurrent requests share one transaction. Rows queue up while the
 * event loop is busy; the flush runs when it goes idle (setImmediate), so a lone
 * request waits for nothing and a burst pays one fsync. Each caller's promise
 * settles only after the transaction holding its rows has committed.
 */
import type { Database, Statement } from "bun:sqlite";

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
  rows: EventRow[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class GroupCommitWriter {
  private queue: Pending[] = [];
  private scheduled = false;
  private insert: Statement;
  private commitMany: (batch: Pending[]) => void;
  private afterCommit: Array<() => void> = [];
  private closed = false;

  constructor(sqlite: Database) {
    this.insert = sqlite.prepare(
      `INSERT INTO events (workspace_id, source_id, message_id, user_key, type, payload, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    const insert = this.insert;
    this.commitMany = sqlite.transaction((batch: Pending[]) => {
      for (const p of batch) for (const r of p.rows) insert.run(r.workspaceId, r.sourceId, r.messageId, r.userKey, r.type, r.payload, r.receivedAt);
    }).immediate;
  }

  /** Resolves once the rows are committed. */
  write(rows: EventRow[]): Promise<void> {
    if (this.closed) return Promise.reject(new Error("storage is shutting down"));
    return new Promise((resolve, reject) => {
      this.queue.push({ rows, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Runs after every commit that stored rows (the processor's wake-up signal). */
  onCommit(fn: () => void) {
    this.afterCommit.push(fn);
  }

  flush() {
    this.scheduled = false;
    const batch = this.queue;
    if (batch.length === 0) return;
    this.queue = [];
    try {
      this.commitMany(batch);
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    for (const p of batch) p.resolve();
    for (const fn of this.afterCommit) fn();
  }

  /** Stops taking writes and commits what is queued (graceful shutdown). */
  close() {
    this.closed = true;
    this.flush();
  }
}
