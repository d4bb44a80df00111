/**
 * Tracking plans in the control plane: plans as RudderStack exports them, kept with their
 * versions, and a source's plan settings (RudderStack's dgSourceTrackingPlanConfig).
 */
import { AppError, badRequest, notFound } from "../lib/errors";
import { newId } from "../lib/ids";
import type { ScopedContext } from "../control-plane/context";
import { findSourceRow } from "../control-plane/sources";
import { commit } from "../control-plane/config-store";
import { compileTrackingPlan, parseTrackingPlan } from "./plan";
import { parseTrackingPlanSettings } from "./settings";
import type { PlanProblem, PlanVersionRow, TrackingPlanStore } from "./store";

export interface TrackingPlanDeps {
  store: TrackingPlanStore;
  /** Called after a plan changes, so the processor validates against the new version. */
  changed?: () => void;
}

/** How a plan is kept: the schemas that do not compile named, for the API's refusal or the file's mark. */
export function checkPlan(json: unknown): { name: string; id?: string; version?: number; problems: PlanProblem[] } {
  const plan = parseTrackingPlan(json);
  const compiled = compileTrackingPlan(plan);
  const problems = compiled.problems.map((p) => ({ event: p.eventName || p.eventType, message: p.message }));
  const version = typeof plan.version === "number" ? plan.version : typeof plan.version === "string" && /^\d+$/.test(plan.version) ? Number(plan.version) : undefined;
  return { name: plan.name || plan.id || "tracking plan", id: plan.id, version, problems };
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
    if (JSON.stringify(existing.plan) === JSON.stringify(json)) return present(existing, current!.name, current!.currentVersion);
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
