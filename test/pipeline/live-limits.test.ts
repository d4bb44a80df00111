/**
 * Live-event streams are bounded: each subscriber costs the publisher a call per event, so one
 * token holds at most 20 open streams and the server at most 500; beyond that the subscribe
 * request gets 429 with Retry-After, and a stream that ends gives its slot back. Real server,
 * real SSE over HTTP, the real default caps.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { DEFAULT_LIVE_LIMITS, LiveEvents } from "../../src/pipeline/live-events";
import { type TestServer, ADMIN_TOKEN, api, cleanup, createSource, startSluice, waitFor } from "../support/helpers";

let s: TestServer;
let sourceId: string;
beforeAll(async () => {
  s = await startSluice();
  sourceId = (await createSource(s.url)).id;
});
afterAll(async () => {
  await s.stop();
  await cleanup(s.dataDir);
});

interface Stream {
  status: number;
  headers: Record<string, string>;
  /** The body read so far: the refusal's JSON, or an accepted stream's first events. */
  body: string;
  close(): void;
}

/**
 * Opens the source's live-event stream over a socket of its own (fetch's client would queue
 * requests past its own connection limit, far below 500), and reads an accepted one until its
 * `ready` event, a refused one to the end of its answer.
 */
function openStream(token = ADMIN_TOKEN, path = `/v2/sources/${sourceId}/live-events`): Promise<Stream> {
  const { hostname, port } = new URL(s.url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let text = "";
    socket.setEncoding("utf8");
    socket.on("error", reject);
    socket.on("connect", () => socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`));
    socket.on("data", (chunk: string) => {
      text += chunk;
      const end = text.indexOf("\r\n\r\n");
      if (end < 0) return;
      const [statusLine, ...lines] = text.slice(0, end).split("\r\n");
      const status = Number(statusLine!.split(" ")[1]);
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]));
      const body = text.slice(end + 4);
      const done = status === 200 ? body.includes("event: ready") : body.length >= Number(headers["content-length"] ?? 0) && body.includes("}");
      if (done) resolve({ status, headers, body, close: () => socket.destroy() });
    });
  });
}

async function newToken(name: string): Promise<string> {
  const res = await api(s.url, "POST", "/v2/tokens", { name });
  if (res.status !== 201) throw new Error(`token create failed: ${res.status} ${res.text}`);
  return res.json.token;
}

const openStreams = () => s.sluice.live.openStreams();

test("the default caps are 20 streams a token and 500 a server", () => {
  expect(DEFAULT_LIVE_LIMITS).toEqual({ perToken: 20, total: 500 });
  expect(new LiveEvents().limits).toEqual({ perToken: 20, total: 500 });
  expect(new LiveEvents({ perToken: 2 }).limits).toEqual({ perToken: 2, total: 500 });
});

describe("per token", () => {
  test("a token's 21st open stream → 429 with Retry-After and a message; another token still gets one; closing one frees its slot", async () => {
    const streams: Stream[] = [];
    try {
      for (let i = 0; i < 20; i++) streams.push(await openStream());
      expect(streams.map((x) => x.status)).toEqual(Array(20).fill(200));

      const refused = await openStream();
      expect(refused.status).toBe(429);
      expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
      expect(JSON.parse(refused.body).message).toContain("this token already has 20 open live-event streams");
      refused.close();
      // The destination stream counts against the same token.
      const dst = await api(s.url, "POST", "/v2/destinations", { name: `d-${crypto.randomUUID().slice(0, 8)}`, type: "WEBHOOK", config: { webhookUrl: "http://127.0.0.1:9/x" } });
      const dstRes = await openStream(ADMIN_TOKEN, `/v2/destinations/${dst.json.id}/live-events`);
      expect(dstRes.status).toBe(429);
      dstRes.close();

      const other = await openStream(await newToken("second"));
      streams.push(other);
      expect(other.status).toBe(200);

      // A client that goes away gives its slot back: the next subscribe of the first token is let in.
      streams.shift()!.close();
      const again = await waitFor(
        async () => {
          const x = await openStream();
          if (x.status === 200) return x;
          x.close();
          return undefined;
        },
        { timeoutMs: 10_000, what: "a closed stream's slot to be given back" },
      );
      streams.push(again);
      expect(s.sluice.live.openStreams()).toBe(21);
    } finally {
      for (const x of streams) x.close();
    }
    await waitFor(() => openStreams() === 0, { what: "every slot to be given back after the clients went away" });
  }, 60_000);

  test("a refused subscribe holds nothing: after 21st-try refusals, closing the 20 leaves no slot taken", async () => {
    const streams: Stream[] = [];
    for (let i = 0; i < 20; i++) streams.push(await openStream());
    for (let i = 0; i < 5; i++) {
      const x = await openStream();
      expect(x.status).toBe(429);
      x.close();
    }
    expect(openStreams()).toBe(20);
    for (const x of streams) x.close();
    await waitFor(() => openStreams() === 0, { what: "the slots to be given back" });
  }, 60_000);
});

test("the server serves at most 500 streams: the 501st, from a token with none open → 429 naming the server's limit", async () => {
  const tokens = await Promise.all(Array.from({ length: 25 }, (_, i) => newToken(`many-${i}`)));
  const streams: Stream[] = [];
  try {
    for (const token of tokens) streams.push(...(await Promise.all(Array.from({ length: 20 }, () => openStream(token)))));
    expect(streams.filter((x) => x.status === 200)).toHaveLength(500);
    const refused = await openStream(await newToken("one-more"));
    expect(refused.status).toBe(429);
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    expect(JSON.parse(refused.body).message).toContain("this server has 500 open live-event streams");
    refused.close();
  } finally {
    for (const x of streams) x.close();
  }
  await waitFor(() => openStreams() === 0, { timeoutMs: 20_000, what: "the 500 slots to be given back" });
}, 120_000);
