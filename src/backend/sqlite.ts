/**
 * The default backend: everything in one SQLite file in the data dir, one process. Intake's
 * group commit writes events on its own connection and reports each commit to the processor;
 * the single node holds partition 0 and runs every background job.
 */
import { join } from "node:path";
import { openDatabase } from "../../db";
import type { SingletonName } from "../cluster/types";
import { SqliteConfigStore } from "../control-plane/config-store";
import { Checkpoints, WAL_FILE_LIMIT_BYTES } from "../gateway/checkpoints";
import { RecentMessageIds } from "../gateway/dedup";
import { GroupCommitWriter } from "../gateway/group-commit";
import type { Logger } from "../lib/logger";
import { secureDataDir } from "../lib/private-files";
import type { Metrics } from "../lib/metrics";
import { storageHealth } from "../lib/storage-health";
import { SINGLE_NODE_PARTITION } from "../pipeline/store";
import { LiveEvents } from "../pipeline/live-events";
import { SuppressionIndex } from "../regulations/suppression";
import type { Settings } from "../settings";
import type { Backend, BackgroundJob } from "./contract";
import { SqliteCatalogStore } from "../storage/sqlite/catalog";
import { SqliteControlPlaneStore } from "../storage/sqlite/control-plane";
import { SqliteDeliveriesStore, eventIdFloor } from "../storage/sqlite/deliveries";
import { SqliteEventLog } from "../storage/sqlite/event-log";
import { SqliteRegulationsStore } from "../storage/sqlite/regulations";
import { SqliteStatsStore } from "../storage/sqlite/stats";
import { SqliteSourceStateStore } from "../storage/sqlite/source-state";
import { SqliteTrackingPlanStore } from "../storage/sqlite/tracking-plans";
import { SqliteWarehouseStore } from "../storage/sqlite/warehouse";

export async function openSqliteBackend(settings: Settings, log: Logger, metrics: Metrics, now: () => number): Promise<Backend> {
  const file = join(settings.dataDir, "sluice.db");
  secureDataDir(settings.dataDir, file, log);
  const db = openDatabase(file, { synchronous: settings.synchronous });
  // Checkpoints are run by gateway/checkpoints.ts, never automatically by a connection.
  db.$client.exec("PRAGMA wal_autocheckpoint = 0");
  db.$client.exec(`PRAGMA journal_size_limit = ${WAL_FILE_LIMIT_BYTES}`);
  const writer = new GroupCommitWriter(file, settings.synchronous, eventIdFloor(db.$client));
  const checkpoints = new Checkpoints(file, writer, log, metrics);
  await checkpoints.start();
  const recent = new RecentMessageIds(settings.retentionHours * 3600_000, now);
  recent.load(db.$client);
  const regulations = new SqliteRegulationsStore(db);
  const jobs: BackgroundJob[] = [];
  const config = new SqliteConfigStore(db);

  return {
    kind: "sqlite",
    db,
    writer,
    config,
    controlPlane: new SqliteControlPlaneStore(db),
    stats: new SqliteStatsStore(db),
    regulations,
    sourceState: new SqliteSourceStateStore(db),
    catalog: new SqliteCatalogStore(db),
    trackingPlans: new SqliteTrackingPlanStore(db),
    suppression: await SuppressionIndex.load(regulations),
    deliveries: new SqliteDeliveriesStore(db),
    warehouse: new SqliteWarehouseStore(db),
    stagedRows: { kind: "sqlite", file: db.$client.filename },
    events: new SqliteEventLog(writer, recent),
    live: new LiveEvents(),
    work: SINGLE_NODE_PARTITION,
    storage: storageHealth(file),
    connect(processor, router) {
      writer.onCommit((newest) => processor.wake(newest));
      return router;
    },
    settled: () => writer.settled(),
    singleton(_name: SingletonName, job: BackgroundJob) {
      jobs.push(job);
    },
    async start() {
      for (const job of jobs) await job.start();
    },
    async stopJobs() {
      for (const job of jobs) await job.stop();
      await writer.close();
      await checkpoints.close();
    },
    async close() {
      config.close();
      try {
        db.$client.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      } catch {}
      db.$client.close();
    },
  };
}
