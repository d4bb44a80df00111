/**
 * The storage thread of intake. It owns its own connection to the database and does
 * the inserts and commits (with their fsync) so the main thread keeps reading and
 * validating requests meanwhile. Messages that arrive during a commit are grouped
 * into the next one: the group commit happens here.
 */
import { Database, type Statement } from "bun:sqlite";
import { readRows } from "./row-codec";

declare const self: Worker;

type Batch = { id: number; bytes: Uint8Array; index: Float64Array; rows: number };
type Msg = { type: "init"; path: string; synchronous: string } | ({ type: "write" } & Batch) | { type: "close" };

let db: Database | undefined;
let insert: Statement;
let commit: (batches: Batch[]) => void;
let queue: Batch[] = [];
let scheduled = false;
let checkpointTimer: Timer | undefined;

function flush() {
  scheduled = false;
  if (!queue.length || !db) return;
  const batch = queue;
  queue = [];
  try {
    commit(batch);
    self.postMessage({ type: "committed", ids: batch.map((b) => b.id) });
  } catch (err) {
    self.postMessage({ type: "failed", ids: batch.map((b) => b.id), error: String((err as Error)?.message ?? err) });
  }
}

self.onmessage = (e: MessageEvent<Msg>) => {
  const msg = e.data;
  if (msg.type === "init") {
    try {
      db = new Database(msg.path, { strict: true });
      db.exec("PRAGMA journal_mode = WAL");
      db.exec(`PRAGMA synchronous = ${msg.synchronous === "NORMAL" ? "NORMAL" : "FULL"}`);
      db.exec("PRAGMA busy_timeout = 10000");
      // Checkpoints run here, after this thread's commits, never on the main thread.
      db.exec("PRAGMA wal_autocheckpoint = 2000");
      // Fields arrive as UTF-8 byte ranges; SQLite turns them into TEXT without a JavaScript string.
      insert = db.prepare(
        `INSERT INTO events (workspace_id, source_id, message_id, user_key, type, payload, received_at)
         VALUES (CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), ?)`,
      );
      const insertRow = (f: Uint8Array[], receivedAt: number) => insert.run(f[0], f[1], f[2], f[3], f[4], f[5], receivedAt);
      commit = db.transaction((batches: Batch[]) => {
        for (const b of batches) readRows(b.bytes, b.index, b.rows, insertRow);
      }).immediate;
      // The main thread's connection never checkpoints (it would stall requests); this
      // thread does, after its commits and once a second for the main thread's writes.
      checkpointTimer = setInterval(() => {
        try {
          db?.exec("PRAGMA wal_checkpoint(PASSIVE)");
        } catch {}
      }, 1000);
      self.postMessage({ type: "ready" });
    } catch (err) {
      self.postMessage({ type: "init-failed", error: String((err as Error)?.message ?? err) });
    }
    return;
  }
  if (msg.type === "write") {
    queue.push({ id: msg.id, bytes: msg.bytes, index: msg.index, rows: msg.rows });
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
    return;
  }
  if (msg.type === "close") {
    flush();
    clearInterval(checkpointTimer);
    try {
      db?.close();
    } catch {}
    db = undefined;
    self.postMessage({ type: "closed" });
  }
};
