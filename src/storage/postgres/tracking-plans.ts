/** Tracking plans on PostgreSQL (cluster mode): the same answers as the SQLite store. */
import type { PgDb } from "../../../db/pg";
import { DROPPED_EVENTS_KEPT, type DroppedCount, type DroppedEventRow, type PlanRow, type PlanVersionRow, type TrackingPlanCountsFlush, type TrackingPlanStore, type ViolationCount } from "../../tracking-plans/store";

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

  async addCounts(flush: TrackingPlanCountsFlush): Promise<void> {
    // Rows in key order: two instances adding to the same counts lock them in the same order.
    const violations = [...flush.violations].sort((a, b) => cmp(a.sourceId, b.sourceId) || cmp(a.day, b.day) || cmp(a.type, b.type) || cmp(a.event, b.event) || cmp(a.violationType, b.violationType) || cmp(a.property, b.property));
    const dropped = [...flush.dropped].sort((a, b) => cmp(a.sourceId, b.sourceId) || cmp(a.day, b.day) || cmp(a.type, b.type) || cmp(a.event, b.event));
    const events = flush.droppedEvents;
    await this.db.$client.begin(async (sql) => {
      if (violations.length) {
        await sql.unsafe(
          `INSERT INTO tracking_plan_violation_counts (workspace_id, source_id, day, type, event, violation_type, property, count)
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[])
           ON CONFLICT (source_id, day, type, event, violation_type, property) DO UPDATE SET count = tracking_plan_violation_counts.count + excluded.count`,
          [
            violations.map((v) => v.workspaceId),
            violations.map((v) => v.sourceId),
            violations.map((v) => v.day),
            violations.map((v) => v.type),
            violations.map((v) => v.event),
            violations.map((v) => v.violationType),
            violations.map((v) => v.property),
            violations.map((v) => v.count),
          ],
        );
      }
      if (dropped.length) {
        await sql.unsafe(
          `INSERT INTO tracking_plan_dropped_counts (workspace_id, source_id, day, type, event, count)
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[])
           ON CONFLICT (source_id, day, type, event) DO UPDATE SET count = tracking_plan_dropped_counts.count + excluded.count`,
          [dropped.map((d) => d.workspaceId), dropped.map((d) => d.sourceId), dropped.map((d) => d.day), dropped.map((d) => d.type), dropped.map((d) => d.event), dropped.map((d) => d.count)],
        );
      }
      if (events.length) {
        await sql.unsafe(
          `INSERT INTO tracking_plan_dropped_events (workspace_id, source_id, event_id, at, type, event, violation_type, error, violations)
           SELECT w, s, e, a, t, n, vt, er, v::jsonb FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[]) AS x(w, s, e, a, t, n, vt, er, v)`,
          [
            events.map((e) => e.workspaceId),
            events.map((e) => e.sourceId),
            events.map((e) => e.eventId),
            events.map((e) => e.at),
            events.map((e) => e.type),
            events.map((e) => e.event),
            events.map((e) => e.violationType),
            events.map((e) => e.error),
            events.map((e) => JSON.stringify(e.violations)),
          ],
        );
        for (const id of [...new Set(events.map((e) => e.sourceId))].sort()) {
          await sql.unsafe(
            `DELETE FROM tracking_plan_dropped_events WHERE source_id = $1 AND id < (
               SELECT min(id) FROM (SELECT id FROM tracking_plan_dropped_events WHERE source_id = $1 ORDER BY id DESC LIMIT ${DROPPED_EVENTS_KEPT}) newest)`,
            [id],
          );
        }
      }
    });
  }

  async violationCounts(sourceId: string, fromDay: string): Promise<ViolationCount[]> {
    const rows = await this.db.$client`SELECT * FROM tracking_plan_violation_counts WHERE source_id = ${sourceId} AND day >= ${fromDay}`;
    return rows.map((r: any) => ({ workspaceId: r.workspace_id, sourceId: r.source_id, day: r.day, type: r.type, event: r.event, violationType: r.violation_type, property: r.property, count: Number(r.count) }));
  }

  async droppedCounts(sourceId: string, fromDay: string): Promise<DroppedCount[]> {
    const rows = await this.db.$client`SELECT * FROM tracking_plan_dropped_counts WHERE source_id = ${sourceId} AND day >= ${fromDay}`;
    return rows.map((r: any) => ({ workspaceId: r.workspace_id, sourceId: r.source_id, day: r.day, type: r.type, event: r.event, count: Number(r.count) }));
  }

  async droppedEvents(sourceId: string, limit: number): Promise<Array<DroppedEventRow & { payload: string | null }>> {
    const rows = await this.db.$client`
      SELECT d.*, e.payload FROM tracking_plan_dropped_events d LEFT JOIN events e ON e.id = d.event_id
       WHERE d.source_id = ${sourceId} ORDER BY d.id DESC LIMIT ${limit}`;
    return rows.map((r: any) => ({
      workspaceId: r.workspace_id,
      sourceId: r.source_id,
      eventId: Number(r.event_id),
      at: Number(r.at),
      type: r.type,
      event: r.event,
      violationType: r.violation_type,
      error: r.error,
      violations: json(r.violations),
      payload: r.payload == null ? null : typeof r.payload === "string" ? r.payload : JSON.stringify(r.payload),
    }));
  }
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
