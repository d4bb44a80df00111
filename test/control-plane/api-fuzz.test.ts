/**
 * Random and mutated bodies, ids, queries and credentials against every API route:
 * every answer must be 2xx or 4xx, and the server must still serve afterwards.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, basic, cleanup, createSource, startSink, startSluice } from "../support/helpers";

let s: TestServer;
const sink = startSink();
let ids: Record<string, string> = {};
beforeAll(async () => {
  s = await startSluice({ args: ["--destination-timeout-ms", "500"] });
  const src = await createSource(s.url);
  const dst = (await (
    await fetch(`${s.url}/v2/destinations`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "fuzz-hook", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/h` }, sourceIds: [src.id] }),
    })
  ).json()) as any;
  ids = { src: src.id, dst: dst.id };
});
afterAll(async () => {
  await s.stop();
  sink.stop();
  cleanup(s.dataDir);
});

function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WEIRD: unknown[] = [null, true, 0, -1, 1.5, "", "x", "\u0000", [], {}, [[]], { a: { b: [] } }, "ü".repeat(300), 1e308];
const FIELDS = ["name", "type", "config", "enabled", "sourceIds", "destinationIds", "writeKey", "settings", "code", "events", "regulationType", "users", "message", "stage", "destinationConfig", "sourceId", "destinationId"];

test("2,000 random API requests get only 2xx/4xx, and the server lives on", async () => {
  const r = rng(Number(process.env.FUZZ_SEED ?? 7));
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
  const value = (depth = 0): unknown => {
    const roll = r();
    if (depth > 2 || roll < 0.5) return pick(WEIRD);
    if (roll < 0.75) return Array.from({ length: Math.floor(r() * 3) }, () => value(depth + 1));
    const o: Record<string, unknown> = {};
    for (let i = 0; i < 1 + Math.floor(r() * 4); i++) o[pick(FIELDS)] = value(depth + 1);
    return o;
  };
  const id = () => pick([ids.src, ids.dst, "nope", "", "%00", "src_" + "0".repeat(32), "a/b", "..", "x".repeat(500)]);
  const routes: Array<() => [string, string]> = [
    () => ["POST", "/v2/sources"],
    () => ["PATCH", `/v2/sources/${id()}`],
    () => ["GET", `/v2/sources/${id()}`],
    () => ["POST", "/v2/destinations"],
    () => ["PATCH", `/v2/destinations/${id()}`],
    () => ["POST", "/v2/connections"],
    () => ["DELETE", "/v2/connections"],
    () => ["POST", "/v2/transformations"],
    () => ["POST", "/v2/transformations/test"],
    () => ["PATCH", `/v2/transformations/${id()}`],
    () => ["POST", "/v2/regulations"],
    () => ["GET", `/v2/regulations?after_cursor=${encodeURIComponent(String(pick(WEIRD)))}`],
    () => ["DELETE", `/v2/regulations/${id()}`],
    () => ["POST", `/v0/testDestination/${id()}?force=${pick(["true", "false", "maybe", ""])}`],
    () => ["POST", `/v0/testSource/${id()}`],
    () => ["POST", `/v2/destinations/${id()}/replay`],
    () => ["GET", `/v2/destinations/${id()}/stats`],
  ];
  const failures: string[] = [];
  let ok = 0;
  let bad = 0;
  const N = 2000;
  let next = 0;
  async function one() {
    const [method, path] = pick(routes)();
    const authRoll = r();
    const authorization = authRoll < 0.45 ? `Bearer ${ADMIN_TOKEN}` : authRoll < 0.9 ? basic(ADMIN_EMAIL, ADMIN_TOKEN) : pick(["", "Bearer", "Basic !!!", basic("x", "y")]);
    const bodyRoll = r();
    const body = method === "GET" ? undefined : bodyRoll < 0.7 ? JSON.stringify(value()) : bodyRoll < 0.85 ? "{broken" : "";
    try {
      const res = await fetch(s.url + path, { method, headers: { authorization, "content-type": pick(["application/json", "text/plain", "application/x-www-form-urlencoded"]) }, body });
      await res.arrayBuffer();
      if (res.status >= 500 || res.status < 200) failures.push(`${method} ${path} → ${res.status} body=${body?.slice(0, 200)}`);
      else if (res.status < 300) ok++;
      else bad++;
    } catch (e) {
      failures.push(`${method} ${path} → ${(e as Error).message}`);
    }
  }
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next++ < N) await one();
    }),
  );
  expect(failures).toEqual([]);
  expect(ok).toBeGreaterThan(20);
  expect(bad).toBeGreaterThan(500);
  expect((await fetch(`${s.url}/health`)).status).toBe(200);
});
