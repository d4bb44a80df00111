/**
 * The processor's tracking-plan stage: after an event is committed and before it is fanned out
 * (rudder-server's processor does it at the same point), a source with a plan has each event
 * checked against it. The event is annotated (context.violationErrors, trackingPlanId,
 * trackingPlanVersion), and dropped when the source's settings say so: a dropped event gets no
 * deliveries, and is counted and shown with its violations.
 *
 * Violations and drops are counted in /metrics at once, and in the store's daily counts (with
 * the newest dropped events of each source) by a writer that flushes every few seconds
 * (violation-counts.ts): the stage itself never waits on those writes.
 *
 * Plans are read from the store by (workspace, id, version), compiled once and kept: a version
 * never changes. A version not found is asked again after a few seconds (another instance, or
 * the API, may add it).
 */
import type { Logger } from "../lib/logger";
import { Counter, type Metrics } from "../lib/metrics";
import { type CompiledTrackingPlan, compileTrackingPlan, parseTrackingPlan } from "./plan";
import { type TrackingPlanSettings, parseTrackingPlanSettings, planRefFor } from "./settings";
import type { TrackingPlanStore } from "./store";
import { type ContextFields, type TrackingPlanOutcome, applyContextFields, validateEvent } from "./validate";
import { TrackingPlanCounts, TrackingPlanCountsWriter } from "./violation-counts";

const MISSING_RETRY_MS = 5_000;
const LOAD = Symbol("load");

export interface StageResult {
  /** The annotated event as text, to store: an event with violations; undefined: stored as it is. */
  payload?: string;
  /**
   * A valid event's context fields as JSON, set on it when it is delivered (its deliveries carry
   * them): the stored event stays as it was sent, as rudder-server's gateway keeps it, and the
   * stage costs no write of the event. Undefined when the event is stored annotated or not at all.
   */
  annotation?: string;
  outcome: TrackingPlanOutcome;
  /** The annotated event (the dropped one is shown with its violations). */
  message: Record<string, unknown>;
}

export class TrackingPlanStage {
  private readonly plans = new Map<string, CompiledTrackingPlan | { missingUntil: number }>();
  /** A valid event's context fields as text, per plan version: the same for all its valid events. */
  private readonly validAnnotations = new Map<string, string>();
  private readonly settingsCache = new WeakMap<object, TrackingPlanSettings | null>();
  private readonly violations: Counter;
  private readonly dropped: Counter;
  /** Counts not yet written (violation-counts.ts); written by `writer`. */
  readonly counts: TrackingPlanCounts;
  private readonly writer: TrackingPlanCountsWriter;

  constructor(
    private readonly store: TrackingPlanStore,
    private readonly log: Logger,
    metrics: Metrics,
    private readonly now: () => number = Date.now,
    /** clock: what dates the counts (the server's clock, which tests may set); flushMs: how often they are written. */
    opts: { clock?: () => number; flushMs?: number } = {},
  ) {
    this.counts = new TrackingPlanCounts(opts.clock ?? now);
    this.writer = new TrackingPlanCountsWriter(this.counts, store, log, opts.flushMs);
    this.violations = metrics.register(new Counter("sluice_tracking_plan_violations_total", "Tracking-plan violations found in events, by source, event type and violation type."));
    this.dropped = metrics.register(new Counter("sluice_tracking_plan_dropped_total", "Events dropped by their source's tracking-plan settings (never delivered), by source."));
  }

  /** Starts writing the counts every few seconds. */
  start(): void {
    this.writer.start();
  }

  /** Stops the timer and writes what is counted (after the processor's last run). */
  stop(): Promise<void> {
    return this.writer.stop();
  }

  /** Writes the counts held now (tests, and a report that wants the latest). */
  flushCounts(): Promise<void> {
    return this.writer.flush();
  }

  /** The source's settings, parsed once per config snapshot object; null when none or unreadable. */
  settingsOf(config: Record<string, unknown> | undefined): TrackingPlanSettings | null {
    if (!config) return null;
    let s = this.settingsCache.get(config);
    if (s === undefined) {
      try {
        s = parseTrackingPlanSettings(config);
      } catch (err) {
        this.log.warn("tracking-plan settings unreadable: the source's events are not checked", { err });
        s = null;
      }
      this.settingsCache.set(config, s);
    }
    return s && s.planId ? s : null;
  }

  /** The compiled version when it is at hand; LOAD when the store must be asked. */
  private cachedPlan(key: string): CompiledTrackingPlan | undefined | typeof LOAD {
    const cached = this.plans.get(key);
    if (!cached) return LOAD;
    if (!("missingUntil" in cached)) return cached;
    return cached.missingUntil > this.now() ? undefined : LOAD;
  }

  private async loadPlan(key: string, workspaceId: string, id: string, version: number): Promise<CompiledTrackingPlan | undefined> {
    const row = await this.store.version(workspaceId, id, version);
    if (!row) {
      this.plans.set(key, { missingUntil: this.now() + MISSING_RETRY_MS });
      return undefined;
    }
    const compiled = compileTrackingPlan(parseTrackingPlan(row.plan));
    this.plans.set(key, compiled);
    return compiled;
  }

  private validAnnotation(fields: ContextFields): string {
    const key = `${fields.trackingPlanId}\u0000${fields.trackingPlanVersion}`;
    let text = this.validAnnotations.get(key);
    if (text === undefined) {
      text = JSON.stringify(fields);
      // Bounded: a plan id and version come from settings and from the event's own ruddertyper.
      if (this.validAnnotations.size >= 1_000) this.validAnnotations.clear();
      this.validAnnotations.set(key, text);
    }
    return text;
  }

  /** Compiles the plan version a source's settings name, before its first event needs it. */
  async prepare(workspaceId: string, settings: TrackingPlanSettings): Promise<void> {
    if (!settings.planVersion) return;
    const key = `${workspaceId}\u0000${settings.planId}\u0000${settings.planVersion}`;
    if (this.cachedPlan(key) === LOAD) await this.loadPlan(key, workspaceId, settings.planId, settings.planVersion);
  }

  /**
   * Checks one stored event of a source with a plan (settings from settingsOf). Synchronous once
   * the plan version is compiled: the processor calls it for every event of such a source, and a
   * promise per event was a measurable share of the stage's cost.
   */
  check(eventId: number, sourceId: string, workspaceId: string, settings: TrackingPlanSettings, payload: string): StageResult | Promise<StageResult> {
    const message = JSON.parse(payload) as Record<string, unknown>;
    const ref = planRefFor(settings, message);
    if (!ref.version) return this.apply(eventId, sourceId, workspaceId, settings, message, undefined);
    const key = `${workspaceId}\u0000${ref.id}\u0000${ref.version}`;
    const plan = this.cachedPlan(key);
    if (plan !== LOAD) return this.apply(eventId, sourceId, workspaceId, settings, message, plan);
    return this.loadPlan(key, workspaceId, ref.id, ref.version).then((loaded) => this.apply(eventId, sourceId, workspaceId, settings, message, loaded));
  }

  private apply(eventId: number, sourceId: string, workspaceId: string, settings: TrackingPlanSettings, message: Record<string, unknown>, plan: CompiledTrackingPlan | undefined): StageResult {
    const outcome = validateEvent({ message, settings, plan });
    for (const v of outcome.violations) this.violations.inc({ source: sourceId, type: String(message.type), violation: v.type });
    if (outcome.dropped) this.dropped.inc({ source: sourceId });
    if (outcome.violations.length || outcome.dropped) {
      this.counts.add(sourceId, workspaceId, eventId, message, outcome.violations, outcome.dropped ? { violationType: outcome.violationType, error: outcome.error ?? "" } : undefined);
    }
    if (!outcome.contextFields) return { outcome, message };
    if (!outcome.dropped && outcome.violations.length === 0) return { annotation: this.validAnnotation(outcome.contextFields), outcome, message };
    applyContextFields(message, outcome.contextFields);
    return { payload: JSON.stringify(message), outcome, message };
  }
}
