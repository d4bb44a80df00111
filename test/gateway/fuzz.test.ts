/**
 * Thousands of random and mutated requests to every event endpoint: every answer
 * must be 2xx or 4xx, and the server must still serve afterwards.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { type TestServer, basic, cleanup, createSource, startSluice } from "../support/helpers";

let s: TestServer;
let key: string;
beforeAll(async () => {
  s = await startSluice();
  key = (await createSource(s.url)).writeKey;
});
afterAll(async () => {
  await s.stop();
  cleanup(s.dataDir);
});

/** A small seeded PRNG (mulberry32) so a failure can be replayed from its seed. */
function rng(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PATHS = ["/v1/identify", "/v1/track", "/v1/page", "/v1/screen", "/v1/group", "/v1/alias", "/v1/merge", "/v1/batch", "/beacon/v1/batch"];
const VALID: Record<string, unknown> = {
  identify: { userId: "u", traits: { a: 1 } },
  track: { userId: "u", event: "E", properties: { p: [1, 2, { q: null }] } },
  page: { anonymousId: "a", name: "P" },
  screen: { userId: "u", name: "S" },
  group: { userId: "u", groupId: "g" },
  alias: { userId: "u", previousId: "p" },
  merge: { userId: "u", mergeProperties: [{ type: "email", value: "x" }] },
  batch: { batch: [{ type: "track", userId: "u", event: "E" }, { type: "identify", anonymousId: "a" }] },
};
const WEIRD: unknown[] = [null, true, 0, -1, 1e308, "", "x", "\u0000", "\ud800", [], {}, [[]], { __proto__: { a: 1 } }, { constructor: 1 }, "2024-13-45T99:99:99Z", "ñ".repeat(50)];

function mutate(r: () => number, value: any, depth = 0): any {
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
  if (depth > 4 || r() < 0.15) return pick(WEIRD);
  if (Array.isArray(value)) return value.map((v) => mutate(r, v, depth + 1)).concat(r() < 0.2 ? [pick(WEIRD)] : []);
  if (value && typeof value === "object") {
    const out: Record<string, any> = {};
    for (const [k, v] of Object.entries(value)) {
      const roll = r();
      if (roll < 0.1) continue;
      out[k] = roll < 0.4 ? mutate(r, v, depth + 1) : v;
    }
    if (r() < 0.3) out[pick(["type", "userId", "anonymousId", "event", "timestamp", "sentAt", "context", "integrations", "batch", "messageId", "properties", "traits"])] = pick(WEIRD);
    return out;
  }
  return r() < 0.5 ? pick(WEIRD) : value;
}

function randomBytes(r: () => number, n: number) {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = Math.floor(r() * 256);
  return b;
}

test("3,000 random and mutated requests get only 2xx/4xx, and the server lives on", async () => {
  const seed = Number(process.env.FUZZ_SEED ?? 20261122);
  const r = rng(seed);
  const statuses = new Map<number, number>();
  const failures: string[] = [];
  const N = 3000;
  const concurrency = 16;
  let next = 0;
  async function one(i: number) {
    const path = PATHS[Math.floor(r() * PATHS.length)];
    const call = path.split("/").pop()!;
    const headers: Record<string, string> = {};
    const authRoll = r();
    if (authRoll < 0.8) headers.authorization = basic(key);
    else if (authRoll < 0.85) headers.authorization = "Basic !!!";
    else if (authRoll < 0.9) headers.authorization = basic("");
    else if (authRoll < 0.95) headers.authorization = `Basic ${"A".repeat(5000)}`;
    const ct = r();
    if (ct < 0.6) headers["content-type"] = "application/json";
    else if (ct < 0.7) headers["content-type"] = "application/x-www-form-urlencoded";
    else if (ct < 0.8) headers["content-type"] = "text/plain";
    else if (ct < 0.85) headers["content-type"] = "multipart/form-data; boundary=x";
    let body: string | Uint8Array;
    const kind = r();
    if (kind < 0.55) body = JSON.stringify(mutate(r, VALID[call] ?? VALID.batch));
    else if (kind < 0.65) body = JSON.stringify(VALID[call] ?? VALID.batch).slice(0, Math.floor(r() * 40));
    else if (kind < 0.75) body = randomBytes(r, Math.floor(r() * 300));
    else if (kind < 0.8) body = "";
    else if (kind < 0.85) body = JSON.stringify({ batch: Array.from({ length: 5 }, () => mutate(r, { type: "track", userId: "u", event: "E" })) });
    else body = JSON.stringify(VALID[call] ?? VALID.batch);
    const enc = r();
    if (enc < 0.15) {
      headers["content-encoding"] = "gzip";
      body = gzipSync(typeof body === "string" ? body : Buffer.from(body));
    } else if (enc < 0.2) {
      headers["content-encoding"] = "gzip"; // claims gzip, is not
    } else if (enc < 0.22) {
      headers["content-encoding"] = "br";
    }
    const q = path.startsWith("/beacon") ? (r() < 0.7 ? `?writeKey=${key}` : r() < 0.5 ? "?writeKey=" : "?writeKey=%ZZ") : "";
    try {
      const res = await fetch(s.url + path + q, { method: "POST", headers, body });
      await res.arrayBuffer();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status >= 500 || res.status < 200) {
        const shown = typeof body === "string" ? body.slice(0, 300) : `<${body.length} bytes>`;
        failures.push(`#${i} ${path} → ${res.status} ${JSON.stringify(headers)} ${shown}`);
      }
    } catch (e) {
      failures.push(`#${i} ${path} → ${(e as Error).message}`);
    }
  }
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < N) await one(next++);
    }),
  );
  expect(failures).toEqual([]);
  // The fuzz must reach both outcomes, or it tests nothing.
  expect(statuses.get(200) ?? 0).toBeGreaterThan(100);
  expect(statuses.get(400) ?? 0).toBeGreaterThan(100);
  const health = await fetch(`${s.url}/health`);
  expect(health.status).toBe(200);
  const ok = await fetch(`${s.url}/v1/track`, { method: "POST", headers: { authorization: basic(key) }, body: JSON.stringify({ userId: "u", event: "after" }) });
  expect(ok.status).toBe(200);
});

test("2,000 mutated webhooks of every source type get only 2xx/4xx, none from a mapping that crashed", async () => {
  const { SOURCE_MAPPINGS } = await import("../../src/sources/registry");
  const seed = Number(process.env.FUZZ_SEED ?? 20261207);
  const r = rng(seed);
  const keys = new Map<string, string>();
  for (const m of SOURCE_MAPPINGS) keys.set(m.name, (await createSource(s.url, { name: `fuzz-${m.name}`, type: m.name })).writeKey);
  const failures: string[] = [];
  const statuses = new Map<number, number>();
  const N = 2000;
  let next = 0;
  async function one(i: number) {
    const m = SOURCE_MAPPINGS[Math.floor(r() * SOURCE_MAPPINGS.length)]!;
    const query = new URLSearchParams({ writeKey: keys.get(m.name)! });
    for (const [k, v] of Object.entries(m.sample.query ?? {})) {
      const roll = r();
      if (roll < 0.1) continue;
      query.set(k, roll < 0.3 ? String(mutate(r, v)) : v);
    }
    const kind = r();
    const body =
      kind < 0.7 ? JSON.stringify(mutate(r, m.sample.body)) : kind < 0.8 ? JSON.stringify(m.sample.body).slice(0, Math.floor(r() * 60)) : kind < 0.9 ? JSON.stringify(mutate(r, [m.sample.body, m.sample.body])) : "";
    const headers: Record<string, string> = { "content-type": r() < 0.9 ? "application/json" : "application/x-www-form-urlencoded", ...(m.sample.headers ?? {}) };
    const method = m.takesGet && r() < 0.2 ? "GET" : "POST";
    try {
      const res = await fetch(`${s.url}/v1/webhook?${query}`, { method, headers, body: method === "GET" ? undefined : body });
      const text = await res.text();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      // A mapping's own refusal names what is wrong; "could not read this request" is what the gateway says when a mapping threw something else.
      if (res.status >= 500 || text.includes("mapping could not read this request")) failures.push(`#${i} ${m.name} ${method} → ${res.status} ${text.slice(0, 120)} ${body.slice(0, 300)}`);
    } catch (e) {
      failures.push(`#${i} ${m.name} → ${(e as Error).message}`);
    }
  }
  await Promise.all(Array.from({ length: 16 }, async () => { while (next < N) await one(next++); }));
  expect(failures).toEqual([]);
  expect(statuses.get(200) ?? 0).toBeGreaterThan(300);
  expect(statuses.get(400) ?? 0).toBeGreaterThan(100);
  expect((await fetch(`${s.url}/health`)).status).toBe(200);
});
