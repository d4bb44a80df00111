/** The event catalog API (docs/catalog.md). Routes only parse, call, map. */
import { Elysia, t } from "elysia";
import { withWorkspace } from "../control-plane/routes";
import { CatalogEvents, CatalogListQuery, CatalogModelDetail, CatalogModelParams, CatalogModelQuery } from "./schemas";
import { type CatalogContext, draftTrackingPlan, getCatalogEvent, listCatalogEvents } from "./service";

const AUTH = "Authenticate with `Authorization: Bearer <personal access token>` (or the dashboard's session); the token's workspace is the scope, and a source of another workspace is 404.";
const LAG = "Counts are saved every --catalog-flush-seconds (5 by default), so the newest events show after that; property statistics may take up to six such intervals on a busy catalog.";

export function catalogRoutes(ctx: CatalogContext) {
  const detail = (summary: string, description: string) => ({ tags: ["Catalog"], summary, description: `${description}\n\n${LAG}\n\n${AUTH}` });
  return new Elysia({ name: "catalog" })
    .use(withWorkspace(ctx))
    .get("/v2/catalog/events", ({ scope, query }) => listCatalogEvents(scope, query), {
      query: CatalogListQuery,
      response: CatalogEvents,
      detail: detail(
        "A source's event models",
        "Every (type, event name) the source has sent, discovered from its traffic: how many events, first and last seen, events per day for the last 30 days, and each property path with its JSON types, how often it is present and a few example values. At most --catalog-max-models models a source and --catalog-max-paths paths a model are kept; what is beyond is counted in `overflow` and `overflowPaths`.",
      ),
    })
    .get("/v2/catalog/tracking-plan-draft", ({ scope, query }) => draftTrackingPlan(scope, query.sourceId), {
      query: t.Object({ sourceId: t.String({ minLength: 1, description: "The source whose traffic the plan is drafted from." }) }, { additionalProperties: false }),
      detail: detail(
        "Draft a tracking plan from traffic",
        "One call turns a source's observed traffic into a plan JSON, as POST /v2/tracking-plans takes it (not stored): one planned event per track name and per other type seen (alias aside), each with a draft-07 schema of the observed types, the properties present in at least 99% of the sampled events as required, and `additionalProperties: false`.",
      ),
    })
    .get("/v2/catalog/events/:type", ({ scope, params, query }) => getCatalogEvent(scope, params.type, query), {
      params: CatalogModelParams,
      query: CatalogModelQuery,
      response: CatalogModelDetail,
      detail: detail(
        "One event model, with a draft JSON Schema",
        "The model of `type` (and, for a track, `event`) as GET /v2/catalog/events lists it, plus `jsonSchema`: a draft of its tracking-plan rules from what was observed. 404 when the source sent no such events.",
      ),
    });
}
