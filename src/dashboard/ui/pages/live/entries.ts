/** What the live page keeps of each streamed message: a few summary fields and the raw JSON. */
import { eventCount, requestLine } from "../../webhook-request";

export type StreamKind = "source" | "destination";

/** How many of the newest messages the page keeps. */
export const LIMIT = 1000;

/** The values the type (source) or state (destination) filter offers. */
export const FILTER_VALUES: Record<StreamKind, string[]> = {
  source: ["identify", "track", "page", "screen", "group", "alias", "webhook"],
  destination: ["succeeded", "retrying", "aborted", "filtered"],
};

export interface LiveEntry {
  /** Arrival order on this page; the rows' key. */
  seq: number;
  /** The event's type, or the attempt's state. */
  kind: string;
  /** The event name (page/screen name, group id, …), or the attempt's status or error. */
  title: string;
  user: string;
  /** True when `user` is an anonymousId. */
  anonymous: boolean;
  /** ISO time: when the event was received, or when the attempt finished. */
  at: string;
  /** The message as sent by the server; shown (pretty) when opened. */
  raw: string;
  /** Lower-cased raw text the search matches against (made once, not per render). */
  search: string;
  /** A webhook request the source refused (its kind is `webhook`). */
  failed?: boolean;
  /** A webhook request: how many events its mapping made, and those of them this page could pair with it (see `pairWebhookEvents`). */
  webhook?: { mapped: number; events: LiveEntry[]; ids?: string[] };
  /** An event paired with the webhook request it came from (that request's seq). */
  fromRequest?: number;
  /** The tracking plan's check of an event shown before at intake: its violations, and whether it was dropped. */
  plan?: { violations: number; dropped: boolean };
}

const str = (v: unknown): string => (typeof v === "string" ? v : typeof v === "number" ? String(v) : "");

/** One SSE message's data → an entry; undefined for data that is not a JSON object. */
export function parseEntry(kind: StreamKind, raw: string, seq: number): LiveEntry | undefined {
  let data: any;
  try {
    data = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (!data || typeof data !== "object" || Array.isArray(data)) return undefined;
  if (kind === "source" && data.webhookRequest && typeof data.webhookRequest === "object") return webhookEntry(data, raw, seq);
  if (kind === "source" && (data.trackingPlanChecked || data.trackingPlanDropped) && data.event && typeof data.event === "object") return planEntry(data, raw, seq);
  if (kind === "source") {
    const type = str(data.type);
    const userId = str(data.userId);
    return {
      seq,
      kind: type,
      title: eventTitle(type, data),
      user: userId || str(data.anonymousId),
      anonymous: !userId,
      at: str(data.receivedAt) || str(data.timestamp),
      raw,
      search: raw.toLowerCase(),
    };
  }
  const status = data.status == null ? "" : str(data.status);
  const error = str(data.error);
  return {
    seq,
    kind: str(data.state),
    title: [status, error].filter(Boolean).join(" · "),
    user: str(data.userKey),
    anonymous: false,
    at: str(data.at),
    raw,
    search: raw.toLowerCase(),
  };
}

/**
 * An event the tracking plan checked after intake showed it: `{trackingPlanChecked, violations,
 * event}` for a kept event with violations, `{trackingPlanDropped, violationType, error,
 * violations, event}` for a dropped one (shown as failed).
 */
function planEntry(data: any, raw: string, seq: number): LiveEntry {
  const event = data.event;
  const type = str(event.type);
  const userId = str(event.userId);
  const violations: unknown[] = Array.isArray(data.violations) ? data.violations : [];
  const dropped = Boolean(data.trackingPlanDropped);
  const types = [...new Set(violations.map((v: any) => str(v?.type)).filter(Boolean))].join(", ");
  const outcome = dropped ? `dropped by the plan (${str(data.violationType) || types})` : `${violations.length} violation${violations.length === 1 ? "" : "s"}: ${types}`;
  const name = eventTitle(type, event);
  return {
    seq,
    kind: type,
    title: name ? `${name} · ${outcome}` : outcome,
    user: userId || str(event.anonymousId),
    anonymous: !userId,
    at: str(event.receivedAt) || str(event.timestamp),
    raw,
    search: raw.toLowerCase(),
    failed: dropped,
    plan: { violations: violations.length, dropped },
  };
}

/**
 * A source's webhook request, published after the events it became: `{webhookRequest,
 * mappedEvents, answer?}`, or `{webhookRequest, error, status}` when it was refused.
 */
function webhookEntry(data: any, raw: string, seq: number): LiveEntry {
  // The path is always /v1/webhook: the row leads with the outcome, then the method and query.
  const line = requestLine(data.webhookRequest).replace(" /v1/webhook", " ").trimEnd();
  const failed = data.error !== undefined;
  const mapped = typeof data.mappedEvents === "number" ? data.mappedEvents : 0;
  const answer = typeof data.answer === "string" ? data.answer : str(data.answer?.body);
  const outcome = failed ? `${str(data.status) || "refused"} ${str(data.error)}`.trim() : mapped > 0 || !answer ? eventCount(mapped) : `answered ${answer}`;
  return {
    seq,
    kind: "webhook",
    title: `${outcome} · ${line}`,
    user: "",
    anonymous: false,
    // The item carries no time of its own: it is published as the request is answered.
    at: new Date().toISOString(),
    raw,
    search: raw.toLowerCase(),
    failed,
    webhook: { mapped, events: [], ...(Array.isArray(data.messageIds) ? { ids: data.messageIds.filter((x: unknown): x is string => typeof x === "string") } : {}) },
  };
}

/**
 * Pairs a webhook request with the events it became: the server publishes them just before it,
 * so they are the newest events not yet paired, walking back no further than the previous
 * request. With requests arriving at once another request's events can come between; the item
 * names none of its events, so this is the page's best reading, said so where it is shown.
 */
export function pairWebhookEvents(request: LiveEntry, olderLists: LiveEntry[][]): void {
  const w = request.webhook;
  if (!w || w.mapped === 0) return;
  // The server names the events' messageIds: paired exactly, whatever came between.
  if (w.ids) {
    const want = new Set(w.ids);
    const byId: LiveEntry[] = [];
    for (const list of olderLists) for (const e of list) if (!e.webhook && !e.plan && e.fromRequest === undefined && want.has(messageIdOf(e))) byId.push(e);
    byId.sort((a, b) => a.seq - b.seq);
    for (const f of byId) f.fromRequest = request.seq;
    w.events = byId;
    return;
  }
  const found: LiveEntry[] = [];
  walk: for (const list of olderLists) {
    for (let i = list.length - 1; i >= 0; i--) {
      if (found.length === w.mapped) break walk;
      const e = list[i]!;
      // Events before an earlier request, or already paired, are not this one's.
      if (e.webhook || e.fromRequest !== undefined) break walk;
      // A plan's check of an event shown before: not one of the request's events.
      if (e.plan) continue;
      found.push(e);
    }
  }
  found.reverse();
  for (const f of found) f.fromRequest = request.seq;
  w.events = found;
}

function messageIdOf(e: LiveEntry): string {
  try {
    const id = JSON.parse(e.raw)?.messageId;
    return typeof id === "string" ? id : "";
  } catch {
    return "";
  }
}

function eventTitle(type: string, data: any): string {
  switch (type) {
    case "track":
      return str(data.event);
    case "page":
    case "screen":
      return str(data.name) || str(data.properties?.name);
    case "group":
      return str(data.groupId);
    case "alias":
      return str(data.previousId) && `from ${str(data.previousId)}`;
    case "identify":
      return str(data.traits?.email) || str(data.context?.traits?.email);
    default:
      return str(data.event);
  }
}

/** Time of day with milliseconds: at 1,000 events a second, seconds alone say little. */
export function clockTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.toLocaleTimeString(undefined, { hour12: false })}.${String(d.getMilliseconds()).padStart(3, "0")}`;
}
