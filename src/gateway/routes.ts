/**
 * The data plane's HTTP surface (spec §4.1) plus what real SDKs need beside it:
 * the browser SDK's beacon and sourceConfig calls. Bodies are read raw (parse:
 * "none") so size limits and gzip are enforced before anything is buffered whole.
 * Errors are short text/plain messages, as RudderStack's gateway answers.
 */
import { Elysia, t } from "elysia";
import { AppError } from "../lib/errors";
import { readJsonBody, writeKeyFromAuthorization } from "./read-body";
import { type IntakeDeps, acceptCalls, authenticateSource, parseCalls } from "./intake";
import { BatchCall, CALL_TYPES, CallSchemas, type CallType, MAX_BATCH_BYTES, MAX_CALL_BYTES } from "./schemas";
import { badRequest } from "../lib/errors";

function textError(err: unknown, deps: IntakeDeps): Response {
  if (err instanceof AppError) {
    deps.metrics.eventsRejected.inc({ status: String(err.status) });
    // The spec answers every oversized event call with 400.
    const status = err.code === "PAYLOAD_TOO_LARGE" ? 400 : err.status;
    return new Response(err.message, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
  }
  deps.log.error("intake failed", { err });
  return new Response("internal error", { status: 500, headers: { "content-type": "text/plain; charset=utf-8" } });
}

function clientIp(request: Request, server: { requestIP(r: Request): { address: string } | null } | null): string {
  const xff = request.headers.get("x-forwarded-for");
  if (xff) {
    const first = xff.split(",")[0].trim();
    if (first) return first;
  }
  return server?.requestIP(request)?.address ?? "";
}

const OK = () => new Response("OK", { headers: { "content-type": "text/plain; charset=utf-8" } });

export function gatewayRoutes(deps: IntakeDeps) {
  const intake = (path: CallType | "batch", writeKeyFrom: "header" | "query") =>
    async ({ request, server, query }: { request: Request; server: any; query: Record<string, string | undefined> }) => {
      try {
        const writeKey =
          writeKeyFrom === "header"
            ? writeKeyFromAuthorization(request.headers.get("authorization"))
            : query.writeKey || (() => { throw badRequest("writeKey query parameter is missing"); })();
        const source = authenticateSource(deps, writeKey);
        const receivedAt = Date.now();
        const { value } = await readJsonBody(request, path === "batch" ? MAX_BATCH_BYTES : MAX_CALL_BYTES);
        const calls = parseCalls(source, path, value, request.headers.get("anonymousid") ?? undefined);
        await acceptCalls(deps, source, calls, {
          receivedAt,
          ip: clientIp(request, server),
          batchSentAt: path === "batch" && typeof value.sentAt === "string" ? value.sentAt : undefined,
          batchContext: path === "batch" && value.context && typeof value.context === "object" ? (value.context as Record<string, unknown>) : undefined,
        });
        return OK();
      } catch (err) {
        return textError(err, deps);
      }
    };

  const doc = (summary: string, schema: unknown, description = "") => ({
    summary,
    description:
      description +
      " Authenticate with HTTP Basic: the source write key as user name, an empty password. Answers 200 `OK` only after the events are committed to disk. " +
      "Errors are text/plain: 400 for a missing or malformed Authorization header, bad JSON or gzip, a body over the limit, or a field of the wrong type (the message names it); 401 for an unknown write key; 404 for a disabled source. " +
      "`Content-Encoding: gzip` is honoured whatever the Content-Type says. A messageId already accepted from the same source is acknowledged but not stored again.",
    tags: ["Event calls"],
    requestBody: { required: true, content: { "application/json": { schema } } },
    responses: { 200: { description: "Stored", content: { "text/plain": { schema: { type: "string", example: "OK" } } } } },
  });

  // Typed loosely: Elysia's route-tree types do not survive a loop of registrations.
  let app: Elysia<any, any, any, any, any, any, any> = new Elysia({ name: "gateway" });
  for (const call of CALL_TYPES) {
    app = app.post(`/v1/${call}`, intake(call, "header") as any, {
      parse: "none",
      detail: doc(`${call} call`, CallSchemas[call], `Limit: 32 KB (decoded).`) as any,
    });
  }
  return app
    .post("/v1/batch", intake("batch", "header") as any, {
      parse: "none",
      detail: doc("batch call", BatchCall, "Several calls in one request. Limits: 4 MB per request, 32 KB per entry. One bad entry rejects the whole request (the message names its index).") as any,
    })
    .post("/beacon/v1/batch", intake("batch", "query") as any, {
      parse: "none",
      query: t.Object({ writeKey: t.Optional(t.String()) }),
      detail: {
        summary: "batch call sent with navigator.sendBeacon",
        description: "For RudderStack's browser SDK: the write key comes as the `writeKey` query parameter and the body as text/plain JSON; no Authorization header.",
        tags: ["Event calls"],
      },
    })
    .get(
      "/sourceConfig",
      ({ request, query }) => {
        try {
          const writeKey = query.writeKey || writeKeyFromAuthorization(request.headers.get("authorization"));
          const source = authenticateSource(deps, writeKey);
          return {
            source: { id: source.id, name: source.name, workspaceId: source.workspaceId, enabled: source.enabled, config: {}, destinations: [] },
          };
        } catch (err) {
          return textError(err, deps);
        }
      },
      {
        query: t.Object({ writeKey: t.Optional(t.String()) }),
        detail: {
          summary: "Source configuration for RudderStack's browser SDK",
          description: "Lets the browser SDK start against Sluice alone (set its configUrl to Sluice). All destinations are delivered by the server (cloud mode), so `destinations` is empty.",
          tags: ["Event calls"],
        },
      },
    );
}
