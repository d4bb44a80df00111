CREATE TABLE `warehouse_columns` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`hash` text NOT NULL,
	`columns` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `warehouse_columns_hash_unique` ON `warehouse_columns` (`hash`);--> statement-breakpoint
ALTER TABLE `warehouse_staged` ADD `columns_id` integer;