/**
 * Deletion jobs of suppress_with_delete regulations, one per (regulation, destination).
 * A run first removes Sluice's own copies (the users' queued deliveries to that
 * destination, then their retained events that no destination still needs), then asks
 * the destination to delete the users. Failures are retried with backoff under the same
 * limits as deliveries; the job rows are the only state, so a restart resumes them.
 */
import type { Statement } from "bun:sqlite";
import type { Db } from "../../db";
import type { ConfigStore, DestinationRuntime } from "../control-plane/config-store";
import { TransformError } from "../destinations/types";
import type { Logger } from "../lib/logger";
import { type RetryPolicy, retriesExhausted, retryDelay } from "../pipeline/retry-policy";
import { sendRequest } from "../pipeline/send";
import { destinationContext } from "../pipeline/stages";
import type { DeletionStatus } from "./schemas";
import { isRetryableLoadError } from "../warehouse/postgres";
import { isWarehouseKind } from "../warehouse/staging";

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
  timeoutMs: number;
}

export const NOT_SUPPORTED = "destination does not support user deletion";

interface DueJob {
  id: string;
  workspaceId: string;
  destinationId: string;
  attempts: number;
  firstAttemptAt: number | null;
  userId: string;
  attributes: string;
}

type RunResult = { kind: "complete" } | { kind: "abort"; reason: string } | { kind: "retry"; reason: string; retryAfterMs?: number };

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
  private wakeScheduled = false;
  private timer?: Timer;
  private inFlight = new Map<string, Promise<void>>();
  private s: Record<
    "due" | "nextDue" | "markRunning" | "finish" | "resetRunning" | "deleteDeliveries" | "processorCursor" | "unrouted" | "eventIds" | "purgeSlice",
    Statement
  >;

  constructor(
    private db: Db,
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
  ) {
    const c = db.$client;
    this.s = {
      due: c.prepare(
        `SELECT j.id, j.workspace_id AS workspaceId, j.destination_id AS destinationId, j.attempts, j.first_attempt_at AS firstAttemptAt,
                r.user_id AS userId, r.attributes
           FROM deletion_jobs j JOIN regulations r ON r.id = j.regulation_id
          WHERE j.status IN ('pending', 'failed') AND j.next_attempt_at <= ?
          ORDER BY j.next_attempt_at, j.id LIMIT 1000`,
      ),
      nextDue: c.prepare("SELECT MIN(next_attempt_at) AS at FROM deletion_jobs WHERE status IN ('pending', 'failed')"),
      markRunning: c.prepare("UPDATE deletion_jobs SET status = 'running', updated_at = ? WHERE id = ? AND status IN ('pending', 'failed')"),
      // Only a running job is finished: a cancel may have aborted it meanwhile.
      finish: c.prepare(
        `UPDATE deletion_jobs SET status = ?, reason = ?, attempts = ?, first_attempt_at = ?, next_attempt_at = ?, updated_at = ?
          WHERE id = ? AND status = 'running'`,
      ),
      resetRunning: c.prepare("UPDATE deletion_jobs SET status = 'pending', updated_at = ? WHERE status = 'running'"),
      // Every delivery of these users to the destination goes, not only queued ones: an
      // aborted one could otherwise be replayed to the destination after the deletion.
      deleteDeliveries: c.prepare("DELETE FROM deliveries WHERE destination_id = ? AND user_key IN (SELECT value FROM json_each(?))"),
      processorCursor: c.prepare("SELECT value FROM cursors WHERE name = 'processor'"),
      // Only an event of a source with destinations can still become a delivery.
      unrouted: c.prepare(
        `SELECT 1 AS x FROM events WHERE id > ? AND workspace_id = ? AND user_key IN (SELECT value FROM json_each(?))
            AND source_id IN (SELECT value FROM json_each(?)) LIMIT 1`,
      ),
      eventIds: c.prepare("SELECT MIN(id) AS min, MAX(id) AS max FROM events"),
      purgeSlice: c.prepare(
        `DELETE FROM events WHERE id > ? AND id <= ? AND workspace_id = ? AND user_key IN (SELECT value FROM json_each(?))
            AND (id <= ? OR source_id NOT IN (SELECT value FROM json_each(?)))
            AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.id)`,
      ),
    };
  }

  /** Jobs a crash interrupted run again; then everything due runs. */
  start() {
    this.stopped = false;
    const n = this.s.resetRunning.run(this.now()).changes;
    if (n) this.log.info("deletion jobs interrupted by a restart run again", { count: n });
    this.wake();
  }

  /** Stops starting runs. A run still waiting on a destination records nothing: its jobs stay running and run again at the next start. */
  stop() {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  wake() {
    if (this.wakeScheduled || this.stopped) return;
    this.wakeScheduled = true;
    setImmediate(() => {
      this.wakeScheduled = false;
      this.tick();
    });
  }

  /**
   * Removes these users' deliveries to the destinations, in the database and in the
   * router's memory, after every event of theirs already accepted has been fanned out.
   * Indexed and bounded: a regulation calls it before answering.
   */
  async removeQueued(workspaceId: string, destinationIds: string[], userIds: string[]) {
    const users = JSON.stringify(userIds);
    await this.catchUp();
    // Bounded: the processor takes 2000 events a run.
    for (let i = 0; i < 100 && this.hasUnrouted(workspaceId, users); i++) await this.catchUp();
    for (const d of destinationIds) {
      this.s.deleteDeliveries.run(d, users);
      this.queue.forgetUsers(d, userIds);
    }
  }

  private tick() {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    const now = this.now();
    try {
      const groups = new Map<string, DueJob[]>();
      if (this.inFlight.size < MAX_GROUPS) {
        for (const job of this.s.due.all(now) as DueJob[]) {
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
        this.db.$client.transaction(() => {
          for (const jobs of groups.values()) for (const j of jobs) this.s.markRunning.run(now, j.id);
        })();
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
      const next = (this.s.nextDue.get() as { at: number | null } | null)?.at;
      if (next !== null && next !== undefined) {
        // Due jobs held back by a run of their destination are picked up when it ends (wake);
        // the timer is then only a safety net.
        const delay = next <= now ? 1000 : Math.min(next - now, 60_000);
        this.timer = setTimeout(() => this.wake(), delay);
      }
    } catch (err) {
      this.log.error("could not schedule deletion jobs", { err });
      this.timer = setTimeout(() => this.wake(), 5000);
    }
  }

  private async runGroup(destinationId: string, jobs: DueJob[]) {
    const workspaceId = jobs[0]!.workspaceId;
    const users = new Map<string, Record<string, string>>();
    for (const j of jobs) if (!users.has(j.userId)) users.set(j.userId, JSON.parse(j.attributes));
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
    this.record(jobs, result);
  }

  /**
   * Without a catch-up hook (or while the processor is busy elsewhere) the users'
   * newest events may not be routed yet: waits, bounded, for the processor to pass them.
   */
  private async waitForFanOut(workspaceId: string, userIds: string[]) {
    const users = JSON.stringify(userIds);
    const deadline = performance.now() + FAN_OUT_WAIT_MS;
    while (this.hasUnrouted(workspaceId, users) && performance.now() < deadline && !this.stopped) {
      await this.catchUp();
      await Bun.sleep(20);
    }
  }

  private processorCursor(): number {
    return (this.s.processorCursor.get() as { value: number } | null)?.value ?? 0;
  }

  /** Sources connected to at least one destination, as a JSON array for json_each. */
  private routedSources(): string {
    const ids: string[] = [];
    for (const [id, dests] of this.config.snapshot().bySource) if (dests.length) ids.push(id);
    return JSON.stringify(ids);
  }

  /** Does any of these users have an event the processor has yet to fan out? */
  private hasUnrouted(workspaceId: string, users: string): boolean {
    return !!this.s.unrouted.get(this.processorCursor(), workspaceId, users, this.routedSources());
  }

  /**
   * Deletes the users' events that no delivery needs any more, by id range in slices.
   * An event the processor has not passed yet is kept if its source feeds destinations:
   * it is owed to those not named in the regulation.
   */
  private async purgeEvents(workspaceId: string, userIds: string[]) {
    const users = JSON.stringify(userIds);
    const { min, max } = this.s.eventIds.get() as { min: number | null; max: number | null };
    if (min === null || max === null) return;
    const cursor = this.processorCursor();
    const routed = this.routedSources();
    let purged = 0;
    for (let lo = min - 1; lo < max && !this.stopped; lo += PURGE_SLICE) {
      purged += this.s.purgeSlice.run(lo, Math.min(lo + PURGE_SLICE, max), workspaceId, users, cursor, routed).changes;
      await new Promise((r) => setImmediate(r));
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
      requests = def.deleteUsers(subjects, destinationContext(this.settings.baseUrls, dest));
    } catch (err) {
      const message = err instanceof TransformError ? err.message : `deletion request could not be built: ${(err as Error)?.message ?? String(err)}`;
      return { kind: "abort", reason: message };
    }
    for (const req of requests) {
      const out = await sendRequest(req, { timeoutMs: this.settings.timeoutMs });
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

  private record(jobs: DueJob[], result: RunResult) {
    const now = this.now();
    try {
      this.db.$client.transaction(() => {
        for (const j of jobs) {
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
          this.s.finish.run(status, reason, attempts, firstAttemptAt, nextAttemptAt, now, j.id);
        }
      })();
    } catch (err) {
      // The jobs stay running and run again at the next start.
      this.log.error("could not record deletion outcome", { err, jobs: jobs.length });
    }
  }
}
