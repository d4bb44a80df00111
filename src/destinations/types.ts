/**
 * What a destination kind is: a definition (as listed by GET /destination-definitions),
 * a config schema, and a pure transform from one event to the requests the service expects.
 * The pipeline knows nothing else about a kind, so adding one never touches the pipeline.
 */
import type { Static, TSchema } from "elysia";
import type { TObject } from "@sinclair/typebox";

export type MessageType = "identify" | "track" | "page" | "screen" | "group" | "alias" | "merge";

/** An analytics event as stored by the gateway (after the gateway's enrichment). */
export type SluiceEvent = Record<string, any> & {
  type: string;
  messageId: string;
  userId?: string;
  anonymousId?: string;
};

/** One outgoing request in the shape of the Test API's `dest_transformed_payload` entries. */
export interface DestinationRequest {
  version: "1";
  type: "REST";
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  endpoint: string;
  headers: Record<string, string>;
  /** Query parameters with their values' own types, as RudderStack shows them (0 stays 0); the URL gets their text. */
  params: Record<string, unknown>;
  body: {
    JSON: Record<string, unknown>;
    JSON_ARRAY: Record<string, unknown>;
    XML: Record<string, unknown>;
    FORM: Record<string, unknown>;
  };
  files: Record<string, unknown>;
  /** The user whose per-user order this request belongs to; filled by the pipeline. */
  userKey?: string;
}

/** A call a kind's transform makes to the service before it builds its requests (RudderStack's lookups). */
export interface LookupRequest {
  method: DestinationRequest["method"];
  endpoint: string;
  headers?: Record<string, string>;
  params?: Record<string, unknown>;
  json?: Record<string, unknown> | unknown[];
}

/** The service's answer to a lookup: its status, the body parsed as JSON (or its text when it is not JSON). */
export interface LookupAnswer {
  status: number;
  body: any;
  text: string;
}

/**
 * The HTTP client the pipeline hands a kind for its lookups: the same outbound address policy,
 * time-out and connection slots as delivery. An answer the delivery would retry (a network
 * failure, a time-out, 408, 429, 5xx) throws a RetryableTransformError, so the delivery is
 * retried later; every other status is answered for the kind to read (a 404 that means "no such
 * contact" takes the create branch, a 401 aborts in the kind's own words).
 */
export type LookupClient = (request: LookupRequest) => Promise<LookupAnswer>;

/** What a kind may keep per destination between events (HubSpot's property list), each entry with its own lifetime. */
export interface LookupCache {
  get<T>(key: string): T | undefined;
  set(key: string, value: unknown, ttlMs: number): void;
}

export interface DestinationContext {
  /** The destination's stored config (or the Test API's destinationConfig). */
  config: Record<string, any>;
  destination: { id: string; name: string; workspaceId: string };
  /** Base URL override for this kind (settings `--destination-base-url KIND=URL`), for offline tests. */
  baseUrl?: string;
  /**
   * The clock (ms since the epoch), handed in so that a kind never reads the time itself and a
   * test can fix it. The pipeline passes Date.now; read it through `nowOf(ctx)`.
   */
  now?: () => number;
  /** The lookup client (delivery and the Test API hand one in); read it through `lookupOf(ctx)`. */
  lookup?: LookupClient;
  /** Per-destination memory for lookups' answers; absent, nothing is kept. */
  cache?: LookupCache;
  /**
   * The id of the delivery being transformed (RudderStack's job id), for a kind that sends it so
   * that a batch answer can name an event's own failure (HS's objectWriteTraceId). Absent in the
   * Test API.
   */
  jobId?: number;
}

/**
 * A kind. `Out` is what its transform answers: the requests at once (most kinds), or a promise of
 * them for a kind that asks the service first (its lookups, through `lookupOf(ctx)`); `Del` the same
 * for its deleteUsers.
 */
export interface DestinationDefinition<
  Out extends DestinationRequest[] | Promise<DestinationRequest[]> = DestinationRequest[],
  Del extends DestinationRequest[] | Promise<DestinationRequest[]> = DestinationRequest[],
> {
  /** RudderStack's definition name, e.g. WEBHOOK, AM, MP. */
  name: string;
  displayName: string;
  config: {
    /** Config keys that may be set on a destination of this kind (and in the Test API's destinationConfig). */
    defaultConfig: string[];
    supportedMessageTypes: MessageType[];
    /** Keys that must be present; a missing one aborts the event naming the key. */
    requiredKeys?: string[];
    /**
     * Keys whose value is a request URL (or its start): refused on save unless http or https,
     * as a `file:` or `gopher:` URL would make the server read or call what the user may not.
     * A key named `…Url` is one whether listed or not (registry.ts `urlKeysOf`).
     */
    urlKeys?: string[];
    /** Keys whose value becomes a request URL's host (a bare host, or an http(s) URL): any other scheme is refused on save. */
    hostKeys?: string[];
  };
  /** TypeBox schema of the config, used to validate destinations on save. */
  configSchema: TSchema;
  /**
   * Optional: what the schema cannot say about a config, checked on save and by the Test API:
   * above all, that no path or key the config names reaches a prototype (`$.__proto__.x`).
   * Returns the first problem: its key within the config (`propertiesMapping[0].to`) and why.
   */
  checkConfig?(config: Record<string, any>): ConfigProblem | undefined;
  /**
   * Turns one event into zero or more requests. Throws a TransformError for config
   * problems or events the kind cannot send; that aborts the event with its message.
   */
  transform(event: SluiceEvent, ctx: DestinationContext): Out;
  /**
   * Optional: merges transformed requests of several events into fewer requests. Each user's
   * requests (by `userKey`) keep their order, except where the service writes them
   * independently: a kind may then group the batch's requests by endpoint as RudderStack's router
   * does (BRAZE; ITERABLE's profile updates before event records; KLAVIYO's profile imports before
   * the subscription job listing them), as long as requests writing the same thing (a user's
   * profile, their subscription to one list) stay in order; its batch.ts says why the reorder is
   * safe. The router hands batch() each ready user's queued deliveries together, in order (up to
   * 100; src/pipeline/scheduler.ts, takeRuns), as RudderStack's router hands its transformer a
   * user's jobs.
   * A request that must not go, as only the whole batch shows (BRAZE's identify left with nothing
   * by deduplication against the batch's earlier ones), is left out and handed to `refuse`: the
   * event that made it fails with `error` (an abort), whatever became of its other requests.
   * Without `refuse` (a caller that cannot fail an event) it is only left out.
   */
  batch?(requests: DestinationRequest[], ctx: DestinationContext, refuse?: BatchRefusal): DestinationRequest[];
  /**
   * Optional: what a 2xx answer means, for services that report failures in a successful answer
   * (GA4's validation server, ITERABLE's bulk calls). Called with the whole answer text and the
   * request as sent (after batch()); without it every 2xx answer is delivered.
   */
  checkResponse?(answer: { status: number; body: string }, request: DestinationRequest, ctx: DestinationContext): ResponseCheck;
  /**
   * Optional: the requests that delete these users at the service (regulations,
   * suppress_with_delete). A service that deletes by its own id may be asked first
   * (`lookupOf(ctx)`, as in a transform); a RetryableTransformError retries the deletion.
   */
  deleteUsers?(users: Array<{ userId: string; [k: string]: string }>, ctx: DestinationContext): Del;
  /**
   * Optional: for a kind that speaks its own protocol instead of HTTP (REDIS). The sender hands it
   * each request its transform or deleteUsers made, in place of an HTTP call, with the same
   * connection slots and time-out; delivery, the Test API and deletions all go through it.
   */
  send?(request: DestinationRequest, ctx: ProtocolContext): Promise<ProtocolAnswer>;
  /**
   * Optional: the config as RudderStack's dashboard would save it, given what a create or update
   * through Sluice's API names (HTTP's `isDefaultMapping`, on by default there). Not applied to
   * workspace files, which hold what RudderStack saved, nor to the Test API's destinationConfig.
   */
  withDashboardDefaults?(config: Record<string, any>): Record<string, any>;
  /** Set for kinds staged and loaded by the server (warehouses, object storage): the router never calls transform; the Test API does not test them. */
  serverDelivered?: boolean;
  /**
   * Set for kinds the spec says the Test API does not support (streaming platforms, queues,
   * spreadsheets, key-value stores, warehouse stream inserts): what the kind is, for the answer
   * (`a key-value store`). They are delivered like any kind, through their own client.
   */
  notInTestApi?: string;
  /** Set for key-value-store and object-storage kinds: deletion takes userId only (the Data Regulation API's rule for those kinds). */
  deletionByUserIdOnly?: boolean;
}

/** How batch() fails an event: by one of the requests it was handed (the same object), and why. */
export type BatchRefusal = (request: DestinationRequest, error: string) => void;

/** What a kind's own protocol client (`send`) is handed: the destination, the time-out, and the outbound address policy. */
export interface ProtocolContext {
  config: Record<string, any>;
  destination: DestinationContext["destination"];
  timeoutMs: number;
  /**
   * Checks a host the config names against the outbound address policy (docs/security.md), as
   * every HTTP request is checked: the address to connect to (pinned, so a DNS answer that changes
   * later cannot take the connection elsewhere), or why not; `retry` when it may pass later (DNS).
   */
  reach(host: string): Promise<{ ok: true; address: string } | { ok: false; error: string; retry: boolean }>;
  /**
   * Delivery's HTTP client (the outbound policy, the pinned address, the time-out), for a kind
   * whose client speaks HTTP of its own making (the AWS kinds sign each request as it goes).
   */
  http(request: DestinationRequest): Promise<HttpExchange>;
}

/** An HTTP exchange: the answer (whatever its status), or why none came and whether to try again. */
export type HttpExchange = { ok: true; status: number; text: string; headers: Headers; ms: number } | { ok: false; retry: boolean; error: string; ms: number };

/** Whether an answer's status is worth another try later: 408, 429 and 5xx, as rudder-server's router reads them. */
export const isRetryableStatus = (status: number) => status === 408 || status === 429 || status >= 500;

/** A protocol kind's answer for one request: done (with what to record as the response), or retry / abort with why. */
export type ProtocolAnswer = { outcome: "ok"; response: string } | { outcome: "retry" | "abort"; error: string; response?: string };

/** Any kind, whichever its transform answers: what the registry and the pipeline hold. */
export type AnyDestinationDefinition =
  | DestinationDefinition<DestinationRequest[]>
  | DestinationDefinition<Promise<DestinationRequest[]>>
  | DestinationDefinition<Promise<DestinationRequest[]>, Promise<DestinationRequest[]>>;

/** A config refused on save: `key` is where (`headers[2].from`), `message` why. */
export interface ConfigProblem {
  key: string;
  message: string;
}

/** What a 2xx answer means for the events of one request: delivered, or failed with this message. */
export type ResponseVerdict = { outcome: "ok" } | { outcome: "retry" | "abort"; error: string };

/**
 * A kind's reading of a 2xx answer (`checkResponse`): one verdict for every event of the request,
 * or, where the answer names failed items of a batched request, a verdict per event, given the
 * requests that event's transform produced (`own`, as before batch()); an event with none of its
 * requests in this one is "ok".
 */
export type ResponseCheck = ResponseVerdict | { outcome: "per-event"; verdictFor(own: DestinationRequest[]): ResponseVerdict };

/** A transform failure: the event is aborted with this message (never retried). */
export class TransformError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TransformError";
  }
}

/**
 * A lookup failed for a reason worth retrying: the delivery is retried, after `retryAfterMs` when
 * the service said. `answer`: the service's answer (429, 5xx), for a kind that words the failure
 * as RudderStack does from its body; absent when nothing was answered.
 */
export class RetryableTransformError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
    readonly answer?: LookupAnswer,
  ) {
    super(message);
    this.name = "RetryableTransformError";
  }
}

/** How long a lookup still on the wire may be joined by other transforms; its answer replaces it when it comes. */
const IN_FLIGHT_MS = 10 * 60 * 1000;

type Kept<T> = { value: T } | { pending: Promise<T> };

/**
 * A lookup's answer kept in the destination's memory (`ctx.cache`) for `keepMs`, fetched when
 * absent or when `usable` refuses the kept one. Transforms asking while a fetch is on the wire
 * share it, so a batch makes one call; a failed fetch, or an answer `keep` refuses, is not kept,
 * so the next event asks again. Without a memory every call fetches.
 */
export async function remembered<T>(
  ctx: DestinationContext,
  key: string,
  keepMs: number,
  fetch: () => Promise<T>,
  opts: { usable?: (kept: T) => boolean; keep?: (answer: T) => boolean } = {},
): Promise<T> {
  const cache = ctx.cache;
  if (!cache) return fetch();
  const kept = cache.get<Kept<T> | null>(key);
  if (kept && "pending" in kept) return kept.pending;
  if (kept && (!opts.usable || opts.usable(kept.value))) return kept.value;
  const pending = fetch();
  cache.set(key, { pending }, IN_FLIGHT_MS);
  try {
    const value = await pending;
    if (!opts.keep || opts.keep(value)) cache.set(key, { value }, keepMs);
    else cache.set(key, null, 1);
    return value;
  } catch (err) {
    cache.set(key, null, 1);
    throw err;
  }
}

/** The context's lookup client; a context built by hand without one (unit tests of other paths) cannot look up. */
export function lookupOf(ctx: DestinationContext): LookupClient {
  if (!ctx.lookup) throw new TransformError("this transform needs to look up the service, and no lookup client was given");
  return ctx.lookup;
}

/** Builds a request with the empty parts filled in, so each kind names only what it sets. */
export function restRequest(parts: {
  method?: DestinationRequest["method"];
  endpoint: string;
  headers?: Record<string, string>;
  params?: Record<string, unknown>;
  json?: Record<string, unknown> | unknown[];
  form?: Record<string, unknown>;
  xml?: Record<string, unknown>;
}): DestinationRequest {
  const isArray = Array.isArray(parts.json);
  return {
    version: "1",
    type: "REST",
    method: parts.method ?? "POST",
    endpoint: parts.endpoint,
    headers: parts.headers ?? {},
    params: parts.params ?? {},
    body: {
      JSON: !isArray && parts.json ? (parts.json as Record<string, unknown>) : {},
      JSON_ARRAY: isArray ? { batch: JSON.stringify(parts.json) } : {},
      XML: parts.xml ?? {},
      FORM: parts.form ?? {},
    },
    files: {},
  };
}

/** Reads a required config key or throws naming it. */
/**
 * A kind's `defaultConfig` with each key listed once: the keys its schema types (those the kind
 * reads, in the schema's order), then the keys it accepts and stores but never reads (RudderStack's
 * device-mode and dashboard settings), so that an imported config stays whole.
 */
export function configKeys(schema: TObject, acceptedUnread: string[] = []): string[] {
  return [...new Set([...Object.keys(schema.properties), ...acceptedUnread])];
}

/** The keys a kind's schema requires, for its `requiredKeys`. */
export function requiredKeysOf(schema: TObject): string[] {
  return [...(schema.required ?? [])];
}

/**
 * The context's config as the kind's schema types it (`Static<typeof Schema>`). The type holds:
 * every config is checked against the kind's schema before it is stored (API, workspace file)
 * and the Test API checks its destinationConfig the same way; device-mode configs, which skip
 * that check, are never transformed. Required keys are still read through requireConfig, whose
 * message names a missing one.
 */
export function configOf<S extends TSchema>(ctx: Pick<DestinationContext, "config">, _schema: S): Static<S> {
  return ctx.config as Static<S>;
}

/** The time for a kind to use: the context's clock, or the real one for a context built by hand (unit tests). */
export function nowOf(ctx: DestinationContext): number {
  return ctx.now ? ctx.now() : Date.now();
}

export function requireConfig(ctx: DestinationContext, key: string): any {
  const v = ctx.config[key];
  if (v === undefined || v === null || v === "") throw new TransformError(`destination config is missing '${key}'`);
  return v;
}
