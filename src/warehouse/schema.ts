/**
 * Events to warehouse rows: the rows RudderStack's warehouse transform makes of one
 * event for PostgreSQL, table by table, with its names, its flattening and its type inference,
 * so a warehouse first filled by RudderStack keeps its tables and columns when Sluice takes over.
 *
 * Followed: rudder-server's Go port of the transform (warehouse/transformer/, which replaced
 * rudder-transformer's src/warehouse/index.js and behaves the same), read for its rules and
 * tests. Where Sluice differs on purpose, the comment at the spot says so.
 */
import { AppError } from "../lib/errors";
import { POSTGRES_RESERVED_WORDS } from "./reserved-words";
import type { TableRow, WarehouseType } from "./types";

/**
 * The column type of each warehouse type on PostgreSQL, as RudderStack's PostgreSQL integration
 * creates them: `numeric` for float, `jsonb` for json (the keys named by `jsonPaths`). Only new
 * columns get these: a column that exists keeps its type (one made `double precision` or `text`
 * by an earlier Sluice still loads; postgres-values.ts fits each value to the column it meets).
 */
export const POSTGRES_TYPES: Readonly<Record<WarehouseType, string>> = {
  string: "text",
  int: "bigint",
  float: "numeric",
  boolean: "boolean",
  datetime: "timestamp with time zone",
  json: "jsonb",
};

// JSON's escape of NUL, where it is one: not preceded by an odd run of backslashes (`\\u0000`
// is a backslash and the text "u0000").
const NUL_ESCAPE = /(?<!\\)((?:\\\\)*)\\u0000/g;

/**
 * A value as JSON text without NUL characters. RudderStack strips NUL (`\u0000`) from every
 * event before it is stored, so none reaches its warehouse; PostgreSQL's jsonb refuses it, and
 * one such value would fail a whole COPY.
 */
export function jsonText(value: unknown): string {
  return withoutNulEscapes(JSON.stringify(value));
}

/** JSON text without its NUL escapes (still valid JSON: each was one character of a string). */
export function withoutNulEscapes(text: string): string {
  return text.includes("\\u0000") ? text.replace(NUL_ESCAPE, "$1") : text;
}

/** PostgreSQL cuts identifiers at 63 bytes; RudderStack cuts names there itself first. */
export const POSTGRES_MAX_IDENTIFIER = 63;

/** RudderStack rejects an event with more columns than this (uuid_ts included), unless it comes from a RudderStack Sources sync. */
export const DEFAULT_MAX_COLUMNS = 200;

export interface EventRowsOptions {
  /** The load time, ISO 8601: every row's `uuid_ts`. */
  uuidTs: string;
  /** Written into the event's context as RudderStack does (`context_source_id`, …). */
  source?: { id?: string; type?: string };
  destination?: { id?: string; type?: string };
  /** RudderStack's destination settings of the same names; all off by default, as for a new destination. */
  skipTracksTable?: boolean;
  skipUsersTable?: boolean;
  /** true: `omega v2` → `omega_v_2` (destinations made before the option existed); false: `omega_v2`. */
  underscoreDivideNumbers?: boolean;
  /** identify: also copy `context.traits.*` into top-level columns of identifies/users. */
  allowUsersContextTraits?: boolean;
  /**
   * The destination's `jsonPaths` setting, as RudderStack's: comma-separated paths whose values
   * become one `json` column each instead of being flattened (`track.properties.cart`, or
   * without the event type in front, the legacy form, for track properties: `cart`).
   */
  jsonPaths?: string;
  maxColumns?: number;
}

interface NamingOptions {
  underscoreDivideNumbers?: boolean;
  skipReservedKeywordsEscaping?: boolean;
}

// ---------------------------------------------------------------------------------------------
// Names

/**
 * Word splitting of lodash's `words`, which RudderStack's snake case is built on, reduced to
 * the ASCII letters, digits and underscores that reach it (everything else is cut before).
 * The "with numbers" variant keeps letters and the digits next to them in one word.
 */
const WORD = /[A-Z]?[a-z]+(?=[^A-Za-z0-9]|[A-Z]|$)|[A-Z]+(?=[^A-Za-z0-9]|[A-Z][a-z]|$)|[A-Z]?[a-z]+|[A-Z]+|\d*(?:1ST|2ND|3RD|(?![123])\dTH)(?=\b|[a-z_])|\d*(?:1st|2nd|3rd|(?![123])\dth)(?=\b|[A-Z_])|\d+/g;
const WORD_WITH_NUMBERS = new RegExp(
  "[A-Z]?[a-z]+\\d+|[A-Z]+\\d+|\\d+[A-Z]?[a-z]+|\\d+[A-Z]+|" + WORD.source,
  "g",
);
/** lodash only runs the word regex when a string has more than plain space-separated words. */
const NEEDS_WORD_REGEX = /[a-z][A-Z]|[A-Z]{2}[a-z]|[0-9][a-zA-Z]|[a-zA-Z][0-9]|[^a-zA-Z0-9 ]/;
const PLAIN_WORD = /[A-Za-z0-9]+/g;

function snakeCase(s: string, divideNumbers: boolean): string {
  const re = NEEDS_WORD_REGEX.test(s) ? (divideNumbers ? WORD : WORD_WITH_NUMBERS) : PLAIN_WORD;
  return (s.match(re) ?? []).join("_").toLowerCase();
}

/** Runs of ASCII letters and digits, joined with `_`: every other character (accents, emoji, `$`) separates. */
function alphanumericRuns(name: string): string {
  return name.replace(/[^A-Za-z0-9]+/g, " ").trim().replace(/ /g, "_");
}

function startsWithDigit(s: string): boolean {
  const c = s.charCodeAt(0);
  return c >= 48 && c <= 57;
}

/**
 * RudderStack's name transform (its `transformName`): snake case over the ASCII letters and
 * digits, leading underscores kept (users escape rudder's own columns with them), `_` before a
 * leading digit. `Product Viewed` → `product_viewed`, `CamelCase123Key` → `camel_case123_key`,
 * `Cízǔ` → `c_z`, `@#$%` → `` (empty: the column is dropped).
 */
export function transformName(name: string, opts: NamingOptions = {}): string {
  const runs = alphanumericRuns(name);
  const lead = /^_*/.exec(name)![0];
  let out = lead + snakeCase(runs, opts.underscoreDivideNumbers === true);
  if (startsWithDigit(out)) out = `_${out}`;
  return out;
}

/** The table and column rule (RudderStack's `safeName` for PostgreSQL): 63 characters, lower case, `_` before a reserved word. */
export function safeName(name: string, opts: NamingOptions = {}): string {
  let out = name.slice(0, POSTGRES_MAX_IDENTIFIER).toLowerCase();
  if (!opts.skipReservedKeywordsEscaping && POSTGRES_RESERVED_WORDS.has(out)) out = `_${out}`;
  return out;
}

/** A property path (`address_city`, `firstName`) as its column: "" when nothing of it is usable. */
export function columnName(key: string, opts: NamingOptions = {}): string {
  const transformed = transformName(key, opts).slice(0, POSTGRES_MAX_IDENTIFIER);
  return transformed === "" ? "" : safeName(transformed, opts);
}

/** Tables a track event must not land in: RudderStack's own, and (Sluice's addition) the loader's. */
const RUDDER_CREATED_TABLES = new Set(["tracks", "pages", "screens", "aliases", "groups", "accounts"]);
const RUDDER_ISOLATED_TABLES = new Set(["users", "identifies"]);
// RudderStack would let `Rudder Discards` write into its discards table; Sluice's loader owns these.
const LOADER_TABLES = new Set(["rudder_discards", "rudder_identity_merge_rules", "rudder_identity_mappings"]);

/**
 * The table of a track event: `Product Viewed` → `product_viewed`; `users` → `_users`,
 * `tracks` → `_tracks`, `select` → `_select`, `9 lives` → `_9_lives`. "" when the name has no
 * usable character: such an event gets a `tracks` row only.
 */
export function eventTableName(event: string, opts: NamingOptions = {}): string {
  const transformed = transformName(event, opts);
  if (transformed.trim() === "") return "";
  const table = safeName(transformed.slice(0, POSTGRES_MAX_IDENTIFIER), opts);
  if (RUDDER_ISOLATED_TABLES.has(table) || LOADER_TABLES.has(table)) return `_${table}`;
  if (RUDDER_CREATED_TABLES.has(table) && !opts.skipReservedKeywordsEscaping) return `_${table}`;
  return table;
}

/**
 * The default schema of a source's events (RudderStack's `safeNamespace`): the source name in
 * snake case, digits split off (`web2` → `web_2`), `_` before a leading digit or a reserved
 * word, `stringempty` when nothing is left. Cut to 63 characters, which PostgreSQL would do silently.
 */
export function defaultNamespace(sourceName: string): string {
  let ns = snakeCase(alphanumericRuns(sourceName), true);
  if (startsWithDigit(ns) || POSTGRES_RESERVED_WORDS.has(ns)) ns = `_${ns}`;
  if (ns === "") ns = "stringempty";
  return ns.slice(0, POSTGRES_MAX_IDENTIFIER);
}

// Names repeat across events (the same 30 properties, the same context), and the regexes
// dominate the transform's cost; the cache is dropped whole when full rather than tracked.
const NAME_CACHE_LIMIT = 50_000;
const nameCaches = new Map<string, Map<string, string>>();
const eventNames = new Map<string, string>();
const eventTables = new Map<string, string>();

function nameCacheFor(opts: NamingOptions): Map<string, string> {
  const flags = `${opts.underscoreDivideNumbers ? 1 : 0}${opts.skipReservedKeywordsEscaping ? 1 : 0}`;
  let cache = nameCaches.get(flags);
  if (!cache) nameCaches.set(flags, (cache = new Map()));
  return cache;
}

function cachedName(cache: Map<string, string>, key: string, make: (key: string) => string): string {
  let name = cache.get(key);
  if (name === undefined) {
    if (cache.size >= NAME_CACHE_LIMIT) cache.clear();
    name = make(key);
    cache.set(key, name);
  }
  return name;
}

// ---------------------------------------------------------------------------------------------
// Values and types

const MAX_TIMESTAMP_LENGTH = 40;
const ISO_DATETIME =
  /^([+-]?)(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])(?:[T ]([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.(\d+))?)?(Z|z|[+-](?:[01]\d|2[0-3])(?::?[0-5]\d)?)?)?$/;
// Date.UTC maps years below 100 to 19xx, hence setUTCFullYear.
const MIN_MS = (() => {
  const d = new Date(0);
  d.setUTCFullYear(1, 0, 1);
  d.setUTCHours(0, 0, 0, 0);
  return d.getTime();
})();
const MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * An ISO 8601 date or date-time between years 1 and 9999 (`2021-09-01`, `2021-09-01T10:00Z`,
 * `2021-09-01 10:00:00.123+05:30`), as UTC milliseconds; undefined for anything else,
 * including dates that do not exist (`2021-02-30`). RudderStack's test is a regex of this
 * shape followed by a parse; a value that passes becomes a `datetime` column.
 */
export function parseIsoDateTime(value: string): number | undefined {
  if (value.length > MAX_TIMESTAMP_LENGTH) return undefined;
  const m = ISO_DATETIME.exec(value);
  if (!m) return undefined;
  if (m[1] === "-") return undefined;
  const year = Number(m[2]);
  const month = Number(m[3]);
  const day = Number(m[4]);
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  if (day > [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!) return undefined;
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  const millis = m[8] ? Number(m[8].slice(0, 3).padEnd(3, "0")) : 0;
  d.setUTCHours(Number(m[5] ?? 0), Number(m[6] ?? 0), Number(m[7] ?? 0), millis);
  let ms = d.getTime();
  const zone = m[9];
  if (zone && zone !== "Z" && zone !== "z") {
    const sign = zone[0] === "-" ? -1 : 1;
    const digits = zone.slice(1).replace(":", "");
    ms -= sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || 0)) * 60_000;
  }
  return ms >= MIN_MS && ms <= MAX_MS ? ms : undefined;
}

const INT64_LIMIT = 2 ** 63;

// Every event carries four timestamps, mostly equal and shared by a whole batch: parsing them
// was a fifth of the transform's time. "" marks a string that is not a date-time.
const dateTimes = new Map<string, string>();

function normalizedDateTime(value: string): string {
  const c = value.charCodeAt(0);
  // Cheap rejection of most strings before the cache: a date-time starts with a digit or sign.
  if (value.length < 10 || !((c >= 48 && c <= 57) || c === 43 || c === 45)) return "";
  let iso = dateTimes.get(value);
  if (iso === undefined) {
    if (dateTimes.size >= NAME_CACHE_LIMIT) dateTimes.clear();
    const ms = parseIsoDateTime(value);
    iso = ms === undefined ? "" : new Date(ms).toISOString();
    dateTimes.set(value, iso);
  }
  return iso;
}

/**
 * RudderStack's inference, for a value that is not an object: whole numbers are `int` (up to
 * the bigint range; beyond it `float`, as RudderStack's float64 → int64 check gives), other
 * numbers `float`, ISO date-times `datetime` (the value rewritten as `…T…Z` with milliseconds),
 * everything else `string` — numbers sent as strings stay strings, and arrays are their JSON
 * text in a `string` (text) column, as RudderStack types them for PostgreSQL. Only `jsonPaths`
 * make `json` columns.
 */
export function inferValue(value: unknown): { type: WarehouseType; value: unknown } {
  switch (typeof value) {
    case "number":
      return { type: Number.isInteger(value) && Math.abs(value) < INT64_LIMIT ? "int" : "float", value };
    case "boolean":
      return { type: "boolean", value };
    case "string": {
      const iso = normalizedDateTime(value);
      return iso === "" ? { type: "string", value } : { type: "datetime", value: iso };
    }
    case "bigint":
      return { type: "int", value: value.toString() };
    default:
      if (Array.isArray(value)) return { type: "string", value: jsonText(value) };
      return { type: "string", value: String(value) };
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** RudderStack's `isBlank` (lodash `isEmpty(toString(v))`): null, "", [], [""] carry nothing and make no column. */
function isBlank(v: unknown): boolean {
  if (v === null || v === undefined) return true;
  if (typeof v === "string") return v === "";
  if (Array.isArray(v)) return v.length === 0 || (v.length === 1 && v[0] !== null && v[0] !== undefined && isBlank(v[0]));
  return false;
}

// ---------------------------------------------------------------------------------------------
// Rows

type EventType = "track" | "identify" | "page" | "screen" | "group" | "alias";

/** Columns rudder fills itself from the event; a property of the same name is dropped, not renamed. */
const DEFAULT_COLUMNS = [
  "id",
  "anonymous_id",
  "user_id",
  "sent_at",
  "timestamp",
  "received_at",
  "original_timestamp",
  "channel",
  "context_ip",
  "context_request_ip",
  "context_passed_ip",
];
const RESERVED_COLUMNS: Record<EventType, ReadonlySet<string>> = {
  track: new Set([...DEFAULT_COLUMNS, "event_text", "record_id", "uuid_ts"]),
  identify: new Set([...DEFAULT_COLUMNS, "uuid_ts"]),
  page: new Set([...DEFAULT_COLUMNS, "name", "uuid_ts"]),
  screen: new Set([...DEFAULT_COLUMNS, "name", "uuid_ts"]),
  group: new Set([...DEFAULT_COLUMNS, "group_id", "uuid_ts"]),
  alias: new Set([...DEFAULT_COLUMNS, "previous_id", "uuid_ts"]),
};

/**
 * Columns rudder fills that always hold text. RudderStack infers their type like any other
 * (a messageId that looks like a date would make a datetime `id`); Sluice fixes them so such a
 * value still loads instead of going to rudder_discards.
 */
const TEXT_COLUMNS = new Set([
  "id",
  "anonymous_id",
  "user_id",
  "event",
  "event_text",
  "channel",
  "context_ip",
  "context_request_ip",
  "context_passed_ip",
  "name",
  "group_id",
  "previous_id",
]);

type Rule = (e: Record<string, any>) => unknown;

const firstValid = (...get: Rule[]): Rule => (e) => {
  for (const g of get) {
    const v = g(e);
    if (!isBlank(v)) return v;
  }
  return undefined;
};
const field = (k: string): Rule => (e) => e[k];
const contextField = (k: string): Rule => (e) => (isObject(e.context) ? e.context[k] : undefined);

const DEFAULT_RULES: Record<string, Rule> = {
  id: field("messageId"),
  anonymous_id: field("anonymousId"),
  user_id: field("userId"),
  sent_at: field("sentAt"),
  timestamp: field("timestamp"),
  received_at: field("receivedAt"),
  original_timestamp: field("originalTimestamp"),
  channel: field("channel"),
  context_ip: firstValid(contextField("ip"), field("request_ip")),
  context_request_ip: field("request_ip"),
  context_passed_ip: contextField("ip"),
};
/** users: no user_id, anonymous_id or channel there (RudderStack's identify rules for warehouses). */
const USERS_RULES: Record<string, Rule> = {
  context_ip: DEFAULT_RULES.context_ip!,
  context_request_ip: DEFAULT_RULES.context_request_ip!,
  context_passed_ip: DEFAULT_RULES.context_passed_ip!,
  sent_at: DEFAULT_RULES.sent_at!,
  timestamp: DEFAULT_RULES.timestamp!,
  original_timestamp: DEFAULT_RULES.original_timestamp!,
};
const NAME_RULES: Record<string, Rule> = {
  name: firstValid(field("name"), (e) => (isObject(e.properties) ? e.properties.name : undefined)),
};

interface Ctx {
  type: EventType;
  naming: NamingOptions;
  columnNames: Map<string, string>;
  /** The event's jsonPaths; absent (the common case) when it has none. */
  json?: JsonPathKeys;
}

// ---------------------------------------------------------------------------------------------
// jsonPaths

/**
 * Paths as RudderStack matches them: a path's dots become `_` and it is compared with the
 * property's full path at the same depth, so `track.properties.a_b` and `track.properties.a.b`
 * name different keys. Paths starting with an event type (`track.`, `identify.`, …) are matched
 * against `<type>_<field>_…`; others (the legacy form) only within a track event's properties
 * and userProperties, from their top (`cart`, `cart.items`).
 */
export interface JsonPathKeys {
  keys: Map<string, number>;
  legacy: Map<string, number>;
}

const JSON_PATH_PREFIXES = ["track.", "identify.", "page.", "screen.", "alias.", "group.", "extract."];
const jsonPathCache = new Map<string, JsonPathKeys | undefined>();

/** The keys of comma-separated paths; undefined when there are none. Cached: a destination's setting repeats for every event. */
export function jsonPathKeys(paths: string): JsonPathKeys | undefined {
  if (jsonPathCache.has(paths)) return jsonPathCache.get(paths);
  let out: JsonPathKeys | undefined;
  for (const raw of paths.split(",")) {
    const path = raw.trim();
    if (path === "") continue;
    const segments = path.split(".");
    out ??= { keys: new Map(), legacy: new Map() };
    const lower = path.toLowerCase();
    (JSON_PATH_PREFIXES.some((p) => lower.startsWith(p)) ? out.keys : out.legacy).set(segments.join("_"), segments.length - 1);
  }
  if (jsonPathCache.size >= NAME_CACHE_LIMIT) jsonPathCache.clear();
  jsonPathCache.set(paths, out);
  return out;
}

/** `integrations.<key>.options.jsonPaths` of the event: a list of paths. */
function integrationJsonPaths(event: Record<string, any>, key: string): string[] {
  const o = isObject(event.integrations) ? event.integrations[key] : undefined;
  const paths = isObject(o) && isObject(o.options) ? o.options.jsonPaths : undefined;
  return Array.isArray(paths) ? paths.filter((p): p is string => typeof p === "string") : [];
}

/** The event's paths: its integrations' (DATA_WAREHOUSE and POSTGRES options) and the destination's. */
function eventJsonPaths(event: Record<string, any>, destination: string | undefined): JsonPathKeys | undefined {
  const own = [...integrationJsonPaths(event, "DATA_WAREHOUSE"), ...integrationJsonPaths(event, "POSTGRES")];
  if (own.length === 0) return destination ? jsonPathKeys(destination) : undefined;
  return jsonPathKeys([...own, destination ?? ""].join(","));
}

function isJsonPath(json: JsonPathKeys, type: EventType, prefixKey: string, level: number, fullKey: string, completeLevel: number): boolean {
  if (json.keys.get(fullKey) === completeLevel) return true;
  return type === "track" && json.legacy.get(prefixKey) === level;
}

interface Acc {
  data: Record<string, unknown>;
  types: Record<string, WarehouseType>;
}

const newAcc = (): Acc => ({ data: {}, types: {} });
const copyAcc = (a: Acc): Acc => ({ data: { ...a.data }, types: { ...a.types } });

/** An SDK bug turns a traits string into `{"0":"a","1":"b"}`; RudderStack glues it back together. */
function stringLikeObject(o: Record<string, unknown>, keys: string[]): string | undefined {
  const chars: string[] = [];
  let min = Infinity;
  for (const k of keys) {
    if (!/^\d+$/.test(k)) return undefined;
    const v = o[k];
    if (typeof v !== "string" || v.length !== 1) return undefined;
    const n = Number(k);
    if (n < min) min = n;
    chars[n] = v;
  }
  if (min !== 0 && min !== 1) return undefined;
  const out = chars.slice(min);
  if (out.length !== keys.length) return undefined;
  return out.join("");
}

function addColumn(ctx: Ctx, acc: Acc, key: string, value: unknown, asJson = false): void {
  let name = ctx.columnNames.get(key);
  if (name === undefined) name = cachedName(ctx.columnNames, key, (k) => columnName(k, ctx.naming));
  if (name === "" || RESERVED_COLUMNS[ctx.type].has(name)) return;
  // Safe as a plain key: transformName leaves letters, digits and underscores and never a
  // trailing `_`, so a property `__proto__` becomes the column `__proto`, never the prototype.
  if (asJson) {
    // Whatever the value (an object, a list, a number, a string), its JSON text, as RudderStack stores a jsonPaths key.
    acc.data[name] = jsonText(value);
    acc.types[name] = "json";
    return;
  }
  const inferred = inferValue(value);
  acc.data[name] = inferred.value;
  acc.types[name] = inferred.type;
}

/**
 * Nested objects become `parent_child` columns, at any depth; arrays and scalars become one
 * column each; blank values none; a key `jsonPaths` names, one json column. `fullPrefix` is
 * RudderStack's path with the event type in front (`identify_context_traits_`), which decides
 * the traits special case and full jsonPaths; `level` and `completeLevel` are the depths
 * RudderStack compares paths at (of `prefix` from 0, of `fullPrefix` from its segment count).
 */
function flatten(ctx: Ctx, acc: Acc, input: unknown, prefix: string, fullPrefix: string, level = 0, completeLevel = fullPrefix.split("_").length - 1): void {
  if (!isObject(input)) return;
  const keys = Object.keys(input);
  if (keys.length === 0) return;
  if (fullPrefix.endsWith("context_traits_") || fullPrefix === "group_traits_") {
    const glued = stringLikeObject(input, keys);
    if (glued !== undefined) {
      if (prefix === "context_traits_") addColumn(ctx, acc, prefix, glued);
      return;
    }
  }
  for (const key of keys) {
    const value = input[key];
    if (isBlank(value)) continue;
    if (ctx.json && isJsonPath(ctx.json, ctx.type, prefix + key, level, fullPrefix + key, completeLevel)) addColumn(ctx, acc, prefix + key, value, true);
    else if (isObject(value)) flatten(ctx, acc, value, `${prefix}${key}_`, `${fullPrefix}${key}_`, level + 1, completeLevel + 1);
    else addColumn(ctx, acc, prefix + key, value);
  }
}

function applyRules(ctx: Ctx, acc: Acc, event: Record<string, any>, rules: Record<string, Rule>): void {
  for (const column of Object.keys(rules)) {
    const name = safeName(column, ctx.naming);
    // A delete turns the object into a slow dictionary, so only when a property took the name.
    if (name in acc.data) {
      delete acc.data[name];
      delete acc.types[name];
    }
    const raw = rules[column]!(event);
    if (isBlank(raw) || isObject(raw)) continue;
    setColumn(acc, name, raw);
  }
}

function setColumn(acc: Acc, name: string, raw: unknown): void {
  if (TEXT_COLUMNS.has(name)) {
    acc.data[name] = typeof raw === "string" ? raw : Array.isArray(raw) ? jsonText(raw) : String(raw);
    acc.types[name] = "string";
    return;
  }
  const inferred = inferValue(raw);
  acc.data[name] = inferred.value;
  acc.types[name] = inferred.type;
}

function toRow(table: string, acc: Acc, uuidTs: string, maxColumns: number): TableRow {
  const columns: Record<string, WarehouseType> = { uuid_ts: "datetime" };
  const row: Record<string, unknown> = {};
  let count = 1;
  for (const name in acc.data) {
    columns[name] = acc.types[name] ?? inferValue(acc.data[name]).type;
    row[name] = acc.data[name];
    count++;
  }
  row.uuid_ts = uuidTs;
  // RudderStack Sources syncs (channel "sources") choose their own columns, so rudder lets them be wide.
  if (count > maxColumns && row.channel !== "sources") {
    throw new AppError(
      "BAD_REQUEST",
      `Too many columns for the warehouse: ${count} in table ${table} (at most ${maxColumns})`,
    );
  }
  return { table, columns, row };
}

function integrationOptions(event: Record<string, any>): Record<string, unknown> {
  const o = isObject(event.integrations) ? event.integrations.POSTGRES : undefined;
  return isObject(o) && isObject(o.options) ? o.options : {};
}

/**
 * The rows of one stored event for a PostgreSQL warehouse, as RudderStack makes them:
 * - track → `tracks` (context and ids) and a table named after the event (the same plus the
 *   flattened properties and userProperties);
 * - identify → `identifies` and, when there is a userId, `users` (id = userId, the traits; no
 *   user_id, anonymous_id or channel);
 * - page → `pages`, screen → `screens`, group → `groups`, alias → `aliases`;
 * - merge → nothing: RudderStack's identity-merge rows exist only for Snowflake and BigQuery.
 *
 * The event is not modified. Throws AppError BAD_REQUEST for an unknown type or a row wider
 * than `maxColumns`; the caller drops that event as RudderStack does.
 */
export function eventRows(event: Record<string, any>, opts: EventRowsOptions): TableRow[] {
  const rawType = typeof event.type === "string" ? event.type.toLowerCase() : "";
  if (rawType === "merge") return [];
  if (!(rawType in RESERVED_COLUMNS)) {
    throw new AppError("BAD_REQUEST", `Unknown event type for the warehouse: "${String(event.type ?? "")}"`);
  }
  const type = rawType as EventType;
  const integration = integrationOptions(event);
  const naming: NamingOptions = {
    underscoreDivideNumbers: opts.underscoreDivideNumbers === true,
    skipReservedKeywordsEscaping: integration.skipReservedKeywordsEscaping === true,
  };
  const ctx: Ctx = { type, naming, columnNames: nameCacheFor(naming), json: eventJsonPaths(event, opts.jsonPaths) };
  const maxColumns = opts.maxColumns ?? DEFAULT_MAX_COLUMNS;
  const uuidTs = opts.uuidTs;

  // Shallow copies: the stored event stays as it is for other destinations and for replay.
  const e: Record<string, any> = { ...event };
  if (isBlank(e.messageId)) e.messageId = `auto-${crypto.randomUUID()}`;
  if (typeof e.receivedAt !== "string" || parseIsoDateTime(e.receivedAt) === undefined) e.receivedAt = uuidTs;
  if (opts.source || opts.destination) {
    e.context = {
      ...(isObject(e.context) ? e.context : {}),
      sourceId: opts.source?.id,
      sourceType: opts.source?.type,
      destinationId: opts.destination?.id,
      destinationType: opts.destination?.type,
    };
  }

  switch (type) {
    case "track":
      return trackRows(ctx, e, opts, integration, uuidTs, maxColumns);
    case "identify":
      return identifyRows(ctx, e, opts, integration, uuidTs, maxColumns);
    case "page":
    case "screen": {
      const acc = newAcc();
      flatten(ctx, acc, e.properties, "", `${type}_properties_`);
      flatten(ctx, acc, e.context, "context_", `${type}_context_`);
      applyRules(ctx, acc, e, DEFAULT_RULES);
      applyRules(ctx, acc, e, NAME_RULES);
      return [toRow(`${type}s`, acc, uuidTs, maxColumns)];
    }
    case "group":
    case "alias": {
      const acc = newAcc();
      flatten(ctx, acc, e.traits, "", `${type}_traits_`);
      flatten(ctx, acc, e.context, "context_", `${type}_context_`);
      applyRules(ctx, acc, e, DEFAULT_RULES);
      if (type === "group") applyRules(ctx, acc, e, { group_id: field("groupId") });
      else applyRules(ctx, acc, e, { previous_id: field("previousId") });
      return [toRow(type === "group" ? "groups" : "aliases", acc, uuidTs, maxColumns)];
    }
  }
}

function trackRows(
  ctx: Ctx,
  e: Record<string, any>,
  opts: EventRowsOptions,
  integration: Record<string, unknown>,
  uuidTs: string,
  maxColumns: number,
): TableRow[] {
  const common = newAcc();
  flatten(ctx, common, e.context, "context_", "track_context_");
  applyRules(ctx, common, e, { event_text: field("event"), ...DEFAULT_RULES });
  const eventName = typeof common.data.event_text === "string" ? common.data.event_text : "";
  // The `event` column holds the whole snake-cased name; only the table name is cut to 63.
  common.data.event = cachedName(eventNames, `${ctx.naming.underscoreDivideNumbers ? 1 : 0}${eventName}`, () =>
    transformName(eventName, ctx.naming),
  );
  common.types.event = "string";

  const rows: TableRow[] = [];
  if (!opts.skipTracksTable && integration.skipTracksTable !== true) {
    rows.push(toRow("tracks", copyAcc(common), uuidTs, maxColumns));
  }
  const table = cachedName(eventTables, `${ctx.naming.underscoreDivideNumbers ? 1 : 0}${ctx.naming.skipReservedKeywordsEscaping ? 1 : 0}${eventName}`, () =>
    eventTableName(eventName, ctx.naming),
  );
  if (table === "") return rows;
  const props = newAcc();
  flatten(ctx, props, e.properties, "", "track_properties_");
  flatten(ctx, props, e.userProperties, "", "track_userProperties_");
  // rudder's own columns win over properties of the same name.
  const merged: Acc = { data: { ...props.data, ...common.data }, types: { ...props.types, ...common.types } };
  rows.push(toRow(table, merged, uuidTs, maxColumns));
  return rows;
}

function identifyRows(
  ctx: Ctx,
  e: Record<string, any>,
  opts: EventRowsOptions,
  integration: Record<string, unknown>,
  uuidTs: string,
  maxColumns: number,
): TableRow[] {
  const common = newAcc();
  flatten(ctx, common, e.userProperties, "", "identify_userProperties_");
  if (opts.allowUsersContextTraits) {
    flatten(ctx, common, isObject(e.context) ? e.context.traits : undefined, "", "identify_context_traits_");
  }
  flatten(ctx, common, e.traits, "", "identify_traits_");
  flatten(ctx, common, e.context, "context_", "identify_context_");

  const identifies = copyAcc(common);
  applyRules(ctx, identifies, e, DEFAULT_RULES);
  const rows = [toRow("identifies", identifies, uuidTs, maxColumns)];

  if (isBlank(e.userId) || String(e.userId).trim() === "") return rows;
  if (opts.skipUsersTable || integration.skipUsersTable === true) return rows;
  const users = copyAcc(common);
  applyRules(ctx, users, e, USERS_RULES);
  setColumn(users, "id", e.userId);
  setColumn(users, "received_at", e.receivedAt);
  rows.push(toRow("users", users, uuidTs, maxColumns));
  return rows;
}
