/**
 * The contract of a webhook source mapping: what a third-party service posts to `/v1/webhook`
 * becomes RudderStack events, as rudder-transformer's `src/sources/<type>/` makes them. A
 * mapping is a pure function of the request and a small context; the gateway does everything
 * around it (write key, body reading, intake of the events, the answer).
 */
import { AppError } from "../lib/errors";

/**
 * The request as rudder-server hands it to the transformer (rudder-go-kit's requesttojson):
 * headers and query as Go's multi-valued maps, the body as the text that arrived (form and
 * multipart bodies already turned into JSON, as rudder-server's gateway does first).
 */
export interface WebhookRequest {
  method: string;
  /** The path and query, as received (`/v1/webhook?writeKey=…&topic=…`). */
  url: string;
  proto: string;
  /** Header names in Go's canonical form (`Content-Type`, `X-Shopify-Topic`). */
  headers: Record<string, string[]>;
  query_parameters: Record<string, string[]>;
  body: string;
  /**
   * The body already parsed, when the gateway did it (once, under its depth and size limits);
   * absent when the body is not JSON. Read it through common.ts's jsonBody.
   */
  json?: unknown;
}

/** The source a request came for, as rudder-server describes it to the transformer. */
export interface WebhookSourceInfo {
  id: string;
  name: string;
  workspaceId: string;
  writeKey: string;
  /** The source's config (RudderStack's `source.Config`): e.g. Canny's or Shopify's settings. */
  config: Record<string, unknown>;
}

/**
 * What RudderStack keeps in Redis for a source (Shopify's cart tokens and pixel identities):
 * small hashes by key, each with an expiry. Sluice keeps them in its own store, per workspace.
 */
export interface SourceState {
  /** The hash at `key`, or null when there is none (or it expired). */
  get(key: string): Promise<Record<string, unknown> | null>;
  /** Sets these fields of the hash at `key` (others are kept); `ttlSeconds` renews its expiry. */
  set(key: string, fields: Record<string, unknown>, ttlSeconds?: number): Promise<void>;
}

/**
 * A request a mapping makes to the service (Facebook's Graph API lookup of a lead), as `fetch`
 * takes it. The gateway's client sends it through Sluice's outbound policy: the address policy
 * (`--allow-destination-hosts`), the type's `--destination-base-url` override (its name in capitals,
 * e.g. `FACEBOOK_LEAD_ADS_NATIVE=http://127.0.0.1:9000`) and the time-out
 * (`--destination-timeout-ms`); redirects are not followed and the answer is read up to 1 MB.
 * It answers the service's response whatever its status, and throws a SourceHttpError when there
 * is none.
 */
export type SourceHttp = (url: string, init?: { method?: string; headers?: Record<string, string>; body?: string; signal?: AbortSignal }) => Promise<Response>;

/**
 * No answer to a mapping's request: `retry` when it may come later (no connection, a time-out, a
 * name that did not resolve), not when it never will (an address the policy refuses, a bad URL).
 * The message names the host at most, never the URL's path or query (where tokens travel).
 */
export class SourceHttpError extends Error {
  constructor(
    message: string,
    readonly retry: boolean,
  ) {
    super(message);
    this.name = "SourceHttpError";
  }
}

export interface MapContext {
  source: WebhookSourceInfo;
  state: SourceState;
  /** A new anonymous id or message id: RudderStack's generateUUID (v4). */
  uuid(): string;
  /** The clock, in ms: where a mapping stamps the time of the request. */
  now(): number;
  /**
   * The mapping's HTTP client, for a type that asks the service for more than the webhook says
   * (Facebook Lead Ads' answers). Absent where nothing may go out (the dashboard's sample, the
   * comparison's direct runs): the mapping then does without.
   */
  http?: SourceHttp;
  /** A warning in Sluice's log, with the source's id and type added; absent, nothing is logged. Never pass a secret. */
  warn?(message: string, fields?: Record<string, unknown>): void;
}

/** What a mapping answers the service with instead of `OK` (Slack's challenge, Shopify's `OK` for topics it skips). */
export interface AnswerToSource {
  body: string;
  contentType: string;
  /** 200 unless the mapping says otherwise. */
  status?: number;
}

export interface MapResult {
  /** The events, as the batch call rudder-server's gateway then takes in. */
  events: Record<string, unknown>[];
  /** Set when the caller gets this instead of the usual answer; `events` is then empty. */
  answer?: AnswerToSource;
}

export interface SourceMapping {
  /** RudderStack's source-definition name (`Shopify`, `Auth0`, `close_crm`): what the workspace file says. */
  name: string;
  displayName: string;
  /** The setup in one short paragraph: where in the service the URL goes. */
  setup: string;
  /** A documented payload of the service, for the dashboard's "try a sample" and the docs. */
  sample: SamplePayload;
  /**
   * GET requests reach the mapping too (Adjust's, as rudder-server forwards them; Facebook's URL
   * check). Other types answer a GET 200 with nothing, as rudder-server does.
   */
  takesGet?: boolean;
  map(request: WebhookRequest, ctx: MapContext): MapResult | Promise<MapResult>;
}

export interface SamplePayload {
  /** Query parameters added to the URL (Shopify's `topic`, Adjust's event fields). */
  query?: Record<string, string>;
  headers?: Record<string, string>;
  /** JSON, sent as application/json. */
  body: unknown;
}

/**
 * A body the mapping cannot read: 400 with the mapping's own text (rudder-transformer's
 * TransformationError), as rudder-server passes the transformer's error on. Other codes where the
 * transformer answers otherwise (e.g. 404 for an unknown Adjust event).
 */
export function mappingError(message: string, status: 400 | 401 | 403 | 404 | 413 | 429 = 400): AppError {
  const code = ({ 400: "BAD_REQUEST", 401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND", 413: "PAYLOAD_TOO_LARGE", 429: "TOO_MANY_REQUESTS" } as const)[status];
  return new AppError(code, message);
}
