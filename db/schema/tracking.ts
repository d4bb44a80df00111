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
