/**
 * The PostgreSQL warehouse loader: writes staged warehouse rows (TableBatch) into one
 * schema ("namespace") of the user's database, the way RudderStack's PostgreSQL warehouse
 * lays them out.
 *
 * A load (loadOnce) commits in steps, each a transaction: schema changes; the event tables by
 * COPY of new ids only, in two lanes at once; then `users` through a temporary table and a
 * merge, discards and identity merge rules. A table's rows of one load commit together, as
 * RudderStack loads each table in a transaction of its own. A crash or kill anywhere leaves
 * every table with all of the load or none of it, and a retry of the same batches inserts
 * nothing twice because ids already there are skipped.
 *
 * Beside it: postgres-copy.ts (COPY text and COPY itself), users-merge.ts (the users fold and
 * merge), sql-names.ts (identifiers), postgres-values.ts (values and column types).
 *
 * It runs on the load thread (load-thread.ts), not on intake's thread.
 *
 * Client: Bun's built-in `Bun.sql` (COPY FROM STDIN through `.writable()` since Bun 1.4): no
 * dependency, runs inside `bun build --compile`, and its COPY was as fast as `postgres` and
 * `pg` + `pg-copy-streams` here (the server is the bottleneck).
 */
import { SQL } from "bun";
import type { PostgresConfig } from "../destinations/postgres/config.ts";
import { AppError } from "../lib/errors.ts";
import { UNIQUE_VIOLATION, isConnectionFailure, sqlState } from "../lib/postgres-errors.ts";
import { MAPPINGS_TABLE, MERGE_RULES_TABLE, applyMergeRules, type MergeRule } from "./identity.ts";
import type { TableBatch, WarehouseType } from "./types.ts";
import { POSTGRES_TYPES, columnKind, discardText } from "./postgres-values.ts";
import type { IntakeYield } from "./intake-yield.ts";
import { copyChunks, copyColumns, copyInto, decodeAll, type OnMisfit } from "./postgres-copy.ts";
import { USERS_TABLE, foldUsers, mergeUsers } from "./users-merge.ts";
import { checkIdentifier, ident, qualified } from "./sql-names.ts";

export { POSTGRES_TYPES } from "./postgres-values.ts";

/** What one load did, per table. */
export interface LoadResult {
  /** Rows written per table: new rows, and for `users` also the rows updated. */
  rows: Record<string, number>;
  /** Values that went to rudder_discards in this load. */
  discards: number;
}

/** A namespace's tables, each with its columns and their information_schema data_type. */
export type NamespaceSchema = Map<string, Map<string, string>>;

export const DISCARDS_TABLE = "rudder_discards";
// RudderStack's rudder_discards columns (warehouseutils.DiscardsSchema), reason included.
const DISCARDS_COLUMNS: Record<string, WarehouseType> = {
  table_name: "string",
  row_id: "string",
  column_name: "string",
  column_value: "string",
  received_at: "datetime",
  uuid_ts: "datetime",
  reason: "string",
};

/** True for errors where the same load may succeed later (database down, restarting, busy). */
export function isRetryableLoadError(err: unknown): boolean {
  return err instanceof AppError && err.code === "UNAVAILABLE";
}

export class PostgresWarehouse {
  private readonly sql: SQL;
  private readonly where: string;
  private readonly schemas = new Map<string, NamespaceSchema>();
  /**
   * Per namespace, the tables with a unique index on id alone: Sluice creates its tables so,
   * RudderStack may not have. Only those may take a COPY before their ids are checked.
   */
  private readonly keyedTables = new Map<string, Set<string>>();

  /** `yielding`: the load thread's, so that loads pause while intake is busy (intake-yield.ts). */
  constructor(
    config: PostgresConfig,
    private readonly yielding?: IntakeYield,
  ) {
    const port = config.port ?? 5432;
    this.where = `PostgreSQL at ${config.host}:${port}/${config.database}`;
    this.sql = new SQL({
      hostname: config.host,
      port,
      database: config.database,
      username: config.user,
      password: config.password ?? "",
      tls: config.sslMode ?? "disable",
      connectionTimeout: config.connectTimeoutSeconds ?? 10,
      max: 2,
      // Loads come every few minutes; an idle connection is not worth keeping open in between.
      idleTimeout: 60,
    });
  }

  /** Creates the namespace if missing and returns the cached view of its tables and columns. */
  async ensureSchema(namespace: string): Promise<NamespaceSchema> {
    checkIdentifier(namespace, "namespace");
    const cached = this.schemas.get(namespace);
    if (cached) return cached;
    return this.guard(async () => {
      await this.sql.unsafe(`CREATE SCHEMA IF NOT EXISTS ${ident(namespace)}`);
      return this.refreshSchema(namespace);
    });
  }

  /** Reads the namespace's tables and columns from information_schema into the cache. */
  async refreshSchema(namespace: string): Promise<NamespaceSchema> {
    const rows: Array<{ table_name: string; column_name: string; data_type: string }> = await this.guard(() =>
      this.sql.unsafe(
        `SELECT table_name, column_name, data_type FROM information_schema.columns
         WHERE table_schema = $1 ORDER BY table_name, ordinal_position`,
        [namespace],
      ),
    );
    const keyed: Array<{ table_name: string }> = await this.guard(() =>
      this.sql.unsafe(
        `SELECT c.relname AS table_name FROM pg_index i
           JOIN pg_class c ON c.oid = i.indrelid
           JOIN pg_namespace n ON n.oid = c.relnamespace
           JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
         WHERE n.nspname = $1 AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL AND a.attname = 'id'`,
        [namespace],
      ),
    );
    this.keyedTables.set(namespace, new Set(keyed.map((r) => r.table_name)));
    const schema: NamespaceSchema = new Map();
    for (const r of rows) {
      let table = schema.get(r.table_name);
      if (!table) schema.set(r.table_name, (table = new Map()));
      table.set(r.column_name, r.data_type);
    }
    this.schemas.set(namespace, schema);
    return schema;
  }

  /**
   * Loads the batches into the namespace (loadOnce: a few transactions). Rows whose `id` is already in
   * their table are skipped, except in `users`, which takes the newer values. A value that
   * does not fit its column goes to rudder_discards and the rest of its row loads. A batch of
   * `rudder_identity_merge_rules` rows (staged when identity resolution is on) is applied as merge
   * rules with `users`, so the identity tables never disagree with the users loaded.
   */
  async load(namespace: string, batches: TableBatch[], loadId: string): Promise<LoadResult> {
    for (const b of batches) {
      checkIdentifier(b.table, "table");
      for (const c of Object.keys(b.columns)) checkIdentifier(c, `column of ${b.table}`);
    }
    const cached = await this.ensureSchema(namespace);
    try {
      return await this.guard(() => this.loadOnce(namespace, cached, batches, loadId));
    } catch (err) {
      // Someone else changed the namespace since the cache was read (schema or table dropped, a
      // column of another type): read it again and try once more.
      if (!isStaleSchemaError(err)) throw err;
      this.schemas.delete(namespace);
      const fresh = await this.ensureSchema(namespace);
      return this.guard(() => this.loadOnce(namespace, fresh, batches, loadId));
    }
  }

  /** Deletes the users' rows from every table of the namespace (suppress_with_delete). */
  async deleteUsers(namespace: string, userIds: string[]): Promise<number> {
    checkIdentifier(namespace, "namespace");
    if (userIds.length === 0) return 0;
    // Deletions are rare and must not miss a table someone else created: read the schema fresh.
    const schema = await this.refreshSchema(namespace);
    return this.guard(() =>
      this.sql.begin(async (tx) => {
        let deleted = 0;
        for (const [table, columns] of schema) {
          const key = table === USERS_TABLE ? "id" : columns.has("user_id") ? "user_id" : null;
          if (!key || !columns.has(key)) continue;
          const r = await tx.unsafe(`DELETE FROM ${qualified(namespace, table)} WHERE ${ident(key)} = ANY($1::text[])`, [userIds]);
          deleted += r.count ?? 0;
        }
        const discards = schema.get(DISCARDS_TABLE);
        if (discards?.has("row_id") && discards.has("table_name")) {
          // A discarded users value carries the user id as its row id.
          const r = await tx.unsafe(
            `DELETE FROM ${qualified(namespace, DISCARDS_TABLE)} WHERE table_name = $1 AND row_id = ANY($2::text[])`,
            [USERS_TABLE, userIds],
          );
          deleted += r.count ?? 0;
        }
        return deleted;
      }),
    );
  }

  async close(): Promise<void> {
    await this.sql.close();
  }

  /**
   * One load of the namespace, in up to four transactions, each idempotent, so a load cut off
   * between them is completed by its retry (ids already loaded are skipped):
   * 1. schema changes, under the namespace's lock (skipped when the cached view has every column);
   * 2. event tables by COPY, split into two lanes that run at once on two connections, each lane
   *    one transaction holding its tables' locks: PostgreSQL then uses two cores for the COPY,
   *    where one connection left it one (about 1.4 times the rows per second here);
   * 3. `users`, discards and identity merge rules, under the namespace's lock.
   * A table's rows of one load commit together, as RudderStack loads a table in one transaction.
   */
  private async loadOnce(namespace: string, cached: NamespaceSchema, batches: TableBatch[], loadId: string): Promise<LoadResult> {
    // The cache changes only after COMMIT: a rolled-back load must not leave columns in the
    // view that the database does not have.
    const schema = copySchema(cached);
    const uuidTs = new Date().toISOString();
    const appName = `sluice load ${loadId}`.slice(0, 63);
    const result: LoadResult = { rows: {}, discards: 0 };
    const discardRows: Array<Record<string, unknown>> = [];
    const mergeRules: MergeRule[] = [];
    const incoming: TableBatch[] = [];
    for (const b of batches) {
      if (b.table === DISCARDS_TABLE) discardRows.push(...b.rows);
      else if (b.table === MERGE_RULES_TABLE) mergeRules.push(...(b.rows as unknown as MergeRule[]));
      else if (b.rows.length > 0 || b.encoded?.length) incoming.push(b);
    }
    const existed = new Set(incoming.filter((b) => schema.has(b.table)).map((b) => b.table));

    if (incoming.some((b) => Object.keys(b.columns).some((c) => !schema.get(b.table)?.has(c)))) {
      await this.sql.begin(async (tx) => {
        await startLoadTransaction(tx, appName, namespace);
        for (const b of incoming) await this.applyTableSchema(tx, namespace, schema, b.table, b.columns, "id" in b.columns);
      });
      this.schemas.set(namespace, copySchema(schema));
    }

    const isUsers = (b: TableBatch) => b.table === USERS_TABLE && schema.get(b.table)!.has("id");
    const lanes = splitLanes(incoming.filter((b) => !isUsers(b)), 2);
    const laneOutcomes = await Promise.allSettled(
      lanes.map((lane) =>
        this.sql.begin(async (tx) => {
          await nameLoadTransaction(tx, appName);
          // Another load of the namespace (another destination) may write the same tables; the
          // id checks of a table must not interleave. Taken in one order, so lanes never deadlock.
          const tables = lane.map((b) => b.table).sort();
          await tx.unsafe(`SELECT ${tables.map((_, i) => `pg_advisory_xact_lock(hashtext($1), hashtext($${i + 2}))`).join(", ")}`, [`sluice-warehouse:${namespace}`, ...tables]);
          const discards: Array<Record<string, unknown>> = [];
          for (const b of lane) result.rows[b.table] = await this.copyEventTable(tx, namespace, schema, b, existed.has(b.table), uuidTs, discards);
          return discards;
        }),
      ),
    );
    // Both lanes end before the load answers, so its retry never meets one still running.
    for (const o of laneOutcomes) if (o.status === "rejected") throw o.reason;
    for (const o of laneOutcomes) if (o.status === "fulfilled") discardRows.push(...o.value);

    const users = incoming.filter(isUsers);
    if (users.length === 0 && discardRows.length === 0 && mergeRules.length === 0) return result;
    await this.sql.begin(async (tx) => {
      await startLoadTransaction(tx, appName, namespace);
      for (const batch of users) {
        const columns = schema.get(batch.table)!;
        const names = copyColumns(batch.columns);
        const kinds = names.map((n) => columnKind(columns.get(n)!));
        const rows = foldUsers([...batch.rows, ...decodeAll(batch.encoded ?? [], batch.uuidTs ?? uuidTs)]);
        await tx.unsafe(`CREATE TEMPORARY TABLE sluice_stage_users (${names.map((n) => `${ident(n)} ${columns.get(n)}`).join(", ")}) ON COMMIT DROP`);
        await copyInto(tx, "sluice_stage_users", names, copyChunks(rows, [], names, kinds, batch.uuidTs ?? uuidTs, misfitsInto(discardRows, batch.table, uuidTs)), this.yielding);
        result.rows[batch.table] = await mergeUsers(tx, qualified(namespace, batch.table), "sluice_stage_users", names, columns);
      }

      if (discardRows.length > 0) {
        const columns = await this.applyTableSchema(tx, namespace, schema, DISCARDS_TABLE, DISCARDS_COLUMNS, false);
        const names = Object.keys(DISCARDS_COLUMNS).filter((n) => columns.has(n));
        const kinds = names.map((n) => columnKind(columns.get(n)!));
        const rows = discardRows.map((d) => ({ ...d, uuid_ts: d.uuid_ts ?? uuidTs }));
        const text = copyChunks(rows, [], names, kinds, uuidTs, () => {});
        await tx.unsafe(`CREATE TEMPORARY TABLE sluice_stage_discards (${names.map((n) => `${ident(n)} ${columns.get(n)}`).join(", ")}) ON COMMIT DROP`);
        await copyInto(tx, "sluice_stage_discards", names, text, this.yielding);
        // A retried load finds its discards already there: keep one per (table, row, column).
        const r = await tx.unsafe(
          `INSERT INTO ${qualified(namespace, DISCARDS_TABLE)} (${names.map(ident).join(", ")})
           SELECT DISTINCT ON (s.table_name, s.row_id, s.column_name) ${names.map((n) => `s.${ident(n)}`).join(", ")}
           FROM sluice_stage_discards s
           WHERE NOT EXISTS (SELECT 1 FROM ${qualified(namespace, DISCARDS_TABLE)} d
             WHERE d.table_name = s.table_name AND d.row_id IS NOT DISTINCT FROM s.row_id AND d.column_name = s.column_name)`,
        );
        result.discards = r.count ?? 0;
      }

      if (mergeRules.length > 0) {
        const merged = await applyMergeRules(tx, namespace, mergeRules, new Date(uuidTs));
        result.rows[MERGE_RULES_TABLE] = merged.rules;
        result.rows[MAPPINGS_TABLE] = merged.mappings;
      }
    });
    this.schemas.set(namespace, schema);
    return result;
  }

  /**
   * An event table's rows by COPY, new ids only; answers how many were written. Misfits go to
   * `discards`. The caller's transaction holds the table's lock.
   */
  private async copyEventTable(
    tx: SQL,
    namespace: string,
    schema: NamespaceSchema,
    batch: TableBatch,
    existed: boolean,
    uuidTs: string,
    discards: Array<Record<string, unknown>>,
  ): Promise<number> {
    const columns = schema.get(batch.table)!;
    const names = copyColumns(batch.columns);
    const kinds = names.map((n) => columnKind(columns.get(n)!));
    const keyed = columns.has("id");
    const target = qualified(namespace, batch.table);
    // A table made by Sluice, in this load or before, has its key on id (keyedTables).
    const optimistic = keyed && this.keyedTables.get(namespace)?.has(batch.table) === true;
    const batchUuidTs = batch.uuidTs ?? uuidTs;
    const onMisfit = misfitsInto(discards, batch.table, uuidTs);
    // Rows staged as COPY text go to COPY unparsed, where nothing needs their values.
    let encoded = batch.encoded ?? [];
    let rows = batch.rows;
    if (!optimistic) {
      rows = [...rows, ...decodeAll(encoded, batchUuidTs)];
      encoded = [];
      if (keyed) rows = latestPerId(rows);
      if (existed && keyed) rows = await withoutLoadedIds(tx, target, rows);
      await copyInto(tx, target, names, copyChunks(rows, [], names, kinds, batchUuidTs, onMisfit), this.yielding);
      return rows.length;
    }
    // Event tables take new ids only, straight into the table by COPY: about half of
    // PostgreSQL's work of COPY into a temporary table and INSERT … WHERE NOT EXISTS.
    // Ids already there, or twice in the batch, are rare (a load retried after a crash, an
    // event sent again after the dedup window), so the COPY is tried first and the primary
    // key refuses them. Only then are the loaded ids looked up (the table is locked meanwhile)
    // and the rest copied: looking them up first cost every load about a tenth of its time.
    const mark = discards.length;
    await tx.unsafe("SAVEPOINT sluice_copy");
    try {
      await copyInto(tx, target, names, copyChunks(rows, encoded, names, kinds, batchUuidTs, onMisfit), this.yielding);
      await tx.unsafe("RELEASE SAVEPOINT sluice_copy");
      return encoded.reduce((n, g) => n + g.lines.length, rows.length);
    } catch (err) {
      if (sqlState(err) !== UNIQUE_VIOLATION) throw err;
      await tx.unsafe("ROLLBACK TO SAVEPOINT sluice_copy");
      discards.length = mark;
      // An id loaded before, or repeated within this batch (the latest received wins).
      rows = await withoutLoadedIds(tx, target, latestPerId([...rows, ...decodeAll(encoded, batchUuidTs)]));
      await copyInto(tx, target, names, copyChunks(rows, [], names, kinds, batchUuidTs, onMisfit), this.yielding);
      return rows.length;
    }
  }

  /** CREATE TABLE or ALTER TABLE ADD COLUMN for what the view says is missing; returns the table's columns. */
  private async applyTableSchema(
    tx: SQL,
    namespace: string,
    schema: NamespaceSchema,
    table: string,
    wanted: Record<string, WarehouseType>,
    keyOnId: boolean,
  ): Promise<Map<string, string>> {
    let columns = schema.get(table);
    if (!columns) {
      columns = new Map(Object.entries(wanted).map(([n, t]) => [n, POSTGRES_TYPES[t]]));
      const defs = [...columns].map(([n, t]) => `${ident(n)} ${t}${keyOnId && n === "id" ? " PRIMARY KEY" : ""}`);
      // Kept even if this load rolls back: the table is then missing from the schema view, and
      // the next load creates it again, with its key.
      if (keyOnId) this.keyedTables.get(namespace)?.add(table);
      if (table === DISCARDS_TABLE) defs.push(`UNIQUE (table_name, row_id, column_name)`);
      await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${qualified(namespace, table)} (${defs.join(", ")})`);
      schema.set(table, columns);
      return columns;
    }
    const missing = Object.entries(wanted).filter(([n]) => !columns.has(n));
    if (missing.length > 0) {
      await tx.unsafe(
        `ALTER TABLE ${qualified(namespace, table)} ${missing.map(([n, t]) => `ADD COLUMN IF NOT EXISTS ${ident(n)} ${POSTGRES_TYPES[t]}`).join(", ")}`,
      );
      for (const [n, t] of missing) columns.set(n, POSTGRES_TYPES[t]);
    }
    return columns;
  }

  /** Maps the client's errors to AppError: connection trouble is retryable, the rest is not. */
  private async guard<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw this.toAppError(err);
    }
  }

  private toAppError(err: unknown): unknown {
    if (err instanceof AppError) return err;
    const message = (err as Error)?.message ?? String(err);
    if (isRetryable(err)) {
      return withCause(new AppError("UNAVAILABLE", `${this.where} is unreachable: ${message}`), err);
    }
    const state = sqlState(err);
    return withCause(new AppError("INTERNAL", `${this.where}: ${message}${state ? ` (SQLSTATE ${state})` : ""}`), err);
  }
}

/** Sets the transaction's application_name: an operator, and the crash test, find the open load in pg_stat_activity by it. */
async function nameLoadTransaction(tx: SQL, appName: string): Promise<void> {
  await tx.unsafe(`SELECT set_config('application_name', $1, true)`, [appName]);
}

/** Names the transaction (nameLoadTransaction) and takes the namespace's lock. */
async function startLoadTransaction(tx: SQL, appName: string, namespace: string): Promise<void> {
  await nameLoadTransaction(tx, appName);
  // Two loads of one namespace at once would race on its DDL, on users and on the discards.
  await tx.unsafe(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`sluice-warehouse:${namespace}`]);
}

function copySchema(schema: NamespaceSchema): NamespaceSchema {
  return new Map([...schema].map(([t, cols]) => [t, new Map(cols)]));
}

/**
 * The batches in at most `n` lanes of about equal COPY text, biggest first; no empty lane.
 * Text, not rows: a table per event is two to three times as wide as `tracks`.
 */
function splitLanes(batches: TableBatch[], n: number): TableBatch[][] {
  // Measured once per batch: a batch's text is the sum over all its lines.
  const sized = batches.map((b) => ({
    b,
    size: b.rows.length * Object.keys(b.columns).length * 16 + (b.encoded ?? []).reduce((k, g) => g.lines.reduce((m, line) => m + line.length, k), 0),
  }));
  const lanes = Array.from({ length: n }, () => ({ size: 0, batches: [] as TableBatch[] }));
  for (const { b, size } of sized.sort((x, y) => y.size - x.size)) {
    const lane = lanes.reduce((min, l) => (l.size < min.size ? l : min));
    lane.batches.push(b);
    lane.size += size;
  }
  return lanes.map((l) => l.batches).filter((l) => l.length > 0);
}

/** Records a value that does not fit its column as a rudder_discards row. */
function misfitsInto(discards: Array<Record<string, unknown>>, table: string, uuidTs: string): OnMisfit {
  return (row, column, value, reason) => {
    discards.push({
      table_name: table,
      row_id: row.id ?? null,
      column_name: column,
      column_value: discardText(value),
      received_at: row.received_at ?? null,
      uuid_ts: uuidTs,
      reason,
    });
  };
}

/**
 * Keeps, for each id, the row with the latest received_at (RudderStack's dedup order).
 */
function latestPerId(rows: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  const byId = new Map<unknown, Record<string, unknown>>();
  let duplicates = false;
  for (const row of rows) {
    if (row.id === null || row.id === undefined) continue;
    const seen = byId.get(row.id);
    if (seen === undefined) byId.set(row.id, row);
    else {
      duplicates = true;
      if (String(row.received_at ?? "") >= String(seen.received_at ?? "")) byId.set(row.id, row);
    }
  }
  return duplicates || byId.size !== rows.length ? [...byId.values()] : rows;
}

/**
 * The rows whose id is not in the target yet. The caller holds the namespace's lock, so no
 * other load adds ids in between. With the primary key on id this is one index probe per id.
 */
async function withoutLoadedIds(tx: SQL, target: string, rows: Array<Record<string, unknown>>): Promise<Array<Record<string, unknown>>> {
  const ids = rows.map((r) => String(r.id));
  const found: Array<{ id: string }> = await tx.unsafe(`SELECT id FROM ${target} WHERE id = ANY($1::text[])`, [ids]);
  if (found.length === 0) return rows;
  const loaded = new Set(found.map((r) => r.id));
  return rows.filter((r) => !loaded.has(String(r.id)));
}

/**
 * A load worth trying again: the connection failed, or PostgreSQL ran out of resources (53), or
 * the transaction lost a serialization or deadlock conflict (40001, 40P01).
 */
function isRetryable(err: unknown): boolean {
  return isConnectionFailure(err) || /^(53|40001|40P01)/.test(sqlState(err));
}

// Errors that mean the database's schema is not what the cache says.
function isStaleSchemaError(err: unknown): boolean {
  return ["3F000", "42P01", "42703", "42P07", "42701", "42804", "22P02", "22003", "22007", "22008"].includes(sqlState(err));
}

function withCause(err: AppError, cause: unknown): AppError {
  (err as { cause?: unknown }).cause = cause;
  return err;
}

