/**
 * What a source's tracking plan found in its traffic, through a real server: the live stream
 * shows kept events with violations (checked) beside dropped ones; the daily counts answer the
 * stats API and the source's report (plan against traffic: planned but never seen, seen but
 * unplanned, violations by property); the source's newest dropped events are listed with their
 * violations and the stored event; and a restart keeps all of it (the counts are in the database).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type TestServer, api, basic, cleanup, query, startSink, startSluice, waitFor } from "../support/helpers";

const PLAN = {
  id: "tp_shop",
  name: "Shop",
  version: 1,
  events: [
    {
      id: "ev_order",
      name: "Order Completed",
      eventType: "track",
      description: "An order",
      rules: {
        $schema: "http://json-schema.org/draft-07/schema#",
        type: "object",
        properties: { properties: { type: "object", properties: { orderId: { type: "string" }, total: { type: "number" } }, required: ["orderId"] } },
        required: ["properties"],
      },
    },
    { id: "ev_refund", name: "Order Refunded", eventType: "track", description: "", rules: { type: "object" } },
    { id: "ev_identify", name: "", eventType: "identify", description: "", rules: { type: "object" } },
  ],
};
// Unplanned tracks are dropped; other violations are kept (forwarded) with their violations.
const SETTINGS = { trackingPlan: { id: "tp_shop", version: 1 }, config: { track: { allowUnplannedEvents: "false", anyOtherViolation: "forward", unplannedProperties: "forward" } } };

let sink: ReturnType<typeof startSink>;
let s: TestServer;
let src: { id: string; writeKey: string };
const ARGS = ["--catalog-flush-seconds", "1"];
const send = (call: string, body: unknown) => fetch(`${s.url}/v1/${call}`, { method: "POST", headers: { authorization: basic(src.writeKey), "content-type": "application/json" }, body: JSON.stringify(body) });

beforeAll(async () => {
  sink = startSink();
  s = await startSluice({ args: ARGS });
  src = (await api(s.url, "POST", "/v2/sources", { name: "shop" })).json;
  expect((await api(s.url, "POST", "/v2/destinations", { name: "sink", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/hook` }, sourceIds: [src.id] })).status).toBe(201);
  expect((await api(s.url, "POST", "/v2/tracking-plans", PLAN)).status).toBe(201);
  expect((await api(s.url, "PUT", `/v2/sources/${src.id}/tracking-plan`, SETTINGS)).status).toBe(200);
});
afterAll(async () => {
  await s.stop();
  sink.stop();
  await cleanup(s.dataDir);
});

/** The source's live stream, read until a text appears. */
async function openLive(path: string, signal: AbortSignal) {
  const res = await fetch(`${s.url}${path}`, { headers: { authorization: "Bearer test-admin-token-0123456789" }, signal });
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let text = "";
  return {
    async until(needle: string) {
      while (!text.includes(needle)) {
        const { value, done } = await reader.read();
        if (done) break;
        text += dec.decode(value);
      }
      return text;
    },
  };
}

describe("a source with a plan", () => {
  test("the live stream shows a kept event with its violations, and a dropped one; a valid event gets no second entry", async () => {
    const controller = new AbortController();
    try {
      const live = await openLive(`/v2/sources/${src.id}/live-events`, controller.signal);
      await live.until("event: ready");
      expect((await send("track", { userId: "u1", event: "Order Completed", properties: { orderId: "o-1", total: 10 } })).status).toBe(200);
      expect((await send("track", { userId: "u1", event: "Order Completed", properties: { orderId: "o-2", total: "ten" } })).status).toBe(200);
      expect((await send("track", { userId: "u2", event: "Signed Up", properties: { plan: "pro" } })).status).toBe(200);
      const text = await live.until('"trackingPlanDropped"');
      const entries = text
        .split("\n")
        .filter((l) => l.startsWith("data: {"))
        .map((l) => JSON.parse(l.slice(6)));
      const checked = entries.filter((e) => e.trackingPlanChecked);
      expect(checked.length).toBe(1);
      expect(checked[0].violations).toEqual([expect.objectContaining({ type: "Datatype-Mismatch", meta: expect.objectContaining({ instancePath: "/properties/total" }) })]);
      expect(checked[0].event).toMatchObject({ event: "Order Completed", properties: { orderId: "o-2" }, context: { trackingPlanId: "tp_shop", violationErrors: [expect.objectContaining({ type: "Datatype-Mismatch" })] } });
      const dropped = entries.find((e) => e.trackingPlanDropped);
      expect(dropped).toMatchObject({ violationType: "Unplanned-Event", violations: [expect.objectContaining({ type: "Unplanned-Event" })], event: { event: "Signed Up" } });
      // Delivery goes on: the two order events arrive, the dropped one never.
      await waitFor(() => sink.received.filter((r) => r.path === "/hook").length >= 2 || undefined, { what: "the kept events delivered" });
    } finally {
      controller.abort();
    }
  });

  test("the report sets the plan against traffic: planned but never seen, seen but unplanned, violations by property today and over 7 days", async () => {
    expect((await send("track", { userId: "u3", event: "Order Completed", properties: { total: 3 } })).status).toBe(200);
    expect((await send("page", { userId: "u3", name: "Home" })).status).toBe(200);
    // The catalog saves every second here: poll until it has seen the page.
    const report = await waitFor(
      async () => {
        const r = (await api(s.url, "GET", `/v2/sources/${src.id}/tracking-plan/report`)).json;
        return r.seenNotPlanned?.some((m: any) => m.type === "page") && r.violations?.some((v: any) => v.violationType === "Required-Missing") ? r : undefined;
      },
      { what: "the report with the catalog's models and the counts", timeoutMs: 20_000 },
    );
    expect(report.plan).toEqual({ id: "tp_shop", name: "Shop", version: 1, events: 3 });
    expect(report.catalog).toBe(true);
    expect(report.plannedNotSeen.map((e: any) => `${e.type}:${e.event}`).sort()).toEqual(["identify:", "track:Order Refunded"]);
    expect(report.seenNotPlanned.map((e: any) => `${e.type}:${e.event}`).sort()).toEqual(["page:", "track:Signed Up"]);
    const row = (violationType: string) => report.violations.find((v: any) => v.violationType === violationType);
    expect(row("Datatype-Mismatch")).toEqual({ type: "track", event: "Order Completed", violationType: "Datatype-Mismatch", property: "/properties/total", today: 1, last7Days: 1 });
    expect(row("Required-Missing")).toEqual({ type: "track", event: "Order Completed", violationType: "Required-Missing", property: "/properties/orderId", today: 1, last7Days: 1 });
    expect(row("Unplanned-Event")).toEqual({ type: "track", event: "Signed Up", violationType: "Unplanned-Event", property: "", today: 1, last7Days: 1 });
    expect(report.dropped).toEqual([{ type: "track", event: "Signed Up", today: 1, last7Days: 1 }]);
    expect(report.totals).toEqual({ violations: { today: 3, last7Days: 3 }, dropped: { today: 1, last7Days: 1 } });
  });

  test("the stats API counts violations and dropped events per day and source", async () => {
    const stats = (await api(s.url, "GET", "/v2/stats/tracking-plans?days=3")).json;
    expect(stats.days).toBe(3);
    expect(stats.dayStarts.length).toBe(3);
    expect(stats.total.totals).toEqual({ violations: 3, dropped: 1 });
    expect(stats.total.violations.at(-1)).toBe(3);
    expect(stats.sources).toEqual([
      { id: src.id, name: "shop", violations: [0, 0, 3], dropped: [0, 0, 1], totals: { violations: 3, dropped: 1 }, byViolationType: { "Datatype-Mismatch": 1, "Required-Missing": 1, "Unplanned-Event": 1 } },
    ]);
    expect((await api(s.url, "GET", "/v2/stats/tracking-plans?days=9")).status).toBe(400);
  });

  test("the source's dropped events are listed with their violations and the stored event; an unknown source is 404", async () => {
    const { droppedEvents } = (await api(s.url, "GET", `/v2/sources/${src.id}/tracking-plan/dropped-events`)).json;
    expect(droppedEvents.length).toBe(1);
    expect(droppedEvents[0]).toMatchObject({ type: "track", event: "Signed Up", violationType: "Unplanned-Event", violations: [{ type: "Unplanned-Event", property: "" }] });
    expect(droppedEvents[0].payload).toMatchObject({ userId: "u2", event: "Signed Up", context: { trackingPlanId: "tp_shop", violationErrors: [expect.objectContaining({ type: "Unplanned-Event" })] } });
    expect((await api(s.url, "GET", `/v2/sources/${src.id}/tracking-plan/dropped-events?limit=0`)).status).toBe(400);
    expect((await api(s.url, "GET", "/v2/sources/src_nope/tracking-plan/dropped-events")).status).toBe(404);
    expect((await api(s.url, "GET", "/v2/sources/src_nope/tracking-plan/report")).status).toBe(404);
  });

  test("the counts and dropped events are in the database, and a restart keeps them", async () => {
    const rows = await query(s, "SELECT violation_type, property, count FROM tracking_plan_violation_counts WHERE source_id = ? ORDER BY violation_type", [src.id]);
    expect(rows.map((r) => [r.violation_type, r.property, Number(r.count)])).toEqual([
      ["Datatype-Mismatch", "/properties/total", 1],
      ["Required-Missing", "/properties/orderId", 1],
      ["Unplanned-Event", "", 1],
    ]);
    // An event counted just before the stop is written by the shutdown's flush.
    expect((await send("track", { userId: "u4", event: "Account Deleted" })).status).toBe(200);
    await waitFor(async () => (await query(s, "SELECT id FROM events WHERE source_id = ? AND payload LIKE '%trackingPlanId%' AND payload LIKE '%Account Deleted%'", [src.id])).length > 0 || undefined, { what: "the event checked" });
    await s.stop();
    s = await startSluice({ args: ARGS, dataDir: s.dataDir });
    const report = (await api(s.url, "GET", `/v2/sources/${src.id}/tracking-plan/report`)).json;
    expect(report.totals.dropped.today).toBe(2);
    expect((await api(s.url, "GET", `/v2/sources/${src.id}/tracking-plan/dropped-events`)).json.droppedEvents.map((e: any) => e.event)).toEqual(["Account Deleted", "Signed Up"]);
  });
});
