/**
 * SNAPCHAT_CONVERSION's batching, as RudderStack's router does it: v2 calls become one JSON
 * array of up to 2,000 bodies (an event's bodies kept together) to `/v2/conversion`; v3 calls
 * to the same URL merge their `data` lists, up to 2,000 calls' worth a request. A call joins the
 * open group of its URL unless that group comes before its user's previous call, so each user's
 * calls keep their order.
 */
import { requestKey } from "../shared";
import { type DestinationRequest, restRequest } from "../types";

const MAX_EVENTS = 2000;

interface Group {
  requests: DestinationRequest[];
  v2: boolean;
}

const isV2 = (r: DestinationRequest) => /\/v2\/conversion$/.test(r.endpoint);
const isV3 = (r: DestinationRequest) => /\/v3\/[^/]*\/events$/.test(r.endpoint) && Array.isArray((r.body.JSON as any).data);

function merged(group: Group): DestinationRequest {
  const first = group.requests[0]!;
  const out = group.v2
    ? restRequest({ endpoint: first.endpoint, headers: first.headers, json: group.requests.map((r) => r.body.JSON) })
    : restRequest({ endpoint: first.endpoint, headers: first.headers, params: first.params, json: { data: group.requests.flatMap((r) => (r.body.JSON as any).data) } });
  const users = new Set(group.requests.map((r) => r.userKey));
  return users.size === 1 && first.userKey !== undefined ? { ...out, userKey: first.userKey } : out;
}

export function batchSnapchat(requests: DestinationRequest[]): DestinationRequest[] {
  const groups: Group[] = [];
  /** The group each request lands in, and how many events (v2: calls of one event count once) it holds. */
  const counts: number[] = [];
  const open = new Map<string, number>();
  const lastOfUser = new Map<string, number>();
  let previous: DestinationRequest | undefined;
  for (const request of requests) {
    const v2 = isV2(request);
    const key = v2 || isV3(request) ? `${v2 ? "v2" : "v3"} ${requestKey(request)}` : undefined;
    const user = request.userKey;
    const after = user === undefined ? 0 : (lastOfUser.get(user) ?? 0);
    // v2: the bodies of one event (several Snap events) follow each other and count as one event.
    const sameEvent = v2 && previous !== undefined && previous.userKey === user && isV2(previous) && open.get(key!) === lastOfUser.get(user ?? "");
    let at: number | undefined;
    if (key) {
      const candidate = open.get(key);
      if (candidate !== undefined && candidate >= after && (sameEvent || counts[candidate]! < MAX_EVENTS)) at = candidate;
    }
    if (at === undefined) {
      at = groups.push({ requests: [], v2 }) - 1;
      counts.push(0);
      if (key) open.set(key, at);
    }
    groups[at]!.requests.push(request);
    if (!sameEvent) counts[at]! += 1;
    if (user !== undefined) lastOfUser.set(user, at);
    previous = request;
  }
  return groups.map(merged);
}
