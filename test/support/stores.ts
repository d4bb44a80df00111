/**
 * Scratch space for the storage contract suites (one contract run against the SQLite and the
 * PostgreSQL store of an area): a data dir's database opened as the server opens it, and fresh
 * migrated PostgreSQL schemas with clients on them. Everything opened in a test is stopped,
 * closed and dropped after it. Call at the top of the file.
 */
import { join } from "node:path";
import { openDatabase } from "../../db";
import type { PgDb } from "../../db/pg";
import { cleanup, tempDir } from "./helpers";
import { pgScratch } from "./pg";

export function storeScratch(prefix: string) {
  const pg = pgScratch(prefix);
  return {
    /** A connection outside the tests' schemas, for the tests' own checks. */
    admin: pg.admin,
    /** Runs after the test, newest first, before clients are closed and schemas dropped. */
    onStop: (stop: () => Promise<void> | void) => pg.onStop(async () => void (await stop())),
    /** A new data dir with its database, as `serve` opens it. */
    sqlite() {
      const dir = tempDir();
      const file = join(dir, "sluice.db");
      const db = openDatabase(file, { synchronous: "FULL" });
      pg.onStop(async () => {
        db.$client.close();
        await cleanup(dir);
      });
      return { db, dir, file };
    },
    /** A fresh schema; `open()` is another client on it (another instance), migrated. */
    pgSchema() {
      const schema = pg.schema();
      return { schema, open: (max = 4): Promise<PgDb> => pg.open(schema, { max }) };
    },
  };
}
