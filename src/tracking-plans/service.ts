/**
 * Tracking plans in the control plane: plans as RudderStack exports them, kept with their
 * versions, and a source's plan settings (RudderStack's dgSourceTrackingPlanConfig).
 */
import { AppError, badRequest, notFound } from "../lib/errors";
import { newId } from "../lib/ids";
import type { ScopedContext } from "../control-plane/context";
import { findSourceRow } from "../control-plane/sources";
import { commit } from "../control-plane/config-store";
import { type CompiledTrackingPlan, compileTrackingPlan, parseTrackingPlan } from "./plan";
import { parseTrackingPlanSettings } from "./settings";
import { isValidatedEventType, validateEvent } from "./validate";
import type { CatalogStore } from "../catalog/store";
import type { PlanProblem, PlanVersionRow, TrackingPlanStore } from "./store";
import { utcDay } from "./violation-counts";

export interface TrackingPlanDeps {
  store: TrackingPlanStore;
  /** Called after a plan changes, so the processor validates against the new version. */
  changed?: () => void;
  /** The event catalog's models (what the report compares the plan with); absent with --catalog false. */
  catalog?: Pick<CatalogStore, "models">;
  /** Writes this instance's counts not yet written, so the report and the dropped list are current. */
  flushCounts?: () => Promise<void>;
}

/** How a plan is kept: the schemas that do not compile named, for the API's refusal or the file's mark. */
export function checkPlan(json: unknown): { name: string; id?: string; version?: number; problems: PlanProblem[]; compiled: CompiledTrackingPlan } {
  const plan = parseTrackingPlan(json);
  const compiled = compileTrackingPlan(plan);
  const problems = compiled.problems.map((p) => ({ event: p.eventName || p.eventType, message: p.message }));
  const version = typeof plan.version === "number" ? plan.version : typeof plan.version === "string" && /^\d+$/.test(plan.version) ? Number(plan.version) : undefined;
  return { name: plan.name || plan.id || "tracking plan", id: plan.id, version, problems, compiled };
}

function present(row: PlanVersionRow, name: string, currentVersion: number) {
  return { id: row.planId, name, version: row.version, currentVersion, problems: row.problems, createdAt: new Date(row.createdAt).toISOString(), plan: row.plan };
}

/**
 * Stores a plan (a new plan, or a new version of one with the same id). Its `version` is kept
 * when it names one; otherwise it is the next. A schema Ajv cannot compile (with RudderStack's
 * options) is refused with 400 naming the event, unless `keepBroken` (a workspace file's plan:
 * kept and marked, and at run time the events it governs pass unchecked, as in RudderStack).
 */
export async function putTrackingPlan(ctx: ScopedContext, deps: TrackingPlanDeps, json: unknown, opts: { keepBroken?: boolean } = {}) {
  const checked = checkPlan(json);
  if (checked.problems.length && !opts.keepBroken) {
    const first = checked.problems[0]!;
    throw badRequest(`plan.events: the schema of '${first.event}' does not compile: ${first.message}${checked.problems.length > 1 ? ` (and ${checked.problems.length - 1} more)` : ""}`);
  }
  const id = checked.id ?? newId("tp");
  const current = await deps.store.plan(ctx.workspaceId, id);
  const version = checked.version ?? (current ? current.currentVersion + 1 : 1);
  const existing = await deps.store.version(ctx.workspaceId, id, version);
  if (existing) {
    // The same version again (a workspace file applied at every start) is a no-op; another one under its number is a conflict.
    // Equal as JSON, key order aside: PostgreSQL's jsonb keeps its own order.
    if (Bun.deepEquals(existing.plan, json)) return present(existing, current!.name, current!.currentVersion);
    throw new AppError("CONFLICT", `version: plan '${id}' already has a version ${version} with other content; give the new one another version`);
  }
  const row: PlanVersionRow = { workspaceId: ctx.workspaceId, planId: id, version, plan: json as Record<string, unknown>, problems: checked.problems, createdAt: ctx.now() };
  await deps.store.addVersion(row, checked.name);
  deps.changed?.();
  const plan = await deps.store.plan(ctx.workspaceId, id);
  return present(row, plan!.name, plan!.currentVersion);
}

export async function getTrackingPlan(ctx: ScopedContext, deps: TrackingPlanDeps, id: string, version?: number) {
  const plan = await deps.store.plan(ctx.workspaceId, id);
  if (!plan) throw notFound(`tracking plan '${id}' not found`);
  const row = await deps.store.version(ctx.workspaceId, id, version);
  if (!row) throw notFound(`tracking plan '${id}' has no version ${version}`);
  return present(row, plan.name, plan.currentVersion);
}

export async function listTrackingPlans(ctx: ScopedContext, deps: TrackingPlanDeps) {
  const plans = await deps.store.plans(ctx.workspaceId);
  return plans.map((p) => ({ id: p.id, name: p.name, currentVersion: p.currentVersion, createdAt: new Date(p.createdAt).toISOString(), updatedAt: new Date(p.updatedAt).toISOString() }));
}

export async function listPlanVersions(ctx: ScopedContext, deps: TrackingPlanDeps, id: string) {
  if (!(await deps.store.plan(ctx.workspaceId, id))) throw notFound(`tracking plan '${id}' not found`);
  return (await deps.store.versions(ctx.workspaceId, id)).map((v) => ({ version: v.version, problems: v.problems, createdAt: new Date(v.createdAt).toISOString() }));
}

export async function deleteTrackingPlan(ctx: ScopedContext, deps: TrackingPlanDeps, id: string) {
  if (!(await deps.store.deletePlan(ctx.workspaceId, id))) throw notFound(`tracking plan '${id}' not found`);
  deps.changed?.();
}

/** A source's plan settings, as RudderStack's dgSourceTrackingPlanConfig; null clears them. */
export async function setSourceTrackingPlan(ctx: ScopedContext, deps: TrackingPlanDeps, sourceId: string, json: Record<string, unknown> | null) {
  const row = await findSourceRow(ctx, sourceId);
  if (json !== null) {
    const settings = parseTrackingPlanSettings(json);
    if (settings.planId && !(await deps.store.plan(ctx.workspaceId, settings.planId))) throw badRequest(`trackingPlan.id: no tracking plan '${settings.planId}' in this workspace`);
  }
  await commit(ctx, [{ op: "updateSource", id: row.id, set: { trackingPlanConfig: json, updatedAt: ctx.now() } }]);
  return { sourceId: row.id, dgSourceTrackingPlanConfig: json };
}

export async function getSourceTrackingPlan(ctx: ScopedContext, sourceId: string) {
  const row = await findSourceRow(ctx, sourceId);
  return { sourceId: row.id, dgSourceTrackingPlanConfig: row.trackingPlanConfig ?? null };
}

/** How many of a source's newest events a plan change is checked against, and among how many of all sources' newest events they are looked for. */
export const PREVIEW_EVENTS = 10_000;
const PREVIEW_WINDOW = 500_000;

/**
 * A plan change checked before it is saved: the source's newest stored events (up to 10,000)
 * validated against the plan given (or a stored version), with the source's settings (or those
 * given): how many would carry violations and how many would be dropped, by violation type and
 * by event. Nothing is stored.
 */
export async function previewTrackingPlan(ctx: ScopedContext, deps: TrackingPlanDeps, sourceId: string, body: { plan?: Record<string, unknown>; planId?: string; version?: number; settings?: Record<string, unknown> }) {
  const row = await findSourceRow(ctx, sourceId);
  let planJson = body.plan;
  if (!planJson) {
    if (!body.planId) throw badRequest("plan: give a plan JSON, or planId (and version) of a stored plan");
    const stored = await deps.store.version(ctx.workspaceId, body.planId, body.version);
    if (!stored) throw notFound(`tracking plan '${body.planId}'${body.version ? ` version ${body.version}` : ""} not found`);
    planJson = stored.plan;
  }
  const checked = checkPlan(planJson);
  const compiled = checked.compiled;
  const baseSettings = body.settings ?? row.trackingPlanConfig ?? { config: {} };
  // Whatever plan id and version the settings name, the events are checked against this plan.
  const version = checked.version ?? 1;
  const settings = parseTrackingPlanSettings({ ...baseSettings, trackingPlan: { id: checked.id ?? "preview", version } });
  const events = await ctx.stats.recentEvents(ctx.workspaceId, row.id, PREVIEW_EVENTS, PREVIEW_WINDOW);
  const byViolation: Record<string, number> = {};
  const byEvent = new Map<string, { type: string; event: string; checked: number; violating: number; dropped: number }>();
  let violating = 0;
  let dropped = 0;
  for (const payload of events) {
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(payload);
    } catch {
      continue;
    }
    // The stored copy may carry an earlier check's annotations; the plan is checked afresh.
    const context = message.context as Record<string, unknown> | undefined;
    if (context && typeof context === "object") delete context.violationErrors;
    const outcome = validateEvent({ message, settings, plan: compiled });
    const key = `${String(message.type)}\u0000${typeof message.event === "string" ? message.event : ""}`;
    let e = byEvent.get(key);
    if (!e) byEvent.set(key, (e = { type: String(message.type), event: typeof message.event === "string" ? message.event : "", checked: 0, violating: 0, dropped: 0 }));
    e.checked++;
    if (outcome.violations.length) {
      violating++;
      e.violating++;
      for (const v of outcome.violations) byViolation[v.type] = (byViolation[v.type] ?? 0) + 1;
    }
    if (outcome.dropped) {
      dropped++;
      e.dropped++;
    }
  }
  return {
    sourceId: row.id,
    checked: events.length,
    violating,
    dropped,
    byViolation,
    events: [...byEvent.values()].sort((a, b) => b.violating - a.violating || b.checked - a.checked),
    problems: checked.problems,
  };
}

/** Violation rows the report lists at most (most in the last 7 days first). */
const REPORT_VIOLATION_ROWS = 500;
const DAY_MS = 86_400_000;

/**
 * A source's plan against its traffic, side by side: planned events the catalog never saw,
 * events it saw that the plan does not name, and the violations counted by event, violation
 * type and property today (UTC) and over the last 7 UTC days, with the events dropped.
 */
export async function trackingPlanReport(ctx: ScopedContext, deps: TrackingPlanDeps, sourceId: string) {
  const row = await findSourceRow(ctx, sourceId);
  await deps.flushCounts?.();
  const now = ctx.now();
  const today = utcDay(now);
  const from = utcDay(now - 6 * DAY_MS);
  let settings;
  try {
    settings = row.trackingPlanConfig ? parseTrackingPlanSettings(row.trackingPlanConfig) : undefined;
  } catch {
    // Settings the processor cannot read either: no plan to compare, the counts still shown.
    settings = undefined;
  }
  const stored = settings?.planId ? await deps.store.version(ctx.workspaceId, settings.planId, settings.planVersion || undefined) : undefined;
  const planRow = stored ? await deps.store.plan(ctx.workspaceId, stored.planId) : undefined;
  const planned = stored ? parseTrackingPlan(stored.plan).events : [];
  const models = deps.catalog ? (await deps.catalog.models(row.id)).filter((m) => isValidatedEventType(m.type)) : [];

  const keyOf = (type: string, event: string) => `${type}\u0000${type === "track" ? event : ""}`;
  const seen = new Map(models.map((m) => [keyOf(m.type, m.event), m]));
  const plannedKeys = new Set(planned.map((e) => keyOf(e.eventType, e.name)));
  const plannedNotSeen = deps.catalog
    ? planned.filter((e) => !seen.has(keyOf(e.eventType, e.name))).map((e) => ({ type: e.eventType, event: e.eventType === "track" ? e.name : "", description: e.description ?? null }))
    : [];
  const seenNotPlanned = stored
    ? models
        .filter((m) => !plannedKeys.has(keyOf(m.type, m.event)))
        .sort((a, b) => b.count - a.count)
        .map((m) => ({ type: m.type, event: m.event, count: m.count, firstSeen: new Date(m.firstSeen).toISOString(), lastSeen: new Date(m.lastSeen).toISOString() }))
    : [];

  const [violationRows, droppedRows] = await Promise.all([deps.store.violationCounts(row.id, from), deps.store.droppedCounts(row.id, from)]);
  const violations = tallyDays(violationRows, today, (v) => `${v.type}\u0000${v.event}\u0000${v.violationType}\u0000${v.property}`, (v) => ({ type: v.type, event: v.event, violationType: v.violationType, property: v.property }));
  const dropped = tallyDays(droppedRows, today, (d) => `${d.type}\u0000${d.event}`, (d) => ({ type: d.type, event: d.event }));
  const byCount = (a: { today: number; last7Days: number }, b: { today: number; last7Days: number }) => b.last7Days - a.last7Days || b.today - a.today;
  const violationList = violations.sort(byCount);
  const sum = (list: Array<{ today: number; last7Days: number }>) => list.reduce((t, e) => ({ today: t.today + e.today, last7Days: t.last7Days + e.last7Days }), { today: 0, last7Days: 0 });
  return {
    sourceId: row.id,
    plan: stored ? { id: stored.planId, name: planRow?.name ?? stored.planId, version: stored.version, events: planned.length } : null,
    catalog: Boolean(deps.catalog),
    today,
    from,
    plannedNotSeen,
    seenNotPlanned,
    violations: violationList.slice(0, REPORT_VIOLATION_ROWS),
    violationRows: violationList.length,
    dropped: dropped.sort(byCount),
    totals: { violations: sum(violationList), dropped: sum(dropped) },
  };
}

/** Daily count rows summed per key over the 7 days read, and for `today` alone (days after it, from a clock ahead elsewhere, left out). */
function tallyDays<R extends { day: string; count: number }, E>(rows: readonly R[], today: string, keyOf: (r: R) => string, make: (r: R) => E): Array<E & { today: number; last7Days: number }> {
  const out = new Map<string, E & { today: number; last7Days: number }>();
  for (const r of rows) {
    if (r.day > today) continue;
    const key = keyOf(r);
    let e = out.get(key);
    if (!e) out.set(key, (e = { ...make(r), today: 0, last7Days: 0 }));
    e.last7Days += r.count;
    if (r.day === today) e.today += r.count;
  }
  return [...out.values()];
}

/** A source's newest dropped events (at most DROPPED_EVENTS_KEPT are kept), newest first, with the stored event. */
export async function listDroppedEvents(ctx: ScopedContext, deps: TrackingPlanDeps, sourceId: string, limit: number) {
  const row = await findSourceRow(ctx, sourceId);
  await deps.flushCounts?.();
  const rows = await deps.store.droppedEvents(row.id, limit);
  return rows.map((r) => ({
    eventId: r.eventId,
    at: new Date(r.at).toISOString(),
    type: r.type,
    event: r.event,
    violationType: r.violationType,
    error: r.error,
    violations: r.violations,
    payload: r.payload === null ? null : parseStored(r.payload),
  }));
}

function parseStored(payload: string): Record<string, unknown> | null {
  try {
    return JSON.parse(payload);
  } catch {
    return null;
  }
}
