/**
 * Live events across instances (src/cluster/README.md §3.6): the dashboard's live view shows what
 * every instance accepted and delivered, not only the one its browser happens to reach.
 *
 * `LiveRelay` is a LiveEvents (intake, the router and the SSE routes take it unchanged) that
 * also speaks on the bus's `live` topic:
 * - Watches. When a topic gets its first local subscriber, the relay announces it; it repeats
 *   the announcement every `announceMs` while the topic is watched and withdraws it when the
 *   last subscriber leaves. A remote watch lapses `watchTtlMs` after the last announcement
 *   heard (measured on the receiver's clock, so clocks of instances need not agree): a killed
 *   instance's watches end by themselves. A relay that starts, or listens again after a lost
 *   connection (the messages meanwhile are gone), asks the others to announce at once.
 * - `hasSubscribers(topic)` is true when a local subscriber or a live remote watch exists, so
 *   intake and the router keep publishing nothing that nobody, anywhere, watches.
 * - `publish` delivers locally, and sends on the bus only when another instance watches the
 *   topic. What arrives from the bus goes to local subscribers only, and a relay ignores its
 *   own messages: nothing is sent twice or loops.
 * - Live events are a sample, not a copy of the stream. Each topic is relayed at most
 *   `ratePerTopic` events a second and the instance at most `rateTotal` (token buckets with a
 *   second's worth of burst), and at most `maxQueued` events wait for the bus. Beyond any of
 *   these an event is not relayed (local subscribers of the publishing instance still get every
 *   one): it is counted in `stats().droppedRate` / `droppedQueue`, and the watchers elsewhere
 *   see the first events of each second and a gap after them. That bounds the NOTIFY traffic,
 *   which reaches every instance on the schema and shares PostgreSQL with intake, whatever the
 *   event rate.
 * - A message must stay under NOTIFY's limit: an event too large is sent cut down (see
 *   `shrinkLiveEvent`), with a `_truncated` note saying so; never refused by the bus.
 *
 * Messages are sent one at a time in the order made, so a withdrawal never overtakes the
 * announcement it withdraws (concurrent NOTIFYs on a pool's connections commit in any order).
 */
import type { Bus, BusMessageMeta } from "../cluster/bus";
import { NOTIFY_PAYLOAD_LIMIT } from "../cluster/bus";
import { LiveEvents, type LiveListener } from "../pipeline/live-events";
import { silentLogger, type Logger } from "../lib/logger";

export interface LiveRelayOptions {
  /** A started bus (or one started before `start()` is called). */
  bus: Bus;
  /** How long a remote watch holds without being announced again (default 15 s). */
  watchTtlMs?: number;
  /** Period of the announcements of this instance's watches (default 5 s: a lost one is not fatal). */
  announceMs?: number;
  /** Events relayed per second and topic (default 20). */
  ratePerTopic?: number;
  /** Events relayed per second by this instance, all topics (default 200). */
  rateTotal?: number;
  /** Events waiting for the bus, all topics (default 100). */
  maxQueued?: number;
  /** A monotonic clock in ms (default performance.now). */
  now?: () => number;
  logger?: Logger;
}

export interface LiveRelayStats {
  /** Events sent on the bus. */
  relayed: number;
  /** Of those, sent cut down to fit a NOTIFY. */
  truncated: number;
  /** Events from other instances handed to local subscribers. */
  received: number;
  /** Not relayed: over the topic's rate. */
  droppedRate: number;
  /** Not relayed: too many waiting for the bus, or failed to send. */
  droppedQueue: number;
  /** Messages the bus failed to send (PostgreSQL unreachable, …). */
  sendFailures: number;
}

/** What travels as the payload of the bus's `live` topic. */
type LiveWire =
  | { k: "watch"; topics: string[]; ttlMs: number }
  | { k: "unwatch"; topics: string[] }
  | { k: "ask" }
  | { k: "event"; topic: string; data: unknown };

/** A topic longer than this is served locally only: no id of ours comes near it. */
const MAX_TOPIC_CHARS = 512;
/** Bounds on a sender's TTL as a receiver takes it: a wrong setting elsewhere neither flaps nor lingers. */
const MIN_TTL_MS = 1000;
const MAX_TTL_MS = 10 * 60_000;

/**
 * Top-level fields kept when an event must be cut to its identity: the event's (messageId,
 * type, event, userId, …) and a delivery outcome's (deliveryId, state, status, …).
 */
const IDENTITY = [
  "messageId",
  "type",
  "event",
  "name",
  "userId",
  "anonymousId",
  "groupId",
  "timestamp",
  "receivedAt",
  "deliveryId",
  "eventId",
  "userKey",
  "state",
  "attempt",
  "status",
  "at",
];

export interface TruncationNote {
  /** The event's size as JSON, in bytes. */
  bytes: number;
  /** Fields left out or cut short (the first 20). */
  omitted?: string[];
  /** How many more fields were left out or cut. */
  more?: number;
}

/**
 * Cuts a live event down until `fits` accepts it, in steps that keep what a person watching
 * needs to recognise it: first every object field (properties, traits, context, …) is left out
 * and long strings are cut to 1 KB; then only the identity fields stay, cut to 200 characters;
 * then only the note. Each step carries `_truncated: TruncationNote`. Returns undefined when
 * not even the note fits (the caller's envelope alone is too large).
 */
export function shrinkLiveEvent(data: unknown, bytes: number, fits: (candidate: unknown) => boolean): unknown {
  const src = data !== null && typeof data === "object" && !Array.isArray(data) ? (data as Record<string, unknown>) : undefined;
  if (src) {
    const omitted: string[] = [];
    const scalars: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(src)) {
      if (value !== null && typeof value === "object") omitted.push(key);
      else if (typeof value === "string" && value.length > 1024) {
        scalars[key] = value.slice(0, 1024) + "…";
        omitted.push(key);
      } else scalars[key] = value;
    }
    const first = { ...scalars, _truncated: note(bytes, omitted) };
    if (fits(first)) return first;
    const identity: Record<string, unknown> = {};
    for (const key of IDENTITY) {
      const value = src[key];
      if (value === undefined || (value !== null && typeof value === "object")) continue;
      identity[key] = typeof value === "string" && value.length > 200 ? value.slice(0, 200) + "…" : value;
    }
    const second = { ...identity, _truncated: note(bytes, Object.keys(src).filter((k) => !(k in identity) || identity[k] !== src[k])) };
    if (fits(second)) return second;
  }
  const last = { _truncated: note(bytes, []) };
  return fits(last) ? last : undefined;
}

function note(bytes: number, omitted: string[]): TruncationNote {
  const n: TruncationNote = { bytes };
  if (omitted.length) n.omitted = omitted.slice(0, 20).map((k) => (k.length > 64 ? k.slice(0, 64) + "…" : k));
  if (omitted.length > 20) n.more = omitted.length - 20;
  return n;
}

interface Bucket {
  tokens: number;
  at: number;
}

/** `rate` tokens a second, at most a second's worth saved. */
function refill(b: Bucket, rate: number, now: number): void {
  b.tokens = Math.min(rate, b.tokens + ((now - b.at) * rate) / 1000);
  b.at = now;
}

export class LiveRelay extends LiveEvents {
  private readonly bus: Bus;
  readonly watchTtlMs: number;
  readonly announceMs: number;
  private readonly ratePerTopic: number;
  private readonly rateTotal: number;
  private readonly total: Bucket;
  private readonly maxQueued: number;
  private readonly now: () => number;
  private readonly log: Logger;
  /** Topics watched here: what this instance announces. */
  private readonly local = new Set<string>();
  /** Topic → instance → when its watch lapses (this instance's clock). */
  private readonly remote = new Map<string, Map<string, number>>();
  private readonly buckets = new Map<string, Bucket>();
  private readonly queue: Array<{ msg: LiveWire; event: boolean }> = [];
  private queuedEvents = 0;
  private sending: Promise<void> | undefined;
  private failing = false;
  private overhead = -1;
  private timer: Timer | undefined;
  private readonly unsubscribe: Array<() => void> = [];
  private state: "new" | "running" | "stopped" = "new";
  private readonly counts: LiveRelayStats = { relayed: 0, truncated: 0, received: 0, droppedRate: 0, droppedQueue: 0, sendFailures: 0 };

  constructor(opts: LiveRelayOptions) {
    super();
    this.bus = opts.bus;
    this.now = opts.now ?? (() => performance.now());
    this.watchTtlMs = opts.watchTtlMs ?? 15_000;
    this.announceMs = opts.announceMs ?? 5_000;
    if (this.announceMs >= this.watchTtlMs) throw new RangeError("the live relay's announceMs must be shorter than its watchTtlMs, or watches lapse between announcements");
    this.ratePerTopic = opts.ratePerTopic ?? 20;
    this.rateTotal = opts.rateTotal ?? 200;
    this.total = { tokens: this.rateTotal, at: this.now() };
    this.maxQueued = opts.maxQueued ?? 100;
    this.log = (opts.logger ?? silentLogger).child({ component: "live-relay" });
  }

  /** Listens on the bus, asks the other instances for their watches and announces this one's. */
  start(): void {
    if (this.state !== "new") throw new Error(`the live relay cannot start: it is ${this.state}`);
    this.state = "running";
    this.unsubscribe.push(this.bus.subscribe<unknown>("live", (p, meta) => this.heard(p, meta)));
    // Watches and withdrawals sent while this instance was not listening are lost: ask again.
    this.unsubscribe.push(this.bus.onResync(() => this.greet()));
    this.greet();
    this.timer = setInterval(() => this.tick(), this.announceMs);
    // The server keeps the process alive; this timer alone should not.
    this.timer.unref?.();
  }

  /** Withdraws this instance's watches and waits (a few seconds at most) until that is sent. */
  async stop(): Promise<void> {
    if (this.state === "stopped") return;
    const wasRunning = this.state === "running";
    this.state = "stopped";
    clearInterval(this.timer);
    for (const u of this.unsubscribe.splice(0)) u();
    this.remote.clear();
    if (wasRunning && this.local.size) this.sendTopics("unwatch", [...this.local]);
    const sent = this.sending;
    if (sent) await Promise.race([sent, new Promise((r) => setTimeout(r, 3000).unref?.())]);
  }

  stats(): LiveRelayStats {
    return { ...this.counts };
  }

  override subscribe(topic: string, fn: LiveListener): () => void {
    const first = !super.hasSubscribers(topic);
    const leave = super.subscribe(topic, fn);
    if (first) this.watch(topic);
    let left = false;
    return () => {
      // Once only: LiveEvents' unsubscribe called twice could drop a later subscriber's set.
      if (left) return;
      left = true;
      leave();
      if (!super.hasSubscribers(topic)) this.unwatch(topic);
    };
  }

  override hasSubscribers(topic: string): boolean {
    return super.hasSubscribers(topic) || this.watchedElsewhere(topic);
  }

  override publish(topic: string, data: unknown): void {
    super.publish(topic, data);
    if (this.state !== "running" || !this.watchedElsewhere(topic)) return;
    if (!this.take(topic)) {
      this.counts.droppedRate++;
      return;
    }
    if (this.queuedEvents >= this.maxQueued) {
      this.counts.droppedQueue++;
      return;
    }
    const msg = this.fit(topic, data);
    if (msg) this.send(msg, true);
  }

  /** Whether another instance has announced a watch on `topic` that has not lapsed. */
  watchedElsewhere(topic: string): boolean {
    const watchers = this.remote.get(topic);
    if (!watchers) return false;
    const now = this.now();
    for (const [from, until] of watchers) {
      if (until > now) return true;
      watchers.delete(from);
    }
    this.remote.delete(topic);
    return false;
  }

  private watch(topic: string): void {
    if (topic.length > MAX_TOPIC_CHARS) {
      this.log.warn("a live topic too long to announce is served locally only", { chars: topic.length });
      return;
    }
    this.local.add(topic);
    if (this.state === "running") this.sendTopics("watch", [topic]);
  }

  private unwatch(topic: string): void {
    if (!this.local.delete(topic)) return;
    if (this.state === "running") this.sendTopics("unwatch", [topic]);
  }

  private greet(): void {
    if (this.state !== "running") return;
    this.send({ k: "ask" }, false);
    if (this.local.size) this.sendTopics("watch", [...this.local]);
  }

  /** Renews this instance's watches and forgets lapsed remote ones and their buckets. */
  private tick(): void {
    if (this.state !== "running") return;
    if (this.local.size) this.sendTopics("watch", [...this.local]);
    for (const topic of [...this.remote.keys()]) this.watchedElsewhere(topic);
    for (const topic of this.buckets.keys()) if (!this.remote.has(topic)) this.buckets.delete(topic);
  }

  private heard(payload: unknown, meta: BusMessageMeta): void {
    if (meta.own || this.state !== "running" || payload === null || typeof payload !== "object") return;
    const p = payload as Partial<Record<string, unknown>>;
    switch (p.k) {
      case "event":
        if (typeof p.topic !== "string") return;
        this.counts.received++;
        // Local subscribers only: a relayed event is never relayed again.
        super.publish(p.topic, p.data);
        return;
      case "watch": {
        if (!Array.isArray(p.topics)) return;
        const ttl = typeof p.ttlMs === "number" && Number.isFinite(p.ttlMs) ? Math.min(MAX_TTL_MS, Math.max(MIN_TTL_MS, p.ttlMs)) : this.watchTtlMs;
        const until = this.now() + ttl;
        for (const topic of p.topics) {
          if (typeof topic !== "string") continue;
          let watchers = this.remote.get(topic);
          if (!watchers) this.remote.set(topic, (watchers = new Map()));
          watchers.set(meta.from, until);
        }
        return;
      }
      case "unwatch":
        if (!Array.isArray(p.topics)) return;
        for (const topic of p.topics) {
          const watchers = typeof topic === "string" ? this.remote.get(topic) : undefined;
          if (!watchers) continue;
          watchers.delete(meta.from);
          if (watchers.size === 0) this.remote.delete(topic);
        }
        return;
      case "ask":
        if (this.local.size) this.sendTopics("watch", [...this.local]);
        return;
    }
  }

  /** A token from the topic's bucket and from the instance's, or none from either. */
  private take(topic: string): boolean {
    const now = this.now();
    let b = this.buckets.get(topic);
    if (!b) this.buckets.set(topic, (b = { tokens: this.ratePerTopic, at: now }));
    refill(b, this.ratePerTopic, now);
    refill(this.total, this.rateTotal, now);
    if (b.tokens < 1 || this.total.tokens < 1) return false;
    b.tokens -= 1;
    this.total.tokens -= 1;
    return true;
  }

  /** Bytes the bus adds around a payload (its topic and this instance's id). */
  private envelope(): number {
    if (this.overhead < 0) this.overhead = Buffer.byteLength(this.bus.encode("live", 0)) - 1;
    return this.overhead;
  }

  private fits(msg: LiveWire): boolean {
    return this.envelope() + Buffer.byteLength(JSON.stringify(msg)) <= NOTIFY_PAYLOAD_LIMIT;
  }

  /** The event's message, cut down when too large for a NOTIFY; undefined (counted, logged) when it cannot be sent at all. */
  private fit(topic: string, data: unknown): LiveWire | undefined {
    let text: string | undefined;
    try {
      text = JSON.stringify({ k: "event", topic, data } satisfies LiveWire);
    } catch {
      // A cycle or a BigInt: nothing of ours publishes one, but it must not reach the bus.
    }
    if (text !== undefined && this.envelope() + Buffer.byteLength(text) <= NOTIFY_PAYLOAD_LIMIT) return { k: "event", topic, data };
    const bytes = text === undefined ? -1 : Buffer.byteLength(text);
    const cut = shrinkLiveEvent(data, bytes, (candidate) => this.fits({ k: "event", topic, data: candidate }));
    if (cut === undefined) {
      this.counts.droppedQueue++;
      this.log.warn("a live event could not be cut down to fit a NOTIFY; not relayed", { topic: topic.slice(0, 80), bytes });
      return undefined;
    }
    this.counts.truncated++;
    return { k: "event", topic, data: cut };
  }

  /** Sends topics as few messages as fit under NOTIFY's limit. */
  private sendTopics(k: "watch" | "unwatch", topics: string[]): void {
    const make = (list: string[]): LiveWire => (k === "watch" ? { k, topics: list, ttlMs: this.watchTtlMs } : { k, topics: list });
    let chunk: string[] = [];
    for (const topic of topics) {
      chunk.push(topic);
      if (chunk.length > 1 && !this.fits(make(chunk))) {
        chunk.pop();
        this.send(make(chunk), false);
        chunk = [topic];
      }
    }
    if (chunk.length) this.send(make(chunk), false);
  }

  /** Queues a message; one NOTIFY at a time, in order. Watches are always queued: they are few. */
  private send(msg: LiveWire, event: boolean): void {
    this.queue.push({ msg, event });
    if (event) this.queuedEvents++;
    if (!this.sending) this.sending = this.drain();
  }

  private async drain(): Promise<void> {
    // `sending` is cleared in the same turn that finds the queue empty, so a message queued
    // right after is never left waiting behind a drain that has already ended.
    try {
      for (let item = this.queue.shift(); item; item = this.queue.shift()) await this.sendOne(item);
    } finally {
      this.sending = undefined;
    }
  }

  private async sendOne(item: { msg: LiveWire; event: boolean }): Promise<void> {
    try {
      await this.bus.publish("live", item.msg);
      if (item.event) this.counts.relayed++;
      if (this.failing) {
        this.failing = false;
        this.log.info("live events reach the other instances again");
      }
    } catch (err) {
      this.counts.sendFailures++;
      if (item.event) this.counts.droppedQueue++;
      // Logged when sending starts failing, not for every message while it does.
      if (!this.failing) {
        this.failing = true;
        this.log.warn("live events cannot be sent to the other instances", { err });
      }
    } finally {
      if (item.event) this.queuedEvents--;
    }
  }
}
