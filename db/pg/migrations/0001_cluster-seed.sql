-- Custom SQL migration (drizzle-kit generate --custom): the rows cluster mode expects to exist.
-- 256 = PARTITIONS in db/pg/schema/cluster.ts (test/pg-schema.test.ts checks they agree).
-- Fixed here for the life of the database: changing it would move users between partitions.
INSERT INTO "cluster_settings" ("name", "value") VALUES ('partitions', '256') ON CONFLICT DO NOTHING;
--> statement-breakpoint
INSERT INTO "partition_leases" ("partition") SELECT p FROM generate_series(0, 255) AS p ON CONFLICT DO NOTHING;
--> statement-breakpoint
INSERT INTO "processor_cursors" ("partition") SELECT p FROM generate_series(0, 255) AS p ON CONFLICT DO NOTHING;
--> statement-breakpoint
INSERT INTO "singleton_leases" ("name") VALUES ('maintenance'), ('deletions'), ('warehouse') ON CONFLICT DO NOTHING;
--> statement-breakpoint
INSERT INTO "cluster_epochs" ("name", "value") VALUES ('suppression', 0), ('config', 0) ON CONFLICT DO NOTHING;
