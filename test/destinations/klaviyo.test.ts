import { afterAll, beforeAll, expect, test } from "bun:test";
import { klaviyo } from "../../src/destinations/klaviyo";
import type { DestinationContext, DestinationRequest, SluiceEvent } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, jsonRequest, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

const ctx = (config: Record<string, any> = {}): DestinationContext => ({
  config: { privateApiKey: "pk_1", ...config },
  destination: { id: "dest-kl", name: "Klaviyo", workspaceId: "ws-1" },
});
const v2 = (config: Record<string, any> = {}) => ctx({ apiVersion: "v2", ...config });
const headers = (revision: string) => ({ Authorization: "Klaviyo-API-Key pk_1", "Content-Type": "application/json", Accept: "application/json", revision });
const H1 = headers("2023-02-22");
const H2 = headers("2024-10-15");
const H3 = headers("2026-04-15");
const API = "https://a.klaviyo.com/api";
const post = (path: string, json: Record<string, unknown>, h: Record<string, string>, method: DestinationRequest["method"] = "POST") => jsonRequest(method, `${API}${path}`, json, h);

// RudderStack's fixture builders (test/integrations/testUtils.ts), without the random ids.
const identify = (o: Record<string, any>): SluiceEvent => ({
  type: "identify", messageId: o.messageId ?? "m-1", sentAt: "2021-01-03T17:02:53.195Z", userId: o.userId ?? "default-userId",
  ...(o.traits && { traits: o.traits }), ...(o.integrations && { integrations: o.integrations }),
  context: { ...(o.context?.externalId && { externalId: o.context.externalId }), ...(o.context?.traits && { traits: o.context.traits }) },
  anonymousId: o.anonymousId ?? "default-anonymousId", originalTimestamp: o.originalTimestamp ?? "2021-01-03T17:02:53.193Z",
});
const track = (o: Record<string, any>): SluiceEvent => ({
  type: "track", messageId: o.messageId ?? "m-1", sentAt: o.sentAt, userId: o.userId ?? "default-user-id", event: o.event ?? "test-event",
  ...(o.properties && { properties: o.properties }), ...(o.integrations && { integrations: o.integrations }),
  context: { ...(o.context?.traits && { traits: o.context.traits }) },
  anonymousId: o.anonymousId ?? "default-anonymousId", originalTimestamp: o.originalTimestamp ?? "2021-01-03T17:02:53.193Z",
});
const screen = (o: Record<string, any>): SluiceEvent => ({
  channel: "web", userId: o.userId ?? "default-userId", type: "screen", messageId: "m-1", ...(o.event && { event: o.event }), ...(o.name && { name: o.name }),
  ...(o.properties && { properties: o.properties }), ...(o.integrations && { integrations: o.integrations }),
  context: { ...(o.context?.traits && { traits: o.context.traits }) },
  anonymousId: o.anonymousId ?? "default-anonymousId", originalTimestamp: o.originalTimestamp ?? "2022-04-26T05:17:09Z",
});
const group = (o: Record<string, any>): SluiceEvent => ({
  channel: "web", userId: o.userId ?? "default-userId", type: "group", messageId: "m-1", groupId: o.groupId, ...(o.traits && { traits: o.traits }),
  context: { ...(o.context?.traits && { traits: o.context.traits }) }, timestamp: o.timestamp, anonymousId: "anon-1",
  originalTimestamp: "2019-10-14T09:03:17.562Z",
});

// ---- apiVersion v2 (processor fixtures identifyTestDataV2, trackTestDataV2, screenTestDataV2, groupTestDataV2) ----

const idTraits = {
  firstName: "Test", lastName: "Rudderlabs", email: "test@rudderstack.com", phone: "+12 345 578 900", userId: "user@1", title: "Developer",
  organization: "Rudder", city: "Tokyo", region: "Kanto", country: "JP", zip: "100-0001", Flagged: false, Residence: "Shibuya", street: "63, Shibuya",
  properties: { listId: "XUepkK", subscribe: true, consent: ["email", "sms"] },
};
const idProfile = {
  external_id: "user@1", anonymous_id: "97c46c81-3140-456d-b2a9-690d70aaca35", email: "test@rudderstack.com", first_name: "Test", last_name: "Rudderlabs",
  phone_number: "+12 345 578 900", title: "Developer", organization: "Rudder",
  location: { city: "Tokyo", region: "Kanto", country: "JP", zip: "100-0001", address1: "63, Shibuya" },
  properties: { Flagged: false, Residence: "Shibuya" },
};
const idEvent = (traits: Record<string, any>, extra: Record<string, any> = {}) =>
  identify({ userId: "user@1", anonymousId: "97c46c81-3140-456d-b2a9-690d70aaca35", ...extra, context: { traits, ...extra.context } });
const listXU = { list: { data: { type: "list", id: "XUepkK" } } };
const subProfile = (consent: string | undefined, channels: string[] = ["email", "sms"], phone = "+12 345 578 900", email = "test@rudderstack.com") => ({
  type: "profile",
  attributes: {
    email,
    phone_number: phone,
    ...(consent && { subscriptions: Object.fromEntries(channels.map((c) => [c, { marketing: { consent } }])) }),
  },
});
const job = (subscribe: boolean, profiles: unknown[], relationships: unknown) => ({
  data: {
    type: subscribe ? "profile-subscription-bulk-create-job" : "profile-subscription-bulk-delete-job",
    attributes: { profiles: { data: profiles } },
    relationships,
  },
});
const CREATE = "/profile-subscription-bulk-create-jobs";
const DELETE = "/profile-subscription-bulk-delete-jobs";
const friend = { friend: { names: { first: "Alice", last: "Smith" }, age: 25 } };
const flatFriend = { "friend.age": 25, "friend.names.first": "Alice", "friend.names.last": "Smith" };

test("KLAVIYO RudderStack fixture: v2 identify with flattenProperties upserts the flattened profile, then subscribes it", () => {
  expect(klaviyo.transform(idEvent({ ...idTraits, ...friend }), v2({ flattenProperties: true }))).toEqual([
    post("/profile-import", { data: { type: "profile", attributes: { ...idProfile, properties: { ...idProfile.properties, ...flatFriend } }, meta: { patch_properties: {} } } }, H2),
    post(CREATE, job(true, [subProfile("SUBSCRIBED")], listXU), H2),
  ]);
});

test("KLAVIYO RudderStack fixture: v2 identify with subscribe false unsubscribes, without consent channels", () => {
  const event = idEvent({ ...idTraits, properties: { ...idTraits.properties, subscribe: false }, ...friend });
  expect(klaviyo.transform(event, v2({ flattenProperties: true }))[1]).toEqual(post(DELETE, job(false, [subProfile(undefined)], listXU), H2));
});

test("KLAVIYO RudderStack fixture: v2 identify takes the klaviyo-profileId external id and integrations.Klaviyo patch fields", () => {
  const event = idEvent(
    { ...idTraits, appendList1: "New Value 1", appendList2: "New Value 2", unappendList1: "Old Value 1", unappendList2: "Old Value 2", properties: { ...idTraits.properties, subscribe: undefined } },
    {
      context: { externalId: [{ type: "klaviyo-profileId", id: "12345678" }] },
      integrations: { Klaviyo: { fieldsToUnset: ["Unset1", "Unset2"], fieldsToAppend: ["appendList1", "appendList2"], fieldsToUnappend: ["unappendList1", "unappendList2"] }, All: true },
    },
  );
  expect(klaviyo.transform(event, v2())).toEqual([
    post("/profile-import", {
      data: {
        type: "profile",
        id: "12345678",
        attributes: idProfile,
        meta: {
          patch_properties: {
            append: { appendList1: "New Value 1", appendList2: "New Value 2" },
            unappend: { unappendList1: "Old Value 1", unappendList2: "Old Value 2" },
            unset: ["Unset1", "Unset2"],
          },
        },
      },
    }, H2),
  ]);
});

test("KLAVIYO RudderStack fixture: v2 identify with enforceEmailAsPrimary drops external_id and keeps the userId as _id", () => {
  const [profile] = klaviyo.transform(idEvent(idTraits), v2({ enforceEmailAsPrimary: true }));
  const { external_id: _drop, ...rest } = idProfile;
  expect(profile).toEqual(post("/profile-import", { data: { type: "profile", attributes: { ...rest, properties: { ...idProfile.properties, _id: "user@1" } }, meta: { patch_properties: {} } } }, H2));
});

const trTraits = { id: "user@1", age: "22", anonymousId: "9c6bd77ea9da3e68" };
const vp = { PreviouslVicePresident: true, YearElected: 1801, VicePresidents: ["AaronBurr", "GeorgeClinton"] };
const trProfile = {
  email: "test@rudderstack.com", phone_number: "+9112340375", anonymous_id: "9c6bd77ea9da3e68",
  properties: { age: "22", name: "Test", description: "Sample description", id: "user@1" }, meta: { patch_properties: {} },
};
const trEvent = (o: Record<string, any> = {}) =>
  track({
    event: "TestEven002", userId: "sajal12", messageId: "someTrackMessageId", anonymousId: "9c6bd77ea9da3e68", originalTimestamp: "2021-01-25T15:32:56.409Z",
    context: { traits: { ...trTraits, name: "Test", email: "test@rudderstack.com", phone: "+9112340375", description: "Sample description" } },
    properties: vp,
    ...o,
  });
const metric = (name: string) => ({ data: { type: "metric", attributes: { name } } });

test("KLAVIYO RudderStack fixture: v2 track → /api/events with value, value_currency, time, metric, unique_id and the profile inline", () => {
  expect(klaviyo.transform(trEvent({ properties: { ...vp, revenue: 3000, currency: "USD" } }), v2())).toEqual([
    post("/events", {
      data: {
        type: "event",
        attributes: {
          unique_id: "someTrackMessageId",
          metric: metric("TestEven002"),
          profile: { data: { type: "profile", attributes: { ...trProfile, external_id: "sajal12" } } },
          properties: vp,
          value: 3000,
          value_currency: "USD",
          time: "2021-01-25T15:32:56.409Z",
        },
      },
    }, H2),
  ]);
});

test("KLAVIYO RudderStack fixture: v2 track with enforceEmailAsPrimary keeps the userId as the profile's _id", () => {
  const body = klaviyo.transform(trEvent(), v2({ enforceEmailAsPrimary: true }))[0]!.body.JSON as any;
  expect(body.data.attributes.profile).toEqual({ data: { type: "profile", attributes: { ...trProfile, properties: { ...trProfile.properties, _id: "sajal12" } } } });
  expect(body.data.attributes.value).toBeUndefined();
});

test("KLAVIYO RudderStack fixture: v2 refusals in RudderStack's words (value, phone, group, type)", () => {
  expect(() => klaviyo.transform(trEvent({ properties: { ...vp, value: { price: 9.99 } } }), v2())).toThrow("Invalid float value");
  const badPhone = trEvent({ context: { traits: { ...trTraits, email: "test@rudderstack.com", phone: "9112340375" } } });
  expect(() => klaviyo.transform(badPhone, v2({ enforceEmailAsPrimary: true }))).toThrow("Phone number is not in E.164 format.");
  const grp = group({ userId: "user123", groupId: "", traits: { subscribe: true }, context: { traits: { email: "test@rudderstack.com" } } });
  expect(() => klaviyo.transform(grp, v2())).toThrow("groupId is a required field for group events");
  expect(() => klaviyo.transform({ ...grp, groupId: "g", traits: {} }, v2())).toThrow("Subscribe flag should be included in group call");
  expect(() => klaviyo.transform({ ...grp, type: "random" }, v2())).toThrow("Event type random is not supported");
  expect(() => klaviyo.transform(grp, v2({ privateApiKey: "" }))).toThrow("Private API Key is a required field for group events");
  expect(() => klaviyo.transform(grp, ctx({ apiVersion: "v9" }))).toThrow("Unsupported Klaviyo apiVersion: v9");
});

test("KLAVIYO RudderStack fixture: v2 screen uses the name as metric and integrations.klaviyo appends inside the event's profile", () => {
  const event = screen({
    name: "Viewed Screen", userId: "sajal12", anonymousId: "9c6bd77ea9da3e68", originalTimestamp: "2021-01-25T15:32:56.409Z",
    integrations: { klaviyo: { fieldsToAppend: ["append1"] } },
    context: { traits: { id: "user@1", age: "22", email: "test@rudderstack.com", phone: "+9112340375", anonymousId: "9c6bd77ea9da3e68", append1: "value1" } },
    properties: { value: 9.99, currency: "USD", PreviouslyVicePresident: true, YearElected: 1801, VicePresidents: ["Aaron Burr", "George Clinton"] },
  });
  expect(klaviyo.transform(event, v2())).toEqual([
    post("/events", {
      data: {
        type: "event",
        attributes: {
          time: "2021-01-25T15:32:56.409Z",
          value: 9.99,
          value_currency: "USD",
          metric: metric("Viewed Screen"),
          properties: { PreviouslyVicePresident: true, YearElected: 1801, VicePresidents: ["Aaron Burr", "George Clinton"] },
          profile: {
            data: {
              type: "profile",
              attributes: {
                anonymous_id: "9c6bd77ea9da3e68", external_id: "sajal12", email: "test@rudderstack.com", phone_number: "+9112340375",
                meta: { patch_properties: { append: { append1: "value1" } } }, properties: { id: "user@1", age: "22" },
              },
            },
          },
          unique_id: "m-1",
        },
      },
    }, H2),
  ]);
});

const groupList = { list: { data: { type: "list", id: "group_list_id" } } };
const grpEvent = (subscribe: boolean) =>
  group({ userId: "user123", groupId: "group_list_id", traits: { subscribe }, context: { traits: { email: "test@rudderstack.com", phone: "+12 345 678 900", consent: ["email"] } }, timestamp: "2020-01-21T00:21:34.208Z" });

test("KLAVIYO RudderStack fixture: v2 group subscribes with the config's consent, unsubscribes without", () => {
  expect(klaviyo.transform(grpEvent(true), v2({ consent: ["email"] }))).toEqual([post(CREATE, job(true, [subProfile("SUBSCRIBED", ["email"], "+12 345 678 900")], groupList), H2)]);
  expect(klaviyo.transform(grpEvent(false), v2({ consent: ["email"] }))).toEqual([post(DELETE, job(false, [subProfile(undefined, [], "+12 345 678 900")], groupList), H2)]);
});

// ---- apiVersion v3 (processor dataV3, router dataV3) ----

test("KLAVIYO RudderStack fixture: v3 uses revision 2026-04-15 and sends UNSUBSCRIBED consents when unsubscribing", () => {
  expect(klaviyo.transform(grpEvent(true), ctx({ apiVersion: "v3", consent: ["email", "sms"] }))).toEqual([
    post(CREATE, job(true, [subProfile("SUBSCRIBED", ["email", "sms"], "+12 345 678 900")], groupList), H3),
  ]);
  expect(klaviyo.transform(grpEvent(false), ctx({ apiVersion: "v3", consent: ["sms"] }))).toEqual([
    post(DELETE, job(false, [subProfile("UNSUBSCRIBED", ["sms"], "+12 345 678 900")], groupList), H3),
  ]);
  const unsub = idEvent({ ...idTraits, properties: { ...idTraits.properties, subscribe: false } });
  expect(klaviyo.transform(unsub, ctx({ apiVersion: "v3", consent: ["email", "sms"] }))).toEqual([
    post("/profile-import", { data: { type: "profile", attributes: idProfile, meta: { patch_properties: {} } } }, H3),
    post(DELETE, job(false, [subProfile("UNSUBSCRIBED")], listXU), H3),
  ]);
});

// ---- apiVersion v1, and configs without the key (processor trackTestData, screenTestData, groupTestData, ecomTestData, identifyTestData, dataV3) ----

const v1Traits = { ...trTraits, email: "test@rudderstack.com", phone: "9112340375" };
const v1Track = (o: Record<string, any> = {}) =>
  track({ event: "TestEven001", userId: "sajal12", anonymousId: "9c6bd77ea9da3e68", originalTimestamp: "2021-01-25T15:32:56.409Z", context: { traits: v1Traits }, properties: vp, ...o });
const v1Event = (attributes: Record<string, unknown>) => post("/events", { data: { type: "event", attributes } }, H1);

test("KLAVIYO RudderStack fixture: v1 track → /api/events (revision 2023-02-22) with the $-keyed profile and the other traits", () => {
  const event = v1Track({ event: "TestEven002", context: { traits: { ...v1Traits, name: "Test", description: "Sample description" } }, properties: { ...vp, revenue: 3000 } });
  expect(klaviyo.transform(event, ctx())).toEqual([
    v1Event({
      metric: { name: "TestEven002" },
      properties: vp,
      profile: { $email: "test@rudderstack.com", $phone_number: "9112340375", $id: "sajal12", age: "22", name: "Test", description: "Sample description" },
      value: 3000,
    }),
  ]);
  // The same for an explicit v1.
  expect(klaviyo.transform(event, ctx({ apiVersion: "v1" }))).toEqual(klaviyo.transform(event, ctx()));
});

test("KLAVIYO RudderStack fixture: v1 track with flattenProperties flattens properties and profile (arrays of values stay arrays)", () => {
  const event = v1Track({ context: { traits: { ...v1Traits, plan_details: { plan_type: "gold", duration: "3 months" } } }, properties: { vicePresdentInfo: vp } });
  expect(klaviyo.transform(event, ctx({ flattenProperties: true }))).toEqual([
    v1Event({
      metric: { name: "TestEven001" },
      properties: {
        "vicePresdentInfo.PreviouslVicePresident": true,
        "vicePresdentInfo.VicePresidents": ["AaronBurr", "GeorgeClinton"],
        "vicePresdentInfo.YearElected": 1801,
      },
      profile: { $email: "test@rudderstack.com", $phone_number: "9112340375", $id: "sajal12", age: "22", "plan_details.plan_type": "gold", "plan_details.duration": "3 months" },
    }),
  ]);
});

test("KLAVIYO RudderStack fixture: v1 track with enforceEmailAsPrimary sends _id, and refuses a profile without e-mail and phone", () => {
  expect(klaviyo.transform(v1Track(), ctx({ enforceEmailAsPrimary: true }))).toEqual([
    v1Event({ metric: { name: "TestEven001" }, properties: vp, profile: { $email: "test@rudderstack.com", $phone_number: "9112340375", age: "22", _id: "sajal12" } }),
  ]);
  expect(() => klaviyo.transform(v1Track({ context: { traits: trTraits } }), ctx({ enforceEmailAsPrimary: true }))).toThrow("None of email and phone are present in the payload");
});

test("KLAVIYO RudderStack fixture: v1 screen → the same event request", () => {
  const event = screen({
    event: "TestEven001", userId: "sajal12", anonymousId: "9c6bd77ea9da3e68", context: { traits: { id: "user@1", age: "22", email: "test@rudderstack.com", phone: "9112340375", anonymousId: "9c6bd77ea9da3e68" } },
    properties: { PreviouslyVicePresident: true, YearElected: 1801, VicePresidents: ["Aaron Burr", "George Clinton"] },
  });
  expect(klaviyo.transform(event, ctx())).toEqual([
    v1Event({
      metric: { name: "TestEven001" },
      properties: { PreviouslyVicePresident: true, YearElected: 1801, VicePresidents: ["Aaron Burr", "George Clinton"] },
      profile: { $email: "test@rudderstack.com", $phone_number: "9112340375", $id: "sajal12", age: "22" },
    }),
  ]);
});

const ecomTraits = { id: "user@1", age: "22", name: "Test", email: "test@rudderstack.com", phone: "9112340375", anonymousId: "9c6bd77ea9da3e68", description: "Sample description" };
const ecomProfile = { $email: "test@rudderstack.com", $phone_number: "9112340375", $id: "sajal12", age: "22", name: "Test", description: "Sample description" };
const ecom = (event: string, properties: Record<string, unknown>): SluiceEvent => ({ type: "track", messageId: "m", event, userId: "sajal12", context: { traits: ecomTraits }, properties, anonymousId: "9c6bd77ea9da3e68" });

test("KLAVIYO RudderStack fixture: v1 e-commerce events become Klaviyo's metrics with their property names", () => {
  const viewed = { name: "test product", product_id: "1114", sku: "WINNIePuh12", image_url: "http://www.example.com/path/to/product/image.png", url: "http://www.example.com/path/to/product", brand: "Not for Kids", price: 9.9, categories: ["Fiction", "Children"] };
  expect(klaviyo.transform(ecom("product viewed", viewed), ctx())).toEqual([
    v1Event({
      metric: { name: "Viewed Product" },
      profile: ecomProfile,
      properties: { ProductName: "test product", ProductID: "1114", SKU: "WINNIePuh12", ImageURL: viewed.image_url, URL: viewed.url, Brand: "Not for Kids", Price: 9.9, Categories: ["Fiction", "Children"] },
    }),
  ]);
  const checkout = {
    order_id: "1234", affiliation: "Apple Store", value: 20, revenue: 15, shipping: 4, tax: 1, discount: 1.5, coupon: "ImagePro", currency: "USD",
    products: [
      { product_id: "123", sku: "G-32", name: "Monopoly", price: 14, quantity: 1, category: "Games", url: "https://www.website.com/product/path", image_url: "https://www.website.com/product/path.jpg" },
      { product_id: "345", sku: "F-32", name: "UNO", price: 3.45, quantity: 2, category: "Games" },
    ],
  };
  expect(klaviyo.transform(ecom("checkout started", checkout), ctx({ flattenProperties: true }))).toEqual([
    v1Event({
      metric: { name: "Started Checkout" },
      properties: {
        $event_id: "1234", $value: 20,
        "items[0].ProductID": "123", "items[0].SKU": "G-32", "items[0].ProductName": "Monopoly", "items[0].Quantity": 1, "items[0].ItemPrice": 14,
        "items[0].ProductURL": "https://www.website.com/product/path", "items[0].ImageURL": "https://www.website.com/product/path.jpg",
        "items[1].ProductID": "345", "items[1].SKU": "F-32", "items[1].ProductName": "UNO", "items[1].Quantity": 2, "items[1].ItemPrice": 3.45,
      },
      profile: ecomProfile,
    }),
  ]);
  const added = {
    order_id: "1234", value: 12.12, categories: ["Fiction3", "Children3"], checkout_url: "http://www.heythere.com", item_names: ["book1", "book2"],
    products: [{ product_id: "b1pid", sku: "123x", name: "book1", url: "heyther.com", price: 12 }, { product_id: "b2pid", sku: "123x", name: "book2", url: "heyther2.com", price: 14 }],
  };
  expect(klaviyo.transform({ ...ecom("product added", added), timestamp: "2021-01-25T15:32:56.409Z" }, ctx())).toEqual([
    v1Event({
      metric: { name: "Added to Cart" },
      profile: ecomProfile,
      properties: {
        $value: 12.12, AddedItemCategories: ["Fiction3", "Children3"], ItemNames: ["book1", "book2"], CheckoutURL: "http://www.heythere.com",
        items: [
          { ProductID: "b1pid", SKU: "123x", ProductName: "book1", ItemPrice: 12, ProductURL: "heyther.com" },
          { ProductID: "b2pid", SKU: "123x", ProductName: "book2", ItemPrice: 14, ProductURL: "heyther2.com" },
        ],
      },
      time: "2021-01-25T15:32:56.409Z",
    }),
  ]);
});

test("KLAVIYO RudderStack fixture: v1 group → a list_id/subscriptions job; refusals in RudderStack's words", () => {
  const event = group({ userId: "user123", groupId: "XUepkK", traits: { subscribe: true }, context: { traits: { email: "test@rudderstack.com", phone: "+12 345 678 900", consent: ["email"] } }, timestamp: "2020-01-21T00:21:34.208Z" });
  const v1Job = { data: { type: "profile-subscription-bulk-create-job", attributes: { list_id: "XUepkK", subscriptions: [{ email: "test@rudderstack.com", phone_number: "+12 345 678 900" }] } } };
  expect(klaviyo.transform(event, ctx())).toEqual([post(CREATE, v1Job, H1)]);
  // A configured consent adds channels (the group's context consent is not read).
  expect(klaviyo.transform(event, ctx({ apiVersion: "v1", consent: ["email", "sms"] }))).toEqual([
    post(CREATE, { data: { ...v1Job.data, attributes: { ...v1Job.data.attributes, subscriptions: [{ ...v1Job.data.attributes.subscriptions[0], channels: { email: ["MARKETING"], sms: ["MARKETING"] } }] } } }, H1),
  ]);
  expect(() => klaviyo.transform({ ...event, groupId: "" }, ctx())).toThrow("groupId is a required field for group events");
  expect(() => klaviyo.transform({ ...event, traits: { subscribe: false } }, ctx())).toThrow("Subscribe flag should be true for group call");
  expect(() => klaviyo.transform({ ...event, type: "random" }, ctx())).toThrow("Event type random is not supported");
});

test("KLAVIYO RudderStack fixture: v1 identify patches the profile a klaviyo-profileId names, then subscribes with channels", () => {
  const traits = { ...idTraits };
  const event = idEvent(traits, { context: { externalId: [{ type: "klaviyo-profileId", id: "01GW3PHVY0MTCDGS0A1612HARX" }] } });
  const attributes = {
    external_id: "user@1", email: "test@rudderstack.com", first_name: "Test", last_name: "Rudderlabs", phone_number: "+12 345 578 900", title: "Developer", organization: "Rudder",
    location: { city: "Tokyo", region: "Kanto", country: "JP", zip: "100-0001", address1: "63, Shibuya" },
    properties: { Flagged: false, Residence: "Shibuya", street: "63, Shibuya" },
  };
  const v1Sub = { data: { type: "profile-subscription-bulk-create-job", attributes: { list_id: "XUepkK", subscriptions: [{ email: "test@rudderstack.com", phone_number: "+12 345 578 900", channels: { email: ["MARKETING"], sms: ["MARKETING"] } }] } } };
  expect(klaviyo.transform(event, ctx())).toEqual([
    post("/profiles/01GW3PHVY0MTCDGS0A1612HARX", { data: { type: "profile", attributes, id: "01GW3PHVY0MTCDGS0A1612HARX" } }, H1, "PATCH"),
    post(CREATE, v1Sub, H1),
  ]);
  // Without the id (RudderStack would look it up at Klaviyo): the same profile to the upsert.
  expect(klaviyo.transform(idEvent(traits), ctx())[0]).toEqual(post("/profile-import", { data: { type: "profile", attributes } }, H2));
  const { email: _e, phone: _p, ...noContact } = traits;
  expect(() => klaviyo.transform(idEvent(noContact), ctx({ enforceEmailAsPrimary: true }))).toThrow("None of email and phone are present in the payload");
});

// ---- router fixtures (router/dataV2.ts) ----

const keyed = (r: DestinationRequest, userKey: string): DestinationRequest => ({ ...r, userKey });
const rtIdentify = (n: number, subscribe: boolean, consent: string[], anonymousId?: string) =>
  identify({
    userId: `testKlaviyo${n}`, ...(anonymousId && { anonymousId }), context: {},
    traits: { email: `testklaviyo${n}@rs.com`, firstname: `Test Klaviyo ${n}`, properties: { subscribe, listId: "configListId", consent } },
  });
const configList = { list: { data: { type: "list", id: "configListId" } } };
const rtProfile = (n: number, anonymousId?: string) =>
  post("/profile-import", {
    data: {
      type: "profile",
      attributes: { external_id: `testKlaviyo${n}`, ...(anonymousId && { anonymous_id: anonymousId }), email: `testklaviyo${n}@rs.com`, first_name: `Test Klaviyo ${n}`, properties: {} },
      meta: { patch_properties: {} },
    },
  }, H2);
const emailOnly = (n: number, consent?: string) => ({ type: "profile", attributes: { email: `testklaviyo${n}@rs.com`, ...(consent && { subscriptions: { email: { marketing: { consent } } } }) } });

test("KLAVIYO RudderStack fixture: router batches a run of identifies: profiles, then one job per list and direction", () => {
  const transformed = [
    ...klaviyo.transform(rtIdentify(1, true, ["email"], "anonTestKlaviyo1"), v2()).map((r) => keyed(r, "u1")),
    ...klaviyo.transform(rtIdentify(2, true, ["email"], "anon2"), v2()).map((r) => keyed(r, "u2")),
    ...klaviyo.transform(rtIdentify(3, false, ["email"], "anon3"), v2()).map((r) => keyed(r, "u3")),
    ...klaviyo.transform(rtIdentify(4, false, ["email"], "anon id 4"), v2()).map((r) => keyed(r, "u4")),
  ];
  const out = klaviyo.batch!(transformed, v2()).map(({ userKey: _k, ...r }) => r);
  expect(out).toEqual([
    rtProfile(1, "anonTestKlaviyo1"),
    rtProfile(2, "anon2"),
    post(CREATE, job(true, [emailOnly(1, "SUBSCRIBED"), emailOnly(2, "SUBSCRIBED")], configList), H2),
    rtProfile(3, "anon3"),
    rtProfile(4, "anon id 4"),
    post(DELETE, job(false, [emailOnly(3), emailOnly(4)], configList), H2),
  ]);
});

test("KLAVIYO RudderStack fixture: router keeps events in place, anonymous events carry an anonymous profile", () => {
  const anonymous: SluiceEvent = { channel: "web", context: { traits: {} }, type: "track", messageId: "someTrackMessageId2", anonymousId: "anonTestKlaviyo2", event: "viewed product", properties: { price: "120" } };
  const [event] = klaviyo.transform(anonymous, v2());
  expect(event).toEqual(post("/events", {
    data: {
      type: "event",
      attributes: {
        unique_id: "someTrackMessageId2",
        properties: { price: "120" },
        profile: { data: { type: "profile", attributes: { anonymous_id: "anonTestKlaviyo2", properties: {}, meta: { patch_properties: {} } } } },
        metric: metric("viewed product"),
      },
    },
  }, H2));
  // An identify without a subscription follows the subscribing ones; a user seen twice ends the run.
  const plain = klaviyo.transform(identify({ userId: "testKlaviyo5", anonymousId: "a5", context: {}, traits: { email: "testklaviyo5@rs.com", firstname: "Test Klaviyo 5" } }), v2());
  const sub2 = klaviyo.transform(rtIdentify(2, true, ["email"]), v2()).map((r) => keyed(r, "u2"));
  const sub2again = klaviyo.transform(rtIdentify(2, true, ["email"]), v2()).map((r) => keyed(r, "u2"));
  const out = klaviyo.batch!([keyed(event!, "u1"), keyed(plain[0]!, "u5"), ...sub2, ...sub2again], v2());
  expect(out.map((r) => r.endpoint.replace(API, ""))).toEqual(["/events", "/profile-import", CREATE, "/profile-import", "/profile-import", CREATE]);
  expect((out[3]!.body.JSON as any).data.attributes.email).toBe("testklaviyo5@rs.com");
  expect(out[2]!.userKey).toBe("u2");
});

test("KLAVIYO batch: consecutive group jobs for one list merge, 100 profiles per job; v1 jobs merge their subscriptions", () => {
  const grp = (i: number, config: DestinationContext) =>
    keyed(klaviyo.transform(group({ userId: `u${i}`, groupId: "L1", traits: { subscribe: true, email: `u${i}@example.com` } }), config)[0]!, `u${i}`);
  const out = klaviyo.batch!([...Array.from({ length: 101 }, (_, i) => grp(i, v2())), keyed(klaviyo.transform(trEvent(), v2())[0]!, "t")], v2());
  expect(out).toHaveLength(3);
  expect((out[0]!.body.JSON as any).data.attributes.profiles.data).toHaveLength(100);
  expect((out[1]!.body.JSON as any).data.attributes.profiles.data[0].attributes.email).toBe("u100@example.com");
  expect(out[2]!.endpoint).toBe(`${API}/events`);
  const v1 = klaviyo.batch!([grp(1, ctx()), grp(2, ctx())], ctx());
  expect(v1).toEqual([post(CREATE, { data: { type: "profile-subscription-bulk-create-job", attributes: { list_id: "L1", subscriptions: [{ email: "u1@example.com" }, { email: "u2@example.com" }] } } }, H1)]);
});

// ---- router fixtures: router/data.ts (v1) and router/dataV2.ts cases 1 and 4, on router/commonConfig.ts's input ----

const PROFILE_ID = "01GW3PHVY0MTCDGS0A1612HARX";
const commonTraits = (email: string, userIdTrait: string, properties: Record<string, unknown>) => ({
  firstName: "Test", lastName: "Rudderlabs", email, phone: "+12 345 578 900", userId: userIdTrait, title: "Developer", organization: "Rudder", city: "Tokyo",
  region: "Kanto", country: "JP", zip: "100-0001", Flagged: false, Residence: "Shibuya", properties,
});
/** commonConfig's five events; `profileId` stands in for the id RudderStack's v1 looks up at Klaviyo. */
const commonInput = (profileId?: string): SluiceEvent[] => {
  const context = (traits: Record<string, unknown>) => ({ traits, ...(profileId && { externalId: [{ type: "klaviyo-profileId", id: profileId }] }) });
  const id = (traits: Record<string, unknown>) => identify({ userId: "test", anonymousId: "97c46c81-3140-456d-b2a9-690d70aaca35", context: context(traits) });
  const ctxTraits = { email: "test@rudderstack.com", phone: "+12 345 678 900", consent: "email" };
  return [
    id(commonTraits("test_1@rudderstack.com", "Testc", { consent: ["email", "sms"] })),
    id(commonTraits("test@rudderstack.com", "test", { listId: "XUepkK", subscribe: true, consent: ["email", "sms"] })),
    group({ userId: "user123", groupId: "XUepkK", traits: { email: "test@rudderstack.com", phone: "+12 345 678 900", subscribe: true, consent: ["email"] }, timestamp: "2020-01-21T00:21:34.208Z" }),
    { ...group({ userId: "user123", groupId: "XUepkK", traits: { subscribe: true }, context: { traits: ctxTraits } }), type: "random" },
    group({ userId: "user123", groupId: "", traits: { subscribe: true }, context: { traits: ctxTraits } }),
  ];
};
/** What the router gets: each event's requests with its user, or its error. */
function routerRun(events: SluiceEvent[], config: DestinationContext) {
  const requests: DestinationRequest[] = [];
  const errors: string[] = [];
  for (const e of events) {
    try {
      requests.push(...klaviyo.transform(e, config).map((r) => keyed(r, String(e.userId))));
    } catch (err) {
      errors.push((err as Error).message);
    }
  }
  return { out: klaviyo.batch!(requests, config).map(({ userKey: _k, ...r }) => r), errors };
}
const rtAttributes = (email: string) => ({
  external_id: "test", email, first_name: "Test", last_name: "Rudderlabs", phone_number: "+12 345 578 900", title: "Developer", organization: "Rudder",
  location: { city: "Tokyo", region: "Kanto", country: "JP", zip: "100-0001" }, properties: { Flagged: false, Residence: "Shibuya" },
});

test("KLAVIYO RudderStack fixture: v1 router sends each list's subscription job ahead of the profile patches; groups batch apart from identifies", () => {
  const { out, errors } = routerRun(commonInput(PROFILE_ID), ctx());
  const patch = (email: string) => post(`/profiles/${PROFILE_ID}`, { data: { type: "profile", attributes: rtAttributes(email), id: PROFILE_ID } }, H1, "PATCH");
  const v1Job = (subscription: Record<string, unknown>) =>
    post(CREATE, { data: { type: "profile-subscription-bulk-create-job", attributes: { list_id: "XUepkK", subscriptions: [subscription] } } }, H1);
  // RudderStack's order is [group job], [job, patch 2], [patch 1]; Sluice keeps the events' order.
  expect(out).toEqual([
    patch("test_1@rudderstack.com"),
    v1Job({ email: "test@rudderstack.com", phone_number: "+12 345 578 900", channels: { email: ["MARKETING"], sms: ["MARKETING"] } }),
    patch("test@rudderstack.com"),
    v1Job({ email: "test@rudderstack.com", phone_number: "+12 345 678 900" }),
  ]);
  expect(errors).toEqual(["Event type random is not supported", "groupId is a required field for group events"]);
});

test("KLAVIYO RudderStack fixture: v1 router merges the jobs of several identifies for one list, job first", () => {
  const events = [1, 2].map((n) =>
    identify({ userId: `u${n}`, context: { externalId: [{ type: "klaviyo-profileId", id: `p${n}` }], traits: { email: `u${n}@rs.com`, properties: { listId: "L", subscribe: true } } } }),
  );
  const { out } = routerRun(events, ctx());
  expect(out.map((r) => `${r.method} ${r.endpoint.replace(API, "")}`)).toEqual([`POST ${CREATE}`, "PATCH /profiles/p1", "PATCH /profiles/p2"]);
  expect((out[0]!.body.JSON as any).data.attributes.subscriptions).toEqual([{ email: "u1@rs.com" }, { email: "u2@rs.com" }]);
});

test("KLAVIYO RudderStack fixture: v2 router on the same input: profile then job, the plain profile, the group's job from its own consent", () => {
  const { out, errors } = routerRun(commonInput(), v2());
  const profile = (email: string) =>
    post("/profile-import", { data: { type: "profile", attributes: { ...rtAttributes(email), anonymous_id: "97c46c81-3140-456d-b2a9-690d70aaca35" }, meta: { patch_properties: {} } } }, H2);
  // RudderStack's order is [profile 2, job 2], [profile 1], [group job]; Sluice keeps the events' order.
  expect(out).toEqual([
    profile("test_1@rudderstack.com"),
    profile("test@rudderstack.com"),
    post(CREATE, job(true, [subProfile("SUBSCRIBED")], listXU), H2),
    post(CREATE, job(true, [subProfile("SUBSCRIBED", ["email"], "+12 345 678 900")], listXU), H2),
  ]);
  expect(errors).toEqual(["Event type random is not supported", "groupId is a required field for group events"]);
});

test("KLAVIYO RudderStack fixture: v2 router rETL case: Sluice keeps the userId as external_id (RudderStack takes the KLAVIYO-profile_v2 external id)", () => {
  const rEtl = (n: number, traits: Record<string, unknown>, top: boolean) =>
    ({
      channel: "web", type: "identify", anonymousId: `anonTestKlaviyo${n}`, userId: `testKlaviyo${n}`, ...(top && { traits }),
      context: { mappedToDestination: "true", externalId: [{ id: traits.email, identifierType: "email", type: "KLAVIYO-profile_v2" }], ...(!top && { traits }) },
    }) as unknown as SluiceEvent;
  const { out } = routerRun(
    [
      rEtl(1, { properties: { subscribe: false }, email: "testklaviyo1@email.com", firstname: "Test Klaviyo 1" }, false),
      rEtl(2, { email: "testklaviyo2@rs.com", firstname: "Test Klaviyo 2", properties: { subscribe: true, listId: "configListId", consent: ["email"] } }, true),
    ],
    v2(),
  );
  const profile = (n: number, email: string) =>
    post("/profile-import", { data: { type: "profile", attributes: { external_id: `testKlaviyo${n}`, anonymous_id: `anonTestKlaviyo${n}`, email, first_name: `Test Klaviyo ${n}`, properties: {} }, meta: { patch_properties: {} } } }, H2);
  expect(out).toEqual([
    profile(2, "testklaviyo2@rs.com"),
    post(CREATE, job(true, [emailOnly(2, "SUBSCRIBED")], configList), H2),
    profile(1, "testklaviyo1@email.com"),
  ]);
});

let s: TestServer;
const sink = startSink(() => new Response(null, { status: 202 }));
beforeAll(async () => {
  s = await startSluice({ args: ["--destination-base-url", `KLAVIYO=${sink.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  sink.stop();
  cleanup(s.dataDir);
});

test("KLAVIYO through the pipeline: identify and track reach the stand-in with the API key and revision headers, in order", async () => {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "kl", type: "KLAVIYO", config: { privateApiKey: "pk_9", apiVersion: "v2" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const batch = [
    { type: "identify", userId: "u-1", traits: { email: "ada@example.com" } },
    { type: "track", userId: "u-1", event: "Bought", traits: { email: "ada@example.com" } },
  ];
  expect((await sendEvent(s.url, src.writeKey, "batch", { batch })).status).toBe(200);
  await waitFor(() => sink.received.length >= 2, { what: "two Klaviyo requests" });
  expect(sink.received.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /api/profile-import", "POST /api/events"]);
  expect(sink.received[0]!.headers.authorization).toBe("Klaviyo-API-Key pk_9");
  expect(sink.received[0]!.headers.revision).toBe("2024-10-15");
});
