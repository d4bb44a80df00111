/**
 * Delivery outcomes are written in groups: every outcome of the last GROUP_MS goes into one
 * transaction (sooner once GROUP_MAX are waiting). Each commit is an fsync on the main thread;
 * a group per turn of the event loop made one for every few deliveries, the largest cost of a
 * delivery (a seventh of the process's CPU at 5,000 deliveries/s). A crash before the flush
 * leaves the rows pending, so they are delivered again (at least once).
 */
import type { Logger } from "../lib/logger";
import { DEADLOCK, isConnectionFailure, sqlState } from "../lib/postgres-errors";
import { isStorageFailure } from "../lib/storage-health";
import { type DeliveriesStore, type OutcomeRow, type PartitionWork, SINGLE_NODE_PARTITION, fencesOf } from "./store";

export type { OutcomeRow } from "./store";

/**
 * Outcomes kept in memory while the database refuses writes (a full disk). Beyond this the
 * oldest are let go: their rows stay pending and are delivered again after a restart (at
 * least once), where keeping them all would grow memory with every delivery.
 */
const KEEP_WHILE_FAILING = 100_000;
const GROUP_MS = 10;
const GROUP_MAX = 2_000;

export class OutcomeWriter {
  private queue: OutcomeRow[] = [];
  private scheduled = false;
  /** Set while outcomes that could not be written wait to be tried again. */
  private retryTimer: Timer | undefined;
  private groupTimer: Timer | undefined;
  /** The write in progress: groups are written one after another, so a later outcome of a delivery lands last. */
  private writing: Promise<void> | undefined;

  constructor(
    private store: DeliveriesStore,
    private log: Logger,
    private work: PartitionWork = SINGLE_NODE_PARTITION,
  ) {}

  write(row: OutcomeRow) {
    this.queue.push(row);
    if (this.retryTimer) return;
    if (this.queue.length >= GROUP_MAX) void this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      this.groupTimer = setTimeout(() => void this.flush(), GROUP_MS);
    }
  }

  /** Writes every outcome queued so far; resolves once they are written (or kept for a retry). */
  flush(): Promise<void> {
    this.scheduled = false;
    clearTimeout(this.groupTimer);
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    // With no write in progress the store is called at once: SQLite's commit then happens
    // within this call, as it did before the seam.
    const p: Promise<void> = this.writing ? this.writing.then(() => this.commitQueued()) : this.commitQueued();
    this.writing = p;
    void p.then(() => {
      if (this.writing === p) this.writing = undefined;
    });
    return p;
  }

  private async commitQueued(): Promise<void> {
    if (!this.queue.length) return;
    const rows = this.queue;
    this.queue = [];
    const partitions = new Set<number>();
    for (const r of rows) partitions.add(r.partition);
    try {
      const written = await this.store.recordOutcomes(fencesOf(this.work, partitions), rows);
      if (written.length < partitions.size) {
        // A partition's lease is gone: its rows stay queued in the database and its new holder
        // delivers them again (at least once).
        const lost = [...partitions].filter((p) => !written.includes(p));
        this.log.warn("delivery outcomes not recorded: their partitions are no longer held", { partitions: lost, count: rows.filter((r) => lost.includes(r.partition)).length });
      }
    } catch (err) {
      // A deadlock or a lost connection (cluster mode) is passing too: kept and tried again like a
      // full disk, instead of dropping the group (its deliveries would be sent again).
      if (!isStorageFailure(err) && !isConnectionFailure(err) && sqlState(err) !== DEADLOCK) {
        // The rows stay pending in the database and are delivered again after a restart.
        this.log.error("could not record delivery outcomes", { err, count: rows.length });
        return;
      }
      // Kept, in order (a later outcome of the same delivery must be written after), and tried
      // again once a second until the database takes writes.
      this.queue = rows.concat(this.queue);
      const over = this.queue.length - KEEP_WHILE_FAILING;
      if (over > 0) this.queue.splice(0, over);
      if (this.store.health.failed("outcomes", err)) this.log.error("could not record delivery outcomes; kept in memory and retried every second until the database takes writes", { err, count: rows.length });
      clearTimeout(this.retryTimer);
      this.retryTimer = setTimeout(() => void this.flush(), 1000);
      return;
    }
    if (this.store.health.recovered("outcomes")) this.log.info("delivery outcomes are recorded again");
  }
}
