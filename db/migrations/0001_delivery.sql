CREATE TABLE `cursors` (
	`name` text PRIMARY KEY NOT NULL,
	`value` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `deliveries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`event_id` integer NOT NULL,
	`destination_id` text NOT NULL,
	`source_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`user_key` text NOT NULL,
	`state` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`first_attempt_at` integer,
	`last_status` integer,
	`last_response` text,
	`last_error` text,
	`attempt_log` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `deliveries_queue` ON `deliveries` (`destination_id`,`state`,`id`);--> statement-breakpoint
CREATE INDEX `deliveries_user` ON `deliveries` (`destination_id`,`user_key`,`id`);--> statement-breakpoint
CREATE INDEX `deliveries_updated` ON `deliveries` (`state`,`updated_at`);--> statement-breakpoint
CREATE INDEX `deliveries_event` ON `deliveries` (`event_id`);