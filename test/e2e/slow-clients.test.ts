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

function open(first: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const sock = connect(port(), "127.0.0.1", () => {
      if (first) sock.write(first);
      resolve(sock);
    });
    sock.on("error", () => {});
    sock.once("error", reject);
  });
}

async function openMany(n: number, first: (i: number) => string): Promise<Socket[]> {
  const out: Socket[] = [];
  for (let i = 0; i < n; i += 100) out.push(...(await Promise.all(Array.from({ length: Math.min(100, n - i) }, (_, j) => open(first(i + j))))));
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
        open(request(i + j)).then((sock) => new Promise<Socket>((resolve) => sock.once("data", () => (sock.pause(), resolve(sock))))),
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
  console.log(JSON.stringify({ health, eventCalls: latencies.length, eventP99: Math.round(p99), statuses: Object.fromEntries(statuses), rssBefore: Math.round(before), rssPeak: Math.round(peak), stillOpen, bodiesOpen, serverLoopMaxS: loop }));
  expect(bodiesOpen).toBe(0);
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
