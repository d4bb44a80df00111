import { expect, test } from "bun:test";
import { braze, brazeBaseUrl } from "../src/destinations/braze";
import type { DestinationContext, DestinationRequest, SluiceEvent } from "../src/destinations/types";

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
  // No traits: the merge still goes out (RudderStack calls it before finding no attributes).
  const bare: SluiceEvent = { type: "identify", messageId: "m", userId: "u-1", anonymousId: "a-1", context: { traits: {} } };
  expect(braze.transform(bare, ctx()).map((r) => r.endpoint)).toEqual([`${US}/users/identify`]);
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
  expect(() => braze.transform(event, ctx({ restApiKey: "" }))).toThrow("destination config is missing 'restApiKey'");
  expect(() => braze.transform(event, ctx({ dataCenter: undefined }))).toThrow("destination config is missing 'dataCenter'");
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
});
