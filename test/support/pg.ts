/**
 * The test PostgreSQL: 127.0.0.1:5432, database `test`, trust authentication (user postgres),
 * or PGHOST/PGPORT/PGUSER/PGDATABASE. Without it the PostgreSQL tests are skipped and say so,
 * unless SLUICE_REQUIRE_POSTGRES is set (CI), where its absence fails.
 */
import { afterAll, afterEach, expect, test } from "bun:test";
import { SQL } from "bun";
import { closePostgres, openPostgres, type OpenPostgresOptions, type PgDb } from "../../db/pg";

export const PG = {
  host: process.env.PGHOST ?? "127.0.0.1",
  port: Number(process.env.PGPORT ?? 5432),
  database: process.env.PGDATABASE ?? "test",
  user: process.env.PGUSER ?? "postgres",
  password: process.env.PGPASSWORD ?? "",
};

async function reachable(): Promise<string | null> {
  const sql = new SQL({ hostname: PG.host, port: PG.port, database: PG.database, username: PG.user, password: PG.password, connectionTimeout: 3, max: 1 });
  try {
    await sql`SELECT 1`;
    return null;
  } catch (err) {
    return (err as Error).message;
  } finally {
    await sql.close().catch(() => {});
  }
}

const problem = await reachable();
export const havePostgres = problem === null;

/** Call at the top of a test file that needs PostgreSQL. */
export function requirePostgres(file: string): void {
  if (!havePostgres) console.warn(`${file}: skipped, no PostgreSQL at ${PG.host}:${PG.port}/${PG.database} (${problem})`);
  test.if(!havePostgres && !!process.env.SLUICE_REQUIRE_POSTGRES)("PostgreSQL is reachable (SLUICE_REQUIRE_POSTGRES is set)", () => {
    expect(problem).toBeNull();
  });
}

/** A connection for the test's own checks. */
export function testSql(): SQL {
  return new SQL({ hostname: PG.host, port: PG.port, database: PG.database, username: PG.user, password: PG.password, max: 2 });
}

/** The test database as a URL (for openPostgres and the CLI). */
export const PG_URL = `postgres://${encodeURIComponent(PG.user)}${PG.password ? ":" + encodeURIComponent(PG.password) : ""}@${PG.host}:${PG.port}/${PG.database}`;

/**
 * Scratch space for the tests of one describe block (call it inside the block): fresh migrated
 * schemas, clients on them and things to stop, all undone after each test — what was registered
 * to stop first (newest first), then the clients, then the schemas.
 */
export function pgScratch(prefix: string) {
  const admin = havePostgres ? testSql() : null;
  const schemas: string[] = [];
  const dbs: PgDb[] = [];
  const stops: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => {});
    for (const db of dbs.splice(0)) await closePostgres(db).catch(() => {});
    for (const s of schemas.splice(0)) await admin!.unsafe(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  }, 30_000);
  afterAll(async () => {
    await admin?.close();
  });
  return {
    /** A connection outside the test's schemas, for the test's own checks. */
    admin: admin!,
    /** A schema name of its own (created by the first client opened on it). */
    schema(): string {
      const s = `${prefix}_${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
      schemas.push(s);
      return s;
    },
    /** A client (its own pool) on `schema`, migrated, closed after the test. */
    async open(schema: string, opts: Omit<OpenPostgresOptions, "searchPath"> = {}): Promise<PgDb> {
      const db = await openPostgres(PG_URL, { searchPath: schema, ...opts });
      dbs.push(db);
      return db;
    },
    onStop(stop: () => Promise<void>): void {
      stops.push(stop);
    },
  };
}

/**
 * Holds ACCESS EXCLUSIVE on a table in an open transaction on its own connection of `sql`, so a
 * load that reaches it waits there. The answer releases it (again: nothing); register it with
 * the test's cleanup too.
 */
export async function lockTable(sql: SQL, schema: string, table: string): Promise<() => Promise<void>> {
  const conn = await sql.reserve();
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    await conn.unsafe("ROLLBACK").catch(() => {});
    conn.release();
  };
  try {
    await conn.unsafe("BEGIN");
    await conn.unsafe(`LOCK TABLE "${schema}"."${table}" IN ACCESS EXCLUSIVE MODE`);
  } catch (err) {
    await release();
    throw err;
  }
  return release;
}

export { waitFor } from "./helpers";
