/** Tracking plans API (docs/tracking-plans.md). Routes only parse, call, map. */
import { Elysia, t } from "elysia";
import { withWorkspace } from "../control-plane/routes";
import type { ServiceContext } from "../control-plane/context";
import { IdParams } from "../control-plane/schemas";
import { type TrackingPlanDeps, previewTrackingPlan, deleteTrackingPlan, getSourceTrackingPlan, getTrackingPlan, listPlanVersions, listTrackingPlans, putTrackingPlan, setSourceTrackingPlan } from "./service";

const AUTH = "Authenticate with `Authorization: Bearer <personal access token>`; the token's workspace is the scope.";
const detail = (summary: string, description: string) => ({ tags: ["Tracking plans"], summary, description: `${description}\n\n${AUTH}` });

const Problem = t.Object({ event: t.String(), message: t.String() });
const PlanVersion = t.Object({
  id: t.String(),
  name: t.String(),
  version: t.Number(),
  currentVersion: t.Number(),
  problems: t.Array(Problem, { description: "Schemas Ajv cannot compile (only in plans from a workspace file: the API refuses them). Events they govern pass unchecked, as in RudderStack." }),
  createdAt: t.String({ format: "date-time" }),
  plan: t.Record(t.String(), t.Unknown(), { description: "The plan as given." }),
});
const VersionQuery = t.Object({ version: t.Optional(t.Numeric({ minimum: 1, description: "A version; the current one when omitted." })) });

export function trackingPlanRoutes(ctx: ServiceContext, deps: TrackingPlanDeps) {
  return new Elysia({ name: "tracking-plans" })
    .use(withWorkspace(ctx))
    .post(
      "/v2/tracking-plans",
      async ({ scope, body, set }) => {
        const out = await putTrackingPlan(scope, deps, body);
        set.status = 201;
        return out;
      },
      {
        body: t.Record(t.String(), t.Unknown()),
        response: { 201: PlanVersion },
        detail: detail(
          "Add a tracking plan, or a version of one",
          "The body is a plan as RudderStack exports it: `{id?, name, version, events: [{id, name, eventType, description, rules}]}` with a JSON Schema in each `rules`, or the older `{id, name, version, rules: {events: [...], identify: {...}, ...}}`. Its `id` is kept (one is made when absent); the same id with another `version` adds a version, which becomes current when it is the highest. The same version with the same content again is a no-op (200 content, 201 status); with other content, 409. A schema Ajv cannot compile with RudderStack's options (strictRequired included) is refused with 400 naming the event and Ajv's message.",
        ),
      },
    )
    .get("/v2/tracking-plans", async ({ scope }) => ({ trackingPlans: await listTrackingPlans(scope, deps) }), {
      detail: detail("List tracking plans", "Each plan with its current version."),
    })
    .get("/v2/tracking-plans/:id", ({ scope, params, query }) => getTrackingPlan(scope, deps, params.id, query.version), {
      params: IdParams,
      query: VersionQuery,
      response: PlanVersion,
      detail: detail("Get a tracking plan", "The current version, or `?version=`; `plan` is the JSON as given."),
    })
    .get("/v2/tracking-plans/:id/versions", async ({ scope, params }) => ({ versions: await listPlanVersions(scope, deps, params.id) }), {
      params: IdParams,
      detail: detail("A tracking plan's versions", "Newest first, each with the schemas that do not compile."),
    })
    .delete(
      "/v2/tracking-plans/:id",
      async ({ scope, params, set }) => {
        await deleteTrackingPlan(scope, deps, params.id);
        set.status = 204;
      },
      { params: IdParams, detail: detail("Delete a tracking plan", "Every version. Sources that name it then drop the events it would check, as RudderStack does for a plan it cannot fetch: clear their settings first.") },
    )
    .get("/v2/sources/:id/tracking-plan", ({ scope, params }) => getSourceTrackingPlan(scope, params.id), {
      params: IdParams,
      detail: detail("A source's tracking-plan settings", "RudderStack's `dgSourceTrackingPlanConfig` as stored, or null."),
    })
    .put("/v2/sources/:id/tracking-plan", ({ scope, params, body }) => setSourceTrackingPlan(scope, deps, params.id, body as Record<string, unknown>), {
      params: IdParams,
      body: t.Record(t.String(), t.Unknown()),
      detail: detail(
        "Set a source's tracking plan",
        "The body is RudderStack's `dgSourceTrackingPlanConfig`: `{trackingPlan: {id, version}, config: {global: {allowUnplannedEvents, unplannedProperties, anyOtherViolation, propagateValidationErrors, ajvOptions}, track: {...}, identify: {...}, ...}}`, values read as RudderStack reads them (text included). Events are validated after they are stored, before they go to destinations; violations go into `context.violationErrors` and the settings decide which events are dropped. 400 for a plan id this workspace does not have.",
      ),
    })
    .post("/v2/sources/:id/tracking-plan/preview", ({ scope, params, body }) => previewTrackingPlan(scope, deps, params.id, body), {
      params: IdParams,
      body: t.Object(
        {
          plan: t.Optional(t.Record(t.String(), t.Unknown(), { description: "A plan JSON to check (not stored)." })),
          planId: t.Optional(t.String({ description: "Or a stored plan's id…" })),
          version: t.Optional(t.Number({ minimum: 1, description: "…and version (the current one when omitted)." })),
          settings: t.Optional(t.Record(t.String(), t.Unknown(), { description: "dgSourceTrackingPlanConfig to use instead of the source's." })),
        },
        { additionalProperties: false },
      ),
      detail: detail(
        "Check a plan change against recent traffic",
        "Validates the source's newest stored events (up to 10,000, as retention keeps them) against the plan given, with the source's settings (or `settings`), and answers how many would carry violations and how many would be dropped: `{checked, violating, dropped, byViolation: {type: n}, events: [{type, event, checked, violating, dropped}], problems}`. Nothing is stored.",
      ),
    })
    .delete(
      "/v2/sources/:id/tracking-plan",
      async ({ scope, params, set }) => {
        await setSourceTrackingPlan(scope, deps, params.id, null);
        set.status = 204;
      },
      { params: IdParams, detail: detail("Stop validating a source's events", "Clears its tracking-plan settings.") },
    );
}
