import { afterAll, beforeAll, expect, test } from "bun:test";
import { hubspot } from "../../src/destinations/hubspot";
import { PROPERTY_TYPES_KEEP_MS, UNIQUE_PROPERTIES_KEEP_MS } from "../../src/destinations/hubspot/lookups";
import { type DestinationContext, type DestinationRequest, type LookupCache, RetryableTransformError, type SluiceEvent } from "../../src/destinations/types";
import { type SinkRequest, type TestServer, api, cleanup, createSource, lookupContext, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

/**
 * A stand-in of HubSpot's APIs with the shapes of HubSpot's API reference: the legacy contact
 * property list (`GET /properties/v1/contacts/properties`, an array of `{name, label, type,
 * fieldType, groupName}`), the CRM v3 property lists (`GET /crm/v3/properties/<objectType>`,
 * `{results: [{name, type, hasUniqueValue, …}]}`) of contacts, companies and a custom object
 * `p_vehicles`, the CRM search (`POST /crm/v3/objects/<objectType>/search` with `filterGroups`
 * of EQ or IN filters, ORed, answered `{total, results: [{id, properties}], paging}` a page of
 * `limit` from `after`) over records kept in memory, the CRM batch writes (`batch/create`,
 * `batch/update`, `batch/upsert`, answered `{status, results: [{id, properties, …}]}` and kept)
 * and the v3 association batch create (`{status, results: [{from, to, type}]}`). A credential
 * starting with `revoked` is answered 401 INVALID_AUTHENTICATION; one starting with `plain` is a
 * portal where no property is held unique. `once` answers the next request matching a test first.
 */
type Contact = { id: string; properties: Record<string, string> };
const contacts: Contact[] = [];
/** The records of each object type; contacts are `contacts`. */
const records = new Map<string, Contact[]>([["contacts", contacts]]);
const recordsOf = (objectType: string) => records.get(objectType) ?? records.set(objectType, []).get(objectType)!;
const once: Array<{ when: (r: SinkRequest) => boolean; answer: () => Response }> = [];
let nextId = 5100;
let seq = 0;
const unique = (prefix: string) => `${prefix}-${++seq}-${Date.now().toString(36)}`;

function addContact(properties: Record<string, string>): Contact {
  return addRecord("contacts", properties);
}
function addRecord(objectType: string, properties: Record<string, string>): Contact {
  const c = { id: String(++nextId), properties };
  recordsOf(objectType).push(c);
  return c;
}

const PORTAL: Array<{ name: string; type: string; fieldType: string }> = [
  ...["email", "firstname", "lastname", "phone", "address", "city", "country", "state", "zip", "company", "gender", "favourite_colour", "plan_tier", "tags", "customer_number"].map((name) => ({
    name,
    type: "string",
    fieldType: "text",
  })),
  { name: "days_to_close", type: "number", fieldType: "number" },
  { name: "hs_object_id", type: "number", fieldType: "number" },
  { name: "date_of_birth", type: "date", fieldType: "date" },
  { name: "last_seen", type: "datetime", fieldType: "date" },
  { name: "is_vip", type: "bool", fieldType: "booleancheckbox" },
  { name: "lifecyclestage", type: "enumeration", fieldType: "radio" },
  { name: "hs_additional_emails", type: "enumeration", fieldType: "checkbox" },
];
const UNIQUE = new Set(["email", "hs_object_id", "customer_number"]);
/** The CRM v3 property lists of the other object types: [name, type, held unique]. */
const OBJECT_PROPERTIES: Record<string, Array<[string, string, boolean]>> = {
  companies: [["name", "string", false], ["domain", "string", false], ["hs_object_id", "number", true]],
  p_vehicles: [["vin", "string", true], ["model", "string", false], ["registered_on", "date", false], ["hs_object_id", "number", true]],
};
const LOOKUP_PATH = /^\/(properties\/v1\/contacts\/properties|crm\/v3\/properties\/[^/]+|crm\/v3\/objects\/[^/]+\/search)$/;
const STAMPS = { createdAt: "2024-05-01T10:00:00.000Z", updatedAt: "2024-05-01T10:00:00.000Z", archived: false };

const unauthorized = (apiKey: boolean) =>
  Response.json(
    {
      status: "error",
      message: apiKey
        ? "The API key provided is invalid. View or manage your API key here: https://app.hubspot.com/l/api-key/"
        : "Authentication credentials not found. This API supports OAuth 2.0 authentication and you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview",
      correlationId: "0b8a3ee4-7f0c-4f1e-9a57-1c1f2d0c0e11",
      category: "INVALID_AUTHENTICATION",
    },
    { status: 401 },
  );

/** A search filter over one record: EQ as given; IN by lower-cased values, a multi-value property (`a;b`) matching by any. */
function matchesFilter(record: Contact, f: any): boolean {
  const held = record.properties[f?.propertyName];
  if (held === undefined) return false;
  if (f.operator === "EQ") return held === String(f.value);
  if (f.operator === "IN") return Array.isArray(f.values) && String(held).toLowerCase().split(";").some((v) => f.values.includes(v));
  return false;
}

/** A CRM batch write: the records made or changed, kept for later searches, answered as HubSpot does. */
function batchWrite(objectType: string, verb: string, inputs: any[]): Response {
  const kept = recordsOf(objectType);
  const results = inputs.map((i) => {
    let record = verb === "update" ? kept.find((c) => c.id === String(i.id)) : undefined;
    if (verb === "upsert") record = kept.find((c) => c.properties[i.idProperty] === String(i.id));
    const created = !record;
    if (!record) record = addRecord(objectType, verb === "upsert" ? { [i.idProperty]: String(i.id) } : {});
    Object.assign(record.properties, i.properties ?? {});
    return { id: record.id, properties: { ...record.properties, hs_object_id: record.id }, ...STAMPS, ...(verb === "upsert" ? { new: created } : {}) };
  });
  return Response.json({ status: "COMPLETE", results, startedAt: STAMPS.createdAt, completedAt: STAMPS.updatedAt }, { status: verb === "create" ? 201 : 200 });
}

const hs = startSink((r) => {
  const hook = once.findIndex((o) => o.when(r));
  if (hook >= 0) return once.splice(hook, 1)[0]!.answer();
  const write = /^\/crm\/v3\/objects\/([^/]+)\/batch\/(upsert|create|update)$/.exec(r.path);
  if (write && r.method === "POST") return batchWrite(write[1]!, write[2]!, Array.isArray(r.body?.inputs) ? r.body.inputs : []);
  if (r.method === "POST" && /^\/crm\/v3\/associations\/[^/]+\/[^/]+\/batch\/create$/.test(r.path)) {
    const inputs = Array.isArray(r.body?.inputs) ? r.body.inputs : [];
    return Response.json({ status: "COMPLETE", results: inputs.map((i: any) => ({ from: i.from, to: i.to, type: i.type })), startedAt: STAMPS.createdAt, completedAt: STAMPS.updatedAt }, { status: 201 });
  }
  if (!LOOKUP_PATH.test(r.path)) return Response.json({ status: "COMPLETE", results: [] });
  const credential = r.headers.authorization?.replace(/^Bearer /, "") ?? r.query.hapikey ?? "";
  if (!credential || credential.startsWith("revoked")) return unauthorized(r.headers.authorization === undefined);
  const plain = credential.startsWith("plain");
  if (r.method === "GET" && r.path === "/properties/v1/contacts/properties") {
    return Response.json(PORTAL.map((p) => ({ ...p, label: p.name, groupName: "contactinformation", options: [] })));
  }
  const propertyList = /^\/crm\/v3\/properties\/([^/]+)$/.exec(r.path);
  if (r.method === "GET" && propertyList) {
    const type = propertyList[1]!;
    if (type === "contacts") return Response.json({ results: PORTAL.map((p) => ({ ...p, label: p.name, groupName: "contactinformation", hasUniqueValue: !plain && UNIQUE.has(p.name) })) });
    const list = OBJECT_PROPERTIES[type];
    if (!list) return Response.json({ status: "error", message: `Unable to infer object type from: ${type}`, category: "OBJECT_NOT_FOUND" }, { status: 400 });
    return Response.json({ results: list.map(([name, t, u]) => ({ name, label: name, type: t, fieldType: "text", groupName: "info", hasUniqueValue: !plain && u })) });
  }
  const search = /^\/crm\/v3\/objects\/([^/]+)\/search$/.exec(r.path);
  if (r.method === "POST" && search) {
    const groups: any[] = Array.isArray(r.body?.filterGroups) ? r.body.filterGroups : [];
    const found = recordsOf(search[1]!).filter((c) => groups.some((g) => Array.isArray(g?.filters) && g.filters.every((f: any) => matchesFilter(c, f))));
    const after = Number(r.body?.after ?? 0);
    const limit = Number(r.body?.limit ?? 10);
    const wanted: string[] = Array.isArray(r.body?.properties) ? r.body.properties : [];
    const results = found.slice(after, after + limit).map((c) => ({
      id: c.id,
      properties: { ...Object.fromEntries(wanted.map((p) => [p, c.properties[p] ?? null])), hs_object_id: c.id },
      ...STAMPS,
    }));
    const more = after + limit < found.length;
    return Response.json({ total: found.length, results, ...(more ? { paging: { next: { after: String(after + limit), link: "" } } } : {}) });
  }
  return Response.json({ status: "error", message: "Unsupported method" }, { status: 405 });
});

const API_HOST = "https://api.hubapi.com";
/** Our requests as they would go to HubSpot: the stand-in's origin read back as HubSpot's hosts. */
function real(r: DestinationRequest): DestinationRequest {
  if (!r.endpoint.startsWith(hs.url)) return r;
  const rest = r.endpoint.slice(hs.url.length);
  return { ...r, endpoint: (rest.startsWith("/v1/event") ? "https://track.hubspot.com" : API_HOST) + rest };
}
const ctx = (config: Record<string, any>): DestinationContext => lookupContext(config, hs.url);
const run = async (event: SluiceEvent, config: Record<string, any>, c = ctx(config)) => (await hubspot.transform(event, c)).map(real);
async function errorOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (e) {
    return (e as Error).message;
  }
  return undefined;
}
/** The lookups and writes the stand-in got since `from`, as "METHOD /path". */
const callsSince = (from: number) => hs.received.slice(from).map((r) => `${r.method} ${r.path}`);

const LEGACY = { authorizationType: "legacyApiKey", apiKey: "hs-key", hubID: "6405167", apiVersion: "legacyApi" };
const PRIVATE_NEW = { authorizationType: "newPrivateAppApi", accessToken: "tok", hubID: "6405167", apiVersion: "newApi", lookupField: "email" };
const JSON_HEADERS = { "Content-Type": "application/json" };

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

// ---------- RudderStack's cases (router/data.ts, upsertData.ts, errorValidationData.ts and the processor suite they replaced) ----------

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

test("HS RudderStack case: legacy identify → POST createOrUpdate/email/<email> with hapikey and a property list; anonymousId is no portal property", async () => {
  const want = [expected({ endpoint: LEGACY_CONTACT, params: { hapikey: "dummy-apikey" }, json: { properties: HS_PROPS } })];
  expect(await run(identifyEvent(), FX_LEGACY)).toEqual(want);
  // The traits at the top level.
  expect(await run(identifyEvent({ context: {}, traits: { ...HS_TRAITS, anonymousId: "12345" } }), FX_LEGACY)).toEqual(want);
  // An identify's properties ({} or "") are not read when it has traits.
  expect(await run(identifyEvent({ properties: {} }), FX_LEGACY)).toEqual(want);
  expect(await run(identifyEvent({ properties: "" }), FX_LEGACY)).toEqual(want);
  // The legacy API chosen in a new-style config.
  expect(await run(identifyEvent(), { ...FX_KEY_NEW, apiVersion: "legacyApi" })).toEqual(want);
});

test("HS RudderStack case: legacy identify with a private app → Bearer token, no hapikey", async () => {
  const config = { authorizationType: "newPrivateAppApi", hubID: "dummy-hubId", apiKey: "dummy-apikey", accessToken: "dummy-access-token", apiVersion: "legacyApi", lookupField: "", ...FILTERING };
  expect(await run(identifyEvent(), config)).toEqual([expected({ endpoint: LEGACY_CONTACT, headers: BEARER, json: { properties: HS_PROPS } })]);
});

test("HS RudderStack case: legacy identify without email → 'Identify without email is not supported.', before any lookup", async () => {
  const from = hs.received.length;
  const event = identifyEvent({ context: { traits: { firstname: "Test Hubspot", anonymousId: "12345" } } });
  expect(await errorOf(run(event, FX_LEGACY))).toBe("Identify without email is not supported.");
  expect(callsSince(from)).toEqual([]);
});

test("HS RudderStack case: page → 'Message type page is not supported'; no type → 'Message type is not present. Aborting message.'", async () => {
  expect(await errorOf(run({ type: "page", messageId: "m", name: "ApplicationLoaded" }, FX_LEGACY))).toBe("Message type page is not supported");
  expect(await errorOf(run({ messageId: "m", event: "Purchase" } as any, FX_PRIVATE_NEW))).toBe("Message type is not present. Aborting message.");
});

test("HS RudderStack case: legacy track → GET track.hubspot.com with _a, _n and the traits; the properties are not read when traits exist", async () => {
  const want = [legacyTrackRequest(HS_TRAITS)];
  expect(await run(trackEvent({ properties: { user_actual_role: "system_admin, system_user", user_actual_id: 12345 } }), FX_LEGACY)).toEqual(want);
  expect(await run(trackEvent({}), FX_LEGACY)).toEqual(want);
  expect(await run(trackEvent({ properties: { user_actual_id: 12345 } }), { ...FX_KEY_NEW, apiVersion: "legacyApi" })).toEqual(want);
});

test("HS RudderStack case: legacy track revenue / value / total → _m", async () => {
  const want = [legacyTrackRequest({ _m: 4.99, ...HS_TRAITS })];
  expect(await run(trackEvent({ properties: { revenue: 4.99, user_actual_id: 12345 } }), FX_LEGACY)).toEqual(want);
  expect(await run(trackEvent({ properties: { value: 4.99, user_actual_id: 12345 } }), FX_LEGACY)).toEqual(want);
  expect((await run(trackEvent({ properties: { total: 7 } }), FX_LEGACY))[0]!.params._m).toBe(7);
});

test("HS RudderStack case: legacy track with empty traits → the properties the portal defines become contact properties", async () => {
  const event = trackEvent({ context: { traits: {} }, properties: { ...HS_TRAITS, user_actual_id: 12345 } });
  expect(await run(event, FX_LEGACY)).toEqual([legacyTrackRequest(HS_TRAITS)]);
});

test("HS RudderStack case: legacy track with a hubspotId external id → id; address and company read from their spec objects", async () => {
  const t15 = trackEvent({ context: { externalId: [{ type: "hubspotId", id: "6556" }] }, properties: { user_actual_id: 12345 } });
  expect(await run(t15, FX_LEGACY)).toEqual([legacyTrackRequest({ id: "6556", ...HS_TRAITS })]);
  const t16: SluiceEvent = {
    type: "track", messageId: "m", userId: "12345", event: "test track event HS", context: { externalId: [{ type: "hubspotId", id: "6556" }] },
    properties: { user_actual_role: "system_admin", user_actual_id: 12345, address: { street: "24. park" }, company: { name: "RudderStack" } },
  };
  expect(await run(t16, FX_LEGACY)).toEqual([legacyTrackRequest({ id: "6556", address: "24. park", company: "RudderStack" })]);
});

test("HS RudderStack case: legacy track with a private app → Bearer header, no key in the query", async () => {
  const config = { apiKey: "dummy-apikey", hubID: "dummy-hubId", authorizationType: "newPrivateAppApi", accessToken: "dummy-access-token", apiVersion: "legacyApi" };
  expect(await run(trackEvent({ properties: { user_actual_id: 12345 } }), config)).toEqual([legacyTrackRequest(HS_TRAITS, BEARER)]);
});

test("HS RudderStack case: config checks → 'Access Token not found. Aborting', 'Hub ID not found. Aborting', 'API Key not found. Aborting'", async () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", traits: { lookupField: "firstname", firstname: "Test" }, context: { externalId: [{ id: "osvaldocostaferreira98@gmail.com", type: "HS-contacts", identifierType: "email" }] } };
  expect(await errorOf(run(event, { ...FX_PRIVATE_NEW, accessToken: "" }))).toBe("Access Token not found. Aborting");
  expect(await errorOf(run(event, { ...FX_KEY_NEW, hubID: "", apiKey: "" }))).toBe("Hub ID not found. Aborting");
  expect(await errorOf(run(event, { ...FX_KEY_NEW, apiKey: "" }))).toBe("API Key not found. Aborting");
  // A config without authorizationType is a legacy API-key one.
  expect(await errorOf(run(event, { apiVersion: "legacyApi", hubID: "h" }))).toBe("API Key not found. Aborting");
});

test("HS RudderStack case: new API track → events/v3/send with the mapped event, its mapped properties, email and occurredAt; no lookup", async () => {
  const from = hs.received.length;
  const event = trackEvent({ event: "Purchase", properties: { user_actual_role: "system_admin, system_user", user_actual_id: 12345, Revenue: 100 } });
  expect(await run(event, { ...FX_PRIVATE_NEW, hubID: "1", apiKey: "1" })).toEqual([
    expected({ endpoint: "https://api.hubapi.com/events/v3/send", headers: BEARER, json: { email: "testhubspot2@email.com", occurredAt: OTS, eventName: "pe22315509_rs_hub_test", properties: { value: 100 } } }),
  ]);
  expect(callsSince(from)).toEqual([]);
});

test("HS new API track: occurredAt is properties.occurred_at, else the event's timestamp, else originalTimestamp (issue 50)", async () => {
  // RudderStack's HSTrackConfig.json maps occurredAt from properties.occurred_at, timestamp, originalTimestamp.
  const TS = "2019-10-15T09:35:32.000Z";
  const sent = async (extra: Record<string, any>) => ((await run(trackEvent({ event: "Purchase", ...extra }), FX_PRIVATE_NEW))[0]!.body.JSON as any).occurredAt;
  expect(await sent({ timestamp: TS })).toBe(TS);
  expect(await sent({ timestamp: TS, properties: { occurred_at: "2019-10-15T09:00:00.000Z" } })).toBe("2019-10-15T09:00:00.000Z");
  expect(await sent({})).toBe(OTS);
  // A blank timestamp is no value there.
  expect(await sent({ timestamp: "" })).toBe(OTS);
});

test("HS RudderStack case: new API track without traits → email from the first external id", async () => {
  const event: SluiceEvent = { type: "track", messageId: "m", traits: {}, context: { externalId: [{ id: "osvaldocostaferreira98@gmail.com", type: "HS-contacts", identifierType: "email" }] }, event: "Purchase", properties: { Revenue: "name1" } };
  expect(await run(event, FX_PRIVATE_NEW)).toEqual([
    expected({ endpoint: "https://api.hubapi.com/events/v3/send", headers: BEARER, json: { email: "osvaldocostaferreira98@gmail.com", eventName: "pe22315509_rs_hub_test", properties: { value: "name1" } } }),
  ]);
});

test("HS RudderStack case: new API track with an API key → hapikey in the URL, objectId and hs_city / hs_country from the address", async () => {
  const event: SluiceEvent = { type: "track", messageId: "m", originalTimestamp: OTS, userId: "12345", event: "Purchase", context: {}, properties: { user_actual_role: "system_admin, system_user", user_actual_id: 12345, address: { city: "kolkata", country: "India" }, objectId: "5005" } };
  expect(await run(event, FX_KEY_NEW)).toEqual([
    expected({ endpoint: "https://api.hubapi.com/events/v3/send?hapikey=dummy-apikey", json: { occurredAt: OTS, objectId: "5005", eventName: "pe22315509_rs_hub_test", properties: { hs_city: "kolkata", hs_country: "India" } } }),
  ]);
  const { objectId: _drop, ...noId } = event.properties;
  expect(await errorOf(run({ ...event, properties: noId }, FX_KEY_NEW))).toBe("Either of email, utk or objectId is required for custom behavioral events");
});

test("HS RudderStack case: new API track errors → unmapped event (lower-cased), no event name, no mappings, non-string event", async () => {
  const event: SluiceEvent = { type: "track", messageId: "m", event: "Temp Event", properties: { objectId: "5005" } };
  expect(await errorOf(run(event, FX_KEY_NEW))).toBe("Event name 'temp event' mappings are not configured in the destination");
  expect(await errorOf(run({ ...event, event: undefined }, FX_KEY_NEW))).toBe("event name is required for track call");
  const { hubspotEvents: _none, ...withoutMappings } = FX_PRIVATE_NEW;
  expect(await errorOf(run({ ...event, event: "Purchase" }, withoutMappings))).toBe("Event and property mappings are required for track call");
  expect(await errorOf(run({ ...event, event: { name: "event" } }, { ...PRIVATE_NEW, hubspotEvents: [] }))).toBe("Event is a required field and should be a string");
  // Names match trimmed and in any case.
  expect((await run({ ...event, event: " purchase " }, FX_KEY_NEW))[0]!.body.JSON.eventName).toBe("pe22315509_rs_hub_test");
});

test("HS RudderStack case: new API identify errors → no lookup value, no traits, no lookupField", async () => {
  const noLookup: SluiceEvent = { type: "identify", messageId: "m", traits: {}, context: { externalId: [{ id: "osvaldocostaferreira98@gmail.com", type: "HS-contacts", identifierType: "email" }], mappedToDestination: false } };
  expect(await errorOf(run(noLookup, FX_PRIVATE_NEW))).toBe("Identify:: email i.e a default lookup field for contact lookup not found in traits");
  expect(await errorOf(run({ type: "identify", messageId: "m", context: { mappedToDestination: false } }, FX_PRIVATE_NEW))).toBe("Identify - Invalid traits value for lookup field");
  expect(await errorOf(run({ type: "identify", messageId: "m", traits: { email: "a@b.co" } }, { ...FX_PRIVATE_NEW, lookupField: "" }))).toBe("lookupField is a required field in webapp config");
  // A lookup field HubSpot holds unique upserts, and then says so in its own words.
  expect(await errorOf(run({ type: "identify", messageId: "m", traits: {} }, { ...FX_PRIVATE_NEW, lookupField: "customer_number" }))).toBe(
    'Identify:: lookupField "customer_number" value not found in traits. Email fallback also not available.',
  );
});

test("HS RudderStack case: new API identify by a lookup field HubSpot holds unique → one upsert, after reading both property lists", async () => {
  const from = hs.received.length;
  const event = identifyEvent({ context: { traits: { email: "noname@email.com", firstname: "Test Hubspot", anonymousId: "12345" } } });
  const input = { id: "noname@email.com", idProperty: "email", properties: { email: "noname@email.com", firstname: "Test Hubspot" } };
  const upsert = "https://api.hubapi.com/crm/v3/objects/contacts/batch/upsert";
  const config19 = { ...FX_PRIVATE_NEW, lookupField: "email", hubspotEvents: [] };
  expect(await run(event, config19)).toEqual([expected({ endpoint: upsert, headers: BEARER, json: { inputs: [input] } })]);
  expect(callsSince(from)).toEqual(["GET /properties/v1/contacts/properties", "GET /crm/v3/properties/contacts"]);
  const config33 = { ...config19, authorizationType: "legacyApiKey", apiKey: "dummy-apikeysuccess", hubID: "dummy-hubId" };
  expect(await run(event, config33)).toEqual([expected({ endpoint: upsert, params: { hapikey: "dummy-apikeysuccess" }, json: { inputs: [input] } })]);
  // A unique lookupField the event lacks falls back to email; a number is sent as text.
  const fallback: SluiceEvent = { type: "identify", messageId: "m", traits: { email: "fallback@example.com", firstname: "Fallback" } };
  expect((await run(fallback, { ...config19, lookupField: "customer_number" }))[0]!.body.JSON).toEqual({
    inputs: [{ id: "fallback@example.com", idProperty: "email", properties: { email: "fallback@example.com", firstname: "Fallback" } }],
  });
  const numeric: SluiceEvent = { type: "identify", messageId: "m", traits: { email: "n@example.com", customer_number: 9868 } };
  expect(((await run(numeric, { ...config19, lookupField: "customer_number" }))[0]!.body.JSON.inputs as unknown[])[0]).toMatchObject({ id: "9868", idProperty: "customer_number", properties: { customer_number: "9868" } });
});

test("HS RudderStack case: new API identify by a field not held unique → searched; none found → POST crm/v3/objects/contacts (create)", async () => {
  const from = hs.received.length;
  const phone = `+1-555-${++seq}`;
  const event: SluiceEvent = { type: "identify", messageId: "m", traits: { phone, firstname: "CI", lastname: "ES", age: 30 }, context: { mappedToDestination: false } };
  const config = { authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: "es-token", lookupField: "phone" };
  expect(await run(event, config)).toEqual([
    expected({ endpoint: "https://api.hubapi.com/crm/v3/objects/contacts", headers: { ...JSON_HEADERS, Authorization: "Bearer es-token" }, json: { properties: { firstname: "CI", lastname: "ES", phone } } }),
  ]);
  expect(callsSince(from)).toEqual(["GET /properties/v1/contacts/properties", "GET /crm/v3/properties/contacts", "POST /crm/v3/objects/contacts/search"]);
  const search = hs.received[from + 2]!;
  expect(search.headers.authorization).toBe("Bearer es-token");
  expect(search.headers["content-type"]).toBe("application/json");
  expect(search.body).toEqual({ filterGroups: [{ filters: [{ propertyName: "phone", value: phone, operator: "EQ" }] }], sorts: ["ascending"], properties: ["phone"], limit: 2, after: 0 });
});

test("HS RudderStack case: new API identify whose search finds the contact → PATCH crm/v3/objects/contacts/<id> (update); two found → refused", async () => {
  const phone = `+1-555-${++seq}`;
  const contact = addContact({ phone, email: `${unique("found")}@example.com` });
  const event: SluiceEvent = { type: "identify", messageId: "m", traits: { phone, firstname: "CI" } };
  const config = { authorizationType: "legacyApiKey", apiVersion: "newApi", apiKey: "key-es", hubID: "123", lookupField: "phone" };
  const from = hs.received.length;
  expect(await run(event, config)).toEqual([
    expected({ method: "PATCH", endpoint: `https://api.hubapi.com/crm/v3/objects/contacts/${contact.id}`, params: { hapikey: "key-es" }, json: { properties: { firstname: "CI", phone } } }),
  ]);
  // With an API key every lookup carries it as hapikey.
  expect(hs.received.slice(from).map((r): unknown[] => [r.path, r.query.hapikey, r.headers.authorization])).toEqual([
    ["/properties/v1/contacts/properties", "key-es", undefined],
    ["/crm/v3/properties/contacts", "key-es", undefined],
    ["/crm/v3/objects/contacts/search", "key-es", undefined],
  ]);
  addContact({ phone });
  expect(await errorOf(run(event, config))).toBe("Unable to get single Hubspot contact. More than one contacts found. Retry with unique lookupPropertyName and lookupValue");
});

test("HS RudderStack case: a configured lookupField named 'lookupField' is read from the traits as given and searched by", async () => {
  const event = identifyEvent({ context: { traits: { email: "testhubspot@email.com", firstname: "Test Hubspot", anonymousId: "12345", lookupField: "email" } } });
  const from = hs.received.length;
  expect(await run(event, { ...FX_PRIVATE_NEW, hubspotEvents: [] })).toEqual([
    expected({ endpoint: "https://api.hubapi.com/crm/v3/objects/contacts", headers: BEARER, json: { properties: { email: "testhubspot@email.com", firstname: "Test Hubspot" } } }),
  ]);
  expect(hs.received.slice(from).find((r) => r.path.endsWith("/search"))!.body.filterGroups).toEqual([{ filters: [{ propertyName: "lookupField", value: "email", operator: "EQ" }] }]);
});

test("HS contact properties: only traits the portal defines, typed as it says; null clears the property", async () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "u1",
    traits: {
      email: "ada@example.com", first_name: "Ada", lastName: "L", "Favourite Colour": "red", "plan.tier": "pro", tags: ["a", "b"], gender: null,
      address: { street: "1 Main", city: "Paris", postalcode: "75001" }, days_to_close: 4, is_vip: true, date_of_birth: "1990-06-15T13:45:00Z",
      last_seen: "2024-05-01T10:00:00Z", lifecyclestage: "lead", customer_number: 42, not_in_portal: "x", hs_object_id: 77,
    },
  };
  expect((await run(event, LEGACY))[0]!.body.JSON.properties).toEqual([
    { property: "email", value: "ada@example.com" },
    { property: "firstname", value: "Ada" },
    { property: "lastname", value: "L" },
    { property: "address", value: "1 Main" },
    { property: "city", value: "Paris" },
    { property: "zip", value: "75001" },
    { property: "favourite_colour", value: "red" },
    { property: "plan_tier", value: "pro" },
    { property: "tags", value: '["a","b"]' },
    { property: "gender", value: "" },
    { property: "days_to_close", value: 4 },
    { property: "is_vip", value: true },
    { property: "date_of_birth", value: Date.UTC(1990, 5, 15) },
    { property: "last_seen", value: "2024-05-01T10:00:00Z" },
    { property: "lifecyclestage", value: "lead" },
    { property: "customer_number", value: "42" },
  ]);
  // The track query carries HubSpot's own record id as any other property; a contact write does not.
  expect((await run({ ...event, type: "track", event: "E" }, LEGACY))[0]!.params.hs_object_id).toBe(77);
});

test("HS contact properties: a value the property's type cannot hold → RudderStack's refusal", async () => {
  const identify = (traits: Record<string, unknown>): SluiceEvent => ({ type: "identify", messageId: "m", traits: { email: "t@example.com", ...traits } });
  expect(await errorOf(run(identify({ days_to_close: "notnum" }), LEGACY))).toBe("Property days_to_close data type string is not matching with Hubspot property data type number");
  expect(await errorOf(run(identify({ days_to_close: null }), LEGACY))).toBe("Property days_to_close data type string is not matching with Hubspot property data type number");
  expect(await errorOf(run(identify({ is_vip: { yes: 1 } }), LEGACY))).toBe("Property is_vip data type object is not matching with Hubspot property data type bool");
  // A date that is no date is sent as it came.
  expect((await run(identify({ date_of_birth: "someday" }), LEGACY))[0]!.body.JSON.properties).toContainEqual({ property: "date_of_birth", value: "someday" });
});

test("HS RudderStack case: null traits become empty strings (HubSpot clears the property)", async () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: "12345", context: { traits: { email: "noname@email.com", firstname: null, gender: "", lookupField: "email" } } };
  const [req] = await run(event, { ...FX_PRIVATE_NEW, lookupField: "email", hubspotEvents: [] });
  expect(req!.body.JSON.inputs).toEqual([{ id: "noname@email.com", idProperty: "email", properties: { email: "noname@email.com", firstname: "", gender: "" } }]);
});

test("HS RudderStack case: new API identify with an invalid e-mail → 'Email \"<email>\" is invalid', checked first", async () => {
  const assoc: SluiceEvent = {
    type: "identify", messageId: "m", traits: { to: { id: 1 }, from: { id: 9405415215 }, email: "not-an-email" },
    context: { mappedToDestination: true, externalId: [{ id: 1, type: "HS-association", toObjectType: "contacts", fromObjectType: "companies", identifierType: "id", associationTypeId: "engineer" }] },
  };
  const config = { authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: "hs-access-token", lookupField: "email", hubspotEvents: [], ...FILTERING };
  const from = hs.received.length;
  expect(await errorOf(run(assoc, config))).toBe('Email "not-an-email" is invalid');
  // Before the lookupField check and any lookup, and from context.traits too.
  const ctxTraits: SluiceEvent = { type: "identify", messageId: "m", context: { traits: { email: "a@b.c" } } };
  expect(await errorOf(run(ctxTraits, { ...config, lookupField: "" }))).toBe('Email "a@b.c" is invalid');
  expect(callsSince(from)).toEqual([]);
  // The legacy API's identify does not check it.
  expect((await run({ ...ctxTraits, context: { traits: { email: "not-an-email" } } }, FX_LEGACY))[0]!.endpoint).toBe(
    "https://api.hubapi.com/contacts/v1/contact/createOrUpdate/email/not-an-email",
  );
});

test("HS new API e-mail check follows validator.js isEmail's defaults", async () => {
  const valid = ["noname@email.com", "a.b+c@sub.example.co", "\"quoted name\"@example.com", "üser@exämple.de", "x@xn--p1ai.xn--p1ai"];
  const invalid = ["a@b.c", "a@b", "a..b@example.com", ".a@example.com", "a@example.com.", "a@-example.com", "a@ex_ample.com", "a@[1.2.3.4]", "a@1.2.3.4", "Ada <a@example.com>", "@example.com", "a b@example.com", `${"x".repeat(65)}@example.com`];
  const config = { ...PRIVATE_NEW, hubspotEvents: [] };
  const c = ctx(config);
  for (const email of valid) expect(await errorOf(run({ type: "identify", messageId: "m", traits: { email } }, config, c))).toBeUndefined();
  for (const email of invalid) expect(await errorOf(run({ type: "identify", messageId: "m", traits: { email } }, config, c))).toBe(`Email "${email}" is invalid`);
});

test("HS RudderStack case: router/errorValidationData.ts refusals, in RudderStack's words", async () => {
  // The token names a portal where no property is held unique, as RudderStack's mock for it answers.
  const config = { authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: "plain-access-token", lookupField: "email", hubspotEvents: [], ...FILTERING };
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
  for (const [message, cfg, error] of cases) expect(await errorOf(run({ messageId: "m", ...message } as SluiceEvent, cfg))).toBe(error);
});

test("HS RudderStack case: legacy API with a private app → Bearer on contacts/v1 and on track.hubspot.com", async () => {
  const config = { authorizationType: "newPrivateAppApi", apiVersion: "legacyApi", accessToken: "pat", hubID: "123", lookupField: "email" };
  const bearer = { ...JSON_HEADERS, Authorization: "Bearer pat" };
  const identify: SluiceEvent = { type: "identify", messageId: "m", traits: { email: "v1@e.com", firstname: "A" }, context: { mappedToDestination: false } };
  expect(hubspot.batch!(await run(identify, config), ctx(config))).toEqual([
    expected({ endpoint: "https://api.hubapi.com/contacts/v1/contact/batch/", headers: bearer, batch: [{ email: "v1@e.com", properties: [{ property: "firstname", value: "A" }] }] }),
  ]);
  const track: SluiceEvent = { type: "track", messageId: "m", event: "Purchase", properties: { email: "v1@e.com" } };
  expect(await run(track, config)).toEqual([
    expected({ method: "GET", endpoint: "https://track.hubspot.com/v1/event", headers: bearer, params: { _a: "123", _n: "Purchase", email: "v1@e.com" } }),
  ]);
});

test("HS RudderStack case: legacyApiKey configs keep RudderStack's config errors; an API-key new-API identify looks up with hapikey and creates", async () => {
  const legacyCfg = { authorizationType: "legacyApiKey", apiVersion: "legacyApi", apiKey: "dummy-apikey", hubID: "123" };
  const track: SluiceEvent = { type: "track", messageId: "m", event: "Purchase" };
  expect(await errorOf(run(track, { ...legacyCfg, hubID: "" }))).toBe("Hub ID not found. Aborting");
  expect(await errorOf(run(track, { ...legacyCfg, apiKey: "" }))).toBe("API Key not found. Aborting");
  const newApiKey = { authorizationType: "legacyApiKey", apiVersion: "newApi", apiKey: "dummy-apikeysuccess", hubID: "123", lookupField: "phone" };
  const [req] = await run({ type: "identify", messageId: "m", traits: { phone: "9", firstname: "A" }, context: { mappedToDestination: false } }, newApiKey);
  expect(req).toEqual(expected({ endpoint: "https://api.hubapi.com/crm/v3/objects/contacts", params: { hapikey: "dummy-apikeysuccess" }, json: { properties: { firstname: "A", phone: "9" } } }));
  const noToken = { authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: "", lookupField: "email" };
  expect(await errorOf(run({ ...track, properties: {} }, noToken))).toBe("Access Token not found. Aborting");
});

test("HS new API identify with a hsContactId external id → PATCH that contact; no contact lookup", async () => {
  const from = hs.received.length;
  const event: SluiceEvent = { type: "identify", messageId: "m", context: { externalId: [{ type: "hsContactId", id: "103604" }], traits: { email: "a@b.co", lastName: "L" } } };
  expect(await run(event, PRIVATE_NEW)).toEqual([
    expected({ method: "PATCH", endpoint: "https://api.hubapi.com/crm/v3/objects/contacts/103604", headers: { ...JSON_HEADERS, Authorization: "Bearer tok" }, json: { properties: { email: "a@b.co", lastname: "L" } } }),
  ]);
  expect(callsSince(from)).toEqual(["GET /properties/v1/contacts/properties"]);
});

// ---------- lookups: failures and memory ----------

test("HS lookups refused by HubSpot abort the event in RudderStack's words; 5xx and 429 are retried", async () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", traits: { email: "x@example.com", phone: "1" } };
  const body401 = '{"status":"error","message":"The API key provided is invalid. View or manage your API key here: https://app.hubspot.com/l/api-key/","correlationId":"0b8a3ee4-7f0c-4f1e-9a57-1c1f2d0c0e11","category":"INVALID_AUTHENTICATION"}';
  expect(await errorOf(run(event, { ...LEGACY, apiKey: "revoked-key" }))).toBe(`Failed to get hubspot properties: ${body401}`);
  const newApi = { authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: "tok-refusals", lookupField: "phone" };
  once.push({ when: (r) => r.path === "/crm/v3/properties/contacts", answer: () => Response.json({ status: "error", message: "This app hasn't been granted all required scopes", category: "MISSING_SCOPES" }, { status: 403 }) });
  expect(await errorOf(run(event, newApi))).toBe('Failed to fetch HubSpot contacts properties: {"status":"error","message":"This app hasn\'t been granted all required scopes","category":"MISSING_SCOPES"}');
  once.push({ when: (r) => r.path.endsWith("/search"), answer: () => Response.json({ status: "error", message: "Invalid input JSON", category: "VALIDATION_ERROR" }, { status: 400 }) });
  expect(await errorOf(run(event, newApi))).toBe('Failed to get hubspot contacts: {"status":"error","message":"Invalid input JSON","category":"VALIDATION_ERROR"}');
  once.push({ when: (r) => r.path.endsWith("/search"), answer: () => new Response("", { status: 503 }) });
  const c = ctx(newApi);
  await expect(hubspot.transform(event, c)).rejects.toBeInstanceOf(RetryableTransformError);
  once.push({ when: (r) => r.path === "/properties/v1/contacts/properties", answer: () => Response.json({ status: "error", message: "You have reached your secondly limit.", category: "RATE_LIMITS" }, { status: 429 }) });
  await expect(hubspot.transform(event, ctx(newApi))).rejects.toBeInstanceOf(RetryableTransformError);
});

/** A lookup memory that records how long each entry is kept. */
function recordingCache(): { cache: LookupCache; kept: Array<[string, number]> } {
  const base = lookupContext({}).cache!;
  const kept: Array<[string, number]> = [];
  return {
    kept,
    cache: {
      get: (key) => base.get(key),
      set: (key, value, ttlMs) => {
        if (value && typeof value === "object" && "value" in (value as object)) kept.push([key, ttlMs]);
        base.set(key, value, ttlMs);
      },
    },
  };
}

test("HS lookup memory: the CRM v3 list is kept 24 hours, the property list a few seconds; the contact search is never kept", async () => {
  const config = { authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: "tok-memory", lookupField: "phone" };
  const { cache, kept } = recordingCache();
  const c: DestinationContext = { ...ctx(config), cache };
  const from = hs.received.length;
  for (const phone of ["11", "12"]) await run({ type: "identify", messageId: "m", traits: { phone } }, config, c);
  // RudderStack keeps the v3 list a day; the v1 list for about one router batch.
  expect(UNIQUE_PROPERTIES_KEEP_MS).toBe(86_400_000);
  expect(PROPERTY_TYPES_KEEP_MS).toBeLessThanOrEqual(10_000);
  expect(kept).toContainEqual(["contactPropertyTypes", PROPERTY_TYPES_KEEP_MS]);
  // "phone" is in the v3 list, so its answer is kept and not asked again.
  expect(kept).toContainEqual(["uniqueProperties:contacts", UNIQUE_PROPERTIES_KEEP_MS]);
  expect(callsSince(from)).toEqual(["GET /properties/v1/contacts/properties", "GET /crm/v3/properties/contacts", "POST /crm/v3/objects/contacts/search", "POST /crm/v3/objects/contacts/search"]);
});

test("HS lookup memory: a lookup field the kept CRM v3 list does not name is asked again (a property created since)", async () => {
  const config = { authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: "tok-newfield", lookupField: "loyalty_id" };
  const c = ctx(config);
  const from = hs.received.length;
  await run({ type: "identify", messageId: "m", traits: { email: "l1@example.com" } }, config, c);
  await run({ type: "identify", messageId: "m", traits: { email: "l2@example.com" } }, config, c);
  expect(callsSince(from).filter((x) => x === "GET /crm/v3/properties/contacts")).toHaveLength(2);
});

test("HS lookup memory: transforms running together share one property-list call; a failed one is not kept", async () => {
  const config = { ...LEGACY, apiKey: "key-shared" };
  const c = ctx(config);
  const from = hs.received.length;
  const events = Array.from({ length: 5 }, (_, i): SluiceEvent => ({ type: "identify", messageId: `m${i}`, traits: { email: `s${i}@example.com`, firstname: "S" } }));
  const out = await Promise.all(events.map((e) => hubspot.transform(e, c)));
  expect(out.flat()).toHaveLength(5);
  expect(callsSince(from)).toEqual(["GET /properties/v1/contacts/properties"]);
  const fresh = ctx(config);
  once.push({ when: (r) => r.path === "/properties/v1/contacts/properties", answer: () => new Response("", { status: 502 }) });
  await expect(hubspot.transform(events[0]!, fresh)).rejects.toBeInstanceOf(RetryableTransformError);
  expect(await hubspot.transform(events[0]!, fresh)).toHaveLength(1);
});

// ---------- batching ----------

const batchOf = async (config: Record<string, any>, events: Array<SluiceEvent & { user?: string }>) => {
  const c = ctx(config);
  const requests: DestinationRequest[] = [];
  for (const { user, ...e } of events) for (const r of await hubspot.transform(e as SluiceEvent, c)) requests.push(user ? { ...r, userKey: user } : r);
  return hubspot.batch!(requests, c).map(real);
};

test("HS RudderStack case: legacy router → identifies on POST contacts/v1/contact/batch/ ({email, properties} items), tracks alone", async () => {
  const id = (n: number, anon?: string): SluiceEvent => identifyEvent({ context: { traits: { email: `testhubspot${n}@email.com`, firstname: `Test Hubspot${n}`, ...(anon ? { anonymousId: anon } : {}) } } });
  const track = trackEvent({ context: { traits: { email: "testhubspot2@email.com", firstname: "Test Hubspot2" } }, properties: { user_actual_id: 12345 } });
  expect(await batchOf(FX_LEGACY, [id(3), id(1, "1111"), id(4, "4444"), track])).toEqual([
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

test("HS RudderStack case: upsert router → batch/upsert inputs {id, idProperty, properties}, one call for several users", async () => {
  const user = (n: number, last: string): SluiceEvent => ({ type: "identify", messageId: `msg-${n}`, userId: `user${n}`, traits: { email: `user${n}@example.com`, firstname: "User", lastname: last } });
  expect(await batchOf(UPSERT_CONFIG, [user(1, "One"), user(2, "Two"), user(3, "Three")])).toEqual([
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

test("HS RudderStack case: the same contact twice in one batch → one input, the later values win", async () => {
  const first: SluiceEvent = { type: "identify", messageId: "a", userId: "d1", traits: { email: "duplicate@example.com", firstname: "First", lastname: "Version", plan_tier: "pro" } };
  const second: SluiceEvent = { type: "identify", messageId: "b", userId: "d2", traits: { email: "duplicate@example.com", firstname: "Updated", lastname: "Version" } };
  const out = await batchOf(UPSERT_CONFIG, [first, second]);
  expect(out).toHaveLength(1);
  expect(out[0]!.body.JSON.inputs).toEqual([{ id: "duplicate@example.com", idProperty: "email", properties: { email: "duplicate@example.com", firstname: "Updated", lastname: "Version", plan_tier: "pro" } }]);
});

test("HS RudderStack case: router job ordering → one group per event type as RudderStack's router forms them, a group's calls in the order of their first event", async () => {
  const config = { ...UPSERT_CONFIG, hubspotEvents: [{ rsEventName: "Purchase", hubspotEventName: "pe_test", eventProperties: [{ from: "Revenue", to: "value" }] }] };
  const id = (user: string, email: string, firstname: string) => ({ type: "identify", messageId: email, userId: user, user, context: { traits: { email, firstname } } }) as SluiceEvent & { user: string };
  const tr = (user: string) => ({ type: "track", messageId: `t-${user}`, userId: user, user, event: "purchase", context: { traits: { email: `${user}@a.com` } } }) as SluiceEvent & { user: string };
  const out = await batchOf(config, [id("u1", "one@e.com", "1"), tr("u1"), tr("u2"), id("u2", "two@e.com", "2"), tr("u3"), id("u3", "three@e.com", "3"), id("u5", "five@e.com", "51"), tr("u5"), id("u5", "five@e.com", "5")]);
  const summary = out.map((r) => (r.endpoint === UPSERT_URL ? (r.body.JSON.inputs as any[]).map((i) => `${i.id}:${i.properties.firstname}`).join(",") : `event ${r.body.JSON.email}`));
  expect(summary).toEqual(["one@e.com:1,five@e.com:51", "event u1@a.com", "event u2@a.com", "event u3@a.com", "event u5@a.com", "two@e.com:2,three@e.com:3,five@e.com:5"]);
});

test("HS batch: the search's answers → creates on batch/create (one input per e-mail), updates on batch/update", async () => {
  const config = { authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: "plain-batch", lookupField: "email" };
  const known = addContact({ email: `${unique("known")}@example.com` });
  const newEmail = `${unique("new")}@example.com`;
  const out = await batchOf(config, [
    { type: "identify", messageId: "1", userId: "a", user: "a", traits: { email: newEmail, firstname: "New" } },
    { type: "identify", messageId: "2", userId: "b", user: "b", traits: { email: known.properties.email, firstname: "Known" } },
    { type: "identify", messageId: "3", userId: "c", user: "c", traits: { email: newEmail, lastname: "Twice" } },
    { type: "identify", messageId: "4", userId: "d", user: "d", context: { externalId: [{ type: "hsContactId", id: "777" }] }, traits: { firstname: "ById" } },
  ] as any);
  const headers = { ...JSON_HEADERS, Authorization: "Bearer plain-batch" };
  expect(out).toEqual([
    expected({ endpoint: "https://api.hubapi.com/crm/v3/objects/contacts/batch/create", headers, json: { inputs: [{ properties: { email: newEmail, firstname: "New", lastname: "Twice" } }] } }),
    expected({
      endpoint: "https://api.hubapi.com/crm/v3/objects/contacts/batch/update",
      headers,
      json: { inputs: [{ id: known.id, properties: { email: known.properties.email, firstname: "Known" } }, { id: "777", properties: { firstname: "ById" } }] },
    }),
  ]);
});

test("HS batch: creates without an e-mail are never merged; a user's create and update stay in that user's order", async () => {
  const config = { authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: "plain-order", lookupField: "phone" };
  const phoneA = `+44-${++seq}`;
  const phoneB = `+44-${++seq}`;
  const out = await batchOf(config, [
    { type: "identify", messageId: "1", userId: "a", user: "a", traits: { phone: phoneA } },
    { type: "identify", messageId: "2", userId: "b", user: "b", traits: { phone: phoneB } },
    { type: "identify", messageId: "3", userId: "a", user: "a", context: { externalId: [{ type: "hsContactId", id: "42" }] }, traits: { firstname: "A" } },
  ] as any);
  expect(out.map((r) => [r.endpoint.replace(API_HOST, ""), r.body.JSON.inputs])).toEqual([
    ["/crm/v3/objects/contacts/batch/create", [{ properties: { phone: phoneA } }, { properties: { phone: phoneB } }]],
    ["/crm/v3/objects/contacts/batch/update", [{ id: "42", properties: { firstname: "A" } }]],
  ]);
  // Had user a's update joined the first group, it would have gone before its create.
  const reversed = await batchOf(config, [
    { type: "identify", messageId: "3", userId: "a", user: "a", context: { externalId: [{ type: "hsContactId", id: "42" }] }, traits: { firstname: "A" } },
    { type: "identify", messageId: "2", userId: "b", user: "b", traits: { phone: phoneB } },
    { type: "identify", messageId: "1", userId: "a", user: "a", traits: { phone: phoneA } },
  ] as any);
  expect(reversed.map((r) => r.endpoint.replace(API_HOST, ""))).toEqual(["/crm/v3/objects/contacts/batch/update", "/crm/v3/objects/contacts/batch/create", "/crm/v3/objects/contacts/batch/create"]);
});

test("HS batch limits: 100 inputs per CRM batch, 1000 contacts per legacy batch", async () => {
  const users = (n: number) => Array.from({ length: n }, (_, i): SluiceEvent => ({ type: "identify", messageId: `m${i}`, userId: `u${i}`, traits: { email: `u${i}@example.com` } }));
  const crm = await batchOf(PRIVATE_NEW, users(201));
  expect(crm.map((r) => (r.body.JSON.inputs as unknown[]).length)).toEqual([100, 100, 1]);
  const legacy = await batchOf(LEGACY, users(1001));
  expect(legacy.map((r) => JSON.parse(r.body.JSON_ARRAY.batch as string).length)).toEqual([1000, 1]);
  expect(legacy.every((r) => r.endpoint === "https://api.hubapi.com/contacts/v1/contact/batch/" && r.params.hapikey === "hs-key")).toBe(true);
});

// ---------- record writes (context.mappedToDestination) ----------

/** A row of a reverse-ETL sync: an identify naming its HubSpot object by an `HS-<type>` external id. */
const row = (objectType: string, identifierType: string, id: unknown, traits: Record<string, unknown>, extra: Record<string, any> = {}): SluiceEvent & { user?: string } => ({
  type: "identify",
  messageId: `row-${++seq}`,
  userId: String(id),
  context: { mappedToDestination: "true", externalId: [{ type: `HS-${objectType}`, identifierType, id }], sources: { job_id: "sync-1", task_id: "task" } },
  traits,
  ...extra,
});
/** The record writes of these rows, as batch() sends them, each transform with its own delivery id. */
async function recordBatch(config: Record<string, any>, rows: Array<SluiceEvent & { user?: string }>, c = ctx(config)) {
  const out = await Promise.all(rows.map(({ user, ...e }, i) => hubspot.transform(e as SluiceEvent, { ...c, jobId: 7000 + i }).then((rs) => rs.map((r) => (user ? { ...r, userKey: user } : r)))));
  return hubspot.batch!(out.flat(), c).map(real);
}
/** The search bodies the stand-in got since `from`. */
const searchesSince = (from: number) => hs.received.slice(from).filter((r) => r.path.endsWith("/search"));

test("HS record writes: rows searched together by their identifier (and other e-mails) → found ones on batch/update, the rest on batch/create with the identifier", async () => {
  const token = unique("plain-rows");
  const config = { authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: token, lookupField: "phone" };
  const known = addContact({ email: `${unique("known")}@example.com`, firstname: "Old" });
  const alt = `${unique("alt")}@example.com`;
  const primary = addContact({ email: `${unique("primary")}@example.com`, hs_additional_emails: `x@example.com;${alt}` });
  const fresh = `${unique("Fresh")}@Example.com`;
  const from = hs.received.length;
  const out = await recordBatch(config, [
    row("contacts", "email", known.properties.email!.toUpperCase(), { firstname: "Known" }),
    row("contacts", "email", alt, { lastname: "Secondary" }),
    row("contacts", "email", fresh, { firstname: "New", date_of_birth: "1990-04-02T17:31:04Z" }),
  ]);
  // One search for the three rows (the portal holds no property unique), by email and by the other e-mails.
  expect(callsSince(from)).toEqual(["GET /properties/v1/contacts/properties", "GET /crm/v3/properties/contacts", "POST /crm/v3/objects/contacts/search"]);
  const values = [known.properties.email!, alt, fresh.toLowerCase()];
  expect(searchesSince(from)[0]!.body).toEqual({
    filterGroups: [{ filters: [{ propertyName: "email", values, operator: "IN" }] }, { filters: [{ propertyName: "hs_additional_emails", values, operator: "IN" }] }],
    properties: ["email", "hs_additional_emails"],
    limit: 100,
    after: 0,
  });
  const headers = { ...JSON_HEADERS, Authorization: `Bearer ${token}` };
  expect(out).toEqual([
    // A contact found by one of its other e-mails keeps its own e-mail.
    expected({ endpoint: "https://api.hubapi.com/crm/v3/objects/contacts/batch/update", headers, json: { inputs: [{ id: known.id, properties: { firstname: "Known" } }, { id: primary.id, properties: { lastname: "Secondary" } }] } }),
    // A `date` property of the portal is sent as midnight UTC in milliseconds.
    expected({ endpoint: "https://api.hubapi.com/crm/v3/objects/contacts/batch/create", headers, json: { inputs: [{ properties: { firstname: "New", date_of_birth: Date.UTC(1990, 3, 2), email: fresh } }] } }),
  ]);
});

test("HS record writes: an identifier HubSpot holds unique for the object type → batch/upsert on that type, the id as text, objectWriteTraceId the delivery's id", async () => {
  const config = { authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: "tok-vehicles", lookupField: "email" };
  const from = hs.received.length;
  const out = await recordBatch(config, [
    row("p_vehicles", "vin", 4711, { model: "Tin Lizzie", hs_object_id: 99 }),
    row("p_vehicles", "vin", "WVW-2", { model: "Beetle" }),
    row("p_vehicles", "vin", 4711, { registered_on: "2024-02-03" }),
  ]);
  // The CRM v3 list of the object type is read (not contacts'); nothing is searched.
  expect(callsSince(from)).toEqual(["GET /properties/v1/contacts/properties", "GET /crm/v3/properties/p_vehicles"]);
  expect(out).toEqual([
    expected({
      endpoint: "https://api.hubapi.com/crm/v3/objects/p_vehicles/batch/upsert",
      headers: { ...JSON_HEADERS, Authorization: "Bearer tok-vehicles" },
      json: {
        inputs: [
          // The same record twice is one input: the later values win, the first delivery names it.
          // registered_on is the object's date, not the contact list's: sent as given.
          { id: "4711", idProperty: "vin", properties: { model: "Tin Lizzie", registered_on: "2024-02-03" }, objectWriteTraceId: "7000" },
          { id: "WVW-2", idProperty: "vin", properties: { model: "Beetle" }, objectWriteTraceId: "7001" },
        ],
      },
    }),
  ]);
});

test("HS record writes: HS-association → one associations/<from>/<to>/batch/create per pair of types, no lookup; the legacy API has none", async () => {
  const config = { authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: "tok-assoc" };
  const assoc = (from: number, to: number, fromObjectType = "companies"): SluiceEvent => ({
    type: "identify",
    messageId: `a-${from}-${to}`,
    userId: `${from}`,
    context: { mappedToDestination: true, externalId: [{ type: "HS-association", identifierType: "id", id: to, fromObjectType, toObjectType: "contacts", associationTypeId: "company_to_contact" }] },
    traits: { from: { id: from }, to: { id: to } },
  });
  const from = hs.received.length;
  const out = await recordBatch(config, [assoc(1, 11), assoc(2, 12, "deals"), assoc(3, 13)]);
  expect(callsSince(from)).toEqual([]);
  const headers = { ...JSON_HEADERS, Authorization: "Bearer tok-assoc" };
  expect(out).toEqual([
    expected({ endpoint: "https://api.hubapi.com/crm/v3/associations/companies/contacts/batch/create", headers, json: { inputs: [{ from: { id: 1 }, to: { id: 11 }, type: "company_to_contact" }, { from: { id: 3 }, to: { id: 13 }, type: "company_to_contact" }] } }),
    expected({ endpoint: "https://api.hubapi.com/crm/v3/associations/deals/contacts/batch/create", headers, json: { inputs: [{ from: { id: 2 }, to: { id: 12 }, type: "company_to_contact" }] } }),
  ]);
  expect(await errorOf(run(assoc(1, 11), FX_LEGACY))).toBe("operation not found");
});

test("HS record writes (legacy API): searched with hapikey, written on CRM v3 with hapikey; the identifier is written on updates too", async () => {
  const key = unique("key-rows");
  const config = { apiKey: key, hubID: "6405167" };
  const acme = addRecord("companies", { domain: `${unique("acme")}.example` });
  const from = hs.received.length;
  const out = await recordBatch(config, [row("companies", "domain", acme.properties.domain, { name: "Acme" }), row("companies", "domain", "new.example", { name: "New" })]);
  // No upsert on the legacy API: the CRM v3 list is not read.
  expect(callsSince(from)).toEqual(["GET /properties/v1/contacts/properties", "POST /crm/v3/objects/companies/search"]);
  const search = searchesSince(from)[0]!;
  expect(search.query).toEqual({ hapikey: key });
  expect(search.body.filterGroups).toEqual([{ filters: [{ propertyName: "domain", values: [acme.properties.domain, "new.example"], operator: "IN" }] }]);
  expect(out).toEqual([
    expected({ endpoint: "https://api.hubapi.com/crm/v3/objects/companies/batch/update", params: { hapikey: key }, json: { inputs: [{ id: acme.id, properties: { name: "Acme", domain: acme.properties.domain } }] } }),
    expected({ endpoint: "https://api.hubapi.com/crm/v3/objects/companies/batch/create", params: { hapikey: key }, json: { inputs: [{ properties: { name: "New", domain: "new.example" } }] } }),
  ]);
});

test("HS record writes: every page of the search is read", async () => {
  const token = unique("plain-pages");
  const config = { authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: token };
  const a = addRecord("companies", { domain: `${unique("a")}.example` });
  const b = addRecord("companies", { domain: `${unique("b")}.example` });
  // HubSpot answers the first page with one record and where the next one starts.
  once.push({
    when: (r) => r.path === "/crm/v3/objects/companies/search" && r.headers.authorization === `Bearer ${token}` && r.body?.after === 0,
    answer: () => Response.json({ total: 2, results: [{ id: a.id, properties: { domain: a.properties.domain }, ...STAMPS }], paging: { next: { after: "1", link: "" } } }),
  });
  const from = hs.received.length;
  const out = await recordBatch(config, [row("companies", "domain", a.properties.domain, { name: "A" }), row("companies", "domain", b.properties.domain, { name: "B" })]);
  expect(searchesSince(from).map((r) => r.body.after)).toEqual([0, 1]);
  expect(out.map((r) => [r.endpoint, r.body.JSON.inputs])).toEqual([
    ["https://api.hubapi.com/crm/v3/objects/companies/batch/update", [{ id: a.id, properties: { name: "A" } }, { id: b.id, properties: { name: "B" } }]],
  ]);
});

test("HS record writes refused in RudderStack's words: no external id, an invalid e-mail or a track before any lookup; failed lookups abort, or retry for 5xx", async () => {
  const config = { authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: "plain-refusals" };
  const from = hs.received.length;
  const noId: SluiceEvent = { type: "identify", messageId: "m", context: { mappedToDestination: true }, traits: { email: "a@b.com" } };
  expect(await errorOf(run(noId, config))).toBe("rETL - external Id not found.");
  expect(await errorOf(run(row("contacts", "", "a@b.com", {}), config))).toBe("rETL - external Id not found.");
  expect(await errorOf(run(row("contacts", "email", "a@b.com", { email: "not-an-email" }), config))).toBe('Email "not-an-email" is invalid');
  expect(await errorOf(run({ ...row("contacts", "email", "a@b.com", {}), type: "track", event: "x" }, config))).toBe("Message type track is not supported");
  expect(callsSince(from)).toEqual([]);
  // A row with mappedToDestination false is an ordinary identify.
  expect(await errorOf(run({ ...row("contacts", "email", "a@b.com", { email: "a@b.com" }), context: { mappedToDestination: "false" } }, config))).toBe("lookupField is a required field in webapp config");

  const contact = row("contacts", "email", "a@b.com", { firstname: "A" });
  once.push({ when: (r) => r.path === "/crm/v3/objects/contacts/search", answer: () => Response.json({ message: "boom" }, { status: 500 }) });
  const retried = await hubspot.transform(contact, ctx(config)).catch((e) => e);
  expect(retried).toBeInstanceOf(RetryableTransformError);
  expect(retried.message).toBe('rETL - Error during searching object record. "boom"');
  once.push({ when: (r) => r.path === "/crm/v3/objects/contacts/search", answer: () => unauthorized(false) });
  const refused = await hubspot.transform(contact, ctx(config)).catch((e) => e);
  expect(refused).not.toBeInstanceOf(RetryableTransformError);
  expect(refused.message).toBe('rETL - Error during searching object record. "Authentication credentials not found. This API supports OAuth 2.0 authentication and you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview"');
  expect(await errorOf(run(contact, { ...config, accessToken: "revoked-rows" }))).toStartWith('Failed to get hubspot properties: {"status":"error"');
  // An object type HubSpot does not know fails on its property list (new API).
  expect(await errorOf(run(row("cars", "vin", "1", {}), { ...config, accessToken: "tok-unknown" }))).toBe(
    'Failed to fetch HubSpot cars properties: {"status":"error","message":"Unable to infer object type from: cars","category":"OBJECT_NOT_FOUND"}',
  );
});

// ---------- deletion ----------

test("HS deleteUsers → POST crm/v3/objects/contacts/gdpr-delete per user, by email, else by the userId as the lookupField property", async () => {
  const plain = (config: Record<string, any>): DestinationContext => ({ config, destination: { id: "d-hs", name: "HubSpot", workspaceId: "ws" } });
  const reqs = hubspot.deleteUsers!([{ userId: "u1", email: "ada@example.com" }, { userId: "u2" }], plain({ ...PRIVATE_NEW, lookupField: "user_id" }));
  const headers = { ...JSON_HEADERS, Authorization: "Bearer tok" };
  expect(reqs).toEqual([
    expected({ endpoint: "https://api.hubapi.com/crm/v3/objects/contacts/gdpr-delete", headers, json: { objectId: "ada@example.com", idProperty: "email" } }),
    expected({ endpoint: "https://api.hubapi.com/crm/v3/objects/contacts/gdpr-delete", headers, json: { objectId: "u2", idProperty: "user_id" } }),
  ]);
  expect(await errorOf((async () => hubspot.deleteUsers!([{ userId: "u2" }], plain(PRIVATE_NEW)))())).toBe(
    "Deleting a HubSpot contact needs the user's email, or a lookupField other than email to find the userId by (user 'u2')",
  );
  expect(await errorOf((async () => hubspot.deleteUsers!([{ userId: "u1", email: "a@b.c" }], plain(LEGACY)))())).toBe("HubSpot user deletion needs apiVersion newApi with a private app accessToken");
});

// ---------- through a real Sluice ----------

let s: TestServer;
beforeAll(async () => {
  s = await startSluice({ args: ["--destination-base-url", `HS=${hs.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  hs.stop();
  cleanup(s.dataDir);
});

async function connected(config: Record<string, any>) {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: unique("hs"), type: "HS", config, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  return { src, dst: dst.json };
}

test("HS end to end (legacy API): the property list is read, then identify and track reach the stand-in with path, query and body", async () => {
  const key = unique("key-e2e");
  const { src } = await connected({ ...LEGACY, apiKey: key });
  await sendEvent(s.url, src.writeKey, "identify", { userId: "u1", traits: { email: "ada@example.com", firstName: "Ada", shoe_size: 38 } });
  await sendEvent(s.url, src.writeKey, "track", { userId: "u1", event: "Signed Up", context: { traits: { email: "ada@example.com" } } });
  const mine = () => hs.received.filter((r) => r.query.hapikey === key || r.path === "/v1/event");
  await waitFor(() => mine().some((r) => r.path === "/contacts/v1/contact/batch/") && mine().some((r) => r.path === "/v1/event" && r.query._n === "Signed Up"), { what: "identify and track at the stand-in" });
  expect(mine().findIndex((r) => r.path === "/properties/v1/contacts/properties")).toBeLessThan(mine().findIndex((r) => r.path === "/contacts/v1/contact/batch/"));
  const identify = mine().find((r) => r.path === "/contacts/v1/contact/batch/")!;
  expect(identify.method).toBe("POST");
  // shoe_size is no property of the portal, so it is not sent.
  expect(identify.body).toEqual([{ email: "ada@example.com", properties: [{ property: "firstname", value: "Ada" }] }]);
  expect(identify.query).toEqual({ hapikey: key });
  const track = mine().find((r) => r.path === "/v1/event" && r.query._n === "Signed Up")!;
  expect(track.method).toBe("GET");
  expect(track.query).toEqual({ _a: "6405167", _n: "Signed Up", email: "ada@example.com" });
});

test("HS end to end (new API): the contact is searched by the lookup field, then updated by the id found", async () => {
  const token = unique("tok-e2e");
  const { src, dst } = await connected({ authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: token, lookupField: "phone" });
  const phone = `+33-${++seq}`;
  const contact = addContact({ phone });
  await sendEvent(s.url, src.writeKey, "identify", { userId: "e2e-1", traits: { phone, firstname: "Eve" } });
  const mine = () => hs.received.filter((r) => r.headers.authorization === `Bearer ${token}`).map((r) => `${r.method} ${r.path}`);
  await waitFor(() => mine().includes("POST /crm/v3/objects/contacts/batch/update"), { what: "the update at the stand-in" });
  expect(mine()).toEqual(["GET /properties/v1/contacts/properties", "GET /crm/v3/properties/contacts", "POST /crm/v3/objects/contacts/search", "POST /crm/v3/objects/contacts/batch/update"]);
  const write = hs.received.find((r) => r.headers.authorization === `Bearer ${token}` && r.path.endsWith("/batch/update"))!;
  expect(write.body).toEqual({ inputs: [{ id: contact.id, properties: { firstname: "Eve", phone } }] });
  const row = await waitFor(async () => (await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=succeeded`)).json.deliveries[0], { what: "the delivery succeeded" });
  expect(row).toMatchObject({ state: "succeeded", attempts: 1 });
});

test("HS end to end: a contact search answered 503 is retried, and the identify is then delivered", async () => {
  const token = unique("tok-retry");
  const { src, dst } = await connected({ authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: token, lookupField: "phone" });
  const phone = `+49-${++seq}`;
  once.push({ when: (r) => r.path === "/crm/v3/objects/contacts/search" && r.headers.authorization === `Bearer ${token}`, answer: () => Response.json({ status: "error", message: "Service Unavailable" }, { status: 503 }) });
  await sendEvent(s.url, src.writeKey, "identify", { userId: "retry-1", traits: { phone } });
  const mine = () => hs.received.filter((r) => r.headers.authorization === `Bearer ${token}`);
  await waitFor(() => mine().some((r) => r.path === "/crm/v3/objects/contacts/batch/create"), { what: "the create after the retry" });
  expect(mine().filter((r) => r.path.endsWith("/search"))).toHaveLength(2);
  expect(mine().find((r) => r.path.endsWith("/batch/create"))!.body).toEqual({ inputs: [{ properties: { phone } }] });
  const row = await waitFor(async () => (await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=succeeded`)).json.deliveries[0], { what: "the delivery succeeded" });
  expect(row).toMatchObject({ state: "succeeded", attempts: 2 });
});

test("HS end to end: a property list answered 401 aborts the delivery with RudderStack's error text, and nothing is written", async () => {
  const token = unique("revoked-e2e");
  const { src, dst } = await connected({ authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: token, lookupField: "email" });
  await sendEvent(s.url, src.writeKey, "identify", { userId: "denied-1", traits: { email: "denied@example.com" } });
  const row = await waitFor(async () => (await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=aborted`)).json.deliveries[0], { what: "the delivery aborted" });
  expect(row.lastError).toBe(
    'Failed to get hubspot properties: {"status":"error","message":"Authentication credentials not found. This API supports OAuth 2.0 authentication and you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview","correlationId":"0b8a3ee4-7f0c-4f1e-9a57-1c1f2d0c0e11","category":"INVALID_AUTHENTICATION"}',
  );
  expect(hs.received.filter((r) => r.headers.authorization === `Bearer ${token}`).map((r) => `${r.method} ${r.path}`)).toEqual(["GET /properties/v1/contacts/properties"]);
});

test("HS end to end: suppress_with_delete reaches the GDPR delete endpoint with the user's email; the deletion completes", async () => {
  const { dst } = await connected({ ...PRIVATE_NEW, accessToken: "del-token" });
  const reg = await api(s.url, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [dst.id], users: [{ userId: "gone-hs-1", email: "gone-hs-1@example.com" }] });
  expect(reg.status).toBe(201);
  const call = await waitFor(() => hs.received.find((r) => r.path === "/crm/v3/objects/contacts/gdpr-delete" && r.body?.objectId === "gone-hs-1@example.com"), { what: "the GDPR delete call" });
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

test("HS end to end: a 207 naming an input's objectWriteTraceId aborts that event with HubSpot's message and delivers the rest; a batch write answered with nothing aborts", async () => {
  const { src, dst } = await connected({ ...PRIVATE_NEW, accessToken: unique("tok-207") });
  // HubSpot names a failed input by its objectWriteTraceId, the delivery's id: read off the request.
  let bad = "";
  const badInput = (r: SinkRequest) => (r.path === "/crm/v3/objects/contacts/batch/upsert" ? (r.body?.inputs ?? []).find((i: any) => i.id === "bad@example.com") : undefined);
  once.push({
    when: (r) => {
      const input = badInput(r);
      if (input) bad = String(input.objectWriteTraceId);
      return !!input;
    },
    answer: () => Response.json({ status: "COMPLETE", results: [], errors: [{ status: "error", category: "VALIDATION_ERROR", message: "Property values were not valid: shoe_size", context: { objectWriteTraceId: [bad] } }] }, { status: 207 }),
  });
  await sendEvent(s.url, src.writeKey, "identify", { userId: "good", traits: { email: "good@example.com", firstName: "Good" } });
  await sendEvent(s.url, src.writeKey, "identify", { userId: "bad", traits: { email: "bad@example.com", shoe_size: "huge" } });
  const byState = async (state: string) => (await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=${state}`)).json.deliveries as any[];
  const [aborted] = await waitFor(() => byState("aborted").then((l) => (l.length ? l : undefined)), { what: "the refused event aborted" });
  expect(aborted.event.userId).toBe("bad");
  expect(aborted.lastError).toBe("Property values were not valid: shoe_size");
  expect(bad).toBe(String(aborted.id));
  const delivered = await waitFor(() => byState("succeeded").then((l) => (l.length ? l : undefined)), { what: "the other delivered" });
  expect(delivered.map((d) => d.event.userId)).toEqual(["good"]);

  once.push({ when: (r) => r.path === "/crm/v3/objects/contacts/batch/upsert", answer: () => Response.json({ status: "COMPLETE", results: [], errors: [] }) });
  await sendEvent(s.url, src.writeKey, "identify", { userId: "ghost", traits: { email: "ghost@example.com" } });
  const silent = await waitFor(() => byState("aborted").then((l) => l.find((d) => d.event.userId === "ghost")), { what: "the silent no-op aborted" });
  expect(silent.lastError).toContain("Silent failure");
});

test("HS end to end: reverse-ETL rows sent to the gateway are written as CRM records; a later sync updates the record the first one created", async () => {
  const token = unique("plain-e2e-rows");
  const { src, dst } = await connected({ authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: token, lookupField: "email" });
  const known = addContact({ email: `${unique("known-e2e")}@example.com`, firstname: "Before" });
  const fresh = `${unique("fresh-e2e")}@example.com`;
  const rowOf = (email: string, traits: Record<string, unknown>) => {
    const { messageId: _m, ...e } = row("contacts", "email", email, traits);
    return e;
  };
  const batch = await sendEvent(s.url, src.writeKey, "batch", { batch: [rowOf(known.properties.email!, { firstname: "After" }), rowOf(fresh, { firstname: "Fresh" })] });
  expect(batch.status).toBe(200);
  const mine = () => hs.received.filter((r) => r.headers.authorization === `Bearer ${token}`);
  const inputs = (verb: string) => mine().filter((r) => r.path === `/crm/v3/objects/contacts/batch/${verb}`).flatMap((r) => r.body.inputs);
  await waitFor(() => inputs("update").length + inputs("create").length === 2, { what: "both rows written" });
  expect(inputs("update")).toEqual([{ id: known.id, properties: { firstname: "After" } }]);
  expect(inputs("create")).toEqual([{ properties: { firstname: "Fresh", email: fresh } }]);
  expect(known.properties.firstname).toBe("After");
  const succeeded = async () => (await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=succeeded`)).json.deliveries as any[];
  await waitFor(async () => (await succeeded()).length === 2, { what: "both deliveries succeeded" });

  // The next sync finds the contact the first one created, by its e-mail.
  const created = contacts.find((c) => c.properties.email === fresh)!;
  await sendEvent(s.url, src.writeKey, "identify", rowOf(fresh, { lastname: "Later" }));
  await waitFor(() => inputs("update").length === 2, { what: "the second sync's update" });
  expect(inputs("update")[1]).toEqual({ id: created.id, properties: { lastname: "Later" } });
  expect(inputs("create")).toHaveLength(1);
  expect(mine().filter((r) => r.path.endsWith("/search")).every((r) => r.body.filterGroups[0].filters[0].operator === "IN")).toBe(true);
});

test("HS end to end: a record search answered 503 is retried and the row then written; one answered 401 aborts with RudderStack's text", async () => {
  const token = unique("plain-e2e-search");
  const { src, dst } = await connected({ authorizationType: "newPrivateAppApi", apiVersion: "newApi", accessToken: token });
  const { messageId: _m, ...retried } = row("companies", "domain", `${unique("retry")}.example`, { name: "Retried" });
  once.push({ when: (r) => r.path === "/crm/v3/objects/companies/search" && r.headers.authorization === `Bearer ${token}`, answer: () => Response.json({ status: "error", message: "Service Unavailable" }, { status: 503 }) });
  await sendEvent(s.url, src.writeKey, "identify", retried);
  const mine = () => hs.received.filter((r) => r.headers.authorization === `Bearer ${token}`);
  await waitFor(() => mine().some((r) => r.path === "/crm/v3/objects/companies/batch/create"), { what: "the create after the retry" });
  expect(mine().filter((r) => r.path.endsWith("/search"))).toHaveLength(2);
  const byState = async (state: string) => (await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=${state}`)).json.deliveries as any[];
  const [done] = await waitFor(() => byState("succeeded").then((l) => (l.length ? l : undefined)), { what: "the delivery succeeded" });
  expect(done).toMatchObject({ state: "succeeded", attempts: 2 });

  const { messageId: _n, ...denied } = row("companies", "domain", `${unique("denied")}.example`, { name: "Denied" });
  once.push({ when: (r) => r.path === "/crm/v3/objects/companies/search" && r.headers.authorization === `Bearer ${token}`, answer: () => unauthorized(false) });
  await sendEvent(s.url, src.writeKey, "identify", denied);
  const [aborted] = await waitFor(() => byState("aborted").then((l) => (l.length ? l : undefined)), { what: "the refused row aborted" });
  expect(aborted.attempts).toBe(1);
  expect(aborted.lastError).toStartWith('rETL - Error during searching object record. "Authentication credentials not found.');
  expect(mine().filter((r) => r.path.endsWith("/batch/create"))).toHaveLength(1);
});
