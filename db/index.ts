/**
 * Opens the one SQLite file, sets its durability explicitly, and applies the
 * embedded migrations. Nothing here reads db/ from disk, so the compiled binary
 * works from an empty folder.
 */
import { Database } from "bun:sqlite";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import { journal, migrationSql } from "./migrations";
import * as schema from "./schema";

export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database };
export { schema };

export type SyncMode = "FULL" | "NORMAL";

/** The page size of a new database file; an existing file keeps its own. */
export const PAGE_SIZE = 16384;

export function openDatabase(path: string, opts: { synchronous?: SyncMode } = {}): Db {
  const sqlite = new Database(path, { create: true, strict: true });
  // First: another thread or a process that is just stopping may hold a lock for a moment.
  sqlite.exec("PRAGMA busy_timeout = 5000");
  // Only takes effect on a new file (before the first table). Intake appends whole pages of
  // events, and SQLite writes each WAL frame with two system calls: 16 KB pages cut the main
  // thread's CPU per batch event by about 15% against 4 KB (scripts/ab-intake.ts --batch),
  // single calls and delivery unchanged; 32 and 64 KB gained nothing more.
  sqlite.exec(`PRAGMA page_size = ${PAGE_SIZE}`);
  // Only takes effect on a new file (before the first table): lets retention give pages back.
  sqlite.exec("PRAGMA auto_vacuum = INCREMENTAL");
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
  return db;
}

/** The journal and SQL text are bundled; the hash matches drizzle's own migrator. */
function migrate(db: Db) {
  const migrations = journal.entries.map((entry) => {
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
