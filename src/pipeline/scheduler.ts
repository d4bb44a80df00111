/**
 * The scheduler keeps, per destination, a window of the queue in memory, one FIFO per user,
 * and says which deliveries may start. One rule gives per-user order: only the head of a
 * user's FIFO is eligible, when it is due and its source is not disabled, and it leaves the
 * FIFO only when it succeeded, was aborted, or was dropped; a head waiting for a retry holds
 * that user's later events while other users flow on.
 *
 * The invariant, for every user: deliveries succeed in the order they were accepted. A batching
 * kind is handed a ready head together with the due deliveries queued behind it (a run,
 * takeRuns); the router settles a run in order and stops at the first delivery to be retried,
 * which stays the head: the run's later deliveries stay queued behind it untouched, and go again
 * after it, even those the service accepted (at least once; per-item answers retry from the first
 * failed item of each user, never after it). test/pipeline/user-runs.test.ts checks it against
 * random failures and kill -9.
 *
 * It owns the leases (in memory only),
 * the refill of the window from the store, the wake-ups and the timers of retries. It starts
 * nothing itself: whenever a queue may have work it calls `onReady`, and the runner
 * (router.ts) takes what is eligible.
 */
import type { Logger } from "../lib/logger";
import type { OutcomeWriter } from "./outcomes";
import { type DeliveriesStore, type OutcomeRow, type PartitionWork, type QueuedDelivery, fencesOf } from "./store";

type Queued = QueuedDelivery;

/** The sources a head's source is looked up in: a disabled one holds its events (the config snapshot's sources fit). */
export type SourceStates = ReadonlyMap<string, { enabled: boolean }>;

const WINDOW = 5000;
const REFILL_BELOW = 1000;

export class DestinationQueue {
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

export class Scheduler {
  private queues = new Map<string, DestinationQueue>();
  private stopped = false;
  /** Running deliveries whose rows a regulation deleted: whatever their outcome, they are dropped. */
  private forgotten = new Set<number>();
  private safetyNet?: Timer;

  constructor(
    private store: DeliveriesStore,
    private outcomes: OutcomeWriter,
    private log: Logger,
    private now: () => number,
    private work: PartitionWork,
    /** Called whenever a queue may have eligible work: the runner takes it from there. */
    private onReady: (q: DestinationQueue) => void,
  ) {
    work.onChange((gained, lost) => this.partitionsChanged(gained, lost));
  }

  /** Loads every destination with queued work (start-up) and keeps a slow poll as a safety net. */
  async start() {
    this.safetyNet = setInterval(() => this.wake(new Set(this.queues.keys())), 5000);
    this.wake(await this.store.destinationsWithWork(this.work.partitions()));
  }

  /** Nothing starts any more; timers and the safety net stop. */
  stop() {
    this.stopped = true;
    if (this.safetyNet) clearInterval(this.safetyNet);
    for (const q of this.queues.values()) for (const t of q.timers.values()) clearTimeout(t);
  }

  /** The queues in memory. */
  all(): IterableIterator<DestinationQueue> {
    return this.queues.values();
  }

  /** Deliveries were inserted for these destinations. */
  wake(destinationIds: Iterable<string>) {
    for (const id of destinationIds) {
      let q = this.queues.get(id);
      if (!q) this.queues.set(id, (q = new DestinationQueue(id)));
      q.drained = false;
      if (q.loading) q.wokenWhileLoading = true;
      this.onReady(q);
    }
  }

  /** Aborted deliveries were put back to pending: reload the destination's queue from the start. */
  reload(destinationId: string) {
    const q = this.queues.get(destinationId) ?? new DestinationQueue(destinationId);
    this.queues.set(destinationId, q);
    q.resetWanted = true;
    this.onReady(q);
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

  /** Users held (their source was disabled) are ready again, except those running or waiting for a retry. */
  readyAgain(q: DestinationQueue) {
    for (const [user, fifo] of q.users) if (fifo.length && !q.running.has(user) && !q.timers.has(user)) q.ready.add(user);
  }

  /** The destination was deleted: its queued deliveries are aborted in the store and its queue leaves memory. */
  abortDeleted(q: DestinationQueue) {
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
   * Whether anything of the queue may start now. Not while stopped, aborting or being reset;
   * a reload asked for begins here once nothing of the queue runs or loads, and its end
   * calls onReady again.
   */
  mayStart(q: DestinationQueue): boolean {
    // During a reset nothing of the old window may start.
    if (this.stopped || q.aborting || q.resetting) return false;
    if (q.resetWanted && q.running.size === 0 && !q.loading) {
      q.resetWanted = false;
      q.resetting = true;
      // Outcomes still queued for the group commit must be in the database before it is re-read.
      void this.outcomes.flush().then(() => {
        q.resetting = false;
        q.clear();
        this.onReady(q);
      });
      return false;
    }
    return true;
  }

  /**
   * Starts loading the next window of the queue when it runs low; the rows join the users'
   * FIFOs when they arrive, and onReady is called.
   */
  refill(q: DestinationQueue) {
    if (q.loading || q.drained || q.size >= REFILL_BELOW) return;
    const limit = WINDOW - q.size;
    const generation = q.generation;
    q.loading = true;
    q.wokenWhileLoading = false;
    q.forgottenWhileLoading.clear();
    const after = new Map<number, number>();
    // The lease each partition is read under: rows of a partition lost, or lost and taken again,
    // before the answer came are not this lease's to send (enqueue).
    const epochs = new Map<number, number>();
    for (const p of this.work.partitions()) {
      after.set(p, q.loadedUpTo.get(p) ?? 0);
      epochs.set(p, this.work.fence(p)?.epoch ?? -1);
    }
    this.store
      .loadQueue(q.destinationId, after, limit)
      .then(
        (rows) => {
          q.loading = false;
          if (q.generation !== generation) return this.onReady(q);
          if (rows.length < limit && !q.wokenWhileLoading) q.drained = true;
          const forgotten = q.forgottenWhileLoading;
          this.enqueue(q, forgotten.size ? rows.filter((r) => !forgotten.has(r.userKey)) : rows, epochs);
          this.onReady(q);
        },
        (err) => {
          // Tried again at the next onReady (a delivery's end, a wake-up, the safety net).
          q.loading = false;
          this.log.error("could not load deliveries", { err, destinationId: q.destinationId });
        },
      )
      .catch((err) => this.log.error("delivery queue failed unexpectedly", { err, destinationId: q.destinationId }));
  }

  private enqueue(q: DestinationQueue, rows: Queued[], epochs: ReadonlyMap<number, number>) {
    const now = this.now();
    for (const r of rows) {
      // A load that was slow (the database unreachable for a while) may answer after its
      // partition's lease was lost here: those rows are the new holder's to send.
      if (this.work.fence(r.partition)?.epoch !== epochs.get(r.partition)) continue;
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
      this.onReady(q);
    }, dueAt - now);
    q.timers.set(user, t);
  }

  /**
   * Leases each eligible head in the order its user became ready, while fewer than `limit` of
   * the queue's users run, and hands it to `start` with `context` (a method and a value the
   * caller already has: nothing is made per delivery).
   */
  startEligible<C>(q: DestinationQueue, limit: number, sources: SourceStates, start: (q: DestinationQueue, head: Queued, context: C) => void, context: C) {
    for (const user of q.ready) {
      if (q.running.size >= limit) break;
      q.ready.delete(user);
      const head = q.users.get(user)?.[0];
      if (!head) continue;
      // A disabled source holds its events; readyAgain makes the user ready again.
      if (sources.get(head.sourceId)?.enabled === false) continue;
      q.running.add(user);
      start(q, head, context);
    }
  }

  /**
   * For batching and staging kinds: each ready user's head and the due deliveries queued behind it, in FIFO
   * order, up to `perUser` a user and `max` in all, leased together (the user is running until
   * released). Appended per user to `users` and `runs`; how many deliveries were taken.
   *
   * The order rule holds as for single heads: only a ready head starts a run (a head waiting
   * for its retry is not ready, and holds the user), and the router settles a run's deliveries
   * in order, stopping at the first one to be retried: those behind it stay queued, untouched,
   * and go again after it (router.ts, settleRun).
   */
  takeRuns(q: DestinationQueue, perUser: number, max: number, sources: SourceStates, users: string[], runs: Queued[][]): number {
    const now = this.now();
    let count = 0;
    for (const user of q.ready) {
      if (count >= max) break;
      q.ready.delete(user);
      const fifo = q.users.get(user);
      if (!fifo?.length || sources.get(fifo[0]!.sourceId)?.enabled === false) continue;
      const run: Queued[] = [fifo[0]!];
      for (let i = 1; i < fifo.length && run.length < perUser && count + run.length < max; i++) {
        const item = fifo[i]!;
        if (item.nextAttemptAt > now) break;
        run.push(item);
      }
      count += run.length;
      q.running.add(user);
      users.push(user);
      runs.push(run);
    }
    return count;
  }

  /** These users' leases end (their work is done, whatever its outcome). */
  release(q: DestinationQueue, users: string[]) {
    for (const u of users) q.running.delete(u);
  }

  /**
   * A head's attempt is recorded as `row`. Retrying: it stays the head, due at the row's next
   * attempt. Otherwise it leaves the FIFO and the next one is scheduled. A delivery whose row a
   * regulation deleted meanwhile leaves it whatever its outcome, and is never sent again.
   */
  settle(q: DestinationQueue, user: string, item: Queued, row: OutcomeRow, now: number) {
    const fifo = q.users.get(user)!;
    if (this.forgotten.delete(item.id)) {
      fifo.shift();
      q.size--;
      if (fifo.length === 0) q.users.delete(user);
      else this.schedule(q, user, fifo[0].nextAttemptAt, now);
      return;
    }
    if (row.state === "retrying") {
      item.attempts = row.attempts;
      item.firstAttemptAt = row.firstAttemptAt;
      item.nextAttemptAt = row.nextAttemptAt;
      item.attemptLog = row.attemptLog;
      item.lastError = row.lastError;
      this.schedule(q, user, row.nextAttemptAt, now);
      return;
    }
    fifo.shift();
    q.size--;
    if (fifo.length === 0) q.users.delete(user);
    else this.schedule(q, user, fifo[0].nextAttemptAt, now);
  }

  /** For stats and tests: how many deliveries are in memory and running for a destination. */
  inMemory(destinationId: string) {
    const q = this.queues.get(destinationId);
    return { queued: q?.size ?? 0, running: q?.running.size ?? 0 };
  }
}
