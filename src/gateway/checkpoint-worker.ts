/**
 * The checkpoint thread: copies the WAL into the database file when asked (checkpoints.ts),
 * through a connection with synchronous=FULL, which syncs the WAL before and the database
 * file after. Every other connection has wal_autocheckpoint off, so no copy and none of
 * these fsyncs ever run on the main thread.
 */
import { Database } from "bun:sqlite";

declare const self: Worker;

type Msg = { type: "init"; path: string } | { type: "checkpoint"; mode: "PASSIVE" | "RESTART" } | { type: "close" };

let db: Database | undefined;

self.onmessage = (e: MessageEvent<Msg>) => {
  const msg = e.data;
  if (msg.type === "init") {
    try {
      db = new Database(msg.path);
      // Intake's commits are held while a RESTART waits for readers (another process reading
      // the database, say): give up soon and try again at the next check.
      db.exec("PRAGMA busy_timeout = 100");
      db.exec("PRAGMA journal_mode = WAL");
      db.exec("PRAGMA synchronous = FULL");
      db.exec("PRAGMA wal_autocheckpoint = 0");
      // The thresholds of checkpoints.ts are in bytes; SQLite counts frames of one page each.
      const { page_size } = db.query("PRAGMA page_size").get() as { page_size: number };
      self.postMessage({ type: "ready", pageSize: page_size });
    } catch (err) {
      self.postMessage({ type: "init-failed", error: String((err as Error)?.message ?? err) });
    }
    return;
  }
  if (msg.type === "checkpoint") {
    try {
      // PASSIVE never waits for or blocks the main thread's writers; RESTART is asked for only
      // while intake's commits are held back (checkpoints.ts).
      const mode = msg.mode === "RESTART" ? "RESTART" : "PASSIVE";
      const r = db!.query(`PRAGMA wal_checkpoint(${mode})`).get() as { busy: number; log: number; checkpointed: number };
      self.postMessage({ type: "checkpointed", mode, ...r });
    } catch (err) {
      self.postMessage({ type: "checkpointed", mode: msg.mode, error: String((err as Error)?.message ?? err), code: (err as { code?: string })?.code });
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
