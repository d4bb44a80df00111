CREATE TABLE `deletion_jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`regulation_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`destination_id` text NOT NULL,
	`status` text NOT NULL,
	`reason` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`first_attempt_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`regulation_id`) REFERENCES `regulations`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `deletion_jobs_regulation` ON `deletion_jobs` (`regulation_id`);--> statement-breakpoint
CREATE INDEX `deletion_jobs_due` ON `deletion_jobs` (`status`,`next_attempt_at`);--> statement-breakpoint
CREATE TABLE `regulations` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`regulation_type` text NOT NULL,
	`user_id` text NOT NULL,
	`attributes` text NOT NULL,
	`source_ids` text,
	`destination_ids` text,
	`canceled` integer DEFAULT false NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `regulations_workspace` ON `regulations` (`workspace_id`,`id`);--> statement-breakpoint
CREATE INDEX `regulations_active_user` ON `regulations` (`workspace_id`,`user_id`) WHERE canceled = 0;