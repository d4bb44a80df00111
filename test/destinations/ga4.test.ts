import { afterAll, beforeAll, describe, expect, setSystemTime, test } from "bun:test";
import { ga4 } from "../../src/destinations/ga4";
import type { DestinationContext, DestinationRequest, SluiceEvent } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

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
  // Without a currency the event is sent in USD, as RudderStack's view_item mapping defaults it.
  const { currency: _c, ...noCurrency } = properties;
  expect(ga4Event(track("Product Viewed", noCurrency)).params.currency).toBe("USD");
  expect(() => ga4.transform(track("Product Viewed", { total: 7, currency: "USD" }), ctx())).toThrow("One of product_id or name is required");
});

test("GA4 ecommerce events without a currency are sent in USD; only value (and the order id, search term) are required", () => {
  const products = [{ product_id: "p1" }];
  const sent = (name: string, properties: Record<string, unknown>) => ga4Event(track(name, properties));
  // Each ecommerce event RudderStack maps with a currency, without one.
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ["Product Viewed", { product_id: "p1", price: 5 }, "view_item"],
    ["Product Added", { product_id: "p1", price: 5 }, "add_to_cart"],
    ["Product Removed", { product_id: "p1", total: 5 }, "remove_from_cart"],
    ["Cart Viewed", { total: 5, products }, "view_cart"],
    ["Checkout Started", { total: 5, products }, "begin_checkout"],
    ["Payment Info Entered", { total: 5, products }, "add_payment_info"],
    ["Checkout Step Completed", { total: 5, products }, "add_shipping_info"],
    ["Order Completed", { order_id: "o1", total: 5, products }, "purchase"],
    ["Order Refunded", { order_id: "o1", total: 5, products }, "refund"],
    ["Product Added to Wishlist", { product_id: "p1", price: 5 }, "add_to_wishlist"],
  ];
  for (const [name, properties, ga4Name] of cases) expect(sent(name, properties)).toMatchObject({ name: ga4Name, params: { currency: "USD", value: 5 } });
  // The value stays required, and an order keeps needing its id.
  expect(() => ga4.transform(track("Checkout Started", { currency: "EUR", products }), ctx())).toThrow('Missing required value from ["properties.total","properties.value","properties.revenue"]');
  expect(() => ga4.transform(track("Order Refunded", { total: 5, products }), ctx())).toThrow('Missing required value from "properties.order_id"');
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

test("GA4 'Product Removed' needs a quantity for price × quantity; its currency and that of 'Product Added to Wishlist' default to USD", () => {
  const properties = { product_id: "p1", price: 5 };
  expect(ga4Event(track("Product Removed", { ...properties, quantity: 2 })).params).toMatchObject({ currency: "USD", value: 10 });
  expect(ga4Event(track("Product Removed", { ...properties, currency: "EUR", quantity: 1 })).params).toMatchObject({ currency: "EUR", value: 5 });
  // RudderStack's remove_from_cart mapping gives the quantity no usable default, unlike add_to_cart's.
  expect(() => ga4.transform(track("Product Removed", { ...properties, currency: "EUR" }), ctx())).toThrow(
    'Missing required value from ["properties.total","properties.value","properties.revenue",' +
      '{"operation":"multiplication","args":[{"sourceKeys":"properties.price"},{"sourceKeys":"properties.quantity","default":1}]}]',
  );
  expect(() => ga4.transform(track("Product Added", { products: [{ product_id: "p1" }] }), ctx())).toThrow(
    'Missing required value from ["properties.total","properties.value","properties.revenue",' +
      '{"operation":"multiplication","args":[{"sourceKeys":"properties.price"},{"sourceKeys":"properties.quantity","defaultVal":1}]}]',
  );
  expect(() => ga4.transform(track("Order Completed", { currency: "USD", order_id: "o1", products: [{ product_id: "p1" }] }), ctx())).toThrow(
    'Missing required value from ["properties.total","properties.value","properties.revenue"]',
  );
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
  expect(ga4Event(track("Checkout Started", { value: 9, products })).params.currency).toBe("USD");
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
  // RudderStack's promotion mappings have no location_id: it is a custom parameter, flattened with _.
  expect(ga4Event(track("Promotion Clicked", { promotion_id: "P_1", location_id: { id: "L_1", zone: "top" } })).params).toMatchObject({
    location_id_id: "L_1",
    location_id_zone: "top",
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

test("GA4 'Login' and 'Sign Up' in any case → login / sign_up, the method from the traits or the properties", () => {
  const common = { engagement_time_msec: 1, ...pageParams };
  expect(ga4Event(track("Login", { method: "Google", plan: "pro" }))).toEqual({ name: "login", params: { method: "Google", plan: "pro", ...common } });
  expect(ga4Event({ ...track("Sign Up", { engagement_time_msec: 40 }), traits: { method: "Email" } })).toEqual({
    name: "sign_up",
    params: { method: "Email", ...common, engagement_time_msec: 40 },
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
        // Both traits and context.traits become parameters and the session fields are not repeated.
        // RudderStack's group mapping reads only groupId (or traits.groupId), so a group_id trait is
        // a custom parameter, and as such comes after the mapped one and replaces it.
        params: { group_id: "dup", name: "Team 7", org_size: 3, plan: "pro", email: "ada@example.com", engagement_time_msec: 40, session_id: 9 },
      },
    ],
  });
  const { groupId: _g, ...noGroupId } = group;
  const fromTraits = ga4Event({ ...noGroupId, traits: { groupId: "team-8", name: "Team 8" } });
  expect(fromTraits.params).toMatchObject({ group_id: "team-8", name: "Team 8" });
  expect(fromTraits.params.groupId).toBeUndefined();
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
  expect(() => json({ anonymousId: undefined, context: {} })).toThrow("ga4ClientId or anonymousId must be provided");
});

test("GA4 user properties: context.traits replaces properties.user_properties, even with a value GA4 rejects", () => {
  const event = track("E", { user_properties: { tier: "gold", plan: "basic", first_open_time: "x" } }, {
    context: { traits: { plan: ["pro"], ga_id: "x", "1bad": "y", long: "x".repeat(37), ok: false, n: 5 } },
  });
  expect(ga4.transform(event, ctx())[0]!.body.JSON.user_properties).toEqual({ tier: { value: "gold" }, ok: { value: false }, n: { value: 5 } });
});

test("GA4 parameter names as RudderStack takes them: a dotted property nests, then flattens with _ (issue 50)", () => {
  // The event that showed it: RudderStack sends params.dotted_key, not params["dotted.key"].
  const params = (props: Record<string, unknown>) => ga4Event(track("Button Clicked", props)).params;
  expect(params({ "dotted.key": "v" })).toEqual({ dotted_key: "v", engagement_time_msec: 1, ...pageParams });
  // A numeric part makes a list (a.0 → a_0; a.2 leaves a_0 and a_1 as holes that are dropped,
  // and that overwrite an earlier a_0); a name holding "/" is never split; "\\." escapes a dot;
  // a name whose parts name a prototype key stays whole; an empty name is dropped.
  expect(params({ "list.0": "x", "path/a.b": 1, "esc\\.aped": 2, "a.constructor": 3, "": 4, "deep.er.key": { x: 5 } })).toEqual({
    list_0: "x", "path/a.b": 1, "esc.aped": 2, "a.constructor": 3, deep_er_key_x: 5, engagement_time_msec: 1, ...pageParams,
  });
  expect(params({ a_0: "kept?", "a.2": "y" })).toEqual({ a_2: "y", engagement_time_msec: 1, ...pageParams });
  // A later dotted name writes into an object property already taken; a later plain name replaces it.
  expect(params({ meta: { pos: 1 }, "meta.size": 2 })).toEqual({ meta_pos: 1, meta_size: 2, engagement_time_msec: 1, ...pageParams });
  expect(params({ "meta.size": 2, meta: "plain" })).toEqual({ meta: "plain", engagement_time_msec: 1, ...pageParams });
  // Reserved prefixes are checked on the flattened name.
  expect(params({ "google.x": 1, "x.google_y": 2 })).toEqual({ x_google_y: 2, engagement_time_msec: 1, ...pageParams });
  // An `items` property sent as null is left out, as RudderStack drops nulls before keeping `items`
  // whatever it holds; a product's own `items: null` stays on its item, as there.
  expect(params({ items: null, label: "x" })).toEqual({ label: "x", engagement_time_msec: 1, ...pageParams });
  const order = ga4Event(track("Order Completed", { order_id: "o1", total: 5, products: [{ product_id: "p1", items: null }] }));
  expect(order.params.items).toEqual([{ item_id: "p1", items: null }]);
  // The event is left as it came.
  const event = track("Button Clicked", { meta: { pos: 1 }, "meta.size": 2 });
  ga4.transform(event, ctx());
  expect(event.properties).toEqual({ meta: { pos: 1 }, "meta.size": 2 });
});

test("GA4 dotted names in standard events' parameters, product item parameters, group traits and user properties (issue 50)", () => {
  const order = ga4Event(track("Order Completed", { order_id: "o1", total: 5, "gift.wrap": true, products: [{ product_id: "p1", "size.eu": 42 }] }));
  expect(order.params.gift_wrap).toBe(true);
  expect(order.params.items).toEqual([{ item_id: "p1", size_eu: 42 }]);
  const group = ga4Event({ ...base, type: "group", groupId: "g1", traits: { "org.tier": "gold", name: "Acme" }, context: { ...context, traits: { "org.size": 10 } } });
  expect(group.params).toEqual({ group_id: "g1", org_tier: "gold", org_size: 10, name: "Acme", engagement_time_msec: 1 });
  // User properties: a dotted trait nests into an object, which GA4 cannot take, so it is dropped,
  // and it takes the place of an earlier valid value of that name.
  const userProperties = (traits: Record<string, unknown>, user_properties?: Record<string, unknown>) =>
    ga4.transform(track("E", user_properties ? { user_properties } : {}, { context: { traits } }), ctx())[0]!.body.JSON.user_properties;
  expect(userProperties({ "tier.x": "gold", plan: "pro" })).toEqual({ plan: { value: "pro" } });
  expect(userProperties({ "tier.x": "gold" }, { tier: "silver", plan: "pro" })).toEqual({ plan: { value: "pro" } });
  expect(userProperties({ tier: "gold", "tier.x": 1 })).toBeUndefined();
  expect(userProperties({ "tier.x": 1, tier: "gold" })).toEqual({ tier: { value: "gold" } });
  // piiPropertiesToIgnore names are trimmed, as RudderStack trims them.
  const [req] = ga4.transform(track("E", {}, { context: { traits: { plan: "pro", email: "a@example.com" } } }), ctx({ ...gtag, piiPropertiesToIgnore: [{ piiProperty: " email " }, { piiProperty: 5 }] }));
  expect(req!.body.JSON.user_properties).toEqual({ plan: { value: "pro" } });
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

test("GA4 event filtering, piiPropertiesToIgnore, and missing keys (in RudderStack's words)", () => {
  const event = track("Scroll");
  expect(ga4.transform(event, ctx({ ...gtag, eventFilteringOption: "whitelistedEvents", whitelistedEvents: [{ eventName: "Buy" }] }))).toEqual([]);
  const [req] = ga4.transform(event, ctx({ ...gtag, piiPropertiesToIgnore: [{ piiProperty: "email" }] }));
  expect(req!.body.JSON.user_properties).toEqual({ plan: { value: "pro" } });
  expect(() => ga4.transform(event, ctx({ typesOfClient: "gtag" }))).toThrow("API Secret not found. Aborting ");
  expect(() => ga4.transform(event, ctx({ apiSecret: "s", typesOfClient: "gtag" }))).toThrow("measurementId must be provided. Aborting");
  expect(() => ga4.transform(event, ctx({ apiSecret: "s", typesOfClient: "firebase" }))).toThrow("firebaseAppId must be provided. Aborting");
  expect(() => ga4.transform(event, ctx({ apiSecret: "s" }))).toThrow("Client type not found. Aborting ");
  expect(() => ga4.transform(event, ctx({}))).toThrow("Client type not found. Aborting ");
  expect(() => ga4.transform(event, ctx({ apiSecret: "s", typesOfClient: "web" }))).toThrow("Invalid type of client");
});

// ---------------------------------------------------------------------------------------------
// Cases from RudderStack's own fixtures (rudder-transformer test/integrations/destinations/ga4/
// processor/*.ts). Their clock is frozen at 2022-04-29T05:17:09Z, three days after the events.
// ---------------------------------------------------------------------------------------------
/** RudderStack's test builders drop undefined fields; JSON does the same here. */
const withoutUndefinedDeep = <T>(value: T): T => JSON.parse(JSON.stringify(value));

describe("GA4 RudderStack fixtures", () => {
  beforeAll(() => setSystemTime(new Date("2022-04-29T05:17:09Z")));
  afterAll(() => setSystemTime());

  const fxConfig = {
    apiSecret: "dummyApiSecret",
    measurementId: "dummyMeasurementId",
    firebaseAppId: "",
    blockPageViewEvent: false,
    typesOfClient: "gtag",
    extendPageViewParams: false,
    sendUserId: false,
    eventFilteringOption: "disable",
    blacklistedEvents: [{ eventName: "" }],
    whitelistedEvents: [{ eventName: "" }],
  };
  const deviceInfo = {
    adTrackingEnabled: "false",
    advertisingId: "dummyAdvertisingId",
    id: "device@1",
    manufacturer: "Google",
    model: "AOSP on IA Emulator",
    name: "generic_x86_arm",
    type: "ios",
    attTrackingStatus: 3,
  };
  const sentAt = "2022-04-20T15:20:57Z";
  const originalTimestamp = "2022-04-26T05:17:09Z";
  const timestamp_micros = 1650950229000000;
  const appInstance = [{ type: "ga4AppInstanceId", id: "dummyAppInstanceId" }];
  const withClientId = [...appInstance, { type: "ga4ClientId", id: "dummyClientId" }];
  const fxPage = {
    initial_referrer: "$direct",
    path: "/",
    referrer: "$direct",
    tab_url: "https://www.rudderstack.com/",
    title: "Document",
    url: "https://www.rudderstack.com/",
  };
  const fxCampaign = { id: "google_1234", name: "Summer_fun", source: "google", medium: "cpc", term: "summer+travel", content: "logo link" };
  /** RudderStack's generateSimplifiedTrackPayload with the GA4 fixtures' common values. */
  const fxTrack = (event: string, properties?: Record<string, unknown>, context: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): SluiceEvent =>
    withoutUndefinedDeep({
      type: "track",
      sentAt,
      userId: "default-user-id",
      event,
      properties,
      rudderId: "rudder-1",
      messageId: "message-1",
      context: { externalId: withClientId, device: deviceInfo, ...context },
      anonymousId: "dummyAnonId",
      originalTimestamp,
      ...extra,
    });
  /** The whole request RudderStack expects: one event, the fixtures' common top-level fields. */
  const fxOut = (name: string, params: Record<string, unknown>, json: Record<string, unknown> = {}, config: Record<string, any> = fxConfig) => [
    collectRequest(
      config.typesOfClient === "firebase"
        ? { api_secret: config.apiSecret, firebase_app_id: config.firebaseAppId }
        : { api_secret: config.apiSecret, measurement_id: config.measurementId },
      withoutUndefinedDeep({
        client_id: "dummyClientId",
        timestamp_micros,
        user_id: "default-user-id",
        non_personalized_ads: true,
        ...json,
        events: [{ name, params }],
      }),
    ),
  ];
  const run = (event: SluiceEvent, config: Record<string, any> = fxConfig) => ga4.transform(event, ctx(config));

  // trackTestData.ts
  const trackCases: Array<[string, string, Record<string, unknown> | undefined, string, Record<string, unknown>]> = [
    ["earn virtual currency", "earn virtual currency", { value: 7.77, virtual_currency_name: "Gems" }, "earn_virtual_currency", { value: 7.77, virtual_currency_name: "Gems" }],
    ["earn virtual currency, no properties", "earn virtual currency", undefined, "earn_virtual_currency", {}],
    ["generate_lead", "generate_lead", { value: 7.77, currency: "USD" }, "generate_lead", { value: 7.77, currency: "USD" }],
    ["level_up", "level_up", { level: 5, character: "Player 1" }, "level_up", { level: 5, character: "Player 1" }],
    ["level_up, no properties", "level_up", undefined, "level_up", {}],
    ["track named group", "group", { group_id: "dummyGroupId", engagementTimeMsec: 100, sessionId: 655 }, "group", { group_id: "dummyGroupId", session_id: 655, engagement_time_msec: 100 }],
    ["track named group, no properties", "group", undefined, "group", {}],
    ["login", "login", { method: "Google" }, "login", { method: "Google" }],
    ["post_score", "post_score", { score: 10000, level: 5, character: "Player 1" }, "post_score", { score: 10000, level: 5, character: "Player 1" }],
    ["select_content", "select_content", { item_id: "I_12345", content_type: "product" }, "select_content", { item_id: "I_12345", content_type: "product" }],
    ["sign_up", "sign_up", { method: "Google" }, "sign_up", { method: "Google" }],
    ["spend_virtual_currency", "spend_virtual_currency", { value: 5, item_name: "Starter Boost", virtual_currency_name: "Gems" }, "spend_virtual_currency", { value: 5, item_name: "Starter Boost", virtual_currency_name: "Gems" }],
    ["tutorial_begin", "tutorial_begin", undefined, "tutorial_begin", {}],
    ["unlock_achievement", "unlock_achievement", { achievement_id: "A_12345" }, "unlock_achievement", { achievement_id: "A_12345" }],
    ["custom event, nested and session properties", "rudderstack event", { total: 10, timezone: { name: "Europe/Tallinn" }, engagementTimeMsec: 100, sessionId: 655 }, "rudderstack_event", { total: 10, timezone_name: "Europe/Tallinn", session_id: 655, engagement_time_msec: 100 }],
    ["custom event, reserved property dropped", "rudderstack event", { total: 10, firebase_conversion: "firebase_conversion" }, "rudderstack_event", { total: 10 }],
    ["custom event, no properties", "tutorial complete", undefined, "tutorial_complete", {}],
    ["login, no properties", "login", undefined, "login", {}],
    ["post_score, only the score", "post_score", { score: 10000 }, "post_score", { score: 10000 }],
    ["select_content, no properties", "select_content", undefined, "select_content", {}],
    ["sign_up, no properties", "sign_up", undefined, "sign_up", {}],
    ["spend_virtual_currency, no properties", "spend_virtual_currency", undefined, "spend_virtual_currency", {}],
    ["tutorial_complete", "tutorial_complete", undefined, "tutorial_complete", {}],
    ["rudderstack event, no properties", "rudderstack event", undefined, "rudderstack_event", {}],
  ];
  for (const [what, event, properties, name, params] of trackCases) {
    test(`GA4 RudderStack fixture: track ${what} → ${name}`, () => {
      expect(run(fxTrack(event, properties))).toEqual(fxOut(name, { ...params, engagement_time_msec: params.engagement_time_msec ?? 1 }));
    });
  }

  test("GA4 RudderStack fixture: user_properties become user properties; reserved ones are dropped", () => {
    expect(run(fxTrack("rudderstack event", { total: 10, user_properties: { price: "19" } }))).toEqual(
      fxOut("rudderstack_event", { total: 10, engagement_time_msec: 1 }, { user_properties: { price: { value: "19" } } }),
    );
    const reserved = { first_open_time: "first_open_time", user_id: "default-user-id", firebase_value: "firebase_value" };
    expect(run(fxTrack("rudderstack event", { total: 10, firebase_conversion: "x", user_properties: reserved }))).toEqual(
      fxOut("rudderstack_event", { total: 10, engagement_time_msec: 1 }),
    );
  });

  test("GA4 RudderStack fixture: client_id falls back to anonymousId; session_id from context.sessionId; numeric userId as text", () => {
    expect(run(fxTrack("tutotial complete", undefined, { externalId: appInstance }))).toEqual(
      fxOut("tutotial_complete", { engagement_time_msec: 1 }, { client_id: "dummyAnonId" }),
    );
    expect(run(fxTrack("tutorial complete", undefined, { externalId: appInstance }))).toEqual(
      fxOut("tutorial_complete", { engagement_time_msec: 1 }, { client_id: "dummyAnonId" }),
    );
    const bare = { type: "track", event: "tutorial complete", anonymousId: "dummyAnonId", sentAt, originalTimestamp };
    const context = { device: deviceInfo, externalId: appInstance, sessionId: 16678456735 };
    expect(run({ ...bare, messageId: "m", context })).toEqual(
      fxOut("tutorial_complete", { session_id: 16678456735, engagement_time_msec: 1 }, { client_id: "dummyAnonId", user_id: undefined }),
    );
    expect(run({ ...bare, messageId: "m", userId: 1234 as any, context })).toEqual(
      fxOut("tutorial_complete", { session_id: 16678456735, engagement_time_msec: 1 }, { client_id: "dummyAnonId", user_id: "1234" }),
    );
  });

  test("GA4 RudderStack fixture: context.traits as user properties, arrays and objects dropped", () => {
    const own = { client_id: "dummyAnonId" };
    expect(run(fxTrack("login", { method: "facebook" }, { externalId: appInstance, traits: { campaign: "advertizing" } }))).toEqual(
      fxOut("login", { method: "facebook", engagement_time_msec: 1 }, { ...own, user_properties: { campaign: { value: "advertizing" } } }),
    );
    const traits = {
      campaign: "advertizing",
      name: "rudder",
      age: 45,
      hobby: ["dancing", "singing", "reading"],
      enableEURegion: false,
      isEnterpriseUser: { value: false },
    };
    const hybrid = { ...fxConfig, connectionMode: "hybrid" };
    expect(run(fxTrack("sign_up", undefined, { externalId: appInstance, sessionId: 1683172874065, traits }), hybrid)).toEqual(
      fxOut("sign_up", { session_id: 1683172874065, engagement_time_msec: 1 }, {
        ...own,
        user_properties: { age: { value: 45 }, name: { value: "rudder" }, campaign: { value: "advertizing" }, enableEURegion: { value: false } },
      }),
    );
  });

  test("GA4 RudderStack fixture: generate_lead with context.page → page parameters; hybrid mode takes the SDK's ids", () => {
    const own = { client_id: "dummyAnonId" };
    const properties = { value: 7.77, source: "instagram" };
    const params = { value: 7.77, currency: "USD", source: "instagram", engagement_time_msec: 1 };
    expect(run(fxTrack("generate_lead", properties, { externalId: appInstance, page: fxPage }))).toEqual(
      fxOut("generate_lead", { ...params, page_location: "https://www.rudderstack.com/", page_referrer: "$direct", page_title: "Document" }, own),
    );
    const hybrid = { ...fxConfig, connectionMode: "hybrid" };
    const integrations = { All: true, "Google Analytics 4 (GA4)": { clientId: "554581488.1683172875", sessionId: "1683172875" } };
    expect(run(fxTrack("generate_lead", properties, { externalId: appInstance }, { integrations }), hybrid)).toEqual(
      fxOut("generate_lead", { ...params, session_id: "1683172875" }, { client_id: "554581488.1683172875" }),
    );
    expect(run(fxTrack("generate_lead", properties, { externalId: appInstance, sessionId: 1683172874065 }), hybrid)).toEqual(
      fxOut("generate_lead", { ...params, session_id: 1683172874065 }, own),
    );
  });

  test("GA4 RudderStack fixture: empty arrays and objects, blanks, nulls and reserved prefixes are dropped from flattened parameters", () => {
    const properties = {
      user_interest: "Moderate",
      company_interest: "",
      profile: [
        {
          is_6qa: true,
          product: null,
          product_fit: "Moderate",
          product_stage: "Purchase",
          intent_score: 89,
          profile_score: 52,
          product_display$name: "rudderstack",
        },
      ],
      user_company: "Analytics consulting",
      user_account: "1",
      user_id_mappings: "330098|245252|461224|282599",
      company_naics_6sense: "5173",
      usr_consent: null,
      firebase_user_id: "kdgMnP",
      google_user_id: "G-123456",
      company_domain: "consulting.net",
      company_region: "New Zealand",
      user_product_interests: { ids: [], list: [{ id: 330098, name: [] }, { id: 245252, name: {} }], names: [] },
      company_country: {},
      company_industry: "Business Analytics",
      company_revenue: "$5M - $10M",
      company_annual_revenue: "5568000",
      company_sic_description: "",
      company_naics_description: [],
    };
    expect(run(fxTrack("login", properties, { externalId: appInstance }))).toEqual(
      fxOut(
        "login",
        {
          company_annual_revenue: "5568000",
          company_domain: "consulting.net",
          company_industry: "Business Analytics",
          company_naics_6sense: "5173",
          company_region: "New Zealand",
          company_revenue: "$5M - $10M",
          engagement_time_msec: 1,
          profile_0_intent_score: 89,
          profile_0_is_6qa: true,
          profile_0_product_display$name: "rudderstack",
          profile_0_product_fit: "Moderate",
          profile_0_product_stage: "Purchase",
          profile_0_profile_score: 52,
          user_account: "1",
          user_company: "Analytics consulting",
          user_id_mappings: "330098|245252|461224|282599",
          user_interest: "Moderate",
          user_product_interests_list_0_id: 330098,
          user_product_interests_list_1_id: 245252,
        },
        { client_id: "dummyAnonId" },
      ),
    );
  });

  test("GA4 RudderStack fixture: campaign_details from context.campaign; consents", () => {
    const own = { client_id: "dummyAnonId" };
    expect(run(fxTrack("campaign_details", undefined, { externalId: appInstance, campaign: fxCampaign }))).toEqual(
      fxOut(
        "campaign_details",
        { campaign_id: "google_1234", campaign: "Summer_fun", source: "google", medium: "cpc", term: "summer+travel", content: "logo link", engagement_time_msec: 1 },
        own,
      ),
    );
    const consents = (c: Record<string, string>) => ({ integrations: { All: true, GA4: { consents: c } } });
    expect(run(fxTrack("login", undefined, { externalId: appInstance, campaign: fxCampaign }, consents({ ad_personalization: "GRANTED", ad_user_data: "GRANTED" })))).toEqual(
      fxOut("login", { engagement_time_msec: 1 }, { ...own, consent: { ad_personalization: "GRANTED", ad_user_data: "GRANTED" } }),
    );
    expect(run(fxTrack("login", undefined, { externalId: appInstance, campaign: fxCampaign }, consents({ ad_personalization: "NOT_SPECIFIED", ad_user_data: "DENIED" })))).toEqual(
      fxOut("login", { engagement_time_msec: 1 }, { ...own, consent: { ad_user_data: "DENIED" } }),
    );
  });

  // ecomTestData.ts
  // These product fields already carry GA4's item names, so they reach the item unchanged.
  const itemFields = {
    affiliation: "Google Merchandise Store",
    currency: "USD",
    discount: 2.22,
    item_category2: "Adult",
    item_category3: "Shirts",
    item_category4: "Crew",
    item_category5: "Short sleeve",
    item_list_id: "related_products",
    item_list_name: "Related Products",
    location_id: "L_12345",
  };
  const product = {
    product_id: "507f1f77bcf86cd799439011",
    name: "Monopoly: 3rd Edition",
    coupon: "SUMMER_FUN",
    category: "Apparel",
    brand: "Google",
    variant: "green",
    price: "19",
    quantity: "2",
    position: "1",
    ...itemFields,
  };
  const item = {
    item_id: "507f1f77bcf86cd799439011",
    item_name: "Monopoly: 3rd Edition",
    coupon: "SUMMER_FUN",
    item_category: "Apparel",
    item_brand: "Google",
    item_variant: "green",
    price: 19,
    quantity: 2,
    index: 1,
    ...itemFields,
  };
  const promoExtra = { promotion_id: "P_12345", promotion_name: "Summer Sale", creative_name: "summer_banner2", creative_slot: "featured_app_1" };
  const promoProducts = [{ ...product, position: "0", ...promoExtra }];
  const promoItems = [{ ...item, index: 0, ...promoExtra }];
  const promotion = { creative_name: "Summer Banner", creative_slot: "featured_app_1", location_id: "L_12345", promotion_id: "P_12345", promotion_name: "Summer Sale" };
  const order = { currency: "USD", order_id: "T_12345", total: 12.21, affiliation: "Google Store", coupon: "SUMMER_FUN", shipping: 3.33, tax: 1.11 };
  const orderParams = { currency: "USD", transaction_id: "T_12345", value: 12.21, affiliation: "Google Store", coupon: "SUMMER_FUN", shipping: 3.33, tax: 1.11 };
  const share = { share_via: "Twitter", content_type: "image", item_id: "C_12345" };
  const shareParams = { method: "Twitter", content_type: "image", item_id: "C_12345" };
  const ecomCases: Array<[string, string, Record<string, unknown> | undefined, string, Record<string, unknown>]> = [
    ["promotion viewed", "promotion viewed", { ...promotion, products: promoProducts }, "view_promotion", { ...promotion, items: promoItems }],
    ["promotion clicked", "promotion clicked", { ...promotion, products: promoProducts }, "select_promotion", { ...promotion, items: promoItems }],
    ["promotion clicked without products", "promotion clicked", promotion, "select_promotion", promotion],
    [
      "promotion clicked with custom properties",
      "promotion clicked",
      { timezone: { name: "Europe/Tallinn" }, promotion_page: "/products", promotion_channel: "facebook", ...promotion },
      "select_promotion",
      { promotion_page: "/products", promotion_channel: "facebook", timezone_name: "Europe/Tallinn", ...promotion },
    ],
    [
      "product clicked (root properties as the item)",
      "product clicked",
      { ...product, list_id: "related_products", category: "Related_products", timezone: { name: "Europe/Tallinn" }, sessionId: 655, engagementTimeMsec: 100 },
      "select_item",
      {
        item_list_id: "related_products",
        item_list_name: "Related_products",
        items: [{ ...item, item_category: "Related_products" }],
        timezone_name: "Europe/Tallinn",
        engagement_time_msec: 100,
        session_id: 655,
      },
    ],
    ["product viewed", "product viewed", { total: "7.77", ...product }, "view_item", { currency: "USD", value: 7.77, items: [item] }],
    ["product added", "product added", { currency: "USD", total: "7.77", products: [product] }, "add_to_cart", { currency: "USD", value: 7.77, items: [item] }],
    [
      "product removed",
      "product removed",
      { currency: "USD", total: "7.77", products: [product], sessionId: 655, engagementTimeMsec: 100 },
      "remove_from_cart",
      { currency: "USD", value: 7.77, items: [item], engagement_time_msec: 100, session_id: 655 },
    ],
    ["cart viewed", "cart viewed", { currency: "USD", total: "7.77", products: [product] }, "view_cart", { currency: "USD", value: 7.77, items: [item] }],
    [
      "checkout started",
      "checkout started",
      { currency: "USD", total: "7.77", coupon: "SUMMER_FUN", products: [product] },
      "begin_checkout",
      { currency: "USD", value: 7.77, coupon: "SUMMER_FUN", items: [item] },
    ],
    [
      "payment info entered",
      "payment info entered",
      { currency: "USD", total: "7.77", coupon: "SUMMER_FUN", payment_method: "Credit Card", products: [product] },
      "add_payment_info",
      { currency: "USD", value: 7.77, coupon: "SUMMER_FUN", payment_type: "Credit Card", items: [item] },
    ],
    [
      "Checkout Step Completed",
      "Checkout Step Completed",
      { currency: "USD", total: "7.77", coupon: "SUMMER_FUN", shipping_method: "Ground", products: [product] },
      "add_shipping_info",
      { currency: "USD", value: 7.77, coupon: "SUMMER_FUN", shipping_tier: "Ground", items: [item] },
    ],
    ["order completed", "order completed", { ...order, products: [product] }, "purchase", { ...orderParams, items: [item] }],
    ["order refunded", "order refunded", { ...order, products: [product] }, "refund", { ...orderParams, items: [item] }],
    ["order refunded without products", "order refunded", order, "refund", orderParams],
    [
      "product added to wishlist",
      "product added to wishlist",
      { currency: "USD", total: "7.77", products: [product] },
      "add_to_wishlist",
      { currency: "USD", value: 7.77, items: [item] },
    ],
    ["product_shared", "product_shared", share, "share", shareParams],
    ["product_shared without properties", "product_shared", undefined, "share", {}],
    ["cart Shared", "cart Shared", share, "share", shareParams],
    ["cart Shared without properties", "cart Shared", undefined, "share", {}],
    ["view_search_results", "view_search_results", { search_term: "Clothing", products: [product] }, "view_search_results", { search_term: "Clothing", items: [item] }],
    ["view_search_results with only products", "view_search_results", { products: [product] }, "view_search_results", { items: [item] }],
    ["product added with an empty product list", "product added", { total: "7.77", ...product, products: [] }, "add_to_cart", { currency: "USD", value: 7.77, items: [item] }],
    ["product added with products as an object", "product added", { total: "7.77", ...product, products: product }, "add_to_cart", { currency: "USD", value: 7.77, items: [item] }],
    [
      "order completed with custom properties",
      "order completed",
      { revenue: 15, discount: 1.5, checkout_id: "12345", myCustomProp: "My arbitray value", ...order, products: [product] },
      "purchase",
      { ...orderParams, checkout_id: "12345", discount: 1.5, myCustomProp: "My arbitray value", items: [item] },
    ],
    [
      "product added, value = price × quantity",
      "product added",
      { price: 2.4, quantity: 2, products: [product] },
      "add_to_cart",
      { price: 2.4, quantity: 2, value: 4.8, currency: "USD", items: [item] },
    ],
  ];
  for (const [what, event, properties, name, params] of ecomCases) {
    test(`GA4 RudderStack fixture: ${what} → ${name}`, () => {
      expect(run(fxTrack(event, properties))).toEqual(fxOut(name, { ...params, engagement_time_msec: params.engagement_time_msec ?? 1 }));
    });
  }

  test("GA4 RudderStack fixture: Products Searched → search (no device: no non_personalized_ads); product list viewed with the default anonymousId", () => {
    expect(run(fxTrack("Products Searched", { query: "t-shirts" }, { externalId: appInstance, device: undefined }))).toEqual(
      fxOut("search", { search_term: "t-shirts", engagement_time_msec: 1 }, { client_id: "dummyAnonId", non_personalized_ads: undefined }),
    );
    const listViewed = fxTrack("product list viewed", { list_id: "related_products", category: "Related_products", products: [product] }, { externalId: appInstance }, {
      anonymousId: "default-anonymousId",
      rudderId: "dummyRudderId",
    });
    expect(run(listViewed)).toEqual(
      fxOut(
        "view_item_list",
        { engagement_time_msec: 1, item_list_id: "related_products", item_list_name: "Related_products", items: [item] },
        { client_id: "default-anonymousId" },
      ),
    );
  });

  test("GA4 RudderStack fixture: firebase client → app_instance_id and firebase_app_id", () => {
    const firebase = { ...fxConfig, typesOfClient: "firebase", firebaseAppId: "dummyFirebaseAppId" };
    expect(run(fxTrack("promotion clicked", { ...promotion, products: promoProducts }), firebase)).toEqual(
      fxOut("select_promotion", { ...promotion, items: promoItems, engagement_time_msec: 1 }, { client_id: undefined, app_instance_id: "dummyAppInstanceId" }, firebase),
    );
  });

  test("GA4 RudderStack fixture: nested custom and item properties are flattened with underscores", () => {
    const properties = {
      ...product,
      address: { city: "kolkata", district: "24pgs" },
      categoryLevels: ["Furniture", "Bedroom Furniture", "Dressers & Chests"],
      products: [{ product_id: "1234", product_details: { colour: "red", shape: "rectangle" }, productLevels: ["test1", "test2", "test3"] }],
    };
    expect(run(fxTrack("product added", properties, { externalId: appInstance }))).toEqual(
      fxOut(
        "add_to_cart",
        {
          value: 38,
          ...product,
          address_city: "kolkata",
          address_district: "24pgs",
          categoryLevels_0: "Furniture",
          categoryLevels_1: "Bedroom Furniture",
          categoryLevels_2: "Dressers & Chests",
          items: [
            {
              item_id: "1234",
              productLevels_0: "test1",
              productLevels_1: "test2",
              productLevels_2: "test3",
              product_details_colour: "red",
              product_details_shape: "rectangle",
            },
          ],
          engagement_time_msec: 1,
        },
        { client_id: "dummyAnonId" },
      ),
    );
  });

  // groupTestData.ts (generateGroupPayload: a random root session_id that GA4 ignores)
  const fxGroup = (traits?: Record<string, unknown>): SluiceEvent =>
    withoutUndefinedDeep({
      channel: "web",
      context: { os: { name: "", version: "" }, screen: { density: 2 }, device: deviceInfo, externalId: withClientId },
      messageId: "message-1",
      session_id: "random-session-id",
      originalTimestamp,
      anonymousId: "dummyAnonId",
      userId: "default-user-id",
      type: "group",
      traits,
      sentAt,
    });
  test("GA4 RudderStack fixture: group → join_group with the traits as parameters", () => {
    expect(run(fxGroup())).toEqual(fxOut("join_group", { engagement_time_msec: 1 }));
    const traits = { org: "rudderlabs", sector: "cdp", timezone: { name: "Europe/Tallinn" }, engagementTimeMsec: 100, sessionId: 655 };
    expect(run(fxGroup(traits))).toEqual(
      fxOut("join_group", { sector: "cdp", org: "rudderlabs", timezone_name: "Europe/Tallinn", session_id: 655, engagement_time_msec: 100 }),
    );
  });
  test("GA4 RudderStack fixture: group in hybrid mode takes the SDK's client id, session id and number", () => {
    const event: SluiceEvent = {
      type: "group",
      event: "tutorial complete",
      userId: "default-user-id",
      anonymousId: "dummyAnonId",
      messageId: "m",
      sentAt,
      context: { device: deviceInfo, externalId: withClientId, sessionId: 1683172874065 },
      integrations: { "Google Analytics 4": { clientId: "4718026.1683606287", sessionId: "1683606287", sessionNumber: 1 } },
      originalTimestamp,
    };
    expect(run(event, { ...fxConfig, connectionMode: "hybrid" })).toEqual(
      fxOut("join_group", { session_id: "1683606287", session_number: 1, engagement_time_msec: 1 }, { client_id: "4718026.1683606287" }),
    );
  });

  // validationTestData.ts
  const noIds = [{ ...product, product_id: undefined, name: undefined }].map(withoutUndefinedDeep);
  const fxError = (event: SluiceEvent, config: Record<string, any> = fxConfig) => () => run(event, config);
  test("GA4 RudderStack fixture: reserved event names and prefixes are refused", () => {
    expect(fxError(fxTrack("ad_click", { total: 10 }))).toThrow("track:: Reserved event names are not allowed");
    const reserved = { firebase_conversion: "x", google_id: "ga_id", ga_value: "ga_value", value: 10, user_properties: { first_open_time: "x" } };
    // The name is checked before the timestamp: a clock ten years behind does not change the error.
    setSystemTime(new Date("2012-04-29T05:17:09Z"));
    try {
      expect(fxError(fxTrack("app_remove", reserved))).toThrow("track:: Reserved event names are not allowed");
    } finally {
      setSystemTime(new Date("2022-04-29T05:17:09Z"));
    }
    expect(fxError(fxTrack("firebase_event1", { value: 10, google_id: "ga_id" }))).toThrow("Reserved custom prefix names are not allowed");
    const firebase = { ...fxConfig, typesOfClient: "firebase", firebaseAppId: "dummyFirebaseAppId" };
    expect(fxError(fxTrack("app_store_subscription_cancel"), firebase)).toThrow("Reserved custom event names are not allowed");
    expect(fxError(fxTrack("1234_sign_up", undefined, {}, { anonymousId: undefined }))).toThrow(
      "Event name must start with a letter and can only contain letters, numbers, and underscores",
    );
  });
  test("GA4 RudderStack fixture: products without product_id or name are refused", () => {
    expect(fxError(fxTrack("product added", { total: 7.77, products: noIds }))).toThrow("One of product_id or name is required");
    expect(fxError(fxTrack("Product Viewed", { total: 7.77, currency: "USD" }))).toThrow("One of product_id or name is required");
  });
  test("GA4 RudderStack fixture: config errors in RudderStack's words, the message type checked first", () => {
    const event = fxTrack("tutotial complete");
    expect(fxError(event, { ...fxConfig, apiSecret: null })).toThrow("API Secret not found. Aborting ");
    expect(fxError(event, { ...fxConfig, measurementId: null })).toThrow("measurementId must be provided. Aborting");
    expect(fxError(event, { ...fxConfig, typesOfClient: "firebase", firebaseAppId: null })).toThrow("firebaseAppId must be provided. Aborting");
    const { type: _t, ...untyped } = event;
    expect(fxError(untyped as SluiceEvent)).toThrow("Message Type is not present. Aborting message.");
    expect(fxError(untyped as SluiceEvent, { ...fxConfig, apiSecret: null })).toThrow("Message Type is not present. Aborting message.");
  });
  test("GA4 RudderStack fixture: event name missing or not a string", () => {
    const bare = { type: "track", anonymousId: "dummyAnonId", messageId: "m", sentAt, context: { device: deviceInfo, externalId: withClientId } };
    expect(fxError({ ...bare, originalTimestamp })).toThrow("Event name is required");
    // Checked before GA4's time window, which this timestamp (a week ahead) is outside.
    expect(fxError({ ...bare, event: 122 as any, properties: { products: noIds }, originalTimestamp: "2022-05-05T15:47:57Z" })).toThrow(
      "track:: event name should be string",
    );
  });
  test("GA4 RudderStack fixture: firebase without ga4AppInstanceId; gtag without a client id", () => {
    const firebase = { ...fxConfig, typesOfClient: "firebase", firebaseAppId: "dummyFirebaseAppId" };
    const bare = { type: "track", event: "tutotial complete", messageId: "m", sentAt, originalTimestamp };
    expect(fxError({ ...bare, anonymousId: "dummyAnonId", context: { device: deviceInfo } }, firebase)).toThrow(
      "ga4AppInstanceId must be provided under externalId",
    );
    expect(fxError({ ...bare, event: "product added", properties: { products: noIds }, context: { device: deviceInfo, externalId: appInstance } })).toThrow(
      "ga4ClientId or anonymousId must be provided",
    );
  });
  test("GA4 RudderStack fixture: timestamps outside GA4's window (72 hours back, 15 minutes ahead)", () => {
    const bare = { type: "track", event: "tutotial complete", anonymousId: "dummyAnonId", messageId: "m", sentAt, context: { device: deviceInfo, externalId: withClientId } };
    try {
      setSystemTime(new Date("2023-04-29T05:17:09Z"));
      expect(fxError({ ...bare, originalTimestamp: "2022-04-20T05:17:09Z" })).toThrow("Allowed timestamp is [72 hours] into the past");
      setSystemTime(new Date("2021-04-29T05:17:09Z"));
      expect(fxError({ ...bare, originalTimestamp: "2022-05-05T15:47:57Z" })).toThrow("Allowed timestamp is [15 minutes] into the future");
    } finally {
      setSystemTime(new Date("2022-04-29T05:17:09Z"));
    }
  });

  // pageTestData.ts (generatePageOrScreenPayload: its externalId is not passed on, so client_id is the anonymousId)
  const fxPageEvent = (properties?: Record<string, unknown>, page?: Record<string, unknown>): SluiceEvent =>
    withoutUndefinedDeep({
      channel: "web",
      userId: "default-userId",
      rudderId: "rudder-1",
      messageId: "message-1",
      originalTimestamp,
      context: { device: { ...deviceInfo, advertisingId: "T0T0T072" }, page },
      anonymousId: "dummyAnonId",
      properties,
      type: "page",
      sentAt,
    });
  test("GA4 RudderStack fixture: page → page_view with properties and context.page parameters", () => {
    const own = { client_id: "dummyAnonId", user_id: "default-userId" };
    expect(run(fxPageEvent())).toEqual(fxOut("page_view", { engagement_time_msec: 1 }, own));
    expect(run(fxPageEvent({ view: "login" }))).toEqual(fxOut("page_view", { view: "login", engagement_time_msec: 1 }, own));
    const page = { url: "http://morkey.in", path: "/cart", title: "miphone", search: "MI", referrer: "morkey" };
    expect(run(fxPageEvent({ id: "dummyId" }, page))).toEqual(
      fxOut("page_view", { id: "dummyId", page_title: "miphone", page_referrer: "morkey", page_location: "http://morkey.in", engagement_time_msec: 1 }, own),
    );
  });
  test("GA4 RudderStack fixture: page with prototype-like property names, blank nested values and an empty userId", () => {
    const url = "https://somewebsite.com/?constructor.prototype.tenable_propexxx=tenable_something";
    const search = "?constructor.prototype.tenable_propexxx=tenable_something";
    const config = {
      apiSecret: "api_secr",
      debugMode: false,
      typesOfClient: "gtag",
      measurementId: "meas_id",
      firebaseAppId: "",
      whitelistedEvents: [{ eventName: "" }],
      blacklistedEvents: [{ eventName: "" }],
      eventFilteringOption: "disable",
      piiPropertiesToIgnore: [{ piiProperty: "" }],
      sdkBaseUrl: "https://www.googletagmanager.com",
      serverContainerUrl: "",
      debugView: true,
      useNativeSDK: false,
      connectionMode: "cloud",
      capturePageView: "rs",
      useNativeSDKToSend: false,
      extendPageViewParams: false,
      overrideClientAndSessionId: false,
      eventDelivery: false,
    };
    const event: SluiceEvent = {
      name: "",
      type: "page",
      messageId: "m",
      sentAt: "2022-04-29T05:17:09Z",
      userId: "",
      channel: "web",
      context: {
        os: { name: "", version: "" },
        page: { url, path: "/", title: "Mercedes-Benz Tire Center", search, tab_url: url, referrer: "$direct", initial_referrer: "$direct", referring_domain: "", initial_referring_domain: "" },
        locale: "en-US",
        traits: {},
        campaign: {},
        timezone: "GMT+0000",
        sessionId: 123465,
      },
      rudderId: "7d02bb53-ff1a-46a2-9cb1-1ea78dcd4ca8",
      timestamp: "2022-04-29T05:17:09Z",
      properties: {
        url,
        path: "/",
        title: "Mercedes-Benz Tire Center",
        search,
        tab_url: url,
        vehicle: { make: "", trim: "", year: "", model: "", ratio: "", width: "", option: "", diameter: "" },
        national: true,
        referrer: "$direct",
        search_type: "Vehicle",
        initial_referrer: "$direct",
        oem_program_code: "CODE",
        referring_domain: "",
        initial_referring_domain: "",
        "constructor.prototype.tenable_propexxx": "tenable_something",
      },
      anonymousId: "f577a7e1-6c76-49c3-8312-12846471e025",
      integrations: { All: true },
      originalTimestamp: "2022-04-29T05:17:09Z",
    };
    expect(run(event, config)).toEqual([
      collectRequest(
        { api_secret: "api_secr", measurement_id: "meas_id" },
        {
          events: [
            {
              name: "page_view",
              params: {
                url,
                path: "/",
                title: "Mercedes-Benz Tire Center",
                search,
                tab_url: url,
                national: true,
                referrer: "$direct",
                page_title: "Mercedes-Benz Tire Center",
                session_id: 123465,
                search_type: "Vehicle",
                page_location: url,
                page_referrer: "$direct",
                initial_referrer: "$direct",
                oem_program_code: "CODE",
                engagement_time_msec: 1,
                "constructor.prototype.tenable_propexxx": "tenable_something",
              },
            },
          ],
          client_id: "f577a7e1-6c76-49c3-8312-12846471e025",
          timestamp_micros: 1651209429000000,
        },
      ),
    ]);
    // The Test API takes only defaultConfig keys, so a config copied from RudderStack must fit.
    for (const key of [...Object.keys(config), ...Object.keys(fxConfig)]) expect(ga4.config.defaultConfig).toContain(key);
  });
});

describe("GA4 validation server answers (RudderStack's dataDelivery fixtures)", () => {
  const debugRequest = () => ga4.transform(track("Signed Up"), ctx({ ...gtag, debugMode: true }))[0]!;
  const check = (status: number, body: unknown) =>
    ga4.checkResponse!({ status, body: typeof body === "string" ? body : JSON.stringify(body) }, debugRequest(), ctx({ ...gtag, debugMode: true }));

  test("GA4 RudderStack fixture: an empty validationMessages list, and the collect endpoint's 204, are delivered", () => {
    expect(check(200, { validationMessages: [] })).toEqual({ outcome: "ok" });
    expect(check(204, "")).toEqual({ outcome: "ok" });
    expect(check(200, "not json")).toEqual({ outcome: "ok" });
  });

  test("GA4 RudderStack fixture: an invalid event name aborts with the validation server's first message", () => {
    const validationMessages = [
      {
        fieldPath: "events",
        description: "Event at index: [0] has invalid name [campaign@details]. Only alphanumeric characters and underscores are allowed.",
        validationCode: "NAME_INVALID",
      },
      { fieldPath: "events.params", description: "second", validationCode: "VALUE_INVALID" },
    ];
    expect(check(200, { validationMessages })).toEqual({
      outcome: "abort",
      error:
        "Validation Server Response Handler:: Validation Error for ga4 of field path :events | NAME_INVALID-Event at index: [0] has invalid name [campaign@details]. Only alphanumeric characters and underscores are allowed.",
    });
  });

  test("GA4 RudderStack fixture: a message without fieldPath reads 'field path :undefined'", () => {
    const description = 'Validation of item.price should prevent conversion from unsupported value [string_value: "$19"]';
    expect(check(200, { validationMessages: [{ description, validationCode: "INTERNAL_ERROR" }] })).toEqual({
      outcome: "abort",
      error: `Validation Server Response Handler:: Validation Error for ga4 of field path :undefined | INTERNAL_ERROR-${description}`,
    });
  });

  const duplicated = {
    fieldPath: "events.params",
    description: 'The event param [string_value: "1.5kg"] has a duplicate name [details_specifications_weight].',
    validationCode: "NAME_DUPLICATED",
  };
  const sink = startSink((req) => Response.json({ validationMessages: req.body?.events?.[0]?.name === "bad_event" ? [duplicated] : [] }));
  let s: TestServer;
  beforeAll(async () => {
    s = await startSluice({ args: ["--destination-base-url", `GA4=${sink.url}`, "--retry-backoff-ms", "20"] });
  });
  afterAll(async () => {
    await s.stop();
    sink.stop();
    cleanup(s.dataDir);
  });

  test("GA4 through the pipeline with debugMode: a 200 answer with validation messages aborts the event with RudderStack's text", async () => {
    const src = await createSource(s.url);
    const dst = await api(s.url, "POST", "/v2/destinations", { name: "ga4", type: "GA4", config: { ...gtag, debugMode: true }, sourceIds: [src.id] });
    expect(dst.status).toBe(201);
    const batch = [
      { type: "track", anonymousId: "a-1", event: "good event" },
      { type: "track", anonymousId: "a-2", event: "bad event" },
    ];
    expect((await sendEvent(s.url, src.writeKey, "batch", { batch })).status).toBe(200);
    const stats = await waitFor(
      async () => {
        const st = (await api(s.url, "GET", `/v2/destinations/${dst.json.id}/stats`)).json;
        return st.counts.succeeded === 1 && st.counts.aborted === 1 ? st : undefined;
      },
      { what: "one delivered and one aborted GA4 event" },
    );
    const error = `Validation Server Response Handler:: Validation Error for ga4 of field path :events.params | NAME_DUPLICATED-${duplicated.description}`;
    expect(stats.lastError.error).toBe(error);
    expect(sink.received.every((r) => r.path === "/debug/mp/collect")).toBe(true);
    const row = s.sluice.db.$client.query("SELECT attempts, last_status, last_error, attempt_log FROM deliveries WHERE destination_id = ? AND state = 'aborted'").get(dst.json.id) as any;
    // Aborted on the first answer: a validation error is not retried.
    expect(row).toMatchObject({ attempts: 1, last_status: 200, last_error: error });
    expect(JSON.parse(row.attempt_log)).toEqual([expect.objectContaining({ status: 200, error })]);
    expect(sink.received).toHaveLength(2);
  });
});
