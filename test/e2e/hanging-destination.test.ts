/**
 * Issue 45, "A destination that hangs": a destination that accepts TCP connections and never
 * answers must cost its source's other destinations nothing. Its requests time out
 * (--destination-timeout-ms) and are retried with backoff (--retry-backoff-ms, doubling, with
 * jitter), and a WEBHOOK destination of the same source keeps its delivery rate: within 20% of
 * a run where the hanging destination is absent, both measured here, on the same machine, with
 * the same 10,000 events.
 *
 * Each run gets a fresh server (its own data dir), so one run's queue cannot slow the next. A
 * run's rate is the good sink's: distinct events received from the moment all 10,000 are queued
 * for it to its 10,000th distinct event (before that, the processor's fan-out to a second
 * destination slowed the runs beside the hanging one by about 20% whatever that destination
 * did, which made the comparison flaky at its limit). Noise on a shared 2-core machine is handled by order and by
 * medians: baseline, hanging, hanging, baseline (a drift of the machine's load weighs on both
 * sides alike), median against median, and more pairs only while that comparison fails (and
 * time is left), so one lucky or unlucky run does not decide. A real slowdown (say one connection
 * pool for every destination, filled by hung requests) slows every run with the hanging
 * destination, so their median stays slow and the test fails: with such a pool the good webhook
 * fell to about half its rate alone.
 */
import { afterAll, describe, expect, test } from "bun:test";
import type { Socket } from "bun";
import { type TestServer, api, basic, cleanup, createSource, startSink, startSluice, waitFor } from "../support/helpers";

const EVENTS = 10_000;
const BATCH = 500;
const CONCURRENCY = 8;
/**
 * Twice as many users as connections per destination. Only a user's head is sent (per-user order),
 * so this is how many requests the hanging destination has ready: enough to keep all of its
 * connections hung while the rate is measured (a connection pool shared with the good webhook
 * would be drained), and few enough that once its backoffs have grown, each head finds a free
 * connection when due, so the hanging server sees the backoff in the gaps between attempts.
 */
const USERS = 2 * CONCURRENCY;
/** Short, so hung requests end quickly; long enough that the good sink on a busy machine never reaches it. */
const TIMEOUT_MS = 400;
const BACKOFF_MS = 100;
/** Attempts each head of the hanging destination is watched for: its backoff doubles four times. */
const ATTEMPTS = 6;
/**
 * How far the hanging server's view of an attempt may lag Sluice's: on a busy machine a
 * connection opens some time after the request's time-out started.
 */
const SLACK_MS = 150;
const ARGS = ["--destination-timeout-ms", String(TIMEOUT_MS), "--retry-backoff-ms", String(BACKOFF_MS), "--destination-concurrency", String(CONCURRENCY)];
const TIMED_OUT = `timed out after ${TIMEOUT_MS} ms`;

/** One connection the hanging server accepted: when it opened and closed, and the messageId of the request it carried. */
interface Conn {
  openedAt: number;
  closedAt?: number;
  head: string;
  messageId?: string;
}

/** A TCP server on 127.0.0.1 that accepts every connection, reads what comes, and never writes a byte. */
function startHangingServer() {
  const conns: Conn[] = [];
  const listener = Bun.listen<Conn>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket: Socket<Conn>) {
        const conn: Conn = { openedAt: Date.now(), head: "" };
        socket.data = conn;
        conns.push(conn);
      },
      data(socket, chunk) {
        const conn = socket.data;
        if (conn.messageId !== undefined || conn.head.length > 16_384) return;
        conn.head += chunk.toString("latin1");
        const m = /\r\nx-sluice-message-id: *([^\r\n]+)\r\n/i.exec(conn.head);
        if (m) conn.messageId = m[1]!.trim();
      },
      close(socket) {
        socket.data.closedAt ??= Date.now();
      },
      error(socket) {
        socket.data.closedAt ??= Date.now();
      },
    },
  });
  return { url: `http://127.0.0.1:${listener.port}`, conns, stop: () => listener.stop(true) };
}

/** The good sink (startSink), counting distinct events by messageId (a redelivery counts once) and when they arrived. */
function startCountingSink() {
  const seen = new Set<string>();
  /** When each distinct event arrived, in arrival order. */
  const arrivals: number[] = [];
  const sink = startSink((req) => {
    const id = req.headers["x-sluice-message-id"] ?? "";
    if (!seen.has(id)) {
      seen.add(id);
      arrivals.push(req.at);
    }
    return new Response("ok");
  });
  return {
    url: sink.url,
    distinct: () => {
      // Only the counts matter here: the sink's record of every request is let go as it grows.
      sink.received.length = 0;
      return seen.size;
    },
    /**
     * Events per second from `from` (a time) to the latest new event: the events that arrived
     * in that span over its length.
     */
    rate: (from: number) => {
      const after = arrivals.filter((t) => t >= from);
      return after.length < 2 ? 0 : ((after.length - 1) * 1000) / Math.max(1, after.at(-1)! - after[0]!);
    },
    /** How many distinct events had arrived by `at`. */
    arrivedBy: (at: number) => arrivals.filter((t) => t < at).length,
    stop: sink.stop,
  };
}

async function createWebhook(server: TestServer, sourceId: string, name: string, target: string): Promise<string> {
  const res = await api(server.url, "POST", "/v2/destinations", { name, type: "WEBHOOK", config: { webhookUrl: `${target}/hook` }, sourceIds: [sourceId] });
  if (res.status !== 201) throw new Error(`create destination failed: ${res.status} ${res.text}`);
  return res.json.id as string;
}

/** The events through /v1/batch, BATCH a call, spread over USERS users. */
async function sendAll(server: TestServer, writeKey: string, run: string, events: number) {
  for (let start = 0; start < events; start += BATCH) {
    const batch = [];
    for (let i = start; i < Math.min(events, start + BATCH); i++) {
      batch.push({ type: "track", userId: `u${i % USERS}`, event: "Order Completed", messageId: `${run}-${i}`, properties: { i, total: 19.99, currency: "EUR" } });
    }
    const res = await fetch(`${server.url}/v1/batch`, {
      method: "POST",
      headers: { authorization: basic(writeKey), "content-type": "application/json" },
      body: JSON.stringify({ batch }),
    });
    expect(res.status).toBe(200);
    await res.body?.cancel();
  }
}

/** What was seen of the hanging destination: through the API, and by its server. */
interface Hanging {
  stats: any;
  retrying: any[];
  conns: Conn[];
}

interface Run {
  label: string;
  rate: number;
  /** Events at the good sink before the rate's span began. */
  before: number;
  ms: number;
  hanging?: Hanging;
}

const servers: TestServer[] = [];
afterAll(async () => {
  // Only after a failure mid-run: a run stops its own server.
  for (const s of servers.splice(0)) {
    await s.stop().catch(() => {});
    await cleanup(s.dataDir);
  }
});

/**
 * One run on a fresh server: the good webhook alone, or beside the hanging destination. With
 * `watchHanging`, once the rate is measured, the hanging destination is watched on until each
 * of its heads has failed ATTEMPTS times.
 */
async function run(label: string, withHanging: boolean, opts: { events?: number; watchHanging?: boolean } = {}): Promise<Run> {
  const events = opts.events ?? EVENTS;
  const server = await startSluice({ args: ARGS });
  servers.push(server);
  const good = startCountingSink();
  const hanging = withHanging ? startHangingServer() : undefined;
  try {
    const src = await createSource(server.url);
    const goodId = await createWebhook(server, src.id, "good", good.url);
    const hangingId = hanging ? await createWebhook(server, src.id, "hanging", hanging.url) : undefined;
    const started = Date.now();
    await sendAll(server, src.writeKey, label, events);
    // The rate is measured once every event is queued for the good webhook: until then the
    // processor fans each event out to one destination or two, which is work the hanging
    // destination's presence adds whether it answers or not, not a cost of its hanging.
    const queuedAt = await waitFor(
      async () => {
        const { counts } = (await api(server.url, "GET", `/v2/destinations/${goodId}/stats`)).json;
        const total = Object.values(counts as Record<string, number>).reduce((a, b) => a + b, 0);
        return total >= events ? Date.now() : undefined;
      },
      { timeoutMs: 30_000, what: `${label}: ${events} events queued for the good webhook` },
    );
    await waitFor(() => good.distinct() >= events, { timeoutMs: 30_000, what: `${label}: ${events} events at the good sink` });
    const result: Run = { label, rate: good.rate(queuedAt), before: good.arrivedBy(queuedAt), ms: Date.now() - started };
    if (hanging && hangingId && opts.watchHanging) {
      const retrying = await waitFor(
        async () => {
          const list = (await api(server.url, "GET", `/v2/destinations/${hangingId}/deliveries?state=retrying&limit=100`)).json.deliveries as any[];
          return list.length === USERS && list.every((d) => d.attempts >= ATTEMPTS) ? list : undefined;
        },
        { timeoutMs: 20_000, what: `${label}: every head of the hanging destination tried ${ATTEMPTS} times` },
      );
      const stats = (await api(server.url, "GET", `/v2/destinations/${hangingId}/stats`)).json;
      // Read after the API: the server has seen every attempt the API counts, and at most one more per user (on the wire now).
      result.hanging = { stats, retrying, conns: hanging.conns.map((c) => ({ ...c })) };
    }
    return result;
  } finally {
    await server.stop();
    servers.splice(servers.indexOf(server), 1);
    await cleanup(server.dataDir);
    good.stop();
    hanging?.stop();
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
/** The backoff before attempt n + 1, before jitter (which takes half to all of it). */
const backoff = (n: number) => BACKOFF_MS * 2 ** (n - 1);

describe("a destination that hangs", () => {
  test("times out and is retried with backoff, and the source's other webhook keeps its rate (within 20%)", async () => {
    const t0 = Date.now();
    // Warm-up: the first run in a process pays for compiling the hot paths; it is not measured.
    await run("warm", false, { events: 1_000 });
    const baselines: Run[] = [];
    const withHanging: Run[] = [];
    const rate = (runs: Run[]) => median(runs.map((r) => r.rate));
    baselines.push(await run("base1", false));
    withHanging.push(await run("hang1", true, { watchHanging: true }));
    withHanging.push(await run("hang2", true));
    baselines.push(await run("base2", false));
    // Noise rarely hits most runs; a real slowdown hits every run beside the hanging destination.
    // More pairs only while the comparison fails and time is left (60 s a test).
    for (let pair = 3; pair <= 4 && rate(withHanging) < 0.8 * rate(baselines) && Date.now() - t0 < 35_000; pair++) {
      withHanging.push(await run(`hang${pair}`, true));
      baselines.push(await run(`base${pair}`, false));
    }

    const h = withHanging[0]!.hanging!;
    const byEvent = new Map<string, number[]>();
    for (const c of h.conns) if (c.messageId) byEvent.set(c.messageId, [...(byEvent.get(c.messageId) ?? []), c.openedAt]);
    const gaps = [...byEvent.values()].map((times) => times.slice(1).map((t, i) => t - times[i]!));
    const closed = h.conns.filter((c) => c.closedAt !== undefined);
    console.log(
      "hanging destination:",
      JSON.stringify({
        ratesPerSecond: { alone: baselines.map((r) => Math.round(r.rate)), besideHanging: withHanging.map((r) => Math.round(r.rate)) },
        medians: { alone: Math.round(rate(baselines)), besideHanging: Math.round(rate(withHanging)) },
        arrivedBeforeQueued: Object.fromEntries([...baselines, ...withHanging].map((r) => [r.label, r.before])),
        runMs: Object.fromEntries([...baselines, ...withHanging].map((r) => [r.label, r.ms])),
        hangingCounts: h.stats.counts,
        hangingLastError: h.stats.lastError?.error,
        attemptsPerHead: h.retrying.map((d) => d.attempts),
        connections: h.conns.length,
        connectionHoldMsMedian: median(closed.map((c) => c.closedAt! - c.openedAt)),
        gapsBetweenAttemptsMs: gaps,
      }),
    );

    // Through the API: nothing delivered, nothing given up, every event still queued, each
    // user's head retrying after time-outs, the later events waiting behind it (per-user order).
    expect(h.stats.counts).toMatchObject({ succeeded: 0, aborted: 0, retrying: USERS, pending: EVENTS - USERS });
    expect(h.stats.lastError.error).toBe(TIMED_OUT);
    expect(h.retrying).toHaveLength(USERS);
    for (const d of h.retrying) {
      expect(d.attemptLog).toHaveLength(d.attempts);
      for (const a of d.attemptLog) {
        expect(a).toMatchObject({ status: null, error: TIMED_OUT });
        expect(a.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 1);
      }
      // The next attempt waits the backoff after the last one: half to all of BACKOFF_MS · 2^(attempts-1).
      const delay = Date.parse(d.nextAttemptAt) - Date.parse(d.attemptLog.at(-1).at);
      expect(delay).toBeGreaterThanOrEqual(backoff(d.attempts) / 2 - 1);
      expect(delay).toBeLessThanOrEqual(backoff(d.attempts) + 1);
    }

    // What the hanging server saw. Only the users' heads were sent, each on one connection per
    // attempt the API counts (at most one more on the wire now): no hidden retries.
    const attemptsCounted = h.retrying.reduce((n, d) => n + d.attempts, 0);
    expect(byEvent.size).toBe(USERS);
    expect(closed.every((c) => c.messageId !== undefined)).toBe(true);
    expect(h.conns.length).toBeGreaterThanOrEqual(attemptsCounted);
    expect(h.conns.length).toBeLessThanOrEqual(attemptsCounted + USERS);
    // Sluice held each connection until its time-out, then closed it (the latest closes may not have reached the server yet).
    expect(closed.length).toBeGreaterThanOrEqual(attemptsCounted - USERS);
    expect(median(closed.map((c) => c.closedAt! - c.openedAt))).toBeGreaterThanOrEqual(TIMEOUT_MS - SLACK_MS);
    // An event's next connection came after the time-out plus at least half its backoff (more
    // when it waited for a free connection), so the gaps grew as the backoff doubled: not a hot
    // loop, whose gaps would stay at one time-out (two, waiting for a connection: 800 ms, under
    // the bound of the fifth gap).
    for (const g of gaps) {
      expect(g.length).toBeGreaterThanOrEqual(ATTEMPTS - 1);
      g.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(TIMEOUT_MS + backoff(i + 1) / 2 - SLACK_MS));
    }

    // The good webhook beside the hanging destination: within 20% of its rate alone (medians of the runs).
    expect(rate(withHanging)).toBeGreaterThanOrEqual(0.8 * rate(baselines));
    console.log("hanging destination: test took", Date.now() - t0, "ms");
  });
});
