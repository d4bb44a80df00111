/**
 * The pipeline's read-side storage seam (cluster mode, design §2.1–2.4, §3.6 and §3.7 of
 * src/cluster/README.md): what the deliveries API (delivery-service.ts), the dashboard overview
 * (overview.ts), retention (retention.ts) and the health check (src/ops.ts) ask of `events` and
 * `deliveries`, outside the delivery engine (deliveries-store.ts has that). SQLite
 * (src/storage/sqlite/stats.ts) and PostgreSQL (src/storage/postgres/stats.ts) implement it; the
 * services see only this interface.
 *
 * A unit of work is one call with plain-data input, as in the other seams: on SQLite a
 * transaction cannot span an `await`. Answers are raw rows (times in epoch milliseconds, JSON
 * columns as their text): the services parse and present them, once, whichever store ran.
 *
 * On PostgreSQL the tables are shared, so every answer covers every instance (design §3.6).
 */
import type { StorageProblem } from "../lib/storage-health";

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
   * Retention: deletes finished deliveries (succeeded, aborted, filtered) last updated before
   * `olderThan`, then events received before it that the processor has passed and no delivery
   * is left of, in bounded batches. How many of each went.
   */
  purgeExpired(olderThan: number): Promise<{ deliveries: number; events: number }>;
  /** Gives freed pages back after a purge (SQLite: an incremental vacuum; PostgreSQL: nothing, autovacuum does it). */
  reclaimSpace(): Promise<void>;
}
