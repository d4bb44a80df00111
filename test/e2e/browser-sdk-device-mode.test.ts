/**
 * Device mode with RudderStack's real browser SDK (@rudderstack/analytics-js v3, bundled build)
 * in headless Chromium: started against Sluice with an imported RudderStack workspace, the SDK
 * reads /sourceConfig and loads the integration of each device-mode and hybrid destination from
 * its `destSDKBaseURL`, here a server of the test that hands out stub integrations. Needs
 * Chromium (see browser-sdk.test.ts).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type TestServer, cleanup, haveChromium, launchChromium, requireChromium, startSluice, tempDir } from "../support/helpers";

requireChromium("browser-sdk-device-mode.test.ts");

const SDK = join(import.meta.dir, "../..", "node_modules", "@rudderstack", "analytics-js", "dist", "npm", "modern", "bundled", "esm", "index.mjs");
const FIXTURE = join(import.meta.dir, "../fixtures", "rudderstack", "import.json");
const WEB_KEY = "shop-web-write-key-0001";

const PAGE = `<!doctype html><html><head><title>shop</title></head><body><script type="module">
import { RudderAnalytics } from "/rsa.mjs";
const q = new URLSearchParams(location.search);
const analytics = new RudderAnalytics();
analytics.load(q.get("wk"), q.get("dp"), {
  configUrl: q.get("dp"),
  destSDKBaseURL: q.get("intg"),
  polyfillIfRequired: false,
  logLevel: "ERROR",
});
analytics.ready(() => { window.ready = true; });
</script></body></html>`;

/**
 * What an integration file does for the SDK: define `<Name>_RS.<Name>`, a class it constructs
 * with the destination's config. This stub records the config it was given.
 */
const stubIntegration = (name: string) => `window.${name}_RS = { ${name}: class {
  constructor(config) { (window.constructed = window.constructed || {})[${JSON.stringify(name)}] = config; }
  init() {}
  isLoaded() { return true; }
  isReady() { return true; }
  track() {} page() {} identify() {}
} };`;

let s: TestServer;
let dir: string;
let site: ReturnType<typeof Bun.serve>;
let integrations: ReturnType<typeof Bun.serve>;
const requested: string[] = [];
let browser: import("playwright-core").Browser | undefined;

beforeAll(async () => {
  if (!haveChromium) return;
  dir = tempDir();
  const file = join(dir, "workspaceConfig.json");
  writeFileSync(file, readFileSync(FIXTURE));
  s = await startSluice({ dataDir: dir, args: ["--config", file] });
  site = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/rsa.mjs") return new Response(Bun.file(SDK), { headers: { "content-type": "text/javascript" } });
      return new Response(PAGE, { headers: { "content-type": "text/html" } });
    },
  });
  // The SDK's integrations CDN, standing in for cdn.rudderlabs.com.
  integrations = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      const path = new URL(req.url).pathname;
      requested.push(path);
      const m = /^\/integrations\/(\w+)\.min\.js$/.exec(path);
      if (!m) return new Response("not found", { status: 404 });
      return new Response(stubIntegration(m[1]!), { headers: { "content-type": "text/javascript" } });
    },
  });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  if (!haveChromium) return;
  await browser?.close();
  site?.stop(true);
  integrations?.stop(true);
  await s.stop();
  await cleanup(dir);
});

test.skipIf(!haveChromium)("the SDK loads the integrations of the device-mode and hybrid destinations /sourceConfig lists, with their browser config; no others", async () => {
  const page = await browser!.newPage();
  const notes: string[] = [];
  page.on("pageerror", (e) => notes.push(`page error: ${e.message}`));
  page.on("console", (m) => notes.push(`console ${m.type()}: ${m.text()}`));
  const intg = `http://127.0.0.1:${integrations.port}/integrations`;
  await page.goto(`http://127.0.0.1:${site.port}/?wk=${WEB_KEY}&dp=${encodeURIComponent(s.url)}&intg=${encodeURIComponent(intg)}`);
  const constructed = await page
    .waitForFunction(() => {
      const c = (globalThis as any).constructed;
      return c && c.Amplitude && c.Braze ? c : undefined;
    }, undefined, { timeout: 20_000 })
    .then((h) => h.jsonValue())
    .catch((e) => {
      throw new Error(`${e.message}\nintegrations requested: ${requested.join(", ")}\n${notes.join("\n")}`);
    });
  expect(requested.sort()).toEqual(["/integrations/Amplitude.min.js", "/integrations/Braze.min.js"]);
  // The config the integration is built with: what a browser may see, never the server's secrets.
  expect(constructed.Amplitude).toEqual({ apiKey: "amplitude-public-key-0001", trackAllPages: true, trackNamedPages: true, residencyServer: "standard", connectionMode: "device" });
  expect(constructed.Braze.restApiKey).toBeUndefined();
  expect(constructed.Braze.appKey).toBe("braze-app-key-0001");
  await page.close();
}, 60_000);
