/**
 * TIKTOK_ADS's batching, as RudderStack's router does it. Events 1.0 track calls go through
 * `/pixel/batch/` (`pixel_code`, `partner_name`, and each call's body as a `batch` item of type
 * track), 50 a call; Events 2.0 calls are merged per event source into one `/event/track/` call
 * of up to 1,000 `data` entries, an event's entries never split. Calls with a test event code
 * go alone, as TikTok's batch endpoints take none.
 *
 * A call joins the open group of its kind unless that group comes before its user's previous
 * call, so a user's calls keep their order; the pipeline hands batch() a user's queued events
 * together, as RudderStack's router does, so the groups are RudderStack's.
 */
import { requestKey } from "../shared";
import { type DestinationRequest, restRequest } from "../types";
import { PARTNER_NAME } from "./events";

/**
 * RudderStack's limits, under the names of its config module: the comparison with its published
 * cases lowers `maxBatchSizeV2` as those cases do (scripts/compare-rudderstack/kinds.ts).
 */
export const TIKTOK_BATCH_LIMITS: { MAX_BATCH_SIZE: number; maxBatchSizeV2: number } = { MAX_BATCH_SIZE: 50, maxBatchSizeV2: 1000 };

type Body = Record<string, any>;

interface Unit {
  request: DestinationRequest;
  /** Set for a call that can be merged: what must match, and the items it brings. */
  key?: string;
  version?: "v1" | "v2";
  items: Body[];
}

function unitOf(request: DestinationRequest): Unit {
  const body = request.body.JSON as Body;
  const single = { request, items: [] };
  if (body.test_event_code !== undefined && body.test_event_code !== null) return single;
  if (request.endpoint.endsWith("/pixel/track/")) {
    const { pixel_code, partner_name: _p, ...rest } = body;
    return { request, version: "v1", key: `v1 ${requestKey(request)} ${JSON.stringify(pixel_code)}`, items: [{ ...rest, type: "track" }] };
  }
  if (request.endpoint.endsWith("/event/track/") && Array.isArray(body.data)) {
    return { request, version: "v2", key: `v2 ${requestKey(request)} ${JSON.stringify([body.event_source_id, body.event_source])}`, items: body.data };
  }
  return single;
}

interface Group {
  units: Unit[];
  size: number;
}

function merged(group: Group): DestinationRequest {
  const first = group.units[0]!;
  let out: DestinationRequest;
  if (!first.key) out = first.request;
  else {
    const body = first.request.body.JSON as Body;
    const items = group.units.flatMap((u) => u.items);
    out =
      first.version === "v1"
        ? restRequest({
            endpoint: first.request.endpoint.replace(/\/pixel\/track\/$/, "/pixel/batch/"),
            headers: first.request.headers,
            json: { pixel_code: body.pixel_code, partner_name: PARTNER_NAME, batch: items },
          })
        : restRequest({
            endpoint: first.request.endpoint,
            headers: first.request.headers,
            json: { event_source_id: body.event_source_id, event_source: body.event_source, partner_name: PARTNER_NAME, data: items },
          });
  }
  const users = new Set(group.units.map((u) => u.request.userKey));
  const { userKey: _drop, ...rest } = out;
  return users.size === 1 && first.request.userKey !== undefined ? { ...rest, userKey: first.request.userKey } : rest;
}

export function batchTiktok(requests: DestinationRequest[]): DestinationRequest[] {
  const groups: Group[] = [];
  const open = new Map<string, number>();
  const lastOfUser = new Map<string, number>();
  for (const request of requests) {
    const unit = unitOf(request);
    const user = request.userKey;
    const after = user === undefined ? 0 : (lastOfUser.get(user) ?? 0);
    let at: number | undefined;
    if (unit.key) {
      const max = unit.version === "v1" ? TIKTOK_BATCH_LIMITS.MAX_BATCH_SIZE : TIKTOK_BATCH_LIMITS.maxBatchSizeV2;
      const candidate = open.get(unit.key);
      if (candidate !== undefined && candidate >= after && groups[candidate]!.size + unit.items.length <= max) at = candidate;
    }
    if (at === undefined) {
      at = groups.push({ units: [], size: 0 }) - 1;
      if (unit.key) open.set(unit.key, at);
    }
    groups[at]!.units.push(unit);
    groups[at]!.size += unit.items.length;
    if (user !== undefined) lastOfUser.set(user, at);
  }
  return groups.map(merged);
}
