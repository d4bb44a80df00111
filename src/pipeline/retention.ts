/**
 * Retention: finished deliveries and their events go after the configured time, in
 * small slices so intake never waits long; then an incremental vacuum gives the pages
 * back. WAL checkpoints are src/gateway/checkpoints.ts's.
 */
import type { Database } from "bun:sqlite";
import { type Db, newestEventId } from "../../db";
import type { Logger } from "../lib/logger";

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

export function purgeExpired(db: Db, olderThan: number): { deliveries: number; events: number } {
  const c = db.$client;
  let deliveries = 0;
  let events = 0;
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
}

export function startMaintenance(db: Db, log: Logger, opts: { retentionMs: number; intervalMs?: number; now?: () => number }) {
  const now = opts.now ?? Date.now;
  const tick = () => {
    try {
      const purged = purgeExpired(db, now() - opts.retentionMs);
      if (purged.deliveries || purged.events) log.info("retention purge", purged);
      db.$client.exec("PRAGMA incremental_vacuum(2000)");
    } catch (err) {
      log.warn("maintenance failed", { err });
    }
  };
  // Once a minute, or more often for short retention windows, so a window is never
  // overrun by more than a tenth of itself.
  const timer = setInterval(tick, opts.intervalMs ?? Math.max(1000, Math.min(60_000, opts.retentionMs / 10)));
  return () => clearInterval(timer);
}
