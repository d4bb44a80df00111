/**
 * Screenshots of the dashboard's main pages for docs/dashboard.md (docs/screenshots/*.png), taken with
 * Debian's Chromium (CHROMIUM_PATH) at 1280×800 from a real Sluice with a little seeded data:
 * `npm run screenshots`, or `npm run screenshots -- live webhook-source` for only those pictures.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildDashboard } from "./build-dashboard";
import { launchChromium } from "./lib/chromium";

const ROOT = join(import.meta.dir, "..");
const OUT = join(ROOT, "docs/screenshots");
const EMAIL = "admin@example.com";
const TOKEN = "screenshot-admin-token-0123456789";
/** The pictures named on the command line (by file name, without .png); none named: all of them. */
const only = new Set(process.argv.slice(2));
const wanted = (name: string) => only.size === 0 || only.has(name);

async function waitFor<T>(check: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

const temp = (prefix: string) => mkdtempSync(join(tmpdir(), prefix));
const dashboardDir = temp("sluice-shots-ui-");
const dataDir = temp("sluice-shots-data-");
await buildDashboard(dashboardDir);

// A receiver standing in for the destinations: one request in five fails, so the stats show both.
let n = 0;
const sink = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok", { status: n++ % 5 === 4 ? 500 : 200 }) });
const proc = Bun.spawn([process.execPath, join(ROOT, "src/main.ts"), "serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", dataDir, "--dashboard-dir", dashboardDir, "--catalog-flush-seconds", "1"], {
  env: { ...process.env, SLUICE_ADMIN_EMAIL: EMAIL, SLUICE_ADMIN_TOKEN: TOKEN, LOG_LEVEL: "info", SLUICE_ALLOW_DESTINATION_HOSTS: "127.0.0.0/8,::1" },
  stdout: "pipe",
  stderr: "pipe",
});
let out = "";
void (async () => {
  for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) out += new TextDecoder().decode(chunk);
})();
const url = await waitFor(() => /"(?:url|dataPlane)":"http:\/\/[^:]+:(\d+)"/.exec(out)?.[1], "sluice to listen").then((port) => `http://127.0.0.1:${port}`);

const call = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(url + path, { method, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
};

try {
  const web = await call("POST", "/v2/sources", { name: "web" });
  await call("POST", "/v2/sources", { name: "ios-app" });
  const hook = await call("POST", "/v2/destinations", { name: "orders webhook", type: "WEBHOOK", config: { webhookUrl: `http://127.0.0.1:${sink.port}/hook` }, sourceIds: [web.id] });
  const trf = await call("POST", "/v2/transformations", {
    name: "drop test users",
    code: 'export function transformEvent(event) {\n  if (event.userId?.startsWith("test-")) return null;\n  log("kept", event.event);\n  return { ...event, properties: { ...event.properties, enriched: true } };\n}\n',
    destinationIds: [hook.id],
  });
  // A webhook source (Shopify) that has had one order posted to its URL.
  const shop = await call("POST", "/v2/sources", { name: "shop", type: "Shopify" });
  await call("POST", "/v2/connections", { sourceId: shop.id, destinationId: hook.id });
  const shopify = ((await call("GET", "/source-types")) as Array<{ name: string; sample: { body: unknown } }>).find((t) => t.name === "Shopify")!;
  const posted = await fetch(`${url}/v1/webhook?writeKey=${encodeURIComponent(shop.writeKey)}&topic=orders_create`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(shopify.sample.body) });
  if (!posted.ok) throw new Error(`POST /v1/webhook: ${posted.status} ${await posted.text()}`);
  // Each event name with properties of its own, for the event catalog; one order's total came as text (a type change).
  const properties = (i: number): Record<string, unknown> => {
    if (i % 3 === 0) return { sku: `SKU-${i}`, price: 10 + i, category: i % 2 ? "shoes" : "bags" };
    if (i % 3 === 1) return { orderId: `order-${i}`, total: i === 13 ? "49.90" : 20 + i + 0.5, currency: "EUR", products: [{ sku: `SKU-${i}`, quantity: 1 + (i % 2) }] };
    return { plan: i % 2 ? "pro" : "free", trial: i % 4 === 2 };
  };
  const send = (call: string, body: Record<string, unknown>) =>
    fetch(`${url}/v1/${call}`, { method: "POST", headers: { authorization: `Basic ${btoa(`${web.writeKey}:`)}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  for (let i = 0; i < 40; i++) await send("track", { userId: `user-${i % 7}`, event: ["Product Viewed", "Order Completed", "Signed Up"][i % 3], properties: properties(i) });
  for (let i = 0; i < 3; i++) await send("identify", { userId: `user-${i}`, traits: { email: `user-${i}@example.com`, plan: "pro" } });
  for (let i = 0; i < 4; i++) await send("page", { userId: `user-${i}`, name: "Pricing", properties: { path: "/pricing", referrer: i % 2 ? "https://www.example.com/" : null } });
  const browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "light" });
  const page = await context.newPage();
  await page.goto(`${url}/login`);
  if (wanted("login")) await page.screenshot({ path: join(OUT, "login.png") });
  await page.getByLabel("Email", { exact: true }).fill(EMAIL);
  await page.getByLabel("Access token", { exact: true }).fill(TOKEN);
  await page.getByLabel("Access token", { exact: true }).press("Enter");
  await page.waitForURL(`${url}/`);
  const shots: Array<[string, string]> = [
    ["overview", "/"],
    ["sources", `/sources/${web.id}`],
    ["destinations", `/destinations/${hook.id}`],
    ["transformations", `/transformations/${trf.id}`],
    ["live", `/live?source=${web.id}`],
    ["tokens", "/tokens"],
  ];
  for (const [name, path] of shots) {
    if (!wanted(name)) continue;
    // Time until the page has drawn its data and the network is quiet: what "usable" means here.
    const started = performance.now();
    await page.goto(url + path, { waitUntil: "networkidle" });
    const readyMs = Math.round(performance.now() - started);
    if (name === "live") {
      // Live events shows what arrives while the page is open.
      for (let i = 0; i < 12; i++) {
        await fetch(`${url}/v1/track`, {
          method: "POST",
          headers: { authorization: `Basic ${btoa(`${web.writeKey}:`)}`, "content-type": "application/json" },
          body: JSON.stringify({ userId: `user-${i}`, event: "Product Viewed", properties: { sku: `SKU-${i}` } }),
        });
      }
      await page.getByText("Product Viewed").first().waitFor();
    }
    await page.screenshot({ path: join(OUT, `${name}.png`) });
    console.log(`docs/screenshots/${name}.png  (${path} ready in ${readyMs} ms)`);
  }
  if (wanted("webhook-source")) {
    // A webhook source: its URL and setup, then "Try a sample" (the request beside the events it became).
    const started = performance.now();
    await page.goto(`${url}/sources/${shop.id}`, { waitUntil: "networkidle" });
    const readyMs = Math.round(performance.now() - started);
    await page.getByRole("button", { name: "Try a sample" }).click();
    await page.getByTestId("sample-events").waitFor();
    await page.screenshot({ path: join(OUT, "webhook-source.png"), fullPage: true });
    console.log(`docs/screenshots/webhook-source.png  (/sources/${shop.id} ready in ${readyMs} ms, then Try a sample)`);
  }
  if (wanted("events") || wanted("tracking-plans")) {
    // The catalog saves its counts every second here: wait for all 47 events.
    await waitFor(async () => {
      const c = (await call("GET", `/v2/catalog/events?sourceId=${web.id}`)) as { events: Array<{ count: number }> };
      return c.events.reduce((n, m) => n + m.count, 0) >= 47 || undefined;
    }, "the event catalog to count the seeded events");
  }
  if (wanted("events")) {
    // The event catalog with one model open: its properties (total changed type), its days and its draft schema.
    const path = `/events?source=${web.id}&model=track&event=${encodeURIComponent("Order Completed")}`;
    const started = performance.now();
    await page.goto(url + path, { waitUntil: "networkidle" });
    await page.getByTestId("json-schema").waitFor();
    const readyMs = Math.round(performance.now() - started);
    await page.screenshot({ path: join(OUT, "events.png"), fullPage: true });
    console.log(`docs/screenshots/events.png  (${path} ready in ${readyMs} ms)`);
  }
  if (wanted("tracking-plans")) {
    // A plan checked against the web source's traffic, dropping unplanned events and other violations.
    const plan = await call("POST", "/v2/tracking-plans", {
      name: "Web tracking plan",
      version: 1,
      events: [
        {
          name: "Order Completed",
          eventType: "track",
          description: "A checkout went through",
          rules: { type: "object", properties: { properties: { type: "object", properties: { orderId: { type: "string" }, total: { type: "number" }, currency: { type: "string" } }, required: ["orderId", "total"] } } },
        },
        { name: "Product Viewed", eventType: "track", description: "", rules: { type: "object", properties: { properties: { type: "object", properties: { sku: { type: "string" } }, required: ["sku"] } } } },
        { name: "", eventType: "identify", description: "", rules: { type: "object", properties: { traits: { type: "object", properties: { email: { type: "string", format: "email" } }, required: ["email"] } } } },
      ],
    });
    const path = `/tracking-plans/${plan.id}?source=${web.id}`;
    const started = performance.now();
    await page.goto(url + path, { waitUntil: "networkidle" });
    const readyMs = Math.round(performance.now() - started);
    await page.getByLabel("Unplanned events", { exact: true }).selectOption("false");
    await page.getByLabel("Other violations", { exact: true }).selectOption("drop");
    await page.getByRole("button", { name: "Check against traffic" }).click();
    await page.getByTestId("preview").waitFor();
    await page.screenshot({ path: join(OUT, "tracking-plans.png"), fullPage: true });
    console.log(`docs/screenshots/tracking-plans.png  (${path} ready in ${readyMs} ms, then Check against traffic)`);
  }
  if (wanted("import-check")) {
    // Import check: what a RudderStack workspace file would do here (the import test's fixture).
    await page.goto(`${url}/import-check`, { waitUntil: "networkidle" });
    await page.locator("#imp-text").fill(await Bun.file(join(ROOT, "test/fixtures/rudderstack/import.json")).text());
    await page.locator("form.imp-form button[type=submit]").click();
    await page.getByText("Amazon S3").or(page.getByText("Held").first()).first().waitFor();
    await page.screenshot({ path: join(OUT, "import-check.png"), fullPage: true });
    console.log("docs/screenshots/import-check.png");
  }
  await browser.close();
} finally {
  proc.kill();
  sink.stop(true);
  rmSync(dashboardDir, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
}
