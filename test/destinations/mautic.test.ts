import { afterAll, beforeAll, expect, test } from "bun:test";
import { mautic } from "../../src/destinations/mautic";
import type { DestinationContext, SluiceEvent } from "../../src/destinations/types";
import { type SinkRequest, type TestServer, api, basic, cleanup, createSource, jsonRequest, lookupContext, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

/**
 * A stand-in for Mautic's REST API (developer.mautic.org): contacts searched with
 * `GET /api/contacts?where[0][col]=…&where[0][expr]=eq&where[0][val]=…` (answered keyed by id,
 * or `[]` when none match, as Mautic does), created, edited, and added to or removed from
 * segments, campaigns and companies. Wrong credentials are answered 401 with Mautic's
 * `access_denied` error. `once` answers the next request matching a test with its own response.
 */
function fakeMautic(user = "mautic1", password = "dummyPassword") {
  const st = { contacts: [] as Array<{ id: number; fields: Record<string, any> }>, memberships: [] as string[], nextId: 240 };
  const once: Array<{ when: (r: SinkRequest) => boolean; answer: () => Response }> = [];
  const sink = startSink((req) => {
    const hook = once.findIndex((o) => o.when(req));
    if (hook >= 0) return once.splice(hook, 1)[0]!.answer();
    if (req.headers.authorization !== basic(user, password)) {
      return Response.json({ errors: [{ message: "API authorization denied.", code: 401, type: "access_denied" }] }, { status: 401 });
    }
    let m: RegExpMatchArray | null;
    if (req.method === "GET" && req.path === "/api/contacts") {
      const col = req.query["where[0][col]"]!;
      const found = st.contacts.filter((c) => req.query["where[0][expr]"] === "eq" && String(c.fields[col]) === req.query["where[0][val]"]);
      return Response.json({ total: String(found.length), contacts: found.length ? Object.fromEntries(found.map((c) => [String(c.id), { id: c.id, fields: { all: c.fields } }])) : [] });
    }
    if (req.method === "POST" && req.path === "/api/contacts/new") {
      const contact = { id: st.nextId++, fields: { ...req.body } };
      st.contacts.push(contact);
      return Response.json({ contact: { id: contact.id, fields: { all: contact.fields } } }, { status: 201 });
    }
    if (req.method === "PATCH" && (m = req.path.match(/^\/api\/contacts\/(\d+)\/edit$/))) {
      const contact = st.contacts.find((c) => c.id === Number(m![1]));
      if (!contact) return Response.json({ errors: [{ message: "Item was not found.", code: 404 }] }, { status: 404 });
      Object.assign(contact.fields, req.body);
      return Response.json({ contact: { id: contact.id, fields: { all: contact.fields } } });
    }
    if (req.method === "POST" && (m = req.path.match(/^\/api\/(segments|campaigns|companies)\/(\d+)\/contact\/(\d+)\/(add|remove)$/))) {
      const key = `${m[1]}/${m[2]}/${m[3]}`;
      st.memberships = st.memberships.filter((k) => k !== key);
      if (m[4] === "add") st.memberships.push(key);
      return Response.json({ success: 1 });
    }
    return Response.json({ errors: [{ message: "Requested URL not found", code: 404 }] }, { status: 404 });
  });
  const addContact = (fields: Record<string, any>) => {
    const contact = { id: st.nextId++, fields };
    st.contacts.push(contact);
    return contact.id;
  };
  const calls = (from = 0) => sink.received.slice(from).map((r) => `${r.method} ${r.path}${r.query["where[0][col]"] ? `?${r.query["where[0][col]"]}=${r.query["where[0][val]"]}` : ""}`);
  return { ...sink, st, once, addContact, calls };
}

const mt = fakeMautic();
const CONFIG = { userName: "mautic1", password: "dummyPassword", subDomainName: "ruddertest2", lookUpField: "email" };
const ctx = (config: Record<string, any> = {}): DestinationContext => lookupContext({ ...CONFIG, ...config }, mt.url);
const API = `${mt.url}/api`;
const HEADERS = { "Content-Type": "application/json", Authorization: basic("mautic1", "dummyPassword") };
const ts = "2020-02-02T05:53:08.977+05:30";
/** Runs the transform and answers what it returned and which calls it made to the stand-in. */
async function run(event: SluiceEvent, c: DestinationContext = ctx()) {
  const from = mt.received.length;
  const requests = await mautic.transform(event, c);
  return { requests, calls: mt.calls(from) };
}
const refused = (event: SluiceEvent, c: DestinationContext = ctx()) => expect(mautic.transform(event, c)).rejects;

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

test("MAUTIC identify of a contact the lookup field does not find → searched by e-mail, then POST /contacts/new with RudderStack's contact fields (its fixture)", async () => {
  const { requests, calls } = await run(identify(FX_ALL_TRAITS));
  expect(calls).toEqual(["GET /api/contacts?email=abc@xyz.com"]);
  expect(mt.received.at(-1)!.query).toEqual({ "where[0][col]": "email", "where[0][expr]": "eq", "where[0][val]": "abc@xyz.com" });
  expect(mt.received.at(-1)!.headers.authorization).toBe(HEADERS.Authorization);
  expect(requests).toEqual([jsonRequest("POST", `${API}/contacts/new`, FX_ALL_BODY, HEADERS)]);
});

test("MAUTIC identify of the one contact the lookup finds → PATCH /contacts/{id}/edit; several found → a new contact, as RudderStack", async () => {
  const id = mt.addContact({ email: "hijibi@gmail.com", firstname: "Old" });
  const { requests } = await run(identify({ ...FX_ALL_TRAITS, email: "hijibi@gmail.com" }));
  expect(requests).toEqual([jsonRequest("PATCH", `${API}/contacts/${id}/edit`, { ...FX_ALL_BODY, email: "hijibi@gmail.com" }, HEADERS)]);
  mt.addContact({ email: "twice@example.com" });
  mt.addContact({ email: "twice@example.com" });
  expect((await run(identify({ email: "twice@example.com" }))).requests.map((r) => `${r.method} ${r.endpoint}`)).toEqual([`POST ${API}/contacts/new`]);
});

test("MAUTIC identify: the lookup field's value is searched by its Mautic field, else the e-mail; a contact named in context.externalId is edited without a search", async () => {
  const id = mt.addContact({ lastname: "Garwal", email: "g@example.com" });
  const byName = await run(identify({ lastName: "Garwal", email: "other@example.com" }), ctx({ lookUpField: "lastName" }));
  expect(byName.calls).toEqual(["GET /api/contacts?lastname=Garwal"]);
  expect(byName.requests[0]!.endpoint).toBe(`${API}/contacts/${id}/edit`);
  // No last name in the event: the e-mail is searched instead.
  expect((await run(identify({ email: "g@example.com" }), ctx({ lookUpField: "lastName" }))).calls).toEqual(["GET /api/contacts?email=g@example.com"]);
  // RudderStack's table names no Mautic field for `state`: such a contact is always created.
  const state = await run(identify({ state: "Goa", email: "g@example.com" }), ctx({ lookUpField: "state" }));
  expect(state.calls).toEqual([]);
  expect(state.requests[0]!.endpoint).toBe(`${API}/contacts/new`);
  // Nothing to search by: created without a call.
  expect((await run(identify({ firstName: "Nobody" }))).calls).toEqual([]);
  const named = await run(identify({ email: "hijibi@gmail.com" }, { context: { externalId: [{ type: "mauticContactId", id: 247 }], traits: { email: "hijibi@gmail.com" } } }));
  expect(named.calls).toEqual([]);
  expect(named.requests).toEqual([jsonRequest("PATCH", `${API}/contacts/247/edit`, { email: "hijibi@gmail.com", last_active: ts }, HEADERS)]);
});

test("MAUTIC lookups refused in RudderStack's words: an unsupported lookup field, no traits, a search Mautic refuses", async () => {
  await refused(identify({ email: "a@example.com" }), ctx({ lookUpField: "nickname" })).toThrow('Lookup field "nickname" specified in the destination configuration is not supported');
  await refused({ type: "identify", messageId: "m", userId: "u", properties: { email: "a@example.com" } }).toThrow("Traits are missing in the event");
  await refused(identify({ email: "a@example.com" }), ctx({ password: "wrong" })).toThrow(
    'Failed to fetch contacts: "{"errors":[{"message":"API authorization denied.","code":401,"type":"access_denied"}]}"',
  );
});

test("MAUTIC: domainMethod picks the self-hosted domain or the subdomain; an address object gives its two lines and city", async () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "u",
    timestamp: ts,
    traits: { address: { addressLine1: "abcde", addressLine2: "fghjikld", area: "Model Town", city: "Bareilly" } },
  };
  const body = { city: "Bareilly", address1: "abcde", address2: "fghjikld", last_active: ts };
  const plain = (config: Record<string, any>) => ({ config: { ...CONFIG, ...config }, destination: { id: "d", name: "d", workspaceId: "w" } });
  // Nothing to search by, so no lookup client is needed.
  const [domain] = await mautic.transform(event, plain({ subDomainName: "", domainMethod: "domainNameOption", domainName: "https://testmautic.com" }));
  expect(domain!.endpoint).toBe("https://testmautic.com/api/contacts/new");
  expect(domain!.body.JSON).toEqual(body);
  const [sub] = await mautic.transform(event, plain({ subDomainName: "test", domainMethod: "subDomainNameOption", domainName: "https://testmautic.com/" }));
  expect(sub!.endpoint).toBe("https://test.mautic.net/api/contacts/new");
  expect((await mautic.transform(event, plain({ subDomainName: "test", domainMethod: "domainNameOption", domainName: "https://testmautic.com" })))[0]!.endpoint).toBe(
    "https://testmautic.com/api/contacts/new",
  );
  // An address without its two lines is its values joined; a lower-case state is capitalised.
  const joined = await run({ ...event, traits: { address: { area: "Model Town", city: "Bareilly" }, state: "uttar pradesh" } });
  expect(joined.requests[0]!.body.JSON).toEqual({ city: "Bareilly", state: "Uttar pradesh", address1: "Model Town Bareilly ", address2: "", last_active: ts });
});

test("MAUTIC config checks in RudderStack's order (password, user name, domain); any user name is taken, as RudderStack takes it", async () => {
  const event = identify({ firstName: "Test" });
  await refused(event, ctx({ password: "", userName: "" })).toThrow("Invalid password value specified in the destination configuration");
  await refused(event, ctx({ userName: "" })).toThrow("Invalid userName value specified in the destination configuration");
  await refused(event, ctx({ subDomainName: "", domainName: "", userName: "abcdef" })).toThrow("Please Provide either subDomain or Domain Name");
  for (const userName of ["mautic1", "abcdef", "TestRudderlabs45823@gmail.com", "admin@mautic.local"]) {
    const { requests } = await run(event, ctx({ userName }));
    expect(requests[0]!.headers.Authorization).toBe(basic(userName, "dummyPassword"));
  }
});

test("MAUTIC refuses events as RudderStack does, with its messages", async () => {
  const untyped = identify({ state: "x" });
  delete (untyped as Record<string, unknown>).type;
  await refused(untyped).toThrow("Event type is required");
  await refused(identify({}, { type: "Alias" })).toThrow('Event type "alias" is not supported');
  expect((await run(identify({ firstName: "A" }, { type: "Identify" }))).requests[0]!.endpoint).toBe(`${API}/contacts/new`);
  for (const [traits, message] of [
    [{ title: "jhdv11" }, "Invalid entry for key title"],
    [{ phone: "765798" }, "The provided phone number is invalid"],
    [{ hasPurchased: "Mightbe" }, "Invalid entry for key haspurchased"],
    [{ role: "Xyz" }, "Invalid entry for key role"],
    [{ subscriptionStatus: "NA" }, "Invalid entry for key subscription_status"],
    [{ prospectOrCustomer: "random" }, "Invalid entry for key prospect_or_customer"],
    [{ email: "abc123" }, "The provided email is invalid"],
  ] as const) {
    await refused(identify(traits)).toThrow(message);
  }
});

test("MAUTIC checks the e-mail with RudderStack's rule, validator.js's isEmail (issue 50)", async () => {
  // The event that showed it: an e-mail starting with a dot is refused there, before any lookup.
  const from = mt.received.length;
  await refused(identify({ email: ".vanderberg@example.com", firstName: "Vera" })).toThrow("The provided email is invalid");
  for (const email of ["vanderberg.@example.com", "van..derberg@example.com", "a@b.c", "a@example.com.", "a@-example.com", "Vera <v@example.com>", "v@[10.0.0.1]"]) {
    await refused(identify({ email })).toThrow("The provided email is invalid");
  }
  // An e-mail that is no text is refused too (validator throws for it there).
  await refused(identify({ email: 12345 })).toThrow("The provided email is invalid");
  await refused(identify({ email: ["v@example.com"] })).toThrow("The provided email is invalid");
  expect(mt.calls(from)).toEqual([]);
  // Addresses validator takes, which a pattern of letters, digits and a 2–3 letter TLD would not.
  for (const email of ["o'hara@example.museum", "vera+tag@example.co.uk", "jürgen@exämple.de", '"vera van"@example.com', "v@xn--p1ai.xn--p1ai"]) {
    const { requests } = await run(identify({ email }));
    expect(requests[0]!.body.JSON).toMatchObject({ email });
  }
});

const group = (traits: Record<string, unknown>, extra: Partial<SluiceEvent> = {}): SluiceEvent => ({
  type: "group",
  messageId: "m",
  userId: "user123",
  groupId: "17",
  context: { externalId: [{ type: "mauticContactId", id: "246" }] },
  traits,
  ...extra,
});

test("MAUTIC group of the contact named in externalId → POST /{segments|campaigns|companies}/{groupId}/contact/{id}/{add|remove}, no lookup", async () => {
  const { requests, calls } = await run(group({ lastName: "garwal", type: "Segments", operation: "remove" }), ctx({ lookUpField: "lastName" }));
  expect(calls).toEqual([]);
  expect(requests).toEqual([{ ...jsonRequest("POST", `${API}/segments/17/contact/246/remove`, {}, HEADERS) }]);
  expect((await run(group({ type: "companies" }))).requests[0]!.endpoint).toBe(`${API}/companies/17/contact/246/add`);
  await refused(group({ type: "Segments" }, { groupId: undefined })).toThrow("`groupId` is missing in the event");
  await refused(group({})).toThrow("`type` is missing in the traits");
  await refused(group({ type: "Alias" })).toThrow('Grouping type "alias" is not supported. Only "Segments", "Companies", and "Campaigns" are supported');
  await refused(group({ type: "segments", operation: "toggle" })).toThrow('Invalid value specified for operation "toggle". Only "add" and "remove" are supported');
  // The type is read from the event's traits object (traits, else context.traits) as a whole.
  await refused({ type: "group", messageId: "m", groupId: "17", traits: { name: "x" }, context: { traits: { type: "segments" } } }).toThrow("`type` is missing in the traits");
});

test("MAUTIC group without a contact id: the contact is looked up, and exactly one must be found (RudderStack's errors otherwise)", async () => {
  const id = mt.addContact({ email: "member@example.com" });
  const lookedUp = await run(group({ type: "Companies" }, { groupId: "20", context: { traits: { email: "member@example.com" } } }));
  expect(lookedUp.calls).toEqual(["GET /api/contacts?email=member@example.com"]);
  expect(lookedUp.requests[0]!.endpoint).toBe(`${API}/companies/20/contact/${id}/add`);
  mt.addContact({ lastname: "kumar" });
  mt.addContact({ lastname: "kumar" });
  await refused(group({ lastName: "kumar", type: "Campaigns" }, { context: {} }), ctx({ lookUpField: "lastName" })).toThrow("Found more than one contact on lookup");
  await refused(group({ lastName: "Singh", type: "Campaigns" }, { context: {} }), ctx({ lookUpField: "lastName" })).toThrow("Could not find any contact ID on lookup");
  await refused(group({ type: "Campaigns" }, { context: {} })).toThrow("Could not find any contact ID on lookup");
});

// ---- through a real Sluice --------------------------------------------------------------------

let s: TestServer;
beforeAll(async () => {
  s = await startSluice({ args: ["--destination-base-url", `MAUTIC=${mt.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  mt.stop();
  cleanup(s.dataDir);
});

async function connected(config: Record<string, any> = CONFIG) {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: `mautic-${crypto.randomUUID().slice(0, 6)}`, type: "MAUTIC", config, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  return { src, dst: dst.json };
}

test("MAUTIC through the pipeline: identify and group look the contact up, then reach the stand-in with Basic auth, in order", async () => {
  const { src } = await connected();
  const id = mt.addContact({ email: "ada@example.com" });
  const from = mt.received.length;
  const batch = [
    { type: "identify", userId: "u-1", traits: { email: "ada@example.com", firstName: "Ada" } },
    { type: "group", userId: "u-1", groupId: "3", traits: { type: "segments", email: "ada@example.com" } },
  ];
  expect((await sendEvent(s.url, src.writeKey, "batch", { batch })).status).toBe(200);
  await waitFor(() => mt.calls(from).includes(`POST /api/segments/3/contact/${id}/add`), { what: "the segment call" });
  expect(mt.calls(from)).toEqual([
    "GET /api/contacts?email=ada@example.com",
    `PATCH /api/contacts/${id}/edit`,
    "GET /api/contacts?email=ada@example.com",
    `POST /api/segments/3/contact/${id}/add`,
  ]);
  expect(mt.received.at(-3)!.body).toMatchObject({ email: "ada@example.com", firstname: "Ada" });
  expect(mt.st.memberships).toContain(`segments/3/${id}`);
});

test("MAUTIC through the pipeline: a contact search answered 503 is retried, and the event then delivered", async () => {
  const { src, dst } = await connected();
  mt.once.push({ when: (r) => r.path === "/api/contacts" && r.query["where[0][val]"] === "retry@example.com", answer: () => new Response("maintenance", { status: 503 }) });
  const from = mt.received.length;
  expect((await sendEvent(s.url, src.writeKey, "identify", { userId: "u-2", traits: { email: "retry@example.com" } })).status).toBe(200);
  await waitFor(() => mt.calls(from).includes("POST /api/contacts/new"), { what: "the contact created after the retry" });
  expect(mt.calls(from)).toEqual(["GET /api/contacts?email=retry@example.com", "GET /api/contacts?email=retry@example.com", "POST /api/contacts/new"]);
  // The outcome is written after the request is answered: poll for it.
  const row = await waitFor(async () => (await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=succeeded`)).json.deliveries[0], { what: "the delivery succeeded" });
  expect(row).toMatchObject({ state: "succeeded", attempts: 2 });
});

test("MAUTIC through the pipeline: a contact search answered 401 aborts the delivery with RudderStack's error text", async () => {
  const { src, dst } = await connected({ ...CONFIG, password: "revoked" });
  const from = mt.received.length;
  expect((await sendEvent(s.url, src.writeKey, "identify", { userId: "u-3", traits: { email: "denied@example.com" } })).status).toBe(200);
  const row = await waitFor(async () => (await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=aborted`)).json.deliveries[0], { what: "the delivery aborted" });
  expect(row.lastError).toBe('Failed to fetch contacts: "{"errors":[{"message":"API authorization denied.","code":401,"type":"access_denied"}]}"');
  expect(mt.calls(from)).toEqual(["GET /api/contacts?email=denied@example.com"]);
});
