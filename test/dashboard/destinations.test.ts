/**
 * The destinations pages in headless Chromium against an in-process Sluice and real local HTTP
 * sinks: create a WEBHOOK destination through the form built from its definition, connect a
 * source, see an event delivered (stats and the attempt with its answer), see a failing event
 * aborted and replay it from the page, enable/disable, disconnect; secrets masked after save and
 * replaced; hostile names, events and answers shown as text. Needs Chromium, as
 * dashboard-browser.test.ts.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Dashboard, startDashboard } from "../support/dashboard-harness";
import { type TestServer, api, createSource, haveChromium, requireChromium, sendEvent, startSink, waitFor } from "../support/helpers";

requireChromium("dashboard-destinations.test.ts");

const HOSTILE = "<img src=x onerror=alert(1)>";

let dash: Dashboard;
let s: TestServer;

beforeAll(async () => {
  if (!haveChromium) return;
  // A failing delivery is aborted after one attempt and a fraction of a second.
  dash = await startDashboard({ args: ["--retry-min-attempts", "1", "--retry-max-hours", "0.0001", "--retry-backoff-ms", "20"] });
  s = dash.s;
}, 60_000);

afterAll(() => dash?.stop());

test.if(haveChromium)(
  "WEBHOOK through the form → connect a source → event delivered with stats and attempt → failing event aborted → replayed from the page",
  async () => {
    let failing = false;
    const sink = startSink((req) => (failing ? new Response(`boom ${HOSTILE}`, { status: 503 }) : new Response(`ok for ${req.body?.event}`)));
    const src = await createSource(s.url, { name: `${HOSTILE} web` });
    const { context, page } = await dash.newPage();

    await page.goto(`${s.url}/destinations`);
    await page.getByText("No destinations yet.").waitFor();
    await page.getByRole("button", { name: "New destination" }).first().click();
    await page.waitForURL(/\/destinations\?new=WEBHOOK$/);
    // The form follows the definition: webhookUrl required, webhookMethod a choice, headers JSON.
    const form = page.getByRole("form", { name: "New destination" });
    await form.getByLabel("Name").fill(`${HOSTILE} hook`);
    await form.getByLabel(/^webhookUrl/).fill(`${sink.url}/hook`);
    expect(await form.getByLabel(/^webhookUrl/).getAttribute("required")).not.toBeNull();
    await form.getByLabel(/^webhookMethod/).selectOption("PUT");
    await form.getByLabel(/^headers/).fill("[{");
    await form.getByRole("button", { name: "Create destination" }).click();
    await form.getByRole("alert").getByText("headers: not valid JSON").waitFor();
    await form.getByLabel(/^headers/).fill('[{"from":"X-Env","to":"prod"}]');
    await form.getByRole("button", { name: "Create destination" }).click();
    await page.waitForURL(/\/destinations\/dst_[^/?]+$/);
    const id = new URL(page.url()).pathname.split("/").pop()!;
    const saved = (await api(s.url, "GET", `/v2/destinations/${id}`)).json;
    expect(saved).toMatchObject({ name: `${HOSTILE} hook`, type: "WEBHOOK", enabled: true, sourceIds: [], config: { webhookUrl: `${sink.url}/hook`, webhookMethod: "PUT", headers: [{ from: "X-Env", to: "prod" }] } });
    // The URL changes before the new page has drawn: wait for its heading, then check it exactly.
    await page.getByRole("heading", { level: 1, name: `${HOSTILE} hook` }).waitFor();
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe(`${HOSTILE} hook`);
    await page.getByText("No source is connected").waitFor();

    // A pasted link or a reload opens the same view.
    await page.reload();
    await page.getByRole("heading", { name: `${HOSTILE} hook` }).waitFor();

    await page.getByLabel("Connect a source").selectOption(src.id);
    await page.getByRole("button", { name: "Connect", exact: true }).click();
    await page.getByRole("button", { name: `Disconnect ${HOSTILE} web` }).waitFor();
    expect((await api(s.url, "GET", `/v2/destinations/${id}`)).json.sourceIds).toEqual([src.id]);

    expect((await sendEvent(s.url, src.writeKey, "track", { userId: "u1", event: "Signed Up", properties: { note: HOSTILE } })).status).toBe(200);
    await waitFor(() => sink.received.length === 1, { what: "the webhook request" });
    expect(sink.received[0]).toMatchObject({ method: "PUT", path: "/hook" });
    expect(sink.received[0].headers["x-env"]).toBe("prod");
    // The overview refreshes itself: the delivery shows in the stats without a reload.
    await page.getByTestId("count-succeeded").getByText("1", { exact: true }).waitFor({ timeout: 10_000 });
    await page.getByText("Delivered in the last hour: 1").waitFor();

    await page.getByRole("navigation", { name: "Destination sections" }).getByRole("link", { name: "Deliveries" }).click();
    await page.waitForURL(`${s.url}/destinations/${id}?tab=deliveries`);
    const delivered = page.getByRole("row").filter({ hasText: "track: Signed Up" });
    await delivered.waitFor();
    expect(await delivered.getByText("succeeded", { exact: true }).count()).toBe(1);
    expect(await delivered.getByRole("cell", { name: "200", exact: true }).count()).toBe(1);
    await delivered.getByText("ok for Signed Up").first().waitFor();
    expect(await delivered.getByText(`from ${HOSTILE} web`).count()).toBe(1);
    await delivered.getByRole("button", { name: "Details" }).click();
    const eventJson = await page.locator(".dst-expanded pre").filter({ hasText: '"event": "Signed Up"' }).textContent();
    expect(JSON.parse(eventJson!).properties.note).toBe(HOSTILE);

    // The sink fails: with one attempt and a short retry window the event is aborted.
    failing = true;
    await sendEvent(s.url, src.writeKey, "track", { userId: "u2", event: "Will Fail" });
    await waitFor(async () => (await api(s.url, "GET", `/v2/destinations/${id}/stats`)).json.counts.aborted === 1, { what: "the event aborted" });
    await page.getByRole("link", { name: "aborted", exact: true }).click();
    await page.waitForURL(`${s.url}/destinations/${id}?tab=deliveries&state=aborted`);
    const abortedRow = page.getByRole("row").filter({ hasText: "track: Will Fail" });
    await abortedRow.waitFor({ timeout: 10_000 });
    await abortedRow.getByText(/^retry limit reached after \d+ attempts: destination answered 503$/).waitFor();
    expect(await abortedRow.locator(".dst-response > pre").textContent()).toBe(`boom ${HOSTILE}`);
    expect(await page.getByRole("row").filter({ hasText: "Signed Up" }).count()).toBe(0);
    // The filter survives a reload.
    await page.reload();
    await abortedRow.waitFor();

    failing = false;
    await page.getByRole("button", { name: "Replay aborted" }).click();
    await page.getByRole("status").getByText("1 aborted event put back in the queue.").waitFor();
    await waitFor(async () => (await api(s.url, "GET", `/v2/destinations/${id}/stats`)).json.counts.succeeded === 2, { what: "the replayed event delivered" });
    await page.getByRole("link", { name: "all", exact: true }).click();
    await page.getByRole("row").filter({ hasText: "track: Will Fail" }).getByText("succeeded", { exact: true }).waitFor({ timeout: 10_000 });

    // Nothing from events, answers or names became markup.
    expect(await page.locator("img").count()).toBe(0);

    // Disable and enable from the header; disconnect from the overview.
    await page.getByRole("navigation", { name: "Destination sections" }).getByRole("link", { name: "Overview" }).click();
    await page.getByRole("button", { name: "Disable" }).click();
    await page.getByRole("button", { name: "Enable" }).waitFor();
    expect((await api(s.url, "GET", `/v2/destinations/${id}`)).json.enabled).toBe(false);
    await page.getByRole("button", { name: "Enable" }).click();
    await page.getByRole("button", { name: "Disable" }).waitFor();
    expect((await api(s.url, "GET", `/v2/destinations/${id}`)).json.enabled).toBe(true);
    await page.getByRole("button", { name: `Disconnect ${HOSTILE} web` }).click();
    await page.getByText("No source is connected").waitFor();
    expect((await api(s.url, "GET", `/v2/destinations/${id}`)).json.sourceIds).toEqual([]);

    // The list shows it, its name as text.
    await page.getByRole("link", { name: "← Destinations" }).click();
    const row = page.getByRole("row").filter({ hasText: "hook" });
    await row.waitFor();
    expect(await row.getByRole("link").textContent()).toBe(`${HOSTILE} hook`);
    expect(await page.locator("img").count()).toBe(0);
    await context.close();
    sink.stop();
  },
  30_000,
);

test.if(haveChromium)("secrets: a saved secret is shown masked, never its value; Replace sets a new one and keeps the others", async () => {
  const created = await api(s.url, "POST", "/v2/destinations", {
    name: "http-with-secrets",
    type: "HTTP",
    config: { apiUrl: "http://127.0.0.1:1/in", auth: "bearerTokenAuth", bearerToken: "tok-first-secret-123", password: "pw-second-secret-456", eventDelivery: false },
  });
  expect(created.status).toBe(201);
  const id = created.json.id;
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/destinations/${id}?tab=config`);
  const form = page.getByRole("form", { name: "Configuration" });
  await form.getByTestId("secret-bearerToken").waitFor();
  expect(await form.getByTestId("secret-password").textContent()).toContain("saved");
  expect(await form.getByLabel(/^apiUrl/).inputValue()).toBe("http://127.0.0.1:1/in");
  expect(await form.getByLabel(/^auth/).inputValue()).toBe("bearerTokenAuth");
  const html = await page.content();
  expect(html).not.toContain("tok-first-secret-123");
  expect(html).not.toContain("pw-second-secret-456");

  await form.getByRole("button", { name: "Replace bearerToken" }).click();
  await form.getByLabel(/^bearerToken/).fill("tok-replaced-789");
  await form.getByRole("button", { name: "Save", exact: true }).click();
  await page.getByRole("status").getByText("Saved.").waitFor();
  await form.getByTestId("secret-bearerToken").waitFor();
  const config = (await api(s.url, "GET", `/v2/destinations/${id}`)).json.config;
  // The replaced one changed; the other secret and the untyped key are kept as they were (and the
  // dashboard default the API saved with the destination, isDefaultMapping).
  expect(config).toEqual({ apiUrl: "http://127.0.0.1:1/in", auth: "bearerTokenAuth", bearerToken: "tok-replaced-789", password: "pw-second-secret-456", eventDelivery: false, isDefaultMapping: true });
  expect(await page.content()).not.toContain("tok-replaced-789");

  // A required field left blank is refused, naming it.
  await form.getByLabel(/^apiUrl/).fill(" ");
  await form.getByRole("button", { name: "Save", exact: true }).click();
  await page.getByRole("alert").getByText("apiUrl: is required").waitFor();
  await context.close();
}, 30_000);

test.if(haveChromium)("at 390px wide the list and a destination fit the screen; an unknown id says so", async () => {
  const src = await createSource(s.url);
  const created = await api(s.url, "POST", "/v2/destinations", { name: "narrow-hook", type: "WEBHOOK", config: { webhookUrl: "http://127.0.0.1:1/x" }, sourceIds: [src.id] });
  const { context, page } = await dash.newPage({ width: 390 });
  await page.goto(`${s.url}/destinations`);
  await page.getByRole("link", { name: "narrow-hook" }).waitFor();
  const fits = () => page.evaluate("document.documentElement.scrollWidth <= window.innerWidth");
  expect(await fits()).toBe(true);
  await page.getByRole("link", { name: "narrow-hook" }).click();
  await page.getByRole("heading", { name: "narrow-hook" }).waitFor();
  await page.getByTestId("count-succeeded").waitFor();
  expect(await fits()).toBe(true);
  await page.goto(`${s.url}/destinations/${created.json.id}?tab=config`);
  await page.getByLabel(/^webhookUrl/).waitFor();
  expect(await fits()).toBe(true);
  await page.goto(`${s.url}/destinations/dst_does_not_exist`);
  await page.getByRole("heading", { name: "Destination not found" }).waitFor();
  await context.close();
}, 30_000);

test.if(haveChromium)("the kinds of issue 39 in the form: an S3 archive and a REDIS store are created from their definitions' keys", async () => {
  const { context, page } = await dash.newPage();
  for (const [kind, fill] of [
    ["S3", { bucketName: "archive-bucket", prefix: "raw" }],
    ["REDIS", { address: "redis.internal:6379", prefix: "app" }],
  ] as const) {
    await page.goto(`${s.url}/destinations?new=${kind}`);
    const form = page.getByRole("form", { name: "New destination" });
    await form.getByLabel(/^Name/).fill(`${kind} from the form`);
    for (const [key, value] of Object.entries(fill)) await form.getByLabel(new RegExp(`^${key}`)).fill(value);
    const required = Object.keys(fill)[0]!;
    expect(await form.getByLabel(new RegExp(`^${required}`)).getAttribute("required")).not.toBeNull();
    await form.getByRole("button", { name: "Create destination" }).click();
    await page.waitForURL(/\/destinations\/dst_[^/?]+$/);
    const id = new URL(page.url()).pathname.split("/").pop()!;
    expect((await api(s.url, "GET", `/v2/destinations/${id}`)).json).toMatchObject({ type: kind, config: fill });
  }
  await context.close();
});
