/**
 * The warehouse load thread (started by load-thread.ts): reads a destination's staged rows
 * from Sluice's own database (SQLite or PostgreSQL) through a connection of its own, groups
 * them into one TableBatch per namespace and table (staged-rows.ts), and loads each namespace with
 * PostgresWarehouse. It answers the staged ids of the namespaces that loaded; the main thread
 * records the outcome and marks exactly those rows loaded.
 */
import { AppError } from "../lib/errors";
import { PgStagedReader } from "../storage/postgres/warehouse";
import { SqliteStagedReader } from "../storage/sqlite/warehouse";
import type { LoadJob, LoadOutcome, WorkerReply, WorkerRequest } from "./load-thread";
import { type PostgresConfig, PostgresWarehouse } from "./postgres";
import { batchesByNamespace } from "./staged-rows";
import type { StagedRowsLocation, StagedRowsReader } from "./store";

declare const self: Worker;

// Opened with the first load and kept while the thread lives: one connection, not one per load.
let reader: { key: string; reader: StagedRowsReader } | undefined;
// One client per connection setting: a PATCH that fixes a port gets a new one.
const clients = new Map<string, PostgresWarehouse>();

function clientFor(connection: PostgresConfig): PostgresWarehouse {
  const key = JSON.stringify(connection);
  let client = clients.get(key);
  if (!client) clients.set(key, (client = new PostgresWarehouse(connection)));
  return client;
}

function readerFor(location: StagedRowsLocation): StagedRowsReader {
  const key = JSON.stringify(location);
  if (reader?.key === key) return reader.reader;
  // A LoadThread reads one database all its life; a different one would replace the first.
  void closeReader();
  const opened = location.kind === "sqlite" ? new SqliteStagedReader(location.file) : new PgStagedReader(location.url, location.schema);
  reader = { key, reader: opened };
  return opened;
}

async function closeReader() {
  const r = reader;
  reader = undefined;
  await r?.reader.close().catch(() => {});
}

async function load(location: StagedRowsLocation, job: LoadJob): Promise<LoadOutcome> {
  const rows = await readerFor(location).readStaged(job.destinationId, job.rowsPerLoad);
  const outcome: LoadOutcome = { rows: {}, discards: 0, loaded: [], failures: [], count: rows.length, ids: [] };
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
  if (outcome.loaded.length) {
    const loaded = new Set(outcome.loaded);
    for (const r of rows) if (loaded.has(r.namespace)) outcome.ids.push(r.id);
  }
  return outcome;
}

async function handle(msg: WorkerRequest): Promise<unknown> {
  switch (msg.type) {
    case "load":
      return load(msg.staged, msg.job);
    case "deleteUsers":
      return clientFor(msg.connection).deleteUsers(msg.namespace, msg.userIds);
    case "close": {
      await Promise.allSettled([...clients.values()].map((c) => c.close()));
      clients.clear();
      await closeReader();
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
