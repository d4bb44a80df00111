/**
 * The pipeline's read side on PostgreSQL (StatsStore, src/pipeline/store.ts; cluster mode, design §3.6
 * and §3.7): the same answers as the SQLite store, from the tables every instance shares, so the
 * overview and the deliveries API count every instance's events and deliveries.
 *
 * What differs from SQLite, and why:
 * - Events are found by received_at (BRIN index events_received), never by id range: ids of
 *   concurrent instances commit out of order and received_at only roughly follows id (§3.7).
 * - Retention runs under the maintenance singleton and deletes in batches of SLICE rows, each
 *   its own statement, so no transaction holds many row locks or much WAL at once. An event goes
 *   once its partition's processor cursor, (tx, id) in processor_cursors, has passed it.
 * - No vacuum to run: autovacuum gives deleted rows' space back.
 * - Failed attempts are read from the attempt logs in JS: PostgreSQL 15 has no cast that answers
 *   null for text that is not JSON, and one such row must not fail the whole overview.
 *
 * bigint columns arrive as text from Bun.sql; times and ids fit a JS number exactly.
 */
import type { SQL } from "bun";
import type { StorageHealth, StorageProblem } from "../../lib/storage-health";
import type {
  AbortedSummary,
  DeliveryListRow,
  DeliveryState,
  DestinationStatsRows,
  FailingDeletion,
  MinuteCount,
  StatsStore,
  TrackingPlanDayCount,
} from "../../pipeline/store";
import { COUNT_DAYS_KEPT } from "../../tracking-plans/store";
import { utcDay } from "../../tracking-plans/violation-counts";

const MINUTE = 60_000;
const DAY = 86_400_000;
/** Rows per retention statement. */
const SLICE = 5000;
/** /health's wait for PostgreSQL's answer: with the network to it cut, the query would wait for as long as the cut lasts. */
const HEALTH_TIMEOUT_MS = 2000;

export class PgStatsStore implements StatsStore {
  constructor(
    private readonly sql: SQL,
    /** Intake's write health (PgIntakeLog.storage): event calls refused while PostgreSQL answers reads show as degraded. */
    private readonly intake?: StorageHealth,
  ) {}

  /** The SELECT 1 in flight: health checks while PostgreSQL does not answer share it rather than pile up. */
  private ping: Promise<unknown> | undefined;

  async health(): Promise<StorageProblem | undefined> {
    if (!this.ping) {
      const ping: Promise<unknown> = this.sql.unsafe("SELECT 1").finally(() => {
        if (this.ping === ping) this.ping = undefined;
      });
      // A ping answered after its health check gave up on it must not count as unhandled.
      ping.catch(() => {});
      this.ping = ping;
    }
    let timer: Timer | undefined;
    try {
      await Promise.race([
        this.ping,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`PostgreSQL did not answer within ${HEALTH_TIMEOUT_MS / 1000} s`)), HEALTH_TIMEOUT_MS);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
    // Writes refused (event calls answered 503) are recorded by intake, as a full disk's are.
    return this.intake?.problem;
  }

  async replayAborted(destinationId: string, at: number): Promise<number> {
    const [row] = await this.sql.unsafe(
      `WITH r AS (
         UPDATE deliveries SET state = 'pending', attempts = 0, first_attempt_at = NULL, next_attempt_at = $1, updated_at = $1
          WHERE destination_id = $2 AND state = 'aborted'
         RETURNING 1)
       SELECT count(*)::int AS n FROM r`,
      [at, destinationId],
    );
    return row.n;
  }

  async destinationStats(destinationId: string, since: number): Promise<DestinationStatsRows> {
    const counts: DestinationStatsRows["counts"] = {};
    for (const r of await this.sql.unsafe("SELECT state, count(*)::int AS n FROM deliveries WHERE destination_id = $1 GROUP BY state", [destinationId])) {
      counts[r.state as DeliveryState] = r.n;
    }
    const perMinute = await this.sql.unsafe(
      `SELECT (updated_at / ${MINUTE}) * ${MINUTE} AS minute, count(*)::int AS n FROM deliveries
        WHERE state = 'succeeded' AND updated_at >= $1 AND destination_id = $2 GROUP BY 1 ORDER BY 1`,
      [since, destinationId],
    );
    const [last] = await this.sql.unsafe(
      `SELECT last_error AS error, updated_at AS at FROM deliveries
        WHERE destination_id = $1 AND last_error IS NOT NULL AND state <> 'filtered' ORDER BY updated_at DESC LIMIT 1`,
      [destinationId],
    );
    return {
      counts,
      deliveredPerMinute: perMinute.map((r: any) => ({ minute: Number(r.minute), delivered: r.n })),
      lastError: last ? { error: last.error, at: Number(last.at) } : null,
    };
  }

  async deliveriesPage(destinationId: string, states: readonly DeliveryState[], beforeId: number, limit: number): Promise<DeliveryListRow[]> {
    const rows = await this.sql.unsafe(
      `SELECT d.id, d.event_id AS "eventId", d.source_id AS "sourceId", d.user_key AS "userKey", d.state, d.attempts, d.next_attempt_at AS "nextAttemptAt",
              d.last_status AS "lastStatus", d.last_response AS "lastResponse", d.last_error AS "lastError", d.attempt_log AS "attemptLog",
              d.created_at AS "createdAt", d.updated_at AS "updatedAt", e.payload, d.annotation
         FROM deliveries d LEFT JOIN events e ON e.id = d.event_id
        WHERE d.destination_id = $1 AND d.state = ANY($2::text[]) AND d.id < $3
        ORDER BY d.id DESC LIMIT $4`,
      [destinationId, [...states], beforeId, limit],
    );
    return rows.map((r: any) => ({
      ...r,
      id: Number(r.id),
      eventId: Number(r.eventId),
      nextAttemptAt: Number(r.nextAttemptAt),
      createdAt: Number(r.createdAt),
      updatedAt: Number(r.updatedAt),
    }));
  }

  async countOutcomes(workspaceId: string, from: number, to: number): Promise<MinuteCount[]> {
    const cells: MinuteCount[] = [];
    const received = await this.sql.unsafe(
      `SELECT source_id AS "sourceId", received_at / ${MINUTE} AS m, count(*)::int AS n FROM events
        WHERE received_at >= $1 AND received_at < $2 AND workspace_id = $3 GROUP BY 1, 2`,
      [from, to, workspaceId],
    );
    for (const r of received) cells.push({ kind: "received", minute: Number(r.m), sourceId: r.sourceId, destinationId: null, n: r.n });
    const finished = await this.sql.unsafe(
      `SELECT state, source_id AS "sourceId", destination_id AS "destinationId", updated_at / ${MINUTE} AS m, count(*)::int AS n FROM deliveries
        WHERE state IN ('succeeded', 'aborted') AND updated_at >= $1 AND updated_at < $2 AND workspace_id = $3
        GROUP BY 1, 2, 3, 4`,
      [from, to, workspaceId],
    );
    for (const r of finished) {
      cells.push({ kind: r.state === "succeeded" ? "delivered" : "aborted", minute: Number(r.m), sourceId: r.sourceId, destinationId: r.destinationId, n: r.n });
    }
    return cells;
  }

  async countFailedAttempts(workspaceId: string, updatedFrom: number, updatedTo: number, attemptsFrom: number, attemptsTo: number): Promise<MinuteCount[]> {
    // Only rows that can hold a failed attempt: retrying, or past their first attempt.
    const rows = await this.sql.unsafe(
      `SELECT source_id AS "sourceId", destination_id AS "destinationId", state, updated_at AS "updatedAt", attempt_log AS "attemptLog" FROM deliveries
        WHERE state IN ('retrying', 'succeeded', 'aborted', 'filtered') AND updated_at >= $1 AND updated_at < $2 AND workspace_id = $3
          AND (state = 'retrying' OR attempts > 1) AND attempt_log IS NOT NULL`,
      [updatedFrom, updatedTo, workspaceId],
    );
    const fromIso = new Date(attemptsFrom).toISOString();
    const toIso = new Date(attemptsTo).toISOString();
    const counts = new Map<string, MinuteCount>();
    for (const r of rows) {
      const log = parseLog(r.attemptLog);
      const updatedAt = Number(r.updatedAt);
      for (let i = 0; i < log.length; i++) {
        const at = (log[i] as { at?: unknown } | null)?.at;
        if (typeof at !== "string" || at < fromIso || at >= toIso) continue;
        // A finished delivery's last attempt (the one at its updated_at) is its outcome, not a failure.
        if (r.state !== "retrying" && i === log.length - 1 && Date.parse(at) === updatedAt) continue;
        const start = Date.parse(`${at.slice(0, 16)}:00.000Z`);
        if (Number.isNaN(start)) continue;
        const minute = Math.floor(start / MINUTE);
        const key = `${r.sourceId}\n${r.destinationId}\n${minute}`;
        const cell = counts.get(key);
        if (cell) cell.n++;
        else counts.set(key, { kind: "failed", minute, sourceId: r.sourceId, destinationId: r.destinationId, n: 1 });
      }
    }
    return [...counts.values()];
  }

  async abortedByDestination(destinationIds: readonly string[]): Promise<AbortedSummary[]> {
    if (destinationIds.length === 0) return [];
    const rows = await this.sql.unsafe(
      `SELECT DISTINCT ON (destination_id) destination_id AS "destinationId", count(*) OVER (PARTITION BY destination_id)::int AS aborted,
              last_error AS "lastError", updated_at AS at
         FROM deliveries WHERE destination_id = ANY($1::text[]) AND state = 'aborted'
        ORDER BY destination_id, id DESC`,
      [[...destinationIds]],
    );
    return rows.map((r: any) => ({ destinationId: r.destinationId, aborted: r.aborted, lastError: r.lastError, at: Number(r.at) }));
  }

  async failingDeletions(workspaceId: string, limit: number): Promise<{ deletions: FailingDeletion[]; total: number }> {
    const rows = await this.sql.unsafe(
      `SELECT j.regulation_id AS "regulationId", r.user_id AS "userId", j.destination_id AS "destinationId", d.name AS "destinationName",
              j.status, j.reason, j.attempts, j.updated_at AS "updatedAt"
         FROM deletion_jobs j JOIN regulations r ON r.id = j.regulation_id
         LEFT JOIN destinations d ON d.id = j.destination_id AND d.workspace_id = j.workspace_id
        WHERE j.workspace_id = $1 AND j.status IN ('failed', 'aborted') AND NOT r.canceled
        ORDER BY j.updated_at DESC, j.id DESC LIMIT $2`,
      [workspaceId, limit],
    );
    const [{ n }] = await this.sql.unsafe(
      `SELECT count(*)::int AS n FROM deletion_jobs j JOIN regulations r ON r.id = j.regulation_id
        WHERE j.workspace_id = $1 AND j.status IN ('failed', 'aborted') AND NOT r.canceled`,
      [workspaceId],
    );
    return { deletions: rows.map((r: any) => ({ ...r, updatedAt: Number(r.updatedAt) })), total: n };
  }

  async recentEvents(workspaceId: string, sourceId: string, limit: number, window: number): Promise<string[]> {
    const rows = await this.sql`
      SELECT payload FROM events WHERE id > (SELECT coalesce(max(id), 0) FROM events) - ${window}
         AND workspace_id = ${workspaceId} AND source_id = ${sourceId} ORDER BY id DESC LIMIT ${limit}`;
    return rows.map((r: { payload: string }) => r.payload);
  }

  async trackingPlanCounts(workspaceId: string, fromDay: string): Promise<TrackingPlanDayCount[]> {
    const rows = await this.sql`
      SELECT source_id, day, violation_type, sum(count) AS n FROM tracking_plan_violation_counts WHERE day >= ${fromDay} AND workspace_id = ${workspaceId} GROUP BY 1, 2, 3
      UNION ALL SELECT source_id, day, NULL, sum(count) FROM tracking_plan_dropped_counts WHERE day >= ${fromDay} AND workspace_id = ${workspaceId} GROUP BY 1, 2`;
    return rows.map((r: any) => ({ sourceId: r.source_id, day: r.day, violationType: r.violation_type ?? null, n: Number(r.n) }));
  }

  async purgeExpired(olderThan: number): Promise<{ deliveries: number; events: number }> {
    // The tracking-plan stage's rows: dropped events with their events, daily counts COUNT_DAYS_KEPT days later.
    const countsBefore = utcDay(olderThan - COUNT_DAYS_KEPT * DAY);
    while ((await this.countOf(`DELETE FROM tracking_plan_dropped_events WHERE id IN (SELECT id FROM tracking_plan_dropped_events WHERE at < $1 LIMIT ${SLICE})`, [olderThan])) >= SLICE);
    while ((await this.countOf(`DELETE FROM tracking_plan_violation_counts WHERE ctid IN (SELECT ctid FROM tracking_plan_violation_counts WHERE day < $1 LIMIT ${SLICE})`, [countsBefore])) >= SLICE);
    while ((await this.countOf(`DELETE FROM tracking_plan_dropped_counts WHERE ctid IN (SELECT ctid FROM tracking_plan_dropped_counts WHERE day < $1 LIMIT ${SLICE})`, [countsBefore])) >= SLICE);
    let deliveries = 0;
    let events = 0;
    // The outer conditions repeat the inner ones: a row changed between the two (a replay made
    // it pending again) is rechecked on its new version and kept.
    for (;;) {
      const n = await this.countOf(
        `DELETE FROM deliveries WHERE id IN (
           SELECT id FROM deliveries WHERE state IN ('succeeded', 'aborted', 'filtered') AND updated_at < $1 LIMIT ${SLICE})
           AND state IN ('succeeded', 'aborted', 'filtered') AND updated_at < $1`,
        [olderThan],
      );
      deliveries += n;
      if (n < SLICE) break;
    }
    // An event goes once no delivery of it is left, it is past retention (its messageId no longer
    // deduplicates) and its partition's processor has passed it: by (tx, id), the cursor's order.
    for (;;) {
      const n = await this.countOf(
        `DELETE FROM events WHERE id IN (
           SELECT e.id FROM events e JOIN processor_cursors c ON c.partition = e.partition
            WHERE e.received_at < $1 AND (e.tx, e.id) <= (c.tx, c.id)
              AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id)
            LIMIT ${SLICE})`,
        [olderThan],
      );
      events += n;
      if (n < SLICE) break;
    }
    return { deliveries, events };
  }

  async reclaimSpace(): Promise<void> {
    // Nothing to run: autovacuum reclaims the space of deleted rows on PostgreSQL.
  }

  private async countOf(text: string, params: unknown[]): Promise<number> {
    const [row] = await this.sql.unsafe(`WITH x AS (${text} RETURNING 1) SELECT count(*)::int AS n FROM x`, params);
    return row.n;
  }
}

function parseLog(text: string): unknown[] {
  try {
    const log = JSON.parse(text);
    return Array.isArray(log) ? log : [];
  } catch {
    return [];
  }
}
