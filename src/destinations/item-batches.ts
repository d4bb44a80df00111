/**
 * Batches of items for kinds whose service takes many records a call (Kinesis PutRecords,
 * Firehose PutRecordBatch, EventBridge PutEvents, Pub/Sub publish): merging each event's request
 * into as few as the service takes, giving the kind's client the items back, and reading an
 * answer that names failed items by position as a verdict per event.
 */
import type { DestinationRequest, ResponseCheck, ResponseVerdict } from "./types";

/** A merged request's items (one per event's request, in order), and where each event's request went. */
interface Merged<T> {
  items: T[];
  at: Map<DestinationRequest, number>;
}
const mergedItems = new WeakMap<DestinationRequest, Merged<unknown>>();

/**
 * Merges requests into as few as the service takes: items of the same `group` (a stream, an
 * endpoint) in order, at most `max` items and `maxBytes` of them a request. Each merged request
 * carries its items as `body.JSON[key]`; `itemsOf` gives them back, for the kind's client.
 */
export function mergeRequests<T>(
  requests: DestinationRequest[],
  opts: { key: string; max: number; maxBytes: number; item(r: DestinationRequest): T; size(item: T): number; group(r: DestinationRequest): string },
): DestinationRequest[] {
  const out: DestinationRequest[] = [];
  const open = new Map<string, { request: DestinationRequest; merged: Merged<T>; bytes: number }>();
  for (const r of requests) {
    const item = opts.item(r);
    const bytes = opts.size(item);
    const group = opts.group(r);
    let current = open.get(group);
    if (!current || current.merged.items.length >= opts.max || current.bytes + bytes > opts.maxBytes) {
      const items: T[] = [];
      const request = { ...r, body: { ...r.body, JSON: { [opts.key]: items } } };
      current = { request, merged: { items, at: new Map() }, bytes: 0 };
      mergedItems.set(request, current.merged as Merged<unknown>);
      open.set(group, current);
      out.push(request);
    }
    current.merged.at.set(r, current.merged.items.length);
    current.merged.items.push(item);
    current.bytes += bytes;
  }
  return out;
}

/** The items a request carries: a merged request's, or the one of a request never merged. */
export function itemsOf<T>(request: DestinationRequest, single: (r: DestinationRequest) => T): T[] {
  return (mergedItems.get(request)?.items as T[] | undefined) ?? [single(request)];
}

/**
 * A 2xx answer that names failed items by position (PutRecords, PutRecordBatch, PutEvents): the
 * verdict of each event by the position of its request's item in the merged request.
 */
export function itemVerdicts(request: DestinationRequest, failed: Map<number, ResponseVerdict>): ResponseCheck {
  if (!failed.size) return { outcome: "ok" };
  const m = mergedItems.get(request);
  if (!m) return failed.get(0) ?? { outcome: "ok" };
  return {
    outcome: "per-event",
    verdictFor(own) {
      for (const r of own) {
        const at = m.at.get(r);
        const verdict = at === undefined ? undefined : failed.get(at);
        if (verdict) return verdict;
      }
      return { outcome: "ok" };
    },
  };
}

