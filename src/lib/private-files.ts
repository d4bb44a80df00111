/**
 * Sluice's files hold every event, destination credentials and token hashes, so only the user
 * Sluice runs as may read them, whatever umask it was started with: the data dir and the backup
 * dir are created 0700, the database, its side files and every backup 0600.
 *
 * SQLite creates a database's -wal, -shm and -journal with the mode of the database file itself
 * (and sets that mode whatever the umask), so a 0600 database keeps its side files 0600: what
 * needs care is the database file, created by SQLite with 0644 less the umask, and the files
 * an older Sluice left behind.
 */
import { chmodSync, closeSync, fchmodSync, mkdirSync, openSync, statSync } from "node:fs";
import type { Logger } from "./logger";

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;
/** Any permission for group or other. */
const SHARED_BITS = 0o077;

const octal = (mode: number) => (mode & 0o777).toString(8).padStart(3, "0");

/** Creates `dir` (and missing parents) 0700. An existing dir keeps its mode: see warnIfDirShared. */
export function makePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/**
 * Runs `create` with umask 077, for files a library creates with a mode of its own (SQLite's
 * 0644). The umask is process-wide, but `create` is synchronous, so no other code of this
 * thread runs meanwhile; a worker thread creating a file in that instant gets it private, which
 * is harmless.
 */
export function withPrivateUmask<T>(create: () => T): T {
  const before = process.umask(SHARED_BITS);
  try {
    return create();
  } finally {
    process.umask(before);
  }
}

/**
 * Creates `path` empty with mode 0600, for a file another writer then fills (VACUUM INTO
 * accepts an empty file). Fails if it exists.
 */
export function createPrivateFile(path: string): void {
  const fd = openSync(path, "wx", PRIVATE_FILE_MODE);
  try {
    // The umask may have taken bits away, never added any; fchmod states the mode exactly.
    fchmodSync(fd, PRIVATE_FILE_MODE);
  } finally {
    closeSync(fd);
  }
}

/** Makes an existing file 0600. */
export function makeFilePrivate(path: string): void {
  chmodSync(path, PRIVATE_FILE_MODE);
}

export interface TightenedFile {
  file: string;
  /** The mode it had, in octal ("644"). */
  was: string;
  /** Set when the chmod failed (a file of another user): the file is still readable by others. */
  error?: string;
}

/**
 * The database file and its side files that exist with permissions for group or other (left by
 * an older Sluice, or copied in by hand) are made 0600. Answers what it found, so the caller can
 * say so; a file that is gone or already private is not in the answer.
 */
export function tightenDatabaseFiles(dbPath: string): TightenedFile[] {
  const found: TightenedFile[] = [];
  for (const file of [dbPath, `${dbPath}-wal`, `${dbPath}-shm`, `${dbPath}-journal`]) {
    let mode: number;
    try {
      mode = statSync(file).mode;
    } catch {
      continue;
    }
    if ((mode & SHARED_BITS) === 0) continue;
    try {
      chmodSync(file, PRIVATE_FILE_MODE);
      found.push({ file, was: octal(mode) });
    } catch (e) {
      found.push({ file, was: octal(mode), error: (e as Error).message });
    }
  }
  return found;
}

/**
 * Start-up check of a SQLite data dir: the database files Sluice owns are tightened (and a warn
 * line says they were not private), while a dir readable by others is only warned about. The dir
 * is the operator's choice of place (a mounted volume, a folder shared on purpose), and its mode
 * exposes only file names once the files in it are 0600; changing it could break a setup that
 * Sluice cannot see.
 */
export function secureDataDir(dataDir: string, dbPath: string, log: Logger): void {
  makePrivateDir(dataDir);
  const dirMode = statSync(dataDir).mode;
  if (dirMode & SHARED_BITS) {
    log.warn("the data dir is open to other users: its database files are kept 0600, but run chmod 700 on the dir to hide it entirely", {
      dataDir,
      mode: octal(dirMode),
    });
  }
  const tightened = tightenDatabaseFiles(dbPath);
  const fixed = tightened.filter((t) => !t.error);
  const stuck = tightened.filter((t) => t.error);
  if (fixed.length) log.warn("database files were readable by other users: made them 0600", { files: fixed });
  if (stuck.length) log.warn("database files are readable by other users and could not be made 0600: chmod 600 them", { files: stuck });
}
