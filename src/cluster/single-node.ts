/**
 * The single-node twin of the lease cluster (design §2.5), for SQLite: one partition (0), held
 * from start() to stop(); every registered singleton runs from start() (or from its
 * registration, when that comes later) to stop(). No database, no timers.
 */
import type { Cluster, LeaseFence, PartitionListener, SingletonName, SingletonRunner } from "./types";

const ALL: ReadonlySet<number> = Object.freeze(new Set([0])) as ReadonlySet<number>;
const NONE: ReadonlySet<number> = Object.freeze(new Set<number>()) as ReadonlySet<number>;
const FENCE: LeaseFence = Object.freeze({ partition: 0, epoch: 0 });

export class SingleNodeCluster implements Cluster {
  readonly partitions = 1;
  private running = false;
  private readonly listeners: PartitionListener[] = [];
  private readonly singletons = new Map<SingletonName, { run: SingletonRunner; started: boolean }>();

  constructor(readonly instanceId: string = `single-${process.pid}`) {}

  partitionOf(_userKey: string): number {
    return 0;
  }

  held(): ReadonlySet<number> {
    return this.running ? ALL : NONE;
  }

  fence(p: number): LeaseFence | undefined {
    return this.running && p === 0 ? FENCE : undefined;
  }

  onPartitions(fn: PartitionListener): void {
    this.listeners.push(fn);
  }

  singleton(name: SingletonName, run: SingletonRunner): void {
    if (this.singletons.has(name)) throw new Error(`singleton ${name} is already registered`);
    const s = { run, started: false };
    this.singletons.set(name, s);
    if (this.running) {
      s.started = true;
      run.start();
    }
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    for (const fn of this.listeners) fn([0], []);
    for (const s of this.singletons.values()) {
      s.started = true;
      s.run.start();
    }
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    await Promise.all(
      [...this.singletons.values()].filter((s) => s.started).map((s) => ((s.started = false), s.run.stop())),
    );
    for (const fn of this.listeners) fn([], [0]);
  }
}
