/**
 * The HTTP edge against a hostile client: bodies bounded before they are read (and credentials
 * checked first), CORS only where web pages send events and never with credentials, sign-in only
 * as JSON from this origin, forwarded headers believed only with --trust-proxy, `next=` kept on
 * this origin, and /metrics behind its token when one is set.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { safeNext } from "../../src/dashboard/ui/next-path";
import { startDashboard } from "../support/dashboard-harness";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, basic, bearer, cleanup, createSource, haveChromium, sendEvent, spawnSluice, startSluice } from "../support/helpers";

let s: TestServer;
let writeKey: string;

beforeAll(async () => {
  s = await startSluice();
  writeKey = (await createSource(s.url)).writeKey;
});
afterAll(async () => {
  await s?.stop();
  await cleanup(s.dataDir);
});

const MB = 1024 * 1024;
const json = { "content-type": "application/json" };

/** A body of `bytes` generated as it is sent, so the client never holds it. */
function streamedBody(bytes: number): ReadableStream<Uint8Array> {
  const chunk = new Uint8Array(64 * 1024).fill(0x20);
  let sent = 0;
  return new ReadableStream({
    pull(c) {
      if (sent >= bytes) return c.close();
      const n = Math.min(chunk.length, bytes - sent);
      sent += n;
      c.enqueue(n === chunk.length ? chunk : chunk.subarray(0, n));
    },
  });
}

function signIn(url: string, headers: Record<string, string>, body: string | FormData = JSON.stringify({ email: ADMIN_EMAIL, token: ADMIN_TOKEN })) {
  return fetch(`${url}/v2/session`, { method: "POST", headers, body });
}

describe("bodies are bounded before they are read", () => {
  const vmRss = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;

  test("four concurrent unauthenticated 60 MB POSTs (/v2/sources, /v2/session; with and without Content-Length) raise RSS by < 100 MB, each 401 or 413", async () => {
    const p = await spawnSluice();
    try {
      // Settled first: the first requests load code and warm caches.
      for (let i = 0; i < 3; i++) await fetch(`${p.url}/v2/sources`, { method: "POST", headers: json, body: "{}" });
      const before = vmRss(p.proc.pid);
      const size = 60 * 1000 * 1000;
      const post = async (path: string, declared: boolean) => {
        const headers: Record<string, string> = { ...json, ...(declared ? { "content-length": String(size) } : {}) };
        const res = await fetch(p.url + path, { method: "POST", headers, body: streamedBody(size), duplex: "half" } as RequestInit);
        return { path, declared, status: res.status, message: ((await res.json()) as any).message as string };
      };
      const answers = await Promise.all([post("/v2/sources", true), post("/v2/sources", false), post("/v2/session", true), post("/v2/session", false)]);
      const grown = vmRss(p.proc.pid) - before;
      expect(Math.round(grown / MB)).toBeLessThan(100);
      expect(answers.map((a) => a.status)).toEqual([413, 401, 413, 413]);
      for (const a of answers) expect(a.message).toMatch(a.status === 413 ? /larger than the 1 MB/ : /Authorization header is missing/);
      // Still serving.
      expect((await fetch(`${p.url}/health`)).status).toBe(200);
    } finally {
      p.proc.kill();
      await p.proc.exited;
      await cleanup(p.dataDir);
    }
  }, 120_000);

  test("an API body over 1 MB → 413 naming the limit, declared or streamed; an unauthenticated one → 401 before it is read", async () => {
    const big = JSON.stringify({ name: "x".repeat(MB) });
    const declared = await fetch(`${s.url}/v2/sources`, { method: "POST", headers: { ...json, authorization: bearer() }, body: big });
    expect(declared.status).toBe(413);
    expect(((await declared.json()) as any).message).toBe("request body is larger than the 1 MB this route accepts");
    const streamed = await fetch(`${s.url}/v2/sources`, { method: "POST", headers: { ...json, authorization: bearer() }, body: streamedBody(2 * MB), duplex: "half" } as RequestInit);
    expect(streamed.status).toBe(413);
    const anonymous = await fetch(`${s.url}/v2/sources`, { method: "POST", headers: json, body: streamedBody(2 * MB), duplex: "half" } as RequestInit);
    expect(anonymous.status).toBe(401);
  });

  test("a streamed body under the limit is parsed as usual: valid JSON is created, bad JSON is 400", async () => {
    const body = (text: string) => new Blob([text]).stream();
    const ok = await fetch(`${s.url}/v2/sources`, { method: "POST", headers: { ...json, authorization: bearer() }, body: body(JSON.stringify({ name: "streamed" })), duplex: "half" } as RequestInit);
    expect(ok.status).toBe(201);
    expect(((await ok.json()) as any).name).toBe("streamed");
    const bad = await fetch(`${s.url}/v2/sources`, { method: "POST", headers: { ...json, authorization: bearer() }, body: body("{"), duplex: "half" } as RequestInit);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).message).toBe("request body is not valid JSON");
  });

  test("the Test API and the transformation test run take up to 4 MB", async () => {
    const message = (pad: number) => JSON.stringify({ message: { type: "track", event: "E", userId: "u", properties: { pad: "x".repeat(pad) } } });
    const testApi = (body: string) => fetch(`${s.url}/v0/testSource/src_unknown`, { method: "POST", headers: { ...json, authorization: basic(ADMIN_EMAIL, ADMIN_TOKEN) }, body });
    // Read and answered (the source does not exist), not refused for its size.
    expect((await testApi(message(3 * MB))).status).toBe(404);
    const over = await testApi(message(4 * MB));
    expect(over.status).toBe(413);
    expect(((await over.json()) as any).message).toBe("request body is larger than the 4 MB this route accepts");
    const run = (pad: number) =>
      fetch(`${s.url}/v2/transformations/test`, {
        method: "POST",
        headers: { ...json, authorization: bearer() },
        body: JSON.stringify({ code: "export function transformEvent(e) { return e; }", events: [{ type: "track", event: "E", properties: { pad: "x".repeat(pad) } }] }),
      });
    expect((await run(2 * MB)).status).not.toBe(413);
    expect((await run(4 * MB)).status).toBe(413);
  });
});

describe("CORS: preflights only on the event routes, never with credentials", () => {
  const preflight = (path: string, origin = "https://shop.example") =>
    fetch(s.url + path, { method: "OPTIONS", headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type" } });

  test("/v1/*, /beacon/* and /sourceConfig answer a preflight with the origin echoed and no Allow-Credentials", async () => {
    for (const path of ["/v1/track", "/v1/batch", "/beacon/v1/batch", "/sourceConfig", "/sourceConfig/"]) {
      const res = await preflight(path);
      expect(res.status).toBe(204);
      expect(res.headers.get("access-control-allow-origin")).toBe("https://shop.example");
      expect(res.headers.get("access-control-allow-credentials")).toBeNull();
      expect(res.headers.get("access-control-allow-methods")).not.toContain("DELETE");
    }
  });

  test("any other OPTIONS is a 404 without CORS headers", async () => {
    for (const path of ["/v2/sources", "/v2/session", "/v0/testSource/x", "/metrics", "/"]) {
      const res = await preflight(path, "https://evil.example");
      expect(res.status).toBe(404);
      for (const name of res.headers.keys()) expect(name).not.toStartWith("access-control-");
    }
  });

  test("event calls and /sourceConfig answer a page of any origin without Allow-Credentials", async () => {
    const origin = { origin: "https://shop.example" };
    const call = await sendEvent(s.url, writeKey, "track", { userId: "u", event: "E" }, origin);
    expect(call.status).toBe(200);
    expect(call.headers.get("access-control-allow-origin")).toBe("https://shop.example");
    expect(call.headers.get("access-control-allow-credentials")).toBeNull();
    const config = await fetch(`${s.url}/sourceConfig/?writeKey=${writeKey}`, { headers: origin });
    expect(config.status).toBe(200);
    expect(config.headers.get("access-control-allow-origin")).toBe("https://shop.example");
    expect(config.headers.get("access-control-allow-credentials")).toBeNull();
  });
});

describe("sign-in takes JSON from this origin only (login CSRF)", () => {
  test("form-encoded, multipart and text/plain bodies → 415", async () => {
    const form = new FormData();
    form.set("email", ADMIN_EMAIL);
    form.set("token", ADMIN_TOKEN);
    const urlencoded = await signIn(s.url, { "content-type": "application/x-www-form-urlencoded" }, `email=${encodeURIComponent(ADMIN_EMAIL)}&token=${ADMIN_TOKEN}`);
    expect(urlencoded.status).toBe(415);
    expect(((await urlencoded.json()) as any).message).toContain("application/json");
    expect((await signIn(s.url, {}, form)).status).toBe(415);
    expect((await signIn(s.url, { "content-type": "text/plain" })).status).toBe(415);
    expect(urlencoded.headers.get("set-cookie")).toBeNull();
  });

  test("an Origin of another site → 403; this server's Origin or none (a script) → 200", async () => {
    const evil = await signIn(s.url, { ...json, origin: "https://evil.example" });
    expect(evil.status).toBe(403);
    expect(evil.headers.get("set-cookie")).toBeNull();
    expect((await signIn(s.url, { ...json, origin: s.url })).status).toBe(200);
    expect((await signIn(s.url, json)).status).toBe(200);
  });
});

describe("X-Forwarded-Host and X-Forwarded-Proto are believed only with --trust-proxy", () => {
  async function cookieOf(url: string) {
    const res = await signIn(url, json);
    return { setCookie: res.headers.get("set-cookie") ?? "", cookie: (res.headers.get("set-cookie") ?? "").split(";")[0]! };
  }
  const changeWithCookie = (url: string, cookie: string, headers: Record<string, string>) =>
    fetch(`${url}/v2/sources`, { method: "POST", headers: { ...json, cookie, ...headers }, body: JSON.stringify({ name: "via-cookie" }) });

  test("without it, an attacker's X-Forwarded-Host does not make their Origin this server's, and X-Forwarded-Proto sets no Secure", async () => {
    const { cookie } = await cookieOf(s.url);
    const forged = await changeWithCookie(s.url, cookie, { origin: "https://evil.example", "x-forwarded-host": "evil.example" });
    expect(forged.status).toBe(403);
    expect((await changeWithCookie(s.url, cookie, { origin: s.url })).status).toBe(201);
    const viaProxy = await signIn(s.url, { ...json, "x-forwarded-proto": "https" });
    expect(viaProxy.headers.get("set-cookie")).not.toContain("Secure");
  });

  test("with it, the proxy's X-Forwarded-Host is this server and X-Forwarded-Proto: https marks the cookie Secure", async () => {
    const proxied = await startSluice({ args: ["--trust-proxy"] });
    try {
      const { cookie } = await cookieOf(proxied.url);
      const res = await changeWithCookie(proxied.url, cookie, { origin: "https://sluice.example", "x-forwarded-host": "sluice.example" });
      expect(res.status).toBe(201);
      const secure = await signIn(proxied.url, { ...json, "x-forwarded-proto": "https" });
      expect(secure.headers.get("set-cookie")).toContain("; Secure");
    } finally {
      await proxied.stop();
      await cleanup(proxied.dataDir);
    }
  });
});

describe("next= after sign-in stays on this origin", () => {
  const origin = "https://sluice.example";

  test("a path of this origin is kept", () => {
    for (const next of ["/", "/tokens", "/sources/src_1?tab=live", "/destinations/dst_1#x", "/a/b/../c"]) expect(safeNext(next, origin)).toBe(next);
  });

  test("anything that could leave the origin, or that a URL parser would rewrite, goes home", () => {
    for (const next of [
      "/\t/evil.example",
      "/\n/evil.example",
      "/\r\n/evil.example",
      "//evil.example",
      "/\\evil.example",
      "\\/evil.example",
      "https://evil.example/",
      "javascript:alert(1)",
      "evil.example",
      " /tokens",
      "/tokens\u0000",
      "/\u00a0/evil.example",
      "",
      null,
    ]) {
      expect(safeNext(next, origin)).toBe("/");
    }
  });

  test.if(haveChromium)("the sign-in page, given next=%2F%09%2Fevil.example, lands on this server's home page", async () => {
    const dash = await startDashboard();
    try {
      const { context, page } = await dash.newPage({ signedIn: false });
      await page.goto(`${dash.s.url}/login?next=%2F%09%2Fevil.example`);
      await page.getByLabel("Email", { exact: true }).fill(ADMIN_EMAIL);
      await page.getByLabel("Access token", { exact: true }).fill(ADMIN_TOKEN);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.waitForURL((u) => !u.pathname.startsWith("/login"));
      expect(page.url()).toBe(`${dash.s.url}/`);
      await context.close();
    } finally {
      await dash.stop();
    }
  }, 60_000);

  test("the sign-in page is where a missing session is sent, with the page asked for in next=", async () => {
    const res = await fetch(`${s.url}/tokens?x=1`, { redirect: "manual" });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("/login?next=%2Ftokens%3Fx%3D1");
  });
});

describe("--metrics-token", () => {
  test("without it /metrics is open", async () => {
    expect((await fetch(`${s.url}/metrics`)).status).toBe(200);
  });

  test("with it /metrics needs 'Authorization: Bearer <token>': missing or wrong → 401", async () => {
    const token = "metrics-secret-0123456789";
    const m = await startSluice({ args: ["--metrics-token", token] });
    try {
      const get = (headers: Record<string, string> = {}) => fetch(`${m.url}/metrics`, { headers });
      const missing = await get();
      expect(missing.status).toBe(401);
      expect(((await missing.json()) as any).message).toContain("Bearer");
      expect((await get({ authorization: bearer("metrics-secret-012345678") })).status).toBe(401);
      expect((await get({ authorization: bearer(ADMIN_TOKEN) })).status).toBe(401);
      expect((await get({ authorization: basic(token) })).status).toBe(401);
      const ok = await get({ authorization: bearer(token) });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain("sluice_http_requests_total");
    } finally {
      await m.stop();
      await cleanup(m.dataDir);
    }
  });
});
