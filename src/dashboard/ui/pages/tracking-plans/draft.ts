/**
 * A tracking plan drafted from a source's traffic in one call (GET /v2/catalog/tracking-plan-draft):
 * one planned event per model of the event catalog with its draft JSON Schema as its rules, in the
 * format RudderStack exports (`{name, version, events: [{name, eventType, description, rules}]}`,
 * a non-track event named ""). Nothing is stored: the plans page shows it to review and add.
 */
import { api } from "../../api";
import type { Source } from "../../types";

export interface PlanDraft {
  sourceName: string;
  plan: { name: string; version: number; events: Array<{ name: string; eventType: string; description: string; rules: Record<string, unknown> }> };
}

export async function draftPlan(sourceId: string): Promise<PlanDraft> {
  const [source, plan] = await Promise.all([
    api<Source>("GET", `/v2/sources/${encodeURIComponent(sourceId)}`),
    api<PlanDraft["plan"]>("GET", `/v2/catalog/tracking-plan-draft?${new URLSearchParams({ sourceId })}`),
  ]);
  if (plan.events.length === 0) throw new Error(`No events seen from ${source.name} yet: send some, then draft the plan again.`);
  return { sourceName: source.name, plan };
}
