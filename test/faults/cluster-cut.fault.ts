/**
 * Issue 45: cluster mode, one instance cut off from PostgreSQL without its connections closing.
 *
 * Two real Sluice processes on one fresh schema. Instance A reaches PostgreSQL only through a TCP
 * proxy in this file, which can be cut: it stops forwarding in both directions but keeps every
 * socket open and holds the bytes (a network partition); at the heal the held bytes go through in
 * order, as TCP's retransmissions would carry them. Instance B connects directly. Each instance
 * sends the HEAP destination (one request per event, no batch(), its URL built through
 * endpointFor) to a sink of its own (`--destination-base-url HEAP=…`), so a sink tells which
 * instance sent a request. The sinks answer after 20 ms, so requests have a duration.
 *
 * 100 users send events to B all along (one call at a time each, one every 2 s, per-user
 * sequence numbers, messageIds of the test's own, a call answered other than 200 sent again).
 * Once both deliver, every other user sends one batch of 24, and every user pauses 6 s (A, sending
 * one request at a time, then has a backlog in memory that outlasts its lease, and has read all
 * its rows), and A is cut for 30 s (its lease lives 10 s) while the load goes on; a batch of 12
 * from every user just before the heal leaves B a backlog queued in every partition when A's
 * connections come back (and with them the answers to what A asked for during the cut). The load
 * goes on 5 s after the heal, and every acknowledged event must arrive. The lease table is read
 * every 100 ms throughout, directly, to know who held each partition when.
 *
 * Checked: (1) event calls to A during the cut are never answered 200, but 503 with Retry-After
 * within a few seconds, logged once when the outage starts and once when it ends, and A's
 * /health answers 503 meanwhile; (2) B takes A's partitions over and delivers A's users;
 * (3) fencing: no request of a user reaches an instance's sink while the lease table shows the
 * user's partition held by the other instance (or expired) all along the request, so once B
 * delivered a user's event, A sends nothing of that user until it holds the partition again
 * (after the heal, by rebalancing), A sends after the heal nothing B delivered during the cut,
 * and no messageId is on the wire from both instances at once;
 * (4) nothing acknowledged is lost, each user's first deliveries (across both sinks, in arrival
 * order) are its acknowledged sequence, and each event was fanned out once.
 *
 * Nothing sleeps to wait for a condition: every wait polls with a deadline (the senders pace
 * their calls and the sinks delay their answers, which is load, not waiting).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { SQL, type Socket, type TCPSocketListener } from "bun";
import { partitionOfKey } from "../../src/cluster/hash";
import { type SluiceProcess, api, basic, cleanup, sendEvent, spawnSluice, waitFor } from "../support/helpers";
import { PG, PG_URL, havePostgres, requirePostgres } from "../support/pg";

requirePostgres("cluster-cut.fault.ts");

const USERS = 100;
/** Each user's calls, one at a time, at most one per PACE_MS: about 50 events a second in all. */
const PACE_MS = 2000;
const CUT_MS = 30_000;
const AFTER_HEAL_MS = 5_000;
const SINK_DELAY_MS = 20;
/** Events of one batch of every other user just before the cut, and of every user just before the heal. */
const BURST = 24;
const BURST_BEFORE_HEAL = 12;
const PARTITIONS = 256;

// ---- what every test undoes ------------------------------------------------------------------

const undo: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of undo.splice(0).reverse()) await Promise.resolve().then(fn).catch(() => {});
}, 60_000);

// ---- the proxy ---------------------------------------------------------------------------------

/**
 * A TCP proxy to the test PostgreSQL that can be cut: while cut, nothing is forwarded either way
 * (bytes, a close, a new connection's upstream connect), every socket stays open, and what
 * arrives is held; at the heal everything held goes through in order.
 */
function cuttableProxy() {
  interface Way {
    /** The socket this way writes to, once open. */
    to?: Socket<any>;
    held: Uint8Array[];
    /** The other side closed: end `to` once what is held went through. */
    ending: boolean;
  }
  interface Pair {
    client: Socket<any>;
    up?: Socket<any>;
    connecting: boolean;
    closed: boolean;
    toUp: Way;
    toClient: Way;
  }
  const pairs = new Set<Pair>();
  let cut = false;
  let connections = 0;
  let heldBytes = 0;
  let heldBytesMax = 0;

  function pump(w: Way) {
    if (cut || !w.to) return;
    while (w.held.length) {
      const b = w.held[0]!;
      const n = w.to.write(b);
      heldBytes -= Math.max(0, n);
      if (n < b.length) {
        w.held[0] = b.subarray(Math.max(0, n));
        return; // the rest at drain
      }
      w.held.shift();
    }
    if (w.ending) w.to.end();
  }
  function push(w: Way, chunk: Uint8Array) {
    // Copied: the chunk's memory is the socket's and is used again.
    w.held.push(new Uint8Array(chunk));
    heldBytes += chunk.length;
    if (cut) heldBytesMax = Math.max(heldBytesMax, heldBytes);
    pump(w);
  }
  function connectUp(pair: Pair) {
    if (pair.up || pair.connecting || pair.closed) return;
    pair.connecting = true;
    void Bun.connect<Pair>({
      hostname: PG.host,
      port: PG.port,
      data: pair,
      socket: {
        open(up) {
          pair.connecting = false;
          pair.up = up;
          pair.toUp.to = up;
          pump(pair.toUp);
        },
        data(_up, chunk) {
          push(pair.toClient, chunk);
        },
        drain() {
          pump(pair.toUp);
        },
        close() {
          pair.toClient.ending = true;
          pump(pair.toClient);
        },
        error() {},
      },
    }).catch(() => {
      pair.connecting = false;
      pair.toClient.ending = true;
      pump(pair.toClient);
    });
  }

  const listener: TCPSocketListener<Pair> = Bun.listen<Pair>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        connections++;
        const pair: Pair = { client, connecting: false, closed: false, toUp: { held: [], ending: false }, toClient: { to: client, held: [], ending: false } };
        client.data = pair;
        pairs.add(pair);
        // While cut, a new connection gets no further than this side: its upstream connect waits for the heal.
        if (!cut) connectUp(pair);
      },
      data(client, chunk) {
        push(client.data.toUp, chunk);
      },
      drain(client) {
        pump(client.data.toClient);
      },
      close(client) {
        const pair = client.data;
        pair.closed = !pair.up && !pair.connecting;
        pair.toUp.ending = true;
        pump(pair.toUp);
        if (pair.closed) pairs.delete(pair);
      },
      error() {},
    },
  });

  return {
    port: listener.port,
    url: `postgres://${encodeURIComponent(PG.user)}${PG.password ? ":" + encodeURIComponent(PG.password) : ""}@127.0.0.1:${listener.port}/${PG.database}`,
    stats: () => ({ connections, open: [...pairs].filter((p) => !p.toUp.ending).length, heldBytesMax }),
    cut() {
      cut = true;
      heldBytesMax = heldBytes;
    },
    heal() {
      cut = false;
      for (const p of pairs) {
        connectUp(p);
        pump(p.toUp);
        pump(p.toClient);
      }
    },
    stop() {
      cut = false;
      for (const p of pairs) {
        p.client.end();
        p.up?.end();
      }
      pairs.clear();
      listener.stop(true);
    },
  };
}

// ---- the sinks -------------------------------------------------------------------------------

interface Arrival {
  /** Which instance sent it (each has a sink of its own). */
  sink: "A" | "B";
  user: string;
  messageId: string;
  event: string;
  seq: number;
  /** Arrival and answer times (this process's clock), and the order of arrival over both sinks. */
  at: number;
  answeredAt: number;
  order: number;
}

/** Two sinks standing in for Heap, one per instance, recording into one list in arrival order. */
function startSinks() {
  const arrivals: Arrival[] = [];
  let order = 0;
  const servers = (["A", "B"] as const).map((sink) =>
    Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(request) {
        const at = Date.now();
        const n = order++;
        const body = (await request.json().catch(() => ({}))) as Record<string, any>;
        const rec: Arrival = {
          sink,
          user: String(body.identity ?? ""),
          messageId: request.headers.get("x-sluice-message-id") ?? "",
          event: String(body.event ?? ""),
          seq: Number(body.properties?.seq ?? -1),
          at,
          answeredAt: 0,
          order: n,
        };
        arrivals.push(rec);
        // A request takes a little while, as a real service's does.
        await Bun.sleep(SINK_DELAY_MS);
        rec.answeredAt = Date.now();
        return new Response('{"ok":true}', { headers: { "content-type": "application/json" } });
      },
    }),
  );
  undo.push(() => servers.forEach((s) => s.stop(true)));
  return { arrivals, urls: servers.map((s) => `http://127.0.0.1:${s.port}`) as [string, string] };
}

// ---- the lease table -------------------------------------------------------------------------

interface LeasePoll {
  sentAt: number;
  doneAt: number;
  /** Per partition: owner, epoch, and whether the lease was unexpired at the read (database clock). */
  rows: Array<{ owner: string | null; epoch: number; live: boolean }>;
}

/** Reads partition_leases every 100 ms, directly (not through the proxy), until stopped. */
function watchLeases(schema: string) {
  const sql = new SQL(PG_URL, { max: 1, connection: { search_path: schema } });
  const polls: LeasePoll[] = [];
  let stopping = false;
  const running = (async () => {
    while (!stopping) {
      const sentAt = Date.now();
      try {
        const rows = await sql`SELECT partition, owner, epoch::int AS epoch, (owner IS NOT NULL AND expires_at > now()) AS live FROM partition_leases ORDER BY partition`;
        const doneAt = Date.now();
        const out: LeasePoll["rows"] = [];
        for (const r of rows as any[]) out[r.partition] = { owner: r.owner, epoch: Number(r.epoch), live: r.live === true };
        polls.push({ sentAt, doneAt, rows: out });
      } catch {}
      const rest = 100 - (Date.now() - sentAt);
      if (rest > 0) await Bun.sleep(rest);
    }
  })();
  const stop = async () => {
    stopping = true;
    await running;
    await sql.close().catch(() => {});
  };
  undo.push(stop);
  return {
    polls,
    sql,
    stop,
    /**
     * The lease of partition p as read by the last poll done before `from` and by the first one
     * sent after `to`, when both read the same epoch: the row did not change in between, so it
     * held all along [from, to]. Undefined when it may have changed (or no poll brackets it).
     */
    heldThrough(p: number, from: number, to: number): { owner: string | null; epoch: number; live: boolean } | undefined {
      let lo = 0;
      let hi = polls.length - 1;
      let before = -1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        if (polls[mid]!.doneAt <= from) {
          before = mid;
          lo = mid + 1;
        } else hi = mid - 1;
      }
      if (before < 0) return undefined;
      let after = before + 1;
      while (after < polls.length && polls[after]!.sentAt < to) after++;
      if (after >= polls.length) return undefined;
      const a = polls[before]!.rows[p];
      const b = polls[after]!.rows[p];
      if (!a || !b || a.owner !== b.owner || a.epoch !== b.epoch) return undefined;
      // Expired at the first read and the same epoch at the second: expired all along (an
      // expired lease is never renewed, only acquired again, which bumps its epoch).
      return { owner: a.owner, epoch: a.epoch, live: a.live };
    },
    /** When the partition was first read held by `owner` at or after `since` (Infinity: never). */
    firstHeldBy(p: number, owner: string, since: number): number {
      for (const poll of polls) if (poll.sentAt >= since && poll.rows[p]?.owner === owner && poll.rows[p]?.live) return poll.doneAt;
      return Infinity;
    },
  };
}

// ---- load and probes -----------------------------------------------------------------------------

interface Call {
  user: string;
  seq: number;
  status: number;
  sentAt: number;
  doneAt: number;
  retryAfter: string | null;
}

/**
 * Users sending "step" events to one instance for as long as it runs: each waits for an answer
 * before its next call (as an SDK does), sends a call answered other than 200 again with the same
 * messageId, and paces itself.
 */
function startLoad(url: string, writeKey: string, users: string[]) {
  const calls: Call[] = [];
  const acked = new Map<string, number[]>(users.map((u) => [u, []]));
  let stopping = false;
  /** Events of each user's next call: -1 (one call, at the pace), or n > 0 (a batch of n, then a pause) once burst() was called. */
  const next = new Map<string, number>(users.map((u) => [u, -1]));
  /** How long each user waits after its batch before its next call. */
  let pauseAfterBurst = 0;
  let burstsDone = 0;
  const running = Promise.all(
    users.map(async (user, u) => {
      // Spread the users' first calls over one pace.
      await Bun.sleep((u * PACE_MS) / users.length);
      let seq = 0;
      while (!stopping) {
        const n = next.get(user)!;
        const bursting = n > 0;
        const sentAt = Date.now();
        let status = 0;
        let retryAfter: string | null = null;
        const event = (s: number) => ({ type: "track", userId: user, event: "step", messageId: `${user}-${s}`, properties: { seq: s } });
        try {
          const single = Math.abs(n) === 1;
          const res = await fetch(`${url}/v1/${single ? "track" : "batch"}`, {
            method: "POST",
            headers: { authorization: basic(writeKey), "content-type": "application/json" },
            body: JSON.stringify(single ? event(seq) : { batch: Array.from({ length: n }, (_, i) => event(seq + i)) }),
            signal: AbortSignal.timeout(10_000),
          });
          status = res.status;
          retryAfter = res.headers.get("retry-after");
          await res.arrayBuffer();
        } catch {}
        const doneAt = Date.now();
        calls.push({ user, seq, status, sentAt, doneAt, retryAfter });
        if (status === 200) {
          for (let i = 0; i < Math.abs(n); i++) acked.get(user)!.push(seq++);
          if (bursting) {
            next.set(user, -1);
            burstsDone++;
          }
        }
        const rest = (status !== 200 ? 100 : bursting ? Math.max(PACE_MS, pauseAfterBurst) : PACE_MS) - (doneAt - sentAt);
        if (rest > 0) await Bun.sleep(rest);
      }
    }),
  );
  const stop = async () => {
    stopping = true;
    await running;
  };
  undo.push(stop);
  return {
    calls,
    acked,
    total: () => [...acked.values()].reduce((n, l) => n + l.length, 0),
    /**
     * Each user's next call is one batch of `size(u)` events (in its sequence; u is the user's
     * index), followed by a pause of `pauseMs`.
     */
    burst(size: (u: number) => number, pauseMs = 0) {
      burstsDone = 0;
      pauseAfterBurst = pauseMs;
      users.forEach((user, u) => next.set(user, size(u)));
    },
    burstsDone: () => burstsDone,
    stop,
  };
}

/**
 * One event call every `everyMs` to an instance, each from a user of its own, each waiting up to
 * `waitMs` for its answer (no answer: status 0): how the instance answers while it is cut off.
 */
function startProbes(url: string, writeKey: string, everyMs: number, waitMs: number) {
  const calls: Call[] = [];
  const pending = new Set<Promise<void>>();
  let k = 0;
  const timer = setInterval(() => {
    const user = `probe-${k}`;
    const seq = k++;
    const sentAt = Date.now();
    const p = (async () => {
      let status = 0;
      let retryAfter: string | null = null;
      try {
        const res = await fetch(`${url}/v1/track`, {
          method: "POST",
          headers: { authorization: basic(writeKey), "content-type": "application/json" },
          body: JSON.stringify({ userId: user, event: "probe", messageId: `${user}-0`, properties: { seq } }),
          signal: AbortSignal.timeout(waitMs),
        });
        status = res.status;
        retryAfter = res.headers.get("retry-after");
        await res.arrayBuffer();
      } catch {}
      calls.push({ user, seq, status, sentAt, doneAt: Date.now(), retryAfter });
    })();
    pending.add(p);
    void p.finally(() => pending.delete(p));
  }, everyMs);
  const stop = async () => {
    clearInterval(timer);
    await Promise.all([...pending]);
  };
  undo.push(stop);
  return { calls, stop };
}

/** A GET with a deadline: its status (0 without an answer) and how long it took. */
async function timedGet(url: string, waitMs: number): Promise<{ status: number; ms: number; body: any }> {
  const started = Date.now();
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(waitMs) });
    const text = await res.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {}
    return { status: res.status, ms: Date.now() - started, body };
  } catch {
    return { status: 0, ms: Date.now() - started, body: undefined };
  }
}

/** The instance id a process logged for itself at its first lease renewal. */
function instanceIdOf(p: SluiceProcess): string | undefined {
  for (const line of p.output().split("\n")) {
    if (!line.includes('"cluster: live instances"')) continue;
    const id = JSON.parse(line).instance;
    if (typeof id === "string") return id;
  }
  return undefined;
}

function linesOf(p: SluiceProcess, text: string): Array<{ at: number; level: string; line: string }> {
  const out: Array<{ at: number; level: string; line: string }> = [];
  for (const line of p.output().split("\n")) {
    if (!line.includes(text)) continue;
    try {
      const rec = JSON.parse(line);
      out.push({ at: Date.parse(rec.time), level: rec.level, line: line.slice(0, 300) });
    } catch {}
  }
  return out;
}

function statusCounts(calls: Call[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of calls) out[c.status] = (out[c.status] ?? 0) + 1;
  return out;
}

function quantiles(values: number[]): { n: number; min?: number; p50?: number; max?: number } {
  if (!values.length) return { n: 0 };
  const s = [...values].sort((a, b) => a - b);
  return { n: s.length, min: s[0], p50: s[Math.floor(s.length / 2)], max: s[s.length - 1] };
}

// ---- the test --------------------------------------------------------------------------------------

describe.if(havePostgres)("cluster mode: one instance cut off from PostgreSQL, its connections left open", () => {
  test(
    "the cut-off instance refuses events with 503 and stops sending within its lease; the other takes its partitions; no request of a user from both at once; nothing acknowledged lost, each user's order kept",
    async () => {
      const schema = `t_cut_${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
      undo.push(async () => {
        const sql = new SQL(PG_URL, { max: 1 });
        try {
          await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        } finally {
          await sql.close();
        }
      });
      const proxy = cuttableProxy();
      undo.push(() => proxy.stop());
      const sinks = startSinks();
      const spawn = async (database: string, sinkUrl: string, concurrency: number) => {
        const p = await spawnSluice({
          args: [
            ...["--database", database, "--database-schema", schema, "--retry-backoff-ms", "100"],
            ...["--destination-base-url", `HEAP=${sinkUrl}`, "--destination-concurrency", String(concurrency)],
          ],
        });
        undo.push(async () => {
          p.proc.kill(9);
          await p.proc.exited;
          await cleanup(p.dataDir);
        });
        return p;
      };
      // A first: it migrates the schema (through the proxy) and makes the workspace. A sends one
      // request at a time (50 a second against the sinks' 20 ms; its users send about 25), B 8:
      // A's backlog in memory at the cut outlasts its lease, and B has room to send A's share
      // besides its own.
      const a = await spawn(proxy.url, sinks.urls[0], 1);
      const b = await spawn(PG_URL, sinks.urls[1], 8);
      const leases = watchLeases(schema);
      const ids = await waitFor(() => {
        const ia = instanceIdOf(a);
        const ib = instanceIdOf(b);
        return ia && ib ? { A: ia, B: ib } : undefined;
      }, { timeoutMs: 10_000, what: "each instance's id in its log" });

      const src = (await api(b.url, "POST", "/v2/sources", { name: "web" })).json;
      const dst = await api(b.url, "POST", "/v2/destinations", { name: "heap", type: "HEAP", config: { appId: "app-1" }, sourceIds: [src.id] });
      expect(dst.status).toBe(201);
      for (const p of [a, b]) {
        await waitFor(async () => (await sendEvent(p.url, src.writeKey, "track", { userId: "setup", event: "setup" })).status === 200 || undefined, {
          timeoutMs: 5000,
          what: "the write key on every instance",
        });
      }
      // Both hold partitions (rebalanced after both joined) before the load starts.
      await waitFor(() => {
        const last = leases.polls.at(-1);
        if (!last) return undefined;
        const held = (id: string) => last.rows.filter((r) => r?.owner === id && r.live).length;
        return held(ids.A) > 64 && held(ids.B) > 64 && held(ids.A) + held(ids.B) === PARTITIONS ? true : undefined;
      }, { timeoutMs: 20_000, what: "the partitions shared by both instances" });

      const users = Array.from({ length: USERS }, (_, i) => `u-${String(i).padStart(3, "0")}`);
      const partitionOf = new Map(users.map((u) => [u, partitionOfKey(u, PARTITIONS)]));
      const load = startLoad(b.url, src.writeKey, users);
      const steps = (sink: "A" | "B") => sinks.arrivals.filter((r) => r.sink === sink && r.event === "step");
      await waitFor(() => (steps("A").length >= 75 && steps("B").length >= 75) || undefined, { timeoutMs: 20_000, what: "both instances delivering" });

      // A backlog in A's memory when it is cut: every other user sends a batch, and A is cut once
      // it has begun sending them (it goes on until its lease runs out, then B sends them again);
      // the other users' queues in A are empty by then. The users then pause for a few seconds,
      // so A has read all its rows when it is cut, and reads again during the cut (its router's
      // 5-s safety net, with under the 1,000 rows in memory below which it reads more): a read
      // that PostgreSQL answers only at the heal, with B's backlog of the second batch.
      const beforeBurst = sinks.arrivals.length;
      load.burst((u) => (u % 2 === 0 ? BURST : 1), 6000);
      await waitFor(() => (load.burstsDone() === USERS && sinks.arrivals.slice(beforeBurst).filter((r) => r.sink === "A").length >= 50) || undefined, {
        timeoutMs: 20_000,
        what: "the burst acknowledged and A sending it",
      });
      // A has fanned the burst of its partitions out into deliveries, and read them into memory
      // (it went on sending after that).
      const aParts = [...leases.polls.at(-1)!.rows.entries()].filter(([, r]) => r?.owner === ids.A).map(([p]) => p);
      const [fannedOut] = await waitFor(async () => {
        const [row] = await leases.sql.unsafe(
          `SELECT (SELECT count(*) FROM events WHERE partition = ANY($1::smallint[]))::int AS events,
                  (SELECT count(*) FROM deliveries WHERE partition = ANY($1::smallint[]))::int AS deliveries`,
          [`{${aParts.join(",")}}`],
        );
        return row.deliveries >= row.events - 100 ? [{ events: row.events, deliveries: row.deliveries, at: Date.now() }] : undefined;
      }, { timeoutMs: 20_000, what: "A's share of the burst fanned out" });
      const sentByA = () => sinks.arrivals.filter((r) => r.sink === "A" && r.at > fannedOut!.at).length;
      await waitFor(() => sentByA() >= 50 || undefined, { timeoutMs: 10_000, what: "A sending after the fan-out" });

      // ---- the cut
      const usersOfA = new Set(steps("A").map((r) => r.user));
      const cutAt = Date.now();
      proxy.cut();
      const probes = startProbes(a.url, src.writeKey, 250, CUT_MS + 20_000);
      // A's /health and /metrics meanwhile (neither may hang on the cut connections).
      await waitFor(() => Date.now() - cutAt >= 12_000 || undefined, { timeoutMs: 15_000, what: "A's leases to run out" });
      const [healthDuringCut, metricsDuringCut] = await Promise.all([timedGet(`${a.url}/health`, 8000), timedGet(`${a.url}/metrics`, 8000)]);
      // Another burst just before the heal: B has a backlog queued in every partition when A's
      // connections come back (and what A asked for during the cut is answered).
      await waitFor(() => Date.now() - cutAt >= CUT_MS - 1000 || undefined, { timeoutMs: CUT_MS, what: "the cut to last" });
      load.burst(() => BURST_BEFORE_HEAL);
      await waitFor(() => load.burstsDone() === USERS || undefined, { timeoutMs: 10_000, what: "the second burst acknowledged" });
      await waitFor(() => Date.now() - cutAt >= CUT_MS || undefined, { timeoutMs: 10_000, what: "the cut to last" });
      const healAt = Date.now();
      proxy.heal();
      const proxyStats = proxy.stats();
      await probes.stop();
      // After the heal: A takes events again (one probe call at a time until one is answered 200).
      let aTakesEventsAfterHealMs = Infinity;
      await waitFor(async () => {
        const r = await fetch(`${a.url}/v1/track`, {
          method: "POST",
          headers: { authorization: basic(src.writeKey), "content-type": "application/json" },
          body: JSON.stringify({ userId: "after-heal", event: "probe", properties: { seq: -1 } }),
          signal: AbortSignal.timeout(5000),
        }).catch(() => undefined);
        if (r?.status === 200) aTakesEventsAfterHealMs = Date.now() - healAt;
        return r?.status === 200 || undefined;
      }, { timeoutMs: 20_000, what: "A to take events again after the heal" });
      await waitFor(() => Date.now() - healAt >= AFTER_HEAL_MS || undefined, { timeoutMs: AFTER_HEAL_MS + 20_000, what: "the load to go on after the heal" });
      await load.stop();
      let lastHealth: unknown;
      const healthAfter = await waitFor(async () => {
        const h = await timedGet(`${a.url}/health`, 5000);
        lastHealth = h;
        return h.status === 200 && h.body?.status === "ok" ? h : undefined;
      }, { timeoutMs: 15_000, what: "A's /health to be ok again" }).catch((err) => {
        throw new Error(`${(err as Error).message}: ${JSON.stringify(lastHealth)}`);
      });

      // ---- every acknowledged event delivered
      const drainStarted = Date.now();
      const firstDeliveries = () => {
        const seen = new Set<string>();
        const byUser = new Map<string, number[]>();
        for (const r of [...sinks.arrivals].sort((x, y) => x.order - y.order)) {
          if (r.event !== "step" || seen.has(r.messageId)) continue;
          seen.add(r.messageId);
          let list = byUser.get(r.user);
          if (!list) byUser.set(r.user, (list = []));
          list.push(r.seq);
        }
        return byUser;
      };
      await waitFor(() => {
        const got = firstDeliveries();
        return [...load.acked].every(([u, seqs]) => (got.get(u)?.length ?? 0) >= seqs.length) || undefined;
      }, { timeoutMs: 45_000, what: "every acknowledged event at a sink" });
      const drainMs = Date.now() - drainStarted;
      // A moment for anything still in flight to arrive (a late duplicate would show below).
      const settledAt = Date.now();
      await waitFor(() => Date.now() - settledAt >= 2000 || undefined, { timeoutMs: 5000, what: "late requests" });
      // Each event fanned out once: no instance read events past another's cursor.
      const [fanOut] = await leases.sql.unsafe(
        `SELECT count(*)::int AS deliveries, count(DISTINCT event_id)::int AS events,
                count(*) FILTER (WHERE state NOT IN ('succeeded', 'filtered'))::int AS unfinished FROM deliveries`,
      );
      await leases.stop();

      // ---- figures
      const all = [...sinks.arrivals].sort((x, y) => x.order - y.order);
      const got = firstDeliveries();
      const duringCut = probes.calls.filter((c) => c.sentAt >= cutAt && c.sentAt < healAt);
      const lastAbeforeHeal = Math.max(...all.filter((r) => r.sink === "A" && r.at < healAt).map((r) => r.at));
      // Per user: B's first request after the cut began.
      const bFirst = new Map<string, number>();
      for (const r of all) if (r.sink === "B" && r.at >= cutAt && !bFirst.has(r.user)) bFirst.set(r.user, r.at);
      const takenOver = [...usersOfA].filter((u) => (bFirst.get(u) ?? Infinity) < healAt);
      const aAfterBFirst = { beforeHeal: 0, afterHeal: 0, users: new Set<string>() };
      for (const r of all) {
        const t = bFirst.get(r.user);
        if (r.sink !== "A" || t === undefined || r.at < t) continue;
        if (r.at < healAt) aAfterBFirst.beforeHeal++;
        else aAfterBFirst.afterHeal++;
        aAfterBFirst.users.add(r.user);
      }
      // Fencing against the lease table: a request whose partition's row named the other instance
      // (or had expired) from before it arrived until after it was answered.
      const fenceBreaks: Array<Record<string, unknown>> = [];
      let checked = 0;
      for (const r of all) {
        if (!r.user || !r.answeredAt) continue;
        const p = partitionOfKey(r.user, PARTITIONS);
        const held = leases.heldThrough(p, r.at, r.answeredAt);
        if (!held) continue;
        checked++;
        const self = ids[r.sink];
        if (held.owner !== self || !held.live) fenceBreaks.push({ sink: r.sink, user: r.user, messageId: r.messageId, partition: p, at: r.at - cutAt, lease: held });
      }
      // The same messageId on the wire from both instances at overlapping times.
      const byMessage = new Map<string, Arrival[]>();
      for (const r of all) {
        let l = byMessage.get(r.messageId);
        if (!l) byMessage.set(r.messageId, (l = []));
        l.push(r);
      }
      const overlaps: Array<Record<string, unknown>> = [];
      let sentByBoth = 0;
      for (const [messageId, list] of byMessage) {
        const as = list.filter((r) => r.sink === "A");
        const bs = list.filter((r) => r.sink === "B");
        if (as.length && bs.length) sentByBoth++;
        for (const x of as) for (const y of bs) if (x.at < y.answeredAt && y.at < x.answeredAt) overlaps.push({ messageId, a: [x.at - cutAt, x.answeredAt - cutAt], b: [y.at - cutAt, y.answeredAt - cutAt] });
      }
      // A sending again, after the heal, what B had delivered (and recorded) during the cut: rows
      // A read before the cut, kept in memory past its lease, and sent once it could (the fencing).
      const bDeliveredBeforeHeal = new Map<string, number>();
      for (const r of all) if (r.sink === "B" && r.answeredAt && r.answeredAt < healAt - 500 && !bDeliveredBeforeHeal.has(r.messageId)) bDeliveredBeforeHeal.set(r.messageId, r.answeredAt);
      const staleResends = all.filter((r) => r.sink === "A" && r.at >= healAt && bDeliveredBeforeHeal.has(r.messageId));
      // B delivering a user's events after A did them: when A's partitions were taken.
      const takeoverMs = quantiles(takenOver.map((u) => bFirst.get(u)! - cutAt));
      const leaseTakenMs = quantiles(
        [...new Set([...usersOfA].map((u) => partitionOf.get(u)!))].map((p) => leases.firstHeldBy(p, ids.B, cutAt) - cutAt).filter(Number.isFinite),
      );
      const refusedLines = linesOf(a, "event storage failed");
      const outageLines = linesOf(a, "events cannot be stored");
      const recoveredLines = linesOf(a, "events are stored again");
      const storageFailingDuringCut = /^sluice_storage_failing\s+(\d+)/m.exec(String(metricsDuringCut.body ?? ""))?.[1];
      let delivered = 0;
      for (const [, l] of got) delivered += l.length;
      const figures = {
        acked: load.total(),
        loadStatuses: statusCounts(load.calls),
        delivered,
        sinkRequests: { A: all.filter((r) => r.sink === "A").length, B: all.filter((r) => r.sink === "B").length },
        messageIdsSentByBoth: sentByBoth,
        cutMs: healAt - cutAt,
        proxy: proxyStats,
        probesToA: {
          duringCut: statusCounts(duringCut),
          answerMs: quantiles(duringCut.filter((c) => c.status !== 0).map((c) => c.doneAt - c.sentAt)),
          answeredAfterHeal: duringCut.filter((c) => c.doneAt >= healAt).length,
          withRetryAfter: duringCut.filter((c) => c.status === 503 && c.retryAfter !== null).length,
        },
        healthDuringCut: { status: healthDuringCut.status, ms: healthDuringCut.ms, body: healthDuringCut.body },
        metricsDuringCut: { status: metricsDuringCut.status, ms: metricsDuringCut.ms, storageFailing: storageFailingDuringCut },
        aTakesEventsAfterHealMs,
        aHealthOkAfterHeal: healthAfter.status,
        aLastRequestBeforeHealMs: lastAbeforeHeal - cutAt,
        aRequestsDuringCut: all.filter((r) => r.sink === "A" && r.at >= cutAt && r.at < healAt).length,
        fannedOut,
        usersOfA: usersOfA.size,
        takenOverByB: takenOver.length,
        bFirstRequestOfAUserMs: takeoverMs,
        bLeaseOfAPartitionsMs: leaseTakenMs,
        aRequestsAfterBsFirst: { beforeHeal: aAfterBFirst.beforeHeal, afterHeal: aAfterBFirst.afterHeal, users: aAfterBFirst.users.size },
        aResentAfterHealWhatBDelivered: staleResends.length,
        fanOut,
        fenceChecked: checked,
        fenceBreaks: fenceBreaks.length,
        overlaps: overlaps.length,
        logLines: { eventStorageFailed: refusedLines.length, outageStart: outageLines.length, outageEnd: recoveredLines.length },
        drainMs,
      };
      console.log("cluster cut:", JSON.stringify(figures));
      if (fenceBreaks.length) console.log("fence breaks (first 10):", JSON.stringify(fenceBreaks.slice(0, 10)));
      if (overlaps.length) console.log("overlaps (first 10):", JSON.stringify(overlaps.slice(0, 10)));

      // ---- (1) the cut-off instance acknowledges nothing, and says so quickly
      expect(duringCut.length).toBeGreaterThan(60);
      expect(duringCut.filter((c) => c.status === 200)).toEqual([]);
      // 503 with Retry-After, each within a few seconds (not held until the heal).
      expect(statusCounts(duringCut)).toEqual({ 503: duringCut.length });
      expect(duringCut.every((c) => c.retryAfter !== null && c.doneAt - c.sentAt < 7000)).toBe(true);
      // /health says the database does not answer, without hanging; /metrics shows the failure.
      expect({ status: healthDuringCut.status, quick: healthDuringCut.ms < 5000, accepting: healthDuringCut.body?.acceptingEvents }).toEqual({ status: 503, quick: true, accepting: "FALSE" });
      expect(storageFailingDuringCut).toBe("1");
      // Logged once when the outage began and once when it ended, not once a call.
      expect(refusedLines.length).toBe(0);
      expect(outageLines.filter((l) => l.at >= cutAt && l.at < healAt).length).toBe(1);
      expect(recoveredLines.filter((l) => l.at >= healAt).length).toBe(1);
      // A takes events again soon after the heal.
      expect(aTakesEventsAfterHealMs).toBeLessThan(10_000);

      // ---- (2) B takes A's partitions over
      expect(usersOfA.size).toBeGreaterThan(10);
      expect(takenOver.length).toBe(usersOfA.size);
      // A went on sending its backlog after the cut, and stopped within its lease (10 s, less its
      // 2 s margin, after its last renewal, which came at most 2 s before the cut), over a second
      // before B began.
      expect(lastAbeforeHeal - cutAt).toBeGreaterThan(5000);
      expect(lastAbeforeHeal - cutAt).toBeLessThan(8000);
      expect(takeoverMs.min! - (lastAbeforeHeal - cutAt)).toBeGreaterThan(1000);

      // ---- (3) fencing
      expect(checked).toBeGreaterThan(all.length / 2);
      expect(fenceBreaks).toEqual([]);
      // Once B sent a user's event, A sent nothing of that user before the heal.
      expect(aAfterBFirst.beforeHeal).toBe(0);
      // Nor, after the heal, anything B had delivered meanwhile.
      expect(staleResends.map((r) => ({ messageId: r.messageId, at: r.at - cutAt }))).toEqual([]);
      expect(overlaps).toEqual([]);

      // ---- (4) nothing acknowledged lost, each user's order kept; each event fanned out once
      expect(fanOut.deliveries).toBe(fanOut.events);
      for (const [user, seqs] of load.acked) {
        const list = got.get(user) ?? [];
        expect({ user, first: list.slice(0, seqs.length) }).toEqual({ user, first: seqs });
        // At most one more: a last call not answered 200 whose row was stored.
        expect(list.length === seqs.length || (list.length === seqs.length + 1 && list[seqs.length] === seqs.length)).toBe(true);
      }
      expect([a, b].map((p) => p.proc.exitCode)).toEqual([null, null]);
    },
    150_000,
  );
});
