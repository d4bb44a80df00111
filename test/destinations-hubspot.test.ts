import { afterAll, beforeAll, expect, test } from "bun:test";
import { hubspot } from "../src/destinations/hubspot";
import type { DestinationContext, SluiceEvent } from "../src/destinations/types";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "./helpers";

const ctx = (config: Record<string, any>): DestinationContext => ({ config, destination: { id: "d-hs", name: "HubSpot", workspaceId: "ws" } });
const LEGACY = { authorizationType: "legacyApiKey", apiKey: "hs-key", hubID: "6405167", apiVersion: "legacyApi" };
const PRIVATE_NEW = { authorizationType: "newPrivateAppApi", accessToken: "tok", hubID: "6405167", apiVersion: "newApi", lookupField: "email" };
const JSON_HEADERS = { "Content-Type": "application/json" };
const errorOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as Error).message;
  }
  return undefined;
};

test("HS legacy identify → POST contacts/v1 createOrUpdate/email/<email> with hapikey and lowercased property list", () => {
  const event: SluiceEvent = { type: "identify", messageId: "m1", userId: "u1", context: { traits: { email: "ada@example.com", firstName: "Ada", "Favourite Colour": "red" } } };
  const [req] = hubspot.transform(event, ctx(LEGACY));
  expect(req!.method).toBe("POST");
  expect(req!.endpoint).toBe("https://api.hubapi.com/contacts/v1/contact/createOrUpdate/email/ada@example.com");
  expect(req!.headers).toEqual(JSON_HEADERS);
  expect(req!.params).toEqual({ hapikey: "hs-key" });
  expect(req!.body.JSON).toEqual({
    properties: [
      { property: "email", value: "ada@example.com" },
      { property: "firstname", value: "Ada" },
      { property: "favourite_colour", value: "red" },
    ],
  });
});

test("HS identify without email → 'Identify without email is not supported.'", () => {
  const event: SluiceEvent = { type: "identify", messageId: "m2", userId: "u1", traits: { name: "x" } };
  expect(errorOf(() => hubspot.transform(event, ctx(LEGACY)))).toBe("Identify without email is not supported.");
  expect(errorOf(() => hubspot.transform(event, ctx(PRIVATE_NEW)))).toBe("Identify without email is not supported.");
});

test("HS private app identify → Bearer token, no hapikey; new API upserts by lookupField on crm/v3 batch/upsert", () => {
  const event: SluiceEvent = { type: "identify", messageId: "m3", userId: "u1", traits: { email: "ada@example.com", lastName: "L" } };
  const [req] = hubspot.transform(event, ctx(PRIVATE_NEW));
  expect(req!.endpoint).toBe("https://api.hubapi.com/crm/v3/objects/contacts/batch/upsert");
  expect(req!.headers).toEqual({ ...JSON_HEADERS, Authorization: "Bearer tok" });
  expect(req!.params).toEqual({});
  expect(req!.body.JSON).toEqual({ inputs: [{ id: "ada@example.com", idProperty: "email", properties: { email: "ada@example.com", lastname: "L" } }] });
});

// RudderStack fixture "Test 0": anonymousId in traits is not a HubSpot property and is left out.
test("HS legacy identify (RudderStack Test 0) → properties email, firstname; endpoint email not encoded", () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: "12345", anonymousId: "0000", context: { traits: { email: "testhubspot2@email.com", firstname: "Test Hubspot", anonymousId: "12345" } } };
  expect(hubspot.transform(event, ctx({ apiKey: "dummy-apikey", hubID: "dummy-hubId" }))).toEqual([
    {
      version: "1",
      type: "REST",
      method: "POST",
      endpoint: "https://api.hubapi.com/contacts/v1/contact/createOrUpdate/email/testhubspot2@email.com",
      headers: JSON_HEADERS,
      params: { hapikey: "dummy-apikey" },
      body: { JSON: { properties: [{ property: "email", value: "testhubspot2@email.com" }, { property: "firstname", value: "Test Hubspot" }] }, JSON_ARRAY: {}, XML: {}, FORM: {} },
      files: {},
    },
  ]);
});

// RudderStack fixture "Test 2": no hapikey on the tracking endpoint. RudderStack drops the two
// user_actual_* properties after looking up the portal's properties; Sluice cannot look up, so sends them.
test("HS legacy track (RudderStack Test 2) → GET track.hubspot.com/v1/event with _a, _n and the traits as contact properties", () => {
  const event: SluiceEvent = { type: "track", messageId: "m4", userId: "12345", event: "test track event HS", context: { traits: { email: "testhubspot2@email.com", firstname: "Test Hubspot" } }, properties: { user_actual_role: "system_admin, system_user", user_actual_id: 12345 } };
  const [req] = hubspot.transform(event, ctx({ apiKey: "dummy-apikey", hubID: "dummy-hubId" }));
  expect(req!.method).toBe("GET");
  expect(req!.endpoint).toBe("https://track.hubspot.com/v1/event");
  expect(req!.headers).toEqual(JSON_HEADERS);
  expect(req!.body.JSON).toEqual({});
  expect(req!.params).toEqual({ _a: "dummy-hubId", _n: "test track event HS", email: "testhubspot2@email.com", firstname: "Test Hubspot", user_actual_role: "system_admin, system_user", user_actual_id: 12345 });
});

test("HS legacy track (RudderStack Tests 14, 16) → properties as contact properties, hubspotId externalId as id, address/company flattened", () => {
  const config = { apiKey: "dummy-apikey", hubID: "dummy-hubId" };
  const t14: SluiceEvent = { type: "track", messageId: "m", userId: "12345", event: "test track event HS", context: { traits: {} }, properties: { email: "testhubspot2@email.com", firstname: "Test Hubspot" } };
  expect(hubspot.transform(t14, ctx(config))[0]!.params).toEqual({ _a: "dummy-hubId", _n: "test track event HS", email: "testhubspot2@email.com", firstname: "Test Hubspot" });
  const t16: SluiceEvent = { type: "track", messageId: "m", userId: "12345", event: "test track event HS 2", context: { externalId: [{ type: "hubspotId", id: "6556" }] }, properties: { address: { street: "24. park" }, company: { name: "RudderStack" } } };
  expect(hubspot.transform(t16, ctx(config))[0]!.params).toEqual({ _a: "dummy-hubId", _n: "test track event HS 2", id: "6556", address: "24. park", company: "RudderStack" });
});

test("HS legacy track with revenue → _m carries the value", () => {
  const event: SluiceEvent = { type: "track", messageId: "m9", event: "Purchase", context: { traits: { email: "a@b.c" } }, properties: { revenue: 12 } };
  expect(hubspot.transform(event, ctx(LEGACY))[0]!.params._m).toBe(12);
});

test("HS new API track → POST events/v3/send with the mapped event name and properties; unmapped event → error", () => {
  const config = { ...PRIVATE_NEW, hubspotEvents: [{ rsEventName: "Purchase", hubspotEventName: "pe123_purchase", eventProperties: [{ from: "plan", to: "plan_name" }] }] };
  const event: SluiceEvent = { type: "track", messageId: "m5", userId: "u1", event: "Purchase", timestamp: "2024-05-01T10:00:00.000Z", context: { traits: { email: "ada@example.com" } }, properties: { plan: "pro", other: 1 } };
  const [req] = hubspot.transform(event, ctx(config));
  expect(req!.endpoint).toBe("https://api.hubapi.com/events/v3/send");
  expect(req!.body.JSON).toEqual({ eventName: "pe123_purchase", properties: { plan_name: "pro" }, email: "ada@example.com", occurredAt: "2024-05-01T10:00:00.000Z" });
  expect(errorOf(() => hubspot.transform({ ...event, event: "Other" }, ctx(config)))).toBe("Event name 'Other' mappings are not configured in the destination");
});

test("HS page → unsupported message type; missing apiKey → config error", () => {
  expect(errorOf(() => hubspot.transform({ type: "page", messageId: "m6" }, ctx(LEGACY)))).toBe("Message type page is not supported");
  const event: SluiceEvent = { type: "identify", messageId: "m7", traits: { email: "a@b.c" } };
  expect(errorOf(() => hubspot.transform(event, ctx({ apiVersion: "legacyApi" })))).toBe("destination config is missing 'apiKey'");
});

let s: TestServer;
const sink = startSink();
beforeAll(async () => {
  s = await startSluice({ args: ["--destination-base-url", `HS=${sink.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  sink.stop();
  cleanup(s.dataDir);
});

test("HS end to end: identify and track reach the HubSpot stand-in with path, query and body", async () => {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "hs", type: "HS", config: LEGACY, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  await sendEvent(s.url, src.writeKey, "identify", { userId: "u1", traits: { email: "ada@example.com", firstName: "Ada" } });
  await sendEvent(s.url, src.writeKey, "track", { userId: "u1", event: "Signed Up", context: { traits: { email: "ada@example.com" } } });
  await waitFor(() => sink.received.length >= 2, { what: "two requests at the HubSpot stand-in" });
  const identify = sink.received.find((r) => r.method === "POST")!;
  expect(identify.path).toBe("/contacts/v1/contact/createOrUpdate/email/ada@example.com");
  expect(identify.body.properties).toContainEqual({ property: "firstname", value: "Ada" });
  const track = sink.received.find((r) => r.method === "GET")!;
  expect(track.path).toBe("/v1/event");
  expect(track.query).toEqual({ _a: "6405167", _n: "Signed Up", email: "ada@example.com" });
  expect(identify.query).toEqual({ hapikey: "hs-key" });
  expect(identify.headers["content-type"]).toBe("application/json");
});
