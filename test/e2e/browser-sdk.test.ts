/**
 * RudderStack's browser SDK (@rudderstack/analytics-js v3, its bundled build) running in
 * headless Chromium on a page of another origin, against Sluice alone: it fetches
 * /sourceConfig, then sends its calls per event (XHR, with CORS preflight) and, with
 * useBeacon, as /beacon/v1/batch. Needs Chromium (`apt-get install chromium`, which CI
 * does); without it the test is skipped and says so, unless SLUICE_REQUIRE_BROWSER is set.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { type TestServer, cleanup, createSource, haveChromium, launchChromium, requireChromium, startSluice, storedEvents, waitFor } from "../support/helpers";

requireChromium("browser-sdk.test.ts");

const SDK = join(import.meta.dir, "../..", "node_modules", "@rudderstack", "analytics-js", "dist", "npm", "modern", "bundled", "esm", "index.mjs");

const PAGE = `<!doctype html><html><head><title>shop</title></head><body><script type="module">
import { RudderAnalytics } from "/rsa.mjs";
const q = new URLSearchParams(location.search);
const analytics = new RudderAnalytics();
window.errors = [];
analytics.load(q.get("wk"), q.get("dp"), {
  configUrl: q.get("dp"),
  useBeacon: q.get("beacon") === "1",
  // The beacon queue otherwise waits 10 minutes (or the page's unload) before it sends.
  beaconQueueOptions: { flushQueueInterval: 200 },
  polyfillIfRequired: false,
  logLevel: "ERROR",
  onLoaded: () => { window.loaded = true; },
});
analytics.ready(() => {
  analytics.identify("browser-user-" + q.get("tag"), { email: "ada@example.com" });
  analytics.track("Browser Event " + q.get("tag"), { price: 9.5 });
  analytics.page("Docs", "Home " + q.get("tag"));
  window.sent = true;
});
</script></body></html>`;

let s: TestServer;
let site: ReturnType<typeof Bun.serve>;
let browser: import("playwright-core").Browser | undefined;
let writeKey: string;

beforeAll(async () => {
  if (!haveChromium) return;
  s = await startSluice();
  writeKey = (await createSource(s.url)).writeKey;
  // The shop's own origin, so every call from the page is cross-origin like on a real site.
  site = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/rsa.mjs") return new Response(Bun.file(SDK), { headers: { "content-type": "text/javascript" } });
      return new Response(PAGE, { headers: { "content-type": "text/html" } });
    },
  });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  if (!haveChromium) return;
  await browser?.close();
  site?.stop(true);
  await s.stop();
  cleanup(s.dataDir);
});

async function runPage(tag: string, beacon: boolean) {
  const page = await browser!.newPage();
  const failures: string[] = [];
  page.on("requestfailed", (r) => failures.push(`${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
  page.on("pageerror", (e) => failures.push(`page error: ${e.message}`));
  page.on("console", (m) => failures.push(`console ${m.type()}: ${m.text()}`));
  page.on("response", (r) => failures.push(`${r.request().method()} ${r.url()} → ${r.status()}`));
  const url = `http://127.0.0.1:${site.port}/?wk=${writeKey}&dp=${encodeURIComponent(s.url)}&tag=${tag}&beacon=${beacon ? 1 : 0}`;
  await page.goto(url);
  await page.waitForFunction(() => (globalThis as any).sent === true, undefined, { timeout: 20_000 }).catch((e) => {
    throw new Error(`${e.message}\n${failures.join("\n")}`);
  });
  const ofThisRun = () => storedEvents(s).filter((e) => e.userId === `browser-user-${tag}`);
  await waitFor(() => ofThisRun().length >= 3, { what: `3 events from the browser SDK (${tag}); failed requests: ${failures.join("; ")}`, timeoutMs: 20_000 });
  await page.close();
  return { events: ofThisRun(), failures };
}

test.skipIf(!haveChromium)("the browser SDK starts from Sluice's sourceConfig and its identify, track and page arrive, with CORS", async () => {
  const { events } = await runPage("xhr", false);
  const byType = Object.fromEntries(events.map((e) => [e.type, e]));
  expect(Object.keys(byType).sort()).toEqual(["identify", "page", "track"]);
  expect(byType.identify.userId).toBe("browser-user-xhr");
  expect(byType.track.event).toBe("Browser Event xhr");
  expect(byType.track.properties.price).toBe(9.5);
  expect(byType.page.name).toBe("Home xhr");
  // The SDK's own context and an anonymousId kept across calls.
  expect(byType.track.context.library.name).toContain("RudderLabs JavaScript SDK");
  expect(byType.track.anonymousId).toBeTruthy();
  expect(byType.page.anonymousId).toBe(byType.track.anonymousId);
  expect(byType.track.userId).toBe("browser-user-xhr");
  expect(byType.track.context.ip).toBe("127.0.0.1");
}, 60_000);

const beaconCalls = async () => {
  const text = await (await fetch(`${s.url}/metrics`)).text();
  return [...text.matchAll(/sluice_http_requests_total\{[^}]*route="\/beacon\/v1\/batch"[^}]*status="200"[^}]*\} (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
};

test.skipIf(!haveChromium)("with useBeacon the SDK's calls arrive through /beacon/v1/batch", async () => {
  const before = await beaconCalls();
  const { events } = await runPage("beacon", true);
  // The call is counted after its commit, which the events read above may see first.
  await waitFor(async () => (await beaconCalls()) > before, { what: "a 200 counted on /beacon/v1/batch" });
  expect(events.map((e) => e.type).sort()).toEqual(["identify", "page", "track"]);
  expect(events.find((e) => e.type === "track")!.event).toBe("Browser Event beacon");
}, 60_000);
