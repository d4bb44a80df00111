/**
 * The shapes the warehouse parts share: events become rows of RudderStack's
 * warehouse tables (schema.ts), rows are staged on disk, and a loader writes them into the
 * user's database (postgres-loader.ts).
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
  /** Rows staged as COPY text (staged-rows.ts), by their columns; loaded with `rows`. */
  encoded?: EncodedRows[];
  /** The load's time, written as uuid_ts of the `encoded` rows. */
  uuidTs?: string;
}

/** Staged COPY lines of rows with the same columns (staged-rows.ts). */
export interface EncodedRows {
  layout: StagedLayout;
  lines: string[];
}

/** The fields of rows staged with one `columns` text. */
export interface StagedLayout {
  /** The fields' columns, in order; uuid_ts is not among them. */
  names: string[];
  types: WarehouseType[];
  /** The rows had a uuid_ts column: the loader writes the load's time there. */
  uuidTs: boolean;
}
