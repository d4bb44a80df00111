/**
 * The sync thread of intake. The main thread commits events into the WAL without
 * SQLite's fsync (group-commit.ts) and posts the commit's sequence number here; this
 * thread fsyncs the WAL file and answers with the newest sequence number that fsync
 * covered. Numbers that arrive during an fsync are covered by the next one, so under
 * load several commits share one fsync.
 *
 * It also runs the WAL checkpoints, through a connection with synchronous=FULL, so the
 * database file is synced before the WAL is reused.
 */
import { Database } from "bun:sqlite";
import { closeSync, fdatasyncSync, fstatSync, openSync, statSync } from "node:fs";

declare const self: Worker;

type Msg = number | { type: "init"; path: string } | { type: "close" };

let db: Database | undefined;
let walPath = "";
let walFd: number | undefined;
let newest = 0;
let scheduled = false;
let checkpointTimer: Timer | undefined;

/** The WAL's descriptor, reopened if SQLite replaced the file (it deletes it when the last connection closes). */
function walDescriptor(): number {
  if (walFd !== undefined && fstatSync(walFd).ino === statSync(walPath).ino) return walFd;
  if (walFd !== undefined) closeSync(walFd);
  walFd = openSync(walPath, "r");
  return walFd;
}

function sync() {
  scheduled = false;
  const seq = newest;
  try {
    // fsync on Linux flushes the file's data whichever descriptor asks.
    fdatasyncSync(walDescriptor());
    self.postMessage({ type: "synced", seq });
  } catch (err) {
    self.postMessage({ type: "sync-failed", seq, error: String((err as Error)?.message ?? err) });
  }
}

self.onmessage = (e: MessageEvent<Msg>) => {
  const msg = e.data;
  if (typeof msg === "number") {
    newest = Math.max(newest, msg);
    if (!scheduled) {
      scheduled = true;
      setImmediate(sync);
    }
    return;
  }
  if (msg.type === "init") {
    try {
      walPath = `${msg.path}-wal`;
      db = new Database(msg.path);
      db.exec("PRAGMA busy_timeout = 10000");
      db.exec("PRAGMA journal_mode = WAL");
      db.exec("PRAGMA synchronous = FULL");
      db.exec("PRAGMA wal_autocheckpoint = 0");
      // The other connections never checkpoint (it would stall requests); this one does,
      // once a second, and it syncs the WAL before and the database file after.
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
  if (msg.type === "close") {
    clearInterval(checkpointTimer);
    if (scheduled) sync();
    try {
      if (walFd !== undefined) closeSync(walFd);
      db?.close();
    } catch {}
    db = undefined;
    self.postMessage({ type: "closed" });
  }
};
