/**
 * The `users` table of a load: one row per user id, folded from the load's rows, then merged
 * into the table (existing ids updated, new ones inserted). The loader (postgres-loader.ts)
 * stages the folded rows by COPY into a temporary table first.
 */
import type { SQL } from "bun";
import { ident } from "./sql-names.ts";

export const USERS_TABLE = "users";

/**
 * One users row per id: each column takes its latest non-null value, ordered by received_at,
 * as RudderStack computes a user's latest traits.
 */
export function foldUsers(rows: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  const sorted = rows
    .filter((r) => r.id !== null && r.id !== undefined)
    .map((row, i) => ({ row, i }))
    .sort((a, b) => String(a.row.received_at ?? "").localeCompare(String(b.row.received_at ?? "")) || a.i - b.i);
  const byId = new Map<unknown, Record<string, unknown>>();
  for (const { row } of sorted) {
    const seen = byId.get(row.id);
    if (!seen) {
      byId.set(row.id, { ...row });
      continue;
    }
    for (const [k, v] of Object.entries(row)) if (v !== null && v !== undefined) seen[k] = v;
  }
  return [...byId.values()];
}

/**
 * Moves staged users rows into `users`: existing ids are updated, new ones inserted. Returns how
 * many rows were inserted or updated.
 */
export async function mergeUsers(tx: SQL, target: string, staging: string, names: string[], columns: Map<string, string>): Promise<number> {
  const list = names.map(ident).join(", ");
  const fromStaging = names.map((n) => `s.${ident(n)}`).join(", ");
  let updated = 0;
  const hasReceivedAt = names.includes("received_at") && columns.has("received_at");
  // Per column: the newer row's value unless it is null, so a load of older events (a
  // replay) does not overwrite newer traits.
  const sets = names
    .filter((n) => n !== "id")
    .map((n) => {
      const c = ident(n);
      return hasReceivedAt
        ? `${c} = CASE WHEN t.received_at IS NULL OR s.received_at >= t.received_at THEN COALESCE(s.${c}, t.${c}) ELSE COALESCE(t.${c}, s.${c}) END`
        : `${c} = COALESCE(s.${c}, t.${c})`;
    });
  if (sets.length > 0) {
    const r = await tx.unsafe(`UPDATE ${target} t SET ${sets.join(", ")} FROM ${staging} s WHERE t.id = s.id`);
    updated = r.count ?? 0;
  }
  // ON CONFLICT (id) DO NOTHING would fail on a users table RudderStack made without a key.
  const r = await tx.unsafe(
    `INSERT INTO ${target} (${list}) SELECT ${fromStaging} FROM ${staging} s
     WHERE s.id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ${target} t WHERE t.id = s.id)`,
  );
  return (r.count ?? 0) + updated;
}
