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
import { StorageHealth } from "../../lib/storage-health";

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
  resolve: (r: AppendResult) => void;
  reject: (e: unknown) => void;
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
  private idle: Array<() => void> = [];

  constructor(
    private readonly sql: SQL,
    private readonly opts: PgEventLogOptions,
  ) {
    this.maxInFlight = opts.maxInFlight ?? 2;
  }

  /** Resolves once the rows' group has committed, telling which rows were duplicates. */
  append(rows: EventRow[]): Promise<AppendResult> {
    if (rows.length === 0) return Promise.resolve(EMPTY);
    return new Promise((resolve, reject) => {
      this.queue.push({
        rows,
        keys: rows.map((r) => dedupKey(r.sourceId, r.messageId)),
        partitions: rows.map((r) => partitionOfKey(r.userKey, this.opts.partitions)),
        epoch: this.opts.epoch?.(),
        resolve,
        reject,
      });
      this.schedule();
    });
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
    void this.commit(group).finally(() => {
      this.inFlight--;
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
    const e = isConnectionFailure(err)
      ? new AppError("UNAVAILABLE", `events could not be stored: PostgreSQL is unreachable (${(err as Error)?.message ?? err})`)
      : new AppError("UNAVAILABLE", `events could not be stored: ${(err as Error)?.message ?? err}`);
    (e as { cause?: unknown }).cause = err;
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
  readonly storage = new StorageHealth();
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
