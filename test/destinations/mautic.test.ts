import { afterAll, beforeAll, expect, test } from "bun:test";
import { mautic } from "../../src/destinations/mautic";
import type { DestinationContext, DestinationRequest, SluiceEvent } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

const ctx = (config: Record<string, any> = {}, baseUrl?: string): DestinationContext => ({
  config: { userName: "abcdef@gmail.com", password: "dummyPassword", subDomainName: "ruddertest2", lookUpField: "email", ...config },
  destination: { id: "dest-mautic", name: "Mautic", workspaceId: "ws-1" },
  baseUrl,
});
const AUTH = `Basic ${btoa("abcdef@gmail.com:dummyPassword")}`;
const ts = "2020-02-02T05:53:08.977+05:30";

const identify = (traits: Record<string, unknown>, extra: Record<string, unknown> = {}): SluiceEvent => ({
  type: "identify",
  messageId: "m-1",
  userId: "identified user id",
  anonymousId: "anon-id-new",
  timestamp: ts,
  originalTimestamp: "2020-02-02T00:23:09.544Z",
  context: { ip: "14.5.67.21", library: { name: "http" }, traits },
  ...extra,
});

const FX_TS = "2020-02-02T05:53:08.977+05:30";
/** The traits of RudderStack's identify fixtures. */
const FX_ALL_TRAITS = {
  firstName: "Test",
  lastName: "Rudderlabs",
  role: "Manager",
  address: "Flat No 58 ABC building XYZ Area near PQRS , 354408",
  hasPurchased: "yes",
  email: "abc@xyz.com",
  title: "Mr",
  phone: "9876543210",
  state: "Uttar Pradesh",
  zipcode: "243001",
  prospectOrCustomer: "Prospect",
  country: "India",
  website: "abc.com",
  subscriptionStatus: "New",
};

/** The contact RudderStack sends for them (last_active is the event's timestamp). */
const FX_ALL_BODY = {
  email: "abc@xyz.com",
  title: "Mr",
  firstname: "Test",
  lastname: "Rudderlabs",
  phone: "9876543210",
  website: "abc.com",
  state: "Uttar Pradesh",
  zipcode: "243001",
  ipAddress: "14.5.67.21",
  last_active: FX_TS,
  country: "India",
  haspurchased: "yes",
  role: "Manager",
  subscription_status: "New",
  prospect_or_customer: "Prospect",
  address1: "Flat No 58 ABC building XYZ Area near PQRS , 354408",
  address2: "",
};

test("MAUTIC identify → POST <subdomain>.mautic.net/api/contacts/new with RudderStack's contact fields (its fixture)", () => {
  const event = identify(FX_ALL_TRAITS);
  expect(mautic.transform(event, ctx())).toEqual([
    {
      version: "1",
      type: "REST",
      method: "POST",
      endpoint: "https://ruddertest2.mautic.net/api/contacts/new",
      headers: { "Content-Type": "application/json", Authorization: AUTH },
      params: {},
      body: {
        JSON: { ...FX_ALL_BODY, last_active: ts },
        JSON_ARRAY: {},
        XML: {},
        FORM: {},
      },
      files: {},
    },
  ]);
});

test("MAUTIC: domainMethod picks the self-hosted domain or the subdomain; an address object gives its two lines and city", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "u",
    timestamp: ts,
    traits: { address: { addressLine1: "abcde", addressLine2: "fghjikld", area: "Model Town", city: "Bareilly" } },
  };
  const body = { city: "Bareilly", address1: "abcde", address2: "fghjikld", last_active: ts };
  const [domain] = mautic.transform(event, ctx({ subDomainName: "", domainMethod: "domainNameOption", domainName: "https://testmautic.com" }));
  expect(domain!.endpoint).toBe("https://testmautic.com/api/contacts/new");
  expect(domain!.body.JSON).toEqual(body);
  const [sub] = mautic.transform(event, ctx({ subDomainName: "test", domainMethod: "subDomainNameOption", domainName: "https://testmautic.com/" }));
  expect(sub!.endpoint).toBe("https://test.mautic.net/api/contacts/new");
  expect(mautic.transform(event, ctx({ subDomainName: "test", domainMethod: "domainNameOption", domainName: "https://testmautic.com" }))[0]!.endpoint).toBe(
    "https://testmautic.com/api/contacts/new",
  );
});

test("MAUTIC identify of a contact named in context.externalId → PATCH /contacts/{id}/edit", () => {
  const event = identify({ email: "hijibi@gmail.com" }, { context: { externalId: [{ type: "mauticContactId", id: 247 }], traits: { email: "hijibi@gmail.com" } } });
  const [req] = mautic.transform(event, ctx());
  expect(req!.method).toBe("PATCH");
  expect(req!.endpoint).toBe("https://ruddertest2.mautic.net/api/contacts/247/edit");
  expect(req!.body.JSON).toEqual({ email: "hijibi@gmail.com", last_active: ts });
});

test("MAUTIC refuses what RudderStack refuses, with its messages", () => {
  const event = identify({ firstName: "Test" });
  expect(() => mautic.transform(event, ctx({ password: "" }))).toThrow("Invalid password value specified in the destination configuration");
  expect(() => mautic.transform(event, ctx({ subDomainName: "", domainName: "", userName: "opiogfuebj" }))).toThrow("Please Provide either subDomain or Domain Name");
  expect(() => mautic.transform(event, ctx({ userName: "opiogfuebj" }))).toThrow("Invalid user name provided in the destination configuration");
  expect(() => mautic.transform(identify({ phone: "12345" }), ctx())).toThrow("The provided phone number is invalid");
  expect(() => mautic.transform(identify({ email: "not-an-email" }), ctx())).toThrow("The provided email is invalid");
  expect(() => mautic.transform(identify({ title: "Dr" }), ctx())).toThrow("Invalid entry for key title");
  expect(() => mautic.transform({ type: "track", messageId: "m", userId: "u", event: "E" }, ctx())).toThrow('Event type "track" is not supported');
});

test("MAUTIC group → POST /{segments|campaigns|companies}/{groupId}/contact/{contactId}/{add|remove}", () => {
  const group = (traits: Record<string, unknown>, contact = true): SluiceEvent => ({
    type: "group",
    messageId: "m",
    userId: "u",
    groupId: "17",
    traits,
    context: contact ? { externalId: [{ type: "mauticContactId", id: 246 }] } : {},
  });
  const [req] = mautic.transform(group({ type: "Segments" }), ctx());
  expect(req!.method).toBe("POST");
  expect(req!.endpoint).toBe("https://ruddertest2.mautic.net/api/segments/17/contact/246/add");
  expect(req!.headers).toEqual({ "Content-Type": "application/json", Authorization: AUTH });
  expect(req!.body).toEqual({ JSON: {}, JSON_ARRAY: {}, XML: {}, FORM: {} });
  expect(mautic.transform(group({ type: "companies", operation: "remove" }), ctx())[0]!.endpoint).toBe("https://ruddertest2.mautic.net/api/companies/17/contact/246/remove");
  expect(() => mautic.transform(group({}), ctx())).toThrow("`type` is missing in the traits");
  expect(() => mautic.transform(group({ type: "lists" }), ctx())).toThrow('Grouping type "lists" is not supported');
  expect(() => mautic.transform(group({ type: "segments", operation: "toggle" }), ctx())).toThrow('Invalid value specified for operation "toggle"');
  // RudderStack would look the contact up by the lookup field; Sluice needs its id.
  expect(() => mautic.transform(group({ type: "segments" }, false), ctx())).toThrow("mauticContactId");
});

let s: TestServer;
const sink = startSink((r) => Response.json({ contact: { id: 1 } }, { status: r.path.endsWith("/new") ? 201 : 200 }));
beforeAll(async () => {
  s = await startSluice({ args: ["--destination-base-url", `MAUTIC=${sink.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  sink.stop();
  cleanup(s.dataDir);
});

test("MAUTIC through the pipeline: identify and group reach the stand-in with Basic auth, in order", async () => {
  const src = await createSource(s.url);
  const config = { userName: "admin@example.com", password: "pw", subDomainName: "acme", lookUpField: "email" };
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "mautic", type: "MAUTIC", config, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const externalId = [{ type: "mauticContactId", id: 9 }];
  const batch = [
    { type: "identify", userId: "u-1", traits: { email: "ada@example.com", firstName: "Ada" } },
    { type: "group", userId: "u-1", groupId: "3", traits: { type: "segments" }, context: { externalId } },
  ];
  expect((await sendEvent(s.url, src.writeKey, "batch", { batch })).status).toBe(200);
  await waitFor(() => sink.received.length >= 2, { what: "two Mautic requests" });
  const [created, grouped] = sink.received;
  expect(created).toMatchObject({ method: "POST", path: "/api/contacts/new" });
  expect(created!.headers.authorization).toBe(`Basic ${btoa("admin@example.com:pw")}`);
  expect(created!.body).toMatchObject({ email: "ada@example.com", firstname: "Ada" });
  expect(grouped).toMatchObject({ method: "POST", path: "/api/segments/3/contact/9/add" });
});

// ---------- RudderStack fixtures (rudder-transformer test/integrations/destinations/mautic, processor 20a2489, router 04577cd) ----------

const fxConfig = (config: Record<string, any>) => ctx({ lookUpField: "email", password: "dummyPassword", ...config });
const fxAuth = (user: string) => `Basic ${btoa(`${user}:dummyPassword`)}`;
const fxIdentify = (extra: Record<string, unknown>): SluiceEvent => ({
  anonymousId: "anon-id-new",
  messageId: "25ea6605-c788-4cab-8fed-2cf0b831c4a8",
  originalTimestamp: "2020-02-02T00:23:09.544Z",
  request_ip: "[::1]",
  sentAt: "2022-08-17T10:40:21.728+05:30",
  timestamp: FX_TS,
  userId: "identified user id",
  type: "identify",
  ...extra,
});
const fxRequest = (method: "POST" | "PATCH", endpoint: string, json: Record<string, unknown>, user = "TestRudderlabs45823@gmail.com"): DestinationRequest => ({
  version: "1",
  type: "REST",
  method,
  endpoint,
  headers: { "Content-Type": "application/json", Authorization: fxAuth(user) },
  params: {},
  body: { JSON: json, JSON_ARRAY: {}, XML: {}, FORM: {} },
  files: {},
});

test("MAUTIC RudderStack fixture: identify with all traits creates the contact (processor and router)", () => {
  const event = fxIdentify({ context: { ip: "14.5.67.21", library: { name: "http" }, traits: FX_ALL_TRAITS } });
  expect(mautic.transform(event, fxConfig({ subDomainName: "ruddertest2", userName: "TestRudderlabs45823@gmail.com" }))).toEqual([
    fxRequest("POST", "https://ruddertest2.mautic.net/api/contacts/new", FX_ALL_BODY),
  ]);
});

test("MAUTIC RudderStack fixture: identify of a contact named in externalId is a PATCH of that contact", () => {
  const event = fxIdentify({ context: { externalId: [{ type: "mauticContactId", id: "246" }] }, traits: { firstName: "Test", role: "Manager" } });
  expect(mautic.transform(event, fxConfig({ subDomainName: "testapi5", userName: "Test45823Rudderlabs@gmail.com" }))).toEqual([
    fxRequest("PATCH", "https://testapi5.mautic.net/api/contacts/246/edit", { last_active: FX_TS, firstname: "Test", role: "Manager" }, "Test45823Rudderlabs@gmail.com"),
  ]);
});

test("MAUTIC RudderStack fixture: identify found by the lookup field is created instead (Sluice looks nothing up)", () => {
  // RudderStack finds contact 247 by e-mail and sends PATCH /contacts/247/edit; Mautic merges /contacts/new by e-mail.
  const event = fxIdentify({ context: { ip: "14.5.67.21", library: { name: "http" }, traits: { ...FX_ALL_TRAITS, email: "hijibi@gmail.com" } } });
  expect(mautic.transform(event, fxConfig({ subDomainName: "ruddertest2", userName: "TestRudderlabs45823@gmail.com" }))).toEqual([
    fxRequest("POST", "https://ruddertest2.mautic.net/api/contacts/new", { ...FX_ALL_BODY, email: "hijibi@gmail.com" }),
  ]);
});

test("MAUTIC RudderStack fixture: an address object without its two lines is its values joined, the city read from it", () => {
  const event = fxIdentify({ context: { library: { name: "http" } }, traits: { address: { area: "Model Town", city: "Bareilly" } } });
  expect(mautic.transform(event, fxConfig({ subDomainName: "testapi3", userName: "abcdef@gmail.com" }))).toEqual([
    fxRequest("POST", "https://testapi3.mautic.net/api/contacts/new", { city: "Bareilly", address1: "Model Town Bareilly ", address2: "", last_active: FX_TS }, "abcdef@gmail.com"),
  ]);
  // A lower-case state is capitalised.
  const state = fxIdentify({ traits: { state: "uttar pradesh" } });
  expect(mautic.transform(state, fxConfig({ subDomainName: "testapi3", userName: "abcdef@gmail.com" }))[0]!.body.JSON).toEqual({ state: "Uttar pradesh", last_active: FX_TS });
});

test("MAUTIC RudderStack fixture: configuration errors, in RudderStack's order", () => {
  const event = fxIdentify({ context: { ip: "14.5.67.21", traits: { firstName: "Test", lastName: "Rudderlabs" } } });
  expect(() => mautic.transform(event, fxConfig({ subDomainName: "testapi3", userName: "" }))).toThrow("Invalid userName value specified in the destination configuration");
  expect(() => mautic.transform(event, fxConfig({ subDomainName: "testapi3", userName: "abcdef@gmail.com", password: "" }))).toThrow(
    "Invalid password value specified in the destination configuration",
  );
  expect(() => mautic.transform(event, fxConfig({ subDomainName: "", userName: "abcdef@gmail.com" }))).toThrow("Please Provide either subDomain or Domain Name");
  // The domain is checked before the user name's form.
  expect(() => mautic.transform(event, fxConfig({ subDomainName: "", domainName: "", userName: "abcdef" }))).toThrow("Please Provide either subDomain or Domain Name");
  expect(() => mautic.transform(event, fxConfig({ subDomainName: "testapi3", userName: "abcdef" }))).toThrow("Invalid user name provided in the destination configuration");
});

test("MAUTIC RudderStack fixture: event type missing or not supported (named in lower case)", () => {
  const config = fxConfig({ subDomainName: "testapi3", userName: "abcdef@gmail.com" });
  const { type: _none, ...untyped } = fxIdentify({ context: { ip: "14.5.67.21", traits: { state: "uttar pradesh" } } });
  expect(() => mautic.transform(untyped as SluiceEvent, config)).toThrow("Event type is required");
  expect(() => mautic.transform(fxIdentify({ type: "Alias" }), config)).toThrow('Event type "alias" is not supported');
  // A type in another case is still the type.
  expect(mautic.transform(fxIdentify({ type: "Identify", traits: { firstName: "A" } }), config)[0]!.endpoint).toBe("https://testapi3.mautic.net/api/contacts/new");
});

test("MAUTIC RudderStack fixture: traits outside Mautic's choices and malformed phone or e-mail are refused", () => {
  const config = fxConfig({ subDomainName: "testapi3", userName: "abcdef@gmail.com" });
  const withTraits = (traits: Record<string, unknown>) => fxIdentify({ context: { ip: "14.5.67.21", traits } });
  expect(() => mautic.transform(withTraits({ title: "jhdv11" }), config)).toThrow("Invalid entry for key title");
  expect(() => mautic.transform(withTraits({ phone: "765798" }), config)).toThrow("The provided phone number is invalid");
  expect(() => mautic.transform(withTraits({ hasPurchased: "Mightbe" }), config)).toThrow("Invalid entry for key haspurchased");
  expect(() => mautic.transform(withTraits({ role: "Xyz" }), config)).toThrow("Invalid entry for key role");
  expect(() => mautic.transform(withTraits({ subscriptionStatus: "NA" }), config)).toThrow("Invalid entry for key subscription_status");
  expect(() => mautic.transform(withTraits({ prospectOrCustomer: "random" }), config)).toThrow("Invalid entry for key prospect_or_customer");
  expect(() => mautic.transform({ type: "identify", messageId: "m", anonymousId: "a", context: { traits: { email: "abc123" } } }, config)).toThrow(
    "The provided email is invalid",
  );
});

test("MAUTIC RudderStack fixture: group adds or removes the contact named in externalId", () => {
  const config = fxConfig({ lookUpField: "lastName", subDomainName: "testapi5", userName: "Test45823Rudderlabs@gmail.com" });
  const group = (traits: Record<string, unknown>, groupId?: string): SluiceEvent => ({
    type: "group",
    messageId: "m",
    userId: "user123",
    ...(groupId ? { groupId } : {}),
    context: { externalId: [{ type: "mauticContactId", id: "246" }] },
    traits,
  });
  const empty = { JSON: {}, JSON_ARRAY: {}, XML: {}, FORM: {} };
  const auth = { "Content-Type": "application/json", Authorization: fxAuth("Test45823Rudderlabs@gmail.com") };
  expect(mautic.transform(group({ lastName: "garwal", type: "Segments", operation: "remove" }, "17"), config)).toEqual([
    { version: "1", type: "REST", method: "POST", endpoint: "https://testapi5.mautic.net/api/segments/17/contact/246/remove", headers: auth, params: {}, body: empty, files: {} },
  ]);
  expect(mautic.transform(group({ type: "Segments" }, "17"), config)).toEqual([
    { version: "1", type: "REST", method: "POST", endpoint: "https://testapi5.mautic.net/api/segments/17/contact/246/add", headers: auth, params: {}, body: empty, files: {} },
  ]);
  expect(() => mautic.transform(group({ type: "Segments" }), config)).toThrow("`groupId` is missing in the event");
  expect(() => mautic.transform(group({}), config)).toThrow("`type` is missing in the traits");
  expect(() => mautic.transform(group({ type: "Alias" }, "17"), config)).toThrow(
    'Grouping type "alias" is not supported. Only "Segments", "Companies", and "Campaigns" are supported',
  );
  // The type is read from the event's traits object (traits, else context.traits) as a whole.
  const split: SluiceEvent = { type: "group", messageId: "m", groupId: "17", traits: { name: "x" }, context: { traits: { type: "segments" } } };
  expect(() => mautic.transform(split, config)).toThrow("`type` is missing in the traits");
});

test("MAUTIC RudderStack fixture: group without a contact id needs it (RudderStack looks it up by the lookup field)", () => {
  const config = fxConfig({ subDomainName: "ruddertest2", userName: "Test45823Rudderlabs@gmail.com" });
  // RudderStack finds 247 by e-mail (companies/20/contact/247/add), or fails with "Found more than one contact on lookup"
  // or "Could not find any contact ID on lookup"; Sluice asks for the id.
  const event: SluiceEvent = { type: "group", messageId: "m", userId: "user123", groupId: "20", context: { traits: { email: "hijibi@gmail.com" } }, traits: { type: "Companies" } };
  expect(() => mautic.transform(event, config)).toThrow("mauticContactId");
});
