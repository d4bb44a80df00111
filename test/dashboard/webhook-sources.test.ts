/**
 * Webhook sources in the dashboard, in headless Chromium against an in-process Sluice: creating
 * one of the types GET /source-types lists, its page (type, the URL to paste into the service
 * with its copy button, the setup), "Try a sample" (the request beside the events it became, an
 * edited payload, a refusal, an answer), the URL taking a service's real request, and the live
 * page showing each webhook request beside its events. Hostile names and payloads stay text.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Dashboard, type Page, startDashboard } from "../support/dashboard-harness";
import { type TestServer, api, createSource, haveChromium, readEvents, requireChromium, waitFor } from "../support/helpers";

requireChromium("webhook-sources.test.ts");

const HOSTILE = `<img src=x onerror=alert(1)>`;

let dash: Dashboard;
let s: TestServer;
let shopifySample: { query?: Record<string, string>; body: Record<string, any> };

beforeAll(async () => {
  if (!haveChromium) return;
  dash = await startDashboard();
  s = dash.s;
  const types = (await api(s.url, "GET", "/source-types")).json as Array<{ name: string; sample: typeof shopifySample }>;
  shopifySample = types.find((t) => t.name === "Shopify")!.sample;
}, 60_000);

afterAll(() => dash?.stop());

const noMarkup = async (page: Page) => expect(await page.locator("img").count()).toBe(0);

/** Posts a body to a webhook source's URL as the service would. */
const postWebhook = (writeKey: string, query: string, body: string) =>
  fetch(`${s.url}/v1/webhook?writeKey=${encodeURIComponent(writeKey)}${query}`, { method: "POST", headers: { "content-type": "application/json" }, body });

test.if(haveChromium)("create a Shopify source through the form: its page shows the type, the webhook URL with the write key (copied), the setup; Try a sample shows the request and the events", async () => {
  const { context, page } = await dash.newPage();
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: s.url });
  await page.goto(`${s.url}/sources`);
  // The default is an event-stream source; the webhook types are offered by display name.
  expect(await page.getByLabel("Type", { exact: true }).inputValue()).toBe("");
  expect(await page.getByLabel("Type", { exact: true }).locator("option:checked").textContent()).toBe("Event stream (SDKs, HTTP API)");
  await page.getByLabel("Type", { exact: true }).locator("option", { hasText: "Customerio" }).waitFor({ state: "attached" });
  await page.getByLabel("Type", { exact: true }).selectOption({ label: "Shopify" });
  await page.getByTestId("type-hint").getByText("Shopify posts its webhooks", { exact: false }).waitFor();
  await page.getByLabel("Name", { exact: true }).fill("shop");
  await page.getByRole("button", { name: "Create source" }).click();
  await page.waitForURL(/\/sources\/src_/);
  const id = new URL(page.url()).pathname.split("/").pop()!;
  const created = (await api(s.url, "GET", `/v2/sources/${id}`)).json;
  expect(created.sourceDefinition).toEqual({ name: "Shopify", category: "webhook", type: "shopify" });

  await page.getByRole("heading", { level: 1, name: "shop" }).waitFor();
  await page.getByTestId("source-type").getByText("Shopify").waitFor();
  const url = `${s.url}/v1/webhook?writeKey=${created.writeKey}`;
  expect(await page.getByTestId("webhook-url").textContent()).toBe(url);
  await page.getByRole("button", { name: "Copy webhook URL" }).click();
  await page.getByRole("button", { name: "Copied" }).waitFor();
  expect(await page.evaluate("navigator.clipboard.readText()")).toBe(url);
  expect(await page.getByTestId("webhook-setup").textContent()).toContain("In the Shopify admin");
  // The setup's parameters are set as code; a webhook source has no SDK snippets.
  expect(await page.getByTestId("webhook-setup").locator("code").first().textContent()).toBe("&topic=orders_create");
  expect(await page.getByTestId("snippet").count()).toBe(0);

  await page.getByRole("button", { name: "Try a sample" }).click();
  const events = page.getByTestId("sample-events");
  await events.waitFor();
  const mapped = JSON.parse((await events.textContent())!);
  expect(mapped).toHaveLength(1);
  expect(mapped[0]).toMatchObject({ type: "track", event: "Order Created", userId: String(shopifySample.body.customer.id) });
  const request = (await page.getByTestId("sample-request").textContent())!;
  expect(request).toStartWith(`POST /v1/webhook?writeKey=${created.writeKey}&topic=orders_create\n`);
  expect(request).toContain(`"email": "${shopifySample.body.email}"`);
  await page.getByRole("heading", { name: "Became 1 event" }).waitFor();
  // A dry run: nothing was stored.
  expect((await readEvents(s)).filter((e) => e.event === "Order Created")).toEqual([]);

  // The URL as shown takes the service's request, and the sample's event is what it stores.
  const res = await postWebhook(created.writeKey, "&topic=orders_create", JSON.stringify(shopifySample.body));
  expect(res.status).toBe(200);
  const stored = await waitFor(async () => (await readEvents(s)).find((e) => e.event === "Order Created"), { what: "the webhook's event stored" });
  expect(stored.properties).toEqual(mapped[0].properties);

  // The list says what kind each source is.
  await createSource(s.url, { name: "web-app" });
  await page.goto(`${s.url}/sources`);
  await page.getByRole("row").filter({ hasText: "web-app" }).getByText("Event stream").waitFor();
  expect(await page.getByRole("row").filter({ hasText: created.writeKey }).getByRole("cell").nth(2).textContent()).toBe("Shopify");
  await context.close();
}, 30_000);

test.if(haveChromium)("an edited payload: hostile values in the name and the payload are shown as text; a refusal, an answer and bad JSON each say so; Reset brings the sample back", async () => {
  const src = await createSource(s.url, { name: `${HOSTILE} shop`, type: "shopify" });
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/sources/${src.id}`);
  await page.getByRole("heading", { level: 1, name: `${HOSTILE} shop` }).waitFor();
  await noMarkup(page);

  await page.getByText("Edit the payload").click();
  const editor = page.getByLabel("Payload");
  // Prefilled with the type's sample.
  expect(JSON.parse(await editor.inputValue())).toEqual(shopifySample);
  const body = { ...shopifySample.body, line_items: [{ ...shopifySample.body.line_items[0], title: HOSTILE }], customer: { ...shopifySample.body.customer, first_name: HOSTILE } };
  await editor.fill(JSON.stringify({ query: { topic: "orders_create" }, headers: { "X-Note": HOSTILE }, body }));
  await page.getByRole("button", { name: "Try a sample" }).click();
  const events = page.getByTestId("sample-events");
  await events.getByText(HOSTILE, { exact: false }).first().waitFor();
  const mapped = JSON.parse((await events.textContent())!);
  expect(mapped[0].traits.firstName).toBe(HOSTILE);
  expect(mapped[0].properties.products[0].title).toBe(HOSTILE);
  expect(await page.getByTestId("sample-request").textContent()).toContain(`X-Note: ${HOSTILE}`);
  await noMarkup(page);

  // A body the mapping cannot read: the refusal /v1/webhook would give.
  await editor.fill(JSON.stringify({ body: HOSTILE }));
  await page.getByRole("button", { name: "Try a sample" }).click();
  await page.getByTestId("sample-error").getByText("/v1/webhook would answer 400: Invalid payload", { exact: false }).waitFor();
  await page.getByRole("heading", { name: "Refused (400)" }).waitFor();
  expect(await page.getByTestId("sample-events").count()).toBe(0);
  await noMarkup(page);

  // A topic Shopify's mapping skips: no events, and the answer the service would get.
  await editor.fill(JSON.stringify({ query: { topic: "app_uninstalled" }, body: {} }));
  await page.getByRole("button", { name: "Try a sample" }).click();
  await page.getByRole("heading", { name: "Answered, no events" }).waitFor();
  expect(await page.getByTestId("sample-answer").textContent()).toBe("OK");

  // Not JSON, or not an object: said on the page, nothing sent.
  await editor.fill("{ not json");
  await page.getByRole("button", { name: "Try a sample" }).click();
  await page.getByRole("alert").getByText("Payload: not valid JSON", { exact: false }).waitFor();
  expect(await page.getByTestId("sample-result").count()).toBe(0);
  // The server's own check, in its words.
  await editor.fill(JSON.stringify({ query: { topic: 5 }, body: {} }));
  await page.getByRole("button", { name: "Try a sample" }).click();
  await page.getByRole("alert").getByText("payload.query.topic", { exact: false }).waitFor();

  await page.getByRole("button", { name: "Reset to the sample" }).click();
  expect(JSON.parse(await editor.inputValue())).toEqual(shopifySample);
  await page.getByRole("button", { name: "Reset to the sample" }).waitFor({ state: "detached" });
  await page.getByRole("button", { name: "Try a sample" }).click();
  await page.getByRole("heading", { name: "Became 1 event" }).waitFor();
  await context.close();
}, 30_000);

test.if(haveChromium)("another data-plane address (?dataPlane=) fills the webhook URL; an Auth0 source shows its own type and sample", async () => {
  const src = await createSource(s.url, { name: "auth", type: "auth0" });
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/sources/${src.id}`);
  await page.getByTestId("source-type").getByText("Auth0").waitFor();
  await page.getByLabel("Data plane URL").fill("https://hooks.example.com/");
  await page.getByRole("button", { name: "Use this address" }).click();
  await page.waitForURL(`${s.url}/sources/${src.id}?dataPlane=${encodeURIComponent("https://hooks.example.com")}`);
  await page.reload();
  await page.getByTestId("webhook-url").getByText(`https://hooks.example.com/v1/webhook?writeKey=${src.writeKey}`, { exact: true }).waitFor();

  await page.getByRole("button", { name: "Try a sample" }).click();
  const events = JSON.parse((await page.getByTestId("sample-events").textContent())!);
  expect(events.length).toBeGreaterThan(0);
  expect(events[0].context.integration).toEqual({ name: "Auth0" });
  await context.close();
}, 30_000);

test.if(haveChromium)("live events: each webhook request shows as it came (method, path, body) beside the events it became; a refused one says why; hostile bodies stay text", async () => {
  const src = await createSource(s.url, { name: "live-shop", type: "Shopify" });
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/live?source=${src.id}`);
  await page.getByTestId("live-status").getByText("Live", { exact: true }).waitFor();

  const body = { ...shopifySample.body, customer: { ...shopifySample.body.customer, first_name: HOSTILE } };
  expect((await postWebhook(src.writeKey, "&topic=orders_create", JSON.stringify(body))).status).toBe(200);
  const rows = page.getByTestId("live-row");
  const request = rows.filter({ hasText: "webhook" }).first();
  await request.getByText("1 event · POST ?topic=orders_create").waitFor();
  // The event it became is listed too, just below it (newest first).
  expect(await rows.nth(1).textContent()).toContain("Order Created");

  await request.click();
  const raw = (await page.getByTestId("live-request").textContent())!;
  expect(raw).toStartWith("POST /v1/webhook?topic=orders_create\n");
  expect(raw).toContain("Content-Type: application/json");
  expect(raw).toContain(`"first_name": "${HOSTILE}"`);
  // No credentials in what the page is given.
  expect(raw).not.toContain(src.writeKey);
  await page.getByTestId("live-outcome").getByText("Became 1 event").waitFor();
  const paired = JSON.parse((await page.getByTestId("live-request-events").textContent())!);
  expect(paired).toHaveLength(1);
  expect(paired[0]).toMatchObject({ event: "Order Created", traits: { firstName: HOSTILE } });
  expect(paired[0].messageId).toBeString();
  await noMarkup(page);

  expect((await postWebhook(src.writeKey, "", HOSTILE)).status).toBe(400);
  const refused = rows.filter({ hasText: "webhook" }).first();
  await refused.getByText("400", { exact: false }).waitFor();
  await refused.click();
  await page.getByTestId("live-outcome").getByText("Answered 400:", { exact: false }).waitFor();
  expect(await page.getByTestId("live-request").textContent()).toEndWith(`\n\n${HOSTILE}`);
  await noMarkup(page);

  // The type filter shows the requests alone.
  await page.getByLabel("Type").selectOption("webhook");
  await waitFor(async () => (await rows.count()) === 2, { what: "only the two requests listed" });
  expect((await rows.allTextContents()).every((t) => t.startsWith("webhook"))).toBe(true);
  await context.close();
}, 30_000);

test.if(haveChromium)("at 390 px wide a webhook source's page with a sample run fits the screen", async () => {
  const src = await createSource(s.url, { name: "a-webhook-source-with-a-rather-long-name", type: "Customerio" });
  const { context, page } = await dash.newPage({ width: 390 });
  await page.goto(`${s.url}/sources/${src.id}`);
  await page.getByRole("button", { name: "Try a sample" }).click();
  await page.getByTestId("sample-result").waitFor();
  expect(await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")).toBe(0);
  await context.close();
}, 30_000);
