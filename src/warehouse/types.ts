/**
 * The shapes the warehouse parts share (issue 22): events become rows of RudderStack's
 * warehouse tables (schema.ts), rows are staged on disk, and a loader writes them into the
 * user's database (postgres.ts).
 */

/** RudderStack's warehouse data types; each loader maps them to its database's own types. */
export type WarehouseType = "string" | "int" | "float" | "boolean" | "datetime" | "json";

/** One row for one table: its columns' types and its values, by column name. */
export interface TableRow {
  table: string;
  columns: Record<string, WarehouseType>;
  row: Record<string, unknown>;
}

/** Rows of one table, ready for a load: the union of their columns and the rows. */
export interface TableBatch {
  table: string;
  columns: Record<string, WarehouseType>;
  rows: Array<Record<string, unknown>>;
}
