/**
 * The delivery engine's storage seam (cluster mode, design §2.1–2.4 and §3.3 of
 * src/cluster/README.md): the processor's fan-out of stored events into `deliveries` behind a
 * cursor, the router's queue windows, and the outcomes of attempts. SQLite
 * (src/storage/sqlite/deliveries.ts) and PostgreSQL (src/storage/postgres/deliveries.ts)
 * implement it; processor.ts, router.ts and outcomes.ts see only this interface.
 *
 * A unit of work is one call, and calls are per batch, never per event: on SQLite a transaction
 * cannot span an `await` (one main connection), so a caller reads, decides in memory, then hands
 * the store the whole batch as plain data, which it applies in one transaction.
 *
 * Partitions and fences (design §3.3): reads name the partition they read, writes carry the
 * fence of the lease they are made under and answer whether they were applied. PostgreSQL writes
 * nothing for a fence that is no longer current (false): the partition has a new holder, which
 * goes on from what was saved. SQLite has one partition (0), held by the single node
 * (src/cluster/single-node.ts), ignores both and always applies.
 */
import type { LeaseFence } from "../cluster/types";
import type { StorageHealth } from "../lib/storage-health";

/**
 * Where the processor stands in the event log: the last event fanned out. On PostgreSQL `tx` is
 * the inserting transaction's xid8 as text (ids of concurrent writers commit out of order, so
 * the position is (tx, id), read only below the horizon); on SQLite it is always "0", since
 * intake assigns ids in commit order.
 */
export interface EventCursor {
  readonly tx: string;
  readonly id: number;
}

export const START_CURSOR: EventCursor = Object.freeze({ tx: "0", id: 0 });

/** True when `a` is past `b`. */
export function cursorAfter(a: EventCursor, b: EventCursor): boolean {
  if (a.tx !== b.tx) return BigInt(a.tx) > BigInt(b.tx);
  return a.id > b.id;
}

/** An event as the processor routes it. */
export interface StoredEvent {
  id: number;
  sourceId: string;
  workspaceId: string;
  userKey: string;
  type: string;
  /** Read only for events of a routed source (the others get no delivery). */
  payload?: string;
}

export interface EventBatch {
  /** In cursor order. */
  events: StoredEvent[];
  /** The position after the last event of the batch; the cursor itself when there is none. */
  next: EventCursor;
}

/** One delivery to insert: pending, no attempt yet, due at once. */
export interface NewDelivery {
  eventId: number;
  destinationId: string;
  sourceId: string;
  workspaceId: string;
  userKey: string;
}

/** A queued delivery with its event's payload, as the router works it. */
export interface QueuedDelivery {
  id: number;
  eventId: number;
  userKey: string;
  sourceId: string;
  attempts: number;
  firstAttemptAt: number | null;
  nextAttemptAt: number;
  attemptLog: string | null;
  /** The latest failure, kept after a later success so stats can show it. */
  lastError: string | null;
  payload: string;
}

/** The state of a delivery after an attempt (or after the user transformation dropped it). */
export interface OutcomeRow {
  id: number;
  state: "pending" | "retrying" | "succeeded" | "aborted" | "filtered";
  attempts: number;
  nextAttemptAt: number;
  firstAttemptAt: number | null;
  lastStatus: number | null;
  lastResponse: string | null;
  lastError: string | null;
  attemptLog: string | null;
  updatedAt: number;
}

/** The sources whose events may become deliveries: the config snapshot's bySource map fits. */
export interface RoutedSources {
  has(sourceId: string): boolean;
  keys(): Iterable<string>;
}

export interface DeliveriesStore {
  /** Where the callers report a database that refuses writes (a full disk), shown by /health. */
  readonly health: StorageHealth;
  /** The processor's saved position in a partition (the start when it never ran). */
  readCursor(partition: number): Promise<EventCursor>;
  /**
   * Up to `limit` events of the partition after `cursor`, in cursor order. PostgreSQL returns
   * only events below the horizon, so none can later commit behind the cursor. Payloads are
   * read only for events of `routed` sources.
   */
  readEventsAfter(partition: number, cursor: EventCursor, limit: number, routed: RoutedSources): Promise<EventBatch>;
  /**
   * The newest position the cursor may jump to when nothing is routed. `reportedId`, when not 0,
   * is the newest event id intake reported committed (SQLite takes it instead of asking the table).
   */
  newestCursor(partition: number, reportedId: number): Promise<EventCursor>;
  /** Inserts the deliveries (pending, due `at`, in the fence's partition) and saves the cursor, all or nothing. */
  fanOut(fence: LeaseFence, deliveries: NewDelivery[], cursor: EventCursor, at: number): Promise<boolean>;
  /** Saves the cursor alone (nothing to route up to it). */
  saveCursor(fence: LeaseFence, cursor: EventCursor): Promise<boolean>;
  /** Up to `limit` queued (pending or retrying) deliveries of a destination after `afterId`, in id order. */
  loadQueue(partition: number, destinationId: string, afterId: number, limit: number): Promise<QueuedDelivery[]>;
  /** Writes every outcome in one transaction, in order (a later outcome of a delivery wins). */
  recordOutcomes(fence: LeaseFence, outcomes: OutcomeRow[]): Promise<boolean>;
  /** Aborts every queued delivery of a destination in the fence's partition (it was deleted). */
  abortQueued(fence: LeaseFence, destinationId: string, reason: string, at: number): Promise<boolean>;
  /** The destinations with queued deliveries in the partition. */
  destinationsWithWork(partition: number): Promise<string[]>;
}

/**
 * The partition a processor, router or outcome writer works on, and the fence its writes carry
 * now: undefined once the lease is lost, and then it writes nothing (design §3.3 "Fencing").
 * Cluster mode will build one per held partition from `Cluster.fence(p)` (step 5).
 */
export interface PartitionWork {
  readonly partition: number;
  fence(): LeaseFence | undefined;
}

const SINGLE_NODE_FENCE: LeaseFence = Object.freeze({ partition: 0, epoch: 0 });

/** SQLite: the single node's partition 0, held for the life of the process. */
export const SINGLE_NODE_PARTITION: PartitionWork = Object.freeze({ partition: 0, fence: () => SINGLE_NODE_FENCE });
