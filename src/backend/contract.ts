/**
 * Where an instance keeps its state: SQLite in the data dir (one process; the default) or
 * PostgreSQL (cluster mode, `--database`). app.ts builds the same pipeline, routes and jobs on
 * either; what differs is here: the stores, how intake's commits reach the processor, which
 * partitions this instance works, and which instance runs the background jobs.
 */
import type { Db } from "../../db";
import type { CatalogStore } from "../catalog/store";
import type { SingletonName } from "../cluster/types";
import type { ConfigStore } from "../control-plane/config-store";
import type { ControlPlaneStore } from "../control-plane/store";
import type { EventLog } from "../gateway/store";
import type { GroupCommitWriter } from "../gateway/group-commit";
import type { StorageHealth } from "../lib/storage-health";
import type { DeliveriesStore, PartitionWork, StatsStore } from "../pipeline/store";
import type { LiveEvents } from "../pipeline/live-events";
import type { OutcomeWriter } from "../pipeline/outcomes";
import type { Processor } from "../pipeline/processor";
import type { Router } from "../pipeline/router";
import type { QueueForgetter } from "../regulations/deletion";
import type { RegulationsStore } from "../regulations/store";
import type { SourceStateStore } from "../sources/state-store";
import type { TrackingPlanStore } from "../tracking-plans/store";
import type { SuppressionIndex } from "../regulations/suppression";
import type { StagedRowsLocation, WarehouseStore } from "../warehouse/store";

/** A background job: started on the instance that runs it, stopped before it gives it up. */
export interface BackgroundJob {
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
  /** Looks for work now (jobs queued by another instance's API call, in a cluster). */
  wake?(): void;
}

/** The router's queues as the deliveries API and the deletion runner change them. */
export interface QueueSignals extends QueueForgetter {
  /** A destination's aborted deliveries were put back in its queue. */
  reload(destinationId: string): void;
}

export interface Backend {
  readonly kind: "sqlite" | "postgres";
  readonly config: ConfigStore;
  readonly controlPlane: ControlPlaneStore;
  readonly stats: StatsStore;
  readonly regulations: RegulationsStore;
  /** The event catalog's own read of the events and its rows. */
  readonly catalog: CatalogStore;
  /** Webhook mappings' state (Shopify's identities), kept where RudderStack uses Redis. */
  readonly sourceState: SourceStateStore;
  /** Tracking plans and their versions. */
  readonly trackingPlans: TrackingPlanStore;
  /** Loaded: every regulation in force applies from the first event. */
  readonly suppression: SuppressionIndex;
  readonly deliveries: DeliveriesStore;
  readonly warehouse: WarehouseStore;
  /** Where the warehouse's load thread reads staged rows. */
  readonly stagedRows: StagedRowsLocation;
  readonly events: EventLog;
  readonly live: LiveEvents;
  /** The partitions this instance works. */
  readonly work: PartitionWork;
  /** Where an API write the database refused is reported (SQLite: the file's health). */
  readonly storage?: StorageHealth;
  /** SQLite only: the database and intake's writer (tools and tests). */
  readonly db?: Db;
  readonly writer?: GroupCommitWriter;
  /** Wires intake's commits to the processor; answers what replays and deletions tell the routers. */
  connect(processor: Processor, router: Router, outcomes: OutcomeWriter): QueueSignals;
  /** Resolves once every event accepted so far is committed. */
  settled(): Promise<void>;
  /** Registers a job: SQLite runs it from start(); a cluster runs it on the one instance holding its lease. */
  singleton(name: SingletonName, job: BackgroundJob): void;
  /** Starts the jobs, and in a cluster joins it (takes leases). */
  start(): Promise<void>;
  /** Stops the jobs and intake (every event accepted is committed when it resolves). */
  stopJobs(): Promise<void>;
  /** Last: leaves the cluster, closes the database. */
  close(): Promise<void>;
}
