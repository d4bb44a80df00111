/**
 * Turns an event request into a JSON object under the size limits, without ever
 * buffering a body far over the limit: Content-Length is checked first, a body of
 * unknown length is read until it crosses the limit, and gzip output is capped.
 */
import { gunzipSync } from "node:zlib";
import { badRequest } from "../lib/errors";
import { parseJsonShaped, shapeLimitsFor } from "../lib/json-shape";
import { bodyRead, readUpTo } from "../lib/read-up-to";

export class BodyError extends Error {}

const tooLarge = (limit: number) => badRequest(`request body is larger than ${limit / 1024} KB`);

async function readLimited(request: Request, readLimit: number, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null) {
    const n = Number(declared);
    if (!Number.isFinite(n) || n < 0) throw badRequest("Content-Length header is invalid");
    if (n > readLimit) throw tooLarge(limit);
    return new Uint8Array(await bodyRead(request.arrayBuffer()));
  }
  const { bytes, over } = await bodyRead(readUpTo(request.body, readLimit));
  if (over) throw tooLarge(limit);
  return bytes;
}

/** Waits for a body still arriving (lib/slow-bodies.ts: the body deadline and the per-address bound). */
export type BodyWait = <T>(request: Request, read: () => Promise<T>) => Promise<T>;

/**
 * The body as text. A body that came with its headers is there at once (wrk, most SDKs on a
 * kept-alive connection): only one still arriving goes through `wait` (the body deadline is a
 * native call worth about a µs, so event calls that do not wait skip it).
 */
function textOf(request: Request, wait?: BodyWait): string | Promise<string> {
  const pending = request.text();
  if (Bun.peek.status(pending) === "fulfilled") return Bun.peek(pending) as string;
  if (!wait) return bodyRead(pending);
  // A body refused unread still ends in a rejection when its client goes; it is nobody's error.
  pending.catch(() => {});
  return wait(request, () => bodyRead(pending));
}

/**
 * Reads, decompresses and parses the body. `limit` counts the decoded bytes, so a
 * small gzip bomb is refused as soon as its output crosses the limit.
 */
export async function readJsonBody(request: Request, limit: number, wait?: BodyWait): Promise<{ value: Record<string, unknown>; bytes: number }> {
  const encoding = request.headers.get("content-encoding")?.trim().toLowerCase();
  const declared = request.headers.get("content-length");
  // The common case, an uncompressed body of known length within the limit: read as text at
  // once (the decoded size is the declared one), skipping two copies; its shape is checked
  // before it is parsed (lib/json-shape.ts).
  if (!encoding && declared !== null && /^\d+$/.test(declared)) {
    const n = Number(declared);
    if (n > limit) throw tooLarge(limit);
    if (n === 0) throw badRequest("request body is empty; expected a JSON object");
    const value = parseJsonShaped(await textOf(request, wait), shapeLimitsFor(limit));
    if (value === null || typeof value !== "object" || Array.isArray(value)) throw badRequest("request body must be a JSON object");
    return { value: value as Record<string, unknown>, bytes: n };
  }
  const bytes = await (wait ? wait(request, () => readDecodedBody(request, limit)) : readDecodedBody(request, limit));
  if (bytes.byteLength === 0) throw badRequest("request body is empty; expected a JSON object");
  const value = parseJsonShaped(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"), shapeLimitsFor(limit));
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw badRequest("request body must be a JSON object");
  return { value: value as Record<string, unknown>, bytes: bytes.byteLength };
}

/**
 * The body's bytes, gunzipped when Content-Encoding says so, refused once they pass `limit`
 * (decoded), whatever Content-Length says.
 */
export async function readDecodedBody(request: Request, limit: number): Promise<Uint8Array> {
  const encoding = request.headers.get("content-encoding")?.trim().toLowerCase();
  // A compressed body may legitimately be far smaller than its decoded form, but never larger
  // than the limit: gzip of incompressible data grows by a few bytes only.
  let bytes: Uint8Array = await readLimited(request, limit + 1024, limit);
  if (encoding === "gzip" || encoding === "x-gzip") {
    try {
      bytes = gunzipSync(bytes, { maxOutputLength: limit + 1 });
    } catch (e) {
      if ((e as any)?.code === "ERR_BUFFER_TOO_LARGE" || e instanceof RangeError) throw tooLarge(limit);
      throw badRequest("request body is not a valid gzip stream");
    }
  } else if (encoding && encoding !== "identity") {
    throw badRequest(`Content-Encoding '${encoding}' is not supported (use gzip or none)`);
  }
  if (bytes.byteLength > limit) throw tooLarge(limit);
  return bytes;
}

/** Headers seen recently → their write key: every call of a client sends the same header. */
const decodedHeaders = new Map<string, string>();
const DECODED_HEADERS_MAX = 4096;

/** Parses `Authorization: Basic base64(writeKey:)`; throws 400 for a missing or malformed header. */
export function writeKeyFromAuthorization(header: string | null): string {
  if (!header) throw badRequest("Authorization header is missing; send Basic auth with the source write key as user name");
  const known = decodedHeaders.get(header);
  if (known !== undefined) return known;
  const writeKey = decodeBasic(header);
  if (decodedHeaders.size >= DECODED_HEADERS_MAX) decodedHeaders.clear();
  decodedHeaders.set(header, writeKey);
  return writeKey;
}

function decodeBasic(header: string): string {
  const m = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (!m) throw badRequest("Authorization header is malformed; expected 'Basic <base64 of writeKey:>'");
  let decoded: string;
  try {
    decoded = Buffer.from(m[1], "base64").toString("utf8");
  } catch {
    throw badRequest("Authorization header is malformed; expected 'Basic <base64 of writeKey:>'");
  }
  const colon = decoded.indexOf(":");
  const writeKey = colon === -1 ? decoded : decoded.slice(0, colon);
  if (!writeKey) throw badRequest("Authorization header is malformed; the write key (user name) is empty");
  return writeKey;
}
