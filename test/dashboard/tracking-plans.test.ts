/**
 * The tracking plans pages in headless Chromium against an in-process Sluice fed real event
 * calls: the list and the add form (a plan pasted as RudderStack exports it; a schema that does
 * not compile, bad JSON and a version clash refused in the API's words), a plan's page (its
 * events and rules, versions, a new version from edited JSON), "Check against traffic" (the
 * counts of violating and dropped events, by violation and by event, for a stored version or the
 * edited JSON, with the settings chosen), setting a source's plan with the four settings (PUT)
 * and clearing it (DELETE), and deleting a plan. Hostile names stay text.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Dashboard, type Page, startDashboard } from "../support/dashboard-harness";
import { type TestServer, api, createSource, haveChromium, requireChromium, sendEvent, waitFor } from "../support/helpers";

requireChromium("tracking-plans.test.ts");

const HOSTILE = "<img src=x onerror=alert(1)>";

let dash: Dashboard;
let s: TestServer;

beforeAll(async () => {
  if (!haveChromium) return;
  dash = await startDashboard();
  s = dash.s;
}, 60_000);

afterAll(() => dash?.stop());

const noMarkup = async (page: Page) => expect(await page.locator("img").count()).toBe(0);

/** A plan in RudderStack's export format: "Order Completed" needs a string orderId; `extra` events are planned too. */
function ordersPlan(id: string, version: number, opts: { required?: boolean; name?: string; extra?: string[] } = {}) {
  const order = {
    type: "object",
    properties: { properties: { type: "object", properties: { orderId: { type: "string" }, total: { type: "number" } }, ...(opts.required === false ? {} : { required: ["orderId"] }) } },
  };
  return {
    id,
    name: opts.name ?? "Orders",
    version,
    events: [
      { id: "ev_order", name: "Order Completed", eventType: "track", description: "A checkout went through", rules: order },
      ...(opts.extra ?? []).map((name) => ({ name, eventType: "track", description: "", rules: { type: "object" } })),
    ],
  };
}

async function track(writeKey: string, event: string, properties: Record<string, unknown> = {}) {
  const res = await sendEvent(s.url, writeKey, "track", { userId: "user-1", event, properties });
  expect(res.status).toBe(200);
}

test.if(haveChromium)("the list and the add form: a pasted plan opens its page with its events and rules; broken schemas, bad JSON and a clash are refused in words", async () => {
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/`);
  await page.getByRole("link", { name: "Tracking plans" }).click();
  await page.waitForURL(`${s.url}/tracking-plans`);
  await page.getByText("No tracking plans yet.").waitFor();
  const json = page.getByLabel("Plan JSON, as RudderStack exports it");

  // A schema Ajv cannot compile: the API's 400, as text.
  const broken = { name: "Broken", version: 1, events: [{ name: HOSTILE, eventType: "track", description: "", rules: { type: "object", properties: { a: { type: "strin" } } } }] };
  await json.fill(JSON.stringify(broken));
  await page.getByRole("button", { name: "Add plan" }).click();
  const alert = page.getByRole("alert").filter({ hasText: "does not compile" });
  await alert.waitFor();
  expect(await alert.textContent()).toContain(`the schema of '${HOSTILE}' does not compile`);
  await noMarkup(page);
  // Not JSON at all; JSON that is not an object.
  await json.fill("{ name: Orders");
  await page.getByRole("button", { name: "Add plan" }).click();
  await page.getByRole("alert").getByText("The plan is not valid JSON", { exact: false }).waitFor();
  await json.fill("[1, 2]");
  await page.getByRole("button", { name: "Add plan" }).click();
  await page.getByRole("alert").getByText("The plan must be a JSON object", { exact: false }).waitFor();
  expect((await api(s.url, "GET", "/v2/tracking-plans")).json.trackingPlans).toEqual([]);

  // A plan as RudderStack exports it, with a hostile planned event and name.
  const plan = ordersPlan("tp_list", 1, { name: `${HOSTILE} orders`, extra: [HOSTILE] });
  await json.fill(JSON.stringify(plan, null, 2));
  await page.getByRole("button", { name: "Add plan" }).click();
  await page.waitForURL(`${s.url}/tracking-plans/tp_list`);
  await page.getByRole("heading", { level: 1, name: `${HOSTILE} orders` }).waitFor();
  await page.getByText("Version 1 (current)").waitFor();
  const rows = page.getByTestId("planned-events").locator("tbody tr");
  expect(await rows.count()).toBe(2);
  expect(await rows.nth(0).locator("td").nth(0).textContent()).toBe("Order CompletedA checkout went through");
  expect(await rows.nth(0).locator("td").nth(1).textContent()).toBe("track");
  expect(JSON.parse((await rows.nth(0).getByTestId("rules").textContent())!)).toEqual(plan.events[0]!.rules);
  expect(await rows.nth(1).locator("td").nth(0).textContent()).toBe(HOSTILE);
  await noMarkup(page);

  // The list shows it; the same id and version with other content is a clash, in the API's words.
  await page.getByRole("link", { name: "← Tracking plans" }).click();
  await page.waitForURL(`${s.url}/tracking-plans`);
  const row = page.getByTestId("plans").getByRole("row").filter({ hasText: "tp_list" });
  await row.waitFor();
  expect(await row.getByRole("link").textContent()).toBe(`${HOSTILE} orders`);
  await json.fill(JSON.stringify(ordersPlan("tp_list", 1, { name: "Other" })));
  await page.getByRole("button", { name: "Add plan" }).click();
  await page.getByRole("alert").getByText("already has a version 1 with other content", { exact: false }).waitFor();
  await noMarkup(page);

  // An unknown plan says so.
  await page.goto(`${s.url}/tracking-plans/tp_nope`);
  await page.getByRole("heading", { name: "Tracking plan not found" }).waitFor();
  await context.close();
}, 60_000);

test.if(haveChromium)("check against traffic: the counts that would violate and be dropped, by violation and by event, for a version or the edited JSON; a new version saves", async () => {
  const src = await createSource(s.url, { name: "checkout" });
  await createSource(s.url, { name: "elsewhere" });
  // 3 orders without an orderId, 2 valid ones, 2 unplanned events (one with a hostile name).
  for (let i = 0; i < 3; i++) await track(src.writeKey, "Order Completed", { total: 10 + i });
  for (let i = 0; i < 2; i++) await track(src.writeKey, "Order Completed", { orderId: `o-${i}`, total: 5 });
  await track(src.writeKey, "Coupon Applied", { code: "X" });
  await track(src.writeKey, HOSTILE);
  expect((await api(s.url, "POST", "/v2/tracking-plans", ordersPlan("tp_check", 1))).status).toBe(201);

  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/tracking-plans/tp_check?source=${src.id}`);
  await page.getByRole("heading", { level: 1, name: "Orders" }).waitFor();
  expect(await page.getByLabel("Source", { exact: true }).locator("option:checked").textContent()).toBe("checkout");
  await page.getByTestId("source-status").getByText("has no tracking plan").waitFor();

  // RudderStack's defaults forward everything: 5 violate (3 missing orderId, 2 unplanned), none dropped.
  await page.getByRole("button", { name: "Check against traffic" }).click();
  const preview = page.getByTestId("preview");
  await preview.waitFor();
  expect(await preview.getByRole("status").textContent()).toBe("Version 1 against the newest events of checkout: checked 7 events; 5 would carry violations and 0 would be dropped.");
  expect(await preview.getByTestId("by-violation").locator("tbody tr").allTextContents()).toEqual(["Required-Missing3", "Unplanned-Event2"]);

  // Unplanned events and other violations dropped: 5 dropped, as the API counts them.
  await page.getByLabel("Unplanned events", { exact: true }).selectOption("false");
  await page.getByLabel("Other violations", { exact: true }).selectOption("drop");
  await page.getByRole("button", { name: "Check against traffic" }).click();
  await preview.getByTestId("preview-dropped").getByText("5", { exact: true }).waitFor();
  const settings = { trackingPlan: { id: "tp_check", version: 1 }, config: { global: { allowUnplannedEvents: "false", unplannedProperties: "forward", anyOtherViolation: "drop", propagateValidationErrors: "true" } } };
  const fromApi = (await api(s.url, "POST", `/v2/sources/${src.id}/tracking-plan/preview`, { planId: "tp_check", version: 1, settings })).json;
  expect(fromApi).toMatchObject({ checked: 7, violating: 5, dropped: 5, byViolation: { "Required-Missing": 3, "Unplanned-Event": 2 } });
  expect(await preview.getByTestId("preview-violating").textContent()).toBe("5");
  expect(await preview.getByTestId("by-violation").locator("tbody tr").allTextContents()).toEqual(["Required-Missing3", "Unplanned-Event2"]);
  const byEvent = await preview.getByTestId("by-event").locator("tbody tr").allTextContents();
  expect(byEvent).toEqual(fromApi.events.map((e: { event: string; type: string; checked: number; violating: number; dropped: number }) => `${e.event}${e.type}${e.checked}${e.violating}${e.dropped}`));
  expect(byEvent[0]).toBe("Order Completedtrack533");
  expect(byEvent).toContain(`${HOSTILE}track111`);
  await noMarkup(page);

  // The edited JSON (orderId optional, the coupon planned) is checked before it is saved.
  const v2 = ordersPlan("tp_check", 2, { required: false, extra: ["Coupon Applied"] });
  await page.getByLabel("Plan JSON", { exact: true }).fill(JSON.stringify(v2, null, 2));
  await page.getByLabel("Version", { exact: true }).selectOption("edited");
  await page.getByRole("button", { name: "Check against traffic" }).click();
  await preview.getByRole("status").getByText("The edited plan against the newest events of checkout", { exact: false }).waitFor();
  expect(await preview.getByTestId("preview-violating").textContent()).toBe("1");
  expect(await preview.getByTestId("preview-dropped").textContent()).toBe("1");
  expect(await api(s.url, "GET", "/v2/tracking-plans/tp_check/versions").then((r) => r.json.versions.length)).toBe(1);

  // Saved, it becomes the current version; the versions link to each other.
  await page.getByRole("button", { name: "Save version" }).click();
  await page.getByText("Added version 2, now the current one.").waitFor();
  await page.getByText("Version 2 (current)").waitFor();
  expect((await api(s.url, "GET", "/v2/tracking-plans/tp_check")).json.plan).toEqual(v2);
  await page.getByTestId("versions").getByRole("link", { name: "v1" }).click();
  await page.waitForURL(/version=1/);
  await page.getByText("An older version.").waitFor();
  expect(await page.getByTestId("planned-events").locator("tbody tr").count()).toBe(1);
  // The new-version form starts from the version shown, numbered after the current one.
  expect(JSON.parse(await page.getByLabel("Plan JSON", { exact: true }).inputValue())).toEqual({ ...ordersPlan("tp_check", 3) });
  await context.close();
}, 60_000);

test.if(haveChromium)("a source's plan: the version and four settings saved with PUT, shown, kept per type, cleared with DELETE; deleting a plan", async () => {
  const src = await createSource(s.url, { name: `${HOSTILE} web` });
  expect((await api(s.url, "POST", "/v2/tracking-plans", ordersPlan("tp_set", 1))).status).toBe(201);
  expect((await api(s.url, "POST", "/v2/tracking-plans", ordersPlan("tp_set", 2, { required: false }))).status).toBe(201);
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/tracking-plans/tp_set`);
  await page.getByRole("heading", { level: 1, name: "Orders" }).waitFor();
  await page.getByLabel("Source", { exact: true }).selectOption(src.id);
  await page.waitForURL(`${s.url}/tracking-plans/tp_set?source=${src.id}`);
  await page.getByTestId("source-status").getByText("has no tracking plan").waitFor();
  await noMarkup(page);

  await page.getByLabel("Version", { exact: true }).selectOption("1");
  await page.getByLabel("Unplanned events", { exact: true }).selectOption("false");
  await page.getByLabel("Unplanned properties", { exact: true }).selectOption("drop");
  await page.getByLabel("Add violations to events", { exact: true }).selectOption("false");
  await page.getByRole("button", { name: `Save for ${HOSTILE} web` }).click();
  await page.getByText(`Saved: ${HOSTILE} web now checks its events against version 1 of this plan.`).waitFor();
  await page.getByTestId("source-status").getByText("uses this plan, version 1").waitFor();
  const stored = (await api(s.url, "GET", `/v2/sources/${src.id}/tracking-plan`)).json.dgSourceTrackingPlanConfig;
  expect(stored).toEqual({
    trackingPlan: { id: "tp_set", version: 1 },
    config: { global: { allowUnplannedEvents: "false", unplannedProperties: "drop", anyOtherViolation: "forward", propagateValidationErrors: "false" } },
  });
  await noMarkup(page);

  // Settings made elsewhere (per event type, text in any case) are read into the form and kept on save.
  const elsewhere = { trackingPlan: { id: "tp_set", version: 2 }, config: { global: { allowUnplannedEvents: false, anyOtherViolation: "DROP" }, track: { unplannedProperties: "drop" } } };
  expect((await api(s.url, "PUT", `/v2/sources/${src.id}/tracking-plan`, elsewhere)).status).toBe(200);
  await page.reload();
  await page.getByTestId("source-status").getByText("uses this plan, version 2").waitFor();
  // The form takes the source's settings just after the status shows: polled, not read once.
  const shows = (label: string, value: string) => waitFor(async () => (await page.getByLabel(label, { exact: true }).inputValue()) === value || undefined, { what: `${label} to show ${value}`, timeoutMs: 5000 });
  await shows("Version", "2");
  await shows("Unplanned events", "false");
  await shows("Other violations", "drop");
  await shows("Unplanned properties", "forward");
  await page.getByTestId("source-status").getByText("The settings of its own of track are kept as they are.", { exact: false }).waitFor();
  await page.getByLabel("Other violations", { exact: true }).selectOption("forward");
  await page.getByRole("button", { name: `Save for ${HOSTILE} web` }).click();
  await page.getByText(`now checks its events against version 2`, { exact: false }).waitFor();
  expect((await api(s.url, "GET", `/v2/sources/${src.id}/tracking-plan`)).json.dgSourceTrackingPlanConfig).toEqual({
    trackingPlan: { id: "tp_set", version: 2 },
    config: { global: { allowUnplannedEvents: "false", unplannedProperties: "forward", anyOtherViolation: "forward", propagateValidationErrors: "true" }, track: { unplannedProperties: "drop" } },
  });

  // Stop validating: DELETE, after a confirmation.
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Stop validating" }).click();
  await page.getByTestId("source-status").getByText("has no tracking plan").waitFor();
  expect((await api(s.url, "GET", `/v2/sources/${src.id}/tracking-plan`)).json.dgSourceTrackingPlanConfig).toBeNull();

  // A source on another plan says so and links to it.
  expect((await api(s.url, "PUT", `/v2/sources/${src.id}/tracking-plan`, { trackingPlan: { id: "tp_list", version: 1 }, config: { global: {} } })).status).toBe(200);
  await page.reload();
  const other = page.getByTestId("source-status").getByRole("link", { name: "tp_list" });
  await other.waitFor();
  expect(await other.getAttribute("href")).toBe("/tracking-plans/tp_list");

  // Deleting the plan, after a confirmation: back to the list, gone from the API.
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Delete", exact: true }).click();
  await page.waitForURL(`${s.url}/tracking-plans`);
  expect((await api(s.url, "GET", "/v2/tracking-plans/tp_set")).status).toBe(404);
  expect(await page.getByTestId("plans").getByText("tp_set").count()).toBe(0);
  await context.close();
}, 60_000);

test.if(haveChromium)("a source's page: the plan against traffic (planned but never seen, violations by property) and its dropped events with their violations, as text", async () => {
  const src = await createSource(s.url, { name: "traffic" });
  expect((await api(s.url, "POST", "/v2/destinations", { name: "nowhere", type: "WEBHOOK", config: { webhookUrl: "http://127.0.0.1:1/hook" }, sourceIds: [src.id] })).status).toBe(201);
  expect((await api(s.url, "POST", "/v2/tracking-plans", ordersPlan("tp_traffic", 1, { extra: ["Order Refunded"] }))).status).toBe(201);
  const settings = { trackingPlan: { id: "tp_traffic", version: 1 }, config: { track: { allowUnplannedEvents: "false", anyOtherViolation: "forward" } } };
  expect((await api(s.url, "PUT", `/v2/sources/${src.id}/tracking-plan`, settings)).status).toBe(200);
  expect((await sendEvent(s.url, src.writeKey, "track", { userId: "u1", event: "Order Completed", properties: { orderId: "o-1", total: "ten" } })).status).toBe(200);
  expect((await sendEvent(s.url, src.writeKey, "track", { userId: "u2", event: HOSTILE })).status).toBe(200);
  await waitFor(async () => (await api(s.url, "GET", `/v2/sources/${src.id}/tracking-plan/dropped-events`)).json.droppedEvents.length === 1 || undefined, { what: "the dropped event" });
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/sources/${src.id}`);
  await page.getByTestId("violations-by-property").getByText("/properties/total").waitFor();
  await page.getByTestId("dropped-events").getByText(HOSTILE, { exact: true }).waitFor();
  await page.getByTestId("planned-not-seen").getByText("Order Refunded").waitFor();
  expect(await page.getByTestId("violations-today").textContent()).toBe("2");
  await noMarkup(page);
  await context.close();
}, 60_000);
