/**
 * The test PostgreSQL: 127.0.0.1:5432, database `test`, trust authentication (user postgres),
 * or PGHOST/PGPORT/PGUSER/PGDATABASE. Without it the PostgreSQL tests are skipped and say so,
 * unless SLUICE_REQUIRE_POSTGRES is set (CI), where its absence fails.
 */
import { expect, test } from "bun:test";
import { SQL } from "bun";

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

export { waitFor } from "./helpers";
