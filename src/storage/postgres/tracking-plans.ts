/** Tracking plans on PostgreSQL (cluster mode): the same answers as the SQLite store. */
import type { PgDb } from "../../../db/pg";
import type { PlanRow, PlanVersionRow, TrackingPlanStore } from "../../tracking-plans/store";

const json = (v: unknown) => (typeof v === "string" ? JSON.parse(v) : v);
const planOf = (r: any): PlanRow => ({ workspaceId: r.workspace_id, id: r.id, name: r.name, currentVersion: Number(r.current_version), createdAt: Number(r.created_at), updatedAt: Number(r.updated_at) });
const versionOf = (r: any): PlanVersionRow => ({
  workspaceId: r.workspace_id,
  planId: r.plan_id,
  version: Number(r.version),
  plan: json(r.plan),
  problems: json(r.problems),
  createdAt: Number(r.created_at),
});

export class PgTrackingPlanStore implements TrackingPlanStore {
  constructor(private readonly db: PgDb) {}

  async addVersion(row: PlanVersionRow, name: string): Promise<boolean> {
    return this.db.$client.begin(async (sql) => {
      const added = await sql`
        INSERT INTO tracking_plan_versions (workspace_id, plan_id, version, plan, problems, created_at)
        VALUES (${row.workspaceId}, ${row.planId}, ${row.version}, ${JSON.stringify(row.plan)}::text::jsonb, ${JSON.stringify(row.problems)}::text::jsonb, ${row.createdAt})
        ON CONFLICT DO NOTHING RETURNING 1`;
      if (added.length === 0) return false;
      await sql`
        INSERT INTO tracking_plans (workspace_id, id, name, current_version, created_at, updated_at)
        VALUES (${row.workspaceId}, ${row.planId}, ${name}, ${row.version}, ${row.createdAt}, ${row.createdAt})
        ON CONFLICT (workspace_id, id) DO UPDATE SET name = excluded.name,
          current_version = greatest(tracking_plans.current_version, excluded.current_version), updated_at = excluded.updated_at`;
      return true;
    });
  }

  async plan(workspaceId: string, id: string): Promise<PlanRow | undefined> {
    const [r] = await this.db.$client`SELECT * FROM tracking_plans WHERE workspace_id = ${workspaceId} AND id = ${id}`;
    return r ? planOf(r) : undefined;
  }

  async plans(workspaceId: string): Promise<PlanRow[]> {
    return (await this.db.$client`SELECT * FROM tracking_plans WHERE workspace_id = ${workspaceId} ORDER BY name, id`).map(planOf);
  }

  async version(workspaceId: string, id: string, version?: number): Promise<PlanVersionRow | undefined> {
    const rows =
      version === undefined
        ? await this.db.$client`SELECT v.* FROM tracking_plan_versions v JOIN tracking_plans p ON p.workspace_id = v.workspace_id AND p.id = v.plan_id AND p.current_version = v.version WHERE v.workspace_id = ${workspaceId} AND v.plan_id = ${id}`
        : await this.db.$client`SELECT * FROM tracking_plan_versions WHERE workspace_id = ${workspaceId} AND plan_id = ${id} AND version = ${version}`;
    return rows[0] ? versionOf(rows[0]) : undefined;
  }

  async versions(workspaceId: string, id: string) {
    const rows = await this.db.$client`SELECT workspace_id, plan_id, version, problems, created_at FROM tracking_plan_versions WHERE workspace_id = ${workspaceId} AND plan_id = ${id} ORDER BY version DESC`;
    return rows.map((r: any) => {
      const { plan: _, ...rest } = versionOf({ ...r, plan: "null" });
      return rest;
    });
  }

  async allVersions(): Promise<PlanVersionRow[]> {
    return (await this.db.$client`SELECT * FROM tracking_plan_versions`).map(versionOf);
  }

  async deletePlan(workspaceId: string, id: string): Promise<boolean> {
    return this.db.$client.begin(async (sql) => {
      await sql`DELETE FROM tracking_plan_versions WHERE workspace_id = ${workspaceId} AND plan_id = ${id}`;
      return (await sql`DELETE FROM tracking_plans WHERE workspace_id = ${workspaceId} AND id = ${id} RETURNING 1`).length > 0;
    });
  }
}
