/**
 * Sends one destination request over HTTP and classifies the answer. Outcomes are
 * values, not exceptions: delivered, retry (with an optional server-given delay) or abort.
 */
import type { DestinationRequest } from "../destinations/types";

export type Outcome =
  /** `body`: the whole answer, for the kind's checkResponse; only `response` (its first KB) is stored. */
  | { kind: "delivered"; status: number; response: string; body: string; ms: number }
  | { kind: "retry"; status?: number; response: string; error?: string; retryAfterMs?: number; ms: number }
  | { kind: "abort"; status?: number; response: string; error: string; ms: number };

export const RESPONSE_KEEP_BYTES = 1024;

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

const RETRYABLE = (status: number) => status === 408 || status === 429 || status >= 500;

export async function sendRequest(
  req: DestinationRequest,
  /** `keepBytes`: how much of the answer to keep (the Test API shows it whole); the first KB by default. */
  opts: { timeoutMs: number; messageId?: string; keepBytes?: number },
): Promise<Outcome> {
  const started = performance.now();
  const { body, contentType } = requestBody(req);
  // Defaults only where the kind set no header of that name in any case: fetch would join two
  // spellings of one name into a list ("Sluice, RudderStack").
  const headers: Record<string, string> = { ...req.headers };
  const has = (name: string) => Object.keys(headers).some((h) => h.toLowerCase() === name);
  if (!has("user-agent")) headers["user-agent"] = "Sluice";
  if (contentType && !has("content-type")) headers["content-type"] = contentType;
  // Receivers deduplicate redeliveries (at least once) by this id.
  if (opts.messageId) headers["x-sluice-message-id"] = opts.messageId;
  let res: Response;
  try {
    res = await fetch(requestUrl(req), { method: req.method, headers, body, signal: AbortSignal.timeout(opts.timeoutMs), redirect: "manual", keepalive: true });
  } catch (err) {
    const e = err as Error;
    const error = e.name === "TimeoutError" ? `timed out after ${opts.timeoutMs} ms` : `connection error: ${e.message}`;
    return { kind: "retry", response: "", error, ms: performance.now() - started };
  }
  let text = "";
  try {
    text = await res.text();
  } catch {}
  const keep = opts.keepBytes ?? RESPONSE_KEEP_BYTES;
  const response = text.length > keep ? text.slice(0, keep) : text;
  const ms = performance.now() - started;
  if (res.status >= 200 && res.status < 300) return { kind: "delivered", status: res.status, response, body: text, ms };
  if (RETRYABLE(res.status)) return { kind: "retry", status: res.status, response, error: `destination answered ${res.status}`, retryAfterMs: parseRetryAfter(res.headers.get("retry-after")), ms };
  return { kind: "abort", status: res.status, response, error: `destination answered ${res.status}`, ms };
}
