/**
 * The warehouse store on SQLite (design §2.1): the stager's and the load scheduler's statements
 * behind the seam (src/warehouse/store.ts), prepared once.
 *
 * Each call runs synchronously from start to commit on the main connection, so nothing else can
 * run in between; the promise it returns is already settled.
 *
 * A load's thread reads the staged rows through its own connection to the same file
 * (SqliteStagedReader, opened by load-worker.ts), with the query `readStaged` runs here, and
 * marks there the rows it loaded.
 */
import { Database, type Statement } from "bun:sqlite";
import type { Db } from "../../../db";
import type { LoadFinish, LoadRow, LoadedRows, NewLoad, NewStagedRow, StagedRow, StagedRowsReader, WarehouseStore } from "../../warehouse/store";
import { ColumnsCache, columnsHash, newLoadId } from "../../warehouse/store";

// `columns` is empty where `columns_id` names the text in warehouse_columns (rows staged before it carry it inline).
// Rows at or below the destination's highest loaded range were loaded (warehouse_loaded_ranges).
const READ_STAGED = `SELECT id, namespace, table_name AS tableName, columns, columns_id AS columnsId, row FROM warehouse_staged
  WHERE destination_id = ?1 AND load_id IS NULL
    AND id > max(?2, coalesce((SELECT max(to_id) FROM warehouse_loaded_ranges WHERE destination_id = ?1), 0))
  ORDER BY id LIMIT ?3`;
const COLUMNS_TEXT = `SELECT id, columns FROM warehouse_columns WHERE id IN (SELECT value FROM json_each(?))`;

type ReadRow = StagedRow & { columnsId: number | null };

/** The rows as a load reads them, each with its columns text. */
function withColumns(rows: ReadRow[], cache: ColumnsCache, text: Statement): Promise<StagedRow[]> {
  return cache.fill(rows, async (ids) => text.all(JSON.stringify(ids)) as Array<{ id: number; columns: string }>);
}

/**
 * Rows the load thread marks or purges per statement: about 5 ms of holding SQLite's write lock,
 * which intake's commits wait for meanwhile (a marked row is rewritten whole, about 4.5 µs here;
 * a purged one about 3 µs).
 */
const MARK_ROWS = 1_000;
// The ids as one JSON array (a chunk of MARK_ROWS of them), each found through the waiting index.
const MARK_IDS = `UPDATE warehouse_staged SET load_id = ? WHERE destination_id = ? AND load_id IS NULL AND id IN (SELECT value FROM json_each(?))
  AND namespace IN (SELECT value FROM json_each(?))`;
const MARK_RANGE = `INSERT INTO warehouse_loaded_ranges (destination_id, load_id, from_id, to_id) VALUES (?, ?, ?, ?)`;
// The destination's loads that finished before the cutoff: their rows go, by their own marks and
// by their ranges. A failed load's marked rows were loaded too.
const FINISHED_LOADS = `SELECT id FROM warehouse_loads WHERE destination_id = ? AND status IN ('succeeded', 'failed') AND finished_at < ?`;
const PURGE_MARKED = `DELETE FROM warehouse_staged WHERE id IN (SELECT id FROM warehouse_staged WHERE load_id IN (${FINISHED_LOADS}) LIMIT ${MARK_ROWS})`;
const RANGES_TO_PURGE = `SELECT id, from_id AS fromId, to_id AS toId FROM warehouse_loaded_ranges WHERE load_id IN (${FINISHED_LOADS}) ORDER BY to_id`;
// A row of the range with a load id of its own is another load's, and goes with it.
const PURGE_RANGE_ROWS = `DELETE FROM warehouse_staged WHERE id IN (SELECT id FROM warehouse_staged
  WHERE destination_id = ? AND load_id IS NULL AND id BETWEEN ? AND ? LIMIT ${MARK_ROWS})`;
const DELETE_RANGE = `DELETE FROM warehouse_loaded_ranges WHERE id = ?`;

const LOAD_COLUMNS = `id, workspace_id AS workspaceId, destination_id AS destinationId, status, trigger, attempt, due_at AS dueAt,
  created_at AS createdAt, started_at AS startedAt, finished_at AS finishedAt, rows, discards, error`;

type StatementName =
  | "stage"
  | "addColumns"
  | "columnsId"
  | "columnsText"
  | "insert"
  | "queuedFor"
  | "makeDue"
  | "due"
  | "nextDue"
  | "markRunning"
  | "finish"
  | "interrupted"
  | "list"
  | "readStaged"
  | "namespaces"
  | "deleteStaged"
  | "cancelQueued";

export class SqliteWarehouseStore implements WarehouseStore {
  private readonly s: Record<StatementName, Statement>;
  private readonly stageAll: (rows: NewStagedRow[], columnsIds: number[]) => void;
  private readonly columns = new ColumnsCache();
  private readonly finishAll: (f: LoadFinish) => void;
  private readonly failAll: (now: number, error: string) => number;

  constructor(db: Db) {
    const c = db.$client;
    this.s = {
      stage: c.prepare(
        `INSERT INTO warehouse_staged (destination_id, workspace_id, namespace, table_name, columns, columns_id, row, event_id, user_key, staged_at)
         VALUES (?, ?, ?, ?, '', ?, ?, ?, ?, ?)`,
      ),
      addColumns: c.prepare(`INSERT INTO warehouse_columns (hash, columns) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING`),
      columnsId: c.prepare(`SELECT id FROM warehouse_columns WHERE hash = ?`),
      columnsText: c.prepare(COLUMNS_TEXT),
      insert: c.prepare(
        `INSERT INTO warehouse_loads (id, workspace_id, destination_id, status, trigger, attempt, due_at, created_at) VALUES (?, ?, ?, 'queued', ?, ?, ?, ?)`,
      ),
      queuedFor: c.prepare(`SELECT id FROM warehouse_loads WHERE destination_id = ? AND status = 'queued' ORDER BY due_at LIMIT 1`),
      makeDue: c.prepare(`UPDATE warehouse_loads SET due_at = ? WHERE id = ? AND due_at > ?`),
      due: c.prepare(`SELECT ${LOAD_COLUMNS} FROM warehouse_loads WHERE status = 'queued' AND due_at <= ? ORDER BY due_at, id LIMIT ?`),
      nextDue: c.prepare(`SELECT MIN(due_at) AS at FROM warehouse_loads WHERE status = 'queued'`),
      markRunning: c.prepare(`UPDATE warehouse_loads SET status = 'running', started_at = ? WHERE id = ? AND status = 'queued'`),
      finish: c.prepare(`UPDATE warehouse_loads SET status = ?, finished_at = ?, rows = ?, discards = ?, error = ? WHERE id = ?`),
      interrupted: c.prepare(
        `UPDATE warehouse_loads SET status = 'failed', finished_at = ?, error = ?
          WHERE status = 'running' RETURNING destination_id AS destinationId, workspace_id AS workspaceId`,
      ),
      list: c.prepare(`SELECT ${LOAD_COLUMNS} FROM warehouse_loads WHERE destination_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`),
      readStaged: c.prepare(READ_STAGED),
      namespaces: c.prepare(`SELECT DISTINCT namespace FROM warehouse_staged WHERE destination_id = ?`),
      deleteStaged: c.prepare(`DELETE FROM warehouse_staged WHERE destination_id = ? AND user_key IN (SELECT value FROM json_each(?))`),
      cancelQueued: c.prepare(`UPDATE warehouse_loads SET status = 'failed', finished_at = ?, error = ? WHERE destination_id = ? AND status = 'queued'`),
    };
    const s = this.s;
    this.stageAll = c.transaction((rows: NewStagedRow[], columnsIds: number[]) => {
      rows.forEach((r, i) => s.stage.run(r.destinationId, r.workspaceId, r.namespace, r.tableName, columnsIds[i]!, r.row, r.eventId, r.userKey, r.stagedAt));
    }).immediate;
    this.finishAll = c.transaction((f: LoadFinish) => {
      s.finish.run(f.status, f.finishedAt, JSON.stringify(f.rows), f.discards, f.error, f.loadId);
      if (f.next) this.queue(f.next);
    });
    this.failAll = c.transaction((now: number, error: string) => {
      const interrupted = s.interrupted.all(now, error) as Array<{ destinationId: string; workspaceId: string }>;
      for (const l of interrupted) this.queue({ workspaceId: l.workspaceId, destinationId: l.destinationId, trigger: "retry", attempt: 1, dueAt: now, createdAt: now });
      return interrupted.length;
    });
  }

  async stage(rows: NewStagedRow[]): Promise<void> {
    if (rows.length) this.stageAll(rows, rows.map((r) => this.columnsIdOf(r.columns)));
  }

  /**
   * The id of a columns text in warehouse_columns, added if new. Committed on its own before the
   * rows that name it (a columns row nobody names is harmless), so the cache holds only ids that exist.
   */
  private columnsIdOf(columns: string): number {
    const known = this.columns.idOf(columns);
    if (known !== undefined) return known;
    const hash = columnsHash(columns);
    this.s.addColumns.run(hash, columns);
    const id = (this.s.columnsId.get(hash) as { id: number }).id;
    this.columns.remember(columns, id);
    return id;
  }

  async queueLoad(load: NewLoad): Promise<string> {
    return this.queue(load);
  }

  async failInterrupted(now: number, error: string): Promise<number> {
    return this.failAll(now, error);
  }

  async dueLoads(now: number, limit: number): Promise<LoadRow[]> {
    return this.s.due.all(now, limit) as LoadRow[];
  }

  async nextDueAt(): Promise<number | null> {
    return (this.s.nextDue.get() as { at: number | null } | null)?.at ?? null;
  }

  async startLoad(loadId: string, now: number): Promise<boolean> {
    return this.s.markRunning.run(now, loadId).changes > 0;
  }

  async finishLoad(finish: LoadFinish): Promise<void> {
    this.finishAll(finish);
  }

  async cancelQueued(destinationId: string, now: number, error: string): Promise<void> {
    this.s.cancelQueued.run(now, error, destinationId);
  }

  async listLoads(destinationId: string, limit: number): Promise<LoadRow[]> {
    return this.s.list.all(destinationId, limit) as LoadRow[];
  }

  async readStaged(destinationId: string, limit: number, afterId = 0): Promise<StagedRow[]> {
    return withColumns(this.s.readStaged.all(destinationId, afterId, limit) as ReadRow[], this.columns, this.s.columnsText);
  }

  async stagedNamespaces(destinationId: string): Promise<string[]> {
    return (this.s.namespaces.all(destinationId) as Array<{ namespace: string }>).map((r) => r.namespace);
  }

  async deleteStaged(destinationId: string, userKeys: string[]): Promise<void> {
    if (userKeys.length) this.s.deleteStaged.run(destinationId, JSON.stringify(userKeys));
  }

  /** Inside a transaction or alone: a queued load brought forward, else a new one. */
  private queue(load: NewLoad): string {
    const queued = this.s.queuedFor.get(load.destinationId) as { id: string } | null;
    if (queued) {
      this.s.makeDue.run(load.dueAt, queued.id, load.dueAt);
      return queued.id;
    }
    const id = newLoadId();
    this.s.insert.run(id, load.workspaceId, load.destinationId, load.trigger, load.attempt, load.dueAt, load.createdAt);
    return id;
  }
}

/**
 * Runs one statement (its own transaction) and answers a pause of `rest` times as long as it
 * took: intake's commits wait for SQLite's write lock while a statement holds it, and must find
 * it free often.
 */
function paced(statement: () => unknown, rest = 1): Promise<void> {
  const started = performance.now();
  statement();
  return Bun.sleep(Math.max(1, (performance.now() - started) * rest));
}

/** A purge holds the write lock a quarter of its time: it has hours of slack, a load has not. */
const PURGE_REST = 3;

/**
 * The load thread's connection to the data dir's file, opened once and kept while the thread
 * lives. WAL lets it read while intake writes. It writes only marks and purges, which on the
 * main thread took about 0.9 s of intake's time per 100,000 events loaded.
 */
export class SqliteStagedReader implements StagedRowsReader {
  private readonly db: Database;
  private readonly read: Statement;
  private readonly text: Statement;
  private readonly mark: Statement;
  private readonly markRange: Statement;
  private readonly purgeMarked: Statement;
  private readonly rangesToPurge: Statement;
  private readonly purgeRangeRows: Statement;
  private readonly deleteRange: Statement;
  private readonly columns = new ColumnsCache();

  constructor(file: string) {
    this.db = new Database(file, { readwrite: true, create: false });
    try {
      this.db.exec("PRAGMA busy_timeout = 5000");
      this.read = this.db.prepare(READ_STAGED);
      this.text = this.db.prepare(COLUMNS_TEXT);
      this.mark = this.db.prepare(MARK_IDS);
      this.markRange = this.db.prepare(MARK_RANGE);
      this.purgeMarked = this.db.prepare(PURGE_MARKED);
      this.rangesToPurge = this.db.prepare(RANGES_TO_PURGE);
      this.purgeRangeRows = this.db.prepare(PURGE_RANGE_ROWS);
      this.deleteRange = this.db.prepare(DELETE_RANGE);
    } catch (e) {
      this.db.close();
      throw e;
    }
  }

  async readStaged(destinationId: string, limit: number, afterId = 0): Promise<StagedRow[]> {
    return withColumns(this.read.all(destinationId, afterId, limit) as ReadRow[], this.columns, this.text);
  }

  /**
   * A page taken whole is one range row; otherwise the rows are marked MARK_ROWS at a time
   * (paced). Ids are read in order, so the page's range is from its first id to its last.
   */
  async markLoaded(loadId: string, destinationId: string, loaded: LoadedRows): Promise<void> {
    if (loaded.namespaces.length === 0 || loaded.ids.length === 0) return;
    if (loaded.whole) {
      this.markRange.run(destinationId, loadId, loaded.ids[0]!, loaded.ids.at(-1)!);
      return;
    }
    const namespaces = JSON.stringify(loaded.namespaces);
    for (let i = 0; i < loaded.ids.length; i += MARK_ROWS) {
      const pause = paced(() => this.mark.run(loadId, destinationId, JSON.stringify(loaded.ids.slice(i, i + MARK_ROWS)), namespaces));
      if (i + MARK_ROWS < loaded.ids.length) await pause;
    }
  }

  /** Rows marked one by one, then each range's rows and the range; MARK_ROWS at a time (paced slowly). */
  async purgeLoaded(destinationId: string, finishedBefore: number): Promise<void> {
    await this.deleteInChunks(() => this.purgeMarked.run(destinationId, finishedBefore).changes);
    const ranges = this.rangesToPurge.all(destinationId, finishedBefore) as Array<{ id: number; fromId: number; toId: number }>;
    for (const r of ranges) {
      await this.deleteInChunks(() => this.purgeRangeRows.run(destinationId, r.fromId, r.toId).changes);
      this.deleteRange.run(r.id);
    }
  }

  /** Runs `chunk` (paced for a purge) until it deletes fewer than MARK_ROWS. */
  private async deleteInChunks(chunk: () => number): Promise<void> {
    for (;;) {
      let deleted = 0;
      const pause = paced(() => (deleted = chunk()), PURGE_REST);
      if (deleted < MARK_ROWS) return;
      await pause;
    }
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
