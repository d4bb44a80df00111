import { afterAll, beforeAll, expect, test } from "bun:test";
import { klaviyo } from "../../src/destinations/klaviyo";
import type { DestinationContext, DestinationRequest, SluiceEvent } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, jsonRequest, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

const ctx = (config: Record<string, any> = {}): DestinationContext => ({
  config: { privateApiKey: "pk_1", ...config },
  destination: { id: "dest-kl", name: "Klaviyo", workspaceId: "ws-1" },
});
const v2 = (config: Record<string, any> = {}) => ctx({ apiVersion: "v2", ...config });
const PROFILE_ID = "01GW3PHVY0MTCDGS0A1612HARX";
/**
 * A v1 context whose profile creation Klaviyo answers in-process, 201 with the new profile's id
 * (`idFor` the profile's attributes; RudderStack's fixtures' id by default), so that requests keep
 * Klaviyo's own URLs. `created` records what was created. The calls over HTTP are tested against
 * a stand-in in klaviyo-lookups.test.ts.
 */
const created: Array<Record<string, any>> = [];
const v1ctx = (config: Record<string, any> = {}, idFor: (attributes: Record<string, any>) => string = () => PROFILE_ID): DestinationContext => ({
  ...ctx(config),
  lookup: async (req) => {
    created.push(req);
    const attributes = (req.json as any).data.attributes;
    return { status: 201, body: { data: { type: "profile", id: idFor(attributes), attributes } }, text: "" };
  },
});
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

test("KLAVIYO RudderStack fixture: v2 identify with flattenProperties upserts the flattened profile, then subscribes it", async () => {
  expect(await klaviyo.transform(idEvent({ ...idTraits, ...friend }), v2({ flattenProperties: true }))).toEqual([
    post("/profile-import", { data: { type: "profile", attributes: { ...idProfile, properties: { ...idProfile.properties, ...flatFriend } }, meta: { patch_properties: {} } } }, H2),
    post(CREATE, job(true, [subProfile("SUBSCRIBED")], listXU), H2),
  ]);
});

test("KLAVIYO RudderStack fixture: v2 identify with subscribe false unsubscribes, without consent channels", async () => {
  const event = idEvent({ ...idTraits, properties: { ...idTraits.properties, subscribe: false }, ...friend });
  expect((await klaviyo.transform(event, v2({ flattenProperties: true })))[1]).toEqual(post(DELETE, job(false, [subProfile(undefined)], listXU), H2));
});

test("KLAVIYO RudderStack fixture: v2 identify takes the klaviyo-profileId external id and integrations.Klaviyo patch fields", async () => {
  const event = idEvent(
    { ...idTraits, appendList1: "New Value 1", appendList2: "New Value 2", unappendList1: "Old Value 1", unappendList2: "Old Value 2", properties: { ...idTraits.properties, subscribe: undefined } },
    {
      context: { externalId: [{ type: "klaviyo-profileId", id: "12345678" }] },
      integrations: { Klaviyo: { fieldsToUnset: ["Unset1", "Unset2"], fieldsToAppend: ["appendList1", "appendList2"], fieldsToUnappend: ["unappendList1", "unappendList2"] }, All: true },
    },
  );
  expect(await klaviyo.transform(event, v2())).toEqual([
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

test("KLAVIYO RudderStack fixture: v2 identify with enforceEmailAsPrimary drops external_id and keeps the userId as _id", async () => {
  const [profile] = await klaviyo.transform(idEvent(idTraits), v2({ enforceEmailAsPrimary: true }));
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

test("KLAVIYO RudderStack fixture: v2 track → /api/events with value, value_currency, time, metric, unique_id and the profile inline", async () => {
  expect(await klaviyo.transform(trEvent({ properties: { ...vp, revenue: 3000, currency: "USD" } }), v2())).toEqual([
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

test("KLAVIYO RudderStack fixture: v2 track with enforceEmailAsPrimary keeps the userId as the profile's _id", async () => {
  const body = (await klaviyo.transform(trEvent(), v2({ enforceEmailAsPrimary: true })))[0]!.body.JSON as any;
  expect(body.data.attributes.profile).toEqual({ data: { type: "profile", attributes: { ...trProfile, properties: { ...trProfile.properties, _id: "sajal12" } } } });
  expect(body.data.attributes.value).toBeUndefined();
});

test("KLAVIYO RudderStack fixture: v2 refusals in RudderStack's words (value, phone, group, type)", async () => {
  await expect(klaviyo.transform(trEvent({ properties: { ...vp, value: { price: 9.99 } } }), v2())).rejects.toThrow("Invalid float value");
  const badPhone = trEvent({ context: { traits: { ...trTraits, email: "test@rudderstack.com", phone: "9112340375" } } });
  await expect(klaviyo.transform(badPhone, v2({ enforceEmailAsPrimary: true }))).rejects.toThrow("Phone number is not in E.164 format.");
  const grp = group({ userId: "user123", groupId: "", traits: { subscribe: true }, context: { traits: { email: "test@rudderstack.com" } } });
  await expect(klaviyo.transform(grp, v2())).rejects.toThrow("groupId is a required field for group events");
  await expect(klaviyo.transform({ ...grp, groupId: "g", traits: {} }, v2())).rejects.toThrow("Subscribe flag should be included in group call");
  await expect(klaviyo.transform({ ...grp, type: "random" }, v2())).rejects.toThrow("Event type random is not supported");
  await expect(klaviyo.transform(grp, v2({ privateApiKey: "" }))).rejects.toThrow("Private API Key is a required field for group events");
  await expect(klaviyo.transform(grp, ctx({ apiVersion: "v9" }))).rejects.toThrow("Unsupported Klaviyo apiVersion: v9");
});

test("KLAVIYO RudderStack fixture: v2 screen uses the name as metric and integrations.klaviyo appends inside the event's profile", async () => {
  const event = screen({
    name: "Viewed Screen", userId: "sajal12", anonymousId: "9c6bd77ea9da3e68", originalTimestamp: "2021-01-25T15:32:56.409Z",
    integrations: { klaviyo: { fieldsToAppend: ["append1"] } },
    context: { traits: { id: "user@1", age: "22", email: "test@rudderstack.com", phone: "+9112340375", anonymousId: "9c6bd77ea9da3e68", append1: "value1" } },
    properties: { value: 9.99, currency: "USD", PreviouslyVicePresident: true, YearElected: 1801, VicePresidents: ["Aaron Burr", "George Clinton"] },
  });
  expect(await klaviyo.transform(event, v2())).toEqual([
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

test("KLAVIYO RudderStack fixture: v2 group subscribes with the config's consent, unsubscribes without", async () => {
  expect(await klaviyo.transform(grpEvent(true), v2({ consent: ["email"] }))).toEqual([post(CREATE, job(true, [subProfile("SUBSCRIBED", ["email"], "+12 345 678 900")], groupList), H2)]);
  expect(await klaviyo.transform(grpEvent(false), v2({ consent: ["email"] }))).toEqual([post(DELETE, job(false, [subProfile(undefined, [], "+12 345 678 900")], groupList), H2)]);
});

// ---- apiVersion v3 (processor dataV3, router dataV3) ----

test("KLAVIYO RudderStack fixture: v3 uses revision 2026-04-15 and sends UNSUBSCRIBED consents when unsubscribing", async () => {
  expect(await klaviyo.transform(grpEvent(true), ctx({ apiVersion: "v3", consent: ["email", "sms"] }))).toEqual([
    post(CREATE, job(true, [subProfile("SUBSCRIBED", ["email", "sms"], "+12 345 678 900")], groupList), H3),
  ]);
  expect(await klaviyo.transform(grpEvent(false), ctx({ apiVersion: "v3", consent: ["sms"] }))).toEqual([
    post(DELETE, job(false, [subProfile("UNSUBSCRIBED", ["sms"], "+12 345 678 900")], groupList), H3),
  ]);
  const unsub = idEvent({ ...idTraits, properties: { ...idTraits.properties, subscribe: false } });
  expect(await klaviyo.transform(unsub, ctx({ apiVersion: "v3", consent: ["email", "sms"] }))).toEqual([
    post("/profile-import", { data: { type: "profile", attributes: idProfile, meta: { patch_properties: {} } } }, H3),
    post(DELETE, job(false, [subProfile("UNSUBSCRIBED")], listXU), H3),
  ]);
});

// ---- apiVersion v1, and configs without the key (processor trackTestData, screenTestData, groupTestData, ecomTestData, identifyTestData, dataV3) ----

const v1Traits = { ...trTraits, email: "test@rudderstack.com", phone: "9112340375" };
const v1Track = (o: Record<string, any> = {}) =>
  track({ event: "TestEven001", userId: "sajal12", anonymousId: "9c6bd77ea9da3e68", originalTimestamp: "2021-01-25T15:32:56.409Z", context: { traits: v1Traits }, properties: vp, ...o });
const v1Event = (attributes: Record<string, unknown>) => post("/events", { data: { type: "event", attributes } }, H1);

test("KLAVIYO RudderStack fixture: v1 track → /api/events (revision 2023-02-22) with the $-keyed profile and the other traits", async () => {
  const event = v1Track({ event: "TestEven002", context: { traits: { ...v1Traits, name: "Test", description: "Sample description" } }, properties: { ...vp, revenue: 3000 } });
  expect(await klaviyo.transform(event, ctx())).toEqual([
    v1Event({
      metric: { name: "TestEven002" },
      properties: vp,
      profile: { $email: "test@rudderstack.com", $phone_number: "9112340375", $id: "sajal12", age: "22", name: "Test", description: "Sample description" },
      value: 3000,
    }),
  ]);
  // The same for an explicit v1.
  expect(await klaviyo.transform(event, ctx({ apiVersion: "v1" }))).toEqual(await klaviyo.transform(event, ctx()));
});

test("KLAVIYO RudderStack fixture: v1 track with flattenProperties flattens properties and profile (arrays of values stay arrays)", async () => {
  const event = v1Track({ context: { traits: { ...v1Traits, plan_details: { plan_type: "gold", duration: "3 months" } } }, properties: { vicePresdentInfo: vp } });
  expect(await klaviyo.transform(event, ctx({ flattenProperties: true }))).toEqual([
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

test("KLAVIYO RudderStack fixture: v1 track with enforceEmailAsPrimary sends _id, and refuses a profile without e-mail and phone", async () => {
  expect(await klaviyo.transform(v1Track(), ctx({ enforceEmailAsPrimary: true }))).toEqual([
    v1Event({ metric: { name: "TestEven001" }, properties: vp, profile: { $email: "test@rudderstack.com", $phone_number: "9112340375", age: "22", _id: "sajal12" } }),
  ]);
  await expect(klaviyo.transform(v1Track({ context: { traits: trTraits } }), ctx({ enforceEmailAsPrimary: true }))).rejects.toThrow("None of email and phone are present in the payload");
});

test("KLAVIYO track and screen profiles take no e-mail or phone from the properties, as RudderStack's track mapping removes them first (issue 50)", async () => {
  // The event that showed it: properties.email set, no e-mail in the traits.
  const props = { email: "p@example.com", phone: "+14155550100", plan: "x" };
  const v1Profile = async (event: SluiceEvent, c = ctx()) => ((await klaviyo.transform(event, c))[0]!.body.JSON as any).data.attributes.profile;
  expect(await v1Profile(track({ event: "Signed Up", userId: "u1", properties: props, context: { traits: { plan: "pro" } } }))).toEqual({ $id: "u1", plan: "pro" });
  expect(await v1Profile(screen({ event: "Home", userId: "u1", properties: props }))).toEqual({ $id: "u1" });
  // Traits still give them, and the properties still go out without email and phone.
  const withTraits = track({ event: "Signed Up", userId: "u1", properties: props, context: { traits: { email: "t@example.com" } } });
  const body = (await klaviyo.transform(withTraits, ctx()))[0]!.body.JSON as any;
  expect(body.data.attributes.profile).toEqual({ $email: "t@example.com", $id: "u1" });
  expect(body.data.attributes.properties).toEqual({ plan: "x" });
  // With enforceEmailAsPrimary, an e-mail in the properties alone is no e-mail (v1 refuses).
  await expect(klaviyo.transform(track({ event: "Signed Up", userId: "u1", properties: { email: "p@example.com" } }), ctx({ enforceEmailAsPrimary: true }))).rejects.toThrow(
    "None of email and phone are present in the payload",
  );
  // v1's e-commerce events are mapped from the properties by another table, which removes nothing.
  expect(await v1Profile(track({ event: "Product Viewed", userId: "u1", properties: { email: "p@example.com", product_id: "p1" } }))).toEqual({ $email: "p@example.com", $id: "u1" });
  // v2 (and v3): the same, and an invalid phone in the properties is never checked.
  for (const c of [v2(), ctx({ apiVersion: "v3" })]) {
    const event = track({ event: "Signed Up", userId: "u1", anonymousId: "a1", properties: { ...props, phone: "12345" }, context: { traits: { plan: "pro" } } });
    const attributes = ((await klaviyo.transform(event, c))[0]!.body.JSON as any).data.attributes;
    expect(attributes.profile).toEqual({ data: { type: "profile", attributes: { external_id: "u1", anonymous_id: "a1", properties: { plan: "pro" }, meta: { patch_properties: {} } } } });
    expect(attributes.properties).toEqual({ plan: "x" });
  }
  // The event itself is left as it came.
  const input = track({ event: "Signed Up", userId: "u1", properties: { ...props } });
  await klaviyo.transform(input, v2());
  expect(input.properties).toEqual(props);
});

test("KLAVIYO custom traits: a dotted trait name nests, as RudderStack's extractCustomFields writes it", async () => {
  const event = track({ event: "Signed Up", userId: "u1", anonymousId: "a1", context: { traits: { pref: { size: "M" }, "pref.color": "blue", "tags.0": "vip" } } });
  expect(((await klaviyo.transform(event, ctx()))[0]!.body.JSON as any).data.attributes.profile).toEqual({ $id: "u1", pref: { color: "blue", size: "M" }, tags: ["vip"] });
  expect(((await klaviyo.transform(event, v2()))[0]!.body.JSON as any).data.attributes.profile.data.attributes.properties).toEqual({ pref: { color: "blue", size: "M" }, tags: ["vip"] });
  // flattenProperties joins the names with dots again.
  expect(((await klaviyo.transform(event, ctx({ flattenProperties: true })))[0]!.body.JSON as any).data.attributes.profile).toEqual({ $id: "u1", "pref.size": "M", "pref.color": "blue", tags: ["vip"] });
});

test("KLAVIYO RudderStack fixture: v1 screen → the same event request", async () => {
  const event = screen({
    event: "TestEven001", userId: "sajal12", anonymousId: "9c6bd77ea9da3e68", context: { traits: { id: "user@1", age: "22", email: "test@rudderstack.com", phone: "9112340375", anonymousId: "9c6bd77ea9da3e68" } },
    properties: { PreviouslyVicePresident: true, YearElected: 1801, VicePresidents: ["Aaron Burr", "George Clinton"] },
  });
  expect(await klaviyo.transform(event, ctx())).toEqual([
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

test("KLAVIYO RudderStack fixture: v1 e-commerce events become Klaviyo's metrics with their property names", async () => {
  const viewed = { name: "test product", product_id: "1114", sku: "WINNIePuh12", image_url: "http://www.example.com/path/to/product/image.png", url: "http://www.example.com/path/to/product", brand: "Not for Kids", price: 9.9, categories: ["Fiction", "Children"] };
  expect(await klaviyo.transform(ecom("product viewed", viewed), ctx())).toEqual([
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
  expect(await klaviyo.transform(ecom("checkout started", checkout), ctx({ flattenProperties: true }))).toEqual([
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
  expect(await klaviyo.transform({ ...ecom("product added", added), timestamp: "2021-01-25T15:32:56.409Z" }, ctx())).toEqual([
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

test("KLAVIYO RudderStack fixture: v1 group → a list_id/subscriptions job; refusals in RudderStack's words", async () => {
  const event = group({ userId: "user123", groupId: "XUepkK", traits: { subscribe: true }, context: { traits: { email: "test@rudderstack.com", phone: "+12 345 678 900", consent: ["email"] } }, timestamp: "2020-01-21T00:21:34.208Z" });
  const v1Job = { data: { type: "profile-subscription-bulk-create-job", attributes: { list_id: "XUepkK", subscriptions: [{ email: "test@rudderstack.com", phone_number: "+12 345 678 900" }] } } };
  expect(await klaviyo.transform(event, ctx())).toEqual([post(CREATE, v1Job, H1)]);
  // A configured consent adds channels (the group's context consent is not read).
  expect(await klaviyo.transform(event, ctx({ apiVersion: "v1", consent: ["email", "sms"] }))).toEqual([
    post(CREATE, { data: { ...v1Job.data, attributes: { ...v1Job.data.attributes, subscriptions: [{ ...v1Job.data.attributes.subscriptions[0], channels: { email: ["MARKETING"], sms: ["MARKETING"] } }] } } }, H1),
  ]);
  await expect(klaviyo.transform({ ...event, groupId: "" }, ctx())).rejects.toThrow("groupId is a required field for group events");
  await expect(klaviyo.transform({ ...event, traits: { subscribe: false } }, ctx())).rejects.toThrow("Subscribe flag should be true for group call");
  await expect(klaviyo.transform({ ...event, type: "random" }, ctx())).rejects.toThrow("Event type random is not supported");
});

test("KLAVIYO RudderStack fixture: v1 identify creates the profile, patches the id Klaviyo answers with, then subscribes with channels", async () => {
  const traits = { ...idTraits };
  const event = idEvent(traits);
  const attributes = {
    external_id: "user@1", email: "test@rudderstack.com", first_name: "Test", last_name: "Rudderlabs", phone_number: "+12 345 578 900", title: "Developer", organization: "Rudder",
    location: { city: "Tokyo", region: "Kanto", country: "JP", zip: "100-0001", address1: "63, Shibuya" },
    properties: { Flagged: false, Residence: "Shibuya", street: "63, Shibuya" },
  };
  const v1Sub = { data: { type: "profile-subscription-bulk-create-job", attributes: { list_id: "XUepkK", subscriptions: [{ email: "test@rudderstack.com", phone_number: "+12 345 578 900", channels: { email: ["MARKETING"], sms: ["MARKETING"] } }] } } };
  const from = created.length;
  expect(await klaviyo.transform(event, v1ctx())).toEqual([
    post(`/profiles/${PROFILE_ID}`, { data: { type: "profile", attributes, id: PROFILE_ID } }, H1, "PATCH"),
    post(CREATE, v1Sub, H1),
  ]);
  // The same profile was created first, without an id, with RudderStack's create headers.
  expect(created.slice(from)).toEqual([
    {
      method: "POST",
      endpoint: `${API}/profiles`,
      headers: { Authorization: "Klaviyo-API-Key pk_1", accept: "application/json", "content-type": "application/json", revision: "2023-02-22" },
      json: { data: { type: "profile", attributes } },
    },
  ]);
  // A klaviyo-profileId external id changes nothing: RudderStack's v1 does not read it.
  const withId = idEvent(traits, { context: { externalId: [{ type: "klaviyo-profileId", id: "P-given" }] } });
  expect((await klaviyo.transform(withId, v1ctx()))[0]!.endpoint).toBe(`${API}/profiles/${PROFILE_ID}`);
  const { email: _e, phone: _p, ...noContact } = traits;
  const before = created.length;
  await expect(klaviyo.transform(idEvent(noContact), v1ctx({ enforceEmailAsPrimary: true }))).rejects.toThrow("None of email and phone are present in the payload");
  expect(created.length).toBe(before);
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

test("KLAVIYO RudderStack fixture: router batches a run of identifies: profiles, then one job per list and direction", async () => {
  const transformed = [
    ...(await klaviyo.transform(rtIdentify(1, true, ["email"], "anonTestKlaviyo1"), v2())).map((r) => keyed(r, "u1")),
    ...(await klaviyo.transform(rtIdentify(2, true, ["email"], "anon2"), v2())).map((r) => keyed(r, "u2")),
    ...(await klaviyo.transform(rtIdentify(3, false, ["email"], "anon3"), v2())).map((r) => keyed(r, "u3")),
    ...(await klaviyo.transform(rtIdentify(4, false, ["email"], "anon id 4"), v2())).map((r) => keyed(r, "u4")),
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

test("KLAVIYO RudderStack fixture: router sends anonymous events with an anonymous profile; identifies without a subscription after the subscribing ones", async () => {
  const anonymous: SluiceEvent = { channel: "web", context: { traits: {} }, type: "track", messageId: "someTrackMessageId2", anonymousId: "anonTestKlaviyo2", event: "viewed product", properties: { price: "120" } };
  const [event] = await klaviyo.transform(anonymous, v2());
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
  // An identify without a subscription follows the subscribing ones; a user's two identifies
  // subscribing to one list share the group, their profiles in order, then one job for both.
  const plain = await klaviyo.transform(identify({ userId: "testKlaviyo5", anonymousId: "a5", context: {}, traits: { email: "testklaviyo5@rs.com", firstname: "Test Klaviyo 5" } }), v2());
  const sub2 = (await klaviyo.transform(rtIdentify(2, true, ["email"]), v2())).map((r) => keyed(r, "u2"));
  const sub2again = (await klaviyo.transform(rtIdentify(2, true, ["email"]), v2())).map((r) => keyed(r, "u2"));
  const out = klaviyo.batch!([keyed(event!, "u1"), keyed(plain[0]!, "u5"), ...sub2, ...sub2again], v2());
  expect(out.map((r) => r.endpoint.replace(API, ""))).toEqual(["/events", "/profile-import", "/profile-import", CREATE, "/profile-import"]);
  expect((out[3]!.body.JSON as any).data.attributes.profiles.data).toHaveLength(2);
  expect((out[4]!.body.JSON as any).data.attributes.email).toBe("testklaviyo5@rs.com");
  expect(out[3]!.userKey).toBe("u2");
});

test("KLAVIYO batch: group jobs for one list merge, 100 profiles per job; v1 jobs merge their subscriptions", async () => {
  const grp = async (i: number, config: DestinationContext) =>
    keyed((await klaviyo.transform(group({ userId: `u${i}`, groupId: "L1", traits: { subscribe: true, email: `u${i}@example.com` } }), config))[0]!, `u${i}`);
  const groups = await Promise.all(Array.from({ length: 101 }, (_, i) => grp(i, v2())));
  const out = klaviyo.batch!([...groups, keyed((await klaviyo.transform(trEvent(), v2()))[0]!, "t")], v2());
  expect(out).toHaveLength(3);
  expect((out[0]!.body.JSON as any).data.attributes.profiles.data).toHaveLength(100);
  expect((out[1]!.body.JSON as any).data.attributes.profiles.data[0].attributes.email).toBe("u100@example.com");
  expect(out[2]!.endpoint).toBe(`${API}/events`);
  const v1 = klaviyo.batch!([await grp(1, ctx()), await grp(2, ctx())], ctx());
  expect(v1).toEqual([post(CREATE, { data: { type: "profile-subscription-bulk-create-job", attributes: { list_id: "L1", subscriptions: [{ email: "u1@example.com" }, { email: "u2@example.com" }] } } }, H1)]);
});

// ---- router fixtures: router/data.ts (v1) and router/dataV2.ts cases 1 and 4, on router/commonConfig.ts's input ----

const commonTraits = (email: string, userIdTrait: string, properties: Record<string, unknown>) => ({
  firstName: "Test", lastName: "Rudderlabs", email, phone: "+12 345 578 900", userId: userIdTrait, title: "Developer", organization: "Rudder", city: "Tokyo",
  region: "Kanto", country: "JP", zip: "100-0001", Flagged: false, Residence: "Shibuya", properties,
});
/** commonConfig's five events. */
const commonInput = (): SluiceEvent[] => {
  const context = (traits: Record<string, unknown>) => ({ traits });
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
async function routerRun(events: SluiceEvent[], config: DestinationContext) {
  const requests: DestinationRequest[] = [];
  const errors: string[] = [];
  for (const e of events) {
    try {
      requests.push(...(await klaviyo.transform(e, config)).map((r) => keyed(r, String(e.userId))));
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

test("KLAVIYO RudderStack fixture: v1 router sends each list's subscription job ahead of the profile patches; groups batch apart from identifies", async () => {
  const { out, errors } = await routerRun(commonInput(), v1ctx());
  const patch = (email: string) => post(`/profiles/${PROFILE_ID}`, { data: { type: "profile", attributes: rtAttributes(email), id: PROFILE_ID } }, H1, "PATCH");
  const v1Job = (subscription: Record<string, unknown>) =>
    post(CREATE, { data: { type: "profile-subscription-bulk-create-job", attributes: { list_id: "XUepkK", subscriptions: [subscription] } } }, H1);
  // RudderStack's order is [group job], [job, patch 2], [patch 1]: its identify group ends last as it waits for the
  // lookups, and user "test"'s two identifies share a group. Sluice sends the groups in order, the second identify in its own.
  expect(out).toEqual([
    patch("test_1@rudderstack.com"),
    v1Job({ email: "test@rudderstack.com", phone_number: "+12 345 578 900", channels: { email: ["MARKETING"], sms: ["MARKETING"] } }),
    patch("test@rudderstack.com"),
    v1Job({ email: "test@rudderstack.com", phone_number: "+12 345 678 900" }),
  ]);
  expect(errors).toEqual(["Event type random is not supported", "groupId is a required field for group events"]);
});

test("KLAVIYO RudderStack fixture: v1 router merges the jobs of several identifies for one list, job first", async () => {
  const events = [1, 2].map((n) => identify({ userId: `u${n}`, context: { traits: { email: `u${n}@rs.com`, properties: { listId: "L", subscribe: true } } } }));
  const { out } = await routerRun(events, v1ctx({}, (a) => `p${a.external_id.slice(1)}`));
  expect(out.map((r) => `${r.method} ${r.endpoint.replace(API, "")}`)).toEqual([`POST ${CREATE}`, "PATCH /profiles/p1", "PATCH /profiles/p2"]);
  expect((out[0]!.body.JSON as any).data.attributes.subscriptions).toEqual([{ email: "u1@rs.com" }, { email: "u2@rs.com" }]);
});

test("KLAVIYO RudderStack fixture: v2 router on the same input: profile then job, the plain profile, the group's job from its own consent", async () => {
  const { out, errors } = await routerRun(commonInput(), v2());
  const profile = (email: string) =>
    post("/profile-import", { data: { type: "profile", attributes: { ...rtAttributes(email), anonymous_id: "97c46c81-3140-456d-b2a9-690d70aaca35" }, meta: { patch_properties: {} } } }, H2);
  // RudderStack's order is [profile 2, job 2], [profile 1], [group job]: user "test"'s two identifies share a group and
  // the later profile goes first. Sluice puts the second identify in a group of its own, after the first.
  expect(out).toEqual([
    profile("test_1@rudderstack.com"),
    profile("test@rudderstack.com"),
    post(CREATE, job(true, [subProfile("SUBSCRIBED")], listXU), H2),
    post(CREATE, job(true, [subProfile("SUBSCRIBED", ["email"], "+12 345 678 900")], listXU), H2),
  ]);
  expect(errors).toEqual(["Event type random is not supported", "groupId is a required field for group events"]);
});

test("KLAVIYO RudderStack fixture: v2 router rETL case: the first external id becomes the userId and a trait; subscribe defaults to true", async () => {
  const rEtl = (n: number, traits: Record<string, unknown>, top: boolean) =>
    ({
      channel: "web", type: "identify", anonymousId: `anonTestKlaviyo${n}`, userId: `testKlaviyo${n}`, ...(top && { traits }),
      context: { mappedToDestination: "true", externalId: [{ id: traits.email, identifierType: "email", type: "KLAVIYO-profile_v2" }], ...(!top && { traits }) },
    }) as unknown as SluiceEvent;
  const { out } = await routerRun(
    [
      rEtl(1, { properties: { subscribe: false }, email: "testklaviyo1@email.com", firstname: "Test Klaviyo 1" }, false),
      rEtl(2, { email: "testklaviyo2@rs.com", firstname: "Test Klaviyo 2", properties: { subscribe: true, listId: "configListId", consent: ["email"] } }, true),
    ],
    v2(),
  );
  const profile = (n: number, email: string) =>
    post("/profile-import", { data: { type: "profile", attributes: { external_id: email, anonymous_id: `anonTestKlaviyo${n}`, email, first_name: `Test Klaviyo ${n}`, properties: {} }, meta: { patch_properties: {} } } }, H2);
  expect(out).toEqual([
    profile(2, "testklaviyo2@rs.com"),
    post(CREATE, job(true, [emailOnly(2, "SUBSCRIBED")], configList), H2),
    profile(1, "testklaviyo1@email.com"),
  ]);
});

test("KLAVIYO reverse ETL identify: the external id goes into the traits under its type; traits without properties subscribe to the config's list", async () => {
  const event = {
    type: "identify", messageId: "m", userId: "row-1", anonymousId: "a-1",
    context: { mappedToDestination: true, externalId: [{ id: "crm-42", identifierType: "crmId", type: "KLAVIYO-profile_v2" }], traits: { email: "r@x.io" } },
  } as unknown as SluiceEvent;
  const config = v2({ listId: "L9", consent: "email" });
  expect(await klaviyo.transform(event, config)).toEqual([
    post("/profile-import", { data: { type: "profile", attributes: { external_id: "crm-42", anonymous_id: "a-1", email: "r@x.io", properties: { crmId: "crm-42" } }, meta: { patch_properties: {} } } }, H2),
    post(CREATE, job(true, [{ type: "profile", attributes: { email: "r@x.io", subscriptions: { email: { marketing: { consent: "SUBSCRIBED" } } } } }], { list: { data: { type: "list", id: "L9" } } }), H2),
  ]);
  // The caller's event is left as it was.
  expect((event as any).userId).toBe("row-1");
  expect((event as any).context.traits).toEqual({ email: "r@x.io" });
  // v1 takes the same steps; without the mark nothing changes.
  expect(((await klaviyo.transform(event, v1ctx({ listId: "L9" })))[1]!.body.JSON as any).data.attributes.list_id).toBe("L9");
  const plain = { ...event, context: { ...(event as any).context, mappedToDestination: undefined } } as SluiceEvent;
  expect(await klaviyo.transform(plain, config)).toHaveLength(1);
  expect(((await klaviyo.transform(plain, config))[0]!.body.JSON as any).data.attributes.external_id).toBe("row-1");
});

// ---- behaviours read from RudderStack's code (no fixture of theirs covers them) ----

const nestedArrays = { mixed: [1, { a: 1 }], objFirst: [{ a: 1 }, 2, [3, 4]], nested: [[1, 2], [{ b: 1 }], []], nullFirst: [null, 1], deep: { list: [1, [2, { c: 3 }]] } };
/** flattenJson's result: an array is opened up only when its first item is an object, an array or null. */
const flatNested = {
  mixed: [1, { a: 1 }], "objFirst[0].a": 1, "objFirst[1]": 2, "objFirst[2]": [3, 4], "nested[0]": [1, 2], "nested[1][0].b": 1, "nested[2]": [],
  "nullFirst[0]": null, "nullFirst[1]": 1, "deep.list": [1, [2, { c: 3 }]],
};
const { "nullFirst[0]": _null, ...flatNestedWithoutNull } = flatNested;

test("KLAVIYO flattenProperties keeps mixed and nested arrays as RudderStack does: opened up only when the first item is an object, an array or null", async () => {
  const idNested = identify({ userId: "u1", traits: { email: "a@x.io", ...nestedArrays }, context: {} });
  const trNested = track({ userId: "u1", event: "E", properties: nestedArrays, context: { traits: { email: "a@x.io", ...nestedArrays } } });
  // v1: the flattened values are sent as they are, a null included.
  const v1Id = await klaviyo.transform(idNested, v1ctx({ flattenProperties: true }));
  expect((v1Id[0]!.body.JSON as any).data.attributes.properties).toEqual(flatNested);
  const v1Tr = ((await klaviyo.transform(trNested, ctx({ flattenProperties: true })))[0]!.body.JSON as any).data.attributes;
  expect(v1Tr.properties).toEqual(flatNested);
  expect(v1Tr.profile).toEqual({ $email: "a@x.io", $id: "u1", ...flatNested });
  // v2 and v3: the profile's properties lose a null after flattening; the event's properties keep it.
  for (const version of ["v2", "v3"]) {
    const config = ctx({ apiVersion: version, flattenProperties: true });
    expect(((await klaviyo.transform(idNested, config))[0]!.body.JSON as any).data.attributes.properties).toEqual(flatNestedWithoutNull);
    const tr = ((await klaviyo.transform(trNested, config))[0]!.body.JSON as any).data.attributes;
    expect(tr.properties).toEqual(flatNested);
    expect(tr.profile.data.attributes.properties).toEqual(flatNestedWithoutNull);
  }
  // Without flattenProperties every array goes as it came.
  expect(((await klaviyo.transform(idNested, v2()))[0]!.body.JSON as any).data.attributes.properties).toEqual(nestedArrays);
  expect(((await klaviyo.transform(trNested, ctx()))[0]!.body.JSON as any).data.attributes.properties).toEqual(nestedArrays);
});

test("KLAVIYO v1 identify maps as RudderStack's KlaviyoIdentify: e-mail from the traits only, region from state, zip from postalCode", async () => {
  const event = identify({ userId: "u1", context: { traits: { phone: "+15555550100", state: "CA", postalCode: "94105" } } });
  const [patch] = await klaviyo.transform(event, v1ctx({}, () => "P1"));
  expect(patch).toEqual(
    post("/profiles/P1", { data: { type: "profile", attributes: { external_id: "u1", phone_number: "+15555550100", location: { region: "CA", zip: "94105" }, properties: { state: "CA", postalCode: "94105" } }, id: "P1" } }, H1, "PATCH"),
  );
});

test("KLAVIYO v1 e-commerce items carry RowTotal and ProductCategories, as RudderStack's Items mapping", async () => {
  const [req] = await klaviyo.transform(ecom("checkout started", { order_id: "o1", items: [{ product_id: "p1", price: 2, quantity: 3, row_total: 6, categories: ["Games"] }] }), ctx());
  expect((req!.body.JSON as any).data.attributes.properties.items).toEqual([{ ProductID: "p1", ItemPrice: 2, Quantity: 3, RowTotal: 6, ProductCategories: ["Games"] }]);
});

test("KLAVIYO v3 refuses a subscription job that states no consent, as RudderStack's v3", async () => {
  const message = "No subscriptions could be resolved for v3 API version. Ensure consent channels (email/sms) match the identifiers present in the event";
  const sub = (traits: Record<string, unknown>) => identify({ userId: "u1", context: { traits: { email: "a@x.io", ...traits } } });
  await expect(klaviyo.transform(sub({ properties: { subscribe: true, listId: "L" } }), ctx({ apiVersion: "v3" }))).rejects.toThrow(message);
  // A consent channel without its identifier states nothing either.
  await expect(klaviyo.transform(sub({ properties: { subscribe: false, listId: "L", consent: ["sms"] } }), ctx({ apiVersion: "v3" }))).rejects.toThrow(message);
  await expect(klaviyo.transform(group({ groupId: "L", traits: { subscribe: true, email: "a@x.io" } }), ctx({ apiVersion: "v3" }))).rejects.toThrow(message);
  // v2 sends such a job without `subscriptions`.
  expect((await klaviyo.transform(sub({ properties: { subscribe: true, listId: "L" } }), v2()))[1]!.endpoint).toBe(`${API}${CREATE}`);
});

// ---- batch(): RudderStack's router ----

const trackOf = async (user: string) => keyed((await klaviyo.transform(track({ userId: user, event: `e-${user}`, context: {} }), v2()))[0]!, user);
const identifyOf = async (user: string, list?: string, subscribe = true, config = v2()) =>
  (await klaviyo.transform(identify({ userId: user, context: { traits: { email: `${user}@x.io`, ...(list && { properties: { listId: list, subscribe } }) } } }), config)).map((r) =>
    keyed(r, user),
  );
const groupOf = async (user: string, list: string, config = v2()) =>
  keyed((await klaviyo.transform(group({ userId: user, groupId: list, traits: { subscribe: true, email: `${user}@x.io` } }), config))[0]!, user);
const shortly = (rs: DestinationRequest[]) =>
  rs.map((r) => {
    const data = (r.body.JSON as any).data;
    if (r.endpoint.endsWith("/events")) return `event ${data.attributes.metric.data.attributes.name}`;
    if (r.endpoint.includes("/profile")  && !r.endpoint.includes("jobs")) return `profile ${data.attributes.email}`;
    const who = data.attributes.profiles ? data.attributes.profiles.data.map((p: any) => p.attributes.email) : data.attributes.subscriptions.map((p: any) => p.email);
    const list = data.relationships ? data.relationships.list.data.id : data.attributes.list_id;
    return `${r.endpoint.endsWith("create-jobs") ? "subscribe" : "unsubscribe"} ${JSON.stringify(list)} ${who.join(",")}`;
  });

test("KLAVIYO batch → RudderStack's router: events grouped by type in order of first appearance; per group tracks, then per list subscribing and unsubscribing jobs after their profiles, then plain profiles", async () => {
  const out = klaviyo.batch!(
    (await Promise.all([identifyOf("u1", "L1"), trackOf("u2"), identifyOf("u3"), identifyOf("u4", "L2", false), identifyOf("u5", "L1"), trackOf("u6"), groupOf("u7", "L1")])).flat(),
    v2(),
  );
  expect(shortly(out)).toEqual([
    "profile u1@x.io", "profile u5@x.io", 'subscribe "L1" u1@x.io,u5@x.io',
    "profile u4@x.io", 'unsubscribe "L2" u4@x.io',
    "profile u3@x.io",
    "event e-u2", "event e-u6",
    'subscribe "L1" u7@x.io',
  ]);
  // A merged job belongs to no single user; a job of one user keeps its key.
  expect(out[2]!.userKey).toBeUndefined();
  expect(out[4]!.userKey).toBe("u4");
});

test("KLAVIYO batch: a user's later event goes to a group after that user's earlier one, as RudderStack's router keeps a user's order across types", async () => {
  const out = klaviyo.batch!((await Promise.all([identifyOf("u1", "L1"), trackOf("u1"), identifyOf("u2", "L1"), trackOf("u2")])).flat(), v2());
  // u2's identify joins u1's group; u2's track joins the track group, which comes after u1's identify and u2's.
  expect(shortly(out)).toEqual(["profile u1@x.io", "profile u2@x.io", 'subscribe "L1" u1@x.io,u2@x.io', "event e-u1", "event e-u2"]);
});

test("KLAVIYO batch: a user's identifies subscribing to one list share a group and one job, as in RudderStack's router", async () => {
  const out = klaviyo.batch!((await Promise.all([identifyOf("u1", "L1"), identifyOf("u2", "L1"), identifyOf("u1", "L1"), identifyOf("u1")])).flat(), v2());
  // u1's profiles go in order, the job lists u1's two subscriptions in order, and u1's plain identify comes last.
  expect(shortly(out)).toEqual(["profile u1@x.io", "profile u2@x.io", "profile u1@x.io", 'subscribe "L1" u1@x.io,u2@x.io,u1@x.io', "profile u1@x.io"]);
  const unsubscribing = klaviyo.batch!((await Promise.all([identifyOf("u1", "L1"), identifyOf("u1", "L1", false)])).flat(), v2());
  // A later unsubscription from the same list is a later group: RudderStack's one group would send it first.
  expect(shortly(unsubscribing)).toEqual(["profile u1@x.io", 'subscribe "L1" u1@x.io', "profile u1@x.io", 'unsubscribe "L1" u1@x.io']);
});

test("KLAVIYO batch: a user's second identify goes to a later group, where RudderStack's router would send that user's later profile first", async () => {
  const out = klaviyo.batch!((await Promise.all([identifyOf("u1"), identifyOf("u2", "L1"), identifyOf("u1", "L1")])).flat(), v2());
  // RudderStack: profile u2, profile u1 (second), job u2+u1, profile u1 (first): u1's first attributes would win.
  expect(shortly(out)).toEqual(["profile u2@x.io", 'subscribe "L1" u2@x.io', "profile u1@x.io", "profile u1@x.io", 'subscribe "L1" u1@x.io']);
  // Two tracks of one user stay in one group: it keeps them in order.
  expect(shortly(klaviyo.batch!((await Promise.all((await Promise.all([trackOf("u1"), identifyOf("u2"), trackOf("u1")])).flat())).flat(), v2()))).toEqual(["event e-u1", "event e-u1", "profile u2@x.io"]);
});

test("KLAVIYO batch orders lists as RudderStack's grouping does (ids that read as numbers first) and names the list by its key, as text", async () => {
  const out = klaviyo.batch!((await Promise.all([groupOf("u1", "Lb"), groupOf("u2", 20 as unknown as string), groupOf("u3", "3"), groupOf("u4", "Lb")])).flat(), v2());
  expect(shortly(out)).toEqual(['subscribe "3" u3@x.io', 'subscribe "20" u2@x.io', 'subscribe "Lb" u1@x.io,u4@x.io']);
});

test("KLAVIYO batch (v1): per group one list_id job per list, every subscribing identify's profile after the first job, then the other identifies", async () => {
  const config = v1ctx({}, (a) => `P-${a.external_id}`);
  const v1Identify = async (user: string, list?: string) =>
    (await klaviyo.transform(identify({ userId: user, context: { traits: { email: `${user}@x.io`, ...(list && { properties: { listId: list, subscribe: true } }) } } }), config)).map((r) =>
      keyed(r, user),
    );
  const out = klaviyo.batch!([...(await v1Identify("u1")), ...(await v1Identify("u2", "L1")), ...(await v1Identify("u3", "L2")), ...(await v1Identify("u4", "L1"))], ctx());
  expect(shortly(out)).toEqual(['subscribe "L1" u2@x.io,u4@x.io', "profile u2@x.io", "profile u3@x.io", "profile u4@x.io", 'subscribe "L2" u3@x.io', "profile u1@x.io"]);
  expect(out.map((r) => r.method)).toEqual(["POST", "PATCH", "PATCH", "PATCH", "POST", "PATCH"]);
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

test("KLAVIYO through the pipeline: a user's two identifies subscribing to one list → both profiles, then one subscription job for both", async () => {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "kl-grouped", type: "KLAVIYO", config: { privateApiKey: "pk_grouped", apiVersion: "v2" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  // One delivery that a user transformation makes two identifies of: the only way one user's
  // several events reach one batch (the router takes one delivery per user).
  const code = `function transformEvent(e) {
    const identify = (email) => ({ ...e, context: { traits: { email, properties: { listId: "L-grouped", subscribe: true, consent: ["email"] } } } });
    return [identify("first@example.com"), identify("second@example.com")];
  }`;
  expect((await api(s.url, "POST", "/v2/transformations", { name: "kl-split", code, destinationIds: [dst.json.id] })).status).toBe(201);
  expect((await sendEvent(s.url, src.writeKey, "identify", { userId: "g-1" })).status).toBe(200);
  const calls = () => sink.received.filter((r) => r.headers.authorization === "Klaviyo-API-Key pk_grouped");
  await waitFor(() => calls().some((r) => r.path === "/api/profile-subscription-bulk-create-jobs"), { what: "the subscription job" });
  expect(calls().map((r) => r.path)).toEqual(["/api/profile-import", "/api/profile-import", "/api/profile-subscription-bulk-create-jobs"]);
  expect(calls().slice(0, 2).map((r) => r.body.data.attributes.email)).toEqual(["first@example.com", "second@example.com"]);
  const job = calls()[2]!.body.data;
  expect(job.relationships.list.data.id).toBe("L-grouped");
  expect(job.attributes.profiles.data.map((p: any) => p.attributes.email)).toEqual(["first@example.com", "second@example.com"]);
});
