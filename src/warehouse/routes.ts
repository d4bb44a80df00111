/** Warehouse sync API: start a load now, list a destination's loads. */
import { Elysia, t } from "elysia";
import { IdParams } from "../control-plane/schemas";
import { withWorkspace } from "../control-plane/routes";
import type { AuthContext } from "../control-plane/context";
import type { WarehouseLoads } from "./loads";

const LoadStatus = t.Union([t.Literal("queued"), t.Literal("running"), t.Literal("succeeded"), t.Literal("failed")]);
const DateOrNull = t.Union([t.String({ format: "date-time" }), t.Null()]);

export const SyncStarted = t.Object({ id: t.String({ description: "The load's id; follow it in GET /v2/destinations/{id}/syncs" }) });

export const SyncList = t.Object({
  syncs: t.Array(
    t.Object({
      id: t.String(),
      destinationId: t.String(),
      status: LoadStatus,
      trigger: t.String({ description: "api, schedule, retry (after a failure the database may recover from) or more (the previous load left rows behind)" }),
      attempt: t.Integer(),
      createdAt: t.String({ format: "date-time" }),
      startedAt: DateOrNull,
      finishedAt: DateOrNull,
      rows: t.Record(t.String(), t.Integer(), { description: "Rows written per table" }),
      discards: t.Integer({ description: "Values that went to rudder_discards" }),
      error: t.Union([t.String(), t.Null()]),
    }),
  ),
});

const SyncListQuery = t.Object(
  { limit: t.Optional(t.String({ pattern: "^(100|[1-9][0-9]?)$", errorMessage: "expected a whole number from 1 to 100", description: "How many loads, newest first (default 50)." })) },
  { additionalProperties: false },
);

export function warehouseRoutes(ctx: AuthContext, loads: WarehouseLoads) {
  const detail = (summary: string, description = "") => ({ tags: ["Warehouse"], summary, description });
  return new Elysia({ name: "warehouse" })
    .use(withWorkspace(ctx))
    .post(
      "/v2/destinations/:id/sync",
      async ({ scope, params, set }) => {
        const started = await loads.requestSync(scope.workspaceId, params.id);
        set.status = 202;
        return started;
      },
      {
        params: IdParams,
        response: { 202: SyncStarted },
        detail: detail(
          "Load the warehouse destination's staged events now",
          "Answers 202 with the load's id. A load already queued is started now instead of queuing another. 400 for a destination that is not a warehouse.",
        ),
      },
    )
    .get("/v2/destinations/:id/syncs", async ({ scope, params, query }) => ({ syncs: await loads.listSyncs(scope.workspaceId, params.id, query.limit ? Number(query.limit) : undefined) }), {
      params: IdParams,
      query: SyncListQuery,
      response: SyncList,
      detail: detail("The warehouse destination's loads, newest first", "Each load: status, when it started and finished, rows written per table, and the error of a failed one."),
    });
}
