import { afterAll, beforeAll, expect, test } from "bun:test";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";
import { braze, brazeBaseUrl } from "../../src/destinations/braze";
import type { DestinationContext, DestinationRequest, SluiceEvent } from "../../src/destinations/types";

// Expected requests follow rudder-transformer's Braze destination (src/v0/destinations/braze)
// and its component test data.

const ctx = (config: Record<string, any> = {}, baseUrl?: string): DestinationContext => ({
  config: { restApiKey: "rest_key", dataCenter: "US-01", ...config },
  destination: { id: "dest-braze", name: "Braze", workspaceId: "ws-1" },
  baseUrl,
});
const HEADERS = { "Content-Type": "application/json", Accept: "application/json", Authorization: "Bearer rest_key" };
const US = "https://rest.iad-01.braze.com";
const TRACK = `${US}/users/track`;
const ts = "2024-05-01T10:00:00.000Z";
const RUDDER_ALIAS = (id: string) => ({ alias_name: id, alias_label: "rudder_id" });

const request = (endpoint: string, json: Record<string, unknown>): DestinationRequest => ({
  version: "1",
  type: "REST",
  method: "POST",
  endpoint,
  headers: HEADERS,
  params: {},
  body: { JSON: json, JSON_ARRAY: {}, XML: {}, FORM: {} },
  files: {},
});
/** A track event "E" of user u-1 with the given extra fields. */
const trackE = (extra: Partial<SluiceEvent> = {}): SluiceEvent => ({ type: "track", messageId: "m", userId: "u-1", event: "E", timestamp: ts, ...extra });
const bodyOf = (event: SluiceEvent, config: Record<string, any> = {}) => braze.transform(event, ctx(config))[0]!.body.JSON as Record<string, any>;

test("BRAZE dataCenter → REST instance: US-0N → iad, EU-0N → fra (.eu), AU-0N → au; anything else is refused", () => {
  expect(brazeBaseUrl("US-01")).toBe("https://rest.iad-01.braze.com");
  expect(brazeBaseUrl("us-05")).toBe("https://rest.iad-05.braze.com");
  expect(brazeBaseUrl(" EU-02 ")).toBe("https://rest.fra-02.braze.eu");
  expect(brazeBaseUrl("AU-01")).toBe("https://rest.au-01.braze.com");
  expect(() => brazeBaseUrl("XX-01")).toThrow("Invalid Data Center: XX-01, valid values are EU, US, AU");
  expect(() => brazeBaseUrl("US")).toThrow("Invalid Data Center");
  const event = trackE();
  expect(() => braze.transform(event, ctx({ dataCenter: "JP-01" }))).toThrow("Invalid Data Center: JP-01");
});

test("BRAZE track → POST /users/track: custom event with every property but time/event_name, traits as attributes", () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "m-1",
    userId: "u-1",
    anonymousId: "a-1",
    event: "Song Played",
    timestamp: ts,
    properties: { song: "Blue", price: 3, currency: "USD", revenue: 3, time: "x", event_name: "y" },
    context: { traits: { email: "Ada@Example.com", plan: "pro" } },
  };
  expect(braze.transform(event, ctx())).toEqual([
    request(TRACK, {
      partner: "RudderStack",
      attributes: [{ email: "ada@example.com", plan: "pro", external_id: "u-1" }],
      events: [{ name: "Song Played", time: ts, properties: { song: "Blue", price: 3, currency: "USD", revenue: 3 }, external_id: "u-1" }],
    }),
  ]);
});

test("BRAZE anonymous track → user_alias (rudder_id, or integrations.Braze.alias) with _update_existing_only false", () => {
  const event = trackE({ anonymousId: "a-9", userId: "" });
  expect(bodyOf(event)).toEqual({
    partner: "RudderStack",
    events: [{ name: "E", time: ts, properties: {}, _update_existing_only: false, user_alias: RUDDER_ALIAS("a-9") }],
  });
  const withAlias = { ...event, integrations: { All: true, Braze: { alias: { alias_name: "ada@example.com", alias_label: "email" } } } };
  expect(bodyOf(withAlias).events[0].user_alias).toEqual({ alias_name: "ada@example.com", alias_label: "email" });
  // An alias missing its label is not used.
  const halfAlias = { ...event, integrations: { Braze: { alias: { alias_name: "x" } } } };
  expect(bodyOf(halfAlias).events[0].user_alias).toEqual(RUDDER_ALIAS("a-9"));
});

test("BRAZE external_id: context.externalId brazeExternalId wins over userId; integrations.Braze.appId → app_id", () => {
  const event = trackE({ context: { externalId: [{ type: "brazeExternalId", id: "bz-1" }] }, integrations: { All: true, braze: { appId: 123 } } });
  expect(bodyOf(event).events).toEqual([{ name: "E", time: ts, properties: {}, external_id: "bz-1", app_id: "123" }]);
  // A brazeExternalId alone makes the event identified.
  expect(bodyOf({ ...event, userId: undefined }).events[0]).toMatchObject({ external_id: "bz-1" });
  expect(bodyOf({ ...event, userId: undefined }).events[0]._update_existing_only).toBeUndefined();
});

test("BRAZE Order Completed → purchases (one per product, nulls skipped) with the traits as attributes", () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "m",
    anonymousId: "a-1",
    event: "Order Completed",
    timestamp: ts,
    context: { traits: { email: "ada@example.com" } },
    properties: {
      currency: "EUR",
      revenue: 20,
      products: [null, { product_id: "p1", price: "9.5", quantity: "2", name: "Tea" }, { sku: "s2", price: 1, quantity: 1, currency: "USD" }],
    },
  };
  const identifier = { _update_existing_only: false, user_alias: RUDDER_ALIAS("a-1") };
  expect(braze.transform(event, ctx())).toEqual([
    request(TRACK, {
      partner: "RudderStack",
      attributes: [{ email: "ada@example.com", ...identifier }],
      purchases: [
        { product_id: "p1", price: 9.5, currency: "EUR", quantity: 2, time: ts, ...identifier },
        { product_id: "s2", price: 1, currency: "EUR", quantity: 1, time: ts, ...identifier },
      ],
    }),
  ]);
  // sendPurchaseEventWithExtraProperties: the product's other keys become purchase properties.
  const extra = bodyOf(event, { sendPurchaseEventWithExtraProperties: true }).purchases;
  expect(extra.map((p: any) => p.properties)).toEqual([{ name: "Tea" }, undefined]);
  // Product currency when the order has none.
  const noOrderCurrency = { ...event, properties: { products: [{ sku: "s2", price: 1, quantity: 1, currency: "USD" }] } };
  expect(bodyOf(noOrderCurrency).purchases[0].currency).toBe("USD");
});

test("BRAZE Order Completed validation: RudderStack's messages, indexes counted after nulls are skipped", () => {
  const base = trackE({ event: "order completed" });
  const run = (properties: unknown, extra: Partial<SluiceEvent> = {}) => () => braze.transform({ ...base, properties, ...extra }, ctx());
  expect(run(undefined)).toThrow("Invalid Order Completed event: Products array is missing in the message");
  expect(run({ products: {} })).toThrow("Invalid Order Completed event: Products is not an array");
  expect(run({ products: [null] })).toThrow("Invalid Order Completed event: Products array is empty");
  expect(run({ products: [{ product_id: "p" }] }, { timestamp: undefined })).toThrow("Timestamp is missing in the message");
  expect(run({ products: [null, { price: 1, quantity: 1 }] })).toThrow("Product Id is missing for product at index: 0");
  expect(run({ products: [{ product_id: "p", quantity: 1 }] })).toThrow("Price is missing for product at index: 0");
  expect(run({ products: [{ product_id: "p", price: 1 }] })).toThrow("Quantity is missing for product at index: 0");
  expect(run({ products: [null, { product_id: "p", price: 1, quantity: 1 }] })).toThrow(
    "Invalid Order Completed event: Message properties and product at index: 0 is missing currency",
  );
});

test("BRAZE page / screen → custom event named by name, properties.name, else Page Viewed / Screen Viewed", () => {
  const page: SluiceEvent = { type: "page", messageId: "p", userId: "u-1", name: "Pricing", timestamp: ts, properties: { path: "/pricing", title: "" } };
  expect(braze.transform(page, ctx())).toEqual([
    request(TRACK, { partner: "RudderStack", events: [{ name: "Pricing", time: ts, properties: { path: "/pricing", title: "" }, external_id: "u-1" }] }),
  ]);
  expect(bodyOf({ ...page, name: undefined }).events[0].name).toBe("Page Viewed");
  expect(bodyOf({ ...page, name: undefined, properties: { name: "Home" } }).events[0].name).toBe("Home");
  const screen: SluiceEvent = { type: "screen", messageId: "s", userId: "u-1", timestamp: ts };
  expect(bodyOf(screen).events[0].name).toBe("Screen Viewed");
  // Only a track "Order Completed" is a purchase.
  expect(bodyOf({ ...page, name: "Order Completed" }).events[0].name).toBe("Order Completed");
});

test("BRAZE identify with anonymousId → /users/identify merging the rudder_id alias, then /users/track attributes", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "u-1",
    anonymousId: "a-1",
    context: {
      traits: {
        firstName: "Ada",
        lastName: "Lovelace",
        gender: "female",
        birthday: "1815-12-10",
        avatar: "https://img/ada.png",
        phone: "+4412",
        email: "ADA@example.com",
        address: { city: "London", country: "UK" },
        tier: "gold",
        closed_at: null,
      },
    },
  };
  expect(braze.transform(event, ctx())).toEqual([
    request(`${US}/users/identify`, { aliases_to_identify: [{ user_alias: RUDDER_ALIAS("a-1"), external_id: "u-1" }], merge_behavior: "merge" }),
    request(TRACK, {
      attributes: [
        {
          country: "UK",
          dob: "1815-12-10",
          email: "ada@example.com",
          first_name: "Ada",
          gender: "F",
          home_city: "London",
          image_url: "https://img/ada.png",
          last_name: "Lovelace",
          phone: "+4412",
          tier: "gold",
          closed_at: null,
          external_id: "u-1",
        },
      ],
    }),
  ]);
});

test("BRAZE identify corner cases: alias option, no traits, nulls, bad email, anonymous, reverse ETL", () => {
  // The sender's alias is merged even without an anonymousId.
  const aliased: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "u-1",
    integrations: { Braze: { alias: { alias_name: "ada@example.com", alias_label: "email" } } },
    traits: { plan: "pro" },
  };
  expect(braze.transform(aliased, ctx())[0]!.body.JSON).toEqual({
    aliases_to_identify: [{ user_alias: { alias_name: "ada@example.com", alias_label: "email" }, external_id: "u-1" }],
    merge_behavior: "merge",
  });
  // No traits: refused with RudderStack's message, even when there is an alias to merge.
  const bare: SluiceEvent = { type: "identify", messageId: "m", userId: "u-1", anonymousId: "a-1", context: { traits: {} } };
  expect(() => braze.transform(bare, ctx())).toThrow("No attributes found to update the user profile");
  expect(() => braze.transform({ ...bare, context: {} }, ctx())).toThrow("No attributes found to update the user profile");
  expect(() => braze.transform({ ...bare, anonymousId: undefined }, ctx())).toThrow("No attributes found to update the user profile");
  // Explicit nulls clear email, gender and phone; other standard attributes drop them.
  const nulls: SluiceEvent = { type: "identify", messageId: "m", userId: "u", traits: { email: null, gender: null, phone: null, firstName: null, job: null } };
  expect(braze.transform(nulls, ctx())[0]!.body.JSON).toEqual({ attributes: [{ email: null, gender: null, phone: null, job: null, external_id: "u" }] });
  expect(() => braze.transform({ ...nulls, traits: { email: 123 } }, ctx())).toThrow("Invalid email, email must be a valid string");
  // Anonymous identify: no merge, attributes on the alias.
  const anon: SluiceEvent = { type: "identify", messageId: "m", userId: "", anonymousId: "a-1", context: { traits: { city: "Disney", gender: "x" } } };
  expect(braze.transform(anon, ctx())).toEqual([
    request(TRACK, { attributes: [{ gender: null, city: "Disney", _update_existing_only: false, user_alias: RUDDER_ALIAS("a-1") }] }),
  ]);
  // Reverse ETL: traits are already Braze attributes and the user is context.externalId[0].
  const retl: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "",
    anonymousId: "a-1",
    context: { mappedToDestination: true, externalId: [{ identifierType: "external_id", id: "ext-1" }], traits: { first_name: "Mickey", home_city: "Disney" } },
  };
  const [merge, track] = braze.transform(retl, ctx());
  expect(merge!.body.JSON).toEqual({ aliases_to_identify: [{ user_alias: RUDDER_ALIAS("a-1"), external_id: "ext-1" }], merge_behavior: "merge" });
  expect(track!.body.JSON).toEqual({ attributes: [{ first_name: "Mickey", home_city: "Disney", external_id: "ext-1" }] });
});

test("BRAZE enableNestedArrayOperations: object traits {update, remove, add} → {$update, $remove, $add} and _merge_objects", () => {
  const pets = { update: [{ id: 2, identifier: "id", name: "abc", age: 27 }], remove: [{ id: 3, identifier: "id" }], add: [{ id: 1, name: "Gus" }] };
  const event = trackE({ properties: { mergeObjectsUpdateOperation: true }, context: { traits: { pets, cars: { add: [{ id: 9 }] }, list: [{ id: 1 }] } } });
  const expected = {
    pets: {
      $update: [{ $identifier_key: "id", $identifier_value: 2, $new_object: { name: "abc", age: 27 } }],
      $remove: [{ $identifier_key: "id", $identifier_value: 3 }],
      $add: [{ id: 1, name: "Gus" }],
    },
    // Without an update RudderStack keeps the trait's own keys beside the operation.
    cars: { add: [{ id: 9 }], $add: [{ id: 9 }] },
    list: [{ id: 1 }],
    _merge_objects: true,
    external_id: "u-1",
  };
  expect(bodyOf(event, { enableNestedArrayOperations: true }).attributes).toEqual([expected]);
  expect(bodyOf({ ...event, properties: {} }, { enableNestedArrayOperations: true }).attributes[0]._merge_objects).toBe(false);
  // Off: the traits go as they are.
  expect(bodyOf(event).attributes[0].pets).toEqual(pets);
});

test("BRAZE group → ab_rudder_group_<id> attribute on /users/track", () => {
  const event: SluiceEvent = { type: "group", messageId: "g", userId: "u-1", traits: { groupId: "1234" } };
  expect(braze.transform(event, ctx())).toEqual([request(TRACK, { attributes: [{ ab_rudder_group_1234: true, external_id: "u-1" }], partner: "RudderStack" })]);
  expect(() => braze.transform({ ...event, traits: {} }, ctx())).toThrow("Invalid groupId");
});

test("BRAZE group with enableSubscriptionGroupInGroupCall → /v2/subscription/status/set with external_ids and phone (else email)", () => {
  const config = { enableSubscriptionGroupInGroupCall: true };
  const event: SluiceEvent = { type: "group", messageId: "g", userId: "u-1", groupId: "sg-1", traits: { phone: "555", email: "ada@example.com", subscriptionState: "subscribed" } };
  expect(braze.transform(event, ctx(config))).toEqual([
    request(`${US}/v2/subscription/status/set`, {
      subscription_groups: [{ subscription_group_id: "sg-1", subscription_state: "subscribed", external_ids: ["u-1"], phones: ["555"] }],
    }),
  ]);
  const anonymousEmail: SluiceEvent = { type: "group", messageId: "g", anonymousId: "a", groupId: "sg-1", traits: { email: "abc@test.com", subscriptionState: "unsubscribed" } };
  expect(bodyOf(anonymousEmail, config)).toEqual({
    subscription_groups: [{ subscription_group_id: "sg-1", subscription_state: "unsubscribed", emails: ["abc@test.com"] }],
  });
  expect(() => braze.transform({ ...event, traits: { subscriptionState: "subscribed" } }, ctx(config))).toThrow(
    "Message should have traits with subscriptionState, email or phone",
  );
  expect(() => braze.transform({ ...event, traits: { phone: "555" } }, ctx(config))).toThrow("you must provide a subscription state in traits");
});

test("BRAZE alias → /users/merge with identifier_to_merge previousId and identifier_to_keep userId", () => {
  const event: SluiceEvent = { type: "alias", messageId: "al", userId: "u-new", previousId: "u-old" };
  expect(braze.transform(event, ctx())).toEqual([
    request(`${US}/users/merge`, { merge_updates: [{ identifier_to_merge: { external_id: "u-old" }, identifier_to_keep: { external_id: "u-new" } }] }),
  ]);
  expect(() => braze.transform({ ...event, previousId: undefined }, ctx())).toThrow("[BRAZE]: previousId is required for alias call");
  expect(() => braze.transform({ ...event, userId: undefined }, ctx())).toThrow("[BRAZE]: userId is required for alias call");
});

const ecommerceEvent = (name: string, properties: Record<string, unknown>, context: Record<string, unknown> = { channel: "web" }): SluiceEvent => ({
  type: "track",
  messageId: "m",
  anonymousId: "a-1",
  event: name,
  timestamp: ts,
  properties,
  context: { ...context, traits: { email: "mickey@disney.com" } },
});
const ecommerceBody = (name: string, properties: Record<string, unknown>) => ({
  partner: "RudderStack",
  attributes: [{ email: "mickey@disney.com", _update_existing_only: false, user_alias: RUDDER_ALIAS("a-1") }],
  events: [{ name, time: ts, properties, _update_existing_only: false, user_alias: RUDDER_ALIAS("a-1") }],
});
const ECOMMERCE = { useEcommerceRecommendedEvents: true };

test("BRAZE useEcommerceRecommendedEvents: Product Viewed → ecommerce.product_viewed, other keys as metadata", () => {
  const event = ecommerceEvent("Product Viewed", { product_id: "sku_42", name: "Widget", variant: "red", price: "9.99", currency: "USD", category: "home" });
  expect(braze.transform(event, ctx(ECOMMERCE))).toEqual([
    request(
      TRACK,
      ecommerceBody("ecommerce.product_viewed", {
        product_id: "sku_42",
        product_name: "Widget",
        variant_id: "red",
        price: 9.99,
        currency: "USD",
        source: "web",
        metadata: { category: "home" },
      }),
    ),
  ]);
  // Flag off: the legacy custom event.
  expect(bodyOf(event).events[0].name).toBe("Product Viewed");
});

test("BRAZE useEcommerceRecommendedEvents: Product Added / Removed → cart_updated with the top-level product wrapped", () => {
  const props = { cart_id: "cart_001", currency: "USD", product_id: "sku_42", name: "Widget", quantity: "2", price: 9.99 };
  expect(bodyOf(ecommerceEvent("Product Added", props), ECOMMERCE)).toEqual(
    ecommerceBody("ecommerce.cart_updated", {
      cart_id: "cart_001",
      currency: "USD",
      products: [{ product_id: "sku_42", product_name: "Widget", variant_id: "sku_42", quantity: 2, price: 9.99 }],
      source: "web",
      action: "add",
    }),
  );
  expect(bodyOf(ecommerceEvent("product removed", props), ECOMMERCE).events[0].properties.action).toBe("remove");
});

test("BRAZE useEcommerceRecommendedEvents: Order Completed → ecommerce.order_placed instead of purchases; source from the OS on mobile", () => {
  const event = ecommerceEvent(
    "Order Completed",
    {
      order_id: 1001,
      revenue: 99.99,
      currency: "USD",
      discount: 5,
      time: "reserved",
      products: [{ product_id: "sku_42", name: "Widget", quantity: 1, price: 99.99, color: "blue" }],
      campaign_id: "spring26",
    },
    { channel: "mobile", os: { name: "iOS" } },
  );
  expect(bodyOf(event, ECOMMERCE)).toEqual(
    ecommerceBody("ecommerce.order_placed", {
      order_id: "1001",
      total_value: 99.99,
      currency: "USD",
      total_discounts: 5,
      products: [{ product_id: "sku_42", product_name: "Widget", variant_id: "sku_42", quantity: 1, price: 99.99, metadata: { color: "blue" } }],
      source: "ios",
      metadata: { campaign_id: "spring26" },
    }),
  );
  const checkout = bodyOf(ecommerceEvent("Checkout Started", { order_id: "o", total: "10", products: [] }), ECOMMERCE).events[0];
  // Checkout Started has no types in RudderStack's mapping: "10" stays a string; empty products are dropped.
  expect(checkout).toMatchObject({ name: "ecommerce.checkout_started", properties: { checkout_id: "o", total_value: "10", source: "web" } });
  expect(checkout.properties.products).toBeUndefined();
  expect(bodyOf(ecommerceEvent("Order Cancelled", { order_id: "o", reason: "late" }), ECOMMERCE).events[0].properties).toEqual({
    order_id: "o",
    cancel_reason: "late",
    source: "web",
  });
  expect(bodyOf(ecommerceEvent("Order Refunded", { order_id: "o", source: "android" }), ECOMMERCE).events[0].properties).toEqual({
    order_id: "o",
    source: "android",
  });
});

test("BRAZE filtering, missing keys, baseUrl override, unsupported type", () => {
  const event = trackE({ event: "Noise" });
  expect(braze.transform(event, ctx({ eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "Noise" }] }))).toEqual([]);
  expect(braze.transform(event, ctx({ eventFilteringOption: "whitelistedEvents", whitelistedEvents: [{ eventName: "Other" }] }))).toEqual([]);
  // processor fixture "Destination config is missing restApiKey": RudderStack's configuration error.
  expect(() => braze.transform(event, ctx({ restApiKey: "" }))).toThrow("Rest API Key not found. Aborting");
  expect(() => braze.transform(event, ctx({ restApiKey: undefined }))).toThrow("Rest API Key not found. Aborting");
  // RudderStack's getEndpointFromConfig message for a data center that is missing or not a string.
  expect(() => braze.transform(event, ctx({ dataCenter: undefined }))).toThrow("Invalid Data Center: valid values are EU, US, AU");
  expect(() => braze.transform(event, ctx({ dataCenter: 1 }))).toThrow("Invalid Data Center: valid values are EU, US, AU");
  expect(braze.transform(event, ctx({}, "http://127.0.0.1:6000"))[0]!.endpoint).toBe("http://127.0.0.1:6000/users/track");
  expect(() => braze.transform({ ...event, type: "merge" }, ctx())).toThrow("Message type is not supported");
});

const userTrack = (user: string, i = 0): DestinationRequest => ({
  ...braze.transform(trackE({ userId: user, context: { traits: { n: i } } }), ctx())[0]!,
  userKey: user,
});

test("BRAZE batch → /users/track items sorted by external_id, at most 75 of each kind per call", () => {
  // 80 users: 80 attributes and 80 events; sorted u00..u79, cut when a kind reaches 75.
  const users = Array.from({ length: 80 }, (_, i) => `u${String(79 - i).padStart(2, "0")}`);
  const batched = braze.batch!(users.map((u, i) => userTrack(u, i)), ctx());
  expect(batched.map((r) => [r.endpoint, (r.body.JSON.attributes as unknown[]).length, (r.body.JSON.events as unknown[]).length])).toEqual([
    [TRACK, 75, 75],
    [TRACK, 5, 5],
  ]);
  expect((batched[0]!.body.JSON.events as any[]).map((e) => e.external_id).slice(0, 3)).toEqual(["u00", "u01", "u02"]);
  expect(batched[0]).toMatchObject({ headers: HEADERS, body: { JSON: { partner: "RudderStack" } } });
  expect((batched[1]!.body.JSON.attributes as any[])[0]).toEqual({ n: 4, external_id: "u75" });
});

test("BRAZE batch → a /users/track call holds at most 75 distinct external ids; anonymous items sort last and count as one", () => {
  const id = (p: string, i: number) => `${p}${String(i).padStart(3, "0")}`;
  // 40 users with attributes only and 40 with events only: no kind reaches 75, the ids do.
  const attributesOnly = Array.from({ length: 40 }, (_, i) => ({
    ...braze.transform({ type: "identify", messageId: `i${i}`, userId: id("a", i), traits: { n: i } }, ctx())[0]!,
    userKey: id("a", i),
  }));
  const eventsOnly = Array.from({ length: 40 }, (_, i) => ({
    ...braze.transform(trackE({ userId: id("e", i) }), ctx())[0]!,
    userKey: id("e", i),
  }));
  const anon = (a: string) => ({ ...braze.transform({ type: "page", messageId: a, anonymousId: a, timestamp: ts }, ctx())[0]!, userKey: a });
  const batched = braze.batch!([anon("anon-1"), anon("anon-2"), ...eventsOnly, ...attributesOnly], ctx());
  const shape = (r: DestinationRequest) => [(r.body.JSON.attributes as unknown[] | undefined)?.length, (r.body.JSON.events as any[] | undefined)?.length];
  expect(batched.map(shape)).toEqual([
    [40, 35],
    [undefined, 7],
  ]);
  expect((batched[1]!.body.JSON.events as any[]).map((e) => e.external_id ?? e.user_alias.alias_name)).toEqual(["e035", "e036", "e037", "e038", "e039", "anon-1", "anon-2"]);
  // A single identify's attributes get the partner once batched, as in RudderStack's router.
  expect(braze.batch!(attributesOnly.slice(0, 1), ctx())[0]!.body.JSON).toEqual({ partner: "RudderStack", attributes: [{ n: 0, external_id: "a000" }] });
});

test("BRAZE batch → identifies first (one /users/identify), then tracks, subscriptions, merges; each user's order kept", () => {
  const identify = (user: string) =>
    braze.transform({ type: "identify", messageId: user, userId: user, anonymousId: `anon-${user}`, traits: { x: 1 } }, ctx()).map((r) => ({ ...r, userKey: user }));
  const merge = { ...braze.transform({ type: "alias", messageId: "al", userId: "K", previousId: "p" }, ctx())[0]!, userKey: "K" };
  const batched = braze.batch!([...identify("A"), merge, userTrack("C"), ...identify("B")], ctx());
  expect(batched.map((r) => r.endpoint.replace(US, ""))).toEqual(["/users/identify", "/users/track", "/users/merge"]);
  expect(batched[0]!.body.JSON).toEqual({
    aliases_to_identify: [
      { user_alias: RUDDER_ALIAS("anon-A"), external_id: "A" },
      { user_alias: RUDDER_ALIAS("anon-B"), external_id: "B" },
    ],
    merge_behavior: "merge",
  });
  expect((batched[1]!.body.JSON.attributes as any[]).map((a) => a.external_id)).toEqual(["A", "B", "C"]);
  // The same user again: its identify may not move ahead of its own earlier track.
  const again = braze.batch!([...identify("A"), ...identify("A")], ctx());
  expect(again.map((r) => r.endpoint.replace(US, ""))).toEqual(["/users/identify", "/users/track", "/users/identify", "/users/track"]);
});

test("BRAZE batch → subscription status 25 per call with the same group and state combined; merges 50 per call", () => {
  const config = { enableSubscriptionGroupInGroupCall: true };
  const sub = (user: string, state: string, email: string) => ({
    ...braze.transform({ type: "group", messageId: user, userId: user, groupId: "g1", traits: { email, subscriptionState: state } }, ctx(config))[0]!,
    userKey: user,
  });
  const batched = braze.batch!([sub("u1", "subscribed", "a@x"), sub("u2", "subscribed", "a@x"), sub("u3", "unsubscribed", "c@x")], ctx(config));
  expect(batched).toEqual([
    {
      ...request(`${US}/v2/subscription/status/set`, {
        subscription_groups: [
          { subscription_group_id: "g1", subscription_state: "subscribed", emails: ["a@x"], external_ids: ["u1", "u2"] },
          { subscription_group_id: "g1", subscription_state: "unsubscribed", emails: ["c@x"], external_ids: ["u3"] },
        ],
      }),
    },
  ]);
  const many = Array.from({ length: 30 }, (_, i) => sub(`u${i}`, "subscribed", `${i}@x`));
  expect(braze.batch!(many, ctx(config)).map((r) => (r.body.JSON.subscription_groups as any[])[0].external_ids.length)).toEqual([25, 5]);
  const merges = Array.from({ length: 51 }, (_, i) => ({
    ...braze.transform({ type: "alias", messageId: `${i}`, userId: `k${i}`, previousId: `p${i}` }, ctx())[0]!,
    userKey: `k${i}`,
  }));
  expect(braze.batch!(merges, ctx()).map((r) => (r.body.JSON.merge_updates as unknown[]).length)).toEqual([50, 1]);
});

test("BRAZE supportDedup: within a batch, a user's later attributes carry only what changed; non-billable ones are always sent", () => {
  const config = { supportDedup: true };
  const identify = (user: string, traits: Record<string, unknown>) => ({
    ...braze.transform({ type: "identify", messageId: `${user}-${Object.keys(traits).join()}`, userId: user, traits }, ctx(config))[0]!,
    userKey: user,
  });
  const first = identify("u-1", { plan: "pro", seats: 3, tags: ["a"], country: "EE", nested: { $add: [1] } });
  const again = identify("u-1", { plan: "pro", seats: 4, tags: ["a"], country: "EE", nested: { $add: [2] } });
  const attributes = (batched: DestinationRequest[]) => batched.flatMap((r) => (r.body.JSON.attributes as any[]) ?? []);
  // The first attributes of the batch go whole (nothing is known of the user); the second only the
  // changed seat count, the non-billable country again, and no array operation.
  expect(attributes(braze.batch!([first, again], ctx(config)))).toEqual([
    { plan: "pro", seats: 3, tags: ["a"], country: "EE", nested: { $add: [1] }, external_id: "u-1" },
    { seats: 4, country: "EE", external_id: "u-1" },
  ]);
  // Nothing new at all: the later update is left out, and the call carries the first alone.
  const same = identify("u-1", { plan: "pro" });
  expect(attributes(braze.batch!([identify("u-1", { plan: "pro" }), same], ctx(config)))).toEqual([{ plan: "pro", external_id: "u-1" }]);
  // A null clears an attribute only where the batch set one; users are kept apart by external id.
  const cleared = identify("u-1", { plan: null, seats: null });
  const other = identify("u-2", { plan: "pro" });
  // (Items sorted by external id, as every /users/track call.)
  expect(attributes(braze.batch!([identify("u-1", { plan: "pro" }), other, cleared], ctx(config)))).toEqual([
    { plan: "pro", external_id: "u-1" },
    { plan: null, external_id: "u-1" },
    { plan: "pro", external_id: "u-2" },
  ]);
  // Without supportDedup every update is sent as it is.
  expect(attributes(braze.batch!([identify("u-1", { plan: "pro" }), identify("u-1", { plan: "pro" })], ctx()))).toHaveLength(2);
});

test("BRAZE supportDedup: a track keeps its event when its attributes are all known; an identify that updates nothing is refused", () => {
  const config = { supportDedup: true };
  const track = (n: number) => ({ ...braze.transform(trackE({ messageId: `t${n}`, context: { traits: { plan: "pro" } } }), ctx(config))[0]!, userKey: "u-1" });
  const [call] = braze.batch!([track(1), track(2)], ctx(config));
  expect(call!.body.JSON.attributes).toEqual([{ plan: "pro", external_id: "u-1" }]);
  expect((call!.body.JSON.events as unknown[]).length).toBe(2);
  // Traits that name only the user leave nothing to update: RudderStack drops the identify in these
  // words and sends a track without attributes.
  const idsOnly = { type: "identify", messageId: "m", userId: "u-1", traits: { external_id: "x" } } as SluiceEvent;
  expect(() => braze.transform(idsOnly, ctx(config))).toThrow("[Braze Deduplication]: Duplicate user detected, the user is dropped");
  expect(braze.transform(idsOnly, ctx())[0]!.body.JSON).toEqual({ attributes: [{ external_id: "u-1" }] });
  expect(bodyOf(trackE({ context: { traits: { external_id: "x" } } }), config).attributes).toBeUndefined();
});

test("BRAZE RudderStack fixture: supportDedup within a router batch, for a user Braze's lookup does not know", () => {
  // RudderStack's "dedup enabled router tests", user@50: three identifies with the same traits, the
  // last without country. The first goes whole, the second only the non-billable country, and
  // the third has nothing left (RudderStack drops that event with its dedup error).
  const config = { supportDedup: true, dataCenter: "US-03" };
  const traits = { city: "Disney", country: "USA", email: "mickey@disney.com", firstName: "Mickey" };
  const identify = (t: Record<string, unknown>) => ({
    ...braze.transform({ type: "identify", messageId: "m", userId: "user@50", context: { traits: t } }, ctx(config))[0]!,
    userKey: "user@50",
  });
  const { country: _c, ...noCountry } = traits;
  const batched = braze.batch!([identify(traits), identify(traits), identify(noCountry)], ctx(config));
  expect(batched.map((r) => r.body.JSON)).toEqual([
    {
      partner: "RudderStack",
      attributes: [
        { city: "Disney", country: "USA", email: "mickey@disney.com", first_name: "Mickey", external_id: "user@50" },
        { country: "USA", external_id: "user@50" },
      ],
    },
  ]);
});

test("BRAZE deleteUsers → POST /users/delete {external_ids}, 50 per request, users without userId skipped", () => {
  const users = Array.from({ length: 51 }, (_, i) => ({ userId: `u${i}` }));
  const reqs = braze.deleteUsers!([...users, { userId: "" }], ctx({ dataCenter: "EU-01" }));
  expect(reqs).toHaveLength(2);
  expect(reqs[0]).toEqual({
    version: "1",
    type: "REST",
    method: "POST",
    endpoint: "https://rest.fra-01.braze.eu/users/delete",
    headers: { "Content-Type": "application/json", Authorization: "Bearer rest_key" },
    params: {},
    body: { JSON: { external_ids: users.slice(0, 50).map((u) => u.userId) }, JSON_ARRAY: {}, XML: {}, FORM: {} },
    files: {},
  });
  expect(reqs[1]!.body.JSON).toEqual({ external_ids: ["u50"] });
  expect(braze.deleteUsers!(users.slice(0, 1), ctx({ dataCenter: "AU-01" }))[0]!.endpoint).toBe("https://rest.au-01.braze.com/users/delete");
  // RudderStack's deleteUsers message when either key is missing.
  expect(() => braze.deleteUsers!([{ userId: "u" }], ctx({ restApiKey: "" }))).toThrow("data center / api key for deletion not present");
  expect(() => braze.deleteUsers!([{ userId: "u" }], ctx({ dataCenter: undefined }))).toThrow("data center / api key for deletion not present");
});

// rudder-transformer router/identityResolution.ts "batchedIdentify_success": two web identifies
// (context.traits, anonymousId and userId) → one /users/track with both attributes objects.
test("BRAZE RudderStack fixture: router batchedIdentify_success — identify → attributes email, first_name, last_name, external_id; alias merged by /users/identify", () => {
  const identify = (anon: string, user: string, traits: Record<string, string>): SluiceEvent => ({
    type: "identify",
    messageId: "m",
    anonymousId: anon,
    userId: user,
    integrations: { All: true },
    context: { traits, locale: "en-GB" },
    timestamp: "2019-10-14T09:03:17.562Z",
  });
  const config = { dataCenter: "eu-01", prefixProperties: true, useNativeSDK: false };
  const first = braze.transform(identify("e6ab2c5e", "user123", { email: "test@example.com", firstName: "John", lastName: "Doe" }), ctx(config));
  const second = braze.transform(identify("f7bc3d6f", "user456", { email: "test2@example.com", firstName: "Jane", lastName: "Smith" }), ctx(config));
  const EU = "https://rest.fra-01.braze.eu";
  expect(first[0]).toEqual(request(`${EU}/users/identify`, { aliases_to_identify: [{ user_alias: RUDDER_ALIAS("e6ab2c5e"), external_id: "user123" }], merge_behavior: "merge" }));
  expect(braze.batch!([first[1]!, second[1]!], ctx(config))).toEqual([
    request(`${EU}/users/track`, {
      partner: "RudderStack",
      attributes: [
        { email: "test@example.com", first_name: "John", last_name: "Doe", external_id: "user123" },
        { email: "test2@example.com", first_name: "Jane", last_name: "Smith", external_id: "user456" },
      ],
    }),
  ]);
});

// rudder-transformer processor/data.ts, transcribed: the web message of its Tests 0-3.
const webContext = {
  app: { build: "1.0.0", name: "RudderLabs JavaScript SDK", namespace: "com.rudderlabs.javascript", version: "1.0.5" },
  ip: "0.0.0.0",
  library: { name: "RudderLabs JavaScript SDK", version: "1.0.5" },
  locale: "en-GB",
  os: { name: "", version: "" },
  screen: { density: 2 },
};
const MICKEY_ANON = "e6ab2c5e-2cda-44a9-a962-e2f67df78bca";
const fixtureConfig = (dataCenter: string) => ({ dataCenter, prefixProperties: true, useNativeSDK: false });

test("BRAZE RudderStack fixture: processor Test 0: anonymous identify (userId '') → au-01 /users/track attributes: email, then the other traits as they come, null and 0 kept, on the rudder_id alias", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "2536eda4",
    anonymousId: MICKEY_ANON,
    userId: "",
    integrations: { All: true },
    context: { ...webContext, traits: { city: "Disney", country: "USA", email: "mickey@disney.com", firstname: "Mickey", closed_at: null, orderTotal: 0 } },
    timestamp: "2020-01-24T11:59:02.402+05:30",
  };
  expect(braze.transform(event, ctx(fixtureConfig("au-01")))).toEqual([
    request("https://rest.au-01.braze.com/users/track", {
      attributes: [
        {
          email: "mickey@disney.com",
          city: "Disney",
          country: "USA",
          firstname: "Mickey",
          closed_at: null,
          orderTotal: 0,
          _update_existing_only: false,
          user_alias: RUDDER_ALIAS(MICKEY_ANON),
        },
      ],
    }),
  ]);
  const attributes = (braze.transform(event, ctx(fixtureConfig("au-01")))[0]!.body.JSON as any).attributes[0];
  expect(Object.keys(attributes)).toEqual(["email", "city", "country", "firstname", "closed_at", "orderTotal", "_update_existing_only", "user_alias"]);
});

test("BRAZE RudderStack fixture: processor Test 1: identify with anonymousId and userId but no traits → refused 'No attributes found to update the user profile' (no /users/identify either)", () => {
  const event: SluiceEvent = { type: "identify", messageId: "2536eda4", anonymousId: MICKEY_ANON, userId: "mickeyMouse", integrations: { All: true }, context: webContext };
  expect(() => braze.transform(event, ctx(fixtureConfig("us-01")))).toThrow("No attributes found to update the user profile");
});

test("BRAZE RudderStack fixture: processor Tests 2-3: track → eu-01 /users/track event with all properties; context.traits add an attributes object", () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "a6a0ad5a",
    anonymousId: MICKEY_ANON,
    userId: "mickeyMouse",
    event: "braze revenue test",
    integrations: { All: true },
    context: webContext,
    properties: { currency: "USD", revenue: 50 },
    timestamp: "2020-01-24T11:59:02.403+05:30",
  };
  const EU_TRACK = "https://rest.fra-01.braze.eu/users/track";
  const revenueEvent = { name: "braze revenue test", time: "2020-01-24T11:59:02.403+05:30", properties: { currency: "USD", revenue: 50 }, external_id: "mickeyMouse" };
  expect(braze.transform(event, ctx(fixtureConfig("eu-01")))).toEqual([request(EU_TRACK, { partner: "RudderStack", events: [revenueEvent] })]);
  const withTraits = { ...event, context: { ...webContext, traits: { email: "mickey@disney.com", closed_at: null } } };
  expect(braze.transform(withTraits, ctx(fixtureConfig("eu-01")))).toEqual([
    request(EU_TRACK, { partner: "RudderStack", attributes: [{ email: "mickey@disney.com", closed_at: null, external_id: "mickeyMouse" }], events: [revenueEvent] }),
  ]);
});

test("BRAZE processor: Order Completed without traits → purchases only (product_id, price, currency, quantity, time, external_id); sku and extras dropped", () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "msg-order-completed-456",
    userId: "test-user-456",
    anonymousId: "anon-id-789",
    event: "Order Completed",
    properties: {
      order_id: "order-67890",
      currency: "USD",
      revenue: 200.0,
      shipping: 15.0,
      tax: 20.0,
      total: 235.0,
      products: [{ product_id: "product-002", sku: "SKU-002", name: "Deluxe Widget", price: 100.0, quantity: 2, category: "Electronics", currency: "USD" }],
    },
    timestamp: "2024-01-24T13:00:00.500Z",
  };
  expect(braze.transform(event, ctx())).toEqual([
    request(TRACK, {
      partner: "RudderStack",
      purchases: [{ product_id: "product-002", price: 100, currency: "USD", quantity: 2, time: "2024-01-24T13:00:00.500Z", external_id: "test-user-456" }],
    }),
  ]);
});

test("BRAZE RudderStack fixture: processor T-I-01 / T-I-06 (useEcommerceRecommendedEvents): anonymous web Product Viewed and Order Completed → ecommerce events with attributes and alias", () => {
  const TS = "2026-05-28T11:00:00.000+05:30";
  const message = (name: string, properties: Record<string, unknown>): SluiceEvent => ({
    type: "track",
    messageId: "msg-ecom-001",
    anonymousId: MICKEY_ANON,
    userId: "",
    event: name,
    integrations: { All: true },
    channel: "web",
    context: { ...webContext, ip: undefined, traits: { email: "mickey@disney.com", firstname: "Mickey" } },
    properties,
    timestamp: TS,
  } as SluiceEvent);
  const expected = (name: string, properties: Record<string, unknown>) => [
    request(TRACK, {
      partner: "RudderStack",
      attributes: [{ email: "mickey@disney.com", firstname: "Mickey", _update_existing_only: false, user_alias: RUDDER_ALIAS(MICKEY_ANON) }],
      events: [{ name, time: TS, properties, _update_existing_only: false, user_alias: RUDDER_ALIAS(MICKEY_ANON) }],
    }),
  ];
  const config = { ...fixtureConfig("us-01"), useEcommerceRecommendedEvents: true };
  expect(braze.transform(message("Product Viewed", { product_id: "sku_42", name: "Widget", variant: "red", price: 9.99, currency: "USD", category: "home" }), ctx(config))).toEqual(
    expected("ecommerce.product_viewed", { product_id: "sku_42", product_name: "Widget", variant_id: "red", price: 9.99, currency: "USD", source: "web", metadata: { category: "home" } }),
  );
  const order = {
    order_id: "ord_001",
    revenue: 99.99,
    currency: "USD",
    discount: 5,
    products: [{ product_id: "sku_42", name: "Widget", quantity: 1, price: 99.99, color: "blue" }],
    campaign_id: "spring26",
  };
  expect(braze.transform(message("Order Completed", order), ctx(config))).toEqual(
    expected("ecommerce.order_placed", {
      order_id: "ord_001",
      total_value: 99.99,
      currency: "USD",
      total_discounts: 5,
      source: "web",
      products: [{ product_id: "sku_42", product_name: "Widget", variant_id: "sku_42", quantity: 1, price: 99.99, metadata: { color: "blue" } }],
      metadata: { campaign_id: "spring26" },
    }),
  );
});

test("BRAZE RudderStack fixture: processor Test 6: anonymous track → gender woman → F, firstName → first_name, event_name dropped from the event's properties", () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "a6a0ad5a",
    anonymousId: MICKEY_ANON,
    userId: "",
    event: "braze revenue test",
    context: { ...webContext, traits: { city: "Disney", country: "USA", email: "mickey@disney.com", firstName: "Mickey", gender: "woman" } },
    properties: { currency: "USD", revenue: 50, event_name: "braze revenue test 2" },
    timestamp: "2020-01-24T11:59:02.403+05:30",
  };
  const anon = { _update_existing_only: false, user_alias: RUDDER_ALIAS(MICKEY_ANON) };
  expect(braze.transform(event, ctx({ ...fixtureConfig("eu-01"), enableNestedArrayOperations: false }))).toEqual([
    request("https://rest.fra-01.braze.eu/users/track", {
      partner: "RudderStack",
      attributes: [{ email: "mickey@disney.com", first_name: "Mickey", gender: "F", city: "Disney", country: "USA", ...anon }],
      events: [{ name: "braze revenue test", time: "2020-01-24T11:59:02.403+05:30", properties: { revenue: 50, currency: "USD" }, ...anon }],
    }),
  ]);
});

test("BRAZE RudderStack fixture: processor Tests 8, 9, 11: Order Completed without any currency refused; group traits.groupId → ab_rudder_group_1234; price 0 kept", () => {
  const base: SluiceEvent = {
    type: "track",
    messageId: "24ecc509",
    userId: "Randomuser2222",
    anonymousId: "c6ff1462-b692-43d6-8f6a-659efedc99ea",
    event: "Order Completed",
    context: { ...webContext, traits: { email: "manashi@gmaiol.com" } },
    properties: {
      products: [
        { sku: "45790-32", name: "Monopoly: 3rd Edition", price: 19, quantity: 1, currency78: "USD", product_id: "507f1f77bcf86cd799439011" },
        { sku: "46493-32", name: "Uno Card Game", price23: 3, quantity: 2, currency78: "USD", product_id: "505bd76785ebb509fc183733" },
      ],
    },
    originalTimestamp: "2020-09-14T12:09:37.491Z",
  };
  const EU = fixtureConfig("eu-01");
  expect(() => braze.transform(base, ctx(EU))).toThrow("Invalid Order Completed event: Message properties and product at index: 0 is missing currency");
  const group: SluiceEvent = { ...base, type: "group", properties: undefined, traits: { groupId: "1234" } };
  expect(braze.transform(group, ctx(EU))).toEqual([
    request("https://rest.fra-01.braze.eu/users/track", { attributes: [{ ab_rudder_group_1234: true, external_id: "Randomuser2222" }], partner: "RudderStack" }),
  ]);
  const free: SluiceEvent = {
    ...base,
    userId: "",
    anonymousId: MICKEY_ANON,
    context: { ...webContext, traits: { city: "Disney", country: "USA", email: "mickey@disney.com", firstname: "Mickey" } },
    properties: {
      currency: "USD",
      products: [
        { category: "Games", name: "Monopoly: 3rd Edition", price: 0, product_id: "507f1f77bcf86cd799439011", quantity: 1, sku: "45790-32" },
        { category: "Games", name: "Uno Card Game", price: 0, product_id: "505bd76785ebb509fc183733", quantity: 2, sku: "46493-32" },
      ],
    },
    timestamp: "2020-01-24T11:59:02.402+05:30",
  };
  const anon = { _update_existing_only: false, user_alias: RUDDER_ALIAS(MICKEY_ANON) };
  const purchase = (product_id: string, quantity: number) => ({ product_id, price: 0, currency: "USD", quantity, time: "2020-01-24T11:59:02.402+05:30", ...anon });
  expect(braze.transform(free, ctx(EU))[0]!.body.JSON).toEqual({
    attributes: [{ email: "mickey@disney.com", city: "Disney", country: "USA", firstname: "Mickey", ...anon }],
    purchases: [purchase("507f1f77bcf86cd799439011", 1), purchase("505bd76785ebb509fc183733", 2)],
    partner: "RudderStack",
  });
});

test("BRAZE RudderStack fixture: processor Test 10: reverse-ETL identify → attributes as given with external_id from context.externalId (the alias merge goes ahead of it)", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "2536eda4",
    anonymousId: MICKEY_ANON,
    userId: "",
    context: {
      ...webContext,
      mappedToDestination: true,
      externalId: [{ identifierType: "external_id", id: "mickey@disney.com" }],
      traits: { home_city: "Disney", country: "USA", first_name: "Mickey" },
    },
  };
  const requests = braze.transform(event, ctx(fixtureConfig("us-01")));
  expect(requests.map((r) => r.endpoint)).toEqual([`${US}/users/identify`, TRACK]);
  expect(requests[1]).toEqual(request(TRACK, { attributes: [{ home_city: "Disney", country: "USA", external_id: "mickey@disney.com", first_name: "Mickey" }] }));
});

test("BRAZE RudderStack fixture: processor Tests 13-14: enableNestedArrayOperations — update replaces the trait with $update (+ $add), arrays pass as they are, _merge_objects false", () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "d1e049af",
    anonymousId: MICKEY_ANON,
    userId: "finalUserTestCA",
    event: "braze revenue test",
    context: {
      ...webContext,
      traits: {
        cars: { add: [{ age: 27, id: 1, name: "abc" }], update: [{ age: 30, id: 2, identifier: "id", name: "abcd" }, { age: 27, id: 1, identifier: "id", name: "abcd" }] },
        city: "Disney",
        country: "USA",
        email: "mickey@disney.com",
        firstName: "Mickey",
        gender: "woman",
        pets: [{ breed: "beagle", id: 1, name: "Gus", type: "dog" }, { breed: "calico", id: 2, name: "Gerald", type: "cat" }],
      },
    },
    properties: { currency: "USD", mergeObjectsUpdateOperation: false, revenue: 50 },
    timestamp: "2023-03-14T02:13:10.518+05:30",
  };
  expect(bodyOf(event, { dataCenter: "eu-01", enableNestedArrayOperations: true })).toEqual({
    partner: "RudderStack",
    attributes: [
      {
        email: "mickey@disney.com",
        first_name: "Mickey",
        gender: "F",
        cars: {
          $update: [
            { $identifier_key: "id", $identifier_value: 2, $new_object: { age: 30, name: "abcd" } },
            { $identifier_key: "id", $identifier_value: 1, $new_object: { age: 27, name: "abcd" } },
          ],
          $add: [{ age: 27, id: 1, name: "abc" }],
        },
        city: "Disney",
        country: "USA",
        pets: [{ breed: "beagle", id: 1, name: "Gus", type: "dog" }, { breed: "calico", id: 2, name: "Gerald", type: "cat" }],
        _merge_objects: false,
        external_id: "finalUserTestCA",
      },
    ],
    events: [
      { name: "braze revenue test", time: "2023-03-14T02:13:10.518+05:30", properties: { mergeObjectsUpdateOperation: false, revenue: 50, currency: "USD" }, external_id: "finalUserTestCA" },
    ],
  });
});

test("BRAZE RudderStack fixture: processor Tests 20, 25, 29: email lower-cased, a non-string email refused, the alias option merged by an identify without anonymousId", () => {
  const traits = { email: "A@HOTMAIL.COM", phone: "9988123321", firstName: "anil", lastName: "kumar", gender: null, birthday: "01/01/1971", bio: "Tech", company: null };
  const identify: SluiceEvent = { type: "identify", messageId: "m", userId: "ank101", context: { traits } };
  expect(bodyOf(identify)).toEqual({
    attributes: [{ dob: "01/01/1971", email: "a@hotmail.com", first_name: "anil", gender: null, last_name: "kumar", phone: "9988123321", bio: "Tech", company: null, external_id: "ank101" }],
  });
  const badEmail: SluiceEvent = { type: "identify", messageId: "m", anonymousId: MICKEY_ANON, userId: "", context: { traits: { city: "Disney", email: 123, closed_at: null, orderTotal: 0 } } };
  expect(() => braze.transform(badEmail, ctx())).toThrow("Invalid email, email must be a valid string");
  const aliased: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "mickeyUser",
    integrations: { All: true, Braze: { alias: { alias_label: "email", alias_name: "micky@example.com" } } },
    context: { traits: { city: "Disney", country: "USA", email: "micky@example.com", firstname: "Mickey" } },
  };
  expect(braze.transform(aliased, ctx())).toEqual([
    request(`${US}/users/identify`, { aliases_to_identify: [{ user_alias: { alias_name: "micky@example.com", alias_label: "email" }, external_id: "mickeyUser" }], merge_behavior: "merge" }),
    request(TRACK, { attributes: [{ email: "micky@example.com", city: "Disney", country: "USA", firstname: "Mickey", external_id: "mickeyUser" }] }),
  ]);
});

test("BRAZE RudderStack fixture: processor Tests 22, 23, 32: subscription groups — phone wins over email, external_ids only for a userId", () => {
  const group = (extra: Partial<SluiceEvent>): SluiceEvent => ({ type: "group", messageId: "m", groupId: "1234", anonymousId: "c6ff1462", context: { traits: { email: "manashi@gmaiol.com" } }, ...extra });
  const config = { dataCenter: "eu-01", enableSubscriptionGroupInGroupCall: true };
  const SET = "https://rest.fra-01.braze.eu/v2/subscription/status/set";
  const groups = (g: Record<string, unknown>) => [request(SET, { subscription_groups: [{ subscription_group_id: "1234", ...g }] })];
  expect(braze.transform(group({ userId: "Randomuser2222", traits: { phone: "5055077683", subscriptionState: "subscribed" } }), ctx(config))).toEqual(
    groups({ subscription_state: "subscribed", external_ids: ["Randomuser2222"], phones: ["5055077683"] }),
  );
  expect(braze.transform(group({ userId: "Randomuser2222", traits: { email: "abc@test.com", subscriptionState: "unsubscribed" } }), ctx(config))).toEqual(
    groups({ subscription_state: "unsubscribed", external_ids: ["Randomuser2222"], emails: ["abc@test.com"] }),
  );
  expect(braze.transform(group({ traits: { email: "abc@test.com", subscriptionState: "unsubscribed" } }), ctx(config))).toEqual(
    groups({ subscription_state: "unsubscribed", emails: ["abc@test.com"] }),
  );
});

test("BRAZE RudderStack fixture: processor Tests 24, 26, 28, 30, 31: integrations.braze.appId, purchase extra properties with email null, alias option on track, null products skipped", () => {
  const appEvent = trackE({ userId: "mickeyMouse", event: "braze revenue test", integrations: { All: true, braze: { appId: "123" } }, properties: { currency: "USD", revenue: 50 } });
  expect(bodyOf(appEvent).events).toEqual([{ name: "braze revenue test", time: ts, properties: { revenue: 50, currency: "USD" }, external_id: "mickeyMouse", app_id: "123" }]);

  const anon = { _update_existing_only: false, user_alias: RUDDER_ALIAS(MICKEY_ANON) };
  const order = trackE({
    userId: "",
    anonymousId: MICKEY_ANON,
    event: "Order Completed",
    context: { traits: { city: "Disney", country: "USA", email: null, firstname: "Mickey" } },
    properties: {
      currency: "USD",
      order_id: "50314b8e9bcf000000000000",
      products: [
        { category: "Games", image_url: "https:///img.jpg", name: "Monopoly", price: 0, product_id: "507f1f77bcf86cd799439023", quantity: 1, sku: "45790-32", url: "https://p" },
        { category: "Games", name: "Uno Card Game", price: 0, product_id: "505bd76785ebb509fc183724", quantity: 2, sku: "46493-32" },
      ],
    },
  });
  expect(bodyOf(order, { sendPurchaseEventWithExtraProperties: true })).toEqual({
    attributes: [{ city: "Disney", country: "USA", email: null, firstname: "Mickey", ...anon }],
    partner: "RudderStack",
    purchases: [
      { product_id: "507f1f77bcf86cd799439023", price: 0, currency: "USD", quantity: 1, time: ts, properties: { category: "Games", image_url: "https:///img.jpg", name: "Monopoly", url: "https://p" }, ...anon },
      { product_id: "505bd76785ebb509fc183724", price: 0, currency: "USD", quantity: 2, time: ts, properties: { category: "Games", name: "Uno Card Game" }, ...anon },
    ],
  });

  const emailAlias = { alias_name: "micky@example.com", alias_label: "email" };
  const aliased = trackE({
    userId: "",
    anonymousId: MICKEY_ANON,
    event: "Test Event",
    integrations: { All: true, Braze: { alias: { alias_label: "email", alias_name: "micky@example.com" } } },
    context: { traits: { email: "micky@example.com" } },
    properties: { coupon: "hasbros", currency: "USD" },
  });
  expect(bodyOf(aliased)).toEqual({
    partner: "RudderStack",
    attributes: [{ email: "micky@example.com", _update_existing_only: false, user_alias: emailAlias }],
    events: [{ name: "Test Event", time: ts, properties: { coupon: "hasbros", currency: "USD" }, _update_existing_only: false, user_alias: emailAlias }],
  });

  const nullFirst = trackE({ event: "Order Completed", properties: { products: [null, { price: 19, quantity: 1, currency78: "USD", product_id: "507f" }] } });
  expect(() => braze.transform(nullFirst, ctx())).toThrow("Invalid Order Completed event: Message properties and product at index: 0 is missing currency");
  expect(() => braze.transform(trackE({ event: "Order Completed", properties: { products: [undefined] } }), ctx())).toThrow("Invalid Order Completed event: Products array is empty");
});

test("BRAZE RudderStack fixture: processor T-I-02/03/05/07/08 (useEcommerceRecommendedEvents): cart_updated add/remove, checkout_started, order_refunded, order_cancelled", () => {
  const TS = "2026-05-28T11:00:00.000+05:30";
  const props = (name: string, properties: Record<string, unknown>) => {
    const event = { type: "track", messageId: "m", anonymousId: MICKEY_ANON, userId: "", event: name, channel: "web", context: { traits: { email: "mickey@disney.com", firstname: "Mickey" } }, properties, timestamp: TS } as SluiceEvent;
    const body = bodyOf(event, { useEcommerceRecommendedEvents: true });
    expect(body.attributes).toEqual([{ email: "mickey@disney.com", firstname: "Mickey", _update_existing_only: false, user_alias: RUDDER_ALIAS(MICKEY_ANON) }]);
    expect(body.events).toHaveLength(1);
    return [body.events[0].name, body.events[0].properties];
  };
  const widget = (quantity: number, price: number) => [{ product_id: "sku_42", product_name: "Widget", variant_id: "sku_42", quantity, price }];
  const cart = { cart_id: "cart_001", currency: "USD", product_id: "sku_42", name: "Widget", price: 9.99 };
  expect(props("Product Added", { ...cart, quantity: 2 })).toEqual(["ecommerce.cart_updated", { cart_id: "cart_001", currency: "USD", action: "add", source: "web", products: widget(2, 9.99) }]);
  expect(props("Product Removed", { ...cart, quantity: 1 })).toEqual(["ecommerce.cart_updated", { cart_id: "cart_001", currency: "USD", action: "remove", source: "web", products: widget(1, 9.99) }]);
  const products = [{ product_id: "sku_42", name: "Widget", quantity: 1, price: 99.99 }];
  expect(props("Checkout Started", { order_id: "ord_001", revenue: 99.99, currency: "USD", tax: 5, shipping: 3, products })).toEqual([
    "ecommerce.checkout_started",
    { checkout_id: "ord_001", total_value: 99.99, currency: "USD", tax: 5, shipping: 3, source: "web", products: widget(1, 99.99) },
  ]);
  expect(props("Order Refunded", { order_id: "ord_001" })).toEqual(["ecommerce.order_refunded", { order_id: "ord_001", source: "web" }]);
  expect(props("Order Cancelled", { order_id: "ord_001", total: 99.99, currency: "USD", cancel_reason: "out_of_stock", products })).toEqual([
    "ecommerce.order_cancelled",
    { order_id: "ord_001", total_value: 99.99, currency: "USD", cancel_reason: "out_of_stock", source: "web", products: widget(1, 99.99) },
  ]);
  expect(props("Order Cancelled", { order_id: "ord_001", total: 99.99, currency: "USD", products })).toEqual([
    "ecommerce.order_cancelled",
    { order_id: "ord_001", total_value: 99.99, currency: "USD", source: "web", products: widget(1, 99.99) },
  ]);
});

let sluice: TestServer;
const sink = startSink(() => new Response('{"message":"success"}'));
beforeAll(async () => {
  sluice = await startSluice({ args: ["--destination-base-url", `BRAZE=${sink.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await sluice.stop();
  sink.stop();
  cleanup(sluice.dataDir);
});

test("BRAZE end to end: identify merges the alias first, several users' tracks arrive in fewer /users/track calls, per-user order kept", async () => {
  const src = await createSource(sluice.url);
  const config = { restApiKey: "e2e-key", dataCenter: "US-03" };
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: "braze-e2e", type: "BRAZE", config, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const batch: any[] = [{ type: "identify", userId: "bz-1", anonymousId: "anon-1", traits: { email: "BZ1@example.com", plan: "pro" } }];
  for (const user of ["bz-1", "bz-2"]) for (let k = 0; k < 3; k++) batch.push({ type: "track", userId: user, event: `step ${k}`, properties: { k } });
  expect((await sendEvent(sluice.url, src.writeKey, "batch", { batch })).status).toBe(200);
  const mine = () => sink.received.filter((r) => r.headers.authorization === "Bearer e2e-key");
  const events = () => mine().flatMap((r) => r.body?.events ?? []);
  await waitFor(() => events().length >= 6, { what: "6 events at the Braze stand-in" });
  const identify = mine().find((r) => r.path === "/users/identify");
  expect(identify?.body).toEqual({ aliases_to_identify: [{ user_alias: { alias_name: "anon-1", alias_label: "rudder_id" }, external_id: "bz-1" }], merge_behavior: "merge" });
  const tracks = mine().filter((r) => r.path === "/users/track");
  expect(tracks.every((r) => r.method === "POST" && r.headers["content-type"] === "application/json")).toBe(true);
  expect(tracks.length).toBeLessThan(7);
  expect(mine().indexOf(identify!)).toBeLessThan(mine().indexOf(tracks[0]!));
  const attributes = tracks.flatMap((r) => r.body.attributes ?? []);
  expect(attributes).toContainEqual({ email: "bz1@example.com", plan: "pro", external_id: "bz-1" });
  for (const user of ["bz-1", "bz-2"]) {
    expect(events().filter((e: any) => e.external_id === user).map((e: any) => e.name)).toEqual(["step 0", "step 1", "step 2"]);
  }
});

test("BRAZE end to end: suppress_with_delete → POST /users/delete {external_ids}; the deletion completes", async () => {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: "braze-del", type: "BRAZE", config: { restApiKey: "del-key", dataCenter: "EU-01" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const reg = await api(sluice.url, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [dst.json.id], users: [{ userId: "gone-bz-1" }] });
  expect(reg.status).toBe(201);
  const call = await waitFor(() => sink.received.find((r) => r.path === "/users/delete" && r.body?.external_ids?.includes("gone-bz-1")), { what: "the deletion call" });
  expect(call.method).toBe("POST");
  expect(call.headers.authorization).toBe("Bearer del-key");
  expect(call.body).toEqual({ external_ids: ["gone-bz-1"] });
  const deletionOf = async () => {
    const list = (await api(sluice.url, "GET", "/v2/regulations")).json;
    const items: any[] = Array.isArray(list) ? list : (list.regulations ?? list.items ?? list.data ?? []);
    return items.find((r) => JSON.stringify(r).includes("gone-bz-1"))?.deletion;
  };
  await waitFor(async () => (await deletionOf())?.[0]?.status === "complete", { what: "deletion complete" });
});

// More of rudder-transformer's Braze fixtures: processor/data.ts (00c23e5e…) Tests 4, 5, 7, 15-19
// and router/data.ts (0b943e3f…) "simple router tests" and the anonymous subscription batch.
test("BRAZE RudderStack fixture: processor Tests 4-5 — anonymous page → Page Viewed on the alias; anonymous identify → attributes only (no partner, no /users/identify)", () => {
  const page: SluiceEvent = {
    type: "page",
    messageId: "dd266c67",
    anonymousId: MICKEY_ANON,
    userId: "",
    context: { ...webContext, traits: {} },
    properties: { path: "/tests/html/index2.html", referrer: "", search: "", title: "", url: "http://localhost/tests/html/index2.html" },
    timestamp: "2020-01-24T11:59:02.402+05:30",
  };
  expect(braze.transform(page, ctx(fixtureConfig("eu-01")))).toEqual([
    request("https://rest.fra-01.braze.eu/users/track", {
      partner: "RudderStack",
      events: [{ name: "Page Viewed", time: "2020-01-24T11:59:02.402+05:30", properties: page.properties, _update_existing_only: false, user_alias: RUDDER_ALIAS(MICKEY_ANON) }],
    }),
  ]);
  const identify: SluiceEvent = {
    type: "identify",
    messageId: "2536eda4",
    anonymousId: MICKEY_ANON,
    userId: "",
    context: { ...webContext, traits: { city: "Disney", country: "USA", email: "mickey@disney.com", firstname: "Mickey" } },
    timestamp: "2020-01-24T11:59:02.402+05:30",
  };
  expect(braze.transform(identify, ctx(fixtureConfig("us-01")))).toEqual([
    request(TRACK, {
      attributes: [{ city: "Disney", country: "USA", email: "mickey@disney.com", firstname: "Mickey", _update_existing_only: false, user_alias: RUDDER_ALIAS(MICKEY_ANON) }],
    }),
  ]);
});

test("BRAZE RudderStack fixture: processor Test 7 — 'KM Order Completed' is a custom event (only the exact name makes purchases)", () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "aa5f5e44",
    anonymousId: MICKEY_ANON,
    userId: "",
    event: "KM Order Completed",
    context: webContext,
    properties: { currency: "USD", products: [{ product_id: "507f1f77bcf86cd799439011", price: 19, quantity: 1 }], revenue: 25 },
    timestamp: "2020-01-24T11:59:02.402+05:30",
  };
  const body = bodyOf(event, fixtureConfig("eu-01"));
  expect(body.purchases).toBeUndefined();
  expect(body.events).toEqual([
    { name: "KM Order Completed", time: "2020-01-24T11:59:02.402+05:30", properties: event.properties, _update_existing_only: false, user_alias: RUDDER_ALIAS(MICKEY_ANON) },
  ]);
});

test("BRAZE RudderStack fixture: processor Tests 15-16 — identify standard attributes (country, dob, home_city, image_url, gender M) beside custom ones; null gender and null custom traits kept", () => {
  const traits = {
    address: { city: "Mathura", country: "India" },
    email: "a@gmail.com",
    phone: "9988123321",
    firstName: "anuj",
    lastName: "kumar",
    gender: "male",
    birthday: "01/01/1971",
    avatar: "https://i.kym-cdn.com/entries/icons/mobile/000/034/772/anuj-1.jpg",
    bio: "Tech and tension go together",
    language: "en-IN",
    job: "Director",
    company: "Plinth India",
  };
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: "ank101", context: { ...webContext, traits } };
  const expected = {
    country: "India",
    dob: "01/01/1971",
    email: "a@gmail.com",
    first_name: "anuj",
    gender: "M",
    home_city: "Mathura",
    image_url: traits.avatar,
    last_name: "kumar",
    phone: "9988123321",
    bio: "Tech and tension go together",
    language: "en-IN",
    job: "Director",
    company: "Plinth India",
    external_id: "ank101",
  };
  expect(braze.transform(event, ctx(fixtureConfig("us-01")))).toEqual([request(TRACK, { attributes: [expected] })]);
  const nulls = { ...event, context: { ...webContext, traits: { ...traits, gender: null, company: null } } };
  expect(braze.transform(nulls, ctx(fixtureConfig("us-01")))).toEqual([request(TRACK, { attributes: [{ ...expected, gender: null, company: null }] })]);
});

test("BRAZE RudderStack fixture: processor Tests 17-19 — alias → US-03 /users/merge; a missing previousId or userId refused in RudderStack's words", () => {
  const alias: SluiceEvent = { type: "alias", messageId: "m", previousId: "userId", userId: "userMergeTest2", context: webContext };
  expect(braze.transform(alias, ctx(fixtureConfig("US-03")))).toEqual([
    request("https://rest.iad-03.braze.com/users/merge", {
      merge_updates: [{ identifier_to_merge: { external_id: "userId" }, identifier_to_keep: { external_id: "userMergeTest2" } }],
    }),
  ]);
  expect(() => braze.transform({ ...alias, previousId: undefined }, ctx(fixtureConfig("US-03")))).toThrow("[BRAZE]: previousId is required for alias call");
  expect(() => braze.transform({ ...alias, userId: undefined, previousId: "userMergeTest2" }, ctx(fixtureConfig("US-03")))).toThrow("[BRAZE]: userId is required for alias call");
});

test("BRAZE RudderStack fixture: router 'simple router tests' — page + anonymous identify in one /users/track, subscriptions and merges batched in the order the events came", () => {
  const config = { ...fixtureConfig("eu-01"), enableSubscriptionGroupInGroupCall: true };
  const group = (anon: string, groupId: string, userId: string): SluiceEvent => ({
    type: "group",
    messageId: "g",
    anonymousId: anon,
    groupId,
    traits: { phone: "5055077683", subscriptionState: "subscribed" },
    userId,
  });
  const events: SluiceEvent[] = [
    {
      type: "page",
      messageId: "dd266c67",
      anonymousId: MICKEY_ANON,
      userId: "",
      context: { ...webContext, traits: {} },
      properties: { path: "/tests/html/index2.html", url: "http://localhost/tests/html/index2.html" },
      timestamp: "2020-01-24T11:59:02.402+05:30",
    },
    {
      type: "identify",
      messageId: "2536eda4",
      anonymousId: MICKEY_ANON,
      userId: "",
      context: { ...webContext, traits: { city: "Disney", country: "USA", email: "mickey@disney.com", firstname: "Mickey" } },
      timestamp: "2020-01-24T11:59:02.402+05:30",
    },
    group("56yrtsdfgbgxcb", "c90f0fd2-2a02-4f2f-bf07-7e7d2c2ed2b1", "user123"),
    group("dfgdfgdfg", "58d0a278-b55b-4f10-b7d2-98d1c5dd4c30", "user877"),
    { type: "alias", messageId: "a1", previousId: "adsfsaf", userId: "dsafsdf" },
    { type: "alias", messageId: "a2", previousId: "adsfsaf2", userId: "dsafsdf2" },
    group("56yrtsdfgbgxcb-afdf", "c90f0fd2-2a02-4f2f-bf07-7e7d2c2ed2b1", "user12345"),
  ];
  // RudderStack's router batch holds jobs of one user (metadata userId u1): its order is kept.
  const requests = events.flatMap((e) => braze.transform(e, ctx(config))).map((r) => ({ ...r, userKey: "u1" }));
  const EU = "https://rest.fra-01.braze.eu";
  const sub = (groups: Array<[string, string]>) =>
    request(`${EU}/v2/subscription/status/set`, {
      subscription_groups: groups.map(([id, user]) => ({ subscription_group_id: id, subscription_state: "subscribed", phones: ["5055077683"], external_ids: [user] })),
    });
  const batched = braze.batch!(requests, ctx(config)).map(({ userKey: _u, ...r }) => r);
  expect(batched).toEqual([
    request(`${EU}/users/track`, {
      partner: "RudderStack",
      attributes: [{ email: "mickey@disney.com", city: "Disney", country: "USA", firstname: "Mickey", _update_existing_only: false, user_alias: RUDDER_ALIAS(MICKEY_ANON) }],
      events: [{ name: "Page Viewed", time: "2020-01-24T11:59:02.402+05:30", properties: events[0]!.properties, _update_existing_only: false, user_alias: RUDDER_ALIAS(MICKEY_ANON) }],
    }),
    sub([
      ["c90f0fd2-2a02-4f2f-bf07-7e7d2c2ed2b1", "user123"],
      ["58d0a278-b55b-4f10-b7d2-98d1c5dd4c30", "user877"],
    ]),
    request(`${EU}/users/merge`, {
      merge_updates: [
        { identifier_to_merge: { external_id: "adsfsaf" }, identifier_to_keep: { external_id: "dsafsdf" } },
        { identifier_to_merge: { external_id: "adsfsaf2" }, identifier_to_keep: { external_id: "dsafsdf2" } },
      ],
    }),
    sub([["c90f0fd2-2a02-4f2f-bf07-7e7d2c2ed2b1", "user12345"]]),
  ]);
});

test("BRAZE RudderStack fixture: router — anonymous subscription changes of one group and state → one entry with both emails, no external_ids", () => {
  const config = { ...fixtureConfig("eu-01"), enableSubscriptionGroupInGroupCall: true };
  const group = (email: string, user: string): DestinationRequest => ({
    ...braze.transform(
      { type: "group", messageId: "m", anonymousId: "c6ff1462", groupId: "1234", traits: { email, subscriptionState: "unsubscribed" }, context: { traits: { email: "manashi@gmaiol.com" } } },
      ctx(config),
    )[0]!,
    userKey: user,
  });
  const batched = braze.batch!([group("abc@test.com", "u1"), group("abc1@test.com", "u2")], ctx(config));
  expect(batched.map((r) => r.body.JSON)).toEqual([
    { subscription_groups: [{ subscription_group_id: "1234", subscription_state: "unsubscribed", emails: ["abc@test.com", "abc1@test.com"] }] },
  ]);
});
