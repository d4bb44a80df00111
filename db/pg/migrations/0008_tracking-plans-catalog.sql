CREATE TABLE "catalog_models" (
	"workspace_id" text NOT NULL,
	"source_id" text NOT NULL,
	"type" text NOT NULL,
	"event" text NOT NULL,
	"first_seen" bigint NOT NULL,
	"last_seen" bigint NOT NULL,
	"count" bigint NOT NULL,
	"daily" jsonb NOT NULL,
	"paths" jsonb NOT NULL,
	"overflow_paths" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "catalog_models_source_id_type_event_pk" PRIMARY KEY("source_id","type","event")
);
--> statement-breakpoint
CREATE TABLE "catalog_overflow" (
	"source_id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"models" bigint DEFAULT 0 NOT NULL,
	"events" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tracking_plan_versions" (
	"workspace_id" text NOT NULL,
	"plan_id" text NOT NULL,
	"version" integer NOT NULL,
	"plan" jsonb NOT NULL,
	"problems" jsonb NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "tracking_plan_versions_workspace_id_plan_id_version_pk" PRIMARY KEY("workspace_id","plan_id","version")
);
--> statement-breakpoint
CREATE TABLE "tracking_plans" (
	"workspace_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"current_version" integer NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "tracking_plans_workspace_id_id_pk" PRIMARY KEY("workspace_id","id")
);
--> statement-breakpoint
ALTER TABLE "sources" ADD COLUMN "tracking_plan_config" jsonb;--> statement-breakpoint
CREATE INDEX "catalog_models_workspace" ON "catalog_models" USING btree ("workspace_id","source_id");