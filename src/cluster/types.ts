/**
 * Cluster mode's seam (src/cluster/README.md §2.5): which partitions and singleton jobs this
 * instance may work on. The router and processor work only on `held()` partitions and write
 * through `fence(p)`; background jobs that must run once per cluster register with
 * `singleton(...)`. SQLite runs the single-node twin (src/cluster/single-node.ts), PostgreSQL
 * the lease implementation (src/cluster/leases.ts), so one code path serves both stores.
 *
 * The message bus of §2.5 is built in bus.ts and is not part of this interface yet.
 */

/** Jobs only one instance of a cluster runs at a time (design §3.3 "Singletons"). */
export type SingletonName = "maintenance" | "deletions" | "warehouse";

/** The proof a write is made by the current holder of a partition's lease (design §3.3 "Fencing"). */
export interface LeaseFence {
  readonly partition: number;
  /** Grows at every acquire of the partition; a write carrying an older one writes nothing. */
  readonly epoch: number;
}

/** A job run by the holder of a singleton lease: start() on gain, stop() on loss. */
export interface SingletonRunner {
  start(): void;
  /** Resolves when the job no longer writes. Awaited (bounded) before a graceful release. */
  stop(): Promise<void>;
}

export type PartitionListener = (gained: number[], lost: number[]) => void;

export interface Cluster {
  readonly instanceId: string;
  /** How many partitions users are spread over (SQLite: 1, PostgreSQL: cluster_settings.partitions, 256). */
  readonly partitions: number;
  /** The partition of a user (userId, else anonymousId). Stable across instances and versions. */
  partitionOf(userKey: string): number;
  /** The partitions this instance may work on now. A snapshot: a new set after every change. */
  held(): ReadonlySet<number>;
  /**
   * The fence for writes to partition p: defined while p is held, and also while p is being
   * released gracefully (so in-flight outcomes can still be written before the lease row is
   * cleared). Undefined once the lease is lost or released.
   */
  fence(p: number): LeaseFence | undefined;
  /** Called after every change of held(), synchronously, with the partitions gained and lost. */
  onPartitions(fn: PartitionListener): void;
  /** Registers a job run by this instance while it holds the named singleton lease. */
  singleton(name: SingletonName, run: SingletonRunner): void;
  start(): Promise<void>;
  /** Stops every singleton, releases every lease (after the release hook) and leaves the cluster. */
  stop(): Promise<void>;
}
