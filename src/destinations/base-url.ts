/**
 * Base URL override for offline tests: `--destination-base-url KIND=URL` points a kind at a
 * local sink. Only the scheme and host change; the path and query the service expects stay,
 * so a sink sees exactly the request the real service would.
 */

const ORIGIN = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;

/**
 * Replaces the scheme+host of `url` with `baseUrl` (which may carry a path prefix).
 * The rest of `url` is kept verbatim rather than re-serialised through `URL`, which would
 * re-encode ids in the path differently from what the service receives.
 */
export function rebaseUrl(url: string, baseUrl?: string): string {
  if (!baseUrl) return url;
  const match = ORIGIN.exec(url);
  if (!match) return url;
  return baseUrl.replace(/\/+$/, "") + url.slice(match[0].length);
}

/** The URL a kind should call for `url`, honouring the context's override. */
export function endpointFor(ctx: { baseUrl?: string }, url: string): string {
  return rebaseUrl(url, ctx.baseUrl);
}
