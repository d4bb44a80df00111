/**
 * The dashboard talks only to Sluice's public JSON API, signed in by its session cookie (sent
 * by the browser, never readable by this code).
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Where a page without a session goes, remembering the page asked for. */
export function signInUrl(): string {
  return `/login?next=${encodeURIComponent(location.pathname + location.search)}`;
}

/**
 * Sends one call with the session cookie and reads its JSON answer, whatever the status: a caller
 * that finds results in some error answers (the Test API) reads them here. A lost session goes to
 * sign-in, except for the sign-in call itself, whose 401 means wrong credentials.
 */
export async function send(method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE", path: string, body?: unknown): Promise<{ res: Response; data: any }> {
  const res = await fetch(path, {
    method,
    credentials: "same-origin",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let data: any;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = undefined;
  }
  if (res.status === 401 && path !== "/v2/session") {
    location.assign(signInUrl());
    throw new ApiError(401, "signed out");
  }
  return { res, data };
}

/** The error for an answer that is not 2xx, in the server's words when it gave some. */
export function answerError(status: number, data: any): ApiError {
  return new ApiError(status, typeof data?.message === "string" ? data.message : `the server answered ${status}`);
}

export async function api<T>(method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE", path: string, body?: unknown): Promise<T> {
  const { res, data } = await send(method, path, body);
  if (!res.ok) throw answerError(res.status, data);
  return data as T;
}

/** What to show for a failure: anything may be thrown, not only an Error. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** A 404 from the API: the record asked for does not exist (any more). */
export const isNotFound = (e: unknown): boolean => e instanceof ApiError && e.status === 404;

/** One event model of a source's catalog: its type, and for a track its event name (the Events page and the plan drafted from it). */
export function catalogModelPath(sourceId: string, type: string, event: string): string {
  const q = new URLSearchParams({ sourceId });
  if (event) q.set("event", event);
  return `/v2/catalog/events/${encodeURIComponent(type)}?${q}`;
}
