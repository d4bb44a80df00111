/**
 * The dashboard's Regulations page (/regulations) in headless Chromium against an in-process
 * Sluice whose AM (Amplitude) requests go to a local sink: create a suppress_with_delete and
 * watch each destination's deletion reach its final state, create a suppress for one source
 * and cancel it (both with real event calls), page with the API's cursor (kept in the URL),
 * the form's errors, hostile values shown as text, and the narrow layout.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Dashboard, startDashboard } from "../support/dashboard-harness";
import { type TestServer, api, createSource, haveChromium, requireChromium, sendEvent, startSink, storedEvents, waitFor } from "../support/helpers";

requireChromium("dashboard-regulations.test.ts");

const HOSTILE = "<img src=x onerror=alert(1)>";

let dash: Dashboard;
let s: TestServer;
let amSink: ReturnType<typeof startSink>;
let web: { id: string; writeKey: string; name: string };
let other: { id: string; writeKey: string; name: string };
let amplitude: { id: string; name: string };
let hook: { id: string; name: string };

beforeAll(async () => {
  if (!haveChromium) return;
  amSink = startSink(() => Response.json({ ok: true }));
  dash = await startDashboard({ args: ["--retry-backoff-ms", "20", "--destination-base-url", `AM=${amSink.url}`] });
  s = dash.s;
  web = await createSource(s.url, { name: "web" });
  other = await createSource(s.url, { name: "backend" });
  const am = await api(s.url, "POST", "/v2/destinations", { name: `amp ${HOSTILE}`, type: "AM", config: { apiKey: "am-key", apiSecret: "am-secret" }, sourceIds: [web.id] });
  const wh = await api(s.url, "POST", "/v2/destinations", { name: "hook", type: "WEBHOOK", config: { webhookUrl: `${amSink.url}/hook` }, sourceIds: [web.id] });
  expect(am.status).toBe(201);
  expect(wh.status).toBe(201);
  amplitude = am.json;
  hook = wh.json;
}, 60_000);

afterAll(async () => {
  amSink?.stop();
  await dash?.stop();
});

async function allRegulations(): Promise<any[]> {
  const out: any[] = [];
  let path: string | undefined = "/v2/regulations";
  while (path) {
    const res = await api(s.url, "GET", path);
    out.push(...res.json.data);
    path = res.json.paging.next;
  }
  return out;
}

test.if(haveChromium)("suppress_with_delete: AM's deletion reaches 'Complete' at the sink, WEBHOOK's is 'Aborted' with the reason; values shown as text", async () => {
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/regulations`);
  await page.getByText("No regulations yet.").waitFor();
  const form = page.getByRole("form", { name: "New regulation" });
  await form.getByRole("radio", { name: /Suppress and delete/ }).check();
  await form.getByLabel("Users", { exact: true }).fill(`del-user-1 email="${HOSTILE}"`);
  await form.getByRole("checkbox", { name: new RegExp(`amp <img`) }).check();
  await form.getByRole("checkbox", { name: /^hook/ }).check();
  // WEBHOOK cannot delete users, and the form says so before anyone submits.
  expect(await form.getByRole("checkbox", { name: /^hook/ }).locator("xpath=..").textContent()).toContain("cannot delete users");
  await form.getByRole("button", { name: "Create regulation" }).click();
  await page.getByRole("status").getByText("Created a regulation.").waitFor();

  const row = page.getByRole("row").filter({ hasText: "del-user-1" });
  const deletions = row.getByRole("list", { name: "Deletion per destination" });
  const amLine = deletions.getByRole("listitem").filter({ hasText: `amp ${HOSTILE}` });
  const hookLine = deletions.getByRole("listitem").filter({ hasText: "hook" }).filter({ hasNotText: "amp" });
  // The page polls while a job is under way, so the final states appear without a reload.
  await amLine.getByText("Complete", { exact: true }).waitFor({ timeout: 15_000 });
  await hookLine.getByText("Aborted", { exact: true }).waitFor({ timeout: 15_000 });
  expect(await hookLine.textContent()).toContain("destination does not support user deletion");
  expect(await row.getByText(HOSTILE, { exact: false }).first().textContent()).toContain(HOSTILE);
  expect(await page.locator("img").count()).toBe(0);

  // At 390px wide the rows fold into stacked cards: nothing sticks out sideways.
  await page.setViewportSize({ width: 390, height: 800 });
  await page.getByRole("button", { name: "Menu" }).waitFor();
  const overflow: number = await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth");
  expect(overflow).toBeLessThanOrEqual(0);

  // The deletion really reached the (stand-in) service with the user's id.
  const request = await waitFor(() => amSink.received.find((r) => r.path === "/api/2/deletions/users"), { what: "the AM deletion request" });
  expect(request.body.user_ids).toEqual(["del-user-1"]);
  const [record] = (await allRegulations()).filter((r) => r.attributes.userId === "del-user-1");
  expect(record).toMatchObject({ regulationType: "suppress_with_delete", attributes: { userId: "del-user-1", email: HOSTILE }, destinationIds: [amplitude.id, hook.id] });
  await context.close();
}, 30_000);

test.if(haveChromium)("suppress for one source drops that user's events there; Cancel lifts it and the row says Canceled", async () => {
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/regulations`);
  const form = page.getByRole("form", { name: "New regulation" });
  await form.getByRole("radio", { name: /^Suppress — / }).check();
  await form.getByLabel("Users", { exact: true }).fill("quiet-user");
  await form.getByRole("checkbox", { name: "web", exact: true }).check();
  await form.getByRole("button", { name: "Create regulation" }).click();
  const row = page.getByRole("row").filter({ hasText: "quiet-user" });
  await row.getByText("Sources: web").waitFor();
  expect(await row.getByText("Active").count()).toBe(1);

  // Suppressed at web (200, never stored); the other source is not covered.
  expect((await sendEvent(s.url, web.writeKey, "track", { userId: "quiet-user", event: "Hidden" })).status).toBe(200);
  expect((await sendEvent(s.url, other.writeKey, "track", { userId: "quiet-user", event: "Elsewhere" })).status).toBe(200);
  expect(storedEvents(s).filter((e) => e.userId === "quiet-user").map((e) => e.event)).toEqual(["Elsewhere"]);

  page.once("dialog", (d) => d.accept());
  await row.getByRole("button", { name: "Cancel the regulation for quiet-user" }).click();
  await row.getByText("Canceled").waitFor();
  expect(await row.getByRole("button", { name: /Cancel/ }).count()).toBe(0);
  expect((await allRegulations()).find((r) => r.attributes.userId === "quiet-user").canceled).toBe(true);
  expect((await sendEvent(s.url, web.writeKey, "track", { userId: "quiet-user", event: "Visible" })).status).toBe(200);
  expect(storedEvents(s).filter((e) => e.userId === "quiet-user").map((e) => e.event)).toEqual(["Elsewhere", "Visible"]);
  await context.close();
}, 30_000);

test.if(haveChromium)("paging follows the API's cursor; the page is in the URL, so a reload stays on it", async () => {
  const users = Array.from({ length: 105 }, (_, i) => ({ userId: `page-user-${String(i).padStart(3, "0")}` }));
  expect((await api(s.url, "POST", "/v2/regulations", { regulationType: "suppress", users })).status).toBe(201);
  const total = (await allRegulations()).length;
  expect(total).toBeGreaterThan(100);

  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/regulations`);
  const rows = page.locator("tbody tr");
  await page.getByRole("button", { name: "Next page" }).waitFor();
  expect(await rows.count()).toBe(100);
  expect(await page.getByRole("button", { name: "First page" }).count()).toBe(0);

  await page.getByRole("button", { name: "Next page" }).click();
  await page.waitForURL(/\/regulations\?after=/);
  await page.getByRole("row").filter({ hasText: "page-user-104" }).waitFor();
  expect(await rows.count()).toBe(total - 100);
  expect(await page.getByRole("button", { name: "Next page" }).count()).toBe(0);
  await page.getByRole("button", { name: "Previous page" }).waitFor();

  await page.reload();
  await page.getByRole("row").filter({ hasText: "page-user-104" }).waitFor();
  expect(await rows.count()).toBe(total - 100);
  await page.getByRole("button", { name: "First page" }).click();
  await page.waitForURL(`${s.url}/regulations`);
  await page.getByRole("button", { name: "Next page" }).waitFor();
  expect(await rows.count()).toBe(100);
  await context.close();
}, 30_000);

test.if(haveChromium)("the form names what is wrong: a bad users line (in the page), a destination gone meanwhile (the API's 400)", async () => {
  const gone = await api(s.url, "POST", "/v2/destinations", { name: "short-lived", type: "AM", config: { apiKey: "k", apiSecret: "s" } });
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/regulations`);
  const form = page.getByRole("form", { name: "New regulation" });
  await form.getByLabel("Users", { exact: true }).fill("ok-user\nbad-user email");
  await form.getByRole("button", { name: "Create regulation" }).click();
  await form.getByRole("alert").getByText("Users, line 2: 'email' is not kind=value (e.g. email=jane@example.com)").waitFor();

  await form.getByRole("radio", { name: /Suppress and delete/ }).check();
  await form.getByLabel("Users", { exact: true }).fill("late-user");
  await form.getByRole("button", { name: "Create regulation" }).click();
  await form.getByRole("alert").getByText(/Destinations: choose at least one/).waitFor();

  await form.getByRole("checkbox", { name: /^short-lived/ }).check();
  expect((await api(s.url, "DELETE", `/v2/destinations/${gone.json.id}`)).status).toBe(204);
  await form.getByRole("button", { name: "Create regulation" }).click();
  await form.getByRole("alert").getByText(`destinationIds: destination '${gone.json.id}' not found in this workspace`).waitFor();
  expect((await allRegulations()).some((r) => r.attributes.userId === "late-user")).toBe(false);
  await context.close();
}, 30_000);
