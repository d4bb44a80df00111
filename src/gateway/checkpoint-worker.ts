/**
 * The checkpoint thread. Every other connection has wal_autocheckpoint off, so the main
 * thread never stalls copying the WAL into the database file; this thread does it once a
 * second through a connection with synchronous=FULL, which syncs the WAL before and the
 * database file after, so the WAL is never reused before its pages are safe in the
 * database. It is separate from intake's fsync (group-commit.ts), which requests wait for.
 */
import { Database } from "bun:sqlite";

declare const self: Worker;

type Msg = { type: "init"; path: string } | { type: "close" };

let db: Database | undefined;
let timer: Timer | undefined;

self.onmessage = (e: MessageEvent<Msg>) => {
  const msg = e.data;
  if (msg.type === "init") {
    try {
      db = new Database(msg.path);
      db.exec("PRAGMA busy_timeout = 10000");
      db.exec("PRAGMA journal_mode = WAL");
      db.exec("PRAGMA synchronous = FULL");
      db.exec("PRAGMA wal_autocheckpoint = 0");
      timer = setInterval(() => {
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
  if (msg.type === "close") {
    clearInterval(timer);
    try {
      db?.close();
    } catch {}
    db = undefined;
    self.postMessage({ type: "closed" });
  }
};
