import { expect, test } from "bun:test";
import { ga4 } from "../src/destinations/ga4";
import type { DestinationContext, DestinationRequest, SluiceEvent } from "../src/destinations/types";

const gtag = { apiSecret: "sec_1", typesOfClient: "gtag", measurementId: "G-ABC123" };
const ctx = (config: Record<string, any> = gtag, baseUrl?: string): DestinationContext => ({
  config,
  destination: { id: "dest-ga4", name: "GA4", workspaceId: "ws-1" },
  baseUrl,
});

// GA4 only accepts events from the last 72 hours, so fixtures are relative to now. The
// milliseconds are there to show that RudderStack sends whole seconds.
const sentMs = Math.floor(Date.now() / 1000) * 1000 - 60_000 + 789;
const ts = new Date(sentMs).toISOString();
const micros = (sentMs - 789) * 1000;
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
  timestamp_micros: micros,
  non_personalized_ads: false,
  user_properties: { plan: { value: "pro" }, email: { value: "ada@example.com" } },
};
/** The whole request RudderStack sends: one event per POST to the Measurement Protocol. */
const collectRequest = (query: Record<string, string>, json: Record<string, unknown>): DestinationRequest => ({
  version: "1",
  type: "REST",
  method: "POST",
  endpoint: "https://www.google-analytics.com/mp/collect",
  headers: { HOST: "www.google-analytics.com", "Content-Type": "application/json" },
  params: query,
  body: { JSON: json, JSON_ARRAY: {}, XML: {}, FORM: {} },
  files: {},
});
const ga4Event = (event: SluiceEvent, config: Record<string, any> = gtag) => (ga4.transform(event, ctx(config))[0]!.body.JSON.events as any[])[0];
const track = (event: string, properties?: Record<string, unknown>, extra: Record<string, unknown> = {}): SluiceEvent => ({
  ...base,
  type: "track",
  event,
  properties,
  ...extra,
});

test("GA4 track (custom event) → POST google-analytics.com/mp/collect?measurement_id&api_secret, name with spaces → underscores", () => {
  const event = track("Button Clicked", {
    label: "Buy",
    meta: { pos: 2, tags: [], extra: {} },
    blank: "  ",
    gone: null,
    google_ref: "x",
    Firebase_thing: "y",
    engagementTimeMsec: 250,
    sessionId: 77,
    user_properties: { tier: "gold" },
  });
  expect(ga4.transform(event, ctx())).toEqual([
    collectRequest(
      { api_secret: "sec_1", measurement_id: "G-ABC123" },
      {
        ...top,
        user_properties: { tier: { value: "gold" }, ...top.user_properties },
        events: [{ name: "Button_Clicked", params: { label: "Buy", meta_pos: 2, engagement_time_msec: 250, session_id: 77, ...pageParams } }],
      },
    ),
  ]);
});

test("GA4 'Product Viewed' → view_item; root properties become the item and are not repeated as parameters", () => {
  const properties = {
    product_id: "sku-1",
    name: "Shoe",
    category: "Footwear",
    brand: "Acme",
    variant: "red",
    price: "49.5",
    quantity: "2",
    position: "3",
    coupon: "C1",
    currency: "EUR",
    affiliation: "Store",
    discount: 2.5,
    item_category2: "Adult",
    location_id: "L1",
    list_id: "related",
    color: "red",
    timezone: { name: "Europe/Tallinn" },
  };
  expect(ga4Event(track("Product Viewed", properties))).toEqual({
    name: "view_item",
    params: {
      currency: "EUR",
      value: 49.5,
      items: [
        {
          item_id: "sku-1",
          item_name: "Shoe",
          coupon: "C1",
          item_category: "Footwear",
          item_brand: "Acme",
          item_variant: "red",
          price: 49.5,
          quantity: 2,
          index: 3,
          affiliation: "Store",
          currency: "EUR",
          discount: 2.5,
          item_category2: "Adult",
          location_id: "L1",
        },
      ],
      list_id: "related",
      color: "red",
      timezone_name: "Europe/Tallinn",
      engagement_time_msec: 1,
      ...pageParams,
    },
  });
  const { currency: _c, ...noCurrency } = properties;
  expect(() => ga4.transform(track("Product Viewed", noCurrency), ctx())).toThrow('Missing required value from "properties.currency"');
  expect(() => ga4.transform(track("Product Viewed", { total: 7, currency: "USD" }), ctx())).toThrow("One of product_id or name is required");
});

test("GA4 'Order Completed' → purchase with transaction_id, value and items; unmapped product fields stay on the item", () => {
  const event = track("order completed", {
    order_id: "o-9",
    total: "120",
    revenue: 100,
    currency: "USD",
    tax: "10",
    shipping: 5,
    coupon: "SPRING",
    affiliation: "Web",
    checkout_id: "c-1",
    products: [
      { product_id: "p1", name: "Shoe", price: "50", quantity: 2, position: 1, item_category2: "Adult", details: { size: 42, tags: [] }, empty: "" },
      { itemId: "x", itemName: "Sock", price: 10, sku: "x" },
    ],
  });
  expect(ga4Event(event)).toEqual({
    name: "purchase",
    params: {
      currency: "USD",
      transaction_id: "o-9",
      value: 120,
      coupon: "SPRING",
      shipping: 5,
      tax: 10,
      items: [
        { item_id: "p1", item_name: "Shoe", price: 50, quantity: 2, index: 1, item_category2: "Adult", details_size: 42 },
        { item_id: "x", item_name: "Sock", price: 10, sku: "x" },
      ],
      affiliation: "Web",
      checkout_id: "c-1",
      engagement_time_msec: 1,
      ...pageParams,
    },
  });
  const { products: _p, ...noProducts } = event.properties;
  expect(() => ga4.transform({ ...event, properties: noProducts }, ctx())).toThrow("Products is an required field for 'order completed' event");
  expect(() => ga4.transform({ ...event, properties: { ...noProducts, products: [{ price: 1 }] } }, ctx())).toThrow(
    "One of product_id or name is required",
  );
});

test("GA4 'Product Added' → add_to_cart: value is price × quantity when no total, USD by default, items from products", () => {
  const products = [{ product_id: "p1", name: "Shoe" }];
  expect(ga4Event(track("Product Added", { price: "2.5", quantity: 4, products }))).toEqual({
    name: "add_to_cart",
    params: {
      currency: "USD",
      value: 10,
      items: [{ item_id: "p1", item_name: "Shoe" }],
      // Only the price × quantity operation reads these, so RudderStack repeats them as parameters.
      price: "2.5",
      quantity: 4,
      engagement_time_msec: 1,
      ...pageParams,
    },
  });
  expect(ga4Event(track("Product Added", { price: 3, products })).params.value).toBe(3);
  // No product list (empty, or not an array): the root properties are the item.
  for (const list of [[], { product_id: "p9" }]) {
    expect(ga4Event(track("Product Added", { total: "7.77", product_id: "p2", name: "Hat", price: 7.77, products: list }))).toEqual({
      name: "add_to_cart",
      params: { currency: "USD", value: 7.77, items: [{ item_id: "p2", item_name: "Hat", price: 7.77 }], engagement_time_msec: 1, ...pageParams },
    });
  }
  expect(() => ga4.transform(track("Product Added", { products }), ctx())).toThrow("Missing required value from");
});

test("GA4 'Product Removed' needs a currency; 'Product Added to Wishlist' defaults it", () => {
  const properties = { product_id: "p1", price: 5 };
  expect(() => ga4.transform(track("Product Removed", properties), ctx())).toThrow('Missing required value from "properties.currency"');
  expect(ga4Event(track("Product Removed", { ...properties, currency: "EUR" })).params).toMatchObject({ currency: "EUR", value: 5 });
  expect(ga4Event(track("Product Added to Wishlist", properties))).toEqual({
    name: "add_to_wishlist",
    params: { currency: "USD", value: 5, items: [{ item_id: "p1", price: 5 }], engagement_time_msec: 1, ...pageParams },
  });
});

test("GA4 checkout events → begin_checkout, add_payment_info, add_shipping_info, view_cart", () => {
  const products = [{ product_id: "p1" }];
  const items = [{ item_id: "p1" }];
  const common = { engagement_time_msec: 1, ...pageParams };
  expect(ga4Event(track("Checkout Started", { currency: "EUR", value: 9, coupon: "C", products }))).toEqual({
    name: "begin_checkout",
    params: { currency: "EUR", value: 9, coupon: "C", items, ...common },
  });
  expect(ga4Event(track("Payment Info Entered", { revenue: 9, payment_method: "card", products }))).toEqual({
    name: "add_payment_info",
    params: { currency: "USD", value: 9, payment_type: "card", items, ...common },
  });
  expect(ga4Event(track("Checkout Step Completed", { total: 9, shipping_method: "Ground", step: 2, products }))).toEqual({
    name: "add_shipping_info",
    params: { currency: "USD", value: 9, shipping_tier: "Ground", items, step: 2, ...common },
  });
  expect(ga4Event(track("Cart Viewed", { total: 9, cart_id: "c1", products }))).toEqual({
    name: "view_cart",
    params: { currency: "USD", value: 9, items, cart_id: "c1", ...common },
  });
  expect(() => ga4.transform(track("Checkout Started", { value: 9, products }), ctx())).toThrow('Missing required value from "properties.currency"');
});

test("GA4 promotions → view_promotion (products required) and select_promotion (products optional)", () => {
  const promotion = { creative_name: "Summer Banner", creative_slot: "slot_1", location_id: "L_1", promotion_id: "P_1", promotion_name: "Sale" };
  const params = { ...promotion, engagement_time_msec: 1, ...pageParams };
  expect(ga4Event(track("Promotion Viewed", { ...promotion, products: [{ name: "Tee", promotion_id: "P_1" }] }))).toEqual({
    name: "view_promotion",
    params: { ...promotion, items: [{ item_name: "Tee", promotion_id: "P_1" }], engagement_time_msec: 1, ...pageParams },
  });
  expect(() => ga4.transform(track("Promotion Viewed", promotion), ctx())).toThrow("Products is an required field");
  expect(ga4Event(track("Promotion Clicked", promotion))).toEqual({ name: "select_promotion", params });
  // RudderStack's older spec names still map.
  expect(ga4Event(track("Promotion Clicked", { creative: "B", position: "top", name: "Sale", promotion_id: "P_1" })).params).toEqual({
    creative_name: "B",
    creative_slot: "top",
    promotion_id: "P_1",
    promotion_name: "Sale",
    engagement_time_msec: 1,
    ...pageParams,
  });
});

test("GA4 lists, search, sharing, leads and campaigns", () => {
  const common = { engagement_time_msec: 1, ...pageParams };
  expect(ga4Event(track("Product List Viewed", { list_id: "l1", category: "Shoes", products: [{ product_id: "p1" }] }))).toEqual({
    name: "view_item_list",
    params: { item_list_id: "l1", item_list_name: "Shoes", items: [{ item_id: "p1" }], ...common },
  });
  expect(ga4Event(track("Product Clicked", { product_id: "p1", list_id: "l1", category: "Shoes" }))).toEqual({
    name: "select_item",
    params: { item_list_id: "l1", item_list_name: "Shoes", items: [{ item_id: "p1", item_category: "Shoes" }], ...common },
  });
  expect(ga4Event(track("Products Searched", { query: "boots" }))).toEqual({ name: "search", params: { search_term: "boots", ...common } });
  expect(ga4Event(track("view_search_results", { search_term: "boots", products: [{ name: "Boot" }] }))).toEqual({
    name: "view_search_results",
    params: { search_term: "boots", items: [{ item_name: "Boot" }], ...common },
  });
  expect(ga4Event(track("Product Shared", { share_via: "Twitter", content_type: "image", sku: "s1", category: "Shoes" }))).toEqual({
    name: "share",
    params: { method: "Twitter", content_type: "image", item_id: "s1", category: "Shoes", ...common },
  });
  expect(ga4Event(track("Cart Shared", { share_via: "Email", cart_id: "c1" }))).toEqual({
    name: "share",
    params: { method: "Email", item_id: "c1", ...common },
  });
  expect(ga4Event(track("generate_lead", { value: 7.77, source: "instagram" }))).toEqual({
    name: "generate_lead",
    params: { currency: "USD", value: 7.77, source: "instagram", ...common },
  });
  const campaign = { id: "g_1", name: "Summer", source: "google", medium: "cpc", term: "travel", content: "logo" };
  expect(ga4Event(track("campaign_details", undefined, { context: { ...context, campaign } }))).toEqual({
    name: "campaign_details",
    params: { campaign_id: "g_1", campaign: "Summer", source: "google", medium: "cpc", term: "travel", content: "logo", ...common },
  });
  // Campaign details go only with campaign_details, not with every event.
  expect(ga4Event(track("login", { method: "Google" }, { context: { ...context, campaign } }))).toEqual({
    name: "login",
    params: { method: "Google", ...common },
  });
});

test("GA4 page → page_view with context.page parameters and the properties; group → join_group with traits", () => {
  const page: SluiceEvent = {
    ...base,
    type: "page",
    name: "Shoe",
    properties: { path: "/p/1", url: "https://shop.example.com/p/1?x", vehicle: { make: "", trim: "" }, referring_domain: "" },
    context: { ...context, sessionId: 123 },
  };
  expect(ga4.transform(page, ctx())[0]!.body.JSON).toEqual({
    ...top,
    events: [
      {
        name: "page_view",
        params: { ...pageParams, path: "/p/1", url: "https://shop.example.com/p/1?x", engagement_time_msec: 1, session_id: 123 },
      },
    ],
  });
  const group: SluiceEvent = {
    ...base,
    type: "group",
    groupId: "team-7",
    traits: { name: "Team 7", group_id: "dup", engagementTimeMsec: 40, sessionId: 9, org: { size: 3 } },
  };
  expect(ga4.transform(group, ctx())[0]!.body.JSON).toEqual({
    ...top,
    events: [
      {
        name: "join_group",
        // Both traits and context.traits become parameters; the group id and session fields are not repeated.
        params: { group_id: "team-7", name: "Team 7", org_size: 3, plan: "pro", email: "ada@example.com", engagement_time_msec: 40, session_id: 9 },
      },
    ],
  });
});

test("GA4 hybrid mode: the web SDK's client and session ids win, and page calls stay with the SDK", () => {
  const hybrid = { ...gtag, connectionMode: "hybrid" };
  const integrations = { "Google Analytics 4 (GA4)": { clientId: "554581488.1683172875", sessionId: "1683172875", sessionNumber: 3 } };
  const event = track("generate_lead", { value: 7.77 }, { integrations, context: { ...context, sessionId: 1683172874065 } });
  const [req] = ga4.transform(event, ctx(hybrid));
  expect(req!.body.JSON.client_id).toBe("554581488.1683172875");
  expect((req!.body.JSON.events as any[])[0].params).toEqual({
    currency: "USD",
    value: 7.77,
    engagement_time_msec: 1,
    session_id: "1683172875",
    session_number: 3,
    ...pageParams,
  });
  // Without hybrid mode only the session number is taken from the integration options.
  const [cloud] = ga4.transform(event, ctx());
  expect(cloud!.body.JSON.client_id).toBe("anon-1");
  expect((cloud!.body.JSON.events as any[])[0].params).toMatchObject({ session_id: 1683172874065, session_number: 3 });
  expect(ga4.transform({ ...base, type: "page", name: "Home" }, ctx(hybrid))).toEqual([]);
  expect(ga4.transform({ ...base, type: "group", groupId: "g" }, ctx(hybrid))).toHaveLength(1);
});

test("GA4 consent from the event's GA4 integration options; only GRANTED and DENIED are sent", () => {
  const consents = (c: Record<string, string>) => ({ integrations: { All: true, GA4: { consents: c } } });
  const [req] = ga4.transform(track("login", undefined, consents({ ad_personalization: "GRANTED", ad_user_data: "GRANTED" })), ctx());
  expect(req!.body.JSON.consent).toEqual({ ad_personalization: "GRANTED", ad_user_data: "GRANTED" });
  const [partial] = ga4.transform(track("login", undefined, consents({ ad_personalization: "NOT_SPECIFIED", ad_user_data: "DENIED" })), ctx());
  expect(partial!.body.JSON.consent).toEqual({ ad_user_data: "DENIED" });
  expect(ga4.transform(track("login"), ctx())[0]!.body.JSON.consent).toBeUndefined();
});

test("GA4 identifiers: empty userId is skipped, numbers become strings, ga4ClientId wins over anonymousId", () => {
  const json = (extra: Record<string, unknown>) => ga4.transform(track("E", undefined, extra), ctx())[0]!.body.JSON;
  expect(json({ userId: "", context: { traits: { id: 42 } } }).user_id).toBe("42");
  expect(json({ userId: 1234 }).user_id).toBe("1234");
  expect(json({ userId: "", context: {} }).user_id).toBeUndefined();
  expect(json({ context: { externalId: [{ type: "ga4ClientId", id: "cid-1" }] } }).client_id).toBe("cid-1");
  expect(json({ anonymousId: undefined, rudderId: "r-1", context: {} }).client_id).toBe("r-1");
  expect(() => json({ anonymousId: undefined, context: {} })).toThrow("ga4ClientId, anonymousId or messageId must be provided");
});

test("GA4 user properties: context.traits replaces properties.user_properties, even with a value GA4 rejects", () => {
  const event = track("E", { user_properties: { tier: "gold", plan: "basic", first_open_time: "x" } }, {
    context: { traits: { plan: ["pro"], ga_id: "x", "1bad": "y", long: "x".repeat(37), ok: false, n: 5 } },
  });
  expect(ga4.transform(event, ctx())[0]!.body.JSON.user_properties).toEqual({ tier: { value: "gold" }, ok: { value: false }, n: { value: 5 } });
});

test("GA4 firebase client → app_instance_id from externalId and firebase_app_id param", () => {
  const config = { apiSecret: "sec_1", typesOfClient: "firebase", firebaseAppId: "1:123:android:abc" };
  const event = track("Level Up", undefined, { context: { externalId: [{ type: "ga4AppInstanceId", id: "inst-9" }] } });
  expect(ga4.transform(event, ctx(config))).toEqual([
    collectRequest(
      { api_secret: "sec_1", firebase_app_id: "1:123:android:abc" },
      { app_instance_id: "inst-9", user_id: "u-1", timestamp_micros: micros, events: [{ name: "Level_Up", params: { engagement_time_msec: 1 } }] },
    ),
  ]);
  expect(() => ga4.transform({ ...event, context: {} }, ctx(config))).toThrow("ga4AppInstanceId must be provided");
  expect(() => ga4.transform({ ...event, event: "app_store_refund" }, ctx(config))).toThrow("Reserved custom event names");
});

test("GA4 rejects reserved and invalid event names, other message types, and events outside GA4's time window", () => {
  expect(() => ga4.transform(track("session_start"), ctx())).toThrow("track:: Reserved event names are not allowed");
  expect(() => ga4.transform(track("ga_custom"), ctx())).toThrow("Reserved custom prefix");
  expect(() => ga4.transform(track("1st-visit"), ctx())).toThrow("must start with a letter");
  expect(() => ga4.transform(track(""), ctx())).toThrow("Event name is required");
  expect(() => ga4.transform({ ...base, type: "track", event: { name: "x" } as any }, ctx())).toThrow("track:: event name should be string");
  expect(() => ga4.transform({ ...base, type: "identify" }, ctx())).toThrow("Message type identify not supported");
  expect(ga4.transform({ ...base, type: "TRACK", event: "E" }, ctx())).toHaveLength(1);
  const old = new Date(Date.now() - 73 * 3600 * 1000).toISOString();
  expect(() => ga4.transform(track("E", undefined, { timestamp: old }), ctx())).toThrow("Allowed timestamp is [72 hours] into the past");
  const future = new Date(Date.now() + 20 * 60 * 1000).toISOString();
  expect(() => ga4.transform(track("E", undefined, { timestamp: future }), ctx())).toThrow("Allowed timestamp is [15 minutes] into the future");
});

test("GA4 debugMode → /debug/mp/collect; baseUrl override keeps path and params", () => {
  const event = track("E");
  expect(ga4.transform(event, ctx({ ...gtag, debugMode: true }))[0]!.endpoint).toBe("https://www.google-analytics.com/debug/mp/collect");
  const [req] = ga4.transform(event, ctx(gtag, "http://127.0.0.1:8080"));
  expect(req!.endpoint).toBe("http://127.0.0.1:8080/mp/collect");
  expect(req!.params).toEqual({ api_secret: "sec_1", measurement_id: "G-ABC123" });
});

test("GA4 event filtering, piiPropertiesToIgnore, and missing keys", () => {
  const event = track("Scroll");
  expect(ga4.transform(event, ctx({ ...gtag, eventFilteringOption: "whitelistedEvents", whitelistedEvents: [{ eventName: "Buy" }] }))).toEqual([]);
  const [req] = ga4.transform(event, ctx({ ...gtag, piiPropertiesToIgnore: [{ piiProperty: "email" }] }));
  expect(req!.body.JSON.user_properties).toEqual({ plan: { value: "pro" } });
  expect(() => ga4.transform(event, ctx({ typesOfClient: "gtag" }))).toThrow("destination config is missing 'apiSecret'");
  expect(() => ga4.transform(event, ctx({ apiSecret: "s", typesOfClient: "gtag" }))).toThrow("destination config is missing 'measurementId'");
  expect(() => ga4.transform(event, ctx({ apiSecret: "s", typesOfClient: "firebase" }))).toThrow("destination config is missing 'firebaseAppId'");
  expect(() => ga4.transform(event, ctx({ apiSecret: "s" }))).toThrow("destination config is missing 'typesOfClient'");
});
