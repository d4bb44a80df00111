/**
 * The tracking-plan stage's counts between two flushes: violations per (source, UTC day, event,
 * violation type, property), dropped events per (source, day, event), and the newest dropped
 * events of each source. The stage adds to them per event (a map lookup, no I/O); a timer
 * flushes them to the store every few seconds and once more at shutdown, so the processor never
 * waits on these writes.
 *
 * Counts are added when the stage checks an event, before the processor commits its batch: a
 * batch whose write fails, or a partition lost in a cluster, is checked again and counted twice.
 * Counts are at least once, as deliveries are. A crash loses at most one interval's counts.
 */
import type { Logger } from "../lib/logger";
import { DROPPED_EVENTS_KEPT, type DroppedCount, type DroppedEventRow, type TrackingPlanCountsFlush, type TrackingPlanCountsStore, type ViolationCount } from "./store";
import type { Violation } from "./validate";

/** How often the counts are written. */
export const COUNTS_FLUSH_MS = 5_000;
/**
 * Distinct keys held in memory at most (violations and dropped together). Beyond, while the
 * database refuses the writes, new keys are lost and counted (`lost`), so memory stays bounded.
 */
const MAX_KEYS = 100_000;
/** Violations kept with a dropped event (an event with allErrors can have hundreds). */
const VIOLATIONS_PER_DROPPED_EVENT = 50;
/** A violation's message kept with a dropped event, at most this long. */
const MESSAGE_CHARS = 500;

const DAY_MS = 86_400_000;

/** The day a time falls on, UTC, as the count rows name it. */
export function utcDay(ms: number): string {
  return new Date(Math.floor(ms / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
}

/**
 * The property a violation is about, as a JSON pointer: Ajv's instancePath, with the missing
 * (Required-Missing) or unplanned (Additional-Properties) property appended; "" when it names
 * none (Unplanned-Event).
 */
export function violationProperty(v: Violation): string {
  const at = v.meta?.instancePath ?? "";
  return v.property ? `${at}/${v.property.replaceAll("~", "~0").replaceAll("/", "~1")}` : at;
}

const violationKey = (v: ViolationCount) => `${v.sourceId}\u0000${v.day}\u0000${v.type}\u0000${v.event}\u0000${v.violationType}\u0000${v.property}`;
const droppedKey = (d: DroppedCount) => `${d.sourceId}\u0000${d.day}\u0000${d.type}\u0000${d.event}`;

export class TrackingPlanCounts {
  private violations = new Map<string, ViolationCount>();
  private dropped = new Map<string, DroppedCount>();
  private droppedEvents = new Map<string, DroppedEventRow[]>();
  private dayNumber = Number.NaN;
  private dayText = "";
  /** Counts lost to the bound on keys since start (only while flushes fail). */
  lost = 0;

  constructor(private readonly now: () => number) {}

  get size(): number {
    return this.violations.size + this.dropped.size;
  }

  /** One checked event's violations, and its drop; `eventId`, for the list of dropped events. */
  add(sourceId: string, workspaceId: string, eventId: number, message: Record<string, unknown>, violations: readonly Violation[], drop?: { violationType: string; error: string }): void {
    if (violations.length === 0 && !drop) return;
    const at = this.now();
    const day = this.dayOf(at);
    const type = String(message.type);
    const event = type === "track" && typeof message.event === "string" ? message.event : "";
    for (const v of violations) this.addTo(this.violations, { workspaceId, sourceId, day, type, event, violationType: v.type, property: violationProperty(v), count: 1 }, violationKey);
    if (!drop) return;
    this.addTo(this.dropped, { workspaceId, sourceId, day, type, event, count: 1 }, droppedKey);
    let list = this.droppedEvents.get(sourceId);
    if (!list) this.droppedEvents.set(sourceId, (list = []));
    if (list.length >= DROPPED_EVENTS_KEPT) list.shift();
    list.push({
      workspaceId,
      sourceId,
      eventId,
      at,
      type,
      event,
      violationType: drop.violationType,
      error: drop.error,
      violations: violations.slice(0, VIOLATIONS_PER_DROPPED_EVENT).map((v) => ({ type: v.type, message: (v.message ?? "").slice(0, MESSAGE_CHARS), meta: v.meta, property: v.property ?? "" })),
    });
  }

  /** What is held, handed over for a flush (and forgotten here). */
  take(): TrackingPlanCountsFlush {
    const out: TrackingPlanCountsFlush = { violations: [...this.violations.values()], dropped: [...this.dropped.values()], droppedEvents: [...this.droppedEvents.values()].flat() };
    this.violations = new Map();
    this.dropped = new Map();
    this.droppedEvents = new Map();
    return out;
  }

  /** A flush that failed: its counts go back, to be written with the next one. */
  restore(flush: TrackingPlanCountsFlush): void {
    for (const v of flush.violations) this.addTo(this.violations, v, violationKey);
    for (const d of flush.dropped) this.addTo(this.dropped, d, droppedKey);
    for (const e of flush.droppedEvents) {
      let list = this.droppedEvents.get(e.sourceId);
      if (!list) this.droppedEvents.set(e.sourceId, (list = []));
      list.push(e);
    }
    // Older first, the newest DROPPED_EVENTS_KEPT of each source kept.
    for (const [id, list] of this.droppedEvents) {
      list.sort((a, b) => a.at - b.at);
      if (list.length > DROPPED_EVENTS_KEPT) this.droppedEvents.set(id, list.slice(-DROPPED_EVENTS_KEPT));
    }
  }

  /** Adds a count to its key's, or keeps it as the key's first; beyond MAX_KEYS keys, counts it lost. */
  private addTo<C extends { count: number }>(map: Map<string, C>, row: C, keyOf: (c: C) => string): void {
    const key = keyOf(row);
    const c = map.get(key);
    if (c) c.count += row.count;
    else if (this.size < MAX_KEYS) map.set(key, row);
    else this.lost += row.count;
  }

  private dayOf(ms: number): string {
    const n = Math.floor(ms / DAY_MS);
    if (n !== this.dayNumber) {
      this.dayNumber = n;
      this.dayText = utcDay(ms);
    }
    return this.dayText;
  }
}

/** Writes the counts every `flushMs`, and once more when stopped. */
export class TrackingPlanCountsWriter {
  private timer: Timer | undefined;
  private running: Promise<void> | undefined;
  private failing = false;

  constructor(
    private readonly counts: TrackingPlanCounts,
    private readonly store: Pick<TrackingPlanCountsStore, "addCounts">,
    private readonly log: Logger,
    private readonly flushMs = COUNTS_FLUSH_MS,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.flush(), this.flushMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /** Writes what is held now (after the flush in progress, if any). */
  async flush(): Promise<void> {
    while (this.running) await this.running;
    if (this.counts.size === 0) return;
    const batch = this.counts.take();
    this.running = (async () => {
      try {
        await this.store.addCounts(batch);
        if (this.failing) this.log.info("tracking-plan counts are saved again");
        this.failing = false;
      } catch (err) {
        this.counts.restore(batch);
        if (!this.failing) this.log.warn("tracking-plan counts could not be saved; kept in memory and tried again", { err });
        this.failing = true;
      }
    })();
    try {
      await this.running;
    } finally {
      this.running = undefined;
    }
  }
}
