CREATE TABLE `config_epoch` (
	`id` integer PRIMARY KEY NOT NULL,
	`epoch` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `libraries` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`import_name` text NOT NULL,
	`version_id` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`external_id` text,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `libraries_workspace_import_name` ON `libraries` (`workspace_id`,`import_name`);--> statement-breakpoint
CREATE TABLE `library_versions` (
	`id` text PRIMARY KEY NOT NULL,
	`library_id` text NOT NULL,
	`code` text NOT NULL,
	`created_at` integer NOT NULL,
	`external_id` text,
	FOREIGN KEY (`library_id`) REFERENCES `libraries`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_transformation_versions` (
	`id` text PRIMARY KEY NOT NULL,
	`transformation_id` text NOT NULL,
	`code` text,
	`created_at` integer NOT NULL,
	`external_id` text,
	`libraries` text,
	FOREIGN KEY (`transformation_id`) REFERENCES `transformations`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_transformation_versions`("id", "transformation_id", "code", "created_at", "external_id", "libraries") SELECT "id", "transformation_id", "code", "created_at", NULL, NULL FROM `transformation_versions`;--> statement-breakpoint
DROP TABLE `transformation_versions`;--> statement-breakpoint
ALTER TABLE `__new_transformation_versions` RENAME TO `transformation_versions`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `transformation_versions_external` ON `transformation_versions` (`external_id`);--> statement-breakpoint
ALTER TABLE `transformations` ADD `external_id` text;