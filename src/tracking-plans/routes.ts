/** Tracking plans API (docs/tracking-plans.md). Routes only parse, call, map. */
import { Elysia, t } from "elysia";
import { withWorkspace } from "../control-plane/routes";
import type { ServiceContext } from "../control-plane/context";
import { IdParams } from "../control-plane/schemas";
import { type TrackingPlanDeps, previewTrackingPlan, deleteTrackingPlan, getSourceTrackingPlan, getTrackingPlan, listDroppedEvents, listPlanVersions, listTrackingPlans, putTrackingPlan, setSourceTrackingPlan, trackingPlanReport } from "./service";
import { DROPPED_EVENTS_KEPT } from "./store";

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
const Counts = { today: t.Integer({ description: "In the current UTC day." }), last7Days: t.Integer({ description: "In the current UTC day and the six before it." }) };
const ContextViolation = t.Record(t.String(), t.Unknown(), { description: "As `context.violationErrors` holds it: `{type, message, meta, property}`." });
const TrackingPlanReport = t.Object({
  sourceId: t.String(),
  plan: t.Union([t.Null(), t.Object({ id: t.String(), name: t.String(), version: t.Integer(), events: t.Integer({ description: "Planned events." }) })], { description: "The plan version the source's settings name; null when none (or it is not stored)." }),
  catalog: t.Boolean({ description: "false when the event catalog is off (--catalog false): nothing is known of what was seen." }),
  today: t.String({ description: "The current UTC day, YYYY-MM-DD." }),
  from: t.String({ description: "The first UTC day of the 7 counted." }),
  plannedNotSeen: t.Array(t.Object({ type: t.String(), event: t.String({ description: "The track's name; \"\" for the other types." }), description: t.Union([t.String(), t.Null()]) }), { description: "Events of the plan the catalog has never seen from this source." }),
  seenNotPlanned: t.Array(t.Object({ type: t.String(), event: t.String(), count: t.Integer(), firstSeen: t.String({ format: "date-time" }), lastSeen: t.String({ format: "date-time" }) }), {
    description: "Events (track, identify, page, screen, group) the catalog saw from this source that the plan does not name; a track among them is an Unplanned-Event.",
  }),
  violations: t.Array(t.Object({ type: t.String(), event: t.String(), violationType: t.String(), property: t.String({ description: "A JSON pointer into the event (Ajv's instancePath, with the missing or unplanned property); \"\" when the violation names none." }), ...Counts }), {
    description: "Violations counted by event, violation type and property, most in the last 7 days first (at most 500 rows).",
  }),
  violationRows: t.Integer({ description: "How many rows there are in all." }),
  dropped: t.Array(t.Object({ type: t.String(), event: t.String(), ...Counts }), { description: "Events dropped by the source's settings, by event." }),
  totals: t.Object({ violations: t.Object(Counts), dropped: t.Object(Counts) }),
});
const DroppedEvent = t.Object({
  eventId: t.Integer(),
  at: t.String({ format: "date-time", description: "When the processor dropped it." }),
  type: t.String(),
  event: t.String({ description: "The track's name; \"\" for the other types." }),
  violationType: t.String({ description: "The violation type that decided the drop, as rudder-transformer names it." }),
  error: t.String({ description: "The error RudderStack records for a dropped event." }),
  violations: t.Array(ContextViolation),
  payload: t.Union([t.Record(t.String(), t.Unknown()), t.Null()], { description: "The stored event, annotated; null once retention (or a regulation) removed it." }),
});
const DroppedQuery = t.Object(
  { limit: t.Optional(t.String({ pattern: "^(100|[1-9][0-9]?)$", errorMessage: "expected a whole number from 1 to 100", description: "How many, 1 to 100 (default 100)." })) },
  { additionalProperties: false },
);

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
    .get("/v2/sources/:id/tracking-plan/report", ({ scope, params }) => trackingPlanReport(scope, deps, params.id), {
      params: IdParams,
      response: TrackingPlanReport,
      detail: detail(
        "The source's plan against its traffic",
        "Side by side: the plan's events the event catalog never saw from this source (`plannedNotSeen`), the events it saw that the plan does not name (`seenNotPlanned`), and the violations counted by event, violation type and property, today (UTC) and over the last 7 UTC days, with the events dropped. Counts are written every 5 seconds by each instance's processor; this instance's are written before the answer.",
      ),
    })
    .get("/v2/sources/:id/tracking-plan/dropped-events", async ({ scope, params, query }) => ({ droppedEvents: await listDroppedEvents(scope, deps, params.id, query.limit ? Number(query.limit) : DROPPED_EVENTS_KEPT) }), {
      params: IdParams,
      query: DroppedQuery,
      response: t.Object({ droppedEvents: t.Array(DroppedEvent) }),
      detail: detail(
        "The source's newest dropped events",
        `Events the source's tracking-plan settings dropped (never delivered), newest first, with their violations: the newest ${DROPPED_EVENTS_KEPT} of the source are kept. The event itself is the stored one (annotated), until retention removes it.`,
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
