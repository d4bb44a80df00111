/**
 * The warehouse load thread (started by load-thread.ts): reads a destination's staged rows
 * from Sluice's own database (SQLite or PostgreSQL) through a connection of its own, groups
 * them into one TableBatch per namespace and table (staged-rows.ts), and loads each namespace with
 * PostgresWarehouse. After each page it marks that page's rows of the namespaces that committed
 * (exactly those ids, design §3.8); the main thread records the outcome.
 */
import { AppError } from "../lib/errors";
import { PgStagedReader } from "../storage/postgres/warehouse";
import { SqliteStagedReader } from "../storage/sqlite/warehouse";
import { DEFAULT_INTAKE_YIELD, IntakeYield } from "./intake-yield";
import type { LoadJob, LoadOutcome, WorkerReply, WorkerRequest } from "./load-thread";
import type { PostgresConfig } from "../destinations/postgres/config";
import { PostgresWarehouse } from "./postgres-loader";
import { batchesByNamespace } from "./staged-rows";
import type { StagedRow, StagedRowsLocation, StagedRowsReader } from "./store";
import type { TableBatch } from "./types";
import { setImmediate as nextTurn } from "node:timers/promises";
import { readlinkSync } from "node:fs";
import { setPriority } from "node:os";

declare const self: Worker;

// Opened with the first load and kept while the thread lives: one connection, not one per load.
let reader: { key: string; reader: StagedRowsReader } | undefined;
// One client per connection setting: a PATCH that fixes a port gets a new one.
const clients = new Map<string, PostgresWarehouse>();
// Every client pauses through this one; each load gives it its settings (begin).
const yielding = new IntakeYield(DEFAULT_INTAKE_YIELD);

function clientFor(connection: PostgresConfig): PostgresWarehouse {
  const key = JSON.stringify(connection);
  let client = clients.get(key);
  if (!client) clients.set(key, (client = new PostgresWarehouse(connection, yielding)));
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

// A load reads its rows a page at a time (job.pageRows) and loads each page while it reads the
// next: reading and grouping are this thread's work, COPY is PostgreSQL's, and one after the
// other they took turns. Pages are read in slices, yielding between them, so the page being
// loaded keeps being fed.
const SLICE_ROWS = 500;

/** A page of staged rows, and the same rows grouped per namespace and table. */
interface Page {
  rows: StagedRow[];
  batches: Map<string, TableBatch[]>;
}

/** Up to `limit` waiting rows after `afterId`, read SLICE_ROWS at a time. */
async function readPage(reader: StagedRowsReader, destinationId: string, afterId: number, limit: number): Promise<StagedRow[]> {
  const page: StagedRow[] = [];
  while (page.length < limit) {
    const slice = await reader.readStaged(destinationId, Math.min(SLICE_ROWS, limit - page.length), afterId);
    page.push(...slice);
    if (slice.length < SLICE_ROWS) break;
    afterId = slice[slice.length - 1]!.id;
    await nextTurn();
  }
  return page;
}

/**
 * Loads the destination's waiting rows, up to rowsPerLoad, page by page: each namespace of a
 * page by one PostgresWarehouse.load. A namespace that fails is not tried again
 * in the later pages of this load; the pages it committed before count as loaded (they are
 * marked), and the rest wait for the retry.
 */
async function load(location: StagedRowsLocation, job: LoadJob): Promise<LoadOutcome> {
  const reader = readerFor(location);
  yielding.begin(job.intakeYield);
  const yieldedBefore = yielding.yieldedMs;
  const outcome: LoadOutcome = { rows: {}, discards: 0, failures: [], count: 0, yieldedMs: 0 };
  const client = clientFor(job.connection);
  const failed = new Set<string>();
  // Marks run behind the loading, in page order: the next page need not wait for them. The
  // first mark that fails fails the load once the loading is done.
  let markError: { err: unknown } | undefined;
  let marking: Promise<void> = Promise.resolve();
  // Every namespace of every page so far committed (LoadedRows.whole).
  let whole = true;
  const loadPage = async ({ rows: page, batches: grouped }: Page) => {
    const committed = new Set<string>();
    for (const [namespace, batches] of grouped) {
      if (failed.has(namespace)) continue;
      try {
        const result = await client.load(namespace, batches, job.loadId);
        for (const [t, n] of Object.entries(result.rows)) outcome.rows[t] = (outcome.rows[t] ?? 0) + n;
        outcome.discards += result.discards;
        committed.add(namespace);
      } catch (err) {
        const e = err instanceof AppError ? err : new AppError("INTERNAL", (err as Error)?.message ?? String(err));
        failed.add(namespace);
        outcome.failures.push({ namespace, code: e.code, message: e.message });
      }
    }
    const ids = page.filter((r) => committed.has(r.namespace)).map((r) => r.id);
    if (committed.size < grouped.size) whole = false;
    const loaded = { namespaces: [...committed], ids, whole };
    // A crash before this mark loads these rows again, and the loader skips their ids.
    marking = marking.then(() => reader.markLoaded(job.loadId, job.destinationId, loaded)).catch((err) => void (markError ??= { err }));
  };
  const pageRows = Math.max(1, job.pageRows);
  const read = async (afterId: number, limit: number): Promise<Page> => {
    const rows = await readPage(reader, job.destinationId, afterId, limit);
    // Grouped here, while the page before is still loading, not in between two pages.
    return { rows, batches: batchesByNamespace(rows, job.uuidTs) };
  };
  try {
    // The first page is smaller: nothing loads while it is read.
    let wanted = Math.min(Math.ceil(pageRows / 5), job.rowsPerLoad);
    let page = await read(0, wanted);
    while (page.rows.length > 0) {
      outcome.count += page.rows.length;
      const more = page.rows.length === wanted && outcome.count < job.rowsPerLoad;
      wanted = Math.min(pageRows, job.rowsPerLoad - outcome.count);
      const [loading, next] = await Promise.allSettled([
        loadPage(page),
        more ? read(page.rows[page.rows.length - 1]!.id, wanted) : Promise.resolve({ rows: [], batches: new Map() }),
      ]);
      if (loading.status === "rejected") throw loading.reason;
      if (next.status === "rejected") throw next.reason;
      page = next.value;
    }
  } finally {
    // The answer waits for them: a load after this one must not read rows still being marked.
    await marking;
  }
  if (markError) throw markError.err;
  outcome.yieldedMs = Math.round(yielding.yieldedMs - yieldedBefore);
  return outcome;
}

// Per destination, the purge running now.
const purges = new Map<string, Promise<void>>();
// Set by "close": a purge cut off by the closing connection has failed at nothing (the next load's purge goes on).
let closing = false;

function purge(location: StagedRowsLocation, destinationId: string, finishedBefore: number): Promise<void> {
  let running = purges.get(destinationId);
  if (!running) {
    running = readerFor(location)
      .purgeLoaded(destinationId, finishedBefore)
      .catch((err) => {
        if (!closing) throw err;
      })
      .finally(() => purges.delete(destinationId));
    purges.set(destinationId, running);
  }
  return running;
}

async function handle(msg: WorkerRequest): Promise<unknown> {
  switch (msg.type) {
    case "load":
      return load(msg.staged, msg.job);
    case "purge":
      return purge(msg.staged, msg.destinationId, msg.finishedBefore);
    case "deleteUsers":
      return clientFor(msg.connection).deleteUsers(msg.namespace, msg.userIds);
    case "close": {
      closing = true;
      await Promise.allSettled([...clients.values()].map((c) => c.close()));
      clients.clear();
      await closeReader();
      return null;
    }
  }
}

/** The niceness this thread runs at: intake's thread keeps 0. */
const LOAD_NICENESS = 10;

/**
 * A load is background work and its rows wait safely on disk, while event calls are answered
 * live: on a busy machine this thread yields its core to intake's (a nice of 10 weighs a tenth of
 * 0), and at full speed when the machine is idle. Linux sets a niceness per thread: the thread's
 * id is the last part of /proc/thread-self. Elsewhere the thread keeps its parent's.
 */
function yieldToIntake(): void {
  try {
    setPriority(Number(readlinkSync("/proc/thread-self").split("/").pop()), LOAD_NICENESS);
  } catch {
    // No /proc (macOS), or not allowed: loads then compete with intake as equals.
  }
}

yieldToIntake();

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
