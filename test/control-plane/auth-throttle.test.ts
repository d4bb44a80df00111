/**
 * Guessing is slowed: after 10 failed sign-ins or token checks from one address within a
 * minute, its further failures are 429 with Retry-After, while a correct credential still gets
 * through. Counted per socket address (X-Forwarded-For only with --trust-proxy), in a table of
 * bounded size.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { AuthThrottle, throttleKey } from "../../src/control-plane/auth-throttle";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, basic, bearer, cleanup, startSluice } from "../support/helpers";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    await s.stop();
    await cleanup(s.dataDir);
  }
});

async function server(args: string[] = []) {
  const s = await startSluice({ args });
  servers.push(s);
  return s;
}

const signIn = (url: string, token: string, headers: Record<string, string> = {}) =>
  fetch(`${url}/v2/session`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({ email: ADMIN_EMAIL, token }) });
const sources = (url: string, authorization: string, headers: Record<string, string> = {}) => fetch(`${url}/v2/sources`, { headers: { authorization, ...headers } });
const WRONG = "not-the-admin-token-0123456789";

describe("over HTTP", () => {
  test("10 wrong sign-ins → 401 each; the 11th → 429 with Retry-After; the right token still signs in", async () => {
    const s = await server();
    for (let i = 0; i < 10; i++) expect((await signIn(s.url, WRONG)).status).toBe(401);
    const limited = await signIn(s.url, WRONG);
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(((await limited.json()) as any).message).toContain("too many failed");
    const ok = await signIn(s.url, ADMIN_TOKEN);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("set-cookie")).toContain("sluice_session=");
  });

  test("wrong Bearer and Basic tokens count alike, on the API and the Test API; a right token is served while limited", async () => {
    const s = await server();
    for (let i = 0; i < 5; i++) expect((await sources(s.url, bearer(WRONG))).status).toBe(401);
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${s.url}/v0/testSource/src_x`, { method: "POST", headers: { authorization: basic(ADMIN_EMAIL, WRONG), "content-type": "application/json" }, body: "{}" });
      expect(res.status).toBe(401);
    }
    const limited = await sources(s.url, basic(ADMIN_EMAIL, WRONG));
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);
    // A wrong sign-in from the same address is limited too: one count per address.
    expect((await signIn(s.url, WRONG)).status).toBe(429);
    expect((await sources(s.url, bearer())).status).toBe(200);
    expect((await sources(s.url, basic(ADMIN_EMAIL, ADMIN_TOKEN))).status).toBe(200);
  });

  test("requests without credentials are not guesses: never counted", async () => {
    const s = await server();
    for (let i = 0; i < 15; i++) expect((await fetch(`${s.url}/v2/sources`)).status).toBe(401);
    expect((await sources(s.url, bearer(WRONG))).status).toBe(401);
  });

  test("X-Forwarded-For is ignored without --trust-proxy: a client cannot dodge the limit by sending one", async () => {
    const s = await server();
    for (let i = 0; i < 10; i++) await sources(s.url, bearer(WRONG), { "x-forwarded-for": `198.51.100.${i}` });
    expect((await sources(s.url, bearer(WRONG), { "x-forwarded-for": "198.51.100.200" })).status).toBe(429);
  });

  test("with --trust-proxy the address the proxy appended to X-Forwarded-For is the client", async () => {
    const s = await server(["--trust-proxy"]);
    // What the client claimed comes first; the proxy appends the address it saw.
    const from = (ip: string) => ({ "x-forwarded-for": `203.0.113.77, ${ip}` });
    for (let i = 0; i < 10; i++) expect((await sources(s.url, bearer(WRONG), from("198.51.100.1"))).status).toBe(401);
    expect((await sources(s.url, bearer(WRONG), from("198.51.100.1"))).status).toBe(429);
    expect((await sources(s.url, bearer(WRONG), from("198.51.100.2"))).status).toBe(401);
  });
});

describe("the limiter", () => {
  test("a window of a minute: after it passes, failures are 401 again", () => {
    let now = 0;
    const t = new AuthThrottle(() => now);
    for (let i = 0; i < 10; i++) expect(t.failure("192.0.2.1", "wrong").status).toBe(401);
    const limited = t.failure("192.0.2.1", "wrong");
    expect(limited.status).toBe(429);
    expect(limited.retryAfterSeconds).toBe(60);
    now = 45_000;
    expect(t.failure("192.0.2.1", "wrong").retryAfterSeconds).toBe(15);
    now = 60_000;
    expect(t.failure("192.0.2.1", "wrong").status).toBe(401);
  });

  test("remembers at most maxClients addresses", () => {
    const t = new AuthThrottle(() => 0, undefined, { limit: 10, windowMs: 60_000, maxClients: 1000 });
    for (let i = 0; i < 5000; i++) t.failure(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, "wrong");
    expect(t.size).toBe(1000);
  });

  test("an unknown address (no socket) is not counted", () => {
    const t = new AuthThrottle(() => 0);
    for (let i = 0; i < 20; i++) expect(t.failure(undefined, "wrong").status).toBe(401);
    expect(t.size).toBe(0);
  });

  test("IPv6 addresses count per /64; IPv4-mapped ones as their IPv4 address", () => {
    expect(throttleKey("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(throttleKey("2001:db8:1:2:bbbb:cccc:dddd:eeee")).toBe("2001:db8:1:2::/64");
    expect(throttleKey("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(throttleKey("::1")).toBe("0:0:0:0::/64");
    expect(throttleKey("::ffff:192.0.2.7")).toBe("192.0.2.7");
    expect(throttleKey("192.0.2.7")).toBe("192.0.2.7");
    const t = new AuthThrottle(() => 0);
    for (let i = 0; i < 10; i++) t.failure(`2001:db8:1:2::${i.toString(16)}`, "wrong");
    expect(t.failure("2001:db8:1:2:ffff::9", "wrong").status).toBe(429);
    expect(t.failure("2001:db8:1:3::1", "wrong").status).toBe(401);
  });
});
