/**
 * A webhook request as text, close to how it arrived: the request line, the headers, a blank
 * line and the body. A source's sample and the live page's webhook items show it alike. Every
 * part comes from the service that posted it: the pages render it as text only.
 */

const str = (v: unknown): string => (typeof v === "string" ? v : typeof v === "number" ? String(v) : "");

/**
 * The body indented when it is JSON that reads back the same: a number past 2^53 (Shopify's
 * ids can grow there) would otherwise show a value that was never sent.
 */
export function prettyBody(body: string): string {
  try {
    const value = JSON.parse(body);
    if (JSON.stringify(value) === body) return JSON.stringify(value, null, 2);
  } catch {
    // Not JSON (a form the gateway could not read, plain text): as it came.
  }
  return body;
}

/** `{method, url, headers, body}` as the API gives them (headers as Go's multi-valued map). */
export function requestText(request: unknown): string {
  const r = request && typeof request === "object" ? (request as Record<string, unknown>) : {};
  const lines = [`${str(r.method) || "POST"} ${str(r.url)}`];
  const headers = r.headers && typeof r.headers === "object" ? (r.headers as Record<string, unknown>) : {};
  for (const [name, values] of Object.entries(headers)) {
    for (const v of Array.isArray(values) ? values : [values]) lines.push(`${name}: ${str(v)}`);
  }
  const body = str(r.body);
  return body ? `${lines.join("\n")}\n\n${prettyBody(body)}` : lines.join("\n");
}

/** The request line alone, for a one-line summary. */
export function requestLine(request: unknown): string {
  const r = request && typeof request === "object" ? (request as Record<string, unknown>) : {};
  return `${str(r.method) || "POST"} ${str(r.url)}`;
}

/** "1 event", "3 events". */
export const eventCount = (n: number) => `${n.toLocaleString()} event${n === 1 ? "" : "s"}`;
