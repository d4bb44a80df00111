/** What Shopify's three flows share: RudderStack's ways of copying fields, ids derived from tokens, the email search. */
import { createHash } from "node:crypto";
import { isPrototypeKey, setOwn } from "../../lib/safe-keys";
import { getPath, setPath } from "../common";
import type { MapResult, SourceState } from "../types";

export const INTEGRATION = "SHOPIFY";

/** Shopify's answer to a request that makes no event: `OK`, as RudderStack answers it. */
export const OK_ANSWER: MapResult = { events: [], answer: { body: "OK", contentType: "text/plain" } };

export type Json = Record<string, any>;

export const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);
export const isSet = (v: unknown) => v !== undefined && v !== null;
/** RudderStack's isDefinedNotNullNotEmpty: not nullish, NaN, `{}`/`[]` or blank text. */
export const isPresent = (v: unknown) =>
  isSet(v) && !Number.isNaN(v) && !(typeof v === "object" && Object.keys(v as object).length === 0) && !(typeof v === "string" && v.trim() === "");

/** The object without its null and undefined values, one level deep (arrays become objects, as lodash's pickBy makes them). */
export function dropNulls(obj: unknown): Json {
  const out: Json = {};
  if (obj === null || typeof obj !== "object") return out;
  for (const k in obj) {
    const v = (obj as Json)[k];
    if (Object.hasOwn(obj, k) && isSet(v)) setOwn(out, k, v);
  }
  return out;
}

/** The object without its undefined values, one level deep: what JSON would drop anyway. */
export function dropUndefined(obj: Json): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(obj)) if (v !== undefined) setOwn(out, k, v);
  return out;
}

/** An ISO timestamp of a Shopify date (`2024-11-05T21:54:50-05:00`), or undefined when it is none. */
export function isoTime(value: unknown): string | undefined {
  if (!value || (typeof value !== "string" && typeof value !== "number")) return undefined;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

/**
 * A mapping table applied the way rudder-transformer's constructPayload applies one: the value
 * at the source path, converted, is kept when it is truthy, 0 or false (so "" and null are
 * not, but "" converted to a number is 0 and is).
 */
export type Conversion = "string" | "number";
export type PayloadSpec = ReadonlyArray<readonly [source: string, dest: string, convert?: Conversion]>;

export function buildPayload(from: unknown, spec: PayloadSpec): Json {
  const out: Json = {};
  for (const [source, dest, convert] of spec) {
    let value = getPath(from, source);
    if (isSet(value) && convert === "string") value = String(value);
    else if (isSet(value) && convert === "number") value = Number(value);
    if (value || value === 0 || value === false) setPath(out, dest, value);
  }
  return out;
}

/**
 * A mapping table applied the way the web pixel's mapObjectKeys applies one: every value found
 * (null included) is copied, then the top-level nulls are dropped.
 */
export type KeySpec = ReadonlyArray<readonly [source: string, dest: string]>;

export function mapKeys(from: unknown, spec: KeySpec): Json {
  const out: Json = {};
  for (const [source, dest] of spec) {
    const value = getPath(from, source);
    if (value !== undefined) setPath(out, dest, value);
  }
  return dropNulls(out);
}

/** Every top-level field of `from` but the excluded ones (and prototype keys), copied onto `into`: RudderStack's extractCustomFields from the root. */
export function copyOtherFields(into: Json, from: Json, excluded: ReadonlySet<string>): Json {
  // for…in over own keys: Object.entries built an array per key, and an order copies hundreds.
  for (const k in from) {
    if (!Object.hasOwn(from, k) || excluded.has(k) || isPrototypeKey(k)) continue;
    const v = from[k];
    if (v !== undefined) setOwn(into, k, v);
  }
  return into;
}

/**
 * The first value in the payload whose flattened path (`customer.email`, `line_items[0].email`)
 * has the word `email` in it, in the order rudder-transformer's flattenJson walks the payload.
 * The first such path decides, even when its value is empty.
 */
export function emailInPayload(payload: unknown): unknown {
  const WORD = /\bemail\b/i;
  let found: { value: unknown } | undefined;
  const walk = (cur: unknown, path: string): boolean => {
    const leaf = (value: unknown) => {
      if (WORD.test(path)) found = { value };
      return found !== undefined;
    };
    if (cur === null || typeof cur !== "object") return leaf(cur);
    if (Array.isArray(cur)) {
      if (cur.length === 0) return leaf([]);
      return cur.some((item, i) => walk(item, `${path}[${i}]`));
    }
    const keys = Object.keys(cur);
    if (keys.length === 0) return path !== "" && leaf({});
    return keys.some((k) => walk((cur as Json)[k], path ? `${path}.${k}` : k));
  };
  walk(payload, "");
  return found?.value;
}

/** RFC 4122 name-based UUID (version 5, SHA-1). */
export function uuidV5(name: string, namespace: string): string {
  const ns = Buffer.from(namespace.replace(/-/g, ""), "hex");
  const bytes = createHash("sha1").update(ns).update(name, "utf8").digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** RFC 4122's URL namespace: the legacy app hashes a cart token with it (uuid's `v5.URL`). */
export const URL_NAMESPACE = "6ba7b811-9dad-11d1-80b4-00c04fd430c8";
/** The namespace of rudder-integrations-lib's uuidv5: the pixel app's `cart_token_hash`. */
export const PIXEL_NAMESPACE = "e76c6e51-06f9-4222-9636-5aba7e3a84b6";

export const sha256Hex = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/** A field as Redis keeps it in a hash: text, objects as JSON; nullish fields are left out. */
export function redisFields(fields: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(fields)) {
    if (!isSet(v)) continue;
    setOwn(out, k, typeof v === "string" ? v : typeof v === "object" ? JSON.stringify(v) : String(v));
  }
  return out;
}

/** A state read RudderStack survives: a failing store reads as no data. */
export async function getTolerant(state: SourceState, key: string): Promise<Record<string, unknown> | null> {
  try {
    return await state.get(key);
  } catch {
    return null;
  }
}

/** A state write RudderStack survives: a failing store loses the write and nothing else. */
export async function setTolerant(state: SourceState, key: string, fields: Record<string, unknown>, ttlSeconds: number): Promise<void> {
  try {
    await state.set(key, redisFields(fields), ttlSeconds);
  } catch {
    // RudderStack logs and counts the failure, and goes on without the write.
  }
}
