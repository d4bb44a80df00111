/** Transformations API: CRUD with versions, and a test endpoint that runs code without saving it. */
import { Elysia } from "elysia";
import { IdParams } from "../control-plane/schemas";
import { withWorkspace } from "../control-plane/routes";
import {
  createTransformation,
  deleteTransformation,
  getTransformation,
  listTransformations,
  updateTransformation,
} from "../control-plane/transformations";
import type { ServiceContext } from "../lib/context";
import type { SandboxPool } from "./sandbox";
import { TransformationCreate, TransformationTest, TransformationUpdate } from "./schemas";
import { testTransformation } from "./test-run";

export function transformationRoutes(ctx: ServiceContext, sandbox: SandboxPool) {
  const detail = (summary: string, description = "") => ({ tags: ["Transformations"], summary, description });
  return new Elysia({ name: "transformations" })
    .use(withWorkspace(ctx))
    .get("/v2/transformations", ({ scope }) => ({ transformations: listTransformations(scope) }), { detail: detail("List transformations") })
    .post(
      "/v2/transformations",
      ({ scope, body, set }) => {
        set.status = 201;
        return createTransformation(scope, body);
      },
      {
        body: TransformationCreate,
        detail: detail(
          "Create a transformation",
          "The code must define exactly one of `transformEvent(event, metadata)` or `transformBatch(events, metadata)`; anything else is refused with 400. Each save makes a new `versionId`. A destination runs at most one transformation: naming it here moves it from any other.",
        ),
      },
    )
    .post("/v2/transformations/test", ({ body }) => testTransformation(sandbox, body), {
      body: TransformationTest,
      detail: detail("Run code over events without saving it", "Answers `{output, logs, errors}`."),
    })
    .get("/v2/transformations/:id", ({ scope, params }) => getTransformation(scope, params.id), { params: IdParams, detail: detail("Get a transformation") })
    .patch("/v2/transformations/:id", ({ scope, params, body }) => updateTransformation(scope, params.id, body), {
      params: IdParams,
      body: TransformationUpdate,
      detail: detail("Update a transformation (new code makes a new version)"),
    })
    .delete(
      "/v2/transformations/:id",
      ({ scope, params, set }) => {
        deleteTransformation(scope, params.id);
        set.status = 204;
      },
      { params: IdParams, detail: detail("Delete a transformation (its destinations then run none)") },
    );
}
