CREATE TABLE `source_state` (
	`workspace_id` text NOT NULL,
	`key` text NOT NULL,
	`fields` text NOT NULL,
	`expires_at` integer NOT NULL,
	PRIMARY KEY(`workspace_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `source_state_expires` ON `source_state` (`expires_at`);--> statement-breakpoint
ALTER TABLE `sources` ADD `config` text;