/**
 * Benchmark helper: inserts `count` active `suppress` regulations (users
 * `<prefix>0 … <prefix>N-1`, every source) in one transaction.
 *
 * The suppression index is loaded at start, so a server already running does not see
 * rows written here by another process: seed its data dir before starting it (or
 * restart it). In the same process, pass `index` and the users are added to it.
 */
import { join } from "node:path";
import { type Db, openDatabase } from "../../db";
import { newId } from "../lib/ids";
import type { SuppressionIndex } from "./suppression";

export function seedRegulations(
  target: Db | string,
  count: number,
  opts: { workspaceId?: string; userPrefix?: string; index?: SuppressionIndex } = {},
): { workspaceId: string; count: number } {
  const db = typeof target === "string" ? openDatabase(join(target, "sluice.db"), { synchronous: "NORMAL" }) : target;
  try {
    const c = db.$client;
    const workspaceId = opts.workspaceId ?? (c.query("SELECT id FROM workspaces ORDER BY created_at, id LIMIT 1").get() as { id: string } | null)?.id;
    if (!workspaceId) throw new Error("seedRegulations: no workspace in this database (start Sluice once first)");
    const prefix = opts.userPrefix ?? "seed-user-";
    const insert = c.prepare(
      `INSERT INTO regulations (id, workspace_id, regulation_type, user_id, attributes, source_ids, destination_ids, canceled, created_at, updated_at)
       VALUES (?, ?, 'suppress', ?, ?, NULL, NULL, 0, ?, ?)`,
    );
    const now = Date.now();
    const userIds = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
    c.transaction(() => {
      for (const userId of userIds) insert.run(newId("reg"), workspaceId, userId, JSON.stringify({ userId }), now, now);
    })();
    // Every source: what the rows just written say.
    opts.index?.added(workspaceId, userIds, null);
    return { workspaceId, count };
  } finally {
    if (typeof target === "string") db.$client.close();
  }
}
