/**
 * Intake's group commit on PostgreSQL (cluster mode; design: src/cluster/README.md §3.1–3.2).
 *
 * The event calls of one turn of the event loop become one group, and a group is one
 * autocommit statement: `INSERT … SELECT FROM unnest(arrays) ON CONFLICT (dedup_key) DO NOTHING
 * RETURNING dedup_key`. So a group costs one round trip, whatever its size, and the unique index
 * on `dedup_key` deduplicates across every instance on the database: the rows not returned were
 * duplicates, of a committed row or of an earlier row of the same group. A conflicting row in
 * another instance's group still in flight makes the insert wait for it, so a duplicate of an
 * event not yet durable is never acknowledged before it is.
 *
 * A few groups may be in flight at once; rows of one group are all concurrent requests, and a
 * client that waits for its answer before the next call always lands in a later group, so each
 * user's order holds. The processor reads below a transaction horizon (design §3.3), which is
 * what makes out-of-order commits between groups safe.
 *
 * A group PostgreSQL has not answered within `timeoutMs` (5 s; the network to it cut, its
 * connections left open) is refused with a 503 and Retry-After, and so is every call queued
 * behind it and every new call while each group in flight has been waiting that long: the
 * calls are answered quickly instead of holding until the connection comes back. Such a group
 * may still commit when it does: its events were refused, not lost, and the client's retry with
 * the same messageId is a duplicate then (never stored twice). Nothing is answered 200 unless
 * its group committed.
 *
 * An optional suppression epoch guards the statement: each request carries the epoch its rows
 * were checked at (read when append is called), and when the database's epoch moved past the
 * oldest of the group (a regulation was made on some instance), the group inserts nothing and
 * every request is told `epochStale`, so intake can reload the rules, check again and send
 * (design §3.4).
 */
import type { SQL } from "bun";
import { partitionOfKey } from "../../cluster/hash";
import { AppError } from "../../lib/errors";
import { DEADLOCK, isConnectionFailure, sqlState } from "../../lib/postgres-errors";
import type { AppendOutcome, EventLog, EventRow } from "../../gateway/store";
import { STORAGE_RETRY_AFTER_SECONDS, type StorageProblem, StorageHealth } from "../../lib/storage-health";

/** What one append stored: how many rows, and which of the request's rows were duplicates. */
export interface AppendResult {
  stored: number;
  /** Indexes (in the request's rows) of the duplicates. */
  duplicates: number[];
  /** The suppression epoch had moved on: nothing of the request was stored. */
  epochStale?: boolean;
  /** The partitions the stored rows went to (the processors to wake). */
  partitions?: Set<number>;
}

export interface PgEventLogOptions {
  /** Partitions users are spread over (cluster_settings.partitions). */
  partitions: number;
  /** Groups in flight at once. */
  maxInFlight?: number;
  /** The suppression epoch this instance's rules are at; when given, every group is guarded by it. */
  epoch?: () => number;
  /** A call not answered by PostgreSQL within this is refused with a 503 (default 5000 ms). */
  timeoutMs?: number;
}

/** The default of `timeoutMs`: well within a lease's lifetime (10 s), well beyond a slow insert. */
export const INSERT_TIMEOUT_MS = 5000;

/**
 * The 503 of events PostgreSQL did not take: unreachable, not answering, out of resources or
 * read-only. It carries Retry-After, as the full disk's does (lib/storage-health.ts); intake logs
 * it once when the outage starts, and `reason` is what /health shows.
 */
export function databaseUnavailable(reason: string, cause?: unknown): AppError {
  const e = new AppError("UNAVAILABLE", `events could not be stored: ${reason}; retry in ${STORAGE_RETRY_AFTER_SECONDS} s`, undefined, {
    retryAfterSeconds: STORAGE_RETRY_AFTER_SECONDS,
    storage: true,
  });
  Object.assign(e, { reason, cause });
  return e;
}

/**
 * PostgreSQL refuses writes for a while, not for this statement's own fault: it is out of
 * resources (class 53: disk full, too many connections) or a read-only standby (25006). Besides
 * a failed connection, anything else is a fault of the statement, logged at every call.
 */
function isOutage(err: unknown): boolean {
  const state = sqlState(err);
  return state.startsWith("53") || state === "25006";
}

/**
 * The intake's write health on PostgreSQL: the same bookkeeping as the data dir's (when writes
 * started failing, logged once), with PostgreSQL's reason as the cause instead of a disk's.
 */
export class DatabaseHealth extends StorageHealth {
  private cause = "";

  override failed(writer: string, err: unknown, now = Date.now()): boolean {
    const reason = (err as { reason?: unknown })?.reason;
    this.cause = `PostgreSQL: ${typeof reason === "string" ? reason : String((err as Error)?.message ?? err)}`;
    return super.failed(writer, err, now);
  }

  override get problem(): StorageProblem | undefined {
    const p = super.problem;
    return p && { ...p, cause: this.cause };
  }
}

interface Request {
  rows: EventRow[];
  keys: string[];
  /** Each row's partition, by its user. */
  partitions: number[];
  /**
   * The suppression epoch when the caller checked these rows against its rules: read as append
   * is called, because a reload finishing before the group is sent would otherwise let rows
   * checked against the old rules pass the guard of the new epoch.
   */
  epoch: number | undefined;
  /** When append was called (performance.now()). */
  at: number;
  resolve: (r: AppendResult) => void;
  reject: (e: unknown) => void;
}

/** A group sent to PostgreSQL and not answered yet. */
interface InFlight {
  sentAt: number;
  requests: Request[];
  /** Its calls were refused for PostgreSQL's silence; the statement may still commit later. */
  expired: boolean;
}

const EMPTY: AppendResult = Object.freeze({ stored: 0, duplicates: [] }) as AppendResult;

/** The 64-bit deduplication key of a messageId from a source (signed, as PostgreSQL's bigint), as decimal text. */
export function dedupKey(sourceId: string, messageId: string): string {
  return BigInt.asIntN(64, BigInt(Bun.hash.wyhash(messageId, Bun.hash(sourceId)))).toString();
}

export class PgEventLog {
  private queue: Request[] = [];
  private scheduled = false;
  private inFlight = 0;
  private readonly maxInFlight: number;
  private readonly timeoutMs: number;
  private readonly groups = new Set<InFlight>();
  /** Groups in flight whose calls were refused for PostgreSQL's silence. */
  private expiredInFlight = 0;
  private watchdog: Timer | undefined;
  private idle: Array<() => void> = [];

  constructor(
    private readonly sql: SQL,
    private readonly opts: PgEventLogOptions,
  ) {
    this.maxInFlight = opts.maxInFlight ?? 2;
    this.timeoutMs = opts.timeoutMs ?? INSERT_TIMEOUT_MS;
  }

  /** Resolves once the rows' group has committed, telling which rows were duplicates. */
  append(rows: EventRow[]): Promise<AppendResult> {
    if (rows.length === 0) return Promise.resolve(EMPTY);
    // Every group in flight has waited out the time-out: PostgreSQL does not answer, and this
    // call could only wait behind them. Refused at once (not sent, so not stored).
    if (this.inFlight >= this.maxInFlight && this.expiredInFlight === this.inFlight) {
      return Promise.reject(databaseUnavailable(`PostgreSQL has not answered for over ${this.timeoutMs / 1000} s`));
    }
    return new Promise((resolve, reject) => {
      this.queue.push({
        rows,
        keys: rows.map((r) => dedupKey(r.sourceId, r.messageId)),
        partitions: rows.map((r) => partitionOfKey(r.userKey, this.opts.partitions)),
        epoch: this.opts.epoch?.(),
        at: performance.now(),
        resolve,
        reject,
      });
      this.schedule();
      this.arm();
    });
  }

  /** Checks the time-outs while anything waits (a few times a second; nothing per call). */
  private arm() {
    if (this.watchdog || (this.queue.length === 0 && this.groups.size === 0)) return;
    this.watchdog = setTimeout(() => {
      this.watchdog = undefined;
      this.expire();
      this.arm();
    }, Math.min(250, this.timeoutMs));
    (this.watchdog as { unref?: () => void }).unref?.();
  }

  /**
   * Refuses the calls PostgreSQL has not answered within the time-out: those of groups in
   * flight (their statement may still commit: refused, not lost) and those queued behind them
   * (never sent).
   */
  private expire() {
    const now = performance.now();
    for (const g of this.groups) {
      if (g.expired || now - g.sentAt < this.timeoutMs) continue;
      g.expired = true;
      this.expiredInFlight++;
      const e = databaseUnavailable(`PostgreSQL did not answer within ${this.timeoutMs / 1000} s`);
      for (const r of g.requests) r.reject(e);
    }
    if (this.queue.length && now - this.queue[0]!.at >= this.timeoutMs) {
      const e = databaseUnavailable(`PostgreSQL did not answer within ${this.timeoutMs / 1000} s`);
      const waiting = this.queue;
      this.queue = [];
      for (const r of waiting) {
        if (now - r.at >= this.timeoutMs) r.reject(e);
        else this.queue.push(r);
      }
      if (this.queue.length === 0 && this.inFlight === 0) for (const f of this.idle.splice(0)) f();
    }
  }

  /** Resolves when nothing is queued or in flight. */
  settled(): Promise<void> {
    if (this.queue.length === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private schedule() {
    if (this.scheduled || this.inFlight >= this.maxInFlight || this.queue.length === 0) return;
    this.scheduled = true;
    // The next turn: every call of this one joins the group.
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush() {
    if (this.queue.length === 0 || this.inFlight >= this.maxInFlight) return;
    const group = this.queue;
    this.queue = [];
    this.inFlight++;
    const sent: InFlight = { sentAt: performance.now(), requests: group, expired: false };
    this.groups.add(sent);
    this.arm();
    void this.commit(group).finally(() => {
      this.inFlight--;
      this.groups.delete(sent);
      if (sent.expired) this.expiredInFlight--;
      this.schedule();
      if (this.queue.length === 0 && this.inFlight === 0) for (const f of this.idle.splice(0)) f();
    });
  }

  private async commit(group: Request[]): Promise<void> {
    // The oldest rules any request of the group was checked against: if the database has moved
    // past them, every request of the group checks again (those already current lose a round trip).
    let epoch: number | undefined;
    for (const r of group) if (r.epoch !== undefined && (epoch === undefined || r.epoch < epoch)) epoch = r.epoch;
    let result: { epochOk: boolean; stored: Set<string> };
    try {
      result = await this.insert(group, epoch);
    } catch (err) {
      // Groups go in key order (insert), so two of them do not deadlock each other; should a
      // deadlock with other work happen, PostgreSQL aborts one side and this group is sent once more.
      if (sqlState(err) !== DEADLOCK) return this.fail(group, err);
      try {
        result = await this.insert(group, epoch);
      } catch (again) {
        return this.fail(group, again);
      }
    }
    if (!result.epochOk) {
      for (const r of group) r.resolve({ stored: 0, duplicates: [], epochStale: true });
      return;
    }
    // A key returned was stored by its first row in the group; any later row with it, and every
    // row whose key was not returned, is a duplicate.
    const claimed = result.stored;
    for (const r of group) {
      const duplicates: number[] = [];
      const partitions = new Set<number>();
      for (let i = 0; i < r.keys.length; i++) {
        if (claimed.has(r.keys[i]!)) {
          claimed.delete(r.keys[i]!);
          partitions.add(r.partitions[i]!);
        } else duplicates.push(i);
      }
      r.resolve({ stored: r.rows.length - duplicates.length, duplicates, partitions });
    }
  }

  private async insert(group: Request[], epoch: number | undefined): Promise<{ epochOk: boolean; stored: Set<string> }> {
    const cols: { ws: string[]; src: string[]; mid: string[]; dk: string[]; p: number[]; uk: string[]; ty: string[]; pl: string[]; at: number[] } = {
      ws: [], src: [], mid: [], dk: [], p: [], uk: [], ty: [], pl: [], at: [],
    };
    for (const r of group) {
      for (let i = 0; i < r.rows.length; i++) {
        const row = r.rows[i]!;
        cols.ws.push(row.workspaceId);
        cols.src.push(row.sourceId);
        cols.mid.push(row.messageId);
        cols.dk.push(r.keys[i]!);
        cols.p.push(r.partitions[i]!);
        cols.uk.push(row.userKey);
        cols.ty.push(row.type);
        cols.pl.push(row.payload);
        cols.at.push(row.receivedAt);
      }
    }
    const guarded = epoch !== undefined;
    // Ids are taken in the order the calls came in (each user's order rests on them), then the
    // rows go in by dedup key: two instances inserting some of the same keys wait on each other
    // in one order, never in a cycle (a deadlock failed both groups' calls). Of a key twice in
    // the group, the first call's copy is stored. The CTE calls nextval, so it is materialized
    // in ord order.
    const [row] = await this.sql.unsafe(
      `WITH guard AS (SELECT 1 FROM cluster_epochs WHERE name = 'suppression' AND value = $10::bigint OR NOT $11::boolean),
       numbered AS (
         SELECT nextval('events_id_seq') AS id, x.*
           FROM (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::smallint[], $6::text[], $7::text[], $8::text[], $9::bigint[])
                   WITH ORDINALITY AS u(ws, src, mid, dk, p, uk, ty, pl, at, ord)
                 ORDER BY ord) x
          WHERE EXISTS (SELECT 1 FROM guard)),
       ins AS (
         INSERT INTO events (id, workspace_id, source_id, message_id, dedup_key, partition, user_key, type, payload, received_at)
         SELECT id, ws, src, mid, dk, p, uk, ty, pl, at FROM numbered ORDER BY dk, ord
         ON CONFLICT (dedup_key) DO NOTHING
         RETURNING dedup_key)
       SELECT EXISTS (SELECT 1 FROM guard) AS epoch_ok, coalesce(array_agg(dedup_key::text), '{}') AS stored FROM ins`,
      [cols.ws, cols.src, cols.mid, cols.dk, cols.p, cols.uk, cols.ty, cols.pl, cols.at, epoch ?? 0, guarded],
    );
    return { epochOk: row.epoch_ok === true, stored: new Set(row.stored as string[]) };
  }

  private fail(group: Request[], err: unknown) {
    const message = (err as Error)?.message ?? String(err);
    let e: AppError;
    if (isConnectionFailure(err)) e = databaseUnavailable(`PostgreSQL is unreachable (${message})`, err);
    else if (isOutage(err)) e = databaseUnavailable(`PostgreSQL refuses writes (${message})`, err);
    else {
      e = new AppError("UNAVAILABLE", `events could not be stored: ${message}`);
      (e as { cause?: unknown }).cause = err;
    }
    for (const r of group) r.reject(e);
  }
}

/** How often a request is sent again when regulations keep changing under it, before a 503. */
const STALE_RETRIES = 5;

/**
 * Intake's EventLog on PostgreSQL: no dedup in memory (another instance may hold the first copy),
 * the unique index decides. When the suppression epoch moved on (a regulation made on some
 * instance), the group stored nothing: this instance reloads its rules up to the database's
 * epoch, asks intake again which rows may be stored, and sends those. So no event of a user a
 * committed regulation names is stored after that commit, on any instance.
 */
export class PgIntakeLog implements EventLog {
  /** When intake's writes fail (PostgreSQL unreachable, not answering, refusing writes): /health and the metrics read it. */
  readonly storage = new DatabaseHealth();
  private storedListeners: Array<(partitions: Set<number>) => void> = [];

  constructor(
    private readonly log: PgEventLog,
    /** Reloads the suppression rules up to the database's epoch (EpochWatch.refresh). */
    private readonly refreshSuppression: () => Promise<void>,
  ) {}

  prefetch(): void {}

  claim(): boolean {
    return true;
  }

  /** Called after each append that stored rows, with the partitions they went to (the processors' wake-up). */
  onStored(fn: (partitions: Set<number>) => void): void {
    this.storedListeners.push(fn);
  }

  /** Resolves when no append is queued or in flight. */
  settled(): Promise<void> {
    return this.log.settled();
  }

  async append(rows: EventRow[], _keys: number[], _claimRefused: boolean, stillAllowed: (i: number) => boolean): Promise<AppendOutcome> {
    let pending = rows;
    let index = rows.map((_, i) => i);
    const suppressed: number[] = [];
    for (let attempt = 0; ; attempt++) {
      const r = await this.log.append(pending);
      if (!r.epochStale) {
        if (r.partitions?.size) for (const fn of this.storedListeners) fn(r.partitions);
        return { duplicates: r.duplicates.map((i) => index[i]!), suppressed };
      }
      if (attempt === STALE_RETRIES) throw new AppError("UNAVAILABLE", "events could not be stored: regulations kept changing meanwhile; retry");
      await this.refreshSuppression();
      const keep: number[] = [];
      for (let j = 0; j < index.length; j++) {
        if (stillAllowed(index[j]!)) keep.push(j);
        else suppressed.push(index[j]!);
      }
      pending = keep.map((j) => pending[j]!);
      index = keep.map((j) => index[j]!);
      if (pending.length === 0) return { duplicates: [], suppressed };
    }
  }
}
