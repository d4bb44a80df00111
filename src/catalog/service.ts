/** The catalog API's verbs: a source's event models, and one model with its draft schema. */
import type { SourceSettings } from "../../db/schema";
import type { AuthContext, Scoped } from "../control-plane/context";
import { findSourceRow } from "../control-plane/sources";
import { notFound } from "../lib/errors";
import { isValidatedEventType } from "../tracking-plans/validate";
import { draftJsonSchema } from "./draft";
import { daysFrom, firstDayKept } from "./merge";
import { type SourcePolicy, exampleAllowed } from "./observer";
import type { CatalogEvents, CatalogListQuery, CatalogModelDetail, CatalogModelQuery } from "./schemas";
import { type CatalogModelRow, type CatalogStore, JSON_TYPES, type PathStats } from "./store";

/** What the catalog API reads, behind the API's sign-in. */
export interface CatalogContext extends AuthContext {
  catalog: CatalogStore;
}

type Model = CatalogEvents["events"][number];

const iso = (ms: number) => new Date(ms).toISOString();

/** In JSON_TYPES order, whichever came first. */
function typeCounts(s: PathStats): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of JSON_TYPES) if (s.types[t]) out[t] = s.types[t]!;
  return out;
}

/** Examples shown as the source's settings say now (those kept before a change go at its next flush). */
function policyOf(settings: SourceSettings): SourcePolicy {
  return { examples: settings.catalogExamples !== false, personal: settings.catalogPersonalExamples === true, strictNames: true };
}

function present(row: CatalogModelRow, policy: SourcePolicy, now: number): Model {
  const properties: Model["properties"] = [];
  for (const path of Object.keys(row.paths).sort()) {
    const s = row.paths[path]!;
    const p: Model["properties"][number] = {
      path,
      types: typeCounts(s),
      present: row.sampled ? Math.round((s.present / row.sampled) * 10_000) / 10_000 : 0,
      firstSeen: iso(s.firstSeen),
      lastSeen: iso(s.lastSeen),
    };
    const examples = s.examples?.filter((x) => exampleAllowed(path, x, policy));
    if (examples?.length) p.examples = examples;
    properties.push(p);
  }
  return {
    type: row.type,
    event: row.event,
    count: row.count,
    firstSeen: iso(row.firstSeen),
    lastSeen: iso(row.lastSeen),
    daily: daysFrom(row.daily, firstDayKept(now)),
    sampled: row.sampled,
    properties,
    overflowPaths: row.overflowPaths,
  };
}

const ORDER: Record<NonNullable<CatalogListQuery["sort"]>, (a: CatalogModelRow, b: CatalogModelRow) => number> = {
  count: (a, b) => b.count - a.count,
  lastSeen: (a, b) => b.lastSeen - a.lastSeen,
  firstSeen: (a, b) => b.firstSeen - a.firstSeen,
  event: (a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : a.event < b.event ? -1 : a.event > b.event ? 1 : 0),
};

export async function listCatalogEvents(ctx: Scoped<CatalogContext>, query: CatalogListQuery): Promise<CatalogEvents> {
  const source = await findSourceRow(ctx, query.sourceId);
  const [rows, overflow] = await Promise.all([ctx.catalog.models(source.id), ctx.catalog.overflow(source.id)]);
  const search = query.search?.toLowerCase();
  const chosen = rows.filter((r) => (!query.type || r.type === query.type) && (!search || r.event.toLowerCase().includes(search)));
  // Ties (the same count) keep a stable order: by type and name.
  chosen.sort((a, b) => ORDER[query.sort ?? "count"](a, b) || ORDER.event(a, b));
  const policy = policyOf(source.settings ?? {});
  const now = ctx.now();
  return { sourceId: source.id, events: chosen.map((r) => present(r, policy, now)), overflow };
}

export async function getCatalogEvent(ctx: Scoped<CatalogContext>, type: string, query: CatalogModelQuery): Promise<CatalogModelDetail> {
  const source = await findSourceRow(ctx, query.sourceId);
  const event = query.event ?? "";
  const row = await ctx.catalog.model(source.id, type, event);
  if (!row) throw notFound(`no ${type} events${event ? ` named '${event}'` : ""} seen from source '${source.id}'`);
  return { ...present(row, policyOf(source.settings ?? {}), ctx.now()), jsonSchema: draftJsonSchema(row) };
}

/**
 * A tracking plan drafted from a source's traffic in one call: one planned event per model the
 * catalog holds (each track name, each other type), its rules the model's draft JSON Schema. The
 * answer is a plan JSON as POST /v2/tracking-plans takes it, not stored.
 */
export async function draftTrackingPlan(ctx: Scoped<CatalogContext>, sourceId: string) {
  const source = await findSourceRow(ctx, sourceId);
  const rows = (await ctx.catalog.models(source.id)).filter((r) => isValidatedEventType(r.type));
  rows.sort((a, b) => ORDER.event(a, b));
  return {
    name: `${source.name} draft`,
    version: 1,
    events: rows.map((r) => ({ name: r.type === "track" ? r.event : "", eventType: r.type, description: `Drafted from ${r.count} events seen ${new Date(r.firstSeen).toISOString().slice(0, 10)} to ${new Date(r.lastSeen).toISOString().slice(0, 10)}`, rules: draftJsonSchema(r) })),
  };
}
