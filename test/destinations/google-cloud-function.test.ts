/**
 * GOOGLE_CLOUD_FUNCTION end to end: events posted to a stand-in function on 127.0.0.1, with an ID
 * token from the OAuth stand-in (test/support/google-oauth.ts) when the function requires
 * authentication; the function takes only a token granted for its own URL.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type TestServer, api, cleanup, createSource, startSluice, waitFor } from "../support/helpers";
import { startGoogleOAuth } from "../support/google-oauth";

let s: TestServer;
let oauth: ReturnType<typeof startGoogleOAuth>;
let fn: ReturnType<typeof Bun.serve>;
const calls: Array<{ path: string; auth: string; body: any }> = [];
let answer: (path: string) => Response | undefined = () => undefined;

beforeAll(async () => {
  oauth = startGoogleOAuth();
  fn = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const auth = req.headers.get("authorization") ?? "";
      calls.push({ path, auth, body: await req.json() });
      const scripted = answer(path);
      if (scripted) return scripted;
      if (path.startsWith("/private/")) {
        const url = `http://127.0.0.1:${fn.port}${path}`;
        if (!oauth.grants.some((g) => g.audience === url && `Bearer ${g.token}` === auth)) return new Response("Unauthorized", { status: 401 });
      }
      if (path.endsWith("/slow")) await Bun.sleep(3_000);
      return new Response("OK");
    },
  });
  s = await startSluice({ args: ["--retry-backoff-ms", "20", "--destination-timeout-ms", "1000"] });
});
afterAll(async () => {
  await s?.stop();
  await cleanup(s?.dataDir);
  fn?.stop(true);
  oauth?.stop();
});

const connect = async (config: Record<string, unknown>) => {
  const src = await createSource(s.url);
  const res = await api(s.url, "POST", "/v2/destinations", { name: `gcf-${crypto.randomUUID().slice(0, 6)}`, type: "GOOGLE_CLOUD_FUNCTION", config, sourceIds: [src.id] });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`);
  return { src, dst: res.json as { id: string } };
};
const send = (writeKey: string, events: unknown[]) =>
  fetch(`${s.url}/v1/batch`, { method: "POST", headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${writeKey}:`)}` }, body: JSON.stringify({ batch: events }) });
const counts = async (id: string) => (await api(s.url, "GET", `/v2/destinations/${id}/stats`)).json.counts as Record<string, number>;
const fnUrl = (path: string) => `http://127.0.0.1:${fn.port}${path}`;

describe("GOOGLE_CLOUD_FUNCTION", () => {
  test("each event is posted to the function as it is; with enableBatchInput, a user's run as a list of at most maxBatchSize", async () => {
    const one = await connect({ googleCloudFunctionUrl: fnUrl("/single") });
    expect((await send(one.src.writeKey, [{ type: "track", event: "E", userId: "a", messageId: "g-1" }])).status).toBe(200);
    await waitFor(async () => (await counts(one.dst.id)).succeeded === 1, { what: "delivered" });
    expect(calls.filter((c) => c.path === "/single").map((c) => c.body.messageId)).toEqual(["g-1"]);

    const many = await connect({ googleCloudFunctionUrl: fnUrl("/batched"), enableBatchInput: true, maxBatchSize: "3" });
    const events = Array.from({ length: 7 }, (_, i) => ({ type: "track", event: "E", userId: "b", messageId: `b-${i}` }));
    expect((await send(many.src.writeKey, events)).status).toBe(200);
    await waitFor(async () => (await counts(many.dst.id)).succeeded === 7, { what: "7 delivered" });
    const lists = calls.filter((c) => c.path === "/batched").map((c) => (c.body as any[]).map((e) => e.messageId));
    expect(lists.flat()).toEqual(events.map((e) => e.messageId));
    expect(Math.max(...lists.map((l) => l.length))).toBeLessThanOrEqual(3);
  });

  test("requireAuthentication: an ID token for the function's URL, from a JWT the OAuth stand-in verifies, kept across calls", async () => {
    const { src, dst } = await connect({ googleCloudFunctionUrl: fnUrl("/private/fn"), requireAuthentication: true, credentials: oauth.credentials });
    const before = oauth.grants.length;
    for (let i = 0; i < 3; i++) {
      expect((await send(src.writeKey, [{ type: "identify", userId: `p${i}`, messageId: `p-${i}` }])).status).toBe(200);
      await waitFor(async () => (await counts(dst.id)).succeeded === i + 1, { what: `call ${i} delivered` });
    }
    expect(oauth.grants.length - before).toBe(1);
    expect(oauth.grants.at(-1)).toMatchObject({ audience: fnUrl("/private/fn") });
    expect(oauth.refused).toEqual([]);
  });

  test("5xx is retried, 4xx aborts with the function's words; a call that times out counts as made, as rudder-server counts it", async () => {
    let n = 0;
    answer = (path) => {
      if (path === "/flaky" && ++n === 1) return new Response("busy", { status: 503 });
      if (path === "/refuses") return new Response("bad input", { status: 400 });
      return undefined;
    };
    try {
      const flaky = await connect({ googleCloudFunctionUrl: fnUrl("/flaky") });
      const refuses = await connect({ googleCloudFunctionUrl: fnUrl("/refuses") });
      const slow = await connect({ googleCloudFunctionUrl: fnUrl("/slow") });
      for (const d of [flaky, refuses, slow]) expect((await send(d.src.writeKey, [{ type: "track", event: "E", userId: "x" }])).status).toBe(200);
      await waitFor(async () => (await counts(flaky.dst.id)).succeeded === 1, { what: "flaky delivered after a retry" });
      await waitFor(async () => (await counts(refuses.dst.id)).aborted === 1, { what: "refused aborted" });
      await waitFor(async () => (await counts(slow.dst.id)).succeeded === 1, { what: "slow counted as made" });
      expect(n).toBe(2);
      expect(JSON.stringify((await api(s.url, "GET", `/v2/destinations/${refuses.dst.id}/deliveries?state=aborted`)).json.deliveries)).toContain("Function call failed bad input");
    } finally {
      answer = () => undefined;
    }
  });

  test("configs that cannot work are refused on save: no URL, a URL that is not http(s), authentication without a service account key", async () => {
    const src = await createSource(s.url);
    const save = (config: Record<string, unknown>) => api(s.url, "POST", "/v2/destinations", { name: `gcf-bad-${crypto.randomUUID().slice(0, 6)}`, type: "GOOGLE_CLOUD_FUNCTION", config, sourceIds: [src.id] });
    expect((await save({})).text).toContain("googleCloudFunctionUrl");
    const file = await save({ googleCloudFunctionUrl: "file:///etc/passwd" });
    expect(file.status).toBe(400);
    const noKey = await save({ googleCloudFunctionUrl: fnUrl("/x"), requireAuthentication: true, credentials: "{}" });
    expect(noKey.status).toBe(400);
    expect(noKey.text).toContain("credentials");
  });
});
