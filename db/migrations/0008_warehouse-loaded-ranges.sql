CREATE TABLE `warehouse_loaded_ranges` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`destination_id` text NOT NULL,
	`load_id` text NOT NULL,
	`from_id` integer NOT NULL,
	`to_id` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `warehouse_loaded_ranges_destination` ON `warehouse_loaded_ranges` (`destination_id`,`to_id`);--> statement-breakpoint
CREATE INDEX `warehouse_loaded_ranges_load` ON `warehouse_loaded_ranges` (`load_id`);