import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Tracking plans as RudderStack exports them, each with its versions; the plan JSON is kept
 * whole. `problems` lists the schemas Ajv could not compile (a plan imported from a workspace
 * file is kept and marked; the API refuses such a plan).
 */
export const trackingPlans = sqliteTable(
  "tracking_plans",
  {
    workspaceId: text("workspace_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    /** The version sources get when they name none. */
    currentVersion: integer("current_version").notNull(),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.id] })],
);

export const trackingPlanVersions = sqliteTable(
  "tracking_plan_versions",
  {
    workspaceId: text("workspace_id").notNull(),
    planId: text("plan_id").notNull(),
    version: integer("version").notNull(),
    /** JSON: the plan as given (either of RudderStack's formats). */
    plan: text("plan", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    /** JSON: [{event, message}] for schemas that do not compile; [] when all do. */
    problems: text("problems", { mode: "json" }).$type<Array<{ event: string; message: string }>>().notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.planId, t.version] })],
);

/**
 * The event catalog: one row per (source, type, event name) seen, with its counts and its
 * property paths (JSON, at most the configured number of paths). Written by the catalog's
 * flushes from committed events, off the intake path.
 */
export const catalogModels = sqliteTable(
  "catalog_models",
  {
    workspaceId: text("workspace_id").notNull(),
    sourceId: text("source_id").notNull(),
    type: text("type").notNull(),
    event: text("event").notNull(),
    firstSeen: integer("first_seen").notNull(),
    lastSeen: integer("last_seen").notNull(),
    count: integer("count").notNull(),
    /** JSON: {"YYYY-MM-DD": count} for the last 30 days. */
    daily: text("daily", { mode: "json" }).$type<Record<string, number>>().notNull(),
    /**
     * JSON: {sampled, paths: {path: {types: {json type: count}, present, examples?, firstSeen, lastSeen}}}:
     * counts out of the `sampled` events whose properties were read (src/catalog/store.ts).
     */
    paths: text("paths", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    /** Paths beyond the bound, counted (occurrences), not kept. */
    overflowPaths: integer("overflow_paths").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.sourceId, t.type, t.event] }), index("catalog_models_workspace").on(t.workspaceId, t.sourceId)],
);

/** Per source: events of models beyond the bound, counted, not kept. */
export const catalogOverflow = sqliteTable("catalog_overflow", {
  sourceId: text("source_id").primaryKey(),
  workspaceId: text("workspace_id").notNull(),
  models: integer("models").notNull().default(0),
  events: integer("events").notNull().default(0),
});

/**
 * Tracking-plan violations counted per source, UTC day, event and violation type, and the
 * property the violation is about ("" when it names none). Added to by the processor's stage in
 * flushes every few seconds, never per event; retention deletes days more than 8 days before its window.
 */
export const trackingPlanViolationCounts = sqliteTable(
  "tracking_plan_violation_counts",
  {
    workspaceId: text("workspace_id").notNull(),
    sourceId: text("source_id").notNull(),
    /** "YYYY-MM-DD", UTC. */
    day: text("day").notNull(),
    type: text("type").notNull(),
    /** The track event's name; "" for the other types. */
    event: text("event").notNull(),
    violationType: text("violation_type").notNull(),
    /** The property (instancePath, or the missing/unplanned one); "" when none. */
    property: text("property").notNull(),
    count: integer("count").notNull(),
  },
  (t) => [primaryKey({ columns: [t.sourceId, t.day, t.type, t.event, t.violationType, t.property] }), index("tracking_plan_violation_counts_day").on(t.day)],
);

/** Events dropped by their source's tracking-plan settings, per source, UTC day and event. */
export const trackingPlanDroppedCounts = sqliteTable(
  "tracking_plan_dropped_counts",
  {
    workspaceId: text("workspace_id").notNull(),
    sourceId: text("source_id").notNull(),
    day: text("day").notNull(),
    type: text("type").notNull(),
    event: text("event").notNull(),
    count: integer("count").notNull(),
  },
  (t) => [primaryKey({ columns: [t.sourceId, t.day, t.type, t.event] }), index("tracking_plan_dropped_counts_day").on(t.day)],
);

/**
 * The newest dropped events of each source (at most 100 a source, older rows deleted as new
 * ones come), with their violations. The event itself is not copied: it stays in `events`
 * (annotated), so retention and regulations delete it as they delete any other event.
 */
export const trackingPlanDroppedEvents = sqliteTable(
  "tracking_plan_dropped_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: text("workspace_id").notNull(),
    sourceId: text("source_id").notNull(),
    eventId: integer("event_id").notNull(),
    /** When the stage dropped it (ms). */
    at: integer("at").notNull(),
    type: text("type").notNull(),
    event: text("event").notNull(),
    violationType: text("violation_type").notNull(),
    error: text("error").notNull(),
    /** JSON: the violations, as context.violationErrors holds them. */
    violations: text("violations", { mode: "json" }).$type<Array<Record<string, unknown>>>().notNull(),
  },
  (t) => [index("tracking_plan_dropped_events_source").on(t.sourceId, t.id), index("tracking_plan_dropped_events_at").on(t.at)],
);
