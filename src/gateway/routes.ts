/**
 * The data plane's HTTP surface (docs/api.md, Event calls) plus what real SDKs need beside it:
 * the browser SDK's beacon and sourceConfig calls, and CORS; and the rest of what
 * rudder-server's gateway serves: /v1/import, /v1/webhook (webhook.ts), the pixels
 * (pixel.ts) and /robots.txt. Bodies are read raw
 * so size limits and gzip are enforced before anything is buffered whole. Errors are
 * short text/plain messages, as RudderStack's gateway answers.
 *
 * The event calls are the hot path. Each is one function from Request to Response,
 * served two ways: the listening server routes the paths straight to it (Bun's own
 * router, no Elysia context or response mapping: that was a third of a call's CPU),
 * and the Elysia routes below call the same function, for `app.handle` and /openapi.
 * It adds CORS headers itself and counts its own requests and latency with pre-bound
 * metric handles.
 */
import { Elysia, t } from "elysia";
import { AppError, badRequest } from "../lib/errors";
import { Counter, Gauge } from "../lib/metrics";
import { PIXEL_GIF, pixelCall } from "./pixel";
import type { RequestPeer } from "../lib/slow-bodies";
import { type BodyWait, readJsonBody, writeKeyFromAuthorization } from "./read-body";
import { WEBHOOK_TEXT, authenticateWebhookSource, readWebhookRequest, requestForLiveEvents, webhookWriteKey } from "./webhook";
import { normalizeMappedTimes, mapWebhook, mappedSource } from "./webhook-mapping";
import { type IntakeDeps, acceptCalls, authenticateSource, parseCalls } from "./intake";
import { BatchCall, CALL_TYPES, CallSchemas, type CallType, MAX_BATCH_BYTES, MAX_CALL_BYTES } from "./schemas";
import { sourceConfig } from "./source-config";

type Set = { status?: number | string; headers: Record<string, string | number> };
type Refusal = { status: number; body: string; retryAfter?: number };
type PeerAddress = RequestPeer;
export type IntakeHandler = (request: Request, server: PeerAddress) => Promise<Response>;

/** What Bun sends for a string body without headers, so both kinds of answer look alike. */
const TEXT = "text/plain;charset=utf-8";

/**
 * Any site may send event calls, and the origin is echoed. Never with credentials: the write key
 * is the authentication, the SDK's XHRs and beacons send no cookies that matter here, and a
 * credentialed answer would let any page read what the server answers in its visitor's name.
 */
function corsHeaders(origin: string, into: Record<string, string | number>) {
  into["access-control-allow-origin"] = origin;
  into.vary = "Origin";
}

function allowOrigin(request: Request, set: Set) {
  const origin = request.headers.get("origin");
  if (origin) corsHeaders(origin, set.headers);
}

function intakeResponse(origin: string | null, status: number, body: string, retryAfterSeconds?: number): Response {
  // The common answer carries no init: building headers for it cost as much as the rest of the Response.
  if (!origin && status === 200) return new Response(body);
  const headers: Record<string, string> = { "content-type": TEXT };
  if (origin) corsHeaders(origin, headers);
  if (retryAfterSeconds !== undefined) headers["retry-after"] = String(retryAfterSeconds);
  return new Response(body, { status, headers });
}

function clientIp(request: Request, server: PeerAddress): string {
  const xff = request.headers.get("x-forwarded-for");
  if (xff) {
    const first = xff.split(",")[0].trim();
    if (first) return first;
  }
  return server?.requestIP(request)?.address ?? "";
}

const EVENT_PATHS = [...CALL_TYPES.map((c) => [`/v1/${c}`, c] as const), ["/v1/batch", "batch"] as const];

/**
 * One handler per event-call path, keyed by path. `serverRoutes` turns them into the
 * listening server's own routes; `gatewayRoutes` wraps the same ones in Elysia.
 */
export function intakeHandlers(deps: IntakeDeps): IntakeHandlers {
  const m = deps.metrics;
  const storageRejected = m.register(
    new Counter("sluice_events_storage_rejected_total", "Event calls refused with 503 because the database could not be written (disk full, I/O error), by route."),
  );
  const storage = deps.events.storage;
  m.register(new Gauge("sluice_storage_failing", "1 while writes to the database fail (disk full, I/O error; /health names the cause), else 0.", () => (storage.problem ? 1 : 0)));
  const counters = new Map<string, { inc(by?: number): void }>();
  const count = (route: string, status: number, method = "POST") => {
    const k = `${method} ${route} ${status}`;
    let c = counters.get(k);
    if (!c) counters.set(k, (c = m.httpRequests.bind({ route, method, status: String(status) })));
    c.inc();
  };

  /**
   * A body that trickles in (a byte a second) would hold its connection for as long as the client
   * likes: Bun's idle timer counts only silence. Bun's per-request timeout closes the connection
   * once the whole body has not arrived in time, and one address may have only so many trickling.
   */
  const slowBodies = deps.slowBodies;
  // One wait per listening server (there are one or two), not a closure per call.
  const waits = new WeakMap<object, BodyWait>();
  const waitFor = (server: PeerAddress): BodyWait | undefined => {
    if (!slowBodies || !server) return undefined;
    let wait = waits.get(server);
    if (!wait) waits.set(server, (wait = (request, read) => slowBodies.wait(request, server, read)));
    return wait;
  };

  /** What a refused event call answers; counted, and logged (refusals are rare and worth a line). */
  const refusal = (err: unknown, route: string, method: string, fields?: Record<string, unknown>): Refusal => {
    let status: number;
    let body: string;
    let retryAfter: number | undefined;
    let storage = false;
    if (err instanceof AppError) {
      status = err.status;
      body = err.message;
      retryAfter = err.retryAfterSeconds;
      storage = err.storage;
      m.eventsRejected.inc({ status: String(status) });
      // Not every 503 is the database's: a webhook source's lookup (Facebook's Graph API) has its own.
      if (storage) storageRejected.inc({ route });
    } else {
      deps.log.error("intake failed", { err, route });
      status = 500;
      body = "internal error";
    }
    // Accepted calls are counted, not logged. While the disk is full every call is refused:
    // those are counted, and intake logs when it starts.
    const level = storage ? "debug" : "info";
    if (deps.log.enabled(level)) deps.log[level]("request", { method, route, status, message: body, ...fields });
    return { status, body, retryAfter };
  };

  const intake = (path: CallType | "batch", route: string, writeKeyFrom: "header" | "query"): IntakeHandler => {
    const latency = m.httpDuration.bind({ route });
    const ok = m.httpRequests.bind({ route, method: "POST", status: "200" });
    return async (request, server) => {
      const started = performance.now();
      // Read now: nothing of the request is kept across the wait for the disk.
      const origin = request.headers.get("origin");
      let status = 200;
      let body = "OK";
      let retryAfter: number | undefined;
      try {
        const writeKey =
          writeKeyFrom === "header"
            ? writeKeyFromAuthorization(request.headers.get("authorization"))
            : new URL(request.url).searchParams.get("writeKey") || missingWriteKey();
        const source = authenticateSource(deps, writeKey);
        const receivedAt = Date.now();
        const { value, bytes } = await readJsonBody(request, path === "batch" ? MAX_BATCH_BYTES : MAX_CALL_BYTES, waitFor(server));
        const calls = parseCalls(source, path, value, request.headers.get("anonymousid") ?? undefined, bytes);
        await acceptCalls(deps, source, calls, {
          receivedAt,
          ip: clientIp(request, server),
          batchSentAt: path === "batch" && typeof value.sentAt === "string" ? value.sentAt : undefined,
          batchContext: path === "batch" && value.context && typeof value.context === "object" ? (value.context as Record<string, unknown>) : undefined,
        });
      } catch (err) {
        ({ status, body, retryAfter } = refusal(err, route, "POST"));
      }
      if (status === 200) ok.inc();
      else count(route, status);
      latency.observe((performance.now() - started) / 1000);
      return intakeResponse(origin, status, body, retryAfter);
    };
  };

  /** Counts and times a call of the routes below (the event calls above do it inline). */
  const finish = (route: string, method: string, status: number, started: number) => {
    count(route, status, method);
    m.httpDuration.observe({ route }, (performance.now() - started) / 1000);
  };

  // A webhook request becomes what its source's mapping makes of it (webhook.ts, src/sources/),
  // taken in as a batch; limited like a batch, as rudder-server limits a webhook's body by its
  // request limit (4000 KB), not by one call's.
  const webhook: IntakeHandler = async (request, server) => {
    const started = performance.now();
    const origin = request.headers.get("origin");
    let status = 200;
    let body: string = WEBHOOK_TEXT.ok;
    let contentType = TEXT;
    let retryAfter: number | undefined;
    let live: { topic: string; request?: Record<string, unknown> } | undefined;
    try {
      const url = new URL(request.url);
      const { source, mapping } = authenticateWebhookSource(deps, webhookWriteKey(request, url));
      // rudder-server forwards a GET to the mapping only for Adjust; others get an empty 200.
      if (request.method === "GET" && !mapping.takesGet) {
        finish(WEBHOOK_ROUTE, "GET", 200, started);
        return intakeResponse(origin, 200, "");
      }
      const receivedAt = Date.now();
      const read = () => readWebhookRequest(request, url, MAX_BATCH_BYTES);
      const mapped = await (slowBodies ? slowBodies.wait(request, server, read) : read());
      if (deps.live.hasSubscribers(`source:${source.id}`)) live = { topic: `source:${source.id}`, request: requestForLiveEvents(mapped) };
      const result = await mapWebhook(deps, source, mapping, mapped);
      if (result.events.length) {
        normalizeMappedTimes(result.events);
        // The mapping made these events, not the client: the checks are the lenient ones, as
        // rudder-server checks a mapped batch for identifiers only.
        // No 32 KB limit per mapped event (0 skips it): rudder-server bounds a webhook by its
        // request (4 MB here too), and a Shopify order with its products may map larger.
        const calls = parseCalls(mappedSource(source), "batch", { batch: result.events }, undefined, 0);
        await acceptCalls(deps, source, calls, { receivedAt, ip: clientIp(request, server), keepOwn: true });
      }
      // The events' messageIds (intake gave each one) let the live page pair them with this request.
      if (live) deps.live.publish(live.topic, { webhookRequest: live.request, mappedEvents: result.events.length, messageIds: result.events.map((e) => e.messageId), ...(result.answer ? { answer: result.answer.body } : {}) });
      if (result.answer) {
        status = result.answer.status ?? 200;
        body = result.answer.body;
        contentType = result.answer.contentType;
      }
    } catch (err) {
      ({ status, body, retryAfter } = refusal(err, WEBHOOK_ROUTE, request.method));
      if (live) deps.live.publish(live.topic, { webhookRequest: live.request, error: body, status });
    }
    finish(WEBHOOK_ROUTE, request.method, status, started);
    if (contentType !== TEXT) return new Response(body, { status, headers: { "content-type": contentType, ...(origin ? { "access-control-allow-origin": origin, vary: "Origin" } : {}) } });
    return intakeResponse(origin, status, body, retryAfter);
  };

  // Always the GIF (pixel.ts): what was refused shows only in the log line and the metrics.
  const pixel = (type: "track" | "page", route: string): IntakeHandler => async (request, server) => {
    const started = performance.now();
    const ip = clientIp(request, server);
    try {
      const query = new URL(request.url).searchParams;
      const source = authenticateSource(deps, query.get("writeKey") || missingWriteKey());
      const receivedAt = Date.now();
      const calls = parseCalls(source, type, pixelCall(type, query, new Date(receivedAt).toISOString()));
      await acceptCalls(deps, source, calls, { receivedAt, ip });
    } catch (err) {
      refusal(err, route, "GET", { ip });
    }
    finish(route, "GET", 200, started);
    return new Response(PIXEL_GIF, { headers: { "content-type": "image/gif" } });
  };

  const post: Record<string, IntakeHandler> = {};
  for (const [route, path] of EVENT_PATHS) post[route] = intake(path, route, "header");
  post["/beacon/v1/batch"] = intake("batch", "/beacon/v1/batch", "query");
  // rudder-server's import is its batch call under another name (split by user inside, which
  // changes nothing here: each user's order holds in any batch).
  post["/v1/import"] = intake("batch", "/v1/import", "header");
  post[WEBHOOK_ROUTE] = webhook;
  const get: Record<string, IntakeHandler> = {
    [WEBHOOK_ROUTE]: webhook,
    "/pixel/v1/track": pixel("track", "/pixel/v1/track"),
    "/pixel/v1/page": pixel("page", "/pixel/v1/page"),
  };
  return { post, get };
}

/** Event-call handlers by method and path. */
export interface IntakeHandlers {
  post: Record<string, IntakeHandler>;
  get: Record<string, IntakeHandler>;
}

const WEBHOOK_ROUTE = "/v1/webhook";

/** rudder-server's robots.txt, byte for byte: no crawler has business on an event endpoint. */
const ROBOTS_TXT = "User-agent: * \nDisallow: / \n";
const robots = () => new Response(ROBOTS_TXT, { headers: { "content-type": TEXT } });

/** The handlers as routes of Bun.serve (Elysia passes these to the server it starts). */
export function serverRoutes(handlers: IntakeHandlers) {
  type Route = (req: Request, server: PeerAddress) => Response | Promise<Response>;
  const routes: Record<string, { POST?: Route; GET?: Route }> = {};
  for (const [path, h] of Object.entries(handlers.post)) (routes[path] ??= {}).POST = (req, server) => h(req, server);
  for (const [path, h] of Object.entries(handlers.get)) (routes[path] ??= {}).GET = (req, server) => h(req, server);
  routes["/robots.txt"] = { GET: robots };
  return routes;
}

export function gatewayRoutes(deps: IntakeDeps, handlers: IntakeHandlers) {
  const doc = (summary: string, schema: unknown, description = "") => ({
    summary,
    description:
      description +
      " Authenticate with HTTP Basic: the source write key as user name, an empty password. Answers 200 `OK` only after the events are committed to disk. " +
      "Errors are text/plain: 400 for a missing or malformed Authorization header, bad JSON or gzip, a body over the limit, or a field of the wrong type (the message names it); 401 for an unknown write key; 404 for a disabled source; 503 with `Retry-After` (seconds) when the database cannot be written (a full disk): nothing of the call was stored, send it again; 429 when this client address already has `--max-slow-bodies-per-address` request bodies still arriving (the body is not read). A body that has not arrived within `--body-timeout-seconds` of the headers closes the connection (408 is written first). " +
      "`Content-Encoding: gzip` is honoured whatever the Content-Type says. A messageId already accepted from the same source is acknowledged but not stored again.",
    tags: ["Event calls"],
    requestBody: { required: true, content: { "application/json": { schema } } },
    responses: { 200: { description: "Stored", content: { "text/plain": { schema: { type: "string", example: "OK" } } } } },
  });

  // Typed loosely: Elysia's route-tree types do not survive a loop of registrations.
  let app: Elysia<any, any, any, any, any, any, any> = new Elysia({ name: "gateway" });
  const via = (route: string) => (ctx: { [k: string]: any }) => handlers.post[route]!(ctx.request, ctx.server);
  const viaGet = (route: string) => (ctx: { [k: string]: any }) => handlers.get[route]!(ctx.request, ctx.server);
  for (const call of CALL_TYPES) {
    app = app.post(`/v1/${call}`, via(`/v1/${call}`), {
      parse: "none",
      detail: doc(`${call} call`, CallSchemas[call], `Limit: 32 KB (decoded).`) as any,
    });
  }
  return app
    .post("/v1/batch", via("/v1/batch"), {
      parse: "none",
      detail: doc("batch call", BatchCall, "Several calls in one request. Limits: 4 MB per request, 32 KB per entry. One bad entry rejects the whole request (the message names its index).") as any,
    })
    .post("/beacon/v1/batch", via("/beacon/v1/batch"), {
      parse: "none",
      query: t.Object({ writeKey: t.Optional(t.String()) }, { additionalProperties: true }),
      detail: {
        summary: "batch call sent with navigator.sendBeacon",
        description: "For RudderStack's browser SDK: the write key comes as the `writeKey` query parameter and the body as text/plain JSON; no Authorization header.",
        tags: ["Event calls"],
      },
    })
    .post("/v1/import", via("/v1/import"), {
      parse: "none",
      detail: doc(
        "import call",
        BatchCall,
        "RudderStack's import call: the same body, answer and limits as the batch call (4 MB per request, 32 KB per entry). rudder-server applies its 4000 KB limit to each user's events of an import rather than to the request; send a larger import as several requests.",
      ) as any,
    })
    .post(WEBHOOK_ROUTE, via(WEBHOOK_ROUTE), {
      parse: "none",
      query: t.Object({ writeKey: t.Optional(t.String()) }, { additionalProperties: true }),
      detail: {
        summary: "Webhook sources: a service's webhook becomes its events",
        description:
          "For services that post to a URL of their own (Shopify, Auth0, Customer.io, Iterable, Braze, Slack and the other RudderStack webhook sources: GET /source-types). The write key is the `writeKey` query parameter, else the user name of Basic auth, and must be a webhook source's (a source made with a `type`); its type maps the request (method, URL, headers, query, body) into events as RudderStack's source transformer maps it. " +
          "The events then go through the same suppression, deduplication and commit as every event call (checked for identifiers, as rudder-server checks a mapped batch); an event's own `request_ip` and `receivedAt` are kept. The generic type `webhook` makes one track `webhook_source_event` with the body as `properties`. " +
          "Bodies: JSON (empty means `{}`), `application/x-www-form-urlencoded` (handed to the mapping as `{name: [values]}`), `multipart/form-data` (`{Value: {name: [values]}, File: {name: [{Filename, Header, Size}]}}`); gzip is honoured. Limit: 4 MB (decoded); depth and size limits as the event calls'. " +
          "Answers, in rudder-server's words: 200 `ok` once committed, or what the mapping answers the service (Slack's challenge, Shopify's `OK` for a topic it does not map); 400 with the mapping's own text for a body it cannot read (nothing stored); 401 `failed to read writekey from query params` or `invalid write key` (also for a source that is not a webhook source); 404 `source is disabled`; 413 `request size exceeds max limit`; 429 and 503 as the other event calls.",
        tags: ["Event calls"],
        requestBody: { required: false, content: { "application/json": { schema: { type: "object" } }, "application/x-www-form-urlencoded": { schema: { type: "object" } } } },
        responses: { 200: { description: "Stored (or the mapping's answer to the service)", content: { "text/plain": { schema: { type: "string", example: "ok" } } } } },
      } as any,
    })
    .get(WEBHOOK_ROUTE, viaGet(WEBHOOK_ROUTE), {
      query: t.Object({ writeKey: t.Optional(t.String()) }, { additionalProperties: true }),
      detail: {
        summary: "Webhook GET: mapped for Adjust and Facebook Lead Ads, else checks the write key and stores nothing",
        description: "As rudder-server answers a GET: for an Adjust source the query is mapped into events (rudder-server forwards Adjust's GETs only); for Facebook Lead Ads the URL check (`hub.challenge`) is answered, as a self-hosted Meta app needs; for any other webhook source 200 with an empty body when the write key is good (a service checking its URL). 401/404 as for POST.",
        tags: ["Event calls"],
      },
    })
    .get("/pixel/v1/track", viaGet("/pixel/v1/track"), { query: t.Object({}, { additionalProperties: true }), detail: pixelDoc("track") })
    .get("/pixel/v1/page", viaGet("/pixel/v1/page"), { query: t.Object({}, { additionalProperties: true }), detail: pixelDoc("page") })
    .get("/robots.txt", robots, {
      detail: { summary: "robots.txt: crawlers are asked to stay away (rudder-server's own text)", tags: ["Operations"] },
    })
    // CORS preflights for the paths a web page calls; any other OPTIONS is a 404 without CORS
    // headers, so no page of another origin is ever invited to call the APIs.
    .options("/v1/*", preflight, { detail: { hide: true } })
    .options("/beacon/*", preflight, { detail: { hide: true } })
    .options("/sourceConfig", preflight, { detail: { hide: true } })
    .get(
      "/sourceConfig",
      ({ request, query, set }) => {
        allowOrigin(request, set as Set);
        try {
          const writeKey = query.writeKey || writeKeyFromAuthorization(request.headers.get("authorization"));
          return sourceConfig(authenticateSource(deps, writeKey), deps.config.snapshot());
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          set.status = err.status;
          set.headers["content-type"] = TEXT;
          return err.message;
        }
      },
      {
        query: t.Object({ writeKey: t.Optional(t.String()) }, { additionalProperties: true }),
        detail: {
          summary: "Source configuration for RudderStack's browser SDK",
          description:
            "Lets RudderStack's SDKs start against Sluice alone (set their configUrl to Sluice). `destinations` lists the source's enabled device-mode and hybrid destinations (config `connectionMode` \"device\" or \"hybrid\"; a RudderStack import sets \"device\" for a connection that was not processor-enabled), in the shape RudderStack's control plane serves, so the SDK loads their integrations; their config keeps only what a browser may see (the definition's `includeKeys` when the import kept it, never its `secretKeys` nor keys named like secrets). Destinations the server delivers (cloud mode) are not listed. Device-mode transformations are not offered (`shouldApplyDeviceModeTransformation` is false).",
          tags: ["Event calls"],
        },
      },
    );
}

function pixelDoc(type: "track" | "page") {
  return {
    summary: `${type} call as an image (a 1×1 GIF)`,
    description:
      `For an \`<img>\` tag: the call is the query string. \`writeKey\` authenticates; every other parameter is set at its dotted path (\`${type === "track" ? "event=Email%20Opened&" : "name=Home&"}anonymousId=a1&properties.plan=pro&context.page.url=…\`), values as strings, with \`channel: "web"\` and \`integrations: {All: true}\` unless given. ` +
      (type === "page" ? "An empty `name` becomes \"Unknown Page\". " : "An empty `event` is refused. ") +
      "The call then goes through the same validation, suppression, deduplication and commit as POST /v1/" + type + ". " +
      "The answer is always 200 and the GIF, whether the call was stored or refused (an image cannot show an error); a refusal is logged (`request` at info, with route, status, message and ip) and counted in `sluice_events_rejected_total`.",
    tags: ["Event calls"],
    responses: { 200: { description: "Always: a transparent 1×1 GIF", content: { "image/gif": { schema: { type: "string", format: "binary" } } } } },
  } as any;
}

/** Browsers ask before sending Authorization and JSON to another origin. */
function preflight({ request, set }: { [k: string]: any }) {
  allowOrigin(request, set);
  set.headers["access-control-allow-methods"] = "GET, POST, OPTIONS";
  set.headers["access-control-allow-headers"] = request.headers.get("access-control-request-headers") ?? "authorization, content-type, anonymousid";
  set.headers["access-control-max-age"] = "86400";
  set.status = 204;
  return "";
}

function missingWriteKey(): never {
  throw badRequest("writeKey query parameter is missing");
}
