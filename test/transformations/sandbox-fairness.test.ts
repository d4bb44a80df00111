/**
 * The sandbox pool's queue: transformations take turns for the workers, so one that
 * spins until its time limit delays the others by at most one time-out slot, and the
 * queue is bounded, refusing further calls at once as retryable.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SandboxPool, type EventMetadata, type SandboxPoolOptions, type TransformationInput, type TransformationResult } from "../../src/transformations/sandbox";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

const TIMEOUT_MS = 300;
const SPIN = `function transformEvent(e) { for (;;) {} }`;
const QUICK = `function transformEvent(e) { e.quick = true; return e; }`;

const pools: SandboxPool[] = [];
function newPool(workers: number, options: SandboxPoolOptions = {}) {
  const pool = new SandboxPool({ memoryBytes: 32 * 1024 * 1024, timeoutMs: TIMEOUT_MS, workers }, options);
  pools.push(pool);
  return pool;
}
afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
});

const meta: EventMetadata = {
  sourceId: "src_1",
  destinationId: "dst_1",
  destinationType: "WEBHOOK",
  workspaceId: "ws_1",
  messageId: "m-1",
  transformationId: "tr_1",
  transformationVersionId: "trv_1",
};
const oneEvent = (extra: Record<string, unknown> = {}): TransformationInput["events"] => [{ event: { messageId: "m-1", type: "track", ...extra }, metadata: meta }];

/** Starts `count` calls of a spinning version and counts how many have ended. */
function backlog(pool: SandboxPool, versionId: string, count: number) {
  const state = { ended: 0, results: [] as Promise<TransformationResult>[] };
  for (let i = 0; i < count; i++) {
    state.results.push(
      pool.run({ versionId, code: SPIN, events: oneEvent() }).then((r) => {
        state.ended++;
        return r;
      }),
    );
  }
  return state;
}

async function warm(pool: SandboxPool, workers: number) {
  // Started workers, so that the timings below do not include starting them.
  const warmed = await Promise.all(Array.from({ length: workers }, (_, i) => pool.run({ versionId: `warm-${i}`, code: QUICK, events: oneEvent() })));
  for (const r of warmed) expect(r.error).toBeUndefined();
}

describe("fair turns", () => {
  test("behind twelve queued calls of a spinning transformation, another transformation's call waits one time-out slot, not twelve", async () => {
    const pool = newPool(1);
    await warm(pool, 1);
    const spinning = backlog(pool, "spin", 12);
    const started = performance.now();
    const quick = await pool.run({ versionId: "quick", code: QUICK, events: oneEvent() });
    const waited = performance.now() - started;
    expect(quick.error).toBeUndefined();
    expect(quick.output[0]!.event.quick).toBe(true);
    // It ran right after the call that held the worker: FIFO would have run all twelve first (~3.6 s).
    expect(spinning.ended).toBeLessThanOrEqual(1);
    expect(waited).toBeLessThan(5 * TIMEOUT_MS);
    for (const r of await Promise.all(spinning.results)) expect(r.error).toBe(`transformation timed out after ${TIMEOUT_MS} ms`);
  });

  test("with two workers and two spinning transformations' backlogs, a third transformation's call takes the first free worker", async () => {
    const pool = newPool(2);
    await warm(pool, 2);
    const a = backlog(pool, "spin-a", 6);
    const b = backlog(pool, "spin-b", 6);
    const started = performance.now();
    const quick = await pool.run({ versionId: "quick", code: QUICK, events: oneEvent() });
    const waited = performance.now() - started;
    expect(quick.error).toBeUndefined();
    expect(a.ended + b.ended).toBeLessThanOrEqual(2);
    expect(waited).toBeLessThan(5 * TIMEOUT_MS);
    await Promise.all([...a.results, ...b.results]);
  });

  test("two busy transformations queued one after the other take alternate turns", async () => {
    const pool = newPool(1);
    await warm(pool, 1);
    const order: string[] = [];
    const busyFor20ms = `function transformEvent(e) { const end = Date.now() + 20; while (Date.now() < end) {} return e; }`;
    const calls = ["a", "a", "a", "a", "b", "b", "b", "b"].map((v) => pool.run({ versionId: v, code: busyFor20ms, events: oneEvent() }).then(() => order.push(v)));
    await Promise.all(calls);
    expect(order).toEqual(["a", "b", "a", "b", "a", "b", "a", "b"]);
  });
});

describe("the bound", () => {
  test("past the calls one transformation may queue, its next call is refused at once as retryable; other transformations still queue", async () => {
    const pool = newPool(1, { maxQueuedPerTransformation: 3, maxQueued: 5 });
    await warm(pool, 1);
    const spinning = backlog(pool, "spin", 4); // one on the worker, three waiting
    const started = performance.now();
    const refused = await pool.run({ versionId: "spin", code: SPIN, events: oneEvent() });
    expect(performance.now() - started).toBeLessThan(TIMEOUT_MS / 2);
    expect(refused).toEqual({
      output: [],
      logs: [],
      error: "the transformation sandbox is busy: 3 calls of this transformation are already waiting; try again later",
      retryable: true,
    });
    expect(spinning.ended).toBe(0);

    const others = [pool.run({ versionId: "other-1", code: QUICK, events: oneEvent() }), pool.run({ versionId: "other-2", code: QUICK, events: oneEvent() })];
    const full = await pool.run({ versionId: "other-3", code: QUICK, events: oneEvent() });
    expect(full.error).toBe("the transformation sandbox is busy: 5 calls are already waiting; try again later");
    expect(full.retryable).toBe(true);

    // Refusals hold nothing: once the queue drains, calls are taken again.
    for (const r of await Promise.all(others)) expect(r.error).toBeUndefined();
    await Promise.all(spinning.results);
    const again = await pool.run({ versionId: "spin", code: QUICK, events: oneEvent() });
    expect(again.error).toBeUndefined();
  });

  test("the defaults: 256 waiting calls per transformation; closing the pool answers every waiting call", async () => {
    const pool = newPool(1);
    await warm(pool, 1);
    const spinning = backlog(pool, "spin", 257);
    const refused = await pool.run({ versionId: "spin", code: SPIN, events: oneEvent() });
    expect(refused.error).toBe("the transformation sandbox is busy: 256 calls of this transformation are already waiting; try again later");
    expect(refused.retryable).toBe(true);
    const other = pool.run({ versionId: "other", code: QUICK, events: oneEvent() });
    await pool.close();
    expect((await other).error).toBe("the transformation sandbox is closed");
    const results = await Promise.all(spinning.results);
    expect(results.filter((r) => r.error === "the transformation sandbox is closed").length).toBeGreaterThanOrEqual(255);
  });

  test("the waiting calls' events are bounded in size too; a call alone in the queue runs whatever its size", async () => {
    const pool = newPool(1, { maxQueuedBytes: 100_000 });
    await warm(pool, 1);
    const spinning = backlog(pool, "spin", 1);
    const pad = "p".repeat(80_000);
    const first = pool.run({ versionId: "a", code: QUICK, events: oneEvent({ pad: pad + pad }) });
    const second = await pool.run({ versionId: "b", code: QUICK, events: oneEvent({ pad }) });
    expect(second.error).toStartWith("the transformation sandbox is busy: the waiting calls already hold");
    expect(second.retryable).toBe(true);
    expect((await first).error).toBeUndefined();
    await Promise.all(spinning.results);
  });
});

describe("fair turns in the server", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startSluice({ args: ["--transform-timeout-ms", String(TIMEOUT_MS), "--transform-workers", "1", "--retry-backoff-ms", "20"] });
  });
  afterAll(async () => {
    await s.stop();
    await cleanup(s.dataDir);
  });

  async function transformed(name: string, code: string, sinkUrl: string, sourceId: string) {
    const dst = await api(s.url, "POST", "/v2/destinations", { name, type: "WEBHOOK", config: { webhookUrl: `${sinkUrl}/hook` }, sourceIds: [sourceId] });
    expect(dst.status).toBe(201);
    expect((await api(s.url, "POST", "/v2/transformations", { name, code, destinationIds: [dst.json.id] })).status).toBe(201);
    return dst.json.id as string;
  }

  test("a delivery through a quick transformation is not held behind a spinning transformation's backlog", async () => {
    const sink = startSink();
    const src = await createSource(s.url);
    const spinning = await transformed("spinning", SPIN, sink.url, src.id);
    const quickSrc = await createSource(s.url);
    await transformed("quick", QUICK, sink.url, quickSrc.id);
    for (let i = 0; i < 12; i++) await sendEvent(s.url, src.writeKey, "track", { userId: `u${i}`, event: `spin ${i}` });
    // The twelve went as one group, which timed out; the batcher then runs each alone: wait for the first of those.
    const aborted = async () => (await api(s.url, "GET", `/v2/destinations/${spinning}/stats`)).json.counts.aborted as number;
    await waitFor(async () => (await aborted()) >= 1, { what: "the first spinning delivery aborted", timeoutMs: 20_000 });
    const started = performance.now();
    await sendEvent(s.url, quickSrc.writeKey, "track", { userId: "q", event: "quick" });
    await waitFor(() => sink.received.some((r) => r.body?.event === "quick"), { what: "the quick delivery", timeoutMs: 20_000 });
    const waited = performance.now() - started;
    expect(sink.received.find((r) => r.body?.event === "quick")!.body.quick).toBe(true);
    // FIFO would have waited for the other eleven (~3.3 s).
    expect(await aborted()).toBeLessThanOrEqual(4);
    expect(waited).toBeLessThan(6 * TIMEOUT_MS);
    await waitFor(async () => (await aborted()) === 12, { what: "every spinning delivery aborted", timeoutMs: 30_000 });
    expect(sink.received.filter((r) => String(r.body?.event).startsWith("spin"))).toHaveLength(0);
    sink.stop();
  });
});

describe("a full queue in the server", () => {
  let s: TestServer;
  beforeAll(async () => {
    // A long time limit, so that the call holding the worker cannot end while the test runs.
    s = await startSluice({ args: ["--transform-timeout-ms", "20000", "--transform-workers", "1"] });
  });
  afterAll(async () => {
    await s.stop();
    await cleanup(s.dataDir);
  });

  test("POST /v2/transformations/test → 503 with Retry-After and a message saying to try again", async () => {
    // One call on the worker and 2048 waiting (eight transformations of 256): the queue is full.
    const held = [];
    for (let i = 0; i <= 2048; i++) held.push(s.sluice.sandbox.run({ versionId: `hog-${i % 8}`, code: SPIN, events: oneEvent() }));
    const res = await api(s.url, "POST", "/v2/transformations/test", { code: QUICK, events: [{ type: "track", event: "x" }] });
    expect(res.status).toBe(503);
    expect(res.json.message).toBe("the transformation sandbox is busy: 2048 calls are already waiting; try again later");
    expect(res.headers.get("retry-after")).toBe("1");
    await s.sluice.sandbox.close();
    expect((await Promise.all(held)).every((r) => r.error === "the transformation sandbox is closed")).toBe(true);
  });
});
