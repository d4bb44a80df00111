/**
 * Cluster mode's message bus and epoch watch (src/cluster/README.md §3.4–3.5): a change made on
 * one instance is seen by all within a second.
 *
 * Bus: PostgreSQL LISTEN/NOTIFY through Bun.sql's own `listen()` (Bun 1.4.5, as package.json asks), which keeps one
 * dedicated connection per client for every subscription, re-subscribes after a lost connection
 * with exponential backoff (250 ms doubling to 32 s, with jitter) and calls back after every
 * LISTEN it gets acknowledged. Notifications sent while that connection was down are lost, so
 * every acknowledgement after the first is told to `onResync` subscribers, who reload
 * everything: their reload starts after LISTEN is back, so nothing falls between the two.
 * - That backoff alone would leave an instance deaf for up to 32 s after the database is back
 *   (20–38 s measured after an outage of 30–40 s: no live events from other instances, no
 *   pipeline signals). So once a statement failed (`databaseFailed`, the epoch watch's poll),
 *   the first one that succeeds again (`databaseAnswered`) makes the bus send itself a ping;
 *   unheard within a second, the subscription is made again at once, on a new connection, and
 *   the subscribers resynchronize as after any reconnect (test/faults/cluster-pg-restart.fault.ts).
 * - One channel per schema, `sluice_` + a hash of current_schema(): channel names are global to
 *   a database, and tests and installations share one. Topics travel inside the payload, so an
 *   instance holds one LISTEN whatever it subscribes to.
 * - `publish(topic, payload, tx)` is `SELECT pg_notify(…)` on the writer's transaction:
 *   PostgreSQL delivers it at commit and drops it at rollback, so nobody hears of a change
 *   before it is visible, or of one that never was. Every message carries the sender's
 *   instanceId; an instance also receives its own messages.
 * - NOTIFY payloads must be shorter than 8000 bytes; a larger message is refused here, before it
 *   could abort the writer's transaction, and the publisher decides what to leave out.
 * - A server `idle_session_timeout` ends the listening connection (it is idle by nature): create
 *   the client with `connection: { idle_session_timeout: 0 }` where the server sets one.
 *
 * EpochWatch: the counters of cluster_epochs ('suppression', 'config') that every writer of
 * regulations or configuration bumps in the same transaction as its change. Notifications make
 * a reload prompt; they are not what makes it correct. A poll of cluster_epochs (every second by
 * default, and at once after a reconnect) bounds a missed notification's cost, and intake's
 * insert is guarded by `current('suppression')` (src/storage/postgres/event-log.ts), so an
 * instance whose rules are behind stores nothing until it has reloaded them.
 */
import { hostname } from "node:os";
import type { SQL } from "bun";
import type { SQLWrapper } from "drizzle-orm";
import { sql as drizzleSql } from "drizzle-orm";
import type { EPOCHS } from "../../db/pg/schema/cluster";
import { silentLogger, type Logger } from "../lib/logger";

export type BusTopic = "config" | "suppression" | "live" | "pipeline";
export type EpochName = (typeof EPOCHS)[number];

/** The bus's own topic: an instance's ping to itself, to learn whether its LISTEN hears. Others ignore it. */
const PING_TOPIC = "bus.ping";
/** How long a ping may take to come back before the listening connection counts as lost. */
const PING_TIMEOUT_MS = 1000;

/** PostgreSQL refuses a NOTIFY payload of 8000 bytes or more (its default build). */
export const NOTIFY_PAYLOAD_LIMIT = 7999;

export interface BusMessageMeta {
  /** instanceId of the sender. */
  from: string;
  /** Sent by this instance (through any of its clients on this schema). */
  own: boolean;
}

export type BusHandler<T = unknown> = (payload: T, meta: BusMessageMeta) => void | Promise<void>;

/**
 * Where a publish runs: a Bun.sql client or transaction (`sql.begin(tx => …)`), or a drizzle
 * transaction over Bun.sql (`db.transaction(tx => …)`), whose statements go through `execute`.
 */
export type BusExecutor = Pick<SQL, "unsafe"> | { execute(query: SQLWrapper): PromiseLike<unknown> };

export interface BusOptions {
  /** A Bun.sql client on the schema that holds the cluster tables (e.g. the PgDb's `$client`). */
  sql: SQL;
  instanceId?: string;
  /** The channel; by default derived from current_schema(). */
  channel?: string;
  logger?: Logger;
}

interface Wire {
  t: string;
  f: string;
  p: unknown;
}

/** The channel of a schema: short enough for PostgreSQL's 63-byte identifiers whatever the schema is called. */
export function channelOf(schema: string): string {
  return `sluice_${Bun.hash.wyhash(schema).toString(16).padStart(16, "0")}`;
}

export class Bus {
  readonly instanceId: string;
  readonly sql: SQL;
  private readonly log: Logger;
  private _channel: string | undefined;
  private readonly handlers = new Map<string, Set<BusHandler<any>>>();
  private readonly resyncs = new Set<() => void | Promise<void>>();
  private subscription: SQL.ListenSubscription | undefined;
  private listens = 0;
  private state: "new" | "starting" | "running" | "stopped" = "new";
  /** A statement failed since the bus last knew it hears: the listening connection may be lost too. */
  private suspect = false;
  private checking: Promise<void> | undefined;
  /** Pings in flight, by token: each resolves when this instance hears it. */
  private readonly pings = new Map<string, () => void>();

  constructor(opts: BusOptions) {
    this.sql = opts.sql;
    this.instanceId = opts.instanceId ?? `${hostname()}-${process.pid}-${crypto.randomUUID().slice(0, 8)}`;
    this._channel = opts.channel;
    this.log = (opts.logger ?? silentLogger).child({ component: "cluster-bus" });
  }

  /** The channel, known once start() has resolved. */
  get channel(): string {
    if (!this._channel) throw new Error("the cluster bus is not started");
    return this._channel;
  }

  /** Resolves once LISTEN is acknowledged: any publish committed after that is received. */
  async start(): Promise<void> {
    if (this.state !== "new") throw new Error(`the cluster bus cannot start: it is ${this.state}`);
    this.state = "starting";
    try {
      if (!this._channel) {
        const [row] = await this.sql.unsafe(`SELECT current_schema() AS s`);
        if (!row?.s) throw new Error("PostgreSQL's search_path names no existing schema: the cluster bus has no channel");
        this._channel = channelOf(row.s as string);
      }
      this.subscription = await this.sql.listen(
        this._channel,
        (text) => this.receive(text),
        () => this.listened(),
      );
      this.state = "running";
    } catch (e) {
      this.state = "stopped";
      throw e;
    }
  }

  /**
   * Tells the bus that a statement on its database failed (the epoch watch's poll): the
   * listening connection may have been lost with it.
   */
  databaseFailed(): void {
    if (this.state === "running") this.suspect = true;
  }

  /**
   * Tells the bus that a statement succeeded. After a failure, the bus makes sure it hears again
   * (see the top of this file): Bun.sql's own reconnect may be waiting out a backoff of up to
   * 32 s. Returns the check, for tests; callers need not wait for it.
   */
  databaseAnswered(): Promise<void> {
    if (this.suspect && !this.checking && this.state === "running") {
      this.checking = this.checkListening().finally(() => (this.checking = undefined));
    }
    return this.checking ?? Promise.resolve();
  }

  private async checkListening(): Promise<void> {
    const acks = this.listens;
    const heard = await this.ping(PING_TIMEOUT_MS);
    // The ping could not be sent: the database is gone again; the next answer checks again.
    if (heard === undefined || this.state !== "running") return;
    // Heard, or Bun.sql's own reconnect got its LISTEN acknowledged meanwhile (after the ping went out).
    if (heard || this.listens > acks) {
      this.suspect = false;
      return;
    }
    this.log.warn("the database answers but the listening connection is not back; listening on a new one", { channel: this._channel });
    // Removing the last registration closes Bun's listening connection (and its pending
    // reconnect); the new one opens a connection at once.
    const old = this.subscription;
    this.subscription = undefined;
    await old?.unlisten().catch((err) => this.log.warn("unlisten failed", { err }));
    try {
      const sub = await this.sql.listen(
        this.channel,
        (text) => this.receive(text),
        () => this.listened(),
      );
      if (this.state !== "running") {
        await sub.unlisten().catch(() => {});
        return;
      }
      this.subscription = sub;
      this.suspect = false;
    } catch (err) {
      // Still suspect: the next statement that succeeds tries again.
      this.log.warn("listening again failed; tried again when the database next answers", { channel: this._channel, err });
    }
  }

  /** Sends this instance a ping: true once it is heard, false if not within `timeoutMs`, undefined if it could not be sent. */
  private async ping(timeoutMs: number): Promise<boolean | undefined> {
    const token = crypto.randomUUID();
    let timer: Timer | undefined;
    const heard = new Promise<boolean>((resolve) => {
      this.pings.set(token, () => resolve(true));
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      await this.sql.unsafe(`SELECT pg_notify($1, $2)`, [this.channel, JSON.stringify({ t: PING_TOPIC, f: this.instanceId, p: token } satisfies Wire)]);
      return await heard;
    } catch {
      return undefined;
    } finally {
      clearTimeout(timer);
      this.pings.delete(token);
    }
  }

  /** Closes the listening connection (the client's pool stays open: it is the caller's). */
  async stop(): Promise<void> {
    if (this.state === "stopped") return;
    this.state = "stopped";
    const sub = this.subscription;
    this.subscription = undefined;
    await sub?.unlisten().catch((err) => this.log.warn("unlisten failed", { err }));
  }

  /**
   * Sends `payload` (JSON) to every instance on this schema, this one included. With `tx` it is
   * delivered when that transaction commits and never if it rolls back; without, at once.
   */
  async publish(topic: BusTopic, payload: unknown, tx?: BusExecutor): Promise<void> {
    const text = this.encode(topic, payload);
    const on = tx ?? this.sql;
    if ("unsafe" in on) await on.unsafe(`SELECT pg_notify($1, $2)`, [this.channel, text]);
    else await on.execute(drizzleSql`SELECT pg_notify(${this.channel}, ${text})`);
  }

  /** The message as sent; throws when PostgreSQL would refuse it. */
  encode(topic: BusTopic, payload: unknown): string {
    const text = JSON.stringify({ t: topic, f: this.instanceId, p: payload } satisfies Wire);
    const bytes = Buffer.byteLength(text);
    if (bytes > NOTIFY_PAYLOAD_LIMIT) {
      throw new RangeError(`a cluster bus message on '${topic}' is ${bytes} bytes; PostgreSQL's NOTIFY takes at most ${NOTIFY_PAYLOAD_LIMIT}`);
    }
    return text;
  }

  /** Calls `fn` for every message on `topic`, in the order they were committed. Returns the unsubscribe. */
  subscribe<T = unknown>(topic: BusTopic, fn: BusHandler<T>): () => void {
    let set = this.handlers.get(topic);
    if (!set) this.handlers.set(topic, (set = new Set()));
    set.add(fn);
    return () => void set.delete(fn);
  }

  /**
   * Calls `fn` after the listening connection came back from a loss: the messages sent in
   * between are gone, so whatever they would have invalidated must be reloaded.
   */
  onResync(fn: () => void | Promise<void>): () => void {
    this.resyncs.add(fn);
    return () => void this.resyncs.delete(fn);
  }

  private listened(): void {
    if (++this.listens === 1 || this.state === "stopped") return;
    this.log.info("listening again after a lost connection; resynchronizing", { channel: this._channel, reconnects: this.listens - 1 });
    for (const fn of [...this.resyncs]) this.call(fn, "resync");
  }

  private receive(text: string): void {
    if (this.state === "stopped") return;
    let msg: Wire;
    try {
      msg = JSON.parse(text) as Wire;
      if (typeof msg?.t !== "string" || typeof msg.f !== "string") throw new Error("not a bus message");
    } catch {
      // Anything may NOTIFY on a channel; what is not ours is dropped, not fatal.
      this.log.warn("dropped a notification that is not a cluster bus message", { channel: this._channel, bytes: text.length });
      return;
    }
    if (msg.t === PING_TOPIC) {
      if (msg.f === this.instanceId && typeof msg.p === "string") this.pings.get(msg.p)?.();
      return;
    }
    const set = this.handlers.get(msg.t);
    if (!set) return;
    const meta: BusMessageMeta = { from: msg.f, own: msg.f === this.instanceId };
    for (const fn of [...set]) this.call(() => fn(msg.p, meta), msg.t);
  }

  /** Bun reports a throwing listen callback as an uncaught exception; a subscriber's fault stays its own. */
  private call(fn: () => void | Promise<void>, topic: string): void {
    const failed = (err: unknown) => this.log.error("cluster bus subscriber failed", { topic, err });
    try {
      const r = fn();
      if (r instanceof Promise) r.catch(failed);
    } catch (err) {
      failed(err);
    }
  }
}

export type EpochReload = (value: number) => Promise<void> | void;

export interface EpochWatchOptions {
  bus: Bus;
  /** Where cluster_epochs is read and bumped; the bus's client when absent. */
  sql?: SQL;
  /** Period of the fallback poll of cluster_epochs (default 1000 ms). */
  pollMs?: number;
  logger?: Logger;
}

interface EpochState {
  readonly name: string;
  /** The value this instance's caches reflect; −1 until the first load. */
  applied: number;
  /** The highest value heard of. */
  wanted: number;
  /** Grows whenever `wanted` changes: tells a poll that a newer value arrived while it was in flight. */
  raised: number;
  reload?: EpochReload;
  running?: Promise<void>;
  lastError?: unknown;
}

const BUMP = `UPDATE cluster_epochs SET value = value + 1 WHERE name = $1 RETURNING value`;

export class EpochWatch {
  private readonly bus: Bus;
  private readonly sql: SQL;
  readonly pollMs: number;
  private readonly log: Logger;
  private readonly epochs = new Map<string, EpochState>();
  private readonly unsubscribe: Array<() => void> = [];
  private state: "new" | "running" | "stopped" = "new";
  private timer: Timer | undefined;
  /** Polls in flight; several may overlap (a resync during the periodic one), which is harmless. */
  private readonly polls = new Set<Promise<unknown>>();

  constructor(opts: EpochWatchOptions) {
    this.bus = opts.bus;
    this.sql = opts.sql ?? opts.bus.sql;
    this.pollMs = opts.pollMs ?? 1000;
    this.log = (opts.logger ?? silentLogger).child({ component: "epoch-watch" });
  }

  /**
   * Registers the reload of what depends on epoch `name` (the suppression rules, the config
   * caches). It runs with the value to reach, after that value was committed; a newer value
   * heard during a run causes one more run afterwards, never a concurrent one. A reload that
   * throws is tried again at the next poll. Register before start(), which runs the first load.
   */
  onChange(name: EpochName, reload: EpochReload): void {
    this.epoch(name).reload = reload;
  }

  /** The value this instance has applied (−1 before start): what intake's epoch guard compares. */
  current(name: EpochName): number {
    return this.epochs.get(name)?.applied ?? -1;
  }

  /**
   * In the writer's transaction, next to its change: moves epoch `name` on and tells every
   * instance at commit. Returns the new value (e.g. for regulations.seq).
   */
  async bump(tx: BusExecutor, name: EpochName): Promise<number> {
    const rows = "unsafe" in tx ? await tx.unsafe(BUMP, [name]) : await tx.execute(drizzleSql`UPDATE cluster_epochs SET value = value + 1 WHERE name = ${name} RETURNING value`);
    const row = (rows as Array<{ value: unknown }>)[0];
    if (!row) throw new Error(`cluster_epochs has no row '${name}'; are the cluster migrations applied?`);
    const value = Number(row.value);
    await this.bus.publish(name, { epoch: value }, tx);
    return value;
  }

  /**
   * Reads cluster_epochs and runs each registered reload once with the current value, so the
   * caches' first load comes after the epoch it is recorded under (the guard relies on that).
   * Start the bus first: a bump between this read and LISTEN would otherwise wait for a poll.
   */
  async start(): Promise<void> {
    if (this.state !== "new") throw new Error(`the epoch watch cannot start: it is ${this.state}`);
    this.state = "running";
    for (const name of ["suppression", "config"] as const) {
      this.unsubscribe.push(this.bus.subscribe<{ epoch?: unknown }>(name, (p) => this.heard(name, p?.epoch)));
    }
    this.unsubscribe.push(this.bus.onResync(() => this.read().then(() => {})));
    try {
      await this.refresh();
      for (const [name, e] of this.epochs) {
        if (e.reload && e.wanted < 0) throw new Error(`cluster_epochs has no row '${name}'; are the cluster migrations applied?`);
        if (e.applied < e.wanted) throw new Error(`the first load for epoch '${name}' failed: ${(e.lastError as Error)?.message ?? e.lastError}`);
      }
    } catch (err) {
      await this.stop();
      throw err;
    }
    this.schedule();
  }

  /** Stops polling and listening, then waits for a reload that is running. */
  async stop(): Promise<void> {
    if (this.state === "stopped") return;
    this.state = "stopped";
    clearTimeout(this.timer);
    for (const u of this.unsubscribe.splice(0)) u();
    await Promise.all([...this.polls].map((p) => p.catch(() => {})));
    await Promise.all([...this.epochs.values()].map((e) => e.running));
  }

  /** Reads cluster_epochs now and waits until this instance has applied what it read (or a reload failed). */
  async refresh(): Promise<void> {
    const read = await this.read();
    await Promise.all(read.map((e) => this.drain(e)));
  }

  /**
   * Resolves once this instance has applied epoch `name` at `value` or later: a writer that has
   * committed a bump awaits it before answering, so its own instance never lags behind its answer.
   * Rejects with the reload's error when the reload fails. `value` must be committed.
   */
  async reach(name: EpochName, value: number): Promise<void> {
    const e = this.epoch(name);
    this.offer(e, value);
    for (;;) {
      // Joins the run in progress, or starts one (a retry, when the last one failed).
      await this.drain(e);
      if (e.applied >= value) return;
      if (this.state === "stopped") throw new Error("the epoch watch stopped");
      if (e.lastError !== undefined) throw e.lastError;
    }
  }

  private epoch(name: string): EpochState {
    let e = this.epochs.get(name);
    if (!e) this.epochs.set(name, (e = { name, applied: -1, wanted: -1, raised: 0 }));
    return e;
  }

  private heard(name: EpochName, value: unknown): void {
    if (this.state !== "running" || typeof value !== "number" || !Number.isSafeInteger(value)) return;
    this.offer(this.epoch(name), value);
  }

  private offer(e: EpochState, value: number): void {
    if (value > e.wanted) {
      e.wanted = value;
      e.raised++;
    }
    if (e.wanted > e.applied) void this.drain(e);
  }

  /** Runs the reload until `applied` has caught up with `wanted`; one run at a time per epoch. */
  private drain(e: EpochState): Promise<void> {
    if (e.running) return e.running;
    if (e.wanted <= e.applied) return Promise.resolve();
    const run = (async () => {
      // Yield first: a reload may fail synchronously, and the finally below must not run before
      // `e.running` is set, or it would stay set to a finished run and block every later one.
      await null;
      try {
        while (e.wanted > e.applied && this.state !== "stopped") {
          const value = e.wanted;
          try {
            await e.reload?.(value);
            e.lastError = undefined;
          } catch (err) {
            e.lastError = err;
            this.log.warn("reload after an epoch change failed; retried at the next poll", { epoch: e.name, value, err });
            return;
          }
          e.applied = value;
        }
      } finally {
        e.running = undefined;
      }
    })();
    e.running = run;
    return run;
  }

  /**
   * One poll: reads cluster_epochs and offers what it read, which starts the reloads due. It does
   * not wait for them, so a slow reload of one epoch delays neither the next poll nor the other.
   */
  private read(): Promise<EpochState[]> {
    if (this.state === "stopped") return Promise.resolve([]);
    const run = this.readOnce();
    this.polls.add(run);
    void run.catch(() => {}).finally(() => this.polls.delete(run));
    return run;
  }

  private async readOnce(): Promise<EpochState[]> {
    const before = new Map([...this.epochs].map(([name, e]) => [name, e.raised]));
    const rows = (await this.sql.unsafe(`SELECT name, value FROM cluster_epochs`)) as Array<{ name: string; value: unknown }>;
    const read: EpochState[] = [];
    for (const row of rows) {
      const value = Number(row.value);
      const e = this.epoch(row.name);
      // Committed values only grow, so a value below one heard before this read began means the
      // database was replaced (a restore) under a running instance. Without starting over, the
      // guard would compare against a value the database never reaches again, refusing every event.
      if (value < Math.max(e.wanted, e.applied) && before.get(row.name) === e.raised && !e.running) {
        this.log.warn("an epoch went backwards (database restored?); reloading", { epoch: row.name, from: Math.max(e.wanted, e.applied), to: value });
        e.applied = -1;
        e.wanted = value;
        e.raised++;
      }
      this.offer(e, value);
      read.push(e);
    }
    return read;
  }

  private schedule(): void {
    if (this.state !== "running") return;
    this.timer = setTimeout(() => {
      this.read()
        .then(
          () => void this.bus.databaseAnswered(),
          (err) => {
            // The bus's LISTEN may be lost with the database: it checks once the database answers again.
            this.bus.databaseFailed();
            this.log.warn("epoch poll failed", { err });
          },
        )
        .finally(() => this.schedule());
    }, this.pollMs);
    // The listening connection and the server keep the process alive; this timer alone should not.
    this.timer.unref?.();
  }
}
