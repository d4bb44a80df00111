/**
 * The shape limits every JSON body meets before it is parsed, validated or described in an error.
 *
 * A body's size is bounded elsewhere, but size alone does not bound the work it makes: 40 KB of
 * `[[[…]]]` is 20,000 levels, and every recursive step after the parse (schema checks, error
 * formatting, copies, a transform's walk) pays for each level, some of them for each level again.
 * So the text is scanned once, in one pass with no recursion and no allocation, and refused when
 * it nests deeper than `maxDepth` or holds more than `maxElements` values. The refusal is a 400
 * that names the limit, and costs the same whatever follows the point where it was crossed.
 *
 * What counts: each `[` and `{` opens a level and is one value; each `,` outside a string starts
 * one more value. Characters inside strings (escapes included) count for nothing. The scan does
 * not judge the JSON otherwise: the parser that follows does.
 */
import { badRequest } from "./errors";

export interface JsonShapeLimits {
  /** Levels of arrays and objects, the outermost one included. */
  maxDepth: number;
  /** Values in the whole body: containers, and each element and member. */
  maxElements: number;
  /** Members of any one object. */
  maxMembers: number;
}

/**
 * Events: RudderStack's SDKs nest a call at most about ten levels deep (a batch, its call,
 * context.traits.address, a product's options); 64 leaves room for any real payload and for
 * webhook bodies, while every walk of an event stays far from the stack's depth.
 * Elements: one per 16 bytes of the route's limit. A 4 MB batch of real calls (about 30
 * values a KB) holds some 120,000; the limit refuses only bodies that are mostly punctuation.
 */
export const MAX_JSON_DEPTH = 64;
export const BYTES_PER_ELEMENT = 16;
const MIN_ELEMENTS = 65_536;
/**
 * Members of one object: a parser builds a wide object key by key into a dictionary, about
 * 0.7 µs a key here, so 200,000 keys held the server for 150 ms. The widest real objects
 * (a Shopify order, a workspace's destination config) have hundreds.
 */
export const MAX_OBJECT_MEMBERS = 10_000;

export const shapeLimitsFor = (bodyLimitBytes: number): JsonShapeLimits => ({
  maxDepth: MAX_JSON_DEPTH,
  // Never fewer than 65,536: a small body parses fast whatever it holds, and a 32 KB call
  // listing 5,000 product ids is real.
  maxElements: Math.max(MIN_ELEMENTS, Math.floor(bodyLimitBytes / BYTES_PER_ELEMENT)),
  maxMembers: MAX_OBJECT_MEMBERS,
});

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;

/** Throws a 400 naming the limit when `text` nests or counts past it. */
export function assertJsonShape(text: string, limits: JsonShapeLimits, what = "request body"): void {
  if (!withinByCounting(text, limits)) scanShape(text, limits, what);
}

/** The full scan behind assertJsonShape, for a body that counting alone does not clear. */
function scanShape(text: string, limits: JsonShapeLimits, what: string): void {
  let depth = 0;
  let elements = 0;
  // Per open level: whether it is an object, and its members so far (commas seen + 1).
  const isObject = new Uint8Array(limits.maxDepth + 1);
  const members = new Uint32Array(limits.maxDepth + 1);
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Strings are most of a body: the native indexOf finds their end. A quote preceded by an
      // odd run of backslashes is escaped.
      let end = text.indexOf('"', i + 1);
      while (end !== -1 && escaped(text, end)) end = text.indexOf('"', end + 1);
      if (end === -1) return;
      i = end;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > limits.maxDepth) throw badRequest(`${what} nests deeper than ${limits.maxDepth} levels of arrays and objects (at character ${i})`);
      if (++elements > limits.maxElements) throw tooMany(what, limits);
      isObject[depth] = c === OPEN_OBJECT ? 1 : 0;
      members[depth] = 1;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      if (depth > 0) depth--;
    } else if (c === COMMA) {
      if (++elements > limits.maxElements) throw tooMany(what, limits);
      if (isObject[depth] && ++members[depth]! > limits.maxMembers) {
        throw badRequest(`${what} has an object of more than ${limits.maxMembers} members (at character ${i})`);
      }
    }
  }
}

function escaped(text: string, quoteAt: number): boolean {
  let backslashes = 0;
  for (let k = quoteAt - 1; k >= 0 && text.charCodeAt(k) === BACKSLASH; k--) backslashes++;
  return backslashes % 2 === 1;
}

/**
 * Most bodies are event calls of a KB or two: too short to hold more values than the limit (a
 * value and its comma take two characters, an object member five), so only nesting could be
 * over, and that cannot be deeper than the brackets there are. Counting them with the native
 * indexOf costs a tenth of a µs for such a body.
 */
function withinByCounting(text: string, limits: JsonShapeLimits): boolean {
  const n = text.length;
  if (n >= 2 * limits.maxElements - 1 || n >= 5 * limits.maxMembers - 1) return false;
  let brackets = 0;
  for (const open of ["{", "["]) {
    for (let i = text.indexOf(open); i !== -1; i = text.indexOf(open, i + 1)) if (++brackets > limits.maxDepth) return false;
  }
  return true;
}

const tooMany = (what: string, limits: JsonShapeLimits) =>
  badRequest(`${what} holds more than ${limits.maxElements} values (arrays, objects, their elements and members)`);

/**
 * Below this many characters a body is parsed first and its depth read off the parsed value: the
 * text scan of a 12 KB batch of 100 calls cost as much as its parse (30 µs), the walk of the
 * parsed value a few µs; and no body this short can hold more values or members than the limits,
 * nor nest deep enough to make the parse slow (16,000 levels parse in about 15 ms).
 */
const PARSE_FIRST_BELOW = 32 * 1024;

/** JSON.parse behind the shape check; a syntax error is a 400 with `invalid` as its message. */
export function parseJsonShaped(text: string, limits: JsonShapeLimits, invalid = "request body is not valid JSON", what = "request body"): unknown {
  // Counted once: a body it clears is parsed at once; a short one it does not is parsed first and
  // its depth walked; a long one is scanned.
  const counted = withinByCounting(text, limits);
  const parseFirst = !counted && text.length < PARSE_FIRST_BELOW;
  if (!counted && !parseFirst) scanShape(text, limits, what);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest(invalid);
  }
  if (parseFirst) assertValueDepth(value, limits.maxDepth, what);
  return value;
}

/** Throws the same 400 as the scan for a parsed value nested deeper than `maxDepth`; walks no deeper. */
function assertValueDepth(root: unknown, maxDepth: number, what: string): void {
  if (root === null || typeof root !== "object") return;
  const values: object[] = [root];
  const depths: number[] = [1];
  while (values.length) {
    const v = values.pop()!;
    const depth = depths.pop()!;
    if (depth > maxDepth) throw badRequest(`${what} nests deeper than ${maxDepth} levels of arrays and objects`);
    if (Array.isArray(v)) {
      for (const item of v) if (item !== null && typeof item === "object") values.push(item), depths.push(depth + 1);
    } else {
      for (const key in v) {
        const item = (v as Record<string, unknown>)[key];
        if (item !== null && typeof item === "object") values.push(item), depths.push(depth + 1);
      }
    }
  }
}
