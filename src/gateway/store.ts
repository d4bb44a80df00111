/**
 * Where intake stores events (cluster mode's event-log seam, design §2 of src/cluster/README.md).
 * Intake validates, drops suppressed users' events and builds the rows; the log deduplicates and
 * makes them durable. Two implementations, because the two stores deduplicate at different
 * moments:
 * - SQLite (`SqliteEventLog`, src/storage/sqlite/event-log.ts): one process sees every event, so duplicates are found in
 *   memory before anything is built (RecentMessageIds), and the group commit stores the rest.
 * - PostgreSQL (src/storage/postgres/event-log.ts): many instances share the table, so the
 *   unique index on the dedup key finds duplicates at the insert, and the insert is guarded by
 *   the suppression epoch (design §3.1–3.4).
 */
import type { StorageHealth } from "../lib/storage-health";

/** One stored event, as intake builds it and the log writes it. */
export interface EventRow {
  workspaceId: string;
  sourceId: string;
  messageId: string;
  userKey: string;
  type: string;
  payload: string;
  receivedAt: number;
}


/** What happened to the rows of one append besides being stored, by their index in the request. */
export interface AppendOutcome {
  /** Found to repeat a stored event at the insert (PostgreSQL; SQLite finds them in `claim`). */
  duplicates: number[];
  /** Dropped because a regulation made meanwhile on another instance covers them (PostgreSQL). */
  suppressed: number[];
}

export interface EventLog {
  /** Whether the store takes writes, for /health and the 503s (lib/storage-health.ts). */
  readonly storage: StorageHealth;
  /** Warms the dedup lookups of a batch's keys (a client messageId's 53-bit key, 0 for none). */
  prefetch(keys: number[]): void;
  /**
   * False when the key's event was taken already (a client's retry): acknowledge it, store
   * nothing. Otherwise the key is marked at once, so a retry racing this request is a duplicate
   * too. Always true where duplicates are found at the insert.
   */
  claim(key: number): boolean;
  /**
   * Stores one request's rows and resolves once they are durable. `keys` are the keys `claim`
   * marked for them: on failure they are forgotten, so the client's retry is stored, not taken
   * for a duplicate. `claimRefused`: some of the request's calls were duplicates, whose events
   * may still be committing: resolve only once those are durable too, or a request could be
   * acknowledged for an event that is then lost. `stillAllowed(i)`: asked of row i when
   * suppression rules changed while the rows were on their way (PostgreSQL).
   */
  append(rows: EventRow[], keys: number[], claimRefused: boolean, stillAllowed: (i: number) => boolean): Promise<AppendOutcome>;
}
