/**
 * PostgreSQL twin of db/schema/warehouse.ts. `columns`, `row` and `rows` stay JSON text, as
 * SQLite keeps them (plain text there, not mode json), so the code reading them is shared.
 * On PostgreSQL a load marks the exact staged ids it read, not `id <= last` (design §3.8).
 */
import { sql } from "drizzle-orm";
import { bigint, index, integer, pgTable, text } from "drizzle-orm/pg-core";
import { ms } from "./columns";

export const warehouseStaged = pgTable(
  "warehouse_staged",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    destinationId: text("destination_id").notNull(),
    workspaceId: text("workspace_id").notNull(),
    namespace: text("namespace").notNull(),
    tableName: text("table_name").notNull(),
    columns: text("columns").notNull(),
    columnsId: bigint("columns_id", { mode: "number" }),
    row: text("row").notNull(),
    eventId: text("event_id").notNull(),
    userKey: text("user_key").notNull(),
    stagedAt: ms("staged_at").notNull(),
    loadId: text("load_id"),
  },
  (t) => [
    index("warehouse_staged_waiting").on(t.destinationId, t.id).where(sql`load_id IS NULL`),
    index("warehouse_staged_load").on(t.loadId),
    index("warehouse_staged_user").on(t.destinationId, t.userKey),
  ],
);

/** Twin of SQLite's warehouse_columns: each distinct `columns` JSON once, found by its SHA-256. */
export const warehouseColumns = pgTable("warehouse_columns", {
  id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
  hash: text("hash").notNull().unique(),
  columns: text("columns").notNull(),
});

export const warehouseLoads = pgTable(
  "warehouse_loads",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull(),
    destinationId: text("destination_id").notNull(),
    status: text("status").notNull(),
    trigger: text("trigger").notNull(),
    attempt: integer("attempt").notNull().default(1),
    dueAt: ms("due_at").notNull(),
    createdAt: ms("created_at").notNull(),
    startedAt: ms("started_at"),
    finishedAt: ms("finished_at"),
    rows: text("rows"),
    discards: integer("discards"),
    error: text("error"),
  },
  (t) => [index("warehouse_loads_destination").on(t.destinationId, t.createdAt), index("warehouse_loads_status").on(t.status, t.dueAt)],
);
