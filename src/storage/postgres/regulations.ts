/**
 * The regulations store on PostgreSQL (cluster mode, design §2.1 and §3.4): the same interface
 * and answers as the SQLite store, through drizzle on Bun.sql.
 *
 * A write that changes suppression (a create, a cancel that cancels) bumps the 'suppression'
 * epoch in its own transaction and stamps the rows it wrote with the new value
 * (`regulations.seq`): another instance asks for `seq > ` the epoch it has and gets exactly the
 * newer rules (`suppressionChangesSince`). The bump takes the epoch row's lock, so suppression
 * writes of all instances commit one at a time in epoch order; a reader that sees epoch E in its
 * snapshot therefore sees every row stamped up to E. `afterWrite` runs inside the transaction
 * after the rows and the bump: where the bus's NOTIFY goes (delivered at commit, never for a
 * write that rolled back), as in storage/postgres/control-plane.ts.
 *
 * The deletion runner's purge reads the processor's position per partition
 * (processor_cursors): an event is fanned out once its (tx, id) is at or below its partition's
 * cursor (design §3.3).
 */
import { and, asc, eq, gt, inArray, min, sql } from "drizzle-orm";
import type { PgDb } from "../../../db/pg";
import { clusterEpochs, deletionJobs, regulations } from "../../../db/pg/schema";
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
  UserSuppression,
} from "../../regulations/store";

/** The transaction a write runs in (drizzle over Bun.sql). */
export type PgRegulationsTx = Parameters<Parameters<PgDb["transaction"]>[0]>[0];

export interface PgRegulationsStoreOptions {
  /**
   * Runs inside a suppression write's transaction, after its rows and the epoch bump: the hook
   * for the bus's `NOTIFY` (delivered at commit). A throw rolls the write back.
   */
  afterWrite?: (tx: PgRegulationsTx, epoch: number) => Promise<void> | void;
}

/** Rows per multi-row insert: 11 parameters a row stays far under PostgreSQL's 65,535. */
const CHUNK = 500;

/** Reads of the epoch and the rows it covers must share one snapshot. */
const SNAPSHOT = { isolationLevel: "repeatable read", accessMode: "read only" } as const;

/**
 * A value for a jsonb column, sent as text and cast by the server (drizzle-orm#4942: drizzle over
 * Bun.sql would store a JSON string); SQL NULL stays NULL, not the JSON `null`.
 */
function jsonb(value: unknown) {
  return sql`${JSON.stringify(value)}::text::jsonb`;
}

const jsonbOrNull = (value: unknown) => (value === null || value === undefined ? null : jsonb(value));

/** The columns both schemas share: `seq` is this store's business, not the callers'. */
const regulationColumns = {
  id: regulations.id,
  workspaceId: regulations.workspaceId,
  regulationType: regulations.regulationType,
  userId: regulations.userId,
  attributes: regulations.attributes,
  sourceIds: regulations.sourceIds,
  destinationIds: regulations.destinationIds,
  canceled: regulations.canceled,
  createdAt: regulations.createdAt,
  updatedAt: regulations.updatedAt,
};

class NothingToCancel extends Error {
  constructor(readonly result: CancelResult | undefined) {
    super("nothing to cancel");
  }
}

export class PgRegulationsStore implements RegulationsStore {
  constructor(
    private readonly db: PgDb,
    private readonly opts: PgRegulationsStoreOptions = {},
  ) {}

  async createRegulations(input: NewRegulations): Promise<SuppressionWrite> {
    if (input.regulations.length === 0 && input.jobs.length === 0) return {};
    return this.db.transaction(async (tx) => {
      // First, so concurrent suppression writes queue on this one row lock and commit in epoch order.
      const epoch = await bump(tx);
      for (let i = 0; i < input.regulations.length; i += CHUNK) {
        const rows = input.regulations.slice(i, i + CHUNK).map((r) => ({
          ...r,
          attributes: jsonb(r.attributes),
          sourceIds: jsonbOrNull(r.sourceIds),
          destinationIds: jsonbOrNull(r.destinationIds),
          seq: epoch,
        }));
        await tx.insert(regulations).values(rows);
      }
      for (let i = 0; i < input.jobs.length; i += CHUNK) await tx.insert(deletionJobs).values(input.jobs.slice(i, i + CHUNK));
      await this.opts.afterWrite?.(tx, epoch);
      return { epoch };
    });
  }

  async regulationsPage(workspaceId: string, afterId: string | undefined, limit: number): Promise<RegulationRow[]> {
    const where = afterId === undefined ? eq(regulations.workspaceId, workspaceId) : and(eq(regulations.workspaceId, workspaceId), gt(regulations.id, afterId));
    return this.db.select(regulationColumns).from(regulations).where(where).orderBy(asc(regulations.id)).limit(limit);
  }

  async deletionJobsOf(regulationIds: string[]): Promise<DeletionJobRow[]> {
    if (regulationIds.length === 0) return [];
    return this.db.select().from(deletionJobs).where(inArray(deletionJobs.regulationId, regulationIds));
  }

  async cancelRegulation(workspaceId: string, id: string, at: number): Promise<CancelResult | undefined> {
    try {
      return await this.db.transaction(async (tx) => {
        // The row first, locked: a concurrent cancel of it waits here and then finds it cancelled.
        // Nothing holding the epoch's lock ever waits for a regulation's row, so this order cannot deadlock.
        const [row] = await tx
          .select({ userId: regulations.userId, canceled: regulations.canceled })
          .from(regulations)
          .where(and(eq(regulations.id, id), eq(regulations.workspaceId, workspaceId)))
          .for("update");
        if (!row) throw new NothingToCancel(undefined);
        if (row.canceled) throw new NothingToCancel({ userId: row.userId, canceled: false, remaining: await activeOfUser(tx, workspaceId, row.userId) });
        const epoch = await bump(tx);
        await tx.update(regulations).set({ canceled: true, updatedAt: at, seq: epoch }).where(eq(regulations.id, id));
        await tx
          .update(deletionJobs)
          .set({ status: "aborted", reason: "regulation canceled", updatedAt: at })
          .where(and(eq(deletionJobs.regulationId, id), inArray(deletionJobs.status, ["pending", "failed"])));
        const remaining = await activeOfUser(tx, workspaceId, row.userId);
        await this.opts.afterWrite?.(tx, epoch);
        return { userId: row.userId, canceled: true, remaining, epoch };
      });
    } catch (err) {
      // Rolled back on purpose: nothing was written, so no epoch may move.
      if (err instanceof NothingToCancel) return err.result;
      throw err;
    }
  }

  async activeSuppressions(): Promise<SuppressionSnapshot> {
    return this.db.transaction(async (tx) => {
      const epoch = await currentEpoch(tx);
      const rules: ActiveSuppression[] = await tx
        .select({ workspaceId: regulations.workspaceId, userId: regulations.userId, sourceIds: regulations.sourceIds })
        .from(regulations)
        .where(eq(regulations.canceled, false));
      return { epoch, rules };
    }, SNAPSHOT);
  }

  async suppressionEpoch(): Promise<number> {
    return currentEpoch(this.db);
  }

  async suppressionChangesSince(epoch: number): Promise<SuppressionChanges> {
    return this.db.transaction(async (tx) => {
      const now = await currentEpoch(tx);
      if (now <= epoch) return { epoch: now, users: [] };
      const changed = await tx
        .selectDistinct({ workspaceId: regulations.workspaceId, userId: regulations.userId })
        .from(regulations)
        .where(gt(regulations.seq, epoch));
      const users = new Map<string, UserSuppression>();
      for (const u of changed) users.set(pairKey(u.workspaceId, u.userId), { ...u, rules: [] });
      for (let i = 0; i < changed.length; i += CHUNK) {
        const userIds = [...new Set(changed.slice(i, i + CHUNK).map((u) => u.userId))];
        const active = await tx
          .select({ workspaceId: regulations.workspaceId, userId: regulations.userId, sourceIds: regulations.sourceIds })
          .from(regulations)
          .where(and(inArray(regulations.userId, userIds), eq(regulations.canceled, false)));
        // The same userId in another workspace is another user: only changed pairs count.
        for (const r of active) users.get(pairKey(r.workspaceId, r.userId))?.rules.push(r.sourceIds);
      }
      return { epoch: now, users: [...users.values()] };
    }, SNAPSHOT);
  }

  async dueDeletionJobs(now: number, limit: number): Promise<DueDeletionJob[]> {
    return this.db
      .select({
        id: deletionJobs.id,
        workspaceId: deletionJobs.workspaceId,
        destinationId: deletionJobs.destinationId,
        attempts: deletionJobs.attempts,
        firstAttemptAt: deletionJobs.firstAttemptAt,
        userId: regulations.userId,
        attributes: regulations.attributes,
      })
      .from(deletionJobs)
      .innerJoin(regulations, eq(regulations.id, deletionJobs.regulationId))
      .where(and(inArray(deletionJobs.status, ["pending", "failed"]), sql`${deletionJobs.nextAttemptAt} <= ${now}`))
      .orderBy(deletionJobs.nextAttemptAt, deletionJobs.id)
      .limit(limit);
  }

  async nextDeletionDueAt(): Promise<number | undefined> {
    const [row] = await this.db
      .select({ at: min(deletionJobs.nextAttemptAt) })
      .from(deletionJobs)
      .where(inArray(deletionJobs.status, ["pending", "failed"]));
    return row?.at === null || row?.at === undefined ? undefined : Number(row.at);
  }

  async claimDeletionJobs(ids: string[], at: number): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .update(deletionJobs)
      .set({ status: "running", updatedAt: at })
      .where(and(inArray(deletionJobs.id, ids), inArray(deletionJobs.status, ["pending", "failed"])))
      .returning({ id: deletionJobs.id });
    const claimed = new Set(rows.map((r) => r.id));
    return ids.filter((id) => claimed.has(id));
  }

  async finishDeletionJobs(outcomes: DeletionJobOutcome[]): Promise<number> {
    if (outcomes.length === 0) return 0;
    return this.db.transaction(async (tx) => {
      let n = 0;
      for (const o of outcomes) {
        const rows = await tx
          .update(deletionJobs)
          .set({ status: o.status, reason: o.reason, attempts: o.attempts, firstAttemptAt: o.firstAttemptAt, nextAttemptAt: o.nextAttemptAt, updatedAt: o.at })
          // Only a running job is finished: a cancel may have aborted it meanwhile.
          .where(and(eq(deletionJobs.id, o.id), eq(deletionJobs.status, "running")))
          .returning({ id: deletionJobs.id });
        n += rows.length;
      }
      return n;
    });
  }

  async resetRunningDeletionJobs(at: number): Promise<number> {
    const rows = await this.db
      .update(deletionJobs)
      .set({ status: "pending", updatedAt: at })
      .where(eq(deletionJobs.status, "running"))
      .returning({ id: deletionJobs.id });
    return rows.length;
  }

  async deleteDeliveriesOf(destinationId: string, userIds: string[]): Promise<number> {
    if (userIds.length === 0) return 0;
    const result = await this.db.$client.unsafe(`DELETE FROM deliveries WHERE destination_id = $1 AND user_key = ANY($2::text[])`, [destinationId, userIds]);
    return result.count;
  }

  async hasUnroutedEvents(workspaceId: string, userIds: string[], routedSourceIds: string[]): Promise<boolean> {
    if (userIds.length === 0 || routedSourceIds.length === 0) return false;
    const rows = await this.db.$client.unsafe(
      `SELECT 1 FROM events e JOIN processor_cursors c ON c.partition = e.partition
        WHERE e.workspace_id = $1 AND e.user_key = ANY($2::text[]) AND e.source_id = ANY($3::text[])
          AND (e.tx, e.id) > (c.tx, c.id)
        LIMIT 1`,
      [workspaceId, userIds, routedSourceIds],
    );
    return rows.length > 0;
  }

  async eventIdRange(): Promise<{ min: number; max: number } | undefined> {
    const [row] = await this.db.$client.unsafe(`SELECT min(id)::text AS min, max(id)::text AS max FROM events`);
    return row?.min === null || row?.min === undefined ? undefined : { min: Number(row.min), max: Number(row.max) };
  }

  async purgeEvents(slice: EventIdSlice, workspaceId: string, userIds: string[], routedSourceIds: string[]): Promise<number> {
    if (userIds.length === 0) return 0;
    const result = await this.db.$client.unsafe(
      `DELETE FROM events e USING processor_cursors c
        WHERE c.partition = e.partition AND e.id > $1 AND e.id <= $2 AND e.workspace_id = $3 AND e.user_key = ANY($4::text[])
          AND ((e.tx, e.id) <= (c.tx, c.id) OR NOT (e.source_id = ANY($5::text[])))
          AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id)`,
      [slice.afterId, slice.throughId, workspaceId, userIds, routedSourceIds],
    );
    return result.count;
  }
}

async function bump(tx: PgRegulationsTx): Promise<number> {
  const [bumped] = await tx
    .update(clusterEpochs)
    .set({ value: sql`${clusterEpochs.value} + 1` })
    .where(eq(clusterEpochs.name, "suppression"))
    .returning({ value: clusterEpochs.value });
  if (!bumped) throw new Error("cluster_epochs has no 'suppression' row: the database's migrations are incomplete");
  return bumped.value;
}

async function currentEpoch(db: PgDb | PgRegulationsTx): Promise<number> {
  const [row] = await db.select({ value: clusterEpochs.value }).from(clusterEpochs).where(eq(clusterEpochs.name, "suppression"));
  if (!row) throw new Error("cluster_epochs has no 'suppression' row: the database's migrations are incomplete");
  return row.value;
}

async function activeOfUser(tx: PgRegulationsTx, workspaceId: string, userId: string): Promise<RuleSources[]> {
  const rows = await tx
    .select({ sourceIds: regulations.sourceIds })
    .from(regulations)
    .where(and(eq(regulations.workspaceId, workspaceId), eq(regulations.userId, userId), eq(regulations.canceled, false)));
  return rows.map((r) => r.sourceIds);
}

// NUL cannot appear in a workspace id, so the pair never collides.
const pairKey = (workspaceId: string, userId: string) => `${workspaceId}\0${userId}`;
