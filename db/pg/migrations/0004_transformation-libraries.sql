CREATE TABLE "libraries" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"name" text NOT NULL,
	"import_name" text NOT NULL,
	"version_id" text NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"external_id" text
);
--> statement-breakpoint
CREATE TABLE "library_versions" (
	"id" text PRIMARY KEY NOT NULL,
	"library_id" text NOT NULL,
	"code" text NOT NULL,
	"created_at" bigint NOT NULL,
	"external_id" text
);
--> statement-breakpoint
ALTER TABLE "transformation_versions" ALTER COLUMN "code" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "transformation_versions" ADD COLUMN "external_id" text;--> statement-breakpoint
ALTER TABLE "transformation_versions" ADD COLUMN "libraries" jsonb;--> statement-breakpoint
ALTER TABLE "transformations" ADD COLUMN "external_id" text;--> statement-breakpoint
ALTER TABLE "libraries" ADD CONSTRAINT "libraries_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "library_versions" ADD CONSTRAINT "library_versions_library_id_libraries_id_fk" FOREIGN KEY ("library_id") REFERENCES "public"."libraries"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "libraries_workspace_import_name" ON "libraries" USING btree ("workspace_id","import_name");--> statement-breakpoint
CREATE INDEX "transformation_versions_external" ON "transformation_versions" USING btree ("external_id");