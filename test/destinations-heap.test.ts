import { expect, test } from "bun:test";
import { heap } from "../src/destinations/heap";
import type { DestinationContext, SluiceEvent } from "../src/destinations/types";

const ctx = (config: Record<string, any> = { appId: "4141" }, baseUrl?: string): DestinationContext => ({
  config,
  destination: { id: "dest-heap", name: "Heap", workspaceId: "ws-1" },
  baseUrl,
});
const HEADERS = { Accept: "application/json", "Content-Type": "application/json" };
const ts = "2024-05-01T10:00:00.000Z";

test("HEAP track → POST heapanalytics.com/api/track with identity, event, timestamp and flattened properties", () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "m-1",
    userId: "u-1",
    anonymousId: "a-1",
    event: "Purchase",
    timestamp: ts,
    properties: { amount: 99, cart: { items: 2, coupon: "X" }, tags: ["a", "b"], idempotencyKey: "idem-1" },
  };
  expect(heap.transform(event, ctx())).toEqual([
    {
      version: "1",
      type: "REST",
      method: "POST",
      endpoint: "https://heapanalytics.com/api/track",
      headers: HEADERS,
      params: {},
      body: {
        JSON: {
          identity: "u-1",
          properties: { amount: 99, "cart.items": 2, "cart.coupon": "X", "tags[0]": "a", "tags[1]": "b" },
          app_id: "4141",
          event: "Purchase",
          timestamp: ts,
          idempotency_key: "idem-1",
        },
        JSON_ARRAY: {},
        XML: {},
        FORM: {},
      },
      files: {},
    },
  ]);
});

test("HEAP identify → POST /api/add_user_properties with identity and flattened traits; no userId → 'userId is required'", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m-2",
    userId: "u-9",
    anonymousId: "a-9",
    context: { traits: { email: "ada@example.com", address: { city: "London" } } },
  };
  const [req] = heap.transform(event, ctx());
  expect(req!.endpoint).toBe("https://heapanalytics.com/api/add_user_properties");
  expect(req!.headers).toEqual(HEADERS);
  expect(req!.body.JSON).toEqual({ identity: "u-9", properties: { email: "ada@example.com", "address.city": "London" }, app_id: "4141" });
  // A blank userId falls back to the ids in traits; an anonymous user has no identity to set properties on.
  const blank: SluiceEvent = { ...event, userId: "", context: { traits: { id: "t-1", plan: "pro" } } };
  expect(heap.transform(blank, ctx())[0]!.body.JSON.identity).toBe("t-1");
  expect(() => heap.transform({ ...event, userId: "", context: { traits: { plan: "pro" } } }, ctx())).toThrow("userId is required");
  expect(() => heap.transform({ type: "identify", messageId: "m", userId: "u" }, ctx())).toThrow("traits are required");
});

test("HEAP track: a blank userId falls back to anonymousId; dataResidency EU → c.eu.heap-api.com", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", userId: "", anonymousId: "a-5", event: "E", timestamp: ts };
  const [req] = heap.transform(event, ctx({ appId: "4141", dataResidency: "EU" }));
  expect(req!.endpoint).toBe("https://c.eu.heap-api.com/api/track");
  expect(req!.body.JSON.identity).toBe("a-5");
  const identify: SluiceEvent = { type: "identify", messageId: "m", userId: "u", traits: { a: 1 } };
  expect(heap.transform(identify, ctx({ appId: "1", dataResidency: "EU" }))[0]!.endpoint).toBe("https://c.eu.heap-api.com/api/add_user_properties");
  expect(heap.transform(event, ctx({ appId: "1", dataResidency: "US" }))[0]!.endpoint).toBe("https://heapanalytics.com/api/track");
});

test("HEAP refuses other message types; missing appId; baseUrl override", () => {
  expect(() => heap.transform({ type: "page", messageId: "m", userId: "u" }, ctx())).toThrow("not supported");
  const event: SluiceEvent = { type: "track", messageId: "m", userId: "u", event: "E" };
  expect(() => heap.transform(event, ctx({}))).toThrow("destination config is missing 'appId'");
  expect(heap.transform(event, ctx(undefined, "http://localhost:9090"))[0]!.endpoint).toBe("http://localhost:9090/api/track");
});

test("HEAP event filtering (whitelist / blacklist)", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", userId: "u", event: "Page Scrolled" };
  expect(heap.transform(event, ctx({ appId: "1", eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "Page Scrolled" }] }))).toEqual([]);
  expect(heap.transform(event, ctx({ appId: "1", eventFilteringOption: "whitelistedEvents", whitelistedEvents: [{ eventName: "Page Scrolled" }] }))).toHaveLength(1);
});

test("HEAP sends one request per event, as RudderStack does (no bulk calls)", () => {
  expect(heap.batch).toBeUndefined();
});

test("HEAP track: an empty idempotencyKey is not sent; no properties → {}; originalTimestamp when no timestamp", () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "m",
    anonymousId: "a-1",
    event: "E",
    originalTimestamp: ts,
    properties: { idempotencyKey: "" },
  };
  expect(heap.transform(event, ctx())[0]!.body.JSON).toEqual({ identity: "a-1", properties: {}, app_id: "4141", event: "E", timestamp: ts });
  const { properties: _none, ...noProps } = event;
  expect(heap.transform(noProps, ctx())[0]!.body.JSON).toEqual({ identity: "a-1", properties: {}, app_id: "4141", event: "E", timestamp: ts });
});
