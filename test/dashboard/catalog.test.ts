/**
 * The Events page (the event catalog) in headless Chromium against an in-process Sluice fed real
 * event calls: the models a source sent with their counts, sorted by volume, last seen and first
 * seen, searched, marked "New this week" and "Type changed"; one model's properties (types with
 * counts, presence), its 30-day chart, its live link and its draft JSON Schema (copied); "Draft a
 * tracking plan" filling the add-plan form with a plan that saves; hostile event names and
 * property paths shown as text. The catalog flushes every second here (--catalog-flush-seconds).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Dashboard, type Page, startDashboard } from "../support/dashboard-harness";
import { type TestServer, api, createSource, haveChromium, requireChromium, sendEvent, waitFor } from "../support/helpers";

requireChromium("catalog.test.ts");

const HOSTILE = "<img src=x onerror=alert(1)>";
const HOSTILE_KEY = "<img src=x onerror=alert(2)>";

let dash: Dashboard;
let s: TestServer;
let shop: { id: string; writeKey: string; name: string };

async function send(writeKey: string, call: string, body: Record<string, unknown>) {
  const res = await sendEvent(s.url, writeKey, call, { userId: "user-1", ...body });
  expect(res.status).toBe(200);
}

const catalog = async (sourceId: string) => (await api(s.url, "GET", `/v2/catalog/events?sourceId=${sourceId}`)).json as { events: Array<{ type: string; event: string; count: number }> };

beforeAll(async () => {
  if (!haveChromium) return;
  dash = await startDashboard({ args: ["--catalog-flush-seconds", "1"] });
  s = dash.s;
  shop = await createSource(s.url, { name: "shop" });
  // Four "Order Completed" (total: an integer, a fraction, then text: a type change), three
  // "Product Viewed", two "Signed Up", one "Cart Viewed", one hostile name, one identify.
  for (const total of [10, 20, 30.5, "12.50"]) await send(shop.writeKey, "track", { event: "Order Completed", properties: { total, currency: "EUR" } });
  for (const sku of ["A-1", "B-2", "C-3"]) await send(shop.writeKey, "track", { event: "Product Viewed", properties: { sku, price: 5 } });
  for (const trial of [true, false]) await send(shop.writeKey, "track", { event: "Signed Up", properties: { plan: "pro", trial } });
  await send(shop.writeKey, "track", { event: "Cart Viewed", properties: { items: [{ sku: "A-1", quantity: 2 }] } });
  await send(shop.writeKey, "track", { event: HOSTILE, properties: { [HOSTILE_KEY]: HOSTILE } });
  await send(shop.writeKey, "identify", { traits: { email: "someone@example.com", plan: "pro" } });
  // The catalog saves its counts every second: wait until all six models are counted.
  await waitFor(async () => (await catalog(shop.id)).events.reduce((n, m) => n + m.count, 0) === 12, { what: "the catalog to count the 12 events", timeoutMs: 20_000 });
}, 60_000);

afterAll(() => dash?.stop());

const noMarkup = async (page: Page) => expect(await page.locator("img").count()).toBe(0);
const rowNames = (page: Page) => page.getByTestId("model-row").locator("td.ev-name a").allTextContents();

test.if(haveChromium)("the list: every model with its count, by volume; sorts, search and the source live in the URL; markers; hostile names are text", async () => {
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/`);
  await page.getByRole("link", { name: "Events", exact: true }).click();
  // The first source is picked and named in the URL.
  await page.waitForURL(`${s.url}/events?source=${shop.id}`);
  await page.getByRole("heading", { level: 1, name: "Events" }).waitFor();
  await page.getByTestId("model-row").first().waitFor();
  expect(await page.getByLabel("Source").locator("option:checked").textContent()).toBe("shop");

  // By volume: 4, 3, 2, then the ones with 1 by type and name (identify, then "<img…" before "Cart Viewed").
  expect(await rowNames(page)).toEqual(["Order Completed", "Product Viewed", "Signed Up", "every identify call", HOSTILE, "Cart Viewed"]);
  const order = page.getByTestId("model-row").filter({ hasText: "Order Completed" });
  expect(await order.locator("td.num").textContent()).toBe("4");
  expect(await order.getByText("Type changed").count()).toBe(1);
  expect(await order.getByText("New this week").count()).toBe(1);
  // integer and number are one JSON type: no change there.
  expect(await page.getByTestId("model-row").filter({ hasText: "Product Viewed" }).getByText("Type changed").count()).toBe(0);
  expect(await page.getByTestId("model-row").filter({ hasText: "Cart Viewed" }).getByText("Type changed").count()).toBe(0);
  expect(await page.getByTestId("model-row").getByText("New this week").count()).toBe(6);
  await noMarkup(page);

  // Newest first seen: the identify came last. Sort by name: by type, then name.
  await page.getByLabel("Sort by").selectOption("firstSeen");
  await page.waitForURL(`${s.url}/events?source=${shop.id}&sort=firstSeen`);
  await waitFor(async () => (await rowNames(page))[0] === "every identify call", { what: "newest first" });
  expect((await rowNames(page))[1]).toBe(HOSTILE);
  await page.getByLabel("Sort by").selectOption("event");
  await waitFor(async () => JSON.stringify(await rowNames(page)) === JSON.stringify(["every identify call", HOSTILE, "Cart Viewed", "Order Completed", "Product Viewed", "Signed Up"]), {
    what: "by type, then name",
  });

  // Search: by name, kept in the URL over a reload.
  await page.getByLabel("Search").fill("viewed");
  await waitFor(async () => JSON.stringify(await rowNames(page)) === JSON.stringify(["Cart Viewed", "Product Viewed"]), { what: "the search to narrow the list" });
  expect(new URL(page.url()).searchParams.get("q")).toBe("viewed");
  await page.reload();
  await waitFor(async () => JSON.stringify(await rowNames(page)) === JSON.stringify(["Cart Viewed", "Product Viewed"]), { what: "the search kept over a reload" });
  expect(await page.getByLabel("Search").inputValue()).toBe("viewed");
  await page.getByLabel("Search").fill("nothing like it");
  await page.getByText("No event name contains “nothing like it”.").waitFor();

  // Another source: its own (empty) catalog; an unknown one says so.
  const other = await createSource(s.url, { name: `${HOSTILE} quiet` });
  await page.goto(`${s.url}/events?source=${shop.id}`);
  await page.getByTestId("model-row").first().waitFor();
  await page.getByLabel("Source").selectOption(other.id);
  await page.waitForURL(`${s.url}/events?source=${other.id}`);
  await page.getByText("No events seen from this source yet.").waitFor();
  await noMarkup(page);
  await page.goto(`${s.url}/events?source=src_nope`);
  await page.getByText("There is no source with the id src_nope.").waitFor();
  await context.close();
}, 60_000);

test.if(haveChromium)("a model: its properties with types and presence, its 30-day chart, the live link, its draft JSON Schema copied", async () => {
  const { context, page } = await dash.newPage();
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: s.url });
  await page.goto(`${s.url}/events?source=${shop.id}`);
  await page.getByRole("link", { name: "Order Completed" }).click();
  await page.waitForURL(`${s.url}/events?source=${shop.id}&model=track&event=Order+Completed`);
  const detail = page.getByTestId("model-detail");
  await detail.getByRole("heading", { level: 2, name: "Order Completed" }).waitFor();
  expect(await detail.getByTestId("model-count").textContent()).toBe("4");

  // total held integers, a fraction and text: all three types with their counts, and the marker.
  const total = detail.locator('tr[data-path="properties.total"]');
  await total.waitFor();
  expect(await total.locator(".ev-type").allTextContents()).toEqual(["string 1", "integer 2", "number 1"]);
  expect(await total.getByText("Type changed").count()).toBe(1);
  expect(await total.locator("td.num").textContent()).toBe("100%");
  const currency = detail.locator('tr[data-path="properties.currency"]');
  expect(await currency.locator(".ev-type").allTextContents()).toEqual(["string 4"]);
  expect(await currency.getByText("Type changed").count()).toBe(0);
  expect(await currency.locator("td.ev-examples").textContent()).toBe('"EUR"');

  // 30 bars, today's holding the 4 events.
  const chart = detail.getByTestId("volume-chart");
  expect(await chart.locator("rect").count()).toBe(30);
  const today = new Date().toISOString().slice(0, 10);
  const todayBar = chart.locator(`rect[data-day="${today}"]`);
  expect(await todayBar.getAttribute("data-count")).toBe("4");
  expect(await todayBar.locator("title").textContent()).toBe(`${today}: 4`);
  expect(await chart.getAttribute("aria-label")).toContain("4 in all");

  expect(await detail.getByRole("link", { name: "Live events of this source" }).getAttribute("href")).toBe(`/live?source=${shop.id}`);

  // The draft schema as the API gives it, and the copy button copies it.
  const expected = (await api(s.url, "GET", `/v2/catalog/events/track?sourceId=${shop.id}&event=Order%20Completed`)).json.jsonSchema;
  const schema = detail.getByTestId("json-schema");
  await schema.waitFor();
  expect(JSON.parse((await schema.textContent())!)).toEqual(expected);
  expect(expected.properties.properties.properties.total.type).toEqual(["string", "number"]);
  await detail.getByRole("button", { name: "Copy schema" }).click();
  await detail.getByRole("button", { name: "Copied" }).waitFor();
  expect(JSON.parse(await page.evaluate("navigator.clipboard.readText()"))).toEqual(expected);

  // A pasted link opens the same model; the hostile one shows its name and path as text.
  await page.goto(`${s.url}/events?source=${shop.id}&model=track&event=${encodeURIComponent(HOSTILE)}`);
  await detail.getByRole("heading", { level: 2, name: HOSTILE }).waitFor();
  const path = detail.locator("td.ev-path code").filter({ hasText: HOSTILE_KEY });
  await path.waitFor();
  expect(await path.textContent()).toBe(`properties.${HOSTILE_KEY}`);
  expect(await detail.getByTestId("json-schema").textContent()).toContain(HOSTILE_KEY);
  await noMarkup(page);

  // A non-track model: every identify call, its traits.
  await page.getByRole("link", { name: "every identify call" }).click();
  await page.waitForURL(`${s.url}/events?source=${shop.id}&model=identify`);
  await detail.locator('tr[data-path="traits.plan"]').waitFor();
  // Close goes back to the list alone; an unknown model says so.
  await detail.getByRole("link", { name: "Close this event" }).click();
  await page.waitForURL(`${s.url}/events?source=${shop.id}`);
  expect(await page.getByTestId("model-detail").count()).toBe(0);
  await page.goto(`${s.url}/events?source=${shop.id}&model=track&event=Never%20Sent`);
  await page.getByText("This source has sent no such events").waitFor();
  await context.close();
}, 60_000);

test.if(haveChromium)("counts follow new events without a reload", async () => {
  const src = await createSource(s.url, { name: "growing" });
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/events?source=${src.id}`);
  await page.getByText("No events seen from this source yet.").waitFor();
  await send(src.writeKey, "track", { event: "Late Arrival", properties: { n: 1 } });
  await send(src.writeKey, "track", { event: "Late Arrival", properties: { n: 2 } });
  const row = page.getByTestId("model-row").filter({ hasText: "Late Arrival" });
  await row.waitFor({ timeout: 20_000 });
  await waitFor(async () => (await row.locator("td.num").textContent()) === "2", { what: "the page to show both events", timeoutMs: 20_000 });
  await context.close();
}, 60_000);

test.if(haveChromium)("Draft a tracking plan: the add-plan form holds a plan of every model's draft schema, which saves and checks the traffic it came from", async () => {
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/events?source=${shop.id}`);
  await page.getByTestId("model-row").first().waitFor();
  await page.getByRole("button", { name: "Draft a tracking plan" }).click();
  await page.waitForURL(`${s.url}/tracking-plans?draft=${shop.id}`);
  await page.getByText("Drafted from the traffic of shop: 6 events.", { exact: false }).waitFor();
  const draft = JSON.parse(await page.getByLabel("Plan JSON, as RudderStack exports it").inputValue());
  expect(draft.name).toBe("shop draft");
  expect(draft.version).toBe(1);
  expect(draft.events.map((e: { eventType: string; name: string }) => `${e.eventType}:${e.name}`).sort()).toEqual(
    ["identify:", `track:${HOSTILE}`, "track:Cart Viewed", "track:Order Completed", "track:Product Viewed", "track:Signed Up"].sort(),
  );
  const expected = (await api(s.url, "GET", `/v2/catalog/events/track?sourceId=${shop.id}&event=Signed%20Up`)).json.jsonSchema;
  expect(draft.events.find((e: { name: string }) => e.name === "Signed Up")).toEqual({ name: "Signed Up", eventType: "track", description: expect.stringMatching(/^Drafted from 2 events seen /), rules: expected });

  await page.getByRole("button", { name: "Add plan" }).click();
  await page.waitForURL(/\/tracking-plans\/tp_/);
  const id = new URL(page.url()).pathname.split("/").pop()!;
  await page.getByRole("heading", { level: 1, name: "shop draft" }).waitFor();
  const stored = (await api(s.url, "GET", `/v2/tracking-plans/${id}`)).json;
  expect(stored.plan).toEqual(draft);
  expect(await page.getByTestId("planned-events").getByRole("row").count()).toBe(7);
  await noMarkup(page);

  // The traffic it was drafted from passes it.
  await page.getByLabel("Source", { exact: true }).selectOption(shop.id);
  await page.getByRole("button", { name: "Check against traffic" }).click();
  await page.getByTestId("preview").waitFor();
  expect(await page.getByTestId("preview-violating").textContent()).toBe("0");
  expect(await page.getByTestId("preview").getByRole("status").textContent()).toContain("checked 12 events");
  await context.close();
}, 60_000);
