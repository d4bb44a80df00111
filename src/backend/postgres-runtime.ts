/**
 * What one instance runs on PostgreSQL besides its HTTP app (cluster mode, src/cluster/README.md): the
 * database (migrated under the advisory lock, so many instances may start at once), the bus and
 * the epoch watch, and the stores that have a PostgreSQL implementation, wired so that a change
 * made on any instance reaches this one's caches (design §3.4–3.5):
 * - control plane → ClusterConfigStore, reloaded on the 'config' epoch;
 * - regulations → the suppression index, caught up on the 'suppression' epoch; intake's inserts
 *   are guarded by the epoch this instance has applied;
 * - intake → PgIntakeLog;
 * - the deliveries API, overview, retention and /health → PgStatsStore.
 *
 * Not here yet (src/cluster/README.md §4 has the plan): the delivery engine on partition leases,
 * the singletons (retention, deletions, warehouse loads), the warehouse's staging, live events
 * across instances, and `serve --database`.
 */
import { closePostgres, openPostgres, type PgDb } from "../../db/pg";
import { ClusterConfigStore } from "../control-plane/config-store";
import type { Logger } from "../lib/logger";
import { SuppressionIndex } from "../regulations/suppression";
import { PgControlPlaneStore } from "../storage/postgres/control-plane";
import { PgEventLog, PgIntakeLog } from "../storage/postgres/event-log";
import { PgRegulationsStore } from "../storage/postgres/regulations";
import { PgStatsStore } from "../storage/postgres/stats";
import { Bus, EpochWatch } from "../cluster/bus";

export interface ClusterRuntimeOptions {
  /** postgres://… */
  url: string;
  /** The schema that holds Sluice's tables (the server's default schema when absent). */
  schema?: string;
  instanceId?: string;
  log: Logger;
  /** Connections of this instance's pool (the bus holds one more for LISTEN). */
  poolSize?: number;
  /** Period of the epoch watch's fallback poll (default 1000 ms). */
  pollMs?: number;
}

export interface ClusterRuntime {
  readonly instanceId: string;
  readonly db: PgDb;
  readonly bus: Bus;
  readonly watch: EpochWatch;
  readonly controlPlane: PgControlPlaneStore;
  readonly config: ClusterConfigStore;
  readonly regulations: PgRegulationsStore;
  readonly suppression: SuppressionIndex;
  readonly events: PgIntakeLog;
  /** The deliveries API's, the overview's, retention's and /health's reads, across every instance. */
  readonly stats: PgStatsStore;
  /** How many partitions users are spread over (cluster_settings). */
  readonly partitions: number;
  close(): Promise<void>;
}

export async function openClusterRuntime(opts: ClusterRuntimeOptions): Promise<ClusterRuntime> {
  const instanceId = opts.instanceId ?? crypto.randomUUID();
  const db = await openPostgres(opts.url, { searchPath: opts.schema, max: opts.poolSize ?? 10, applicationName: `sluice ${instanceId}`.slice(0, 63) });
  const stops: Array<() => Promise<void>> = [() => closePostgres(db)];
  const close = async () => {
    for (const stop of stops.splice(0).reverse()) await stop().catch((err) => opts.log.warn("cluster runtime: a part did not stop cleanly", { err }));
  };
  try {
    const [row] = await db.$client`SELECT value FROM cluster_settings WHERE name = 'partitions'`;
    const partitions = Number(row?.value);
    if (!Number.isInteger(partitions) || partitions < 1) throw new Error("cluster_settings has no 'partitions' row; the PostgreSQL migrations did not run");

    const bus = new Bus({ sql: db.$client, instanceId, logger: opts.log });
    await bus.start();
    stops.push(() => bus.stop());
    const watch = new EpochWatch({ bus, pollMs: opts.pollMs, logger: opts.log });
    stops.push(() => watch.stop());

    // Each write tells every instance at its commit (the NOTIFY is sent inside its transaction).
    const controlPlane = new PgControlPlaneStore(db, { afterWrite: (tx, epoch) => bus.publish("config", { epoch }, tx) });
    const config = new ClusterConfigStore(controlPlane, watch);
    const regulations = new PgRegulationsStore(db, { afterWrite: (tx, epoch) => bus.publish("suppression", { epoch }, tx) });
    const suppression = await SuppressionIndex.load(regulations);
    suppression.follow(watch, regulations);
    // Runs the first config load and the first catch-up; nothing is served before.
    await watch.start();

    const events = new PgIntakeLog(new PgEventLog(db.$client, { partitions, epoch: () => watch.current("suppression") }), () => watch.refresh());
    const stats = new PgStatsStore(db.$client, events.storage);
    return { instanceId, db, bus, watch, controlPlane, config, regulations, suppression, events, stats, partitions, close };
  } catch (err) {
    await close();
    throw err;
  }
}
