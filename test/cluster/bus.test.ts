/**
 * Cluster mode's bus and epoch watch (issue 24: "changes made on one instance are seen by all
 * within a second") against the real PostgreSQL. Each instance is its own Bun.sql client, so its
 * own sessions, as two Sluice processes would be; each test migrates its own schema and drops it.
 */
import { describe, expect, test } from "bun:test";
import type { SQL } from "bun";
import { sql as q } from "drizzle-orm";
import type { PgDb } from "../../db/pg";
import { Bus, EpochWatch, NOTIFY_PAYLOAD_LIMIT, channelOf, type BusMessageMeta, type EpochWatchOptions } from "../../src/cluster/bus";
import { partitionOfKey } from "../../src/cluster/hash";
import { PgEventLog } from "../../src/storage/postgres/event-log";
import { havePostgres, pgScratch, requirePostgres, waitFor } from "../support/pg";

requirePostgres("cluster-bus.test.ts");

const rand = () => crypto.randomUUID().replaceAll("-", "").slice(0, 10);

interface Instance {
  id: string;
  app: string;
  db: PgDb;
  sql: SQL;
  bus: Bus;
  /** Every message heard, by topic, with its meta and the time it came. */
  heard: Array<{ topic: string; payload: any; meta: BusMessageMeta; at: number }>;
  resyncs: number;
}

describe.if(havePostgres)("cluster bus and epoch watch on PostgreSQL", () => {
  const scratch = pgScratch("t_bus");
  const admin = scratch.admin;
  const freshSchema = () => scratch.schema();

  /** One instance: its own client (pool and listening connection) on `schema`, its bus started. */
  async function instance(schema: string, id: string): Promise<Instance> {
    const app = `bus-test-${id}-${rand()}`;
    const db = await scratch.open(schema, { max: 2, applicationName: app });
    const bus = new Bus({ sql: db.$client, instanceId: id });
    const inst: Instance = { id, app, db, sql: db.$client, bus, heard: [], resyncs: 0 };
    for (const topic of ["config", "suppression", "live"] as const) {
      bus.subscribe(topic, (payload, meta) => void inst.heard.push({ topic, payload, meta, at: performance.now() }));
    }
    bus.onResync(() => void inst.resyncs++);
    await bus.start();
    scratch.onStop(() => bus.stop());
    return inst;
  }

  function watch(inst: Instance, opts: Partial<EpochWatchOptions> = {}): EpochWatch {
    const w = new EpochWatch({ bus: inst.bus, ...opts });
    scratch.onStop(() => w.stop());
    return w;
  }

  const heardOn = (inst: Instance, topic: string, pred: (p: any) => boolean) => inst.heard.find((h) => h.topic === topic && pred(h.payload));

  async function epochValue(sql: SQL, name: string): Promise<number> {
    return Number((await sql.unsafe(`SELECT value FROM cluster_epochs WHERE name = $1`, [name]))[0].value);
  }

  /** The listening session of an instance, found the way an operator would: by application_name. */
  async function listenerPid(inst: Instance): Promise<number | undefined> {
    const rows = await admin.unsafe(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN %'`, [inst.app]);
    return rows[0]?.pid as number | undefined;
  }

  test("a publish on one instance reaches the other within a second, and its sender as its own", async () => {
    const schema = freshSchema();
    const a = await instance(schema, "a");
    const b = await instance(schema, "b");
    expect(a.bus.channel).toBe(channelOf(schema));
    expect(b.bus.channel).toBe(a.bus.channel);
    const sent = performance.now();
    await a.bus.publish("config", { kind: "source", id: "src_1" });
    const got = await waitFor(() => heardOn(b, "config", (p) => p.id === "src_1"), { timeoutMs: 1000, what: "b to hear a's message" });
    expect(got.at - sent).toBeLessThan(1000);
    expect(got.payload).toEqual({ kind: "source", id: "src_1" });
    expect(got.meta).toEqual({ from: "a", own: false });
    const own = await waitFor(() => heardOn(a, "config", (p) => p.id === "src_1"), { timeoutMs: 1000, what: "a to hear its own message" });
    expect(own.meta).toEqual({ from: "a", own: true });
    // Topics are kept apart on the one channel.
    expect(b.heard.filter((h) => h.topic !== "config")).toEqual([]);
  });

  test("a publish in a transaction is delivered at its commit, and never when it rolls back", async () => {
    const schema = freshSchema();
    const a = await instance(schema, "a");
    const b = await instance(schema, "b");

    await a.sql.begin(async (tx) => {
      await a.bus.publish("live", { n: "in-tx" }, tx);
      // Another session's publish, committed while the transaction is open, overtakes it.
      await a.bus.publish("live", { n: "marker-1" });
      await waitFor(() => heardOn(b, "live", (p) => p.n === "marker-1"), { timeoutMs: 1000, what: "marker-1" });
      expect(heardOn(b, "live", (p) => p.n === "in-tx")).toBeUndefined();
    });
    await waitFor(() => heardOn(b, "live", (p) => p.n === "in-tx"), { timeoutMs: 1000, what: "the committed message" });

    await expect(
      a.sql.begin(async (tx) => {
        await a.bus.publish("live", { n: "rolled-back" }, tx);
        throw new Error("the change failed");
      }),
    ).rejects.toThrow("the change failed");
    // Notifications arrive in commit order: once the marker sent after the rollback is in, a
    // message of the rolled-back transaction can no longer come.
    await a.bus.publish("live", { n: "marker-2" });
    await waitFor(() => heardOn(b, "live", (p) => p.n === "marker-2"), { timeoutMs: 1000, what: "marker-2" });
    expect(b.heard.map((h) => h.payload.n)).toEqual(["marker-1", "in-tx", "marker-2"]);
  });

  test("a bus on another schema (another installation or test on the same database) is not heard", async () => {
    const schema = freshSchema();
    const other = freshSchema();
    const a = await instance(schema, "a");
    const b = await instance(schema, "b");
    const c = await instance(other, "c");
    expect(c.bus.channel).not.toBe(a.bus.channel);
    await c.bus.publish("config", { n: "from-the-other-schema" });
    await a.bus.publish("config", { n: "marker" });
    await waitFor(() => heardOn(b, "config", (p) => p.n === "marker"), { timeoutMs: 1000, what: "the marker" });
    await waitFor(() => heardOn(c, "config", (p) => p.n === "from-the-other-schema"), { timeoutMs: 1000, what: "c's own message" });
    expect(b.heard.map((h) => h.payload.n)).toEqual(["marker"]);
    expect(c.heard.map((h) => h.payload.n)).toEqual(["from-the-other-schema"]);
  });

  test("a message too large for NOTIFY is refused before PostgreSQL sees it; the writer's transaction goes on", async () => {
    const schema = freshSchema();
    const a = await instance(schema, "a");
    const b = await instance(schema, "b");
    // The largest message that fits goes through whole (multi-byte characters counted as bytes).
    const room = NOTIFY_PAYLOAD_LIMIT - Buffer.byteLength(a.bus.encode("live", { s: "" }));
    const fits = "é".repeat(Math.floor(room / 2)) + "x".repeat(room % 2);
    await a.sql.begin(async (tx) => {
      expect(() => a.bus.encode("live", { s: fits + "x" })).toThrow(RangeError);
      await expect(a.bus.publish("live", { s: fits + "x" }, tx)).rejects.toThrow(/at most 7999/);
      await a.bus.publish("live", { s: fits }, tx);
    });
    const got = await waitFor(() => heardOn(b, "live", (p) => typeof p.s === "string"), { timeoutMs: 1000, what: "the largest message" });
    expect(got.payload.s).toBe(fits);
    expect(b.heard).toHaveLength(1);
  });

  test("a subscriber that throws, and a foreign notification on the channel, leave the others unharmed", async () => {
    const schema = freshSchema();
    const a = await instance(schema, "a");
    const b = await instance(schema, "b");
    b.bus.subscribe("config", () => {
      throw new Error("a broken subscriber");
    });
    b.bus.subscribe("config", async () => {
      throw new Error("a broken async subscriber");
    });
    const unsubscribe = b.bus.subscribe("config", () => {
      throw new Error("never called: unsubscribed");
    });
    unsubscribe();
    await admin.unsafe(`SELECT pg_notify($1, 'not a bus message'), pg_notify($1, '{"t":1}')`, [a.bus.channel]);
    await a.bus.publish("config", { n: 1 });
    await a.bus.publish("config", { n: 2 });
    await waitFor(() => b.heard.length === 2, { timeoutMs: 1000, what: "both messages" });
    expect(b.heard.map((h) => h.payload.n)).toEqual([1, 2]);
  });

  test("a regulation made on A bumps the suppression epoch in its transaction; B reloads and reaches it within a second", async () => {
    const schema = freshSchema();
    const a = await instance(schema, "a");
    const b = await instance(schema, "b");
    const watchA = watch(a);
    const watchB = watch(b);
    // B's suppression rules, as the regulations index would load them.
    let rules = new Set<string>();
    const reloads: Array<{ value: number; users: string[]; currentMeanwhile: number }> = [];
    watchB.onChange("suppression", async (value) => {
      const rows = await b.sql.unsafe(`SELECT user_id FROM regulations WHERE canceled = false`);
      rules = new Set(rows.map((r: { user_id: string }) => r.user_id));
      reloads.push({ value, users: [...rules], currentMeanwhile: watchB.current("suppression") });
    });
    await watchA.start();
    await watchB.start();
    const start = await epochValue(b.sql, "suppression");
    expect(watchB.current("suppression")).toBe(start);
    expect(reloads).toEqual([{ value: start, users: [], currentMeanwhile: -1 }]); // the first load, ordered after the epoch read

    let bumped = 0;
    await a.sql.begin(async (tx) => {
      bumped = await watchA.bump(tx, "suppression");
      await tx.unsafe(
        `INSERT INTO regulations (id, workspace_id, regulation_type, user_id, attributes, created_at, updated_at, seq)
         VALUES ('reg_1', 'ws_1', 'suppress', 'u-suppressed', '{}', 0, 0, $1)`,
        [bumped],
      );
    });
    const committed = performance.now();
    expect(bumped).toBe(start + 1);
    await waitFor(() => watchB.current("suppression") === bumped, { timeoutMs: 1000, what: "B to apply the new epoch" });
    expect(performance.now() - committed).toBeLessThan(1000);
    // current() moves only after the reload: whoever sees the new value sees the new rule.
    expect(rules.has("u-suppressed")).toBe(true);
    expect(reloads.at(-1)).toEqual({ value: bumped, users: ["u-suppressed"], currentMeanwhile: start });
    // The writer's own instance: reach() waits for its reload, so it may answer after it.
    await watchA.reach("suppression", bumped);
    expect(watchA.current("suppression")).toBe(bumped);

    // A bump in a transaction that rolls back moves nothing anywhere.
    await expect(
      a.sql.begin(async (tx) => {
        await watchA.bump(tx, "suppression");
        throw new Error("the regulation was refused");
      }),
    ).rejects.toThrow("the regulation was refused");
    await watchB.refresh();
    expect(watchB.current("suppression")).toBe(bumped);
    expect(await epochValue(b.sql, "suppression")).toBe(bumped);
  });

  test("a config change through a drizzle transaction bumps the config epoch; B's config reload runs", async () => {
    const schema = freshSchema();
    const a = await instance(schema, "a");
    const b = await instance(schema, "b");
    const watchA = watch(a);
    const watchB = watch(b);
    const seen: number[] = [];
    watchB.onChange("config", (v) => void seen.push(v));
    await watchA.start();
    await watchB.start();
    const start = watchB.current("config");
    const value = await a.db.transaction(async (tx) => {
      await tx.execute(q`SELECT 1`); // the change itself, whatever it is
      return watchA.bump(tx, "config");
    });
    expect(value).toBe(start + 1);
    await waitFor(() => watchB.current("config") === value, { timeoutMs: 1000, what: "B's config epoch" });
    expect(seen).toEqual([start, value]);
    const msg = heardOn(b, "config", (p) => p.epoch === value)!;
    expect(msg.meta.from).toBe("a");
  });

  test("a bump whose notification never comes is caught up by the poll within about a second", async () => {
    const schema = freshSchema();
    const b = await instance(schema, "b");
    const watchB = watch(b); // the default poll: every 1000 ms
    const seen: number[] = [];
    watchB.onChange("suppression", (v) => void seen.push(v));
    await watchB.start();
    const start = watchB.current("suppression");
    // The epoch moves without any NOTIFY: a lost notification, as far as B can tell.
    await admin.unsafe(`UPDATE "${schema}".cluster_epochs SET value = value + 1 WHERE name = 'suppression'`);
    const moved = performance.now();
    await waitFor(() => watchB.current("suppression") === start + 1, { timeoutMs: 2000, what: "the poll to catch up" });
    expect(performance.now() - moved).toBeLessThan(1300);
    expect(seen).toEqual([start, start + 1]);
    expect(b.heard).toEqual([]);
    expect(b.resyncs).toBe(0);
  });

  test("a reload that fails is tried again at the next poll; reach() rejects with its error meanwhile", async () => {
    const schema = freshSchema();
    const a = await instance(schema, "a");
    const b = await instance(schema, "b");
    const watchA = watch(a);
    const watchB = watch(b, { pollMs: 100 });
    let failing = false;
    const calls: number[] = [];
    watchB.onChange("config", (v) => {
      calls.push(v);
      if (failing) throw new Error("the database hiccupped");
    });
    await watchA.start();
    await watchB.start();
    const start = watchB.current("config");
    failing = true;
    const value = await a.sql.begin((tx) => watchA.bump(tx, "config"));
    await expect(watchB.reach("config", value)).rejects.toThrow("the database hiccupped");
    expect(watchB.current("config")).toBe(start);
    failing = false;
    await waitFor(() => watchB.current("config") === value, { timeoutMs: 1000, what: "the retry at a poll" });
    expect(calls.filter((v) => v === value).length).toBeGreaterThanOrEqual(2);
  });

  test("an epoch that goes backwards (the database restored under running instances) is followed, not waited for", async () => {
    const schema = freshSchema();
    const a = await instance(schema, "a");
    const b = await instance(schema, "b");
    const watchA = watch(a);
    const watchB = watch(b, { pollMs: 100 });
    const calls: number[] = [];
    watchB.onChange("suppression", (v) => void calls.push(v));
    await watchA.start();
    await watchB.start();
    let value = 0;
    for (let i = 0; i < 3; i++) value = await a.sql.begin((tx) => watchA.bump(tx, "suppression"));
    await waitFor(() => watchB.current("suppression") === value, { timeoutMs: 1000, what: "B at the third bump" });
    await admin.unsafe(`UPDATE "${schema}".cluster_epochs SET value = value - 2 WHERE name = 'suppression'`);
    await waitFor(() => watchB.current("suppression") === value - 2, { timeoutMs: 1000, what: "B to follow the restored epoch" });
    expect(calls.at(-1)).toBe(value - 2);
    // Intake's guard compares equal values: it stores again.
    const log = new PgEventLog(b.sql, { partitions: 256, epoch: () => watchB.current("suppression") });
    const row = { workspaceId: "ws_1", sourceId: "src_1", messageId: "m1", userKey: "u1", type: "track", payload: "{}", receivedAt: 0 };
    expect(await log.append([row])).toEqual({ stored: 1, duplicates: [], partitions: new Set([partitionOfKey("u1", 256)]) });
  });

  test("reloads of one epoch never overlap; values heard during one make one more reload, with the last value", async () => {
    const schema = freshSchema();
    const a = await instance(schema, "a");
    const b = await instance(schema, "b");
    // B's polls (every 100 ms) are counted, to be sure some ran during the slow reload.
    let polls = 0;
    const counted = new Proxy(b.sql, {
      get(target, key) {
        if (key === "unsafe") return (text: string, values?: unknown[]) => (text.includes("cluster_epochs") && polls++, target.unsafe(text, values));
        const v = Reflect.get(target, key);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    const watchA = watch(a);
    const watchB = watch(b, { pollMs: 100, sql: counted });
    let blocking = false;
    let release = () => {};
    let active = 0;
    let maxActive = 0;
    const calls: number[] = [];
    watchB.onChange("suppression", async (v) => {
      calls.push(v);
      maxActive = Math.max(maxActive, ++active);
      if (blocking) await new Promise<void>((r) => (release = r));
      active--;
    });
    scratch.onStop(async () => {
      blocking = false;
      release();
    });
    await watchA.start();
    await watchB.start();
    const start = watchB.current("suppression");
    blocking = true;

    const bump = () => a.sql.begin((tx) => watchA.bump(tx, "suppression"));
    const first = await bump();
    await waitFor(() => calls.length === 2, { timeoutMs: 1000, what: "the reload for the first bump" });
    const last = [await bump(), await bump(), await bump(), await bump()].at(-1)!;
    // B's own subscriber runs after the watch's, so once it heard the last value, so did the watch.
    await waitFor(() => heardOn(b, "suppression", (p) => p.epoch === last), { timeoutMs: 1000, what: "B to hear the last bump" });
    const pollsNow = polls;
    await waitFor(() => polls >= pollsNow + 2, { timeoutMs: 2000, what: "two polls during the reload" });
    expect(watchB.current("suppression")).toBe(start);
    expect(calls).toEqual([start, first]);
    expect(active).toBe(1);

    blocking = false;
    release();
    await waitFor(() => watchB.current("suppression") === last, { timeoutMs: 1000, what: "B to apply the last value" });
    expect(calls).toEqual([start, first, last]);
    expect(maxActive).toBe(1);
  });

  test("B's listening connection is terminated: it listens again, its resync hook runs, and it catches up at once", async () => {
    const schema = freshSchema();
    const a = await instance(schema, "a");
    const b = await instance(schema, "b");
    const watchA = watch(a);
    const watchB = watch(b, { pollMs: 600_000 }); // no poll in this test: only the resync can catch up
    await watchA.start();
    await watchB.start();
    const before = await listenerPid(b);
    expect(before).toBeNumber();

    // With a timeout, pg_terminate_backend returns once the session is gone, so it hears nothing more.
    const [killed] = await admin.unsafe(`SELECT pg_terminate_backend($1, 5000) AS ok`, [before]);
    expect(killed.ok).toBe(true);
    // Made while B is not listening: its notification is lost to B.
    const value = await a.sql.begin((tx) => watchA.bump(tx, "suppression"));
    await a.bus.publish("live", { n: "while-away" });

    await waitFor(() => b.resyncs === 1, { timeoutMs: 5000, what: "B's resync after the reconnect" });
    const after = await listenerPid(b);
    expect(after).toBeNumber();
    expect(after).not.toBe(before);
    await waitFor(() => watchB.current("suppression") === value, { timeoutMs: 1000, what: "B to catch up through the resync" });

    await a.bus.publish("live", { n: "after-reconnect" });
    await waitFor(() => heardOn(b, "live", (p) => p.n === "after-reconnect"), { timeoutMs: 1000, what: "a publish after the reconnect" });
    expect(heardOn(b, "live", (p) => p.n === "while-away")).toBeUndefined();
    expect(b.resyncs).toBe(1);
  });

  test("intake's epoch guard on B follows B's watch: stale until B has reloaded the rules, then stores", async () => {
    const schema = freshSchema();
    const a = await instance(schema, "a");
    const b = await instance(schema, "b");
    const watchA = watch(a);
    const watchB = watch(b);
    let hold: Promise<void> | undefined;
    let release = () => {};
    let reloading = false;
    watchB.onChange("suppression", async () => {
      reloading = true;
      await hold;
      reloading = false;
    });
    scratch.onStop(async () => release());
    await watchA.start();
    await watchB.start();
    const log = new PgEventLog(b.sql, { partitions: 256, epoch: () => watchB.current("suppression") });
    const row = (messageId: string) => ({ workspaceId: "ws_1", sourceId: "src_1", messageId, userKey: "u1", type: "track", payload: "{}", receivedAt: 0 });
    expect(await log.append([row("m1")])).toEqual({ stored: 1, duplicates: [], partitions: new Set([partitionOfKey("u1", 256)]) });

    hold = new Promise<void>((r) => (release = r));
    const value = await a.sql.begin((tx) => watchA.bump(tx, "suppression"));
    await waitFor(() => reloading, { timeoutMs: 1000, what: "B's reload to start" });
    // B has heard of the regulation but not yet loaded it: nothing is stored under the old rules.
    expect(await log.append([row("m2")])).toEqual({ stored: 0, duplicates: [], epochStale: true });
    release();
    await watchB.reach("suppression", value);
    expect(await log.append([row("m2")])).toEqual({ stored: 1, duplicates: [], partitions: new Set([partitionOfKey("u1", 256)]) });
  });

  test("stop() closes the listening connection and waits for a running reload", async () => {
    const schema = freshSchema();
    const a = await instance(schema, "a");
    const b = await instance(schema, "b");
    const watchA = watch(a);
    const watchB = watch(b);
    let release = () => {};
    let finished = false;
    let calls = 0;
    watchB.onChange("config", async () => {
      if (++calls === 1) return;
      await new Promise<void>((r) => (release = r));
      finished = true;
    });
    scratch.onStop(async () => release());
    await watchA.start();
    await watchB.start();
    await a.sql.begin((tx) => watchA.bump(tx, "config"));
    await waitFor(() => calls === 2, { timeoutMs: 1000, what: "B's reload to start" });
    let stopped = false;
    const stopping = watchB.stop().then(() => (stopped = true));
    await b.sql`SELECT 1`; // a round trip's time for stop() to return early, were it to
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(finished).toBe(true);
    await b.bus.stop();
    await waitFor(async () => (await listenerPid(b)) === undefined, { timeoutMs: 2000, what: "B's listening session to end" });
    // Nothing more reaches a stopped bus, nor runs a stopped watch's reload.
    await a.sql.begin((tx) => watchA.bump(tx, "config"));
    await a.bus.publish("config", { n: "after-stop" });
    await waitFor(() => heardOn(a, "config", (p) => p.n === "after-stop"), { timeoutMs: 1000, what: "a's own copy" });
    expect(heardOn(b, "config", (p) => p.n === "after-stop")).toBeUndefined();
    expect(calls).toBe(2);
  });
});
