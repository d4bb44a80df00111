/**
 * The pipeline's two storage seams: DeliveriesStore (the delivery engine) and, below it,
 * StatsStore (the read side).
 *
 * The delivery engine's storage seam (cluster mode, design §2.1–2.4 and §3.3 of
 * src/cluster/README.md): the processor's fan-out of stored events into `deliveries` behind a
 * cursor, the scheduler's queue windows, and the outcomes of attempts. SQLite
 * (src/storage/sqlite/deliveries.ts) and PostgreSQL (src/storage/postgres/deliveries.ts)
 * implement it; processor.ts, scheduler.ts and outcomes.ts see only this interface.
 *
 * A unit of work is one call, and calls are per batch, never per event: on SQLite a transaction
 * cannot span an `await` (one main connection), so a caller reads, decides in memory, then hands
 * the store the whole batch as plain data, which it applies in one transaction.
 *
 * Partitions and fences (design §3.3): reads name the partitions they read, writes carry the
 * fences of the leases they are made under and answer the partitions they were applied to.
 * PostgreSQL writes nothing for a partition whose fence is no longer current: it has a new
 * holder, which goes on from what was saved. SQLite has one partition (0), held by the single
 * node, ignores fences and always applies.
 */
import type { LeaseFence } from "../cluster/types";
import type { StorageHealth, StorageProblem } from "../lib/storage-health";

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

/** Where the processor stands, per partition it works. */
export type Cursors = ReadonlyMap<number, EventCursor>;

/** An event as the processor routes it. */
export interface StoredEvent {
  id: number;
  partition: number;
  sourceId: string;
  workspaceId: string;
  userKey: string;
  type: string;
  /** Read only for events of a routed source (the others get no delivery). */
  payload?: string;
  /** Set by the tracking-plan stage on a valid event: its deliveries carry it (NewDelivery.annotation). */
  annotation?: string;
}

export interface EventBatch {
  /** In cursor order ((tx, id): one partition's events are a prefix of what it has after its cursor). */
  events: StoredEvent[];
  /** The position after each partition's last event in the batch; partitions without one are absent. */
  next: Map<number, EventCursor>;
}

/**
 * An event whose stored payload the processor changed before fanning it out, written with its
 * deliveries: the tracking-plan stage stores an event with violations (kept or dropped) annotated,
 * so it is shown with them.
 */
export interface PayloadRewrite {
  eventId: number;
  partition: number;
  payload: string;
}

/**
 * One delivery to insert: pending, no attempt yet, due at once; or, with `filtered`, already
 * final in state 'filtered' with that reason as its error (routing dropped it: consent, an event
 * list), so stats count it and the deliveries list shows why.
 */
export interface NewDelivery {
  eventId: number;
  partition: number;
  destinationId: string;
  sourceId: string;
  workspaceId: string;
  userKey: string;
  filtered?: string;
  /** A valid event's tracking-plan context fields, as JSON: set on the event when it is delivered (annotation.ts). */
  annotation?: string;
}

/** A queued delivery with its event's payload, as the scheduler and the runner (router.ts) work it. */
export interface QueuedDelivery {
  id: number;
  partition: number;
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
  /** NewDelivery.annotation: the tracking-plan fields to set on the event before it is transformed. */
  annotation: string | null;
}

/** The state of a delivery after an attempt (or after the user transformation dropped it). */
export interface OutcomeRow {
  id: number;
  /** The delivery's partition: its outcome is written under that partition's fence. */
  partition: number;
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

/**
 * Every method works on a batch over the partitions it is given: a processor or router works
 * all partitions its instance holds with one statement, not one per partition. Writes carry the
 * fences of the partitions they touch and answer the partitions they were applied to: on
 * PostgreSQL a partition whose fence is no longer current is left alone (its new holder goes on
 * from what was saved). SQLite has one partition (0) and applies everything.
 */
export interface DeliveriesStore {
  /** Where the callers report a database that refuses writes (a full disk), shown by /health. */
  readonly health: StorageHealth;
  /** The processor's saved position in each partition (the start when it never ran). */
  readCursors(partitions: readonly number[]): Promise<Map<number, EventCursor>>;
  /**
   * Up to `limit` events after the cursors, in cursor order across the partitions. PostgreSQL
   * returns only events below the horizon, so none can later commit behind a cursor. Payloads
   * are read only for events of `routed` sources.
   */
  readEventsAfter(cursors: Cursors, limit: number, routed: RoutedSources): Promise<EventBatch>;
  /**
   * The newest position each partition's cursor may jump to when nothing is routed.
   * `reportedId`, when not 0, is the newest event id intake reported committed (SQLite takes it
   * instead of asking the table).
   */
  newestCursors(partitions: readonly number[], reportedId: number): Promise<Map<number, EventCursor>>;
  /**
   * Inserts the deliveries (pending, due `at`; or filtered, final at `at`) and saves the cursors,
   * all or nothing per partition; a partition's rows and cursor are written only under its fence.
   */
  fanOut(fences: readonly LeaseFence[], deliveries: NewDelivery[], cursors: Cursors, at: number, rewrites?: readonly PayloadRewrite[]): Promise<number[]>;
  /** Saves cursors alone (nothing to route up to them). */
  saveCursors(fences: readonly LeaseFence[], cursors: Cursors): Promise<number[]>;
  /**
   * Up to `limit` queued (pending or retrying) deliveries of a destination, after `after`'s id
   * in each of its partitions (only those partitions), in id order across them.
   */
  loadQueue(destinationId: string, after: ReadonlyMap<number, number>, limit: number): Promise<QueuedDelivery[]>;
  /** Writes every outcome in one transaction, in order (a later outcome of a delivery wins). */
  recordOutcomes(fences: readonly LeaseFence[], outcomes: OutcomeRow[]): Promise<number[]>;
  /** Aborts every queued delivery of a destination in the fences' partitions (it was deleted). */
  abortQueued(fences: readonly LeaseFence[], destinationId: string, reason: string, at: number): Promise<number[]>;
  /** The destinations with queued deliveries in these partitions. */
  destinationsWithWork(partitions: readonly number[]): Promise<string[]>;
}

/**
 * The partitions a processor, router and outcome writer work on, and the fences their writes
 * carry (design §3.3 "Fencing"): a partition's fence is undefined once its lease is lost, and
 * then nothing is written for it. SQLite: the single node's partition 0, held for the life of the
 * process. Cluster mode: the partitions the instance's leases hold (src/cluster/leases.ts).
 */
export interface PartitionWork {
  /** The partitions held now, ascending (a snapshot). */
  partitions(): readonly number[];
  fence(partition: number): LeaseFence | undefined;
  /**
   * Milliseconds this instance may still work on the partition before its lease could be
   * anyone else's (0 when not held). Absent: no lease ends (a single node).
   */
  leaseLeftMs?(partition: number): number;
  /** The partition a user's events and deliveries are in. */
  partitionOf(userKey: string): number;
  /** Called after each change of the held set, with what was gained and lost. */
  onChange(fn: (gained: number[], lost: number[]) => void): void;
}

/** The fences of those of `partitions` still held (all of them while nothing was lost). */
export function fencesOf(work: PartitionWork, partitions: Iterable<number>): LeaseFence[] {
  const out: LeaseFence[] = [];
  for (const p of partitions) {
    const f = work.fence(p);
    if (f) out.push(f);
  }
  return out;
}

const SINGLE_NODE_FENCE: LeaseFence = Object.freeze({ partition: 0, epoch: 0 });
const PARTITION_ZERO: readonly number[] = Object.freeze([0]);

/** SQLite: the single node's partition 0, held for the life of the process. */
export const SINGLE_NODE_PARTITION: PartitionWork = Object.freeze({
  partitions: () => PARTITION_ZERO,
  fence: (p: number) => (p === 0 ? SINGLE_NODE_FENCE : undefined),
  partitionOf: () => 0,
  onChange: () => {},
});

/**
 * The pipeline's read-side storage seam (cluster mode, design §2.1–2.4, §3.6 and §3.7 of
 * src/cluster/README.md): what the deliveries API (delivery-service.ts), the dashboard overview
 * (overview.ts), retention (retention.ts) and the health check (src/ops.ts) ask of `events` and
 * `deliveries`, outside the delivery engine (the DeliveriesStore above). SQLite
 * (src/storage/sqlite/stats.ts) and PostgreSQL (src/storage/postgres/stats.ts) implement it; the
 * services see only this interface.
 *
 * A unit of work is one call with plain-data input, as in the other seams: on SQLite a
 * transaction cannot span an `await`. Answers are raw rows (times in epoch milliseconds, JSON
 * columns as their text): the services parse and present them, once, whichever store ran.
 *
 * On PostgreSQL the tables are shared, so every answer covers every instance (design §3.6).
 */

export const DELIVERY_STATES = ["pending", "retrying", "succeeded", "aborted", "filtered"] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** "No upper bound" as a time: a range ending here takes every row from its start on. */
export const OPEN_END = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** A delivery as the deliveries API lists it, with its event's stored payload (null once retention removed it). */
export interface DeliveryListRow {
  id: number;
  eventId: number;
  sourceId: string;
  userKey: string;
  state: DeliveryState;
  attempts: number;
  nextAttemptAt: number;
  lastStatus: number | null;
  lastResponse: string | null;
  lastError: string | null;
  /** JSON array text as stored, or null. */
  attemptLog: string | null;
  createdAt: number;
  updatedAt: number;
  /** The event's JSON text, or null. */
  payload: string | null;
  /** NewDelivery.annotation, set on the event as it was delivered. */
  annotation: string | null;
}

export interface DestinationStatsRows {
  /** Deliveries kept, by state (a state with none is absent). */
  counts: Partial<Record<DeliveryState, number>>;
  /** Deliveries that succeeded per minute since the asked time, oldest first; `minute` is the minute's start. */
  deliveredPerMinute: Array<{ minute: number; delivered: number }>;
  /** The newest failure kept on any of the destination's deliveries (by updated_at). */
  lastError: { error: string; at: number } | null;
}

/** One count: of a kind, in a minute (its index since the epoch), for a source and destination. */
export interface MinuteCount {
  kind: "received" | "delivered" | "failed" | "aborted";
  minute: number;
  sourceId: string;
  /** null for `received`: an event is received once, whatever its destinations. */
  destinationId: string | null;
  n: number;
}

/** One day's tracking-plan count of a source: violations of one type, or dropped events. */
export interface TrackingPlanDayCount {
  sourceId: string;
  /** "YYYY-MM-DD", UTC. */
  day: string;
  /** null: events dropped. */
  violationType: string | null;
  n: number;
}

/** A destination holding aborted deliveries. */
export interface AbortedSummary {
  destinationId: string;
  aborted: number;
  /** The error of its newest aborted delivery (by id), and when that delivery was aborted. */
  lastError: string | null;
  at: number;
}

/** A deletion job of an active regulation that failed or was given up. */
export interface FailingDeletion {
  regulationId: string;
  userId: string;
  destinationId: string;
  /** null when the destination was deleted. */
  destinationName: string | null;
  status: "failed" | "aborted";
  reason: string | null;
  attempts: number;
  updatedAt: number;
}

export interface StatsStore {
  /**
   * Throws when the database does not answer. Otherwise what refuses writes meanwhile (SQLite: a
   * full disk, from the writers' reports), or undefined.
   */
  health(): Promise<StorageProblem | undefined>;

  /** Puts the destination's aborted deliveries back in the queue as new (due `at`); how many. */
  replayAborted(destinationId: string, at: number): Promise<number>;
  /** Counts by state, succeeded per minute from `since`, and the last error of a destination. */
  destinationStats(destinationId: string, since: number): Promise<DestinationStatsRows>;
  /** The destination's newest `limit` deliveries in `states` with an id below `beforeId`, newest first. */
  deliveriesPage(destinationId: string, states: readonly DeliveryState[], beforeId: number, limit: number): Promise<DeliveryListRow[]>;

  /**
   * The workspace's events received in [from, to), per source and minute of received_at, and its
   * deliveries that succeeded (`delivered`) or were aborted in [from, to), per source,
   * destination and minute of updated_at. `to` may be OPEN_END.
   */
  countOutcomes(workspaceId: string, from: number, to: number): Promise<MinuteCount[]>;
  /**
   * Failed attempts (`failed`) made in [attemptsFrom, attemptsTo), read from the attempt logs of
   * the workspace's deliveries updated in [updatedFrom, updatedTo), per source, destination and
   * minute of the attempt. Every attempt but a finished delivery's last one (the one at its
   * updated_at) failed; an attempt log that is not valid JSON counts nothing.
   */
  countFailedAttempts(workspaceId: string, updatedFrom: number, updatedTo: number, attemptsFrom: number, attemptsTo: number): Promise<MinuteCount[]>;
  /** Those of the destinations holding aborted deliveries (any order). */
  abortedByDestination(destinationIds: readonly string[]): Promise<AbortedSummary[]>;
  /** The workspace's latest `limit` failing deletions (newest updated first) and how many there are. */
  failingDeletions(workspaceId: string, limit: number): Promise<{ deletions: FailingDeletion[]; total: number }>;

  /**
   * The workspace's tracking-plan counts per source and UTC day from `fromDay` ("YYYY-MM-DD") on:
   * violations by violation type, and events dropped (`violationType` null).
   */
  trackingPlanCounts(workspaceId: string, fromDay: string): Promise<TrackingPlanDayCount[]>;

  /**
   * Retention: deletes finished deliveries (succeeded, aborted, filtered) last updated before
   * `olderThan`, then events received before it that the processor has passed and no delivery
   * is left of, in bounded batches. How many of each went. With them go the tracking-plan
   * stage's dropped-event rows older than `olderThan` (their events go now), and its daily
   * counts of days before the UTC day COUNT_DAYS_KEPT days before `olderThan`.
   */
  purgeExpired(olderThan: number): Promise<{ deliveries: number; events: number }>;
  /**
   * A source's newest stored events (payloads, newest first), at most `limit`, looked for among
   * the newest `window` events of all sources so the read stays short (a plan change's preview).
   */
  recentEvents(workspaceId: string, sourceId: string, limit: number, window: number): Promise<string[]>;
  /** Gives freed pages back after a purge (SQLite: an incremental vacuum; PostgreSQL: nothing, autovacuum does it). */
  reclaimSpace(): Promise<void>;
}
