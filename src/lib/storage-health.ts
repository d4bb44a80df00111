/**
 * Whether the data dir takes writes. Every writer (intake's group commit, the processor,
 * delivery outcomes, checkpoints, retention, API writes) reports here when SQLite could not
 * write (a full disk, an I/O error) and when it could again; /health shows what is failing.
 *
 * Why per writer: they fail and recover at different times. A checkpoint grows the database
 * file while intake appends to the WAL, and a writer that has not written since the disk
 * filled has not seen it recover either. Each writer clears only its own failure, so /health
 * stays degraded until everything that failed has written once more.
 *
 * One per database file (storageHealth(path)): every part that writes finds it through the
 * connection it writes with, so nothing needs to be handed around for it.
 */
import { resolve } from "node:path";
import { AppError } from "./errors";

/**
 * What a 503 for storage tells clients to wait. RudderStack's Node SDK waits the longer of
 * this and its own backoff before each of its 3 retries (so it keeps a batch for about 30 s);
 * the other SDKs ignore it on a 503 and back off on their own. Short, because a refusal costs
 * no disk and a client that honours it should be back soon after space is freed.
 */
export const STORAGE_RETRY_AFTER_SECONDS = 10;

/** SQLite result codes (and errno names) that mean the disk refused a write, not a bad query. */
const FULL = /^(SQLITE_FULL|ENOSPC|EDQUOT)$/;
const IO = /^(SQLITE_IOERR\w*|EIO)$/;

function codeOf(err: unknown): string | undefined {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (typeof e.code === "string" && (FULL.test(e.code) || IO.test(e.code))) return e.code;
  }
  const message = String((err as Error | undefined)?.message ?? "");
  if (message.includes("database or disk is full")) return "SQLITE_FULL";
  if (message.includes("disk I/O error")) return "SQLITE_IOERR";
  return undefined;
}

/** True for a write the disk refused (full, quota, I/O error); false for every other error. */
export function isStorageFailure(err: unknown): boolean {
  return codeOf(err) !== undefined;
}

/** "disk full: database or disk is full (SQLITE_FULL)" or "I/O error: … (SQLITE_IOERR_WRITE)". */
export function describeStorageFailure(err: unknown): string {
  const code = codeOf(err) ?? "unknown";
  const kind = FULL.test(code) ? "disk full" : "I/O error";
  return `${kind}: ${String((err as Error | undefined)?.message ?? err)} (${code})`;
}

/** The 503 an API or event call answers when its write was refused by the disk; `what` failed. */
export function storageUnavailable(err: unknown, what: string): AppError {
  return new AppError("UNAVAILABLE", `${what}: ${describeStorageFailure(err)}; retry in ${STORAGE_RETRY_AFTER_SECONDS} s`, undefined, {
    retryAfterSeconds: STORAGE_RETRY_AFTER_SECONDS,
    storage: true,
  });
}

export interface StorageProblem {
  /** The newest failure, described (see describeStorageFailure). */
  cause: string;
  /** When the oldest writer still failing first failed (ms since the epoch). */
  since: number;
  /** The writers whose last write failed. */
  writers: string[];
}

export class StorageHealth {
  private failing = new Map<string, { cause: string; since: number; at: number }>();

  /**
   * A write by `writer` was refused. True when it was the writer's first failure since it
   * last wrote: log then, not on every retry.
   */
  failed(writer: string, err: unknown, now = Date.now()): boolean {
    const before = this.failing.get(writer);
    this.failing.set(writer, { cause: describeStorageFailure(err), since: before?.since ?? now, at: now });
    return before === undefined;
  }

  /**
   * A write by `writer` went through. True when it had been failing (log the recovery).
   * An API write is not retried by anyone, so any later write clears its failure too.
   */
  recovered(writer: string): boolean {
    if (this.failing.size === 0) return false;
    const was = this.failing.delete(writer);
    if (writer !== "api") this.failing.delete("api");
    return was;
  }

  get problem(): StorageProblem | undefined {
    if (this.failing.size === 0) return undefined;
    let newest = { cause: "", at: -Infinity };
    let since = Infinity;
    for (const f of this.failing.values()) {
      if (f.at > newest.at) newest = f;
      since = Math.min(since, f.since);
    }
    return { cause: newest.cause, since, writers: [...this.failing.keys()].sort() };
  }
}

const byDatabase = new Map<string, StorageHealth>();

/** The health of the database file at `path` (one object per file, made on first use). */
export function storageHealth(path: string): StorageHealth {
  const key = resolve(path);
  let h = byDatabase.get(key);
  if (!h) byDatabase.set(key, (h = new StorageHealth()));
  return h;
}
