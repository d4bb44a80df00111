/** Test API routes (docs/api.md, Test API): parse, call one service function, map errors. */
import { type DocumentDecoration, Elysia, type TSchema } from "elysia";
import { authenticateRequest } from "../control-plane/auth";
import type { Scoped } from "../control-plane/context";
import type { TestApiContext } from "./context";
import { parseWith } from "../lib/schema";
import { DestinationIdParams, ForceQuery, SourceIdParams, TestDestinationBody, TestSourceBody } from "./schemas";
import { DestinationNotTestable, type TestApiDeps, testDestination, testSource } from "./service";

const STAGES =
  "`stage` holds booleans `user_transform`, `dest_transform`, `send_to_destination`: " +
  "when `stage` is omitted all three run; in a given `stage` a missing key counts as false. " +
  "Each `data` entry (one per message after the user transformation: none if it dropped the message, several if it fanned out) holds the fields of the stages that ran: " +
  "`user_transformed_payload` (the transformed event, or `{error}`; without a connected transformation `{\"error\":\"Transformation VersionID not found\"}` and the message goes on as sent), " +
  "`dest_transformed_payload` (the requests `{version, type, method, endpoint, headers, params, body: {JSON, JSON_ARRAY, XML, FORM}, files}`, or `{error}`), " +
  "`destination_response` and `destination_response_status` (the requests are really sent; each answer as parsed JSON or text, and its HTTP status). " +
  "`send_to_destination` alone still sends the destination-format request. A failing transformation aborts the later stages with `{\"error\":\"aborted: user_transform stage failed\"}`. " +
  "Nothing is stored, queued, shown in live events or counted in stats. " +
  "Authenticate with HTTP Basic `<account e-mail>:<personal access token>`; credentials are checked before the body is read, and a body over 4 MB is refused with 413.";

const ERRORS =
  "Statuses: 200 with the result; 400 when the request cannot be tested: `{\"message\":\"message type missing or invalid\"}`, `{\"message\":\"message type is unsupported\"}`, another invalid field (`{message}` naming it)";

/** Documents a body the route checks itself (schemas.ts says why Elysia does not); a TypeBox schema is JSON Schema. */
const jsonBody = (schema: TSchema): DocumentDecoration["requestBody"] => ({ required: true, content: { "application/json": { schema: schema as object } } });

export function testApiRoutes(ctx: TestApiContext, deps: TestApiDeps) {
  const detail = (summary: string, description: string, body: TSchema): DocumentDecoration => ({ tags: ["Test API"], summary, description, requestBody: jsonBody(body) });
  // Basic only, as RudderStack's Test API. Local, not scoped: a scoped derive would also run for routes mounted after this plugin.
  return new Elysia({ name: "test-api" })
    .derive(async ({ request }) => {
      const principal = await authenticateRequest(ctx, request, "basic");
      const scope: Scoped<TestApiContext> = { ...ctx, workspaceId: principal.workspaceId };
      return { scope };
    })
    .post(
      "/v0/testDestination/:destination_id",
      async ({ scope, params, query, body, set }) => {
        try {
          const input = parseWith(TestDestinationBody, body);
          return await testDestination(scope, deps, { destinationId: params.destination_id, body: input, force: query.force === true });
        } catch (err) {
          if (!(err instanceof DestinationNotTestable)) throw err;
          set.status = 400;
          return err.entry;
        }
      },
      {
        params: DestinationIdParams,
        query: ForceQuery,
        detail: detail(
          "Test a destination",
          `Body \`{message, stage?, destinationConfig?}\`. Runs the message through the destination's stages and answers \`{destinationId, destination, destinationName, data}\`. No source needs to be connected. ` +
            `\`destinationConfig\` replaces the stored configuration for this request; its keys must be among the definition's \`defaultConfig\` (GET /destination-definitions). ${STAGES}\n\n` +
            `${ERRORS}, a \`destinationConfig\` key outside \`defaultConfig\` (named); ` +
            "a disabled destination without `force=true`: `{destinationId, destinationName, error: \"Destination with id <id> is disabled\"}`; a kind the server delivers itself (queues, storage, warehouses): the same form, saying the Test API does not support it; a destination in device mode: the same form, saying so. " +
            "A message the destination's routing keeps from it (consent, the event allow/deny lists, `integrations`, a message type it does not take) is not sent: the answer carries `filtered: <reason>` and an empty `data`. " +
            "401 for missing or wrong credentials; 404 for an id unknown in the token's workspace.",
          TestDestinationBody,
        ),
      },
    )
    .post(
      "/v0/testSource/:source_id",
      async ({ scope, params, query, body }) => testSource(scope, deps, { sourceId: params.source_id, body: parseWith(TestSourceBody, body), force: query.force === true }),
      {
        params: SourceIdParams,
        query: ForceQuery,
        detail: detail(
          "Test every destination of a source",
          "Body `{message, stage?}`. Runs the destination test for every destination connected to the source and answers an array of results, in connection order. " +
            "A disabled destination (unless `force=true`) or a kind the server delivers itself appears as `{destinationId, destinationName, error}`. " +
            `\`force=true\` also tests a disabled source. ${STAGES}\n\n` +
            `${ERRORS}; a disabled source without \`force=true\`: \`{"message":"Source with <source_id> is disabled"}\`; a source with no connected destination. ` +
            "401 for missing or wrong credentials; 404 for an id unknown in the token's workspace.",
          TestSourceBody,
        ),
      },
    );
}
