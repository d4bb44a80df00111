/**
 * Retention: finished deliveries and their events go after the configured time, in
 * small slices so intake never waits long; then an incremental vacuum gives the pages
 * back. WAL checkpoints run on the sync thread (src/gateway/wal-sync-worker.ts).
 */
import type { Db } from "../../db";
import type { Logger } from "../lib/logger";

const SLICE = 5000;

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
       SELECT e.id FROM events e WHERE e.received_at < ? AND e.id <= COALESCE((SELECT value FROM cursors WHERE name = 'processor'), 0)
          AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id) LIMIT ${SLICE})`,
  );
  for (;;) {
    const n = delDeliveries.run(olderThan).changes;
    deliveries += n;
    if (n < SLICE) break;
  }
  for (;;) {
    const n = delEvents.run(olderThan).changes;
    events += n;
    if (n < SLICE) break;
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
