/**
 * The delivery engine's store on SQLite (design §2.1): the statements the processor, router and
 * outcome writer ran themselves before the seam, prepared once on the main connection. One
 * partition (0), so partitions and fences are ignored.
 *
 * Every method does its work synchronously before its promise is returned: a write's
 * transaction opens and commits within the call, and nothing else on this connection can run
 * in between (see DeliveriesStore, src/pipeline/store.ts).
 */
import type { Database, Statement } from "bun:sqlite";
import type { LeaseFence } from "../../cluster/types";
import { type Db, newestEventId } from "../../../db";
import { type StorageHealth, storageHealth } from "../../lib/storage-health";
import type {
  Cursors,
  DeliveriesStore,
  EventBatch,
  EventCursor,
  NewDelivery,
  PayloadRewrite,
  OutcomeRow,
  QueuedDelivery,
  RoutedSources,
  StoredEvent,
} from "../../pipeline/store";

const CURSOR = "processor";

/**
 * The lowest id a new event may take: above the saved cursor (an id the processor passed
 * is never read again) and above any id a delivery still refers to.
 */
export function eventIdFloor(c: Database): number {
  const cursor = (c.query("SELECT value FROM cursors WHERE name = ?").get(CURSOR) as { value: number } | null)?.value ?? 0;
  const referenced = (c.query("SELECT max(event_id) AS id FROM deliveries").get() as { id: number | null }).id ?? 0;
  return Math.max(cursor, referenced);
}

function at(id: number): EventCursor {
  return { tx: "0", id };
}

const ALL = [0];
const NONE: number[] = [];
/** What a write answers: partition 0 when the write was for it, nothing when it had nothing to do. */
const applied = (asked: boolean) => (asked ? ALL : NONE);

/**
 * Delivery outcomes are committed without an fsync of their own, even under --sync FULL: a
 * commit's fsync blocks the main thread (0.3 ms and more here), and at thousands of deliveries a
 * second those waits held the loop most of the time. A power cut can take only the last outcomes,
 * never an event: events are committed with their fsync before the 200 (gateway/group-commit.ts),
 * and the next fsync of any commit makes everything written before it durable too. A lost outcome
 * leaves its delivery pending: it is sent again (at least once). A process crash loses nothing:
 * the WAL is in the OS's cache.
 */
function withoutFsync<A extends unknown[]>(c: Database, commit: (...args: A) => void): (...args: A) => void {
  const full = (c.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous >= 2;
  if (!full) return commit;
  return (...args: A) => {
    c.exec("PRAGMA synchronous = NORMAL");
    try {
      commit(...args);
    } finally {
      c.exec("PRAGMA synchronous = FULL");
    }
  };
}

export class SqliteDeliveriesStore implements DeliveriesStore {
  readonly health: StorageHealth;
  private readonly c: Database;
  private readonly readEvents: Statement;
  private readonly readPayload: Statement;
  private readonly insertDelivery: Statement;
  private readonly insertFiltered: Statement;
  private readonly saveCursorStmt: Statement;
  private readonly load: Statement;
  private readonly abortAll: Statement;
  private readonly readBatch: (cursor: number, limit: number, routed: RoutedSources) => StoredEvent[];
  private readonly insertBatch: (deliveries: NewDelivery[], cursor: number, at: number, rewrites: readonly PayloadRewrite[]) => void;
  private readonly commitOutcomes: (rows: OutcomeRow[]) => void;

  constructor(db: Db) {
    const c = (this.c = db.$client);
    this.health = storageHealth(c.filename);
    this.readEvents = c.prepare(
      "SELECT id, 0 AS partition, source_id AS sourceId, workspace_id AS workspaceId, user_key AS userKey, type FROM events WHERE id > ? ORDER BY id LIMIT ?",
    );
    this.readPayload = c.prepare("SELECT payload FROM events WHERE id = ?");
    this.insertDelivery = c.prepare(
      `INSERT INTO deliveries (event_id, destination_id, source_id, workspace_id, user_key, state, attempts, next_attempt_at, created_at, updated_at, annotation)
       VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?)`,
    );
    // Routing dropped it (consent, an event list): final at once, its reason as the error, no attempt.
    this.insertFiltered = c.prepare(
      `INSERT INTO deliveries (event_id, destination_id, source_id, workspace_id, user_key, state, attempts, next_attempt_at, last_error, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, 'filtered', 0, ?, ?, ?, ?)`,
    );
    this.saveCursorStmt = c.prepare("INSERT INTO cursors (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value");
    this.load = c.prepare(
      `SELECT d.id, 0 AS partition, d.event_id AS eventId, d.user_key AS userKey, d.source_id AS sourceId, d.attempts,
              d.first_attempt_at AS firstAttemptAt, d.next_attempt_at AS nextAttemptAt, d.attempt_log AS attemptLog, d.last_error AS lastError, e.payload, d.annotation
         FROM deliveries d JOIN events e ON e.id = d.event_id
        WHERE d.destination_id = ? AND d.id > ? AND d.state IN ('pending', 'retrying')
        ORDER BY d.id LIMIT ?`,
    );
    this.abortAll = c.prepare(
      `UPDATE deliveries SET state = 'aborted', last_error = ?, updated_at = ? WHERE destination_id = ? AND state IN ('pending', 'retrying')`,
    );
    const { readEvents, readPayload, insertDelivery, insertFiltered, saveCursorStmt } = this;
    // One read transaction: the payloads are read from the same snapshot as the ids.
    this.readBatch = c.transaction((cursor: number, limit: number, routed: RoutedSources) => {
      const rows = readEvents.all(cursor, limit) as StoredEvent[];
      for (const r of rows) if (routed.has(r.sourceId)) r.payload = (readPayload.get(r.id) as { payload: string }).payload;
      return rows;
    });
    const rewritePayload = c.prepare("UPDATE events SET payload = ? WHERE id = ?");
    this.insertBatch = c.transaction((deliveries: NewDelivery[], cursor: number, at: number, rewrites: readonly PayloadRewrite[]) => {
      for (const r of rewrites) rewritePayload.run(r.payload, r.eventId);
      for (const d of deliveries) {
        if (d.filtered === undefined) insertDelivery.run(d.eventId, d.destinationId, d.sourceId, d.workspaceId, d.userKey, at, at, at, d.annotation ?? null);
        else insertFiltered.run(d.eventId, d.destinationId, d.sourceId, d.workspaceId, d.userKey, at, d.filtered, at, at);
      }
      saveCursorStmt.run(CURSOR, cursor);
    }).immediate;
    const update = c.prepare(
      `UPDATE deliveries SET state = ?, attempts = ?, next_attempt_at = ?, first_attempt_at = ?, last_status = ?,
         last_response = ?, last_error = ?, attempt_log = ?, updated_at = ? WHERE id = ?`,
    );
    this.commitOutcomes = withoutFsync(c, c.transaction((rows: OutcomeRow[]) => {
      for (const r of rows) {
        update.run(r.state, r.attempts, r.nextAttemptAt, r.firstAttemptAt, r.lastStatus, r.lastResponse, r.lastError, r.attemptLog, r.updatedAt, r.id);
      }
    }).immediate);
  }


  async readCursors(partitions: readonly number[]): Promise<Map<number, EventCursor>> {
    const out = new Map<number, EventCursor>();
    if (!partitions.includes(0)) return out;
    const row = this.c.query("SELECT value FROM cursors WHERE name = ?").get(CURSOR) as { value: number } | null;
    out.set(0, at(row?.value ?? 0));
    return out;
  }

  async readEventsAfter(cursors: Cursors, limit: number, routed: RoutedSources): Promise<EventBatch> {
    const cursor = cursors.get(0);
    const next = new Map<number, EventCursor>();
    if (!cursor) return { events: [], next };
    const events = this.readBatch(cursor.id, limit, routed);
    if (events.length) next.set(0, at(events[events.length - 1]!.id));
    return { events, next };
  }

  async newestCursors(partitions: readonly number[], reportedId: number): Promise<Map<number, EventCursor>> {
    const out = new Map<number, EventCursor>();
    // Intake is the only writer of events and reports every commit, so the table is asked
    // only until the first report (at start, for events committed before a restart).
    if (partitions.includes(0)) out.set(0, at(reportedId || newestEventId(this.c)));
    return out;
  }

  async fanOut(_fences: readonly LeaseFence[], deliveries: NewDelivery[], cursors: Cursors, at: number, rewrites: readonly PayloadRewrite[] = []): Promise<number[]> {
    const cursor = cursors.get(0);
    if (!cursor) return NONE;
    this.insertBatch(deliveries, cursor.id, at, rewrites);
    return ALL;
  }

  async saveCursors(_fences: readonly LeaseFence[], cursors: Cursors): Promise<number[]> {
    const cursor = cursors.get(0);
    if (cursor) this.saveCursorStmt.run(CURSOR, cursor.id);
    return applied(cursor !== undefined);
  }

  async loadQueue(destinationId: string, after: ReadonlyMap<number, number>, limit: number): Promise<QueuedDelivery[]> {
    const afterId = after.get(0);
    if (afterId === undefined) return [];
    return this.load.all(destinationId, afterId, limit) as QueuedDelivery[];
  }

  async recordOutcomes(_fences: readonly LeaseFence[], outcomes: OutcomeRow[]): Promise<number[]> {
    this.commitOutcomes(outcomes);
    return applied(outcomes.length > 0);
  }

  async abortQueued(_fences: readonly LeaseFence[], destinationId: string, reason: string, at: number): Promise<number[]> {
    this.abortAll.run(reason, at, destinationId);
    return ALL;
  }

  async destinationsWithWork(partitions: readonly number[]): Promise<string[]> {
    if (!partitions.includes(0)) return [];
    const rows = this.c.query("SELECT DISTINCT destination_id AS id FROM deliveries WHERE state IN ('pending', 'retrying')").all() as Array<{ id: string }>;
    return rows.map((r) => r.id);
  }
}
