/** Transformations API: CRUD with versions, and a test endpoint that runs code without saving it. */
import { Elysia, t } from "elysia";
import { IdParams } from "../control-plane/schemas";
import { withWorkspace } from "../control-plane/routes";
import {
  createTransformation,
  deleteTransformation,
  getTransformation,
  getTransformationVersion,
  listTransformationVersions,
  listTransformations,
  updateTransformation,
} from "../control-plane/transformations";
import { createLibrary, deleteLibrary, getLibrary, listLibraries, listLibraryVersions, updateLibrary } from "../control-plane/libraries";
import type { ServiceContext } from "../control-plane/context";
import type { SandboxPool } from "./sandbox";
import { Library, LibraryCreate, LibraryUpdate, TransformationCreate, TransformationTest, TransformationUpdate } from "./schemas";
import { testTransformation } from "./test-run";

// Kept beside the two routes that use them (the shared schemas file belongs to the CRUD routes).
const VersionParams = t.Object({ id: t.String(), versionId: t.String() });
const VersionSummary = t.Object({
  id: t.String({ description: "The versionId" }),
  createdAt: t.String({ format: "date-time" }),
  current: t.Boolean({ description: "True for the version that runs now" }),
  lines: t.Integer(),
  bytes: t.Integer(),
});
const Version = t.Object({
  id: t.String(),
  transformationId: t.String(),
  code: t.Union([t.String(), t.Null()], { description: "Null for a version a RudderStack workspace file named whose code is not here yet." }),
  libraries: t.Optional(t.Record(t.String(), t.String(), { description: "Import name → the library version this version runs; absent when it imports none." })),
  createdAt: t.String({ format: "date-time" }),
  current: t.Boolean(),
});
const LibraryVersion = t.Object({ id: t.String(), code: t.String(), createdAt: t.String({ format: "date-time" }), current: t.Boolean() });

export function transformationRoutes(ctx: ServiceContext, sandbox: SandboxPool) {
  const detail = (summary: string, description = "") => ({ tags: ["Transformations"], summary, description });
  return new Elysia({ name: "transformations" })
    .use(withWorkspace(ctx))
    .get("/v2/transformations", async ({ scope }) => ({ transformations: await listTransformations(scope) }), { detail: detail("List transformations") })
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
          "The code must define exactly one of `transformEvent(event, metadata)` or `transformBatch(events, metadata)`; anything else is refused with 400. It may import the workspace's libraries by import name: a save pins their current versions (an import no library has is a 400 naming it). Each save makes a new `versionId`. A destination runs at most one transformation: naming it here moves it from any other. `held` says why a transformation's destinations receive nothing (its code is not here: a RudderStack workspace file named it; supply the code and they flow).",
        ),
      },
    )
    .post("/v2/transformations/test", ({ scope, body }) => testTransformation(scope, sandbox, body), {
      body: TransformationTest,
      detail: detail(
        "Run code over events without saving it",
        "Answers `{output, logs, errors}`. The code may import libraries: those given in `libraries`, else the workspace's library of that import name. An output event whose JSON is over --transform-output-max-kb is an error in `errors`. While the sandbox's queue is full the answer is 503 with Retry-After.",
      ),
    })
    .get("/v2/transformations/:id", ({ scope, params }) => getTransformation(scope, params.id), { params: IdParams, detail: detail("Get a transformation") })
    .get("/v2/transformations/:id/versions", async ({ scope, params }) => ({ versions: await listTransformationVersions(scope, params.id) }), {
      params: IdParams,
      response: { 200: t.Object({ versions: t.Array(VersionSummary) }) },
      detail: detail("List a transformation's versions", "Every saved version, newest first, without its code; `current` marks the one that runs."),
    })
    .get("/v2/transformations/:id/versions/:versionId", ({ scope, params }) => getTransformationVersion(scope, params.id, params.versionId), {
      params: VersionParams,
      response: { 200: Version },
      detail: detail("Get one version's code", "Restoring an old version is saving its code again, which makes a new version."),
    })
    .patch("/v2/transformations/:id", ({ scope, params, body }) => updateTransformation(scope, params.id, body), {
      params: IdParams,
      body: TransformationUpdate,
      detail: detail("Update a transformation (new code makes a new version)"),
    })
    .delete(
      "/v2/transformations/:id",
      async ({ scope, params, set }) => {
        await deleteTransformation(scope, params.id);
        set.status = 204;
      },
      { params: IdParams, detail: detail("Delete a transformation (its destinations then run none)") },
    )
    .get("/v2/libraries", async ({ scope }) => ({ libraries: await listLibraries(scope) }), {
      response: { 200: t.Object({ libraries: t.Array(Library) }) },
      detail: { tags: ["Libraries"], summary: "List transformation libraries" },
    })
    .post(
      "/v2/libraries",
      ({ scope, body, set }) => {
        set.status = 201;
        return createLibrary(scope, body);
      },
      {
        body: LibraryCreate,
        response: { 201: Library },
        detail: {
          tags: ["Libraries"],
          summary: "Create a library",
          description:
            "A module transformations import by `importName` (`import { f } from \"myLib\"`), as RudderStack's libraries. Saving a transformation pins the current version of each library it imports; a library's code is run (and checked) with the transformations that import it.",
        },
      },
    )
    .get("/v2/libraries/:id", ({ scope, params }) => getLibrary(scope, params.id), { params: IdParams, response: { 200: Library }, detail: { tags: ["Libraries"], summary: "Get a library" } })
    .get("/v2/libraries/:id/versions", async ({ scope, params }) => ({ versions: await listLibraryVersions(scope, params.id) }), {
      params: IdParams,
      response: { 200: t.Object({ versions: t.Array(LibraryVersion) }) },
      detail: { tags: ["Libraries"], summary: "List a library's versions, newest first" },
    })
    .patch("/v2/libraries/:id", ({ scope, params, body }) => updateLibrary(scope, params.id, body), {
      params: IdParams,
      body: LibraryUpdate,
      response: { 200: Library },
      detail: {
        tags: ["Libraries"],
        summary: "Update a library (new code makes a new version)",
        description: "Transformations keep running the library version they pinned; saving a transformation again pins the new one.",
      },
    })
    .delete(
      "/v2/libraries/:id",
      async ({ scope, params, set }) => {
        await deleteLibrary(scope, params.id);
        set.status = 204;
      },
      {
        params: IdParams,
        detail: { tags: ["Libraries"], summary: "Delete a library", description: "Refused (409, naming them) while the current version of a transformation imports it." },
      },
    );
}
