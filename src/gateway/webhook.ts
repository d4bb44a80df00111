/**
 * `/v1/webhook`: a third-party service posts whatever it posts, and the event is the one
 * RudderStack makes of it for a generic webhook source (rudder-transformer's `webhook` source):
 * a track `webhook_source_event` whose `properties` are the body, with a fresh anonymousId.
 * Query parameters other than `writeKey` are not part of the event (RudderStack puts the
 * request's details into `context` only for sources with `putRequestDetailsInContext`, which
 * Sluice's sources do not have).
 *
 * Bodies as rudder-server's gateway reads them: `application/x-www-form-urlencoded` becomes
 * `{name: [values…]}` and `multipart/form-data` becomes `{Value: {name: [values…]}, File:
 * {name: [{Filename, Header, Size}]}}` (Go's url.Values and multipart.Form as JSON); anything
 * else is JSON, and an empty body is `{}`.
 */
import { badRequest } from "../lib/errors";
import { parseJsonShaped, shapeLimitsFor } from "../lib/json-shape";
import { setOwn } from "../lib/safe-keys";
import { readDecodedBody, writeKeyFromAuthorization } from "./read-body";

export const WEBHOOK_EVENT = "webhook_source_event";

/** The write key from `?writeKey=` when given, else from Basic auth, as rudder-server's webhook auth takes it. */
export function webhookWriteKey(request: Request, url: URL): string {
  const fromQuery = url.searchParams.get("writeKey");
  if (fromQuery) return fromQuery;
  if (!request.headers.get("authorization")) throw badRequest("write key is missing; send it as the writeKey query parameter or as the user name of Basic auth");
  return writeKeyFromAuthorization(request.headers.get("authorization"));
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
    throw badRequest("request body is not valid multipart/form-data");
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

/** The request's body as the object that becomes the event's properties. */
export async function readWebhookBody(request: Request, limit: number): Promise<Record<string, unknown>> {
  const contentType = request.headers.get("content-type") ?? "";
  const type = contentType.toLowerCase();
  const bytes = await readDecodedBody(request, limit);
  if (type.includes("application/x-www-form-urlencoded")) {
    return grouped(new URLSearchParams(Buffer.from(bytes).toString("utf8")));
  }
  if (type.includes("multipart/form-data")) return multipartBody(bytes, contentType);
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
  if (text.trim() === "") return {};
  const value = parseJsonShaped(text, shapeLimitsFor(limit), "request body is not valid JSON (or send application/x-www-form-urlencoded or multipart/form-data)");
  // RudderStack would make `properties` a list; Sluice's calls require an object there.
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw badRequest("request body must be a JSON object (it becomes the event's properties)");
  return value as Record<string, unknown>;
}

/** The track call a webhook body becomes. */
export function webhookCall(body: Record<string, unknown>): Record<string, unknown> {
  return { type: "track", event: WEBHOOK_EVENT, properties: body, anonymousId: crypto.randomUUID() };
}
