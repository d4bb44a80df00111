/** Tracking plans on SQLite (src/tracking-plans/store.ts): prepared statements; writes commit at once. */
import type { Statement } from "bun:sqlite";
import type { Db } from "../../../db";
import type { PlanRow, PlanVersionRow, TrackingPlanStore } from "../../tracking-plans/store";

const PLAN = "SELECT workspace_id AS workspaceId, id, name, current_version AS currentVersion, created_at AS createdAt, updated_at AS updatedAt FROM tracking_plans";
const VERSION = "SELECT workspace_id AS workspaceId, plan_id AS planId, version, plan, problems, created_at AS createdAt FROM tracking_plan_versions";

const versionOf = (r: any): PlanVersionRow => ({ ...r, plan: JSON.parse(r.plan), problems: JSON.parse(r.problems) });

export class SqliteTrackingPlanStore implements TrackingPlanStore {
  private readonly s: Record<string, Statement>;

  constructor(private readonly db: Db) {
    const c = db.$client;
    this.s = {
      insertVersion: c.prepare("INSERT OR IGNORE INTO tracking_plan_versions (workspace_id, plan_id, version, plan, problems, created_at) VALUES (?, ?, ?, ?, ?, ?)"),
      upsertPlan: c.prepare(
        "INSERT INTO tracking_plans (workspace_id, id, name, current_version, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5) " +
          "ON CONFLICT (workspace_id, id) DO UPDATE SET name = excluded.name, current_version = max(tracking_plans.current_version, excluded.current_version), updated_at = excluded.updated_at",
      ),
      plan: c.prepare(`${PLAN} WHERE workspace_id = ? AND id = ?`),
      plans: c.prepare(`${PLAN} WHERE workspace_id = ? ORDER BY name, id`),
      version: c.prepare(`${VERSION} WHERE workspace_id = ? AND plan_id = ? AND version = ?`),
      current: c.prepare(`${VERSION} v WHERE workspace_id = ? AND plan_id = ? AND version = (SELECT current_version FROM tracking_plans p WHERE p.workspace_id = v.workspace_id AND p.id = v.plan_id)`),
      versions: c.prepare("SELECT workspace_id AS workspaceId, plan_id AS planId, version, problems, created_at AS createdAt FROM tracking_plan_versions WHERE workspace_id = ? AND plan_id = ? ORDER BY version DESC"),
      all: c.prepare(VERSION),
      deleteVersions: c.prepare("DELETE FROM tracking_plan_versions WHERE workspace_id = ? AND plan_id = ?"),
      deletePlan: c.prepare("DELETE FROM tracking_plans WHERE workspace_id = ? AND id = ?"),
    };
  }

  async addVersion(row: PlanVersionRow, name: string): Promise<boolean> {
    return this.db.$client.transaction(() => {
      const added = this.s.insertVersion!.run(row.workspaceId, row.planId, row.version, JSON.stringify(row.plan), JSON.stringify(row.problems), row.createdAt).changes > 0;
      if (added) this.s.upsertPlan!.run(row.workspaceId, row.planId, name, row.version, row.createdAt);
      return added;
    })();
  }

  async plan(workspaceId: string, id: string): Promise<PlanRow | undefined> {
    return (this.s.plan!.get(workspaceId, id) as PlanRow | null) ?? undefined;
  }

  async plans(workspaceId: string): Promise<PlanRow[]> {
    return this.s.plans!.all(workspaceId) as PlanRow[];
  }

  async version(workspaceId: string, id: string, version?: number): Promise<PlanVersionRow | undefined> {
    const r = version === undefined ? this.s.current!.get(workspaceId, id) : this.s.version!.get(workspaceId, id, version);
    return r ? versionOf(r) : undefined;
  }

  async versions(workspaceId: string, id: string) {
    return (this.s.versions!.all(workspaceId, id) as any[]).map((r) => ({ ...r, problems: JSON.parse(r.problems) }));
  }

  async allVersions(): Promise<PlanVersionRow[]> {
    return (this.s.all!.all() as any[]).map(versionOf);
  }

  async deletePlan(workspaceId: string, id: string): Promise<boolean> {
    return this.db.$client.transaction(() => {
      this.s.deleteVersions!.run(workspaceId, id);
      return this.s.deletePlan!.run(workspaceId, id).changes > 0;
    })();
  }
}
