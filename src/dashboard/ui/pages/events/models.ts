/**
 * What the event catalog page works out from a model: its markers ("new this week", "type
 * changed"), its days, and the API paths of a source's models. Pure, so the list and a model's
 * page agree.
 */
import type { CatalogModel, CatalogProperty } from "../../types";

const DAY = 86_400_000;
/** A model first seen within this long ago is new. */
export const NEW_WITHIN_MS = 7 * DAY;
/** The days the catalog keeps per model, and the chart shows. */
export const DAYS = 30;

export const SORTS = [
  { id: "count", label: "Most events" },
  { id: "lastSeen", label: "Last seen" },
  { id: "firstSeen", label: "New (first seen)" },
  { id: "event", label: "Name" },
] as const;
export type Sort = (typeof SORTS)[number]["id"];
export const isSort = (v: string | undefined): v is Sort => SORTS.some((s) => s.id === v);

export const isNew = (m: Pick<CatalogModel, "firstSeen">, now: number) => now - Date.parse(m.firstSeen) < NEW_WITHIN_MS;

/**
 * The JSON types a property held: `integer` counts as `number` (JSON has one number type, and a
 * price of 10 then 10.5 is no change).
 */
export function jsonTypes(types: CatalogProperty["types"]): string[] {
  const out: string[] = [];
  for (const [t, n] of Object.entries(types)) {
    const name = t === "integer" ? "number" : t;
    if (n > 0 && !out.includes(name)) out.push(name);
  }
  return out;
}

export const typeChanged = (p: Pick<CatalogProperty, "types">) => jsonTypes(p.types).length > 1;
export const modelTypeChanged = (m: Pick<CatalogModel, "properties">) => m.properties.some(typeChanged);

/** The UTC days (YYYY-MM-DD) of the last DAYS days, oldest first, today last. */
export function lastDays(now: number, days = DAYS): string[] {
  const out: string[] = [];
  for (let i = days - 1; i >= 0; i--) out.push(new Date(now - i * DAY).toISOString().slice(0, 10));
  return out;
}

export function listApiPath(sourceId: string, sort: Sort, search: string): string {
  const q = new URLSearchParams({ sourceId, sort });
  if (search) q.set("search", search);
  return `/v2/catalog/events?${q}`;
}

/** "42%", "0.25%", "99.9%" (never "100%" unless every sampled event had it): a share of sampled events. */
export function percent(share: number): string {
  const p = Math.round(share * 10_000) / 100;
  if (Number.isInteger(p)) return `${p}%`;
  return `${p < 1 ? p.toFixed(2) : Math.min(p, 99.9).toFixed(1)}%`;
}
