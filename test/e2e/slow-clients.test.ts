/**
 * Issue 45: slow and idle clients. While 2,000 connections send their headers a byte a second,
 * 500 send a body a byte a second and 500 live-event streams are never read, /health (probed
 * from another process every 20 ms) and event calls from other clients keep their limits, and
 * the server's RSS rises by no more than 100 MB and falls back once the attackers go.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Socket, connect } from "node:net";
import { readFileSync } from "node:fs";
import { api, basic, bearer, cleanup, createSource, type SluiceProcess, spawnSluice, startHealthProbe, waitFor } from "../support/helpers";

let s: SluiceProcess;
let source: { id: string; writeKey: string };
const port = () => Number(new URL(s.url).port);

beforeAll(async () => {
  s = await spawnSluice({ args: ["--body-timeout-seconds", "5"] });
  source = await createSource(s.url, { name: "slow clients" });
});
afterAll(async () => {
  s.proc.kill("SIGKILL");
  await s.proc.exited;
  await cleanup(s.dataDir);
});

const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${s.proc.pid}/status`, "utf8"))![1]) / 1024;

function open(first: string, opts: { port?: number; localAddress?: string } = {}): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const sock = connect({ port: opts.port ?? port(), host: "127.0.0.1", localAddress: opts.localAddress }, () => {
      if (first) sock.write(first);
      resolve(sock);
    });
    sock.on("error", () => {});
    sock.once("error", reject);
  });
}

/** The attackers' address: the clients whose calls are measured come from 127.0.0.1. */
const ATTACKER = { localAddress: "127.0.0.2" };

async function openMany(n: number, first: (i: number) => string): Promise<Socket[]> {
  const out: Socket[] = [];
  for (let i = 0; i < n; i += 100) out.push(...(await Promise.all(Array.from({ length: Math.min(100, n - i) }, (_, j) => open(first(i + j), ATTACKER)))));
  return out;
}

/**
 * Streams opened 50 at a time, each once the server has answered its headers; then never read.
 * (Each stream costs the server about half a millisecond to open, so 500 opened in one burst
 * would hold the loop for a quarter of a second: a burst of any 500 API calls would.)
 */
async function openStreams(n: number, request: (i: number) => string): Promise<Socket[]> {
  const out: Socket[] = [];
  for (let i = 0; i < n; i += 50) {
    const wave = await Promise.all(
      Array.from({ length: Math.min(50, n - i) }, (_, j) =>
        open(request(i + j), ATTACKER).then((sock) => new Promise<Socket>((resolve) => sock.once("data", () => (sock.pause(), resolve(sock))))),
      ),
    );
    out.push(...wave);
  }
  return out;
}

test("2,000 slow headers, 500 slow bodies and 500 unread live streams: /health and event calls keep their limits; RSS bounded and back after", async () => {
  // 25 tokens of 20 streams each: the server's cap is 500 streams.
  const tokens: string[] = [];
  for (let i = 0; i < 25; i++) tokens.push((await api(s.url, "POST", "/v2/tokens", { name: `stream ${i}` })).json.token);
  const event = (n: number) => JSON.stringify({ userId: `u${n % 50}`, event: "Slow Test", properties: { n } });
  const post = (n: number) => fetch(`${s.url}/v1/track`, { method: "POST", headers: { "content-type": "application/json", authorization: basic(source.writeKey) }, body: event(n) });
  for (let i = 0; i < 200; i++) expect((await post(i)).status).toBe(200);
  Bun.gc(true);
  const before = rssMb();

  const probe = await startHealthProbe(s.url);
  const headerConns = await openMany(2000, (i) => `POST /v1/track HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow-${i}: `);
  const bodyConns = await openMany(500, () => `POST /v1/track HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: ${basic(source.writeKey)}\r\nContent-Length: 30000\r\n\r\n{"userId":"slow","event":"x","properties":{"pad":"`);
  const streams = await openStreams(500, (i) => `GET /v2/sources/${source.id}/live-events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${bearer(tokens[Math.floor(i / 20)])}\r\nAccept: text/event-stream\r\n\r\n`);
  expect(streams.length).toBe(500);
  // Past --max-slow-bodies-per-address (256 by default) the attacker's bodies are refused at once.
  const bodyAnswers = new Map<string, number>();
  for (const c of bodyConns) c.once("data", (d: Buffer) => {
    const status = d.toString("latin1", 9, 12);
    bodyAnswers.set(status, (bodyAnswers.get(status) ?? 0) + 1);
  });
  const slow = [...headerConns, ...bodyConns];
  const drip = setInterval(() => {
    for (const c of slow) if (!c.destroyed) c.write("a");
  }, 1000);

  const latencies: number[] = [];
  const statuses = new Map<number, number>();
  let peak = before;
  const until = Date.now() + 12_000;
  let n = 1000;
  try {
    while (Date.now() < until) {
      const t0 = performance.now();
      const res = await post(n++);
      await res.arrayBuffer();
      latencies.push(performance.now() - t0);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      peak = Math.max(peak, rssMb());
    }
  } finally {
    clearInterval(drip);
    var health = await probe.stop();
  }
  const stillOpen = slow.filter((c) => !c.destroyed).length;
  // --body-timeout-seconds 5: the server closed every connection whose body still trickled in.
  const bodiesOpen = bodyConns.filter((c) => !c.destroyed && !c.readableEnded).length;
  const loop = /sluice_event_loop_delay_seconds_max ([0-9.e-]+)/.exec(await (await fetch(`${s.url}/metrics`)).text())?.[1];
  for (const c of [...slow, ...streams]) c.destroy();

  latencies.sort((a, b) => a - b);
  const p99 = latencies[Math.floor(latencies.length * 0.99)]!;
  console.log(JSON.stringify({ health, eventCalls: latencies.length, eventP99: Math.round(p99), statuses: Object.fromEntries(statuses), rssBefore: Math.round(before), rssPeak: Math.round(peak), stillOpen, bodiesOpen, bodyAnswers: Object.fromEntries(bodyAnswers), serverLoopMaxS: loop }));
  expect(bodiesOpen).toBe(0);
  expect(bodyAnswers.get("429")).toBe(500 - 256);
  expect([...statuses.keys()]).toEqual([200]);
  expect(latencies.length).toBeGreaterThan(100);
  expect(p99).toBeLessThan(100);
  expect(health.failures).toEqual([]);
  expect(health.p99).toBeLessThan(100);
  expect(health.max).toBeLessThan(250);
  expect(peak - before).toBeLessThan(100);

  // Once they are gone the server gives the memory back (within 30 MB of where it started).
  await waitFor(async () => {
    await fetch(`${s.url}/health`);
    return rssMb() - before < 30;
  }, { timeoutMs: 30_000, what: `RSS to fall back to within 30 MB of ${Math.round(before)} MB (now ${Math.round(rssMb())})` });
}, 120_000);

test("a client that sends its headers a byte a second is cut off by the server, not held open", async () => {
  const sock = await open("GET /health HTTP/1.1\r\n");
  let closed = false;
  sock.on("close", () => (closed = true));
  const drip = setInterval(() => !sock.destroyed && sock.write("X"), 1000);
  try {
    await waitFor(() => closed, { timeoutMs: 25_000, what: "the server to close a connection whose headers never end" });
  } finally {
    clearInterval(drip);
    sock.destroy();
  }
}, 40_000);

test("one address may have only --max-slow-bodies-per-address bodies arriving: past it 429 at once, naming the setting; clients at other addresses are not held", async () => {
  const t = await spawnSluice({ args: ["--max-slow-bodies-per-address", "20"] });
  const socks: Socket[] = [];
  try {
    const src = await createSource(t.url, { name: "bounded" });
    const opts = { port: Number(new URL(t.url).port) };
    const body = JSON.stringify({ userId: "slow", event: "Slow Test", properties: { pad: "x".repeat(200) } });
    const head = `POST /v1/track HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: ${basic(src.writeKey)}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
    const partial = head + body.slice(0, 40);
    const arriving = async () => Number(/sluice_slow_bodies_arriving (\d+)/.exec(await (await fetch(`${t.url}/metrics`)).text())?.[1]);
    const answer = (sock: Socket) => new Promise<string>((resolve) => sock.once("data", (d) => resolve(d.toString("latin1"))));

    // The attacker is 127.0.0.2; other clients come from 127.0.0.1 (fetch) and 127.0.0.3.
    const attacker = { ...opts, localAddress: "127.0.0.2" };
    for (let i = 0; i < 20; i++) socks.push(await open(partial, attacker));
    await waitFor(async () => (await arriving()) === 20, { timeoutMs: 5_000, what: "20 bodies arriving" });

    // The 21st from the same address is refused at once, unread.
    const over = await open(partial, attacker);
    socks.push(over);
    const refused = await answer(over);
    expect(refused).toStartWith("HTTP/1.1 429");
    expect(refused).toContain("--max-slow-bodies-per-address");

    // Another address is not held by the first one's bodies: its body, finished, is accepted.
    const other = await open(partial, { ...opts, localAddress: "127.0.0.3" });
    socks.push(other);
    await waitFor(async () => (await arriving()) === 21, { timeoutMs: 5_000, what: "the other address's body arriving" });
    const otherAnswer = answer(other);
    other.write(body.slice(40));
    expect(await otherAnswer).toStartWith("HTTP/1.1 200");

    // Nor is a client at another address whose body arrives as usual.
    const res = await fetch(`${t.url}/v1/track`, { method: "POST", headers: { "content-type": "application/json", authorization: basic(src.writeKey) }, body });
    expect(res.status).toBe(200);

    // Bodies that finish free their places.
    const held = socks.slice(0, 20).map((sock) => {
      const a = answer(sock);
      sock.write(body.slice(40));
      return a;
    });
    for (const a of await Promise.all(held)) expect(a).toStartWith("HTTP/1.1 200");
    await waitFor(async () => (await arriving()) === 0, { timeoutMs: 5_000, what: "no body arriving" });
  } finally {
    for (const sock of socks) sock.destroy();
    t.proc.kill("SIGKILL");
    await t.proc.exited;
    await cleanup(t.dataDir);
  }
}, 60_000);
