/**
 * The router delivers queued deliveries. Per destination it keeps a window of the
 * queue in memory, one FIFO per user, and runs at most `concurrency` deliveries at
 * once. One rule gives per-user order: only the head of a user's FIFO may run, and it
 * leaves the FIFO only when it succeeded, was aborted, or was dropped; a head waiting
 * for a retry holds that user's later events while other users flow on.
 */
import type { ConfigStore, DestinationRuntime } from "../control-plane/config-store";
import type { Logger } from "../lib/logger";
import type { Metrics } from "../lib/metrics";
import type { DestinationRequest, ResponseCheck, ResponseVerdict } from "../destinations/types";
import type { LiveEvents } from "./live-events";
import type { OutcomeWriter, OutcomeRow } from "./outcomes";
import { type DeliveriesStore, type PartitionWork, type QueuedDelivery, SINGLE_NODE_PARTITION, fencesOf } from "./store";
import { type Outcome, RESPONSE_KEEP_BYTES, sendRequest } from "./send";
import { type StageContext, destinationContext, destinationTransform } from "./stages";
import { type RetryPolicy, retriesExhausted, retryDelay } from "./retry-policy";
import { TransformBatcher } from "./transform-batcher";
import { type StageInput, type WarehouseStager, isWarehouseKind } from "../warehouse/staging";

export interface RouterSettings extends RetryPolicy {
  concurrency: number;
  timeoutMs: number;
}

type Queued = QueuedDelivery;

const WINDOW = 5000;
/** How many deliveries per connection may run when a transformation stage precedes the request. */
const TRANSFORM_OVERLAP = 8;
/** Most events one batch may carry before the kind's own batch() applies the service's limits. */
const BATCH_MAX = 100;
const REFILL_BELOW = 1000;
const KEEP_ATTEMPTS = 10;
/** Most deliveries of a warehouse destination staged in one SQLite transaction. */
const STAGE_MAX = 2000;

/** A 2xx answer whose kind named failed items: each event's verdict is read once every request is sent. */
interface ItemCheck {
  status: number;
  response: string;
  verdictFor(own: DestinationRequest[]): ResponseVerdict;
}

class DestinationQueue {
  users = new Map<string, Queued[]>();
  /** Users whose head is due and not running, in the order they became ready. */
  ready = new Set<string>();
  running = new Set<string>();
  timers = new Map<string, Timer>();
  /** Per partition, the id of the last row loaded: the window goes on after it (a partition absent: from its start). */
  loadedUpTo = new Map<number, number>();
  size = 0;
  drained = false;
  resetWanted = false;
  /** A window load is in progress; its rows arrive later. */
  loading = false;
  /** Woken during a load: rows may have been inserted after it read, so a short load does not mean drained. */
  wokenWhileLoading = false;
  /** Users forgotten during a load: the load may have read their rows before a regulation deleted them. */
  forgottenWhileLoading = new Set<string>();
  /** Waiting for queued outcomes to be written before the queue is read again from the start. */
  resetting = false;
  /** Grows at every clear(): a load begun before it is dropped, since it read from an old position. */
  generation = 0;
  /** Its destination was deleted and the abort of its queue is being written. */
  aborting = false;
  /** Requests on the wire now, and deliveries waiting for one of the destination's connections. */
  sending = 0;
  waitingToSend: Array<() => void> = [];

  constructor(readonly destinationId: string) {}

  clear() {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    this.users.clear();
    this.ready.clear();
    this.size = 0;
    this.loadedUpTo.clear();
    this.drained = false;
    this.generation++;
  }
}

export class Router {
  private queues = new Map<string, DestinationQueue>();
  private stopped = false;
  /** Running deliveries whose rows a regulation deleted: whatever their outcome, they are dropped. */
  private forgotten = new Set<number>();
  private inFlight = new Set<Promise<void>>();
  private safetyNet?: Timer;
  private transforms: TransformBatcher;
  private stager?: WarehouseStager;

  constructor(
    private store: DeliveriesStore,
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
    work.onChange((gained, lost) => this.partitionsChanged(gained, lost));
    this.transforms = new TransformBatcher(stages);
  }

  /** Warehouse kinds are staged by this stager instead of sent; without one they stay queued. */
  useWarehouseStager(stager: WarehouseStager) {
    this.stager = stager;
  }

  /** Loads every destination with queued work (start-up) and keeps a slow poll as a safety net. */
  async start() {
    this.safetyNet = setInterval(() => this.wake(new Set(this.queues.keys())), 5000);
    this.wake(await this.store.destinationsWithWork(this.work.partitions()));
  }

  /** Called by the processor when it inserted deliveries for these destinations. */
  wake(destinationIds: Iterable<string>) {
    for (const id of destinationIds) {
      let q = this.queues.get(id);
      if (!q) this.queues.set(id, (q = new DestinationQueue(id)));
      q.drained = false;
      if (q.loading) q.wokenWhileLoading = true;
      this.pump(q);
    }
  }

  /** Aborted deliveries were put back to pending: reload the destination's queue from the start. */
  reload(destinationId: string) {
    const q = this.queues.get(destinationId) ?? new DestinationQueue(destinationId);
    this.queues.set(destinationId, q);
    q.resetWanted = true;
    this.pump(q);
  }

  /** Every queue in memory read again from its start (cluster mode: signals may have been missed). */
  reloadAll() {
    for (const id of [...this.queues.keys()]) this.reload(id);
  }

  /**
   * Drops these users' queued deliveries for a destination from memory (a regulation
   * deleted them from the database). A delivery already running finishes.
   */
  forgetUsers(destinationId: string, userKeys: Iterable<string>) {
    const q = this.queues.get(destinationId);
    if (!q) return;
    for (const user of userKeys) {
      if (q.loading) q.forgottenWhileLoading.add(user);
      const fifo = q.users.get(user);
      if (!fifo) continue;
      const keep = q.running.has(user) ? fifo.slice(0, 1) : [];
      if (keep.length) this.forgotten.add(keep[0].id);
      q.size -= fifo.length - keep.length;
      if (keep.length) q.users.set(user, keep);
      else q.users.delete(user);
      q.ready.delete(user);
      const t = q.timers.get(user);
      if (t) clearTimeout(t);
      q.timers.delete(user);
    }
  }

  /**
   * Cluster mode, after a lease change. A partition lost: its users' queued deliveries leave
   * memory (a running one finishes; its outcome is written only if the lease is still ours, else
   * the new holder sends it again: at least once), and its position is forgotten. A partition
   * gained: the next window reads it from its start, so every destination with work there wakes.
   */
  private partitionsChanged(gained: number[], lost: number[]) {
    if (lost.length) {
      const gone = new Set(lost);
      for (const q of this.queues.values()) {
        for (const p of lost) q.loadedUpTo.delete(p);
        const users: string[] = [];
        for (const [user, fifo] of q.users) if (fifo.length && gone.has(fifo[0]!.partition)) users.push(user);
        if (users.length) this.forgetUsers(q.destinationId, users);
      }
    }
    if (gained.length && !this.stopped) {
      for (const q of this.queues.values()) {
        for (const p of gained) q.loadedUpTo.delete(p);
        q.drained = false;
        if (q.loading) q.wokenWhileLoading = true;
      }
      void this.store.destinationsWithWork(gained).then(
        (ids) => this.wake(ids),
        (err) => this.log.error("could not read the queues of partitions gained", { err, partitions: gained }),
      );
    }
  }

  /** After a config change: resume held destinations, abort the queues of deleted ones. */
  private reconcile() {
    const snap = this.config.snapshot();
    for (const [id, q] of this.queues) {
      if (!snap.destinations.has(id)) {
        this.abortDeleted(q);
        continue;
      }
      // Users held because their source was disabled may be ready again.
      for (const [user, fifo] of q.users) if (fifo.length && !q.running.has(user) && !q.timers.has(user)) q.ready.add(user);
      this.pump(q);
    }
  }

  private abortDeleted(q: DestinationQueue) {
    const fences = fencesOf(this.work, this.work.partitions());
    if (q.aborting || fences.length === 0) return;
    q.aborting = true;
    this.store.abortQueued(fences, q.destinationId, "destination deleted", this.now()).then(
      () => {
        q.clear();
        if (this.queues.get(q.destinationId) === q) this.queues.delete(q.destinationId);
      },
      (err: unknown) => {
        // A full disk: the queue stays known, and the next change of config tries again.
        q.aborting = false;
        this.log.error("could not abort the deliveries of a deleted destination", { err, destinationId: q.destinationId });
      },
    );
  }

  /**
   * Starts loading the next window of the queue when it runs low; the rows join the users'
   * FIFOs when they arrive, and the queue is pumped again.
   */
  private refill(q: DestinationQueue) {
    if (q.loading || q.drained || q.size >= REFILL_BELOW) return;
    const limit = WINDOW - q.size;
    const generation = q.generation;
    q.loading = true;
    q.wokenWhileLoading = false;
    q.forgottenWhileLoading.clear();
    const after = new Map<number, number>();
    for (const p of this.work.partitions()) after.set(p, q.loadedUpTo.get(p) ?? 0);
    this.store
      .loadQueue(q.destinationId, after, limit)
      .then(
        (rows) => {
          q.loading = false;
          if (q.generation !== generation) return this.pump(q);
          if (rows.length < limit && !q.wokenWhileLoading) q.drained = true;
          const forgotten = q.forgottenWhileLoading;
          this.enqueue(q, forgotten.size ? rows.filter((r) => !forgotten.has(r.userKey)) : rows);
          this.pump(q);
        },
        (err) => {
          // Tried again at the next pump (a delivery's end, a wake-up, the safety net).
          q.loading = false;
          this.log.error("could not load deliveries", { err, destinationId: q.destinationId });
        },
      )
      .catch((err) => this.log.error("delivery queue failed unexpectedly", { err, destinationId: q.destinationId }));
  }

  private enqueue(q: DestinationQueue, rows: Queued[]) {
    const now = this.now();
    for (const r of rows) {
      q.loadedUpTo.set(r.partition, r.id);
      let fifo = q.users.get(r.userKey);
      if (!fifo) q.users.set(r.userKey, (fifo = []));
      fifo.push(r);
      q.size++;
      if (fifo.length === 1) this.schedule(q, r.userKey, r.nextAttemptAt, now);
    }
  }

  /** Makes a user's head ready now, or when it is due. */
  private schedule(q: DestinationQueue, user: string, dueAt: number, now = this.now()) {
    if (dueAt <= now) {
      q.ready.add(user);
      return;
    }
    const t = setTimeout(() => {
      q.timers.delete(user);
      q.ready.add(user);
      this.pump(q);
    }, dueAt - now);
    q.timers.set(user, t);
  }

  private pump(q: DestinationQueue) {
    // During a reset nothing of the old window may start; its end pumps again.
    if (this.stopped || q.aborting || q.resetting) return;
    if (q.resetWanted && q.running.size === 0 && !q.loading) {
      q.resetWanted = false;
      q.resetting = true;
      // Outcomes still queued for the group commit must be in the database before it is re-read.
      void this.outcomes.flush().then(() => {
        q.resetting = false;
        q.clear();
        this.pump(q);
      });
      return;
    }
    const snap = this.config.snapshot();
    const dest = snap.destinations.get(q.destinationId);
    // A disabled destination holds its queue; re-enabling triggers reconcile → pump. So does one
    // whose transformation code is not here (held): checked before every mode below (single
    // requests, batches, warehouse staging), so none delivers its events untransformed.
    if (!dest || !dest.enabled || dest.transformation?.held) return;
    this.refill(q);
    if (isWarehouseKind(dest.type)) {
      this.pumpStaging(q, dest, snap);
      return;
    }
    if (dest.definition?.batch) {
      this.pumpBatches(q, dest, snap);
      return;
    }
    for (const user of q.ready) {
      // With a transformation, more deliveries run than connections exist, so that the
      // transformation stage gets larger groups; the requests themselves stay bounded.
      const limit = dest.transformation ? this.settings.concurrency * TRANSFORM_OVERLAP : this.settings.concurrency;
      if (q.running.size >= limit) break;
      q.ready.delete(user);
      const head = q.users.get(user)?.[0];
      if (!head) continue;
      // A disabled source holds its events; reconcile makes the user ready again.
      if (snap.sources.get(head.sourceId)?.enabled === false) continue;
      q.running.add(user);
      this.track(q, [user], this.execute(q, dest, head).then((result) => this.finish(q, user, head, result)));
    }
  }

  /** Keeps a running delivery (or batch) counted until it is done, then pumps again. */
  private track(q: DestinationQueue, users: string[], work: Promise<unknown>) {
    const p: Promise<void> = work
      .then(() => {})
      .catch((err) => this.log.error("delivery failed unexpectedly", { err, destinationId: q.destinationId }))
      .finally(() => {
        this.inFlight.delete(p);
        for (const u of users) q.running.delete(u);
        this.pump(q);
      });
    this.inFlight.add(p);
  }

  /**
   * For kinds that accept batches: up to BATCH_MAX users' heads go out together (one
   * head per user, so per-user order holds), merged by the kind's own batch().
   */
  private pumpBatches(q: DestinationQueue, dest: DestinationRuntime, snap: ReturnType<ConfigStore["snapshot"]>) {
    while (q.ready.size && q.running.size < this.settings.concurrency * BATCH_MAX) {
      const users: string[] = [];
      const heads: Queued[] = [];
      for (const user of q.ready) {
        if (heads.length >= BATCH_MAX) break;
        q.ready.delete(user);
        const head = q.users.get(user)?.[0];
        if (!head || snap.sources.get(head.sourceId)?.enabled === false) continue;
        q.running.add(user);
        users.push(user);
        heads.push(head);
      }
      if (!heads.length) return;
      this.track(
        q,
        users,
        this.executeBatch(q, dest, heads).then((results) => heads.forEach((h, i) => this.finish(q, users[i], h, results[i]))),
      );
    }
  }

  /**
   * Warehouse kinds: rows are staged on disk, not sent. One staging pass at a time per
   * destination takes every due delivery of the ready users (in each user's order) up to
   * STAGE_MAX, so a busy destination stages thousands of events per transaction. Order between
   * events does not matter to the warehouse (the loader orders by received_at), but each user's
   * FIFO is still consumed from its head so the queue's bookkeeping stays the router's own.
   */
  private pumpStaging(q: DestinationQueue, dest: DestinationRuntime, snap: ReturnType<ConfigStore["snapshot"]>) {
    const stager = this.stager;
    if (!stager || q.running.size > 0) return;
    const now = this.now();
    const users: string[] = [];
    const taken: Queued[][] = [];
    let count = 0;
    for (const user of q.ready) {
      if (count >= STAGE_MAX) break;
      q.ready.delete(user);
      const fifo = q.users.get(user);
      if (!fifo?.length || snap.sources.get(fifo[0].sourceId)?.enabled === false) continue;
      const items: Queued[] = [];
      for (const item of fifo) {
        if (count >= STAGE_MAX || item.nextAttemptAt > now) break;
        items.push(item);
        count++;
      }
      q.running.add(user);
      users.push(user);
      taken.push(items);
    }
    if (!count) return;
    this.track(
      q,
      users,
      this.stageItems(stager, dest, taken.flat()).then((results) => {
        let i = 0;
        // Each user's items in order: finishing the head makes the next one the head.
        users.forEach((user, u) => {
          for (const item of taken[u]) this.finish(q, user, item, results[i++]);
        });
      }),
    );
  }

  private async stageItems(stager: WarehouseStager, dest: DestinationRuntime, items: Queued[]): Promise<Array<Outcome | { kind: "filtered"; ms: number }>> {
    const started = performance.now();
    const inputs: Array<StageInput | Outcome | { kind: "filtered"; ms: number }> = await Promise.all(
      items.map(async (item) => {
        const event = JSON.parse(item.payload);
        if (!dest.transformation) return { sourceId: item.sourceId, userKey: item.userKey, events: [event] };
        const transformed = await this.transforms.run(dest, item.sourceId, event);
        if (transformed.error) return { kind: transformed.retryable ? ("retry" as const) : ("abort" as const), response: "", error: `user transformation failed: ${transformed.error}`, ms: 0 };
        if (!transformed.output.length) return { kind: "filtered" as const, ms: 0 };
        return { sourceId: item.sourceId, userKey: item.userKey, events: transformed.output.map((o) => o.event) };
      }),
    );
    const toStage = inputs.filter((x): x is StageInput => "events" in x);
    let staged: Awaited<ReturnType<WarehouseStager["stage"]>>;
    try {
      staged = await stager.stage(dest, toStage);
    } catch (err) {
      // Nothing of this pass was written: every delivery is retried under the usual limits.
      const error = `could not stage warehouse rows: ${(err as Error)?.message ?? String(err)}`;
      const ms = performance.now() - started;
      return inputs.map((x) => ("events" in x ? { kind: "retry" as const, response: "", error, ms } : x));
    }
    const ms = performance.now() - started;
    let next = 0;
    return inputs.map((x) => {
      if (!("events" in x)) return x;
      const r = staged[next++];
      // Staged is durable (the rows are in SQLite), so the delivery has succeeded; a crash before
      // this outcome is recorded stages the rows again, and the load dedupes them on id.
      return r.kind === "staged" ? { kind: "delivered" as const, status: 200, response: "staged", body: "", ms } : { kind: "abort" as const, response: "", error: r.error, ms };
    });
  }

  /**
   * One batch: each event through the user transformation and the kind's transform,
   * then the kind's batch() merges the requests and they are sent in order. A batched
   * request's outcome is every included event's outcome (as RudderStack records it):
   * at least once, never lost. Only where the kind's checkResponse reads failed items out
   * of a 2xx answer do events of one request get different outcomes.
   */
  private async executeBatch(q: DestinationQueue, dest: DestinationRuntime, heads: Queued[]): Promise<Array<Outcome | { kind: "filtered"; ms: number }>> {
    const started = performance.now();
    const prepared = await Promise.all(heads.map((item) => this.prepare(dest, item)));
    // Requests keep the order of the heads, which is the order of the queue.
    const requests = prepared.flatMap((p) => ("requests" in p ? p.requests.map((r) => r.request) : []));
    let common: Outcome | undefined;
    let itemChecks: ItemCheck[] = [];
    if (requests.length) {
      const ctx = destinationContext(this.stages.baseUrls, dest);
      let merged: DestinationRequest[];
      try {
        merged = dest.definition!.batch!(requests, ctx);
      } catch (err) {
        merged = requests;
        this.log.warn("batching failed; sending one by one", { err, destinationId: dest.id });
      }
      ({ last: common, itemChecks } = await this.sendInOrder(q, dest, merged.map((request) => ({ request }))));
    }
    const ms = performance.now() - started;
    return prepared.map((p) =>
      "requests" in p ? { ...this.eventOutcome(dest, common as Outcome, itemChecks, p.requests.map((r) => r.request)), ms } : { ...p.outcome, ms: 0 },
    );
  }

  /** Runs the stages for one delivery and returns its outcome; never throws for a destination's failure. */
  private async execute(q: DestinationQueue, dest: DestinationRuntime, item: Queued): Promise<Outcome | { kind: "filtered"; ms: number }> {
    const started = performance.now();
    const prepared = await this.prepare(dest, item);
    if (!("requests" in prepared)) return { ...prepared.outcome, ms: performance.now() - started };
    const { last, itemChecks } = await this.sendInOrder(q, dest, prepared.requests);
    if (!last) return { kind: "filtered", ms: performance.now() - started };
    return this.eventOutcome(dest, last, itemChecks, prepared.requests.map((r) => r.request));
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
  ): Promise<{ requests: Array<{ request: DestinationRequest; messageId: string }> } | { outcome: Outcome | { kind: "filtered" } }> {
    const event = JSON.parse(item.payload);
    const transformed = await this.transforms.run(dest, item.sourceId, event);
    // A busy sandbox (its queue full) is retried later; an error of the code itself aborts.
    if (transformed.error) return { outcome: { kind: transformed.retryable ? "retry" : "abort", response: "", error: `user transformation failed: ${transformed.error}`, ms: 0 } };
    const requests: Array<{ request: DestinationRequest; messageId: string }> = [];
    for (const out of transformed.output) {
      const dt = destinationTransform(this.stages, dest, out.event);
      if (!dt.ok) return { outcome: { kind: "abort", response: "", error: dt.error, ms: 0 } };
      const messageId = String(out.event.messageId ?? event.messageId ?? "");
      for (const r of dt.requests) requests.push({ request: { ...r, userKey: item.userKey }, messageId });
    }
    return requests.length ? { requests } : { outcome: { kind: "filtered" } };
  }

  /**
   * Sends in order over the destination's bounded connections; stops at the first request not
   * delivered, which includes a 2xx answer the kind's checkResponse reads as a failure.
   */
  private async sendInOrder(
    q: DestinationQueue,
    dest: DestinationRuntime,
    sends: Array<{ request: DestinationRequest; messageId?: string }>,
  ): Promise<{ last: Outcome | undefined; itemChecks: ItemCheck[] }> {
    let last: Outcome | undefined;
    const itemChecks: ItemCheck[] = [];
    for (const { request, messageId } of sends) {
      await this.acquireConnection(q);
      try {
        last = await sendRequest(request, { outbound: this.stages.outbound, timeoutMs: this.settings.timeoutMs, messageId });
      } finally {
        this.releaseConnection(q);
      }
      if (last.kind === "delivered") last = this.readAnswer(dest, request, last, itemChecks);
      if (last.kind !== "delivered") break;
    }
    return { last, itemChecks };
  }

  /** The kind's reading of a 2xx answer: delivered, a failure of the whole request, or per-event checks kept for later. */
  private readAnswer(dest: DestinationRuntime, request: DestinationRequest, out: Extract<Outcome, { kind: "delivered" }>, itemChecks: ItemCheck[]): Outcome {
    const def = dest.definition;
    if (!def?.checkResponse) return out;
    let check: ResponseCheck;
    try {
      check = def.checkResponse({ status: out.status, body: out.body }, request, destinationContext(this.stages.baseUrls, dest));
    } catch (err) {
      // The service took the request: a kind that cannot read the answer must not make it a failure.
      this.log.warn("could not check the destination's answer", { err, destinationId: dest.id });
      return out;
    }
    if (check.outcome === "ok") return out;
    if (check.outcome === "per-event") {
      itemChecks.push({ status: out.status, response: out.response, verdictFor: check.verdictFor });
      return out;
    }
    return { kind: check.outcome, status: out.status, response: out.response, error: check.error, ms: out.ms };
  }

  /**
   * One event's outcome: the common one of its requests, unless an answer named this event's
   * own items as failed. An abort for its own data stands whatever happened to the rest (sending
   * it again cannot help); a retry for it applies only when everything else was delivered.
   */
  private eventOutcome(dest: DestinationRuntime, common: Outcome, itemChecks: ItemCheck[], own: DestinationRequest[]): Outcome {
    let retry: Outcome | undefined;
    for (const check of itemChecks) {
      let verdict: ResponseVerdict;
      try {
        verdict = check.verdictFor(own);
      } catch (err) {
        this.log.warn("could not check the destination's answer", { err, destinationId: dest.id });
        continue;
      }
      if (verdict.outcome === "ok") continue;
      const failed = { kind: verdict.outcome, status: check.status, response: check.response, error: verdict.error, ms: common.ms };
      if (verdict.outcome === "abort") return failed;
      retry ??= failed;
    }
    return common.kind === "delivered" && retry ? retry : common;
  }

  private acquireConnection(q: DestinationQueue): Promise<void> | void {
    if (q.sending < this.settings.concurrency) {
      q.sending++;
      return;
    }
    return new Promise((resolve) => q.waitingToSend.push(resolve));
  }

  private releaseConnection(q: DestinationQueue) {
    const next = q.waitingToSend.shift();
    // The slot passes straight to the next waiter, so `sending` never exceeds the bound.
    if (next) next();
    else q.sending--;
  }

  private finish(q: DestinationQueue, user: string, item: Queued, result: Outcome | { kind: "filtered"; ms: number }) {
    const now = this.now();
    const attempts = item.attempts + 1;
    const firstAttemptAt = item.firstAttemptAt ?? now;
    const status = "status" in result ? (result.status ?? null) : null;
    const response = "response" in result ? result.response : null;
    const error = "error" in result ? (result.error ?? null) : null;
    let log: unknown[] = [];
    try {
      log = item.attemptLog ? JSON.parse(item.attemptLog) : [];
    } catch {}
    log.push({ at: new Date(now).toISOString(), status, response: response?.slice(0, RESPONSE_KEEP_BYTES) ?? null, error, ms: Math.round(result.ms) });
    if (log.length > KEEP_ATTEMPTS) log = log.slice(-KEEP_ATTEMPTS);
    const attemptLog = JSON.stringify(log);

    let state: OutcomeRow["state"];
    let nextAttemptAt = now;
    let finalError = error ?? item.lastError;
    if (result.kind === "delivered") state = "succeeded";
    else if (result.kind === "filtered") state = "filtered";
    else if (result.kind === "abort") state = "aborted";
    else {
      const exhausted = retriesExhausted(this.settings, attempts, firstAttemptAt, now);
      if (exhausted) {
        state = "aborted";
        finalError = `retry limit reached after ${attempts} attempts: ${error ?? `status ${status}`}`;
      } else {
        state = "retrying";
        nextAttemptAt = now + retryDelay(this.settings, attempts, result.retryAfterMs);
      }
    }
    this.outcomes.write({ id: item.id, partition: item.partition, state, attempts, nextAttemptAt, firstAttemptAt, lastStatus: status, lastResponse: response, lastError: finalError, attemptLog, updatedAt: now });
    this.metrics.deliveries.inc({ destination: q.destinationId, outcome: state });
    const topic = `destination:${q.destinationId}`;
    if (this.live.hasSubscribers(topic)) {
      this.live.publish(topic, { deliveryId: item.id, eventId: item.eventId, userKey: user, state, attempt: attempts, status, response, error: finalError, at: new Date(now).toISOString() });
    }

    const fifo = q.users.get(user)!;
    if (this.forgotten.delete(item.id)) {
      // Its row is gone: record nothing and never send it again.
      fifo.shift();
      q.size--;
      if (fifo.length === 0) q.users.delete(user);
      else this.schedule(q, user, fifo[0].nextAttemptAt, now);
      return;
    }
    if (state === "retrying") {
      item.attempts = attempts;
      item.firstAttemptAt = firstAttemptAt;
      item.nextAttemptAt = nextAttemptAt;
      item.attemptLog = attemptLog;
      item.lastError = finalError;
      this.schedule(q, user, nextAttemptAt, now);
      return;
    }
    fifo.shift();
    q.size--;
    if (fifo.length === 0) q.users.delete(user);
    else this.schedule(q, user, fifo[0].nextAttemptAt, now);
  }

  /** Stops starting deliveries and waits (bounded) for the running ones to record their outcome. */
  async stop(deadlineMs = 5000) {
    this.stopped = true;
    if (this.safetyNet) clearInterval(this.safetyNet);
    for (const q of this.queues.values()) for (const t of q.timers.values()) clearTimeout(t);
    await Promise.race([Promise.allSettled([...this.inFlight]), new Promise((r) => setTimeout(r, deadlineMs))]);
    await this.outcomes.flush();
  }

  /** For stats and tests: how many deliveries are in memory and running per destination. */
  inMemory(destinationId: string) {
    const q = this.queues.get(destinationId);
    return { queued: q?.size ?? 0, running: q?.running.size ?? 0 };
  }
}
