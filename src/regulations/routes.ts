/** Data Regulation API (docs/api.md). Routes only parse, call, map. */
import { Elysia } from "elysia";
import { withWorkspace } from "../control-plane/routes";
import type { RegulationsContext } from "./context";
import { type RegulationDeps, cancelRegulation, createRegulations, listRegulations } from "./regulations";
import { RegulationCreate, RegulationIdParams, RegulationListQuery, RegulationPage } from "./schemas";

const AUTH = "Authenticate with `Authorization: Bearer <personal access token>`; the token's workspace is the scope.";

export function regulationRoutes(ctx: RegulationsContext, deps: RegulationDeps) {
  const detail = (summary: string, description: string) => ({ tags: ["Regulations"], summary, description: `${description}\n\n${AUTH}` });
  return new Elysia({ name: "regulations" })
    .use(withWorkspace(ctx))
    .post(
      "/v2/regulations",
      async ({ scope, body, set }) => {
        await createRegulations(scope, deps, body);
        set.status = 201;
        set.headers["content-type"] = "text/plain; charset=utf-8";
        return "Created";
      },
      {
        detail: {
          ...detail(
            "Create a regulation",
            "One record per listed user. `suppress` drops the users' events at intake (from `sourceIds`, or every source); `suppress_with_delete` also removes their queued and retained events for `destinationIds` and asks each destination to delete them. Answers 201 with the text `Created`; a broken rule gives 400 naming it.",
          ),
          requestBody: { required: true, content: { "application/json": { schema: RegulationCreate } } },
          responses: { 201: { description: "Created", content: { "text/plain": { schema: { type: "string", example: "Created" } } } } },
        },
      },
    )
    .get("/v2/regulations", ({ scope, query }) => listRegulations(scope, deps, query.after_cursor), {
      query: RegulationListQuery,
      response: RegulationPage,
      detail: detail("List regulations", "Oldest first, 100 a page; follow `paging.next` (absent on the last page). `deletion` shows each destination's deletion job."),
    })
    .delete(
      "/v2/regulations/:regulation_id",
      async ({ scope, params, set }) => {
        await cancelRegulation(scope, deps, params.regulation_id);
        set.status = 204;
      },
      { params: RegulationIdParams, detail: detail("Cancel a regulation", "Answers 204; the record stays listed with `canceled: true` and suppression lifts at once. Cancelling again is a no-op.") },
    );
}
