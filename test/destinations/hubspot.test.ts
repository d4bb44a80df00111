import { afterAll, beforeAll, expect, test } from "bun:test";
import { hubspot } from "../../src/destinations/hubspot";
import type { DestinationContext, DestinationRequest, SluiceEvent } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

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

/** A request as RudderStack's fixtures show it, without its internal fields (userId, messageType, operation). */
function expected(parts: { method?: DestinationRequest["method"]; endpoint: string; headers?: Record<string, string>; params?: Record<string, unknown>; json?: Record<string, unknown>; batch?: unknown[] }): DestinationRequest {
  return {
    version: "1",
    type: "REST",
    method: parts.method ?? "POST",
    endpoint: parts.endpoint,
    headers: parts.headers ?? JSON_HEADERS,
    params: parts.params ?? {},
    body: { JSON: parts.json ?? {}, JSON_ARRAY: parts.batch ? { batch: JSON.stringify(parts.batch) } : {}, XML: {}, FORM: {} },
    files: {},
  };
}

// ---------- RudderStack processor fixtures (test/integrations/destinations/hs/processor/data.ts) ----------

// The configs of RudderStack's fixtures.
const FX_LEGACY = { apiKey: "dummy-apikey", hubID: "dummy-hubId" };
const FX_EVENTS = [
  { rsEventName: "Purchase", hubspotEventName: "pe22315509_rs_hub_test", eventProperties: [{ from: "Revenue", to: "value" }, { from: "Price", to: "cost" }] },
  { rsEventName: "Order Complete", hubspotEventName: "pe22315509_rs_hub_chair", eventProperties: [{ from: "firstName", to: "first_name" }, { from: "lastName", to: "last_name" }] },
];
const FILTERING = { eventFilteringOption: "disable", blacklistedEvents: [{ eventName: "" }], whitelistedEvents: [{ eventName: "" }] };
const FX_PRIVATE_NEW = { authorizationType: "newPrivateAppApi", hubID: "", apiKey: "", accessToken: "dummy-access-token", apiVersion: "newApi", lookupField: "lookupField", hubspotEvents: FX_EVENTS, ...FILTERING };
const FX_KEY_NEW = { ...FX_PRIVATE_NEW, authorizationType: "legacyApiKey", hubID: "dummy-hubId", apiKey: "dummy-apikey", accessToken: "" };
const BEARER = { ...JSON_HEADERS, Authorization: "Bearer dummy-access-token" };
const LEGACY_CONTACT = "https://api.hubapi.com/contacts/v1/contact/createOrUpdate/email/testhubspot2@email.com";
const HS_PROPS = [{ property: "email", value: "testhubspot2@email.com" }, { property: "firstname", value: "Test Hubspot" }];
const HS_TRAITS = { email: "testhubspot2@email.com", firstname: "Test Hubspot" };
const OTS = "2019-10-15T09:35:31.291Z";
const trackEvent = (extra: Record<string, any>): SluiceEvent => ({
  type: "track",
  messageId: "08829772-d991-427c-b976-b4c4f4430b4e",
  originalTimestamp: OTS,
  anonymousId: "00000000000000000000000000",
  userId: "12345",
  event: "test track event HS",
  ...extra,
  context: { traits: HS_TRAITS, ...extra.context },
});
const identifyEvent = (extra: Record<string, any> = {}): SluiceEvent => ({
  type: "identify",
  messageId: "50360b9c-ea8d-409c-b672-c9230f91cce5",
  originalTimestamp: "2019-10-15T09:35:31.288Z",
  anonymousId: "00000000000000000000000000",
  userId: "12345",
  context: { traits: { ...HS_TRAITS, anonymousId: "12345" } },
  ...extra,
});
const legacyTrackRequest = (params: Record<string, unknown>, headers = JSON_HEADERS) =>
  expected({ method: "GET", endpoint: "https://track.hubspot.com/v1/event", headers, params: { _a: "dummy-hubId", _n: "test track event HS", ...params } });

test("HS RudderStack fixture: legacy identify (Tests 0, 3, 43-45) → POST createOrUpdate/email/<email> with hapikey and a property list; anonymousId is no property", () => {
  const want = [expected({ endpoint: LEGACY_CONTACT, params: { hapikey: "dummy-apikey" }, json: { properties: HS_PROPS } })];
  expect(hubspot.transform(identifyEvent(), ctx(FX_LEGACY))).toEqual(want);
  // Test 3: the traits at the top level.
  expect(hubspot.transform(identifyEvent({ context: {}, traits: { ...HS_TRAITS, anonymousId: "12345" } }), ctx(FX_LEGACY))).toEqual(want);
  // Tests 43, 45: an identify's properties ({} or "") are not read when it has traits.
  expect(hubspot.transform(identifyEvent({ properties: {} }), ctx(FX_LEGACY))).toEqual(want);
  expect(hubspot.transform(identifyEvent({ properties: "" }), ctx(FX_LEGACY))).toEqual(want);
  // Test 22: the legacy API chosen in a new-style config.
  const newStyle = { ...FX_KEY_NEW, apiVersion: "legacyApi" };
  expect(hubspot.transform(identifyEvent(), ctx(newStyle))).toEqual(want);
});

test("HS RudderStack fixture: legacy identify with a private app (Test 17) → Bearer token, no hapikey", () => {
  const config = { authorizationType: "newPrivateAppApi", hubID: "dummy-hubId", apiKey: "dummy-apikey", accessToken: "dummy-access-token", apiVersion: "legacyApi", lookupField: "", ...FILTERING };
  expect(hubspot.transform(identifyEvent(), ctx(config))).toEqual([expected({ endpoint: LEGACY_CONTACT, headers: BEARER, json: { properties: HS_PROPS } })]);
});

test("HS RudderStack fixture: legacy identify without email (Test 4) → 'Identify without email is not supported.'", () => {
  const event = identifyEvent({ context: { traits: { firstname: "Test Hubspot", anonymousId: "12345" } } });
  expect(errorOf(() => hubspot.transform(event, ctx(FX_LEGACY)))).toBe("Identify without email is not supported.");
});

test("HS RudderStack fixture: page (Test 1) → 'Message type page is not supported'; no type → 'Message type is not present. Aborting message.'", () => {
  expect(errorOf(() => hubspot.transform({ type: "page", messageId: "m", name: "ApplicationLoaded" }, ctx(FX_LEGACY)))).toBe("Message type page is not supported");
  expect(errorOf(() => hubspot.transform({ messageId: "m", event: "Purchase" } as any, ctx(FX_PRIVATE_NEW)))).toBe("Message type is not present. Aborting message.");
});

test("HS RudderStack fixture: legacy track (Tests 2, 9, 23) → GET track.hubspot.com with _a, _n and the traits; the properties are not read when traits exist", () => {
  const want = [legacyTrackRequest(HS_TRAITS)];
  expect(hubspot.transform(trackEvent({ properties: { user_actual_role: "system_admin, system_user", user_actual_id: 12345 } }), ctx(FX_LEGACY))).toEqual(want);
  expect(hubspot.transform(trackEvent({}), ctx(FX_LEGACY))).toEqual(want);
  expect(hubspot.transform(trackEvent({ properties: { user_actual_id: 12345 } }), ctx({ ...FX_KEY_NEW, apiVersion: "legacyApi" }))).toEqual(want);
});

test("HS RudderStack fixture: legacy track revenue / value (Tests 5, 6) → _m", () => {
  const want = [legacyTrackRequest({ _m: 4.99, ...HS_TRAITS })];
  expect(hubspot.transform(trackEvent({ properties: { revenue: 4.99, user_actual_id: 12345 } }), ctx(FX_LEGACY))).toEqual(want);
  expect(hubspot.transform(trackEvent({ properties: { value: 4.99, user_actual_id: 12345 } }), ctx(FX_LEGACY))).toEqual(want);
  // RudderStack's mapping falls back to total as well.
  expect(hubspot.transform(trackEvent({ properties: { total: 7 } }), ctx(FX_LEGACY))[0]!.params._m).toBe(7);
});

test("HS RudderStack fixture: legacy track with empty traits (Test 14) → the properties become contact properties", () => {
  const event = trackEvent({ context: { traits: {} }, properties: HS_TRAITS });
  expect(hubspot.transform(event, ctx(FX_LEGACY))).toEqual([legacyTrackRequest(HS_TRAITS)]);
});

test("HS RudderStack fixture: legacy track with a hubspotId external id (Tests 15, 16) → id; address and company read from their spec objects", () => {
  const t15 = trackEvent({ event: "test track event HS", context: { externalId: [{ type: "hubspotId", id: "6556" }] }, properties: { user_actual_id: 12345 } });
  expect(hubspot.transform(t15, ctx(FX_LEGACY))).toEqual([legacyTrackRequest({ id: "6556", ...HS_TRAITS })]);
  // Test 16 also has user_actual_* properties, which RudderStack drops after reading the
  // portal's property list; Sluice cannot look that up, so they are left out of this input.
  const t16: SluiceEvent = { type: "track", messageId: "m", userId: "12345", event: "test track event HS", context: { externalId: [{ type: "hubspotId", id: "6556" }] }, properties: { address: { street: "24. park" }, company: { name: "RudderStack" } } };
  expect(hubspot.transform(t16, ctx(FX_LEGACY))).toEqual([legacyTrackRequest({ id: "6556", address: "24. park", company: "RudderStack" })]);
});

test("HS RudderStack fixture: legacy track with a private app → Bearer header, no key in the query", () => {
  const config = { apiKey: "dummy-apikey", hubID: "dummy-hubId", authorizationType: "newPrivateAppApi", accessToken: "dummy-access-token", apiVersion: "legacyApi" };
  expect(hubspot.transform(trackEvent({ properties: { user_actual_id: 12345 } }), ctx(config))).toEqual([legacyTrackRequest(HS_TRAITS, BEARER)]);
});

test("HS RudderStack fixture: config checks → 'Access Token not found. Aborting', 'Hub ID not found. Aborting', 'API Key not found. Aborting'", () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", traits: { lookupField: "firstname", firstname: "Test" }, context: { externalId: [{ id: "osvaldocostaferreira98@gmail.com", type: "HS-contacts", identifierType: "email" }] } };
  expect(errorOf(() => hubspot.transform(event, ctx({ ...FX_PRIVATE_NEW, accessToken: "" })))).toBe("Access Token not found. Aborting");
  expect(errorOf(() => hubspot.transform(event, ctx({ ...FX_KEY_NEW, hubID: "", apiKey: "" })))).toBe("Hub ID not found. Aborting");
  expect(errorOf(() => hubspot.transform(event, ctx({ ...FX_KEY_NEW, apiKey: "" })))).toBe("API Key not found. Aborting");
  // A config without authorizationType is a legacy API-key one.
  expect(errorOf(() => hubspot.transform(event, ctx({ apiVersion: "legacyApi", hubID: "h" })))).toBe("API Key not found. Aborting");
});

test("HS RudderStack fixture: new API track (Test 21) → events/v3/send with the mapped event, its mapped properties, email and occurredAt", () => {
  const event = trackEvent({ event: "Purchase", properties: { user_actual_role: "system_admin, system_user", user_actual_id: 12345, Revenue: 100 } });
  const config = { ...FX_PRIVATE_NEW, hubID: "1", apiKey: "1" };
  expect(hubspot.transform(event, ctx(config))).toEqual([
    expected({ endpoint: "https://api.hubapi.com/events/v3/send", headers: BEARER, json: { email: "testhubspot2@email.com", occurredAt: OTS, eventName: "pe22315509_rs_hub_test", properties: { value: 100 } } }),
  ]);
});

test("HS RudderStack fixture: new API track without traits → email from the first external id", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", traits: {}, context: { externalId: [{ id: "osvaldocostaferreira98@gmail.com", type: "HS-contacts", identifierType: "email" }] }, event: "Purchase", properties: { Revenue: "name1" } };
  expect(hubspot.transform(event, ctx(FX_PRIVATE_NEW))).toEqual([
    expected({ endpoint: "https://api.hubapi.com/events/v3/send", headers: BEARER, json: { email: "osvaldocostaferreira98@gmail.com", eventName: "pe22315509_rs_hub_test", properties: { value: "name1" } } }),
  ]);
});

test("HS RudderStack fixture: new API track with an API key → hapikey in the URL, objectId and hs_city / hs_country from the address", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", originalTimestamp: OTS, userId: "12345", event: "Purchase", context: {}, properties: { user_actual_role: "system_admin, system_user", user_actual_id: 12345, address: { city: "kolkata", country: "India" }, objectId: "5005" } };
  expect(hubspot.transform(event, ctx(FX_KEY_NEW))).toEqual([
    expected({ endpoint: "https://api.hubapi.com/events/v3/send?hapikey=dummy-apikey", json: { occurredAt: OTS, objectId: "5005", eventName: "pe22315509_rs_hub_test", properties: { hs_city: "kolkata", hs_country: "India" } } }),
  ]);
  const { objectId: _drop, ...noId } = event.properties;
  expect(errorOf(() => hubspot.transform({ ...event, properties: noId }, ctx(FX_KEY_NEW)))).toBe("Either of email, utk or objectId is required for custom behavioral events");
});

test("HS RudderStack fixture: new API track errors → unmapped event (lower-cased), no event name, no mappings, non-string event", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", event: "Temp Event", properties: { objectId: "5005" } };
  expect(errorOf(() => hubspot.transform(event, ctx(FX_KEY_NEW)))).toBe("Event name 'temp event' mappings are not configured in the destination");
  expect(errorOf(() => hubspot.transform({ ...event, event: undefined }, ctx(FX_KEY_NEW)))).toBe("event name is required for track call");
  const { hubspotEvents: _none, ...withoutMappings } = FX_PRIVATE_NEW;
  expect(errorOf(() => hubspot.transform({ ...event, event: "Purchase" }, ctx(withoutMappings)))).toBe("Event and property mappings are required for track call");
  expect(errorOf(() => hubspot.transform({ ...event, event: { name: "event" } }, ctx({ ...PRIVATE_NEW, hubspotEvents: [] })))).toBe("Event is a required field and should be a string");
  // Names match trimmed and in any case.
  expect(hubspot.transform({ ...event, event: " purchase " }, ctx(FX_KEY_NEW))[0]!.body.JSON.eventName).toBe("pe22315509_rs_hub_test");
});

test("HS RudderStack fixture: new API identify errors → no lookup value, no traits, no lookupField", () => {
  const noLookup: SluiceEvent = { type: "identify", messageId: "m", traits: {}, context: { externalId: [{ id: "osvaldocostaferreira98@gmail.com", type: "HS-contacts", identifierType: "email" }], mappedToDestination: false } };
  expect(errorOf(() => hubspot.transform(noLookup, ctx(FX_PRIVATE_NEW)))).toBe("Identify:: email i.e a default lookup field for contact lookup not found in traits");
  expect(errorOf(() => hubspot.transform({ type: "identify", messageId: "m", context: { mappedToDestination: false } }, ctx(FX_PRIVATE_NEW)))).toBe(
    "Identify - Invalid traits value for lookup field",
  );
  expect(errorOf(() => hubspot.transform({ type: "identify", messageId: "m", traits: { email: "a@b.co" } }, ctx({ ...FX_PRIVATE_NEW, lookupField: "" })))).toBe(
    "lookupField is a required field in webapp config",
  );
});

// RudderStack searches the contact by the lookup field and then creates or updates it (Tests 18,
// 19, 33 and the "default lookup field" case): Sluice upserts by that field in one call instead.
test("HS RudderStack fixture: new API identify (Tests 19, 33) → one upsert by the lookup field with the contact properties", () => {
  const event = identifyEvent({ context: { traits: { email: "noname@email.com", firstname: "Test Hubspot", anonymousId: "12345" } } });
  const input = { id: "noname@email.com", idProperty: "email", properties: { email: "noname@email.com", firstname: "Test Hubspot" } };
  const upsert = "https://api.hubapi.com/crm/v3/objects/contacts/batch/upsert";
  const config19 = { ...FX_PRIVATE_NEW, lookupField: "email", hubspotEvents: [] };
  expect(hubspot.transform(event, ctx(config19))).toEqual([expected({ endpoint: upsert, headers: BEARER, json: { inputs: [input] } })]);
  const config33 = { ...config19, authorizationType: "legacyApiKey", apiKey: "dummy-apikeysuccess", hubID: "dummy-hubId" };
  expect(hubspot.transform(event, ctx(config33))).toEqual([expected({ endpoint: upsert, params: { hapikey: "dummy-apikeysuccess" }, json: { inputs: [input] } })]);
  // "email is present in traits as a default lookup field": a lookupField the event lacks falls back to email.
  const onlyEmail: SluiceEvent = { type: "identify", messageId: "m", traits: { email: "noname@email.com" }, context: { mappedToDestination: false } };
  expect(hubspot.transform(onlyEmail, ctx(FX_PRIVATE_NEW))[0]!.body.JSON).toEqual({ inputs: [{ id: "noname@email.com", idProperty: "email", properties: { email: "noname@email.com" } }] });
});

test("HS RudderStack fixture: new API identify (Test 18) → a lookupField trait names nothing HubSpot stores and is not sent", () => {
  const event = identifyEvent({ context: { traits: { email: "testhubspot@email.com", firstname: "Test Hubspot", anonymousId: "12345", lookupField: "email" } } });
  const [req] = hubspot.transform(event, ctx({ ...FX_PRIVATE_NEW, hubspotEvents: [] }));
  // RudderStack reads the configured field name ("lookupField") as given, so its value is the lookup value.
  expect(req!.body.JSON).toEqual({ inputs: [{ id: "email", idProperty: "lookupField", properties: { email: "testhubspot@email.com", firstname: "Test Hubspot" } }] });
});

test("HS RudderStack fixture: null traits become empty strings (HubSpot clears the property)", () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: "12345", context: { traits: { email: "noname@email.com", firstname: null, gender: "", lookupField: "email" } } };
  const [req] = hubspot.transform(event, ctx({ ...FX_PRIVATE_NEW, lookupField: "email", hubspotEvents: [] }));
  expect(req!.body.JSON.inputs).toEqual([{ id: "noname@email.com", idProperty: "email", properties: { email: "noname@email.com", firstname: "", gender: "" } }]);
});

// router/errorValidationData.ts (75b1ac29) and es-retl-v3's processIdentify: a new-API identify
// with an e-mail trait HubSpot would refuse fails before the lookupField and contact checks.
test("HS RudderStack fixture: new API identify with an invalid e-mail → 'Email \"<email>\" is invalid', checked first", () => {
  const assoc: SluiceEvent = {
    type: "identify", messageId: "m", traits: { to: { id: 1 }, from: { id: 9405415215 }, email: "not-an-email" },
    context: { mappedToDestination: true, externalId: [{ id: 1, type: "HS-association", toObjectType: "contacts", fromObjectType: "companies", identifierType: "id", associationTypeId: "engineer" }] },
  };
  const config = { authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: "hs-access-token", lookupField: "email", hubspotEvents: [], ...FILTERING };
  expect(errorOf(() => hubspot.transform(assoc, ctx(config)))).toBe('Email "not-an-email" is invalid');
  // Before the lookupField check, and from context.traits too.
  const ctxTraits: SluiceEvent = { type: "identify", messageId: "m", context: { traits: { email: "a@b.c" } } };
  expect(errorOf(() => hubspot.transform(ctxTraits, ctx({ ...config, lookupField: "" })))).toBe('Email "a@b.c" is invalid');
  // The legacy API's identify does not check it.
  expect(hubspot.transform({ ...ctxTraits, context: { traits: { email: "not-an-email" } } }, ctx(FX_LEGACY))[0]!.endpoint).toBe(
    "https://api.hubapi.com/contacts/v1/contact/createOrUpdate/email/not-an-email",
  );
});

test("HS new API e-mail check follows validator.js isEmail's defaults", () => {
  const valid = ["noname@email.com", "a.b+c@sub.example.co", "\"quoted name\"@example.com", "üser@exämple.de", "x@xn--p1ai.xn--p1ai"];
  const invalid = ["a@b.c", "a@b", "a..b@example.com", ".a@example.com", "a@example.com.", "a@-example.com", "a@ex_ample.com", "a@[1.2.3.4]", "a@1.2.3.4", "Ada <a@example.com>", "@example.com", "a b@example.com", `${"x".repeat(65)}@example.com`];
  const config = { ...PRIVATE_NEW, hubspotEvents: [] };
  for (const email of valid) expect(errorOf(() => hubspot.transform({ type: "identify", messageId: "m", traits: { email } }, ctx(config)))).toBeUndefined();
  for (const email of invalid) expect(errorOf(() => hubspot.transform({ type: "identify", messageId: "m", traits: { email } }, ctx(config)))).toBe(`Email "${email}" is invalid`);
});

test("HS RudderStack fixture: router/errorValidationData.ts refusals, in RudderStack's words", () => {
  const config = { authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: "hs-access-token", lookupField: "email", hubspotEvents: [], ...FILTERING };
  const cases: Array<[Record<string, unknown>, Record<string, unknown>, string]> = [
    [{ type: "track", event: "Purchase", properties: {} }, { ...config, accessToken: "" }, "Access Token not found. Aborting"],
    [{ type: "identify", traits: {}, context: { mappedToDestination: false } }, config, "Identify:: email i.e a default lookup field for contact lookup not found in traits"],
    [{ type: "track", event: 12345, properties: {} }, config, "Event is a required field and should be a string"],
    [{ type: "page", name: "Home" }, config, "Message type page is not supported"],
    [{ properties: {} }, config, "Message type is not present. Aborting message."],
    [{ type: "track", properties: { rev: 1 } }, config, "event name is required for track call"],
    [
      { type: "track", event: "Order Completed", properties: { revenue: 9 } },
      { ...config, hubspotEvents: [{ rsEventName: "Order Completed", hubspotEventName: "pe_order_completed", eventProperties: [] }] },
      "Either of email, utk or objectId is required for custom behavioral events",
    ],
  ];
  for (const [message, cfg, error] of cases) expect(errorOf(() => hubspot.transform({ messageId: "m", ...message } as SluiceEvent, ctx(cfg)))).toBe(error);
});

test("HS RudderStack fixture: legacy API with a private app → Bearer on contacts/v1 and on track.hubspot.com", () => {
  const config = { authorizationType: "newPrivateAppApi", apiVersion: "legacyApi", accessToken: "pat", hubID: "123", lookupField: "email" };
  const bearer = { ...JSON_HEADERS, Authorization: "Bearer pat" };
  const identify: SluiceEvent = { type: "identify", messageId: "m", traits: { email: "v1@e.com", firstname: "A" }, context: { mappedToDestination: false } };
  expect(hubspot.batch!(hubspot.transform(identify, ctx(config)), ctx(config))).toEqual([
    expected({ endpoint: "https://api.hubapi.com/contacts/v1/contact/batch/", headers: bearer, batch: [{ email: "v1@e.com", properties: [{ property: "firstname", value: "A" }] }] }),
  ]);
  const track: SluiceEvent = { type: "track", messageId: "m", event: "Purchase", properties: { email: "v1@e.com" } };
  expect(hubspot.transform(track, ctx(config))).toEqual([
    expected({ method: "GET", endpoint: "https://track.hubspot.com/v1/event", headers: bearer, params: { _a: "123", _n: "Purchase", email: "v1@e.com" } }),
  ]);
});

// The newest router fixtures (router/data.ts at 75b1ac29) still send API-key configs with hapikey
// and keep the legacy config errors, so API keys stay accepted.
test("HS RudderStack fixture: legacyApiKey configs still work and keep RudderStack's config errors", () => {
  const legacyCfg = { authorizationType: "legacyApiKey", apiVersion: "legacyApi", apiKey: "dummy-apikey", hubID: "123" };
  const track: SluiceEvent = { type: "track", messageId: "m", event: "Purchase" };
  expect(errorOf(() => hubspot.transform(track, ctx({ ...legacyCfg, hubID: "" })))).toBe("Hub ID not found. Aborting");
  expect(errorOf(() => hubspot.transform(track, ctx({ ...legacyCfg, apiKey: "" })))).toBe("API Key not found. Aborting");
  expect(errorOf(() => hubspot.transform({ type: "identify", messageId: "m", traits: { firstname: "A" }, context: { mappedToDestination: false } }, ctx(legacyCfg)))).toBe(
    "Identify without email is not supported.",
  );
  const newApiKey = { authorizationType: "legacyApiKey", apiVersion: "newApi", apiKey: "dummy-apikeysuccess", hubID: "123", lookupField: "phone" };
  const [req] = hubspot.transform({ type: "identify", messageId: "m", traits: { phone: "9", firstname: "A" }, context: { mappedToDestination: false } }, ctx(newApiKey));
  // RudderStack's fixture finds no contact by phone and creates it; Sluice upserts by phone.
  expect(req).toEqual(
    expected({ endpoint: "https://api.hubapi.com/crm/v3/objects/contacts/batch/upsert", params: { hapikey: "dummy-apikeysuccess" }, json: { inputs: [{ id: "9", idProperty: "phone", properties: { firstname: "A", phone: "9" } }] } }),
  );
  const noToken = { authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: "", lookupField: "email" };
  expect(errorOf(() => hubspot.transform({ ...track, properties: {} }, ctx(noToken)))).toBe("Access Token not found. Aborting");
});

test("HS new API identify with a hsContactId external id → PATCH the contact by id (RudderStack's update, no lookup needed)", () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", context: { externalId: [{ type: "hsContactId", id: "103604" }], traits: { email: "a@b.co", lastName: "L" } } };
  expect(hubspot.transform(event, ctx(PRIVATE_NEW))).toEqual([
    expected({ method: "PATCH", endpoint: "https://api.hubapi.com/crm/v3/objects/contacts/103604", headers: { ...JSON_HEADERS, Authorization: "Bearer tok" }, json: { properties: { email: "a@b.co", lastname: "L" } } }),
  ]);
});

test("HS contact properties: common mapping names first (firstname, lastname, address parts, company), other traits lower-cased with _", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "u1",
    traits: { email: "ada@example.com", first_name: "Ada", lastName: "L", "Favourite Colour": "red", "plan.tier": "pro", address: { street: "1 Main", city: "Paris", postalcode: "75001" }, tags: ["a", "b"] },
  };
  expect(hubspot.transform(event, ctx(LEGACY))[0]!.body.JSON.properties).toEqual([
    { property: "email", value: "ada@example.com" },
    { property: "firstname", value: "Ada" },
    { property: "lastname", value: "L" },
    { property: "address", value: "1 Main" },
    { property: "city", value: "Paris" },
    { property: "zip", value: "75001" },
    { property: "favourite_colour", value: "red" },
    { property: "plan_tier", value: "pro" },
    { property: "tags", value: '["a","b"]' },
  ]);
});

// ---------- RudderStack router fixtures (router/data.ts, router/upsertData.ts) ----------

const batchOf = (config: Record<string, any>, events: SluiceEvent[]) =>
  hubspot.batch!(
    events.flatMap((e) => hubspot.transform(e, ctx(config))),
    ctx(config),
  );

test("HS RudderStack fixture: legacy router → identifies on POST contacts/v1/contact/batch/ ({email, properties} items), tracks alone", () => {
  const id = (n: number, anon?: string): SluiceEvent => identifyEvent({ context: { traits: { email: `testhubspot${n}@email.com`, firstname: `Test Hubspot${n}`, ...(anon ? { anonymousId: anon } : {}) } } });
  const track = trackEvent({ context: { traits: { email: "testhubspot2@email.com", firstname: "Test Hubspot2" } }, properties: { user_actual_id: 12345 } });
  const out = batchOf(FX_LEGACY, [id(3), id(1, "1111"), id(4, "4444"), track]);
  expect(out).toEqual([
    expected({
      endpoint: "https://api.hubapi.com/contacts/v1/contact/batch/",
      params: { hapikey: "dummy-apikey" },
      batch: [3, 1, 4].map((n) => ({ email: `testhubspot${n}@email.com`, properties: [{ property: "firstname", value: `Test Hubspot${n}` }] })),
    }),
    legacyTrackRequest({ email: "testhubspot2@email.com", firstname: "Test Hubspot2" }),
  ]);
});

const UPSERT_CONFIG = { authorizationType: "newPrivateAppApi", accessToken: "secret", apiVersion: "newApi", lookupField: "email" };
const UPSERT_URL = "https://api.hubapi.com/crm/v3/objects/contacts/batch/upsert";
const UPSERT_HEADERS = { ...JSON_HEADERS, Authorization: "Bearer secret" };

test("HS RudderStack fixture: upsert router → batch/upsert inputs {id, idProperty, properties}, one call for several users", () => {
  const user = (n: number, last: string): SluiceEvent => ({ type: "identify", messageId: `msg-${n}`, userId: `user${n}`, traits: { email: `user${n}@example.com`, firstname: "User", lastname: last } });
  expect(batchOf(UPSERT_CONFIG, [user(1, "One"), user(2, "Two"), user(3, "Three")])).toEqual([
    expected({
      endpoint: UPSERT_URL,
      headers: UPSERT_HEADERS,
      json: {
        inputs: [
          { id: "user1@example.com", idProperty: "email", properties: { email: "user1@example.com", firstname: "User", lastname: "One" } },
          { id: "user2@example.com", idProperty: "email", properties: { email: "user2@example.com", firstname: "User", lastname: "Two" } },
          { id: "user3@example.com", idProperty: "email", properties: { email: "user3@example.com", firstname: "User", lastname: "Three" } },
        ],
      },
    }),
  ]);
});

test("HS RudderStack fixture: upsert by a custom lookupField → its value as text; a lookupField the event lacks falls back to email", () => {
  const config = { ...UPSERT_CONFIG, lookupField: "user_id" };
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: "u", traits: { email: "numeric-lookup@example.com", user_id: 9868, firstname: "Numeric" } };
  // RudderStack sends user_id only when the portal defines it; Sluice sends every trait.
  expect(hubspot.transform(event, ctx(config))[0]!.body.JSON.inputs).toEqual([
    { id: "9868", idProperty: "user_id", properties: { email: "numeric-lookup@example.com", user_id: 9868, firstname: "Numeric" } },
  ]);
  const fallback = { ...UPSERT_CONFIG, lookupField: "custom_field_not_present" };
  const noField: SluiceEvent = { type: "identify", messageId: "m", userId: "u", traits: { email: "fallback@example.com", firstname: "Fallback", lastname: "User" } };
  expect(hubspot.transform(noField, ctx(fallback))[0]!.body.JSON.inputs).toEqual([
    { id: "fallback@example.com", idProperty: "email", properties: { email: "fallback@example.com", firstname: "Fallback", lastname: "User" } },
  ]);
});

test("HS RudderStack fixture: the same contact twice in one batch → one input, the later values win", () => {
  const first: SluiceEvent = { type: "identify", messageId: "a", userId: "d1", traits: { email: "duplicate@example.com", firstname: "First", lastname: "Version", plan: "pro" } };
  const second: SluiceEvent = { type: "identify", messageId: "b", userId: "d2", traits: { email: "duplicate@example.com", firstname: "Updated", lastname: "Version" } };
  const out = batchOf(UPSERT_CONFIG, [first, second]);
  expect(out).toHaveLength(1);
  // RudderStack keeps only the later properties; Sluice also keeps what only the earlier one set.
  expect(out[0]!.body.JSON.inputs).toEqual([{ id: "duplicate@example.com", idProperty: "email", properties: { email: "duplicate@example.com", firstname: "Updated", lastname: "Version", plan: "pro" } }]);
});

test("HS RudderStack fixture: new API router → contacts batched, custom behavioral events sent alone", () => {
  const config = { ...FX_PRIVATE_NEW, accessToken: "dummy-access-token", lookupField: "email" };
  const id = (email: string, name: string): SluiceEvent => identifyEvent({ context: { traits: { email, firstname: name, anonymousId: "4444" } } });
  const track: SluiceEvent = { type: "track", messageId: "t", traits: {}, context: { externalId: [{ id: "osvaldocostaferreira98@gmail.com", type: "HS-contacts", identifierType: "email" }] }, event: "Purchase", properties: { Revenue: "name1" } };
  const out = batchOf(config, [id("noname@email.com", "Test Hubspot22"), id("noname@email.com", "Test Hubspot44"), track, id("testhubspot@email.com", "Test Hubspot22"), id("testhubspot@email.com", "Test Hubspot44")]);
  const upsert = (email: string) => expected({ endpoint: UPSERT_URL, headers: BEARER, json: { inputs: [{ id: email, idProperty: "email", properties: { email, firstname: "Test Hubspot44" } }] } });
  // Sluice keeps the events' order (the track sits between the two contact runs); RudderStack sends tracks last.
  expect(out).toEqual([
    upsert("noname@email.com"),
    expected({ endpoint: "https://api.hubapi.com/events/v3/send", headers: BEARER, json: { email: "osvaldocostaferreira98@gmail.com", eventName: "pe22315509_rs_hub_test", properties: { value: "name1" } } }),
    upsert("testhubspot@email.com"),
  ]);
});

test("HS batch: updates by hsContactId → POST contacts/batch/update {inputs: [{id, properties}]}", () => {
  const upd = (id: string, name: string): SluiceEvent => ({ type: "identify", messageId: id, context: { externalId: [{ type: "hsContactId", id }] }, traits: { firstname: name } });
  expect(batchOf(PRIVATE_NEW, [upd("1", "A"), upd("2", "B"), upd("1", "C")])).toEqual([
    expected({
      endpoint: "https://api.hubapi.com/crm/v3/objects/contacts/batch/update",
      headers: { ...JSON_HEADERS, Authorization: "Bearer tok" },
      json: { inputs: [{ id: "1", properties: { firstname: "C" } }, { id: "2", properties: { firstname: "B" } }] },
    }),
  ]);
});

test("HS batch limits: 100 inputs per CRM batch, 1000 contacts per legacy batch", () => {
  const users = (n: number) => Array.from({ length: n }, (_, i): SluiceEvent => ({ type: "identify", messageId: `m${i}`, userId: `u${i}`, traits: { email: `u${i}@example.com` } }));
  const crm = batchOf(PRIVATE_NEW, users(201));
  expect(crm.map((r) => (r.body.JSON.inputs as unknown[]).length)).toEqual([100, 100, 1]);
  const legacy = batchOf(LEGACY, users(1001));
  expect(legacy.map((r) => JSON.parse(r.body.JSON_ARRAY.batch as string).length)).toEqual([1000, 1]);
  expect(legacy.every((r) => r.endpoint === "https://api.hubapi.com/contacts/v1/contact/batch/" && r.params.hapikey === "hs-key")).toBe(true);
});

// ---------- deletion ----------

test("HS deleteUsers → POST crm/v3/objects/contacts/gdpr-delete per user, by email, else by the userId as the lookupField property", () => {
  const reqs = hubspot.deleteUsers!([{ userId: "u1", email: "ada@example.com" }, { userId: "u2" }], ctx({ ...PRIVATE_NEW, lookupField: "user_id" }));
  const headers = { ...JSON_HEADERS, Authorization: "Bearer tok" };
  expect(reqs).toEqual([
    expected({ endpoint: "https://api.hubapi.com/crm/v3/objects/contacts/gdpr-delete", headers, json: { objectId: "ada@example.com", idProperty: "email" } }),
    expected({ endpoint: "https://api.hubapi.com/crm/v3/objects/contacts/gdpr-delete", headers, json: { objectId: "u2", idProperty: "user_id" } }),
  ]);
  expect(errorOf(() => hubspot.deleteUsers!([{ userId: "u2" }], ctx(PRIVATE_NEW)))).toBe(
    "Deleting a HubSpot contact needs the user's email, or a lookupField other than email to find the userId by (user 'u2')",
  );
  expect(errorOf(() => hubspot.deleteUsers!([{ userId: "u1", email: "a@b.c" }], ctx(LEGACY)))).toBe("HubSpot user deletion needs apiVersion newApi with a private app accessToken");
});

// ---------- pipeline ----------

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
  await waitFor(() => sink.received.filter((r) => r.path === "/contacts/v1/contact/batch/" || r.path === "/v1/event").length >= 2, { what: "two requests at the HubSpot stand-in" });
  const identify = sink.received.find((r) => r.path === "/contacts/v1/contact/batch/")!;
  expect(identify.method).toBe("POST");
  expect(identify.body).toEqual([{ email: "ada@example.com", properties: [{ property: "firstname", value: "Ada" }] }]);
  expect(identify.query).toEqual({ hapikey: "hs-key" });
  expect(identify.headers["content-type"]).toBe("application/json");
  const track = sink.received.find((r) => r.path === "/v1/event")!;
  expect(track.method).toBe("GET");
  expect(track.query).toEqual({ _a: "6405167", _n: "Signed Up", email: "ada@example.com" });
});

test("HS end to end: suppress_with_delete reaches the GDPR delete endpoint with the user's email; the deletion completes", async () => {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "hs-del", type: "HS", config: { ...PRIVATE_NEW, accessToken: "del-token" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const reg = await api(s.url, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [dst.json.id], users: [{ userId: "gone-hs-1", email: "gone-hs-1@example.com" }] });
  expect(reg.status).toBe(201);
  const call = await waitFor(() => sink.received.find((r) => r.path === "/crm/v3/objects/contacts/gdpr-delete" && r.body?.objectId === "gone-hs-1@example.com"), { what: "the GDPR delete call" });
  expect(call.method).toBe("POST");
  expect(call.headers.authorization).toBe("Bearer del-token");
  expect(call.body).toEqual({ objectId: "gone-hs-1@example.com", idProperty: "email" });
  const deletionOf = async () => {
    const list = (await api(s.url, "GET", "/v2/regulations")).json;
    const items: any[] = Array.isArray(list) ? list : (list.regulations ?? list.items ?? list.data ?? []);
    return items.find((r) => JSON.stringify(r).includes("gone-hs-1"))?.deletion;
  };
  await waitFor(async () => (await deletionOf())?.[0]?.status === "complete", { what: "deletion complete" });
});
