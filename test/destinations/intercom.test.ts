import { afterAll, beforeAll, expect, test } from "bun:test";
import { rebaseUrl } from "../../src/destinations/base-url";
import { intercom } from "../../src/destinations/intercom";
import type { DestinationContext, DestinationRequest, SluiceEvent } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, lookupContext, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

// Fixtures below are transcribed from rudder-transformer's test/integrations/destinations/intercom/processor.
const V1 = { apiKey: "intercomApiKey", apiVersion: "v1", appId: "9e9cdea1-78fa-4829-a9b2-5d7f7e96d1a0", collectContext: false };
const V2 = { apiKey: "testApiKey", apiVersion: "v2", apiServer: "standard", sendAnonymousId: false };
const ctx = (config: Record<string, any>, baseUrl?: string): DestinationContext => ({
  config,
  destination: { id: "dest-ic", name: "Intercom", workspaceId: "ws-1" },
  baseUrl,
});
const headers = (key: string, version: "1.4" | "2.10") => ({
  "Content-Type": "application/json",
  Authorization: `Bearer ${key}`,
  Accept: "application/json",
  "Intercom-Version": version,
  "User-Agent": "RudderStack",
});
const V1_HEADERS = headers("intercomApiKey", "1.4");
const V2_HEADERS = headers("testApiKey", "2.10");
const post = (endpoint: string, json: Record<string, unknown>, hdrs: Record<string, string>, method: DestinationRequest["method"] = "POST"): DestinationRequest => ({
  version: "1",
  type: "REST",
  method,
  endpoint,
  headers: hdrs,
  params: {},
  body: { JSON: json, JSON_ARRAY: {}, XML: {}, FORM: {} },
  files: {},
});
/**
 * A stand-in of Intercom for the fixtures: the 2.x contact search (identify, group) finds the
 * contact RudderStack's fixtures find (external_id user@2 or 10156) and no other, so the rest take
 * the create branch; a company is answered with an id. The lookups themselves are tested in
 * intercom-lookups.test.ts.
 */
const KNOWN_CONTACT = "7070129940741e45d040";
const sink = startSink((req) => {
  if (req.path === "/contacts/search") {
    const values: unknown[] = (req.body?.query?.value ?? []).map((q: { value: unknown }) => q.value);
    const data = values.some((v) => v === "user@2" || v === "10156") ? [{ type: "contact", id: KNOWN_CONTACT, role: "user" }] : [];
    return Response.json({ type: "list", data, total_count: data.length, pages: { type: "pages", page: 1, per_page: 50, total_pages: data.length } });
  }
  if (req.method === "POST" && req.path === "/companies") return Response.json({ type: "company", id: `ic-${req.body?.company_id}`, company_id: req.body?.company_id });
  return new Response("ok");
});
/** The transform with its lookups sent to the stand-in, its requests left at Intercom's URLs. */
const put = (endpoint: string, json: Record<string, unknown>, hdrs: Record<string, string>) => post(endpoint, json, hdrs, "PUT");
const run = (event: Record<string, any>, config: Record<string, any>) => {
  const c = lookupContext(config);
  const lookup = c.lookup!;
  c.lookup = (req) => lookup({ ...req, endpoint: rebaseUrl(req.endpoint, sink.url) });
  return intercom.transform({ messageId: "m-1", ...event } as SluiceEvent, c);
};

const originalTimestamp = "2023-11-10T14:42:44.724Z";
const anonymousId = "58b21c2d-f8d5-4410-a2d0-b268a26b7e33";
const user1Traits = {
  age: 23, ownerId: "13", firstName: "Test", lastName: "Rudderlabs", phone: "+91 9999999999",
  address: "california usa", email: "test@rudderlabs.com", lastSeenAt: "2023-11-10T14:42:44.724Z",
};
const user5Traits = {
  firstName: "Test", lastName: "Name", key1: "value1", phone: "9876543210", email: "test_1@test.com",
  createdAt: "2020-09-30T19:11:00.337Z", anonymousId,
};
const expectedUser5 = {
  name: "Test Name", phone: "9876543210", email: "test_1@test.com", signed_up_at: 1601493060,
  update_last_request_at: true, last_seen_user_agent: "unknown", custom_attributes: { key1: "value1", anonymousId },
};
const v1Identify = (traits: Record<string, unknown>) => ({ type: "identify", anonymousId, context: { traits, userAgent: "unknown" }, originalTimestamp });

test("INTERCOM v2 identify → POST api.intercom.io/contacts with external_id, owner_id, last_seen_at and the other traits as custom_attributes", async () => {
  const event = { type: "identify", userId: "user@1", anonymousId: "default-anonymousId", context: { traits: user1Traits }, originalTimestamp };
  expect(await run(event, V2)).toEqual([
    post("https://api.intercom.io/contacts", {
      owner_id: 13, external_id: "user@1", last_seen_at: 1699627364, name: "Test Rudderlabs", phone: "+91 9999999999",
      email: "test@rudderlabs.com", custom_attributes: { age: 23, address: "california usa" },
    }, V2_HEADERS),
  ]);
});

test("INTERCOM v2 identify of a contact the search finds → PUT /contacts/{id} (identify test 2)", async () => {
  const traits = { age: 32, ownerId: "14", firstName: "Test", lastName: "RudderStack", phone: "+91 9299999999", email: "test+2@rudderlabs.com" };
  expect(await run({ type: "identify", userId: "user@2", context: { traits }, originalTimestamp }, V2)).toEqual([
    put(`https://api.intercom.io/contacts/${KNOWN_CONTACT}`, {
      owner_id: 14, external_id: "user@2", name: "Test RudderStack", phone: "+91 9299999999", email: "test+2@rudderlabs.com",
      custom_attributes: { age: 32 },
    }, V2_HEADERS),
  ]);
});

test("INTERCOM v2 identify: nested custom attributes flatten with '_', apiServer eu/au pick the regional API, sendAnonymousId fills external_id", async () => {
  const event = { type: "identify", anonymousId: "anon-9", context: { traits: { email: "a@b.co", plan: { tier: "pro", seats: [1, 2] } } } };
  const [eu] = await run(event, { ...V2, apiServer: "eu", sendAnonymousId: true });
  expect(eu!.endpoint).toBe("https://api.eu.intercom.io/contacts");
  expect(eu!.body.JSON).toEqual({ external_id: "anon-9", email: "a@b.co", custom_attributes: { plan_tier: "pro", "plan_seats[0]": 1, "plan_seats[1]": 2 } });
  expect((await run(event, { ...V2, apiServer: "au" }))[0]!.endpoint).toBe("https://api.au.intercom.io/contacts");
  // No apiVersion means v2, as in RudderStack.
  expect((await run(event, { apiKey: "testApiKey" }))[0]!.headers["Intercom-Version"]).toBe("2.10");
});

test("INTERCOM v2 identify from rETL (mappedToDestination) → the row's traits with the external id", async () => {
  const event = {
    type: "identify",
    context: { externalId: [{ id: "user@1", type: "INTERCOM-customer", identifierType: "user_id" }], mappedToDestination: "true" },
    traits: { owner_id: 13, name: "Test Rudderlabs", phone: "+91 9999999999", email: "test@rudderlabs.com" },
    originalTimestamp,
  };
  expect(await run(event, V2)).toEqual([
    post("https://api.intercom.io/contacts", { owner_id: 13, user_id: "user@1", name: "Test Rudderlabs", phone: "+91 9999999999", email: "test@rudderlabs.com" }, V2_HEADERS),
  ]);
});

test("INTERCOM v1 identify → POST api.intercom.io/users (Intercom-Version 1.4) with signed_up_at, user agent and dotted custom attributes", async () => {
  const traits = {
    key1: "value1", name: "Test Name", firstName: "Test", lastName: "Name", phone: "9876543210", userId: "test_user_id_1",
    email: "test_1@test.com", createdAt: "2020-09-30T19:11:00.337Z", anonymousId,
    address: { city: "Kolkata", state: "West Bengal" },
    originalArray: [{ nested_field: "nested value", tags: ["tag_1", "tag_2", "tag_3"] }, { nested_field: "nested value", tags: ["tag_1"] }, { nested_field: "nested value" }],
  };
  expect(await run(v1Identify(traits), V1)).toEqual([
    post("https://api.intercom.io/users", {
      name: "Test Name", phone: "9876543210", email: "test_1@test.com", signed_up_at: 1601493060, user_id: "test_user_id_1",
      last_seen_user_agent: "unknown", update_last_request_at: true,
      custom_attributes: {
        key1: "value1", "address.city": "Kolkata", "address.state": "West Bengal",
        "originalArray[0].nested_field": "nested value", "originalArray[0].tags[0]": "tag_1", "originalArray[0].tags[1]": "tag_2",
        "originalArray[0].tags[2]": "tag_3", "originalArray[1].nested_field": "nested value", "originalArray[1].tags[0]": "tag_1",
        "originalArray[2].nested_field": "nested value", anonymousId,
      },
    }, V1_HEADERS),
  ]);
});

test("INTERCOM v1 identify: name is 'first last', or whichever of the two is set; updateLastRequestAt false is sent", async () => {
  expect((await run(v1Identify(user5Traits), V1))[0]!.body.JSON).toEqual(expectedUser5);
  expect((await run(v1Identify({ ...user5Traits, firstName: undefined }), V1))[0]!.body.JSON).toEqual({ ...expectedUser5, name: "Name" });
  expect((await run(v1Identify({ ...user5Traits, lastName: undefined }), V1))[0]!.body.JSON).toEqual({ ...expectedUser5, name: "Test" });
  expect((await run(v1Identify(user5Traits), { ...V1, updateLastRequestAt: false }))[0]!.body.JSON).toMatchObject({ update_last_request_at: false });
});

test("INTERCOM v1 identify with traits.company → companies with company_id (md5 of the name without an id) and stringified custom attributes", async () => {
  const base = { lastName: "Name", key1: "value1", phone: "9876543210", email: "test_1@test.com", createdAt: "2020-09-30T19:11:00.337Z", anonymousId };
  const expected = { ...expectedUser5, name: "Name" };
  const withId = { key1: "value1", name: "Test Comp", id: "company_id", industry: "test industry", key2: { a: "a" }, key3: [1, 2, 3] };
  expect((await run(v1Identify({ ...base, company: withId }), V1))[0]!.body.JSON).toEqual({
    ...expected,
    companies: [{ name: "Test Comp", industry: "test industry", company_id: "company_id", custom_attributes: { key1: "value1", key2: '{"a":"a"}', key3: "[1,2,3]" } }],
  });
  const noId = { name: "Test Comp", industry: "test industry", key1: "value1", key2: null, key3: ["value1", "value2"], key4: { foo: "bar" } };
  expect((await run(v1Identify({ ...base, company: noId }), V1))[0]!.body.JSON).toEqual({
    ...expected,
    companies: [{ name: "Test Comp", industry: "test industry", company_id: "c0277b5c814453e5135f515f943d085a", custom_attributes: { key1: "value1", key3: '["value1","value2"]', key4: '{"foo":"bar"}' } }],
  });
  // Neither id nor name: Intercom cannot place the user in it, so the list is empty.
  expect((await run(v1Identify({ ...user5Traits, firstName: undefined, company: { industry: "test industry", key1: "value1" } }), V1))[0]!.body.JSON).toEqual({ ...expected, companies: [] });
  // `remove` is the company's own flag, not a custom attribute of it (router v1 fixture).
  expect((await run(v1Identify({ ...base, company: { id: "c-1", name: "C", remove: true, tier: "gold" } }), V1))[0]!.body.JSON).toEqual({
    ...expected,
    companies: [{ company_id: "c-1", name: "C", remove: true, custom_attributes: { tier: "gold" } }],
  });
});

test("INTERCOM v1 identify from rETL → the row's traits with user_id, name and update_last_request_at", async () => {
  const event = {
    type: "identify",
    context: { externalId: [{ id: "10156", type: "INTERCOM-customer", identifierType: "user_id" }], mappedToDestination: "true", traits: user5Traits },
    originalTimestamp,
  };
  expect(await run(event, V1)).toEqual([
    post("https://api.intercom.io/users", { ...user5Traits, user_id: "10156", name: "Test Name", update_last_request_at: true }, V1_HEADERS),
  ]);
});

const trackTraits = { ...user1Traits };
const money = { revenue: { amount: 1232, currency: "inr", test: 123 }, price: { amount: 3000, currency: "USD" } };

test("INTERCOM v2 track → POST /events with created_at and monetary-amount properties kept whole in metadata", async () => {
  const event = { type: "track", userId: "user@2", anonymousId: "default-anonymousId", event: "Product Viewed", context: { traits: trackTraits }, properties: money, originalTimestamp };
  expect(await run(event, V2)).toEqual([
    post("https://api.intercom.io/events", { user_id: "user@2", metadata: money, created_at: 1699627364, event_name: "Product Viewed", email: "test@rudderlabs.com" }, V2_HEADERS),
  ]);
});

test("INTERCOM v2 track from rETL → the row's traits as the event, its user_id as external_id when it has no e-mail (track test 2)", async () => {
  const event = { type: "track", userId: "user@2", event: "Product Viewed", context: { mappedToDestination: "true" }, traits: { ...money, user_id: "user@1", event_name: "Product Viewed" }, originalTimestamp };
  expect(await run(event, V2)).toEqual([
    post("https://api.intercom.io/events", { ...money, user_id: "user@1", external_id: "user@1", event_name: "Product Viewed" }, V2_HEADERS),
  ]);
  // A row with an e-mail is not given one; a row's metadata is flattened as a track's properties are.
  const withEmail = { ...event, traits: { user_id: "user@1", email: "r@example.com", event_name: "E", metadata: { a: { b: 1 }, price: { amount: 1, currency: "EUR" } } } };
  expect((await run(withEmail, V2))[0]!.body.JSON).toEqual({ user_id: "user@1", email: "r@example.com", event_name: "E", metadata: { "a.b": 1, price: { amount: 1, currency: "EUR" } } });
  // The 1.4 API has no external_id.
  expect((await run(event, V1))[0]!.body.JSON).toEqual({ ...money, user_id: "user@1", event_name: "Product Viewed" });
});

test("INTERCOM v1 track → POST /events with `created`, rich links and amounts whole, other properties flattened (nulls kept)", async () => {
  const properties = {
    property1: 1, property2: "test", property3: true, property4: "2020-10-05T09:09:03.731Z",
    property5: { property1: 1, property2: "test", property3: { subProp1: { a: "a", b: "b" }, subProp2: ["a", "b"] } },
    properties6: null, ...money, article: { url: "https://example.org/ab1de.html", value: "the dude abides" },
  };
  const event = { type: "track", userId: "user@2", anonymousId: "default-anonymousId", event: "Test Event 2", context: { traits: trackTraits }, properties, originalTimestamp };
  const expected = { user_id: "user@2", created: 1699627364, event_name: "Test Event 2", email: "test@rudderlabs.com" };
  expect(await run(event, V1)).toEqual([
    post("https://api.intercom.io/events", {
      ...expected,
      metadata: {
        ...money, article: { url: "https://example.org/ab1de.html", value: "the dude abides" },
        property1: 1, property2: "test", property3: true, property4: "2020-10-05T09:09:03.731Z",
        "property5.property1": 1, "property5.property2": "test", "property5.property3.subProp1.a": "a", "property5.property3.subProp1.b": "b",
        "property5.property3.subProp2[0]": "a", "property5.property3.subProp2[1]": "b", properties6: null,
      },
    }, V1_HEADERS),
  ]);
  expect(await run({ ...event, properties: undefined }, V1)).toEqual([post("https://api.intercom.io/events", expected, V1_HEADERS)]);
});

const group1Traits = { size: 500, industry: "CDP", plan: "enterprise", name: "RudderStack", website: "www.rudderstack.com" };
const group2Traits = {
  size: "50", key1: "val1", plan: "basic", industry: "IT", employees: 450, monthlySpend: "2131231", userId: "sdfrsdfsdfsf",
  email: "test@test.com", name: "rudderUpdate", remoteCreatedAt: "1683017572",
};
const V1G = { apiKey: "abcd=", appId: "asdasdasd", apiVersion: "v1", collectContext: false };
const V1G_HEADERS = headers("abcd=", "1.4");
const group2Company = {
  company_id: "test_company_id_wdasda", custom_attributes: { email: "test@test.com", employees: 450, key1: "val1" }, industry: "IT",
  monthly_spend: 2131231, name: "rudderUpdate", plan: "basic", remote_created_at: 1683017572, size: 50,
};

test("INTERCOM v2 group whose contact the search does not find → POST /companies with the company (regional server honoured)", async () => {
  const event = { type: "group", userId: "user@4", groupId: "rudderlabs", context: { traits: { email: "test+4@rudderlabs.com" } }, traits: group1Traits, originalTimestamp };
  expect(await run(event, V2)).toEqual([post("https://api.intercom.io/companies", { company_id: "rudderlabs", ...group1Traits }, V2_HEADERS)]);
  expect(await run(event, { ...V2, apiServer: "eu" })).toEqual([post("https://api.eu.intercom.io/companies", { company_id: "rudderlabs", ...group1Traits }, V2_HEADERS)]);
});

test("INTERCOM v1 group → POST /companies, then POST /users adding the user (by userId and email) to the company", async () => {
  const event = { type: "group", userId: "sdfrsdfsdfsf", anonymousId: "sdfrsdfsdfsf", groupId: "test_company_id_wdasda", context: { traits: {} }, traits: group2Traits, originalTimestamp };
  const membership = { companies: [{ name: "rudderUpdate", company_id: "test_company_id_wdasda" }], user_id: "sdfrsdfsdfsf" };
  expect(await run(event, V1G)).toEqual([
    post("https://api.intercom.io/companies", group2Company, V1G_HEADERS),
    post("https://api.intercom.io/users", membership, V1G_HEADERS),
  ]);
  const withEmail = { ...event, context: { traits: { email: "testUser@test.com" } }, traits: { ...group2Traits, website: "url" } };
  expect(await run(withEmail, V1G)).toEqual([
    post("https://api.intercom.io/companies", { ...group2Company, website: "url" }, V1G_HEADERS),
    post("https://api.intercom.io/users", { ...membership, email: "testUser@test.com" }, V1G_HEADERS),
  ]);
});

test("INTERCOM v1 group without userId: nested traits flatten with '.', the user is added by email only; with neither, the company alone", async () => {
  const traits = { ...group2Traits, website: "url", key2: { a: "a", b: "b" }, key3: [1, 2, 3], key4: null };
  const event = { type: "group", anonymousId: "anonId", groupId: "test_company_id_wdasda", context: { traits: { email: "testUser@test.com" } }, traits };
  expect(await run(event, V1G)).toEqual([
    post("https://api.intercom.io/companies", {
      ...group2Company, website: "url",
      custom_attributes: { email: "test@test.com", employees: 450, key1: "val1", "key2.a": "a", "key2.b": "b", "key3[0]": 1, "key3[1]": 2, "key3[2]": 3, key4: null },
    }, V1G_HEADERS),
    post("https://api.intercom.io/users", { companies: [{ name: "rudderUpdate", company_id: "test_company_id_wdasda" }], email: "testUser@test.com" }, V1G_HEADERS),
  ]);
  // sendAnonymousId makes the anonymous id the user id.
  expect((await run(event, { ...V1G, sendAnonymousId: true }))[1]!.body.JSON).toMatchObject({ user_id: "anonId" });
  const alone = { type: "group", anonymousId: "12312312", groupId: "test_company_id", context: { traits: {} }, traits: { ...group1Traits, monthlySpend: "2131231", email: "comanyemail@abc.com" } };
  expect(await run(alone, V1G)).toEqual([
    post("https://api.intercom.io/companies", { ...group1Traits, custom_attributes: { email: "comanyemail@abc.com" }, monthly_spend: 2131231, company_id: "test_company_id" }, V1G_HEADERS),
  ]);
});

test("INTERCOM refusals carry RudderStack's messages", async () => {
  const cases: Array<[Record<string, any>, Record<string, any>, string]> = [
    [{ type: "page", userId: "u" }, V2, "message type page is not supported"],
    [{ type: "" }, V2, "message Type is not present. Aborting"],
    [{ type: "identify", userId: "u" }, { apiVersion: "v2" }, "Access Token is not present. Aborting"],
    [{ type: "identify", anonymousId: "a", context: { traits: { plan: "x" } } }, V2, "Either email or userId is required for Identify call"],
    [{ type: "identify", anonymousId: "a", context: { traits: { plan: "x" } } }, V1, "Either of `email` or `userId` is required for Identify call"],
    [{ type: "track", userId: "u" }, V2, "Event name is required for track call"],
    [{ type: "track", anonymousId: "a", event: "E" }, V1, "Either email or userId is required for Track call"],
    [{ type: "group", userId: "u" }, V1, "groupId is required for group call"],
  ];
  for (const [event, config, message] of cases) await expect(run(event, config)).rejects.toThrow(message);
});

test("INTERCOM event filtering drops a blacklisted track; identify passes", async () => {
  const config = { ...V2, eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "Noise" }] };
  expect(await run({ type: "track", userId: "u", event: "Noise" }, config)).toEqual([]);
  expect(await run({ type: "track", userId: "u", event: "Signal" }, config)).toHaveLength(1);
});

test("INTERCOM deleteUsers → one POST api.intercom.io/user_delete_requests per userId, as RudderStack's handler", async () => {
  const reqs = intercom.deleteUsers!([{ userId: "7" }, { userId: "9" }, { userId: "" }], ctx({ apiKey: "API_KEY" }));
  const hdrs = { Authorization: "Bearer API_KEY", Accept: "application/json" };
  expect(reqs).toEqual([
    post("https://api.intercom.io/user_delete_requests", { intercom_user_id: "7" }, hdrs),
    post("https://api.intercom.io/user_delete_requests", { intercom_user_id: "9" }, hdrs),
  ]);
  expect(() => intercom.deleteUsers!([{ userId: "1" }], ctx({}))).toThrow("api key for deletion not present");
});

test("INTERCOM RudderStack fixture: v2 rETL identify keeps the row's custom_attributes, filtered and flattened with '_' (identify test 3)", async () => {
  const event = {
    type: "identify",
    context: { externalId: [{ id: "user@1", type: "INTERCOM-customer", identifierType: "user_id" }], mappedToDestination: "true" },
    traits: { owner_id: 13, name: "Test Rudderlabs", phone: "+91 9999999999", email: "test@rudderlabs.com", custom_attributes: { ca1: "value1", ca2: "value2" } },
    originalTimestamp,
  };
  expect(await run(event, V2)).toEqual([
    post("https://api.intercom.io/contacts", {
      owner_id: 13, user_id: "user@1", name: "Test Rudderlabs", phone: "+91 9999999999", email: "test@rudderlabs.com", custom_attributes: { ca1: "value1", ca2: "value2" },
    }, V2_HEADERS),
  ]);
  // RudderStack's workflow: a row without an e-mail is matched by its user id as external_id; nested custom attributes flatten.
  const noEmail = { ...event, traits: { user_id: "u-9", name: "N", custom_attributes: { plan: { tier: "pro" }, email: "x@y.z" } } };
  expect((await run(noEmail, V2))[0]!.body.JSON).toEqual({ user_id: "user@1", external_id: "user@1", name: "N", custom_attributes: { plan_tier: "pro" } });
});

test("INTERCOM RudderStack fixture: v2 identify with lookup external_id keeps it out of custom attributes and PUTs the contact found by it (identify test 16)", async () => {
  const event = {
    type: "identify",
    anonymousId: "default-anonymousId",
    context: { externalId: [{ id: "10156", type: "INTERCOM-customer", identifierType: "user_id" }], traits: { ...user5Traits, external_id: "10156" } },
    integrations: { INTERCOM: { lookup: "external_id" } },
    originalTimestamp,
  };
  expect(await run(event, V2)).toEqual([
    put(`https://api.intercom.io/contacts/${KNOWN_CONTACT}`, {
      custom_attributes: { anonymousId, key1: "value1" }, email: "test_1@test.com", name: "Test Name", phone: "9876543210", signed_up_at: 1601493060,
    }, V2_HEADERS),
  ]);
});

test("INTERCOM RudderStack fixture: v1 rETL identify sends the row as it is, without custom_attributes (identify test 15)", async () => {
  const event = {
    type: "identify",
    context: {
      externalId: [{ id: "10156", type: "INTERCOM-customer", identifierType: "user_id" }],
      mappedToDestination: "true",
      traits: { ...user5Traits, custom_attributes: { dropped: true } },
    },
    originalTimestamp,
  };
  expect(await run(event, V1)).toEqual([
    post("https://api.intercom.io/users", { ...user5Traits, user_id: "10156", name: "Test Name", update_last_request_at: true }, V1_HEADERS),
  ]);
});

test("INTERCOM RudderStack fixture: validation errors (processor validation tests 1, 2, 4, 7, 8, 9, 10)", async () => {
  const userTraits = { age: 23, ownerId: "14", role: "user", source: "rudder-sdk", firstname: "Test", lastName: "RudderStack", phone: "+91 9299999999", birthday: "2022-05-13T12:51:01.470Z" };
  const cases: Array<[Record<string, any>, Record<string, any>, string]> = [
    [{ event: "Product Searched", context: { traits: userTraits } }, V2, "message Type is not present. Aborting"],
    [{ userId: "user@45", type: "page", context: { traits: userTraits } }, V2, "message type page is not supported"],
    [{ anonymousId: "anon@2", type: "identify", context: { traits: userTraits }, integrations: { INTERCOM: { lookup: "phone" } } }, V2, "Either email or userId is required for Identify call"],
    [{ userId: "user@3", type: "track", context: { traits: userTraits }, properties: money }, V2, "Event name is required for track call"],
    [{ userId: "user@4", type: "group", context: { traits: { email: "test+4@rudderlabs.com" } }, traits: group1Traits }, V2, "groupId is required for group call"],
    [{ type: "identify", anonymousId, context: { traits: userTraits } }, V1, "Either of `email` or `userId` is required for Identify call"],
    [{ type: "track", anonymousId, context: { traits: userTraits }, event: "Test Event 2" }, V1, "Either email or userId is required for Track call"],
  ];
  for (const [event, config, message] of cases) await expect(run(event, config)).rejects.toThrow(message);
  await expect(run({ userId: "user@1", type: "identify", context: { traits: userTraits } }, { ...V2, apiKey: null })).rejects.toThrow("Access Token is not present. Aborting");
});

test("INTERCOM RudderStack fixture: deletion refusals and users without an id (deleteUsers tests 2–4)", async () => {
  const users = [{ userId: "6188c2c5f47e464b4abf3235" }, { userId: "user_sdk2" }];
  expect(() => intercom.deleteUsers!(users, { ...ctx({}), config: undefined as unknown as Record<string, any> })).toThrow("Config for deletion not present");
  expect(() => intercom.deleteUsers!(users, ctx({}))).toThrow("api key for deletion not present");
  expect(intercom.deleteUsers!([{} as { userId: string }], ctx({ apiKey: "a=" }))).toEqual([]);
});

test("INTERCOM generic fields as RudderStack reads them: first_name/last_name make the name, e-mail and phone may come from the properties", async () => {
  const identify = { type: "identify", userId: "u-1", context: { traits: { first_name: "Ada", last_name: "Lovelace", email: "ada@example.com" } } };
  expect((await run(identify, V2))[0]!.body.JSON).toEqual({ external_id: "u-1", email: "ada@example.com", name: "Ada Lovelace", custom_attributes: { first_name: "Ada", last_name: "Lovelace" } });
  const track = { type: "track", anonymousId: "a-1", event: "Signed", properties: { email: "p@example.com" }, originalTimestamp };
  expect((await run(track, V2))[0]!.body.JSON).toEqual({ event_name: "Signed", email: "p@example.com", created_at: 1699627364, metadata: { email: "p@example.com" } });
});

test("INTERCOM reserved traits leave the custom attributes only when they hold a value, as in RudderStack", async () => {
  const identify = { type: "identify", userId: "u-1", context: { traits: { email: "a@b.co", unsubscribedFromEmails: false, role: "", plan: "x" } } };
  expect((await run(identify, V2))[0]!.body.JSON).toEqual({
    external_id: "u-1", email: "a@b.co", role: "", unsubscribed_from_emails: false, custom_attributes: { unsubscribedFromEmails: false, role: "", plan: "x" },
  });
});

let s: TestServer;
beforeAll(async () => {
  s = await startSluice({ args: ["--destination-base-url", `INTERCOM=${sink.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  sink.stop();
  cleanup(s.dataDir);
});

const E2E_CONFIG = { apiKey: "ic-token", apiVersion: "v2", apiServer: "standard", sendAnonymousId: false };

test("INTERCOM through the pipeline: identify and group search the contact, then identify, track and group reach the stand-in in order with the bearer token", async () => {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "intercom", type: "INTERCOM", config: E2E_CONFIG, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const batch = [
    { type: "identify", userId: "e2e-1", context: { traits: { email: "ada@example.com", name: "Ada", plan: "pro" } } },
    { type: "track", userId: "e2e-1", event: "Signed Up", properties: { source: "ad" }, timestamp: "2024-05-01T10:00:00.000Z" },
    { type: "group", userId: "e2e-1", groupId: "acme", traits: { name: "Acme", size: 12, tier: "gold" } },
  ];
  const from = sink.received.length;
  expect((await sendEvent(s.url, src.writeKey, "batch", { batch })).status).toBe(200);
  await waitFor(() => sink.received.slice(from).some((r) => r.path === "/companies"), { what: "the company at the Intercom stand-in" });
  expect(sink.received.slice(from).map((r) => `${r.method} ${r.path}`)).toEqual([
    "POST /contacts/search",
    "POST /contacts",
    "POST /events",
    "POST /contacts/search",
    "POST /companies",
  ]);
  const [, contact, ev, , company] = sink.received.slice(from);
  expect(contact).toMatchObject({ method: "POST", path: "/contacts" });
  expect(contact!.headers.authorization).toBe("Bearer ic-token");
  expect(contact!.headers["intercom-version"]).toBe("2.10");
  expect(contact!.body).toEqual({ external_id: "e2e-1", email: "ada@example.com", name: "Ada", custom_attributes: { plan: "pro" } });
  expect(ev).toMatchObject({ method: "POST", path: "/events" });
  expect(ev!.body).toEqual({ event_name: "Signed Up", created_at: Date.parse("2024-05-01T10:00:00.000Z") / 1000, user_id: "e2e-1", metadata: { source: "ad" } });
  expect(company).toMatchObject({ method: "POST", path: "/companies" });
  expect(company!.body).toEqual({ company_id: "acme", name: "Acme", size: 12, custom_attributes: { tier: "gold" } });
});

test("INTERCOM suppress_with_delete → POST /user_delete_requests for the user and the deletion completes", async () => {
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "intercom-del", type: "INTERCOM", config: E2E_CONFIG, sourceIds: [] });
  expect(dst.status).toBe(201);
  const before = sink.received.length;
  const res = await api(s.url, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [dst.json.id], users: [{ userId: "ic-del-1" }] });
  expect(res.status).toBe(201);
  const deletionOf = async () => {
    const list = await api(s.url, "GET", "/v2/regulations");
    return list.json.data.find((r: any) => r.attributes.userId === "ic-del-1")?.deletion?.[0];
  };
  await waitFor(async () => (await deletionOf())?.status === "complete", { what: "deletion complete" });
  const reqs = sink.received.slice(before).filter((r) => r.path === "/user_delete_requests");
  expect(reqs).toHaveLength(1);
  expect(reqs[0]!.method).toBe("POST");
  expect(reqs[0]!.headers.authorization).toBe("Bearer ic-token");
  expect(reqs[0]!.body).toEqual({ intercom_user_id: "ic-del-1" });
});
