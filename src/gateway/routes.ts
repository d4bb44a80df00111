/**
 * The data plane's HTTP surface (spec §4.1) plus what real SDKs need beside it:
 * the browser SDK's beacon and sourceConfig calls, and CORS. Bodies are read raw
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
import { readJsonBody, writeKeyFromAuthorization } from "./read-body";
import { type IntakeDeps, acceptCalls, authenticateSource, parseCalls } from "./intake";
import { BatchCall, CALL_TYPES, CallSchemas, type CallType, MAX_BATCH_BYTES, MAX_CALL_BYTES } from "./schemas";

type Set = { status?: number | string; headers: Record<string, string | number> };
type PeerAddress = { requestIP(r: Request): { address: string } | null } | null | undefined;
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
export function intakeHandlers(deps: IntakeDeps): Record<string, IntakeHandler> {
  const m = deps.metrics;
  const storageRejected = m.register(
    new Counter("sluice_events_storage_rejected_total", "Event calls refused with 503 because the database could not be written (disk full, I/O error), by route."),
  );
  const storage = deps.events.storage;
  m.register(new Gauge("sluice_storage_failing", "1 while writes to the database fail (disk full, I/O error; /health names the cause), else 0.", () => (storage.problem ? 1 : 0)));
  const counters = new Map<string, { inc(by?: number): void }>();
  const count = (route: string, status: number) => {
    const k = `${route} ${status}`;
    let c = counters.get(k);
    if (!c) counters.set(k, (c = m.httpRequests.bind({ route, method: "POST", status: String(status) })));
    c.inc();
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
        const { value, bytes } = await readJsonBody(request, path === "batch" ? MAX_BATCH_BYTES : MAX_CALL_BYTES);
        const calls = parseCalls(source, path, value, request.headers.get("anonymousid") ?? undefined, bytes);
        await acceptCalls(deps, source, calls, {
          receivedAt,
          ip: clientIp(request, server),
          batchSentAt: path === "batch" && typeof value.sentAt === "string" ? value.sentAt : undefined,
          batchContext: path === "batch" && value.context && typeof value.context === "object" ? (value.context as Record<string, unknown>) : undefined,
        });
      } catch (err) {
        if (err instanceof AppError) {
          status = err.status;
          body = err.message;
          retryAfter = err.retryAfterSeconds;
          m.eventsRejected.inc({ status: String(status) });
          // Only storage refusals carry a Retry-After here (lib/storage-health.ts).
          if (retryAfter !== undefined) storageRejected.inc({ route });
        } else {
          deps.log.error("intake failed", { err, route });
          status = 500;
          body = "internal error";
        }
        // Refusals are rare and worth a line; accepted calls are counted, not logged. While the
        // disk is full every call is refused: those are counted, and intake logs when it starts.
        const level = retryAfter === undefined ? "info" : "debug";
        if (deps.log.enabled(level)) deps.log[level]("request", { method: "POST", route, status, message: body });
      }
      if (status === 200) ok.inc();
      else count(route, status);
      latency.observe((performance.now() - started) / 1000);
      return intakeResponse(origin, status, body, retryAfter);
    };
  };

  const handlers: Record<string, IntakeHandler> = {};
  for (const [route, path] of EVENT_PATHS) handlers[route] = intake(path, route, "header");
  handlers["/beacon/v1/batch"] = intake("batch", "/beacon/v1/batch", "query");
  return handlers;
}

/** The handlers as routes of Bun.serve (Elysia passes these to the server it starts). */
export function serverRoutes(handlers: Record<string, IntakeHandler>) {
  return Object.fromEntries(Object.entries(handlers).map(([path, h]) => [path, { POST: (req: Request, server: PeerAddress) => h(req, server) }]));
}

export function gatewayRoutes(deps: IntakeDeps, handlers: Record<string, IntakeHandler>) {
  const doc = (summary: string, schema: unknown, description = "") => ({
    summary,
    description:
      description +
      " Authenticate with HTTP Basic: the source write key as user name, an empty password. Answers 200 `OK` only after the events are committed to disk. " +
      "Errors are text/plain: 400 for a missing or malformed Authorization header, bad JSON or gzip, a body over the limit, or a field of the wrong type (the message names it); 401 for an unknown write key; 404 for a disabled source; 503 with `Retry-After` (seconds) when the database cannot be written (a full disk): nothing of the call was stored, send it again. " +
      "`Content-Encoding: gzip` is honoured whatever the Content-Type says. A messageId already accepted from the same source is acknowledged but not stored again.",
    tags: ["Event calls"],
    requestBody: { required: true, content: { "application/json": { schema } } },
    responses: { 200: { description: "Stored", content: { "text/plain": { schema: { type: "string", example: "OK" } } } } },
  });

  // Typed loosely: Elysia's route-tree types do not survive a loop of registrations.
  let app: Elysia<any, any, any, any, any, any, any> = new Elysia({ name: "gateway" });
  const via = (route: string) => (ctx: { [k: string]: any }) => handlers[route]!(ctx.request, ctx.server);
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
          const source = authenticateSource(deps, writeKey);
          return {
            source: { id: source.id, name: source.name, workspaceId: source.workspaceId, enabled: source.enabled, config: {}, destinations: [] },
          };
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
          description: "Lets the browser SDK start against Sluice alone (set its configUrl to Sluice). All destinations are delivered by the server (cloud mode), so `destinations` is empty.",
          tags: ["Event calls"],
        },
      },
    );
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
