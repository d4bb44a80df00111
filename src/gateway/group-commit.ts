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
  resolve: (inserted: boolean[]) => void;
  reject: (err: unknown) => void;
}

export class GroupCommitWriter {
  private queue: Pending[] = [];
  private scheduled = false;
  private insert: Statement;
  private commitMany: (batch: Pending[]) => boolean[][];
  private afterCommit: Array<() => void> = [];
  private closed = false;

  constructor(sqlite: Database) {
    // ON CONFLICT DO NOTHING on (source_id, message_id) is the deduplication: changes = 0 for a repeat.
    this.insert = sqlite.prepare(
      `INSERT INTO events (workspace_id, source_id, message_id, user_key, type, payload, received_at)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source_id, message_id) DO NOTHING`,
    );
    const insert = this.insert;
    this.commitMany = sqlite.transaction((batch: Pending[]) =>
      batch.map((p) =>
        p.rows.map((r) => insert.run(r.workspaceId, r.sourceId, r.messageId, r.userKey, r.type, r.payload, r.receivedAt).changes > 0),
      ),
    ).immediate;
  }

  /** Resolves with, per row, whether it was stored (false: a duplicate messageId). */
  write(rows: EventRow[]): Promise<boolean[]> {
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
    let results: boolean[][];
    try {
      results = this.commitMany(batch);
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    for (let i = 0; i < batch.length; i++) batch[i].resolve(results[i]);
    for (const fn of this.afterCommit) fn();
  }

  /** Stops taking writes and commits what is queued (graceful shutdown). */
  close() {
    this.closed = true;
    this.flush();
  }
}
