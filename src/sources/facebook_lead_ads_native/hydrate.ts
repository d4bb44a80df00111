/**
 * Hydration: a lead's answers, fetched from Facebook's Graph API with the Page's access token,
 * added to its identify's `context.traits` (RudderStack's `/v2/sources/facebook_lead_ads_native/hydrate`,
 * read to learn the behaviour, never copied). Sluice does it in the webhook request, before the
 * events are stored, through the mapping's HTTP client (the outbound policy): one GET
 * `https://graph.facebook.com/v24.0/<lead id>?access_token=<token>` per lead, a few at a time.
 *
 * A failure that may pass (no connection, a time-out, 408, 429, 5xx, a Graph error Facebook marks
 * transient or one of its rate-limit codes) answers the webhook 503 with Retry-After and stores
 * nothing, so Facebook delivers the notification again. Any other (an expired token, a deleted
 * lead: a 4xx) stores the lead's event without its answers and logs a warning naming the lead.
 */
import { AppError } from "../../lib/errors";
import { setOwn } from "../../lib/safe-keys";
import { type MapContext, type SourceHttp, SourceHttpError } from "../types";
import { asText, isObject } from "./json";

export const GRAPH_API = "https://graph.facebook.com/v24.0";
/** Lookups on the wire at once for one webhook request. */
export const PARALLEL_LOOKUPS = 8;
/** Retry-After of the 503 when the Graph API named none. */
export const DEFAULT_RETRY_AFTER_SECONDS = 60;

/**
 * Graph error codes of calls that may pass later (developers.facebook.com/docs/graph-api/guides/error-handling):
 * 1 unknown error and 2 service unavailable (temporary), 4, 17, 32, 613 and 341 (rate and
 * application limits); 80000–80014 are the business use case rate limits.
 */
const TRANSIENT_CODES = new Set([1, 2, 4, 17, 32, 341, 613]);
const isTransientCode = (code: number) => TRANSIENT_CODES.has(code) || (code >= 80000 && code <= 80014);

/** The source config's Page access token, or undefined when there is none (no hydration). */
export function pageAccessTokenOf(config: Record<string, unknown>): string | undefined {
  const token = config.pageAccessToken;
  return typeof token === "string" && token.trim() !== "" ? token.trim() : undefined;
}

/** One lead's lookup: the lead the Graph API answered, or why there is none and whether that may pass. */
export type LeadLookup =
  | { ok: true; lead: unknown }
  | { ok: false; retry: boolean; error: string; status?: number; retryAfterSeconds?: number };

/** The event's lead id when it is one the Graph API can be asked for: digits (Facebook's ids are). */
export function leadIdOf(event: Record<string, unknown>): string | undefined {
  const id = event.anonymousId;
  if (typeof id === "string" && /^\d{1,32}$/.test(id)) return id;
  if (typeof id === "number" && Number.isSafeInteger(id) && id >= 0) return String(id);
  return undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Retry-After in seconds or as an HTTP date, kept between a second and an hour. */
function retryAfterOf(value: string | null): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  const seconds = /^\d+$/.test(v) ? Number(v) : (Date.parse(v) - Date.now()) / 1000;
  return Number.isFinite(seconds) ? Math.min(3600, Math.max(1, Math.ceil(seconds))) : undefined;
}

/** `text` without the token, wherever an answer or an error might quote it. */
const redact = (text: string, token: string) => (token ? text.split(token).join("[pageAccessToken]") : text);

/** Asks the Graph API for one lead. Never throws. */
export async function lookUpLead(http: SourceHttp, leadId: string, token: string): Promise<LeadLookup> {
  const url = `${GRAPH_API}/${encodeURIComponent(leadId)}?access_token=${encodeURIComponent(token)}`;
  let res: Response;
  let text: string;
  try {
    res = await http(url);
    text = await res.text();
  } catch (err) {
    const retry = err instanceof SourceHttpError ? err.retry : true;
    return { ok: false, retry, error: redact(err instanceof Error ? err.message : String(err), token) };
  }
  const body = parseJson(text);
  if (res.status >= 200 && res.status < 300) return { ok: true, lead: body };
  const error = isObject(body) && isObject(body.error) ? body.error : undefined;
  const code = typeof error?.code === "number" ? error.code : undefined;
  const retry = res.status === 408 || res.status === 429 || res.status >= 500 || error?.is_transient === true || (code !== undefined && isTransientCode(code));
  const message = typeof error?.message === "string" ? `: ${error.message.slice(0, 300)}` : "";
  const codes = code !== undefined ? ` (code ${code}${typeof error?.error_subcode === "number" ? `, subcode ${error.error_subcode}` : ""})` : "";
  return {
    ok: false,
    retry,
    status: res.status,
    error: redact(`the Graph API answered ${res.status}${message}${codes}`, token),
    ...(retry ? { retryAfterSeconds: retryAfterOf(res.headers.get("retry-after")) } : {}),
  };
}

/**
 * Every event's lookup, in the events' order, at most PARALLEL_LOOKUPS at a time; a lead named
 * twice is asked for once. After a failure that may pass no new lookup starts (the request will
 * be answered 503 anyway): the leads not asked for have no entry.
 */
export async function lookUpLeads(events: Record<string, unknown>[], token: string, http: SourceHttp): Promise<Array<LeadLookup | undefined>> {
  const results: Array<LeadLookup | undefined> = new Array(events.length);
  const asked = new Map<string, Promise<LeadLookup>>();
  let next = 0;
  let stopped = false;
  const worker = async () => {
    while (!stopped && next < events.length) {
      const i = next++;
      const id = leadIdOf(events[i]!);
      if (id === undefined) {
        results[i] = { ok: false, retry: false, error: "its id is not a Graph API id" };
        continue;
      }
      let lookup = asked.get(id);
      if (!lookup) asked.set(id, (lookup = lookUpLead(http, id, token)));
      const result = await lookup;
      results[i] = result;
      if (!result.ok && result.retry) stopped = true;
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_LOOKUPS, events.length) }, worker));
  return results;
}

/**
 * The lead's answers into the event's `context.traits`: each `field_data` entry's first value under
 * its name, over what the traits already hold, as RudderStack writes them. An entry without a
 * list of values, or with an empty one, adds nothing.
 */
export function addAnswers(event: Record<string, unknown>, lead: unknown): void {
  const context = isObject(event.context) ? event.context : (event.context = {});
  const traits = isObject(context.traits) ? context.traits : (context.traits = {});
  const fields = isObject(lead) ? lead.field_data : undefined;
  if (!Array.isArray(fields)) return;
  for (const field of fields) {
    if (!isObject(field) || !Array.isArray(field.values) || field.values.length === 0) continue;
    setOwn(traits, asText(field.name), field.values[0]);
  }
}

/**
 * Hydrates the mapped events in place, or throws the 503 that makes Facebook deliver the
 * notification again (nothing of it is stored).
 */
export async function hydrate(events: Record<string, unknown>[], token: string, http: SourceHttp, warn: MapContext["warn"]): Promise<void> {
  const results = await lookUpLeads(events, token, http);
  const pending = results.findIndex((r) => r !== undefined && !r.ok && r.retry);
  if (pending >= 0) {
    const failed = results[pending] as Extract<LeadLookup, { ok: false }>;
    const lead = leadIdOf(events[pending]!)!;
    const retryAfter = failed.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS;
    warn?.("facebook lead not hydrated yet: answered 503 so that Facebook delivers it again", { lead, error: failed.error, retryAfterSeconds: retryAfter });
    throw new AppError("UNAVAILABLE", `could not fetch lead ${lead} from the Graph API (${failed.error}); nothing was stored, send it again`, undefined, { retryAfterSeconds: retryAfter });
  }
  for (const [i, result] of results.entries()) {
    if (!result) continue;
    if (result.ok) addAnswers(events[i]!, result.lead);
    else warn?.("facebook lead stored without its answers", { lead: asText(events[i]!.anonymousId).slice(0, 64), error: result.error, ...(result.status !== undefined ? { status: result.status } : {}) });
  }
}
