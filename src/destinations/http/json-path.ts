/**
 * The JSON paths RudderStack's HTTP destination is configured with, on both sides of a
 * mapping: `$`, `$.a.b`, `$.a[0]`, `$['a b']`, `$.'a-b'` and the `[*]` / `.*` wildcard that
 * maps one array onto another (`$.products[*].id` → `$.items[*].item_id`).
 */
import { assignOwn, isPrototypeKey, prototypeSegmentMessage, readKey } from "../../lib/safe-keys";
import { TransformError } from "../types";

export type Segment = { key: string } | { index: number } | { wild: true };

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
    segments.push(m[4] !== undefined ? { index: Number(m[4]) } : key !== undefined ? { key } : { wild: true });
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

const isWild = (s: Segment): s is { wild: true } => "wild" in s;

/**
 * The value at `segments`; a wildcard yields the list of what follows it in every element, and
 * an empty list when the path ends before the wildcard (RudderStack then sends `items: []`).
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
 * Sets a value, creating objects for keys and arrays for indexes on the way. Refuses a
 * prototype key itself, whatever built the segments: the last line of defence for a config
 * saved before such paths were refused, or one the Test API runs unsaved.
 */
function setAt(target: any, segments: Segment[], value: unknown): void {
  let cur = target;
  segments.forEach((s, i) => {
    const k = "index" in s ? s.index : (s as { key: string }).key;
    if (isPrototypeKey(k)) throw new TransformError(`HTTP mapping target: ${prototypeSegmentMessage(k as string)}`);
    if (i === segments.length - 1) {
      cur[k] = value;
      return;
    }
    const next = segments[i + 1]!;
    if (cur[k] === null || typeof cur[k] !== "object") cur[k] = "index" in next ? [] : {};
    cur = cur[k];
  });
}

/**
 * Writes a mapped value into `out`. `$` merges an object into the root; one wildcard spreads a
 * list element by element (`$.items[*].id`), so several mappings build the same elements.
 */
export function writePath(out: Record<string, any>, segments: Segment[], value: unknown): void {
  if (segments.length === 0) {
    if (value !== null && typeof value === "object" && !Array.isArray(value)) assignOwn(out, structuredClone(value));
    return;
  }
  const w = segments.findIndex(isWild);
  if (w === -1) return setAt(out, segments, structuredClone(value));
  if (segments.slice(w + 1).some(isWild)) throw new TransformError("HTTP mapping targets support one [*] wildcard");
  const prefix = segments.slice(0, w);
  const suffix = segments.slice(w + 1);
  let list = prefix.length === 0 ? undefined : readPath(out, prefix);
  if (!Array.isArray(list)) {
    list = [];
    if (prefix.length === 0) throw new TransformError("HTTP mapping target cannot be a wildcard at the root");
    setAt(out, prefix, list);
  }
  const arr = list as any[];
  const values = Array.isArray(value) ? value : arr.length > 0 ? arr.map(() => value) : [value];
  values.forEach((v, i) => {
    if (v === undefined) return;
    if (suffix.length === 0) arr[i] = structuredClone(v);
    else {
      if (arr[i] === null || typeof arr[i] !== "object") arr[i] = "index" in suffix[0]! ? [] : {};
      setAt(arr[i], suffix, structuredClone(v));
    }
  });
}
