/**
 * The staged row format, shaped for the load's speed: written by the stager (staging.ts), read back
 * into TableBatches on the load thread (load-worker.ts), turned into COPY lines by the loader
 * (postgres-loader.ts).
 *
 * A row of an event table (tracks, one table per event, identifies, pages, …) is staged as the
 * text COPY takes: its fields in the order of its `columns`' keys, each encoded for the type its
 * value was inferred as, uuid_ts left out (it is the load's time, not the staging time). Staged
 * as JSON, a load had to parse every row and encode it for COPY again: with reading the longer
 * text, about half of a whole load. Now, when the target's columns take those types as they are
 * (the usual case: the table was made from the same inference), a line goes to COPY without
 * being parsed; otherwise its fields are decoded back into values and take the same path as a
 * JSON row, so a value that does not fit still goes to rudder_discards.
 *
 * `users`, identity merge rules and discards stay JSON: their rows are merged by value. So does
 * a row whose value does not fit its own inferred type, and every row staged before this format.
 */
import { ownValue } from "../lib/safe-keys.ts";
import { COPY_NULL, type ColumnKind, copyEncoder } from "./postgres-values.ts";
import type { StagedRow } from "./store.ts";
import type { EncodedRows, StagedLayout, TableBatch, WarehouseType } from "./types.ts";

/** Marks a row staged as COPY text; a JSON row starts with "{". */
export const COPY_ROW_PREFIX = "#";

const UUID_TS = "uuid_ts";

/** Tables whose staged rows stay JSON: the loader merges them by value, not by COPY alone. */
const JSON_TABLES: ReadonlySet<string> = new Set(["users", "rudder_identity_merge_rules", "rudder_discards"]);

// A json value is JSON text already (inferValue): staged as a string, it encodes the same.
const STAGING_ENCODERS: Record<WarehouseType, (v: unknown) => string | undefined> = {
  string: copyEncoder("string"),
  int: copyEncoder("int"),
  float: copyEncoder("float"),
  boolean: copyEncoder("boolean"),
  datetime: copyEncoder("datetime"),
  json: copyEncoder("string"),
};

/**
 * The row as staged text: COPY fields (after COPY_ROW_PREFIX) for an event table, else JSON.
 * A value that does not fit its own inferred type keeps the row JSON, so the load decides.
 */
export function stagedRowText(table: string, columns: Record<string, WarehouseType>, row: Record<string, unknown>): string {
  if (JSON_TABLES.has(table)) return JSON.stringify(row);
  let line = COPY_ROW_PREFIX;
  let first = true;
  for (const name in columns) {
    if (name === UUID_TS) continue;
    const field = STAGING_ENCODERS[columns[name]!](row[name]);
    if (field === undefined) return JSON.stringify(row);
    line += first ? field : "\t" + field;
    first = false;
  }
  return line;
}

function layoutOf(columns: Record<string, WarehouseType>): StagedLayout {
  const names: string[] = [];
  const types: WarehouseType[] = [];
  for (const name in columns) {
    if (name === UUID_TS) continue;
    names.push(name);
    types.push(columns[name]!);
  }
  return { names, types, uuidTs: UUID_TS in columns };
}

/**
 * The union of the rows' columns; a column seen as int and as float becomes float. Only own
 * keys count as seen: a property named `constructor` is a column, not Object's constructor.
 */
function mergeColumns(into: Record<string, WarehouseType>, columns: Record<string, WarehouseType>) {
  for (const name in columns) {
    const type = columns[name]!;
    const seen = ownValue(into, name);
    if (seen === undefined) into[name] = type;
    else if (seen === "int" && type === "float") into[name] = "float";
  }
}

/**
 * Staged rows as one TableBatch per namespace and table: JSON rows parsed (uuid_ts set to the
 * load's time), COPY rows grouped by their columns, unparsed.
 */
export function batchesByNamespace(rows: Array<Pick<StagedRow, "namespace" | "tableName" | "columns" | "row">>, uuidTs: string): Map<string, TableBatch[]> {
  const byNamespace = new Map<string, Map<string, TableBatch>>();
  // Most rows of a table share one columns text: parse each distinct one once.
  const parsed = new Map<string, { columns: Record<string, WarehouseType>; layout?: StagedLayout }>();
  const groups = new Map<TableBatch, Map<string, EncodedRows>>();
  for (const r of rows) {
    let tables = byNamespace.get(r.namespace);
    if (!tables) byNamespace.set(r.namespace, (tables = new Map()));
    let batch = tables.get(r.tableName);
    if (!batch) tables.set(r.tableName, (batch = { table: r.tableName, columns: {}, rows: [], uuidTs }));
    let cols = parsed.get(r.columns);
    if (!cols) parsed.set(r.columns, (cols = { columns: JSON.parse(r.columns) as Record<string, WarehouseType> }));
    mergeColumns(batch.columns, cols.columns);
    if (r.row.startsWith(COPY_ROW_PREFIX)) {
      let byColumns = groups.get(batch);
      if (!byColumns) groups.set(batch, (byColumns = new Map()));
      let group = byColumns.get(r.columns);
      if (!group) {
        byColumns.set(r.columns, (group = { layout: (cols.layout ??= layoutOf(cols.columns)), lines: [] }));
        (batch.encoded ??= []).push(group);
      }
      group.lines.push(r.row);
      continue;
    }
    const row = JSON.parse(r.row);
    // uuid_ts is the load time (RudderStack's meaning), not the time the row was staged.
    if (UUID_TS in row) row[UUID_TS] = uuidTs;
    batch.rows.push(row);
  }
  return new Map([...byNamespace].map(([ns, tables]) => [ns, [...tables.values()]]));
}

const ESCAPED = /\\(.)/g;

function unescapeField(field: string): string {
  return field.includes("\\") ? field.replace(ESCAPED, (_m, c: string) => (c === "t" ? "\t" : c === "n" ? "\n" : c === "r" ? "\r" : c)) : field;
}

/** A staged COPY line's values, as the JSON row would have had them (uuid_ts set to `uuidTs`). */
export function decodeStagedLine(line: string, layout: StagedLayout, uuidTs: string): Record<string, unknown> {
  const fields = line.slice(COPY_ROW_PREFIX.length).split("\t");
  const row: Record<string, unknown> = {};
  for (let i = 0; i < layout.names.length; i++) {
    const field = fields[i] ?? COPY_NULL;
    const type = layout.types[i]!;
    row[layout.names[i]!] =
      field === COPY_NULL ? null : type === "int" || type === "float" ? Number(field) : type === "boolean" ? field === "t" : unescapeField(field);
  }
  if (layout.uuidTs) row[UUID_TS] = uuidTs;
  return row;
}

/** Whether a column of `kind` writes a value inferred as `type` with the same COPY text. */
function takesAsIs(type: WarehouseType, kind: ColumnKind): boolean {
  if (type === kind) return true;
  if (kind === "string") return type !== "boolean";
  return kind === "float" && type === "int";
}

export interface LinePlan {
  from: number[];
  asIs: boolean;
  uuidLast: boolean;
}

/**
 * How lines of one layout become lines of a COPY into `names` (of kinds `kinds`):
 * - `null`: a column does not take its values as they are; decode and check each value;
 * - otherwise, per COPY column, the staged field it takes (-1: none, NULL; -2: uuid_ts).
 *   `asIs` when that is the staged line itself, uuid_ts last.
 */
export function linePlan(layout: StagedLayout, names: string[], kinds: ColumnKind[]): LinePlan | null {
  const at = new Map(names.map((n, i) => [n, i]));
  const from = new Array<number>(names.length).fill(-1);
  for (let j = 0; j < layout.names.length; j++) {
    const i = at.get(layout.names[j]!);
    if (i === undefined || !takesAsIs(layout.types[j]!, kinds[i]!)) return null;
    from[i] = j;
  }
  const uuidAt = at.get(UUID_TS);
  if (uuidAt !== undefined && layout.uuidTs) from[uuidAt] = -2;
  const n = layout.names.length;
  const asIs = from.every((j, i) => (i < n ? j === i : i === n && j === -2));
  return { from, asIs, uuidLast: from.at(-1) === -2 };
}

/** One staged COPY line as a line of the COPY that `plan` is for (no newline). */
export function planLine(line: string, plan: LinePlan, uuidTsField: string): string {
  if (plan.asIs) return plan.uuidLast ? line.slice(COPY_ROW_PREFIX.length) + "\t" + uuidTsField : line.slice(COPY_ROW_PREFIX.length);
  const fields = line.slice(COPY_ROW_PREFIX.length).split("\t");
  return plan.from.map((j) => (j >= 0 ? fields[j]! : j === -2 ? uuidTsField : COPY_NULL)).join("\t");
}
