/**
 * The dashboard's server side without a browser: sign-in sessions, the session cookie as a third
 * way to call the API (with its Origin check), the tokens API, and the pages' headers and assets.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Dashboard, startDashboard } from "../support/dashboard-harness";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, api, cleanup, startSluice, waitFor } from "../support/helpers";

let dash: Dashboard;
let s: TestServer;

beforeAll(async () => {
  // The pages are built (into a folder of this file's own), no browser is needed.
  dash = await startDashboard({ browser: false, build: true });
  s = dash.s;
});
afterAll(() => dash?.stop());

async function signIn(server: TestServer, email = ADMIN_EMAIL, token = ADMIN_TOKEN) {
  const res = await fetch(`${server.url}/v2/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email, token }) });
  const setCookie = res.headers.get("set-cookie") ?? "";
  return { res, setCookie, cookie: setCookie.split(";")[0]!, json: (await res.json()) as any };
}

/** A request the way the dashboard's pages make it: the cookie, and Origin on changes. */
function withCookie(server: TestServer, cookie: string, method: string, path: string, body?: unknown, origin: string | null = server.url) {
  const headers: Record<string, string> = { cookie };
  if (origin) headers.origin = origin;
  if (body !== undefined) headers["content-type"] = "application/json";
  return fetch(server.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

describe("sessions", () => {
  test("signing in sets an HttpOnly, SameSite=Strict cookie that expires; the token is not in it", async () => {
    const { res, setCookie, json } = await signIn(s);
    expect(res.status).toBe(200);
    expect(json.email).toBe(ADMIN_EMAIL);
    expect(Date.parse(json.expiresAt) - Date.now()).toBeGreaterThan(11.9 * 3600_000);
    expect(setCookie).toMatch(/^sluice_session=[A-Za-z0-9_-]{40,}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/);
    expect(setCookie).not.toContain(ADMIN_TOKEN);
  });

  test("a wrong pair answers 401 without saying which part was wrong; a malformed body names the field", async () => {
    for (const [email, token] of [
      [ADMIN_EMAIL, "not-the-token-0123456789"],
      ["someone@example.com", ADMIN_TOKEN],
    ]) {
      const { res, setCookie, json } = await signIn(s, email, token);
      expect(res.status).toBe(401);
      expect(json.message).toBe("wrong e-mail or access token");
      expect(setCookie).toBe("");
    }
    const bad = await fetch(`${s.url}/v2/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: ADMIN_EMAIL }) });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).message).toContain("token");
  });

  test("the cookie authenticates API calls; changes need the server's own Origin", async () => {
    const { cookie } = await signIn(s);
    const me = await withCookie(s, cookie, "GET", "/v2/session");
    expect(me.status).toBe(200);
    const who = (await me.json()) as any;
    expect(who.email).toBe(ADMIN_EMAIL);
    // The session's own expiry, not the time of the call.
    expect(Date.parse(who.expiresAt) - Date.now()).toBeGreaterThan(11.9 * 3600_000);
    expect((await withCookie(s, cookie, "GET", "/v2/sources", undefined, null)).status).toBe(200);

    const created = await withCookie(s, cookie, "POST", "/v2/sources", { name: "from-dashboard" });
    expect(created.status).toBe(201);
    const noOrigin = await withCookie(s, cookie, "POST", "/v2/sources", { name: "no-origin" }, null);
    expect(noOrigin.status).toBe(403);
    expect(((await noOrigin.json()) as any).message).toContain("Origin");
    const foreign = await withCookie(s, cookie, "POST", "/v2/sources", { name: "foreign" }, "https://evil.example");
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as any).message).toBe("Origin 'https://evil.example' is not this server: the request was refused");
    const names = (await api(s.url, "GET", "/v2/sources")).json.sources.map((x: any) => x.name);
    expect(names).toContain("from-dashboard");
    expect(names).not.toContain("no-origin");
    expect(names).not.toContain("foreign");

    // The Test API takes the cookie too, beside its HTTP Basic.
    const testApi = await withCookie(s, cookie, "POST", `/v2/testDestination/nope`, { message: { type: "track", event: "x", userId: "u" } });
    expect(testApi.status).toBe(404);
  });

  test("signing out ends the session on the server: the old cookie stops working", async () => {
    const { cookie } = await signIn(s);
    const out = await withCookie(s, cookie, "DELETE", "/v2/session");
    expect(out.status).toBe(204);
    expect(out.headers.get("set-cookie")).toContain("Max-Age=0");
    const after = await withCookie(s, cookie, "GET", "/v2/sources");
    expect(after.status).toBe(401);
    expect(((await after.json()) as any).message).toBe("the dashboard session has expired or was ended: sign in again");
  });

  test("a session expires after --session-hours", async () => {
    const short = await startSluice({ args: ["--session-hours", "0.0005", "--dashboard-dir", dash.dashboardDir!] });
    try {
      const { cookie, json } = await signIn(short);
      expect(Date.parse(json.expiresAt) - Date.now()).toBeLessThan(2000);
      expect((await withCookie(short, cookie, "GET", "/v2/session")).status).toBe(200);
      await waitFor(async () => (await withCookie(short, cookie, "GET", "/v2/session")).status === 401, { what: "the session to expire" });
      const page = await fetch(`${short.url}/tokens`, { headers: { cookie }, redirect: "manual" });
      expect(page.status).toBe(302);
    } finally {
      await short.stop();
      cleanup(short.dataDir);
    }
  });
});

describe("tokens API", () => {
  test("generate (secret shown once), use, list with last use, revoke: the token and its sessions stop working", async () => {
    const created = await api(s.url, "POST", "/v2/tokens", { name: "ci deploys" });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ name: "ci deploys", lastUsedAt: null });
    const secret: string = created.json.token;
    expect(secret).toMatch(/^sluice_/);

    expect((await api(s.url, "GET", "/v2/sources", undefined, secret)).status).toBe(200);
    const listed = (await api(s.url, "GET", "/v2/tokens")).json.tokens;
    const row = listed.find((t: any) => t.id === created.json.id);
    expect(row.name).toBe("ci deploys");
    expect(Date.parse(row.lastUsedAt)).toBeGreaterThan(Date.now() - 60_000);
    expect(JSON.stringify(listed)).not.toContain(secret);

    const { cookie } = await signIn(s, ADMIN_EMAIL, secret);
    expect((await withCookie(s, cookie, "GET", "/v2/session")).status).toBe(200);
    expect((await api(s.url, "DELETE", `/v2/tokens/${created.json.id}`)).status).toBe(204);
    expect((await api(s.url, "GET", "/v2/sources", undefined, secret)).status).toBe(401);
    expect((await withCookie(s, cookie, "GET", "/v2/session")).status).toBe(401);
    expect((await api(s.url, "DELETE", `/v2/tokens/${created.json.id}`)).status).toBe(404);
  });

  test("bad input names the field; no credentials → 401", async () => {
    const noName = await api(s.url, "POST", "/v2/tokens", {});
    expect(noName.status).toBe(400);
    expect(noName.json.message).toContain("name");
    const extra = await api(s.url, "POST", "/v2/tokens", { name: "x", token: "chosen" });
    expect(extra.status).toBe(400);
    expect((await fetch(`${s.url}/v2/tokens`)).status).toBe(401);
  });

  test("the OpenAPI document describes the tokens and session routes", async () => {
    const doc = (await (await fetch(`${s.url}/openapi/json`)).json()) as any;
    for (const path of ["/v2/tokens", "/v2/tokens/{id}", "/v2/session"]) expect(Object.keys(doc.paths)).toContain(path);
    expect(doc.paths["/v2/tokens"].post.summary).toContain("Generate");
  });
});

describe("pages and assets", () => {
  test("a page without a session leads to /login, remembering the page; with one it is the app, with a strict CSP", async () => {
    const anon = await fetch(`${s.url}/tokens?x=1`, { redirect: "manual" });
    expect(anon.status).toBe(302);
    expect(anon.headers.get("location")).toBe("/login?next=%2Ftokens%3Fx%3D1");
    const login = await fetch(`${s.url}/login`);
    expect(login.status).toBe(200);
    const csp = login.headers.get("content-security-policy")!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain("unsafe");
    expect(login.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await login.text();
    expect(html).toContain('<div id="app"></div>');
    expect(html).not.toMatch(/<script>(?!<\/script>)|<style>/);

    const { cookie } = await signIn(s);
    const page = await fetch(`${s.url}/tokens`, { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(await page.text()).toBe(html);
    // Paths that are no page keep the API's JSON 404.
    expect((await fetch(`${s.url}/nope`, { headers: { cookie } })).status).toBe(404);
  });

  test("assets: compressed as accepted, cached for a year; unknown or escaping paths → 404", async () => {
    const script = dash.files.find((f) => f.endsWith(".js"))!;
    const br = await fetch(`${s.url}/${script}`, { headers: { "accept-encoding": "br" }, decompress: false } as RequestInit);
    expect(br.status).toBe(200);
    expect(br.headers.get("content-encoding")).toBe("br");
    expect(br.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(br.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    const plain = await fetch(`${s.url}/${script}`, { headers: { "accept-encoding": "identity" } });
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect((await plain.text()).length).toBeGreaterThan(1000);
    expect((await fetch(`${s.url}/assets/nope.js`)).status).toBe(404);
    expect((await fetch(`${s.url}/assets/..%2f..%2fpackage.json`)).status).toBe(404);
  });

  test("the first load of /login transfers under 300 KB compressed", async () => {
    // Everything the page itself names (scripts and stylesheets); pages' code loads on demand later.
    const html = await (await fetch(`${s.url}/login`)).text();
    const named = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(named.some((p) => p.endsWith(".js"))).toBe(true);
    let total = 0;
    for (const path of ["/login", ...named]) {
      const res = await fetch(s.url + path, { headers: { "accept-encoding": "br" }, decompress: false } as RequestInit);
      expect(res.status).toBe(200);
      total += (await res.arrayBuffer()).byteLength;
    }
    expect(total).toBeLessThan(300 * 1024);
  });
});

test("the icon is served at /favicon.svg and /favicon.ico without sign-in, and the pages link it", async () => {
  for (const path of ["/favicon.svg", "/favicon.ico"]) {
    const res = await fetch(s.url + path);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/svg+xml");
    expect(await res.text()).toStartWith("<svg");
  }
  const login = await (await fetch(`${s.url}/login`)).text();
  expect(login).toContain('<link rel="icon" type="image/svg+xml" href="/favicon.svg">');
});
