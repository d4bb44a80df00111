/**
 * Tracking plans through a real server to a sink: a plan and a source's settings set through the
 * API annotate every event (valid ones with `violationErrors: []`, alias too) and drop what the
 * settings say, which never reaches a destination; a workspace file with RudderStack's
 * dgSourceTrackingPlanConfig and an imported plan does the same from start-up, and a plan whose
 * schema does not compile is refused by the API but kept from the file, its events unchecked.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type SluiceProcess, api, basic, cleanup, spawnSluice, startSink, tempDir, waitFor } from "../support/helpers";

const PLAN = {
  id: "tp_orders",
  name: "Orders",
  version: 1,
  events: [
    {
      id: "ev_order",
      name: "Order Completed",
      eventType: "track",
      description: "",
      rules: {
        $schema: "http://json-schema.org/draft-07/schema#",
        type: "object",
        properties: {
          properties: {
            type: "object",
            properties: { orderId: { type: "string" }, total: { type: "number" } },
            required: ["orderId"],
            additionalProperties: false,
          },
        },
        required: ["properties"],
      },
    },
    { id: "ev_identify", name: "", eventType: "identify", description: "", rules: {} },
  ],
};
const SETTINGS = {
  trackingPlan: { id: "tp_orders", version: 1 },
  config: { track: { allowUnplannedEvents: "false", anyOtherViolation: "drop", unplannedProperties: "forward", propagateValidationErrors: "true" } },
};

let sink: ReturnType<typeof startSink>;
const delivered = () => sink.received.map((r) => r.body as Record<string, any>);
const send = (url: string, key: string, call: string, body: unknown) =>
  fetch(`${url}/v1/${call}`, { method: "POST", headers: { authorization: basic(key), "content-type": "application/json" }, body: JSON.stringify(body) });

beforeAll(() => {
  sink = startSink();
});
afterAll(() => sink.stop());

describe("through the API", () => {
  let s: SluiceProcess;
  let key: string;
  beforeAll(async () => {
    s = await spawnSluice();
    const src = (await api(s.url, "POST", "/v2/sources", { name: "shop" })).json;
    key = src.writeKey;
    expect((await api(s.url, "POST", "/v2/destinations", { name: "sink", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/api` }, sourceIds: [src.id] })).status).toBe(201);
    const plan = await api(s.url, "POST", "/v2/tracking-plans", PLAN);
    expect(plan.status).toBe(201);
    expect(plan.json).toMatchObject({ id: "tp_orders", name: "Orders", version: 1, currentVersion: 1, problems: [] });
    const set = await api(s.url, "PUT", `/v2/sources/${src.id}/tracking-plan`, SETTINGS);
    expect(set.status).toBe(200);
  });
  afterAll(async () => {
    s.proc.kill("SIGTERM");
    await s.proc.exited;
    await cleanup(s.dataDir);
  });

  test("a valid event is annotated with no violations; unplanned and wrong ones are dropped and never delivered; alias is annotated unchecked", async () => {
    expect((await send(s.url, key, "track", { userId: "u1", event: "Order Completed", properties: { orderId: "o-1", total: 10 } })).status).toBe(200);
    expect((await send(s.url, key, "track", { userId: "u1", event: "Order Completed", properties: { total: "ten" } })).status).toBe(200);
    expect((await send(s.url, key, "track", { userId: "u1", event: "Signed Up" })).status).toBe(200);
    expect((await send(s.url, key, "alias", { userId: "u1", previousId: "anon-1" })).status).toBe(200);
    expect((await send(s.url, key, "identify", { userId: "u1", traits: { plan: "pro" } })).status).toBe(200);
    const mine = () => sink.received.filter((r) => r.path === "/api").map((r) => r.body as Record<string, any>);
    await waitFor(() => mine().length >= 3 || undefined, { what: "the kept events" });
    // The two dropped ones would come before these in each user's order: none came.
    const events = mine();
    expect(events.map((e) => e.type).sort()).toEqual(["alias", "identify", "track"]);
    const track = events.find((e) => e.type === "track")!;
    expect(track.properties).toEqual({ orderId: "o-1", total: 10 });
    expect(track.context).toMatchObject({ trackingPlanId: "tp_orders", trackingPlanVersion: 1, violationErrors: [] });
    expect(events.find((e) => e.type === "alias")!.context).toMatchObject({ trackingPlanId: "tp_orders", trackingPlanVersion: 1, violationErrors: [] });
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    const dropped = metrics.split("\n").filter((l) => l.startsWith("sluice_tracking_plan_dropped_total")).reduce((n, l) => n + Number(l.split(" ").at(-1)), 0);
    expect(dropped).toBe(2);
    expect(metrics).toContain('violation="Unplanned-Event"');
    expect(metrics).toContain('violation="Datatype-Mismatch"');
  });

  test("a plan whose schema does not compile is refused with 400 naming the event; versions add up; an unknown plan id is a 400", async () => {
    const broken = await api(s.url, "POST", "/v2/tracking-plans", { ...PLAN, id: "tp_broken", events: [{ ...PLAN.events[0], rules: { type: "object", properties: { a: { type: "strng" } } } }] });
    expect(broken.status).toBe(400);
    expect(broken.json.message).toContain("'Order Completed' does not compile");
    const v2 = await api(s.url, "POST", "/v2/tracking-plans", { ...PLAN, version: 2 });
    expect(v2.json).toMatchObject({ version: 2, currentVersion: 2 });
    const again = await api(s.url, "POST", "/v2/tracking-plans", { ...PLAN, version: 2 });
    expect(again.status).toBe(201);
    const clash = await api(s.url, "POST", "/v2/tracking-plans", { ...PLAN, version: 2, name: "Other" });
    expect(clash.status).toBe(409);
    expect((await api(s.url, "GET", "/v2/tracking-plans/tp_orders?version=1")).json.version).toBe(1);
    expect((await api(s.url, "GET", "/v2/tracking-plans/tp_orders/versions")).json.versions.map((v: any) => v.version)).toEqual([2, 1]);
    const src = (await api(s.url, "GET", "/v2/sources")).json.sources[0];
    const unknown = await api(s.url, "PUT", `/v2/sources/${src.id}/tracking-plan`, { trackingPlan: { id: "tp_nope", version: 1 }, config: {} });
    expect(unknown.status).toBe(400);
  });
});

describe("a plan change checked against recent traffic", () => {
  test("the source's stored events are validated against the new plan: how many would violate and be dropped, nothing stored", async () => {
    const s = await spawnSluice();
    try {
      const src = (await api(s.url, "POST", "/v2/sources", { name: "preview" })).json;
      for (let i = 0; i < 30; i++) expect((await send(s.url, src.writeKey, "track", { userId: `p${i}`, event: "Order Completed", properties: i % 3 ? { orderId: `o-${i}` } : { total: i } })).status).toBe(200);
      for (let i = 0; i < 5; i++) expect((await send(s.url, src.writeKey, "track", { userId: `q${i}`, event: "Signed Up" })).status).toBe(200);
      const preview = async () => (await api(s.url, "POST", `/v2/sources/${src.id}/tracking-plan/preview`, { plan: PLAN, settings: SETTINGS })).json;
      const r = await waitFor(async () => ((await preview()).checked === 35 ? await preview() : undefined), { what: "all 35 events stored" });
      // 10 orders without orderId (Required-Missing), 5 unplanned events; all dropped by these settings.
      expect(r).toMatchObject({ checked: 35, violating: 15, dropped: 15, byViolation: { "Required-Missing": 10, "Unplanned-Event": 5 }, problems: [] });
      expect(r.events).toEqual([
        { type: "track", event: "Order Completed", checked: 30, violating: 10, dropped: 10 },
        { type: "track", event: "Signed Up", checked: 5, violating: 5, dropped: 5 },
      ]);
      expect((await api(s.url, "GET", "/v2/tracking-plans")).json.trackingPlans).toEqual([]);
    } finally {
      s.proc.kill("SIGTERM");
      await s.proc.exited;
      await cleanup(s.dataDir);
    }
  });
});

describe("from a RudderStack workspace file", () => {
  let s: SluiceProcess;
  let dir: string;
  const KEY = "2bWsWriteKeyPlannedWeb0001";
  beforeAll(async () => {
    dir = tempDir();
    const brokenPlan = { id: "tp_kept_broken", name: "Broken", version: 3, events: [{ id: "e1", name: "Bad Schema", eventType: "track", description: "", rules: { type: "object", properties: { a: { type: "strng" } } } }] };
    const file = {
      trackingPlans: [PLAN, brokenPlan],
      sources: [
        {
          id: "2bWsSrcPlanned01",
          name: "Planned web",
          writeKey: KEY,
          enabled: true,
          config: {},
          sourceDefinition: { name: "Javascript", category: null, type: "web" },
          dgSourceTrackingPlanConfig: { sourceId: "2bWsSrcPlanned01", version: 1, config: SETTINGS.config, trackingPlan: SETTINGS.trackingPlan, deleted: false },
          destinations: [{ id: "2bWsDstSink0001", name: "Sink", enabled: true, config: { webhookUrl: `${sink.url}/file`, webhookMethod: "POST", headers: [] }, destinationDefinition: { name: "WEBHOOK", displayName: "Webhook" } }],
        },
      ],
    };
    await Bun.write(join(dir, "workspaceConfig.json"), JSON.stringify(file));
    s = await spawnSluice({ args: ["--config", join(dir, "workspaceConfig.json")] });
  });
  afterAll(async () => {
    s.proc.kill("SIGTERM");
    await s.proc.exited;
    await cleanup(s.dataDir);
    await cleanup(dir);
  });

  test("the file's plan and settings drop and annotate exactly as through the API; its broken plan is kept and marked", async () => {
    expect((await send(s.url, KEY, "track", { userId: "f1", event: "Order Completed", properties: { orderId: "o-9", extra: true } })).status).toBe(200);
    expect((await send(s.url, KEY, "track", { userId: "f1", event: "Nope" })).status).toBe(200);
    expect((await send(s.url, KEY, "track", { userId: "f1", event: "Order Completed", properties: { orderId: "o-10" } })).status).toBe(200);
    const mine = () => sink.received.filter((r) => r.path === "/file").map((r) => r.body as Record<string, any>);
    await waitFor(() => mine().some((e) => e.properties?.orderId === "o-10") || undefined, { what: "the last kept event" });
    // An unplanned property is forwarded (unplannedProperties: forward), with its violation; the unplanned event is dropped.
    expect(mine().map((e) => e.properties.orderId)).toEqual(["o-9", "o-10"]);
    const extra = mine()[0]!;
    expect(extra.context.violationErrors).toEqual([expect.objectContaining({ type: "Additional-Properties", property: "extra" })]);
    expect(mine()[1]!.context.violationErrors).toEqual([]);
    const kept = (await api(s.url, "GET", "/v2/tracking-plans/tp_kept_broken")).json;
    expect(kept.version).toBe(3);
    expect(kept.problems).toEqual([{ event: "Bad Schema", message: expect.stringContaining("data/properties/a/type must be equal to one of the allowed values") }]);
    expect(s.output()).toContain("tracking plan kept with schemas that do not compile");
  });
});
