/**
 * Sends one destination request over HTTP and classifies the answer. Outcomes are
 * values, not exceptions: delivered, retry (with an optional server-given delay) or abort.
 */
import { type AnyDestinationDefinition, type DestinationContext, type DestinationRequest, type HttpExchange, type ProtocolContext, isRetryableStatus } from "../destinations/types";
import { readUpTo } from "../lib/read-up-to";
import type { Outbound } from "./outbound";

export type Outcome =
  /** `body`: the whole answer, for the kind's checkResponse; only `response` (its first KB) is stored. */
  | { kind: "delivered"; status: number; response: string; body: string; ms: number }
  | { kind: "retry"; status?: number; response: string; error?: string; retryAfterMs?: number; ms: number }
  | { kind: "abort"; status?: number; response: string; error: string; ms: number };

export const RESPONSE_KEEP_BYTES = 1024;
/** What the Test API shows of an answer: enough to debug, not a way to read a large resource. */
export const TEST_RESPONSE_KEEP_BYTES = 4096;
/** The most of an answer that is read at all (a kind's checkResponse reads it); the rest is dropped unread. */
const RESPONSE_READ_BYTES = 1024 * 1024;

export function requestUrl(req: DestinationRequest): string {
  const params = Object.entries(req.params ?? {});
  if (!params.length) return req.endpoint;
  const u = new URL(req.endpoint);
  for (const [k, v] of params) u.searchParams.append(k, paramText(v));
  return u.toString();
}

/** A query value's text: params keep their JSON types in the request (0, true), the URL needs text. */
function paramText(v: unknown): string {
  if (v === null || v === undefined) return "";
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

/**
 * A form field as RudderStack's server writes it (Go's fmt.Sprint): a list is its items
 * between brackets, separated by spaces, so a list of one JSON string (Amplitude's
 * `identification` and `mapping`) arrives as a JSON array. Objects are sent as JSON.
 */
function formValue(v: unknown): string {
  if (typeof v === "string") return v;
  if (Array.isArray(v)) return `[${v.map((item) => (typeof item === "string" ? item : JSON.stringify(item))).join(" ")}]`;
  return JSON.stringify(v);
}

/** The body as the service expects it: JSON, a JSON array, a form, or XML text. */
export function requestBody(req: DestinationRequest): { body?: string; contentType?: string } {
  if (req.method === "GET" || req.method === "DELETE") {
    if (!Object.keys(req.body.JSON).length) return {};
  }
  if (Object.keys(req.body.JSON).length) return { body: JSON.stringify(req.body.JSON), contentType: "application/json" };
  if (typeof req.body.JSON_ARRAY?.batch === "string") return { body: req.body.JSON_ARRAY.batch as string, contentType: "application/json" };
  if (Object.keys(req.body.FORM).length) {
    const form = new URLSearchParams();
    for (const [k, v] of Object.entries(req.body.FORM)) form.append(k, formValue(v));
    return { body: form.toString(), contentType: "application/x-www-form-urlencoded" };
  }
  if (typeof req.body.XML?.payload === "string") return { body: req.body.XML.payload as string, contentType: "application/xml" };
  return {};
}

/** Retry-After in seconds or as an HTTP date. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}


/** What one HTTP exchange came to: the answer (read up to 1 MB), or why there is none and whether that is worth retrying. */
export type Exchange = HttpExchange;

/**
 * One request through the outbound address policy, pinned to the checked address, with the
 * time-out: the HTTP client of deliveries, the Test API, deletions and the kinds' lookups.
 */
export async function exchange(req: DestinationRequest, opts: { outbound: Outbound; timeoutMs: number; messageId?: string }): Promise<Exchange> {
  const started = performance.now();
  let url: string;
  try {
    url = requestUrl(req);
  } catch {
    return { ok: false, retry: false, error: `destination URL '${String(req.endpoint).slice(0, 80)}' is not a valid URL`, ms: performance.now() - started };
  }
  const target = await opts.outbound.target(url);
  if (!target.ok) return { ok: false, retry: target.retry === true, error: target.error, ms: performance.now() - started };
  const { body, contentType } = requestBody(req);
  // Defaults only where the kind set no header of that name in any case: fetch would join two
  // spellings of one name into a list ("Sluice, RudderStack").
  const headers: Record<string, string> = { ...req.headers };
  const has = (name: string) => Object.keys(headers).some((h) => h.toLowerCase() === name);
  if (!has("user-agent")) headers["user-agent"] = "Sluice";
  if (contentType && !has("content-type")) headers["content-type"] = contentType;
  // Receivers deduplicate redeliveries (at least once) by this id.
  if (opts.messageId) headers["x-sluice-message-id"] = opts.messageId;
  if (target.host) {
    for (const h of Object.keys(headers)) if (h.toLowerCase() === "host") delete headers[h];
    headers.host = target.host;
  }
  let res: Response;
  try {
    res = await fetch(target.url, {
      method: req.method,
      headers,
      body,
      signal: AbortSignal.timeout(opts.timeoutMs),
      redirect: "manual",
      keepalive: true,
      ...(target.serverName ? { tls: { serverName: target.serverName } } : {}),
    });
  } catch (err) {
    const e = err as Error;
    // One message for refused, reset and TLS failures alike: telling them apart would make the
    // Test API a port scanner of whatever network the server sits in.
    const error = e.name === "TimeoutError" ? `timed out after ${opts.timeoutMs} ms` : `could not connect to ${target.host ?? new URL(target.url).host}`;
    return { ok: false, retry: true, error, ms: performance.now() - started };
  }
  const text = await readBounded(res, RESPONSE_READ_BYTES);
  return { ok: true, status: res.status, text, headers: res.headers, ms: performance.now() - started };
}

/** An answer as the service gave it: parsed JSON when it is JSON, its text otherwise. */
export function parseAnswer(text: string): unknown {
  if (!text) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}


export async function sendRequest(
  req: DestinationRequest,
  /**
   * `outbound`: the scheme and address check every request passes;
   * `keepBytes`: how much of the answer to keep (the Test API shows 4 KB); the first KB by default.
   */
  opts: { outbound: Outbound; timeoutMs: number; messageId?: string; keepBytes?: number },
): Promise<Outcome> {
  const x = await exchange(req, opts);
  if (!x.ok) return { kind: x.retry ? "retry" : "abort", response: "", error: x.error, ms: x.ms };
  const { status, text, ms } = x;
  const keep = opts.keepBytes ?? RESPONSE_KEEP_BYTES;
  const response = text.length > keep ? text.slice(0, keep) : text;
  if (status >= 200 && status < 300) return { kind: "delivered", status, response, body: text, ms };
  if (isRetryableStatus(status)) return { kind: "retry", status, response, error: `destination answered ${status}`, retryAfterMs: parseRetryAfter(x.headers.get("retry-after")), ms };
  return { kind: "abort", status, response, error: `destination answered ${status}`, ms };
}

/**
 * One request on the wire: over HTTP, or through the kind's own protocol client (`send`, REDIS)
 * with the same time-out and outbound address policy. Its answer is an outcome like any other:
 * a protocol write that succeeded is "delivered" with status 200, as rudder-server records it.
 */
export async function deliverRequest(
  def: AnyDestinationDefinition | undefined,
  ctx: DestinationContext,
  req: DestinationRequest,
  opts: { outbound: Outbound; timeoutMs: number; messageId?: string; keepBytes?: number },
): Promise<Outcome> {
  if (!def?.send) return sendRequest(req, opts);
  const started = performance.now();
  const protocol: ProtocolContext = {
    config: ctx.config,
    destination: ctx.destination,
    timeoutMs: opts.timeoutMs,
    reach: (host) => reachHost(opts.outbound, host),
    http: (request) => exchange(request, opts),
  };
  let answer;
  try {
    answer = await def.send(req, protocol);
  } catch (err) {
    // A client that throws is a failure of ours or of the connection, never the event's: retried.
    answer = { outcome: "retry" as const, error: `${def.name} client failed: ${err instanceof Error ? err.message : String(err)}` };
  }
  const ms = performance.now() - started;
  const keep = opts.keepBytes ?? RESPONSE_KEEP_BYTES;
  const response = (answer.response ?? "").slice(0, keep);
  if (answer.outcome === "ok") return { kind: "delivered", status: 200, response, body: answer.response, ms };
  return { kind: answer.outcome, response, error: answer.error, ms };
}

/** A protocol kind's host checked as an HTTP request's would be: the pinned address to connect to. */
async function reachHost(outbound: Outbound, host: string): Promise<{ ok: true; address: string } | { ok: false; error: string; retry: boolean }> {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  const name = bare.includes(":") ? `[${bare}]` : bare;
  const target = await outbound.target(`http://${name}/`);
  if (!target.ok) return target;
  const pinned = new URL(target.url).hostname;
  return { ok: true, address: pinned.startsWith("[") ? pinned.slice(1, -1) : pinned };
}

/** The answer's text, at most `max` bytes of it: a destination cannot make Sluice hold a huge answer. */
async function readBounded(res: Response, max: number): Promise<string> {
  const declared = res.headers.get("content-length");
  try {
    if (declared !== null && /^\d+$/.test(declared) && Number(declared) <= max) return await res.text();
    const { bytes } = await readUpTo(res.body, max);
    return new TextDecoder().decode(bytes.subarray(0, max));
  } catch {
    return "";
  }
}
