/**
 * The warehouse load thread (started by load-thread.ts): reads a destination's staged rows
 * from SQLite through its own read-only connection, groups them into one TableBatch per
 * namespace and table, and loads each namespace with PostgresWarehouse. The main thread
 * records the outcome and marks the rows loaded.
 */
import { Database, type Statement } from "bun:sqlite";
import { AppError } from "../lib/errors";
import type { LoadJob, LoadOutcome, WorkerReply, WorkerRequest } from "./load-thread";
import { type PostgresConfig, PostgresWarehouse } from "./postgres";
import type { TableBatch, WarehouseType } from "./types";

declare const self: Worker;

interface StagedRow {
  id: number;
  namespace: string;
  tableName: string;
  columns: string;
  row: string;
}

let db: Database | undefined;
let selectStaged: Statement | undefined;
// One client per connection setting: a PATCH that fixes a port gets a new one.
const clients = new Map<string, PostgresWarehouse>();

function clientFor(connection: PostgresConfig): PostgresWarehouse {
  const key = JSON.stringify(connection);
  let client = clients.get(key);
  if (!client) clients.set(key, (client = new PostgresWarehouse(connection)));
  return client;
}

function staged(dbPath: string, destinationId: string, limit: number): StagedRow[] {
  if (!db) {
    db = new Database(dbPath, { readonly: true });
    db.exec("PRAGMA busy_timeout = 5000");
    selectStaged = db.prepare(
      `SELECT id, namespace, table_name AS tableName, columns, row FROM warehouse_staged
        WHERE destination_id = ? AND load_id IS NULL ORDER BY id LIMIT ?`,
    );
  }
  return selectStaged!.all(destinationId, limit) as StagedRow[];
}

/** The union of the rows' columns; a column seen as int and as float becomes float. */
function mergeColumns(into: Record<string, WarehouseType>, columns: Record<string, WarehouseType>) {
  for (const [name, type] of Object.entries(columns)) {
    const seen = into[name];
    if (seen === undefined) into[name] = type;
    else if (seen === "int" && type === "float") into[name] = "float";
  }
}

function batchesByNamespace(rows: StagedRow[], uuidTs: string): Map<string, TableBatch[]> {
  const byNamespace = new Map<string, Map<string, TableBatch>>();
  // Most rows of a table share one columns text: parse each distinct one once.
  const parsedColumns = new Map<string, Record<string, WarehouseType>>();
  for (const r of rows) {
    let tables = byNamespace.get(r.namespace);
    if (!tables) byNamespace.set(r.namespace, (tables = new Map()));
    let batch = tables.get(r.tableName);
    if (!batch) tables.set(r.tableName, (batch = { table: r.tableName, columns: {}, rows: [] }));
    let columns = parsedColumns.get(r.columns);
    if (!columns) parsedColumns.set(r.columns, (columns = JSON.parse(r.columns) as Record<string, WarehouseType>));
    mergeColumns(batch.columns, columns);
    const row = JSON.parse(r.row);
    // uuid_ts is the load time (RudderStack's meaning), not the time the row was staged.
    if ("uuid_ts" in row) row.uuid_ts = uuidTs;
    batch.rows.push(row);
  }
  return new Map([...byNamespace].map(([ns, tables]) => [ns, [...tables.values()]]));
}

async function load(dbPath: string, job: LoadJob): Promise<LoadOutcome> {
  const rows = staged(dbPath, job.destinationId, job.rowsPerLoad);
  const outcome: LoadOutcome = { rows: {}, discards: 0, loaded: [], failures: [], count: rows.length, lastId: rows.length ? rows[rows.length - 1]!.id : 0 };
  const client = clientFor(job.connection);
  for (const [namespace, batches] of batchesByNamespace(rows, job.uuidTs)) {
    try {
      const result = await client.load(namespace, batches, job.loadId);
      for (const [t, n] of Object.entries(result.rows)) outcome.rows[t] = (outcome.rows[t] ?? 0) + n;
      outcome.discards += result.discards;
      outcome.loaded.push(namespace);
    } catch (err) {
      const e = err instanceof AppError ? err : new AppError("INTERNAL", (err as Error)?.message ?? String(err));
      outcome.failures.push({ namespace, code: e.code, message: e.message });
    }
  }
  return outcome;
}

async function handle(msg: WorkerRequest): Promise<unknown> {
  switch (msg.type) {
    case "load":
      return load(msg.dbPath, msg.job);
    case "deleteUsers":
      return clientFor(msg.connection).deleteUsers(msg.namespace, msg.userIds);
    case "close": {
      await Promise.allSettled([...clients.values()].map((c) => c.close()));
      clients.clear();
      db?.close();
      db = undefined;
      return null;
    }
  }
}

self.onmessage = (e: MessageEvent<WorkerRequest>) => {
  const msg = e.data;
  handle(msg).then(
    (value) => self.postMessage({ seq: msg.seq, ok: true, value } satisfies WorkerReply),
    (err) => {
      const e = err instanceof AppError ? err : new AppError("INTERNAL", (err as Error)?.message ?? String(err));
      self.postMessage({ seq: msg.seq, ok: false, code: e.code, message: e.message } satisfies WorkerReply);
    },
  );
};
