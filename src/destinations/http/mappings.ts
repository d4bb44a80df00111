/**
 * The `{from, to}` mappings of RudderStack's HTTP destination, evaluated as RudderStack's mapping
 * engine evaluates them, for the body, the headers and the query parameters alike.
 */
import { setOwn } from "../../lib/safe-keys";
import { isPlainObject } from "../shared";
import { type SluiceEvent, TransformError } from "../types";
import { type Segment, isWild, listAt, parsePath, readMatches, readSource, writePath } from "./json-path";

type Mapping = { from?: string; to?: string };

/**
 * Globals an expression may name in RudderStack's mapping sandbox. Any other leading name is
 * unknown there, and RudderStack refuses the event naming it.
 */
const SANDBOX_GLOBALS = new Set([
  "Math", "JSON", "Number", "String", "Boolean", "Object", "Array", "Date", "RegExp", "Symbol", "Map", "Set", "BigInt",
  "parseInt", "parseFloat", "isNaN", "isFinite", "encodeURIComponent", "decodeURIComponent", "encodeURI", "decodeURI",
  "undefined", "NaN", "Infinity", "true", "false", "null", "typeof", "new", "function", "let", "const", "return",
]);

/**
 * RudderStack evaluates a `from` that holds a `$` without being a quoted constant as an
 * expression of its mapping language (`process.env||$.userId`, `'a-' + $.id`). Sluice reads
 * only JSON paths and constants, so such a mapping refuses the event: in RudderStack's words
 * when the expression starts with a name its sandbox does not know.
 */
function refuseExpression(from: string): never {
  const name = /^([A-Za-z_][\w]*)/.exec(from.trim())?.[1];
  if (name !== undefined && !SANDBOX_GLOBALS.has(name)) throw new TransformError(`Error in custom mappings: ${name} is not defined`);
  throw new TransformError(`Error in custom mappings: '${from}' is an expression; only JSON paths ($.a.b) and constants are supported`);
}

const isQuoted = (from: string) => from.length >= 2 && from.startsWith("'") && from.endsWith("'");

/** A mapping's source: a JSON path into the event, a 'quoted' constant, or any other text as a constant. */
function source(from: string): { path: Segment[] } | { constant: string } {
  if (from.trim().startsWith("$")) return { path: parsePath(from) };
  if (isQuoted(from)) return { constant: from.slice(1, -1) };
  if (from.includes("$")) refuseExpression(from);
  return { constant: from };
}

function valueOf(event: SluiceEvent, from: string): unknown {
  const s = source(from);
  return "path" in s ? readSource(event, s.path) : s.constant;
}

/** A `to` starting with `$` is a JSON path (`$.h1`, `$.'content-type'`, `$['q1']`); any other is the key itself. */
const targetOf = (to: string): Segment[] => (to.trim().startsWith("$") ? parsePath(to) : [{ key: to }]);

const wildIndex = (segments: Segment[]) => segments.findIndex(isWild);

/**
 * The list a group of `…[*].x` targets builds. Its length follows the first source of the
 * group with a wildcard (`$.products[*].id`): one element per item, kept even when every value
 * of it is missing, and none when that list is missing or empty. For each element, a wildcard
 * source reads what follows its own wildcard in that item (`$.products[*].name`: the item's
 * name); any other source gives its whole value (a constant, a scalar, even a list). A group
 * without a wildcard source builds one element.
 */
function buildList(event: SluiceEvent, rows: Array<{ from: string; target: Segment[] }>): unknown[] {
  const sources = rows.map((r) => source(r.from));
  const lead = sources.find((s): s is { path: Segment[] } => "path" in s && wildIndex(s.path) !== -1);
  let items: unknown[] = [undefined];
  if (lead) {
    const w = wildIndex(lead.path);
    items = listAt(event, lead.path.slice(0, w), lead.path[w]!) ?? [];
  }
  return items.map((item) => {
    const element: Record<string, unknown> = {};
    rows.forEach((row, i) => {
      const s = sources[i]!;
      let value: unknown;
      if ("constant" in s) value = s.constant;
      else {
        const w = wildIndex(s.path);
        value = w === -1 ? readSource(event, s.path) : readSource(item, s.path.slice(w + 1));
      }
      writePath(element, row.target.slice(wildIndex(row.target) + 1), value);
    });
    return element;
  });
}

/**
 * Builds an object from `{from, to}` mappings, in order. Every target's containers are built
 * even when its source is missing. Targets through one `[*]` list (`$.items[*].id`,
 * `$.items[*].name`) are built together (buildList); a target that ends in `[*]` takes the
 * source's value as the list (a single value becoming a list of one; a wildcard source gives
 * its matches, none making an empty list). Values are as read:
 * removing nulls is the body's business, not the headers' or the query's.
 */
export function applyMappings(event: SluiceEvent, mappings: unknown): Record<string, any> {
  const out: Record<string, any> = {};
  if (!Array.isArray(mappings)) return out;
  const rows = (mappings as Mapping[])
    .filter((m): m is { from: string; to: string } => typeof m?.from === "string" && m.from !== "" && typeof m?.to === "string" && m.to !== "")
    .map((m) => ({ from: m.from, target: targetOf(m.to) }));
  const isGrouped = (r: { target: Segment[] }) => {
    const w = wildIndex(r.target);
    return w !== -1 && w < r.target.length - 1;
  };
  const prefixKey = (r: { target: Segment[] }) => JSON.stringify(r.target.slice(0, wildIndex(r.target)));
  const built = new Set<string>();
  for (const row of rows) {
    const w = wildIndex(row.target);
    if (w === -1) {
      writePath(out, row.target, valueOf(event, row.from));
      continue;
    }
    const prefix = row.target.slice(0, w);
    if (prefix.length === 0) throw new TransformError("HTTP mapping target cannot be a wildcard at the root");
    if (!isGrouped(row)) {
      const s = source(row.from);
      if ("path" in s && wildIndex(s.path) !== -1) writePath(out, prefix, readMatches(event, s.path));
      else {
        const value = "path" in s ? readSource(event, s.path) : s.constant;
        if (value !== undefined) writePath(out, prefix, Array.isArray(value) ? value : [value]);
      }
      continue;
    }
    const key = prefixKey(row);
    if (built.has(key)) continue;
    built.add(key);
    writePath(out, prefix, buildList(event, rows.filter((r) => isGrouped(r) && prefixKey(r) === key)));
  }
  return out;
}

/**
 * The body without null or missing values at any depth, as RudderStack cleans it before
 * sending: keys go, but a list keeps its length, a removed item becoming null (as RudderStack's
 * list, with the item deleted, is written as JSON).
 */
export function withoutNulls<T>(value: T): T {
  if (Array.isArray(value)) return Array.from(value, (v) => (v === null || v === undefined ? null : withoutNulls(v))) as T;
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== null && v !== undefined) setOwn(out, k, withoutNulls(v));
    return out as T;
  }
  return value;
}
