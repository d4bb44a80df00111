/**
 * The event catalog's storage seam: its own read of the committed events (a cursor per
 * partition, apart from the processor's) and its bounded rows in `catalog_models` and
 * `catalog_overflow`. SQLite (src/storage/sqlite/catalog.ts) and PostgreSQL
 * (src/storage/postgres/catalog.ts) implement it.
 *
 * A flush is one transaction: the store locks the sources it is handed, reads their rows,
 * hands them to the caller's `merge` (pure, src/catalog/merge.ts) and writes what it answers,
 * then saves the reader's cursors. So deltas of several instances (each reading its partitions)
 * add up, the bound of models per source holds across them, and a crash loses a delta and its
 * cursor together: the events are read again.
 */
import type { LeaseFence } from "../cluster/types";
import type { Cursors, EventCursor } from "../pipeline/store";

/** The JSON types the catalog tells apart; `integer` is a number without a fraction. */
export type JsonType = "string" | "integer" | "number" | "boolean" | "null" | "object" | "array";
export const JSON_TYPES: readonly JsonType[] = ["string", "integer", "number", "boolean", "null", "object", "array"];

export type Example = string | number | boolean;

/** One property path of a model, over its sampled events. */
export interface PathStats {
  /** Sampled events in which the path held a value of that type (an event may count under two). */
  types: Partial<Record<JsonType, number>>;
  /** Sampled events in which the path was present. */
  present: number;
  /** Up to 3 distinct values, short; absent when the source keeps none or the path looks personal. */
  examples?: Example[];
  /** receivedAt (ms) of the first and last sampled event that had it. */
  firstSeen: number;
  lastSeen: number;
}

/** A row of catalog_models, JSON columns read. */
export interface CatalogModelRow {
  workspaceId: string;
  sourceId: string;
  type: string;
  /** The track event's name; "" for every other type (one model per type, as tracking plans key them). */
  event: string;
  firstSeen: number;
  lastSeen: number;
  count: number;
  /** {"YYYY-MM-DD" (UTC): events}, the last 30 days. */
  daily: Record<string, number>;
  /** Events whose properties were read (the denominator of `present` and of the type counts). */
  sampled: number;
  paths: Record<string, PathStats>;
  /** Path occurrences beyond the bound of paths per model: counted, not kept. */
  overflowPaths: number;
}

/** The `paths` column: the sampled count travels with the paths it counts. */
export interface PathsDocument {
  sampled: number;
  paths: Record<string, PathStats>;
}

export interface SourceOverflow {
  /** Distinct (type, event) pairs refused by the bound of models per source. */
  models: number;
  /** Events of those pairs. */
  events: number;
}

/** A committed event as the catalog reads it. */
export interface CatalogEvent {
  id: number;
  partition: number;
  sourceId: string;
  workspaceId: string;
  type: string;
  receivedAt: number;
  payload: string;
}

export interface CatalogBatch {
  /** In cursor order; one partition's events are a prefix of what it has after its cursor. */
  events: CatalogEvent[];
  /** The position after each partition's last event in the batch; partitions without one are absent. */
  next: Map<number, EventCursor>;
}

/** What a flush reads of one source inside its transaction, for the merge to decide. */
export interface StoredSource {
  sourceId: string;
  workspaceId: string;
  /** Models the source has now (the bound counts them). */
  modelCount: number;
  /** The source's existing rows among the keys asked for, by modelKey. */
  models: Map<string, CatalogModelRow>;
}

/** What a flush writes: whole rows (inserted or replaced) and overflow increments. */
export interface FlushWrite {
  models: CatalogModelRow[];
  overflow: Array<{ sourceId: string; workspaceId: string; models: number; events: number }>;
}

export interface FlushSource {
  sourceId: string;
  workspaceId: string;
  /** modelKey()s of the models the delta touches. */
  keys: string[];
  /**
   * Of `keys`, those whose paths this flush reads and writes; the others' counts are written and
   * their stored paths left as they are (a model's paths may be large, and change little).
   */
  pathKeys: ReadonlySet<string>;
}

export interface CatalogStore {
  /** The reader's saved position in each partition (the start when it never ran). */
  readCursors(partitions: readonly number[]): Promise<Map<number, EventCursor>>;
  /**
   * Up to `limit` committed events after the cursors, of every source, payloads included.
   * PostgreSQL returns only events below the horizon, as the processor reads them.
   */
  readEvents(cursors: Cursors, limit: number): Promise<CatalogBatch>;
  /**
   * One transaction: locks the sources (in id order, so instances never deadlock), reads their
   * model count and the rows of `keys`, writes what `merge` answers, and saves the cursors of
   * the partitions whose fence still holds.
   */
  flush(sources: FlushSource[], merge: (stored: StoredSource[]) => FlushWrite, cursors: Cursors, fences: readonly LeaseFence[]): Promise<void>;
  /** Every model of a source. */
  models(sourceId: string): Promise<CatalogModelRow[]>;
  /** One model, or undefined. */
  model(sourceId: string, type: string, event: string): Promise<CatalogModelRow | undefined>;
  overflow(sourceId: string): Promise<SourceOverflow>;
}

/** The key of a model in maps: a NUL never occurs in a type. */
export function modelKey(type: string, event: string): string {
  return `${type}\u0000${event}`;
}

/** The `paths` column as stored (text on SQLite, jsonb on PostgreSQL), read; a row made before any sample has none. */
export function readPathsDocument(raw: unknown): PathsDocument {
  const doc = (typeof raw === "string" ? JSON.parse(raw) : raw) as Partial<PathsDocument> | null;
  return { sampled: Number(doc?.sampled ?? 0), paths: doc?.paths ?? {} };
}
