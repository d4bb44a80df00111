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
  type DeliveriesStore,
  type EventBatch,
  type EventCursor,
  type NewDelivery,
  type OutcomeRow,
  type QueuedDelivery,
  type RoutedSources,
  START_CURSOR,
  type StoredEvent,
} from "../../pipeline/deliveries-store";

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

  async readCursor(partition: number): Promise<EventCursor> {
    const [row] = await this.sql.unsafe("SELECT tx::text AS tx, id FROM processor_cursors WHERE partition = $1", [partition]);
    return row ? { tx: row.tx as string, id: Number(row.id) } : START_CURSOR;
  }

  async readEventsAfter(partition: number, cursor: EventCursor, limit: number, routed: RoutedSources): Promise<EventBatch> {
    // The payload crosses the wire only for events of routed sources.
    const rows = await this.sql.unsafe(
      `SELECT id, source_id AS "sourceId", workspace_id AS "workspaceId", user_key AS "userKey", type, tx::text AS tx,
              CASE WHEN source_id = ANY($5::text[]) THEN payload END AS payload
         FROM events
        WHERE partition = $1 AND (tx, id) > ($2::xid8, $3::bigint) AND tx < ${HORIZON}
        ORDER BY tx, id
        LIMIT $4`,
      [partition, cursor.tx, cursor.id, limit, [...routed.keys()]],
    );
    const events: StoredEvent[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i];
      events[i] = { id: Number(r.id), sourceId: r.sourceId, workspaceId: r.workspaceId, userKey: r.userKey, type: r.type };
      if (r.payload !== null) events[i]!.payload = r.payload;
    }
    const last = rows[rows.length - 1];
    return { events, next: last ? { tx: last.tx as string, id: Number(last.id) } : cursor };
  }

  async newestCursor(partition: number, _reportedId: number): Promise<EventCursor> {
    // Intake's reports are ids of this instance's commits only; the table knows every instance's.
    const [row] = await this.sql.unsafe(
      `SELECT tx::text AS tx, id FROM events WHERE partition = $1 AND tx < ${HORIZON} ORDER BY tx DESC, id DESC LIMIT 1`,
      [partition],
    );
    return row ? { tx: row.tx as string, id: Number(row.id) } : START_CURSOR;
  }

  async fanOut(fence: LeaseFence, deliveries: NewDelivery[], cursor: EventCursor, at: number): Promise<boolean> {
    const f = fenceCte(this.opts.instanceId, [fence]);
    const p = f.nextParam;
    const cols = { e: [] as number[], d: [] as string[], s: [] as string[], w: [] as string[], u: [] as string[] };
    for (const x of deliveries) {
      cols.e.push(x.eventId);
      cols.d.push(x.destinationId);
      cols.s.push(x.sourceId);
      cols.w.push(x.workspaceId);
      cols.u.push(x.userKey);
    }
    // One statement, so the deliveries and the cursor commit together or not at all; ORDER BY ord
    // gives identity ids in the order of the batch (the router's per-user order).
    const [row] = await this.sql.unsafe(
      `WITH ${f.text},
       ins AS (
         INSERT INTO deliveries (event_id, destination_id, source_id, workspace_id, user_key, partition, state, attempts, next_attempt_at, created_at, updated_at)
         SELECT e, d, s, w, u, $${p}::smallint, 'pending', 0, $${p + 1}::bigint, $${p + 1}::bigint, $${p + 1}::bigint
           FROM unnest($${p + 2}::bigint[], $${p + 3}::text[], $${p + 4}::text[], $${p + 5}::text[], $${p + 6}::text[]) WITH ORDINALITY AS x(e, d, s, w, u, ord)
          WHERE $${p}::smallint IN (SELECT partition FROM fence)
          ORDER BY ord
         RETURNING 1),
       cur AS (
         UPDATE processor_cursors SET tx = $${p + 7}::xid8, id = $${p + 8}::bigint
          WHERE partition = $${p}::smallint AND partition IN (SELECT partition FROM fence)
         RETURNING 1)
       SELECT (SELECT count(*) FROM cur) AS saved, (SELECT count(*) FROM ins) AS inserted`,
      [...f.params, fence.partition, at, cols.e, cols.d, cols.s, cols.w, cols.u, cursor.tx, cursor.id],
    );
    return Number(row.saved) === 1;
  }

  async saveCursor(fence: LeaseFence, cursor: EventCursor): Promise<boolean> {
    const f = fenceCte(this.opts.instanceId, [fence]);
    const p = f.nextParam;
    const rows = await this.sql.unsafe(
      `WITH ${f.text}
       UPDATE processor_cursors SET tx = $${p + 1}::xid8, id = $${p + 2}::bigint
        WHERE partition = $${p}::smallint AND partition IN (SELECT partition FROM fence)
       RETURNING 1`,
      [...f.params, fence.partition, cursor.tx, cursor.id],
    );
    return rows.length === 1;
  }

  async loadQueue(partition: number, destinationId: string, afterId: number, limit: number): Promise<QueuedDelivery[]> {
    // Served by the partial index deliveries_queue (destination_id, partition, id).
    const rows = await this.sql.unsafe(
      `SELECT d.id, d.event_id AS "eventId", d.user_key AS "userKey", d.source_id AS "sourceId", d.attempts,
              d.first_attempt_at AS "firstAttemptAt", d.next_attempt_at AS "nextAttemptAt", d.attempt_log AS "attemptLog",
              d.last_error AS "lastError", e.payload
         FROM deliveries d JOIN events e ON e.id = d.event_id
        WHERE d.destination_id = $1 AND d.partition = $2 AND d.id > $3 AND d.state IN ('pending', 'retrying')
        ORDER BY d.id
        LIMIT $4`,
      [destinationId, partition, afterId, limit],
    );
    const out: QueuedDelivery[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i];
      out[i] = {
        id: Number(r.id),
        eventId: Number(r.eventId),
        userKey: r.userKey,
        sourceId: r.sourceId,
        attempts: Number(r.attempts),
        firstAttemptAt: r.firstAttemptAt === null ? null : Number(r.firstAttemptAt),
        nextAttemptAt: Number(r.nextAttemptAt),
        attemptLog: r.attemptLog,
        lastError: r.lastError,
        payload: r.payload,
      };
    }
    return out;
  }

  async recordOutcomes(fence: LeaseFence, outcomes: OutcomeRow[]): Promise<boolean> {
    const f = fenceCte(this.opts.instanceId, [fence]);
    const p = f.nextParam;
    // A delivery may have two outcomes in one group (a retry, then its next attempt): the last wins.
    const [row] = await this.sql.unsafe(
      `WITH ${f.text},
       o AS (
         SELECT DISTINCT ON (id) *
           FROM ROWS FROM (jsonb_to_recordset($${p + 1}::text::jsonb)
                  AS (id bigint, state text, attempts integer, "nextAttemptAt" bigint, "firstAttemptAt" bigint, "lastStatus" integer,
                      "lastResponse" text, "lastError" text, "attemptLog" text, "updatedAt" bigint)) WITH ORDINALITY AS x
          ORDER BY id, ordinality DESC),
       upd AS (
         UPDATE deliveries d
            SET state = o.state, attempts = o.attempts, next_attempt_at = o."nextAttemptAt", first_attempt_at = o."firstAttemptAt",
                last_status = o."lastStatus", last_response = o."lastResponse", last_error = o."lastError",
                attempt_log = o."attemptLog", updated_at = o."updatedAt"
           FROM o
          WHERE d.id = o.id AND d.partition = $${p}::smallint AND d.partition IN (SELECT partition FROM fence)
         RETURNING 1)
       SELECT EXISTS (SELECT 1 FROM fence) AS held, (SELECT count(*) FROM upd) AS updated`,
      [...f.params, fence.partition, JSON.stringify(outcomes)],
    );
    return row.held === true;
  }

  async abortQueued(fence: LeaseFence, destinationId: string, reason: string, at: number): Promise<boolean> {
    const f = fenceCte(this.opts.instanceId, [fence]);
    const p = f.nextParam;
    const [row] = await this.sql.unsafe(
      `WITH ${f.text},
       upd AS (
         UPDATE deliveries SET state = 'aborted', last_error = $${p + 2}, updated_at = $${p + 3}::bigint
          WHERE destination_id = $${p + 1} AND partition = $${p}::smallint AND partition IN (SELECT partition FROM fence)
            AND state IN ('pending', 'retrying')
         RETURNING 1)
       SELECT EXISTS (SELECT 1 FROM fence) AS held, (SELECT count(*) FROM upd) AS aborted`,
      [...f.params, fence.partition, destinationId, reason, at],
    );
    return row.held === true;
  }

  async destinationsWithWork(partition: number): Promise<string[]> {
    const rows = await this.sql.unsafe(
      "SELECT DISTINCT destination_id AS id FROM deliveries WHERE partition = $1 AND state IN ('pending', 'retrying')",
      [partition],
    );
    return rows.map((r: { id: string }) => r.id);
  }
}
