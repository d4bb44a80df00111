/**
 * The warehouse store on PostgreSQL (cluster mode, design §2.1 and §3.8): the same interface and
 * answers as the SQLite store, on the pg schema (db/pg/schema/warehouse.ts), through Bun.sql.
 *
 * What differs from SQLite, and why:
 * - Ids of concurrent writers commit out of order (identity values are taken before commit), so
 *   a load marks the exact staged ids it read, never "waiting rows up to its last id": a row
 *   committed late below that id was not read and must wait for the next load.
 * - More than one instance may call at once. Queueing takes a per-destination advisory lock and
 *   the queued row's lock, so two instances never queue two loads for one destination; starting
 *   a load is a conditional update (only one caller gets it); rows are marked only while still
 *   waiting, so a second marking of the same ids changes nothing.
 * - Staging is one `INSERT … SELECT FROM unnest(arrays)`: one round trip for the whole pass.
 * - The load thread reads staged rows through a connection of its own (PgStagedReader).
 */
import { SQL } from "bun";
import type { PgDb } from "../../../db/pg";
import type { LoadFinish, LoadRow, LoadStatus, LoadedRows, NewLoad, NewStagedRow, StagedRow, StagedRowsReader, WarehouseStore } from "../../warehouse/store";
import { ColumnsCache, columnsHash, newLoadId } from "../../warehouse/store";

/** The advisory lock's first key for queueing loads ("SLWh"); the second is a hash of the destination id. */
const QUEUE_LOCK_CLASS = 0x534c5768;

// `columns` is empty where `columns_id` names the text in warehouse_columns (see the SQLite store).
const READ_STAGED = `SELECT id, namespace, table_name, columns, columns_id, row FROM warehouse_staged
  WHERE destination_id = $1 AND load_id IS NULL AND id > $3 ORDER BY id LIMIT $2`;

const LOAD_COLUMNS = `id, workspace_id, destination_id, status, trigger, attempt, due_at, created_at, started_at, finished_at, rows, discards, error`;

interface PgLoadRow {
  id: string;
  workspace_id: string;
  destination_id: string;
  status: string;
  trigger: string;
  attempt: number;
  due_at: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  rows: string | null;
  discards: number | null;
  error: string | null;
}

const msOrNull = (v: string | number | null) => (v === null ? null : Number(v));

// Bun.sql answers bigint columns as strings; the schema keeps times in ms, well inside 2^53.
function loadRow(r: PgLoadRow): LoadRow {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    destinationId: r.destination_id,
    status: r.status as LoadStatus,
    trigger: r.trigger,
    attempt: r.attempt,
    dueAt: Number(r.due_at),
    createdAt: Number(r.created_at),
    startedAt: msOrNull(r.started_at),
    finishedAt: msOrNull(r.finished_at),
    rows: r.rows,
    discards: r.discards,
    error: r.error,
  };
}

export class PgWarehouseStore implements WarehouseStore {
  private readonly sql: SQL;
  private readonly columns = new ColumnsCache();

  constructor(db: PgDb) {
    this.sql = db.$client;
  }

  async stage(rows: NewStagedRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.learnColumns(rows.map((r) => r.columns));
    const n = rows.length;
    const cols = {
      destinationId: new Array<string>(n),
      workspaceId: new Array<string>(n),
      namespace: new Array<string>(n),
      tableName: new Array<string>(n),
      columnsId: new Array<number>(n),
      row: new Array<string>(n),
      eventId: new Array<string>(n),
      userKey: new Array<string>(n),
      stagedAt: new Array<number>(n),
    };
    rows.forEach((r, i) => {
      cols.destinationId[i] = r.destinationId;
      cols.workspaceId[i] = r.workspaceId;
      cols.namespace[i] = r.namespace;
      cols.tableName[i] = r.tableName;
      cols.columnsId[i] = this.columns.idOf(r.columns)!;
      cols.row[i] = r.row;
      cols.eventId[i] = r.eventId;
      cols.userKey[i] = r.userKey;
      cols.stagedAt[i] = r.stagedAt;
    });
    // One statement is one transaction: all rows or none.
    await this.sql.unsafe(
      `INSERT INTO warehouse_staged (destination_id, workspace_id, namespace, table_name, columns, columns_id, row, event_id, user_key, staged_at)
       SELECT d, w, ns, t, '', c, r, e, u, s FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::bigint[])
         AS x(d, w, ns, t, c, r, e, u, s)`,
      [cols.destinationId, cols.workspaceId, cols.namespace, cols.tableName, cols.columnsId, cols.row, cols.eventId, cols.userKey, cols.stagedAt],
    );
  }

  /**
   * Adds the columns texts warehouse_columns lacks and learns every id: committed before the
   * rows that name them (a columns row nobody names is harmless). Another instance may add the
   * same text at once; the hash's key keeps one.
   */
  private async learnColumns(texts: string[]): Promise<void> {
    const unknown = [...new Set(texts.filter((t) => this.columns.idOf(t) === undefined))];
    if (unknown.length === 0) return;
    const hashes = unknown.map(columnsHash);
    await this.sql.unsafe(`INSERT INTO warehouse_columns (hash, columns) SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT (hash) DO NOTHING`, [hashes, unknown]);
    const found = (await this.sql.unsafe(`SELECT id, hash FROM warehouse_columns WHERE hash = ANY($1::text[])`, [hashes])) as Array<{ id: string; hash: string }>;
    const ids = new Map(found.map((r) => [r.hash, Number(r.id)]));
    unknown.forEach((t, i) => this.columns.remember(t, ids.get(hashes[i]!)!));
  }

  async queueLoad(load: NewLoad): Promise<string> {
    return this.sql.begin((tx) => queueIn(tx, load));
  }

  async failInterrupted(now: number, error: string): Promise<number> {
    return this.sql.begin(async (tx) => {
      const interrupted = (await tx.unsafe(
        `UPDATE warehouse_loads SET status = 'failed', finished_at = $1, error = $2 WHERE status = 'running'
          RETURNING destination_id, workspace_id`,
        [now, error],
      )) as Array<{ destination_id: string; workspace_id: string }>;
      const byDestination = new Map(interrupted.map((l) => [l.destination_id, l.workspace_id]));
      // In a fixed order: each queueing takes its destination's advisory lock.
      for (const destinationId of [...byDestination.keys()].sort()) {
        await queueIn(tx, { workspaceId: byDestination.get(destinationId)!, destinationId, trigger: "retry", attempt: 1, dueAt: now, createdAt: now });
      }
      return interrupted.length;
    });
  }

  async dueLoads(now: number, limit: number): Promise<LoadRow[]> {
    const rows = (await this.sql.unsafe(
      `SELECT ${LOAD_COLUMNS} FROM warehouse_loads WHERE status = 'queued' AND due_at <= $1 ORDER BY due_at, id LIMIT $2`,
      [now, limit],
    )) as PgLoadRow[];
    return rows.map(loadRow);
  }

  async nextDueAt(): Promise<number | null> {
    const [r] = (await this.sql.unsafe(`SELECT MIN(due_at) AS at FROM warehouse_loads WHERE status = 'queued'`)) as Array<{ at: string | null }>;
    return msOrNull(r?.at ?? null);
  }

  async startLoad(loadId: string, now: number): Promise<boolean> {
    const rows = await this.sql.unsafe(`UPDATE warehouse_loads SET status = 'running', started_at = $1 WHERE id = $2 AND status = 'queued' RETURNING id`, [now, loadId]);
    return rows.length > 0;
  }

  async finishLoad(f: LoadFinish): Promise<void> {
    await this.sql.begin(async (tx) => {
      await tx.unsafe(`UPDATE warehouse_loads SET status = $1, finished_at = $2, rows = $3, discards = $4, error = $5 WHERE id = $6`, [
        f.status,
        f.finishedAt,
        JSON.stringify(f.rows),
        f.discards,
        f.error,
        f.loadId,
      ]);
      if (f.next) await queueIn(tx, f.next);
    });
  }

  async cancelQueued(destinationId: string, now: number, error: string): Promise<void> {
    await this.sql.unsafe(`UPDATE warehouse_loads SET status = 'failed', finished_at = $1, error = $2 WHERE destination_id = $3 AND status = 'queued'`, [
      now,
      error,
      destinationId,
    ]);
  }

  async listLoads(destinationId: string, limit: number): Promise<LoadRow[]> {
    const rows = (await this.sql.unsafe(
      `SELECT ${LOAD_COLUMNS} FROM warehouse_loads WHERE destination_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`,
      [destinationId, limit],
    )) as PgLoadRow[];
    return rows.map(loadRow);
  }

  async readStaged(destinationId: string, limit: number, afterId = 0): Promise<StagedRow[]> {
    return readStagedIn(this.sql, this.columns, destinationId, limit, afterId);
  }

  async stagedNamespaces(destinationId: string): Promise<string[]> {
    const rows = (await this.sql.unsafe(`SELECT DISTINCT namespace FROM warehouse_staged WHERE destination_id = $1`, [destinationId])) as Array<{ namespace: string }>;
    return rows.map((r) => r.namespace);
  }

  async deleteStaged(destinationId: string, userKeys: string[]): Promise<void> {
    if (userKeys.length === 0) return;
    await this.sql.unsafe(`DELETE FROM warehouse_staged WHERE destination_id = $1 AND user_key = ANY($2::text[])`, [destinationId, userKeys]);
  }
}

async function readStagedIn(sql: SQL, cache: ColumnsCache, destinationId: string, limit: number, afterId: number): Promise<StagedRow[]> {
  const rows = (await sql.unsafe(READ_STAGED, [destinationId, limit, afterId])) as Array<{
    id: string;
    namespace: string;
    table_name: string;
    columns: string;
    columns_id: string | null;
    row: string;
  }>;
  const read = rows.map((r) => ({
    id: Number(r.id),
    namespace: r.namespace,
    tableName: r.table_name,
    columns: r.columns,
    columnsId: r.columns_id === null ? null : Number(r.columns_id),
    row: r.row,
  }));
  return cache.fill(read, async (ids) => {
    const found = (await sql.unsafe(`SELECT id, columns FROM warehouse_columns WHERE id = ANY($1::bigint[])`, [ids])) as Array<{ id: string; columns: string }>;
    return found.map((f) => ({ id: Number(f.id), columns: f.columns }));
  });
}

/**
 * The load thread's connection on Sluice's schema, opened once and kept while the thread lives.
 * It reads the staged rows and marks those a load committed; the main thread's pool applied the
 * migrations and records the loads.
 */
export class PgStagedReader implements StagedRowsReader {
  private readonly sql: SQL;
  private readonly columns = new ColumnsCache();

  constructor(url: string, schema?: string) {
    const connection: Record<string, string> = { application_name: "sluice load thread" };
    if (schema) connection.search_path = schema;
    this.sql = new SQL(url, { max: 1, connection });
  }

  readStaged(destinationId: string, limit: number, afterId = 0): Promise<StagedRow[]> {
    return readStagedIn(this.sql, this.columns, destinationId, limit, afterId);
  }

  async markLoaded(loadId: string, destinationId: string, loaded: LoadedRows): Promise<void> {
    if (loaded.namespaces.length === 0 || loaded.ids.length === 0) return;
    await this.sql.unsafe(
      `UPDATE warehouse_staged SET load_id = $1
        WHERE destination_id = $2 AND load_id IS NULL AND id = ANY($3::bigint[]) AND namespace = ANY($4::text[])`,
      [loadId, destinationId, loaded.ids, loaded.namespaces],
    );
  }

  // Rows of a failed load that were marked were loaded too: they go the same way.
  async purgeLoaded(destinationId: string, finishedBefore: number): Promise<void> {
    await this.sql.unsafe(
      `DELETE FROM warehouse_staged WHERE load_id IN
         (SELECT id FROM warehouse_loads WHERE destination_id = $1 AND status IN ('succeeded', 'failed') AND finished_at < $2)`,
      [destinationId, finishedBefore],
    );
  }

  async close(): Promise<void> {
    await this.sql.close({ timeout: 5 });
  }
}

/**
 * Inside a transaction: the destination's queued load brought forward, else a new one. The
 * advisory lock keeps two instances from both finding none and queueing two; the queued row's
 * lock keeps a concurrent start from running it between the read and the update.
 */
async function queueIn(tx: SQL, load: NewLoad): Promise<string> {
  await tx.unsafe(`SELECT pg_advisory_xact_lock($1, hashtext($2))`, [QUEUE_LOCK_CLASS, load.destinationId]);
  const [queued] = (await tx.unsafe(
    `SELECT id FROM warehouse_loads WHERE destination_id = $1 AND status = 'queued' ORDER BY due_at LIMIT 1 FOR UPDATE`,
    [load.destinationId],
  )) as Array<{ id: string }>;
  if (queued) {
    await tx.unsafe(`UPDATE warehouse_loads SET due_at = $1 WHERE id = $2 AND due_at > $1`, [load.dueAt, queued.id]);
    return queued.id;
  }
  const id = newLoadId();
  await tx.unsafe(
    `INSERT INTO warehouse_loads (id, workspace_id, destination_id, status, trigger, attempt, due_at, created_at) VALUES ($1, $2, $3, 'queued', $4, $5, $6, $7)`,
    [id, load.workspaceId, load.destinationId, load.trigger, load.attempt, load.dueAt, load.createdAt],
  );
  return id;
}
