/**
 * Deletion jobs of suppress_with_delete regulations, one per (regulation, destination).
 * A run first removes Sluice's own copies (the users' queued deliveries to that
 * destination, then their retained events that no destination still needs), then asks
 * the destination to delete the users. Failures are retried with backoff under the same
 * limits as deliveries; the job rows are the only state, so a restart resumes them.
 */
import type { ConfigStore, DestinationRuntime } from "../control-plane/config-store";
import { RetryableTransformError, TransformError } from "../destinations/types";
import { lookupClient } from "../pipeline/lookup";
import type { Logger } from "../lib/logger";
import { SerialPass } from "../lib/serial-pass";
import { type RetryPolicy, retriesExhausted, retryDelay } from "../pipeline/retry-policy";
import type { Outbound } from "../pipeline/outbound";
import { deliverRequest } from "../pipeline/send";
import { destinationContext } from "../pipeline/stages";
import type { DeletionStatus } from "./schemas";
import type { DeletionJobOutcome, DueDeletionJob, RegulationsStore } from "./store";
import { isRetryableLoadError } from "../warehouse/postgres-loader";
import { isWarehouseKind } from "../warehouse/staging";
import { setImmediate as nextTurn } from "node:timers/promises";

/** Warehouse kinds delete users in their database through the loader, not with HTTP requests. */
export interface WarehouseUserDeleter {
  deleteUsers(dest: DestinationRuntime, userIds: string[]): Promise<number>;
}

/** The part of the router a deletion needs: drop users' deliveries it holds in memory. */
export interface QueueForgetter {
  forgetUsers(destinationId: string, userKeys: Iterable<string>): void;
}

export interface DeletionSettings extends RetryPolicy {
  /** Destination kind → base URL override, as for deliveries. */
  baseUrls: Record<string, string>;
  /** The scheme and address check of every request sent for a destination. */
  outbound: Outbound;
  timeoutMs: number;
}

export const NOT_SUPPORTED = "destination does not support user deletion";

type RunResult = { kind: "complete" } | { kind: "abort"; reason: string } | { kind: "retry"; reason: string; retryAfterMs?: number };

/** Due jobs read per scheduling pass. */
const DUE_MAX = 1000;
/** Users of one run at one destination: one deletion request covers them all. */
const GROUP_MAX = 100;
/** Destinations worked on at once; one slow destination never holds up another. */
const MAX_GROUPS = 8;
/** Events scanned per statement while purging, so the event loop is never held long. */
const PURGE_SLICE = 20_000;
/** How long a run waits for the processor to fan out events committed just before it. */
const FAN_OUT_WAIT_MS = 5000;

export class DeletionRunner {
  private stopped = true;
  private readonly passes = new SerialPass(() => this.schedule(), () => !this.stopped);
  private timer?: Timer;
  private inFlight = new Map<string, Promise<void>>();

  constructor(
    private store: RegulationsStore,
    private config: ConfigStore,
    private queue: QueueForgetter,
    private log: Logger,
    private settings: DeletionSettings,
    private now: () => number = Date.now,
    /**
     * Commits events still waiting in the group commit and fans out committed ones, at
     * once. Events accepted just before a regulation would otherwise become deliveries
     * after their queue was cleared, and be sent.
     */
    /** Commits events still on their way to storage and fans them out. */
    private catchUp: () => Promise<void> | void = () => {},
    private warehouse?: WarehouseUserDeleter,
  ) {}

  /** Jobs a crash interrupted run again; then everything due runs. */
  async start() {
    this.stopped = false;
    const n = await this.store.resetRunningDeletionJobs(this.now());
    if (n) this.log.info("deletion jobs interrupted by a restart run again", { count: n });
    this.wake();
  }

  /** Stops starting runs. A run still waiting on a destination records nothing: its jobs stay running and run again at the next start. */
  stop() {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  wake() {
    this.passes.wake();
  }

  /**
   * Removes these users' deliveries to the destinations, in the database and in the
   * router's memory, after every event of theirs already accepted has been fanned out.
   * Indexed and bounded: a regulation calls it before answering.
   */
  async removeQueued(workspaceId: string, destinationIds: string[], userIds: string[]) {
    await this.catchUp();
    // Bounded: the processor takes 2000 events a run.
    for (let i = 0; i < 100 && (await this.hasUnrouted(workspaceId, userIds)); i++) await this.catchUp();
    for (const d of destinationIds) {
      await this.store.deleteDeliveriesOf(d, userIds);
      this.queue.forgetUsers(d, userIds);
    }
  }

  private async schedule() {
    if (this.timer) clearTimeout(this.timer);
    const now = this.now();
    try {
      const groups = new Map<string, DueDeletionJob[]>();
      if (this.inFlight.size < MAX_GROUPS) {
        for (const job of await this.store.dueDeletionJobs(now, DUE_MAX)) {
          if (this.inFlight.has(job.destinationId)) continue;
          let group = groups.get(job.destinationId);
          if (!group) {
            if (this.inFlight.size + groups.size >= MAX_GROUPS) continue;
            groups.set(job.destinationId, (group = []));
          }
          if (group.length < GROUP_MAX) group.push(job);
        }
      }
      if (groups.size) {
        // Only the jobs this pass moved to running are run: a cancel (or, in cluster mode,
        // another holder) may have got to one since it was read.
        const claimed = new Set(await this.store.claimDeletionJobs([...groups.values()].flat().map((j) => j.id), now));
        for (const [destinationId, jobs] of groups) {
          const mine = jobs.filter((j) => claimed.has(j.id));
          if (mine.length) groups.set(destinationId, mine);
          else groups.delete(destinationId);
        }
      }
      for (const [destinationId, jobs] of groups) {
        const run = this.runGroup(destinationId, jobs)
          .catch((err) => this.log.error("deletion run failed unexpectedly", { err, destinationId }))
          .finally(() => {
            this.inFlight.delete(destinationId);
            this.wake();
          });
        this.inFlight.set(destinationId, run);
      }
      const next = await this.store.nextDeletionDueAt();
      if (this.stopped) return;
      if (next !== undefined) {
        // Due jobs held back by a run of their destination are picked up when it ends (wake);
        // the timer is then only a safety net.
        const delay = next <= now ? 1000 : Math.min(next - now, 60_000);
        this.timer = setTimeout(() => this.wake(), delay);
      }
    } catch (err) {
      this.log.error("could not schedule deletion jobs", { err });
      if (!this.stopped) this.timer = setTimeout(() => this.wake(), 5000);
    }
  }

  private async runGroup(destinationId: string, jobs: DueDeletionJob[]) {
    const workspaceId = jobs[0]!.workspaceId;
    const users = new Map<string, Record<string, string>>();
    for (const j of jobs) if (!users.has(j.userId)) users.set(j.userId, j.attributes);
    const userIds = [...users.keys()];
    let result: RunResult;
    try {
      await this.waitForFanOut(workspaceId, userIds);
      await this.removeQueued(workspaceId, [destinationId], userIds);
      await this.purgeEvents(workspaceId, userIds);
      const dest = this.config.snapshot().destinations.get(destinationId);
      result = await this.requestDeletion(dest, [...users.values()]);
    } catch (err) {
      result = { kind: "retry", reason: `deletion failed: ${(err as Error)?.message ?? String(err)}` };
    }
    if (this.stopped) return;
    await this.record(jobs, result);
  }

  /**
   * Without a catch-up hook (or while the processor is busy elsewhere) the users'
   * newest events may not be routed yet: waits, bounded, for the processor to pass them.
   */
  private async waitForFanOut(workspaceId: string, userIds: string[]) {
    const deadline = performance.now() + FAN_OUT_WAIT_MS;
    while ((await this.hasUnrouted(workspaceId, userIds)) && performance.now() < deadline && !this.stopped) {
      await this.catchUp();
      await Bun.sleep(20);
    }
  }

  /** Sources connected to at least one destination. */
  private routedSources(): string[] {
    const ids: string[] = [];
    for (const [id, dests] of this.config.snapshot().bySource) if (dests.length) ids.push(id);
    return ids;
  }

  /** Does any of these users have an event the processor has yet to fan out? */
  private hasUnrouted(workspaceId: string, userIds: string[]): Promise<boolean> {
    return this.store.hasUnroutedEvents(workspaceId, userIds, this.routedSources());
  }

  /**
   * Deletes the users' events that no delivery needs any more, by id range in slices.
   * An event the processor has not passed yet is kept if its source feeds destinations:
   * it is owed to those not named in the regulation.
   */
  private async purgeEvents(workspaceId: string, userIds: string[]) {
    const range = await this.store.eventIdRange();
    if (!range) return;
    const { min, max } = range;
    const routed = this.routedSources();
    let purged = 0;
    for (let lo = min - 1; lo < max && !this.stopped; lo += PURGE_SLICE) {
      purged += await this.store.purgeEvents({ afterId: lo, throughId: Math.min(lo + PURGE_SLICE, max) }, workspaceId, userIds, routed);
      await nextTurn();
    }
    if (purged) this.log.info("regulation purged retained events", { workspaceId, events: purged });
  }

  private async requestDeletion(dest: DestinationRuntime | undefined, users: Array<Record<string, string>>): Promise<RunResult> {
    if (!dest) return { kind: "abort", reason: "destination no longer exists" };
    if (isWarehouseKind(dest.type) && this.warehouse) return this.deleteFromWarehouse(this.warehouse, dest, users);
    const def = dest.definition;
    if (!def?.deleteUsers) return { kind: "abort", reason: NOT_SUPPORTED };
    const subjects = users.map((u) => (def.deletionByUserIdOnly ? { userId: u.userId! } : { ...u, userId: u.userId! }));
    let requests;
    try {
      // A kind that deletes by the service's own id looks it up with delivery's lookup client.
      const lookup = lookupClient({ outbound: this.settings.outbound, timeoutMs: this.settings.timeoutMs });
      requests = await def.deleteUsers(subjects, { ...destinationContext(this.settings.baseUrls, dest), lookup });
    } catch (err) {
      if (err instanceof RetryableTransformError) return { kind: "retry", reason: err.message, retryAfterMs: err.retryAfterMs };
      const message = err instanceof TransformError ? err.message : `deletion request could not be built: ${(err as Error)?.message ?? String(err)}`;
      return { kind: "abort", reason: message };
    }
    for (const req of requests) {
      const out = await deliverRequest(def, destinationContext(this.settings.baseUrls, dest), req, { outbound: this.settings.outbound, timeoutMs: this.settings.timeoutMs });
      if (this.stopped) return { kind: "retry", reason: "stopped" };
      // The destination does not know the user: nothing of theirs is left there.
      if (out.kind === "delivered" || out.status === 404) continue;
      const reason = out.response ? `${out.error}: ${out.response.slice(0, 200)}` : (out.error ?? "request failed");
      return out.kind === "retry" ? { kind: "retry", reason, retryAfterMs: out.retryAfterMs } : { kind: "abort", reason };
    }
    return { kind: "complete" };
  }

  /** Deletes the users' staged and loaded rows; a database that cannot be reached is retried. */
  private async deleteFromWarehouse(warehouse: WarehouseUserDeleter, dest: DestinationRuntime, users: Array<Record<string, string>>): Promise<RunResult> {
    try {
      await warehouse.deleteUsers(dest, users.map((u) => u.userId!));
      return { kind: "complete" };
    } catch (err) {
      const reason = `warehouse deletion failed: ${(err as Error)?.message ?? String(err)}`;
      return isRetryableLoadError(err) ? { kind: "retry", reason } : { kind: "abort", reason };
    }
  }

  private async record(jobs: DueDeletionJob[], result: RunResult) {
    const now = this.now();
    try {
      const outcomes = jobs.map((j): DeletionJobOutcome => {
        const attempts = j.attempts + 1;
        const firstAttemptAt = j.firstAttemptAt ?? now;
        let status: DeletionStatus = "complete";
        let reason: string | null = null;
        let nextAttemptAt = now;
        if (result.kind === "abort") {
          status = "aborted";
          reason = result.reason;
        } else if (result.kind === "retry") {
          const exhausted = retriesExhausted(this.settings, attempts, firstAttemptAt, now);
          status = exhausted ? "aborted" : "failed";
          reason = exhausted ? `retry limit reached after ${attempts} attempts: ${result.reason}` : result.reason;
          nextAttemptAt = now + retryDelay(this.settings, attempts, result.retryAfterMs);
        }
        return { id: j.id, status, reason, attempts, firstAttemptAt, nextAttemptAt, at: now };
      });
      await this.store.finishDeletionJobs(outcomes);
    } catch (err) {
      // The jobs stay running and run again at the next start.
      this.log.error("could not record deletion outcome", { err, jobs: jobs.length });
    }
  }
}
