/**
 * RudderStack's anonymousId for a Canny user: the `sha256` npm package's hex digest of the email,
 * which reads a string as a *binary* (latin1) string, one byte per UTF-16 code unit. So an email
 * with characters beyond U+00FF hashes to what RudderStack makes, not to the digest of its UTF-8
 * bytes. A value that is not a string fails there with Node's Buffer error, whose text RudderStack
 * passes on; `HashInputError` carries that text.
 */
import { createHash } from "node:crypto";

export class HashInputError extends Error {}

/** Node's wording for the received value in ERR_INVALID_ARG_TYPE (determineSpecificType). */
function received(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === "object") return "an instance of Object";
  let shown = Object.is(value, -0) ? "-0" : typeof value === "string" ? `'${value}'` : String(value);
  if (shown.length > 28) shown = `${shown.slice(0, 25)}...`;
  return `type ${typeof value} (${shown})`;
}

const invalidArg = (text: string) => new HashInputError(`TypeError [ERR_INVALID_ARG_TYPE]: ${text}`);
const notBufferable = (value: unknown) =>
  invalidArg(`The first argument must be of type string or an instance of Buffer, ArrayBuffer, or Array or an Array-like Object. Received ${received(value)}`);

/** A value converted to a byte as a Uint8Array element would be (ToNumber, then modulo 256). */
function toByte(v: unknown): number {
  if (typeof v === "number") return v;
  if (typeof v === "boolean") return Number(v);
  if (typeof v === "string") return Number(v);
  if (v === null) return 0;
  if (Array.isArray(v)) return Number(joined(v));
  return NaN;
}

/** An array as JavaScript turns it into a string (Array.prototype.join, null and undefined empty). */
function joined(a: unknown[]): string {
  return a.map((x) => (x === null || x === undefined ? "" : Array.isArray(x) ? joined(x) : typeof x === "object" ? "[object Object]" : String(x))).join(",");
}

/** Array-likes (JSON arrays, objects with a numeric `length`) become bytes as Buffer.from makes them. */
const MAX_ARRAY_LIKE = 1 << 20;
function arrayLikeBytes(length: number, at: (i: number) => unknown): Uint8Array {
  if (!(length > 0)) return new Uint8Array(0);
  if (length > MAX_ARRAY_LIKE) throw new HashInputError(`RangeError: Invalid typed array length: ${length}`);
  const n = Math.floor(length);
  return Uint8Array.from({ length: n }, (_, i) => toByte(at(i)));
}

function bytesOf(value: unknown): Uint8Array {
  if (typeof value === "string") return Buffer.from(value, "latin1");
  if (Array.isArray(value)) return arrayLikeBytes(value.length, (i) => value[i]);
  // new Buffer(number, 'binary') refuses a number outright.
  if (typeof value === "number") throw invalidArg(`The "string" argument must be of type string. Received ${received(value)}`);
  if (typeof value === "object" && value !== null) {
    const obj = value as Record<string, unknown>;
    if (Object.hasOwn(obj, "length") && obj.length !== undefined) {
      return typeof obj.length === "number" ? arrayLikeBytes(obj.length, (i) => obj[String(i)]) : new Uint8Array(0);
    }
    if (obj.type === "Buffer" && Array.isArray(obj.data)) {
      const data = obj.data;
      return arrayLikeBytes(data.length, (i) => data[i]);
    }
  }
  throw notBufferable(value);
}

/** The hex SHA-256 RudderStack's Canny source makes of `value`; throws HashInputError where it fails. */
export function rudderSha256(value: unknown): string {
  return createHash("sha256").update(bytesOf(value)).digest("hex");
}
