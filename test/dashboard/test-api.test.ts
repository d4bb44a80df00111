/**
 * The dashboard's Test API page (/test) in headless Chromium against an in-process Sluice and
 * real local HTTP sinks: test a WEBHOOK destination and see its three stages, narrow the
 * stages (kept in the URL across a reload), test a source with a failing destination, a user
 * transformation's output and its failure, `force` for a disabled destination, the errors of a
 * bad message, hostile values shown as text, and the narrow layout.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Dashboard, startDashboard } from "../support/dashboard-harness";
import { type TestServer, api, createSource, haveChromium, requireChromium, startSink, storedEvents } from "../support/helpers";

requireChromium("dashboard-test-api.test.ts");

const HOSTILE = "<img src=x onerror=alert(1)>";

let dash: Dashboard;
let s: TestServer;
let good: ReturnType<typeof startSink>;
let failing: ReturnType<typeof startSink>;
let source: { id: string; writeKey: string; name: string };
let hook: { id: string; name: string };
let broken: { id: string; name: string };

beforeAll(async () => {
  if (!haveChromium) return;
  dash = await startDashboard();
  s = dash.s;
  // The answer is markup on purpose: the page must show it as text.
  good = startSink(() => new Response(`${HOSTILE} received`, { headers: { "content-type": "text/plain" } }));
  failing = startSink(() => Response.json({ message: "boom" }, { status: 500 }));
  source = await createSource(s.url, { name: "web" });
  const d1 = await api(s.url, "POST", "/v2/destinations", { name: `hook ${HOSTILE}`, type: "WEBHOOK", config: { webhookUrl: `${good.url}/hook` }, sourceIds: [source.id] });
  const d2 = await api(s.url, "POST", "/v2/destinations", { name: "broken-hook", type: "WEBHOOK", config: { webhookUrl: `${failing.url}/down` }, sourceIds: [source.id] });
  expect(d1.status).toBe(201);
  expect(d2.status).toBe(201);
  hook = d1.json;
  broken = d2.json;
}, 60_000);

afterAll(async () => {
  good?.stop();
  failing?.stop();
  await dash?.stop();
});

const message = (extra: Record<string, unknown> = {}) => JSON.stringify({ type: "track", userId: "u-1", event: "Signed Up", properties: { note: HOSTILE }, ...extra }, null, 2);

test.if(haveChromium)("testDestination: a WEBHOOK at a local sink shows its three stages, the request really sent, every value as text", async () => {
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/test?destination=${hook.id}`);
  await page.getByRole("heading", { name: "Test API" }).waitFor();
  await page.getByLabel("Message").fill(message());
  await page.getByRole("button", { name: "Run test" }).click();

  const result = page.getByRole("article", { name: `Result for hook ${HOSTILE}` });
  const send = result.getByRole("region", { name: "Send to destination" });
  await send.getByText("HTTP 200").waitFor();
  expect(await send.locator("pre").textContent()).toBe(`${HOSTILE} received`);
  expect(await send.getByText("OK", { exact: true }).count()).toBe(1);
  // No transformation is connected: the message goes on as sent.
  expect(await result.getByRole("region", { name: "User transformation" }).textContent()).toContain("no transformation is connected");
  const transform = result.getByRole("region", { name: "Destination transform" });
  expect(await transform.textContent()).toContain(`${good.url}/hook`);
  const request = JSON.parse((await transform.locator("pre").textContent())!);
  expect(request.body.JSON).toMatchObject({ userId: "u-1", event: "Signed Up", properties: { note: HOSTILE } });
  expect(await result.getByRole("heading", { level: 3 }).textContent()).toBe(`hook ${HOSTILE}`);

  // The request really went out, and nothing was stored.
  expect(good.received).toHaveLength(1);
  expect(good.received[0]!.body.properties.note).toBe(HOSTILE);
  expect(storedEvents(s)).toHaveLength(0);
  expect(await page.locator("img").count()).toBe(0);
  await context.close();
}, 30_000);

test.if(haveChromium)("stages: leaving out 'Send to destination' sends nothing; the choice, the target and the message survive a reload", async () => {
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/test?destination=${hook.id}`);
  await page.getByLabel("Message").fill(message({ event: "Kept Across Reload" }));
  await page.getByRole("checkbox", { name: /Send to destination/ }).uncheck();
  await page.waitForURL(/stages=user_transform%2Cdest_transform|stages=user_transform,dest_transform/);
  await page.reload();
  await page.getByRole("heading", { name: "Test API" }).waitFor();
  expect(await page.getByRole("checkbox", { name: /Send to destination/ }).isChecked()).toBe(false);
  expect(await page.getByRole("checkbox", { name: /Destination transform/ }).isChecked()).toBe(true);
  expect(await page.getByLabel("Test", { exact: true }).inputValue()).toBe(`destination:${hook.id}`);
  expect(await page.getByLabel("Message").inputValue()).toContain("Kept Across Reload");

  const before = good.received.length;
  await page.getByRole("button", { name: "Run test" }).click();
  const result = page.getByRole("article", { name: `Result for hook ${HOSTILE}` });
  await result.getByRole("region", { name: "Destination transform" }).getByText("1 request").waitFor();
  expect(await result.getByRole("region", { name: "Send to destination" }).textContent()).toContain("Not run");
  expect(good.received.length).toBe(before);

  // No stage at all cannot be run.
  await page.getByRole("checkbox", { name: /User transformation/ }).uncheck();
  await page.getByRole("checkbox", { name: /Destination transform/ }).uncheck();
  await page.getByText("Choose at least one stage.").waitFor();
  expect(await page.getByRole("button", { name: "Run test" }).isDisabled()).toBe(true);
  await context.close();
}, 30_000);

test.if(haveChromium)("testSource: every connected destination gets a card; a 500 answer shows as failed with its body", async () => {
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/test`);
  await page.getByLabel("Test", { exact: true }).selectOption(`source:${source.id}`);
  await page.waitForURL(new RegExp(`/test\\?source=${source.id}$`));
  await page.getByLabel("Message").fill(message());
  await page.getByRole("button", { name: "Run test" }).click();

  const ok = page.getByRole("article", { name: `Result for hook ${HOSTILE}` }).getByRole("region", { name: "Send to destination" });
  const bad = page.getByRole("article", { name: "Result for broken-hook" }).getByRole("region", { name: "Send to destination" });
  await ok.getByText("HTTP 200").waitFor();
  await bad.getByText("HTTP 500").waitFor();
  expect(await bad.getByText("Failed", { exact: true }).count()).toBe(1);
  expect(JSON.parse((await bad.locator("pre").textContent())!)).toEqual({ message: "boom" });
  expect(failing.received.length).toBeGreaterThan(0);
  expect(await page.locator("img").count()).toBe(0);
  await context.close();
}, 30_000);

test.if(haveChromium)("a bad message is refused with the reason: not JSON (checked in the page), no type (the API's 400)", async () => {
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/test?destination=${broken.id}`);
  await page.getByLabel("Message").fill("{ not json");
  await page.getByRole("button", { name: "Run test" }).click();
  await page.getByRole("alert").getByText(/Message: not valid JSON/).waitFor();

  await page.getByLabel("Message").fill(JSON.stringify({ userId: "u-1", event: "No Type" }));
  await page.getByRole("button", { name: "Run test" }).click();
  await page.getByRole("alert").getByText("message type missing or invalid").waitFor();
  expect(await page.getByRole("article").count()).toBe(0);

  // A link to an id that does not exist says so instead of offering a dead button.
  await page.goto(`${s.url}/test?destination=dst_missing`);
  await page.getByText("There is no destination or source with the id in this link.").waitFor();
  expect(await page.getByRole("button", { name: "Run test" }).isDisabled()).toBe(true);
  await context.close();
}, 30_000);

test.if(haveChromium)("at 390px wide the form and the result fit the screen", async () => {
  const { context, page } = await dash.newPage({ width: 390 });
  await page.goto(`${s.url}/test?destination=${hook.id}`);
  await page.getByLabel("Message").fill(message());
  await page.getByRole("button", { name: "Run test" }).click();
  await page.getByRole("region", { name: "Send to destination" }).getByText("HTTP 200").waitFor();
  const overflow: number = await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth");
  expect(overflow).toBeLessThanOrEqual(0);
  await context.close();
}, 30_000);

test.if(haveChromium)("user transformation: its output is shown; a throwing one fails its stage and the later stages say they were aborted", async () => {
  const sink = startSink();
  const mk = async (name: string, code: string) => {
    const d = await api(s.url, "POST", "/v2/destinations", { name, type: "WEBHOOK", config: { webhookUrl: `${sink.url}/${name}` } });
    expect(d.status).toBe(201);
    expect((await api(s.url, "POST", "/v2/transformations", { name: `t-${name}`, code, destinationIds: [d.json.id] })).status).toBe(201);
    return d.json as { id: string };
  };
  const tagging = await mk("tagged", "export function transformEvent(event) { event.properties.tagged = 'yes'; return event; }");
  const throwing = await mk("throwing", `export function transformEvent(event) { throw new Error("no ${HOSTILE} here"); }`);

  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/test?destination=${tagging.id}`);
  await page.getByLabel("Message").fill(message());
  await page.getByRole("button", { name: "Run test" }).click();
  const ut = page.getByRole("region", { name: "User transformation" });
  await page.getByRole("region", { name: "Send to destination" }).getByText("HTTP 200").waitFor();
  expect(JSON.parse((await ut.locator("pre").textContent())!).properties).toEqual({ note: HOSTILE, tagged: "yes" });
  expect(sink.received.at(-1)!.body.properties.tagged).toBe("yes");

  await page.getByLabel("Test", { exact: true }).selectOption(`destination:${throwing.id}`);
  await page.getByRole("button", { name: "Run test" }).click();
  await ut.getByText("Failed", { exact: true }).waitFor();
  expect(await ut.locator("pre").textContent()).toContain(`no ${HOSTILE} here`);
  expect(await page.getByRole("region", { name: "Destination transform" }).locator("pre").textContent()).toBe("aborted: user_transform stage failed");
  expect(await page.getByRole("region", { name: "Send to destination" }).locator("pre").textContent()).toBe("aborted: user_transform stage failed");
  expect(sink.received.filter((r) => r.path === "/throwing")).toHaveLength(0);
  expect(await page.locator("img").count()).toBe(0);
  sink.stop();
  await context.close();
}, 30_000);

test.if(haveChromium)("a disabled destination is not tested unless 'force' is ticked", async () => {
  const sink = startSink();
  const d = await api(s.url, "POST", "/v2/destinations", { name: "paused-hook", type: "WEBHOOK", enabled: false, config: { webhookUrl: `${sink.url}/paused` } });
  expect(d.status).toBe(201);
  const { context, page } = await dash.newPage();
  await page.goto(`${s.url}/test?destination=${d.json.id}`);
  await page.getByLabel("Message").fill(message());
  await page.getByRole("button", { name: "Run test" }).click();
  const card = page.getByRole("article", { name: "Result for paused-hook" });
  await card.getByText(`Not tested: Destination with id ${d.json.id} is disabled`).waitFor();
  expect(sink.received).toHaveLength(0);

  await page.getByRole("checkbox", { name: /force/ }).check();
  await page.getByRole("button", { name: "Run test" }).click();
  await card.getByRole("region", { name: "Send to destination" }).getByText("HTTP 200").waitFor();
  expect(sink.received).toHaveLength(1);
  sink.stop();
  await context.close();
}, 30_000);
