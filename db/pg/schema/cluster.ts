/**
 * Tables only cluster mode has (design §3.3–3.5). Lease and heartbeat times are `timestamptz`
 * and always written with the database's now(), so instance clocks never matter; they are
 * the one place this schema does not use epoch milliseconds, because no SQLite code reads them.
 *
 * The rows every instance expects (settings, 256 partition leases and processor cursors, the
 * three singleton leases, the two epochs) are inserted by a custom migration
 * (db/pg/migrations/0001_cluster-seed.sql), with PARTITIONS below; a test checks they agree.
 */
import { sql } from "drizzle-orm";
import { bigint, pgTable, smallint, text, timestamp } from "drizzle-orm/pg-core";
import { xid8 } from "./columns";

/** Users are spread over this many partitions: fixed by the first migration, never changed. */
export const PARTITIONS = 256;
export const SINGLETONS = ["maintenance", "deletions", "warehouse"] as const;
export const EPOCHS = ["suppression", "config"] as const;

const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

/** name → value; 'partitions' = '256'. */
export const clusterSettings = pgTable("cluster_settings", {
  name: text("name").primaryKey(),
  value: text("value").notNull(),
});

/** Live instances: a heartbeat newer than the lease TTL means alive. */
export const clusterInstances = pgTable("cluster_instances", {
  id: text("id").primaryKey(),
  startedAt: tstz("started_at").notNull().defaultNow(),
  heartbeatAt: tstz("heartbeat_at").notNull(),
  version: text("version"),
  host: text("host"),
});

/** One row per partition; owner NULL = free. `epoch` grows at every acquire (the fence). */
export const partitionLeases = pgTable("partition_leases", {
  partition: smallint("partition").primaryKey(),
  owner: text("owner"),
  epoch: bigint("epoch", { mode: "number" }).notNull().default(0),
  expiresAt: tstz("expires_at"),
});

/** The same mechanics for work one instance runs at a time: maintenance, deletions, warehouse. */
export const singletonLeases = pgTable("singleton_leases", {
  name: text("name").primaryKey(),
  owner: text("owner"),
  epoch: bigint("epoch", { mode: "number" }).notNull().default(0),
  expiresAt: tstz("expires_at"),
});

/** The processor's position per partition: the last (tx, id) of events fanned out. */
export const processorCursors = pgTable("processor_cursors", {
  partition: smallint("partition").primaryKey(),
  tx: xid8("tx").notNull().default(sql`'0'`),
  id: bigint("id", { mode: "number" }).notNull().default(0),
});

/** Counters bumped by the writes every instance must notice: 'suppression', 'config'. */
export const clusterEpochs = pgTable("cluster_epochs", {
  name: text("name").primaryKey(),
  value: bigint("value", { mode: "number" }).notNull(),
});
