/**
 * Issue 45 (4.1, 4.4): PostgreSQL goes away under load and comes back.
 *
 * 1. Cluster mode: two real Sluice processes on one schema, a WEBHOOK destination to a local
 *    sink, eight users sending events to both instances all along (per-user sequence numbers,
 *    messageIds of the test's own, a call answered other than 200 sent again), and a live-events
 *    view of the source open on each instance. PostgreSQL is restarted (A), or stopped for 30 s
 *    and started (B). While it is down, event calls answer 503, never 200; within 5 s of its
 *    return each instance takes events again and shows the events the other one takes (its
 *    LISTEN is back), without a restart of Sluice; every acknowledged event reaches the sink,
 *    each user's in order.
 * 2. The warehouse: a POSTGRES destination reached through a TCP proxy in the test, cut in the
 *    middle of a load's COPY and refusing connections for a while: the load fails as
 *    retryable, is retried by itself, and every row is in the warehouse exactly once.
 *
 * The PostgreSQL server is the machine's (test/support/pg.ts): this file stops and starts it
 * with pg_ctlcluster, and afterAll starts it again whatever happened. Nothing sleeps to wait:
 * every wait polls with a deadline (the senders pace their calls, which is load, not waiting).
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { readdirSync } from "node:fs";
import type { Socket, TCPSocketListener } from "bun";
import { defaultNamespace } from "../../src/warehouse/schema";
import { type SluiceProcess, api, basic, bearer, cleanup, sendEvent, spawnSluice, startSink, waitFor, arrivals } from "../support/helpers";
import { PG, PG_URL, havePostgres, requirePostgres } from "../support/pg";

requirePostgres("cluster-pg-restart.fault.ts");

// ---- the PostgreSQL server ------------------------------------------------------------------

/** pg_ctlcluster of the machine's one cluster (Debian's layout), when there is one. */
const PG_VERSION = (() => {
  try {
    return readdirSync("/etc/postgresql")[0];
  } catch {
    return undefined;
  }
})();
const canControlPg = havePostgres && PG_VERSION !== undefined && Bun.which("pg_ctlcluster") !== null && (PG.host === "127.0.0.1" || PG.host === "localhost");
if (havePostgres && !canControlPg) console.warn("cluster-pg-restart.fault.ts: skipped, PostgreSQL cannot be stopped and started here (no pg_ctlcluster or /etc/postgresql)");

async function pgCtl(action: "restart" | "stop" | "start" | "status"): Promise<number> {
  const p = Bun.spawn(["pg_ctlcluster", "--skip-systemctl-redirect", PG_VERSION!, "main", action], { stdout: "pipe", stderr: "pipe" });
  const code = await p.exited;
  if (code !== 0 && action !== "status") throw new Error(`pg_ctlcluster ${action} exited with ${code}: ${await new Response(p.stderr).text()}`);
  return code;
}

/** Whether a fresh connection gets an answer now. */
async function pgAnswers(): Promise<boolean> {
  const sql = new SQL({ hostname: PG.host, port: PG.port, database: PG.database, username: PG.user, password: PG.password, max: 1, connectionTimeout: 2 });
  try {
    await sql`SELECT 1`;
    return true;
  } catch {
    return false;
  } finally {
    await sql.close().catch(() => {});
  }
}

/** When a fresh connection first gets an answer, polling from now (during a start). */
async function firstAnswer(): Promise<number> {
  await waitFor(() => pgAnswers(), { timeoutMs: 30_000, what: "PostgreSQL to answer" });
  return Date.now();
}

/** Starts the server if it is not running, and waits until it answers. */
async function ensurePgUp(): Promise<void> {
  if ((await pgCtl("status")) !== 0) await pgCtl("start");
  await waitFor(() => pgAnswers(), { timeoutMs: 30_000, what: "PostgreSQL to answer" });
}

// Whatever happened in a test, the server runs again for the tests after it.
afterAll(async () => {
  if (canControlPg) await ensurePgUp();
}, 60_000);

// Everything a test starts, undone after it (the server first: the schemas are dropped through it).
const undo: Array<() => unknown> = [];
const schemas: string[] = [];
afterEach(async () => {
  if (canControlPg) await ensurePgUp();
  for (const fn of undo.splice(0).reverse()) await Promise.resolve().then(fn).catch(() => {});
  if (schemas.length) {
    const sql = new SQL(PG_URL, { max: 1 });
    try {
      for (const s of schemas.splice(0)) await sql.unsafe(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    } finally {
      await sql.close();
    }
  }
}, 60_000);

function newSchema(prefix: string): string {
  const s = `${prefix}_${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
  schemas.push(s);
  return s;
}

function track(p: SluiceProcess): SluiceProcess {
  undo.push(async () => {
    p.proc.kill(9);
    await p.proc.exited;
    await cleanup(p.dataDir);
  });
  return p;
}

// ---- 1. cluster mode --------------------------------------------------------------------------

interface Call {
  instance: number;
  user: string;
  seq: number;
  /** 200, 503, …; 0 when no answer came (refused, reset, or 10 s without one). */
  status: number;
  sentAt: number;
  doneAt: number;
}

/**
 * Users sending `step` events to both instances for as long as it runs: each waits for an answer
 * before its next call (as an SDK does), sends a call answered other than 200 again with the same
 * messageId to the other instance, and paces itself (one call per `paceMs` at most).
 */
function startLoad(procs: SluiceProcess[], writeKey: string, users: string[], paceMs = 20) {
  const calls: Call[] = [];
  const acked = new Map<string, number[]>(users.map((u) => [u, []]));
  let stopping = false;
  const running = Promise.all(
    users.map(async (user, u) => {
      let seq = 0;
      for (let attempt = 0; !stopping; ) {
        const instance = (u + seq + attempt) % procs.length;
        const sentAt = Date.now();
        let status = 0;
        try {
          const res = await fetch(`${procs[instance]!.url}/v1/track`, {
            method: "POST",
            headers: { authorization: basic(writeKey), "content-type": "application/json" },
            body: JSON.stringify({ userId: user, event: "step", messageId: `${user}-${seq}`, properties: { seq } }),
            signal: AbortSignal.timeout(10_000),
          });
          status = res.status;
          await res.arrayBuffer();
        } catch {}
        const doneAt = Date.now();
        calls.push({ instance, user, seq, status, sentAt, doneAt });
        if (status === 200) {
          acked.get(user)!.push(seq++);
          attempt = 0;
        } else attempt++;
        const rest = (status === 200 ? paceMs : 50) - (doneAt - sentAt);
        if (rest > 0) await Bun.sleep(rest);
      }
    }),
  );
  return {
    calls,
    acked,
    total: () => [...acked.values()].reduce((n, l) => n + l.length, 0),
    async stop() {
      stopping = true;
      await running;
    },
  };
}

type Sink = ReturnType<typeof startSink>;


async function twoInstances() {
  const schema = newSchema("t_pgrst");
  const procs = (
    await Promise.all(Array.from({ length: 2 }, () => spawnSluice({ args: ["--database", PG_URL, "--database-schema", schema, "--retry-backoff-ms", "100"] })))
  ).map(track);
  const sink = startSink();
  undo.push(() => sink.stop());
  const src = (await api(procs[0]!.url, "POST", "/v2/sources", { name: "web" })).json;
  const dst = await api(procs[1]!.url, "POST", "/v2/destinations", { name: "hook", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/hook` }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  for (const p of procs) {
    await waitFor(async () => (await sendEvent(p.url, src.writeKey, "track", { userId: "probe", event: "probe" })).status === 200 || undefined, {
      timeoutMs: 5000,
      what: "the write key on every instance",
    });
  }
  return { procs, sink, sourceId: src.id as string, writeKey: src.writeKey as string, pids: procs.map((p) => p.proc.pid) };
}

/** Times at which the instance logged that its bus listens again after a lost connection (after `since`). */
function busResyncs(p: SluiceProcess, since: number): number[] {
  const out: number[] = [];
  for (const line of p.output().split("\n")) {
    if (!line.includes("listening again after a lost connection")) continue;
    const t = Date.parse(JSON.parse(line).time);
    if (t >= since) out.push(t);
  }
  return out;
}

/**
 * A browser's live view of the source on one instance: each event it shows, and when. A stream
 * that ends (the idle timeout while nothing is taken) is opened again.
 */
function watchLive(p: SluiceProcess, sourceId: string) {
  const seen: Array<{ at: number; messageId: string }> = [];
  const abort = new AbortController();
  const running = (async () => {
    while (!abort.signal.aborted) {
      try {
        const res = await fetch(`${p.url}/v2/sources/${sourceId}/live-events`, { headers: { authorization: bearer() }, signal: abort.signal });
        if (res.status !== 200) throw new Error(`live events: ${res.status} ${await res.text()}`);
        const decoder = new TextDecoder();
        let buf = "";
        for await (const chunk of res.body as ReadableStream<Uint8Array>) {
          buf += decoder.decode(chunk, { stream: true });
          for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
            const line = buf.slice(0, i);
            buf = buf.slice(i + 1);
            if (!line.startsWith("data: {")) continue;
            const e = JSON.parse(line.slice(6));
            if (typeof e?.messageId === "string") seen.push({ at: Date.now(), messageId: e.messageId });
          }
        }
      } catch {}
      // Paces the next attempt while the instance refuses it (PostgreSQL down).
      if (!abort.signal.aborted) await Bun.sleep(200);
    }
  })();
  undo.push(async () => {
    abort.abort();
    await running;
  });
  return seen;
}

/**
 * When viewer `v` (on instance v) first showed an event taken by the other instance from a
 * call sent at or after `since`, in ms after `since`: live events relayed across instances.
 */
function relayedAfter(calls: Call[], seen: Array<{ at: number; messageId: string }>, v: number, since: number): number | undefined {
  const sentTo = new Map<string, { instances: Set<number>; sentAt: number; ok: boolean }>();
  for (const c of calls) {
    const id = `${c.user}-${c.seq}`;
    let s = sentTo.get(id);
    if (!s) sentTo.set(id, (s = { instances: new Set(), sentAt: c.sentAt, ok: false }));
    s.instances.add(c.instance);
    s.sentAt = Math.min(s.sentAt, c.sentAt);
    s.ok ||= c.status === 200;
  }
  for (const e of seen) {
    const s = sentTo.get(e.messageId);
    if (s?.ok && s.sentAt >= since && s.instances.size === 1 && !s.instances.has(v)) return e.at - since;
  }
  return undefined;
}

/**
 * The first call each instance answered 200 among those sent at or after `since`, as ms after
 * `since` (the instance's recovery time), and how many calls it refused before.
 */
function recovery(calls: Call[], instances: number, since: number) {
  return Array.from({ length: instances }, (_, i) => {
    const after = calls.filter((c) => c.instance === i && c.sentAt >= since).sort((a, b) => a.doneAt - b.doneAt);
    const first = after.find((c) => c.status === 200);
    return { instance: i, ms: first ? first.doneAt - since : Infinity, refusedBefore: after.filter((c) => c.status !== 200 && (!first || c.doneAt <= first.doneAt)).length };
  });
}

function statusCounts(calls: Call[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of calls) out[c.status] = (out[c.status] ?? 0) + 1;
  return out;
}

/** Waits until every acknowledged event is at the sink; checks each user's order and the processes. */
async function expectAllDelivered(env: Awaited<ReturnType<typeof twoInstances>>, load: ReturnType<typeof startLoad>, label: string) {
  const { sink, procs, pids } = env;
  const started = Date.now();
  await waitFor(
    () => {
      const got = arrivals(sink);
      return [...load.acked].every(([user, seqs]) => (got.get(user)?.length ?? 0) >= seqs.length) || undefined;
    },
    { timeoutMs: 45_000, what: `every acknowledged event at the sink (${label})` },
  );
  const got = arrivals(sink);
  let delivered = 0;
  for (const [user, seqs] of load.acked) {
    const list = got.get(user) ?? [];
    delivered += list.length;
    // In order, nothing missing; at most one more: a last call answered other than 200 whose row was stored.
    expect({ user, first: list.slice(0, seqs.length) }).toEqual({ user, first: seqs });
    expect(list.length === seqs.length || (list.length === seqs.length + 1 && list[seqs.length] === seqs.length)).toBe(true);
  }
  const sends = sink.received.filter((r) => r.body?.event === "step").length;
  // Still the same processes: nothing was restarted.
  expect(procs.map((p) => p.proc.exitCode)).toEqual([null, null]);
  expect(procs.map((p) => p.proc.pid)).toEqual(pids);
  return { acked: load.total(), delivered, sinkRequests: sends, drainMs: Date.now() - started };
}

/** PostgreSQL's own start time: when `pg_ctlcluster restart` brought it back (same machine, same clock). */
async function postmasterStart(): Promise<number> {
  const sql = new SQL(PG_URL, { max: 1 });
  try {
    const [row] = await sql`SELECT extract(epoch FROM pg_postmaster_start_time()) * 1000 AS t`;
    return Math.floor(Number(row.t));
  } finally {
    await sql.close();
  }
}

/**
 * Two instances under load lose PostgreSQL (restarted, or stopped for `downMs` then started):
 * the calls meanwhile, each instance's recovery from the moment PostgreSQL is back (event calls,
 * and live events relayed across instances, which need each instance's LISTEN back), and at the
 * end every acknowledged event at the sink in order.
 */
async function outage(kind: "restart" | "stop", downMs = 0) {
  const USERS = Array.from({ length: 8 }, (_, i) => `user-${i}`);
  const env = await twoInstances();
  const viewers = env.procs.map((p) => watchLive(p, env.sourceId));
  const load = startLoad(env.procs, env.writeKey, USERS);
  const relayed = (since: number) => viewers.map((seen, v) => relayedAfter(load.calls, seen, v, since));
  let stopped = false;
  try {
    const t0 = Date.now();
    await waitFor(() => (load.total() >= 300 && relayed(t0).every((ms) => ms !== undefined)) || undefined, {
      timeoutMs: 20_000,
      what: "300 events acknowledged, and live events relayed both ways, before the outage",
    });
    const t: { stopAt: number; downAt?: number; startAt?: number; readyAt: number; upAt: number } = { stopAt: Date.now(), readyAt: 0, upAt: 0 };
    if (kind === "restart") {
      await pgCtl("restart");
      t.upAt = Date.now();
      t.readyAt = await postmasterStart();
    } else {
      await pgCtl("stop");
      stopped = true;
      t.downAt = Date.now();
      // Down for downMs: the calls keep coming meanwhile (and are checked below).
      await waitFor(() => Date.now() - t.downAt! >= downMs || undefined, { timeoutMs: downMs + 5000, what: "the outage to last" });
      t.startAt = Date.now();
      // Polled during the start: when PostgreSQL first answers a new connection.
      [t.readyAt] = await Promise.all([firstAnswer(), pgCtl("start")]);
      stopped = false;
      t.upAt = Date.now();
    }
    // The load goes on after PostgreSQL's return: events acknowledged by both instances, and
    // each viewer shows events the other instance took.
    const before = load.total();
    await waitFor(() => (load.total() >= before + 300 && recovery(load.calls, 2, t.readyAt).every((r) => r.ms < Infinity)) || undefined, {
      timeoutMs: 20_000,
      what: "events acknowledged by each instance after PostgreSQL's return",
    });
    await waitFor(() => relayed(t.readyAt).every((ms) => ms !== undefined) || undefined, { timeoutMs: 30_000, what: "live events relayed both ways after PostgreSQL's return" }).catch(() => {});
    const live = relayed(t.readyAt);
    await load.stop();

    const rec = recovery(load.calls, 2, t.readyAt);
    const around = load.calls.filter((c) => c.doneAt >= t.stopAt && c.sentAt <= t.upAt);
    // Sent once the server was down and answered before it was started again.
    const whileDown = t.downAt === undefined ? [] : load.calls.filter((c) => c.sentAt >= t.downAt! && c.doneAt <= t.startAt!);
    const figures = {
      stopMs: (t.downAt ?? t.upAt) - t.stopAt,
      downMs: t.startAt !== undefined ? t.startAt - t.downAt! : undefined,
      readyAfterCommandMs: t.readyAt - (t.startAt ?? t.stopAt),
      commandReturnedAfterReadyMs: t.upAt - t.readyAt,
      aroundOutage: statusCounts(around),
      whileDown: statusCounts(whileDown),
      whileDownPerInstance: [0, 1].map((i) => whileDown.filter((c) => c.instance === i).length),
      recovery: rec,
      liveRelayedAfterReadyMs: live,
      busListeningAgainAfterReadyMs: env.procs.map((p) => busResyncs(p, t.stopAt).map((at) => at - t.readyAt)),
      ...(await expectAllDelivered(env, load, kind)),
    };
    console.log(`case ${kind}:`, JSON.stringify(figures));
    // Around the outage (calls in flight when it began or ended too): nothing but 200 and 503,
    // no 500, no call left without an answer.
    expect(Object.keys(statusCounts(around)).filter((s) => s !== "200" && s !== "503")).toEqual([]);
    if (kind === "stop") {
      // Both instances were asked, many times, while the server was down; each call answered 503.
      for (const i of [0, 1]) expect(whileDown.filter((c) => c.instance === i).length).toBeGreaterThan(20);
      expect(statusCounts(whileDown)).toEqual({ 503: whileDown.length });
    }
    // Each instance takes events again within 5 s of PostgreSQL's return, and relays live events again.
    for (const r of rec) expect(r.ms).toBeLessThan(5000);
    for (const ms of live) expect(ms).toBeLessThan(5000);
  } finally {
    if (stopped) await ensurePgUp();
    await load.stop();
  }
}

describe.if(canControlPg)("cluster mode: PostgreSQL restarted or stopped under load", () => {
  test("A: pg_ctlcluster restart under load: calls answer 200 or 503, each instance takes events and relays live events again within 5 s, nothing lost, order kept", async () => {
    await outage("restart");
  }, 90_000);

  test("B: PostgreSQL stopped for 30 s under load: every call meanwhile answers 503, each instance takes events and relays live events again within 5 s of its return, nothing lost, order kept", async () => {
    await outage("stop", 30_000);
  }, 120_000);
});

// ---- 2. the warehouse -------------------------------------------------------------------------

/**
 * A TCP proxy to the test PostgreSQL, which the test can cut: `cutAtCopy(n)` closes every
 * connection when the client sends its first bytes after the n-th COPY statement (in the middle of
 * that COPY), then refuses connections until `restore()`.
 */
function pgProxy() {
  type Side = { pending: Uint8Array[]; sock?: Socket<any> };
  const pairs = new Set<{ client: Socket<any>; upstream?: Socket<any>; toUp: Side; toClient: Side }>();
  let down = false;
  let copies = 0;
  let cutAt = Infinity;
  let copySeen = false;
  let cuts = 0;
  const copyPattern = /\bCOPY\s+[^;]*FROM\s+STDIN/i;
  const decoder = new TextDecoder("latin1");

  function send(side: Side, data: Uint8Array) {
    if (!side.sock) return void side.pending.push(data);
    if (side.pending.length) return void side.pending.push(data);
    const n = side.sock.write(data);
    if (n < data.length) side.pending.push(data.subarray(n));
  }
  function flush(side: Side) {
    while (side.sock && side.pending.length) {
      const data = side.pending[0]!;
      const n = side.sock.write(data);
      if (n < data.length) {
        side.pending[0] = data.subarray(n);
        return;
      }
      side.pending.shift();
    }
  }
  function cutAll() {
    down = true;
    cuts++;
    for (const p of pairs) {
      p.client.end();
      p.upstream?.end();
    }
    pairs.clear();
  }

  const listener: TCPSocketListener<any> = Bun.listen<any>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        if (down) return void client.end();
        const pair = { client, upstream: undefined as Socket<any> | undefined, toUp: { pending: [] } as Side, toClient: { pending: [] } as Side };
        pair.toClient.sock = client;
        client.data = pair;
        pairs.add(pair);
        void Bun.connect<any>({
          hostname: PG.host,
          port: PG.port,
          socket: {
            open(up) {
              pair.upstream = up;
              pair.toUp.sock = up;
              if (!pairs.has(pair)) return void up.end();
              flush(pair.toUp);
            },
            data(_up, chunk) {
              if (pairs.has(pair)) send(pair.toClient, chunk);
            },
            drain() {
              flush(pair.toUp);
            },
            close() {
              pairs.delete(pair);
              client.end();
            },
            error() {},
          },
        }).catch(() => {
          pairs.delete(pair);
          client.end();
        });
      },
      data(client, chunk) {
        const pair = client.data;
        if (!pair || !pairs.has(pair)) return;
        if (copySeen) return void cutAll();
        if (copyPattern.test(decoder.decode(chunk.subarray(0, 4096)))) {
          copies++;
          if (copies >= cutAt) copySeen = true;
        }
        send(pair.toUp, chunk);
      },
      drain(client) {
        const pair = client.data;
        if (pair) flush(pair.toClient);
      },
      close(client) {
        const pair = client.data;
        if (!pair) return;
        pairs.delete(pair);
        pair.upstream?.end();
      },
      error() {},
    },
  });

  return {
    port: listener.port,
    /** COPY statements seen so far. */
    copies: () => copies,
    cuts: () => cuts,
    isDown: () => down,
    cutAtCopy(n: number) {
      cutAt = n;
    },
    restore() {
      down = false;
      copySeen = false;
      cutAt = Infinity;
    },
    stop() {
      cutAll();
      listener.stop(true);
    },
  };
}

/** "HH:MM" UTC twelve hours from now: with a daily frequency no scheduled load falls inside the test. */
function farSyncStart(): string {
  const d = new Date(Date.now() + 12 * 3600_000);
  return `${String(d.getUTCHours()).padStart(2, "0")}:${String(d.getUTCMinutes()).padStart(2, "0")}`;
}

describe.if(canControlPg)("warehouse: its PostgreSQL goes down in the middle of a load", () => {
  test("the connection is cut during a COPY of the second page and refused for a while: the load is retried by itself, every row is there exactly once", async () => {
    const TRACKS = 5500;
    const IDENTIFIES = 500;
    const USERS = 50;
    const proxy = pgProxy();
    undo.push(() => proxy.stop());
    // Letters only: the configured namespace goes through RudderStack's naming, which splits digits off.
    const letters = Array.from(crypto.getRandomValues(new Uint8Array(10)), (b) => String.fromCharCode(97 + (b % 26))).join("");
    const ns = defaultNamespace(`sluice_pgdown_${letters}`);
    schemas.push(ns);

    // Single node (SQLite): only the warehouse's connection goes through the proxy.
    const sluice = track(await spawnSluice({}));
    const source = await api(sluice.url, "POST", "/v2/sources", { name: "wh" });
    const dest = await api(sluice.url, "POST", "/v2/destinations", {
      name: "warehouse",
      type: "POSTGRES",
      config: { host: "127.0.0.1", port: String(proxy.port), database: PG.database, user: PG.user, password: PG.password, namespace: ns, syncFrequency: "1440", syncStartAt: farSyncStart() },
      sourceIds: [source.json.id],
    });
    expect(dest.status).toBe(201);
    const destinationId = dest.json.id as string;

    const events: Array<Record<string, unknown>> = [];
    const trackIds: string[] = [];
    const identifyIds: string[] = [];
    const userIds = Array.from({ length: USERS }, (_, u) => `wh-user-${u}`);
    for (let i = 0; i < TRACKS; i++) {
      trackIds.push(`wh-track-${i}`);
      events.push({ type: "track", userId: userIds[i % USERS], messageId: `wh-track-${i}`, event: "Product Viewed", properties: { sku: `SKU-${i % 17}`, price: i + 0.5, n: i } });
      if (i % 11 === 0 && identifyIds.length < IDENTIFIES) {
        const k = identifyIds.length;
        identifyIds.push(`wh-identify-${k}`);
        events.push({ type: "identify", userId: userIds[k % USERS], messageId: `wh-identify-${k}`, traits: { email: `${userIds[k % USERS]}@example.com`, logins: k } });
      }
    }
    expect(identifyIds.length).toBe(IDENTIFIES);
    for (let i = 0; i < events.length; i += 200) {
      const res = await fetch(`${sluice.url}/v1/batch`, {
        method: "POST",
        headers: { authorization: basic(source.json.writeKey), "content-type": "application/json" },
        body: JSON.stringify({ batch: events.slice(i, i + 200) }),
      });
      expect(res.status).toBe(200);
    }
    await waitFor(async () => (await api(sluice.url, "GET", `/v2/destinations/${destinationId}/stats`)).json?.counts?.succeeded === events.length || undefined, {
      timeoutMs: 60_000,
      what: "every event staged",
    });

    // 12,000 staged rows: the load's first page is 10,000 rows (four COPYs: tracks,
    // product_viewed and identifies, and the users merge's), the second the rest. Cut in the
    // second page's first COPY: the first page is committed, the second is not (or in part).
    proxy.cutAtCopy(5);
    const started = await api(sluice.url, "POST", `/v2/destinations/${destinationId}/sync`);
    expect(started.status).toBe(202);
    const loadId = started.json.id as string;
    const loads = async () => (await api(sluice.url, "GET", `/v2/destinations/${destinationId}/syncs`)).json.syncs as any[];
    const failed = await waitFor(async () => (await loads()).find((l) => l.id === loadId && l.status !== "running" && l.status !== "queued"), {
      timeoutMs: 30_000,
      what: "the cut load to end",
    });
    const cutAt = Date.now();
    const copiesAtCut = proxy.copies();
    expect(proxy.cuts()).toBe(1);
    expect(failed.status).toBe("failed");
    expect(failed.error).toContain("unreachable");
    // Its retry is queued by itself; while the database stays unreachable nothing is loaded twice.
    const retry = (await loads()).find((l) => l.trigger === "retry");
    expect(retry).toMatchObject({ status: "queued", attempt: 2 });
    const sql = new SQL(PG_URL, { max: 1 });
    undo.push(() => sql.close());
    const count = async (table: string) => Number((await sql.unsafe(`SELECT count(*) AS n FROM "${ns}"."${table}"`))[0].n);
    const partial = { tracks: await count("tracks"), product_viewed: await count("product_viewed") };
    // The first page committed, not everything.
    expect(partial.tracks).toBeGreaterThan(0);
    expect(partial.tracks + partial.product_viewed).toBeLessThan(2 * TRACKS);

    // The database is reachable again after a few seconds; the retry (10 s after the failure) loads the rest.
    await waitFor(() => Date.now() - cutAt >= 3000 || undefined, { timeoutMs: 5000, what: "the outage to last" });
    proxy.restore();
    const done = await waitFor(async () => (await loads()).find((l) => l.trigger === "retry" && (l.status === "succeeded" || l.status === "failed")), {
      timeoutMs: 40_000,
      what: "the retried load to finish",
    });
    expect(done.error).toBeNull();
    expect(done.status).toBe("succeeded");

    // Every event once in each of its tables, every user once.
    const want: Record<string, string[]> = { tracks: trackIds, product_viewed: trackIds, identifies: identifyIds, users: userIds };
    const got: Record<string, { n: number; distinct: number }> = {};
    for (const [table, ids] of Object.entries(want)) {
      const [row] = await sql.unsafe(`SELECT count(*)::int AS n, count(DISTINCT id)::int AS d, count(*) FILTER (WHERE id = ANY($1::text[]))::int AS known FROM "${ns}"."${table}"`, [ids]);
      got[table] = { n: row.n, distinct: row.d };
      expect({ table, n: row.n, distinct: row.d, known: row.known }).toEqual({ table, n: ids.length, distinct: ids.length, known: ids.length });
    }
    // A later sync finds nothing left to load.
    const again = await api(sluice.url, "POST", `/v2/destinations/${destinationId}/sync`);
    const last = await waitFor(async () => (await loads()).find((l) => l.id === again.json.id && (l.status === "succeeded" || l.status === "failed")), { timeoutMs: 20_000, what: "the last sync" });
    expect(last).toMatchObject({ status: "succeeded", rows: {} });
    console.log("warehouse:", JSON.stringify({ staged: 2 * TRACKS + 2 * IDENTIFIES, copiesAtCut, partialAfterCut: partial, failed: { rows: failed.rows, error: failed.error }, retry: { attempt: done.attempt, rows: done.rows, afterCutMs: Date.parse(done.finishedAt) - cutAt }, final: got }));
  }, 90_000);
});
