/**
 * Opens the one SQLite file, sets its durability explicitly, and applies the
 * embedded migrations. Nothing here reads db/ from disk, so the compiled binary
 * works from an empty folder.
 */
import { Database } from "bun:sqlite";
import { existsSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import { tightenDatabaseFiles, withPrivateUmask } from "../src/lib/private-files";
import { VERSION, versionName, versionNumber } from "../src/version";
import { journal, migrationSql } from "./migrations";
import * as schema from "./schema";

export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database };
export { schema };

export type SyncMode = "FULL" | "NORMAL";

/** The page size of a new database file; an existing file keeps its own. */
export const PAGE_SIZE = 16384;

/**
 * Why a data dir is not opened: its file is damaged, or a newer Sluice wrote it. The message
 * is one line for the person running Sluice, naming the data dir and what to do.
 */
export class DataDirRefused extends Error {
  override name = "DataDirRefused";
}

export function openDatabase(path: string, opts: { synchronous?: SyncMode } = {}): Db {
  const dir = resolve(dirname(path));
  const existed = existsSync(path);
  // Sluice writes its tables within milliseconds of creating the file, so an empty file that
  // already exists was almost certainly cut short: SQLite would take it for a new database and
  // Sluice would start empty, with the data gone unnoticed.
  if (existed && statSync(path).size === 0) throw damaged(path, dir, "the file is empty (0 bytes)");
  let sqlite: Database | undefined;
  try {
    // Private whatever the umask: SQLite makes the -wal and -shm with the database file's mode,
    // and an existing file an older Sluice made 0644 is tightened (secureDataDir says so in the log).
    sqlite = withPrivateUmask(() => new Database(path, { create: true, strict: true }));
    tightenDatabaseFiles(path);
    return prepare(sqlite, path, dir, existed, opts);
  } catch (e) {
    sqlite?.close();
    if (e instanceof DataDirRefused) throw e;
    // A garbled header or a page read at start: the same refusal as a failed quick_check.
    const code = String((e as { code?: unknown }).code ?? "");
    if (code.startsWith("SQLITE_CORRUPT") || code === "SQLITE_NOTADB") throw damaged(path, dir, (e as Error).message);
    throw e;
  }
}

function damaged(path: string, dir: string, problem: string): DataDirRefused {
  return new DataDirRefused(
    `the database ${resolve(path)} is damaged (${problem}); Sluice will not serve from it, nor start empty. ` +
      `Stop every Sluice using ${dir}, then restore the newest backup: sluice restore --from FILE --data-dir ${dir}`,
  );
}

function prepare(sqlite: Database, path: string, dir: string, existed: boolean, opts: { synchronous?: SyncMode }): Db {
  // First: another thread or a process that is just stopping may hold a lock for a moment.
  sqlite.exec("PRAGMA busy_timeout = 5000");
  // Reads every page of every table and index once (not the cross-checks of integrity_check):
  // on a 200 MB file here, 0.1-0.2 s from the page cache and about 1 s cold from disk (roughly
  // 5 s a GB cold), blocking the event loop; start-up probes must allow for it. Before anything
  // writes: the pragmas below rewrite the header of an existing file, the migrations its
  // tables; a refused file is left as it was.
  if (existed) {
    const problems = (sqlite.query("PRAGMA quick_check(3)").all() as Array<{ quick_check: string }>).map((r) => r.quick_check);
    if (problems.length !== 1 || problems[0] !== "ok") {
      // One line: SQLite puts a "*** in database main ***" line and newlines into its report.
      const lines = problems.flatMap((p) => p.split("\n")).map((l) => l.trim()).filter((l) => l && !l.startsWith("***"));
      throw damaged(path, dir, `PRAGMA quick_check: ${lines.slice(0, 3).join("; ")}`);
    }
    refuseNewer(sqlite, dir);
  }
  // Both take effect only on a new file (before the first table), and on an existing one
  // auto_vacuum is a write, which would keep Sluice from starting on a full disk.
  if (!existed) {
    // Intake appends whole pages of events, and SQLite writes each WAL frame with two system
    // calls: 16 KB pages cut the main thread's CPU per batch event by about 15% against 4 KB
    // (scripts/ab-intake.ts --batch), single calls and delivery unchanged; 32 and 64 KB gained
    // nothing more.
    sqlite.exec(`PRAGMA page_size = ${PAGE_SIZE}`);
    // Lets retention give pages back.
    sqlite.exec("PRAGMA auto_vacuum = INCREMENTAL");
  }
  sqlite.exec("PRAGMA journal_mode = WAL");
  // FULL: an acknowledged event survives a power cut (fsync on every commit). NORMAL:
  // survives a process crash only. Set explicitly: bun:sqlite's default differs by mode.
  sqlite.exec(`PRAGMA synchronous = ${opts.synchronous ?? "FULL"}`);
  sqlite.exec("PRAGMA foreign_keys = ON");
  // Checkpoints are run by the server on its own schedule, off the hot path.
  sqlite.exec("PRAGMA wal_autocheckpoint = 10000");
  sqlite.exec("PRAGMA temp_store = MEMORY");
  const db = drizzle({ client: sqlite, schema }) as Db;
  migrate(db);
  recordVersion(sqlite);
  return db;
}

/**
 * Which Sluice last wrote the file is kept in PRAGMA user_version (see versionNumber): it sits
 * in the file header, so any release can read it before it knows anything about the tables,
 * however a later release reshapes them; it costs no table and no migration, and it travels
 * with every copy and backup of the file. 0, SQLite's default, means 0.1.0 or earlier (before
 * versions were recorded). A newer file is refused rather than opened, since drizzle would
 * silently skip migrations it does not know and run with tables it does not understand.
 */
function refuseNewer(sqlite: Database, dir: string) {
  const recorded = (sqlite.query("PRAGMA user_version").get() as { user_version: number }).user_version;
  const advice = `this is Sluice ${VERSION}. Upgrade Sluice, or restore a backup made by ${VERSION}.`;
  if (recorded > versionNumber(VERSION)) throw new DataDirRefused(`data dir ${dir} was written by Sluice ${versionName(recorded)}; ${advice}`);
  // A release that forgot to record its version, or a file changed by hand: migrations from
  // after this binary's newest one.
  const known = Math.max(...journal.entries.map((e) => e.when));
  const hasJournal = sqlite.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'").get();
  const newest = hasJournal ? (sqlite.query("SELECT max(created_at) AS at FROM __drizzle_migrations").get() as { at: number | null }).at : null;
  if (newest !== null && Number(newest) > known) {
    throw new DataDirRefused(`data dir ${dir} was written by a newer Sluice (its database has migrations this version does not know); ${advice}`);
  }
}

function recordVersion(sqlite: Database) {
  const current = versionNumber(VERSION);
  const recorded = (sqlite.query("PRAGMA user_version").get() as { user_version: number }).user_version;
  if (recorded !== current) sqlite.exec(`PRAGMA user_version = ${current}`);
}

/**
 * The journal and SQL text are bundled; the hash matches drizzle's own migrator. drizzle
 * applies every migration newer than the newest one recorded in the file, so each earlier
 * state is brought up to date as long as the journal only grows (test/e2e/upgrade.test.ts).
 * `count` applies only the first ones: for tests that make the states of earlier releases.
 */
export function migrate(db: Db, count = journal.entries.length) {
  const migrations = journal.entries.slice(0, count).map((entry) => {
    const text = migrationSql[entry.tag];
    if (text === undefined) throw new Error(`migration ${entry.tag} is in the journal but not embedded; run npm run db:generate`);
    return {
      sql: text.split("--> statement-breakpoint"),
      bps: entry.breakpoints,
      folderMillis: entry.when,
      hash: new Bun.CryptoHasher("sha256").update(text).digest("hex"),
    };
  });
  // drizzle's migrator takes migration files from disk; its dialect applies an in-memory list.
  (db as any).dialect.migrate(migrations, (db as any).session, {});
}

/**
 * Runs fn in a transaction on the raw connection. bun:sqlite turns nested calls into
 * savepoints, so services that open their own transaction compose (the workspace
 * file applies many of them as one).
 */
export function transact<T>(db: Db, fn: () => T): T {
  return db.$client.transaction(fn)();
}

/** The highest event id stored; 0 for an empty table (intake gives ids, see schema/pipeline.ts). */
export function newestEventId(c: Database): number {
  return (c.query("SELECT max(id) AS id FROM events").get() as { id: number | null }).id ?? 0;
}
