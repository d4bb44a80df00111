/**
 * The sources pages in headless Chromium against an in-process Sluice: the list (empty state,
 * create, filter in the URL), one source (write key and its copy button, rename, disable and
 * enable, lenient validation, connected destinations, delete with confirmation), and its three
 * snippets run as they are — curl in a shell, the Node SDK under Node, the browser SDK on a page
 * of another origin — each event reaching a real webhook sink. Needs Chromium (as
 * dashboard-browser.test.ts); without it the test is skipped and says so.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { createSluice } from "../../src/app";
import { silentLogger } from "../../src/lib/logger";
import { parseSettings } from "../../src/settings";
import { type Dashboard, startDashboard } from "../support/dashboard-harness";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, api, cleanup, createSource, haveChromium, requireChromium, sendEvent, startSink, storedEvents, tempDir, waitFor } from "../support/helpers";

requireChromium("dashboard-sources.test.ts");

const ROOT = join(import.meta.dir, "../..");
const SDK = join(ROOT, "node_modules", "@rudderstack", "analytics-js", "dist", "npm", "modern", "bundled", "esm", "index.mjs");
const HOSTILE = `<img src=x onerror=alert(1)>`;

let dash: Dashboard;
let s: TestServer;
let sink: ReturnType<typeof startSink>;

beforeAll(async () => {
  if (!haveChromium) return;
  dash = await startDashboard();
  s = dash.s;
  sink = startSink();
}, 60_000);

afterAll(async () => {
  sink?.stop();
  await dash?.stop();
});

async function webhook(name: string, sourceIds: string[]) {
  const res = await api(s.url, "POST", "/v2/destinations", { name, type: "WEBHOOK", config: { webhookUrl: `${sink.url}/hook` }, sourceIds });
  if (res.status !== 201) throw new Error(res.text);
  return res.json as { id: string };
}

const delivered = (event: string) => sink.received.filter((r) => r.body?.event === event);

test.if(haveChromium)("list: the empty state says what to do; creating a source opens its page; the list shows it with its key; the filter lives in the URL", async () => {
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/sources`);
  await page.getByText("No sources yet. Create one above").waitFor();

  const name = `${HOSTILE} web`;
  await page.getByLabel("Name", { exact: true }).fill(name);
  await page.getByRole("button", { name: "Create source" }).click();
  await page.waitForURL(/\/sources\/src_/);
  const id = new URL(page.url()).pathname.split("/").pop()!;
  await page.getByRole("heading", { level: 1, name }).waitFor();
  const created = (await api(s.url, "GET", `/v2/sources/${id}`)).json;
  expect(created.name).toBe(name);
  expect(await page.getByTestId("write-key").textContent()).toBe(created.writeKey);
  expect(await page.locator("img").count()).toBe(0);

  await createSource(s.url, { name: "backend" });
  await page.getByRole("link", { name: "← Sources" }).click();
  await page.waitForURL(`${s.url}/sources`);
  const row = page.getByRole("row").filter({ hasText: "web" });
  await row.waitFor();
  expect(await row.getByRole("link").textContent()).toBe(name);
  expect(await row.getByText(created.writeKey).count()).toBe(1);
  expect(await row.getByText("Enabled").count()).toBe(1);
  expect(await page.locator("img").count()).toBe(0);

  await page.getByLabel("Filter sources").fill("back");
  await page.waitForURL(`${s.url}/sources?q=back`);
  await page.getByRole("row").filter({ hasText: "web" }).waitFor({ state: "detached" });
  await page.reload();
  await page.getByRole("link", { name: "backend" }).waitFor();
  expect(await page.getByLabel("Filter sources").inputValue()).toBe("back");
  expect(await page.getByRole("link", { name }).count()).toBe(0);

  // A duplicate name is refused with the server's message, on the page.
  await page.getByLabel("Name", { exact: true }).fill("backend");
  await page.getByRole("button", { name: "Create source" }).click();
  await page.getByRole("alert").getByText("a source named 'backend' already exists", { exact: false }).waitFor();
  await context.close();
}, 30_000);

test.if(haveChromium)("source page: copy the write key, rename, disable (calls refused) and enable, lenient validation, connected destinations link to theirs", async () => {
  const src = await createSource(s.url, { name: "shop" });
  const hostileDest = await webhook(`${HOSTILE} hook`, [src.id]);
  const other = await webhook("spare-hook", []);
  const { context, page } = await dash.newPage();
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: s.url });
  await page.goto(`${s.url}/sources/${src.id}`);
  await page.getByRole("heading", { level: 1, name: "shop" }).waitFor();

  await page.getByRole("button", { name: "Copy write key" }).click();
  await page.getByRole("button", { name: "Copied" }).waitFor();
  expect(await page.evaluate("navigator.clipboard.readText()")).toBe(src.writeKey);

  // Connected destinations: the hostile name is text, and it links to the destination's page.
  const link = page.getByRole("link", { name: `${HOSTILE} hook` });
  await link.waitFor();
  expect(await link.getAttribute("href")).toBe(`/destinations/${hostileDest.id}`);
  expect(await page.locator("img").count()).toBe(0);
  await page.getByLabel("Connect", { exact: true }).selectOption(other.id);
  await page.getByRole("button", { name: "Connect destination" }).click();
  await page.getByRole("link", { name: "spare-hook" }).waitFor();
  expect((await api(s.url, "GET", `/v2/sources/${src.id}`)).json.destinationIds.sort()).toEqual([hostileDest.id, other.id].sort());
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Disconnect spare-hook" }).click();
  await page.getByRole("link", { name: "spare-hook" }).waitFor({ state: "detached" });
  expect((await api(s.url, "GET", `/v2/sources/${src.id}`)).json.destinationIds).toEqual([hostileDest.id]);

  // A clash is refused with the server's message, and the page keeps showing the stored name.
  await createSource(s.url, { name: "taken-name" });
  await page.getByLabel("Name", { exact: true }).fill("taken-name");
  await page.getByRole("button", { name: "Rename" }).click();
  await page.getByRole("alert").getByText("a source named 'taken-name' already exists", { exact: false }).waitFor();
  await page.getByRole("heading", { level: 1, name: "shop" }).waitFor();

  await page.getByLabel("Name", { exact: true }).fill("shop-eu");
  await page.getByRole("button", { name: "Rename" }).click();
  await page.getByRole("heading", { level: 1, name: "shop-eu" }).waitFor();
  expect((await api(s.url, "GET", `/v2/sources/${src.id}`)).json.name).toBe("shop-eu");

  await page.getByRole("button", { name: "Disable" }).click();
  await page.getByRole("button", { name: "Enable" }).waitFor();
  await page.getByText("This source is disabled").waitFor();
  await waitFor(async () => (await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "while-off" })).status === 404, { what: "the disabled source's calls to be refused" });
  await page.getByRole("button", { name: "Enable" }).click();
  await page.getByRole("button", { name: "Disable" }).waitFor();
  await waitFor(async () => (await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "while-on" })).status === 200, { what: "the enabled source's calls to be accepted" });
  await waitFor(() => delivered("while-on").length === 1, { what: "the event at the connected webhook" });

  // Lenient validation: a track without `event` is refused, then accepted.
  expect((await sendEvent(s.url, src.writeKey, "track", { userId: "u" })).status).toBe(400);
  await page.getByRole("checkbox", { name: /Lenient validation/ }).check();
  await waitFor(async () => (await api(s.url, "GET", `/v2/sources/${src.id}`)).json.settings.lenientValidation === true, { what: "lenientValidation on" });
  await waitFor(async () => (await sendEvent(s.url, src.writeKey, "track", { userId: "u" })).status === 200, { what: "a lenient track to be accepted" });

  // A pasted link opens the same view, a tab included; an unknown id says so.
  await page.getByRole("tab", { name: "Node SDK" }).click();
  await page.waitForURL(`${s.url}/sources/${src.id}?snippet=node`);
  await page.reload();
  await page.getByRole("tab", { name: "Node SDK", selected: true }).waitFor();
  expect(await page.getByTestId("snippet").textContent()).toContain("@rudderstack/rudder-sdk-node");
  await page.goto(`${s.url}/sources/src_does_not_exist`);
  await page.getByRole("heading", { name: "Source not found" }).waitFor();
  await context.close();
}, 30_000);

test.if(haveChromium)("the curl and Node SDK snippets run as they are and their events reach the connected webhook", async () => {
  const src = await createSource(s.url, { name: "snippets" });
  await webhook("snippet-hook", [src.id]);
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/sources/${src.id}?snippet=curl`);
  const curl = (await page.getByTestId("snippet").textContent())!;
  expect(curl).toContain(`-u '${src.writeKey}:'`);
  expect(curl).toContain(`'${s.url}/v1/track'`);
  // Spawned without blocking: the server answering it runs in this process.
  const run = Bun.spawn(["sh", "-c", curl], { stdout: "pipe", stderr: "pipe" });
  expect({ code: await run.exited, out: await new Response(run.stdout).text() }).toEqual({ code: 0, out: "OK" });
  await waitFor(() => delivered("Test Event").find((r) => r.body.properties.sentFrom === "curl"), { what: "the curl snippet's event at the webhook" });

  await page.getByRole("tab", { name: "Node SDK" }).click();
  await page.getByTestId("snippet").getByText("rudder-sdk-node", { exact: false }).first().waitFor();
  const node = (await page.getByTestId("snippet").textContent())!;
  // Run from the repository, where the SDK is installed, exactly as shown; it must exit by itself.
  const proc = Bun.spawn(["node", "-e", node], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const exited = await Promise.race([proc.exited, new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 15_000))]);
  if (exited === "timeout") proc.kill();
  expect({ exited, stderr: await new Response(proc.stderr).text() }).toEqual({ exited: 0, stderr: "" });
  await waitFor(() => delivered("Test Event").find((r) => r.body.properties.sentFrom === "node" && r.body.userId === "user-1"), { what: "the Node snippet's event at the webhook" });
  await context.close();
}, 30_000);

test.if(haveChromium)("the browser SDK snippet, pasted into a page of another origin, sends its page and track calls", async () => {
  const src = await createSource(s.url, { name: "browser-snippet" });
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/sources/${src.id}`);
  const code = (await page.getByTestId("snippet").textContent())!;
  expect(code).toContain(`import { RudderAnalytics } from "@rudderstack/analytics-js/bundled";`);
  await context.close();

  // The shop's page: an import map stands in for the app's bundler; the snippet is pasted verbatim.
  const html = `<!doctype html><html><head><title>shop</title>
<script type="importmap">{"imports":{"@rudderstack/analytics-js/bundled":"/rsa.mjs"}}</script>
<script type="module">
${code}
</script></head><body>shop</body></html>`;
  const site = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      if (new URL(req.url).pathname === "/rsa.mjs") return new Response(Bun.file(SDK), { headers: { "content-type": "text/javascript" } });
      return new Response(html, { headers: { "content-type": "text/html" } });
    },
  });
  const shop = await dash.browser!.newPage();
  const elsewhere: string[] = [];
  shop.on("request", (r) => {
    const origin = new URL(r.url()).origin;
    if (origin !== s.url && origin !== `http://127.0.0.1:${site.port}`) elsewhere.push(r.url());
  });
  shop.on("pageerror", (e) => elsewhere.push(`page error: ${e.message}`));
  try {
    await shop.goto(`http://127.0.0.1:${site.port}/`);
    const fromBrowser = () => storedEvents(s).filter((e) => e.properties?.sentFrom === "browser" && e.context?.library?.name?.includes("RudderLabs JavaScript SDK"));
    await waitFor(() => fromBrowser().length === 1, { what: "the browser snippet's track call", timeoutMs: 15_000 });
    await waitFor(() => storedEvents(s).some((e) => e.type === "page" && e.anonymousId === fromBrowser()[0].anonymousId), { what: "the browser snippet's page call" });
    // Nothing was fetched from anywhere but the shop and Sluice (no CDN).
    expect(elsewhere).toEqual([]);
  } finally {
    await shop.close();
    site.stop(true);
  }
}, 30_000);

test.if(haveChromium)("another data-plane address in ?dataPlane= fills every snippet and survives a reload; a bad one is refused naming the field", async () => {
  const src = await createSource(s.url, { name: "behind-proxy" });
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/sources/${src.id}`);
  // Event calls are answered on this origin: no warning (checked once the probe has answered).
  await page.locator('[data-data-plane="here"]').waitFor();
  expect(await page.getByTestId("data-plane-warning").count()).toBe(0);
  await page.getByLabel("Data plane URL").fill("https://events.example.com/");
  await page.getByRole("button", { name: "Use this address" }).click();
  await page.waitForURL(`${s.url}/sources/${src.id}?dataPlane=${encodeURIComponent("https://events.example.com")}`);
  await page.reload();
  await page.getByTestId("snippet").getByText(`configUrl: "https://events.example.com"`, { exact: false }).waitFor();
  await page.getByRole("tab", { name: "curl" }).click();
  await page.getByTestId("snippet").getByText("'https://events.example.com/v1/track'", { exact: false }).waitFor();
  expect(new URL(page.url()).searchParams.get("snippet")).toBe("curl");

  await page.getByLabel("Data plane URL").fill("not a url");
  await page.getByRole("button", { name: "Use this address" }).click();
  await page.getByRole("alert").getByText("Data plane URL:", { exact: false }).waitFor();
  await page.getByRole("button", { name: "Reset" }).click();
  await page.getByTestId("snippet").getByText(`'${s.url}/v1/track'`, { exact: false }).waitFor();
  await context.close();
}, 30_000);

test.if(haveChromium)("delete asks first: dismissing keeps the source, accepting deletes it (its key then gets 401) and returns to the list", async () => {
  const src = await createSource(s.url, { name: "doomed" });
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/sources/${src.id}`);
  await page.getByRole("heading", { level: 1, name: "doomed" }).waitFor();

  let asked = "";
  page.once("dialog", (d) => {
    asked = d.message();
    d.dismiss();
  });
  await page.getByRole("button", { name: "Delete" }).click();
  await waitFor(() => asked, { what: "the confirmation" });
  expect(asked).toContain(`Delete the source "doomed"`);
  expect((await api(s.url, "GET", `/v2/sources/${src.id}`)).status).toBe(200);

  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Delete" }).click();
  await page.waitForURL(`${s.url}/sources`);
  await page.getByRole("heading", { level: 1, name: "Sources" }).waitFor();
  expect(await page.getByRole("link", { name: "doomed" }).count()).toBe(0);
  expect((await api(s.url, "GET", `/v2/sources/${src.id}`)).status).toBe(404);
  expect((await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "x" })).status).toBe(401);
  await context.close();
}, 30_000);

test.if(haveChromium)("at 390 px wide the list and a source's page fit the screen", async () => {
  const src = await createSource(s.url, { name: "a-source-with-a-rather-long-name-for-a-phone-screen" });
  await webhook("narrow-hook", [src.id]);
  const { context, page } = await dash.newPage({ width: 390 });
  const overflow = "document.documentElement.scrollWidth - document.documentElement.clientWidth";
  await page.goto(`${s.url}/sources`);
  await page.getByRole("link", { name: src.name }).waitFor();
  expect(await page.evaluate(overflow)).toBe(0);
  await page.goto(`${s.url}/sources/${src.id}`);
  await page.getByRole("link", { name: "narrow-hook" }).waitFor();
  expect(await page.evaluate(overflow)).toBe(0);
  await context.close();
}, 30_000);

test.if(haveChromium)("with --api-port the page says event calls are not on its origin; the data-plane address typed in makes the curl snippet work", async () => {
  // As `sluice serve --api-port`: event calls on one port, the APIs and this page on another.
  const dataDir = tempDir();
  const settings = parseSettings(["--port", "0", "--api-port", "0", "--host", "127.0.0.1", "--data-dir", dataDir, "--dashboard-dir", dash.dashboardDir!], {
    SLUICE_ADMIN_EMAIL: ADMIN_EMAIL,
    SLUICE_ADMIN_TOKEN: ADMIN_TOKEN,
  });
  const split = await createSluice(settings, { log: silentLogger });
  const dp = split.dataPlane.listen({ port: 0, hostname: "127.0.0.1" });
  const apiApp = split.api.listen({ port: 0, hostname: "127.0.0.1" });
  const dataPlaneUrl = `http://127.0.0.1:${dp.server!.port}`;
  const apiUrl = `http://127.0.0.1:${apiApp.server!.port}`;
  try {
    const src = await createSource(apiUrl, { name: "split-ports" });
    const { context, page } = await dash.newPage({ serverUrl: apiUrl });
    await page.goto(`${apiUrl}/sources/${src.id}?snippet=curl`);
    await page.locator('[data-data-plane="elsewhere"]').waitFor();
    await page.getByTestId("data-plane-warning").getByText(`Event calls are not answered at ${apiUrl}`, { exact: false }).waitFor();

    await page.getByLabel("Data plane URL").fill(dataPlaneUrl);
    await page.getByRole("button", { name: "Use this address" }).click();
    await page.getByTestId("data-plane-warning").waitFor({ state: "detached" });
    const curl = (await page.getByTestId("snippet").textContent())!;
    expect(curl).toContain(`'${dataPlaneUrl}/v1/track'`);
    const run = Bun.spawn(["sh", "-c", curl], { stdout: "pipe", stderr: "pipe" });
    expect({ code: await run.exited, out: await new Response(run.stdout).text() }).toEqual({ code: 0, out: "OK" });
    await context.close();
  } finally {
    await dp.server!.stop(true);
    await apiApp.server!.stop(true);
    await split.close();
    cleanup(dataDir);
  }
}, 30_000);
