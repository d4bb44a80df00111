import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Warehouse rows waiting for (or done with) a load: one row per (event, table) for a warehouse
 * destination. The router writes them instead of sending the event; a load reads the waiting
 * ones: no load id and above the destination's last loaded range (warehouseLoadedRanges).
 */
export const warehouseStaged = sqliteTable(
  "warehouse_staged",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    destinationId: text("destination_id").notNull(),
    workspaceId: text("workspace_id").notNull(),
    namespace: text("namespace").notNull(),
    tableName: text("table_name").notNull(),
    /**
     * JSON: column → warehouse type (TableRow.columns), for rows staged before `columns_id`;
     * empty when `columns_id` names it.
     */
    columns: text("columns").notNull(),
    /** The row's columns in warehouse_columns: most rows of a table share them, and the text is long. */
    columnsId: integer("columns_id"),
    /** The values: COPY text or JSON (src/warehouse/staged-rows.ts). */
    row: text("row").notNull(),
    /** The event's messageId (the row's `id` in most tables). */
    eventId: text("event_id").notNull(),
    /** userId, else anonymousId: what a regulation deletes by. */
    userKey: text("user_key").notNull(),
    stagedAt: integer("staged_at").notNull(),
    /**
     * Set when a load committed this row to the warehouse, row by row: where a range could not
     * say it (a page of the load where a namespace failed). Otherwise the range says it.
     */
    loadId: text("load_id"),
  },
  (t) => [
    // Partial: a load reads only the rows still waiting, however many were loaded before.
    index("warehouse_staged_waiting").on(t.destinationId, t.id).where(sql`load_id IS NULL`),
    index("warehouse_staged_load").on(t.loadId),
    index("warehouse_staged_user").on(t.destinationId, t.userKey),
  ],
);

/**
 * SQLite only: ids a load took whole. Every staged row of the destination with from_id ≤ id ≤
 * to_id and no load id of its own was loaded by `load_id`, and no row below the destination's
 * highest to_id waits. One row per page a load committed in full, instead of rewriting each
 * staged row (about 4.5 µs each, 0.9 s of a load of 100,000 events). Exact on SQLite, where ids
 * are given in commit order by one writer; PostgreSQL's concurrent writers commit ids out of
 * order, so its store marks each row (design §3.8), and `sluice migrate-to-postgres` turns
 * these ranges into row marks.
 */
export const warehouseLoadedRanges = sqliteTable(
  "warehouse_loaded_ranges",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    destinationId: text("destination_id").notNull(),
    loadId: text("load_id").notNull(),
    fromId: integer("from_id").notNull(),
    toId: integer("to_id").notNull(),
  },
  (t) => [index("warehouse_loaded_ranges_destination").on(t.destinationId, t.toId), index("warehouse_loaded_ranges_load").on(t.loadId)],
);

/**
 * Each distinct `columns` JSON of staged rows, once: a staged row names it by id. Found by the
 * text's SHA-256 (`hash`), as PostgreSQL cannot index text this long. Rows here are never
 * deleted: there are as many as distinct table shapes.
 */
export const warehouseColumns = sqliteTable("warehouse_columns", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  hash: text("hash").notNull().unique(),
  columns: text("columns").notNull(),
});

/** One row per load attempt of a warehouse destination: queued, running, succeeded or failed. */
export const warehouseLoads = sqliteTable(
  "warehouse_loads",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull(),
    destinationId: text("destination_id").notNull(),
    /** queued | running | succeeded | failed */
    status: text("status").notNull(),
    /** api | schedule | retry | more (the previous load left staged rows behind) */
    trigger: text("trigger").notNull(),
    attempt: integer("attempt").notNull().default(1),
    dueAt: integer("due_at").notNull(),
    createdAt: integer("created_at").notNull(),
    startedAt: integer("started_at"),
    finishedAt: integer("finished_at"),
    /** JSON: table → rows written. */
    rows: text("rows"),
    discards: integer("discards"),
    error: text("error"),
  },
  (t) => [index("warehouse_loads_destination").on(t.destinationId, t.createdAt), index("warehouse_loads_status").on(t.status, t.dueAt)],
);
