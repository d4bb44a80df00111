CREATE TABLE `catalog_models` (
	`workspace_id` text NOT NULL,
	`source_id` text NOT NULL,
	`type` text NOT NULL,
	`event` text NOT NULL,
	`first_seen` integer NOT NULL,
	`last_seen` integer NOT NULL,
	`count` integer NOT NULL,
	`daily` text NOT NULL,
	`paths` text NOT NULL,
	`overflow_paths` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`source_id`, `type`, `event`)
);
--> statement-breakpoint
CREATE INDEX `catalog_models_workspace` ON `catalog_models` (`workspace_id`,`source_id`);--> statement-breakpoint
CREATE TABLE `catalog_overflow` (
	`source_id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`models` integer DEFAULT 0 NOT NULL,
	`events` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `tracking_plan_versions` (
	`workspace_id` text NOT NULL,
	`plan_id` text NOT NULL,
	`version` integer NOT NULL,
	`plan` text NOT NULL,
	`problems` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`workspace_id`, `plan_id`, `version`)
);
--> statement-breakpoint
CREATE TABLE `tracking_plans` (
	`workspace_id` text NOT NULL,
	`id` text NOT NULL,
	`name` text NOT NULL,
	`current_version` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`workspace_id`, `id`)
);
--> statement-breakpoint
ALTER TABLE `sources` ADD `tracking_plan_config` text;