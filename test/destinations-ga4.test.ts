import { expect, test } from "bun:test";
import { ga4 } from "../src/destinations/ga4";
import type { DestinationContext, SluiceEvent } from "../src/destinations/types";

const gtag = { apiSecret: "sec_1", typesOfClient: "gtag", measurementId: "G-ABC123" };
const ctx = (config: Record<string, any> = gtag, baseUrl?: string): DestinationContext => ({
  config,
  destination: { id: "dest-ga4", name: "GA4", workspaceId: "ws-1" },
  baseUrl,
});

// GA4 only accepts events from the last 72 hours, so fixtures are relative to now.
const ts = new Date(Date.now() - 60_000).toISOString();
const context = {
  page: { url: "https://shop.example.com/p/1", title: "Shoe", referrer: "https://google.com" },
  traits: { plan: "pro", email: "ada@example.com" },
  device: { adTrackingEnabled: true },
};
const base = { messageId: "m-1", userId: "u-1", anonymousId: "anon-1", timestamp: ts, context };
const pageParams = { page_referrer: "https://google.com", page_title: "Shoe", page_location: "https://shop.example.com/p/1" };
const top = {
  client_id: "anon-1",
  user_id: "u-1",
  timestamp_micros: Date.parse(ts) * 1000,
  non_personalized_ads: false,
  user_properties: { plan: { value: "pro" }, email: { value: "ada@example.com" } },
};

test("GA4 track (custom event) → POST google-analytics.com/mp/collect?measurement_id&api_secret, name with spaces → underscores", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Button Clicked", properties: { label: "Buy", meta: { pos: 2 } } };
  expect(ga4.transform(event, ctx())).toEqual([
    {
      version: "1",
      type: "REST",
      method: "POST",
      endpoint: "https://www.google-analytics.com/mp/collect",
      headers: { HOST: "www.google-analytics.com", "Content-Type": "application/json" },
      params: { api_secret: "sec_1", measurement_id: "G-ABC123" },
      body: {
        JSON: {
          ...top,
          events: [{ name: "Button_Clicked", params: { label: "Buy", meta_pos: 2, engagement_time_msec: 1, ...pageParams } }],
        },
        JSON_ARRAY: {},
        XML: {},
        FORM: {},
      },
      files: {},
    },
  ]);
});

test("GA4 'Product Viewed' → view_item with currency, value and an item from the root properties", () => {
  const event: SluiceEvent = {
    ...base,
    type: "track",
    event: "Product Viewed",
    properties: { product_id: "sku-1", name: "Shoe", category: "Footwear", brand: "Acme", price: "49.5", currency: "EUR", color: "red" },
  };
  const [req] = ga4.transform(event, ctx());
  expect((req!.body.JSON.events as any[])[0]).toEqual({
    name: "view_item",
    params: {
      currency: "EUR",
      value: 49.5,
      items: [{ item_id: "sku-1", item_name: "Shoe", item_category: "Footwear", item_brand: "Acme", price: 49.5, currency: "EUR" }],
      color: "red",
      engagement_time_msec: 1,
      ...pageParams,
    },
  });
});

test("GA4 'Order Completed' → purchase with transaction_id, value and items from products", () => {
  const event: SluiceEvent = {
    ...base,
    type: "track",
    event: "Order Completed",
    properties: {
      order_id: "o-9",
      total: 120,
      currency: "USD",
      tax: 10,
      coupon: "SPRING",
      products: [
        { product_id: "p1", name: "Shoe", price: 50, quantity: 2, size: 42 },
        { sku: "x", name: "Sock", price: 10, quantity: 2 },
      ],
    },
  };
  const [req] = ga4.transform(event, ctx());
  expect((req!.body.JSON.events as any[])[0]).toEqual({
    name: "purchase",
    params: {
      currency: "USD",
      transaction_id: "o-9",
      value: 120,
      coupon: "SPRING",
      tax: 10,
      items: [
        { item_id: "p1", item_name: "Shoe", price: 50, quantity: 2, size: 42 },
        { item_name: "Sock", price: 10, quantity: 2, sku: "x" },
      ],
      engagement_time_msec: 1,
      ...pageParams,
    },
  });
  const { products: _p, ...noProducts } = event.properties;
  expect(() => ga4.transform({ ...event, properties: noProducts }, ctx())).toThrow("Products is an required field");
});

test("GA4 page → page_view with page_location/title/referrer; group → join_group with group_id", () => {
  const page: SluiceEvent = { ...base, type: "page", name: "Shoe", properties: { path: "/p/1" } };
  expect((ga4.transform(page, ctx())[0]!.body.JSON.events as any[])[0]).toEqual({
    name: "page_view",
    params: { ...pageParams, path: "/p/1", engagement_time_msec: 1 },
  });
  const group: SluiceEvent = { ...base, type: "group", groupId: "team-7", traits: { name: "Team 7" } };
  expect((ga4.transform(group, ctx())[0]!.body.JSON.events as any[])[0]).toEqual({
    name: "join_group",
    params: { group_id: "team-7", name: "Team 7", engagement_time_msec: 1 },
  });
});

test("GA4 firebase client → app_instance_id from externalId and firebase_app_id param", () => {
  const config = { apiSecret: "sec_1", typesOfClient: "firebase", firebaseAppId: "1:123:android:abc" };
  const event: SluiceEvent = { ...base, type: "track", event: "Level Up", context: { externalId: [{ type: "ga4AppInstanceId", id: "inst-9" }] } };
  const [req] = ga4.transform(event, ctx(config));
  expect(req!.params).toEqual({ api_secret: "sec_1", firebase_app_id: "1:123:android:abc" });
  expect(req!.body.JSON).toMatchObject({ app_instance_id: "inst-9", user_id: "u-1", events: [{ name: "Level_Up" }] });
  expect(req!.body.JSON.client_id).toBeUndefined();
  expect(() => ga4.transform({ ...event, context: {} }, ctx(config))).toThrow("ga4AppInstanceId must be provided");
});

test("GA4 rejects reserved and invalid event names, and events older than 72 hours", () => {
  expect(() => ga4.transform({ ...base, type: "track", event: "session_start" }, ctx())).toThrow("Reserved event names");
  expect(() => ga4.transform({ ...base, type: "track", event: "ga_custom" }, ctx())).toThrow("Reserved custom prefix");
  expect(() => ga4.transform({ ...base, type: "track", event: "1st-visit" }, ctx())).toThrow("must start with a letter");
  const old = new Date(Date.now() - 73 * 3600 * 1000).toISOString();
  expect(() => ga4.transform({ ...base, timestamp: old, type: "track", event: "E" }, ctx())).toThrow("72 hours");
});

test("GA4 debugMode → /debug/mp/collect; baseUrl override keeps path and params", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "E" };
  expect(ga4.transform(event, ctx({ ...gtag, debugMode: true }))[0]!.endpoint).toBe("https://www.google-analytics.com/debug/mp/collect");
  const [req] = ga4.transform(event, ctx(gtag, "http://127.0.0.1:8080"));
  expect(req!.endpoint).toBe("http://127.0.0.1:8080/mp/collect");
  expect(req!.params).toEqual({ api_secret: "sec_1", measurement_id: "G-ABC123" });
});

test("GA4 event filtering, piiPropertiesToIgnore, and missing keys", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Scroll" };
  expect(ga4.transform(event, ctx({ ...gtag, eventFilteringOption: "whitelistedEvents", whitelistedEvents: [{ eventName: "Buy" }] }))).toEqual([]);
  const [req] = ga4.transform(event, ctx({ ...gtag, piiPropertiesToIgnore: [{ piiProperty: "email" }] }));
  expect(req!.body.JSON.user_properties).toEqual({ plan: { value: "pro" } });
  expect(() => ga4.transform(event, ctx({ typesOfClient: "gtag" }))).toThrow("destination config is missing 'apiSecret'");
  expect(() => ga4.transform(event, ctx({ apiSecret: "s", typesOfClient: "gtag" }))).toThrow("destination config is missing 'measurementId'");
  expect(() => ga4.transform(event, ctx({ apiSecret: "s" }))).toThrow("destination config is missing 'typesOfClient'");
});
