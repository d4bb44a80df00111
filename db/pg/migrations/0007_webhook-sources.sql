CREATE TABLE "source_state" (
	"workspace_id" text NOT NULL,
	"key" text NOT NULL,
	"fields" jsonb NOT NULL,
	"expires_at" bigint NOT NULL,
	CONSTRAINT "source_state_workspace_id_key_pk" PRIMARY KEY("workspace_id","key")
);
--> statement-breakpoint
ALTER TABLE "sources" ADD COLUMN "config" jsonb;--> statement-breakpoint
CREATE INDEX "source_state_expires" ON "source_state" USING btree ("expires_at");