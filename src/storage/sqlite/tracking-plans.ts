/** Tracking plans on SQLite (src/tracking-plans/store.ts): prepared statements; writes commit at once. */
import type { Statement } from "bun:sqlite";
import type { Db } from "../../../db";
import { DROPPED_EVENTS_KEPT, type DroppedCount, type DroppedEventRow, type PlanRow, type PlanVersionRow, type TrackingPlanCountsFlush, type TrackingPlanStore, type ViolationCount } from "../../tracking-plans/store";

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
      addViolations: c.prepare(
        "INSERT INTO tracking_plan_violation_counts (workspace_id, source_id, day, type, event, violation_type, property, count) VALUES (?, ?, ?, ?, ?, ?, ?, ?) " +
          "ON CONFLICT (source_id, day, type, event, violation_type, property) DO UPDATE SET count = count + excluded.count",
      ),
      addDropped: c.prepare(
        "INSERT INTO tracking_plan_dropped_counts (workspace_id, source_id, day, type, event, count) VALUES (?, ?, ?, ?, ?, ?) " +
          "ON CONFLICT (source_id, day, type, event) DO UPDATE SET count = count + excluded.count",
      ),
      insertDroppedEvent: c.prepare("INSERT INTO tracking_plan_dropped_events (workspace_id, source_id, event_id, at, type, event, violation_type, error, violations) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
      // The index (source_id, id) finds the newest rows and the boundary below them.
      trimDroppedEvents: c.prepare(
        `DELETE FROM tracking_plan_dropped_events WHERE source_id = ?1 AND id < (SELECT min(id) FROM (SELECT id FROM tracking_plan_dropped_events WHERE source_id = ?1 ORDER BY id DESC LIMIT ${DROPPED_EVENTS_KEPT}))`,
      ),
      violationCounts: c.prepare(
        "SELECT workspace_id AS workspaceId, source_id AS sourceId, day, type, event, violation_type AS violationType, property, count FROM tracking_plan_violation_counts WHERE source_id = ? AND day >= ?",
      ),
      droppedCounts: c.prepare("SELECT workspace_id AS workspaceId, source_id AS sourceId, day, type, event, count FROM tracking_plan_dropped_counts WHERE source_id = ? AND day >= ?"),
      droppedEvents: c.prepare(
        "SELECT d.workspace_id AS workspaceId, d.source_id AS sourceId, d.event_id AS eventId, d.at, d.type, d.event, d.violation_type AS violationType, d.error, d.violations, e.payload " +
          "FROM tracking_plan_dropped_events d LEFT JOIN events e ON e.id = d.event_id WHERE d.source_id = ? ORDER BY d.id DESC LIMIT ?",
      ),
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

  async addCounts(flush: TrackingPlanCountsFlush): Promise<void> {
    this.db.$client.transaction(() => {
      for (const v of flush.violations) this.s.addViolations!.run(v.workspaceId, v.sourceId, v.day, v.type, v.event, v.violationType, v.property, v.count);
      for (const d of flush.dropped) this.s.addDropped!.run(d.workspaceId, d.sourceId, d.day, d.type, d.event, d.count);
      const sources = new Set<string>();
      for (const e of flush.droppedEvents) {
        this.s.insertDroppedEvent!.run(e.workspaceId, e.sourceId, e.eventId, e.at, e.type, e.event, e.violationType, e.error, JSON.stringify(e.violations));
        sources.add(e.sourceId);
      }
      for (const id of sources) this.s.trimDroppedEvents!.run(id);
    })();
  }

  async violationCounts(sourceId: string, fromDay: string): Promise<ViolationCount[]> {
    return this.s.violationCounts!.all(sourceId, fromDay) as ViolationCount[];
  }

  async droppedCounts(sourceId: string, fromDay: string): Promise<DroppedCount[]> {
    return this.s.droppedCounts!.all(sourceId, fromDay) as DroppedCount[];
  }

  async droppedEvents(sourceId: string, limit: number): Promise<Array<DroppedEventRow & { payload: string | null }>> {
    return (this.s.droppedEvents!.all(sourceId, limit) as any[]).map((r) => ({ ...r, violations: JSON.parse(r.violations) }));
  }
}
