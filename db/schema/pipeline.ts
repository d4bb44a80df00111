import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * One row per accepted event. Deduplication by messageId happens in memory
 * (src/gateway/dedup.ts explains why there is no unique index here).
 *
 * No AUTOINCREMENT and no index beside the primary key: each commit of intake then
 * writes one B-tree, which halved its cost. Ids are assigned by intake, which never
 * goes below the processor's cursor (group-commit.ts); retention finds its id range
 * by received_at, which grows with id (retention.ts).
 */
export const events = sqliteTable(
  "events",
  {
    id: integer("id").primaryKey(),
    workspaceId: text("workspace_id").notNull(),
    sourceId: text("source_id").notNull(),
    messageId: text("message_id").notNull(),
    /** userId, else anonymousId: the key of per-user ordering and of regulations. */
    userKey: text("user_key").notNull(),
    type: text("type").notNull(),
    payload: text("payload").notNull(),
    receivedAt: integer("received_at").notNull(),
  },
);

/**
 * One row per (event, destination). `pending`/`retrying` rows are the queue; the
 * router leases them in memory (never marking them in the database), so a crash
 * simply leaves them pending and they are delivered again: at least once.
 */
export const deliveries = sqliteTable(
  "deliveries",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    eventId: integer("event_id").notNull(),
    destinationId: text("destination_id").notNull(),
    sourceId: text("source_id").notNull(),
    workspaceId: text("workspace_id").notNull(),
    userKey: text("user_key").notNull(),
    /** pending | retrying | succeeded | aborted | filtered (dropped by the user transformation) */
    state: text("state").notNull(),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: integer("next_attempt_at").notNull(),
    firstAttemptAt: integer("first_attempt_at"),
    lastStatus: integer("last_status"),
    /** The first KB of the last answer, or the error. */
    lastResponse: text("last_response"),
    lastError: text("last_error"),
    /** JSON array of the latest attempts: {at, status, response, error, ms}. */
    attemptLog: text("attempt_log"),
    /** A valid event's tracking-plan context fields (JSON), set on the event when it is delivered. */
    annotation: text("annotation"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    index("deliveries_queue").on(t.destinationId, t.state, t.id),
    index("deliveries_user").on(t.destinationId, t.userKey, t.id),
    index("deliveries_updated").on(t.state, t.updatedAt),
    index("deliveries_event").on(t.eventId),
  ],
);

/** Named positions of background readers, e.g. the processor's last event id. */
export const cursors = sqliteTable("cursors", {
  name: text("name").primaryKey(),
  value: integer("value").notNull(),
});
