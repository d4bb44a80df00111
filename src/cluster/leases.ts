/**
 * Cluster mode on PostgreSQL (src/cluster/README.md §3.3): partition and singleton leases.
 *
 * - Every lease time is the database's now(); instance clocks never matter. Local deadlines use
 *   the monotonic clock (performance.now()).
 * - Renewal, every `renewMs`, is one statement: heartbeat in cluster_instances, renew the leases
 *   this instance believes it holds (only those still unexpired), read the live instances. A
 *   lease missing from the answer is lost at once.
 * - Acquire, every `acquireMs`, is one statement (UPDATE … WHERE partition IN (SELECT … FOR
 *   UPDATE SKIP LOCKED)) that also reads the live instances. Each partition's home follows from
 *   rendezvous hashing with bounded loads over the live instances (src/cluster/hash.ts); an instance takes free or expired partitions
 *   whose home it is, and any partition free or expired for over `orphanGraceMs` (its home is
 *   gone, or not taking it). It releases, gracefully, held partitions whose home is another live
 *   instance: they leave held() at once, `beforeRelease(partitions)` runs (bounded by
 *   `releaseTimeoutMs`; renewals go on meanwhile, and fence() still answers), and only then is
 *   the lease row cleared (owner NULL, expires_at = now()).
 * - Safety: a lease confirmed by a statement *sent* at t (local clock) is dropped locally at
 *   t + ttl − margin unless a later renewal confirms it. Since t precedes the server's now(),
 *   this instance stops working a partition before anybody else may take it.
 * - Every acquire bumps the lease's epoch; writes carry {partition, epoch} and go through
 *   `fenceCte`, so a write by an instance that lost the lease writes nothing.
 * - Lease rows are locked in partition order by every statement that waits for their locks
 *   (renewal, release, and the fence's FOR SHARE): a renewal and a fenced write of the same
 *   instance, which lock many of the same rows, deadlocked when each took them in its own order
 *   (PostgreSQL then aborts one: a group of delivery outcomes, or the renewal). Acquire skips
 *   locked rows and never waits.
 * - Singleton leases (maintenance, deletions, warehouse) follow the same rules, homed by the
 *   same hash over the singleton's name: start() on gain, stop() on loss (awaited, bounded,
 *   before a graceful release).
 *
 * Takeover after kill -9: the dead instance's leases expire at most `ttlMs` after its last
 * renewal, at the same moment its heartbeat stops counting as live; the others notice within
 * one acquire period and take its partitions at the next one: ttl + 2 × acquire (+ statement
 * latency), 12 s with the defaults, under the 15 s the issue asks for.
 */
import { hostname } from "node:os";
import type { SQL } from "bun";
import { silentLogger, type Logger } from "../lib/logger";
import { Rendezvous, partitionOfKey } from "./hash";
import type { Cluster, LeaseFence, PartitionListener, SingletonName, SingletonRunner } from "./types";

export interface LeaseClusterOptions {
  /** A Bun.sql client on the schema that holds the cluster tables (e.g. the PgDb's `$client`). */
  sql: SQL;
  instanceId?: string;
  /** Lease lifetime (default 10 s). Also the heartbeat age after which an instance is not live. */
  ttlMs?: number;
  /** Renewal period (default 2 s). Must leave room before ttl − margin. */
  renewMs?: number;
  /** Acquire period (default 1 s). */
  acquireMs?: number;
  /** Local safety margin (default 2 s, at most ttl / 3 when ttl is small): stop at sent + ttl − margin. */
  marginMs?: number;
  /** A partition free or expired for longer than this may be taken by any instance (default 2 s). */
  orphanGraceMs?: number;
  /** Bound on beforeRelease / a singleton's stop() before the row is cleared anyway (default 8 s). */
  releaseTimeoutMs?: number;
  /**
   * Called with partitions about to be released gracefully, after they have left held(). The
   * lease row is cleared only after it resolves (or after `releaseTimeoutMs`): stop starting
   * work on them, wait for in-flight work, flush fenced outcomes.
   */
  beforeRelease?: (partitions: number[]) => Promise<void>;
  /** Partition count; read from cluster_settings at start when absent. */
  partitions?: number;
  version?: string;
  host?: string;
  logger?: Logger;
}

interface Lease {
  epoch: number;
  /** Local send time of the last statement that confirmed the lease (acquire or renewal). */
  confirmedAt: number;
}

interface Single {
  run: SingletonRunner;
  lease?: Lease;
  releasing?: Lease;
}

const mono = () => performance.now();

/** A PostgreSQL array literal of plain values (numbers, or names of [a-z_]). */
function arr(values: Iterable<number | string>): string {
  return `{${[...values].join(",")}}`;
}

function parseJson<T>(v: unknown): T {
  return (typeof v === "string" ? JSON.parse(v) : v) as T;
}

async function bounded<T>(p: Promise<T>, ms: number, what: string): Promise<void> {
  let timer: Timer | undefined;
  try {
    await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const RENEW = `
WITH hb AS (
  INSERT INTO cluster_instances (id, started_at, heartbeat_at, version, host) VALUES ($1, now(), now(), $2, $3)
  ON CONFLICT (id) DO UPDATE SET heartbeat_at = now() RETURNING 1),
ren AS (
  UPDATE partition_leases SET expires_at = now() + $4 * interval '1 millisecond'
   WHERE owner = $1 AND expires_at > now() AND partition IN (
     SELECT partition FROM partition_leases
      WHERE owner = $1 AND partition = ANY($5::smallint[]) AND expires_at > now()
      ORDER BY partition
      FOR UPDATE)
  RETURNING partition, epoch),
sren AS (
  UPDATE singleton_leases SET expires_at = now() + $4 * interval '1 millisecond'
   WHERE owner = $1 AND name = ANY($6::text[]) AND expires_at > now()
  RETURNING name, epoch)
SELECT (SELECT count(*) FROM hb)::int AS hb,
       (SELECT coalesce(json_agg(json_build_array(partition, epoch)), '[]'::json) FROM ren) AS parts,
       (SELECT coalesce(json_agg(json_build_array(name, epoch)), '[]'::json) FROM sren) AS singles,
       (SELECT coalesce(json_agg(id), '[]'::json) FROM cluster_instances
         WHERE heartbeat_at > now() - $4 * interval '1 millisecond' OR id = $1) AS live`;

const ACQUIRE = `
WITH p AS (
  UPDATE partition_leases l SET owner = $1, epoch = l.epoch + 1, expires_at = now() + $2 * interval '1 millisecond'
   WHERE l.partition IN (
     SELECT partition FROM partition_leases
      WHERE (partition = ANY($3::smallint[]) AND (owner IS NULL OR owner = $1 OR expires_at <= now()))
         OR (partition = ANY($4::smallint[]) AND coalesce(expires_at, '-infinity') <= now() - $5 * interval '1 millisecond')
      ORDER BY partition
      FOR UPDATE SKIP LOCKED)
  RETURNING l.partition, l.epoch),
s AS (
  UPDATE singleton_leases l SET owner = $1, epoch = l.epoch + 1, expires_at = now() + $2 * interval '1 millisecond'
   WHERE l.name IN (
     SELECT name FROM singleton_leases
      WHERE (name = ANY($6::text[]) AND (owner IS NULL OR owner = $1 OR expires_at <= now()))
         OR (name = ANY($7::text[]) AND coalesce(expires_at, '-infinity') <= now() - $5 * interval '1 millisecond')
      ORDER BY name
      FOR UPDATE SKIP LOCKED)
  RETURNING l.name, l.epoch)
SELECT (SELECT coalesce(json_agg(json_build_array(partition, epoch)), '[]'::json) FROM p) AS parts,
       (SELECT coalesce(json_agg(json_build_array(name, epoch)), '[]'::json) FROM s) AS singles,
       (SELECT coalesce(json_agg(id), '[]'::json) FROM cluster_instances
         WHERE heartbeat_at > now() - $2 * interval '1 millisecond' OR id = $1) AS live`;

const RELEASE_PARTITIONS = `
UPDATE partition_leases SET owner = NULL, expires_at = now()
 WHERE owner = $1 AND partition IN (
   SELECT l.partition FROM partition_leases l
     JOIN unnest($2::smallint[], $3::bigint[]) AS f(partition, epoch) ON l.partition = f.partition AND l.epoch = f.epoch
    WHERE l.owner = $1
    ORDER BY l.partition
    FOR UPDATE OF l)`;

const RELEASE_SINGLETON = `UPDATE singleton_leases SET owner = NULL, expires_at = now() WHERE name = $2 AND epoch = $3 AND owner = $1`;

export class LeaseCluster implements Cluster {
  readonly instanceId: string;
  private _partitions: number;
  private readonly sql: SQL;
  readonly ttlMs: number;
  readonly renewMs: number;
  readonly acquireMs: number;
  readonly marginMs: number;
  readonly orphanGraceMs: number;
  readonly releaseTimeoutMs: number;
  private beforeRelease?: (partitions: number[]) => Promise<void>;
  private readonly version: string | null;
  private readonly host: string;
  private readonly log: Logger;

  /** Partitions worked on (in held()). */
  private readonly leases = new Map<number, Lease>();
  /** Partitions being released gracefully: not in held(), still renewed and fenced. */
  private readonly releasing = new Map<number, Lease>();
  private heldView: ReadonlySet<number> = new Set();
  private readonly listeners: PartitionListener[] = [];
  private readonly singles = new Map<SingletonName, Single>();
  private live: Rendezvous | undefined;
  private liveIds: string[] = [];

  private state: "new" | "running" | "stopping" | "stopped" = "new";
  private loopDone: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private sleepTimer: Timer | undefined;
  private nextRenew = 0;
  private nextAcquire = 0;
  private safetyTimer: Timer | undefined;
  private readonly releases = new Set<Promise<void>>();
  private lastRenewOk = 0;

  constructor(opts: LeaseClusterOptions) {
    this.sql = opts.sql;
    this.instanceId = opts.instanceId ?? `${hostname()}-${process.pid}-${crypto.randomUUID().slice(0, 8)}`;
    this.ttlMs = opts.ttlMs ?? 10_000;
    this.renewMs = opts.renewMs ?? 2_000;
    this.acquireMs = opts.acquireMs ?? 1_000;
    this.marginMs = opts.marginMs ?? Math.min(2_000, Math.floor(this.ttlMs / 3));
    this.orphanGraceMs = opts.orphanGraceMs ?? 2_000;
    this.releaseTimeoutMs = opts.releaseTimeoutMs ?? 8_000;
    this.beforeRelease = opts.beforeRelease;
    this._partitions = opts.partitions ?? 0;
    this.version = opts.version ?? null;
    this.host = opts.host ?? hostname();
    this.log = opts.logger ?? silentLogger;
    if (!(this.marginMs > 0 && this.renewMs > 0 && this.acquireMs > 0)) throw new Error("lease periods must be positive");
    if (this.renewMs >= this.ttlMs - this.marginMs) {
      throw new Error(`renewMs (${this.renewMs}) must be below ttlMs − marginMs (${this.ttlMs - this.marginMs})`);
    }
  }

  get partitions(): number {
    return this._partitions;
  }

  partitionOf(userKey: string): number {
    return partitionOfKey(userKey, this._partitions);
  }

  held(): ReadonlySet<number> {
    return this.heldView;
  }

  fence(p: number): LeaseFence | undefined {
    const l = this.leases.get(p) ?? this.releasing.get(p);
    return l ? { partition: p, epoch: l.epoch } : undefined;
  }

  /**
   * How long, in ms, this instance may still work on partition p: until the local safety
   * deadline (last confirmation + ttl − margin), before which no other instance can hold it.
   * A send begun later, or lasting longer, could overlap the next holder's (0 when not held).
   */
  leaseLeftMs(p: number): number {
    const l = this.leases.get(p) ?? this.releasing.get(p);
    return l ? Math.max(0, l.confirmedAt + this.ttlMs - this.marginMs - mono()) : 0;
  }

  /** The fence of a singleton lease held (or being released) here. */
  singletonFence(name: SingletonName): { name: SingletonName; epoch: number } | undefined {
    const s = this.singles.get(name);
    const l = s?.lease ?? s?.releasing;
    return l ? { name, epoch: l.epoch } : undefined;
  }

  /** Singletons this instance runs now. */
  singletonsHeld(): SingletonName[] {
    return [...this.singles].filter(([, s]) => s.lease).map(([n]) => n);
  }

  /** The live instances as of the last renewal or acquire. */
  liveInstances(): readonly string[] {
    return this.liveIds;
  }

  /** Milliseconds since the last successful renewal was sent (Infinity before the first). */
  sinceRenewal(): number {
    return this.lastRenewOk ? mono() - this.lastRenewOk : Infinity;
  }

  onPartitions(fn: PartitionListener): void {
    this.listeners.push(fn);
  }

  /** Sets the release hook later than construction (the router exists after the storage). */
  setBeforeRelease(fn: (partitions: number[]) => Promise<void>): void {
    this.beforeRelease = fn;
  }

  singleton(name: SingletonName, run: SingletonRunner): void {
    if (this.singles.has(name)) throw new Error(`singleton ${name} is already registered`);
    this.singles.set(name, { run });
    if (this.state === "running") this.kick();
  }

  async start(): Promise<void> {
    if (this.state !== "new") throw new Error("a LeaseCluster starts once");
    if (!this._partitions) {
      const [row] = await this.sql`SELECT value FROM cluster_settings WHERE name = 'partitions'`;
      const n = Number(row?.value);
      if (!Number.isInteger(n) || n < 1) throw new Error("cluster_settings has no 'partitions' row; run the PostgreSQL migrations");
      this._partitions = n;
    }
    // Rows of instances gone for long (killed, never stopped) would otherwise stay forever.
    await this.sql`DELETE FROM cluster_instances WHERE heartbeat_at < now() - interval '1 hour'`.catch((err) =>
      this.log.warn("cluster: cleaning up old instances failed", { err }),
    );
    this.state = "running";
    // First renewal before start() resolves: the instance is registered and knows the live set.
    await this.renew().catch((err) => this.log.warn("cluster: first renewal failed", { err }));
    this.nextAcquire = 0;
    this.loopDone = this.loop();
  }

  async stop(): Promise<void> {
    if (this.state === "new") {
      this.state = "stopped";
      return;
    }
    if (this.stopping) return this.stopping;
    this.state = "stopping"; // no more acquires or rebalancing; renewals go on during the release
    this.stopping = (async () => {
      this.releasePartitions([...this.leases.keys()]);
      for (const name of this.singles.keys()) this.releaseSingleton(name);
      while (this.releases.size) await Promise.all([...this.releases]);
      this.state = "stopped";
      this.kick();
      await this.loopDone;
      // An acquire that was in flight when stop() began hands back what it took.
      while (this.releases.size) await Promise.all([...this.releases]);
      clearTimeout(this.safetyTimer);
      await this.sql`DELETE FROM cluster_instances WHERE id = ${this.instanceId}`.catch((err) =>
        this.log.warn("cluster: leaving failed", { err }),
      );
      this.log.info("cluster: left", { instance: this.instanceId });
    })();
    return this.stopping;
  }

  // ---- the loop --------------------------------------------------------------------------

  private async loop(): Promise<void> {
    while (this.state === "running" || this.state === "stopping") {
      try {
        if (mono() >= this.nextRenew) await this.renew();
        if (this.state === "running" && this.live && mono() >= this.nextAcquire) await this.acquire();
      } catch (err) {
        this.log.warn("cluster: lease statement failed", { err });
      }
      if ((this.state as string) === "stopped") break;
      const next = this.state === "running" ? Math.min(this.nextRenew, this.nextAcquire) : this.nextRenew;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        this.sleepTimer = setTimeout(resolve, Math.max(0, next - mono()));
      });
      this.wake = undefined;
    }
  }

  private kick(): void {
    this.nextAcquire = 0;
    clearTimeout(this.sleepTimer);
    this.wake?.();
  }

  private async renew(): Promise<void> {
    const sent = mono();
    this.nextRenew = sent + Math.min(this.renewMs, 500); // retry sooner when this one fails
    const parts = [...this.leases.keys(), ...this.releasing.keys()];
    const names = [...this.singles].filter(([, s]) => s.lease || s.releasing).map(([n]) => n);
    const [row] = await this.sql.unsafe(RENEW, [this.instanceId, this.version, this.host, this.ttlMs, arr(parts), arr(names)]);
    this.nextRenew = sent + this.renewMs;
    this.lastRenewOk = sent;
    const renewed = new Map(parseJson<Array<[number, number]>>(row.parts));
    const lost: number[] = [];
    for (const [p, l] of this.leases) {
      if (renewed.get(p) === l.epoch) l.confirmedAt = sent;
      else lost.push(p);
    }
    for (const [p, l] of this.releasing) {
      if (renewed.get(p) === l.epoch) l.confirmedAt = sent;
      else this.releasing.delete(p);
    }
    if (lost.length) {
      this.log.warn("cluster: partitions lost at renewal", { instance: this.instanceId, partitions: lost });
      this.drop(lost);
    }
    const sRenewed = new Map(parseJson<Array<[SingletonName, number]>>(row.singles));
    for (const [name, s] of this.singles) {
      if (s.lease) {
        if (sRenewed.get(name) === s.lease.epoch) s.lease.confirmedAt = sent;
        else this.loseSingleton(name, "lost at renewal");
      }
      if (s.releasing) {
        if (sRenewed.get(name) === s.releasing.epoch) s.releasing.confirmedAt = sent;
        else s.releasing = undefined;
      }
    }
    this.setLive(parseJson<string[]>(row.live));
    this.armSafety();
  }

  private async acquire(): Promise<void> {
    const sent = mono();
    this.nextAcquire = sent + this.acquireMs;
    const live = this.live!;
    const homes = live.partitionHomes(this._partitions);
    const own: number[] = [];
    const others: number[] = [];
    for (let p = 0; p < this._partitions; p++) {
      if (this.leases.has(p) || this.releasing.has(p)) continue;
      (homes[p] === this.instanceId ? own : others).push(p);
    }
    const sOwn: string[] = [];
    const sOthers: string[] = [];
    for (const [name, s] of this.singles) {
      if (s.lease || s.releasing) continue;
      (live.home(`singleton:${name}`) === this.instanceId ? sOwn : sOthers).push(name);
    }
    const [row] = await this.sql.unsafe(ACQUIRE, [
      this.instanceId,
      this.ttlMs,
      arr(own),
      arr(others),
      this.orphanGraceMs,
      arr(sOwn),
      arr(sOthers),
    ]);
    if (this.state !== "running") {
      // stop() began while the statement ran: hand back what it took, unannounced and unstarted.
      const taken = parseJson<Array<[number, number]>>(row.parts);
      for (const [p, epoch] of taken) this.leases.set(p, { epoch, confirmedAt: sent });
      this.releasePartitions(taken.map(([p]) => p), false);
      for (const [name, epoch] of parseJson<Array<[SingletonName, number]>>(row.singles)) {
        this.track(
          this.sql.unsafe(RELEASE_SINGLETON, [this.instanceId, name, epoch]).then(
            () => {},
            (err) => this.log.warn("cluster: singleton release failed; the lease will expire", { err }),
          ),
        );
      }
      return;
    }
    const gained: number[] = [];
    for (const [p, epoch] of parseJson<Array<[number, number]>>(row.parts)) {
      this.leases.set(p, { epoch, confirmedAt: sent });
      gained.push(p);
    }
    if (gained.length) {
      gained.sort((a, b) => a - b);
      this.log.debug("cluster: partitions gained", { instance: this.instanceId, count: gained.length });
      this.publish(gained, []);
    }
    for (const [name, epoch] of parseJson<Array<[SingletonName, number]>>(row.singles)) {
      const s = this.singles.get(name)!;
      s.lease = { epoch, confirmedAt: sent };
      this.log.info("cluster: singleton gained", { instance: this.instanceId, singleton: name, epoch });
      try {
        s.run.start();
      } catch (err) {
        this.log.error("cluster: singleton start failed", { singleton: name, err });
      }
    }
    this.setLive(parseJson<string[]>(row.live));
    this.armSafety();
  }

  // ---- membership and rebalancing ----------------------------------------------------------

  private setLive(ids: string[]): void {
    ids.sort();
    if (ids.length !== this.liveIds.length || ids.some((id, i) => id !== this.liveIds[i])) {
      this.liveIds = ids;
      this.live = new Rendezvous(ids);
      this.log.info("cluster: live instances", { instance: this.instanceId, live: ids });
    }
    if (this.state === "running") this.rebalance();
  }

  /** Releases, gracefully, what now belongs to another live instance. */
  private rebalance(): void {
    const live = this.live;
    if (!live) return;
    const homes = live.partitionHomes(this._partitions);
    const away: number[] = [];
    for (const p of this.leases.keys()) {
      const home = homes[p];
      if (home !== undefined && home !== this.instanceId) away.push(p);
    }
    if (away.length) this.releasePartitions(away);
    for (const [name, s] of this.singles) {
      if (!s.lease) continue;
      const home = live.home(`singleton:${name}`);
      if (home !== undefined && home !== this.instanceId) this.releaseSingleton(name);
    }
  }

  private releasePartitions(ps: number[], announce = true): void {
    const batch = new Map<number, Lease>();
    for (const p of ps) {
      const l = this.leases.get(p);
      if (!l) continue;
      this.leases.delete(p);
      this.releasing.set(p, l);
      batch.set(p, l);
    }
    if (!batch.size) return;
    const list = [...batch.keys()].sort((a, b) => a - b);
    if (announce) this.publish([], list);
    else this.refreshView();
    const job = (async () => {
      if (this.beforeRelease && announce) {
        await bounded(this.beforeRelease(list), this.releaseTimeoutMs, "beforeRelease").catch((err) =>
          this.log.warn("cluster: beforeRelease failed; releasing anyway (writes stay fenced)", { instance: this.instanceId, err }),
        );
      }
      // Only what is still ours with the same epoch (the safety deadline or a renewal may have dropped some).
      const still = list.filter((p) => this.releasing.get(p) === batch.get(p));
      if (still.length) {
        await this.sql
          .unsafe(RELEASE_PARTITIONS, [this.instanceId, arr(still), arr(still.map((p) => batch.get(p)!.epoch))])
          .catch((err) => this.log.warn("cluster: release failed; the leases will expire", { err }));
      }
      for (const p of still) if (this.releasing.get(p) === batch.get(p)) this.releasing.delete(p);
      this.log.debug("cluster: partitions released", { instance: this.instanceId, count: still.length });
    })();
    this.track(job);
  }

  private releaseSingleton(name: SingletonName): void {
    const s = this.singles.get(name);
    if (!s?.lease) return;
    const lease = s.lease;
    s.lease = undefined;
    s.releasing = lease;
    const job = (async () => {
      await bounded(s.run.stop(), this.releaseTimeoutMs, `singleton ${name} stop`).catch((err) =>
        this.log.warn("cluster: singleton stop failed; releasing anyway", { singleton: name, err }),
      );
      if (s.releasing === lease) {
        await this.sql
          .unsafe(RELEASE_SINGLETON, [this.instanceId, name, lease.epoch])
          .catch((err) => this.log.warn("cluster: singleton release failed; the lease will expire", { err }));
        if (s.releasing === lease) s.releasing = undefined;
      }
      this.log.info("cluster: singleton released", { instance: this.instanceId, singleton: name });
    })();
    this.track(job);
  }

  private track(job: Promise<void>): void {
    this.releases.add(job);
    void job.finally(() => this.releases.delete(job));
  }

  // ---- losing leases -----------------------------------------------------------------------

  /** Leases gone without a release (not renewed, or past the local deadline). */
  private drop(ps: number[]): void {
    for (const p of ps) this.leases.delete(p);
    this.publish([], ps);
  }

  private loseSingleton(name: SingletonName, why: string): void {
    const s = this.singles.get(name)!;
    if (!s.lease) return;
    s.lease = undefined;
    this.log.warn(`cluster: singleton ${why}`, { instance: this.instanceId, singleton: name });
    void s.run.stop().catch((err) => this.log.error("cluster: singleton stop failed", { singleton: name, err }));
  }

  /** Arms the local safety deadline at the earliest confirmedAt + ttl − margin. */
  private armSafety(): void {
    clearTimeout(this.safetyTimer);
    let earliest = Infinity;
    for (const l of this.leases.values()) earliest = Math.min(earliest, l.confirmedAt);
    for (const l of this.releasing.values()) earliest = Math.min(earliest, l.confirmedAt);
    for (const s of this.singles.values()) {
      if (s.lease) earliest = Math.min(earliest, s.lease.confirmedAt);
      if (s.releasing) earliest = Math.min(earliest, s.releasing.confirmedAt);
    }
    if (earliest === Infinity) return;
    const at = earliest + this.ttlMs - this.marginMs;
    this.safetyTimer = setTimeout(() => this.safetyCheck(), Math.max(0, at - mono()));
  }

  private safetyCheck(): void {
    const now = mono();
    const limit = this.ttlMs - this.marginMs;
    const late = (l: Lease) => now - l.confirmedAt >= limit;
    const lost = [...this.leases].filter(([, l]) => late(l)).map(([p]) => p);
    for (const [p, l] of this.releasing) if (late(l)) this.releasing.delete(p);
    if (lost.length) {
      this.log.warn("cluster: no renewal in time; stopped work on partitions", { instance: this.instanceId, count: lost.length });
      this.drop(lost);
    }
    for (const [name, s] of this.singles) {
      if (s.lease && late(s.lease)) this.loseSingleton(name, "not renewed in time; stopped");
      if (s.releasing && late(s.releasing)) s.releasing = undefined;
    }
    this.armSafety();
  }

  // ---- listeners ---------------------------------------------------------------------------

  private refreshView(): void {
    this.heldView = new Set([...this.leases.keys()].sort((a, b) => a - b));
  }

  private publish(gained: number[], lost: number[]): void {
    this.refreshView();
    for (const fn of this.listeners) {
      try {
        fn(gained, lost);
      } catch (err) {
        this.log.error("cluster: partition listener failed", { err });
      }
    }
  }
}

// ---- fenced writes ---------------------------------------------------------------------------

export interface FenceSql {
  /** `name AS (SELECT partition FROM partition_leases …)`: put it in the statement's WITH. */
  text: string;
  params: unknown[];
  /** The number of the next free positional parameter. */
  nextParam: number;
}

/**
 * The CTE that fences a write (design §3.3 "Fencing"): the partitions among `fences` whose lease
 * row still names `owner` with the same epoch and has not expired, locked FOR SHARE so a
 * takeover's UPDATE waits until the write has committed (in partition order, as the renewal takes
 * them, so the two never deadlock). Write only rows whose partition is in
 * it: `… WHERE partition IN (SELECT partition FROM fence)`. A stale epoch yields no row, so the
 * write writes nothing. Parameters are positional from `firstParam`, for `sql.unsafe(text, params)`.
 */
export function fenceCte(owner: string, fences: readonly LeaseFence[], firstParam = 1, name = "fence"): FenceSql {
  const a = firstParam;
  return {
    text:
      `${name} AS (SELECT l.partition FROM partition_leases l ` +
      `JOIN unnest($${a}::smallint[], $${a + 1}::bigint[]) AS f(partition, epoch) ON l.partition = f.partition AND l.epoch = f.epoch ` +
      `WHERE l.owner = $${a + 2} AND l.expires_at > now() ORDER BY l.partition FOR SHARE OF l)`,
    params: [arr(fences.map((f) => f.partition)), arr(fences.map((f) => f.epoch)), owner],
    nextParam: a + 3,
  };
}

/** The same for a singleton lease: the CTE has one row (`name`) while the fence holds, none after. */
export function singletonFenceCte(owner: string, fence: { name: SingletonName; epoch: number }, firstParam = 1, name = "fence"): FenceSql {
  const a = firstParam;
  return {
    text:
      `${name} AS (SELECT name FROM singleton_leases WHERE name = $${a} AND epoch = $${a + 1} AND owner = $${a + 2} ` +
      `AND expires_at > now() FOR SHARE)`,
    params: [fence.name, fence.epoch, owner],
    nextParam: a + 3,
  };
}
