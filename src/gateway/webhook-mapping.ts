/** Running a webhook source's mapping for the gateway: its context, and what it may throw. */
import type { SourceRuntime } from "../control-plane/config-store";
import { rebaseUrl } from "../destinations/base-url";
import { AppError } from "../lib/errors";
import { readUpTo } from "../lib/read-up-to";
import { memoryState, workspaceState } from "../sources/state-store";
import { type MapResult, type SourceHttp, SourceHttpError, type SourceMapping, type WebhookRequest } from "../sources/types";
import type { IntakeDeps } from "./intake";
import { ISO_DATE_TIME } from "./schemas";

/** The most of an answer a mapping's request reads: a lead is a few KB. */
const SOURCE_ANSWER_MAX_BYTES = 1024 * 1024;

/** Statuses whose answer has no body (the Response constructor refuses one). */
const NULL_BODY = new Set([101, 204, 205, 304]);

/**
 * The HTTP client a mapping of type `type` is handed (types.ts SourceHttp): as destinations' own
 * requests go, through the outbound address policy to the address it checked (the Host header
 * and TLS name keep the original name), the type's base URL override (`--destination-base-url
 * TYPE=URL`, the type's name in capitals), the time-out, no redirects, the answer read up to 1 MB.
 */
export function sourceHttp(settings: NonNullable<IntakeDeps["sourceHttp"]>, type: string): SourceHttp {
  const baseUrl = settings.baseUrls[type.toUpperCase()];
  return async (url, init = {}) => {
    const rebased = rebaseUrl(url, baseUrl);
    // Refused here with a message of its own: the policy's would quote the URL, query and all.
    if (!URL.canParse(rebased)) throw new SourceHttpError("the request's URL is not a valid URL", false);
    const host = new URL(rebased).host;
    const target = await settings.outbound.target(rebased);
    if (!target.ok) throw new SourceHttpError(target.error, target.retry);
    const headers: Record<string, string> = { ...init.headers };
    const has = (name: string) => Object.keys(headers).some((h) => h.toLowerCase() === name);
    if (!has("user-agent")) headers["user-agent"] = "Sluice";
    if (target.host) {
      for (const h of Object.keys(headers)) if (h.toLowerCase() === "host") delete headers[h];
      headers.host = target.host;
    }
    const timeout = AbortSignal.timeout(settings.timeoutMs);
    let res: Response;
    let bytes: Uint8Array;
    try {
      res = await fetch(target.url, {
        method: init.method ?? "GET",
        headers,
        body: init.body,
        signal: init.signal ? AbortSignal.any([timeout, init.signal]) : timeout,
        redirect: "manual",
        ...(target.serverName ? { tls: { serverName: target.serverName } } : {}),
      });
      const read = await readUpTo(res.body, SOURCE_ANSWER_MAX_BYTES);
      if (read.over) throw new SourceHttpError(`${host} answered more than ${SOURCE_ANSWER_MAX_BYTES / 1024} KB`, false);
      bytes = read.bytes;
    } catch (err) {
      if (err instanceof SourceHttpError) throw err;
      if (init.signal?.aborted) throw new SourceHttpError("the request was cancelled", true);
      // One message for refused, reset and TLS failures alike, as for destinations.
      throw new SourceHttpError(timeout.aborted ? `timed out after ${settings.timeoutMs} ms` : `could not connect to ${host}`, true);
    }
    // The body is read and decoded already: its length and encoding headers no longer describe it.
    const answerHeaders = new Headers(res.headers);
    answerHeaders.delete("content-encoding");
    answerHeaders.delete("content-length");
    const body = NULL_BODY.has(res.status) || bytes.byteLength === 0 ? null : bytes;
    return new Response(body, { status: res.status, statusText: res.statusText, headers: answerHeaders });
  };
}

/**
 * The mapping's events, or its answer. Its own refusals (AppError) pass as they are; anything
 * else it throws is a body it could not read, answered 400 and logged, never a 500: a service's
 * payload must not be able to make Sluice fail.
 */
export async function mapWebhook(deps: IntakeDeps, source: SourceRuntime, mapping: SourceMapping, request: WebhookRequest): Promise<MapResult> {
  // Logged where it happens, with its cause: the caller only sees a 503 (and Shopify's mapping
  // carries on without state where RudderStack's carries on without Redis).
  const onError = (err: unknown) => deps.log.warn("webhook source state failed", { err, source: source.id, type: mapping.name });
  const state = deps.sourceState ? workspaceState(deps.sourceState, source.workspaceId, Date.now, onError) : memoryState();
  try {
    const result = await mapping.map(request, {
      source: { id: source.id, name: source.name, workspaceId: source.workspaceId, writeKey: "", config: source.config ?? {} },
      state,
      uuid: () => crypto.randomUUID(),
      now: Date.now,
      ...(deps.sourceHttp ? { http: sourceHttp(deps.sourceHttp, mapping.name) } : {}),
      warn: (message, fields) => deps.log.warn(message, { ...fields, source: source.id, type: mapping.name }),
    });
    return { events: Array.isArray(result?.events) ? result.events : [], ...(result?.answer ? { answer: result.answer } : {}) };
  } catch (err) {
    if (err instanceof AppError) throw err;
    deps.log.warn("webhook mapping failed", { err, source: source.id, type: mapping.name });
    throw new AppError("BAD_REQUEST", `the ${mapping.displayName} mapping could not read this request`);
  }
}

const TIME_FIELDS = ["timestamp", "originalTimestamp", "sentAt"] as const;

/**
 * Times as rudder-server's processor reads a mapping's times (dateparse.ParseAny, in UTC): one
 * in another layout (AppsFlyer's `2020-01-15 14:57:24.898`) is kept as that instant, written as
 * ISO 8601; one that is no date (Close CRM's mapping writes `2024-06-ThT03:53:33`, after a
 * moment.js format slip) is dropped, so the event is timed as if it had none, as rudder-server
 * reads an unparsable time as the time received. Either way the event goes through.
 */
export function normalizeMappedTimes(events: Record<string, unknown>[]): void {
  for (const e of events) {
    if (e === null || typeof e !== "object") continue;
    for (const f of TIME_FIELDS) {
      const v = e[f];
      if (v === undefined || (typeof v === "string" && ISO_DATE_TIME.test(v) && !Number.isNaN(Date.parse(v)))) continue;
      const ms = typeof v === "string" ? readTime(v) : NaN;
      if (Number.isNaN(ms)) delete e[f];
      else e[f] = new Date(ms).toISOString();
    }
  }
}

/** A time without a zone is UTC, as on a server running in UTC. */
function readTime(text: string): number {
  const zoned = /(?:Z|[+-]\d{2}:?\d{2})$/i.test(text.trim());
  const ms = Date.parse(zoned ? text : `${text.trim()}Z`);
  return Number.isNaN(ms) ? Date.parse(text) : ms;
}

const lenientCopies = new WeakMap<SourceRuntime, SourceRuntime>();

/** The source with lenient checks: mapped events are checked for identifiers and shape only. */
export function mappedSource(source: SourceRuntime): SourceRuntime {
  let copy = lenientCopies.get(source);
  if (!copy) lenientCopies.set(source, (copy = { ...source, settings: { ...source.settings, lenientValidation: true } }));
  return copy;
}
