/**
 * Live events across instances (issue 24, design §3.6): two relays, each on its own Bun.sql
 * client and bus on one freshly migrated schema (dropped after each test), as two Sluice
 * processes behind a load balancer would be.
 */
import { describe, expect, test } from "bun:test";
import type { SQL } from "bun";
import { closePostgres, type PgDb } from "../../db/pg";
import { Bus, NOTIFY_PAYLOAD_LIMIT, type BusMessageMeta } from "../../src/cluster/bus";
import { LiveRelay, shrinkLiveEvent, type LiveRelayOptions } from "../../src/backend/live-relay";
import type { IntakeDeps } from "../../src/gateway/intake";
import type { LiveEvents } from "../../src/pipeline/live-events";
import type { Router } from "../../src/pipeline/router";
import type { pipelineRoutes } from "../../src/pipeline/routes";
import { havePostgres, pgScratch, requirePostgres, waitFor } from "../support/pg";

requirePostgres("cluster-live.test.ts");

const rand = () => crypto.randomUUID().replaceAll("-", "").slice(0, 10);

// What intake, the router and the SSE routes are given: a relay goes where LiveEvents goes (checked by tsc).
const takenAsLiveEvents = (r: LiveRelay): [IntakeDeps["live"], ConstructorParameters<typeof Router>[4], Parameters<typeof pipelineRoutes>[2]] => [r, r, r];
void takenAsLiveEvents;

interface Instance {
  id: string;
  app: string;
  db: PgDb;
  sql: SQL;
  bus: Bus;
  relay: LiveRelay;
  /** Every `live` message on the channel as this instance's bus heard it (its own included). */
  wire: Array<{ payload: any; meta: BusMessageMeta }>;
}

describe.if(havePostgres)("live events across instances (LiveRelay on PostgreSQL)", () => {
  const scratch = pgScratch("t_live");
  const admin = scratch.admin;
  const freshSchema = () => scratch.schema();

  /** One instance: its own client, bus and relay on `schema`; the relay started unless told not to. */
  async function instance(schema: string, id: string, opts: Partial<LiveRelayOptions> = {}, start = true): Promise<Instance> {
    const app = `live-test-${id}-${rand()}`;
    const db = await scratch.open(schema, { max: 2, applicationName: app });
    const bus = new Bus({ sql: db.$client, instanceId: id });
    const relay = new LiveRelay({ bus, ...opts });
    const inst: Instance = { id, app, db, sql: db.$client, bus, relay, wire: [] };
    bus.subscribe("live", (payload, meta) => void inst.wire.push({ payload, meta }));
    await bus.start();
    scratch.onStop(() => bus.stop());
    if (start) relay.start();
    scratch.onStop(() => relay.stop());
    return inst;
  }

  /** Subscribes `inst` to `topic`, collecting what arrives. */
  function watch(inst: Instance, topic: string) {
    const got: any[] = [];
    const leave = inst.relay.subscribe(topic, (data) => void got.push(data));
    return { got, leave };
  }

  const events = (inst: Instance) => inst.wire.filter((w) => w.payload?.k === "event");

  /** A and B on a fresh schema, both watching source:src_1, once A has heard B's watch. */
  async function watchingPair(aOpts: Partial<LiveRelayOptions> = {}) {
    const schema = freshSchema();
    const a = await instance(schema, "a", aOpts);
    const b = await instance(schema, "b");
    const topic = "source:src_1";
    const onA = watch(a, topic);
    const onB = watch(b, topic);
    await waitFor(() => a.relay.watchedElsewhere(topic), { timeoutMs: 2000, what: "A to hear B's watch" });
    return { a, b, topic, onA, onB };
  }

  test("a subscriber on B receives what A publishes, once; nothing comes back to A, and B relays nothing on", async () => {
    const { a, b, topic, onA, onB } = await watchingPair();
    expect(a.relay.hasSubscribers(topic)).toBe(true);
    await waitFor(() => b.relay.watchedElsewhere(topic), { timeoutMs: 2000, what: "B to hear A's watch" });

    a.relay.publish(topic, { messageId: "m1", type: "track", event: "Signed Up", userId: "u1" });
    a.relay.publish(topic, { messageId: "m2", type: "track", event: "Logged In", userId: "u1" });
    await waitFor(() => onB.got.length === 2, { timeoutMs: 2000, what: "B's subscriber to receive both" });
    expect(onB.got.map((e) => e.messageId)).toEqual(["m1", "m2"]);
    expect(onB.got[0]).toEqual({ messageId: "m1", type: "track", event: "Signed Up", userId: "u1" });

    // A marker from B: once A hears it, anything B would have sent back about m1, m2 has arrived too.
    b.relay.publish(topic, { messageId: "from-b" });
    await waitFor(() => onA.got.some((e) => e.messageId === "from-b"), { timeoutMs: 2000, what: "A to receive B's event" });
    expect(onA.got.map((e) => e.messageId)).toEqual(["m1", "m2", "from-b"]);
    expect(onB.got.map((e) => e.messageId)).toEqual(["m1", "m2", "from-b"]);
    // On the wire: one message per publish, each from its publisher.
    expect(events(a).map((w) => [w.payload.data.messageId, w.meta.from])).toEqual([
      ["m1", "a"],
      ["m2", "a"],
      ["from-b", "b"],
    ]);
    expect(a.relay.stats()).toMatchObject({ relayed: 2, received: 1, truncated: 0, droppedRate: 0, droppedQueue: 0 });
    expect(b.relay.stats()).toMatchObject({ relayed: 1, received: 2 });
  });

  test("A's hasSubscribers turns true when B subscribes and false when B's last subscriber leaves; only then does A publish", async () => {
    const schema = freshSchema();
    const a = await instance(schema, "a");
    const b = await instance(schema, "b");
    const topic = "destination:dst_1";
    const local = watch(a, "source:src_local"); // A's own topic, watched by nobody else
    a.relay.publish("source:src_local", { n: "unwatched elsewhere" });
    a.relay.publish(topic, { n: "watched by nobody" });
    expect(a.relay.hasSubscribers(topic)).toBe(false);

    const first = watch(b, topic);
    const second = watch(b, topic);
    await waitFor(() => a.relay.hasSubscribers(topic), { timeoutMs: 2000, what: "A to see B's watch" });
    expect(a.relay.hasSubscribers("destination:dst_other")).toBe(false);
    expect(b.relay.hasSubscribers("source:src_local")).toBe(true); // A's watch, announced too
    a.relay.publish(topic, { n: 1 });
    await waitFor(() => first.got.length === 1 && second.got.length === 1, { timeoutMs: 2000, what: "both B subscribers" });

    // One subscriber leaves: the watch stays. A round trip on another topic proves B said nothing meanwhile.
    first.leave();
    first.leave(); // twice is harmless
    watch(b, "destination:dst_marker");
    await waitFor(() => a.relay.hasSubscribers("destination:dst_marker"), { timeoutMs: 2000, what: "the marker watch" });
    expect(a.relay.hasSubscribers(topic)).toBe(true);

    second.leave();
    await waitFor(() => !a.relay.hasSubscribers(topic), { timeoutMs: 2000, what: "A to see B's watch withdrawn" });
    a.relay.publish(topic, { n: 2 });
    a.relay.publish("destination:dst_marker", { n: "marker" });
    await waitFor(() => events(b).some((w) => w.payload.data.n === "marker"), { timeoutMs: 2000, what: "the marker event" });
    // Nothing that nobody watched went on the wire: not before B watched, not after it left.
    expect(events(b).map((w) => w.payload.data.n)).toEqual([1, "marker"]);
    expect(second.got).toEqual([{ n: 1 }]);
    expect(local.got).toEqual([{ n: "unwatched elsewhere" }]);
  });

  test("a relay that starts after B subscribed asks, and learns B's watch without waiting for an announcement", async () => {
    const schema = freshSchema();
    const slow = { announceMs: 50_000, watchTtlMs: 60_000 };
    const b = await instance(schema, "b", slow);
    const onB = watch(b, "source:src_1");
    const a = await instance(schema, "a", slow, false);
    expect(a.relay.hasSubscribers("source:src_1")).toBe(false);
    const started = performance.now();
    a.relay.start();
    await waitFor(() => a.relay.hasSubscribers("source:src_1"), { timeoutMs: 2000, what: "A to learn B's watch" });
    expect(performance.now() - started).toBeLessThan(2000);
    a.relay.publish("source:src_1", { messageId: "m1" });
    await waitFor(() => onB.got.length === 1, { timeoutMs: 2000, what: "B's subscriber" });
  });

  test("B's listening connection is lost: after it listens again it asks, and learns the watch it missed", async () => {
    const schema = freshSchema();
    const slow = { announceMs: 50_000, watchTtlMs: 60_000 };
    const a = await instance(schema, "a", slow);
    const b = await instance(schema, "b", slow);
    const [listener] = await admin.unsafe(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN %'`, [b.app]);
    expect(listener?.pid).toBeNumber();
    const [killed] = await admin.unsafe(`SELECT pg_terminate_backend($1, 5000) AS ok`, [listener.pid]);
    expect(killed.ok).toBe(true);
    // Announced while B does not listen: B can learn it only by asking after the reconnect.
    const onA = watch(a, "source:src_1");
    await waitFor(() => b.relay.hasSubscribers("source:src_1"), { timeoutMs: 5000, what: "B to learn A's watch after the reconnect" });
    b.relay.publish("source:src_1", { messageId: "m1" });
    await waitFor(() => onA.got.length === 1, { timeoutMs: 2000, what: "A's subscriber" });
  });

  test("a dead instance's watch lapses after its TTL; a live one's is renewed past it", async () => {
    const schema = freshSchema();
    const ttl = 1500;
    const announce = 300;
    const a = await instance(schema, "a");
    const b = await instance(schema, "b", { watchTtlMs: ttl, announceMs: announce });
    watch(b, "source:src_1");
    await waitFor(() => a.relay.hasSubscribers("source:src_1"), { timeoutMs: 2000, what: "A to see B's watch" });
    // Renewed: it holds for twice its TTL while B lives (checked at every poll, not once at the end).
    const since = performance.now();
    await waitFor(
      () => {
        if (!a.relay.hasSubscribers("source:src_1")) throw new Error("B's watch lapsed while B was alive");
        return performance.now() - since > 2 * ttl;
      },
      { timeoutMs: 4 * ttl, what: "two TTLs with B alive" },
    );
    const renewals = a.wire.filter((w) => w.payload.k === "watch" && w.meta.from === "b").length;
    expect(renewals).toBeGreaterThanOrEqual(5);

    // B dies without a word: its client is gone, so it can neither announce nor withdraw.
    await closePostgres(b.db, { timeout: 0 });
    const died = performance.now();
    await waitFor(() => !a.relay.hasSubscribers("source:src_1"), { timeoutMs: ttl + 2000, what: "B's watch to lapse" });
    const lapsedAfter = performance.now() - died;
    // A TTL after the last announcement, which came about one period before the death (bounds
    // with room for a loaded machine's late timers).
    expect(lapsedAfter).toBeGreaterThan(ttl / 2);
    expect(lapsedAfter).toBeLessThan(ttl + 1000);
    await waitFor(() => b.relay.stats().sendFailures > 0, { timeoutMs: 2000, what: "B's renewal to fail" });
  });

  test("an event too large for a NOTIFY arrives cut down, with a note; A's own subscribers get it whole", async () => {
    const { a, b, topic, onA, onB } = await watchingPair();

    const big = {
      messageId: "m-big",
      type: "track",
      event: "Uploaded",
      userId: "u1",
      anonymousId: "anon-1",
      timestamp: "2026-11-26T10:00:00.000Z",
      properties: { blob: "x".repeat(20_000) },
      context: { library: { name: "analytics.js" } },
    };
    // Multi-byte characters count as bytes: 5,000 "é" are 10,000 bytes in a 5,000-character string.
    const longName = { messageId: "m-name", type: "track", event: "é".repeat(5000), userId: "u2" };
    // Too many small top-level fields: only the identity fields can stay.
    const wide = { messageId: "m-wide", type: "identify", userId: "u3", ...Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`k${i}`, "v".repeat(20)])) };
    // A delivery outcome as the router publishes it, with a long answer.
    const outcome = { deliveryId: 7, eventId: 9, userKey: "u4", state: "aborted", attempt: 1, status: 400, response: "r".repeat(9000), error: "bad request", at: "2026-11-26T10:00:00.000Z" };
    const fits = { messageId: "m-fits", type: "track", properties: { s: "y".repeat(7000) } };
    for (const e of [big, longName, wide, outcome, fits]) a.relay.publish(topic, e);
    await waitFor(() => onB.got.length === 5, { timeoutMs: 2000, what: "all five at B" });

    expect(onA.got).toEqual([big, longName, wide, outcome, fits]);
    const [gotBig, gotName, gotWide, gotOutcome, gotFits] = onB.got;
    expect(gotBig).toEqual({
      messageId: "m-big",
      type: "track",
      event: "Uploaded",
      userId: "u1",
      anonymousId: "anon-1",
      timestamp: "2026-11-26T10:00:00.000Z",
      _truncated: { bytes: expect.any(Number), omitted: ["properties", "context"] },
    });
    expect(gotBig._truncated.bytes).toBeGreaterThan(20_000);
    expect(gotName).toEqual({ messageId: "m-name", type: "track", event: "é".repeat(1024) + "…", userId: "u2", _truncated: { bytes: expect.any(Number), omitted: ["event"] } });
    expect(gotWide.messageId).toBe("m-wide");
    expect(gotWide.userId).toBe("u3");
    expect(gotWide.k0).toBeUndefined();
    expect(gotWide._truncated.omitted).toHaveLength(20);
    expect(gotWide._truncated.more).toBe(580);
    expect(gotOutcome).toMatchObject({ deliveryId: 7, state: "aborted", status: 400, error: "bad request", _truncated: { omitted: ["response"] } });
    expect(gotOutcome.response).toBe("r".repeat(1024) + "…");
    expect(gotFits).toEqual(fits);
    for (const w of events(b)) expect(Buffer.byteLength(b.bus.encode("live", w.payload))).toBeLessThanOrEqual(NOTIFY_PAYLOAD_LIMIT);
    expect(a.relay.stats()).toMatchObject({ relayed: 5, truncated: 4, droppedQueue: 0, sendFailures: 0 });
  });

  test("beyond its rate a topic is sampled: the rest is counted, not relayed; local subscribers get every event", async () => {
    const { a, topic, onA, onB } = await watchingPair({ ratePerTopic: 5 });
    for (let i = 0; i < 50; i++) a.relay.publish(topic, { n: i });
    expect(onA.got).toHaveLength(50);
    const s = a.relay.stats();
    expect(s.droppedRate).toBeGreaterThanOrEqual(44);
    await waitFor(() => a.relay.stats().relayed === 50 - s.droppedRate, { timeoutMs: 2000, what: "the sample to be sent" });
    await waitFor(() => onB.got.length === 50 - s.droppedRate, { timeoutMs: 2000, what: "the sample at B" });
    expect(onB.got.slice(0, 5).map((e) => e.n)).toEqual([0, 1, 2, 3, 4]);
    // The bucket refills with time: a later event goes through again.
    await waitFor(
      () => {
        a.relay.publish(topic, { n: "later" });
        return onB.got.some((e) => e.n === "later");
      },
      { timeoutMs: 2000, what: "an event after the refill" },
    );
  });

  test("the instance's total rate bounds the relay whatever the number of watched topics", async () => {
    const schema = freshSchema();
    const a = await instance(schema, "a", { ratePerTopic: 100, rateTotal: 6 });
    const b = await instance(schema, "b");
    const topics = ["source:src_1", "source:src_2", "destination:dst_1"];
    const got = topics.map((t) => watch(b, t).got);
    await waitFor(() => topics.every((t) => a.relay.watchedElsewhere(t)), { timeoutMs: 2000, what: "A to hear B's watches" });
    for (let i = 0; i < 10; i++) for (const t of topics) a.relay.publish(t, { n: i });
    const s = a.relay.stats();
    expect(s.droppedRate).toBeGreaterThanOrEqual(30 - 7);
    await waitFor(() => got.flat().length === 30 - s.droppedRate, { timeoutMs: 2000, what: "the sample at B" });
    // The first events of the burst went, one per topic in turn.
    expect(got.map((g) => g.map((e) => e.n).slice(0, 2))).toEqual([[0, 1], [0, 1], [0, 1]]);
  });

  test("stop() withdraws the instance's watches at once", async () => {
    const schema = freshSchema();
    const a = await instance(schema, "a");
    const b = await instance(schema, "b");
    watch(b, "source:src_1");
    watch(b, "destination:dst_1");
    await waitFor(() => a.relay.hasSubscribers("source:src_1") && a.relay.hasSubscribers("destination:dst_1"), { timeoutMs: 2000, what: "B's watches" });
    await b.relay.stop();
    await waitFor(() => !a.relay.hasSubscribers("source:src_1") && !a.relay.hasSubscribers("destination:dst_1"), { timeoutMs: 1000, what: "B's watches withdrawn" });
    expect(a.relay.watchedElsewhere("source:src_1")).toBe(false);
  });
});

describe("shrinkLiveEvent", () => {
  test("when not even the note fits, it gives up rather than send something too large", () => {
    expect(shrinkLiveEvent({ a: 1 }, 10, () => false)).toBeUndefined();
  });
  test("a value that is not an object is replaced by the note", () => {
    expect(shrinkLiveEvent("x".repeat(10_000), 10_002, (c) => JSON.stringify(c).length < 100)).toEqual({ _truncated: { bytes: 10_002 } });
  });
});

test("a relay that is not started is a plain LiveEvents: local delivery only", () => {
  const bus = new Bus({ sql: null as unknown as SQL, instanceId: "alone" });
  const relay: LiveEvents = new LiveRelay({ bus });
  const got: unknown[] = [];
  expect(relay.hasSubscribers("t")).toBe(false);
  const leave = relay.subscribe("t", (d) => void got.push(d));
  expect(relay.hasSubscribers("t")).toBe(true);
  relay.publish("t", { n: 1 });
  relay.publish("other", { n: 2 });
  leave();
  expect(relay.hasSubscribers("t")).toBe(false);
  relay.publish("t", { n: 3 });
  expect(got).toEqual([{ n: 1 }]);
});
