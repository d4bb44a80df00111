/**
 * The runner of deliveries, and the one file that knows the order of their stages: user
 * transformation (transform-batcher.ts over stages.ts) → destination transform (stages.ts) →
 * send (sender.ts), or, for staging kinds, → staging (src/warehouse/staging.ts, src/object-storage/files.ts). It also owns
 * the error policy: a held or disabled destination starts nothing; a transformation that fails
 * aborts (retries when the sandbox was only busy); a kind that refuses an event aborts it; no
 * output is "filtered"; every result becomes the delivery's next state through nextState
 * (next-state.ts), which the outcome writer records and the scheduler (scheduler.ts) applies
 * to the user's FIFO. Which delivery may start, and when, is the scheduler's.
 */
import { deliveredEvent } from "./annotation";
import type { ConfigStore, DestinationRuntime } from "../control-plane/config-store";
import type { Logger } from "../lib/logger";
import type { Metrics } from "../lib/metrics";
import type { DestinationRequest } from "../destinations/types";
import type { LiveEvents } from "./live-events";
import type { OutcomeWriter } from "./outcomes";
import { type DeliveriesStore, type PartitionWork, type QueuedDelivery, SINGLE_NODE_PARTITION } from "./store";
import type { Outcome } from "./send";
import { type StageContext, destinationTransform } from "./stages";
import type { RetryPolicy } from "./retry-policy";
import { type AttemptResult, nextState } from "./next-state";
import { type DestinationQueue, Scheduler } from "./scheduler";
import { type LeaseLeft, Sender, type SenderSettings, type Sent, refusalOf } from "./sender";
import { TransformBatcher } from "./transform-batcher";
import { STAGE_MAX, type StageInput } from "../warehouse/staging";

export interface RouterSettings extends RetryPolicy, SenderSettings {}

type Queued = QueuedDelivery;

/**
 * A delivery mode that stages events instead of sending them: the warehouse (its rows, loaded
 * later) and object storage (gzipped JSON lines, uploaded later). A staged delivery has succeeded.
 */
export interface Stager {
  handles(type: string): boolean;
  stageDeliveries(dest: DestinationRuntime, inputs: Array<StageInput | AttemptResult>, started: number): Promise<AttemptResult[]>;
}
type Snapshot = ReturnType<ConfigStore["snapshot"]>;

/** How many deliveries per connection may run when a transformation stage precedes the request. */
const TRANSFORM_OVERLAP = 8;
/** Most events one batch may carry before the kind's own batch() applies the service's limits. */
const BATCH_MAX = 100;
/** A user's deliveries in one run of a batching kind (each kind's batch() splits by its service's limits). */
const BATCH_PER_USER = 100;

/** Results in the shape of the runs they were made for. */
function byRun<T>(runs: Queued[][], flat: T[]): T[][] {
  let at = 0;
  return runs.map((run) => flat.slice(at, (at += run.length)));
}


/** One delivery made ready to send: its requests, or already its outcome. */
type Prepared = { requests: Array<{ request: DestinationRequest; messageId: string }> } | { outcome: Outcome | { kind: "filtered" } };

export class Router {
  private scheduler: Scheduler;
  private sender: Sender;
  private inFlight = new Set<Promise<void>>();
  private transforms: TransformBatcher;
  private stagers: Stager[] = [];

  constructor(
    store: DeliveriesStore,
    private config: ConfigStore,
    private stages: StageContext,
    private outcomes: OutcomeWriter,
    private live: LiveEvents,
    private metrics: Metrics,
    private log: Logger,
    private settings: RouterSettings,
    private now: () => number = Date.now,
    private work: PartitionWork = SINGLE_NODE_PARTITION,
  ) {
    config.onChange(() => this.reconcile());
    this.scheduler = new Scheduler(store, outcomes, log, now, work, (q) => this.pump(q));
    this.sender = new Sender(stages, settings, log);
    this.transforms = new TransformBatcher(stages);
  }

  /** The kinds this stager handles are staged instead of sent; a staging kind without its stager stays queued. */
  useStager(stager: Stager) {
    this.stagers.push(stager);
  }

  /** Loads every destination with queued work (start-up) and keeps a slow poll as a safety net. */
  start() {
    return this.scheduler.start();
  }

  /** Called by the processor when it inserted deliveries for these destinations. */
  wake(destinationIds: Iterable<string>) {
    this.scheduler.wake(destinationIds);
  }

  /** Aborted deliveries were put back to pending: reload the destination's queue from the start. */
  reload(destinationId: string) {
    this.scheduler.reload(destinationId);
  }

  /** Every queue in memory read again from its start (cluster mode: signals may have been missed). */
  reloadAll() {
    this.scheduler.reloadAll();
  }

  /**
   * Drops these users' queued deliveries for a destination from memory (a regulation
   * deleted them from the database). A delivery already running finishes.
   */
  forgetUsers(destinationId: string, userKeys: Iterable<string>) {
    this.scheduler.forgetUsers(destinationId, userKeys);
  }

  /** After a config change: resume held destinations, abort the queues of deleted ones. */
  private reconcile() {
    const snap = this.config.snapshot();
    for (const q of this.scheduler.all()) {
      if (!snap.destinations.has(q.destinationId)) {
        this.sender.forget(q.destinationId);
        this.scheduler.abortDeleted(q);
        continue;
      }
      // Users held because their source was disabled may be ready again.
      this.scheduler.readyAgain(q);
      this.pump(q);
    }
  }

  /** Starts what the scheduler finds eligible, in the destination's delivery mode. */
  private pump(q: DestinationQueue) {
    if (!this.scheduler.mayStart(q)) return;
    const snap = this.config.snapshot();
    const dest = snap.destinations.get(q.destinationId);
    // A disabled destination holds its queue; re-enabling triggers reconcile → pump. So does one
    // whose transformation code is not here (held): checked before every mode below (single
    // requests, batches, warehouse staging), so none delivers its events untransformed.
    if (!dest || !dest.enabled || dest.transformation?.held) return;
    this.scheduler.refill(q);
    if (dest.definition?.serverDelivered) {
      const stager = this.stagers.find((s) => s.handles(dest.type));
      if (stager) this.pumpStaging(q, dest, snap, stager);
      return;
    }
    if (dest.definition?.batch) {
      this.pumpBatches(q, dest, snap);
      return;
    }
    // With a transformation, more deliveries run than connections exist, so that the
    // transformation stage gets larger groups; the requests themselves stay bounded.
    const limit = dest.transformation ? this.settings.concurrency * TRANSFORM_OVERLAP : this.settings.concurrency;
    this.scheduler.startEligible(q, limit, snap.sources, this.startOne, dest);
  }

  /** One delivery through its stages, then its outcome recorded. */
  private readonly startOne = (q: DestinationQueue, head: Queued, dest: DestinationRuntime) => {
    const user = head.userKey;
    this.track(q, [user], this.execute(dest, head).then((result) => this.finish(q, user, head, result)));
  };

  /** Keeps a running delivery (or batch) counted until it is done, then pumps again. */
  private track(q: DestinationQueue, users: string[], work: Promise<unknown>) {
    const p: Promise<void> = work
      .then(() => {})
      .catch((err) => this.log.error("delivery failed unexpectedly", { err, destinationId: q.destinationId }))
      .finally(() => {
        this.inFlight.delete(p);
        this.scheduler.release(q, users);
        this.pump(q);
      });
    this.inFlight.add(p);
  }

  /**
   * For kinds that accept batches: the ready users' runs (each head and the due deliveries behind
   * it, up to BATCH_PER_USER a user) go out together, BATCH_MAX deliveries at most, merged by the
   * kind's own batch(), which keeps each user's requests in order. A user's queued events then
   * share a call, as RudderStack's router hands its transformer a user's several jobs at once.
   */
  private pumpBatches(q: DestinationQueue, dest: DestinationRuntime, snap: Snapshot) {
    while (q.ready.size && q.running.size < this.settings.concurrency * BATCH_MAX) {
      const users: string[] = [];
      const runs: Queued[][] = [];
      if (!this.scheduler.takeRuns(q, BATCH_PER_USER, BATCH_MAX, snap.sources, users, runs)) return;
      this.track(
        q,
        users,
        this.executeBatch(dest, runs).then((results) => runs.forEach((run, u) => this.settleRun(q, users[u]!, run, results[u]!))),
      );
    }
  }

  /**
   * A user's run settled in its order: each delivery's outcome is recorded until the first that
   * is to be retried, which stays the head, due again; the run's later deliveries were not
   * delivered for sure (their call failed, or came after a failed item) and stay queued behind
   * it, untouched, to go again after it. So a user's deliveries succeed in the order accepted.
   */
  private settleRun(q: DestinationQueue, user: string, run: Queued[], results: AttemptResult[]) {
    for (let i = 0; i < run.length; i++) {
      const result = results[i]!;
      this.finish(q, user, run[i]!, result);
      if (result.kind === "retry") return;
    }
  }

  /**
   * Staging kinds: warehouse rows and object-storage files are staged on disk, not sent. One staging
   * pass at a time per destination takes every due delivery of the ready users (in each user's
   * order) up to STAGE_MAX; each user's FIFO is still consumed from its head so the queue's
   * bookkeeping stays the scheduler's own.
   */
  private pumpStaging(q: DestinationQueue, dest: DestinationRuntime, snap: Snapshot, stager: Stager) {
    if (q.running.size > 0) return;
    const users: string[] = [];
    const taken: Queued[][] = [];
    if (!this.scheduler.takeRuns(q, STAGE_MAX, STAGE_MAX, snap.sources, users, taken)) return;
    this.track(
      q,
      users,
      // Each user's items in order: finishing the head makes the next one the head.
      this.stageItems(stager, dest, taken.flat()).then((results) => byRun(taken, results).forEach((r, u) => this.settleRun(q, users[u]!, taken[u]!, r))),
    );
  }

  /** The user transformation of each delivery, then one staging pass of what it made. */
  private async stageItems(stager: Stager, dest: DestinationRuntime, items: Queued[]): Promise<AttemptResult[]> {
    const started = performance.now();
    const inputs: Array<StageInput | AttemptResult> = await Promise.all(
      items.map(async (item) => {
        const event = deliveredEvent(item.payload, item.annotation);
        if (!dest.transformation) return { sourceId: item.sourceId, userKey: item.userKey, events: [event] };
        const transformed = await this.transforms.run(dest, item.sourceId, event);
        if (transformed.error) return { kind: transformed.retryable ? ("retry" as const) : ("abort" as const), response: "", error: `user transformation failed: ${transformed.error}`, ms: 0 };
        if (!transformed.output.length) return { kind: "filtered" as const, ms: 0 };
        return { sourceId: item.sourceId, userKey: item.userKey, events: transformed.output.map((o) => o.event) };
      }),
    );
    return stager.stageDeliveries(dest, inputs, started);
  }

  /**
   * One batch: each event through the user transformation and the kind's transform,
   * then the kind's batch() merges the requests and they are sent in order. A batched
   * request's outcome is every included event's outcome (as RudderStack records it):
   * at least once, never lost. Only where the kind's checkResponse reads failed items out
   * of a 2xx answer do events of one request get different outcomes; an event one of whose
   * requests batch() refused is aborted with the kind's reason.
   *
   * A first call answered 400 may be one event's bad data refusing the whole call: then, as
   * RudderStack's router does with `dontBatch`, each event is sent again alone at once, so that
   * only the bad one is aborted. Only when nothing of the batch was delivered yet (the first
   * call failed), so no event goes twice.
   */
  private async executeBatch(dest: DestinationRuntime, runs: Queued[][]): Promise<AttemptResult[][]> {
    const started = performance.now();
    const items = runs.flat();
    const prepared = await Promise.all(items.map((item) => this.prepare(dest, item)));
    // Requests keep the order of the runs, so each user's stay in the order of the queue.
    const requests = prepared.flatMap((p) => ("requests" in p ? p.requests.map((r) => r.request) : []));
    const sent = requests.length ? await this.sender.sendBatch(dest, requests, this.leaseOf(items)) : undefined;
    const refusedAtOnce = sent?.failedAt === 0 && sent.last?.kind === "abort" && sent.last.status === 400;
    const results =
      refusedAtOnce && prepared.filter((p) => "requests" in p && p.requests.length > 0).length > 1
        ? await this.eachAlone(dest, runs, items, prepared, sent, started)
        : prepared.map((p) => this.batchedOutcome(dest, p, sent, started));
    return byRun(runs, results);
  }

  /**
   * The events of a batch whose first call was answered 400, each sent again alone: each user's
   * in order, one after the other, and none after one that is to be retried (it stays queued, as
   * settleRun leaves it). An event batch() refused keeps that refusal: it is judged against the
   * batch, which sending it alone would not see.
   */
  private async eachAlone(dest: DestinationRuntime, runs: Queued[][], items: Queued[], prepared: Prepared[], sent: Sent, started: number): Promise<AttemptResult[]> {
    const results: AttemptResult[] = new Array(prepared.length);
    let first = 0;
    await Promise.all(
      runs.map(async (run) => {
        const from = first;
        first += run.length;
        for (let i = from; i < from + run.length; i++) {
          const p = prepared[i]!;
          if (!("requests" in p) || !p.requests.length) results[i] = this.batchedOutcome(dest, p, undefined, started);
          else {
            const own = p.requests.map((r) => r.request);
            if (sent.refused && refusalOf(sent.refused, own) !== undefined) results[i] = this.batchedOutcome(dest, p, sent, started);
            else results[i] = this.batchedOutcome(dest, p, await this.sender.sendBatch(dest, own, this.leaseOf([items[i]!])), started);
          }
          if (results[i]!.kind === "retry") {
            // Not sent: the user's later events wait behind the one to be retried.
            for (let j = i + 1; j < from + run.length; j++) results[j] = results[i]!;
            return;
          }
        }
      }),
    );
    return results;
  }

  /** One event's outcome in a batch: its own failure, batch()'s refusal of one of its requests, or the batch's. */
  private batchedOutcome(dest: DestinationRuntime, p: Prepared, sent: Sent | undefined, started: number): AttemptResult {
    if (!("requests" in p)) return { ...p.outcome, ms: 0 };
    const ms = performance.now() - started;
    const own = p.requests.map((r) => r.request);
    const refused = sent?.refused && refusalOf(sent.refused, own);
    if (refused !== undefined) return { kind: "abort", response: "", error: refused, ms };
    // batch() left nothing to send: as an event its kind maps to no request.
    if (!sent?.last) return { kind: "filtered", ms };
    return { ...this.sender.eventOutcome(dest, sent.last, sent.itemChecks, own), ms };
  }

  /**
   * Cluster mode: how long the leases of these deliveries' partitions still hold here, read
   * before each request (none on a single node, whose partition is never lost).
   */
  private leaseOf(items: Queued[]): LeaseLeft | undefined {
    const work = this.work;
    if (!work.leaseLeftMs) return undefined;
    return () => {
      let left = Infinity;
      for (const item of items) left = Math.min(left, work.leaseLeftMs!(item.partition));
      return left;
    };
  }

  /** Runs the stages for one delivery and returns its outcome; never throws for a destination's failure. */
  private async execute(dest: DestinationRuntime, item: Queued): Promise<AttemptResult> {
    const started = performance.now();
    const prepared = await this.prepare(dest, item);
    if (!("requests" in prepared)) return { ...prepared.outcome, ms: performance.now() - started };
    const { last, itemChecks } = await this.sender.sendInOrder(dest, prepared.requests, this.leaseOf([item]));
    if (!last) return { kind: "filtered", ms: performance.now() - started };
    return this.sender.eventOutcome(dest, last, itemChecks, prepared.requests.map((r) => r.request));
  }

  /**
   * The user transformation and the kind's transform for one queued event. Every output is
   * transformed before anything is sent, so an output the kind refuses aborts the event
   * without a part of it already delivered. No output, or outputs the kind maps to no
   * request (its own event filter), is "filtered".
   */
  private async prepare(
    dest: DestinationRuntime,
    item: Queued,
  ): Promise<Prepared> {
    const event = deliveredEvent(item.payload, item.annotation);
    const transformed = await this.transforms.run(dest, item.sourceId, event);
    // A busy sandbox (its queue full) is retried later; an error of the code itself aborts.
    if (transformed.error) return { outcome: { kind: transformed.retryable ? "retry" : "abort", response: "", error: `user transformation failed: ${transformed.error}`, ms: 0 } };
    const requests: Array<{ request: DestinationRequest; messageId: string }> = [];
    for (const out of transformed.output) {
      const dt = await destinationTransform(this.stages, dest, out.event, dest.config, this.sender.lookupsFor(dest), item.id);
      if (!dt.ok) return { outcome: dt.retry ? { kind: "retry", response: "", error: dt.error, retryAfterMs: dt.retryAfterMs, ms: 0 } : { kind: "abort", response: "", error: dt.error, ms: 0 } };
      const messageId = String(out.event.messageId ?? event.messageId ?? "");
      for (const r of dt.requests) requests.push({ request: { ...r, userKey: item.userKey }, messageId });
    }
    return requests.length ? { requests } : { outcome: { kind: "filtered" } };
  }

  /** Records an attempt: its next state written, counted, shown live, and applied to the user's FIFO. */
  private finish(q: DestinationQueue, user: string, item: Queued, result: AttemptResult) {
    const now = this.now();
    const row = nextState(item, result, this.settings, now);
    this.outcomes.write(row);
    this.metrics.deliveries.inc({ destination: q.destinationId, outcome: row.state });
    const topic = `destination:${q.destinationId}`;
    if (this.live.hasSubscribers(topic)) {
      this.live.publish(topic, { deliveryId: item.id, eventId: item.eventId, userKey: user, state: row.state, attempt: row.attempts, status: row.lastStatus, response: row.lastResponse, error: row.lastError, at: new Date(now).toISOString() });
    }
    this.scheduler.settle(q, user, item, row, now);
  }

  /** Stops starting deliveries and waits (bounded) for the running ones to record their outcome. */
  async stop(deadlineMs = 5000) {
    this.scheduler.stop();
    await Promise.race([Promise.allSettled([...this.inFlight]), new Promise((r) => setTimeout(r, deadlineMs))]);
    await this.outcomes.flush();
  }

  /** For stats and tests: how many deliveries are in memory and running per destination. */
  inMemory(destinationId: string) {
    return this.scheduler.inMemory(destinationId);
  }
}
