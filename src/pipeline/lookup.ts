/**
 * The kinds' lookups: the HTTP client a transform may use to ask the service before it builds
 * its requests (as RudderStack's INTERCOM, HS, ZENDESK, FRESHSALES, MAUTIC, SENDGRID, KLAVIYO
 * and BRAZE do), and the memory a kind keeps of their answers per destination. Lookups go through the same exchange as
 * delivery (send.ts: outbound policy, pinned address, time-out) and, in the router, take one of
 * the destination's connection slots while on the wire.
 */
import { LRUCache } from "lru-cache";
import type { DestinationRuntime } from "../control-plane/config-store";
import { type LookupCache, type LookupClient, RetryableTransformError, TransformError, restRequest } from "../destinations/types";
import type { Outbound } from "./outbound";
import { isRetryableStatus } from "../destinations/types";
import { exchange, parseAnswer, parseRetryAfter } from "./send";

export interface LookupSettings {
  outbound: Outbound;
  timeoutMs: number;
  /** Holds a connection slot of the destination around the call; released by the function it answers. */
  acquire?: () => Promise<() => void>;
}

/** A lookup client for one destination. */
export function lookupClient(settings: LookupSettings): LookupClient {
  return async (req) => {
    const request = restRequest(req);
    const release = settings.acquire ? await settings.acquire() : undefined;
    let x;
    try {
      x = await exchange(request, { outbound: settings.outbound, timeoutMs: settings.timeoutMs });
    } finally {
      release?.();
    }
    const what = `lookup ${req.method} ${pathOf(req.endpoint)}`;
    if (!x.ok) {
      if (x.retry) throw new RetryableTransformError(`${what} failed: ${x.error}`);
      throw new TransformError(`${what} refused: ${x.error}`);
    }
    const answer = { status: x.status, body: parseAnswer(x.text), text: x.text };
    if (isRetryableStatus(x.status)) throw new RetryableTransformError(`${what} answered ${x.status}`, parseRetryAfter(x.headers.get("retry-after")), answer);
    return answer;
  };
}

/** The path of a URL for messages: the host may be an override and the query may carry a key. */
function pathOf(endpoint: string): string {
  try {
    return new URL(endpoint).pathname;
  } catch {
    return "(invalid URL)";
  }
}

/** Most entries one destination keeps; a kind caches a few lists, not one entry per user. */
const CACHE_ENTRIES = 100;

/**
 * Per-destination lookup memory. A destination's runtime object is replaced when its config
 * changes, so a new API key never reads what the old one was answered.
 */
export class LookupCaches {
  private caches = new WeakMap<DestinationRuntime, LookupCache>();

  for(d: DestinationRuntime): LookupCache {
    let cache = this.caches.get(d);
    if (!cache) {
      const lru = new LRUCache<string, { value: unknown }>({ max: CACHE_ENTRIES, ttlAutopurge: false });
      cache = {
        get: <T>(key: string) => lru.get(key)?.value as T | undefined,
        set: (key, value, ttlMs) => void lru.set(key, { value }, { ttl: ttlMs }),
      };
      this.caches.set(d, cache);
    }
    return cache;
  }
}
