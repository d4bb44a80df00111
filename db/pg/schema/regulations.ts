/**
 * PostgreSQL twin of db/schema/regulations.ts, plus `regulations.seq` (design §3.4): the
 * value of cluster_epochs 'suppression' stamped by the transaction that created or cancelled
 * the row, so an instance pulls only the rows after the epoch it has (`WHERE seq > $mine`).
 */
import { sql } from "drizzle-orm";
import { bigint, boolean, index, integer, jsonb, pgTable, text } from "drizzle-orm/pg-core";
import type { RegulationAttributes } from "../../schema/regulations";
import { ms } from "./columns";

export const regulations = pgTable(
  "regulations",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull(),
    regulationType: text("regulation_type").notNull(),
    userId: text("user_id").notNull(),
    attributes: jsonb("attributes").$type<RegulationAttributes>().notNull(),
    sourceIds: jsonb("source_ids").$type<string[]>(),
    destinationIds: jsonb("destination_ids").$type<string[]>(),
    canceled: boolean("canceled").notNull().default(false),
    createdAt: ms("created_at").notNull(),
    updatedAt: ms("updated_at").notNull(),
    seq: bigint("seq", { mode: "number" }).notNull().default(0),
  },
  (t) => [
    index("regulations_workspace").on(t.workspaceId, t.id),
    index("regulations_active_user").on(t.workspaceId, t.userId).where(sql`canceled = false`),
    index("regulations_seq").on(t.seq),
  ],
);

export const deletionJobs = pgTable(
  "deletion_jobs",
  {
    id: text("id").primaryKey(),
    regulationId: text("regulation_id").notNull().references(() => regulations.id, { onDelete: "cascade" }),
    workspaceId: text("workspace_id").notNull(),
    destinationId: text("destination_id").notNull(),
    status: text("status").notNull(),
    reason: text("reason"),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: ms("next_attempt_at").notNull(),
    firstAttemptAt: ms("first_attempt_at"),
    createdAt: ms("created_at").notNull(),
    updatedAt: ms("updated_at").notNull(),
  },
  (t) => [index("deletion_jobs_regulation").on(t.regulationId), index("deletion_jobs_due").on(t.status, t.nextAttemptAt)],
);
