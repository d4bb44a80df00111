/** Webhook mappings' state on SQLite (src/sources/state-store.ts): prepared statements, one row per hash. */
import type { Statement } from "bun:sqlite";
import type { Db } from "../../../db";
import type { SourceStateStore } from "../../sources/state-store";

export class SqliteSourceStateStore implements SourceStateStore {
  private readonly read: Statement;
  private readonly write: Statement;
  private readonly purge: Statement;

  constructor(db: Db) {
    const c = db.$client;
    this.read = c.prepare("SELECT fields FROM source_state WHERE workspace_id = ? AND key = ? AND expires_at > ?");
    // An expired hash is merged into as if it were gone, as Redis would have dropped it.
    this.write = c.prepare(
      "INSERT INTO source_state (workspace_id, key, fields, expires_at) VALUES (?1, ?2, ?3, ?4) " +
        "ON CONFLICT (workspace_id, key) DO UPDATE SET fields = json_patch(CASE WHEN source_state.expires_at > ?5 THEN source_state.fields ELSE '{}' END, excluded.fields), expires_at = excluded.expires_at",
    );
    this.purge = c.prepare("DELETE FROM source_state WHERE expires_at <= ?");
  }

  async get(workspaceId: string, key: string, now: number): Promise<Record<string, string> | null> {
    const row = this.read.get(workspaceId, key, now) as { fields: string } | null;
    return row ? (JSON.parse(row.fields) as Record<string, string>) : null;
  }

  async set(workspaceId: string, key: string, fields: Record<string, string>, expiresAt: number, now: number): Promise<void> {
    this.write.run(workspaceId, key, JSON.stringify(fields), expiresAt, now);
  }

  async purgeExpired(now: number): Promise<number> {
    return this.purge.run(now).changes;
  }
}
