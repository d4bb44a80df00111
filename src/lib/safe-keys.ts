/**
 * Keys that name an object's prototype rather than its data. Events and configs name keys
 * freely, and two ways of using such a key change objects the code never meant to touch:
 * - following a path: `a.__proto__.x = v` and `a.constructor.prototype.x = v` write into
 *   Object.prototype, which every object of the process inherits from;
 * - writing one key: `obj["__proto__"] = v` replaces obj's prototype instead of adding a key.
 * JSON.parse itself is safe (it makes "__proto__" an own key), so the danger is in the code
 * that copies, merges or walks what it parsed: that code goes through these functions.
 */

/** The path segments that reach a prototype; a path naming one is refused, never followed. */
export const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(["__proto__", "prototype", "constructor"]);

export function isPrototypeKey(key: unknown): boolean {
  return typeof key === "string" && PROTOTYPE_KEYS.has(key);
}

/** The first segment of `segments` that reaches a prototype, or undefined. */
export function prototypeSegment(segments: Iterable<unknown>): string | undefined {
  for (const s of segments) if (isPrototypeKey(s)) return s as string;
  return undefined;
}

/** How a refused segment is named, the same at save time and at run time. */
export const prototypeSegmentMessage = (segment: string) => `path segment '${segment}' is not allowed`;

/**
 * Writes `key` as an own data property. Only `__proto__` needs care: as a plain assignment it
 * would replace the prototype, so it is defined as the own key JSON.parse would have made.
 * `constructor` and `prototype` are ordinary keys when written one level deep (a property
 * named `constructor` is real data: think of a Formula 1 event).
 */
export function setOwn(target: object, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else (target as Record<string, unknown>)[key] = value;
}

/** Object.assign that copies every own key of `source` as data, `__proto__` included. */
export function assignOwn<T extends object>(target: T, source: object): T {
  for (const [k, v] of Object.entries(source)) setOwn(target, k, v);
  return target;
}

/**
 * The value of `key` in `value` when it is data the object holds: a prototype key is read only
 * as an own property, so a path never climbs into Object.prototype or a constructor.
 */
export function readKey(value: unknown, key: string | number): unknown {
  if (value === null || value === undefined || typeof value !== "object") return undefined;
  if (typeof key === "string" && PROTOTYPE_KEYS.has(key) && !Object.hasOwn(value, key)) return undefined;
  return (value as Record<string | number, unknown>)[key];
}

/** A value of an object used as a lookup table keyed by user-supplied names: own keys only. */
export function ownValue<T>(table: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}
