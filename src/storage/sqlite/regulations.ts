/**
 * The regulations store on SQLite (design §2.1): today's statements behind the seam
 * (src/regulations/store.ts). The suppression reads and the deletion runner's statements are
 * prepared once; the API's create and list go through drizzle as before (not the hot path).
 *
 * Each write runs synchronously from start to commit in one bun:sqlite transaction on the main
 * connection, so nothing else can run in between; the promise it returns is already settled.
 * There is one process, so there is no epoch: every change reaches the suppression index
 * through the service that made it.
 */
import type { Statement } from "bun:sqlite";
import { and, asc, eq, gt, inArray } from "drizzle-orm";
import type { Db } from "../../../db";
import { deletionJobs, regulations } from "../../../db/schema";
import type {
  ActiveSuppression,
  CancelResult,
  DeletionJobOutcome,
  DeletionJobRow,
  DueDeletionJob,
  EventIdSlice,
  NewRegulations,
  RegulationRow,
  RegulationsStore,
  RuleSources,
  SuppressionChanges,
  SuppressionSnapshot,
  SuppressionWrite,
} from "../../regulations/store";

/** Rows per multi-row insert: stays under SQLite's limit on bound parameters. */
const CHUNK = 500;

type StatementName =
  | "activeAll"
  | "activeOfUser"
  | "regulation"
  | "cancel"
  | "abortJobs"
  | "due"
  | "nextDue"
  | "markRunning"
  | "finish"
  | "resetRunning"
  | "deleteDeliveries"
  | "processorCursor"
  | "unrouted"
  | "eventIds"
  | "purgeSlice";

const parseSources = (text: string | null): RuleSources => (text ? (JSON.parse(text) as string[]) : null);

export class SqliteRegulationsStore implements RegulationsStore {
  private readonly s: Record<StatementName, Statement>;

  constructor(private readonly db: Db) {
    const c = db.$client;
    this.s = {
      activeAll: c.prepare("SELECT workspace_id AS workspaceId, user_id AS userId, source_ids AS sourceIds FROM regulations WHERE canceled = 0"),
      activeOfUser: c.prepare("SELECT source_ids AS sourceIds FROM regulations WHERE workspace_id = ? AND user_id = ? AND canceled = 0"),
      regulation: c.prepare("SELECT user_id AS userId, canceled FROM regulations WHERE id = ? AND workspace_id = ?"),
      cancel: c.prepare("UPDATE regulations SET canceled = 1, updated_at = ? WHERE id = ? AND canceled = 0"),
      abortJobs: c.prepare(
        "UPDATE deletion_jobs SET status = 'aborted', reason = 'regulation canceled', updated_at = ? WHERE regulation_id = ? AND status IN ('pending', 'failed')",
      ),
      due: c.prepare(
        `SELECT j.id, j.workspace_id AS workspaceId, j.destination_id AS destinationId, j.attempts, j.first_attempt_at AS firstAttemptAt,
                r.user_id AS userId, r.attributes
           FROM deletion_jobs j JOIN regulations r ON r.id = j.regulation_id
          WHERE j.status IN ('pending', 'failed') AND j.next_attempt_at <= ?
          ORDER BY j.next_attempt_at, j.id LIMIT ?`,
      ),
      nextDue: c.prepare("SELECT MIN(next_attempt_at) AS at FROM deletion_jobs WHERE status IN ('pending', 'failed')"),
      markRunning: c.prepare("UPDATE deletion_jobs SET status = 'running', updated_at = ? WHERE id = ? AND status IN ('pending', 'failed')"),
      // Only a running job is finished: a cancel may have aborted it meanwhile.
      finish: c.prepare(
        `UPDATE deletion_jobs SET status = ?, reason = ?, attempts = ?, first_attempt_at = ?, next_attempt_at = ?, updated_at = ?
          WHERE id = ? AND status = 'running'`,
      ),
      resetRunning: c.prepare("UPDATE deletion_jobs SET status = 'pending', updated_at = ? WHERE status = 'running'"),
      // Every delivery of these users to the destination goes, not only queued ones: an
      // aborted one could otherwise be replayed to the destination after the deletion.
      deleteDeliveries: c.prepare("DELETE FROM deliveries WHERE destination_id = ? AND user_key IN (SELECT value FROM json_each(?))"),
      processorCursor: c.prepare("SELECT value FROM cursors WHERE name = 'processor'"),
      // Only an event of a source with destinations can still become a delivery.
      unrouted: c.prepare(
        `SELECT 1 AS x FROM events WHERE id > ? AND workspace_id = ? AND user_key IN (SELECT value FROM json_each(?))
            AND source_id IN (SELECT value FROM json_each(?)) LIMIT 1`,
      ),
      eventIds: c.prepare("SELECT MIN(id) AS min, MAX(id) AS max FROM events"),
      purgeSlice: c.prepare(
        `DELETE FROM events WHERE id > ? AND id <= ? AND workspace_id = ? AND user_key IN (SELECT value FROM json_each(?))
            AND (id <= ? OR source_id NOT IN (SELECT value FROM json_each(?)))
            AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.id)`,
      ),
    };
  }

  async createRegulations(input: NewRegulations): Promise<SuppressionWrite> {
    this.db.$client.transaction(() => {
      for (let i = 0; i < input.regulations.length; i += CHUNK) this.db.insert(regulations).values(input.regulations.slice(i, i + CHUNK)).run();
      for (let i = 0; i < input.jobs.length; i += CHUNK) this.db.insert(deletionJobs).values(input.jobs.slice(i, i + CHUNK)).run();
    })();
    return {};
  }

  async regulationsPage(workspaceId: string, afterId: string | undefined, limit: number): Promise<RegulationRow[]> {
    const where = afterId === undefined ? eq(regulations.workspaceId, workspaceId) : and(eq(regulations.workspaceId, workspaceId), gt(regulations.id, afterId));
    return this.db.select().from(regulations).where(where).orderBy(asc(regulations.id)).limit(limit).all();
  }

  async deletionJobsOf(regulationIds: string[]): Promise<DeletionJobRow[]> {
    if (regulationIds.length === 0) return [];
    return this.db.select().from(deletionJobs).where(inArray(deletionJobs.regulationId, regulationIds)).all();
  }

  async cancelRegulation(workspaceId: string, id: string, at: number): Promise<CancelResult | undefined> {
    return this.db.$client.transaction((): CancelResult | undefined => {
      const row = this.s.regulation.get(id, workspaceId) as { userId: string; canceled: number } | null;
      if (!row) return undefined;
      let canceled = false;
      if (!row.canceled) {
        canceled = this.s.cancel.run(at, id).changes > 0;
        this.s.abortJobs.run(at, id);
      }
      return { userId: row.userId, canceled, remaining: this.activeOfUser(workspaceId, row.userId) };
    })();
  }

  async activeSuppressions(): Promise<SuppressionSnapshot> {
    return { epoch: 0, rules: this.activeSuppressionsNow() };
  }

  /**
   * The same rows, synchronously: for SQLite-only callers that must hold the index loaded before
   * their next statement (the benchmark seeder, tools working on a data dir).
   */
  activeSuppressionsNow(): ActiveSuppression[] {
    const out: ActiveSuppression[] = [];
    for (const r of this.s.activeAll.iterate() as Iterable<{ workspaceId: string; userId: string; sourceIds: string | null }>) {
      out.push({ workspaceId: r.workspaceId, userId: r.userId, sourceIds: parseSources(r.sourceIds) });
    }
    return out;
  }

  async suppressionEpoch(): Promise<number> {
    return 0;
  }

  async suppressionChangesSince(_epoch: number): Promise<SuppressionChanges> {
    return { epoch: 0, users: [] };
  }

  async dueDeletionJobs(now: number, limit: number): Promise<DueDeletionJob[]> {
    const rows = this.s.due.all(now, limit) as Array<Omit<DueDeletionJob, "attributes"> & { attributes: string }>;
    return rows.map((r) => ({ ...r, attributes: JSON.parse(r.attributes) }));
  }

  async nextDeletionDueAt(): Promise<number | undefined> {
    return (this.s.nextDue.get() as { at: number | null } | null)?.at ?? undefined;
  }

  async claimDeletionJobs(ids: string[], at: number): Promise<string[]> {
    return this.db.$client.transaction(() => ids.filter((id) => this.s.markRunning.run(at, id).changes > 0))();
  }

  async finishDeletionJobs(outcomes: DeletionJobOutcome[]): Promise<number> {
    return this.db.$client.transaction(() => {
      let n = 0;
      for (const o of outcomes) n += this.s.finish.run(o.status, o.reason, o.attempts, o.firstAttemptAt, o.nextAttemptAt, o.at, o.id).changes;
      return n;
    })();
  }

  async resetRunningDeletionJobs(at: number): Promise<number> {
    return this.s.resetRunning.run(at).changes;
  }

  async deleteDeliveriesOf(destinationId: string, userIds: string[]): Promise<number> {
    return this.s.deleteDeliveries.run(destinationId, JSON.stringify(userIds)).changes;
  }

  async hasUnroutedEvents(workspaceId: string, userIds: string[], routedSourceIds: string[]): Promise<boolean> {
    return !!this.s.unrouted.get(this.processorCursor(), workspaceId, JSON.stringify(userIds), JSON.stringify(routedSourceIds));
  }

  async eventIdRange(): Promise<{ min: number; max: number } | undefined> {
    const { min, max } = this.s.eventIds.get() as { min: number | null; max: number | null };
    return min === null || max === null ? undefined : { min, max };
  }

  async purgeEvents(slice: EventIdSlice, workspaceId: string, userIds: string[], routedSourceIds: string[]): Promise<number> {
    const users = JSON.stringify(userIds);
    return this.s.purgeSlice.run(slice.afterId, slice.throughId, workspaceId, users, this.processorCursor(), JSON.stringify(routedSourceIds)).changes;
  }

  private activeOfUser(workspaceId: string, userId: string): RuleSources[] {
    return (this.s.activeOfUser.all(workspaceId, userId) as Array<{ sourceIds: string | null }>).map((r) => parseSources(r.sourceIds));
  }

  private processorCursor(): number {
    return (this.s.processorCursor.get() as { value: number } | null)?.value ?? 0;
  }
}
