/**
 * PostgreSQL COPY for the warehouse's loads: rows (and rows staged as COPY text) become COPY
 * text a chunk at a time, and go to the server while intake is given its turns (intake-yield.ts).
 * Values that do not fit their column become NULL and are reported to the caller (OnMisfit).
 */
import type { SQL } from "bun";
import type { IntakeYield } from "./intake-yield.ts";
import { COPY_NULL, copyEncoder, copyField, fitValue, type ColumnKind } from "./postgres-values.ts";
import { ident } from "./sql-names.ts";
import { decodeStagedLine, linePlan, planLine } from "./staged-rows.ts";
import type { EncodedRows, WarehouseType } from "./types.ts";

// COPY data goes out in pieces of about this size, so a big table never becomes one string.
const COPY_CHUNK_CHARS = 1 << 20;

/** Told of each value that does not fit its column (it is loaded as NULL). */
export type OnMisfit = (row: Record<string, unknown>, column: string, value: unknown, reason: string) => void;

/**
 * COPY text for the rows, a chunk at a time, so that encoding the next chunk overlaps
 * PostgreSQL parsing the last one. Values that do not fit become NULL and are reported.
 * `encoded` rows (staged as COPY text) are passed on as they are where their columns take their
 * values unchanged, else decoded and checked like the others.
 */
export function* copyChunks(
  rows: Array<Record<string, unknown>>,
  encoded: EncodedRows[],
  names: string[],
  kinds: ColumnKind[],
  uuidTs: string,
  onMisfit: OnMisfit,
): Generator<string> {
  const encoders = kinds.map(copyEncoder);
  const fields: string[] = new Array(names.length);
  let chunk = "";
  const encode = (row: Record<string, unknown>) => {
    for (let i = 0; i < names.length; i++) {
      const value = row[names[i]!];
      const field = encoders[i]!(value);
      if (field === undefined) {
        const fitted = fitValue(value, kinds[i]!);
        onMisfit(row, names[i]!, value, typeof fitted === "object" && fitted !== null ? fitted.reason : "incompatible value");
        fields[i] = COPY_NULL;
      } else fields[i] = field;
    }
    return fields.join("\t");
  };
  for (const row of rows) {
    chunk += encode(row) + "\n";
    if (chunk.length >= COPY_CHUNK_CHARS) {
      yield chunk;
      chunk = "";
    }
  }
  const uuidTsField = copyField(uuidTs);
  for (const group of encoded) {
    const plan = linePlan(group.layout, names, kinds);
    for (const line of group.lines) {
      chunk += (plan ? planLine(line, plan, uuidTsField) : encode(decodeStagedLine(line, group.layout, uuidTs))) + "\n";
      if (chunk.length >= COPY_CHUNK_CHARS) {
        yield chunk;
        chunk = "";
      }
    }
  }
  if (chunk) yield chunk;
}

/** A batch's columns in COPY order: uuid_ts last, where rows staged as COPY text leave it. */
export function copyColumns(columns: Record<string, WarehouseType>): string[] {
  const names = Object.keys(columns);
  const at = names.indexOf("uuid_ts");
  if (at >= 0 && at < names.length - 1) names.push(...names.splice(at, 1));
  return names;
}

/** The values of rows staged as COPY text. */
export function decodeAll(encoded: EncodedRows[], uuidTs: string): Array<Record<string, unknown>> {
  return encoded.flatMap((g) => g.lines.map((line) => decodeStagedLine(line, g.layout, uuidTs)));
}

/** COPY into `target` (quoted, maybe schema-qualified) of the given columns; pausing after each chunk while intake is busy. */
export async function copyInto(tx: SQL, target: string, names: string[], chunks: Iterable<string>, yielding: IntakeYield | undefined): Promise<void> {
  const stream = tx.unsafe(`COPY ${target} (${names.map(ident).join(", ")}) FROM STDIN`).writable();
  const writer = stream.getWriter();
  try {
    const pace = yielding?.forCopy();
    for (const c of chunks) {
      // PostgreSQL parses this chunk while the next one is encoded.
      const started = performance.now();
      await writer.write(c);
      await pace?.sent(c.length, performance.now() - started);
    }
    await writer.close();
  } catch (err) {
    await writer.abort(err).catch(() => {});
    throw err;
  }
}
