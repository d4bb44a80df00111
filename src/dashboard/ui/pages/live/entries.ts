/** What the live page keeps of each streamed message: a few summary fields and the raw JSON. */
export type StreamKind = "source" | "destination";

/** How many of the newest messages the page keeps. */
export const LIMIT = 1000;

/** The values the type (source) or state (destination) filter offers. */
export const FILTER_VALUES: Record<StreamKind, string[]> = {
  source: ["identify", "track", "page", "screen", "group", "alias"],
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
