/**
 * An event's property paths, dot-flattened with arrays marked: `properties.products[].price`.
 * Pure: no store, no clock.
 *
 * What is catalogued is what the sender chose: `properties`, `traits` and `context.traits` in
 * full, and the event's own top-level fields (`userId`, `anonymousId`, `groupId`,
 * `previousId`, a page's `name` and `category`, and any other field sent). Not the envelope that
 * SDKs and intake fill in on every event (ENVELOPE and the rest of `context`: library, os,
 * device, ip, userAgent, …): every model would show the same few dozen paths, crowding out
 * the ones a tracking plan is about.
 */
import type { Example, JsonType } from "./store";

/** Top-level fields left out: set on every event by SDKs or intake, or the model's own key. */
const ENVELOPE = new Set([
  "type",
  "event",
  "messageId",
  "receivedAt",
  "sentAt",
  "originalTimestamp",
  "timestamp",
  "request_ip",
  "rudderId",
  "channel",
  "integrations",
  "writeKey",
  "context",
]);

/** Paths deeper than this many segments are recorded with their type but not opened. */
export const MAX_DEPTH = 10;
/** Elements of one array that are looked at (their paths are the union over them). */
export const MAX_ARRAY_ITEMS = 20;
/** Values looked at in one event; the rest of a larger event is not catalogued. */
export const MAX_NODES = 1000;
/** A longer path (a key made of data) is not kept; it counts as a path beyond the bound. */
export const MAX_PATH_LENGTH = 300;
/** Example strings are cut to this many characters. */
export const MAX_EXAMPLE_LENGTH = 80;

/** Bits of JsonType in an occurrence's `types`. */
export const TYPE_BITS: Record<JsonType, number> = { string: 1, integer: 2, number: 4, boolean: 8, null: 16, object: 32, array: 64 };
export const BIT_TYPES = Object.entries(TYPE_BITS) as Array<[JsonType, number]>;

export function jsonTypeOf(v: unknown): JsonType {
  switch (typeof v) {
    case "string":
      return "string";
    case "number":
      return Number.isInteger(v) ? "integer" : "number";
    case "boolean":
      return "boolean";
    default:
      if (v === null) return "null";
      return Array.isArray(v) ? "array" : "object";
  }
}

/** What one event had at one path: the types it held there and the first short value. */
export interface Occurrence {
  types: number;
  example?: Example;
}

export interface Flattened {
  paths: Map<string, Occurrence>;
  /** Paths longer than MAX_PATH_LENGTH, not kept. */
  tooLong: number;
}

/**
 * The event's catalogued paths, each once however many array elements hold it. A null
 * `properties` or `traits` shows as that path with type null.
 */
export function flattenEvent(event: Record<string, unknown>): Flattened {
  const out: Flattened = { paths: new Map(), tooLong: 0 };
  const budget = { nodes: MAX_NODES };
  for (const key of Object.keys(event)) {
    if (!ENVELOPE.has(key)) visit(out, budget, withoutNul(key), event[key], 1);
  }
  const context = event.context;
  if (context !== null && typeof context === "object" && !Array.isArray(context)) {
    const traits = (context as Record<string, unknown>).traits;
    if (traits !== undefined) visit(out, budget, "context.traits", traits, 2);
  }
  return out;
}

function visit(out: Flattened, budget: { nodes: number }, path: string, value: unknown, depth: number): void {
  if (budget.nodes <= 0 || value === undefined) return;
  budget.nodes--;
  if (path.length > MAX_PATH_LENGTH) {
    out.tooLong++;
    return;
  }
  const type = jsonTypeOf(value);
  let o = out.paths.get(path);
  if (!o) out.paths.set(path, (o = { types: 0 }));
  o.types |= TYPE_BITS[type];
  if (o.example === undefined && (type === "string" || type === "integer" || type === "number" || type === "boolean")) o.example = shortExample(value as Example);
  if (depth >= MAX_DEPTH) return;
  if (type === "object") {
    const obj = value as Record<string, unknown>;
    for (const k of Object.keys(obj)) visit(out, budget, `${path}.${withoutNul(k)}`, obj[k], depth + 1);
  } else if (type === "array") {
    const arr = value as unknown[];
    const items = `${path}[]`;
    for (let i = 0; i < arr.length && i < MAX_ARRAY_ITEMS; i++) visit(out, budget, items, arr[i], depth + 1);
  }
}

function shortExample(v: Example): Example {
  if (typeof v !== "string") return v;
  return withoutNul(v.length > MAX_EXAMPLE_LENGTH ? `${v.slice(0, MAX_EXAMPLE_LENGTH - 1)}…` : v);
}

/**
 * Text with any NUL character replaced (U+FFFD): PostgreSQL refuses NUL in text and in jsonb,
 * and a name or a key is data the sender chose.
 */
export function withoutNul(s: string): string {
  return s.includes("\u0000") ? s.replaceAll("\u0000", "\uFFFD") : s;
}

/** The last segment of a path, without array marks: `properties.users[].email[]` → `email`. */
export function lastSegment(path: string): string {
  const bare = path.endsWith("[]") ? path.replace(/(\[\])+$/, "") : path;
  return bare.slice(bare.lastIndexOf(".") + 1);
}

const PERSONAL_NAME = /e-?mail|phone|mobile|^ip$|ip_?address|request_?ip/i;
const EMAIL_VALUE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const IPV4_VALUE = /^\d{1,3}(\.\d{1,3}){3}$/;
const IPV6_VALUE = /^[0-9a-f]*:[0-9a-f:.]*:[0-9a-f.]*$/i;

/** The event's own user identifiers: an example of them is someone's id. */
const IDENTITY_PATHS = new Set(["userId", "anonymousId", "previousId"]);

/** A path whose name says it holds an e-mail address, a phone number or an IP address, or a user's id. */
export function isPersonalPath(path: string): boolean {
  return IDENTITY_PATHS.has(path) || PERSONAL_NAME.test(lastSegment(path));
}

/** A value that is an e-mail or IP address whatever its path is called (`properties.contact`). */
export function isPersonalValue(v: Example): boolean {
  return typeof v === "string" && v.length <= 254 && (EMAIL_VALUE.test(v) || IPV4_VALUE.test(v) || IPV6_VALUE.test(v));
}
