/**
 * How one value meets one PostgreSQL column: either it fits (and is written as a field of
 * COPY's text format) or it is a discard. Pure functions, so the rules are testable without
 * a database.
 */
import type { WarehouseType } from "./types.ts";

import { jsonText, withoutNulEscapes } from "./schema.ts";

export { POSTGRES_TYPES } from "./schema.ts";

/** A column's existing type, as information_schema names it, folded to the kind of value it takes. */
export type ColumnKind = WarehouseType | "other";

export function columnKind(dataType: string): ColumnKind {
  switch (dataType) {
    case "text":
    case "character varying":
    case "character":
    case "name":
    case "citext":
      return "string";
    case "bigint":
    case "integer":
    case "smallint":
      return "int";
    case "double precision":
    case "real":
    case "numeric":
      return "float";
    case "boolean":
      return "boolean";
    case "timestamp with time zone":
    case "timestamp without time zone":
    case "date":
      return "datetime";
    case "json":
    case "jsonb":
      return "json";
    default:
      return "other";
  }
}

/** COPY's text-format marker for NULL. */
export const COPY_NULL = "\\N";

/** A value that does not fit; `reason` goes to rudder_discards as RudderStack words it. */
export interface Misfit {
  misfit: true;
  reason: string;
}

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;
const DIGITS_AT = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18];
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function twoDigits(v: string, at: number): number {
  return (v.charCodeAt(at) - 48) * 10 + (v.charCodeAt(at + 1) - 48);
}

// JavaScript's Date.parse rolls 2026-02-30 over into March; PostgreSQL rejects it, and one such
// field would fail the whole COPY.
function isCalendarDate(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = month === 2 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= DAYS_IN_MONTH[month - 1]! + (leap ? 1 : 0);
}

/**
 * The shape nearly every timestamp of an event has (`toISOString`: 2026-01-02T03:04:05.678Z),
 * checked by character: a load checks about 12 date-times per track event, and the regex plus
 * Date.parse cost 0.25 µs each. false only means "not this shape"; the general check decides.
 */
function isUtcDateTime(v: string): boolean {
  const n = v.length;
  if (n < 20 || n > 35 || v.charCodeAt(n - 1) !== 90 /* Z */) return false;
  if (v.charCodeAt(4) !== 45 || v.charCodeAt(7) !== 45 || v.charCodeAt(10) !== 84 || v.charCodeAt(13) !== 58 || v.charCodeAt(16) !== 58) return false;
  for (let i = 0; i < DIGITS_AT.length; i++) if (!isDigit(v.charCodeAt(DIGITS_AT[i]!))) return false;
  if (n > 20) {
    if (n === 21 || v.charCodeAt(19) !== 46 /* . */) return false;
    for (let at = 20; at < n - 1; at++) if (!isDigit(v.charCodeAt(at))) return false;
  }
  const year = twoDigits(v, 0) * 100 + twoDigits(v, 2);
  return year >= 1 && isCalendarDate(year, twoDigits(v, 5), twoDigits(v, 8)) && twoDigits(v, 11) < 24 && twoDigits(v, 14) < 60 && twoDigits(v, 17) < 60;
}

/** A date-time PostgreSQL's timestamptz takes from text. */
export function isDateTimeText(v: string): boolean {
  if (isUtcDateTime(v)) return true;
  if (!ISO_DATE_TIME.test(v) || Number.isNaN(Date.parse(v))) return false;
  const year = Number(v.slice(0, 4));
  // PostgreSQL has no year 0 (1 BC is written with BC).
  return year >= 1 && isCalendarDate(year, twoDigits(v, 5), twoDigits(v, 8));
}

// bigint's range; JS numbers past 2^53 are still integers, so the bound is checked as a float.
const BIGINT_LIMIT = 9.223372036854775e18;

function typeOfValue(v: unknown): string {
  if (Array.isArray(v) || (typeof v === "object" && v !== null && !(v instanceof Date))) return "json";
  if (v instanceof Date) return "datetime";
  if (typeof v === "number") return Number.isInteger(v) ? "int" : "float";
  return typeof v;
}

function misfit(kind: ColumnKind, v: unknown): Misfit {
  return { misfit: true, reason: `incompatible schema conversion from ${kind} to ${typeOfValue(v)}` };
}

// NUL escapes are dropped (schema.ts jsonText): jsonb refuses them, and RudderStack strips them.
function toJson(v: unknown): string {
  return withoutNulEscapes(JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? x.toString() : x)));
}

/**
 * The value as the column's kind takes it, or a misfit. The rules are RudderStack's
 * (`HandleSchemaChange` of rudder-server's warehouse): a text column takes anything
 * (non-strings as text, objects as JSON), a float column takes integers, an int column takes
 * floats truncated, a JSON column takes anything as JSON; everything else is discarded.
 */
export function fitValue(v: unknown, kind: ColumnKind): string | null | Misfit {
  if (v === null || v === undefined) return null;
  switch (kind) {
    case "string":
      if (typeof v === "string") return v;
      if (v instanceof Date) return Number.isNaN(v.getTime()) ? misfit(kind, v) : v.toISOString();
      if (typeof v === "object") return toJson(v);
      return String(v);
    case "int":
      if (typeof v === "number" && Number.isFinite(v) && Math.abs(v) < BIGINT_LIMIT) return String(Math.trunc(v));
      if (typeof v === "bigint" && v < 9223372036854775807n && v > -9223372036854775808n) return v.toString();
      return misfit(kind, v);
    case "float":
      if (typeof v === "number" && Number.isFinite(v)) return String(v);
      if (typeof v === "bigint") return v.toString();
      return misfit(kind, v);
    case "boolean":
      return typeof v === "boolean" ? (v ? "t" : "f") : misfit(kind, v);
    case "datetime":
      if (v instanceof Date) return Number.isNaN(v.getTime()) ? misfit(kind, v) : v.toISOString();
      // Checked here rather than left to PostgreSQL: one bad field would fail the whole COPY.
      if (typeof v === "string" && isDateTimeText(v)) return v;
      return misfit(kind, v);
    case "json":
      if (typeof v === "string") {
        // A string in a json column is usually JSON text already (docs/warehouse.md, Types: arrays and objects
        // as JSON text); anything else is quoted into a JSON string, as RudderStack does.
        try {
          JSON.parse(v);
          return withoutNulEscapes(v);
        } catch {
          return jsonText(v);
        }
      }
      return toJson(v);
    default:
      return misfit(kind, v);
  }
}

const NEEDS_ESCAPE = /[\\\t\n\r\0]/;
const ESCAPES = /[\\\t\n\r\0]/g;
const ESCAPED: Record<string, string> = { "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\0": "" };

/**
 * One field of COPY's text format. NUL is dropped: PostgreSQL text cannot hold it, and a
 * single one would fail the whole load.
 */
export function copyField(text: string | null): string {
  if (text === null) return COPY_NULL;
  return NEEDS_ESCAPE.test(text) ? text.replace(ESCAPES, (c) => ESCAPED[c]!) : text;
}

/** For rudder_discards.column_value: the value as text, whatever it was. */
export function discardText(v: unknown): string {
  if (typeof v === "string") return v;
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? "Invalid Date" : v.toISOString();
  if (typeof v === "object" && v !== null) return toJson(v);
  return String(v);
}

const NULL_FIELD = COPY_NULL;

/**
 * A column's COPY field encoder: the common values (a string in a text column, a number in a
 * number column) take a short path, because a load encodes millions of fields; everything
 * else goes through fitValue. `undefined` means the value does not fit.
 */
export function copyEncoder(kind: ColumnKind): (v: unknown) => string | undefined {
  const slow = (v: unknown): string | undefined => {
    const fitted = fitValue(v, kind);
    if (fitted !== null && typeof fitted === "object") return undefined;
    return copyField(fitted);
  };
  switch (kind) {
    case "string":
      return (v) => (v === null || v === undefined ? NULL_FIELD : typeof v === "string" ? (NEEDS_ESCAPE.test(v) ? copyField(v) : v) : slow(v));
    case "int":
      return (v) => (v === null || v === undefined ? NULL_FIELD : typeof v === "number" && Number.isSafeInteger(v) ? "" + v : slow(v));
    case "float":
      return (v) => (v === null || v === undefined ? NULL_FIELD : typeof v === "number" && Number.isFinite(v) ? "" + v : slow(v));
    case "datetime":
      return (v) =>
        v === null || v === undefined
          ? NULL_FIELD
          : typeof v === "string" && isDateTimeText(v)
            ? v
            : slow(v);
    default:
      return slow;
  }
}
