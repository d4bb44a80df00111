/**
 * Cluster mode's backend (`--database`): all state in PostgreSQL, shared by every instance.
 * Besides the runtime's stores and caches (postgres-runtime.ts): partition leases decide which
 * partitions this instance's processor and router work, singleton leases which instance runs
 * retention, deletions and warehouse loads, and the bus carries live events (live-relay.ts) and
 * the pipeline's signals (pipeline-signals.ts). The leases and the bus are cluster/'s.
 */
import { PgCatalogStore } from "../storage/postgres/catalog";
import { PgSourceStateStore } from "../storage/postgres/source-state";
import { PgTrackingPlanStore } from "../storage/postgres/tracking-plans";
import type { SingletonName } from "../cluster/types";
import type { Logger } from "../lib/logger";
import type { PartitionWork } from "../pipeline/store";
import type { Settings } from "../settings";
import type { Backend, BackgroundJob } from "./contract";
import { PgDeliveriesStore } from "../storage/postgres/deliveries";
import { PgWarehouseStore } from "../storage/postgres/warehouse";
import { VERSION } from "../version";
import { LeaseCluster } from "../cluster/leases";
import { LiveRelay } from "./live-relay";
import { openClusterRuntime } from "./postgres-runtime";
import { PipelineSignals } from "./pipeline-signals";

/** The processor's safety net: partitions whose notification was lost are read at least this often. */
const PROCESSOR_POLL_MS = 1000;
/**
 * How often the instance running a background job looks for work queued elsewhere: a deletion
 * job made by a regulation, or a sync asked for, on another instance's API starts within this.
 */
const JOB_POLL_MS = 2000;

export async function openClusterBackend(settings: Settings, log: Logger): Promise<Backend> {
  const url = settings.database!;
  const rt = await openClusterRuntime({ url, schema: settings.databaseSchema, poolSize: settings.databasePool, log });
  const stops: Array<() => Promise<void> | void> = [() => rt.close()];
  try {
    let beforeRelease: (partitions: number[]) => Promise<void> = async () => {};
    const cluster = new LeaseCluster({
      sql: rt.db.$client,
      instanceId: rt.instanceId,
      partitions: rt.partitions,
      version: VERSION,
      logger: log,
      beforeRelease: (partitions) => beforeRelease(partitions),
    });
    const held = { list: [] as number[] };
    cluster.onPartitions(() => {
      held.list = [...cluster.held()].sort((a, b) => a - b);
    });
    const work: PartitionWork = {
      partitions: () => held.list,
      fence: (p) => cluster.fence(p),
      leaseLeftMs: (p) => cluster.leaseLeftMs(p),
      partitionOf: (userKey) => cluster.partitionOf(userKey),
      onChange: (fn) => cluster.onPartitions(fn),
    };
    const live = new LiveRelay({ bus: rt.bus, logger: log });
    live.start();
    stops.push(() => live.stop());
    const deliveries = new PgDeliveriesStore(rt.db.$client, { instanceId: rt.instanceId });
    let signals: PipelineSignals | undefined;
    let poll: Timer | undefined;
    let joined = false;
    let leaving = false;

    return {
      kind: "postgres",
      config: rt.config,
      controlPlane: rt.controlPlane,
      stats: rt.stats,
      regulations: rt.regulations,
      sourceState: new PgSourceStateStore(rt.db),
      catalog: new PgCatalogStore(rt.db.$client, { instanceId: rt.instanceId }),
      trackingPlans: new PgTrackingPlanStore(rt.db),
      suppression: rt.suppression,
      deliveries,
      warehouse: new PgWarehouseStore(rt.db),
      stagedRows: { kind: "postgres", url, schema: settings.databaseSchema },
      events: rt.events,
      live,
      work,
      connect(processor, router, outcomes) {
        signals = new PipelineSignals(rt.bus, work, processor, router, log);
        signals.start();
        rt.events.onStored((partitions) => signals!.eventsStored(partitions));
        // Partitions gained: their events since their saved cursors are this instance's now.
        cluster.onPartitions((gained) => {
          if (gained.length) processor.wake();
        });
        poll = setInterval(() => processor.wake(), PROCESSOR_POLL_MS);
        // Released gracefully: outcomes queued for them are written first; at shutdown the
        // router first lets its running deliveries finish, so none is sent twice by the next holder.
        beforeRelease = async () => {
          if (leaving) await router.stop();
          await outcomes.flush();
        };
        return signals;
      },
      settled: () => rt.events.settled(),
      singleton(name: SingletonName, job: BackgroundJob) {
        let timer: Timer | undefined;
        cluster.singleton(name, {
          start: () => {
            void Promise.resolve(job.start()).catch((err) => log.error("a background job did not start", { err, job: name }));
            if (job.wake) timer = setInterval(() => job.wake!(), JOB_POLL_MS);
          },
          stop: async () => {
            clearInterval(timer);
            await job.stop();
          },
        });
      },
      async start() {
        await cluster.start();
        joined = true;
      },
      async stopJobs() {
        clearInterval(poll);
        leaving = true;
        // Leaves the cluster: singletons stop, partitions are released (after beforeRelease).
        if (joined) await cluster.stop();
        joined = false;
        await rt.events.settled();
      },
      async close() {
        clearInterval(poll);
        if (joined) await cluster.stop().catch((err) => log.warn("could not leave the cluster cleanly", { err }));
        signals?.stop();
        for (const stop of stops.splice(0).reverse()) await Promise.resolve(stop()).catch((err) => log.warn("cluster backend: a part did not stop cleanly", { err }));
      },
    };
  } catch (err) {
    for (const stop of stops.splice(0).reverse()) await Promise.resolve(stop()).catch(() => {});
    throw err;
  }
}
