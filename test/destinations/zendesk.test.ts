import { afterAll, beforeAll, expect, test } from "bun:test";
import { zendesk } from "../../src/destinations/zendesk";
import type { DestinationContext, SluiceEvent } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, jsonRequest, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

// RudderStack's fixtures use these two configs (processor "Test 2" ff. and "Test 7" ff.).
const CONFIG_1 = { apiToken: "myDummyApiToken4", createUsersAsVerified: true, domain: "rudderlabshelp", email: "myDummyUserName1", removeUsersFromOrganization: true, sendGroupCallsWithoutUserId: true };
const CONFIG_2 = { apiToken: "myDummyApiToken4", createUsersAsVerified: false, domain: "rudderlabshelp", email: "test@rudder.com", removeUsersFromOrganization: false, sendGroupCallsWithoutUserId: false };
const ctx = (config: Record<string, any> = CONFIG_1, baseUrl?: string): DestinationContext => ({
  config,
  destination: { id: "dest-zd", name: "Zendesk", workspaceId: "ws-1" },
  baseUrl,
});
const MARKETPLACE = { "X-Zendesk-Marketplace-Name": "RudderStack", "X-Zendesk-Marketplace-Organization-Id": "3339", "X-Zendesk-Marketplace-App-Id": "263241" };
const HEADERS_1 = { Authorization: "Basic bXlEdW1teVVzZXJOYW1lMS90b2tlbjpteUR1bW15QXBpVG9rZW40", "Content-Type": "application/json", ...MARKETPLACE };
const HEADERS_2 = { Authorization: "Basic dGVzdEBydWRkZXIuY29tL3Rva2VuOm15RHVtbXlBcGlUb2tlbjQ=", "Content-Type": "application/json", ...MARKETPLACE };
const API = "https://rudderlabshelp.zendesk.com/api/v2/";

test("ZENDESK RudderStack fixture: identify → POST {domain}.zendesk.com/api/v2/users/create_or_update.json with email, name, external_id, user_fields.id and verified (Test 2)", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m-2",
    userId: "abcd-124",
    anonymousId: "297b0750-934b-4411-b66c-9b418cdbc0c9",
    context: { traits: { email: "example124@email.com", name: "abcd124" } },
  };
  expect(zendesk.transform(event, ctx())).toEqual([
    jsonRequest("POST", `${API}users/create_or_update.json`, {
      user: { email: "example124@email.com", name: "abcd124", external_id: "abcd-124", user_fields: { id: "abcd-124" }, verified: true },
    }, HEADERS_1),
  ]);
});

test("ZENDESK RudderStack fixture: identify takes traits.userId as external id, other scalar traits as user_fields, verified only with createUsersAsVerified (Test 7/8/9)", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m-7",
    userId: "12345678",
    context: { traits: { company: { id: 900001329943, remove: true }, country: "UK", email: "johnwick@example.com", name: "John Wick", userId: "abcd-124" } },
  };
  expect(zendesk.transform(event, ctx(CONFIG_2))).toEqual([
    jsonRequest("POST", `${API}users/create_or_update.json`, {
      user: { email: "johnwick@example.com", name: "John Wick", external_id: "abcd-124", user_fields: { id: "abcd-124", country: "UK" } },
    }, HEADERS_2),
  ]);
  // RudderStack Test 9: the same event with createUsersAsVerified on.
  const [req] = zendesk.transform(event, ctx({ ...CONFIG_2, createUsersAsVerified: true }));
  expect(req!.body.JSON).toEqual({ user: { email: "johnwick@example.com", name: "John Wick", external_id: "abcd-124", user_fields: { id: "abcd-124", country: "UK" }, verified: true } });
});

test("ZENDESK identify maps organizationId, timezone and phone to Zendesk's own fields, top-level traits win over context.traits; no email is fine (RudderStack Test 15)", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "u-1",
    traits: { name: "Ada", organizationId: 77, timezone: "Europe/London", phone: "+44 1", plan: "pro", tags: ["a"], gone: null, empty: "" },
    context: { traits: { email: "ignored@example.com" } },
  };
  expect(zendesk.transform(event, ctx())[0]!.body.JSON).toEqual({
    user: { name: "Ada", organization_id: 77, time_zone: "Europe/London", phone: "+44 1", external_id: "u-1", user_fields: { id: "u-1", plan: "pro", empty: "" }, verified: true },
  });
});

test("ZENDESK RudderStack fixture: identify errors: no userId → 'UserId is a mandatory field for identify'; no name → 'Missing required value from \"name\"' (Test 0)", () => {
  const base: SluiceEvent = { type: "identify", messageId: "m", anonymousId: "a", context: { traits: { name: "x" } } };
  expect(() => zendesk.transform(base, ctx())).toThrow("UserId is a mandatory field for identify");
  expect(() => zendesk.transform({ ...base, userId: "abcd-124", context: { traits: {} } }, ctx())).toThrow('Missing required value from "name"');
  expect(() => zendesk.transform({ type: "identify", messageId: "m", userId: "u" }, ctx())).toThrow('Missing required value from "name"');
});

test("ZENDESK RudderStack fixture: track body (event and email-identified profile, source 'Rudder' or sourceName) to /api/v2/user_profiles/events (Test 4/17)", () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "m-4",
    userId: "abcd-124",
    event: "test-track-event124",
    properties: { test_prop: "test_prop_value_124" },
    context: { traits: { email: "example124@email.com", name: "abcd124" } },
  };
  expect(zendesk.transform(event, ctx({ ...CONFIG_1, sourceName: "abc" }))).toEqual([
    jsonRequest("POST", `${API}user_profiles/events`, {
      event: { description: "test-track-event124", type: "test-track-event124", source: "abc", properties: { test_prop: "test_prop_value_124" } },
      profile: { type: "test-track-event124", source: "abc", identifiers: [{ type: "email", value: "example124@email.com" }] },
    }, HEADERS_1),
  ]);
  const [req] = zendesk.transform(event, ctx(CONFIG_2));
  expect(req!.headers).toEqual(HEADERS_2);
  expect((req!.body.JSON as any).event.source).toBe("Rudder");
  expect((req!.body.JSON as any).profile.source).toBe("Rudder");
});

test("ZENDESK RudderStack fixture: track errors: no email → 'email not found in traits.' (Test 1); no userId; sourceName 'zendesk' is refused", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", userId: "0000000000", event: "E", context: { traits: { country: "UK", name: "John Wick" } } };
  expect(() => zendesk.transform(event, ctx(CONFIG_2))).toThrow("email not found in traits.");
  const withEmail: SluiceEvent = { ...event, context: { traits: { email: "a@b.c" } } };
  expect(() => zendesk.transform({ ...withEmail, userId: undefined, anonymousId: "a" }, ctx())).toThrow("UserId is a mandatory field for track");
  expect(() => zendesk.transform(withEmail, ctx({ ...CONFIG_1, sourceName: " ZenDesk " }))).toThrow("Invalid source name. The source name `zendesk` is not allowed.");
});

test("ZENDESK RudderStack fixture: identify with traits.company.remove sends the user upsert only; the company object is no user field (Test 5/6/15)", () => {
  const company = { id: 900001329943, name: "test", remove: true };
  const fromContext: SluiceEvent = { type: "identify", messageId: "m-5", userId: "abcd-124", anonymousId: "ba1bb99c", context: { traits: { name: "abcd124", email: "example124@email.com", company } } };
  const user = { email: "example124@email.com", name: "abcd124", external_id: "abcd-124", user_fields: { id: "abcd-124" }, verified: true };
  // RudderStack also deletes the membership it looks up (DELETE users/{id}/organization_memberships/{id}.json); Sluice cannot know those ids.
  expect(zendesk.transform(fromContext, ctx())).toEqual([jsonRequest("POST", `${API}users/create_or_update.json`, { user }, HEADERS_1)]);
  const fromTraits: SluiceEvent = { type: "identify", messageId: "m-6", userId: "abcd-124", traits: { name: "abcd124", email: "example124@email.com", company } };
  expect(zendesk.transform(fromTraits, ctx())[0]!.body.JSON).toEqual({ user });
  const noEmail: SluiceEvent = { ...fromContext, context: { traits: { name: "abcd124", company } } };
  expect(zendesk.transform(noEmail, ctx())[0]!.body.JSON).toEqual({ user: { name: "abcd124", external_id: "abcd-124", user_fields: { id: "abcd-124" }, verified: true } });
});

test("ZENDESK RudderStack fixture: track body with the e-mail from context traits (Test 17; RudderStack posts it to users/{looked-up id}/events)", () => {
  const event: SluiceEvent = {
    type: "track", messageId: "m-17", userId: "0000000000", anonymousId: "223b5f40", event: "Order completed",
    context: { traits: { country: "UK", name: "John Wick", userId: "exId-123", email: "testemail1@email" } },
    properties: { category: "category", label: "label", userId: "exId-123", value: "value" },
  };
  const config = { apiToken: "yPJwcLTFSsvIkFhY23SzittHoYADJQ7eKDoxNu4x", createUsersAsVerified: true, domain: "rudderlabtest1", email: "rudderlabtest1@email.com", removeUsersFromOrganization: false, sendGroupCallsWithoutUserId: false };
  expect(zendesk.transform(event, ctx(config))).toEqual([
    jsonRequest("POST", "https://rudderlabtest1.zendesk.com/api/v2/user_profiles/events", {
      event: { description: "Order completed", type: "Order completed", source: "Rudder", properties: event.properties },
      profile: { type: "Order completed", source: "Rudder", identifiers: [{ type: "email", value: "testemail1@email" }] },
    }, { Authorization: "Basic cnVkZGVybGFidGVzdDFAZW1haWwuY29tL3Rva2VuOnlQSndjTFRGU3N2SWtGaFkyM1N6aXR0SG9ZQURKUTdlS0RveE51NHg=", "Content-Type": "application/json", ...MARKETPLACE }),
  ]);
});

const groupEvent: SluiceEvent = {
  type: "group",
  messageId: "m-g",
  anonymousId: "297b0750-934b-4411-b66c-9b418cdbc0c9",
  groupId: "group-124",
  context: { traits: { email: "example1245@email.com", name: "abcd1245" } },
  traits: { domainNames: "cw124.com", email: "group_email_124@xyz.com", name: "group-124" },
};
const ORG = { organization: { name: "group-124", domain_names: "cw124.com", external_id: "group-124", organization_fields: { id: "group-124", email: "group_email_124@xyz.com" } } };

test("ZENDESK RudderStack fixture: group without userId and sendGroupCallsWithoutUserId → POST organizations/create_or_update.json only (Test 14)", () => {
  const config = { ...CONFIG_1, apiToken: "myDummyApiToken2", domain: "blendohelp", email: "myDummyUserName2" };
  expect(zendesk.transform(groupEvent, ctx(config))).toEqual([
    jsonRequest("POST", "https://blendohelp.zendesk.com/api/v2/organizations/create_or_update.json", ORG, {
      Authorization: "Basic bXlEdW1teVVzZXJOYW1lMi90b2tlbjpteUR1bW15QXBpVG9rZW4y",
      "Content-Type": "application/json",
      ...MARKETPLACE,
    }),
  ]);
});

test("ZENDESK group with userId → the organization upsert, then the user upserted by external id into the organization by name", () => {
  expect(zendesk.transform({ ...groupEvent, userId: "abcd-124" }, ctx())).toEqual([
    jsonRequest("POST", `${API}organizations/create_or_update.json`, ORG, HEADERS_1),
    jsonRequest("POST", `${API}users/create_or_update.json`, {
      user: { external_id: "abcd-124", name: "abcd1245", email: "example1245@email.com", organization: { name: "group-124" }, verified: true },
    }, HEADERS_1),
  ]);
  // An organization without a name cannot be joined by name: only the upsert goes.
  const unnamed = zendesk.transform({ ...groupEvent, userId: "u", traits: { plan: "gold", tags: ["x"] } }, ctx(CONFIG_2));
  expect(unnamed.map((r) => r.body.JSON)).toEqual([{ organization: { tags: ["x"], external_id: "group-124", organization_fields: { id: "group-124", plan: "gold" } } }]);
});

test("ZENDESK RudderStack fixture: group errors: no userId without sendGroupCallsWithoutUserId (Test 12); no traits → 'Organisation Traits are missing. Aborting.'", () => {
  expect(() => zendesk.transform(groupEvent, ctx({ ...CONFIG_1, sendGroupCallsWithoutUserId: false }))).toThrow("UserId is a mandatory field for group");
  const { traits: _none, ...noTraits } = groupEvent;
  expect(() => zendesk.transform(noTraits as SluiceEvent, ctx())).toThrow("Organisation Traits are missing. Aborting.");
  expect(() => zendesk.transform({ ...noTraits, userId: "u" } as SluiceEvent, ctx(CONFIG_2))).toThrow("Organisation Traits are missing. Aborting.");
});

test("ZENDESK RudderStack fixture: page is refused with 'Event type page is not supported' (Test 13); missing config keys; baseUrl override", () => {
  expect(() => zendesk.transform({ ...groupEvent, type: "page" }, ctx())).toThrow("Event type page is not supported");
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: "u", traits: { name: "n" } };
  for (const key of ["email", "apiToken", "domain"]) {
    const { [key]: _drop, ...rest } = CONFIG_1 as Record<string, any>;
    expect(() => zendesk.transform(event, ctx(rest))).toThrow(`destination config is missing '${key}'`);
  }
  expect(zendesk.transform(event, ctx(CONFIG_1, "http://localhost:9090"))[0]!.endpoint).toBe("http://localhost:9090/api/v2/users/create_or_update.json");
});

test("ZENDESK sends one request per event, as RudderStack's router does (no batching)", () => {
  expect(zendesk.batch).toBeUndefined();
});

test("ZENDESK deleteUsers → DELETE users/destroy_many.json?external_ids=… in chunks of 100", () => {
  const users = Array.from({ length: 101 }, (_, i) => ({ userId: `u-${i}` }));
  const reqs = zendesk.deleteUsers!(users, ctx());
  expect(reqs).toHaveLength(2);
  expect(reqs[0]).toMatchObject({ method: "DELETE", endpoint: `${API}users/destroy_many.json`, headers: HEADERS_1 });
  expect(reqs[0]!.params).toEqual({ external_ids: users.slice(0, 100).map((u) => u.userId).join(",") });
  expect(reqs[1]!.params).toEqual({ external_ids: "u-100" });
});

let sluice: TestServer;
const sink = startSink();
const KIND = "ZENDESK";
const E2E_CONFIG = { domain: "acme", email: "agent@example.com", apiToken: "zd-token", createUsersAsVerified: true, sourceName: "web" };
const AUTH = `Basic ${btoa("agent@example.com/token:zd-token")}`;

beforeAll(async () => {
  sluice = await startSluice({ args: ["--destination-base-url", `${KIND}=${sink.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await sluice.stop();
  sink.stop();
  cleanup(sluice.dataDir);
});

test("ZENDESK end to end: identify, track and group reach the Zendesk stand-in with API-token auth, in order", async () => {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: "zendesk-e2e", type: KIND, config: E2E_CONFIG, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const batch = [
    { type: "identify", userId: "zd-1", traits: { name: "Ada", email: "ada@example.com", plan: "pro" } },
    { type: "track", userId: "zd-1", event: "Signed Up", properties: { via: "web" }, context: { traits: { email: "ada@example.com" } } },
    { type: "group", userId: "zd-1", groupId: "org-9", traits: { name: "Acme Ltd" } },
  ];
  expect((await sendEvent(sluice.url, src.writeKey, "batch", { batch })).status).toBe(200);
  const mine = () => sink.received.filter((r) => r.headers.authorization === AUTH);
  await waitFor(() => mine().length >= 4, { what: "4 requests at the Zendesk stand-in" });
  expect(mine().map((r) => `${r.method} ${r.path}`)).toEqual([
    "POST /api/v2/users/create_or_update.json",
    "POST /api/v2/user_profiles/events",
    "POST /api/v2/organizations/create_or_update.json",
    "POST /api/v2/users/create_or_update.json",
  ]);
  const [user, event, org, member] = mine();
  expect(user!.headers["content-type"]).toBe("application/json");
  expect(user!.headers["x-zendesk-marketplace-app-id"]).toBe("263241");
  expect(user!.body).toEqual({ user: { email: "ada@example.com", name: "Ada", external_id: "zd-1", user_fields: { id: "zd-1", plan: "pro" }, verified: true } });
  expect(event!.body).toEqual({
    event: { description: "Signed Up", type: "Signed Up", source: "web", properties: { via: "web" } },
    profile: { type: "Signed Up", source: "web", identifiers: [{ type: "email", value: "ada@example.com" }] },
  });
  expect(org!.body).toEqual({ organization: { name: "Acme Ltd", external_id: "org-9", organization_fields: { id: "org-9" } } });
  expect(member!.body).toEqual({ user: { external_id: "zd-1", organization: { name: "Acme Ltd" }, verified: true } });
});

test("ZENDESK end to end: suppress_with_delete reaches DELETE /api/v2/users/destroy_many.json?external_ids=…; the deletion completes", async () => {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: "zendesk-del", type: KIND, config: E2E_CONFIG, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const reg = await api(sluice.url, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [dst.json.id], users: [{ userId: "zd-gone-1" }] });
  expect(reg.status).toBe(201);
  const call = await waitFor(() => sink.received.find((r) => r.path === "/api/v2/users/destroy_many.json" && r.query.external_ids === "zd-gone-1"), { what: "the deletion call" });
  expect(call.method).toBe("DELETE");
  expect(call.headers.authorization).toBe(AUTH);
  const deletionOf = async () => {
    const res = await api(sluice.url, "GET", "/v2/regulations");
    const items: any[] = res.json?.data ?? [];
    return items.find((r) => r.attributes?.userId === "zd-gone-1")?.deletion;
  };
  await waitFor(async () => (await deletionOf())?.[0]?.status === "complete", { what: "deletion complete" });
});
