/** PostgreSQL twin of db/schema/tracking.ts. */
import { bigint, index, integer, jsonb, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { ms } from "./columns";

export const trackingPlans = pgTable(
  "tracking_plans",
  {
    workspaceId: text("workspace_id").notNull(),
    id: text("id").notNull(),
    name: text("name").notNull(),
    currentVersion: integer("current_version").notNull(),
    createdAt: ms("created_at").notNull(),
    updatedAt: ms("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.id] })],
);

export const trackingPlanVersions = pgTable(
  "tracking_plan_versions",
  {
    workspaceId: text("workspace_id").notNull(),
    planId: text("plan_id").notNull(),
    version: integer("version").notNull(),
    plan: jsonb("plan").$type<Record<string, unknown>>().notNull(),
    problems: jsonb("problems").$type<Array<{ event: string; message: string }>>().notNull(),
    createdAt: ms("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.planId, t.version] })],
);

export const catalogModels = pgTable(
  "catalog_models",
  {
    workspaceId: text("workspace_id").notNull(),
    sourceId: text("source_id").notNull(),
    type: text("type").notNull(),
    event: text("event").notNull(),
    firstSeen: ms("first_seen").notNull(),
    lastSeen: ms("last_seen").notNull(),
    count: bigint("count", { mode: "number" }).notNull(),
    daily: jsonb("daily").$type<Record<string, number>>().notNull(),
    paths: jsonb("paths").$type<Record<string, unknown>>().notNull(),
    overflowPaths: bigint("overflow_paths", { mode: "number" }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.sourceId, t.type, t.event] }), index("catalog_models_workspace").on(t.workspaceId, t.sourceId)],
);

export const catalogOverflow = pgTable("catalog_overflow", {
  sourceId: text("source_id").primaryKey(),
  workspaceId: text("workspace_id").notNull(),
  models: bigint("models", { mode: "number" }).notNull().default(0),
  events: bigint("events", { mode: "number" }).notNull().default(0),
});

export const trackingPlanViolationCounts = pgTable(
  "tracking_plan_violation_counts",
  {
    workspaceId: text("workspace_id").notNull(),
    sourceId: text("source_id").notNull(),
    day: text("day").notNull(),
    type: text("type").notNull(),
    event: text("event").notNull(),
    violationType: text("violation_type").notNull(),
    property: text("property").notNull(),
    count: bigint("count", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.sourceId, t.day, t.type, t.event, t.violationType, t.property] }), index("tracking_plan_violation_counts_day").on(t.day)],
);

export const trackingPlanDroppedCounts = pgTable(
  "tracking_plan_dropped_counts",
  {
    workspaceId: text("workspace_id").notNull(),
    sourceId: text("source_id").notNull(),
    day: text("day").notNull(),
    type: text("type").notNull(),
    event: text("event").notNull(),
    count: bigint("count", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.sourceId, t.day, t.type, t.event] }), index("tracking_plan_dropped_counts_day").on(t.day)],
);

export const trackingPlanDroppedEvents = pgTable(
  "tracking_plan_dropped_events",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    workspaceId: text("workspace_id").notNull(),
    sourceId: text("source_id").notNull(),
    eventId: bigint("event_id", { mode: "number" }).notNull(),
    at: ms("at").notNull(),
    type: text("type").notNull(),
    event: text("event").notNull(),
    violationType: text("violation_type").notNull(),
    error: text("error").notNull(),
    violations: jsonb("violations").$type<Array<Record<string, unknown>>>().notNull(),
  },
  (t) => [index("tracking_plan_dropped_events_source").on(t.sourceId, t.id), index("tracking_plan_dropped_events_at").on(t.at)],
);
