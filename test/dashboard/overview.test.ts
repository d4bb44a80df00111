/**
 * The overview: `GET /v2/stats/timeseries` and `GET /v2/stats/attention` against real deliveries
 * to a local sink (some delivered, some retried, some aborted) and a deletion that cannot run,
 * then the page in headless Chromium: tiles, the uPlot chart (loaded only on this page), the
 * attention list, per-source and per-destination tables, the chart's subject in the URL, hostile
 * names shown as text, and a 390px screen.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eventTimeseries } from "../../src/pipeline/overview";
import { type Dashboard, startDashboard } from "../support/dashboard-harness";
import { type TestServer, api, createSource, haveChromium, requireChromium, sendEvent, startSink, waitFor } from "../support/helpers";

requireChromium("dashboard-overview.test.ts");

const HOSTILE_SOURCE = `<img src=x onerror=alert(1)> web`;
const HOSTILE_DEST = `<img src=x onerror=alert(2)> hook`;
const HOSTILE_USER = `<img src=x onerror=alert(3)>`;

let dash: Dashboard;
let s: TestServer;
let sink: ReturnType<typeof startSink>;
let web: { id: string; writeKey: string };
let backend: { id: string; writeKey: string };
let hookId: string;
let calmId: string;
const seen = new Set<string>();

beforeAll(async () => {
  // The sink answers by event name: ok → 200; flaky → 500 once, then 200; bad → 400 (aborted at once); down → 503 always.
  sink = startSink((req) => {
    const name = req.body?.event;
    if (name === "flaky") {
      const first = !seen.has(req.body.messageId);
      seen.add(req.body.messageId);
      return new Response(first ? "try again" : "ok", { status: first ? 500 : 200 });
    }
    if (name === "bad") return new Response("no such thing", { status: 400 });
    if (name === "down") return new Response("down", { status: 503 });
    return new Response("ok");
  });
  // Three attempts, then aborted: the time limit is a few microseconds, so attempts decide.
  // Without Chromium only Sluice starts, for the API tests.
  dash = await startDashboard({ args: ["--retry-backoff-ms", "5", "--retry-min-attempts", "3", "--retry-max-hours", "0.000000001"] });
  s = dash.s;
}, 60_000);

afterAll(async () => {
  sink?.stop();
  await dash?.stop();
});

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe("empty workspace", () => {
  test.if(haveChromium)("the page says what to do next: no sources, nothing needs attention", async () => {
    const { context, page } = await dash.newPage();
    await page.goto(`${s.url}/`);
    await page.getByText("No sources yet.").first().waitFor();
    await page.getByTestId("attention-clear").waitFor();
    expect(await page.getByRole("link", { name: "Create a source" }).first().getAttribute("href")).toBe("/sources");
    expect(await page.getByTestId("tile-received").locator(".tile-value").textContent()).toBe("0");
    await context.close();
  }, 30_000);
});

describe("GET /v2/stats/timeseries and /v2/stats/attention", () => {
  test("malformed requests answer 400 naming minutes; no session or token → 401", async () => {
    for (const q of ["0", "1441", "1.5", "abc", "", "-5", "99999999"]) {
      const res = await api(s.url, "GET", `/v2/stats/timeseries?minutes=${q}`);
      expect(res.status).toBe(400);
      expect(res.json.message).toBe("query.minutes: expected a whole number of minutes from 1 to 1440");
    }
    const unknown = await api(s.url, "GET", "/v2/stats/timeseries?since=1");
    expect(unknown.status).toBe(400);
    expect(unknown.json.message).toContain("since");
    expect((await fetch(`${s.url}/v2/stats/timeseries`)).status).toBe(401);
    expect((await fetch(`${s.url}/v2/stats/attention`)).status).toBe(401);
    const five = await api(s.url, "GET", "/v2/stats/timeseries?minutes=5");
    expect(five.status).toBe(200);
    expect(five.json.minuteStarts.length).toBe(5);
    expect(five.json.total.received).toEqual([0, 0, 0, 0, 0]);
  });

  test("counts received, delivered, failed attempts and aborted exactly, in total, per source and per destination", async () => {
    web = await createSource(s.url, { name: HOSTILE_SOURCE });
    backend = await createSource(s.url, { name: "backend" });
    const hook = await api(s.url, "POST", "/v2/destinations", { name: HOSTILE_DEST, type: "WEBHOOK", config: { webhookUrl: `${sink.url}/hook` }, sourceIds: [web.id] });
    const calm = await api(s.url, "POST", "/v2/destinations", { name: "calm", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/calm` }, sourceIds: [backend.id] });
    expect([hook.status, calm.status]).toEqual([201, 201]);
    hookId = hook.json.id;
    calmId = calm.json.id;

    const before = Date.now();
    const plan: Array<[typeof web, string, number]> = [
      [web, "ok", 3],
      [web, "flaky", 2],
      [web, "bad", 2],
      [web, "down", 1],
      [backend, "ok", 2],
    ];
    let n = 0;
    for (const [src, event, count] of plan) {
      for (let i = 0; i < count; i++) {
        const res = await sendEvent(s.url, src.writeKey, "track", { userId: `user-${n++}`, event, properties: { note: `<img src=x onerror=alert(4)>` } });
        expect(res.status).toBe(200);
      }
    }
    const settled = async (id: string, succeeded: number, aborted: number) => {
      const st = (await api(s.url, "GET", `/v2/destinations/${id}/stats`)).json;
      return st.counts.pending === 0 && st.counts.retrying === 0 && st.counts.succeeded === succeeded && st.counts.aborted === aborted;
    };
    await waitFor(() => settled(hookId, 5, 3), { what: "the hook's deliveries to finish" });
    await waitFor(() => settled(calmId, 2, 0), { what: "calm's deliveries to finish" });
    // The down event was tried three times, the flaky ones twice.
    expect(sink.received.filter((r) => r.body?.event === "down").length).toBe(3);
    expect(sink.received.filter((r) => r.body?.event === "flaky").length).toBe(4);

    const res = await api(s.url, "GET", "/v2/stats/timeseries");
    expect(res.status).toBe(200);
    const ts = res.json;
    expect(ts.minutes).toBe(60);
    expect(ts.minuteStarts.length).toBe(60);
    const lastMinute = Date.parse(ts.minuteStarts[59]);
    expect(lastMinute).toBe(Math.floor(Date.now() / 60_000) * 60_000);
    expect(ts.total.totals).toEqual({ received: 10, delivered: 7, failed: 4, aborted: 3 });
    for (const kind of ["received", "delivered", "failed", "aborted"]) {
      expect(ts.total[kind].length).toBe(60);
      expect(sum(ts.total[kind])).toBe(ts.total.totals[kind]);
      // Everything happened since `before`: nothing in older minutes.
      const firstUsed = ts.minuteStarts.findIndex((m: string) => Date.parse(m) + 60_000 > before);
      expect(sum(ts.total[kind].slice(0, firstUsed))).toBe(0);
    }
    const bySource = Object.fromEntries(ts.sources.map((x: any) => [x.id, x]));
    expect(bySource[web.id].name).toBe(HOSTILE_SOURCE);
    expect(bySource[web.id].totals).toEqual({ received: 8, delivered: 5, failed: 4, aborted: 3 });
    expect(bySource[backend.id].totals).toEqual({ received: 2, delivered: 2, failed: 0, aborted: 0 });
    const byDest = Object.fromEntries(ts.destinations.map((x: any) => [x.id, x]));
    expect(byDest[hookId]).toMatchObject({ name: HOSTILE_DEST, type: "WEBHOOK", totals: { delivered: 5, failed: 4, aborted: 3 } });
    expect(byDest[calmId].totals).toEqual({ delivered: 2, failed: 0, aborted: 0 });
    expect(byDest[hookId].received).toBeUndefined();
    expect(sum(byDest[hookId].failed)).toBe(4);
  });

  test("attention: the destination holding aborted events, and a deletion that failed", async () => {
    const reg = await api(s.url, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [calmId], users: [{ userId: HOSTILE_USER }] });
    expect(reg.status).toBe(201);
    await waitFor(
      async () => {
        const a = (await api(s.url, "GET", "/v2/stats/attention")).json;
        return a.deletionsTotal === 1 ? a : undefined;
      },
      { what: "the deletion to be given up" },
    );
    const res = await api(s.url, "GET", "/v2/stats/attention");
    expect(res.status).toBe(200);
    expect(res.json.destinations.length).toBe(1);
    expect(res.json.destinations[0]).toMatchObject({ id: hookId, name: HOSTILE_DEST, type: "WEBHOOK", enabled: true, aborted: 3 });
    expect(res.json.destinations[0].lastError.error).toContain("destination answered");
    expect(res.json.deletions).toEqual([
      {
        regulationId: expect.stringMatching(/^reg_/),
        userId: HOSTILE_USER,
        destinationId: calmId,
        destinationName: "calm",
        status: "aborted",
        reason: "destination does not support user deletion",
        attempts: expect.any(Number),
        updatedAt: expect.any(String),
      },
    ]);
    expect(res.json.deletionsTotal).toBe(1);
  });
});

describe("the page", () => {
  test.if(haveChromium)("tiles, the chart, the attention list and the tables; hostile names stay text; the sign-in page loads no chart code", async () => {
    // The sign-in page first: none of its scripts carries uPlot.
    const { context: loginContext, page: login } = await dash.newPage({ signedIn: false });
    const loginScripts: string[] = [];
    login.on("response", async (r) => {
      if (r.url().endsWith(".js")) loginScripts.push(await r.text());
    });
    await login.goto(`${s.url}/login`);
    await login.getByLabel("Access token", { exact: true }).waitFor();
    await waitFor(() => loginScripts.length > 0, { what: "the sign-in page's scripts" });
    expect(loginScripts.some((js) => js.includes("u-legend"))).toBe(false);
    await loginContext.close();

    const { context, page } = await dash.newPage();
    const scripts: string[] = [];
    page.on("response", async (r) => {
      if (r.url().endsWith(".js")) scripts.push(await r.text());
    });
    await page.goto(`${s.url}/`);
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await page.getByTestId("tile-received").getByText("10").waitFor();
    expect(await page.getByTestId("tile-delivered").locator(".tile-value").textContent()).toBe("7");
    expect(await page.getByTestId("tile-failed").locator(".tile-value").textContent()).toBe("4");
    expect(await page.getByTestId("tile-aborted").locator(".tile-value").textContent()).toBe("3");

    // The chart: drawn by uPlot (a canvas and its legend), loaded as its own chunk.
    await page.getByTestId("events-chart").locator("canvas").waitFor();
    const legend = page.getByTestId("events-chart").locator(".u-legend");
    for (const label of ["Received", "Delivered", "Failed attempts", "Aborted"]) await legend.getByText(label, { exact: true }).waitFor();
    expect(await page.getByRole("figure", { name: /Events per minute/ }).getAttribute("aria-label")).toBe(
      "Events per minute, last hour, all sources and destinations: 10 received, 7 delivered, 4 failed attempts, 3 aborted",
    );
    await waitFor(() => scripts.some((js) => js.includes("u-legend")), { what: "the uPlot chunk" });

    // Needs attention: the hook, linked to its page, and the deletion given up.
    const dests = page.getByTestId("attention-destinations");
    const link = dests.getByRole("link", { name: HOSTILE_DEST });
    expect(await link.getAttribute("href")).toBe(`/destinations/${hookId}`);
    await dests.getByText("3 aborted").waitFor();
    const deletions = page.getByTestId("attention-deletions");
    expect(await deletions.locator("code").textContent()).toBe(HOSTILE_USER);
    await deletions.getByText("given up").waitFor();
    await deletions.getByText("destination does not support user deletion").waitFor();
    expect(await deletions.getByRole("link", { name: "calm" }).getAttribute("href")).toBe(`/destinations/${calmId}`);

    // Per source and per destination.
    const webRow = page.getByRole("row").filter({ has: page.getByRole("link", { name: HOSTILE_SOURCE, exact: true }) });
    expect(await webRow.getByRole("cell").allTextContents()).toEqual([HOSTILE_SOURCE, "8", "5", "4", "3", "Chart"]);
    const hookRow = page.getByRole("row").filter({ has: page.getByRole("link", { name: HOSTILE_DEST, exact: true }) }).filter({ hasText: "WEBHOOK" });
    expect(await hookRow.getByRole("cell").allTextContents()).toEqual([HOSTILE_DEST, "WEBHOOK", "5", "4", "3", "Chart"]);
    expect(await page.locator("img").count()).toBe(0);

    // The chart of one destination: its own URL, kept across a reload.
    await hookRow.getByRole("link", { name: "Chart" }).click();
    await page.waitForURL(`${s.url}/?scope=${hookId}`);
    const subject = `Events per minute, last hour, destination ${HOSTILE_DEST}: 5 delivered, 4 failed attempts, 3 aborted`;
    await page.locator(`[role="figure"][aria-label="${subject.replaceAll('"', '\\"')}"]`).waitFor();
    await page.reload();
    await page.locator(`[role="figure"][aria-label="${subject.replaceAll('"', '\\"')}"]`).waitFor();
    expect(await page.getByTestId("chart-subject").textContent()).toContain(`destination ${HOSTILE_DEST}`);
    await page.getByTestId("events-chart").locator(".u-legend").getByText("Delivered", { exact: true }).waitFor();
    expect(await page.getByTestId("events-chart").locator(".u-legend").getByText("Received", { exact: true }).count()).toBe(0);

    // The time range is in the URL too.
    await page.getByLabel("Time range").selectOption("15");
    await page.waitForURL(`${s.url}/?minutes=15&scope=${hookId}`);
    await page.getByTestId("chart-subject").getByText(/Last 15 minutes/).waitFor();
    await page.getByRole("link", { name: "Show all" }).click();
    await page.waitForURL(`${s.url}/?minutes=15`);
    await page.getByRole("figure", { name: /all sources and destinations: 10 received/ }).waitFor();
    expect(await page.locator("img").count()).toBe(0);
    await context.close();
  }, 30_000);

  test.if(haveChromium)("at 390px wide the chart fits and nothing overflows the page", async () => {
    const { context, page } = await dash.newPage({ width: 390 });
    await page.goto(`${s.url}/`);
    const canvas = page.getByTestId("events-chart").locator("canvas");
    await canvas.waitFor();
    const box = (await canvas.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(390);
    const overflow: number = await page.evaluate("document.documentElement.scrollWidth");
    expect(overflow).toBeLessThanOrEqual(390);
    await page.getByTestId("attention-destinations").getByText("3 aborted").waitFor();
    await context.close();
  }, 30_000);
});

// Last: it deletes the delivery rows.
describe("settled minutes", () => {
  test("a minute is counted once when settled and kept: the numbers stay when the rows are gone", async () => {
    const live = (await api(s.url, "GET", "/v2/stats/timeseries")).json;
    expect(live.total.totals).toEqual({ received: 10, delivered: 7, failed: 4, aborted: 3 });
    // Three minutes on, every minute of the test is settled.
    const later = { ...s.sluice.ctx, workspaceId: s.sluice.workspaceId, now: () => Date.now() + 3 * 60_000 };
    const first = await eventTimeseries(later, 60);
    expect(first.total.totals).toEqual(live.total.totals);
    const hook = (x: typeof first) => x.destinations.find((d) => d.id === hookId)!.totals;
    expect(hook(first)).toEqual({ delivered: 5, failed: 4, aborted: 3 });
    s.sluice.db.$client.exec("DELETE FROM deliveries");
    const again = await eventTimeseries(later, 60);
    expect(again.total.totals).toEqual(live.total.totals);
    expect(hook(again)).toEqual({ delivered: 5, failed: 4, aborted: 3 });
  });
});
