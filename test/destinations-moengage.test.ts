import { afterAll, beforeAll, expect, test } from "bun:test";
import { moengage, offsetSeconds } from "../src/destinations/moengage";
import type { DestinationContext, SluiceEvent } from "../src/destinations/types";
import { type TestServer, api, cleanup, createSource, jsonRequest, sendEvent, startSink, startSluice, waitFor } from "./helpers";

const ctx = (config: Record<string, any> = {}): DestinationContext => ({
  config: { apiId: "app-1", apiKey: "key-1", region: "US", ...config },
  destination: { id: "dest-moe", name: "MoEngage", workspaceId: "ws-1" },
});
const HEADERS = { "Content-Type": "application/json", "MOE-APPKEY": "app-1", Authorization: `Basic ${btoa("app-1:key-1")}` };
const context = {
  timezone: "Asia/Tokyo",
  app: { build: "1.0.0", name: "RudderLabs JavaScript SDK", namespace: "com.rudderlabs.javascript", version: "1.1.6" },
  traits: { company: { id: "abc123" }, createdAt: "Thu Mar 24 2016 17:46:45 GMT+0000 (UTC)", email: "rudderTest@gmail.com", name: "Rudder Test", plan: "Enterprise" },
};

test("MOENGAGE track → POST api-01.moengage.com/v1/event/<apiId> with one action, flattened attributes and the zone's offset (RudderStack's Test 0)", () => {
  const event: SluiceEvent = {
    type: "track",
    channel: "web",
    messageId: "m",
    userId: "rudder123",
    anonymousId: "4eb021e9",
    event: "Order Completed",
    context,
    originalTimestamp: "2020-10-16T08:10:12.782Z",
    timestamp: "2020-10-16T13:40:12.791+05:30",
    properties: { coupon: "APPARELSALE", originalArray: [{ nested_field: "nested value", tags: ["tag_1", "tag_2"] }], products: [{ brand: "", price: 3 }], revenue: 31.98 },
  };
  expect(moengage.transform(event, ctx())).toEqual([
    jsonRequest(
      "POST",
      "https://api-01.moengage.com/v1/event/app-1",
      {
        customer_id: "rudder123",
        type: "event",
        actions: [
          {
            action: "Order Completed",
            attributes: {
              coupon: "APPARELSALE",
              "originalArray[0].nested_field": "nested value",
              "originalArray[0].tags[0]": "tag_1",
              "originalArray[0].tags[1]": "tag_2",
              "products[0].brand": "",
              "products[0].price": 3,
              revenue: 31.98,
            },
            app_version: "1.1.6",
            current_time: "2020-10-16T13:40:12.791+05:30",
            user_timezone_offset: 32400,
            platform: "web",
          },
        ],
      },
      HEADERS,
    ),
  ]);
});

test("MOENGAGE identify → POST /v1/customer/<apiId> with MoEngage's standard attributes and the other traits, flattened", () => {
  const event: SluiceEvent = { type: "identify", channel: "web", messageId: "m", userId: "rudder123", context, timestamp: "2020-10-16T13:56:14.944+05:30" };
  expect(moengage.transform(event, ctx({ region: "EU" }))).toEqual([
    jsonRequest(
      "POST",
      "https://api-02.moengage.com/v1/customer/app-1",
      {
        customer_id: "rudder123",
        type: "customer",
        // createdAt is not among the mapping's exclusions, so it is also sent as it is.
        attributes: { name: "Rudder Test", email: "rudderTest@gmail.com", created_time: "Thu Mar 24 2016 17:46:45 GMT+0000 (UTC)", createdAt: "Thu Mar 24 2016 17:46:45 GMT+0000 (UTC)", "company.id": "abc123", plan: "Enterprise" },
      },
      HEADERS,
    ),
  ]);
  // useObjectData keeps nested traits as objects.
  expect(moengage.transform(event, ctx({ useObjectData: true }))[0]!.body.JSON.attributes).toMatchObject({ company: { id: "abc123" } });
  // Standard attributes are converted to their types.
  const typed = moengage.transform({ ...event, context: { traits: { age: "31", mobile: 9876543210, transactions: "x" } } }, ctx())[0]!;
  expect(typed.body.JSON.attributes).toEqual({ age: 31, mobile: "9876543210", transactions: null });
});

test("MOENGAGE identify with a device type and push token also updates the device (Apple platforms as iOS)", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "u-1",
    traits: { email: "a@b.co" },
    context: { device: { type: "ipados", token: "push-1", model: "iPad" }, app: { version: "2.0" }, os: { version: "17" } },
    properties: { push_preference: true, custom: "x" },
  };
  const reqs = moengage.transform(event, ctx({ region: "IND" }));
  expect(reqs.map((r) => r.endpoint)).toEqual(["https://api-03.moengage.com/v1/customer/app-1", "https://api-03.moengage.com/v1/device/app-1"]);
  expect(reqs[1]!.body.JSON).toEqual({
    customer_id: "u-1",
    type: "device",
    attributes: { platform: "iOS", push_id: "push-1", model: "iPad", push_preference: true, app_version: "2.0", os_version: "17", custom: "x" },
  });
});

test("MOENGAGE alias → POST /v1/customer/merge?app_id=<apiId> without MOE-APPKEY; errors as RudderStack words them", () => {
  const [merge] = moengage.transform({ type: "alias", messageId: "m", userId: "new", previousId: "old" }, ctx());
  expect(merge!.endpoint).toBe("https://api-01.moengage.com/v1/customer/merge?app_id=app-1");
  expect(merge!.headers).toEqual({ "Content-Type": "application/json", Authorization: HEADERS.Authorization });
  expect(merge!.body.JSON).toEqual({ merge_data: [{ retained_user: "new", merged_user: "old" }] });
  expect(() => moengage.transform({ type: "track", messageId: "m", userId: "u", event: "E" }, ctx({ region: "APAC" }))).toThrow("The region is not valid");
  expect(() => moengage.transform({ type: "page", messageId: "m", userId: "u", name: "N" }, ctx())).toThrow("Message type not supported");
  expect(offsetSeconds("America/St_Johns")).toBeLessThan(0);
  expect(offsetSeconds("Not/AZone")).toBeUndefined();
});

let s: TestServer;
const sink = startSink(() => Response.json({ status: "success" }));
beforeAll(async () => {
  s = await startSluice({ args: ["--destination-base-url", `MOENGAGE=${sink.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  sink.stop();
  cleanup(s.dataDir);
});

test("MOENGAGE through the pipeline: identify and track reach the stand-in with Basic auth and MOE-APPKEY, in order", async () => {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "moe", type: "MOENGAGE", config: { apiId: "app-9", apiKey: "k-9", region: "US" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const batch = [
    { type: "identify", userId: "u-1", traits: { email: "ada@example.com" } },
    { type: "track", userId: "u-1", event: "Bought", properties: { sku: "a" } },
  ];
  expect((await sendEvent(s.url, src.writeKey, "batch", { batch })).status).toBe(200);
  await waitFor(() => sink.received.length >= 2, { what: "two MoEngage requests" });
  expect(sink.received.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /v1/customer/app-9", "POST /v1/event/app-9"]);
  expect(sink.received[0]!.headers["moe-appkey"]).toBe("app-9");
  expect(sink.received[0]!.headers.authorization).toBe(`Basic ${btoa("app-9:k-9")}`);
  expect(sink.received[1]!.body.actions[0]).toMatchObject({ action: "Bought", attributes: { sku: "a" } });
});
