/**
 * The live events page in headless Chromium against an in-process Sluice, a real webhook sink
 * and real event calls: picking a stream, events newest first, filters kept in the URL, the
 * JSON of one event, pause / resume / clear, a destination's delivery attempts, hostile values
 * shown as text, and a 3,000-event burst that leaves the page responsive with a bounded DOM.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Dashboard, type Page, startDashboard } from "../support/dashboard-harness";
import { type TestServer, api, createSource, haveChromium, requireChromium, sendEvent, startSink, waitFor } from "../support/helpers";

requireChromium("dashboard-live.test.ts");

const HOSTILE = "<img src=x onerror=alert(1)>";

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

/** Opens a stream page and waits until its SSE stream is connected. */
async function openStream(page: Page, query: string) {
  await page.goto(`${s.url}/live?${query}`);
  await page.getByTestId("live-status").getByText("Live", { exact: true }).waitFor();
}

const rows = (page: Page) => page.getByTestId("live-row");
const rowTexts = (page: Page) => rows(page).allTextContents();

function track(writeKey: string, event: string, extra: Record<string, unknown> = {}) {
  return sendEvent(s.url, writeKey, "track", { userId: "user-1", event, ...extra }).then((r) => expect(r.status).toBe(200));
}

test.if(haveChromium)("without a stream in the URL the page lists sources and destinations; picking one puts it in the URL", async () => {
  const src = await createSource(s.url, { name: `${HOSTILE} picker source` });
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "picker hook", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/picker` }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const { context, page } = await dash.newPage({ width: 390 });
  await page.goto(`${s.url}/live`);
  const link = page.getByRole("link", { name: `${HOSTILE} picker source` });
  await link.waitFor();
  expect(await page.locator("img").count()).toBe(0);
  await page.getByRole("link", { name: "picker hook" }).waitFor();
  await link.click();
  await page.waitForURL(`${s.url}/live?source=${src.id}`);
  await page.getByTestId("live-status").getByText("Live", { exact: true }).waitFor();
  expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe(`Live: ${HOSTILE} picker source`);
  expect(await page.locator("img").count()).toBe(0);
  // An unknown id says so and offers the way back.
  await page.goto(`${s.url}/live?destination=dst_nope`);
  await page.getByRole("alert").getByText("There is no destination with the id dst_nope.").waitFor();
  await page.getByRole("link", { name: "Pick a source or destination" }).waitFor();
  await context.close();
}, 30_000);

test.if(haveChromium)("source: events appear newest first; type and text filters live in the URL; one event's JSON opens as text", async () => {
  const src = await createSource(s.url);
  const { context, page } = await dash.newPage();
  await openStream(page, `source=${src.id}`);
  await page.getByText("Waiting for events.").waitFor();

  await track(src.writeKey, "Order Placed", { properties: { note: HOSTILE } });
  await rows(page).first().getByText("Order Placed").waitFor();
  await sendEvent(s.url, src.writeKey, "identify", { anonymousId: "anon-7", traits: { email: "ada@example.com" } });
  await rows(page).first().getByText("ada@example.com").waitFor();
  await track(src.writeKey, HOSTILE);
  await rows(page).first().getByText(HOSTILE).waitFor();
  let texts = await rowTexts(page);
  expect(texts).toHaveLength(3);
  expect(texts[0]).toContain("track");
  expect(texts[0]).toContain("user-1");
  expect(texts[1]).toContain("identify");
  expect(texts[1]).toContain("anon-7 (anon)");
  expect(texts[2]).toContain("Order Placed");
  expect(await page.locator("img").count()).toBe(0);

  // Filter by type: only identify, and the URL says so.
  await page.getByLabel("Type").selectOption("identify");
  await page.waitForURL(/type=identify/);
  await rows(page).nth(1).waitFor({ state: "detached" });
  texts = await rowTexts(page);
  expect(texts).toHaveLength(1);
  expect(texts[0]).toContain("identify");
  // Events arriving while filtered are filtered too.
  await track(src.writeKey, "Hidden By Type");
  await sendEvent(s.url, src.writeKey, "identify", { userId: "grace" });
  await rows(page).first().getByText("grace").waitFor();
  expect((await rowTexts(page)).join("\n")).not.toContain("Hidden By Type");

  // Filter by text, on top of "all types".
  await page.getByLabel("Type").selectOption("");
  await page.getByLabel("Search").fill("order placed");
  await page.waitForURL(/q=order\+placed/);
  await rows(page).nth(1).waitFor({ state: "detached" });
  texts = await rowTexts(page);
  expect(texts).toHaveLength(1);
  expect(texts[0]).toContain("Order Placed");

  // A filter nothing matches says so and offers to clear it.
  await page.getByLabel("Search").fill("no such thing anywhere");
  await page.getByText("No events match the filter.").waitFor();
  await page.getByRole("button", { name: "Clear the filter" }).click();
  await rows(page).nth(4).waitFor();
  expect(new URL(page.url()).search).toBe(`?source=${src.id}`);

  // A reload keeps the filters.
  await page.goto(`${s.url}/live?source=${src.id}&type=track&q=placed`);
  await page.getByTestId("live-status").getByText("Live", { exact: true }).waitFor();
  expect(await page.getByLabel("Type").inputValue()).toBe("track");
  expect(await page.getByLabel("Search").inputValue()).toBe("placed");
  await track(src.writeKey, "Placed Again", { properties: { note: HOSTILE, nested: { deep: [1, 2] } } });
  await track(src.writeKey, "Not Shown");
  await sendEvent(s.url, src.writeKey, "identify", { userId: "placed-but-identify" });
  await rows(page).first().getByText("Placed Again").waitFor();

  // The whole JSON, as text.
  await rows(page).first().click();
  const json = page.getByTestId("live-json");
  await json.waitFor();
  const shown = JSON.parse((await json.textContent())!);
  expect(shown.event).toBe("Placed Again");
  expect(shown.properties).toEqual({ note: HOSTILE, nested: { deep: [1, 2] } });
  expect(shown.messageId).toMatch(/\S/);
  expect(await page.locator("img").count()).toBe(0);
  expect(await rows(page).count()).toBe(1);
  await page.getByRole("button", { name: "Close", exact: true }).click();
  await json.waitFor({ state: "detached" });
  await context.close();
}, 30_000);

test.if(haveChromium)("pause holds new events until resumed; clear empties the list", async () => {
  const src = await createSource(s.url);
  const { context, page } = await dash.newPage();
  await openStream(page, `source=${src.id}`);
  await track(src.writeKey, "Before Pause");
  await rows(page).first().getByText("Before Pause").waitFor();

  await page.getByRole("button", { name: "Pause", exact: true }).click();
  await track(src.writeKey, "During Pause");
  // The page has the event (it counts it) but does not show it.
  await page.getByTestId("live-status").getByText("1 new, shown on resume").waitFor();
  expect(await rows(page).count()).toBe(1);
  expect(await rows(page).first().textContent()).toContain("Before Pause");

  await page.getByRole("button", { name: "Resume", exact: true }).click();
  await rows(page).first().getByText("During Pause").waitFor();
  expect(await rows(page).count()).toBe(2);

  await page.getByRole("button", { name: "Clear", exact: true }).click();
  await page.getByText("Waiting for events.").waitFor();
  expect(await rows(page).count()).toBe(0);
  await track(src.writeKey, "After Clear");
  await rows(page).first().getByText("After Clear").waitFor();
  expect(await rows(page).count()).toBe(1);
  await context.close();
}, 30_000);

test.if(haveChromium)("destination: each delivery attempt appears with its state and status; filter by state", async () => {
  const src = await createSource(s.url);
  const failing = startSink(() => new Response(`bad request ${HOSTILE}`, { status: 400 }));
  try {
    const ok = await api(s.url, "POST", "/v2/destinations", { name: "live ok hook", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/ok` }, sourceIds: [src.id] });
    const bad = await api(s.url, "POST", "/v2/destinations", { name: "live bad hook", type: "WEBHOOK", config: { webhookUrl: `${failing.url}/bad` }, sourceIds: [src.id] });
    expect([ok.status, bad.status]).toEqual([201, 201]);

    const { context, page } = await dash.newPage();
    await openStream(page, `destination=${ok.json.id}`);
    await page.getByText("Waiting for delivery attempts.").waitFor();
    await track(src.writeKey, "Delivered Event", { userId: "dest-user" });
    const row = rows(page).first();
    await row.getByText("succeeded").waitFor();
    expect(await row.textContent()).toContain("200");
    expect(await row.textContent()).toContain("dest-user");
    await row.click();
    expect(JSON.parse((await page.getByTestId("live-json").textContent())!)).toMatchObject({ state: "succeeded", status: 200, userKey: "dest-user" });

    // The failing destination: aborted, its answer shown as text.
    await openStream(page, `destination=${bad.json.id}&type=succeeded`);
    await track(src.writeKey, "Refused Event", { userId: "dest-user-2" });
    await page.getByTestId("live-status").getByText("1 attempt kept").waitFor();
    expect(await rows(page).count()).toBe(0);
    await page.getByLabel("State").selectOption("aborted");
    await rows(page).first().getByText("aborted").waitFor();
    await rows(page).first().click();
    const attempt = JSON.parse((await page.getByTestId("live-json").textContent())!);
    expect(attempt).toMatchObject({ state: "aborted", status: 400, userKey: "dest-user-2" });
    expect(attempt.response).toContain(HOSTILE);
    expect(await page.locator("img").count()).toBe(0);
    await context.close();
  } finally {
    failing.stop();
  }
}, 30_000);

test.if(haveChromium)("3,000 events in ~3 s: the page keeps the newest 1,000, renders only the visible rows and answers a click at once", async () => {
  const src = await createSource(s.url);
  const { context, page } = await dash.newPage();
  await openStream(page, `source=${src.id}`);

  // The longest gap between two animation frames while the events stream in.
  await page.evaluate("window.__maxFrameGap = 0; (function tick(last) { requestAnimationFrame((now) => { window.__maxFrameGap = Math.max(window.__maxFrameGap, now - last); tick(now); }); })(performance.now())");

  // 30 batches of 100, one every 100 ms: about 1,000 events a second.
  const TOTAL = 3000;
  const sent: Promise<void>[] = [];
  let n = 0;
  const done = new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const batch = Array.from({ length: 100 }, () => ({ type: "track", userId: `load-user-${n % 7}`, event: `load-${n++}` }));
      sent.push(sendEvent(s.url, src.writeKey, "batch", { batch }).then((r) => expect(r.status).toBe(200)));
      if (n >= TOTAL) {
        clearInterval(timer);
        resolve();
      }
    }, 100);
  });

  // In the middle of the stream, a click on Pause takes effect quickly.
  const kept = async () => Number(/([\d,]+) events? kept/.exec((await page.getByTestId("live-status").textContent()) ?? "")?.[1]?.replace(/,/g, "") ?? 0);
  await waitFor(async () => (await kept()) >= 300, { what: "300 events on the page" });
  // (Deadlines are generous: the test machine may be shared, and this process also runs Sluice.)
  const clicked = Date.now();
  await page.getByRole("button", { name: "Pause", exact: true }).click({ timeout: 5000 });
  await page.getByRole("button", { name: "Resume", exact: true }).waitFor({ timeout: 5000 });
  expect(Date.now() - clicked).toBeLessThan(5000);
  // Only the rows in view (470 px of 38 px rows) and a few around them are in the DOM.
  expect(await rows(page).count()).toBeGreaterThan(10);
  expect(await rows(page).count()).toBeLessThanOrEqual(30);

  await done;
  await Promise.all(sent);
  await page.getByRole("button", { name: "Resume", exact: true }).click({ timeout: 5000 });
  await rows(page).first().getByText(`load-${TOTAL - 1}`, { exact: true }).waitFor({ timeout: 10_000 });
  await page.getByTestId("live-status").getByText("1,000 events kept").waitFor();
  const maxFrameGap: number = await page.evaluate("window.__maxFrameGap");
  console.log(`longest frame gap under load: ${Math.round(maxFrameGap)} ms`);
  expect(maxFrameGap).toBeLessThan(1500);
  expect(await rows(page).count()).toBeLessThanOrEqual(30);
  const texts = await rowTexts(page);
  // Newest first, in order.
  expect(texts[0]).toContain(`load-${TOTAL - 1}`);
  expect(texts[1]).toContain(`load-${TOTAL - 2}`);

  // Scrolling to the end shows the oldest kept event (the 1,000th newest) and still few rows.
  await page.evaluate("document.querySelector('.live-scroll').scrollTo(0, 1e9)");
  await page.getByText(`load-${TOTAL - 1000}`, { exact: true }).waitFor();
  expect(await page.getByText(`load-${TOTAL - 1001}`, { exact: true }).count()).toBe(0);
  expect(await rows(page).count()).toBeLessThanOrEqual(30);
  await context.close();
}, 30_000);
