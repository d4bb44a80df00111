/**
 * A tracking plan drafted from a source's traffic: one planned event per model of the event
 * catalog, each with the draft JSON Schema GET /v2/catalog/events/{type} gives it as its rules,
 * in the format RudderStack exports (`{name, version, events: [{name, eventType, description,
 * rules}]}`, a non-track event named ""). Nothing is stored: the plans page shows it to review
 * and add.
 */
import { api, catalogModelPath } from "../../api";
import type { CatalogEvents, CatalogModelDetail, Source } from "../../types";

/** Detail calls at once: a source may have hundreds of models. */
const AT_ONCE = 6;

export interface PlanDraft {
  sourceName: string;
  plan: { name: string; version: number; events: Array<{ name: string; eventType: string; description: string; rules: Record<string, unknown> }> };
}

export async function draftPlan(sourceId: string): Promise<PlanDraft> {
  const [source, list] = await Promise.all([
    api<Source>("GET", `/v2/sources/${encodeURIComponent(sourceId)}`),
    api<CatalogEvents>("GET", `/v2/catalog/events?${new URLSearchParams({ sourceId, sort: "event" })}`),
  ]);
  if (list.events.length === 0) throw new Error(`No events seen from ${source.name} yet: send some, then draft the plan again.`);
  const details: CatalogModelDetail[] = new Array(list.events.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < list.events.length; i = next++) {
      const m = list.events[i]!;
      details[i] = await api<CatalogModelDetail>("GET", catalogModelPath(sourceId, m.type, m.event));
    }
  };
  await Promise.all(Array.from({ length: Math.min(AT_ONCE, list.events.length) }, worker));
  return {
    sourceName: source.name,
    plan: {
      name: `${source.name} draft`,
      version: 1,
      events: details.map((d) => ({ name: d.type === "track" ? d.event : "", eventType: d.type, description: "", rules: d.jsonSchema })),
    },
  };
}
