import { afterAll, beforeAll, expect, test } from "bun:test";
import { freshsales } from "../../src/destinations/freshsales";
import type { DestinationContext, SluiceEvent } from "../../src/destinations/types";
import { type SinkRequest, type TestServer, api, cleanup, createSource, jsonRequest, lookupContext, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

/**
 * A stand-in for Freshsales' CRM API (developers.freshworks.com/crm/api): contacts upserted by
 * e-mail (with their sales accounts on `?include=sales_accounts`), accounts upserted by name,
 * the sales-activity-type and lifecycle-stage selectors. A wrong API key is answered 401 as
 * Freshsales does (`{"login": "failed", "message": …}`, no `errors`). `once` answers the next
 * request matching a test with its own response first.
 */
function fakeFreshsales(apiKey = "dummyApiKey") {
  const st = {
    contacts: [] as Array<Record<string, any>>,
    accounts: [] as Array<Record<string, any>>,
    activityTypes: [{ id: 70000666879, name: "own-calender" }, { id: 70000663932, name: "Phone" }],
    stages: [{ id: 71012806409, name: "final Customer" }, { id: 71010794467, name: "Lead" }],
    nextId: 70054866600,
  };
  const once: Array<{ when: (r: SinkRequest) => boolean; answer: () => Response }> = [];
  const sink = startSink((req) => {
    const hook = once.findIndex((o) => o.when(req));
    if (hook >= 0) return once.splice(hook, 1)[0]!.answer();
    if (req.headers.authorization !== `Token token=${apiKey}`) return Response.json({ login: "failed", message: "Incorrect or expired API key" }, { status: 401 });
    const key = `${req.method} ${req.path.replace(/^\/crm\/sales\/api\//, "")}`;
    if (key === "GET selector/sales_activity_types") return Response.json({ sales_activity_types: st.activityTypes });
    if (key === "GET selector/lifecycle_stages") return Response.json({ lifecycle_stages: st.stages });
    if (key === "POST contacts/upsert") {
      const email = req.body.unique_identifier.emails;
      let contact = st.contacts.find((c) => c.emails === email);
      const created = !contact;
      if (!contact) st.contacts.push((contact = { id: st.nextId++, emails: email, sales_accounts: [] }));
      const { sales_accounts, ...fields } = req.body.contact;
      Object.assign(contact, fields);
      if (sales_accounts) contact.sales_accounts = sales_accounts.map((a: any) => ({ ...st.accounts.find((x) => x.id === a.id), is_primary: a.is_primary }));
      const { sales_accounts: accounts, ...shown } = contact;
      return Response.json({ contact: req.query.include === "sales_accounts" ? { ...shown, sales_accounts: accounts } : shown }, { status: created ? 201 : 200 });
    }
    if (key === "POST sales_accounts/upsert") {
      const name = req.body.unique_identifier.name;
      let account = st.accounts.find((a) => a.name === name);
      if (!account) st.accounts.push((account = { id: st.nextId++, name }));
      Object.assign(account, req.body.sales_account);
      return Response.json({ sales_account: account });
    }
    if (key === "POST sales_activities") return Response.json({ sales_activity: { id: st.nextId++, ...req.body.sales_activity } }, { status: 201 });
    return Response.json({ errors: { code: 404, message: ["Not found"] } }, { status: 404 });
  });
  const calls = (from = 0) => sink.received.slice(from).map((r) => `${r.method} ${r.path.replace(/^\/crm\/sales\/api\//, "")}${r.query.include ? `?include=${r.query.include}` : ""}`);
  return { ...sink, st, once, calls };
}

const fs = fakeFreshsales();
const ctx = (config: Record<string, any> = {}): DestinationContext =>
  lookupContext({ apiKey: "dummyApiKey", domain: "rudderstack-476952domain3105.myfreshworks.com", ...config }, fs.url);
const API = `${fs.url}/crm/sales/api`;
const HEADERS = { Authorization: "Token token=dummyApiKey", "Content-Type": "application/json" };
const ts = "2022-06-22T10:57:58Z";
/** Runs the transform and answers what it returned and which calls it made to the stand-in. */
async function run(event: SluiceEvent, c: DestinationContext = ctx()) {
  const from = fs.received.length;
  const requests = await freshsales.transform(event, c);
  return { requests, calls: fs.calls(from) };
}

const identify = (traits: Record<string, unknown>, extra: Partial<SluiceEvent> = {}): SluiceEvent => ({
  type: "identify",
  messageId: "ec5481b6",
  originalTimestamp: ts,
  anonymousId: "ea5cfab2-3961-4d8a-8187-3d1858c99099",
  context: { os: { name: "iOS" } },
  traits,
  ...extra,
});
const request = (endpoint: string, json: Record<string, unknown>, headers: Record<string, string> = HEADERS) => jsonRequest("POST", endpoint, json, headers);

test("FRESHSALES identify → POST <domain>/crm/sales/api/contacts/upsert with the contact and its e-mail as unique identifier, no lookup (RudderStack's fixture)", async () => {
  const event = identify({ email: "testuser@google.com", first_name: "Rk", last_name: "Mishra", mobileNumber: "1-926-555-9504", lifecycleStageId: 71010794467, phone: "9988776655", owner_id: "70000090119" });
  const { requests, calls } = await run(event);
  expect(calls).toEqual([]);
  expect(requests).toEqual([
    request(`${API}/contacts/upsert`, {
      contact: {
        emails: "testuser@google.com",
        last_name: "Mishra",
        created_at: ts,
        first_name: "Rk",
        updated_at: ts,
        external_id: "ea5cfab2-3961-4d8a-8187-3d1858c99099",
        work_number: "9988776655",
        mobile_number: "1-926-555-9504",
        lifecycle_stage_id: 71010794467,
      },
      unique_identifier: { emails: "testuser@google.com" },
    }),
  ]);
});

test("FRESHSALES identify: ids that are not numbers are left out; the address becomes one line; a bare account name gets Freshworks' domain", async () => {
  const [req] = (await run(identify({ email: "a@b.co", lifecycleStageId: "rudderSample", ownerId: "rudderSample", territoryId: "12" }))).requests;
  expect(req!.body.JSON.contact).not.toHaveProperty("lifecycle_stage_id");
  expect(req!.body.JSON.contact).not.toHaveProperty("owner_id");
  expect((req!.body.JSON.contact as any).territory_id).toBe(12);
  const address = { street: "1 Main St", city: "Pune", state: "MH", country: "IN", postalCode: "411001" };
  expect((await run(identify({ email: "a@b.co", address }))).requests[0]!.body.JSON.contact).toMatchObject({ address: "1 Main St Pune MH IN 411001", city: "Pune", state: "MH", country: "IN" });
  // identify needs no lookup, so a context without a lookup client (or base URL) does.
  const plain = { config: { apiKey: "k", domain: "acme" }, destination: { id: "d", name: "d", workspaceId: "w" } };
  expect((await freshsales.transform(identify({ email: "a@b.co" }), plain))[0]!.endpoint).toBe("https://acme.myfreshworks.com/crm/sales/api/contacts/upsert");
});

test("FRESHSALES identify takes the e-mail from traits or properties only, and without one fails with RudderStack's 'Missing required value from \"emailOnly\"'", async () => {
  await expect(freshsales.transform(identify({ first_name: "Rk", last_name: "Narayan", phone: "9988776655" }), ctx())).rejects.toThrow('Missing required value from "emailOnly"');
  // RudderStack's identify mapping never reads the e-mail from context.externalId.
  const external = identify({ first_name: "Rk" }, { context: { externalId: [{ type: "email", id: "ext@example.com" }] } });
  await expect(freshsales.transform(external, ctx())).rejects.toThrow('Missing required value from "emailOnly"');
  const fromProperties = (await run(identify({ first_name: "Rk" }, { properties: { email: "p@example.com" } }))).requests[0]!;
  expect(fromProperties.body.JSON.unique_identifier).toEqual({ emails: "p@example.com" });
});

const groupEvent = (email: string | undefined, traits: Record<string, unknown>): SluiceEvent => ({
  type: "group",
  messageId: "m",
  originalTimestamp: ts,
  anonymousId: "ea5cfab2-3961-4d8a-8187-3d1858c99090",
  context: { traits: email ? { email } : {} },
  traits: { groupType: "accounts", ...traits },
});

test("FRESHSALES group without a user e-mail → POST /sales_accounts/upsert by name, no lookup (RudderStack's fixture); the name is required", async () => {
  const event = groupEvent(undefined, { name: "div-quer", phone: "919191919191", numberOfEmployees: 51, annualRevenue: 1000, address: "Red Colony", city: "Lal colony", state: "Haryana" });
  const { requests, calls } = await run(event);
  expect(calls).toEqual([]);
  expect(requests).toEqual([
    request(`${API}/sales_accounts/upsert`, {
      unique_identifier: { name: "div-quer" },
      sales_account: { name: "div-quer", phone: "919191919191", number_of_employees: 51, annual_revenue: 1000, address: "", city: "Lal colony", state: "Haryana", created_at: ts, updated_at: ts },
    }),
  ]);
  const float = (await run(groupEvent(undefined, { name: "F", annualRevenue: "1000.5" }))).requests[0]!;
  expect((float.body.JSON.sales_account as any).annual_revenue).toBe(1000.5);
  await expect(freshsales.transform(groupEvent("a@b.co", { phone: "1" }), ctx())).rejects.toThrow('Missing required value from "name"');
});

test("FRESHSALES group with the user's e-mail: the contact's accounts are read, the account upserted for its id, and the contact upserted with both (the new one not primary)", async () => {
  fs.st.accounts.push({ id: 70003771198, name: "div-quer" });
  fs.st.contacts.push({ id: 70054866612, emails: "testuser@google.com", sales_accounts: [{ id: 70003771198, name: "div-quer", is_primary: true }] });
  const event = groupEvent("testuser@google.com", { name: "Mark Twain", phone: "919191919191", numberOfEmployees: 51, annualRevenue: 1000, address: "Red Colony", city: "Colony", state: "Haryana" });
  const { requests, calls } = await run(event);
  expect(calls).toEqual(["POST contacts/upsert?include=sales_accounts", "POST sales_accounts/upsert"]);
  const [contactCall, accountCall] = fs.received.slice(-2);
  expect(contactCall!.body).toEqual({ unique_identifier: { emails: "testuser@google.com" }, contact: { emails: "testuser@google.com" } });
  expect(contactCall!.headers.authorization).toBe("Token token=dummyApiKey");
  expect(accountCall!.body).toEqual({
    unique_identifier: { name: "Mark Twain" },
    sales_account: { name: "Mark Twain", phone: "919191919191", number_of_employees: 51, annual_revenue: 1000, address: "", city: "Colony", state: "Haryana", created_at: ts, updated_at: ts },
  });
  const account = fs.st.accounts.find((a) => a.name === "Mark Twain")!;
  expect(requests).toEqual([
    request(`${API}/contacts/upsert`, {
      contact: { sales_accounts: [{ id: 70003771198, name: "div-quer", is_primary: true }, { id: account.id, is_primary: false }] },
      unique_identifier: { emails: "testuser@google.com" },
    }),
  ]);
  // A contact with no account yet gets this one as its primary account.
  const fresh = await run(groupEvent("first@example.com", { name: "First Co" }));
  const first = fs.st.accounts.find((a) => a.name === "First Co")!;
  expect(fresh.requests[0]!.body.JSON.contact).toEqual({ sales_accounts: [{ id: first.id, is_primary: true }] });
});

test("FRESHSALES group lookups that fail abort in RudderStack's words, ending in Freshsales' errors.message", async () => {
  const event = groupEvent("g@example.com", { name: "Dup Co" });
  fs.once.push({ when: (r) => r.path.endsWith("/sales_accounts/upsert"), answer: () => Response.json({ errors: { code: 400, message: ["Sales Account name already exists"] } }, { status: 400 }) });
  await expect(freshsales.transform(event, ctx())).rejects.toThrow("failed to create/update group Sales Account name already exists");
  fs.once.push({ when: (r) => r.path.endsWith("/sales_accounts/upsert"), answer: () => Response.json({ sales_account: {} }) });
  await expect(freshsales.transform(event, ctx())).rejects.toThrow("Fails in fetching accountId.");
  fs.once.push({ when: (r) => r.path.endsWith("/contacts/upsert"), answer: () => Response.json({ contact: { id: 1 } }) });
  await expect(freshsales.transform(event, ctx())).rejects.toThrow("Fails in fetching user accountDetails");
  await expect(freshsales.transform(event, ctx({ apiKey: "revoked" }))).rejects.toThrow(/^failed to fetch user accountDetails $/);
});

const DOMAIN = "domain-rudder.myfreshworks.com";
const fixtureTrack = (event: unknown, properties: Record<string, unknown>, extra: Record<string, any> = {}): SluiceEvent => ({
  type: "track",
  messageId: "dd46338d-5f83-493b-bd28-3b48f55d0be8",
  originalTimestamp: "2020-10-20T08:14:28.778Z",
  anonymousId: "my-anonymous-id-new",
  userId: "newUserIdAlias",
  event: event as string,
  properties,
  ...extra,
  context: { traits: { name: "Shehan Study", email: "test@rudderstack.com", createdAt: 1599264000 }, ...extra.context },
});
const activityProps = { title: "new Contact", startDate: "2021-05-04T17:00:00+05:30", endDate: "2022-06-04T17:30:00+05:30", ownerId: "70054866612" };
const activityOut = {
  title: "new Contact",
  created_at: "2020-10-20T08:14:28.778Z",
  end_date: "2022-06-04T17:30:00+05:30",
  owner_id: "70054866612",
  start_date: "2021-05-04T17:00:00+05:30",
  updated_at: "2020-10-20T08:14:28.778Z",
  targetable_type: "Contact",
};

test("FRESHSALES sales activity with type id and targetable id → POST /sales_activities as it is, no lookup (RudderStack's fixture)", async () => {
  const event = fixtureTrack("sales_activity", { salesActivityTypeId: "70000663932", ...activityProps }, { context: { externalId: { id: "70052305908", type: "Contact" } } });
  const { requests, calls } = await run(event, ctx({ domain: DOMAIN }));
  expect(calls).toEqual([]);
  expect(requests).toEqual([request(`${API}/sales_activities`, { sales_activity: { ...activityOut, targetable_id: "70052305908", sales_activity_type_id: "70000663932" } })]);
});

test("FRESHSALES sales activity named by type, for the contact of the event's e-mail: the type list and the contact are looked up for their ids", async () => {
  const event = fixtureTrack("test", { salesActivityName: "own-calender", ...activityProps }, { context: { externalId: { type: "Contact" } } });
  const { requests, calls } = await run(event, ctx({ domain: DOMAIN, rudderEventsToFreshsalesEvents: [{ from: "test", to: "sales_activity" }] }));
  expect(calls).toEqual(["GET selector/sales_activity_types", "POST contacts/upsert"]);
  expect(fs.received.at(-1)!.body).toEqual({ unique_identifier: { emails: "test@rudderstack.com" }, contact: { emails: "test@rudderstack.com" } });
  const contact = fs.st.contacts.find((c) => c.emails === "test@rudderstack.com")!;
  expect(requests).toEqual([
    request(`${API}/sales_activities`, { sales_activity: { ...activityOut, sales_activity_name: "own-calender", targetable_id: contact.id, sales_activity_type_id: 70000666879 } }),
  ]);
  // A type id given: only the contact is looked up. A targetable id given: only the type.
  const byId = await run(fixtureTrack("sales_activity", { salesActivityTypeId: "70000663932", ...activityProps }, { context: { externalId: { type: "Contact" } } }));
  expect(byId.calls).toEqual(["POST contacts/upsert"]);
  expect(byId.requests[0]!.body.JSON.sales_activity).toMatchObject({ targetable_id: contact.id, sales_activity_type_id: "70000663932" });
  const byTarget = await run(fixtureTrack("sales_activity", { salesActivityName: "Phone", ...activityProps }, { context: { externalId: { id: 9, type: "Deal" } } }));
  expect(byTarget.calls).toEqual(["GET selector/sales_activity_types"]);
  expect(byTarget.requests[0]!.body.JSON.sales_activity).toMatchObject({ targetable_id: 9, sales_activity_type_id: 70000663932 });
});

test("FRESHSALES sales activity refusals in RudderStack's words and order", async () => {
  const contact = { context: { externalId: { type: "Contact" } } };
  const refused = (event: SluiceEvent, c = ctx({ domain: DOMAIN })) => expect(freshsales.transform(event, c)).rejects;
  await refused(fixtureTrack("sales_activity", { product_name: "Shirt", brand: "Wrogn" })).toThrow('Missing required value from "properties.title"');
  await refused(fixtureTrack("sales_activity", { product_name: "Shirt", ...activityProps }, contact)).toThrow("Either of sales activity name or sales activity type id is required. Aborting!");
  await refused(fixtureTrack("sales_activity", { salesActivityName: "own-calender", ...activityProps }, { context: { externalId: { type: "Deal" } } })).toThrow("targetable_id is required. Aborting!");
  const noEmail = fixtureTrack("sales_activity", { salesActivityName: "own-calender", ...activityProps }, contact);
  noEmail.context.traits = { name: "Shehan Study" };
  await refused(noEmail).toThrow("Either of email or targetable_id is required for creating sales activity. Aborting!");
  await refused(fixtureTrack("sales_activity", { salesActivityName: "own-list", ...activityProps }, contact)).toThrow("sales Activity own-list doesn't exists. Aborting!");
  fs.once.push({ when: (r) => r.path.endsWith("/sales_activity_types"), answer: () => Response.json({ sales_activity_types: "none" }) });
  await refused(fixtureTrack("sales_activity", { salesActivityName: "own-calender", ...activityProps }, contact)).toThrow("Unable to fetch correct list of sales activity.");
  fs.once.push({ when: (r) => r.path.endsWith("/contacts/upsert"), answer: () => Response.json({ contact: {} }) });
  await refused(fixtureTrack("sales_activity", { salesActivityTypeId: 1, ...activityProps }, contact)).toThrow("Failed in fetching userId. Aborting!");
  fs.once.push({ when: (r) => r.path.endsWith("/contacts/upsert"), answer: () => Response.json({ errors: { code: 400, message: "Invalid email" } }, { status: 400 }) });
  await refused(fixtureTrack("sales_activity", { salesActivityTypeId: 1, ...activityProps }, contact)).toThrow("failed to fetch Contact details Invalid email");
  await refused(fixtureTrack("sales_activity", { salesActivityName: "own-calender", ...activityProps }, contact), ctx({ domain: DOMAIN, apiKey: "revoked" })).toThrow(/^failed to fetch sales activities details $/);
});

test("FRESHSALES lifecycle stage by id (e-mail from properties), or by name through the stages list; refusals in RudderStack's words", async () => {
  const props = { email: "jamessampleton3@gmail.com", lifecycleStageId: "71012139273", ...activityProps, targetableType: "Contact" };
  const event = fixtureTrack("lifecycle_stage", props);
  event.context.traits = { name: "Shehan Study" };
  const byId = await run(event, ctx({ domain: DOMAIN }));
  expect(byId.calls).toEqual([]);
  expect(byId.requests).toEqual([request(`${API}/contacts/upsert`, { contact: { lifecycle_stage_id: "71012139273" }, unique_identifier: { emails: "jamessampleton3@gmail.com" } })]);

  const { lifecycleStageId: _l, ...noStage } = props;
  const byName = await run({ ...event, properties: { ...noStage, email: "jamessampleton6@gmail.com", lifecycleStageName: "final Customer" } }, ctx({ domain: DOMAIN }));
  expect(byName.calls).toEqual(["GET selector/lifecycle_stages"]);
  expect(byName.requests).toEqual([request(`${API}/contacts/upsert`, { contact: { lifecycle_stage_id: 71012806409 }, unique_identifier: { emails: "jamessampleton6@gmail.com" } })]);

  const refused = (properties: Record<string, unknown>) => expect(freshsales.transform({ ...event, properties }, ctx({ domain: DOMAIN }))).rejects;
  const { email: _e, ...noEmail } = props;
  await refused(noEmail).toThrow("email is required for updating life Cycle Stages. Aborting!");
  await refused(noStage).toThrow("Either of lifecycleStageName or lifecycleStageId is required. Aborting!");
  await refused({ ...noStage, lifecycleStageName: "final ExCustomer" }).toThrow("failed to fetch lifeCycleStages with final ExCustomer");
  fs.once.push({ when: (r) => r.path.endsWith("/lifecycle_stages"), answer: () => Response.json({}) });
  await refused({ ...noStage, lifecycleStageName: "Lead" }).toThrow("Unable to fetch correct list of lifecycle stages");
});

test("FRESHSALES track mapped through rudderEventsToFreshsalesEvents (case-insensitive) to several Freshsales events → one request each; other names refused", async () => {
  const event = fixtureTrack("Subscribed", { lifecycleStageName: "Lead", salesActivityTypeId: 5, ...activityProps }, { context: { externalId: { id: 7, type: "Contact" } } });
  const mapping = [{ from: "subscribed", to: "lifecycle_stage" }, { from: "SUBSCRIBED", to: "sales_activity" }, { from: "other", to: "sales_activity" }];
  const { requests, calls } = await run(event, ctx({ rudderEventsToFreshsalesEvents: mapping }));
  expect(calls).toEqual(["GET selector/lifecycle_stages"]);
  expect(requests.map((r) => r.endpoint)).toEqual([`${API}/contacts/upsert`, `${API}/sales_activities`]);
  expect(requests[0]!.body.JSON.contact).toEqual({ lifecycle_stage_id: 71010794467 });
  await expect(freshsales.transform(fixtureTrack("Add to Cart", { product_name: "Shirt" }), ctx())).rejects.toThrow("event name Add to Cart is not supported. Aborting!");
  await expect(freshsales.transform(fixtureTrack({ name: "Add to Cart" }, {}), ctx())).rejects.toThrow("Event is a required field and should be a string");
});

test("FRESHSALES RudderStack router fixture: identify with an address object in context traits", async () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m",
    userId: "user113",
    timestamp: "2022-08-30T11:28:43.647+05:30",
    originalTimestamp: "2022-08-30T11:28:48.429+05:30",
    context: {
      os: { name: "android" },
      traits: { address: { city: "city", country: "country", postalCode: "postalCode", state: "state", street: "street" }, email: "user112@mail.com", firstName: "sample1", lastName: "user1" },
    },
  };
  expect((await run(event, ctx({ apiKey: "hrkjfergeferf" }))).requests).toEqual([
    request(
      `${API}/contacts/upsert`,
      {
        contact: {
          emails: "user112@mail.com",
          first_name: "sample1",
          last_name: "user1",
          external_id: "user113",
          address: "street city state country postalCode",
          city: "city",
          state: "state",
          country: "country",
          zipcode: "postalCode",
          created_at: "2022-08-30T11:28:43.647+05:30",
          updated_at: "2022-08-30T11:28:43.647+05:30",
        },
        unique_identifier: { emails: "user112@mail.com" },
      },
      { Authorization: "Token token=hrkjfergeferf", "Content-Type": "application/json" },
    ),
  ]);
});

test("FRESHSALES RudderStack fixture: missing, unsupported and upper-case message types", async () => {
  const { type: _t, ...typeless } = identify({ email: "a@b.co" });
  await expect(freshsales.transform(typeless as SluiceEvent, ctx())).rejects.toThrow("Message Type is not present. Aborting message.");
  await expect(freshsales.transform({ type: "page", messageId: "m", userId: "u", event: "lifecycle_stage" }, ctx())).rejects.toThrow("message type page not supported");
  await expect(freshsales.transform({ type: "Alias", messageId: "m", userId: "u" }, ctx())).rejects.toThrow("message type alias not supported");
  expect((await freshsales.transform({ ...identify({ email: "a@b.co" }), type: "IDENTIFY" }, ctx()))[0]!.endpoint).toBe(`${API}/contacts/upsert`);
});

// ---- through a real Sluice --------------------------------------------------------------------

const live = fakeFreshsales("fs-key");
let s: TestServer;
beforeAll(async () => {
  s = await startSluice({ args: ["--destination-base-url", `FRESHSALES=${live.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  live.stop();
  fs.stop();
  cleanup(s.dataDir);
});

async function connected(apiKey = "fs-key") {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: `fs-${crypto.randomUUID().slice(0, 6)}`, type: "FRESHSALES", config: { apiKey, domain: "acme.myfreshworks.com" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  return { src, dst: dst.json };
}
const stageEvent = (email: string) => ({ userId: "u-7", event: "lifecycle_stage", properties: { email, lifecycleStageName: "final Customer" } });

test("FRESHSALES through the pipeline: an identify reaches the stand-in as a contact upsert with the token header", async () => {
  const { src } = await connected();
  expect((await sendEvent(s.url, src.writeKey, "identify", { userId: "u-7", traits: { email: "ada@example.com", firstName: "Ada" } })).status).toBe(200);
  const got = await waitFor(() => live.received.find((r) => r.path === "/crm/sales/api/contacts/upsert" && r.body.unique_identifier.emails === "ada@example.com"), { what: "the contact upsert" });
  expect(got.headers.authorization).toBe("Token token=fs-key");
  expect(got.body.contact).toMatchObject({ emails: "ada@example.com", first_name: "Ada", external_id: "u-7" });
});

test("FRESHSALES through the pipeline: a lifecycle stage named by the event is looked up, then the contact upserted with its id", async () => {
  const { src } = await connected();
  const from = live.received.length;
  expect((await sendEvent(s.url, src.writeKey, "track", stageEvent("stage@example.com"))).status).toBe(200);
  await waitFor(() => live.calls(from).includes("POST contacts/upsert"), { what: "the contact upsert" });
  expect(live.calls(from)).toEqual(["GET selector/lifecycle_stages", "POST contacts/upsert"]);
  expect(live.received.at(-1)!.body).toEqual({ contact: { lifecycle_stage_id: 71012806409 }, unique_identifier: { emails: "stage@example.com" } });
});

test("FRESHSALES through the pipeline: a stage list answered 503 is retried, and the event then delivered", async () => {
  const { src, dst } = await connected();
  live.once.push({ when: (r) => r.path.endsWith("/selector/lifecycle_stages"), answer: () => new Response("busy", { status: 503 }) });
  const from = live.received.length;
  expect((await sendEvent(s.url, src.writeKey, "track", stageEvent("retry@example.com"))).status).toBe(200);
  await waitFor(() => live.received.some((r) => r.path.endsWith("/contacts/upsert") && r.body.unique_identifier.emails === "retry@example.com"), { what: "the upsert after the retry" });
  expect(live.calls(from)).toEqual(["GET selector/lifecycle_stages", "GET selector/lifecycle_stages", "POST contacts/upsert"]);
  // The outcome is written after the request is answered: poll for it.
  const row = await waitFor(async () => (await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=succeeded`)).json.deliveries[0], { what: "the delivery succeeded" });
  expect(row).toMatchObject({ state: "succeeded", attempts: 2 });
});

test("FRESHSALES through the pipeline: a stage list answered 401 aborts the delivery with RudderStack's error text", async () => {
  const { src, dst } = await connected("revoked");
  expect((await sendEvent(s.url, src.writeKey, "track", stageEvent("denied@example.com"))).status).toBe(200);
  const row = await waitFor(async () => (await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=aborted`)).json.deliveries[0], { what: "the delivery aborted" });
  expect(row.lastError).toBe("failed to fetch lifecycle_stages details ");
  expect(live.received.some((r) => r.path.endsWith("/contacts/upsert") && r.body.unique_identifier?.emails === "denied@example.com")).toBe(false);
});
