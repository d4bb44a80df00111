import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  SandboxPool,
  validateTransformationCode,
  type EventMetadata,
  type TransformationInput,
  type TransformationResult,
} from "../../src/transformations/sandbox";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, api, basic, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

const TIMEOUT_MS = 200;
const pool = new SandboxPool({ memoryBytes: 32 * 1024 * 1024, timeoutMs: TIMEOUT_MS, workers: 2 });
// Memory bombs get a long time limit so that they can only end by running out of memory.
const memoryPool = new SandboxPool({ memoryBytes: 16 * 1024 * 1024, timeoutMs: 10_000, workers: 1 });
const pools: SandboxPool[] = [pool, memoryPool];

afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
});

function meta(i: number): EventMetadata {
  return {
    sourceId: `src_${i}`,
    destinationId: "dst_1",
    destinationType: "WEBHOOK",
    workspaceId: "ws_1",
    messageId: `msg-${i}`,
    transformationId: "tr_1",
    transformationVersionId: "trv_1",
  };
}

function events(n: number, extra: Record<string, unknown> = {}): TransformationInput["events"] {
  return Array.from({ length: n }, (_, i) => ({
    event: { messageId: `msg-${i}`, type: "track", event: `Event ${i}`, properties: { n: i }, ...extra },
    metadata: meta(i),
  }));
}

let versions = 0;
/** A fresh versionId per call unless given, so tests do not share compiled contexts. */
function run(code: string, evs = events(1), versionId = `v-${++versions}`, on = pool): Promise<TransformationResult> {
  return on.run({ versionId, code, events: evs });
}

function ok(result: TransformationResult) {
  expect(result.error).toBeUndefined();
  return result.output;
}

describe("transformEvent", () => {
  test("modifies an event and keeps its metadata", async () => {
    const out = ok(await run(`function transformEvent(event) { event.properties.seen = true; event.event = event.event.toUpperCase(); return event; }`, events(2)));
    expect(out).toHaveLength(2);
    expect(out[0]!.event).toEqual({ messageId: "msg-0", type: "track", event: "EVENT 0", properties: { n: 0, seen: true } });
    expect(out[1]!.event.event).toBe("EVENT 1");
    expect(out[0]!.metadata).toEqual(meta(0));
    expect(out[1]!.metadata).toEqual(meta(1));
  });

  test("drops events on null and on undefined", async () => {
    const code = `function transformEvent(event) {
      if (event.properties.n === 0) return null;
      if (event.properties.n === 1) return undefined;
      if (event.properties.n === 2) return;
      return event;
    }`;
    const out = ok(await run(code, events(4)));
    expect(out.map((o) => o.event.messageId)).toEqual(["msg-3"]);
    expect(out[0]!.metadata).toEqual(meta(3));
  });

  test("fans out an array into several events, repeating the input's metadata", async () => {
    const out = ok(await run(`function transformEvent(e) { return [ { ...e, part: 1 }, { ...e, part: 2 } ]; }`, events(2)));
    expect(out.map((o) => [o.event.messageId, o.event.part])).toEqual([
      ["msg-0", 1],
      ["msg-0", 2],
      ["msg-1", 1],
      ["msg-1", 2],
    ]);
    expect(out.map((o) => o.metadata.messageId)).toEqual(["msg-0", "msg-0", "msg-1", "msg-1"]);
    expect(out[1]!.metadata).toEqual(meta(0));
    // An empty array drops the event.
    expect(ok(await run(`function transformEvent(e) { return []; }`, events(3)))).toEqual([]);
  });

  test("the export function form works, as does export default and const", async () => {
    for (const code of [
      `export function transformEvent(event, metadata) { return { ...event, form: "export" }; }`,
      `// leading comment\n/* block */ export function transformEvent(event) { return { ...event, form: "export" }; }`,
      `export default function transformEvent(event) { return { ...event, form: "export" }; }`,
      `const transformEvent = (event) => ({ ...event, form: "export" });`,
    ]) {
      const out = ok(await run(code));
      expect(out[0]!.event.form).toBe("export");
    }
  });

  test("metadata(event) returns the caller's metadata of that event", async () => {
    const code = `export function transformEvent(event, metadata) { return { ...event, md: metadata(event), mdOfCopy: metadata({ ...event }) }; }`;
    const out = ok(await run(code, events(2)));
    expect(out[0]!.event.md).toEqual(meta(0));
    expect(out[1]!.event.md).toEqual(meta(1));
    expect(out[1]!.event.mdOfCopy).toEqual(meta(1));
    expect(Object.keys(out[0]!.event.md as object).sort()).toEqual(
      ["destinationId", "destinationType", "messageId", "sourceId", "transformationId", "transformationVersionId", "workspaceId"],
    );
  });

  test("async functions are awaited", async () => {
    const out = ok(await run(`export async function transformEvent(e) { await null; return { ...e, awaited: true }; }`, events(2)));
    expect(out.map((o) => o.event.awaited)).toEqual([true, true]);
    const never = await run(`export function transformEvent(e) { return new Promise(() => {}); }`);
    expect(never.error).toBe("the transformation returned a promise that never settled");
  });
});

describe("transformBatch", () => {
  test("returns an array of events, mapped back to their metadata", async () => {
    const code = `function transformBatch(events, metadata) {
      return events
        .filter((e) => e.properties.n !== 1)
        .map((e) => ({ ...e, batch: true, src: metadata(e).sourceId }));
    }`;
    const out = ok(await run(code, events(3)));
    expect(out.map((o) => o.event.messageId)).toEqual(["msg-0", "msg-2"]);
    expect(out.map((o) => o.event.src)).toEqual(["src_0", "src_2"]);
    expect(out[1]!.metadata).toEqual(meta(2));
  });

  test("anything but an array of objects fails the call", async () => {
    expect((await run(`function transformBatch(events) { return 5; }`, events(2))).error).toBe("transformBatch must return an array of objects (got number)");
    expect((await run(`function transformBatch(events) { return [events[0], "x"]; }`, events(2))).error).toBe(
      "transformBatch must return an array of objects (got an array containing string)",
    );
  });
});

describe("logs", () => {
  test("log and console.log lines are captured, objects as JSON", async () => {
    const code = `function transformEvent(event) {
      log("hello", { a: 1, b: [2] }, 3, null, undefined, true);
      console.log("from console", event.messageId);
      console.error("also captured");
      return event;
    }`;
    const result = await run(code, events(2));
    ok(result);
    expect(result.logs).toEqual([
      `hello {"a":1,"b":[2]} 3 null undefined true`,
      "from console msg-0",
      "also captured",
      `hello {"a":1,"b":[2]} 3 null undefined true`,
      "from console msg-1",
      "also captured",
    ]);
  });

  test("log lines per call are capped", async () => {
    const result = await run(`function transformEvent(e) { for (let i = 0; i < 1500; i++) log("line", i); return e; }`);
    ok(result);
    expect(result.logs).toHaveLength(1001);
    expect(result.logs[999]).toBe("line 999");
    expect(result.logs[1000]).toStartWith("... 500 more log lines dropped");
  });

  test("logs are returned when the call fails too", async () => {
    const result = await run(`function transformEvent(e) { log("before"); throw new Error("boom"); }`);
    expect(result.error).toBe("Error: boom");
    expect(result.logs).toEqual(["before"]);
    expect(result.output).toEqual([]);
  });
});

describe("failures", () => {
  test("a throw fails the whole call with the error's message", async () => {
    const result = await run(`function transformEvent(event) { if (event.properties.n === 1) { let u; return u.x; } return event; }`, events(3));
    expect(result.error).toBe("TypeError: cannot read property 'x' of undefined");
    expect(result.output).toEqual([]);
  });

  test("a wrong return type fails the call", async () => {
    const cases: Array<[string, string]> = [
      ["return 42;", "(got number)"],
      [`return "text";`, "(got string)"],
      ["return true;", "(got boolean)"],
      ["return [event, 1];", "(got an array containing number)"],
      ["return [null];", "(got an array containing null)"],
      ["return () => 1;", "(got function)"],
    ];
    for (const [body, got] of cases) {
      const result = await run(`function transformEvent(event) { ${body} }`);
      expect(result.error).toBe(`transformEvent must return an object, an array of objects, null or undefined ${got}`);
      expect(result.output).toEqual([]);
    }
  });

  test("an infinite loop times out, the context is rebuilt, and the pool keeps answering", async () => {
    const code = `let calls = 0;
      function transformEvent(event) { calls++; if (event.spin) { while (true) {} } return { ...event, calls }; }`;
    const versionId = "spinner";
    expect(ok(await run(code, events(1), versionId))[0]!.event.calls).toBe(1);
    const started = performance.now();
    const spun = await run(code, events(1, { spin: true }), versionId);
    expect(spun.error).toBe(`transformation timed out after ${TIMEOUT_MS} ms`);
    expect(spun.output).toEqual([]);
    expect(performance.now() - started).toBeLessThan(TIMEOUT_MS + 1500);
    // A fresh context: the module-level counter starts again.
    expect(ok(await run(code, events(1), versionId))[0]!.event.calls).toBe(1);
    expect(ok(await run(`function transformEvent(e) { return e; }`))).toHaveLength(1);
  });

  test("an endless chain of promise jobs times out too", async () => {
    const result = await run(`function transformEvent(e) { (function f() { Promise.resolve().then(f); })(); return e; }`);
    expect(result.error).toBe(`transformation timed out after ${TIMEOUT_MS} ms`);
  });

  test("a spinning call stalls only its worker, not the main thread or the other worker", async () => {
    // Warm both workers.
    await Promise.all([run(`function transformEvent(e) { return e; }`), run(`function transformEvent(e) { return e; }`)]);
    const order: string[] = [];
    const slow = run(`function transformEvent(e) { for (;;) {} }`).then((r) => {
      order.push("slow");
      return r;
    });
    const tick = new Promise<void>((resolve) => setTimeout(resolve, 1)).then(() => order.push("timer"));
    const quick = run(`function transformEvent(e) { return { ...e, quick: true }; }`).then((r) => {
      order.push("quick");
      return r;
    });
    const [slowResult, quickResult] = await Promise.all([slow, quick, tick]);
    expect(ok(quickResult)[0]!.event.quick).toBe(true);
    expect(slowResult.error).toContain("timed out");
    expect(order.at(-1)).toBe("slow");
  });

  test("a memory bomb of big strings fails with out of memory and the next call works", async () => {
    const result = await run(`function transformEvent(e) { const a = []; while (true) a.push("x".repeat(100000) + a.length); }`, events(1), undefined, memoryPool);
    expect(result.error).toBe("transformation ran out of memory (limit 16 MB)");
    expect(result.output).toEqual([]);
    expect(ok(await run(`function transformEvent(e) { return { ...e, after: true }; }`, events(1), undefined, memoryPool))[0]!.event.after).toBe(true);
  });

  test("a memory bomb of small objects, caught and retried, still fails with out of memory", async () => {
    const code = `function transformEvent(e) {
      let a = [];
      for (;;) { try { while (true) a.push({ i: a.length }); } catch (err) { a.push(String(err)); } }
    }`;
    const result = await run(code, events(1), undefined, memoryPool);
    expect(result.error).toBe("transformation ran out of memory (limit 16 MB)");
    expect(ok(await run(`function transformEvent(e) { return e; }`, events(1), undefined, memoryPool))).toHaveLength(1);
  });

  test("deep recursion fails the call; the pool keeps answering", async () => {
    const result = await run(`function transformEvent(e) { function f(n) { return f(n + 1) + 1; } return { v: f(0) }; }`);
    expect(result.error).toMatch(/stack/);
    // Native recursion (the JSON parser) is bounded too.
    const nested = await run(`function transformEvent(e) { return { n: JSON.parse("[".repeat(100000) + "]".repeat(100000)).length }; }`);
    expect(nested.error).toMatch(/stack/);
    expect(ok(await run(`function transformEvent(e) { return e; }`))).toHaveLength(1);
  });

  test("a worker that dies fails its call, and the pool replaces it", async () => {
    const dying = new SandboxPool({ memoryBytes: 32 * 1024 * 1024, timeoutMs: 5000, workers: 1 });
    pools.push(dying);
    const pending = dying.run({ versionId: "spin", code: `function transformEvent(e) { for (;;) {} }`, events: events(1) });
    // White-box: the job was dispatched synchronously; kill its worker.
    const slots = (dying as unknown as { slots: Array<{ worker: Worker | null }> }).slots;
    expect(slots[0]!.worker).not.toBeNull();
    slots[0]!.worker!.terminate();
    const result = await pending;
    expect(result.error).toContain("worker");
    expect(result.output).toEqual([]);
    const after = await dying.run({ versionId: "ok", code: `function transformEvent(e) { return e; }`, events: events(1) });
    expect(ok(after)).toHaveLength(1);
  });

  test("a worker that never answers is replaced after the time limit plus a margin", async () => {
    const stuck = new SandboxPool({ memoryBytes: 32 * 1024 * 1024, timeoutMs: 50, workers: 1 }, { hangMarginMs: 200 });
    pools.push(stuck);
    ok(await stuck.run({ versionId: "warm", code: `function transformEvent(e) { return e; }`, events: events(1) }));
    // White-box: swallow the next request so the worker never answers, as if stuck in native code.
    const slots = (stuck as unknown as { slots: Array<{ worker: Worker | null }> }).slots;
    const silenced = slots[0]!.worker!;
    silenced.postMessage = () => {};
    const started = performance.now();
    const result = await stuck.run({ versionId: "warm", code: `function transformEvent(e) { return e; }`, events: events(1) });
    expect(result.error).toBe("transformation did not finish within 300 ms; its worker was replaced");
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(slots[0]!.worker).not.toBe(silenced);
    expect(ok(await stuck.run({ versionId: "warm", code: `function transformEvent(e) { return e; }`, events: events(1) }))).toHaveLength(1);
  });

  test("events that cannot be serialized fail the call instead of rejecting", async () => {
    const result = await run(`function transformEvent(e) { return e; }`, [{ event: { big: 1n } as Record<string, unknown>, metadata: meta(0) }]);
    expect(result.error).toContain("could not be serialized");
  });
});

describe("output cap", () => {
  const BIG = `function transformEvent(e) { e.big = "x".repeat(50 * 1024 * 1024); return e; }`;

  test("a 50 MB output event fails with the default 4096 KB cap named, never reaching the host: RSS stays within the sandbox's own memory", async () => {
    // A memory limit roomy enough for the guest to build the string and its JSON, so only the cap can stop it.
    const roomy = new SandboxPool({ memoryBytes: 256 * 1024 * 1024, timeoutMs: 10_000, workers: 1 });
    pools.push(roomy);
    expect(ok(await run(`function transformEvent(e) { return e; }`, events(1), "warm", roomy))).toHaveLength(1);
    Bun.gc(true);
    const before = process.memoryUsage().rss;
    const results: TransformationResult[] = [];
    for (let i = 0; i < 4; i++) results.push(await run(BIG, events(1), "big", roomy));
    Bun.gc(true);
    const rise = process.memoryUsage().rss - before;
    for (const r of results) {
      expect(r.error).toBe("transformation output of 50.0 MB is over the 4096 KB limit (--transform-output-max-kb)");
      expect(r.output).toEqual([]);
    }
    // The worker's wasm heap may grow to the memory limit once; four copies of 50 MB per call on the host would be far above.
    expect(rise).toBeLessThan(256 * 1024 * 1024 + 96 * 1024 * 1024);
    expect(ok(await run(`function transformEvent(e) { return e; }`, events(1), "after", roomy))).toHaveLength(1);
  });

  test("an output event nested deeper than an event call may be fails the call naming the limit; 60 levels pass", async () => {
    const nest = (levels: number) => `function transformEvent(e) { let v = 1; for (let i = 0; i < ${levels}; i++) v = { v }; e.deep = v; return e; }`;
    const deep = await run(nest(1000), events(1));
    expect(deep.error).toMatch(/^the transformation's output nests deeper than 66 levels/);
    expect(deep.output).toEqual([]);
    expect(ok(await run(nest(60), events(1)))).toHaveLength(1);
  });

  test("a small cap: each output event's JSON is measured in UTF-8 bytes, and one over it fails the call naming the cap", async () => {
    const small = new SandboxPool({ memoryBytes: 32 * 1024 * 1024, timeoutMs: 2000, workers: 1, outputMaxBytes: 64 * 1024 });
    pools.push(small);
    const sized = (chars: number, ch = "x") => `function transformEvent(e) { e.pad = ${JSON.stringify(ch)}.repeat(${chars}); return e; }`;
    expect(ok(await run(sized(60_000), events(1), undefined, small))[0]!.event.pad).toHaveLength(60_000);
    const over = await run(sized(100_000), events(1), undefined, small);
    expect(over.error).toMatch(/^transformation output of 97\.\d KB is over the 64 KB limit \(--transform-output-max-kb\)$/);
    expect(over.output).toEqual([]);
    // 40,000 characters of two bytes each: under the cap in characters, over it in bytes.
    expect((await run(sized(40_000, "é"), events(1), undefined, small)).error).toMatch(/^transformation output of 78\.\d KB is over the 64 KB limit/);
    expect(ok(await run(sized(30_000, "é"), events(1), undefined, small))).toHaveLength(1);
  });

  test("the cap is per output event: fan-out and transformBatch outputs are each measured", async () => {
    const small = new SandboxPool({ memoryBytes: 32 * 1024 * 1024, timeoutMs: 2000, workers: 1, outputMaxBytes: 16 * 1024 });
    pools.push(small);
    const fanOut = `function transformEvent(e) { return [1, 2, 3].map((n) => ({ ...e, pad: "y".repeat(10_000) })); }`;
    expect(ok(await run(fanOut, events(2), undefined, small))).toHaveLength(6);
    const oneTooBig = `function transformEvent(e) { return [e, { ...e, pad: "y".repeat(20_000) }]; }`;
    expect((await run(oneTooBig, events(1), undefined, small)).error).toContain("is over the 16 KB limit");
    const batch = `function transformBatch(events) { return events.map((e, i) => ({ ...e, pad: "z".repeat(i === 1 ? 20_000 : 10) })); }`;
    expect((await run(batch, events(3), undefined, small)).error).toContain("is over the 16 KB limit");
  });

  test("a thrown 50 MB message comes back cut to a readable length", async () => {
    const roomy = new SandboxPool({ memoryBytes: 256 * 1024 * 1024, timeoutMs: 10_000, workers: 1 });
    pools.push(roomy);
    const thrown = await run(`function transformEvent(e) { throw new Error("z".repeat(50 * 1024 * 1024)); }`, events(1), undefined, roomy);
    expect(thrown.error!.startsWith("Error: zzz")).toBe(true);
    expect(thrown.error!.length).toBeLessThan(20_000);
  });
});

describe("output cap in the server (--transform-output-max-kb)", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startSluice({ args: ["--transform-output-max-kb", "64", "--retry-backoff-ms", "20"] });
  });
  afterAll(async () => {
    await s.stop();
    await cleanup(s.dataDir);
  });
  // Pads the events named "Big" past the 64 KB cap; the others pass untouched.
  const CODE = `function transformEvent(e) { if (e.event === "Big") e.pad = "x".repeat(100000); return e; }`;

  test("POST /v2/transformations/test: 200 with the error naming the cap in errors", async () => {
    const res = await api(s.url, "POST", "/v2/transformations/test", { code: CODE, events: [{ type: "track", event: "Big", messageId: "m1" }] });
    expect(res.status).toBe(200);
    expect(res.json.output).toEqual([]);
    expect(res.json.errors).toHaveLength(1);
    expect(res.json.errors[0]).toMatch(/^transformation output of 97\.\d KB is over the 64 KB limit \(--transform-output-max-kb\)$/);
  });

  test("the Test API shows the error as the user_transform stage's, and aborts the later stages", async () => {
    const sink = startSink();
    const dst = await api(s.url, "POST", "/v2/destinations", { name: "capped", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/hook` }, sourceIds: [] });
    expect((await api(s.url, "POST", "/v2/transformations", { name: "pad", code: CODE, destinationIds: [dst.json.id] })).status).toBe(201);
    const res = await fetch(`${s.url}/v0/testDestination/${dst.json.id}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: basic(ADMIN_EMAIL, ADMIN_TOKEN) },
      body: JSON.stringify({ message: { type: "track", userId: "u1", event: "Big" } }),
    });
    expect(res.status).toBe(200);
    const [entry] = ((await res.json()) as any).data;
    expect(entry.user_transformed_payload.error).toContain("is over the 64 KB limit (--transform-output-max-kb)");
    expect(entry.destination_response).toEqual({ error: "aborted: user_transform stage failed" });
    expect(sink.received).toHaveLength(0);
    sink.stop();
  });

  test("a delivery: the over-sized event is aborted naming the cap, the other events of the same transformation are delivered", async () => {
    const sink = startSink();
    const src = await createSource(s.url);
    const dst = await api(s.url, "POST", "/v2/destinations", { name: "capped-2", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/hook` }, sourceIds: [src.id] });
    expect((await api(s.url, "POST", "/v2/transformations", { name: "pad-2", code: CODE, destinationIds: [dst.json.id] })).status).toBe(201);
    for (const event of ["Small 1", "Big", "Small 2"]) await sendEvent(s.url, src.writeKey, "track", { userId: event, event });
    await waitFor(async () => {
      const c = (await api(s.url, "GET", `/v2/destinations/${dst.json.id}/stats`)).json.counts;
      return c.succeeded === 2 && c.aborted === 1;
    }, { what: "two delivered, one aborted" });
    const aborted = await api(s.url, "GET", `/v2/destinations/${dst.json.id}/deliveries?state=aborted`);
    expect(aborted.json.deliveries.map((d: any) => d.event.event)).toEqual(["Big"]);
    expect(aborted.json.deliveries[0].lastError).toMatch(/^user transformation failed: transformation output of 9\d\.\d KB is over the 64 KB limit/);
    expect(sink.received.map((r) => r.body.event).sort()).toEqual(["Small 1", "Small 2"]);
    sink.stop();
  });
});

describe("isolation", () => {
  test("no host globals: require, process, Bun, fetch, timers, postMessage are undefined", async () => {
    const code = `function transformEvent(event) {
      return {
        ...event,
        seen: {
          require: typeof require, process: typeof process, Bun: typeof Bun, fetch: typeof fetch,
          setTimeout: typeof setTimeout, postMessage: typeof postMessage, self: typeof self,
          WebAssembly: typeof WebAssembly, Buffer: typeof Buffer, module: typeof module,
          navigator: typeof navigator, register: typeof __sluice_register__,
          viaEval: eval("typeof process"), viaFunction: new Function("return typeof Bun")(),
        },
        globals: Object.getOwnPropertyNames(globalThis),
      };
    }`;
    const out = ok(await run(code));
    const seen = out[0]!.event.seen as Record<string, string>;
    for (const [name, type] of Object.entries(seen)) expect(`${name}: ${type}`).toBe(`${name}: undefined`);
    const globals = out[0]!.event.globals as string[];
    for (const host of ["process", "Bun", "require", "fetch", "setTimeout", "postMessage", "self", "onmessage", "WebAssembly", "navigator", "crypto"]) {
      expect(globals).not.toContain(host);
    }
    expect(globals).toContain("log");
    expect(globals).toContain("console");
  });

  test("dynamic import() fails, and so does a static import", async () => {
    const code = `export async function transformEvent(event) {
      let imported;
      try { await import("node:fs"); imported = "loaded"; } catch (err) { imported = "failed: " + err; }
      return { ...event, imported };
    }`;
    const out = ok(await run(code));
    expect(out[0]!.event.imported).toStartWith("failed: ");
    const staticImport = await run(`import fs from "fs";\nexport function transformEvent(e) { return e; }`);
    expect(staticImport.error).toContain("no library named 'fs': this transformation has no libraries");
  });
});

describe("compilation cache", () => {
  test("the same versionId is compiled once (state persists); a new versionId starts fresh", async () => {
    const code = `let calls = 0;\nexport function transformEvent(event) { calls++; return { ...event, calls }; }`;
    const counts: unknown[] = [];
    for (let i = 0; i < 3; i++) counts.push(ok(await run(code, events(1), "counter-v1"))[0]!.event.calls);
    expect(counts).toEqual([1, 2, 3]);
    expect(ok(await run(code, events(1), "counter-v2"))[0]!.event.calls).toBe(1);
    expect(ok(await run(code, events(1), "counter-v1"))[0]!.event.calls).toBe(4);
  });

  test("a pool spawns no worker until its first call, and a closed pool refuses work", async () => {
    const lazy = new SandboxPool({ memoryBytes: 32 * 1024 * 1024, timeoutMs: 500, workers: 3 });
    const slots = (lazy as unknown as { slots: Array<{ worker: Worker | null }> }).slots;
    expect(slots.every((s) => s.worker === null)).toBe(true);
    await lazy.close();
    const result = await lazy.run({ versionId: "x", code: `function transformEvent(e) { return e; }`, events: events(1) });
    expect(result.error).toContain("closed");
  });
});

describe("libraries", () => {
  const strings = "export function shout(s) { return s.toUpperCase() + '!'; }";
  const uses = `import { shout } from "strings";\nexport function transformEvent(e) { return { ...e, event: shout(e.event) }; }`;

  test("code imports a library by its import name; a library may import another", async () => {
    const libraries = { strings, "shout-twice": `import { shout } from "strings";\nexport const twice = (s) => shout(shout(s));` };
    const code = `import * as lib from "shout-twice";\nexport function transformEvent(e) { return { ...e, event: lib.twice(e.event) }; }`;
    const [out] = ok(await pool.run({ versionId: `v-${++versions}`, code, libraries, events: events(1) }));
    expect(out!.event.event).toBe("EVENT 0!!");
  });

  test("an import of a library the version does not have fails naming it; nothing else can be imported", async () => {
    const missing = await pool.run({ versionId: `v-${++versions}`, code: uses, events: events(1) });
    expect(missing.error).toContain("no library named 'strings': this transformation has no libraries");
    const other = await pool.run({ versionId: `v-${++versions}`, code: `import fs from "fs";\nexport function transformEvent(e) { return e; }`, libraries: { strings }, events: events(1) });
    expect(other.error).toContain("no library named 'fs' (this version has strings)");
  });

  test("a version runs the library code it was given, even when the same versionId comes with other code", async () => {
    const versionId = `v-${++versions}`;
    const first = ok(await pool.run({ versionId, code: uses, libraries: { strings }, events: events(1) }));
    expect(first[0]!.event.event).toBe("EVENT 0!");
    const quieter = "export function shout(s) { return s.toLowerCase(); }";
    const second = ok(await pool.run({ versionId, code: uses, libraries: { strings: quieter }, events: events(1) }));
    expect(second[0]!.event.event).toBe("event 0");
  });

  test("validation loads the libraries too", async () => {
    expect(await validateTransformationCode(uses, {}, { strings })).toBe("transformEvent");
    await expect(validateTransformationCode(uses)).rejects.toThrow("no library named 'strings'");
  });
});

describe("validateTransformationCode", () => {
  test("accepts exactly one of the two functions and says which", async () => {
    expect(await validateTransformationCode(`function transformEvent(event, metadata) { return event; }`)).toBe("transformEvent");
    expect(await validateTransformationCode(`export function transformBatch(events, metadata) { return events; }`)).toBe("transformBatch");
    expect(await validateTransformationCode(`export default function transformEvent(e) { return e; }`)).toBe("transformEvent");
  });

  test("refuses code that defines neither", async () => {
    await expect(validateTransformationCode(`function somethingElse(e) { return e; }`)).rejects.toThrow(
      "define a function transformEvent(event, metadata) or transformBatch(events, metadata)",
    );
    await expect(validateTransformationCode(`const transformEvent = 5;`)).rejects.toThrow("transformEvent must be a function (got number)");
  });

  test("refuses code that defines both", async () => {
    await expect(validateTransformationCode(`function transformEvent(e) { return e; }\nfunction transformBatch(es) { return es; }`)).rejects.toThrow(
      "define only one of transformEvent(event, metadata) or transformBatch(events, metadata), not both",
    );
  });

  test("refuses syntax errors with QuickJS's message", async () => {
    await expect(validateTransformationCode(`function transformEvent(event) {\n  return event.;\n}`)).rejects.toThrow(/^SyntaxError: .*\(line 2, column \d+\)$/);
    await expect(validateTransformationCode(`export function (`)).rejects.toThrow("SyntaxError: function name expected");
  });

  test("refuses code whose top level throws or never finishes", async () => {
    await expect(validateTransformationCode(`throw new RangeError("nope");`)).rejects.toThrow("RangeError: nope");
    await expect(validateTransformationCode(`while (true) {}\nfunction transformEvent(e) { return e; }`, { timeoutMs: 100 })).rejects.toThrow(
      "transformation timed out after 100 ms",
    );
  });

  test("a failing compile also fails run() with the same message", async () => {
    const result = await run(`function transformEvent(e) { return e; }\nfunction transformBatch(es) { return es; }`);
    expect(result.error).toBe("define only one of transformEvent(event, metadata) or transformBatch(events, metadata), not both");
  });
});
