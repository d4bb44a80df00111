CREATE TABLE "tracking_plan_dropped_counts" (
	"workspace_id" text NOT NULL,
	"source_id" text NOT NULL,
	"day" text NOT NULL,
	"type" text NOT NULL,
	"event" text NOT NULL,
	"count" bigint NOT NULL,
	CONSTRAINT "tracking_plan_dropped_counts_source_id_day_type_event_pk" PRIMARY KEY("source_id","day","type","event")
);
--> statement-breakpoint
CREATE TABLE "tracking_plan_dropped_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "tracking_plan_dropped_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"workspace_id" text NOT NULL,
	"source_id" text NOT NULL,
	"event_id" bigint NOT NULL,
	"at" bigint NOT NULL,
	"type" text NOT NULL,
	"event" text NOT NULL,
	"violation_type" text NOT NULL,
	"error" text NOT NULL,
	"violations" jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tracking_plan_violation_counts" (
	"workspace_id" text NOT NULL,
	"source_id" text NOT NULL,
	"day" text NOT NULL,
	"type" text NOT NULL,
	"event" text NOT NULL,
	"violation_type" text NOT NULL,
	"property" text NOT NULL,
	"count" bigint NOT NULL,
	CONSTRAINT "tracking_plan_violation_counts_source_id_day_type_event_violation_type_property_pk" PRIMARY KEY("source_id","day","type","event","violation_type","property")
);
--> statement-breakpoint
CREATE INDEX "tracking_plan_dropped_counts_day" ON "tracking_plan_dropped_counts" USING btree ("day");--> statement-breakpoint
CREATE INDEX "tracking_plan_dropped_events_source" ON "tracking_plan_dropped_events" USING btree ("source_id","id");--> statement-breakpoint
CREATE INDEX "tracking_plan_dropped_events_at" ON "tracking_plan_dropped_events" USING btree ("at");--> statement-breakpoint
CREATE INDEX "tracking_plan_violation_counts_day" ON "tracking_plan_violation_counts" USING btree ("day");