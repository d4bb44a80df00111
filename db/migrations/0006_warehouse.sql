CREATE TABLE `warehouse_loads` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`destination_id` text NOT NULL,
	`status` text NOT NULL,
	`trigger` text NOT NULL,
	`attempt` integer DEFAULT 1 NOT NULL,
	`due_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	`started_at` integer,
	`finished_at` integer,
	`rows` text,
	`discards` integer,
	`error` text
);
--> statement-breakpoint
CREATE INDEX `warehouse_loads_destination` ON `warehouse_loads` (`destination_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `warehouse_loads_status` ON `warehouse_loads` (`status`,`due_at`);--> statement-breakpoint
CREATE TABLE `warehouse_staged` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`destination_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`namespace` text NOT NULL,
	`table_name` text NOT NULL,
	`columns` text NOT NULL,
	`row` text NOT NULL,
	`event_id` text NOT NULL,
	`user_key` text NOT NULL,
	`staged_at` integer NOT NULL,
	`load_id` text
);
--> statement-breakpoint
CREATE INDEX `warehouse_staged_waiting` ON `warehouse_staged` (`destination_id`,`id`) WHERE load_id IS NULL;--> statement-breakpoint
CREATE INDEX `warehouse_staged_load` ON `warehouse_staged` (`load_id`);--> statement-breakpoint
CREATE INDEX `warehouse_staged_user` ON `warehouse_staged` (`destination_id`,`user_key`);