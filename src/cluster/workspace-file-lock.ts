/**
 * Instances started at once with the same workspace file must not apply it at once: each
 * plans against what the database holds before the others commit, so each plans to insert the
 * same sources, and all but one fail on the unique write key and exit. Applying under a
 * session-level advisory lock (one per schema) makes them take turns: the first creates the
 * objects, each later one finds them and plans updates (none when nothing changed), so every
 * instance starts and the cluster holds one copy of each object.
 *
 * The lock is held on a connection of its own for the length of the apply, which runs on the
 * instance's pool; a crash ends the session and with it the lock.
 */
import { SQL } from "bun";
import type { Logger } from "../lib/logger";

/** The advisory lock's first key ("SLwf"); the second is a hash of the schema. */
const LOCK_CLASS = 0x534c7766;

export async function underWorkspaceFileLock<T>(opts: { url: string; schema?: string; log: Logger }, apply: () => Promise<T>): Promise<T> {
  const connection: Record<string, string> = { application_name: "sluice workspace file" };
  if (opts.schema) connection.search_path = opts.schema;
  const sql = new SQL(opts.url, { max: 1, connection });
  try {
    const conn = await sql.reserve();
    try {
      const [got] = await conn`SELECT pg_try_advisory_lock(${LOCK_CLASS}::int, hashtext(current_schema())) AS ok`;
      if (!got?.ok) {
        opts.log.info("another instance is applying the workspace file; waiting for it");
        await conn`SELECT pg_advisory_lock(${LOCK_CLASS}::int, hashtext(current_schema()))`;
      }
      try {
        return await apply();
      } finally {
        await conn`SELECT pg_advisory_unlock(${LOCK_CLASS}::int, hashtext(current_schema()))`.catch(() => {});
      }
    } finally {
      conn.release();
    }
  } finally {
    await sql.close().catch(() => {});
  }
}
