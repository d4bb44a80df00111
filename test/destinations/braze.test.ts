import { afterAll, beforeAll, expect, test } from "bun:test";
import { type TestServer, api, cleanup, createSource, lookupContext, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";
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
/**
 * A stand-in answering every call as Braze answers success; identify merges are calls the
 * transform makes to it (through a context from `standIn`), and the Sluice below sends to it.
 * braze-lookups.test.ts has a stand-in that keeps users, for the lookups themselves.
 */
const sink = startSink(() => Response.json({ message: "success" }, { status: 201 }));
/** A context whose lookup client reaches the stand-in: the requests' endpoints start with its URL. */
const standIn = (config: Record<string, any> = {}) => lookupContext({ restApiKey: "rest_key", dataCenter: "US-01", ...config }, sink.url);
/** The /users/identify bodies the stand-in got since `from`. */
const mergesSince = (from: number) => sink.received.slice(from).filter((r) => r.path === "/users/identify").map((r) => r.body);
const merged = (alias: unknown, external_id: string) => ({ aliases_to_identify: [{ user_alias: alias, external_id }], merge_behavior: "merge" });
const STAND_TRACK = () => `${sink.url}/users/track`;

const bodyOf = async (event: SluiceEvent, config: Record<string, any> = {}) => (await braze.transform(event, ctx(config)))[0]!.body.JSON as Record<string, any>;

test("BRAZE dataCenter → REST instance: US-0N → iad, EU-0N → fra (.eu), AU-0N → au; anything else is refused", async () => {
  expect(brazeBaseUrl("US-01")).toBe("https://rest.iad-01.braze.com");
  expect(brazeBaseUrl("us-05")).toBe("https://rest.iad-05.braze.com");
  expect(brazeBaseUrl(" EU-02 ")).toBe("https://rest.fra-02.braze.eu");
  expect(brazeBaseUrl("AU-01")).toBe("https://rest.au-01.braze.com");
  expect(() => brazeBaseUrl("XX-01")).toThrow("Invalid Data Center: XX-01, valid values are EU, US, AU");
  expect(() => brazeBaseUrl("US")).toThrow("Invalid Data Center");
  const event = trackE();
  await expect(braze.transform(event, ctx({ dataCenter: "JP-01" }))).rejects.toThrow("Invalid Data Center: JP-01");
});

test("BRAZE track → POST /users/track: custom event with every property but time/event_name, traits as attributes", async () => {
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
  expect((await braze.transform(event, ctx()))).toEqual([
    request(TRACK, {
      partner: "RudderStack",
      attributes: [{ email: "ada@example.com", plan: "pro", external_id: "u-1" }],
      events: [{ name: "Song Played", time: ts, properties: { song: "Blue", price: 3, currency: "USD", revenue: 3 }, external_id: "u-1" }],
    }),
  ]);
});

test("BRAZE anonymous track → user_alias (rudder_id, or integrations.Braze.alias) with _update_existing_only false", async () => {
  const event = trackE({ anonymousId: "a-9", userId: "" });
  expect((await bodyOf(event))).toEqual({
    partner: "RudderStack",
    events: [{ name: "E", time: ts, properties: {}, _update_existing_only: false, user_alias: RUDDER_ALIAS("a-9") }],
  });
  const withAlias = { ...event, integrations: { All: true, Braze: { alias: { alias_name: "ada@example.com", alias_label: "email" } } } };
  expect((await bodyOf(withAlias)).events[0].user_alias).toEqual({ alias_name: "ada@example.com", alias_label: "email" });
  // An alias missing its label is not used.
  const halfAlias = { ...event, integrations: { Braze: { alias: { alias_name: "x" } } } };
  expect((await bodyOf(halfAlias)).events[0].user_alias).toEqual(RUDDER_ALIAS("a-9"));
});

test("BRAZE external_id: context.externalId brazeExternalId wins over userId; integrations.Braze.appId → app_id", async () => {
  const event = trackE({ context: { externalId: [{ type: "brazeExternalId", id: "bz-1" }] }, integrations: { All: true, braze: { appId: 123 } } });
  expect((await bodyOf(event)).events).toEqual([{ name: "E", time: ts, properties: {}, external_id: "bz-1", app_id: "123" }]);
  // A brazeExternalId alone makes the event identified.
  expect((await bodyOf({ ...event, userId: undefined })).events[0]).toMatchObject({ external_id: "bz-1" });
  expect((await bodyOf({ ...event, userId: undefined })).events[0]._update_existing_only).toBeUndefined();
});

test("BRAZE Order Completed → purchases (one per product, nulls skipped) with the traits as attributes", async () => {
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
  expect((await braze.transform(event, ctx()))).toEqual([
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
  const extra = (await bodyOf(event, { sendPurchaseEventWithExtraProperties: true })).purchases;
  expect(extra.map((p: any) => p.properties)).toEqual([{ name: "Tea" }, undefined]);
  // Product currency when the order has none.
  const noOrderCurrency = { ...event, properties: { products: [{ sku: "s2", price: 1, quantity: 1, currency: "USD" }] } };
  expect((await bodyOf(noOrderCurrency)).purchases[0].currency).toBe("USD");
});

test("BRAZE Order Completed validation: RudderStack's messages, indexes counted after nulls are skipped", async () => {
  const base = trackE({ event: "order completed" });
  const run = (properties: unknown, extra: Partial<SluiceEvent> = {}) => expect(braze.transform({ ...base, properties, ...extra }, ctx())).rejects;
  await run(undefined).toThrow("Invalid Order Completed event: Products array is missing in the message");
  await run({ products: {} }).toThrow("Invalid Order Completed event: Products is not an array");
  await run({ products: [null] }).toThrow("Invalid Order Completed event: Products array is empty");
  await run({ products: [{ product_id: "p" }] }, { timestamp: undefined }).toThrow("Timestamp is missing in the message");
  await run({ products: [null, { price: 1, quantity: 1 }] }).toThrow("Product Id is missing for product at index: 0");
  await run({ products: [{ product_id: "p", quantity: 1 }] }).toThrow("Price is missing for product at index: 0");
  await run({ products: [{ product_id: "p", price: 1 }] }).toThrow("Quantity is missing for product at index: 0");
  await run({ products: [null, { product_id: "p", price: 1, quantity: 1 }] }).toThrow(
    "Invalid Order Completed event: Message properties and product at index: 0 is missing currency",
  );
});

test("BRAZE page / screen → custom event named by name, properties.name, else Page Viewed / Screen Viewed", async () => {
  const page: SluiceEvent = { type: "page", messageId: "p", userId: "u-1", name: "Pricing", timestamp: ts, properties: { path: "/pricing", title: "" } };
  expect((await braze.transform(page, ctx()))).toEqual([
    request(TRACK, { partner: "RudderStack", events: [{ name: "Pricing", time: ts, properties: { path: "/pricing", title: "" }, external_id: "u-1" }] }),
  ]);
  expect((await bodyOf({ ...page, name: undefined })).events[0].name).toBe("Page Viewed");
  expect((await bodyOf({ ...page, name: undefined, properties: { name: "Home" } })).events[0].name).toBe("Home");
  const screen: SluiceEvent = { type: "screen", messageId: "s", userId: "u-1", timestamp: ts };
  expect((await bodyOf(screen)).events[0].name).toBe("Screen Viewed");
  // Only a track "Order Completed" is a purchase.
  expect((await bodyOf({ ...page, name: "Order Completed" })).events[0].name).toBe("Order Completed");
});

test("BRAZE identify with anonymousId → a /users/identify call merging the rudder_id alias, then the /users/track attributes as the request", async () => {
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
  const from = sink.received.length;
  expect(await braze.transform(event, standIn())).toEqual([
    request(STAND_TRACK(), {
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
  expect(mergesSince(from)).toEqual([merged(RUDDER_ALIAS("a-1"), "u-1")]);
  const merge = sink.received.findLast((r) => r.path === "/users/identify")!;
  expect(merge.headers).toMatchObject({ authorization: "Bearer rest_key", "content-type": "application/json", accept: "application/json" });
});

test("BRAZE identify corner cases: alias option, no traits, nulls, bad email, anonymous, reverse ETL", async () => {
  // The sender's alias is merged even without an anonymousId.
  const aliased: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "u-1",
    integrations: { Braze: { alias: { alias_name: "ada@example.com", alias_label: "email" } } },
    traits: { plan: "pro" },
  };
  let from = sink.received.length;
  expect((await braze.transform(aliased, standIn()))[0]!.body.JSON).toEqual({ attributes: [{ plan: "pro", external_id: "u-1" }] });
  expect(mergesSince(from)).toEqual([merged({ alias_name: "ada@example.com", alias_label: "email" }, "u-1")]);
  // No traits, or a bad email: refused with RudderStack's message, after the alias was merged
  // (RudderStack merges before it reads the traits).
  const bare: SluiceEvent = { type: "identify", messageId: "m", userId: "u-1", anonymousId: "a-1", context: { traits: {} } };
  from = sink.received.length;
  await expect(braze.transform(bare, standIn())).rejects.toThrow("No attributes found to update the user profile");
  await expect(braze.transform({ ...bare, context: {} }, standIn())).rejects.toThrow("No attributes found to update the user profile");
  await expect(braze.transform({ ...bare, traits: { email: 123 } }, standIn())).rejects.toThrow("Invalid email, email must be a valid string");
  expect(mergesSince(from)).toEqual([merged(RUDDER_ALIAS("a-1"), "u-1"), merged(RUDDER_ALIAS("a-1"), "u-1"), merged(RUDDER_ALIAS("a-1"), "u-1")]);
  // Without an alias to merge, nothing is called.
  from = sink.received.length;
  await expect(braze.transform({ ...bare, anonymousId: undefined }, standIn())).rejects.toThrow("No attributes found to update the user profile");
  expect(sink.received.length).toBe(from);
  // Explicit nulls clear email, gender and phone; other standard attributes drop them.
  const nulls: SluiceEvent = { type: "identify", messageId: "m", userId: "u", traits: { email: null, gender: null, phone: null, firstName: null, job: null } };
  expect((await braze.transform(nulls, ctx()))[0]!.body.JSON).toEqual({ attributes: [{ email: null, gender: null, phone: null, job: null, external_id: "u" }] });
  await expect(braze.transform({ ...nulls, traits: { email: 123 } }, ctx())).rejects.toThrow("Invalid email, email must be a valid string");
  // Anonymous identify: no merge, attributes on the alias.
  const anon: SluiceEvent = { type: "identify", messageId: "m", userId: "", anonymousId: "a-1", context: { traits: { city: "Disney", gender: "x" } } };
  expect((await braze.transform(anon, ctx()))).toEqual([
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
  from = sink.received.length;
  const requests = await braze.transform(retl, standIn());
  expect(requests.map((r) => r.body.JSON)).toEqual([{ attributes: [{ first_name: "Mickey", home_city: "Disney", external_id: "ext-1" }] }]);
  expect(mergesSince(from)).toEqual([merged(RUDDER_ALIAS("a-1"), "ext-1")]);
});

test("BRAZE enableNestedArrayOperations: object traits {update, remove, add} → {$update, $remove, $add} and _merge_objects", async () => {
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
  expect((await bodyOf(event, { enableNestedArrayOperations: true })).attributes).toEqual([expected]);
  expect((await bodyOf({ ...event, properties: {} }, { enableNestedArrayOperations: true })).attributes[0]._merge_objects).toBe(false);
  // Off: the traits go as they are.
  expect((await bodyOf(event)).attributes[0].pets).toEqual(pets);
});

test("BRAZE group → ab_rudder_group_<id> attribute on /users/track", async () => {
  const event: SluiceEvent = { type: "group", messageId: "g", userId: "u-1", traits: { groupId: "1234" } };
  expect((await braze.transform(event, ctx()))).toEqual([request(TRACK, { attributes: [{ ab_rudder_group_1234: true, external_id: "u-1" }], partner: "RudderStack" })]);
  await expect(braze.transform({ ...event, traits: {} }, ctx())).rejects.toThrow("Invalid groupId");
});

test("BRAZE group with enableSubscriptionGroupInGroupCall → /v2/subscription/status/set with external_ids and phone (else email)", async () => {
  const config = { enableSubscriptionGroupInGroupCall: true };
  const event: SluiceEvent = { type: "group", messageId: "g", userId: "u-1", groupId: "sg-1", traits: { phone: "555", email: "ada@example.com", subscriptionState: "subscribed" } };
  expect((await braze.transform(event, ctx(config)))).toEqual([
    request(`${US}/v2/subscription/status/set`, {
      subscription_groups: [{ subscription_group_id: "sg-1", subscription_state: "subscribed", external_ids: ["u-1"], phones: ["555"] }],
    }),
  ]);
  const anonymousEmail: SluiceEvent = { type: "group", messageId: "g", anonymousId: "a", groupId: "sg-1", traits: { email: "abc@test.com", subscriptionState: "unsubscribed" } };
  expect((await bodyOf(anonymousEmail, config))).toEqual({
    subscription_groups: [{ subscription_group_id: "sg-1", subscription_state: "unsubscribed", emails: ["abc@test.com"] }],
  });
  await expect(braze.transform({ ...event, traits: { subscriptionState: "subscribed" } }, ctx(config))).rejects.toThrow(
    "Message should have traits with subscriptionState, email or phone",
  );
  await expect(braze.transform({ ...event, traits: { phone: "555" } }, ctx(config))).rejects.toThrow("you must provide a subscription state in traits");
});

test("BRAZE alias → /users/merge with identifier_to_merge previousId and identifier_to_keep userId", async () => {
  const event: SluiceEvent = { type: "alias", messageId: "al", userId: "u-new", previousId: "u-old" };
  expect((await braze.transform(event, ctx()))).toEqual([
    request(`${US}/users/merge`, { merge_updates: [{ identifier_to_merge: { external_id: "u-old" }, identifier_to_keep: { external_id: "u-new" } }] }),
  ]);
  await expect(braze.transform({ ...event, previousId: undefined }, ctx())).rejects.toThrow("[BRAZE]: previousId is required for alias call");
  await expect(braze.transform({ ...event, userId: undefined }, ctx())).rejects.toThrow("[BRAZE]: userId is required for alias call");
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

test("BRAZE useEcommerceRecommendedEvents: Product Viewed → ecommerce.product_viewed, other keys as metadata", async () => {
  const event = ecommerceEvent("Product Viewed", { product_id: "sku_42", name: "Widget", variant: "red", price: "9.99", currency: "USD", category: "home" });
  expect((await braze.transform(event, ctx(ECOMMERCE)))).toEqual([
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
  expect((await bodyOf(event)).events[0].name).toBe("Product Viewed");
});

test("BRAZE useEcommerceRecommendedEvents: Product Added / Removed → cart_updated with the top-level product wrapped", async () => {
  const props = { cart_id: "cart_001", currency: "USD", product_id: "sku_42", name: "Widget", quantity: "2", price: 9.99 };
  expect((await bodyOf(ecommerceEvent("Product Added", props), ECOMMERCE))).toEqual(
    ecommerceBody("ecommerce.cart_updated", {
      cart_id: "cart_001",
      currency: "USD",
      products: [{ product_id: "sku_42", product_name: "Widget", variant_id: "sku_42", quantity: 2, price: 9.99 }],
      source: "web",
      action: "add",
    }),
  );
  expect((await bodyOf(ecommerceEvent("product removed", props), ECOMMERCE)).events[0].properties.action).toBe("remove");
});

test("BRAZE useEcommerceRecommendedEvents: Order Completed → ecommerce.order_placed instead of purchases; source from the OS on mobile", async () => {
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
  expect((await bodyOf(event, ECOMMERCE))).toEqual(
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
  const checkout = (await bodyOf(ecommerceEvent("Checkout Started", { order_id: "o", total: "10", products: [] }), ECOMMERCE)).events[0];
  // Checkout Started has no types in RudderStack's mapping: "10" stays a string; empty products are dropped.
  expect(checkout).toMatchObject({ name: "ecommerce.checkout_started", properties: { checkout_id: "o", total_value: "10", source: "web" } });
  expect(checkout.properties.products).toBeUndefined();
  expect((await bodyOf(ecommerceEvent("Order Cancelled", { order_id: "o", reason: "late" }), ECOMMERCE)).events[0].properties).toEqual({
    order_id: "o",
    cancel_reason: "late",
    source: "web",
  });
  expect((await bodyOf(ecommerceEvent("Order Refunded", { order_id: "o", source: "android" }), ECOMMERCE)).events[0].properties).toEqual({
    order_id: "o",
    source: "android",
  });
});

test("BRAZE filtering, missing keys, baseUrl override, unsupported type", async () => {
  const event = trackE({ event: "Noise" });
  expect((await braze.transform(event, ctx({ eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "Noise" }] })))).toEqual([]);
  expect((await braze.transform(event, ctx({ eventFilteringOption: "whitelistedEvents", whitelistedEvents: [{ eventName: "Other" }] })))).toEqual([]);
  // processor fixture "Destination config is missing restApiKey": RudderStack's configuration error.
  await expect(braze.transform(event, ctx({ restApiKey: "" }))).rejects.toThrow("Rest API Key not found. Aborting");
  await expect(braze.transform(event, ctx({ restApiKey: undefined }))).rejects.toThrow("Rest API Key not found. Aborting");
  // RudderStack's getEndpointFromConfig message for a data center that is missing or not a string.
  await expect(braze.transform(event, ctx({ dataCenter: undefined }))).rejects.toThrow("Invalid Data Center: valid values are EU, US, AU");
  await expect(braze.transform(event, ctx({ dataCenter: 1 }))).rejects.toThrow("Invalid Data Center: valid values are EU, US, AU");
  expect((await braze.transform(event, ctx({}, "http://127.0.0.1:6000")))[0]!.endpoint).toBe("http://127.0.0.1:6000/users/track");
  await expect(braze.transform({ ...event, type: "merge" }, ctx())).rejects.toThrow("Message type is not supported");
});

const userTrack = async (user: string, i = 0): Promise<DestinationRequest> => ({
  ...(await braze.transform(trackE({ userId: user, context: { traits: { n: i } } }), ctx()))[0]!,
  userKey: user,
});

test("BRAZE batch → /users/track items sorted by external_id, at most 75 of each kind per call", async () => {
  // 80 users: 80 attributes and 80 events; sorted u00..u79, cut when a kind reaches 75.
  const users = Array.from({ length: 80 }, (_, i) => `u${String(79 - i).padStart(2, "0")}`);
  const batched = braze.batch!(await Promise.all(users.map((u, i) => userTrack(u, i))), ctx());
  expect(batched.map((r) => [r.endpoint, (r.body.JSON.attributes as unknown[]).length, (r.body.JSON.events as unknown[]).length])).toEqual([
    [TRACK, 75, 75],
    [TRACK, 5, 5],
  ]);
  expect((batched[0]!.body.JSON.events as any[]).map((e) => e.external_id).slice(0, 3)).toEqual(["u00", "u01", "u02"]);
  expect(batched[0]).toMatchObject({ headers: HEADERS, body: { JSON: { partner: "RudderStack" } } });
  expect((batched[1]!.body.JSON.attributes as any[])[0]).toEqual({ n: 4, external_id: "u75" });
});

test("BRAZE batch → a /users/track call holds at most 75 distinct external ids; anonymous items sort last and count as one", async () => {
  const id = (p: string, i: number) => `${p}${String(i).padStart(3, "0")}`;
  // 40 users with attributes only and 40 with events only: no kind reaches 75, the ids do.
  const attributesOnly = await Promise.all(
    Array.from({ length: 40 }, async (_, i) => ({
      ...(await braze.transform({ type: "identify", messageId: `i${i}`, userId: id("a", i), traits: { n: i } }, ctx()))[0]!,
      userKey: id("a", i),
    })),
  );
  const eventsOnly = await Promise.all(
    Array.from({ length: 40 }, async (_, i) => ({
      ...(await braze.transform(trackE({ userId: id("e", i) }), ctx()))[0]!,
      userKey: id("e", i),
    })),
  );
  const anon = async (a: string) => ({ ...(await braze.transform({ type: "page", messageId: a, anonymousId: a, timestamp: ts }, ctx()))[0]!, userKey: a });
  const batched = braze.batch!([await anon("anon-1"), await anon("anon-2"), ...eventsOnly, ...attributesOnly], ctx());
  const shape = (r: DestinationRequest) => [(r.body.JSON.attributes as unknown[] | undefined)?.length, (r.body.JSON.events as any[] | undefined)?.length];
  expect(batched.map(shape)).toEqual([
    [40, 35],
    [undefined, 7],
  ]);
  expect((batched[1]!.body.JSON.events as any[]).map((e) => e.external_id ?? e.user_alias.alias_name)).toEqual(["e035", "e036", "e037", "e038", "e039", "anon-1", "anon-2"]);
  // A single identify's attributes get the partner once batched, as in RudderStack's router.
  expect(braze.batch!(attributesOnly.slice(0, 1), ctx())[0]!.body.JSON).toEqual({ partner: "RudderStack", attributes: [{ n: 0, external_id: "a000" }] });
});

test("BRAZE batch → tracks first, then subscriptions, then merges; each user's order kept", async () => {
  const identify = async (user: string) => ({ ...(await braze.transform({ type: "identify", messageId: user, userId: user, traits: { x: 1 } }, ctx()))[0]!, userKey: user });
  const merge = { ...(await braze.transform({ type: "alias", messageId: "al", userId: "K", previousId: "p" }, ctx()))[0]!, userKey: "K" };
  const sub = { ...(await braze.transform({ type: "group", messageId: "g", userId: "S", groupId: "g1", traits: { email: "s@x", subscriptionState: "subscribed" } }, ctx({ enableSubscriptionGroupInGroupCall: true })))[0]!, userKey: "S" };
  const batched = braze.batch!([await identify("A"), merge, sub, await userTrack("C"), await identify("B")], ctx());
  expect(batched.map((r) => r.endpoint.replace(US, ""))).toEqual(["/users/track", "/v2/subscription/status/set", "/users/merge"]);
  expect((batched[0]!.body.JSON.attributes as any[]).map((a) => a.external_id)).toEqual(["A", "B", "C"]);
  // The same user again: its track may not move ahead of its own earlier merge.
  const merged = { ...(await braze.transform({ type: "alias", messageId: "al2", userId: "A", previousId: "p" }, ctx()))[0]!, userKey: "A" };
  const again = braze.batch!([await identify("A"), merged, await identify("A")], ctx());
  expect(again.map((r) => r.endpoint.replace(US, ""))).toEqual(["/users/track", "/users/merge", "/users/track"]);
});

test("BRAZE batch → subscription status 25 per call with the same group and state combined; merges 50 per call", async () => {
  const config = { enableSubscriptionGroupInGroupCall: true };
  const sub = async (user: string, state: string, email: string) => ({
    ...(await braze.transform({ type: "group", messageId: user, userId: user, groupId: "g1", traits: { email, subscriptionState: state } }, ctx(config)))[0]!,
    userKey: user,
  });
  const batched = braze.batch!([await sub("u1", "subscribed", "a@x"), await sub("u2", "subscribed", "a@x"), await sub("u3", "unsubscribed", "c@x")], ctx(config));
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
  const many = await Promise.all(Array.from({ length: 30 }, (_, i) => sub(`u${i}`, "subscribed", `${i}@x`)));
  expect(braze.batch!(many, ctx(config)).map((r) => (r.body.JSON.subscription_groups as any[])[0].external_ids.length)).toEqual([25, 5]);
  const merges = await Promise.all(
    Array.from({ length: 51 }, async (_, i) => ({
      ...(await braze.transform({ type: "alias", messageId: `${i}`, userId: `k${i}`, previousId: `p${i}` }, ctx()))[0]!,
      userKey: `k${i}`,
    })),
  );
  expect(braze.batch!(merges, ctx()).map((r) => (r.body.JSON.merge_updates as unknown[]).length)).toEqual([50, 1]);
});

test("BRAZE deleteUsers → POST /users/delete {external_ids}, 50 per request, users without userId skipped", async () => {
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
// (context.traits, anonymousId and userId) → one /users/track with both attributes objects; the
// aliases merged by one /users/identify call of their own.
test("BRAZE RudderStack fixture: router batchedIdentify_success — identify → attributes email, first_name, last_name, external_id; aliases merged by one /users/identify call", async () => {
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
  // One destination's transforms running together, as a batch's do.
  const context = standIn(config);
  const from = sink.received.length;
  const [first, second] = await Promise.all([
    braze.transform(identify("e6ab2c5e", "user123", { email: "test@example.com", firstName: "John", lastName: "Doe" }), context),
    braze.transform(identify("f7bc3d6f", "user456", { email: "test2@example.com", firstName: "Jane", lastName: "Smith" }), context),
  ]);
  expect(mergesSince(from)).toEqual([
    {
      aliases_to_identify: [
        { user_alias: RUDDER_ALIAS("e6ab2c5e"), external_id: "user123" },
        { user_alias: RUDDER_ALIAS("f7bc3d6f"), external_id: "user456" },
      ],
      merge_behavior: "merge",
    },
  ]);
  expect(braze.batch!([...first!, ...second!], context)).toEqual([
    request(STAND_TRACK(), {
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

test("BRAZE RudderStack fixture: processor Test 0: anonymous identify (userId '') → au-01 /users/track attributes: email, then the other traits as they come, null and 0 kept, on the rudder_id alias", async () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "2536eda4",
    anonymousId: MICKEY_ANON,
    userId: "",
    integrations: { All: true },
    context: { ...webContext, traits: { city: "Disney", country: "USA", email: "mickey@disney.com", firstname: "Mickey", closed_at: null, orderTotal: 0 } },
    timestamp: "2020-01-24T11:59:02.402+05:30",
  };
  expect((await braze.transform(event, ctx(fixtureConfig("au-01"))))).toEqual([
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
  const attributes = ((await braze.transform(event, ctx(fixtureConfig("au-01"))))[0]!.body.JSON as any).attributes[0];
  expect(Object.keys(attributes)).toEqual(["email", "city", "country", "firstname", "closed_at", "orderTotal", "_update_existing_only", "user_alias"]);
});

test("BRAZE RudderStack fixture: processor Test 1: identify with anonymousId and userId but no traits → refused 'No attributes found to update the user profile' (after the /users/identify call)", async () => {
  const event: SluiceEvent = { type: "identify", messageId: "2536eda4", anonymousId: MICKEY_ANON, userId: "mickeyMouse", integrations: { All: true }, context: webContext };
  const from = sink.received.length;
  await expect(braze.transform(event, standIn(fixtureConfig("us-01")))).rejects.toThrow("No attributes found to update the user profile");
  expect(mergesSince(from)).toEqual([merged(RUDDER_ALIAS(MICKEY_ANON), "mickeyMouse")]);
});

test("BRAZE RudderStack fixture: processor Tests 2-3: track → eu-01 /users/track event with all properties; context.traits add an attributes object", async () => {
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
  expect((await braze.transform(event, ctx(fixtureConfig("eu-01"))))).toEqual([request(EU_TRACK, { partner: "RudderStack", events: [revenueEvent] })]);
  const withTraits = { ...event, context: { ...webContext, traits: { email: "mickey@disney.com", closed_at: null } } };
  expect((await braze.transform(withTraits, ctx(fixtureConfig("eu-01"))))).toEqual([
    request(EU_TRACK, { partner: "RudderStack", attributes: [{ email: "mickey@disney.com", closed_at: null, external_id: "mickeyMouse" }], events: [revenueEvent] }),
  ]);
});

test("BRAZE processor: Order Completed without traits → purchases only (product_id, price, currency, quantity, time, external_id); sku and extras dropped", async () => {
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
  expect((await braze.transform(event, ctx()))).toEqual([
    request(TRACK, {
      partner: "RudderStack",
      purchases: [{ product_id: "product-002", price: 100, currency: "USD", quantity: 2, time: "2024-01-24T13:00:00.500Z", external_id: "test-user-456" }],
    }),
  ]);
});

test("BRAZE RudderStack fixture: processor T-I-01 / T-I-06 (useEcommerceRecommendedEvents): anonymous web Product Viewed and Order Completed → ecommerce events with attributes and alias", async () => {
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
  expect((await braze.transform(message("Product Viewed", { product_id: "sku_42", name: "Widget", variant: "red", price: 9.99, currency: "USD", category: "home" }), ctx(config)))).toEqual(
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
  expect((await braze.transform(message("Order Completed", order), ctx(config)))).toEqual(
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

test("BRAZE RudderStack fixture: processor Test 6: anonymous track → gender woman → F, firstName → first_name, event_name dropped from the event's properties", async () => {
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
  expect((await braze.transform(event, ctx({ ...fixtureConfig("eu-01"), enableNestedArrayOperations: false })))).toEqual([
    request("https://rest.fra-01.braze.eu/users/track", {
      partner: "RudderStack",
      attributes: [{ email: "mickey@disney.com", first_name: "Mickey", gender: "F", city: "Disney", country: "USA", ...anon }],
      events: [{ name: "braze revenue test", time: "2020-01-24T11:59:02.403+05:30", properties: { revenue: 50, currency: "USD" }, ...anon }],
    }),
  ]);
});

test("BRAZE RudderStack fixture: processor Tests 8, 9, 11: Order Completed without any currency refused; group traits.groupId → ab_rudder_group_1234; price 0 kept", async () => {
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
  await expect(braze.transform(base, ctx(EU))).rejects.toThrow("Invalid Order Completed event: Message properties and product at index: 0 is missing currency");
  const group: SluiceEvent = { ...base, type: "group", properties: undefined, traits: { groupId: "1234" } };
  expect((await braze.transform(group, ctx(EU)))).toEqual([
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
  expect((await braze.transform(free, ctx(EU)))[0]!.body.JSON).toEqual({
    attributes: [{ email: "mickey@disney.com", city: "Disney", country: "USA", firstname: "Mickey", ...anon }],
    purchases: [purchase("507f1f77bcf86cd799439011", 1), purchase("505bd76785ebb509fc183733", 2)],
    partner: "RudderStack",
  });
});

test("BRAZE RudderStack fixture: processor Test 10: reverse-ETL identify → attributes as given with external_id from context.externalId (the alias merged by a call of its own first)", async () => {
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
  const from = sink.received.length;
  expect(await braze.transform(event, standIn(fixtureConfig("us-01")))).toEqual([
    request(STAND_TRACK(), { attributes: [{ home_city: "Disney", country: "USA", external_id: "mickey@disney.com", first_name: "Mickey" }] }),
  ]);
  expect(mergesSince(from)).toEqual([merged(RUDDER_ALIAS(MICKEY_ANON), "mickey@disney.com")]);
});

test("BRAZE RudderStack fixture: processor Tests 13-14: enableNestedArrayOperations — update replaces the trait with $update (+ $add), arrays pass as they are, _merge_objects false", async () => {
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
  expect((await bodyOf(event, { dataCenter: "eu-01", enableNestedArrayOperations: true }))).toEqual({
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

test("BRAZE RudderStack fixture: processor Tests 20, 25, 29: email lower-cased, a non-string email refused, the alias option merged by an identify without anonymousId", async () => {
  const traits = { email: "A@HOTMAIL.COM", phone: "9988123321", firstName: "anil", lastName: "kumar", gender: null, birthday: "01/01/1971", bio: "Tech", company: null };
  const identify: SluiceEvent = { type: "identify", messageId: "m", userId: "ank101", context: { traits } };
  expect((await bodyOf(identify))).toEqual({
    attributes: [{ dob: "01/01/1971", email: "a@hotmail.com", first_name: "anil", gender: null, last_name: "kumar", phone: "9988123321", bio: "Tech", company: null, external_id: "ank101" }],
  });
  const badEmail: SluiceEvent = { type: "identify", messageId: "m", anonymousId: MICKEY_ANON, userId: "", context: { traits: { city: "Disney", email: 123, closed_at: null, orderTotal: 0 } } };
  await expect(braze.transform(badEmail, ctx())).rejects.toThrow("Invalid email, email must be a valid string");
  const aliased: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "mickeyUser",
    integrations: { All: true, Braze: { alias: { alias_label: "email", alias_name: "micky@example.com" } } },
    context: { traits: { city: "Disney", country: "USA", email: "micky@example.com", firstname: "Mickey" } },
  };
  const from = sink.received.length;
  expect(await braze.transform(aliased, standIn())).toEqual([
    request(STAND_TRACK(), { attributes: [{ email: "micky@example.com", city: "Disney", country: "USA", firstname: "Mickey", external_id: "mickeyUser" }] }),
  ]);
  expect(mergesSince(from)).toEqual([merged({ alias_name: "micky@example.com", alias_label: "email" }, "mickeyUser")]);
});

test("BRAZE RudderStack fixture: processor Tests 22, 23, 32: subscription groups — phone wins over email, external_ids only for a userId", async () => {
  const group = (extra: Partial<SluiceEvent>): SluiceEvent => ({ type: "group", messageId: "m", groupId: "1234", anonymousId: "c6ff1462", context: { traits: { email: "manashi@gmaiol.com" } }, ...extra });
  const config = { dataCenter: "eu-01", enableSubscriptionGroupInGroupCall: true };
  const SET = "https://rest.fra-01.braze.eu/v2/subscription/status/set";
  const groups = (g: Record<string, unknown>) => [request(SET, { subscription_groups: [{ subscription_group_id: "1234", ...g }] })];
  expect((await braze.transform(group({ userId: "Randomuser2222", traits: { phone: "5055077683", subscriptionState: "subscribed" } }), ctx(config)))).toEqual(
    groups({ subscription_state: "subscribed", external_ids: ["Randomuser2222"], phones: ["5055077683"] }),
  );
  expect((await braze.transform(group({ userId: "Randomuser2222", traits: { email: "abc@test.com", subscriptionState: "unsubscribed" } }), ctx(config)))).toEqual(
    groups({ subscription_state: "unsubscribed", external_ids: ["Randomuser2222"], emails: ["abc@test.com"] }),
  );
  expect((await braze.transform(group({ traits: { email: "abc@test.com", subscriptionState: "unsubscribed" } }), ctx(config)))).toEqual(
    groups({ subscription_state: "unsubscribed", emails: ["abc@test.com"] }),
  );
});

test("BRAZE RudderStack fixture: processor Tests 24, 26, 28, 30, 31: integrations.braze.appId, purchase extra properties with email null, alias option on track, null products skipped", async () => {
  const appEvent = trackE({ userId: "mickeyMouse", event: "braze revenue test", integrations: { All: true, braze: { appId: "123" } }, properties: { currency: "USD", revenue: 50 } });
  expect((await bodyOf(appEvent)).events).toEqual([{ name: "braze revenue test", time: ts, properties: { revenue: 50, currency: "USD" }, external_id: "mickeyMouse", app_id: "123" }]);

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
  expect((await bodyOf(order, { sendPurchaseEventWithExtraProperties: true }))).toEqual({
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
  expect((await bodyOf(aliased))).toEqual({
    partner: "RudderStack",
    attributes: [{ email: "micky@example.com", _update_existing_only: false, user_alias: emailAlias }],
    events: [{ name: "Test Event", time: ts, properties: { coupon: "hasbros", currency: "USD" }, _update_existing_only: false, user_alias: emailAlias }],
  });

  const nullFirst = trackE({ event: "Order Completed", properties: { products: [null, { price: 19, quantity: 1, currency78: "USD", product_id: "507f" }] } });
  await expect(braze.transform(nullFirst, ctx())).rejects.toThrow("Invalid Order Completed event: Message properties and product at index: 0 is missing currency");
  await expect(braze.transform(trackE({ event: "Order Completed", properties: { products: [undefined] } }), ctx())).rejects.toThrow("Invalid Order Completed event: Products array is empty");
});

test("BRAZE RudderStack fixture: processor T-I-02/03/05/07/08 (useEcommerceRecommendedEvents): cart_updated add/remove, checkout_started, order_refunded, order_cancelled", async () => {
  const TS = "2026-05-28T11:00:00.000+05:30";
  const props = async (name: string, properties: Record<string, unknown>) => {
    const event = { type: "track", messageId: "m", anonymousId: MICKEY_ANON, userId: "", event: name, channel: "web", context: { traits: { email: "mickey@disney.com", firstname: "Mickey" } }, properties, timestamp: TS } as SluiceEvent;
    const body = await bodyOf(event, { useEcommerceRecommendedEvents: true });
    expect(body.attributes).toEqual([{ email: "mickey@disney.com", firstname: "Mickey", _update_existing_only: false, user_alias: RUDDER_ALIAS(MICKEY_ANON) }]);
    expect(body.events).toHaveLength(1);
    return [body.events[0].name, body.events[0].properties];
  };
  const widget = (quantity: number, price: number) => [{ product_id: "sku_42", product_name: "Widget", variant_id: "sku_42", quantity, price }];
  const cart = { cart_id: "cart_001", currency: "USD", product_id: "sku_42", name: "Widget", price: 9.99 };
  expect(await props("Product Added", { ...cart, quantity: 2 })).toEqual(["ecommerce.cart_updated", { cart_id: "cart_001", currency: "USD", action: "add", source: "web", products: widget(2, 9.99) }]);
  expect(await props("Product Removed", { ...cart, quantity: 1 })).toEqual(["ecommerce.cart_updated", { cart_id: "cart_001", currency: "USD", action: "remove", source: "web", products: widget(1, 9.99) }]);
  const products = [{ product_id: "sku_42", name: "Widget", quantity: 1, price: 99.99 }];
  expect(await props("Checkout Started", { order_id: "ord_001", revenue: 99.99, currency: "USD", tax: 5, shipping: 3, products })).toEqual([
    "ecommerce.checkout_started",
    { checkout_id: "ord_001", total_value: 99.99, currency: "USD", tax: 5, shipping: 3, source: "web", products: widget(1, 99.99) },
  ]);
  expect(await props("Order Refunded", { order_id: "ord_001" })).toEqual(["ecommerce.order_refunded", { order_id: "ord_001", source: "web" }]);
  expect(await props("Order Cancelled", { order_id: "ord_001", total: 99.99, currency: "USD", cancel_reason: "out_of_stock", products })).toEqual([
    "ecommerce.order_cancelled",
    { order_id: "ord_001", total_value: 99.99, currency: "USD", cancel_reason: "out_of_stock", source: "web", products: widget(1, 99.99) },
  ]);
  expect(await props("Order Cancelled", { order_id: "ord_001", total: 99.99, currency: "USD", products })).toEqual([
    "ecommerce.order_cancelled",
    { order_id: "ord_001", total_value: 99.99, currency: "USD", source: "web", products: widget(1, 99.99) },
  ]);
});

let sluice: TestServer;
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
test("BRAZE RudderStack fixture: processor Tests 4-5 — anonymous page → Page Viewed on the alias; anonymous identify → attributes only (no partner, no /users/identify)", async () => {
  const page: SluiceEvent = {
    type: "page",
    messageId: "dd266c67",
    anonymousId: MICKEY_ANON,
    userId: "",
    context: { ...webContext, traits: {} },
    properties: { path: "/tests/html/index2.html", referrer: "", search: "", title: "", url: "http://localhost/tests/html/index2.html" },
    timestamp: "2020-01-24T11:59:02.402+05:30",
  };
  expect((await braze.transform(page, ctx(fixtureConfig("eu-01"))))).toEqual([
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
  expect((await braze.transform(identify, ctx(fixtureConfig("us-01"))))).toEqual([
    request(TRACK, {
      attributes: [{ city: "Disney", country: "USA", email: "mickey@disney.com", firstname: "Mickey", _update_existing_only: false, user_alias: RUDDER_ALIAS(MICKEY_ANON) }],
    }),
  ]);
});

test("BRAZE RudderStack fixture: processor Test 7 — 'KM Order Completed' is a custom event (only the exact name makes purchases)", async () => {
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
  const body = (await bodyOf(event, fixtureConfig("eu-01")));
  expect(body.purchases).toBeUndefined();
  expect(body.events).toEqual([
    { name: "KM Order Completed", time: "2020-01-24T11:59:02.402+05:30", properties: event.properties, _update_existing_only: false, user_alias: RUDDER_ALIAS(MICKEY_ANON) },
  ]);
});

test("BRAZE RudderStack fixture: processor Tests 15-16 — identify standard attributes (country, dob, home_city, image_url, gender M) beside custom ones; null gender and null custom traits kept", async () => {
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
  expect((await braze.transform(event, ctx(fixtureConfig("us-01"))))).toEqual([request(TRACK, { attributes: [expected] })]);
  const nulls = { ...event, context: { ...webContext, traits: { ...traits, gender: null, company: null } } };
  expect((await braze.transform(nulls, ctx(fixtureConfig("us-01"))))).toEqual([request(TRACK, { attributes: [{ ...expected, gender: null, company: null }] })]);
});

test("BRAZE RudderStack fixture: processor Tests 17-19 — alias → US-03 /users/merge; a missing previousId or userId refused in RudderStack's words", async () => {
  const alias: SluiceEvent = { type: "alias", messageId: "m", previousId: "userId", userId: "userMergeTest2", context: webContext };
  expect((await braze.transform(alias, ctx(fixtureConfig("US-03"))))).toEqual([
    request("https://rest.iad-03.braze.com/users/merge", {
      merge_updates: [{ identifier_to_merge: { external_id: "userId" }, identifier_to_keep: { external_id: "userMergeTest2" } }],
    }),
  ]);
  await expect(braze.transform({ ...alias, previousId: undefined }, ctx(fixtureConfig("US-03")))).rejects.toThrow("[BRAZE]: previousId is required for alias call");
  await expect(braze.transform({ ...alias, userId: undefined, previousId: "userMergeTest2" }, ctx(fixtureConfig("US-03")))).rejects.toThrow("[BRAZE]: userId is required for alias call");
});

test("BRAZE RudderStack fixture: router 'simple router tests' — page + anonymous identify in one /users/track, subscriptions and merges batched in the order the events came", async () => {
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
  const requests = (await Promise.all(events.map((e) => braze.transform(e, ctx(config))))).flat().map((r) => ({ ...r, userKey: "u1" }));
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

test("BRAZE RudderStack fixture: router — anonymous subscription changes of one group and state → one entry with both emails, no external_ids", async () => {
  const config = { ...fixtureConfig("eu-01"), enableSubscriptionGroupInGroupCall: true };
  const group = async (email: string, user: string): Promise<DestinationRequest> => ({
    ...(await braze.transform(
      { type: "group", messageId: "m", anonymousId: "c6ff1462", groupId: "1234", traits: { email, subscriptionState: "unsubscribed" }, context: { traits: { email: "manashi@gmaiol.com" } } },
      ctx(config),
    ))[0]!,
    userKey: user,
  });
  const batched = braze.batch!([await group("abc@test.com", "u1"), await group("abc1@test.com", "u2")], ctx(config));
  expect(batched.map((r) => r.body.JSON)).toEqual([
    { subscription_groups: [{ subscription_group_id: "1234", subscription_state: "unsubscribed", emails: ["abc@test.com", "abc1@test.com"] }] },
  ]);
});

test("BRAZE sends a track without an event name as RudderStack does (Braze answers for it), rather than refusing it", async () => {
  const [req] = await braze.transform({ type: "track", messageId: "t", userId: "u1", properties: { plan: "pro" }, timestamp: "2024-01-01T00:00:00.000Z" } as SluiceEvent, standIn());
  expect(req!.endpoint).toEndWith("/users/track");
  const events = (req!.body.JSON as any).events;
  expect(events).toHaveLength(1);
  expect(events[0].name).toBeUndefined();
  expect(events[0].external_id).toBe("u1");
});
