/** PostgreSQL twin of db/schema/sources.ts. */
import { index, jsonb, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { ms } from "./columns";

export const sourceState = pgTable(
  "source_state",
  {
    workspaceId: text("workspace_id").notNull(),
    key: text("key").notNull(),
    fields: jsonb("fields").$type<Record<string, string>>().notNull(),
    expiresAt: ms("expires_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.key] }), index("source_state_expires").on(t.expiresAt)],
);
