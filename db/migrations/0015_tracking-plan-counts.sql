CREATE TABLE `tracking_plan_dropped_counts` (
	`workspace_id` text NOT NULL,
	`source_id` text NOT NULL,
	`day` text NOT NULL,
	`type` text NOT NULL,
	`event` text NOT NULL,
	`count` integer NOT NULL,
	PRIMARY KEY(`source_id`, `day`, `type`, `event`)
);
--> statement-breakpoint
CREATE INDEX `tracking_plan_dropped_counts_day` ON `tracking_plan_dropped_counts` (`day`);--> statement-breakpoint
CREATE TABLE `tracking_plan_dropped_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` text NOT NULL,
	`source_id` text NOT NULL,
	`event_id` integer NOT NULL,
	`at` integer NOT NULL,
	`type` text NOT NULL,
	`event` text NOT NULL,
	`violation_type` text NOT NULL,
	`error` text NOT NULL,
	`violations` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `tracking_plan_dropped_events_source` ON `tracking_plan_dropped_events` (`source_id`,`id`);--> statement-breakpoint
CREATE INDEX `tracking_plan_dropped_events_at` ON `tracking_plan_dropped_events` (`at`);--> statement-breakpoint
CREATE TABLE `tracking_plan_violation_counts` (
	`workspace_id` text NOT NULL,
	`source_id` text NOT NULL,
	`day` text NOT NULL,
	`type` text NOT NULL,
	`event` text NOT NULL,
	`violation_type` text NOT NULL,
	`property` text NOT NULL,
	`count` integer NOT NULL,
	PRIMARY KEY(`source_id`, `day`, `type`, `event`, `violation_type`, `property`)
);
--> statement-breakpoint
CREATE INDEX `tracking_plan_violation_counts_day` ON `tracking_plan_violation_counts` (`day`);