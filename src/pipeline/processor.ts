/**
 * The processor reads newly committed events by id cursor and inserts one delivery
 * per (event, destination), advancing its cursor in the same transaction. Intake stays
 * one insert per event however many destinations there are.
 */
import type { Statement } from "bun:sqlite";
import type { ConfigStore } from "../control-plane/config-store";
import type { Logger } from "../lib/logger";
import { newestEventId } from "../../db";
import { type StorageHealth, isStorageFailure, storageHealth } from "../lib/storage-health";
import { routeEvent } from "./route";

const CURSOR = "processor";
const BATCH = 2000;

/**
 * The lowest id a new event may take: above the saved cursor (an id the processor passed
 * is never read again) and above any id a delivery still refers to.
 */
export function eventIdFloor(c: import("bun:sqlite").Database): number {
  const cursor = (c.query("SELECT value FROM cursors WHERE name = ?").get(CURSOR) as { value: number } | null)?.value ?? 0;
  const referenced = (c.query("SELECT max(event_id) AS id FROM deliveries").get() as { id: number | null }).id ?? 0;
  return Math.max(cursor, referenced);
}

export class Processor {
  private scheduled = false;
  private readEvents: Statement;
  private readPayload: Statement;
  private cursorSavedAt = 0;
  private insertDelivery: Statement;
  private saveCursor: Statement;
  private cursor: number;
  /** The newest event id known to be committed (intake reports each commit), or 0 to ask the table. */
  private newestCommitted = 0;
  private listeners: Array<(destinationIds: Set<string>) => void> = [];
  private stopped = false;
  private storage: StorageHealth;
  /** Set while a run that could not write waits to try again (a full disk). */
  private retryTimer: Timer | undefined;

  constructor(
    private db: import("../../db").Db,
    private config: ConfigStore,
    private log: Logger,
    private now: () => number,
  ) {
    const c = db.$client;
    // The payload is read only for events whose source has destinations.
    this.readEvents = c.prepare(
      "SELECT id, source_id AS sourceId, workspace_id AS workspaceId, user_key AS userKey, type FROM events WHERE id > ? ORDER BY id LIMIT ?",
    );
    this.readPayload = c.prepare("SELECT payload FROM events WHERE id = ?");
    this.insertDelivery = c.prepare(
      `INSERT INTO deliveries (event_id, destination_id, source_id, workspace_id, user_key, state, attempts, next_attempt_at, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)`,
    );
    this.saveCursor = c.prepare("INSERT INTO cursors (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value");
    const row = c.query("SELECT value FROM cursors WHERE name = ?").get(CURSOR) as { value: number } | null;
    this.cursor = row?.value ?? 0;
    this.storage = storageHealth(c.filename);
  }

  /** The id of the newest event already routed (in memory; the saved cursor may lag by up to a second). */
  get routedUpTo(): number {
    return this.cursor;
  }

  /** Called with the destinations that got new deliveries (the router's wake-up). */
  onDeliveries(fn: (destinationIds: Set<string>) => void) {
    this.listeners.push(fn);
  }

  /** Coalesces wake-ups: many commits in one turn of the loop cause one run. */
  wake(newestEventId = 0) {
    if (newestEventId > this.newestCommitted) this.newestCommitted = newestEventId;
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.run();
    });
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
  }

  /**
   * The database refused a write (a full disk): events already committed wait in `events`
   * and are fanned out once it takes writes again, tried once a second, since intake may take
   * none meanwhile to wake the processor.
   */
  private writeFailed(err: unknown, what: string) {
    if (!isStorageFailure(err)) {
      this.log.error(what, { err });
      return;
    }
    if (this.storage.failed("processor", err)) this.log.error(`${what}; retrying every second until the database takes writes`, { err });
    this.retryTimer ??= setTimeout(() => {
      this.retryTimer = undefined;
      this.wake();
    }, 1000);
  }

  private wrote() {
    if (this.storage.recovered("processor")) this.log.info("the processor writes deliveries again");
  }

  /**
   * With no connection anywhere there is nothing to route: the cursor jumps to the
   * newest event and is saved at most once a second (re-reading a few events after a
   * crash routes nothing).
   */
  private skipAll() {
    // Intake is the only writer of events and reports every commit, so the table is asked
    // only until the first report (at start, for events committed before a restart).
    const max = this.newestCommitted || newestEventId(this.db.$client);
    if (max <= this.cursor) return;
    const now = this.now();
    if (now - this.cursorSavedAt >= 1000) {
      this.saveCursor.run(CURSOR, max);
      this.cursorSavedAt = now;
      this.wrote();
    }
    // Only after the save: if it failed, the retry saves again.
    this.cursor = max;
  }

  /** Processes everything committed so far, in slices so the loop stays responsive. */
  run() {
    if (this.stopped) return;
    if (this.config.snapshot().bySource.size === 0) {
      try {
        this.skipAll();
      } catch (err) {
        this.writeFailed(err, "processor could not advance its cursor");
      }
      return;
    }
    let rows: any[];
    try {
      rows = this.readEvents.all(this.cursor, BATCH) as any[];
    } catch (err) {
      this.log.error("processor could not read events", { err });
      return;
    }
    if (rows.length === 0) return;
    const snapshot = this.config.snapshot();
    const touched = new Set<string>();
    const now = this.now();
    const last = rows[rows.length - 1].id as number;
    try {
      this.db.$client.transaction(() => {
        for (const r of rows) {
          const connected = snapshot.bySource.get(r.sourceId);
          if (!connected?.length) continue;
          // Routing needs only the type and the integrations object.
          const payload = (this.readPayload.get(r.id) as { payload: string }).payload;
          const event = payload.includes('"integrations"') ? JSON.parse(payload) : { type: r.type };
          for (const d of routeEvent(event, connected)) {
            this.insertDelivery.run(r.id, d.id, r.sourceId, r.workspaceId, r.userKey, now, now, now);
            touched.add(d.id);
          }
        }
        this.saveCursor.run(CURSOR, last);
      }).immediate();
      this.cursorSavedAt = now;
    } catch (err) {
      this.writeFailed(err, "processor could not write deliveries");
      return;
    }
    this.wrote();
    this.cursor = last;
    if (touched.size) for (const fn of this.listeners) fn(touched);
    if (rows.length === BATCH) this.wake();
  }
}
