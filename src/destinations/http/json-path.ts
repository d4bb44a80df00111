/**
 * The JSON paths RudderStack's HTTP destination is configured with, on both sides of a
 * mapping: `$`, `$.a.b`, `$.a[0]`, `$['a b']`, `$.'a-b'` and the `[*]` / `.*` wildcard that
 * maps one array onto another (`$.products[*].id` → `$.items[*].item_id`).
 */
import { assignOwn, isPrototypeKey, prototypeSegmentMessage, readKey } from "../../lib/safe-keys";
import { TransformError } from "../types";

/** `[*]` and `.*` walk different things in RudderStack's engine; `dot` marks `.*`. */
export type Segment = { key: string } | { index: number } | { wild: true; dot?: true };

const SEGMENT = /^(?:\.\*|\[\*\]|\.'([^']*)'|\."([^"]*)"|\.([^.[\]'"]+)|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\])/;

export function parsePath(path: string): Segment[] {
  const trimmed = path.trim();
  if (!trimmed.startsWith("$")) throw new TransformError(`HTTP mapping path '${path}' must start with '$'`);
  // `$.` is how some saved configs spell the whole event.
  let rest = trimmed === "$." ? "" : trimmed.slice(1);
  const segments: Segment[] = [];
  while (rest !== "") {
    const m = SEGMENT.exec(rest);
    if (!m) throw new TransformError(`HTTP mapping path '${path}' is not supported (use $.a.b, $.a[0], $['a b'] or $.a[*].b)`);
    const key = m[1] ?? m[2] ?? m[3] ?? m[5] ?? m[6];
    if (isPrototypeKey(key)) throw new TransformError(`HTTP mapping path '${path}': ${prototypeSegmentMessage(key!)}`);
    segments.push(m[4] !== undefined ? { index: Number(m[4]) } : key !== undefined ? { key } : m[0] === ".*" ? { wild: true, dot: true } : { wild: true });
    rest = rest.slice(m[0].length);
  }
  return segments;
}

/**
 * The segment of a path that would reach a prototype (`$.__proto__.x`, `$['constructor']`),
 * for refusing a config when it is saved; a path that does not parse is left to the transform.
 */
export function prototypeSegmentOf(path: string): string | undefined {
  let rest = path.trim().slice(1);
  for (let m = SEGMENT.exec(rest); m && rest !== ""; m = SEGMENT.exec(rest)) {
    const key = m[1] ?? m[2] ?? m[3] ?? m[5] ?? m[6];
    if (isPrototypeKey(key)) return key;
    rest = rest.slice(m[0].length);
  }
  return undefined;
}

export const isWild = (s: Segment): s is { wild: true; dot?: true } => "wild" in s;

/**
 * The value at `segments`; a wildcard yields the list of what follows it in every element, and
 * an empty list when the path ends before the wildcard. Used where the first match is wanted
 * (URL placeholders, path parameters).
 */
export function readPath(value: unknown, segments: Segment[]): unknown {
  let cur: any = value;
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i]!;
    if (isWild(s)) {
      const items = Array.isArray(cur) ? cur : cur !== null && typeof cur === "object" ? Object.values(cur) : [];
      return items.map((item) => readPath(item, segments.slice(i + 1)));
    }
    if (cur === null || cur === undefined || typeof cur !== "object") return segments.slice(i).some(isWild) ? [] : undefined;
    cur = readKey(cur, "index" in s ? s.index : s.key);
  }
  return cur;
}

/**
 * The items a wildcard at the end of `segments` walks, as RudderStack's mapping engine walks
 * them: `[*]` takes a list's items and wraps anything else (an object, a text) as a list of one;
 * `.*` takes an object's values (and, here, a list's items). Nothing when there is no value.
 */
export function listAt(value: unknown, segments: Segment[], wild: Segment): unknown[] | undefined {
  const v = readPath(value, segments);
  if (v === null || v === undefined) return undefined;
  if (Array.isArray(v)) return v;
  if ("dot" in wild) return typeof v === "object" ? Object.values(v) : undefined;
  return [v];
}

/**
 * A mapping source read as RudderStack's mapping engine reads JSON paths: a null found at the
 * end of the path counts as missing. A path with a wildcard gathers the matches that are not
 * null (readMatches): none is missing, one is the value itself (not a list of one), more are a
 * list. A path that ends in the wildcard is the whole list, nulls included.
 */
export function readSource(value: unknown, segments: Segment[]): unknown {
  const w = segments.findIndex(isWild);
  if (w === -1) {
    const v = readPath(value, segments);
    return v === null ? undefined : v;
  }
  if (w === segments.length - 1) return listAt(value, segments.slice(0, w), segments[w]!);
  const matches = readMatches(value, segments);
  return matches.length === 0 ? undefined : matches.length === 1 ? matches[0] : matches;
}

/** The values a wildcard path matches, nulls and missing ones left out. */
export function readMatches(value: unknown, segments: Segment[]): unknown[] {
  const w = segments.findIndex(isWild);
  const items = listAt(value, segments.slice(0, w), segments[w]!) ?? [];
  const found = w === segments.length - 1 ? items : items.map((item) => readSource(item, segments.slice(w + 1)));
  return found.filter((v) => v !== undefined && v !== null);
}

/**
 * Sets a value (`$` spreads it into the root), creating objects for keys and arrays for
 * indexes on the way even when the value is missing: RudderStack's mappings build the
 * containers of every target path, so a missing `$.traits.address.pinCode` mapped to
 * `$.contacts.address.pin_code` still yields `contacts: {address: {}}`. A missing value never
 * replaces one an earlier mapping wrote.
 * Refuses a prototype key itself, whatever built the segments: the last line of defence for
 * a config saved before such paths were refused, or one the Test API runs unsaved.
 */
export function writePath(target: any, segments: Segment[], value: unknown): void {
  if (segments.length === 0) return mergeRoot(target, value);
  let cur = target;
  segments.forEach((s, i) => {
    if (isWild(s)) throw new TransformError("HTTP mapping targets support one [*] wildcard");
    const k = "index" in s ? s.index : s.key;
    if (isPrototypeKey(k)) throw new TransformError(`HTTP mapping target: ${prototypeSegmentMessage(k as string)}`);
    if (i === segments.length - 1) {
      if (value !== undefined || !Object.hasOwn(cur, k)) cur[k] = value === undefined ? undefined : structuredClone(value);
      return;
    }
    const next = segments[i + 1]!;
    // An earlier text at this key is spread into the object that replaces it, as RudderStack does.
    if (typeof cur[k] === "string") cur[k] = { ...(cur[k] as string).split("") };
    else if (cur[k] === null || typeof cur[k] !== "object") cur[k] = "index" in next ? [] : {};
    cur = cur[k];
  });
}

/**
 * `$` as a target spreads the value into the root, as a JavaScript spread does: an object's
 * keys, a list's or a text's by index (nonsense configs, but RudderStack sends what they make).
 */
function mergeRoot(out: Record<string, any>, value: unknown): void {
  if (value !== null && value !== undefined) assignOwn(out, structuredClone({ ...(value as object) }));
}
