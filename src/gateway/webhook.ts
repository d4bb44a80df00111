/**
 * `/v1/webhook`: a third-party service posts whatever it posts, and the source's type decides
 * what it becomes (src/sources/<type>/), as rudder-server's gateway/webhook hands the request to
 * rudder-transformer's source mapping and then takes its events in as a batch.
 *
 * As rudder-server's gateway does (gateway/webhook/webhook.go, auth/auth.go):
 * - the write key is `?writeKey=`, else the Basic user; none: 401 `failed to read writekey from
 *   query params`; unknown, or a source that is not a webhook source: 401 `invalid write key`;
 *   disabled: 404 `source is disabled`;
 * - `application/x-www-form-urlencoded` becomes `{name: [values…]}` and `multipart/form-data`
 *   `{Value: {name: [values…]}, File: {name: [{Filename, Header, Size}]}}` (Go's url.Values and
 *   multipart.Form as JSON), and the mapping is told the body is JSON; an empty body is `{}`;
 * - a GET is mapped only for Adjust; for any other type it answers 200 with nothing;
 * - success answers `ok`, or what the mapping answers the service with (Slack's challenge);
 * - a body over the limit: 413 `request size exceeds max limit`; a mapping's error: its status and text.
 */
import { AppError, badRequest } from "../lib/errors";
import { parseJsonShaped, shapeLimitsFor } from "../lib/json-shape";
import { setOwn } from "../lib/safe-keys";
import type { SourceRuntime } from "../control-plane/config-store";
import { canonicalHeaderName } from "../sources/common";
import { findSourceMapping } from "../sources/registry";
import type { SourceMapping, WebhookRequest } from "../sources/types";
import { readDecodedBody, writeKeyFromAuthorization } from "./read-body";
import type { IntakeDeps } from "./intake";

/** rudder-server's texts for the webhook's refusals (gateway/response). */
export const WEBHOOK_TEXT = {
  ok: "ok",
  noWriteKey: "failed to read writekey from query params",
  invalidWriteKey: "invalid write key",
  disabled: "source is disabled",
  tooLarge: "request size exceeds max limit",
} as const;

/** The write key from `?writeKey=` when given, else from Basic auth, as rudder-server's webhook auth takes it. */
export function webhookWriteKey(request: Request, url: URL): string {
  const fromQuery = url.searchParams.get("writeKey");
  if (fromQuery) return fromQuery;
  let key = "";
  try {
    if (request.headers.get("authorization")) key = writeKeyFromAuthorization(request.headers.get("authorization"));
  } catch {
    // A header that is not Basic auth names no key, as Go's BasicAuth() reads it.
  }
  if (!key) throw new AppError("UNAUTHORIZED", WEBHOOK_TEXT.noWriteKey);
  return key;
}

/** The webhook source a write key names, with its mapping; refusals as rudder-server words them. */
export function authenticateWebhookSource(deps: IntakeDeps, writeKey: string): { source: SourceRuntime; mapping: SourceMapping } {
  const source = deps.config.sourceByWriteKey(writeKey);
  if (!source || source.category?.toLowerCase() !== "webhook") throw new AppError("UNAUTHORIZED", WEBHOOK_TEXT.invalidWriteKey);
  if (!source.enabled) throw new AppError("NOT_FOUND", WEBHOOK_TEXT.disabled);
  const mapping = findSourceMapping(source.definitionName);
  // A RudderStack webhook kind Sluice does not map (the workspace file keeps it): said plainly.
  if (!mapping) throw badRequest(`source type '${source.definitionName ?? ""}' has no webhook mapping in Sluice`);
  return { source, mapping };
}

/** Values grouped by name, in the order they came: Go's url.Values as JSON. */
function grouped(entries: Iterable<[string, string]>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of entries) {
    const list = Object.hasOwn(out, k) ? out[k]! : undefined;
    if (list) list.push(v);
    else setOwn(out, k, [v]);
  }
  return out;
}

async function multipartBody(bytes: Uint8Array, contentType: string): Promise<Record<string, unknown>> {
  let form: Awaited<ReturnType<Response["formData"]>>;
  try {
    form = await new Response(bytes, { headers: { "content-type": contentType } }).formData();
  } catch {
    throw badRequest("error during parsing multiform");
  }
  const values: Array<[string, string]> = [];
  const files: Record<string, unknown[]> = {};
  for (const [name, v] of form.entries() as Iterable<[string, string | Blob]>) {
    if (typeof v === "string") values.push([name, v]);
    else {
      const entry = { Filename: (v as Blob & { name?: string }).name ?? "", Header: { "Content-Type": [v.type || "application/octet-stream"] }, Size: v.size };
      if (Object.hasOwn(files, name)) files[name]!.push(entry);
      else setOwn(files, name, [entry]);
    }
  }
  return { Value: grouped(values), File: files };
}

/** Marks a body the shape check passed but JSON.parse did not: the mapping gives its own error for it. */
const NOT_JSON = "\u0000not json";

/** The request as a mapping gets it, with its body parsed once here, under the robustness limits. */
export type ReadWebhookRequest = WebhookRequest;

export async function readWebhookRequest(request: Request, url: URL, limit: number): Promise<ReadWebhookRequest> {
  const headers: Record<string, string[]> = {};
  // Go keeps Host out of a request's headers (it is http.Request.Host).
  for (const [k, v] of request.headers) if (k !== "host") setOwn(headers, canonicalHeaderName(k), [v]);
  const out: ReadWebhookRequest = {
    method: request.method,
    url: url.pathname + url.search,
    proto: "HTTP/1.1",
    headers,
    query_parameters: grouped(url.searchParams),
    body: "{}",
  };
  if (request.method === "GET" || request.method === "HEAD") return out;
  let bytes: Uint8Array;
  try {
    bytes = await readDecodedBody(request, limit);
  } catch (err) {
    if (err instanceof AppError && err.code === "PAYLOAD_TOO_LARGE") throw new AppError("PAYLOAD_TOO_LARGE", WEBHOOK_TEXT.tooLarge);
    throw err;
  }
  const type = (request.headers.get("content-type") ?? "").toLowerCase();
  let formJson: Record<string, unknown> | undefined;
  if (type.includes("application/x-www-form-urlencoded")) formJson = grouped(new URLSearchParams(Buffer.from(bytes).toString("utf8")));
  else if (type.includes("multipart/form-data")) formJson = await multipartBody(bytes, request.headers.get("content-type")!);
  if (formJson) {
    // rudder-server hands the mapping the form as a JSON body, and says so.
    headers["Content-Type"] = ["application/json"];
    out.body = JSON.stringify(formJson);
    out.json = formJson;
    return out;
  }
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
  if (text !== "") out.body = text;
  try {
    out.json = parseJsonShaped(out.body, shapeLimitsFor(limit), NOT_JSON);
  } catch (err) {
    // Not JSON at all: the mapping answers it in its own words. Too deep or too big: refused here.
    if (!(err instanceof AppError && err.message === NOT_JSON)) throw err;
  }
  return out;
}

const HIDDEN_QUERY = new Set(["writeKey", "hub.verify_token"]);

/** The request as live events show it: no credentials, the body as text (cut at 64 KB). */
export function requestForLiveEvents(r: WebhookRequest): Record<string, unknown> {
  const headers: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(r.headers)) if (k !== "Authorization" && k !== "Cookie") setOwn(headers, k, v);
  const query: Record<string, string[]> = {};
  // The write key and Facebook's verify token are credentials: kept out of what watchers see.
  for (const [k, v] of Object.entries(r.query_parameters)) if (!HIDDEN_QUERY.has(k)) setOwn(query, k, v);
  const shown = new URLSearchParams();
  for (const [k, vs] of Object.entries(query)) for (const v of vs) shown.append(k, v);
  const path = r.url.split("?")[0]!;
  const url = shown.size ? `${path}?${shown}` : path;
  return { method: r.method, url, headers, query_parameters: query, body: r.body.length > 65_536 ? r.body.slice(0, 65_536) + "…" : r.body };
}


