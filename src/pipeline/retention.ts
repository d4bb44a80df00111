/**
 * Retention: finished deliveries and their events go after the configured time, in bounded
 * batches so intake never waits long; then the freed space is given back (SQLite: an
 * incremental vacuum; PostgreSQL: autovacuum, nothing to run). WAL checkpoints are
 * src/gateway/checkpoints.ts's. The deletes themselves are the store's (StatsStore, store.ts).
 */
import type { Logger } from "../lib/logger";
import type { StatsStore } from "./store";
import type { SourceStateStore } from "../sources/state-store";

export function startMaintenance(store: StatsStore, log: Logger, opts: { retentionMs: number; intervalMs?: number; now?: () => number; sourceState?: SourceStateStore }) {
  const now = opts.now ?? Date.now;
  // A purge on PostgreSQL can outlast the interval: a tick that finds the previous one running skips.
  let running = false;
  const tick = async () => {
    if (running) return;
    running = true;
    try {
      const purged = await store.purgeExpired(now() - opts.retentionMs);
      if (purged.deliveries || purged.events) log.info("retention purge", purged);
      // Webhook mappings' state goes by its own expiry (Shopify's: an hour to half a day).
      await opts.sourceState?.purgeExpired(now());
      await store.reclaimSpace();
    } catch (err) {
      log.warn("maintenance failed", { err });
    } finally {
      running = false;
    }
  };
  // Once a minute, or more often for short retention windows, so a window is never
  // overrun by more than a tenth of itself.
  const timer = setInterval(tick, opts.intervalMs ?? Math.max(1000, Math.min(60_000, opts.retentionMs / 10)));
  return () => clearInterval(timer);
}
