/**
 * The delivery engine's store on PostgreSQL (cluster mode, design §3.3), begun: the processor's
 * side. Each method is one statement on Bun.sql, so a unit of work is one round trip.
 *
 * - The cursor is per partition, `(tx, id)` in processor_cursors: identity ids of concurrent
 *   writers commit out of order, so events are read in (tx, id) order and only below the horizon
 *   `pg_snapshot_xmin(pg_current_snapshot())`. Every transaction below it has ended, so no event
 *   can later commit behind the cursor.
 * - Writes go through `fenceCte` (src/cluster/leases.ts): an instance whose lease on the partition
 *   was taken over writes nothing, and the write answers false.
 *
 * Outcomes go as one JSON document (`$n::text::jsonb`, see drizzle-orm#4942 for why text first):
 * response bodies and attempt logs hold any character, and a group may be thousands of rows.
 */
import type { SQL } from "bun";
import { fenceCte } from "../../cluster/leases";
import type { LeaseFence } from "../../cluster/types";
import { StorageHealth } from "../../lib/storage-health";
import {
  type Cursors,
  type DeliveriesStore,
  type EventBatch,
  type EventCursor,
  type NewDelivery,
  type PayloadRewrite,
  type OutcomeRow,
  type QueuedDelivery,
  type RoutedSources,
  START_CURSOR,
  type StoredEvent,
} from "../../pipeline/store";

const HORIZON = "pg_snapshot_xmin(pg_current_snapshot())";

export interface PgDeliveriesStoreOptions {
  /** This instance's id: the owner its partition leases name (Cluster.instanceId). */
  instanceId: string;
}

export class PgDeliveriesStore implements DeliveriesStore {
  readonly health = new StorageHealth();

  constructor(
    private readonly sql: SQL,
    private readonly opts: PgDeliveriesStoreOptions,
  ) {}

  async readCursors(partitions: readonly number[]): Promise<Map<number, EventCursor>> {
    const out = new Map<number, EventCursor>();
    if (partitions.length === 0) return out;
    const rows = await this.sql.unsafe("SELECT partition, tx::text AS tx, id FROM processor_cursors WHERE partition = ANY($1::smallint[])", [[...partitions]]);
    for (const r of rows) out.set(Number(r.partition), { tx: r.tx as string, id: Number(r.id) });
    for (const p of partitions) if (!out.has(p)) out.set(p, START_CURSOR);
    return out;
  }

  async readEventsAfter(cursors: Cursors, limit: number, routed: RoutedSources): Promise<EventBatch> {
    const next = new Map<number, EventCursor>();
    if (cursors.size === 0) return { events: [], next };
    const [parts, txs, ids] = cursorArrays(cursors);
    // Each partition's first `limit` events after its cursor (one index range each), then the
    // first `limit` of those in (tx, id) order: what a partition contributes is a prefix of what
    // it has, so its cursor may move to its last event here. The payload crosses the wire only
    // for events of routed sources.
    const rows = await this.sql.unsafe(
      `SELECT e.id, e.partition, e.source_id AS "sourceId", e.workspace_id AS "workspaceId", e.user_key AS "userKey", e.type, e.tx::text AS tx,
              CASE WHEN e.source_id = ANY($5::text[]) THEN e.payload END AS payload
         FROM unnest($1::smallint[], $2::xid8[], $3::bigint[]) AS c(p, tx, id)
         CROSS JOIN LATERAL (
           SELECT * FROM events e
            WHERE e.partition = c.p AND (e.tx, e.id) > (c.tx, c.id) AND e.tx < ${HORIZON}
            ORDER BY e.tx, e.id
            LIMIT $4) e
        ORDER BY e.tx, e.id
        LIMIT $4`,
      [parts, txs, ids, limit, [...routed.keys()]],
    );
    const events: StoredEvent[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i];
      const partition = Number(r.partition);
      events[i] = { id: Number(r.id), partition, sourceId: r.sourceId, workspaceId: r.workspaceId, userKey: r.userKey, type: r.type };
      if (r.payload !== null) events[i]!.payload = r.payload;
      next.set(partition, { tx: r.tx as string, id: Number(r.id) });
    }
    return { events, next };
  }

  async newestCursors(partitions: readonly number[], _reportedId: number): Promise<Map<number, EventCursor>> {
    // Intake's reports are ids of this instance's commits only; the table knows every instance's.
    const out = new Map<number, EventCursor>();
    if (partitions.length === 0) return out;
    const rows = await this.sql.unsafe(
      `SELECT c.p AS partition, e.tx::text AS tx, e.id
         FROM unnest($1::smallint[]) AS c(p)
         CROSS JOIN LATERAL (
           SELECT tx, id FROM events WHERE partition = c.p AND tx < ${HORIZON} ORDER BY tx DESC, id DESC LIMIT 1) e`,
      [[...partitions]],
    );
    for (const r of rows) out.set(Number(r.partition), { tx: r.tx as string, id: Number(r.id) });
    return out;
  }

  async fanOut(fences: readonly LeaseFence[], deliveries: NewDelivery[], cursors: Cursors, at: number, rewrites: readonly PayloadRewrite[] = []): Promise<number[]> {
    if (cursors.size === 0) return [];
    const f = fenceCte(this.opts.instanceId, fences);
    const p = f.nextParam;
    const cols = { e: [] as number[], p: [] as number[], d: [] as string[], s: [] as string[], w: [] as string[], u: [] as string[], f: [] as Array<string | null>, a: [] as Array<string | null> };
    for (const x of deliveries) {
      cols.e.push(x.eventId);
      cols.p.push(x.partition);
      cols.d.push(x.destinationId);
      cols.s.push(x.sourceId);
      cols.w.push(x.workspaceId);
      cols.u.push(x.userKey);
      cols.f.push(x.filtered ?? null);
      cols.a.push(x.annotation ?? null);
    }
    const [parts, txs, ids] = cursorArrays(cursors);
    // One statement, so each partition's deliveries and cursor commit together or not at all;
    // ORDER BY ord gives identity ids in the order of the batch (the router's per-user order).
    const rows = await this.sql.unsafe(
      `WITH ${f.text},
       ins AS (
         INSERT INTO deliveries (event_id, destination_id, source_id, workspace_id, user_key, partition, state, attempts, next_attempt_at, last_error, created_at, updated_at, annotation)
         SELECT e, d, s, w, u, p, CASE WHEN f IS NULL THEN 'pending' ELSE 'filtered' END, 0, $${p}::bigint, f, $${p}::bigint, $${p}::bigint, a
           FROM unnest($${p + 1}::bigint[], $${p + 2}::smallint[], $${p + 3}::text[], $${p + 4}::text[], $${p + 5}::text[], $${p + 6}::text[], $${p + 10}::text[], $${p + 14}::text[])
                WITH ORDINALITY AS x(e, p, d, s, w, u, f, a, ord)
          WHERE p IN (SELECT partition FROM fence)
          ORDER BY ord
         RETURNING 1),
       rewritten AS (
         UPDATE events ev SET payload = r.payload
           FROM unnest($${p + 11}::bigint[], $${p + 12}::smallint[], $${p + 13}::text[]) AS r(id, part, payload)
          WHERE ev.id = r.id AND ev.partition = r.part AND r.part IN (SELECT partition FROM fence)
         RETURNING 1)
       UPDATE processor_cursors c SET tx = n.tx, id = n.id
         FROM unnest($${p + 7}::smallint[], $${p + 8}::xid8[], $${p + 9}::bigint[]) AS n(p, tx, id)
        WHERE c.partition = n.p AND n.p IN (SELECT partition FROM fence)
       RETURNING c.partition`,
      // A filtered row (routing dropped it, with the reason in f) is final at once.
      [...f.params, at, cols.e, cols.p, cols.d, cols.s, cols.w, cols.u, parts, txs, ids, cols.f, rewrites.map((r) => r.eventId), rewrites.map((r) => r.partition), rewrites.map((r) => r.payload), cols.a],
    );
    return rows.map((r: { partition: unknown }) => Number(r.partition));
  }

  async saveCursors(fences: readonly LeaseFence[], cursors: Cursors): Promise<number[]> {
    if (cursors.size === 0) return [];
    const f = fenceCte(this.opts.instanceId, fences);
    const p = f.nextParam;
    const [parts, txs, ids] = cursorArrays(cursors);
    const rows = await this.sql.unsafe(
      `WITH ${f.text}
       UPDATE processor_cursors c SET tx = n.tx, id = n.id
         FROM unnest($${p}::smallint[], $${p + 1}::xid8[], $${p + 2}::bigint[]) AS n(p, tx, id)
        WHERE c.partition = n.p AND n.p IN (SELECT partition FROM fence)
       RETURNING c.partition`,
      [...f.params, parts, txs, ids],
    );
    return rows.map((r: { partition: unknown }) => Number(r.partition));
  }

  async loadQueue(destinationId: string, after: ReadonlyMap<number, number>, limit: number): Promise<QueuedDelivery[]> {
    if (after.size === 0) return [];
    // Per partition, its first `limit` queued rows after its position (the partial index
    // deliveries_queue: destination_id, partition, id), then the first `limit` in id order: what a
    // partition contributes is a prefix of its queue, so its position may move to its last row.
    const rows = await this.sql.unsafe(
      `SELECT d.id, d.partition, d.event_id AS "eventId", d.user_key AS "userKey", d.source_id AS "sourceId", d.attempts,
              d.first_attempt_at AS "firstAttemptAt", d.next_attempt_at AS "nextAttemptAt", d.attempt_log AS "attemptLog",
              d.last_error AS "lastError", e.payload, d.annotation
         FROM unnest($2::smallint[], $3::bigint[]) AS c(p, after)
         CROSS JOIN LATERAL (
           SELECT * FROM deliveries d
            WHERE d.destination_id = $1 AND d.partition = c.p AND d.id > c.after AND d.state IN ('pending', 'retrying')
            ORDER BY d.id
            LIMIT $4) d
         JOIN events e ON e.id = d.event_id
        ORDER BY d.id
        LIMIT $4`,
      [destinationId, [...after.keys()], [...after.values()], limit],
    );
    const out: QueuedDelivery[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i];
      out[i] = {
        id: Number(r.id),
        partition: Number(r.partition),
        eventId: Number(r.eventId),
        userKey: r.userKey,
        sourceId: r.sourceId,
        attempts: Number(r.attempts),
        firstAttemptAt: r.firstAttemptAt === null ? null : Number(r.firstAttemptAt),
        nextAttemptAt: Number(r.nextAttemptAt),
        attemptLog: r.attemptLog,
        lastError: r.lastError,
        payload: r.payload,
        annotation: r.annotation,
      };
    }
    return out;
  }

  async recordOutcomes(fences: readonly LeaseFence[], outcomes: OutcomeRow[]): Promise<number[]> {
    if (outcomes.length === 0) return [];
    const f = fenceCte(this.opts.instanceId, fences);
    const p = f.nextParam;
    // A delivery may have two outcomes in one group (a retry, then its next attempt): the last wins.
    const [row] = await this.sql.unsafe(
      `WITH ${f.text},
       o AS (
         SELECT DISTINCT ON (id) *
           FROM ROWS FROM (jsonb_to_recordset($${p}::text::jsonb)
                  AS (id bigint, partition smallint, state text, attempts integer, "nextAttemptAt" bigint, "firstAttemptAt" bigint,
                      "lastStatus" integer, "lastResponse" text, "lastError" text, "attemptLog" text, "updatedAt" bigint)) WITH ORDINALITY AS x
          ORDER BY id, ordinality DESC),
       upd AS (
         UPDATE deliveries d
            SET state = o.state, attempts = o.attempts, next_attempt_at = o."nextAttemptAt", first_attempt_at = o."firstAttemptAt",
                last_status = o."lastStatus", last_response = o."lastResponse", last_error = o."lastError",
                attempt_log = o."attemptLog", updated_at = o."updatedAt"
           FROM o
          WHERE d.id = o.id AND d.partition = o.partition AND d.partition IN (SELECT partition FROM fence)
         RETURNING 1)
       SELECT coalesce((SELECT array_agg(DISTINCT o.partition) FROM o WHERE o.partition IN (SELECT partition FROM fence)), '{}') AS held,
              (SELECT count(*) FROM upd) AS updated`,
      [...f.params, JSON.stringify(outcomes)],
    );
    return (row.held as unknown[]).map(Number);
  }

  async abortQueued(fences: readonly LeaseFence[], destinationId: string, reason: string, at: number): Promise<number[]> {
    if (fences.length === 0) return [];
    const f = fenceCte(this.opts.instanceId, fences);
    const p = f.nextParam;
    const [row] = await this.sql.unsafe(
      `WITH ${f.text},
       upd AS (
         UPDATE deliveries SET state = 'aborted', last_error = $${p + 1}, updated_at = $${p + 2}::bigint
          WHERE destination_id = $${p} AND partition IN (SELECT partition FROM fence)
            AND state IN ('pending', 'retrying')
         RETURNING 1)
       SELECT coalesce((SELECT array_agg(partition) FROM fence), '{}') AS held, (SELECT count(*) FROM upd) AS aborted`,
      [...f.params, destinationId, reason, at],
    );
    return (row.held as unknown[]).map(Number);
  }

  async destinationsWithWork(partitions: readonly number[]): Promise<string[]> {
    if (partitions.length === 0) return [];
    const rows = await this.sql.unsafe(
      "SELECT DISTINCT destination_id AS id FROM deliveries WHERE partition = ANY($1::smallint[]) AND state IN ('pending', 'retrying')",
      [[...partitions]],
    );
    return rows.map((r: { id: string }) => r.id);
  }
}

/** A cursor map as three parallel arrays for unnest. */
export function cursorArrays(cursors: Cursors): [number[], string[], number[]] {
  const parts: number[] = [];
  const txs: string[] = [];
  const ids: number[] = [];
  for (const [p, c] of cursors) {
    parts.push(p);
    txs.push(c.tx);
    ids.push(c.id);
  }
  return [parts, txs, ids];
}
