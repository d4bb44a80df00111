/** Delivery operations the API exposes: replay of aborted events and per-destination stats. */
import type { ScopedContext } from "../lib/context";
import { findDestinationRow } from "../control-plane/destinations";
import type { Router } from "./router";

/** Puts the destination's aborted deliveries back in the queue, as new. */
export function replayAborted(ctx: ScopedContext, router: Router, destinationId: string) {
  findDestinationRow(ctx, destinationId);
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

export function destinationStats(ctx: ScopedContext, destinationId: string) {
  findDestinationRow(ctx, destinationId);
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
