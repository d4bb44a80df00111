import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * What webhook source mappings remember between requests (Shopify's cart tokens and pixel
 * identities), which RudderStack keeps in Redis: a small hash per key, with an expiry. Keyed by
 * workspace, as one Shopify store's pixel and webhooks may come through different sources.
 */
export const sourceState = sqliteTable(
  "source_state",
  {
    workspaceId: text("workspace_id").notNull(),
    key: text("key").notNull(),
    /** JSON object of string values, as Redis keeps a hash. */
    fields: text("fields", { mode: "json" }).$type<Record<string, string>>().notNull(),
    expiresAt: integer("expires_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.key] }), index("source_state_expires").on(t.expiresAt)],
);
