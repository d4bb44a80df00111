/**
 * The processor reads newly committed events by cursor and inserts one delivery
 * per (event, destination), advancing its cursor in the same transaction (one fanOut call
 * of the deliveries store). Intake stays one insert per event however many destinations
 * there are. It works every partition its instance holds (SQLite: the one partition) with one
 * read and one write per slice; a cursor per partition.
 */
import type { StageResult, TrackingPlanStage } from "../tracking-plans/stage";
import type { TrackingPlanSettings } from "../tracking-plans/settings";
import type { ConfigStore } from "../control-plane/config-store";
import type { Logger } from "../lib/logger";
import { isStorageFailure } from "../lib/storage-health";
import {
  type DeliveriesStore,
  type EventCursor,
  type NewDelivery,
  type PayloadRewrite,
  type StoredEvent,
  type PartitionWork,
  SINGLE_NODE_PARTITION,
  cursorAfter,
  fencesOf,
} from "./store";
import type { LiveEvents } from "./live-events";
import { dropReasonWith, routeSourceOf, sourceRoutingOf } from "./route";

const BATCH = 2000;

export class Processor {
  private scheduled = false;
  private cursorSavedAt = 0;
  /** Per held partition; read from the store when the partition is first worked (or gained again). */
  private cursors = new Map<number, EventCursor>();
  /** The newest event id known to be committed (intake reports each commit), or 0 to ask the table. */
  private newestCommitted = 0;
  private listeners: Array<(destinationIds: Set<string>) => void> = [];
  private stopped = false;
  /** Set while a run that could not write waits to try again (a full disk). */
  private retryTimer: Timer | undefined;
  /** Runs one at a time: the one in progress (or the last), and the one queued behind it. */
  private current: Promise<void> = Promise.resolve();
  private queued: Promise<void> | undefined;
  private live: LiveEvents | undefined;
  private trackingPlans: TrackingPlanStage | undefined;

  constructor(
    private store: DeliveriesStore,
    private config: ConfigStore,
    private log: Logger,
    private now: () => number,
    private work: PartitionWork = SINGLE_NODE_PARTITION,
  ) {}

  /** SQLite: the id of the newest event already routed (in memory; the saved cursor may lag by up to a second). */
  get routedUpTo(): number {
    return this.cursors.get(0)?.id ?? 0;
  }

  /** Called with the destinations that got new deliveries (the router's wake-up). */
  onDeliveries(fn: (destinationIds: Set<string>) => void) {
    this.listeners.push(fn);
  }

  /** Where deliveries filtered by routing (consent, an event list) are shown, as the router shows its outcomes. */
  useLiveEvents(live: LiveEvents) {
    this.live = live;
  }

  /** Checks the events of sources with a tracking plan before they are fanned out (src/tracking-plans/stage.ts). */
  useTrackingPlans(stage: TrackingPlanStage) {
    this.trackingPlans = stage;
  }

  /**
   * The tracking-plan stage for one event of a source with a plan: an event with violations is
   * stored annotated with its deliveries, a valid one's deliveries carry its annotation (set on
   * the event when delivered); true when its settings drop it (no deliveries; shown on the source's
   * live events with its violations, as RudderStack keeps it among its processing errors). A
   * kept event with violations is shown there too, checked: intake showed it before the check.
   */
  private checkPlan(r: StoredEvent, settings: TrackingPlanSettings, rewrites: PayloadRewrite[]): boolean | Promise<boolean> {
    let result: StageResult | Promise<StageResult>;
    try {
      result = this.trackingPlans!.check(r.id, r.sourceId, r.workspaceId, settings, r.payload!);
    } catch (err) {
      return this.planUnchecked(r, err);
    }
    // Synchronous once the plan is compiled: only a version's first event waits for the store.
    if (result instanceof Promise) return result.then((res) => this.planChecked(r, res, rewrites), (err) => this.planUnchecked(r, err));
    return this.planChecked(r, result, rewrites);
  }

  /** The plan store could not be read, or the check failed: the event goes on unchecked rather than stalling delivery. */
  private planUnchecked(r: StoredEvent, err: unknown): false {
    this.log.warn("tracking plan check failed: the event goes on unchecked", { err, source: r.sourceId, eventId: r.id });
    return false;
  }

  private planChecked(r: StoredEvent, result: StageResult, rewrites: PayloadRewrite[]): boolean {
    if (result.payload !== undefined) {
      r.payload = result.payload;
      rewrites.push({ eventId: r.id, partition: r.partition, payload: result.payload });
    }
    r.annotation = result.annotation;
    const { dropped, violations } = result.outcome;
    if (!dropped && violations.length === 0) return dropped;
    // Only while someone watches the source: the entry is built for them alone.
    const topic = `source:${r.sourceId}`;
    if (this.live?.hasSubscribers(topic)) {
      this.live.publish(topic, dropped
        ? { trackingPlanDropped: true, error: result.outcome.error, violationType: result.outcome.violationType, violations, event: result.message }
        : { trackingPlanChecked: true, violations, event: result.message });
    }
    return dropped;
  }

  /** Coalesces wake-ups: many commits in one turn of the loop cause one run. */
  wake(newestEventId = 0) {
    if (newestEventId > this.newestCommitted) this.newestCommitted = newestEventId;
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.run();
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
    if (this.store.health.failed("processor", err)) this.log.error(`${what}; retrying every second until the database takes writes`, { err });
    this.retryTimer ??= setTimeout(() => {
      this.retryTimer = undefined;
      this.wake();
    }, 1000);
  }

  private wrote() {
    if (this.store.health.recovered("processor")) this.log.info("the processor writes deliveries again");
  }

  /**
   * With no connection anywhere there is nothing to route: the cursors jump to the
   * newest events and are saved at most once a second (re-reading a few events after a
   * crash routes nothing).
   */
  private async skipAll(partitions: readonly number[]) {
    const newest = await this.store.newestCursors(partitions, this.newestCommitted);
    const moved = new Map<number, EventCursor>();
    for (const [p, c] of newest) {
      const cursor = this.cursors.get(p);
      if (cursor && cursorAfter(c, cursor)) moved.set(p, c);
    }
    if (moved.size === 0) return;
    const now = this.now();
    if (now - this.cursorSavedAt >= 1000) {
      // A partition whose lease is gone is not saved: its new holder goes on from the saved cursor.
      const saved = await this.store.saveCursors(fencesOf(this.work, moved.keys()), moved);
      this.cursorSavedAt = now;
      this.wrote();
      for (const p of moved.keys()) if (!saved.includes(p)) moved.delete(p);
    }
    // Only after the save: if it failed, the retry saves again.
    for (const [p, c] of moved) this.cursors.set(p, c);
  }

  /** The cursors of the partitions held now: a partition gained (again) is read from the store. */
  private async heldCursors(): Promise<Map<number, EventCursor>> {
    const held = this.work.partitions();
    const missing = held.filter((p) => !this.cursors.has(p));
    if (missing.length) for (const [p, c] of await this.store.readCursors(missing)) this.cursors.set(p, c);
    const heldSet = new Set(held);
    // A partition lost: another instance moves its cursor on; read it again if it comes back.
    for (const p of this.cursors.keys()) if (!heldSet.has(p)) this.cursors.delete(p);
    return new Map([...this.cursors].filter(([p]) => heldSet.has(p)));
  }

  /**
   * Processes one slice of what is committed so far (another follows at once when it was
   * full, so the loop stays responsive). Runs are serialized: a call made during a run resolves
   * after a run that started after the call, so a caller that awaits it (a deletion, shutdown)
   * knows every event committed before the call has been fanned out, up to one slice.
   */
  run(): Promise<void> {
    if (this.queued) return this.queued;
    const next = this.current.then(() => {
      this.queued = undefined;
      return this.runOnce().catch((err) => this.log.error("processor run failed", { err }));
    });
    this.queued = next;
    this.current = next;
    return next;
  }

  /** Shown on the destination's live stream like the router's outcomes (no attempt was made). */
  private publishFiltered(filtered: NewDelivery[], written: number[], now: number) {
    const live = this.live;
    if (!live) return;
    const at = new Date(now).toISOString();
    for (const f of filtered) {
      const topic = `destination:${f.destinationId}`;
      if (!written.includes(f.partition) || !live.hasSubscribers(topic)) continue;
      live.publish(topic, { eventId: f.eventId, userKey: f.userKey, state: "filtered", attempt: 0, status: null, response: null, error: f.filtered, at });
    }
  }

  private async runOnce() {
    if (this.stopped) return;
    let cursors: Map<number, EventCursor>;
    try {
      cursors = await this.heldCursors();
    } catch (err) {
      this.log.error("processor could not read its cursor", { err });
      return;
    }
    if (cursors.size === 0) return;
    if (this.config.snapshot().bySource.size === 0) {
      try {
        await this.skipAll([...cursors.keys()]);
      } catch (err) {
        this.writeFailed(err, "processor could not advance its cursor");
      }
      return;
    }
    // One snapshot for reading and routing: a source connected meanwhile counts from the next batch.
    const snapshot = this.config.snapshot();
    let batch;
    try {
      batch = await this.store.readEventsAfter(cursors, BATCH, snapshot.bySource);
    } catch (err) {
      this.log.error("processor could not read events", { err });
      return;
    }
    const rows = batch.events;
    if (rows.length === 0) return;
    const touched = new Set<string>();
    const deliveries: NewDelivery[] = [];
    const rewrites: PayloadRewrite[] = [];
    let filtered: NewDelivery[] | undefined;
    const now = this.now();
    for (const r of rows) {
      const connected = snapshot.bySource.get(r.sourceId);
      if (!connected?.length || r.payload === undefined) continue;
      const planSettings = this.trackingPlans?.settingsOf(snapshot.sources.get(r.sourceId)?.trackingPlanConfig);
      if (planSettings) {
        const dropped = this.checkPlan(r, planSettings, rewrites);
        if (dropped === true || (dropped !== false && (await dropped))) continue;
      }
      // Most events need only their type: the payload is parsed when it names integrations, or
      // when a connected destination has consent settings (and the event names consents) or an
      // event list (and the event is a track).
      const needs = sourceRoutingOf(connected);
      const parse =
        r.payload.includes('"integrations"') ||
        (needs.anyConsent && r.payload.includes('"consentManagement"')) ||
        (needs.anyEventList && r.type === "track");
      const event = parse ? JSON.parse(r.payload) : { type: r.type };
      const source = routeSourceOf(snapshot.sources.get(r.sourceId));
      for (let i = 0; i < connected.length; i++) {
        const d = connected[i]!;
        const drop = dropReasonWith(event, d, needs.routings[i]!, source);
        if (drop && !drop.counted) continue;
        const delivery: NewDelivery = { eventId: r.id, partition: r.partition, destinationId: d.id, sourceId: r.sourceId, workspaceId: r.workspaceId, userKey: r.userKey, annotation: r.annotation };
        if (drop) {
          delivery.filtered = `filtered: ${drop.reason}`;
          (filtered ??= []).push(delivery);
        } else touched.add(d.id);
        deliveries.push(delivery);
      }
    }
    let written: number[];
    try {
      // A partition whose lease is gone (or was taken over) is not written: its new holder fans
      // its events out from the saved cursor.
      written = await this.store.fanOut(fencesOf(this.work, batch.next.keys()), deliveries, batch.next, now, rewrites);
      this.cursorSavedAt = now;
    } catch (err) {
      this.writeFailed(err, "processor could not write deliveries");
      return;
    }
    this.wrote();
    for (const p of written) this.cursors.set(p, batch.next.get(p)!);
    if (written.length < batch.next.size) for (const p of batch.next.keys()) if (!written.includes(p)) this.cursors.delete(p);
    if (touched.size) for (const fn of this.listeners) fn(touched);
    if (filtered) this.publishFiltered(filtered, written, now);
    if (rows.length === BATCH) this.wake();
  }
}
