import { afterAll, beforeAll, expect, test } from "bun:test";
import { moengage, offsetSeconds } from "../../src/destinations/moengage";
import type { DestinationContext, SluiceEvent } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, jsonRequest, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

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
  // Standard attributes are converted to their types; a number that does not convert is left out, as RudderStack drops its NaN.
  const typed = moengage.transform({ ...event, context: { traits: { age: "31", mobile: 9876543210, transactions: "x" } } }, ctx())[0]!;
  expect(typed.body.JSON.attributes).toEqual({ age: 31, mobile: "9876543210" });
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
  expect(() => moengage.transform({ type: "page", messageId: "m", userId: "u", name: "N" }, ctx())).toThrow("Event type page is not supported");
  expect(offsetSeconds("America/St_Johns")).toBeLessThan(0);
  expect(offsetSeconds("Not/AZone")).toBeUndefined();
});

// RudderStack's fixtures (rudder-transformer test/integrations/destinations/moengage): processor/data.ts 25c66c5 (Tests 0–18)
// and router/data.ts f3b45bb (one track and one identify, sent unbatched as in the processor).
const FX_ID = "moe-app-id";
const fxConfig = (extra: Record<string, any> = {}) => ({ apiId: FX_ID, apiKey: "moe-secret", eventDelivery: false, eventDeliveryTS: 1602757086384, region: "US", ...extra });
const fxCtx = (config: Record<string, any>): DestinationContext => ({ config, destination: { id: "1iuTZs6eEZVMm6GjRBe6bNShaL3", name: "MoEngage Testing", workspaceId: "ws" } });
const fx = (event: Record<string, any>, config: Record<string, any> = fxConfig()) => moengage.transform(event as SluiceEvent, fxCtx(config));
const FX_HEADERS = { "Content-Type": "application/json", "MOE-APPKEY": FX_ID, Authorization: `Basic ${btoa(`${FX_ID}:moe-secret`)}` };
const fxReq = (path: string, json: Record<string, unknown>, host = "https://api-01.moengage.com", headers: Record<string, string> = FX_HEADERS) => jsonRequest("POST", `${host}${path}`, json, headers);
const fxTraits = { company: { id: "abc123" }, createdAt: "Thu Mar 24 2016 17:46:45 GMT+0000 (UTC)", email: "rudderTest@gmail.com", name: "Rudder Test", plan: "Enterprise" };
const fxContext = (extra: Record<string, any> = {}) => ({
  app: { build: "1.0.0", name: "RudderLabs JavaScript SDK", namespace: "com.rudderlabs.javascript", version: "1.1.6" },
  library: { name: "RudderLabs JavaScript SDK", version: "1.1.6" },
  locale: "en-GB",
  os: { name: "", version: "" },
  page: { path: "/testing/script-test.html", referrer: "", search: "", title: "", url: "http://localhost:3243/testing/script-test.html" },
  screen: { density: 2 },
  traits: fxTraits,
  userAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/86.0.4240.80 Safari/537.36",
  ...extra,
});
const fxIdentify = (extra: Record<string, any> = {}) => ({
  anonymousId: "4eb021e9-a2af-4926-ae82-fe996d12f3c5",
  channel: "web",
  context: fxContext(),
  integrations: { All: true },
  messageId: "e108eb05-f6cd-4624-ba8c-568f2e2b3f92",
  originalTimestamp: "2020-10-16T08:26:14.938Z",
  receivedAt: "2020-10-16T13:56:14.945+05:30",
  request_ip: "[::1]",
  sentAt: "2020-10-16T08:26:14.939Z",
  timestamp: "2020-10-16T13:56:14.944+05:30",
  type: "identify",
  userId: "rudder123",
  ...extra,
});
const fxCustomer = { name: "Rudder Test", plan: "Enterprise", email: "rudderTest@gmail.com", createdAt: "Thu Mar 24 2016 17:46:45 GMT+0000 (UTC)", "company.id": "abc123", created_time: "Thu Mar 24 2016 17:46:45 GMT+0000 (UTC)" };
const customerReq = (host?: string) => fxReq(`/v1/customer/${FX_ID}`, { type: "customer", attributes: fxCustomer, customer_id: "rudder123" }, host);
const fxProducts = [
  { brand: "", category: "Merch", currency: "GBP", image_url: "https://www.example.com/product/bacon-jam.jpg", name: "Food/Drink", position: 1, price: 3, product_id: "product-bacon-jam", quantity: 2, sku: "sku-1", typeOfProduct: "Food", url: "https://www.example.com/product/bacon-jam", value: 6, variant: "Extra topped" },
  { brand: "Levis", category: "Merch", currency: "GBP", image_url: "https://www.example.com/product/t-shirt.jpg", name: "T-Shirt", position: 2, price: 12.99, product_id: "product-t-shirt", quantity: 1, sku: "sku-2", typeOfProduct: "Shirt", url: "https://www.example.com/product/t-shirt", value: 12.99, variant: "White" },
  { brand: "Levis", category: "Merch", coupon: "APPARELSALE", currency: "GBP", image_url: "https://www.example.com/product/offer-t-shirt.jpg", name: "T-Shirt-on-offer", position: 1, price: 12.99, product_id: "offer-t-shirt", quantity: 1, sku: "sku-3", typeOfProduct: "Shirt", url: "https://www.example.com/product/offer-t-shirt", value: 12.99, variant: "Black" },
];
// The products as RudderStack's flattenJson writes them: `products[i].key`.
const flatProducts = Object.fromEntries(fxProducts.flatMap((p, i) => Object.entries(p).map(([k, v]) => [`products[${i}].${k}`, v])));
const fxOrder = { checkout_id: "what is checkout id here??", coupon: "APPARELSALE", currency: "GBP", order_id: "transactionId", products: fxProducts, revenue: 31.98, shipping: 4, value: 31.98 };
const flatOrder = { checkout_id: "what is checkout id here??", coupon: "APPARELSALE", currency: "GBP", order_id: "transactionId", ...flatProducts, revenue: 31.98, shipping: 4, value: 31.98 };
const fxTrack = (properties: Record<string, any>, contextExtra: Record<string, any> = {}, extra: Record<string, any> = {}) => ({
  anonymousId: "4eb021e9-a2af-4926-ae82-fe996d12f3c5",
  channel: "web",
  context: fxContext(contextExtra),
  event: "Order Completed",
  integrations: { All: true },
  messageId: "a0adfab9-baf7-4e09-a2ce-bbe2844c324a",
  originalTimestamp: "2020-10-16T08:10:12.782Z",
  properties,
  receivedAt: "2020-10-16T13:40:12.792+05:30",
  request_ip: "[::1]",
  sentAt: "2020-10-16T08:10:12.783Z",
  timestamp: "2020-10-16T13:40:12.791+05:30",
  type: "track",
  userId: "rudder123",
  ...extra,
});
const eventReq = (action: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  fxReq(`/v1/event/${FX_ID}`, { customer_id: "rudder123", ...extra, type: "event", actions: [{ action: "Order Completed", app_version: "1.1.6", current_time: "2020-10-16T13:40:12.791+05:30", platform: "web", ...action }] });
const tagged = (n: number, tags: string[]) => Array.from({ length: n }, () => ({ nested_field: "nested value", tags }));
const flatTagged = (items: Array<{ tags?: string[] }>) =>
  Object.fromEntries(items.flatMap((item, i) => [[`originalArray[${i}].nested_field`, "nested value"], ...(item.tags ?? []).map((t, j) => [`originalArray[${i}].tags[${j}]`, t])]));
const androidDevice = { id: "7e32188a4dab669f", manufacturer: "Google", model: "Android SDK built for x86", name: "generic_x86", token: "desuhere", type: "android" };
const iosDevice = { id: "7e32188a4dab669f", manufacturer: "Google", model: "AOSP on IA Emulator", name: "generic_x86_arm", token: "desuhere", type: "ipados" };

test("MOENGAGE RudderStack fixture: track → v1/event with flattened nested arrays, the zone's offset and the channel as platform (Tests 0, 10)", () => {
  const originalArray = tagged(9, ["tag_1", "tag_2", "tag_3"]);
  const tokyo = fxTrack({ ...fxOrder, category: "some category", originalArray }, { timezone: "Asia/Tokyo" });
  expect(fx(tokyo)).toEqual([eventReq({ attributes: { category: "some category", ...flatTagged(originalArray), ...flatOrder }, user_timezone_offset: 32400 })]);
  const longer = [...tagged(7, ["tag_1", "tag_2", "tag_3"]), ...tagged(2, ["tag_1", "tag_2", "tag_3", "tag_1", "tag_2", "tag_3"])];
  const kolkata = fxTrack({ category: "some category", originalArray: longer, ...fxOrder }, { timezone: "Asia/Kolkata" }, { anonymousId: undefined });
  expect(fx(kolkata)).toEqual([eventReq({ attributes: { ...flatOrder, category: "some category", ...flatTagged(longer) }, user_timezone_offset: 19800 })]);
});

test("MOENGAGE RudderStack fixture: track with useObjectData keeps the properties as objects (Test 11)", () => {
  const originalArray = [...tagged(7, ["tag_1", "tag_2", "tag_3"]), ...tagged(2, ["tag_1", "tag_2", "tag_3", "tag_1", "tag_2", "tag_3"])];
  const properties = { category: "some category", originalArray, ...fxOrder };
  expect(fx(fxTrack(properties, { timezone: "Asia/Kolkata" }), fxConfig({ useObjectData: true }))).toEqual([eventReq({ attributes: properties, user_timezone_offset: 19800 })]);
});

test("MOENGAGE RudderStack fixture: track with an unknown zone has no offset; a device adds device_id and an Apple platform as iOS (Tests 12, 14, 15)", () => {
  expect(fx(fxTrack(fxOrder, { timezone: "Wrong/Timezone" }))).toEqual([eventReq({ attributes: flatOrder })]);
  const short = [{ nested_field: "nested value", tags: ["tag_1", "tag_2", "tag_3"] }, { nested_field: "nested value", tags: ["tag_1"] }, { nested_field: "nested value" }];
  const withDevice = fxTrack({ ...fxOrder, category: "some category", originalArray: short }, { timezone: "Wrong/Timezone", device: iosDevice });
  expect(fx(withDevice)).toEqual([eventReq({ attributes: { ...flatOrder, ...flatTagged(short), category: "some category" }, platform: "iOS" }, { device_id: "7e32188a4dab669f" })]);
  const nested = { nested_field: "nested value", tags: ["tag_1", "tag_2", "tag_3"], key1: { nested_field: "nested value", key11: "val11", key12: "val12", key13: { k1: "v1", k2: "v2" }, key2: {}, key3: [] } };
  expect(fx(fxTrack({ ...fxOrder, category: "some category", originalArray: nested }, { timezone: "Wrong/Timezone", device: iosDevice }))).toEqual([
    eventReq(
      {
        attributes: {
          ...flatOrder,
          "originalArray.key1.key11": "val11",
          "originalArray.key1.key12": "val12",
          "originalArray.key1.key13.k1": "v1",
          "originalArray.key1.key13.k2": "v2",
          "originalArray.key1.nested_field": "nested value",
          "originalArray.nested_field": "nested value",
          "originalArray.tags[0]": "tag_1",
          "originalArray.tags[1]": "tag_2",
          "originalArray.tags[2]": "tag_3",
          "originalArray.key1.key2": {},
          "originalArray.key1.key3": [],
          category: "some category",
        },
        platform: "iOS",
      },
      { device_id: "7e32188a4dab669f" },
    ),
  ]);
});

test("MOENGAGE RudderStack fixture: identify → v1/customer on the region's host; custom traits; the anonymous id as customer_id (Tests 1, 2, 4, 6, 18)", () => {
  expect(fx(fxIdentify())).toEqual([customerReq()]);
  expect(fx(fxIdentify(), fxConfig({ region: "EU" }))).toEqual([customerReq("https://api-02.moengage.com")]);
  expect(fx(fxIdentify(), fxConfig({ region: "IND" }))).toEqual([customerReq("https://api-03.moengage.com")]);
  const custom = { CID: "4eb021e9-a2af-4926-ae82-fe996d12f3c5", RC_DATE: "2021-03-22T12:36:34Z", RC_NO_OF_SKUS: 1, RC_PN_SKU_LIST: "9317" };
  const { traits: _t, ...noTraits } = fxContext();
  expect(fx(fxIdentify({ context: noTraits, traits: custom, userId: undefined }))).toEqual([
    fxReq(`/v1/customer/${FX_ID}`, { type: "customer", attributes: custom, customer_id: "4eb021e9-a2af-4926-ae82-fe996d12f3c5" }),
  ]);
  const bare = { type: "identify", event: "identify", sentAt: "2023-11-22T03:42:40.346Z", userId: "userId16", channel: "mobile", timestamp: "2023-11-22T03:42:31.470Z", anonymousId: "anon-dummyId-1", integrations: { All: true }, originalTimestamp: "2023-11-22T03:42:28.535Z" };
  expect(fx(bare)).toEqual([fxReq(`/v1/customer/${FX_ID}`, { attributes: {}, customer_id: "userId16", type: "customer" })]);
});

test("MOENGAGE RudderStack fixture: identify with a device type and token also updates the device (device_id; empty values left out; ipados as iOS) (Tests 3, 13)", () => {
  const deviceReq = (model: string, platformName: string) =>
    fxReq(`/v1/device/${FX_ID}`, { type: "device", device_id: "7e32188a4dab669f", attributes: { model, push_id: "desuhere", platform: platformName, app_version: "1.1.6" }, customer_id: "rudder123" });
  expect(fx(fxIdentify({ context: fxContext({ device: androidDevice }) }))).toEqual([customerReq(), deviceReq("Android SDK built for x86", "android")]);
  expect(fx(fxIdentify({ context: fxContext({ device: iosDevice }) }))).toEqual([customerReq(), deviceReq("AOSP on IA Emulator", "iOS")]);
});

test("MOENGAGE RudderStack fixture: identify with useObjectData keeps nested traits and device properties as objects (Test 5)", () => {
  const properties = { key1: { key1_1: "value1", key1_2: "value2", data: "hello" }, data: { key2: "value2" }, key2: "value2" };
  const traits = { ...fxTraits, address: { city: "San Francisco", country: "USA" } };
  const event = fxIdentify({ properties, context: fxContext({ device: androidDevice, traits }) });
  expect(fx(event, fxConfig({ useObjectData: true }))).toEqual([
    fxReq(`/v1/customer/${FX_ID}`, {
      type: "customer",
      attributes: { name: "Rudder Test", plan: "Enterprise", email: "rudderTest@gmail.com", createdAt: "Thu Mar 24 2016 17:46:45 GMT+0000 (UTC)", company: { id: "abc123" }, address: { city: "San Francisco", country: "USA" }, created_time: "Thu Mar 24 2016 17:46:45 GMT+0000 (UTC)" },
      customer_id: "rudder123",
    }),
    fxReq(`/v1/device/${FX_ID}`, { type: "device", device_id: "7e32188a4dab669f", attributes: { model: "Android SDK built for x86", push_id: "desuhere", platform: "android", app_version: "1.1.6", ...properties }, customer_id: "rudder123" }),
  ]);
});

test("MOENGAGE RudderStack fixture: alias → v1/customer/merge without MOE-APPKEY; a missing previousId is named (Tests 16, 17)", () => {
  const alias = { messageId: "adc7c2d0-0ebf-4593-b878-a0eb75932820", originalTimestamp: "2023-03-09T00:09:53.235+05:30", previousId: "4eb021e9-a2af-4926-ae82-fe996d12f3c5", timestamp: "2023-03-09T00:09:51.291+05:30", type: "alias", userId: "12345" };
  expect(fx(alias)).toEqual([
    fxReq(`/v1/customer/merge?app_id=${FX_ID}`, { merge_data: [{ merged_user: "4eb021e9-a2af-4926-ae82-fe996d12f3c5", retained_user: "12345" }] }, "https://api-01.moengage.com", {
      "Content-Type": "application/json",
      Authorization: FX_HEADERS.Authorization,
    }),
  ]);
  const { previousId: _p, ...noPrevious } = alias;
  expect(() => fx(noPrevious)).toThrow('Missing required value from "previousId"');
  // RudderStack does not refuse a merge of a user into itself.
  expect(fx({ ...alias, previousId: "12345" })[0]!.body.JSON).toEqual({ merge_data: [{ retained_user: "12345", merged_user: "12345" }] });
});

test("MOENGAGE RudderStack fixture: errors — an unknown region, a missing or unsupported event type (Tests 7, 8, 9)", () => {
  expect(() => fx(fxIdentify(), fxConfig({ region: "AMA" }))).toThrow("The region is not valid");
  expect(() => fx(fxIdentify({ type: undefined }), fxConfig({ region: "IND" }))).toThrow("Event type is required");
  expect(() => fx(fxIdentify({ type: "gone" }), fxConfig({ region: "IND" }))).toThrow("Event type gone is not supported");
  // The user's id is looked for before the region, as in RudderStack.
  expect(() => fx({ type: "track", event: "E" }, fxConfig({ region: "AMA" }))).toThrow('Missing required value from ["userId","traits.userId","traits.id","context.traits.userId","context.traits.id","anonymousId"]');
  expect(() => fx({ type: "track", userId: "u" }, fxConfig({ region: "AMA" }))).toThrow("The region is not valid");
  expect(() => fx({ type: "track", userId: "u" })).toThrow('Missing required value from "event"');
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

test("MOENGAGE numeric ids (as rudder-server passes them) are sent as numbers, as RudderStack's mappings copy them", () => {
  const n = (e: Record<string, unknown>) => e as unknown as SluiceEvent;
  const [customer] = moengage.transform(n({ type: "identify", messageId: "m", userId: 42, traits: { plan: "pro" } }), ctx());
  expect(customer!.body.JSON).toMatchObject({ customer_id: 42, type: "customer" });
  const [event] = moengage.transform(n({ type: "track", messageId: "m", anonymousId: 7, event: "E", properties: {}, timestamp: "2024-05-01T10:00:00.000Z" }), ctx());
  expect(event!.body.JSON).toMatchObject({ customer_id: 7, type: "event" });
  const [merge] = moengage.transform(n({ type: "alias", messageId: "m", userId: 42, previousId: 41 }), ctx());
  expect(merge!.body.JSON).toEqual({ merge_data: [{ retained_user: 42, merged_user: 41 }] });
});
