/**
 * PostgreSQL twin of db/schema/control-plane.ts: the same tables, columns, index and
 * constraint names (the stores map unique violations to CONFLICT by constraint name).
 * Times stay epoch milliseconds in `bigint` (mode number), as SQLite stores them, so both
 * stores hand the code the same JS values. JSON columns that SQLite keeps as text with
 * mode "json" are `jsonb` here: reads through drizzle give the same parsed object in both, but
 * drizzle's inserts over Bun.sql store a JSON *string* in jsonb (drizzle-orm#4942), which SQL
 * such as `config->>'key'` cannot see: stores write these columns as `$1::text::jsonb`
 * (src/storage/postgres/control-plane.ts; test: jsonb_typeof = 'object').
 */
import { sql } from "drizzle-orm";
import { boolean, index, jsonb, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import type { RudderDefinition, RudderSourceDefinition, SourceSettings } from "../../schema/control-plane";
import { ms } from "./columns";

const createdAt = () => ms("created_at").notNull();

export const workspaces = pgTable("workspaces", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  createdAt: createdAt(),
});

export const accounts = pgTable("accounts", {
  id: text("id").primaryKey(),
  workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
  email: text("email").notNull().unique("accounts_email_unique"),
  role: text("role").notNull().default("owner"),
  createdAt: createdAt(),
});

export const accessTokens = pgTable(
  "access_tokens",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
    lookup: text("lookup").notNull(),
    secretHash: text("secret_hash").notNull(),
    name: text("name").notNull().default(""),
    createdAt: createdAt(),
    lastUsedAt: ms("last_used_at"),
  },
  (t) => [index("access_tokens_lookup").on(t.lookup)],
);

export const sessions = pgTable(
  "sessions",
  {
    idHash: text("id_hash").primaryKey(),
    tokenId: text("token_id")
      .notNull()
      .references(() => accessTokens.id, { onDelete: "cascade" }),
    accountId: text("account_id").notNull().references(() => accounts.id),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
    createdAt: createdAt(),
    expiresAt: ms("expires_at").notNull(),
  },
  (t) => [index("sessions_token").on(t.tokenId), index("sessions_expires").on(t.expiresAt)],
);

export const sources = pgTable(
  "sources",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
    name: text("name").notNull(),
    writeKey: text("write_key").notNull().unique("sources_write_key_unique"),
    enabled: boolean("enabled").notNull().default(true),
    settings: jsonb("settings").$type<SourceSettings>().notNull().default(sql`'{}'::jsonb`),
    createdAt: createdAt(),
    updatedAt: ms("updated_at").notNull(),
    rudderDefinition: jsonb("rudder_definition").$type<RudderSourceDefinition>(),
    config: jsonb("config").$type<Record<string, unknown>>(),
    trackingPlanConfig: jsonb("tracking_plan_config").$type<Record<string, unknown>>(),
  },
  (t) => [uniqueIndex("sources_workspace_name").on(t.workspaceId, t.name)],
);

export const destinations = pgTable(
  "destinations",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
    name: text("name").notNull(),
    type: text("type").notNull(),
    config: jsonb("config").$type<Record<string, unknown>>().notNull(),
    enabled: boolean("enabled").notNull().default(true),
    createdAt: createdAt(),
    updatedAt: ms("updated_at").notNull(),
    rudderDefinition: jsonb("rudder_definition").$type<RudderDefinition>(),
  },
  (t) => [uniqueIndex("destinations_workspace_name").on(t.workspaceId, t.name)],
);

export const connections = pgTable(
  "connections",
  {
    sourceId: text("source_id").notNull().references(() => sources.id, { onDelete: "cascade" }),
    destinationId: text("destination_id").notNull().references(() => destinations.id, { onDelete: "cascade" }),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.sourceId, t.destinationId] }), index("connections_destination").on(t.destinationId)],
);

export const transformations = pgTable(
  "transformations",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
    name: text("name").notNull(),
    versionId: text("version_id").notNull(),
    createdAt: createdAt(),
    updatedAt: ms("updated_at").notNull(),
    externalId: text("external_id"),
  },
  (t) => [uniqueIndex("transformations_workspace_name").on(t.workspaceId, t.name)],
);

export const transformationVersions = pgTable(
  "transformation_versions",
  {
    id: text("id").primaryKey(),
    transformationId: text("transformation_id").notNull().references(() => transformations.id, { onDelete: "cascade" }),
    code: text("code"),
    createdAt: createdAt(),
    externalId: text("external_id"),
    libraries: jsonb("libraries").$type<Record<string, string>>(),
  },
  (t) => [index("transformation_versions_external").on(t.externalId)],
);

export const destinationTransformations = pgTable("destination_transformations", {
  destinationId: text("destination_id").primaryKey().references(() => destinations.id, { onDelete: "cascade" }),
  transformationId: text("transformation_id").notNull().references(() => transformations.id, { onDelete: "cascade" }),
});

export const libraries = pgTable(
  "libraries",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
    name: text("name").notNull(),
    importName: text("import_name").notNull(),
    versionId: text("version_id").notNull(),
    createdAt: createdAt(),
    updatedAt: ms("updated_at").notNull(),
    externalId: text("external_id"),
  },
  (t) => [uniqueIndex("libraries_workspace_import_name").on(t.workspaceId, t.importName)],
);

export const libraryVersions = pgTable("library_versions", {
  id: text("id").primaryKey(),
  libraryId: text("library_id").notNull().references(() => libraries.id, { onDelete: "cascade" }),
  code: text("code").notNull(),
  createdAt: createdAt(),
  externalId: text("external_id"),
});
