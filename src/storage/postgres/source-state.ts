/** Webhook mappings' state on PostgreSQL (cluster mode): the same answers as the SQLite store, shared by every instance. */
import type { PgDb } from "../../../db/pg";
import type { SourceStateStore } from "../../sources/state-store";

export class PgSourceStateStore implements SourceStateStore {
  constructor(private readonly db: PgDb) {}

  async get(workspaceId: string, key: string, now: number): Promise<Record<string, string> | null> {
    const [row] = await this.db.$client`SELECT fields FROM source_state WHERE workspace_id = ${workspaceId} AND key = ${key} AND expires_at > ${now}`;
    if (!row) return null;
    return (typeof row.fields === "string" ? JSON.parse(row.fields) : row.fields) as Record<string, string>;
  }

  async set(workspaceId: string, key: string, fields: Record<string, string>, expiresAt: number, now: number): Promise<void> {
    // An expired hash is merged into as if it were gone, as Redis would have dropped it.
    await this.db.$client`
      INSERT INTO source_state (workspace_id, key, fields, expires_at) VALUES (${workspaceId}, ${key}, ${JSON.stringify(fields)}::text::jsonb, ${expiresAt})
      ON CONFLICT (workspace_id, key) DO UPDATE SET
        fields = CASE WHEN source_state.expires_at > ${now} THEN source_state.fields || excluded.fields ELSE excluded.fields END,
        expires_at = excluded.expires_at`;
  }

  async purgeExpired(now: number): Promise<number> {
    const rows = await this.db.$client`DELETE FROM source_state WHERE expires_at <= ${now} RETURNING 1`;
    return rows.length;
  }
}
