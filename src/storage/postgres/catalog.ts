/**
 * The event catalog's store on PostgreSQL (cluster mode; src/catalog/store.ts). Every instance
 * reads the events of the partitions it holds and flushes its own deltas into the shared rows:
 *
 * - A flush locks its sources' `catalog_overflow` rows (made when missing), in source id order,
 *   before reading their models: two instances flushing the same source take turns, so their
 *   counts add up and the bound of models per source holds across them; the order keeps two
 *   flushes from deadlocking.
 * - The reader's position in a partition is a row of `cursors` named `catalog:<partition>`
 *   holding the id of the last event read; its (tx, id) position is that event's. Saved in the
 *   flush's transaction, under the partition's fence: an instance that lost the partition saves
 *   nothing for it (its new holder reads on from the last saved position).
 * - Events are read as the processor reads them: per partition after (tx, id), below the horizon.
 */
import type { SQL } from "bun";
import { fenceCte } from "../../cluster/leases";
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
import { type Cursors, type EventCursor, START_CURSOR } from "../../pipeline/store";
import { cursorArrays } from "./deliveries";

const HORIZON = "pg_snapshot_xmin(pg_current_snapshot())";
const NO_PATHS = JSON.stringify({ sampled: 0, paths: {} });
const COLUMNS = `m.workspace_id AS "workspaceId", m.source_id AS "sourceId", m.type, m.event, m.first_seen AS "firstSeen", m.last_seen AS "lastSeen", m.count, m.daily::text AS daily, m.overflow_paths AS "overflowPaths"`;

export interface PgCatalogStoreOptions {
  /** This instance's id: the owner its partition leases name. */
  instanceId: string;
}

function modelOf(r: any): CatalogModelRow {
  const doc = readPathsDocument(r.paths ?? NO_PATHS);
  return {
    workspaceId: r.workspaceId,
    sourceId: r.sourceId,
    type: r.type,
    event: r.event,
    firstSeen: Number(r.firstSeen),
    lastSeen: Number(r.lastSeen),
    count: Number(r.count),
    daily: JSON.parse(r.daily) as Record<string, number>,
    sampled: doc.sampled,
    paths: doc.paths,
    overflowPaths: Number(r.overflowPaths),
  };
}

export class PgCatalogStore implements CatalogStore {
  constructor(
    private readonly sql: SQL,
    private readonly opts: PgCatalogStoreOptions,
  ) {}

  async readCursors(partitions: readonly number[]): Promise<Map<number, EventCursor>> {
    const out = new Map<number, EventCursor>();
    if (partitions.length === 0) return out;
    // The saved event gone (retention took it: the catalog was stopped for longer than events
    // are kept) leaves its position unknown; it goes on from the processor's. A data dir moved
    // here by migrate-to-postgres brings SQLite's one `catalog` position, an event id among the
    // copied events (which share the copy's tx): it stands for every partition until one saves.
    const rows = await this.sql.unsafe(
      `SELECT c.p AS partition, coalesce(k.value, legacy.value) AS saved, e.tx::text AS tx, pc.tx::text AS "processorTx", pc.id AS "processorId"
         FROM unnest($1::smallint[]) AS c(p)
         LEFT JOIN cursors k ON k.name = 'catalog:' || c.p
         LEFT JOIN cursors legacy ON legacy.name = 'catalog'
         LEFT JOIN events e ON e.id = coalesce(k.value, legacy.value)
         LEFT JOIN processor_cursors pc ON pc.partition = c.p`,
      [[...partitions]],
    );
    for (const r of rows) {
      const p = Number(r.partition);
      if (r.saved === null || Number(r.saved) === 0) out.set(p, START_CURSOR);
      else if (r.tx !== null) out.set(p, { tx: r.tx as string, id: Number(r.saved) });
      else if (r.processorTx !== null) out.set(p, { tx: r.processorTx as string, id: Number(r.processorId) });
      else out.set(p, START_CURSOR);
    }
    return out;
  }

  async readEvents(cursors: Cursors, limit: number): Promise<CatalogBatch> {
    const next = new Map<number, EventCursor>();
    if (cursors.size === 0) return { events: [], next };
    const [parts, txs, ids] = cursorArrays(cursors);
    const rows = await this.sql.unsafe(
      `SELECT e.id, e.partition, e.source_id AS "sourceId", e.workspace_id AS "workspaceId", e.type, e.received_at AS "receivedAt", e.payload, e.tx::text AS tx
         FROM unnest($1::smallint[], $2::xid8[], $3::bigint[]) AS c(p, tx, id)
         CROSS JOIN LATERAL (
           SELECT * FROM events e
            WHERE e.partition = c.p AND (e.tx, e.id) > (c.tx, c.id) AND e.tx < ${HORIZON}
            ORDER BY e.tx, e.id
            LIMIT $4) e
        ORDER BY e.tx, e.id
        LIMIT $4`,
      [parts, txs, ids, limit],
    );
    const events: CatalogEvent[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i];
      const partition = Number(r.partition);
      events[i] = { id: Number(r.id), partition, sourceId: r.sourceId, workspaceId: r.workspaceId, type: r.type, receivedAt: Number(r.receivedAt), payload: r.payload };
      next.set(partition, { tx: r.tx as string, id: Number(r.id) });
    }
    return { events, next };
  }

  async flush(sources: FlushSource[], merge: (stored: StoredSource[]) => FlushWrite, cursors: Cursors, fences: readonly LeaseFence[]): Promise<void> {
    const ids = sources.map((s) => s.sourceId);
    const workspaces = sources.map((s) => s.workspaceId);
    await this.sql.begin(async (tx) => {
      // The sources' rows of catalog_overflow are their locks; made when missing, in id order.
      await tx.unsafe(
        `INSERT INTO catalog_overflow (source_id, workspace_id) SELECT s, w FROM unnest($1::text[], $2::text[]) AS x(s, w) ORDER BY s ON CONFLICT (source_id) DO NOTHING`,
        [ids, workspaces],
      );
      await tx.unsafe(`SELECT 1 FROM catalog_overflow WHERE source_id = ANY($1::text[]) ORDER BY source_id FOR UPDATE`, [ids]);
      const counts = new Map<string, number>();
      for (const r of await tx.unsafe(`SELECT source_id AS s, count(*)::int AS n FROM catalog_models WHERE source_id = ANY($1::text[]) GROUP BY source_id`, [ids])) {
        counts.set(r.s as string, Number(r.n));
      }
      const k = { s: [] as string[], t: [] as string[], e: [] as string[], p: [] as boolean[] };
      for (const s of sources) {
        for (const key of s.keys) {
          const [type, event] = key.split("\u0000") as [string, string];
          k.s.push(s.sourceId);
          k.t.push(type);
          k.e.push(event);
          k.p.push(s.pathKeys.has(key));
        }
      }
      const existing = k.s.length
        ? await tx.unsafe(
            // A flush that leaves a model's paths alone does not read them.
            `SELECT ${COLUMNS}, CASE WHEN k.p THEN m.paths::text END AS paths
               FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[]) AS k(s, t, e, p)
               JOIN catalog_models m ON m.source_id = k.s AND m.type = k.t AND m.event = k.e`,
            [k.s, k.t, k.e, k.p],
          )
        : [];
      const bySource = new Map<string, Map<string, CatalogModelRow>>();
      for (const r of existing) {
        const m = modelOf(r);
        let models = bySource.get(m.sourceId);
        if (!models) bySource.set(m.sourceId, (models = new Map()));
        models.set(modelKey(m.type, m.event), m);
      }
      const stored: StoredSource[] = sources.map((s) => ({ sourceId: s.sourceId, workspaceId: s.workspaceId, modelCount: counts.get(s.sourceId) ?? 0, models: bySource.get(s.sourceId) ?? new Map() }));
      const write = merge(stored);
      const pathKeys = new Map(sources.map((s) => [s.sourceId, s.pathKeys]));
      const full = write.models.filter((m) => pathKeys.get(m.sourceId)?.has(modelKey(m.type, m.event)));
      const countsOnly = write.models.filter((m) => !pathKeys.get(m.sourceId)?.has(modelKey(m.type, m.event)));
      if (full.length) await this.upsert(tx, full, true);
      if (countsOnly.length) await this.upsert(tx, countsOnly, false);
      if (write.overflow.length) {
        await tx.unsafe(
          `UPDATE catalog_overflow o SET models = o.models + x.m, events = o.events + x.e
             FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS x(s, m, e) WHERE o.source_id = x.s`,
          [write.overflow.map((o) => o.sourceId), write.overflow.map((o) => o.models), write.overflow.map((o) => o.events)],
        );
      }
      if (cursors.size && fences.length) {
        const f = fenceCte(this.opts.instanceId, fences);
        const p = f.nextParam;
        await tx.unsafe(
          `WITH ${f.text}
           INSERT INTO cursors (name, value)
           SELECT 'catalog:' || c.p, c.id FROM unnest($${p}::smallint[], $${p + 1}::bigint[]) AS c(p, id)
            WHERE c.p IN (SELECT partition FROM fence)
           ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
          [...f.params, [...cursors.keys()], [...cursors.values()].map((c) => c.id)],
        );
      }
    });
  }

  private async upsert(tx: SQL, rows: CatalogModelRow[], withPaths: boolean): Promise<void> {
    await tx.unsafe(
      `INSERT INTO catalog_models (workspace_id, source_id, type, event, first_seen, last_seen, count, daily, paths, overflow_paths)
       SELECT w, s, t, e, f, l, c, d::jsonb, p::jsonb, o
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[], $8::text[], $9::text[], $10::bigint[])
              AS x(w, s, t, e, f, l, c, d, p, o)
       ON CONFLICT (source_id, type, event) DO UPDATE SET first_seen = excluded.first_seen, last_seen = excluded.last_seen,
         count = excluded.count, daily = excluded.daily, overflow_paths = excluded.overflow_paths${withPaths ? ", paths = excluded.paths" : ""}`,
      [
        rows.map((m) => m.workspaceId),
        rows.map((m) => m.sourceId),
        rows.map((m) => m.type),
        rows.map((m) => m.event),
        rows.map((m) => m.firstSeen),
        rows.map((m) => m.lastSeen),
        rows.map((m) => m.count),
        rows.map((m) => JSON.stringify(m.daily)),
        rows.map((m) => (withPaths ? JSON.stringify({ sampled: m.sampled, paths: m.paths }) : NO_PATHS)),
        rows.map((m) => m.overflowPaths),
      ],
    );
  }

  async models(sourceId: string): Promise<CatalogModelRow[]> {
    const rows = await this.sql.unsafe(`SELECT ${COLUMNS}, m.paths::text AS paths FROM catalog_models m WHERE m.source_id = $1`, [sourceId]);
    return [...rows].map(modelOf);
  }

  async model(sourceId: string, type: string, event: string): Promise<CatalogModelRow | undefined> {
    const [r] = await this.sql.unsafe(`SELECT ${COLUMNS}, m.paths::text AS paths FROM catalog_models m WHERE m.source_id = $1 AND m.type = $2 AND m.event = $3`, [sourceId, type, event]);
    return r ? modelOf(r) : undefined;
  }

  async overflow(sourceId: string): Promise<SourceOverflow> {
    const [r] = await this.sql.unsafe(`SELECT models, events FROM catalog_overflow WHERE source_id = $1`, [sourceId]);
    return r ? { models: Number(r.models), events: Number(r.events) } : { models: 0, events: 0 };
  }
}
