/**
 * The event catalog's store on SQLite (src/catalog/store.ts): prepared statements on the main
 * connection, a flush in one synchronous transaction. One partition (0), so fences are ignored;
 * the reader's position is the `catalog` row of `cursors`.
 */
import type { Database, Statement } from "bun:sqlite";
import { type Db, newestEventId } from "../../../db";
import type { LeaseFence } from "../../cluster/types";
import {
  type CatalogBatch,
  type CatalogEvent,
  type CatalogModelRow,
  type CatalogStore,
  type FlushSource,
  type FlushWrite,
  type SourceOverflow,
  type StoredSource,
  modelKey,
  readPathsDocument,
} from "../../catalog/store";
import type { Cursors, EventCursor } from "../../pipeline/store";
import { eventIdFloor } from "./deliveries";

const CURSOR = "catalog";
const NO_PATHS = JSON.stringify({ sampled: 0, paths: {} });
const COLUMNS = "workspace_id AS workspaceId, source_id AS sourceId, type, event, first_seen AS firstSeen, last_seen AS lastSeen, count, daily, paths, overflow_paths AS overflowPaths";

interface RawModel {
  workspaceId: string;
  sourceId: string;
  type: string;
  event: string;
  firstSeen: number;
  lastSeen: number;
  count: number;
  daily: string;
  paths: string | null;
  overflowPaths: number;
}

function modelOf(r: RawModel): CatalogModelRow {
  const doc = readPathsDocument(r.paths ?? NO_PATHS);
  return {
    workspaceId: r.workspaceId,
    sourceId: r.sourceId,
    type: r.type,
    event: r.event,
    firstSeen: r.firstSeen,
    lastSeen: r.lastSeen,
    count: r.count,
    daily: JSON.parse(r.daily) as Record<string, number>,
    sampled: doc.sampled,
    paths: doc.paths,
    overflowPaths: r.overflowPaths,
  };
}

export class SqliteCatalogStore implements CatalogStore {
  private readonly c: Database;
  private readonly readBatch: Statement;
  private readonly readModels: Statement;
  private readonly readModel: Statement;
  private readonly readModelNoPaths: Statement;
  private readonly countModels: Statement;
  private readonly readOverflow: Statement;
  private readonly commit: (sources: FlushSource[], merge: (stored: StoredSource[]) => FlushWrite, cursor: number | undefined) => void;

  constructor(db: Db) {
    const c = (this.c = db.$client);
    this.readBatch = c.prepare(
      "SELECT id, 0 AS partition, source_id AS sourceId, workspace_id AS workspaceId, type, received_at AS receivedAt, payload FROM events WHERE id > ? ORDER BY id LIMIT ?",
    );
    this.readModels = c.prepare(`SELECT ${COLUMNS} FROM catalog_models WHERE source_id = ?`);
    this.readModel = c.prepare(`SELECT ${COLUMNS} FROM catalog_models WHERE source_id = ? AND type = ? AND event = ?`);
    // A flush that leaves a model's paths alone does not read (or parse) them.
    this.readModelNoPaths = c.prepare(
      `SELECT ${COLUMNS.replace("paths,", "NULL AS paths,")} FROM catalog_models WHERE source_id = ? AND type = ? AND event = ?`,
    );
    this.countModels = c.prepare("SELECT count(*) AS n FROM catalog_models WHERE source_id = ?");
    this.readOverflow = c.prepare("SELECT models, events FROM catalog_overflow WHERE source_id = ?");
    const upsert = (withPaths: boolean) =>
      c.prepare(
        `INSERT INTO catalog_models (workspace_id, source_id, type, event, first_seen, last_seen, count, daily, paths, overflow_paths)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (source_id, type, event) DO UPDATE SET first_seen = excluded.first_seen, last_seen = excluded.last_seen,
           count = excluded.count, daily = excluded.daily, overflow_paths = excluded.overflow_paths${withPaths ? ", paths = excluded.paths" : ""}`,
      );
    const upsertFull = upsert(true);
    const upsertCounts = upsert(false);
    const addOverflow = c.prepare(
      `INSERT INTO catalog_overflow (source_id, workspace_id, models, events) VALUES (?, ?, ?, ?)
       ON CONFLICT (source_id) DO UPDATE SET models = models + excluded.models, events = events + excluded.events`,
    );
    const saveCursor = c.prepare("INSERT INTO cursors (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value");
    const { countModels, readModel, readModelNoPaths } = this;
    this.commit = c.transaction((sources: FlushSource[], merge: (stored: StoredSource[]) => FlushWrite, cursor: number | undefined) => {
      const stored: StoredSource[] = [];
      const withPaths = new Map<string, ReadonlySet<string>>();
      for (const s of sources) {
        const models = new Map<string, CatalogModelRow>();
        for (const key of s.keys) {
          const [type, event] = key.split("\u0000") as [string, string];
          const raw = (s.pathKeys.has(key) ? readModel : readModelNoPaths).get(s.sourceId, type, event) as RawModel | null;
          if (raw) models.set(key, modelOf(raw));
        }
        stored.push({ sourceId: s.sourceId, workspaceId: s.workspaceId, modelCount: (countModels.get(s.sourceId) as { n: number }).n, models });
        withPaths.set(s.sourceId, s.pathKeys);
      }
      const write = merge(stored);
      for (const m of write.models) {
        const full = withPaths.get(m.sourceId)?.has(modelKey(m.type, m.event)) ?? false;
        const paths = full ? JSON.stringify({ sampled: m.sampled, paths: m.paths }) : NO_PATHS;
        (full ? upsertFull : upsertCounts).run(m.workspaceId, m.sourceId, m.type, m.event, m.firstSeen, m.lastSeen, m.count, JSON.stringify(m.daily), paths, m.overflowPaths);
      }
      for (const o of write.overflow) addOverflow.run(o.sourceId, o.workspaceId, o.models, o.events);
      if (cursor !== undefined) saveCursor.run(CURSOR, cursor);
    }).immediate;
  }

  async readCursors(partitions: readonly number[]): Promise<Map<number, EventCursor>> {
    const out = new Map<number, EventCursor>();
    if (!partitions.includes(0)) return out;
    const saved = (this.c.query("SELECT value FROM cursors WHERE name = ?").get(CURSOR) as { value: number } | null)?.value ?? 0;
    // New events may take ids at or below a saved position only after everything above the
    // processor's cursor was deleted (an idle day's retention, then a restart): intake starts
    // its ids from the newest stored event or that floor, and the catalog must not skip them.
    const top = Math.max(newestEventId(this.c), eventIdFloor(this.c));
    out.set(0, { tx: "0", id: Math.min(saved, top) });
    return out;
  }

  async readEvents(cursors: Cursors, limit: number): Promise<CatalogBatch> {
    const cursor = cursors.get(0);
    const next = new Map<number, EventCursor>();
    if (!cursor) return { events: [], next };
    const events = this.readBatch.all(cursor.id, limit) as CatalogEvent[];
    if (events.length) next.set(0, { tx: "0", id: events[events.length - 1]!.id });
    return { events, next };
  }

  async flush(sources: FlushSource[], merge: (stored: StoredSource[]) => FlushWrite, cursors: Cursors, _fences: readonly LeaseFence[]): Promise<void> {
    this.commit(sources, merge, cursors.get(0)?.id);
  }

  async models(sourceId: string): Promise<CatalogModelRow[]> {
    return (this.readModels.all(sourceId) as RawModel[]).map(modelOf);
  }

  async model(sourceId: string, type: string, event: string): Promise<CatalogModelRow | undefined> {
    const raw = this.readModel.get(sourceId, type, event) as RawModel | null;
    return raw ? modelOf(raw) : undefined;
  }

  async overflow(sourceId: string): Promise<SourceOverflow> {
    return (this.readOverflow.get(sourceId) as SourceOverflow | null) ?? { models: 0, events: 0 };
  }
}
