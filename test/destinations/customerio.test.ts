import { afterAll, beforeAll, expect, test } from "bun:test";
import { customerio } from "../../src/destinations/customerio";
import { publicDefinition } from "../../src/destinations/registry";
import { type TestServer, api, cleanup, createSource, jsonRequest, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";
import type { DestinationContext, DestinationRequest, SluiceEvent } from "../../src/destinations/types";

const ctx = (config: Record<string, any> = {}, baseUrl?: string): DestinationContext => ({
  config: { siteID: "site_1", apiKey: "key_1", ...config },
  destination: { id: "dest-cio", name: "Customer.io", workspaceId: "ws-1" },
  baseUrl,
});
const AUTH = `Basic ${btoa("site_1:key_1")}`;
/** RudderStack labels only the /v2/batch calls as JSON; the others carry the Authorization header alone. */
const HEADERS = { Authorization: AUTH };
const JSON_HEADERS = { Authorization: AUTH, "Content-Type": "application/json" };
const ts = "2024-05-01T10:00:00.000Z";
const secs = Date.parse(ts) / 1000;
const API = "https://track.customer.io/api";

const request = (method: DestinationRequest["method"], endpoint: string, json: Record<string, unknown>, headers: Record<string, string> = HEADERS) =>
  jsonRequest(method, endpoint, json, headers);
const one = (event: SluiceEvent, config?: Record<string, any>) => {
  const reqs = customerio.transform(event, ctx(config));
  expect(reqs).toHaveLength(1);
  return reqs[0]!;
};

test("CUSTOMERIO identify → PUT track.customer.io/api/v1/customers/{id} with attributes, address, created_at, _timestamp and anonymous_id", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m-1",
    userId: "cio-42",
    anonymousId: "anon-1",
    timestamp: ts,
    traits: { email: "ada@example.com", plan: "pro", gone: null, userId: "x", createdAt: "2024-01-01T00:00:00.000Z", address: { city: "London", country: "UK" } },
    user_properties: { legacy: true },
  };
  expect(one(event)).toEqual(
    request("PUT", `${API}/v1/customers/cio-42`, {
      email: "ada@example.com",
      plan: "pro",
      gone: null,
      legacy: true,
      city: "London",
      country: "UK",
      created_at: Date.parse("2024-01-01T00:00:00.000Z") / 1000,
      _timestamp: secs,
      anonymous_id: "anon-1",
    }),
  );
});

test("CUSTOMERIO identify by email → the email is URL-encoded in the path; context.traits when no traits", () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", anonymousId: "", context: { traits: { email: "ada@example.com", plan: "pro" } } };
  expect(one(event)).toEqual(request("PUT", `${API}/v1/customers/ada%40example.com`, { email: "ada@example.com", plan: "pro" }));
  expect(() => customerio.transform({ type: "identify", messageId: "m", anonymousId: "a" }, ctx())).toThrow("userId or email is not present");
});

test("CUSTOMERIO track (identified) → POST /customers/{id}/events with name, type event, data and timestamp", () => {
  const event: SluiceEvent = { type: "track", messageId: "m-2", userId: "cio-42", event: "Purchased", timestamp: ts, properties: { price: 23 } };
  expect(one(event)).toEqual(request("POST", `${API}/v1/customers/cio-42/events`, { data: { price: 23 }, name: "Purchased", type: "event", timestamp: secs }));
  // The name is sent as it came; a blank-looking name is still a name.
  expect(one({ ...event, event: " Purchased " }).body.JSON.name).toBe(" Purchased ");
  expect(() => customerio.transform({ ...event, event: "" }, ctx())).toThrow("Event is a required field and should be a string");
});

test("CUSTOMERIO track (anonymous) → POST /api/v1/events with anonymous_id; names cut to 100 bytes", () => {
  const event: SluiceEvent = { type: "track", messageId: "m-3", userId: "", anonymousId: "anon-7", event: "Viewed Pricing", originalTimestamp: ts, properties: { plan: "pro" } };
  expect(one(event)).toEqual(
    request("POST", `${API}/v1/events`, { data: { plan: "pro" }, name: "Viewed Pricing", type: "event", timestamp: secs, anonymous_id: "anon-7" }),
  );
  // "é" is two bytes: 60 of them are 120 bytes, cut to 50 whole characters.
  expect(one({ ...event, event: "é".repeat(60) }).body.JSON.name).toBe("é".repeat(50));
  expect(() => customerio.transform({ type: "track", messageId: "m", event: "E" }, ctx())).toThrow("Anonymous id/ user id is required");
});

test("CUSTOMERIO page → type 'page' named by page name or url; screen → 'Viewed <name> Screen'", () => {
  const page: SluiceEvent = { type: "page", messageId: "p", userId: "u1", name: "Pricing", timestamp: ts, properties: { url: "https://x.io/pricing" } };
  expect(one(page)).toEqual(request("POST", `${API}/v1/customers/u1/events`, { data: { url: "https://x.io/pricing" }, name: "Pricing", type: "page", timestamp: secs }));
  expect(one({ ...page, name: "" }).body.JSON.name).toBe("https://x.io/pricing");
  // An identified page without any name is still sent (RudderStack does), an anonymous one cannot be.
  expect(one({ ...page, name: undefined, properties: {} }).body.JSON).toEqual({ data: {}, type: "page", timestamp: secs });
  expect(() => customerio.transform({ ...page, userId: undefined, anonymousId: "a", name: undefined, properties: {} }, ctx())).toThrow(
    "Event Name type should be a string",
  );
  const screen: SluiceEvent = { type: "screen", messageId: "s", userId: "u1", event: "Home", timestamp: ts };
  expect(one(screen)).toEqual(request("POST", `${API}/v1/customers/u1/events`, { name: "Viewed Home Screen", type: "event", timestamp: secs }));
  const anonymous = one({ type: "screen", messageId: "s", anonymousId: "a", timestamp: ts });
  expect(anonymous.body.JSON).toEqual({ name: "Viewed  Screen", type: "event", timestamp: secs, anonymous_id: "a" });
});

test("CUSTOMERIO device events → PUT /customers/{id}/devices; Application Uninstalled → DELETE the device (token encoded)", () => {
  const opened: SluiceEvent = {
    type: "track",
    messageId: "d",
    userId: "u1",
    event: "Application Opened",
    timestamp: ts,
    properties: { app_version: "2.0" },
    context: { device: { token: "tok/1", type: "iPadOS" } },
  };
  expect(one(opened)).toEqual(
    request("PUT", `${API}/v1/customers/u1/devices`, { device: { app_version: "2.0", id: "tok/1", last_used: secs, platform: "ios" } }),
  );
  expect(one({ ...opened, event: "Token Refreshed" }, { deviceTokenEventName: "Token Refreshed" }).method).toBe("PUT");
  expect(one({ ...opened, event: "Application Uninstalled" })).toEqual(request("DELETE", `${API}/v1/customers/u1/devices/tok%2F1`, {}));
  expect(() => customerio.transform({ ...opened, event: "Application Uninstalled", context: {} }, ctx())).toThrow(
    "userId/email or device_token not present",
  );
  // Without a token a device event is an ordinary event.
  expect(one({ ...opened, context: {} }).endpoint).toBe(`${API}/v1/customers/u1/events`);
});

test("CUSTOMERIO alias: an id is an e-mail by validator's isEmail, as RudderStack tells them (issue 50): .vanderberg@example.com is an id", () => {
  const alias: SluiceEvent = { type: "alias", messageId: "al", userId: ".vanderberg@example.com", previousId: "van.derberg@example.com" };
  expect(one(alias).body.JSON).toEqual({ primary: { id: ".vanderberg@example.com" }, secondary: { email: "van.derberg@example.com" } });
});

test("CUSTOMERIO alias → POST /api/v1/merge_customers (email ids detected)", () => {
  const alias: SluiceEvent = { type: "alias", messageId: "al", userId: "ada@example.com", previousId: "old-1" };
  expect(one(alias)).toEqual(request("POST", `${API}/v1/merge_customers`, { primary: { email: "ada@example.com" }, secondary: { id: "old-1" } }));
  expect(() => customerio.transform({ ...alias, previousId: "" }, ctx())).toThrow("Both userId and previousId are mandatory");
});

test("CUSTOMERIO group → /api/v2/batch object with Content-Type, related to the user", () => {
  const group: SluiceEvent = { type: "group", messageId: "g", userId: "u1", groupId: 7, traits: { name: "Acme", action: "delete", objectTypeId: 2 } };
  expect(one(group)).toEqual(
    request(
      "POST",
      `${API}/v2/batch`,
      // RudderStack's processor output is the bare object; batch() wraps objects in `batch`.
      {
        identifiers: { object_id: "7", object_type_id: "2" },
        type: "object",
        action: "delete",
        // Only the action is taken out of the traits; objectTypeId stays an attribute too.
        attributes: { name: "Acme", objectTypeId: 2 },
        cio_relationships: [{ identifiers: { id: "u1" } }],
      },
      { Authorization: AUTH },
    ),
  );
  // No user id: the email relates the user; an unknown action falls back to identify; no traits → no attributes.
  const byEmail = one({ type: "group", messageId: "g", anonymousId: "a", groupId: "acme", properties: { action: "bogus" }, context: { traits: { email: "ada@example.com" } } });
  expect(byEmail.body.JSON).toEqual({ identifiers: { object_id: "acme", object_type_id: "1" }, type: "object", action: "identify", attributes: {}, cio_relationships: [{ identifiers: { email: "ada@example.com" } }] });
  // What Customer.io's /v2/batch takes: batch() wraps even a single object.
  expect(customerio.batch!([byEmail], ctx())[0]!.body.JSON.batch).toEqual([byEmail.body.JSON]);
  expect(() => customerio.transform({ type: "group", messageId: "g", userId: "u1" }, ctx())).toThrow('Missing required value from "groupId"');
});

test("CUSTOMERIO datacenter EU → track-eu.customer.io; baseUrl override; filtering; missing keys", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", userId: "u1", event: "E", timestamp: ts };
  expect(one(event, { datacenter: "EU" }).endpoint).toBe("https://track-eu.customer.io/api/v1/customers/u1/events");
  expect(customerio.transform(event, ctx({}, "http://127.0.0.1:4000"))[0]!.endpoint).toBe("http://127.0.0.1:4000/api/v1/customers/u1/events");
  expect(customerio.transform(event, ctx({ eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "E" }] }))).toEqual([]);
  // RudderStack's words (its Test 1), siteID checked first.
  expect(() => customerio.transform(event, ctx({ siteID: "", apiKey: "" }))).toThrow("siteID not found in Configs");
  expect(() => customerio.transform(event, ctx({ apiKey: undefined }))).toThrow("apiKey not found in Configs");
});

test("CUSTOMERIO batch → consecutive group objects merged into one /v2/batch call (1000 max); other calls untouched", () => {
  const group = (i: number) => customerio.transform({ type: "group", messageId: `g${i}`, userId: "u1", groupId: `org-${i}` }, ctx())[0]!;
  const track = customerio.transform({ type: "track", messageId: "t", userId: "u1", event: "E", timestamp: ts }, ctx())[0]!;
  const batched = customerio.batch!([group(1), group(2), track, group(3)], ctx());
  expect(batched.map((r) => [r.endpoint.replace(API, ""), (r.body.JSON.batch as unknown[] | undefined)?.length])).toEqual([
    ["/v2/batch", 2],
    ["/v1/customers/u1/events", undefined],
    ["/v2/batch", 1],
  ]);
  expect(batched[0]!.headers).toEqual(JSON_HEADERS);
  const many = customerio.batch!(Array.from({ length: 1001 }, (_, i) => group(i)), ctx());
  expect(many.map((r) => (r.body.JSON.batch as unknown[]).length)).toEqual([1000, 1]);
});

test("CUSTOMERIO deleteUsers → DELETE /api/v1/customers/{id} per user with Basic siteID:apiKey", () => {
  const reqs = customerio.deleteUsers!([{ userId: "u1" }, { userId: "a/b" }], ctx({ datacenter: "EU" }));
  expect(reqs).toEqual([
    request("DELETE", "https://track-eu.customer.io/api/v1/customers/u1", {}),
    expect.objectContaining({ endpoint: "https://track-eu.customer.io/api/v1/customers/a%2Fb" }),
  ]);
  expect(() => customerio.deleteUsers!([{ userId: "u1" }], ctx({ apiKey: "" }))).toThrow("destination config is missing 'apiKey'");
});

// Cases from RudderStack's test/integrations/destinations/customerio fixtures: processor/data.ts
// (0657eae6…, its Test N numbers below) and router/data.ts (04577cdc…).
const fxOrig = "2019-10-14T09:03:17.562Z";
const fxIdentify: SluiceEvent = {
  type: "identify",
  messageId: "84e26acc-56a5-4835-8233-591137fca468",
  originalTimestamp: fxOrig,
  anonymousId: "123456",
  userId: "123456",
  context: { traits: { anonymousId: "123456", email: "test@rudderstack.com", address: { city: "kolkata" }, age: 26 } },
  user_properties: { prop1: "val1", prop2: "val2" },
  traits: {
    anonymousId: "anon-id",
    email: "test@gmail.com",
    "dot.name": "Arnab Pal",
    address: { city: "NY", country: "USA", postalCode: 712136, state: "CA", street: "" },
  },
};
const fxIdentifyBody = {
  _timestamp: 1571043797,
  anonymous_id: "123456",
  city: "NY",
  state: "CA",
  street: "",
  prop1: "val1",
  prop2: "val2",
  country: "USA",
  postalCode: 712136,
  email: "test@gmail.com",
  "dot.name": "Arnab Pal",
};

test("CUSTOMERIO RudderStack fixture: identify (Test 0, 2) → PUT /customers/{userId}; traits.id stays an attribute; address, user_properties, dotted names, _timestamp, anonymous_id", () => {
  const plain: SluiceEvent = { type: "identify", messageId: "m", userId: "cio_1234", traits: { email: "updated_email@example.com", id: "updated-id-value" } };
  expect(one(plain)).toEqual(request("PUT", `${API}/v1/customers/cio_1234`, { email: "updated_email@example.com", id: "updated-id-value" }));
  expect(one(fxIdentify)).toEqual(request("PUT", `${API}/v1/customers/123456`, fxIdentifyBody));
});

test("CUSTOMERIO RudderStack fixture: identify without userId (Test 4) → the traits' email is the id; neither (Test 3) → refused", () => {
  const { userId: _none, ...byEmail } = fxIdentify;
  expect(one(byEmail as SluiceEvent)).toEqual(request("PUT", `${API}/v1/customers/test%40gmail.com`, fxIdentifyBody));
  const { email: _e, ...noEmailTraits } = fxIdentify.traits;
  expect(() => customerio.transform({ ...byEmail, traits: noEmailTraits, context: { traits: { anonymousId: "123456" } } } as SluiceEvent, ctx())).toThrow(
    "userId or email is not present",
  );
});

test("CUSTOMERIO RudderStack fixture: track with slashes in the userId and no timestamp → the id encoded, no timestamp field", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", userId: "user/with/slashes", event: "Test Event", properties: { test: "property", value: 123 } };
  expect(one(event)).toEqual(request("POST", `${API}/v1/customers/user%2Fwith%2Fslashes/events`, { data: { test: "property", value: 123 }, name: "Test Event", type: "event" }));
});

test("CUSTOMERIO RudderStack fixture: page (Test 5) → type page named by the page name; track with an empty userId (Test 7, 8) → email from context traits, else anonymous /events", () => {
  const properties = { path: "/test", referrer: "Rudder", search: "abc", title: "Test Page", url: "www.rudderlabs.com" };
  const page: SluiceEvent = {
    type: "page",
    messageId: "5e10d13a",
    originalTimestamp: "2019-10-14T11:15:18.299Z",
    anonymousId: "c82cbdff-e5be-4009-ac78-cdeea09ab4b1",
    userId: "12345",
    context: { traits: { email: "test@rudderstack.com", anonymousId: "12345" } },
    properties,
    name: "ApplicationLoaded",
  };
  expect(one(page)).toEqual(request("POST", `${API}/v1/customers/12345/events`, { type: "page", data: properties, timestamp: 1571051718, name: "ApplicationLoaded" }));
  const track: SluiceEvent = {
    type: "track",
    messageId: "ec5481b6",
    originalTimestamp: "2019-10-14T11:15:18.300Z",
    anonymousId: "c82cbdff-e5be-4009-ac78-cdeea09ab4b1",
    userId: "",
    event: "test track event",
    properties: { user_actual_role: "system_admin", user_actual_id: 12345 },
    context: { traits: { email: "test@rudderstack.com", anonymousId: "12345" } },
  };
  const json = { type: "event", data: track.properties, timestamp: 1571051718, name: "test track event" };
  expect(one(track)).toEqual(request("POST", `${API}/v1/customers/test%40rudderstack.com/events`, json));
  expect(one({ ...track, context: { traits: { anonymousId: "12345" } } })).toEqual(
    request("POST", `${API}/v1/events`, { ...json, anonymous_id: "c82cbdff-e5be-4009-ac78-cdeea09ab4b1" }),
  );
});

test("CUSTOMERIO RudderStack fixture: device events (Test 9, 10, 13, 30, 45, 46) → PUT devices with platform and last_used, DELETE on uninstall, EU host", () => {
  const installed: SluiceEvent = {
    type: "track",
    messageId: "1578564113557",
    anonymousId: "7e32188a4dab669f",
    userId: "12345",
    event: "Application Installed",
    originalTimestamp: "2020-01-09T10:01:53.558Z",
    properties: { review_id: "some_review_id", rating: 2 },
    context: { device: { id: "7e32188a4dab669f", type: "android", token: "abcxyz" }, traits: { anonymousId: "7e32188a4dab669f" } },
  };
  expect(one(installed)).toEqual(
    request("PUT", `${API}/v1/customers/12345/devices`, { device: { review_id: "some_review_id", rating: 2, last_used: 1578564113, platform: "android", id: "abcxyz" } }),
  );
  expect(one({ ...installed, event: "Application Uninstalled" })).toEqual(request("DELETE", `${API}/v1/customers/12345/devices/abcxyz`, {}));
  expect(() => customerio.transform({ ...installed, userId: undefined, event: "Application Uninstalled" }, ctx({ datacenter: "EU" }))).toThrow(
    "userId/email or device_token not present",
  );
  const euByEmail = one({ ...installed, userId: undefined, context: { device: { type: "mobile", token: "somel" }, traits: { email: "test@rudderstack.com" } } }, { datacenter: "EU" });
  expect(euByEmail.endpoint).toBe("https://track-eu.customer.io/api/v1/customers/test%40rudderstack.com/devices");
  expect(euByEmail.body.JSON.device).toMatchObject({ id: "somel", platform: "mobile" });
  const ios: SluiceEvent = {
    type: "track",
    messageId: "1641808826",
    userId: "e91e0378-63fe-11ec-82ac-0a028ee659c3",
    event: "Application Opened",
    timestamp: "2022-01-10T10:00:26.513Z",
    properties: { from_background: false },
    context: { device: { token: "deviceToken", type: "iOS" } },
  };
  expect(one(ios).body.JSON).toEqual({ device: { from_background: false, id: "deviceToken", platform: "ios", last_used: 1641808826 } });
  // Test 46: no token → an ordinary event; a timestamp with an offset is read as such.
  const event = one({ ...ios, timestamp: "2022-01-10T20:39:03.955+05:30", context: { device: { type: "iOS" } } });
  expect(event.body.JSON).toEqual({ data: { from_background: false }, name: "Application Opened", type: "event", timestamp: 1641827343 });
});

test("CUSTOMERIO RudderStack fixture: group with numeric userId and groupId (Test 60) → ids as text, traits as attributes, object type 1", () => {
  const traits = { city: "Frankfurt", name: "rudder test", address: "Solmsstraße 83", organisationId: 306, isPersonnelServiceProvider: false };
  const group: SluiceEvent = { type: "group", messageId: "7032394c", userId: 432 as any, groupId: 306, traits, originalTimestamp: "2023-03-28T09:36:49.882Z" };
  expect(one(group).body.JSON).toEqual({ type: "object", action: "identify", attributes: traits, identifiers: { object_id: "306", object_type_id: "1" }, cio_relationships: [{ identifiers: { id: "432" } }] });
  // Test 61: a userId that is an e-mail address relates the user by email.
  expect((one({ ...group, userId: "abc@xyz.com" }).body.JSON as any).cio_relationships).toEqual([{ identifiers: { email: "abc@xyz.com" } }]);
});

test("CUSTOMERIO RudderStack fixture: router batch → identify and page sent alone, consecutive group objects in one /v2/batch call with Content-Type", () => {
  const groupTraits = { domainNames: "rudderstack.com", email: "help@rudderstack.com", name: "rudderstack" };
  const events: SluiceEvent[] = [
    fxIdentify,
    { type: "page", messageId: "p", originalTimestamp: "2019-10-14T11:15:18.299Z", userId: "12345", anonymousId: "0", name: "ApplicationLoaded", properties: { url: "www.rudderlabs.com" } },
    { type: "group", messageId: "g1", groupId: "group@1", userId: "user@1", traits: { ...groupTraits, action: "identify" } },
    { type: "group", messageId: "g2", groupId: "group@1", userId: "user@1", traits: { ...groupTraits, action: "delete" } },
  ];
  const config = { siteID: "46be54768e7d49ab2628", apiKey: "dummyApiKey" };
  const batched = customerio.batch!(events.map((e) => customerio.transform(e, ctx(config))[0]!), ctx(config));
  const auth = "Basic NDZiZTU0NzY4ZTdkNDlhYjI2Mjg6ZHVtbXlBcGlLZXk=";
  const object = (action: string) => ({
    type: "object",
    action,
    attributes: groupTraits,
    identifiers: { object_id: "group@1", object_type_id: "1" },
    cio_relationships: [{ identifiers: { id: "user@1" } }],
  });
  expect(batched).toEqual([
    request("PUT", `${API}/v1/customers/123456`, fxIdentifyBody, { Authorization: auth }),
    request("POST", `${API}/v1/customers/12345/events`, { data: { url: "www.rudderlabs.com" }, name: "ApplicationLoaded", type: "page", timestamp: 1571051718 }, { Authorization: auth }),
    request("POST", `${API}/v2/batch`, { batch: [object("identify"), object("delete")] }, { Authorization: auth, "Content-Type": "application/json" }),
  ]);
});

test("CUSTOMERIO trait names with several dots → only the first dot is kept in the name (RudderStack's escaped path), the rest nest", () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: "u1", traits: { "a.b": 1, "x.y.z": 2, plain: 3 } };
  expect(one(event).body.JSON).toEqual({ "a.b": 1, "x.y": { z: 2 }, plain: 3 });
});

// Processor fixtures Tests 20-28, 35-42, 47-57 and 62-66 of the same data.ts (0657eae6…).
const EU = "https://track-eu.customer.io/api";
const fxWebContext = (traits: Record<string, unknown>) => ({ library: { name: "RudderLabs JavaScript SDK", version: "1.0.0" }, locale: "en-US", traits });
const fxUserProps = { user_actual_role: "system_admin", user_actual_id: 12345, user_time_spent: 50000 };
const fxMobile = (traits: Record<string, unknown>, token = "sample_device_token") => ({
  device: { name: "test android", id: "sample_device_id", model: "some_model_device", type: "mobile", token },
  traits,
});
const fxTrack = (over: Partial<SluiceEvent>): SluiceEvent => ({
  type: "track",
  messageId: "ec5481b6",
  originalTimestamp: "2019-10-14T11:15:18.300Z",
  anonymousId: "c82cbdff-e5be-4009-ac78-cdeea09ab4b1",
  properties: fxUserProps,
  context: fxWebContext({ email: "test@rudderstack.com", anonymousId: "12345" }),
  ...over,
});

test("CUSTOMERIO RudderStack fixture: device delete and register on both hosts (Tests 20, 26-28, 35, 36)", () => {
  const uninstall = fxTrack({ userId: "12345", event: "Application Uninstalled", context: fxMobile({ email: "test@rudderstack.com", anonymousId: "12345" }) });
  expect(one(uninstall)).toEqual(request("DELETE", `${API}/v1/customers/12345/devices/sample_device_token`, {}));
  expect(one(uninstall, { datacenter: "EU" })).toEqual(request("DELETE", `${EU}/v1/customers/12345/devices/sample_device_token`, {}));
  expect(one({ ...uninstall, context: fxMobile({ email: "test@rudderstack.com" }, "somel") }, { datacenter: "EU" }).endpoint).toBe(
    `${EU}/v1/customers/12345/devices/somel`,
  );
  expect(one({ ...uninstall, event: "Application Installed" }, { datacenter: "EU" })).toEqual(
    request("PUT", `${EU}/v1/customers/12345/devices`, { device: { ...fxUserProps, last_used: 1571051718, platform: "mobile", id: "sample_device_token" } }),
  );
  const android: SluiceEvent = {
    type: "track",
    messageId: "1578564113557",
    anonymousId: "7e32188a4dab669f",
    userId: "12345",
    event: "Application Installed",
    originalTimestamp: "2020-01-09T10:01:53.558Z",
    properties: { review_id: "some_review_id", product_id: "some_product_id_a", rating: 2, review_body: "Some Review Body" },
    context: { device: { id: "7e32188a4dab669f", manufacturer: "Google", type: "android", token: "abcxyz" }, traits: { anonymousId: "7e32188a4dab669f" } },
  };
  expect(one(android, { datacenter: "EU" })).toEqual(
    request("PUT", `${EU}/v1/customers/12345/devices`, {
      device: { review_body: "Some Review Body", rating: 2, review_id: "some_review_id", last_used: 1578564113, platform: "android", id: "abcxyz", product_id: "some_product_id_a" },
    }),
  );
  expect(one({ ...android, event: "Application Uninstalled" }, { datacenter: "EU" })).toEqual(request("DELETE", `${EU}/v1/customers/12345/devices/abcxyz`, {}));
});

test("CUSTOMERIO RudderStack fixture: identify, page and track on the EU host (Tests 21-25, 42)", () => {
  const { "dot.name": _dot, ...traits } = fxIdentify.traits as Record<string, unknown>;
  const { "dot.name": _dotBody, ...body } = fxIdentifyBody;
  expect(one({ ...fxIdentify, traits }, { datacenter: "EU" })).toEqual(request("PUT", `${EU}/v1/customers/123456`, body));
  const { anonymousId: _a, ...noAnonTrait } = traits;
  expect(one({ ...fxIdentify, anonymousId: "dummy-100-anon", userId: "dummy-user-id-100", user_properties: undefined, traits: noAnonTrait }, { datacenter: "EU" })).toEqual(
    request("PUT", `${EU}/v1/customers/dummy-user-id-100`, {
      city: "NY",
      country: "USA",
      postalCode: 712136,
      state: "CA",
      street: "",
      email: "test@gmail.com",
      _timestamp: 1571043797,
      anonymous_id: "dummy-100-anon",
    }),
  );
  const properties = { path: "/test", referrer: "Rudder", search: "abc", title: "Test Page", url: "www.rudderlabs.com" };
  const page: SluiceEvent = { ...fxTrack({ type: "page", userId: "12345", name: "ApplicationLoaded", properties }), originalTimestamp: "2019-10-14T11:15:18.299Z" };
  expect(one(page, { datacenter: "EU" })).toEqual(
    request("POST", `${EU}/v1/customers/12345/events`, { type: "page", data: properties, timestamp: 1571051718, name: "ApplicationLoaded" }),
  );
  const track = fxTrack({ userId: "12345", event: "test track event" });
  const json = { type: "event", data: fxUserProps, timestamp: 1571051718, name: "test track event" };
  expect(one(track, { datacenter: "EU" })).toEqual(request("POST", `${EU}/v1/customers/12345/events`, json));
  expect(one({ ...track, userId: "" }, { datacenter: "EU" })).toEqual(request("POST", `${EU}/v1/customers/test%40rudderstack.com/events`, json));
  expect(one({ ...track, userId: "", context: fxWebContext({ anonymousId: "12345" }) }, { datacenter: "EU" })).toEqual(
    request("POST", `${EU}/v1/events`, { ...json, anonymous_id: "c82cbdff-e5be-4009-ac78-cdeea09ab4b1" }),
  );
});

test("CUSTOMERIO RudderStack fixture: anonymous names cut to 100 bytes, screens to 'Viewed <86 bytes> Screen'; identified names whole (Tests 37-40)", () => {
  const long = "https://www.stoodi.com.br/exershgcios/upe/2019/questao/gregorio-de-matos-poeta-baiano-que-viveu-no-seculo-xvi/";
  const properties = { ...fxUserProps, user_time_spent: 50 };
  const anon = fxTrack({ event: long, properties, context: fxWebContext({ anonymousId: "12345" }) });
  expect(one(anon)).toEqual(
    request("POST", `${API}/v1/events`, {
      data: properties,
      anonymous_id: "c82cbdff-e5be-4009-ac78-cdeea09ab4b1",
      name: "https://www.stoodi.com.br/exershgcios/upe/2019/questao/gregorio-de-matos-poeta-baiano-que-viveu-no-s",
      type: "event",
      timestamp: 1571051718,
    }),
  );
  expect(one({ ...anon, context: fxWebContext({ email: "test@rudderstack.com", anonymousId: "12345" }) })).toEqual(
    request("POST", `${API}/v1/customers/test%40rudderstack.com/events`, { data: properties, name: long, type: "event", timestamp: 1571051718 }),
  );
  const screenName = "https://www.stoodi.com.br/exercicios/upe/2016/questao/gregorio-de-matos-poeta-baiano-que-viveu-no-seculo-xvi/";
  const screen = fxTrack({ type: "screen", event: screenName, context: fxWebContext({ anonymousId: "12345" }) });
  expect(one(screen)).toEqual(
    request("POST", `${API}/v1/events`, {
      data: fxUserProps,
      anonymous_id: "c82cbdff-e5be-4009-ac78-cdeea09ab4b1",
      name: "Viewed https://www.stoodi.com.br/exercicios/upe/2016/questao/gregorio-de-matos-poeta-baiano-q Screen",
      type: "event",
      timestamp: 1571051718,
    }),
  );
  expect(one({ ...screen, context: fxWebContext({ email: "test@rudderstack.com", anonymousId: "12345" }) }).body.JSON.name).toBe(`Viewed ${screenName} Screen`);
});

test("CUSTOMERIO RudderStack fixture: track with empty properties (Test 41) → data {} under the userId", () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "1632314412",
    anonymousId: "dummy-100-anon",
    userId: "dummy-user-id-100",
    event: "Home: Viewed",
    originalTimestamp: "2021-09-22T12:40:12.220Z",
    properties: {},
    context: { device: { id: "6fdb629d", manufacturer: "Apple", type: "iOS" }, traits: { anonymousId: "6fdb629d", userId: "6a540d50-c4dc" } },
  };
  expect(one(event)).toEqual(request("POST", `${API}/v1/customers/dummy-user-id-100/events`, { data: {}, name: "Home: Viewed", type: "event", timestamp: 1632314412 }));
});

test("CUSTOMERIO RudderStack fixture: device token events with deviceTokenEventName (Tests 47-55)", () => {
  const config = { deviceTokenEventName: "device_token_registered" };
  const sofia = { anonymousId: "5d727a3e", email: "sofia@gmail.com", name: "Sofia", userId: "e91e0378-63fe-11ec-82ac-0a028ee659c3" };
  const base: SluiceEvent = {
    type: "track",
    messageId: "1641808826",
    anonymousId: "5d727a3e-a72b-4d00-8078-669c1494791d",
    event: "Application Opened",
    originalTimestamp: "2022-01-10T10:00:26.513Z",
    properties: { from_background: false },
    context: { device: { id: "5d727a3e", manufacturer: "Apple", token: "deviceToken", type: "iOS" }, traits: sofia },
  };
  const devices = `${API}/v1/customers/e91e0378-63fe-11ec-82ac-0a028ee659c3/devices`;
  const device = { from_background: false, id: "deviceToken", platform: "ios", last_used: 1641808826 };
  // Test 48: the userId comes from context.traits when the event has none.
  expect(one(base, config)).toEqual(request("PUT", devices, { device }));
  // Test 49, 54: no properties → only the token, platform and last_used; timestamp before originalTimestamp.
  const { properties: _p, originalTimestamp: _o, ...bare } = base;
  expect(one({ ...bare, timestamp: "2022-01-10T10:00:26.513Z" }, config).body.JSON).toEqual({ device: { id: "deviceToken", platform: "ios", last_used: 1641808826 } });
  // Tests 50, 53: the configured event name registers the device.
  expect(one({ ...base, event: "device_token_registered", userId: sofia.userId }, config)).toEqual(request("PUT", devices, { device }));
  // Test 51: without a token it is an ordinary event at the timestamp's instant.
  const { userId: _u, ...noUserIdTraits } = sofia;
  const noToken = { ...base, event: "device_token_registered", userId: sofia.userId, timestamp: "2022-01-10T20:50:16.621+05:30", context: { device: { type: "iOS" }, traits: sofia } };
  expect(one(noToken, config)).toEqual(
    request("POST", `${API}/v1/customers/e91e0378-63fe-11ec-82ac-0a028ee659c3/events`, { data: { from_background: false }, name: "device_token_registered", type: "event", timestamp: 1641828016 }),
  );
  // Test 52: last_used from the timestamp.
  const withTs = { ...base, event: "device_token_registered", userId: sofia.userId, timestamp: "2022-01-10T20:52:18.678+05:30", context: { device: { token: "deviceToken", type: "iOS" }, traits: noUserIdTraits } };
  expect(one(withTs, config).body.JSON).toEqual({ device: { ...device, last_used: 1641828138 } });
  // Test 55: iPadOS is of the Apple family.
  expect(one({ ...base, userId: sofia.userId, context: { device: { token: "deviceToken", type: "ipados" }, traits: noUserIdTraits } }, config).body.JSON).toEqual({ device });
});

test("CUSTOMERIO RudderStack fixture: group actions and the EU host (Tests 56-57, 62)", () => {
  const traits = { domainNames: "rudderstack.com", email: "help@rudderstack.com", name: "rudderstack" };
  const group: SluiceEvent = { type: "group", messageId: "g", groupId: "group@1", userId: "user@1", traits: { ...traits, action: "delete" } };
  expect(one(group)).toEqual(
    request(
      "POST",
      `${API}/v2/batch`,
      { type: "object", action: "delete", attributes: traits, identifiers: { object_id: "group@1", object_type_id: "1" }, cio_relationships: [{ identifiers: { id: "user@1" } }] },
      { Authorization: AUTH },
    ),
  );
  const eu = one({ type: "group", messageId: "g", userId: 432 as any, groupId: 306, traits: { city: "Frankfurt", organisationId: 306 } }, { datacenter: "EU" });
  expect(eu.endpoint).toBe(`${EU}/v2/batch`);
  expect(eu.body.JSON).toEqual({ type: "object", action: "identify", attributes: { city: "Frankfurt", organisationId: 306 }, identifiers: { object_id: "306", object_type_id: "1" }, cio_relationships: [{ identifiers: { id: "432" } }] });
});

test("CUSTOMERIO RudderStack fixture: page named by its url, unnamed, without properties, and an anonymous unnamed page refused (Tests 63-66)", () => {
  const properties = { path: "/test", referrer: "Rudder", search: "abc", title: "Test Page", url: "www.rudderlabs.com" };
  const page: SluiceEvent = { ...fxTrack({ type: "page", userId: "12345", properties }), originalTimestamp: "2019-10-14T11:15:18.299Z" };
  const events = `${API}/v1/customers/12345/events`;
  expect(one(page)).toEqual(request("POST", events, { type: "page", data: properties, timestamp: 1571051718, name: "www.rudderlabs.com" }));
  const { url: _url, ...noUrl } = properties;
  expect(one({ ...page, properties: noUrl })).toEqual(request("POST", events, { type: "page", data: noUrl, timestamp: 1571051718 }));
  expect(one({ ...page, properties: undefined })).toEqual(request("POST", events, { type: "page", timestamp: 1571051718 }));
  const invalid: SluiceEvent = { type: "page", messageId: "p", anonymousId: "c82cbdff-e5be-4009-ac78-cdeea09ab4b1", context: { locale: "en-US" } };
  expect(() => customerio.transform(invalid, ctx())).toThrow("Event Name type should be a string");
});

test("CUSTOMERIO identify → user_properties names are written as paths (RudderStack's set), later values win, the event stays untouched", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "u1",
    traits: { plan: "free", prefs: { color: "red" } },
    user_properties: { plan: "pro", "prefs.size": "L", "a.b.c": 1, "__proto__.x": 1 },
  };
  const before = structuredClone(event);
  expect(one(event).body.JSON).toEqual({ plan: "pro", prefs: { color: "red", size: "L" }, a: { b: { c: 1 } } });
  expect(event).toEqual(before);
});

// router/dataEventStreamV1.ts (d4c00a2f…): RudderStack's batching framework keeps event-stream calls in
// the Track API v1 shape unless its operator setting CUSTOMERIO_BATCHING_FRAMEWORK_ENABLED_WORKSPACE_IDS
// names the workspace (unset by default), one request per event; only group objects share /v2/batch.
test("CUSTOMERIO RudderStack fixture: router with the v2 API flag off (its default) → identify and track in the v1 shape, one request each", () => {
  const identify: SluiceEvent = {
    type: "identify",
    messageId: "i",
    userId: "user-1",
    traits: { plan: "pro", email: "test@rudderstack.com" },
    originalTimestamp: "2020-01-09T10:01:53.558Z",
  };
  const track: SluiceEvent = { type: "track", messageId: "t", event: "Order Completed", userId: "user-789", properties: { total: 42 }, originalTimestamp: "2020-01-09T10:01:53.558Z" };
  const batched = customerio.batch!([identify, track].map((e) => customerio.transform(e, ctx())[0]!), ctx());
  expect(batched).toEqual([
    request("PUT", `${API}/v1/customers/user-1`, { plan: "pro", email: "test@rudderstack.com", _timestamp: 1578564113 }),
    request("POST", `${API}/v1/customers/user-789/events`, { data: { total: 42 }, name: "Order Completed", type: "event", timestamp: 1578564113 }),
  ]);
});

test("CUSTOMERIO reverse ETL (context.mappedToDestination) → the first external id is the person's id and a trait under its identifier type", () => {
  const row = (identifierType: string, id: string): SluiceEvent => ({
    type: "identify",
    messageId: "r",
    channel: "sources",
    timestamp: ts,
    context: { mappedToDestination: "true", externalId: [{ id, identifierType, type: "CUSTOMERIO-customers" }] },
    traits: { first_name: "Ada", last_name: "Lovelace" },
  });
  const byEmail = row("email", "ada@example.com");
  const before = structuredClone(byEmail);
  expect(one(byEmail)).toEqual(request("PUT", `${API}/v1/customers/ada%40example.com`, { first_name: "Ada", last_name: "Lovelace", email: "ada@example.com", _timestamp: secs }));
  expect(byEmail).toEqual(before);
  expect(one(row("id", "ada-1"))).toEqual(request("PUT", `${API}/v1/customers/ada-1`, { first_name: "Ada", last_name: "Lovelace", id: "ada-1", _timestamp: secs }));
  // The external id wins over the row's own userId, for events too; without the flag the external id is not read.
  const track: SluiceEvent = { type: "track", messageId: "t", userId: "other", event: "Synced", context: { mappedToDestination: true, externalId: [{ id: "ada-1", identifierType: "id" }] } };
  expect(one(track).endpoint).toBe(`${API}/v1/customers/ada-1/events`);
  expect(one({ ...track, context: { externalId: track.context!.externalId } }).endpoint).toBe(`${API}/v1/customers/other/events`);
});

test("CUSTOMERIO numeric ids (as rudder-server passes them): paths carry their text, bodies the numbers; group ids as text, as RudderStack's object mapping", () => {
  const n = (e: Record<string, unknown>) => e as unknown as SluiceEvent;
  expect(one(n({ type: "identify", messageId: "i", userId: 432, anonymousId: 987, timestamp: ts, traits: { plan: "pro" } }))).toEqual(
    request("PUT", `${API}/v1/customers/432`, { plan: "pro", _timestamp: secs, anonymous_id: 987 }),
  );
  expect(one(n({ type: "track", messageId: "t", anonymousId: 987, event: "Viewed", properties: {}, timestamp: ts })).body.JSON).toEqual({ data: {}, name: "Viewed", type: "event", timestamp: secs, anonymous_id: 987 });
  expect(one(n({ type: "alias", messageId: "a", userId: 432, previousId: 306 })).body.JSON).toEqual({ primary: { id: 432 }, secondary: { id: 306 } });
  expect(one(n({ type: "group", messageId: "g", userId: 432, groupId: 306, traits: {} })).body.JSON).toEqual({
    identifiers: { object_id: "306", object_type_id: "1" },
    type: "object",
    action: "identify",
    attributes: {},
    cio_relationships: [{ identifiers: { id: "432" } }],
  });
});

// ---- Track API v2 envelopes (useTrackApiV2Batch) ---------------------------------------------

const V2 = { useTrackApiV2Batch: true };
const v2 = (event: SluiceEvent, config: Record<string, any> = {}) => one(event, { ...V2, ...config });
const v2Refusal = (event: SluiceEvent, config: Record<string, any> = {}) => {
  try {
    customerio.transform(event, ctx({ ...V2, ...config }));
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("the event was not refused");
};

test("CUSTOMERIO useTrackApiV2Batch: a boolean config field, off by default, listed by GET /destination-definitions", () => {
  const def = publicDefinition(customerio);
  expect(def.config.defaultConfig).toContain("useTrackApiV2Batch");
  expect(def.config.fields).toContainEqual(expect.objectContaining({ key: "useTrackApiV2Batch", type: "boolean", required: false }));
  // Off (absent or false): the v1 calls.
  const track: SluiceEvent = { type: "track", messageId: "t", userId: "u1", event: "E", timestamp: ts };
  expect(one(track, { useTrackApiV2Batch: false }).endpoint).toBe(`${API}/v1/customers/u1/events`);
});

test("CUSTOMERIO v2: identify → a person identify operation for /v2/batch; traits whole as attributes, address, created_at, _timestamp, anonymous_id", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "cio-7",
    anonymousId: "anon-7",
    timestamp: ts,
    traits: { email: "grace@example.com", "team.name": "Compilers", createdAt: "2024-01-01T00:00:00.000Z", userId: "x", address: { city: "Arlington", state: "VA" } },
    user_properties: { ignored: true },
  };
  expect(v2(event)).toEqual(
    request(
      "POST",
      `${API}/v2/batch`,
      {
        type: "person",
        action: "identify",
        identifiers: { id: "cio-7" },
        attributes: { city: "Arlington", state: "VA", email: "grace@example.com", "team.name": "Compilers", created_at: 1704067200, _timestamp: secs, anonymous_id: "anon-7" },
      },
      JSON_HEADERS,
    ),
  );
  // No user id: the email names the person (as text); neither refuses the identify.
  expect(v2({ type: "identify", messageId: "m", context: { traits: { email: "grace@example.com" } } }).body.JSON.identifiers).toEqual({ email: "grace@example.com" });
  expect(v2Refusal({ type: "identify", messageId: "m", anonymousId: "a" })).toBe("userId or email is not present");
});

test("CUSTOMERIO v2: track, page and screen → person event/page/screen operations; anonymous people by anonymous_id; EU host", () => {
  const track: SluiceEvent = { type: "track", messageId: "t", userId: "u1", event: "Checkout", timestamp: ts, properties: { total: 9 } };
  expect(v2(track).body.JSON).toEqual({ type: "person", action: "event", identifiers: { id: "u1" }, name: "Checkout", attributes: { total: 9 }, timestamp: secs });
  expect(v2(track, { datacenter: "EU" }).endpoint).toBe("https://track-eu.customer.io/api/v2/batch");
  // Names are not cut for anonymous people here; no timestamp, none sent.
  const long = "n".repeat(150);
  expect(v2({ type: "track", messageId: "t", anonymousId: "anon-1", event: long }).body.JSON).toEqual({ type: "person", action: "event", identifiers: { anonymous_id: "anon-1" }, name: long, attributes: {} });
  const page: SluiceEvent = { type: "page", messageId: "p", userId: "u1", properties: { url: "https://x.io/a" } };
  expect(v2(page).body.JSON).toEqual({ type: "person", action: "page", identifiers: { id: "u1" }, name: "https://x.io/a", attributes: { url: "https://x.io/a" } });
  expect(v2Refusal({ ...page, properties: {} })).toBe("Event Name type should be a string");
  const screen: SluiceEvent = { type: "screen", messageId: "s", anonymousId: "anon-2", properties: { name: "Cart" } };
  expect(v2(screen).body.JSON).toEqual({ type: "person", action: "screen", identifiers: { anonymous_id: "anon-2" }, name: "Viewed Cart Screen", attributes: { name: "Cart" } });
  expect(v2Refusal({ ...track, event: 7 })).toBe("Event is a required field and should be a string");
});

test("CUSTOMERIO v2: device events → add_device with token, platform and app details; uninstall → delete_device; no token → an ordinary event", () => {
  const opened: SluiceEvent = {
    type: "track",
    messageId: "d",
    userId: "u1",
    event: "Application Opened",
    timestamp: ts,
    properties: { cold_start: true },
    context: { device: { token: "tok-9", type: "watchOS", model: "Watch7" }, os: { name: "watchOS" }, app: { version: "3.1" }, locale: "fr-FR" },
  };
  expect(v2(opened).body.JSON).toEqual({
    type: "person",
    action: "add_device",
    identifiers: { id: "u1" },
    device: { token: "tok-9", last_used: secs, attributes: { device_os: "watchOS", device_model: "Watch7", app_version: "3.1", device_locale: "fr-FR", cold_start: true }, platform: "ios" },
  });
  expect(v2({ ...opened, event: "Push Token" }, { deviceTokenEventName: "Push Token" }).body.JSON.action).toBe("add_device");
  expect(v2({ ...opened, event: "Application Uninstalled" }).body.JSON).toEqual({ type: "person", action: "delete_device", identifiers: { id: "u1" }, device: { token: "tok-9" } });
  expect(v2({ ...opened, context: {} }).body.JSON.action).toBe("event");
  expect(v2Refusal({ ...opened, event: "Application Uninstalled", context: {} })).toBe("userId/email or device_token not present");
});

test("CUSTOMERIO v2: alias → a person merge; group → an object operation; numeric person ids stay numbers, object ids are text", () => {
  const n = (e: Record<string, unknown>) => e as unknown as SluiceEvent;
  expect(v2({ type: "alias", messageId: "a", userId: "ada@example.com", previousId: "old-1" }).body.JSON).toEqual({
    type: "person",
    action: "merge",
    primary: { email: "ada@example.com" },
    secondary: { id: "old-1" },
  });
  expect(v2(n({ type: "alias", messageId: "a", userId: 12, previousId: 11 })).body.JSON).toEqual({ type: "person", action: "merge", primary: { id: 12 }, secondary: { id: 11 } });
  expect(v2(n({ type: "group", messageId: "g", userId: 12, groupId: 99, traits: { name: "Acme", action: "add_relationships" } })).body.JSON).toEqual({
    type: "object",
    action: "add_relationships",
    identifiers: { object_id: "99", object_type_id: "1" },
    attributes: { name: "Acme" },
    cio_relationships: [{ identifiers: { id: "12" } }],
  });
  expect(v2(n({ type: "identify", messageId: "i", userId: 12, traits: {} })).body.JSON.identifiers).toEqual({ id: 12 });
});

test("CUSTOMERIO v2: RudderStack's input check, in its words: who the event names, id types, the config's keys, all problems at once", () => {
  expect(v2Refusal({ type: "track", messageId: "t", event: "E" })).toBe("message: userId, email or anonymousId is required");
  // An alias needs both people; a group needs nobody.
  expect(v2Refusal({ type: "alias", messageId: "a", previousId: "old" })).toBe("message: userId, email or anonymousId is required");
  expect(v2({ type: "group", messageId: "g", groupId: "acme" }).body.JSON.cio_relationships).toEqual([]);
  // Only text or numbers are ids; then the "names someone" rule is not asked.
  expect(v2Refusal({ type: "track", messageId: "t", event: "E", userId: true as any, previousId: ["x"] as any })).toBe("message.userId: Invalid input; message.previousId: Invalid input");
  expect(v2Refusal({ type: "track", messageId: "t", userId: "u", event: "E" }, { apiKey: undefined, datacenter: "us" })).toBe(
    "destination.Config.apiKey: Required; destination.Config.datacenter: Invalid enum value. Expected 'US' | 'EU', received 'us'",
  );
  expect(v2Refusal({ type: "track", messageId: "t", event: "E" }, { siteID: "" })).toBe("message: userId, email or anonymousId is required; destination.Config.siteID: siteID is required");
  // A reverse-ETL row names its person by external id.
  const row: SluiceEvent = { type: "identify", messageId: "r", context: { mappedToDestination: true, externalId: [{ id: "ext-1", identifierType: "userId" }] }, traits: { plan: "pro" } };
  expect(v2(row).body.JSON).toEqual({ type: "person", action: "identify", identifiers: { id: "ext-1" }, attributes: { plan: "pro" } });
});

test("CUSTOMERIO v2: an operation over 32KB is refused with its size", () => {
  const big: SluiceEvent = { type: "track", messageId: "t", userId: "u1", event: "E", properties: { blob: "x".repeat(33_000) } };
  const size = Buffer.byteLength(JSON.stringify({ type: "person", action: "event", identifiers: { id: "u1" }, name: "E", attributes: big.properties }));
  expect(v2Refusal(big)).toBe(`Event size (${size} bytes) exceeds CustomerIO's 32KB per-object limit.`);
  expect(v2({ ...big, properties: { blob: "x".repeat(32_000) } }).body.JSON.action).toBe("event");
});

test("CUSTOMERIO v2 batch → every operation in {batch: [...]} envelopes of at most 500,000 bytes, in order, with no count limit", () => {
  const op = (i: number, pad = 0) => customerio.transform({ type: "track", messageId: `t${i}`, userId: `u${i}`, event: "E", properties: { pad: "p".repeat(pad) } }, ctx(V2))[0]!;
  const mixed = [op(1), customerio.transform({ type: "group", messageId: "g", userId: "u1", groupId: "acme" }, ctx(V2))[0]!, op(2)];
  const [envelope, ...rest] = customerio.batch!(mixed, ctx(V2));
  expect(rest).toEqual([]);
  expect(envelope).toEqual(request("POST", `${API}/v2/batch`, { batch: mixed.map((r) => r.body.JSON) }, JSON_HEADERS));
  // 1500 small operations share one envelope (the v1 objects' 1000 limit does not apply).
  expect(customerio.batch!(Array.from({ length: 1500 }, (_, i) => op(i)), ctx(V2)).map((r) => (r.body.JSON.batch as unknown[]).length)).toEqual([1500]);
  // An envelope's bytes: 12 for {"batch":[]}, its operations, a comma between two. Fifteen
  // operations of 31,249 bytes and one of 31,238 make 12 + 468,735 + 31,238 + 15 = 500,000.
  const sized = (bytes: number) => op(0, bytes - Buffer.byteLength(JSON.stringify(op(0).body.JSON)));
  const fifteen = Array.from({ length: 15 }, () => sized(31_249));
  const bytesOf = (r: DestinationRequest) => Buffer.byteLength(JSON.stringify(r.body.JSON));
  expect(customerio.batch!([...fifteen, sized(31_238)], ctx(V2)).map(bytesOf)).toEqual([500_000]);
  // One byte more and the last operation starts the next envelope.
  expect(customerio.batch!([...fifteen, sized(31_239)], ctx(V2)).map((r) => (r.body.JSON.batch as unknown[]).length)).toEqual([15, 1]);
});

test("CUSTOMERIO checkResponse: a 207 from /v2/batch aborts the events whose operations it names, with reason, field and message; the rest are delivered", () => {
  const op = (userId: string, plan: string) => customerio.transform({ type: "identify", messageId: userId, userId, traits: { plan } }, ctx(V2))[0]!;
  // Two events with equal operations: only the one at the named place fails.
  const events = [op("u1", "pro"), op("u2", "x"), op("u1", "pro")];
  const [envelope] = customerio.batch!(events, ctx(V2));
  const answer = (status: number, body: unknown) => ({ status, body: JSON.stringify(body) });
  const check = customerio.checkResponse!(answer(207, { errors: [{ batch_index: 1, reason: "invalid", field: "attributes.plan", message: "unknown plan" }, { batch_index: 2 }] }), envelope!, ctx(V2));
  expect(check.outcome).toBe("per-event");
  if (check.outcome !== "per-event") return;
  expect(events.map((e) => check.verdictFor([e]))).toEqual([
    { outcome: "ok" },
    { outcome: "abort", error: "reason: invalid, field: attributes.plan, message: unknown plan" },
    { outcome: "abort", error: "Unknown error from CustomerIO" },
  ]);
  // A copy of an operation is found by its JSON text; an event not in this envelope is not judged by it.
  expect(check.verdictFor([structuredClone(events[1]!)])).toEqual({ outcome: "abort", error: "reason: invalid, field: attributes.plan, message: unknown plan" });
  expect(check.verdictFor([op("u9", "pro")])).toEqual({ outcome: "ok" });
  // 200, a 207 naming nothing, or another endpoint's answer: every event delivered.
  expect(customerio.checkResponse!(answer(200, {}), envelope!, ctx(V2))).toEqual({ outcome: "ok" });
  expect(customerio.checkResponse!(answer(207, { errors: [] }), envelope!, ctx(V2))).toEqual({ outcome: "ok" });
  const v1 = customerio.transform({ type: "identify", messageId: "i", userId: "u1" }, ctx())[0]!;
  expect(customerio.checkResponse!(answer(207, { errors: [{ batch_index: 0, reason: "x" }] }), v1, ctx())).toEqual({ outcome: "ok" });
});

// ---- through the pipeline, to a stand-in for Customer.io's Track API ---------------------------

let server: TestServer;
/** Operations refused as Customer.io's v2 reference shapes a partial failure: a 207 naming each by its batch_index. */
const REFUSED_PLAN = "plan-that-is-far-too-long";
const trackApi = startSink((req) => {
  if (req.path !== "/api/v2/batch") return Response.json({});
  const batch = Array.isArray(req.body?.batch) ? (req.body.batch as any[]) : [];
  const errors = batch.flatMap((op, batch_index) =>
    op?.attributes?.plan === REFUSED_PLAN ? [{ batch_index, reason: "invalid", field: "attributes.plan", message: "property value cannot be longer than 16 bytes" }] : [],
  );
  return errors.length ? Response.json({ errors }, { status: 207 }) : Response.json({});
});
beforeAll(async () => {
  server = await startSluice({ args: ["--destination-base-url", `CUSTOMERIO=${trackApi.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await server.stop();
  trackApi.stop();
  cleanup(server.dataDir);
});

const REFUSAL = "reason: invalid, field: attributes.plan, message: property value cannot be longer than 16 bytes";

async function deliverThrough(config: Record<string, unknown>, calls: Array<Record<string, unknown>>) {
  const src = await createSource(server.url);
  const dst = await api(server.url, "POST", "/v2/destinations", { name: `cio-${crypto.randomUUID().slice(0, 6)}`, type: "CUSTOMERIO", config, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  expect((await sendEvent(server.url, src.writeKey, "batch", { batch: calls })).status).toBe(200);
  const stats = await waitFor(
    async () => {
      const st = (await api(server.url, "GET", `/v2/destinations/${dst.json.id}/stats`)).json;
      return st.counts.succeeded + st.counts.aborted === calls.length ? st : undefined;
    },
    { what: `${calls.length} Customer.io deliveries settled` },
  );
  const rows = server.sluice.db.$client
    .query("SELECT d.state, d.last_error, e.payload FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.destination_id = ?")
    .all(dst.json.id) as any[];
  const aborted = rows.filter((r) => r.state === "aborted").map((r) => ({ userId: JSON.parse(r.payload).userId, error: r.last_error }));
  const sent = trackApi.received.filter((r) => r.headers.authorization === basicOf(config));
  return { stats, aborted, sent };
}
const basicOf = (config: Record<string, unknown>) => `Basic ${btoa(`${config.siteID}:${config.apiKey}`)}`;

test("CUSTOMERIO through the pipeline with useTrackApiV2Batch: every call an operation in /v2/batch envelopes; a 207 aborts only the refused person", async () => {
  const config = { siteID: "site-v2", apiKey: "key-v2", useTrackApiV2Batch: true };
  const calls = [
    { type: "identify", userId: "p-1", traits: { plan: "pro" } },
    { type: "identify", userId: "p-2", traits: { plan: REFUSED_PLAN } },
    { type: "track", userId: "p-3", event: "Checkout", properties: { total: 3 } },
    { type: "group", userId: "p-4", groupId: "acme", traits: { name: "Acme" } },
    { type: "alias", userId: "p-5", previousId: "old-5" },
  ];
  const { stats, aborted, sent } = await deliverThrough(config, calls);
  expect(stats.counts).toMatchObject({ succeeded: 4, aborted: 1 });
  expect(aborted).toEqual([{ userId: "p-2", error: REFUSAL }]);
  // Nothing else is called: no v1 path; every envelope JSON, with the Basic auth.
  expect(sent.map((r) => `${r.method} ${r.path} ${r.headers["content-type"]}`)).toEqual(sent.map(() => "POST /api/v2/batch application/json"));
  const ops = sent.flatMap((r) => r.body.batch as any[]);
  expect(ops.map((o) => `${o.type}:${o.action}`).sort()).toEqual(["object:identify", "person:event", "person:identify", "person:identify", "person:merge"]);
  expect(ops.find((o) => o.action === "merge")).toEqual({ type: "person", action: "merge", primary: { id: "p-5" }, secondary: { id: "old-5" } });
  expect(ops.find((o) => o.action === "event")).toMatchObject({ identifiers: { id: "p-3" }, name: "Checkout", attributes: { total: 3 } });
  // The refused event is not sent again.
  expect(ops.filter((o) => o.identifiers?.id === "p-2")).toHaveLength(1);
});

test("CUSTOMERIO through the pipeline without the key: the v1 calls; a 207 on the objects' /v2/batch aborts only the refused group", async () => {
  const config = { siteID: "site-v1", apiKey: "key-v1" };
  const calls = [
    { type: "identify", userId: "q-1", traits: { plan: "pro" } },
    { type: "track", userId: "q-2", event: "Checkout" },
    { type: "group", userId: "q-3", groupId: "good-co", traits: { plan: "pro" } },
    { type: "group", userId: "q-4", groupId: "bad-co", traits: { plan: REFUSED_PLAN } },
  ];
  const { stats, aborted, sent } = await deliverThrough(config, calls);
  expect(stats.counts).toMatchObject({ succeeded: 3, aborted: 1 });
  expect(aborted).toEqual([{ userId: "q-4", error: REFUSAL }]);
  const paths = sent.map((r) => `${r.method} ${r.path}`);
  expect(paths).toContain("PUT /api/v1/customers/q-1");
  expect(paths).toContain("POST /api/v1/customers/q-2/events");
  const objects = sent.filter((r) => r.path === "/api/v2/batch").flatMap((r) => r.body.batch as any[]);
  expect(objects.map((o) => o.identifiers.object_id).sort()).toEqual(["bad-co", "good-co"]);
});
