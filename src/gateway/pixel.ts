/**
 * `/pixel/v1/track` and `/pixel/v1/page`: an `<img>` (an e-mail open, a page without
 * JavaScript) sends the call as query parameters, and the answer is always a transparent 1×1
 * GIF, whether the call was stored or refused, as rudder-server answers: an image has no way to
 * show an error. Refusals are logged (routes.ts).
 *
 * The query becomes the call as rudder-server's pixel handler builds it: `channel: "web"`,
 * `integrations: {All: true}`, `originalTimestamp` and `sentAt` now, then every parameter but
 * `writeKey` set at its path, dots nesting (`properties.plan=pro` → `{properties: {plan:
 * "pro"}}`, `context.page.url=…`); values stay strings, and a repeated parameter counts once
 * (its first value). An anonymousId wrapped in double quotes loses them. A page's empty `name`
 * becomes "Unknown Page"; a track's empty `event` is refused.
 */
import { badRequest } from "../lib/errors";
import { prototypeSegment, prototypeSegmentMessage, setOwn } from "../lib/safe-keys";

/** GIF89a, 1×1, one transparent pixel: the bytes rudder-server answers. */
export const PIXEL_GIF = Uint8Array.from([
  0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x21, 0xf9, 0x04, 0x01, 0x00,
  0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b,
]);

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** Sets `value` at the dotted `path`, replacing whatever is not an object on the way. */
function setPath(target: Record<string, unknown>, path: string, value: string): void {
  const segments = path.split(".");
  const refused = prototypeSegment(segments);
  if (refused !== undefined) throw badRequest(`query parameter '${path}': ${prototypeSegmentMessage(refused)}`);
  let at = target;
  for (let i = 0; i < segments.length - 1; i++) {
    const key = segments[i]!;
    const next = Object.hasOwn(at, key) ? at[key] : undefined;
    if (isObject(next)) at = next;
    else {
      const made: Record<string, unknown> = {};
      setOwn(at, key, made);
      at = made;
    }
  }
  setOwn(at, segments[segments.length - 1]!, value);
}

/** The call a pixel request's query makes (the write key left out), stamped with `nowIso`. */
export function pixelCall(type: "track" | "page", query: URLSearchParams, nowIso: string): Record<string, unknown> {
  const call: Record<string, unknown> = { channel: "web", integrations: { All: true }, originalTimestamp: nowIso, sentAt: nowIso };
  const seen = new Set<string>();
  for (const [key, raw] of query) {
    if (key === "writeKey" || key === "" || seen.has(key)) continue;
    seen.add(key);
    const value = key === "anonymousId" ? raw.replace(/^"(.*)"$/s, "$1") : raw;
    setPath(call, key, value);
  }
  call.type = type;
  if (type === "page" && query.has("name") && query.get("name") === "") call.name = "Unknown Page";
  if (type === "track" && query.has("event") && query.get("event") === "") throw badRequest("track: Mandatory field 'event' missing");
  return call;
}
