/**
 * The kinds' lookup client and memory (src/pipeline/lookup.ts): answers a kind reads, failures
 * that make the delivery retry, refusals of the outbound policy that abort, and a memory per
 * destination runtime that forgets at its time and on a changed config.
 */
import { afterAll, describe, expect, test } from "bun:test";
import type { DestinationRuntime } from "../../src/control-plane/config-store";
import { RetryableTransformError, TransformError } from "../../src/destinations/types";
import { LookupCaches, lookupClient } from "../../src/pipeline/lookup";
import { Outbound } from "../../src/pipeline/outbound";
import { startSink, testLookup, waitFor } from "../support/helpers";

const stand = startSink((req) => {
  if (req.path === "/contacts/search") return Response.json({ data: [{ id: "c-1", email: req.body?.query?.value }] });
  if (req.path === "/contacts/missing") return Response.json({ errors: [{ code: "not_found" }] }, { status: 404 });
  if (req.path === "/busy") return new Response("slow down", { status: 429, headers: { "retry-after": "7" } });
  if (req.path === "/broken") return new Response("oops", { status: 502 });
  if (req.path === "/text") return new Response("plain words");
  return new Response("ok");
});
afterAll(() => stand.stop());

describe("lookup client", () => {
  test("a JSON answer is parsed, with its status and text; the request carries method, headers, query and body", async () => {
    const lookup = testLookup();
    const answer = await lookup({ method: "POST", endpoint: `${stand.url}/contacts/search`, headers: { authorization: "Bearer k" }, params: { per_page: 1 }, json: { query: { value: "ada@example.com" } } });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ data: [{ id: "c-1", email: "ada@example.com" }] });
    const seen = stand.received.at(-1)!;
    expect(seen).toMatchObject({ method: "POST", path: "/contacts/search", query: { per_page: "1" } });
    expect(seen.headers.authorization).toBe("Bearer k");
    const text = await lookup({ method: "GET", endpoint: `${stand.url}/text` });
    expect([text.body, text.text]).toEqual(["plain words", "plain words"]);
  });

  test("a 4xx is answered for the kind to read (not found takes the create branch)", async () => {
    const answer = await testLookup()({ method: "GET", endpoint: `${stand.url}/contacts/missing` });
    expect(answer.status).toBe(404);
    expect(answer.body.errors[0].code).toBe("not_found");
  });

  test("429 and 5xx, a refused connection and a time-out throw RetryableTransformError, with the service's Retry-After", async () => {
    const lookup = testLookup(300);
    const busy = await lookup({ method: "GET", endpoint: `${stand.url}/busy` }).catch((e) => e);
    expect(busy).toBeInstanceOf(RetryableTransformError);
    expect(busy.message).toBe("lookup GET /busy answered 429");
    expect(busy.retryAfterMs).toBe(7000);
    expect(await lookup({ method: "GET", endpoint: `${stand.url}/broken` }).catch((e) => e)).toBeInstanceOf(RetryableTransformError);
    const closed = startSink();
    const url = closed.url;
    closed.stop();
    const refused = await lookup({ method: "GET", endpoint: `${url}/x` }).catch((e) => e);
    expect(refused).toBeInstanceOf(RetryableTransformError);
    expect(refused.message).toContain("could not connect to");
    const silent = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Promise<Response>(() => {}) });
    try {
      const late = await lookup({ method: "GET", endpoint: `http://127.0.0.1:${silent.port}/slow` }).catch((e) => e);
      expect(late).toBeInstanceOf(RetryableTransformError);
      expect(late.message).toContain("timed out after 300 ms");
    } finally {
      silent.stop(true);
    }
  });

  test("the outbound address policy applies: a loopback service is refused by default, and that aborts (no retry)", async () => {
    const lookup = lookupClient({ outbound: new Outbound({ allowDestinationHosts: [], denyDestinationHosts: [] }), timeoutMs: 1000 });
    const before = stand.received.length;
    const err = await lookup({ method: "GET", endpoint: `${stand.url}/contacts/search` }).catch((e) => e);
    expect(err).toBeInstanceOf(TransformError);
    expect(err.message).toContain("refused");
    expect(stand.received.length).toBe(before);
  });

  test("a lookup holds a connection slot while on the wire and gives it back, answered or failed", async () => {
    let held = 0;
    let most = 0;
    const acquire = async () => {
      most = Math.max(most, ++held);
      return () => void held--;
    };
    const lookup = lookupClient({ outbound: new Outbound({ allowDestinationHosts: ["127.0.0.0/8"], denyDestinationHosts: [] }), timeoutMs: 1000, acquire });
    await Promise.all([lookup({ method: "GET", endpoint: `${stand.url}/text` }), lookup({ method: "GET", endpoint: `${stand.url}/broken` }).catch(() => undefined)]);
    expect(most).toBe(2);
    expect(held).toBe(0);
  });
});

describe("lookup memory", () => {
  test("one memory per destination runtime: a new runtime (a changed config) starts empty; entries forget at their time", async () => {
    const caches = new LookupCaches();
    const runtime = {} as DestinationRuntime;
    const cache = caches.for(runtime);
    expect(caches.for(runtime)).toBe(cache);
    cache.set("properties", ["email", "firstname"], 60_000);
    cache.set("brief", 1, 30);
    expect(cache.get<string[]>("properties")).toEqual(["email", "firstname"]);
    expect(caches.for({} as DestinationRuntime).get("properties")).toBeUndefined();
    await waitFor(() => cache.get("brief") === undefined, { timeoutMs: 2000, what: "the brief entry to expire" });
    expect(cache.get<string[]>("properties")).toEqual(["email", "firstname"]);
  });
});
