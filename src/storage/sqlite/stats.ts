/**
 * The pipeline's read side on SQLite (StatsStore, src/pipeline/store.ts): the statements the deliveries
 * API, the overview, retention and /health ran before the seam, unchanged, prepared once per
 * store. Every method runs synchronously inside its async body, so a call is still one
 * uninterrupted piece of work on the main connection.
 */
import type { Database, Statement } from "bun:sqlite";
import { type Db, newestEventId } from "../../../db";
import { type StorageProblem, storageHealth } from "../../lib/storage-health";
import {
  type AbortedSummary,
  type DeliveryListRow,
  type DeliveryState,
  type DestinationStatsRows,
  type FailingDeletion,
  type MinuteCount,
  OPEN_END,
  type StatsStore,
  type TrackingPlanDayCount,
} from "../../pipeline/store";
import { COUNT_DAYS_KEPT } from "../../tracking-plans/store";
import { utcDay } from "../../tracking-plans/violation-counts";

const MINUTE = 60_000;
const DAY = 86_400_000;
const SLICE = 5000;

/**
 * The newest event id received before `cutoff`, by binary search over ids: events has no
 * index on received_at (db/schema/pipeline.ts), and received_at grows with id because
 * intake gives ids in commit order. 0 when no event is that old.
 */
export function lastEventIdBefore(c: Database, cutoff: number): number {
  const firstFrom = c.prepare("SELECT id, received_at AS r FROM events WHERE id >= ? ORDER BY id LIMIT 1");
  const max = newestEventId(c);
  // Invariant: the answer is lo, or an event id in (lo, hi).
  let lo = 0;
  let hi = max + 1;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    const row = firstFrom.get(mid) as { id: number; r: number } | null;
    if (!row || row.id >= hi || row.r >= cutoff) hi = mid;
    else lo = row.id;
  }
  return lo;
}

/**
 * Retention's deletes, in slices of SLICE rows so intake never waits long. Synchronous: the
 * store's purgeExpired, and callers that hold the database itself (test/pipeline/delivery.test.ts).
 */
export function purgeExpired(db: Db, olderThan: number): { deliveries: number; events: number } {
  return retentionStatements(db.$client).purge(olderThan);
}

function retentionStatements(c: Database) {
  const delDeliveries = c.prepare(
    `DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE state IN ('succeeded', 'aborted', 'filtered') AND updated_at < ? LIMIT ${SLICE})`,
  );
  // An event goes once no delivery of it is left, and it is past retention (its messageId
  // no longer deduplicates). The processor cursor must have passed it.
  const delEvents = c.prepare(
    `DELETE FROM events WHERE id IN (
       SELECT e.id FROM events e WHERE e.id <= ? AND e.received_at < ? AND e.id <= COALESCE((SELECT value FROM cursors WHERE name = 'processor'), 0)
          AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id) LIMIT ${SLICE})`,
  );
  const delViolationCounts = c.prepare(`DELETE FROM tracking_plan_violation_counts WHERE rowid IN (SELECT rowid FROM tracking_plan_violation_counts WHERE day < ? LIMIT ${SLICE})`);
  const delDroppedCounts = c.prepare(`DELETE FROM tracking_plan_dropped_counts WHERE rowid IN (SELECT rowid FROM tracking_plan_dropped_counts WHERE day < ? LIMIT ${SLICE})`);
  const delDroppedEvents = c.prepare(`DELETE FROM tracking_plan_dropped_events WHERE id IN (SELECT id FROM tracking_plan_dropped_events WHERE at < ? LIMIT ${SLICE})`);
  const sliced = (st: Statement, arg: string | number) => {
    while (st.run(arg).changes >= SLICE);
  };
  return {
    purge(olderThan: number) {
      sliced(delDroppedEvents, olderThan);
      const countsBefore = utcDay(olderThan - COUNT_DAYS_KEPT * DAY);
      sliced(delViolationCounts, countsBefore);
      sliced(delDroppedCounts, countsBefore);
      let deliveries = 0;
      let events = 0;
      for (;;) {
        const n = delDeliveries.run(olderThan).changes;
        deliveries += n;
        if (n < SLICE) break;
      }
      const upTo = lastEventIdBefore(c, olderThan);
      if (upTo > 0) {
        for (;;) {
          const n = delEvents.run(upTo, olderThan).changes;
          events += n;
          if (n < SLICE) break;
        }
      }
      return { deliveries, events };
    },
  };
}

interface Statements {
  replay: Statement;
  stateCounts: Statement;
  deliveredPerMinute: Statement;
  lastError: Statement;
  page: Statement;
  received: Statement;
  finished: Statement;
  failed: Statement;
  abortedCount: Statement;
  lastAborted: Statement;
  failingDeletions: Statement;
  failingDeletionsCount: Statement;
}

export class SqliteStatsStore implements StatsStore {
  private readonly c: Database;
  private q?: Statements;
  private retention?: ReturnType<typeof retentionStatements>;
  private planCounts?: Statement;

  constructor(db: Db) {
    this.c = db.$client;
  }

  // Prepared on first use, as before the seam: a process that never serves these calls
  // (a CLI command that opens the store) prepares nothing.
  private get s(): Statements {
    if (this.q) return this.q;
    const c = this.c;
    this.q = {
      replay: c.prepare(
        `UPDATE deliveries SET state = 'pending', attempts = 0, first_attempt_at = NULL, next_attempt_at = ?, updated_at = ?
          WHERE destination_id = ? AND state = 'aborted'`,
      ),
      stateCounts: c.prepare("SELECT state, count(*) AS n FROM deliveries WHERE destination_id = ? GROUP BY state"),
      deliveredPerMinute: c.prepare(
        `SELECT (updated_at / 60000) * 60000 AS minute, count(*) AS n FROM deliveries
          WHERE state = 'succeeded' AND updated_at >= ? AND destination_id = ? GROUP BY minute ORDER BY minute`,
      ),
      lastError: c.prepare(
        `SELECT last_error AS error, updated_at AS at FROM deliveries
          WHERE destination_id = ? AND last_error IS NOT NULL AND state <> 'filtered' ORDER BY updated_at DESC LIMIT 1`,
      ),
      // One indexed query per state (deliveries_queue is (destination, state, id)), merged by the
      // caller's order, so the cost does not grow with the destination's history.
      page: c.prepare(
        `SELECT d.id, d.event_id AS eventId, d.source_id AS sourceId, d.user_key AS userKey, d.state, d.attempts, d.next_attempt_at AS nextAttemptAt,
                d.last_status AS lastStatus, d.last_response AS lastResponse, d.last_error AS lastError, d.attempt_log AS attemptLog,
                d.created_at AS createdAt, d.updated_at AS updatedAt, e.payload, d.annotation
           FROM deliveries d LEFT JOIN events e ON e.id = d.event_id
          WHERE d.destination_id = ? AND d.state = ? AND d.id < ?
          ORDER BY d.id DESC LIMIT ?`,
      ),
      received: c.prepare(
        `SELECT source_id AS sourceId, received_at / ${MINUTE} AS m, count(*) AS n FROM events
          WHERE id > ?1 AND id <= ?2 AND received_at >= ?3 AND received_at < ?4 AND workspace_id = ?5 GROUP BY source_id, m`,
      ),
      finished: c.prepare(
        `SELECT state, source_id AS sourceId, destination_id AS destinationId, updated_at / ${MINUTE} AS m, count(*) AS n FROM deliveries
          WHERE state IN ('succeeded', 'aborted') AND updated_at >= ?1 AND updated_at < ?2 AND workspace_id = ?3
          GROUP BY state, source_id, destination_id, m`,
      ),
      // Rows updated in [?1, ?2) that can hold a failed attempt (retrying, or past their first
      // attempt); their failed attempts made in [?4, ?5). Every attempt but a finished delivery's
      // last one (the one at its updated_at) failed: whatever the kind read from the answer, the
      // delivery went on. An aborted delivery's last attempt is its abort, not a failure. Times are
      // compared in milliseconds (julianday is exact to far below one), not as formatted text.
      failed: c.prepare(
        `SELECT d.source_id AS sourceId, d.destination_id AS destinationId, substr(a.value ->> '$.at', 1, 16) AS m, count(*) AS n
           FROM deliveries d, json_each(CASE WHEN json_valid(d.attempt_log) THEN d.attempt_log ELSE '[]' END) a
          WHERE d.state IN ('retrying', 'succeeded', 'aborted', 'filtered') AND d.updated_at >= ?1 AND d.updated_at < ?2 AND d.workspace_id = ?3
            AND (d.state = 'retrying' OR d.attempts > 1)
            AND a.value ->> '$.at' >= ?4 AND a.value ->> '$.at' < ?5
            AND NOT (d.state IN ('succeeded', 'aborted', 'filtered') AND a.key = json_array_length(d.attempt_log) - 1
                     AND CAST(round(julianday(a.value ->> '$.at') * 86400000.0) AS INTEGER) - 210866760000000 = d.updated_at)
          GROUP BY d.source_id, d.destination_id, m`,
      ),
      abortedCount: c.prepare("SELECT count(*) AS n FROM deliveries WHERE destination_id = ? AND state = 'aborted'"),
      lastAborted: c.prepare(
        "SELECT last_error AS error, updated_at AS at FROM deliveries WHERE destination_id = ? AND state = 'aborted' ORDER BY id DESC LIMIT 1",
      ),
      failingDeletions: c.prepare(
        `SELECT j.regulation_id AS regulationId, r.user_id AS userId, j.destination_id AS destinationId, d.name AS destinationName,
                j.status, j.reason, j.attempts, j.updated_at AS updatedAt
           FROM deletion_jobs j JOIN regulations r ON r.id = j.regulation_id
           LEFT JOIN destinations d ON d.id = j.destination_id AND d.workspace_id = j.workspace_id
          WHERE j.workspace_id = ? AND j.status IN ('failed', 'aborted') AND r.canceled = 0
          ORDER BY j.updated_at DESC, j.id DESC LIMIT ?`,
      ),
      failingDeletionsCount: c.prepare(
        `SELECT count(*) AS n FROM deletion_jobs j JOIN regulations r ON r.id = j.regulation_id
          WHERE j.workspace_id = ? AND j.status IN ('failed', 'aborted') AND r.canceled = 0`,
      ),
    };
    return this.q;
  }

  async health(): Promise<StorageProblem | undefined> {
    this.c.query("SELECT 1").get();
    // Writes refused (a full disk) are reported by the writers to the file's health record.
    return storageHealth(this.c.filename).problem;
  }

  async replayAborted(destinationId: string, at: number): Promise<number> {
    return this.s.replay.run(at, at, destinationId).changes;
  }

  async destinationStats(destinationId: string, since: number): Promise<DestinationStatsRows> {
    const s = this.s;
    const counts: DestinationStatsRows["counts"] = {};
    for (const r of s.stateCounts.all(destinationId) as Array<{ state: DeliveryState; n: number }>) counts[r.state] = r.n;
    const deliveredPerMinute = (s.deliveredPerMinute.all(since, destinationId) as Array<{ minute: number; n: number }>).map((r) => ({
      minute: r.minute,
      delivered: r.n,
    }));
    const last = s.lastError.get(destinationId) as { error: string; at: number } | null;
    return { counts, deliveredPerMinute, lastError: last ? { error: last.error, at: last.at } : null };
  }

  async deliveriesPage(destinationId: string, states: readonly DeliveryState[], beforeId: number, limit: number): Promise<DeliveryListRow[]> {
    const rows: DeliveryListRow[] = [];
    for (const state of states) rows.push(...(this.s.page.all(destinationId, state, beforeId, limit) as DeliveryListRow[]));
    if (states.length > 1) rows.sort((a, b) => b.id - a.id);
    return rows.length > limit ? rows.slice(0, limit) : rows;
  }

  async countOutcomes(workspaceId: string, from: number, to: number): Promise<MinuteCount[]> {
    const s = this.s;
    const cells: MinuteCount[] = [];
    // received_at grows with id: the range's events are an id range, found by binary search.
    const fromId = lastEventIdBefore(this.c, from);
    const toId = to >= OPEN_END ? Number.MAX_SAFE_INTEGER : lastEventIdBefore(this.c, to);
    for (const r of s.received.all(fromId, toId, from, to, workspaceId) as Array<{ sourceId: string; m: number; n: number }>) {
      cells.push({ kind: "received", minute: r.m, sourceId: r.sourceId, destinationId: null, n: r.n });
    }
    for (const r of s.finished.all(from, to, workspaceId) as Array<{ state: string; sourceId: string; destinationId: string; m: number; n: number }>) {
      cells.push({ kind: r.state === "succeeded" ? "delivered" : "aborted", minute: r.m, sourceId: r.sourceId, destinationId: r.destinationId, n: r.n });
    }
    return cells;
  }

  async countFailedAttempts(workspaceId: string, updatedFrom: number, updatedTo: number, attemptsFrom: number, attemptsTo: number): Promise<MinuteCount[]> {
    const cells: MinuteCount[] = [];
    const rows = this.s.failed.all(updatedFrom, updatedTo, workspaceId, new Date(attemptsFrom).toISOString(), new Date(attemptsTo).toISOString()) as Array<{
      sourceId: string;
      destinationId: string;
      m: string | null;
      n: number;
    }>;
    for (const r of rows) {
      const at = r.m ? Date.parse(`${r.m}:00.000Z`) : Number.NaN;
      if (!Number.isNaN(at)) cells.push({ kind: "failed", minute: Math.floor(at / MINUTE), sourceId: r.sourceId, destinationId: r.destinationId, n: r.n });
    }
    return cells;
  }

  async abortedByDestination(destinationIds: readonly string[]): Promise<AbortedSummary[]> {
    const s = this.s;
    const out: AbortedSummary[] = [];
    for (const id of destinationIds) {
      const { n } = s.abortedCount.get(id) as { n: number };
      if (!n) continue;
      const last = s.lastAborted.get(id) as { error: string | null; at: number };
      out.push({ destinationId: id, aborted: n, lastError: last.error, at: last.at });
    }
    return out;
  }

  async failingDeletions(workspaceId: string, limit: number): Promise<{ deletions: FailingDeletion[]; total: number }> {
    const deletions = this.s.failingDeletions.all(workspaceId, limit) as FailingDeletion[];
    const { n } = this.s.failingDeletionsCount.get(workspaceId) as { n: number };
    return { deletions, total: n };
  }

  async recentEvents(workspaceId: string, sourceId: string, limit: number, window: number): Promise<string[]> {
    const rows = this.c
      .query("SELECT payload FROM events WHERE id > (SELECT coalesce(max(id), 0) FROM events) - ? AND workspace_id = ? AND source_id = ? ORDER BY id DESC LIMIT ?")
      .all(window, workspaceId, sourceId, limit) as Array<{ payload: string }>;
    return rows.map((r) => r.payload);
  }

  async trackingPlanCounts(workspaceId: string, fromDay: string): Promise<TrackingPlanDayCount[]> {
    this.planCounts ??= this.c.prepare(
      "SELECT source_id AS sourceId, day, violation_type AS violationType, sum(count) AS n FROM tracking_plan_violation_counts WHERE day >= ?1 AND workspace_id = ?2 GROUP BY 1, 2, 3 " +
        "UNION ALL SELECT source_id, day, NULL, sum(count) FROM tracking_plan_dropped_counts WHERE day >= ?1 AND workspace_id = ?2 GROUP BY 1, 2",
    );
    return this.planCounts.all(fromDay, workspaceId) as TrackingPlanDayCount[];
  }

  async purgeExpired(olderThan: number): Promise<{ deliveries: number; events: number }> {
    this.retention ??= retentionStatements(this.c);
    return this.retention.purge(olderThan);
  }

  async reclaimSpace(): Promise<void> {
    this.c.exec("PRAGMA incremental_vacuum(2000)");
  }
}
