import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * One row per user of a regulation request (RudderStack lists one record per user).
 * `user_id` is copied out of `attributes` because suppression looks it up on every
 * cache miss; the identifiers the caller gave are kept whole in `attributes`.
 */
export const regulations = sqliteTable(
  "regulations",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull(),
    /** suppress | suppress_with_delete */
    regulationType: text("regulation_type").notNull(),
    userId: text("user_id").notNull(),
    /** JSON: {userId, phone?, email?, ...custom identifiers}. */
    attributes: text("attributes", { mode: "json" }).$type<RegulationAttributes>().notNull(),
    /** JSON array, or null for every source of the workspace. */
    sourceIds: text("source_ids", { mode: "json" }).$type<string[]>(),
    /** JSON array (suppress_with_delete only). */
    destinationIds: text("destination_ids", { mode: "json" }).$type<string[]>(),
    canceled: integer("canceled", { mode: "boolean" }).notNull().default(false),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    // Ids are time-ordered, so this is the list order and the cursor.
    index("regulations_workspace").on(t.workspaceId, t.id),
    // Partial: suppression only ever asks about active rows, and cancelled ones pile up.
    index("regulations_active_user").on(t.workspaceId, t.userId).where(sql`canceled = 0`),
  ],
);

export type RegulationAttributes = { userId: string } & Record<string, string>;

/**
 * The deletion work of a suppress_with_delete regulation at one destination.
 * pending → running → complete | failed (retried at next_attempt_at) | aborted.
 * A crash leaves `running` rows; start-up puts them back to pending.
 */
export const deletionJobs = sqliteTable(
  "deletion_jobs",
  {
    id: text("id").primaryKey(),
    regulationId: text("regulation_id").notNull().references(() => regulations.id, { onDelete: "cascade" }),
    workspaceId: text("workspace_id").notNull(),
    // No foreign key: the job must outlive a deleted destination to say why it was aborted.
    destinationId: text("destination_id").notNull(),
    status: text("status").notNull(),
    reason: text("reason"),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: integer("next_attempt_at").notNull(),
    firstAttemptAt: integer("first_attempt_at"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [index("deletion_jobs_regulation").on(t.regulationId), index("deletion_jobs_due").on(t.status, t.nextAttemptAt)],
);
