/**
 * Backups of the one SQLite file while a server keeps writing to it, and putting one back.
 *
 * Why VACUUM INTO: bun:sqlite has no online-backup API (sqlite3_backup_*), and serialize()
 * holds the whole database in memory. VACUUM INTO, on a connection of its own, reads one
 * snapshot inside one read transaction: in WAL mode writers go on meanwhile, and the copy
 * holds exactly what was committed when it began (every event acknowledged before then),
 * compacted, in rollback-journal mode, with the page size and auto_vacuum of the original.
 * While it reads, the checkpoint thread cannot start the WAL over (see
 * gateway/checkpoints.ts: it gives up after 100 ms and waits 2 s), so the WAL grows by what
 * is written during the copy, and shrinks again after it.
 *
 * The copy is written under a temporary name, fsynced, checked with PRAGMA integrity_check,
 * and only then renamed to its name: a file with the final name is always a whole, checked
 * backup.
 */
import { Database } from "bun:sqlite";
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  linkSync,
  openSync,
  readdirSync,
  renameSync,
  statSync,
  unlinkSync,
} from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { AppError } from "../lib/errors";
import { createPrivateFile, makeFilePrivate, makePrivateDir } from "../lib/private-files";

export const DB_FILE = "sluice.db";

export interface BackupResult {
  file: string;
  bytes: number;
  events: number;
  ms: number;
}

export interface RestoreResult {
  file: string;
  events: number;
  /** Where the database that was replaced now is (with its -wal), if there was one. */
  previous?: string;
}

const unlinkQuietly = (path: string) => {
  try {
    unlinkSync(path);
  } catch {}
};

function fsyncPath(path: string) {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A rename survives a power cut only once its folder is synced too. */
const fsyncDir = fsyncPath;

/**
 * PRAGMA integrity_check on a file, and what it holds. Throws AppError naming the file and
 * the first problems found. `what` describes the file in messages ("the copy", "FILE").
 */
export function checkDatabaseFile(path: string, what: string): { events: number } {
  let db: Database;
  try {
    // Read-write: a database last written in WAL mode cannot be opened read-only without its
    // -shm. Callers pass a file of their own (a temporary copy), never someone else's.
    db = new Database(path, { readwrite: true, create: false });
  } catch (e) {
    throw new AppError("BAD_REQUEST", `${what} cannot be opened as a database: ${(e as Error).message}`);
  }
  try {
    let problems: string[];
    try {
      problems = (db.query("PRAGMA integrity_check(20)").all() as Array<{ integrity_check: string }>).map((r) => r.integrity_check);
    } catch (e) {
      const message = (e as Error).message;
      // SQLite opens any file; the first read tells.
      if (message === "file is not a database") throw new AppError("BAD_REQUEST", `${what} is not a SQLite database (or its first page is damaged)`);
      throw new AppError("BAD_REQUEST", `${what} failed its integrity check: ${message}`);
    }
    if (problems.length !== 1 || problems[0] !== "ok") {
      throw new AppError("BAD_REQUEST", `${what} failed its integrity check: ${problems.slice(0, 5).join("; ")}`);
    }
    const tables = new Set((db.query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((r) => r.name));
    for (const t of ["events", "deliveries", "__drizzle_migrations"]) {
      if (!tables.has(t)) throw new AppError("BAD_REQUEST", `${what} is a SQLite database but not Sluice's (it has no ${t} table)`);
    }
    return { events: (db.query("SELECT count(*) AS n FROM events").get() as { n: number }).n };
  } finally {
    db.close();
  }
}

/** A consistent copy of `source` (its WAL included) as `dest`, through SQLite; `dest` is 0600. */
function vacuumInto(source: string, dest: string) {
  // SQLite would create `dest` 0644 less the umask; an empty file of ours it fills as it is.
  createPrivateFile(dest);
  let db: Database;
  try {
    db = new Database(source, { readwrite: true, create: false });
  } catch (e) {
    throw new AppError("INTERNAL", `could not open ${source}: ${(e as Error).message}`);
  }
  try {
    // A server's checkpoint may hold the WAL for a moment.
    db.exec("PRAGMA busy_timeout = 5000");
    db.query("VACUUM INTO ?").run(dest);
  } catch (e) {
    throw new AppError("INTERNAL", `could not copy ${source}: ${(e as Error).message}`);
  } finally {
    db.close();
  }
}

/**
 * Writes a checked copy of DATA_DIR/sluice.db to `out`. Refuses to replace an existing `out`
 * unless `force`. Safe while a server writes to the database.
 */
export function backupDatabase(input: { dataDir: string; out: string; force?: boolean }): BackupResult {
  const started = performance.now();
  const source = resolve(input.dataDir, DB_FILE);
  const out = resolve(input.out);
  if (!existsSync(source)) throw new AppError("NOT_FOUND", `there is no database to back up at ${source}`);
  if (out === source || out.startsWith(`${source}-`)) throw new AppError("BAD_REQUEST", `--out ${out} is the database itself or one of its files`);
  if (!existsSync(dirname(out)) || !statSync(dirname(out)).isDirectory()) throw new AppError("NOT_FOUND", `the folder of --out, ${dirname(out)}, does not exist`);
  if (existsSync(out)) {
    if (statSync(out).isDirectory()) throw new AppError("BAD_REQUEST", `--out ${out} is a folder; name the backup file`);
    if (!input.force) throw new AppError("CONFLICT", `${out} already exists; pass --force to replace it`);
  }
  // Hidden, and next to `out` so that the rename below stays on one file system.
  const partial = join(dirname(out), `.${basename(out)}.partial-${process.pid}`);
  unlinkQuietly(partial);
  try {
    vacuumInto(source, partial);
    // VACUUM INTO does not sync what it writes.
    fsyncPath(partial);
    const { events } = checkDatabaseFile(partial, `the copy of ${source}`);
    renameSync(partial, out);
    fsyncDir(dirname(out));
    return { file: out, bytes: statSync(out).size, events, ms: Math.round(performance.now() - started) };
  } catch (e) {
    for (const f of [partial, `${partial}-wal`, `${partial}-shm`, `${partial}-journal`]) unlinkQuietly(f);
    throw e;
  }
}

/**
 * The second guard of restore, after sluice.pid: a process that has the database open
 * without having written that file (a server in another container or pid namespace, an older
 * Sluice, a sqlite3 shell). In WAL mode every open connection keeps a shared lock on the
 * file, so an exclusive lock is refused while any exists. Closing this connection, the last
 * one, folds the old WAL into the old file, which is kept whole that way.
 */
function refuseIfOpenElsewhere(path: string) {
  let db: Database;
  try {
    db = new Database(path, { readwrite: true, create: false });
  } catch {
    return;
  }
  try {
    db.exec("PRAGMA busy_timeout = 0");
    db.exec("PRAGMA locking_mode = EXCLUSIVE");
    db.exec("BEGIN EXCLUSIVE");
    db.exec("COMMIT");
  } catch (e) {
    if ((e as { code?: string }).code?.startsWith("SQLITE_BUSY") || (e as { code?: string }).code?.startsWith("SQLITE_LOCKED")) {
      throw new AppError("CONFLICT", `${path} is open in another process (a server in another container, an older Sluice, a sqlite3 shell?); stop it first`);
    }
    // A damaged file (the reason for many a restore) is replaced all the same.
  } finally {
    db.close();
  }
}

/** A UTC time as 20260102T030405Z, for file names that sort by time. */
export const fileStamp = (ms: number) => new Date(ms).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");

/**
 * Puts the backup `from` in place as DATA_DIR/sluice.db. The caller holds the data dir
 * (data-dir-hold.ts), so no server that wrote sluice.pid has the database open.
 *
 * The copy is made and checked under a temporary name in the data dir, then renamed over
 * sluice.db: at every moment sluice.db is a whole database, either the old one or the
 * backup. The old database is kept beside it as sluice.db.before-restore-TIME (a hard link,
 * no copy), with its -wal, which must not stay next to the new file: SQLite would replay
 * the old WAL into it.
 */
export function restoreDatabase(input: { from: string; dataDir: string; now?: number }): RestoreResult {
  const from = resolve(input.from);
  if (!existsSync(from)) throw new AppError("NOT_FOUND", `there is no backup at ${from}`);
  if (!statSync(from).isFile()) throw new AppError("BAD_REQUEST", `--from ${from} is not a file`);
  const dataDir = resolve(input.dataDir);
  makePrivateDir(dataDir);
  const target = join(dataDir, DB_FILE);
  if (existsSync(target)) refuseIfOpenElsewhere(target);
  const incoming = join(dataDir, `.${DB_FILE}.restore-${process.pid}`);
  const sideFiles = (p: string) => [`${p}-wal`, `${p}-shm`, `${p}-journal`];
  // Left by a restore that was killed: the caller holds the data dir, so none is under way.
  for (const name of readdirSync(dataDir)) if (name.startsWith(`.${DB_FILE}.restore-`)) unlinkQuietly(join(dataDir, name));
  let events: number;
  try {
    // A database with a WAL beside it (a kept sluice.db.before-restore-*, a copy of a stopped
    // server's data dir) holds part of its content there: only SQLite reads both.
    if (existsSync(`${from}-wal`) && statSync(`${from}-wal`).size > 0) vacuumInto(from, incoming);
    else {
      copyFileSync(from, incoming);
      // A copy takes the backup's mode, whoever made it.
      makeFilePrivate(incoming);
    }
    fsyncPath(incoming);
    // The copy is checked, not `from`: it is what goes in place.
    ({ events } = checkDatabaseFile(incoming, from));
    // Opening it to check it may leave side files (a file last written in WAL mode).
    for (const f of sideFiles(incoming)) unlinkQuietly(f);
  } catch (e) {
    for (const f of [incoming, ...sideFiles(incoming)]) unlinkQuietly(f);
    throw e;
  }

  let previous: string | undefined;
  if (existsSync(target)) {
    const base = join(dataDir, `${DB_FILE}.before-restore-${fileStamp(input.now ?? Date.now())}`);
    previous = base;
    for (let n = 2; existsSync(previous); n++) previous = `${base}-${n}`;
    try {
      linkSync(target, previous);
    } catch {
      // A file system without hard links.
      copyFileSync(target, previous);
    }
    // One inode with the database when linked: private like it (an older Sluice's may not be).
    makeFilePrivate(previous);
  }
  // The old database's WAL (and a rollback journal) would be applied to the new file.
  for (const suffix of ["-wal", "-journal"]) {
    if (!existsSync(target + suffix)) continue;
    if (previous) renameSync(target + suffix, previous + suffix);
    else unlinkQuietly(target + suffix);
  }
  unlinkQuietly(`${target}-shm`);
  renameSync(incoming, target);
  fsyncDir(dataDir);
  return { file: target, events, previous };
}
