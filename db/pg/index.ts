/**
 * Cluster mode's database (issue 24): opens PostgreSQL through Bun's built-in client (Bun.sql,
 * so it runs inside `bun build --compile`) and applies the embedded migrations. Nothing here
 * reads db/ from disk, and nothing runs at import.
 *
 * Many instances may start at once on one database: the migrations run under a session-level
 * `pg_advisory_lock` keyed by the target schema, so one process applies them (in a single
 * transaction) while the others wait, then find them applied and go on.
 */
import { SQL } from "bun";
import { drizzle, type BunSQLDatabase } from "drizzle-orm/bun-sql";
import { journal, migrationSql } from "./migrations";
import * as schema from "./schema";

export type PgDb = BunSQLDatabase<typeof schema> & { $client: SQL };
export { schema };

export interface OpenPostgresOptions {
  /**
   * The connection's search_path, e.g. `t_ab12` (a schema per test) or `sluice, public`.
   * Sluice's tables and its migrations table go to its first schema, created when missing.
   * Without it: the server's default, and the tables go to current_schema().
   */
  searchPath?: string;
  /** Pool size (Bun.sql's default, 10, when absent). */
  max?: number;
  /** Shown in pg_stat_activity; "sluice" when absent. */
  applicationName?: string;
}

/** The database was written by a newer Sluice (migrations this one does not know). */
export class DatabaseRefused extends Error {
  override name = "DatabaseRefused";
}

/**
 * The migrations table. The same name and shape as drizzle's own (id serial, hash, created_at =
 * the journal's `when`) and as SQLite's, but inside the target schema rather than drizzle's
 * default `drizzle` schema, so each schema (one per test, or per installation) has its own.
 */
export const MIGRATIONS_TABLE = "__drizzle_migrations";

/** The advisory lock's first key ("SLuC"); the second is a hash of the target schema. */
const LOCK_CLASS = 0x534c7543;

export async function openPostgres(url: string, opts: OpenPostgresOptions = {}): Promise<PgDb> {
  const connection: Record<string, string> = { application_name: opts.applicationName ?? "sluice" };
  if (opts.searchPath) connection.search_path = opts.searchPath;
  const client = new SQL(url, { ...(opts.max ? { max: opts.max } : {}), connection });
  try {
    await migratePostgres(client, opts.searchPath);
  } catch (e) {
    await client.close().catch(() => {});
    throw e;
  }
  return drizzle({ client, schema }) as PgDb;
}

/** Closes the pool; running queries get `timeout` seconds (default 5) to finish. */
export async function closePostgres(db: PgDb, opts: { timeout?: number } = {}): Promise<void> {
  await db.$client.close({ timeout: opts.timeout ?? 5 });
}

/** The migrations as the migrator applies them; the hash is drizzle's (sha256 of the file). */
export function pgMigrations(count = journal.entries.length) {
  return journal.entries.slice(0, count).map((entry) => {
    const text = migrationSql[entry.tag];
    if (text === undefined) throw new Error(`migration ${entry.tag} is in the journal but not embedded; run npm run db:generate`);
    return {
      tag: entry.tag,
      // drizzle-kit writes foreign keys as REFERENCES "public"."t"; unqualified, they follow the
      // search_path like every other statement in the file, so any schema can hold the tables.
      statements: text
        .split("--> statement-breakpoint")
        .map((s) => s.replaceAll('"public".', ""))
        .filter((s) => s.trim() !== ""),
      when: entry.when,
      hash: new Bun.CryptoHasher("sha256").update(text).digest("hex"),
    };
  });
}

/**
 * Applies the embedded migrations that the target schema lacks, under the advisory lock.
 * drizzle's own dialect.migrate is not used: it runs `CREATE SCHEMA IF NOT EXISTS` on every
 * start, and PostgreSQL checks the database-level CREATE privilege even when the schema exists,
 * so a role that owns its schema but may not create schemas (a common least-privilege setup)
 * could not start. Here the schema is created only when it is missing. The rule is drizzle's:
 * apply every migration newer than the newest one recorded.
 * `count` applies only the first ones (tests of upgrades). Returns how many it applied.
 */
export async function migratePostgres(client: SQL, searchPath?: string, count = journal.entries.length): Promise<number> {
  const migrations = pgMigrations(count);
  const conn = await client.reserve();
  try {
    const target = await targetSchema(conn, searchPath);
    const key = Bun.hash.crc32(target) | 0;
    await conn`SELECT pg_advisory_lock(${LOCK_CLASS}::int, ${key}::int)`;
    try {
      const [exists] = await conn`SELECT 1 AS x FROM pg_namespace WHERE nspname = ${target}`;
      if (!exists) await conn.unsafe(`CREATE SCHEMA ${ident(target)}`);
      const table = `${ident(target)}.${ident(MIGRATIONS_TABLE)}`;
      await conn.unsafe(`CREATE TABLE IF NOT EXISTS ${table} (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`);
      const [last] = await conn.unsafe(`SELECT created_at FROM ${table} ORDER BY created_at DESC LIMIT 1`);
      const newest = last ? Number(last.created_at) : null;
      const known = Math.max(...journal.entries.map((e) => e.when));
      if (newest !== null && newest > known) {
        throw new DatabaseRefused(
          `schema ${target} was written by a newer Sluice (its database has migrations this version does not know); upgrade Sluice`,
        );
      }
      const pending = migrations.filter((m) => newest === null || newest < m.when);
      if (pending.length === 0) return 0;
      await conn.begin(async (tx) => {
        for (const m of pending) {
          for (const statement of m.statements) await tx.unsafe(statement);
          await tx.unsafe(`INSERT INTO ${table} (hash, created_at) VALUES ($1, $2)`, [m.hash, m.when]);
        }
      });
      return pending.length;
    } finally {
      await conn`SELECT pg_advisory_unlock(${LOCK_CLASS}::int, ${key}::int)`.catch(() => {});
    }
  } finally {
    await conn.release();
  }
}

/** The schema the tables go to: the search_path's first entry, else current_schema(). */
async function targetSchema(conn: SQL, searchPath?: string): Promise<string> {
  const first = searchPath?.split(",")[0]?.trim();
  if (first) {
    if (first === "$user" || first === '"$user"') return ((await conn`SELECT current_user AS u`)[0] as { u: string }).u;
    return first.startsWith('"') && first.endsWith('"') ? first.slice(1, -1).replaceAll('""', '"') : first.toLowerCase();
  }
  const [row] = await conn`SELECT current_schema() AS s`;
  if (!row?.s) throw new Error("PostgreSQL's search_path names no existing schema; set one (e.g. ?options=-c search_path=sluice) or create it");
  return row.s as string;
}

function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
