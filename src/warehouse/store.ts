/**
 * The warehouse destination's storage seam (cluster mode, design §2.1–2.4 and §3.8 of
 * src/cluster/README.md): Sluice's own bookkeeping of warehouse destinations, not the user's
 * warehouse. Staged rows (`warehouse_staged`, written by the stager, staging.ts) and the load
 * history (`warehouse_loads`, kept by the scheduler, loads.ts). SQLite
 * (src/storage/sqlite/warehouse.ts) and PostgreSQL (src/storage/postgres/warehouse.ts)
 * implement it; staging.ts and loads.ts see only this interface.
 *
 * A unit of work is one call with plain data, per batch: on SQLite a transaction cannot span an
 * `await` (one main connection), so a caller decides first and hands the store the whole step,
 * which it applies in one transaction (a load's outcome and the load queued after it are one
 * `finishLoad`). The rows a load took are marked by the load thread, page by page, through its
 * own connection (StagedRowsReader.markLoaded), not by the main thread.
 *
 * Two instances may call the PostgreSQL store at once (loads run under the warehouse singleton
 * later, but any instance answers POST /sync): queueing a load is serialized per destination,
 * starting one is a conditional update, and rows are marked loaded only while still waiting.
 */

export type LoadStatus = "queued" | "running" | "succeeded" | "failed";

/** One table row of one event for one destination, as the stager writes it. */
export interface NewStagedRow {
  destinationId: string;
  workspaceId: string;
  namespace: string;
  tableName: string;
  /** JSON: column → warehouse type. */
  columns: string;
  /** The values: COPY text or JSON (staged-rows.ts). */
  row: string;
  eventId: string;
  userKey: string;
  stagedAt: number;
}

/** A staged row as a load reads it. */
export interface StagedRow {
  id: number;
  namespace: string;
  tableName: string;
  columns: string;
  row: string;
}

/** A `warehouse_loads` row. */
export interface LoadRow {
  id: string;
  workspaceId: string;
  destinationId: string;
  status: LoadStatus;
  trigger: string;
  attempt: number;
  dueAt: number;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  /** JSON: table → rows written. */
  rows: string | null;
  discards: number | null;
  error: string | null;
}

/** A load to queue; when one is queued for the destination already, it is brought forward instead. */
export interface NewLoad {
  workspaceId: string;
  destinationId: string;
  /** api | schedule | retry | more */
  trigger: string;
  attempt: number;
  dueAt: number;
  createdAt: number;
}

/**
 * The staged rows a load committed to the warehouse: exactly the ids it read, of the namespaces
 * that committed, marked with its id only while still waiting (a row another load marked, or a
 * regulation deleted, stays as it is). Never "the waiting rows up to its last id": on PostgreSQL
 * ids of concurrent writers commit out of order, and a row committed late below that id was
 * never read (design §3.8).
 */
export interface LoadedRows {
  namespaces: string[];
  ids: number[];
  /**
   * The load took every row it read up to the last of `ids` (this page and all before it
   * committed every namespace): a store whose ids commit in order (SQLite) records the range
   * instead of marking each row.
   */
  whole?: boolean;
}

/**
 * A load's outcome, recorded with the load queued after it in one transaction. Its rows were
 * marked before (markLoaded): a restart in between finds the load running and records it
 * failed, and the rows it marked stay marked, because they were loaded.
 */
export interface LoadFinish {
  loadId: string;
  destinationId: string;
  status: "succeeded" | "failed";
  finishedAt: number;
  /** Rows written per table. */
  rows: Record<string, number>;
  discards: number;
  error: string | null;
  /** The retry after a retryable failure, or the next load when this one left rows behind. */
  next?: NewLoad;
}

export interface WarehouseStore {
  /** Writes the rows in one transaction, all or none. */
  stage(rows: NewStagedRow[]): Promise<void>;

  /**
   * Queues a load, or brings the destination's queued one forward to `dueAt` (never back):
   * answers the queued load's id.
   */
  queueLoad(load: NewLoad): Promise<string>;
  /**
   * At start: every running load is one a crash cut off. Records them as failed with `error`
   * and queues a retry (trigger 'retry', due `now`) per destination, in one transaction;
   * answers how many there were. With several instances this belongs to the one that takes the
   * warehouse singleton (design §3.3), not to every instance's start: a load running on a live
   * holder is not interrupted.
   */
  failInterrupted(now: number, error: string): Promise<number>;
  /** Queued loads due by `now`, the earliest first. */
  dueLoads(now: number, limit: number): Promise<LoadRow[]>;
  /** When the earliest queued load is due, or null when none is queued. */
  nextDueAt(): Promise<number | null>;
  /** Marks a queued load running; false when it was not queued any more (another caller started it). */
  startLoad(loadId: string, now: number): Promise<boolean>;
  /** Records the outcome (see LoadFinish). */
  finishLoad(finish: LoadFinish): Promise<void>;
  /** Records the destination's queued loads as failed (its destination was deleted). */
  cancelQueued(destinationId: string, now: number, error: string): Promise<void>;
  /** The destination's loads, newest first. */
  listLoads(destinationId: string, limit: number): Promise<LoadRow[]>;

  /** The destination's waiting rows in id order after `afterId`, at most `limit`: what a load takes. */
  readStaged(destinationId: string, limit: number, afterId?: number): Promise<StagedRow[]>;
  /** Namespaces the destination has staged rows in, loaded or not. */
  stagedNamespaces(destinationId: string): Promise<string[]>;
  /** Deletes the users' staged rows of the destination, loaded or not (a regulation). */
  deleteStaged(destinationId: string, userKeys: string[]): Promise<void>;
}

/**
 * Where the load thread (load-worker.ts) reads staged rows: Sluice's own database, through a
 * connection the thread opens itself (a thread cannot use the main thread's). Plain data, so it
 * crosses to the thread in a message.
 */
export type StagedRowsLocation =
  | { kind: "sqlite"; file: string }
  /** `schema`: the search_path Sluice's tables are in (openPostgres's searchPath). */
  | { kind: "postgres"; url: string; schema?: string };

/**
 * The load thread's own view of the staged rows: what `readStaged` answers, and the bulk writes
 * on them (marks, purge), off the main thread.
 */
export interface StagedRowsReader {
  readStaged(destinationId: string, limit: number, afterId?: number): Promise<StagedRow[]>;
  /** Marks the rows a load committed with its id (see LoadedRows); rows no longer waiting stay as they are. */
  markLoaded(loadId: string, destinationId: string, loaded: LoadedRows): Promise<void>;
  /** Deletes staged rows of loads that finished before `finishedBefore` (kept until then for inspection); a failed load's marked rows were loaded too. */
  purgeLoaded(destinationId: string, finishedBefore: number): Promise<void>;
  close(): Promise<void>;
}

/** A `columns` text's key in warehouse_columns. */
export function columnsHash(columns: string): string {
  return new Bun.CryptoHasher("sha256").update(columns).digest("hex");
}

/**
 * What a store or reader knows of warehouse_columns: text ↔ id, both ways. Bounded, though
 * there are only as many entries as distinct table shapes; an id, once given, never changes.
 */
export class ColumnsCache {
  private readonly byText = new Map<string, number>();
  private readonly byId = new Map<number, string>();

  idOf(columns: string): number | undefined {
    return this.byText.get(columns);
  }

  textOf(id: number): string | undefined {
    return this.byId.get(id);
  }

  /**
   * Gives each row its columns text: its own (staged before warehouse_columns), or the one its
   * `columnsId` names, the same string for rows that share it; `fetch` is asked once for the ids
   * not known yet.
   */
  async fill<R extends { columns: string; columnsId: number | null }>(rows: R[], fetch: (ids: number[]) => Promise<Array<{ id: number; columns: string }>>): Promise<R[]> {
    const missing = [...new Set(rows.filter((r) => r.columnsId !== null && !this.byId.has(r.columnsId)).map((r) => r.columnsId!))];
    if (missing.length > 0) for (const f of await fetch(missing)) this.remember(f.columns, f.id);
    for (const r of rows) {
      if (r.columnsId === null) continue;
      const columns = this.byId.get(r.columnsId);
      if (columns === undefined) throw new Error(`warehouse_columns has no row ${r.columnsId}`);
      r.columns = columns;
    }
    return rows;
  }

  /** Only for ids committed: a rolled-back insert must not be remembered. */
  remember(columns: string, id: number): void {
    if (this.byText.size >= 10_000) {
      this.byText.clear();
      this.byId.clear();
    }
    this.byText.set(columns, id);
    this.byId.set(id, columns);
  }
}

/** A new load's id: time-ordered, so ids of one millisecond still sort by creation. */
export function newLoadId(): string {
  return `whl_${Bun.randomUUIDv7("hex").replaceAll("-", "")}`;
}
