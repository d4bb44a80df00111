import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

const createdAt = () => integer("created_at", { mode: "number" }).notNull();

export const workspaces = sqliteTable("workspaces", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  createdAt: createdAt(),
});

export const accounts = sqliteTable("accounts", {
  id: text("id").primaryKey(),
  workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
  email: text("email").notNull().unique(),
  role: text("role").notNull().default("owner"),
  createdAt: createdAt(),
});

/**
 * Only a SHA-256 of the token is kept. `lookup` (a short prefix of that hash) finds
 * candidate rows; the full hashes are then compared in constant time.
 */
export const accessTokens = sqliteTable(
  "access_tokens",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
    lookup: text("lookup").notNull(),
    secretHash: text("secret_hash").notNull(),
    name: text("name").notNull().default(""),
    createdAt: createdAt(),
    /** Last authenticated use, kept to the minute (so a busy token costs no write per request). */
    lastUsedAt: integer("last_used_at", { mode: "number" }),
  },
  (t) => [index("access_tokens_lookup").on(t.lookup)],
);

/**
 * Dashboard sessions. The browser holds a random id in an HttpOnly cookie; only its SHA-256 is
 * kept, as for tokens. A session belongs to the token it was opened with: revoking the token
 * ends it.
 */
export const sessions = sqliteTable(
  "sessions",
  {
    idHash: text("id_hash").primaryKey(),
    tokenId: text("token_id")
      .notNull()
      .references(() => accessTokens.id, { onDelete: "cascade" }),
    accountId: text("account_id").notNull().references(() => accounts.id),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
    createdAt: createdAt(),
    expiresAt: integer("expires_at", { mode: "number" }).notNull(),
  },
  (t) => [index("sessions_token").on(t.tokenId), index("sessions_expires").on(t.expiresAt)],
);

export const sources = sqliteTable(
  "sources",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
    name: text("name").notNull(),
    writeKey: text("write_key").notNull().unique(),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    /** JSON: source settings such as lenientValidation. */
    settings: text("settings", { mode: "json" }).$type<SourceSettings>().notNull().default(sql`'{}'`),
    createdAt: createdAt(),
    updatedAt: integer("updated_at").notNull(),
    /**
     * JSON: what an imported RudderStack workspace file said of the source's kind (its
     * sourceDefinition). Kept because rudder-server routes by its type (the hybrid-mode filter
     * is keyed by it) and its category tells the sources RudderStack pulls from (cloud,
     * warehouse) from those that send; null for sources made through the API or Sluice's own file.
     */
    rudderDefinition: text("rudder_definition", { mode: "json" }).$type<RudderSourceDefinition>(),
    /**
     * JSON: the source's own config as RudderStack keeps it (`source.config`), read by webhook
     * mappings (the generic webhook's putRequestDetailsInContext, Braze's customMapping); null: none.
     */
    config: text("config", { mode: "json" }).$type<Record<string, unknown>>(),
    /**
     * JSON: the source's tracking plan and how violations are handled, as RudderStack keeps
     * them (`dgSourceTrackingPlanConfig`: trackingPlan {id, version}, config per event type);
     * null: no plan.
     */
    trackingPlanConfig: text("tracking_plan_config", { mode: "json" }).$type<Record<string, unknown>>(),
  },
  (t) => [uniqueIndex("sources_workspace_name").on(t.workspaceId, t.name)],
);

export interface SourceSettings {
  lenientValidation?: boolean;
  /** The event catalog keeps example values of this source's properties (default true). */
  catalogExamples?: boolean;
  /** ...also for e-mail, phone and IP-like paths and values (default false). */
  catalogPersonalExamples?: boolean;
}

/**
 * A RudderStack sourceDefinition as its workspace file carries it (the parts Sluice reads).
 * `category` is null for event-stream sources (SDKs, HTTP); `type` is what the SDKs call the
 * platform (`web`, `android`, `cloud`, …).
 */
export interface RudderSourceDefinition {
  name: string;
  displayName?: string;
  category: string | null;
  type: string | null;
}

export const destinations = sqliteTable(
  "destinations",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
    name: text("name").notNull(),
    /** A destination-definition name, e.g. WEBHOOK. */
    type: text("type").notNull(),
    config: text("config", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    createdAt: createdAt(),
    updatedAt: integer("updated_at").notNull(),
    /**
     * JSON: what an imported RudderStack workspace file said of the kind (its
     * destinationDefinition). Kept because rudder-server routes by it (connection modes,
     * message types) and the SDKs' /sourceConfig serves it; null for destinations made
     * through the API or Sluice's own file, which go by the built-in definition.
     */
    rudderDefinition: text("rudder_definition", { mode: "json" }).$type<RudderDefinition>(),
  },
  (t) => [uniqueIndex("destinations_workspace_name").on(t.workspaceId, t.name)],
);

/** A RudderStack destinationDefinition as its workspace file carries it (the parts Sluice reads). */
export interface RudderDefinition {
  name: string;
  displayName?: string;
  config?: Record<string, unknown>;
}

export const connections = sqliteTable(
  "connections",
  {
    sourceId: text("source_id").notNull().references(() => sources.id, { onDelete: "cascade" }),
    destinationId: text("destination_id").notNull().references(() => destinations.id, { onDelete: "cascade" }),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.sourceId, t.destinationId] }), index("connections_destination").on(t.destinationId)],
);

export const transformations = sqliteTable(
  "transformations",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
    name: text("name").notNull(),
    /** The current version; every save makes a new one. */
    versionId: text("version_id").notNull(),
    createdAt: createdAt(),
    updatedAt: integer("updated_at").notNull(),
    /** RudderStack's transformation id, for one imported from a RudderStack workspace or export; null otherwise. */
    externalId: text("external_id"),
  },
  (t) => [uniqueIndex("transformations_workspace_name").on(t.workspaceId, t.name)],
);

/** Versions are kept so a delivery can say which code it ran. */
export const transformationVersions = sqliteTable(
  "transformation_versions",
  {
    id: text("id").primaryKey(),
    transformationId: text("transformation_id").notNull().references(() => transformations.id, { onDelete: "cascade" }),
    /**
     * Null for a version a RudderStack workspace file names whose code is not here yet (the code
     * stays in RudderStack's control plane): a destination running it is held until the code
     * is supplied, never delivered untransformed.
     */
    code: text("code"),
    createdAt: createdAt(),
    /** RudderStack's versionId of this version, for one imported from RudderStack; null otherwise. */
    externalId: text("external_id"),
    /** JSON: import name → library version id, the library code this version was saved with. */
    libraries: text("libraries", { mode: "json" }).$type<Record<string, string>>(),
  },
  (t) => [index("transformation_versions_external").on(t.externalId)],
);

/** A destination runs at most one transformation: the primary key says so. */
export const destinationTransformations = sqliteTable("destination_transformations", {
  destinationId: text("destination_id").primaryKey().references(() => destinations.id, { onDelete: "cascade" }),
  transformationId: text("transformation_id").notNull().references(() => transformations.id, { onDelete: "cascade" }),
});

/**
 * Named modules a transformation imports (`import { f } from "importName"`), as RudderStack's
 * libraries. Every save of code makes a new version; a transformation version pins the
 * library versions it was saved with, so changing a library never changes running code.
 */
export const libraries = sqliteTable(
  "libraries",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
    name: text("name").notNull(),
    importName: text("import_name").notNull(),
    /** The current version: what a transformation saved now pins. */
    versionId: text("version_id").notNull(),
    createdAt: createdAt(),
    updatedAt: integer("updated_at").notNull(),
    /** RudderStack's library id, for one imported from a RudderStack export; null otherwise. */
    externalId: text("external_id"),
  },
  (t) => [uniqueIndex("libraries_workspace_import_name").on(t.workspaceId, t.importName)],
);

export const libraryVersions = sqliteTable("library_versions", {
  id: text("id").primaryKey(),
  libraryId: text("library_id").notNull().references(() => libraries.id, { onDelete: "cascade" }),
  code: text("code").notNull(),
  createdAt: createdAt(),
  /** RudderStack's versionId of this library version; null otherwise. */
  externalId: text("external_id"),
});

/**
 * One row, bumped by every control-plane write in the same transaction. A running server polls
 * it, so a write by another process on the same file (`sluice import-transformations`) reaches
 * its in-memory config without a restart. PostgreSQL has its own epochs (cluster_epochs).
 */
export const configEpoch = sqliteTable("config_epoch", {
  id: integer("id").primaryKey(),
  epoch: integer("epoch").notNull(),
});
