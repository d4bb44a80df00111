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

export async function api<T>(method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE", path: string, body?: unknown): Promise<T> {
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
  if (!res.ok) throw new ApiError(res.status, typeof data?.message === "string" ? data.message : `the server answered ${res.status}`);
  return data as T;
}

/** A path inside the dashboard to return to after signing in; anything else goes home. */
export function safeNext(raw: string | null): string {
  return raw && raw.startsWith("/") && !raw.startsWith("//") && !raw.startsWith("/\\") ? raw : "/";
}
