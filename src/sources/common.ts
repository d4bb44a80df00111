/** What many mappings share: reading the body, building RudderStack's message skeleton, dotted paths. */
import { isPrototypeKey, setOwn } from "../lib/safe-keys";
import { mappingError, type WebhookRequest } from "./types";

/** The body as JSON, with rudder-transformer's texts for a missing or malformed one. */
export function jsonBody(request: Pick<WebhookRequest, "body" | "json">): any {
  if (request.json !== undefined) return request.json;
  if (!request.body) throw mappingError("request.body is not present in V2 spec payload");
  try {
    return JSON.parse(request.body);
  } catch {
    throw mappingError("Malformed JSON in request body");
  }
}

/** A multi-valued map (query, headers) with each name's first value: `{a: ["1", "2"]}` → `{a: "1"}`. */
export function firstValues(map: Record<string, string[] | string | undefined> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(map ?? {})) {
    const first = Array.isArray(v) ? v[0] : v;
    if (first !== undefined) setOwn(out, k, first);
  }
  return out;
}

/** A header's first value, by any case of its name. */
export function header(request: Pick<WebhookRequest, "headers">, name: string): string | undefined {
  const want = name.toLowerCase();
  for (const [k, v] of Object.entries(request.headers ?? {})) if (k.toLowerCase() === want) return Array.isArray(v) ? v[0] : (v as string | undefined);
  return undefined;
}

/** `content-type` → `Content-Type`: the form Go's http.Header keys take, as rudder-server hands headers over. */
export function canonicalHeaderName(name: string): string {
  return name.replace(/[^-]+/g, (w) => w[0]!.toUpperCase() + w.slice(1).toLowerCase());
}

/** The skeleton every mapped message starts from: library unknown, the integration named, and not sent back to it. */
export function newMessage(integration: string): Record<string, any> {
  return {
    context: { library: { name: "unknown", version: "unknown" }, integration: { name: integration } },
    integrations: { [integration]: false },
  };
}

/** The value at a dotted path (`a.b.0.c`), or undefined. */
export function getPath(obj: unknown, path: string): any {
  // Most paths are one key: no split, no array (a mapped order walks hundreds of them).
  if (path.indexOf(".") < 0) {
    if (obj === null || typeof obj !== "object" || isPrototypeKey(path)) return undefined;
    return Object.hasOwn(obj, path) ? (obj as Record<string, unknown>)[path] : undefined;
  }
  let cur: any = obj;
  for (const seg of path.split(".")) {
    if (cur === null || typeof cur !== "object" || isPrototypeKey(seg)) return undefined;
    cur = Object.hasOwn(cur, seg) ? cur[seg] : undefined;
  }
  return cur;
}

/** Writes `value` at a dotted path, making objects on the way; a path through a prototype key is ignored. */
export function setPath(obj: Record<string, any>, path: string, value: unknown): void {
  if (path.indexOf(".") < 0) {
    if (!isPrototypeKey(path)) setOwn(obj, path, value);
    return;
  }
  const segs = path.split(".");
  if (segs.some(isPrototypeKey)) return;
  let cur: Record<string, any> = obj;
  for (const seg of segs.slice(0, -1)) {
    if (cur[seg] === null || typeof cur[seg] !== "object") setOwn(cur, seg, {});
    cur = cur[seg];
  }
  setOwn(cur, segs[segs.length - 1]!, value);
}

const isSet = (v: unknown) => v !== undefined && v !== null;

/**
 * Copies fields into a message: for each pair, the first set source path's value goes to every
 * destination path not yet set (so an earlier pair wins over a later one for the same field).
 */
export function copyFields(message: Record<string, any>, from: unknown, pairs: ReadonlyArray<readonly [string | readonly string[], string | readonly string[]]>): void {
  for (const [sources, dests] of pairs) {
    let value: unknown;
    for (const s of typeof sources === "string" ? [sources] : sources) {
      value = getPath(from, s);
      if (isSet(value)) break;
    }
    if (!isSet(value)) continue;
    for (const d of typeof dests === "string" ? [dests] : dests) if (!isSet(getPath(message, d))) setPath(message, d, value);
  }
}

/** The object without its undefined and null values (one level, as rudder-transformer's removeUndefinedAndNullValues). */
export function withoutEmpty<T extends Record<string, unknown>>(obj: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) if (isSet(v)) setOwn(out, k, v);
  return out as T;
}

/**
 * A JSON value flattened to one level, as rudder-transformer's flattenJson does by default:
 * object keys joined by `.`, array items as `[i]`, an empty array or (nested) empty object kept
 * as such. Keys come from the payload, so they are written as own keys.
 */
export function flattenJson(data: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const walk = (value: unknown, prefix: string): void => {
    if (value === null || typeof value !== "object") setOwn(out, prefix, value);
    else if (Array.isArray(value)) {
      value.forEach((item, i) => walk(item, `${prefix}[${i}]`));
      if (value.length === 0) setOwn(out, prefix, []);
    } else {
      const keys = Object.keys(value);
      for (const k of keys) walk((value as Record<string, unknown>)[k], prefix ? `${prefix}.${k}` : k);
      if (keys.length === 0 && prefix) setOwn(out, prefix, {});
    }
  };
  walk(data, "");
  return out;
}
