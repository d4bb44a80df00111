/**
 * The checkpoint thread: copies the WAL into the database file when asked (checkpoints.ts),
 * through a connection with synchronous=FULL, which syncs the WAL before and the database
 * file after. Every other connection has wal_autocheckpoint off, so this bulk copy never
 * runs on the main thread.
 */
import { Database } from "bun:sqlite";

declare const self: Worker;

type Msg = { type: "init"; path: string } | { type: "checkpoint" } | { type: "close" };

let db: Database | undefined;

self.onmessage = (e: MessageEvent<Msg>) => {
  const msg = e.data;
  if (msg.type === "init") {
    try {
      db = new Database(msg.path);
      db.exec("PRAGMA busy_timeout = 10000");
      db.exec("PRAGMA journal_mode = WAL");
      db.exec("PRAGMA synchronous = FULL");
      db.exec("PRAGMA wal_autocheckpoint = 0");
      self.postMessage({ type: "ready" });
    } catch (err) {
      self.postMessage({ type: "init-failed", error: String((err as Error)?.message ?? err) });
    }
    return;
  }
  if (msg.type === "checkpoint") {
    try {
      // PASSIVE: never waits for or blocks the writers on the main thread.
      const r = db!.query("PRAGMA wal_checkpoint(PASSIVE)").get() as { busy: number; log: number; checkpointed: number };
      self.postMessage({ type: "checkpointed", ...r });
    } catch (err) {
      self.postMessage({ type: "checkpointed", error: String((err as Error)?.message ?? err) });
    }
    return;
  }
  if (msg.type === "close") {
    try {
      db?.close();
    } catch {}
    db = undefined;
    self.postMessage({ type: "closed" });
  }
};
