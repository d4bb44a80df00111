/** Delivery operations the API exposes: replay of aborted events and per-destination stats. */
import type { ScopedContext } from "../lib/context";
import { findDestinationRow } from "../control-plane/destinations";
import type { Router } from "./router";

/** Puts the destination's aborted deliveries back in the queue, as new. */
export async function replayAborted(ctx: ScopedContext, router: Router, destinationId: string) {
  await findDestinationRow(ctx, destinationId);
  const now = ctx.now();
  const res = ctx.db.$client
    .prepare(
      `UPDATE deliveries SET state = 'pending', attempts = 0, first_attempt_at = NULL, next_attempt_at = ?, updated_at = ?
        WHERE destination_id = ? AND state = 'aborted'`,
    )
    .run(now, now, destinationId);
  router.reload(destinationId);
  return { replayed: res.changes };
}

export async function destinationStats(ctx: ScopedContext, destinationId: string) {
  await findDestinationRow(ctx, destinationId);
  const c = ctx.db.$client;
  const counts: Record<string, number> = { pending: 0, retrying: 0, succeeded: 0, aborted: 0, filtered: 0 };
  for (const r of c.query("SELECT state, count(*) AS n FROM deliveries WHERE destination_id = ? GROUP BY state").all(destinationId) as any[]) {
    counts[r.state] = r.n;
  }
  const since = ctx.now() - 3600_000;
  const perMinute = (
    c
      .query(
        `SELECT (updated_at / 60000) * 60000 AS minute, count(*) AS n FROM deliveries
          WHERE state = 'succeeded' AND updated_at >= ? AND destination_id = ? GROUP BY minute ORDER BY minute`,
      )
      .all(since, destinationId) as any[]
  ).map((r) => ({ minute: new Date(r.minute).toISOString(), delivered: r.n }));
  const lastError = c
    .query(
      `SELECT last_error AS error, updated_at AS at FROM deliveries
        WHERE destination_id = ? AND last_error IS NOT NULL ORDER BY updated_at DESC LIMIT 1`,
    )
    .get(destinationId) as any;
  return {
    destinationId,
    counts,
    deliveredPerMinute: perMinute,
    lastError: lastError ? { error: lastError.error, at: new Date(lastError.at).toISOString() } : null,
  };
}

export const DELIVERY_STATES = ["pending", "retrying", "succeeded", "aborted", "filtered"] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

export interface DeliveryListInput {
  state?: DeliveryState;
  limit?: number;
  /** Only deliveries with a smaller id (the previous page's `next`). */
  before?: number;
}

/**
 * The destination's latest deliveries (newest first), each with its event and its last attempts
 * (status, the first KB of the answer, error, time). With `state`, only that state: `aborted`
 * lists what a replay would send again. Without it, the newest of every state: one indexed
 * query per state (deliveries_queue is (destination, state, id)), merged, so the cost does not
 * grow with the destination's history.
 */
export async function listDeliveries(ctx: ScopedContext, destinationId: string, input: DeliveryListInput) {
  await findDestinationRow(ctx, destinationId);
  const limit = input.limit ?? 20;
  const before = input.before ?? Number.MAX_SAFE_INTEGER;
  const query = ctx.db.$client.query(
    `SELECT d.id, d.event_id AS eventId, d.source_id AS sourceId, d.user_key AS userKey, d.state, d.attempts, d.next_attempt_at AS nextAttemptAt,
            d.last_status AS lastStatus, d.last_response AS lastResponse, d.last_error AS lastError, d.attempt_log AS attemptLog,
            d.created_at AS createdAt, d.updated_at AS updatedAt, e.payload
       FROM deliveries d LEFT JOIN events e ON e.id = d.event_id
      WHERE d.destination_id = ? AND d.state = ? AND d.id < ?
      ORDER BY d.id DESC LIMIT ?`,
  );
  const rows: any[] = [];
  for (const state of input.state ? [input.state] : DELIVERY_STATES) rows.push(...(query.all(destinationId, state, before, limit + 1) as any[]));
  rows.sort((a, b) => b.id - a.id);
  const page = rows.slice(0, limit);
  return {
    deliveries: page.map((r) => ({
      id: r.id,
      eventId: r.eventId,
      sourceId: r.sourceId,
      userKey: r.userKey,
      state: r.state as DeliveryState,
      attempts: r.attempts,
      nextAttemptAt: r.state === "pending" || r.state === "retrying" ? new Date(r.nextAttemptAt).toISOString() : null,
      lastStatus: r.lastStatus ?? null,
      lastResponse: r.lastResponse ?? null,
      lastError: r.lastError ?? null,
      attemptLog: parseAttemptLog(r.attemptLog),
      event: parsePayload(r.payload),
      createdAt: new Date(r.createdAt).toISOString(),
      updatedAt: new Date(r.updatedAt).toISOString(),
    })),
    next: rows.length > limit ? page[page.length - 1].id : null,
  };
}

function parseAttemptLog(text: string | null): Array<{ at: string; status: number | null; response: string | null; error: string | null; ms: number }> {
  if (!text) return [];
  try {
    const log = JSON.parse(text);
    return Array.isArray(log) ? log : [];
  } catch {
    return [];
  }
}

/** The stored event, or null once retention has removed it. */
function parsePayload(text: string | null): Record<string, unknown> | null {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
