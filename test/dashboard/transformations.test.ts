/**
 * The transformations pages in headless Chromium against an in-process Sluice: create one from
 * the list, type code into the editor (CodeMirror, inside the strict CSP), save it and see the new
 * version, open an old version by its URL, run the test panel (output, a log line, an error),
 * connect the transformation to a real webhook destination and see a real event arrive changed.
 * Hostile names and event values stay text. Needs Chromium, as dashboard-browser.test.ts.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Dashboard, type Page, startDashboard } from "../support/dashboard-harness";
import { type TestServer, api, createSource, haveChromium, requireChromium, sendEvent, startSink, waitFor } from "../support/helpers";

requireChromium("dashboard-transformations.test.ts");

const HOSTILE = `<img src=x onerror=alert(1)>`;

let dash: Dashboard;
let s: TestServer;
const sink = startSink();

beforeAll(async () => {
  if (!haveChromium) return;
  dash = await startDashboard({ args: ["--retry-backoff-ms", "20"] });
  s = dash.s;
}, 60_000);

// A CSP violation (CodeMirror's styles included) or a script error on any page fails the run: stop() checks.
afterAll(async () => {
  sink.stop();
  await dash?.stop();
});

/** Replaces the editor's text the way a person would: focus, select all, type (or paste) over it. */
async function typeCode(page: Page, code: string) {
  const editor = page.getByRole("textbox", { name: "Code" });
  await editor.click();
  await page.keyboard.press("Control+A");
  await page.keyboard.insertText(code);
}

async function transformationByName(name: string) {
  const list = (await api(s.url, "GET", "/v2/transformations")).json.transformations as Array<{ id: string; name: string; versionId: string; code: string; destinationIds: string[] }>;
  return list.find((t) => t.name === name);
}

test.if(haveChromium)("create from the list, type and save code (a new version), reopen an old version by its URL", async () => {
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/transformations`);
  await page.getByText("No transformations yet").waitFor();

  const name = `${HOSTILE} enrich`;
  await page.getByLabel("Name", { exact: true }).fill(name);
  await page.getByRole("button", { name: "Create transformation" }).click();
  await page.waitForURL(/\/transformations\/trf_[0-9a-f]+$/);
  await page.getByRole("heading", { name }).waitFor();
  expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe(name);
  const created = (await transformationByName(name))!;
  // The editor shows the template, highlighted (CodeMirror's token classes are there).
  await page.locator(".cm-content").getByText("export function transformEvent").first().waitFor();
  expect(await page.locator(".cm-content span[class^='ͼ']").count()).toBeGreaterThan(0);
  // CodeMirror's own styles apply under the strict CSP (a blocked <style> would leave it unstyled).
  const display: string = await page.evaluate("getComputedStyle(document.querySelector('[data-testid=code-editor]').shadowRoot.querySelector('.cm-editor')).display");
  expect(display).toBe("flex");

  const code = `export function transformEvent(event, metadata) {\n  log("plan", event.properties.plan);\n  event.properties.enriched = true;\n  return event;\n}`;
  await typeCode(page, code);
  await page.getByText("Unsaved changes", { exact: true }).waitFor();
  // Typed keys go through CodeMirror's own input handling too.
  await page.keyboard.press("Control+End");
  await page.keyboard.type("\n// typed");
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await page.getByText(/^Saved as version trv_/).waitFor();
  const saved = (await transformationByName(name))!;
  expect(saved.versionId).not.toBe(created.versionId);
  expect(saved.code).toBe(`${code}\n// typed`);

  // Versions: both saves listed, newest first; the old one opens by URL and survives a reload.
  await page.getByRole("tab", { name: "Versions" }).click();
  await page.waitForURL(/\?tab=versions$/);
  const rows = page.locator(".trf-versions tbody tr");
  await rows.nth(1).waitFor();
  expect(await rows.count()).toBe(2);
  expect(await rows.first().textContent()).toContain("current");
  await page.getByRole("button", { name: "View version 1" }).click();
  await page.waitForURL(new RegExp(`version=${created.versionId}`));
  await page.reload();
  await page.getByTestId("version-code").waitFor();
  expect(await page.getByTestId("version-code").textContent()).toBe(created.code);
  expect(await page.getByRole("tab", { name: "Versions" }).getAttribute("aria-selected")).toBe("true");

  // Loading an old version into the editor is an unsaved change until saved; discarding drops it.
  await page.getByRole("button", { name: "Load into editor" }).click();
  await page.getByText("Unsaved changes", { exact: true }).waitFor();
  await page.getByRole("button", { name: "Discard changes" }).click();
  await page.locator(".cm-content").getByText("// typed").waitFor();
  expect(await page.locator("img").count()).toBe(0);

  // The list shows it, the name as text.
  await page.getByRole("link", { name: "Transformations" }).first().click();
  await page.waitForURL(`${s.url}/transformations`);
  const row = page.getByRole("row").filter({ hasText: "enrich" });
  await row.waitFor();
  expect(await row.getByRole("link").textContent()).toBe(name);
  expect(await page.locator("img").count()).toBe(0);
  await context.close();
}, 60_000);

test.if(haveChromium)("the test panel runs the editor's code on a sample event: output, log lines and errors, all as text", async () => {
  const t = (await api(s.url, "POST", "/v2/transformations", { name: "test-panel", code: "function transformEvent(e) { return e; }" })).json;
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/transformations/${t.id}`);
  await page.getByRole("heading", { name: "test-panel" }).waitFor();
  await typeCode(page, `function transformEvent(event) {\n  log("seen", event.properties.note);\n  event.properties.upper = String(event.properties.note).toUpperCase();\n  return event;\n}`);

  const sample = { type: "track", event: "Signed Up", userId: "u1", messageId: "m1", properties: { note: HOSTILE } };
  await page.getByLabel("Sample events").fill(JSON.stringify(sample));
  await page.getByRole("button", { name: "Run test" }).click();
  await page.getByTestId("test-output").waitFor();
  const output = JSON.parse((await page.getByTestId("test-output").textContent())!);
  expect(output.properties).toEqual({ note: HOSTILE, upper: HOSTILE.toUpperCase() });
  expect(await page.getByTestId("test-logs").textContent()).toContain(`seen ${HOSTILE}`);
  expect(await page.locator("img").count()).toBe(0);
  // The test ran unsaved code; nothing was saved.
  expect((await api(s.url, "GET", `/v2/transformations/${t.id}`)).json.versionId).toBe(t.versionId);

  // Code that throws: the error is shown, and the log line before it.
  await typeCode(page, `function transformEvent(event) {\n  log("before");\n  throw new Error("no plan for " + event.userId);\n}`);
  await page.getByRole("button", { name: "Run test" }).click();
  await page.getByTestId("test-errors").waitFor();
  expect(await page.getByTestId("test-errors").textContent()).toContain("no plan for u1");
  expect(await page.getByTestId("test-logs").textContent()).toContain("before");
  await page.getByText("No output: the call failed.").waitFor();

  // Code that breaks the contract is refused by the API with its reason.
  await typeCode(page, `const x = 1;`);
  await page.getByRole("button", { name: "Run test" }).click();
  await page.locator(".trf-errors").getByText(/transformEvent/).waitFor();
  // And so is a sample that is not JSON, before anything is sent.
  await page.getByLabel("Sample events").fill("{ not json");
  await page.getByRole("button", { name: "Run test" }).click();
  await page.getByText(/Sample events are not valid JSON/).waitFor();
  await context.close();
}, 60_000);

test.if(haveChromium)("connect to a destination: its events then arrive changed by the transformation", async () => {
  const src = await createSource(s.url, { name: "web" });
  const dstName = `${HOSTILE} hook`;
  const dst = (await api(s.url, "POST", "/v2/destinations", { name: dstName, type: "WEBHOOK", config: { webhookUrl: `${sink.url}/hook` }, sourceIds: [src.id] })).json;
  const t = (await api(s.url, "POST", "/v2/transformations", { name: "tagger", code: `function transformEvent(event) { event.properties = { ...event.properties, tagged: "by-sluice" }; return event; }` })).json;

  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/transformations/${t.id}?tab=destinations`);
  const box = page.getByRole("checkbox", { name: dstName });
  await box.waitFor();
  expect(await page.locator("img").count()).toBe(0);
  expect(await page.getByRole("button", { name: "Save connections" }).isDisabled()).toBe(true);
  await box.check();
  await page.getByRole("button", { name: "Save connections" }).click();
  await page.getByText("Connected to 1 destination.").waitFor();
  expect((await api(s.url, "GET", `/v2/transformations/${t.id}`)).json.destinationIds).toEqual([dst.id]);
  expect((await api(s.url, "GET", `/v2/destinations/${dst.id}`)).json.transformationId).toBe(t.id);

  const res = await sendEvent(s.url, src.writeKey, "track", { event: "Bought", userId: "u-7", properties: { sku: "A1" } });
  expect(res.status).toBe(200);
  const got = await waitFor(() => sink.received.find((r) => r.path === "/hook" && r.body?.userId === "u-7"), { what: "the transformed event at the webhook" });
  expect(got.body.properties).toEqual({ sku: "A1", tagged: "by-sluice" });

  // A reload keeps the tab and the connection; unchecking disconnects.
  await page.reload();
  await box.waitFor();
  expect(await box.isChecked()).toBe(true);
  await box.uncheck();
  await page.getByRole("button", { name: "Save connections" }).click();
  await page.getByText("Connected to no destination.").waitFor();
  expect((await api(s.url, "GET", `/v2/destinations/${dst.id}`)).json.transformationId ?? null).toBeNull();
  await context.close();
}, 60_000);

test.if(haveChromium)("at 390px the editor and panels fit the screen; an unknown id says so; delete goes back to the list", async () => {
  const t = (await api(s.url, "POST", "/v2/transformations", { name: "narrow", code: "function transformEvent(e) { return e; }" })).json;
  const { context, page } = await dash.newPage({ width: 390 });
  await page.goto(`${s.url}/transformations/${t.id}`);
  await page.getByRole("textbox", { name: "Code" }).waitFor();
  await page.getByRole("button", { name: "Run test" }).waitFor();
  const overflow: number = await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth");
  expect(overflow).toBeLessThanOrEqual(0);

  await page.goto(`${s.url}/transformations/trf_missing`);
  await page.getByText(/There is no transformation/).waitFor();

  await page.goto(`${s.url}/transformations/${t.id}`);
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Delete" }).click();
  await page.waitForURL(`${s.url}/transformations`);
  expect((await api(s.url, "GET", `/v2/transformations/${t.id}`)).status).toBe(404);
  await context.close();
}, 60_000);
