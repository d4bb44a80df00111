/** Control-plane API: sources, destinations, connections and destination definitions. Routes only parse, call, map. */
import { Elysia, t } from "elysia";
import { listDefinitions, publicDefinition } from "../destinations/registry";
import type { AuthContext, Scoped, ServiceContext } from "./context";
import { authenticateRequest } from "./auth";
import { createConnection, deleteConnection, listConnections } from "./connections";
import { createDestination, deleteDestination, getDestination, listDestinations, updateDestination } from "./destinations";
import { Connection, Destination, DestinationCreate, DestinationUpdate, IdParams, SampleRequest, SampleRun, Source, SourceCreate, SourceType, SourceUpdate, Token, TokenCreate, TokenCreated, WorkspaceCheck } from "./schemas";
import { createSource, deleteSource, getSource, listSourceTypes, listSources, sampleSource, updateSource } from "./sources";
import type { SamplePayload } from "../sources/types";
import { type Principal, createToken, listTokens, revokeToken } from "./tokens";
import { checkWorkspaceBody } from "./workspace-check";

const AUTH_NOTE =
  "Authenticate with `Authorization: Bearer <access token>` or HTTP Basic `<email>:<access token>` (the dashboard's pages use their session cookie, and must send `Origin` on changes); the token's workspace is the scope. " +
  "Credentials are checked before the body is read, and a body over 1 MB is refused with 413. After 10 failed token checks or sign-ins from one address within a minute, further failures answer 429 with `Retry-After` (a right token is still served).";

/** Adds `scope`: the feature's context scoped to the caller's workspace (401 before anything else). */
export function withWorkspace<C extends AuthContext>(ctx: C) {
  return new Elysia({ name: "workspace-auth" }).derive({ as: "scoped" }, async ({ request }) => {
    const principal: Principal = await authenticateRequest(ctx, request);
    const scope: Scoped<C> = { ...ctx, workspaceId: principal.workspaceId };
    return { principal, scope };
  });
}

export function controlPlaneRoutes(ctx: ServiceContext) {
  const tag = (name: string, summary: string) => ({ tags: [name], summary, description: AUTH_NOTE });
  return new Elysia({ name: "control-plane" })
    .get("/destination-definitions", () => listDefinitions().map(publicDefinition), {
      detail: {
        tags: ["Definitions"],
        summary: "Destination definitions",
        description: "Every destination kind with its `defaultConfig` (the keys usable in a destination's config and in the Test API's destinationConfig), supported message types, and `fields`: each typed config key with `type`, `required`, `secret` and `options`, for building forms (a key is secret when its name ends in apiKey, apiKeyValue, secret, token, password, passcode or writeKey, not `public…`). No authentication.",
      },
    })
    .get("/source-types", () => listSourceTypes(), {
      response: t.Array(SourceType),
      detail: {
        tags: ["Definitions"],
        summary: "Webhook source types",
        description:
          "Every webhook source type Sluice maps, as rudder-transformer maps it: its RudderStack name (the `type` of POST /v2/sources), the setup in the service, and a documented sample payload. Requests to /v1/webhook with such a source's write key become that service's events. No authentication.",
      },
    })
    .use(withWorkspace(ctx))
    .get("/v2/sources", async ({ scope }) => ({ sources: await listSources(scope) }), { detail: tag("Sources", "List sources"), response: t.Object({ sources: t.Array(Source) }) })
    .post("/v2/sources", ({ scope, body, set }) => { set.status = 201; return createSource(scope, body); }, { body: SourceCreate, detail: tag("Sources", "Create a source"), response: { 201: Source } })
    .get("/v2/sources/:id", ({ scope, params }) => getSource(scope, params.id), { params: IdParams, detail: tag("Sources", "Get a source") })
    .patch("/v2/sources/:id", ({ scope, params, body }) => updateSource(scope, params.id, body), { params: IdParams, body: SourceUpdate, detail: tag("Sources", "Update a source") })
    .post("/v2/sources/:id/sample", ({ scope, params, body }) => sampleSource(scope, params.id, body?.payload as SamplePayload | undefined), {
      params: IdParams,
      body: t.Optional(SampleRequest),
      response: SampleRun,
      detail: {
        ...tag("Sources", "Map a sample webhook payload (dry run)"),
        description:
          "Runs a webhook source's mapping on its type's documented sample (GET /source-types), or on `payload` when given, and answers the request as the mapping saw it, the events it became, and the answer or refusal /v1/webhook would give. Nothing is stored or delivered, and Shopify's identity state is neither read nor written. 400 for a source that is not a webhook source. " +
          AUTH_NOTE,
      },
    })
    .delete("/v2/sources/:id", async ({ scope, params, set }) => { await deleteSource(scope, params.id); set.status = 204; }, { params: IdParams, detail: tag("Sources", "Delete a source and its connections") })
    .get("/v2/destinations", async ({ scope }) => ({ destinations: await listDestinations(scope) }), { detail: tag("Destinations", "List destinations"), response: t.Object({ destinations: t.Array(Destination) }) })
    .post("/v2/destinations", ({ scope, body, set }) => { set.status = 201; return createDestination(scope, body); }, { body: DestinationCreate, detail: tag("Destinations", "Create a destination") })
    .get("/v2/destinations/:id", ({ scope, params }) => getDestination(scope, params.id), { params: IdParams, detail: tag("Destinations", "Get a destination") })
    .patch("/v2/destinations/:id", ({ scope, params, body }) => updateDestination(scope, params.id, body), { params: IdParams, body: DestinationUpdate, detail: tag("Destinations", "Update a destination (config, enabled, connected sources)") })
    .delete("/v2/destinations/:id", async ({ scope, params, set }) => { await deleteDestination(scope, params.id); set.status = 204; }, { params: IdParams, detail: tag("Destinations", "Delete a destination") })
    .post("/v2/workspace-check", ({ body }) => checkWorkspaceBody(body), {
      body: t.Unknown(),
      response: WorkspaceCheck,
      detail: {
        ...tag("Workspace", "Check a workspace file before importing it"),
        description:
          "The body is a workspace file as JSON: Sluice's own shape or RudderStack's workspaceConfig.json. Answers, for each source, destination and transformation, what Sluice will do with it (`runs`, `device`, `held`, `error`) and why, the same as `sluice check-config FILE`; nothing is stored. A transformation's code is found only in the body (a `code` field), not in files beside it. 400 for a body that cannot be read as a workspace. " +
          AUTH_NOTE,
      },
    })
    .get("/v2/connections", async ({ scope }) => ({ connections: await listConnections(scope) }), { detail: tag("Connections", "List connections") })
    .post("/v2/connections", ({ scope, body, set }) => { set.status = 201; return createConnection(scope, body); }, { body: Connection, detail: tag("Connections", "Connect a source to a destination (idempotent)") })
    .delete("/v2/connections", async ({ scope, body, set }) => { await deleteConnection(scope, body); set.status = 204; }, { body: Connection, detail: tag("Connections", "Disconnect a source from a destination") })
    .get("/v2/tokens", async ({ scope, principal }) => ({ tokens: await listTokens(scope, principal) }), { detail: tag("Tokens", "List the caller's personal access tokens (never their secrets)"), response: t.Object({ tokens: t.Array(Token) }) })
    .post("/v2/tokens", ({ scope, principal, body, set }) => { set.status = 201; return createToken(scope, principal, body); }, {
      body: TokenCreate,
      detail: tag("Tokens", "Generate a personal access token for the caller's account; `token` appears in this answer only"),
      response: { 201: TokenCreated },
    })
    .delete("/v2/tokens/:id", async ({ scope, principal, params, set }) => { await revokeToken(scope, principal, params.id); set.status = 204; }, {
      params: IdParams,
      detail: tag("Tokens", "Revoke a token: it stops working at once, and dashboard sessions opened with it end"),
    });
}
