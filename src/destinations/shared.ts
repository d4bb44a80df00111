/**
 * Small helpers the destination kinds share: reading paths out of events, RudderStack's
 * event filtering, flattening, and merging consecutive requests into batches.
 */
import { t } from "elysia";
import { PROTOTYPE_KEYS, prototypeSegment, prototypeSegmentMessage, readKey, setOwn } from "../lib/safe-keys";
import { type ConfigProblem, type DestinationRequest, type SluiceEvent, TransformError } from "./types";

type Obj = Record<string, any>;

/**
 * Reads `a.b.0.c` (or `a.b[0].c`) from a value; undefined when any step is missing. Paths come
 * from configs too, so a step never climbs into a prototype (`constructor`, `__proto__` are
 * followed only where the data itself holds such a key).
 */
export function getPath(value: unknown, path: string): any {
  if (!path) return undefined;
  let cur: any = value;
  for (const part of path.replace(/\[(\d+)\]/g, ".$1").split(".")) {
    if (cur === null || cur === undefined || typeof cur !== "object") return undefined;
    cur = readKey(cur, part);
  }
  return cur;
}

/** The first of `paths` holding a value other than undefined/null. */
export function firstOf(value: unknown, paths: string[]): any {
  for (const p of paths) {
    const v = getPath(value, p);
    if (v !== undefined && v !== null) return v;
  }
  return undefined;
}

// Most RudderStack mapping files use these semantics; `firstOf`/`compact` treat "" as a value and drop nulls.
/** A value a RudderStack mapping would use: not undefined, null, "" or NaN (0 and false count). */
export const isPresent = (v: unknown): boolean => !!v || v === 0 || v === false;

/** RudderStack's refusal of a missing value, naming where its mapping looked (a key or a list of paths). */
export function requireValue<T>(value: T, source: string | string[]): T {
  if (!isPresent(value)) throw new TransformError(`Missing required value from ${JSON.stringify(source)}`);
  return value;
}

/** Neither undefined nor null ("" and 0 count as values). */
export const isDefined = (v: unknown): boolean => v !== undefined && v !== null;

/** The first of `paths` holding a present value. */
export function firstPresent(value: unknown, paths: string[]): any {
  for (const p of paths) {
    const v = getPath(value, p);
    if (isPresent(v)) return v;
  }
  return undefined;
}

/** A copy without top-level undefined values; a null is kept, so it is sent as null. */
export function withoutUndefined(obj: Obj): Obj {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined));
}

/**
 * Sets `a.b.c` on an object, creating intermediate objects. A path through `__proto__`,
 * `constructor` or `prototype` would write into every object of the process, so it aborts the
 * event (RudderStack's safe setter refuses the same keys).
 */
export function setPath(target: Obj, path: string, value: unknown): void {
  const parts = path.split(".");
  const unsafe = prototypeSegment(parts);
  if (unsafe !== undefined) throw new TransformError(`Cannot set unsafe key: "${unsafe}" (at ${path})`);
  let cur = target;
  for (const part of parts.slice(0, -1)) {
    if (cur[part] === null || typeof cur[part] !== "object") cur[part] = {};
    cur = cur[part];
  }
  cur[parts[parts.length - 1]!] = value;
}

/** A copy without top-level undefined/null values (RudderStack's removeUndefinedAndNullValues). */
export function compact<T extends Obj>(obj: T): T {
  const out: Obj = {};
  for (const [k, v] of Object.entries(obj)) if (v !== undefined && v !== null) setOwn(out, k, v);
  return out as T;
}

/** A copy without undefined/null values at any depth (arrays keep their length minus holes). */
export function compactDeep<T>(value: T): T {
  if (Array.isArray(value)) return value.filter((v) => v !== undefined && v !== null).map(compactDeep) as T;
  if (value && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Obj = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined && v !== null) setOwn(out, k, compactDeep(v));
    return out as T;
  }
  return value;
}

export function isPlainObject(v: unknown): v is Obj {
  return !!v && typeof v === "object" && !Array.isArray(v);
}

/**
 * The event's per-destination options, `integrations.<name>`, under any casing of the given
 * names: SDKs and users spell them `BRAZE`, `Braze` or `braze` alike, and RudderStack reads
 * them all.
 */
export function integrationsObject(event: SluiceEvent, ...names: string[]): Obj | undefined {
  const all = event.integrations;
  if (!isPlainObject(all)) return undefined;
  for (const name of names) {
    const wanted = name.toLowerCase();
    const key = Object.keys(all).find((k) => k.toLowerCase() === wanted && isPlainObject(all[k]));
    if (key !== undefined) return all[key];
  }
  return undefined;
}

/**
 * RudderStack's flattenJson: nested keys joined by `separator`; arrays as `a[0]`, or as
 * `a<sep>0` in strict mode. Every index of an array is visited, a hole too (as undefined), as
 * there: a list that extractCustomFields built from `a.5` overwrites `a_0`…`a_4`.
 */
export function flattenJson(value: unknown, separator = ".", strict = false): Obj {
  const out: Obj = {};
  const walk = (cur: unknown, prefix: string) => {
    if (Array.isArray(cur)) {
      if (cur.length === 0 && prefix) setOwn(out, prefix, []);
      for (let i = 0; i < cur.length; i++) walk(cur[i], strict ? `${prefix}${separator}${i}` : `${prefix}[${i}]`);
    } else if (cur !== null && typeof cur === "object") {
      const keys = Object.keys(cur);
      if (keys.length === 0 && prefix) setOwn(out, prefix, {});
      for (const k of keys) walk((cur as Obj)[k], prefix ? `${prefix}${separator}${k}` : k);
    } else if (prefix) {
      setOwn(out, prefix, cur);
    }
  };
  walk(value, "");
  return out;
}

/** `traits`, else `context.traits` (RudderStack's generic "traits" field). */
export function traitsOf(event: SluiceEvent): Obj | undefined {
  return firstOf(event, ["traits", "context.traits"]);
}

/**
 * `traits.<key>` for each key, then `context.traits.<key>` for each: the order RudderStack's
 * mapping files list trait paths in.
 */
export function traitPaths(...keys: string[]): string[] {
  return [...keys.map((k) => `traits.${k}`), ...keys.map((k) => `context.traits.${k}`)];
}

/** The first present value among these traits, top-level traits before context traits. */
export function traitValue(event: SluiceEvent, ...keys: string[]): any {
  return firstPresent(event, traitPaths(...keys));
}

const APPLE_FAMILY = ["ios", "ipados", "watchos", "tvos"];

/** RudderStack's isAppleFamily: iOS, iPadOS, watchOS or tvOS, in any case. */
export function isAppleFamily(platform: unknown): boolean {
  return typeof platform === "string" && APPLE_FAMILY.includes(platform.toLowerCase());
}

/**
 * Copies every key of the `sources` objects (later ones win) that is not excluded and not
 * undefined into `into`: the custom fields beside the ones a mapping already named.
 */
export function copyFieldsExcept(sources: unknown[], into: Obj, exclude: ReadonlySet<string>): Obj {
  for (const source of sources) {
    if (!isPlainObject(source)) continue;
    for (const [k, v] of Object.entries(source)) if (!exclude.has(k) && v !== undefined) setOwn(into, k, v);
  }
  return into;
}

/** RudderStack's generic user id: userId, then ids in traits, then anonymousId. */
export function genericUserId(event: SluiceEvent, includeAnonymous = true): any {
  const paths = ["userId", "traits.userId", "traits.id", "context.traits.userId", "context.traits.id"];
  if (includeAnonymous) paths.push("anonymousId");
  return firstOf(event, paths);
}

export function timestampOf(event: SluiceEvent): string | undefined {
  return firstOf(event, ["timestamp", "originalTimestamp"]);
}

/** Milliseconds since the epoch for an ISO timestamp (or a number already in ms). */
export function toMillis(ts: unknown): number | undefined {
  if (ts === undefined || ts === null || ts === "") return undefined;
  const ms = typeof ts === "number" ? ts : new Date(String(ts)).getTime();
  return Number.isNaN(ms) ? undefined : ms;
}

export function basicAuth(user: string, password = ""): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
}

/** Event names from a RudderStack list (`[{eventName}]`), trimmed, blanks dropped. */
export function eventNameList(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list
    .map((item) => (typeof item === "string" ? item : item?.eventName))
    .filter((n): n is string => typeof n === "string" && n.trim() !== "")
    .map((n) => n.trim());
}

/**
 * RudderStack's event filtering: only track events are filtered, by name, against the
 * allow list or the deny list that `eventFilteringOption` selects ("disable" lets all through).
 */
export function isEventAllowed(event: SluiceEvent, config: Obj): boolean {
  if (event.type !== "track") return true;
  const name = typeof event.event === "string" ? event.event.trim() : "";
  switch (config.eventFilteringOption) {
    case "whitelistedEvents":
      return eventNameList(config.whitelistedEvents).includes(name);
    case "blacklistedEvents":
      return !eventNameList(config.blacklistedEvents).includes(name);
    default:
      return true;
  }
}

export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? "");
}

/** Splits items into chunks of at most `maxItems` and (when given) `maxBytes` of JSON each. */
export function chunkItems<T>(items: T[], maxItems: number, maxBytes = Infinity): T[][] {
  const chunks: T[][] = [];
  let cur: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = maxBytes === Infinity ? 0 : jsonBytes(item) + 1;
    if (cur.length > 0 && (cur.length >= maxItems || bytes + size > maxBytes)) {
      chunks.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(item);
    bytes += size;
  }
  if (cur.length > 0) chunks.push(cur);
  return chunks;
}

/**
 * Merges runs of consecutive requests sharing a batch key; requests whose key is null pass
 * through unchanged. Only consecutive requests merge, so the order the service sees is the
 * order of the events.
 */
export function batchConsecutive(
  requests: DestinationRequest[],
  keyOf: (r: DestinationRequest) => string | null,
  mergeRun: (run: DestinationRequest[]) => DestinationRequest[],
): DestinationRequest[] {
  const out: DestinationRequest[] = [];
  let run: DestinationRequest[] = [];
  let runKey: string | null = null;
  const flush = () => {
    if (run.length > 0) out.push(...mergeRun(run).map((r) => withUserKey(r, run)));
    run = [];
    runKey = null;
  };
  for (const req of requests) {
    const key = keyOf(req);
    if (key === null) {
      flush();
      out.push(req);
      continue;
    }
    if (key !== runKey) flush();
    runKey = key;
    run.push(req);
  }
  flush();
  return out;
}

/** A merged request belongs to one user only if every request in it did. */
function withUserKey(merged: DestinationRequest, run: DestinationRequest[]): DestinationRequest {
  const keys = new Set(run.map((r) => r.userKey));
  const { userKey: _drop, ...rest } = merged;
  return keys.size === 1 && run[0]!.userKey !== undefined ? { ...rest, userKey: run[0]!.userKey } : rest;
}

/** A batch key from the parts that must match for two requests to share one HTTP call. */
export function requestKey(r: DestinationRequest): string {
  return JSON.stringify([r.method, r.endpoint, r.headers, r.params]);
}

/** The items of a JSON_ARRAY body. */
export function jsonArrayItems(r: DestinationRequest): unknown[] {
  const raw = r.body.JSON_ARRAY.batch;
  return typeof raw === "string" ? (JSON.parse(raw) as unknown[]) : [];
}

/**
 * Config schema parts for RudderStack's event filtering keys, spread into a kind's schema, in the
 * order of RudderStack's definitions' defaultConfig, which every kind's own list keeps.
 */
export const eventFilteringSchema = {
  blacklistedEvents: t.Optional(t.Array(t.Any())),
  whitelistedEvents: t.Optional(t.Array(t.Any())),
  eventFilteringOption: t.Optional(t.String()),
};

export const EVENT_FILTERING_KEYS = Object.keys(eventFilteringSchema);

/** One `{from, to}` row of a RudderStack config table (mapEvents, eventToTopicMap, eventKeyMap). */
export const FromTo = t.Object({ from: t.Optional(t.String()), to: t.Optional(t.String()) }, { additionalProperties: true });

/** `a.b[0].c` as the segments getPath and setPath follow. */
export const dottedSegments = (path: string): string[] => path.replace(/\[(\d+)\]/g, ".$1").split(".");

/** A value used as one key, not a path: its only segment is itself. */
export const wholeKey = (key: string): string[] => [key];

/** A config value (a path or a key, read by `segmentsOf`) refused when it reaches a prototype. */
export function refusedConfigPath(key: string, value: unknown, segmentsOf: (v: string) => string[] = dottedSegments): ConfigProblem | undefined {
  if (typeof value !== "string") return undefined;
  const bad = prototypeSegment(segmentsOf(value));
  return bad === undefined ? undefined : { key, message: prototypeSegmentMessage(bad) };
}

/** The first entry of the config list `listKey` whose `field` is refused by refusedConfigPath. */
export function refusedListField(
  config: Obj,
  listKey: string,
  field: string,
  segmentsOf: (v: string) => string[] = dottedSegments,
): ConfigProblem | undefined {
  const list = config[listKey];
  if (!Array.isArray(list)) return undefined;
  for (let i = 0; i < list.length; i++) {
    const item = list[i];
    const problem = isPlainObject(item) ? refusedConfigPath(`${listKey}[${i}].${field}`, item[field], segmentsOf) : undefined;
    if (problem) return problem;
  }
  return undefined;
}

// ---------- RudderStack's extractCustomFields ----------

/**
 * A key as RudderStack's setValue (set-value 4, behind @rudderstack/integrations-lib) splits it:
 * at dots, `\x` taking the next character as it is (a `\` at the end adds the text "undefined",
 * as there), a part that reads as a whole number becoming that number (` 1`, `1e2` → 100), an
 * empty last part dropped; a key holding `/` is never split.
 */
function setValueParts(path: string): Array<string | number> {
  if (path.includes("/")) return [path];
  const parts: Array<string | number> = [];
  let part = "";
  const push = (p: string) => {
    const n = Number(p);
    parts.push(p.trim() !== "" && Number.isInteger(n) ? n : p);
  };
  for (let i = 0; i < path.length; i++) {
    const c = path[i];
    if (c === "\\") {
      part += String(path[++i]);
      continue;
    }
    if (c === ".") {
      push(part);
      part = "";
      continue;
    }
    part += c;
  }
  if (part) push(part);
  return parts;
}

/**
 * RudderStack's setValue(target, key, value): the key is a path (setValueParts), intermediate
 * objects are made as needed, a list where the next part is a number (replacing whatever was
 * there that is no list), an object where the value there is no object. A key any of whose
 * parts is `__proto__`, `constructor` or `prototype` is written whole, its parts joined by dots,
 * as that library's guard writes it. Values are stored, not copied, and objects already in
 * `target` are written into, as there. A path through a member every object inherits
 * (`toString.x`) writes into that shared function there, so nothing reaches the payload: it is
 * dropped here.
 */
function setValueLikeRudderStack(target: Obj, path: string, value: unknown): void {
  if (!path) return;
  const parts = setValueParts(path);
  if (parts.some((p) => typeof p === "string" && PROTOTYPE_KEYS.has(p))) {
    setOwn(target, parts.join("."), value);
    return;
  }
  let obj: any = target;
  try {
    for (let i = 0; i < parts.length; i++) {
      const key = parts[i]!;
      const next = parts[i + 1];
      if (next === undefined) {
        if (value === undefined) delete obj[key];
        else obj[key] = value;
        return;
      }
      if (typeof next === "number" && !Array.isArray(obj[key])) {
        obj = obj[key] = [];
        continue;
      }
      const cur = obj[key];
      if (cur === null || (typeof cur !== "object" && typeof cur !== "function")) obj[key] = {};
      else if (!Object.hasOwn(obj, key)) return;
      obj = obj[key];
    }
  } catch (e) {
    // `a.length.x` on a list: an invalid array length there too.
    throw new TransformError(e instanceof Error ? e.message : String(e));
  }
}

/**
 * RudderStack's extractCustomFields(message, payload, keys, exclusionFields): every key of each
 * source object that is not excluded (nor `__proto__`, `constructor`, `prototype`) written into
 * `payload` with setValue, so a key is a path: `{"a.b": 1}` gives `{a: {b: 1}}` and `{"a.0": 1}`
 * `{a: [1]}` (a kind that flattens with `_` then sends `a_b`, `a_0`). The list of keys grows
 * source by source and each source writes every key listed so far that it holds, so a later
 * source's value wins, at the place of the key's first writing. Values are the sources' own
 * objects and a later key may write into them (`{a: {}, "a.b": 1}` adds `b` to the source's
 * `a`), as there: pass copies where the event must stay as it came, and read the copies after.
 */
export function extractCustomFields(payload: Obj, sources: unknown[], exclude: readonly string[]): Obj {
  const keys: string[] = [];
  for (const source of sources) {
    if (!source || typeof source !== "object") continue;
    for (const k of Object.keys(source)) if (!exclude.includes(k) && !PROTOTYPE_KEYS.has(k)) keys.push(k);
    for (const k of keys) {
      const v = Object.hasOwn(source, k) ? (source as Obj)[k] : undefined;
      if (v !== undefined) setValueLikeRudderStack(payload, k, v);
    }
  }
  return payload;
}

// ---------- e-mail addresses ----------

// validator.js 13.15.22's isEmail, which RudderStack calls with its default options (display
// names, IP domains and underscores refused; UTF-8 local parts allowed; a TLD required).
const EMAIL_USER_UTF8 = /^[a-z\d!#$%&'*+\-/=?^_`{|}~\u00A1-\uD7FF\uF900-\uFDCF\uFDF0-\uFFEF]+$/i;
const QUOTED_USER_UTF8 =
  /^([\s\x01-\x08\x0b\x0c\x0e-\x1f\x7f\x21\x23-\x5b\x5d-\x7e\u00A0-\uD7FF\uF900-\uFDCF\uFDF0-\uFFEF]|(\\[\x01-\x09\x0b\x0c\x0d-\x7f\u00A0-\uD7FF\uF900-\uFDCF\uFDF0-\uFFEF]))*$/i;
const FQDN_TLD = /^([a-z\u00A1-\u00A8\u00AA-\uD7FF\uF900-\uFDCF\uFDF0-\uFFEF]{2,}|xn[a-z0-9-]{2,})$/i;
const FQDN_LABEL = /^[a-z_\u00a1-\uffff0-9-]+$/i;

/** UTF-8 bytes as validator's isByteLength counts them (through encodeURI; undefined where that throws). */
function uriByteLength(text: string): number | undefined {
  try {
    return encodeURI(text).split(/%..|./).length - 1;
  } catch {
    return undefined; // a lone surrogate: validator's own check throws there
  }
}

/** validator's isFQDN with its defaults (a TLD of letters or punycode, no underscores, no trailing dot). */
function isFqdn(domain: string): boolean {
  const labels = domain.split(".");
  const tld = labels[labels.length - 1]!;
  if (labels.length < 2 || !FQDN_TLD.test(tld) || /\s/.test(tld) || /^\d+$/.test(tld)) return false;
  return labels.every(
    (label) =>
      label.length <= 63 && FQDN_LABEL.test(label) && !/[\uff01-\uff5e]/.test(label) && !/^-|-$/.test(label) && !label.includes("_"),
  );
}

/**
 * RudderStack's e-mail check, validator.js 13.15.22's `isEmail` with its default options, as its
 * HS and MAUTIC refuse an invalid e-mail with it (its CUSTOMERIO also picks `email` or `id` with
 * it, and its SNAPCHAT_CONVERSION v3 sends `em` only when it passes). At most 254 characters;
 * the part after the last `@` a fully qualified domain (at most 254 bytes, labels of at most 63
 * characters, letters, digits and hyphens, no hyphen at either end, a TLD of two or more letters
 * or `xn--…`); the part before it at most 64 bytes, either `"quoted"` or dot-separated atoms,
 * none empty (so `.a@x.com`, `a.@x.com` and `a..b@x.com` are refused). A value that is no string
 * is no address here (validator throws for it, so RudderStack's transform fails there), nor is
 * one with a lone surrogate (validator's byte count throws). Checked against validator's own test
 * list for the default options (test/destinations/email.test.ts).
 */
export function isEmail(value: unknown): boolean {
  if (typeof value !== "string") return false;
  if (value.length > 254) return false;
  const at = value.lastIndexOf("@");
  const domain = value.slice(at + 1);
  let user = at < 0 ? "" : value.slice(0, at);
  const userBytes = uriByteLength(user);
  const domainBytes = uriByteLength(domain);
  if (userBytes === undefined || domainBytes === undefined || userBytes > 64 || domainBytes > 254) return false;
  if (!isFqdn(domain)) return false;
  if (user[0] === '"' && user[user.length - 1] === '"') {
    user = user.slice(1, user.length - 1);
    return QUOTED_USER_UTF8.test(user);
  }
  return user.split(".").every((part) => EMAIL_USER_UTF8.test(part));
}

/**
 * RudderStack's event map (FIREHOSE's mapEvents, GOOGLEPUBSUB's eventToTopicMap): entries
 * `{from, to}` keyed by `from` in lower case (a blank one left out, a later one winning), looked
 * up by the event's name, then its type, then `*`; the first that maps to something wins.
 */
export function mappedByEvent(list: unknown, event: { event?: unknown; type?: unknown }): string | undefined {
  const map = new Map<string, unknown>();
  for (const m of Array.isArray(list) ? list : []) if (isPlainObject(m) && typeof m.from === "string" && m.from !== "") map.set(m.from.toLowerCase(), m.to);
  const pick = (k: string | undefined) => {
    const v = k === undefined ? undefined : map.get(k);
    return typeof v === "string" && v ? v : undefined;
  };
  const name = typeof event.event === "string" && event.event ? event.event.toLowerCase() : undefined;
  return pick(name) ?? pick(typeof event.type === "string" ? event.type.toLowerCase() : undefined) ?? pick("*");
}
