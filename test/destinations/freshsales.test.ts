import { afterAll, beforeAll, expect, test } from "bun:test";
import { freshsales } from "../../src/destinations/freshsales";
import type { DestinationContext, SluiceEvent } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

const ctx = (config: Record<string, any> = {}, baseUrl?: string): DestinationContext => ({
  config: { apiKey: "dummyApiKey", domain: "rudderstack-476952domain3105.myfreshworks.com", ...config },
  destination: { id: "dest-fs", name: "Freshsales", workspaceId: "ws-1" },
  baseUrl,
});
const API = "https://rudderstack-476952domain3105.myfreshworks.com/crm/sales/api";
const HEADERS = { Authorization: "Token token=dummyApiKey", "Content-Type": "application/json" };
const ts = "2022-06-22T10:57:58Z";

const identify = (traits: Record<string, unknown>): SluiceEvent => ({
  type: "identify",
  messageId: "ec5481b6",
  originalTimestamp: ts,
  anonymousId: "ea5cfab2-3961-4d8a-8187-3d1858c99099",
  context: { os: { name: "iOS" } },
  traits,
});

test("FRESHSALES identify → POST <domain>/crm/sales/api/contacts/upsert with the contact and its e-mail as unique identifier (RudderStack's fixture)", () => {
  const event = identify({ email: "testuser@google.com", first_name: "Rk", last_name: "Mishra", mobileNumber: "1-926-555-9504", lifecycleStageId: 71010794467, phone: "9988776655", owner_id: "70000090119" });
  expect(freshsales.transform(event, ctx())).toEqual([
    {
      version: "1",
      type: "REST",
      method: "POST",
      endpoint: `${API}/contacts/upsert`,
      headers: HEADERS,
      params: {},
      body: {
        JSON: {
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
        },
        JSON_ARRAY: {},
        XML: {},
        FORM: {},
      },
      files: {},
    },
  ]);
});

test("FRESHSALES identify: ids that are not numbers are left out; no e-mail → RudderStack's message; the address becomes one line", () => {
  const [req] = freshsales.transform(identify({ email: "a@b.co", lifecycleStageId: "rudderSample", ownerId: "rudderSample", territoryId: "12" }), ctx());
  expect(req!.body.JSON.contact).not.toHaveProperty("lifecycle_stage_id");
  expect(req!.body.JSON.contact).not.toHaveProperty("owner_id");
  expect((req!.body.JSON.contact as any).territory_id).toBe(12);
  expect(() => freshsales.transform(identify({ first_name: "Rk" }), ctx())).toThrow('Missing required value from "email"');
  const address = { street: "1 Main St", city: "Pune", state: "MH", country: "IN", postalCode: "411001" };
  expect(freshsales.transform(identify({ email: "a@b.co", address }), ctx())[0]!.body.JSON.contact).toMatchObject({ address: "1 Main St Pune MH IN 411001", city: "Pune", state: "MH", country: "IN" });
  // A bare account name is completed with Freshworks' domain.
  expect(freshsales.transform(identify({ email: "a@b.co" }), ctx({ domain: "acme" }))[0]!.endpoint).toBe("https://acme.myfreshworks.com/crm/sales/api/contacts/upsert");
});

test("FRESHSALES group without a user e-mail → POST /sales_accounts/upsert by name", () => {
  const event: SluiceEvent = {
    type: "group",
    messageId: "m",
    userId: "u",
    groupId: "g",
    timestamp: ts,
    traits: { name: "Mark Twain", phone: "919191919191", numberOfEmployees: 51, annualRevenue: "1000.5", address: "Red Colony", city: "Colony", state: "Haryana" },
  };
  const [req] = freshsales.transform(event, ctx());
  expect(req!.endpoint).toBe(`${API}/sales_accounts/upsert`);
  expect(req!.headers).toEqual(HEADERS);
  expect(req!.body.JSON).toEqual({
    unique_identifier: { name: "Mark Twain" },
    sales_account: { name: "Mark Twain", phone: "919191919191", number_of_employees: 51, annual_revenue: 1000.5, address: "", city: "Colony", state: "Haryana", created_at: ts, updated_at: ts },
  });
  expect(() => freshsales.transform({ ...event, traits: { phone: "1" } }, ctx())).toThrow('Missing required value from "name"');
});

test("FRESHSALES track: lifecycle_stage and sales_activity (directly or through rudderEventsToFreshsalesEvents); others refused", () => {
  const track = (event: string, properties: Record<string, unknown>, extra: Record<string, unknown> = {}): SluiceEvent => ({
    type: "track",
    messageId: "m",
    userId: "u",
    timestamp: ts,
    event,
    properties,
    context: { traits: { email: "jamessampleton3@gmail.com" } },
    ...extra,
  });
  const [stage] = freshsales.transform(track("Lifecycle Stage", { lifecycleStageId: 71010794467 }), ctx());
  expect(stage!.endpoint).toBe(`${API}/contacts/upsert`);
  expect(stage!.body.JSON).toEqual({ contact: { lifecycle_stage_id: 71010794467 }, unique_identifier: { emails: "jamessampleton3@gmail.com" } });

  const activity = track(
    "sales_activity",
    { title: "Call", salesActivityTypeId: 70000666879, startDate: "2022-06-04T16:00:00+05:30", endDate: "2022-06-04T17:00:00+05:30", ownerId: 70000090119 },
    { context: { externalId: { type: "Contact", id: 70042006456 } } },
  );
  const [sa] = freshsales.transform(activity, ctx());
  expect(sa!.endpoint).toBe(`${API}/sales_activities`);
  expect(sa!.body.JSON).toEqual({
    sales_activity: {
      title: "Call",
      sales_activity_type_id: 70000666879,
      start_date: "2022-06-04T16:00:00+05:30",
      end_date: "2022-06-04T17:00:00+05:30",
      owner_id: 70000090119,
      targetable_id: 70042006456,
      targetable_type: "Contact",
      created_at: ts,
      updated_at: ts,
    },
  });

  const mapped = freshsales.transform(track("Subscribed", { lifecycleStageId: 5 }), ctx({ rudderEventsToFreshsalesEvents: [{ from: "subscribed", to: "lifecycle_stage" }] }));
  expect(mapped).toHaveLength(1);
  expect(mapped[0]!.body.JSON.contact).toEqual({ lifecycle_stage_id: 5 });

  expect(() => freshsales.transform(track("Bought", {}), ctx())).toThrow("event name Bought is not supported. Aborting!");
  expect(() => freshsales.transform(track("lifecycle_stage", {}), ctx())).toThrow("Either of lifecycleStageName or lifecycleStageId is required. Aborting!");
  expect(() => freshsales.transform(track("sales_activity", { title: "Call" }), ctx())).toThrow('Missing required value from "properties.startDate"');
  // A name instead of an id needs a lookup at Freshsales, which Sluice does not make.
  expect(() => freshsales.transform(track("lifecycle_stage", { lifecycleStageName: "Lead" }), ctx())).toThrow("Sluice does not look lifecycle stages up by name");
  expect(() => freshsales.transform({ type: "page", messageId: "m", userId: "u", name: "Home" }, ctx())).toThrow("message type page not supported");
});

const DOMAIN = "domain-rudder.myfreshworks.com";
const FIXTURE_API = `https://${DOMAIN}/crm/sales/api`;
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

test("FRESHSALES RudderStack fixture: identify with ids that do not convert leaves them out (Identify call with wrong data type)", () => {
  const event = identify({ email: "testuser@google.com", first_name: "Rk", last_name: "Mishra", mobileNumber: "1-926-555-9504", lifecycleStageId: "rudderSample", phone: "9988776655", ownerId: "rudderSample" });
  expect(freshsales.transform(event, ctx())[0]!.body.JSON).toEqual({
    contact: {
      emails: "testuser@google.com",
      first_name: "Rk",
      last_name: "Mishra",
      work_number: "9988776655",
      external_id: "ea5cfab2-3961-4d8a-8187-3d1858c99099",
      mobile_number: "1-926-555-9504",
      created_at: ts,
      updated_at: ts,
    },
    unique_identifier: { emails: "testuser@google.com" },
  });
  expect(() => freshsales.transform(identify({ first_name: "Rk", last_name: "Narayan", phone: "9988776655" }), ctx())).toThrow('Missing required value from "email"');
});

test("FRESHSALES RudderStack router fixture: identify with an address object in context traits", () => {
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
  const c = ctx({ apiKey: "hrkjfergeferf", domain: "rudderstack-479541159204968909.myfreshworks.com" });
  expect(freshsales.transform(event, c)).toEqual([
    {
      version: "1",
      type: "REST",
      method: "POST",
      endpoint: "https://rudderstack-479541159204968909.myfreshworks.com/crm/sales/api/contacts/upsert",
      headers: { Authorization: "Token token=hrkjfergeferf", "Content-Type": "application/json" },
      params: {},
      body: {
        JSON: {
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
        JSON_ARRAY: {},
        XML: {},
        FORM: {},
      },
      files: {},
    },
  ]);
});

test("FRESHSALES RudderStack fixture: group without a user e-mail upserts the account; its name is required", () => {
  const group: SluiceEvent = {
    type: "group",
    messageId: "m",
    originalTimestamp: ts,
    anonymousId: "ea5cfab2-3961-4d8a-8187-3d1858c99090",
    context: { traits: {} },
    traits: { groupType: "accounts", name: "div-quer", phone: "919191919191", numberOfEmployees: 51, annualRevenue: 1000, address: "Red Colony", city: "Lal colony", state: "Haryana" },
  };
  expect(freshsales.transform(group, ctx({ domain: DOMAIN }))).toEqual([
    {
      version: "1",
      type: "REST",
      method: "POST",
      endpoint: `${FIXTURE_API}/sales_accounts/upsert`,
      headers: HEADERS,
      params: {},
      body: {
        JSON: {
          unique_identifier: { name: "div-quer" },
          sales_account: { name: "div-quer", phone: "919191919191", number_of_employees: 51, annual_revenue: 1000, address: "", city: "Lal colony", state: "Haryana", created_at: ts, updated_at: ts },
        },
        JSON_ARRAY: {},
        XML: {},
        FORM: {},
      },
      files: {},
    },
  ]);
  const { name: _n, ...nameless } = group.traits;
  expect(() => freshsales.transform({ ...group, traits: nameless }, ctx({ domain: DOMAIN }))).toThrow('Missing required value from "name"');
});

test("FRESHSALES RudderStack fixture: missing, unsupported and upper-case message types", () => {
  const { type: _t, ...typeless } = identify({ email: "a@b.co" });
  expect(() => freshsales.transform(typeless as SluiceEvent, ctx())).toThrow("Message Type is not present. Aborting message.");
  expect(() => freshsales.transform({ type: "page", messageId: "m", userId: "u", event: "lifecycle_stage" }, ctx())).toThrow("message type page not supported");
  expect(() => freshsales.transform({ type: "Alias", messageId: "m", userId: "u" }, ctx())).toThrow("message type alias not supported");
  expect(freshsales.transform({ ...identify({ email: "a@b.co" }), type: "IDENTIFY" }, ctx())[0]!.endpoint).toBe(`${API}/contacts/upsert`);
});

test("FRESHSALES RudderStack fixture: track errors — event not a string, unsupported name, missing title", () => {
  expect(() => freshsales.transform(fixtureTrack({ name: "Add to Cart" }, { product_name: "Shirt" }), ctx({ domain: DOMAIN }))).toThrow("Event is a required field and should be a string");
  expect(() => freshsales.transform(fixtureTrack("Add to Cart", { product_name: "Shirt" }), ctx({ domain: DOMAIN }))).toThrow("event name Add to Cart is not supported. Aborting!");
  expect(() => freshsales.transform(fixtureTrack("sales_activity", { product_name: "Shirt", brand: "Wrogn" }), ctx({ domain: DOMAIN }))).toThrow('Missing required value from "properties.title"');
});

test("FRESHSALES RudderStack fixture: sales activity with type id and targetable id (updated sales activity)", () => {
  const event = fixtureTrack("sales_activity", { salesActivityTypeId: "70000663932", ...activityProps }, { context: { externalId: { id: "70052305908", type: "Contact" } } });
  expect(freshsales.transform(event, ctx({ domain: DOMAIN }))).toEqual([
    {
      version: "1",
      type: "REST",
      method: "POST",
      endpoint: `${FIXTURE_API}/sales_activities`,
      headers: HEADERS,
      params: {},
      body: {
        JSON: {
          sales_activity: {
            title: "new Contact",
            created_at: "2020-10-20T08:14:28.778Z",
            end_date: "2022-06-04T17:30:00+05:30",
            owner_id: "70054866612",
            start_date: "2021-05-04T17:00:00+05:30",
            updated_at: "2020-10-20T08:14:28.778Z",
            targetable_id: "70052305908",
            targetable_type: "Contact",
            sales_activity_type_id: "70000663932",
          },
        },
        JSON_ARRAY: {},
        XML: {},
        FORM: {},
      },
      files: {},
    },
  ]);
});

test("FRESHSALES RudderStack fixture: sales activity refusals in RudderStack's order", () => {
  const contact = { context: { externalId: { type: "Contact" } } };
  expect(() => freshsales.transform(fixtureTrack("sales_activity", { product_name: "Shirt", ...activityProps }, contact), ctx({ domain: DOMAIN }))).toThrow(
    "Either of sales activity name or sales activity type id is required. Aborting!",
  );
  const noEmail = fixtureTrack("sales_activity", { salesActivityName: "own-calender", ...activityProps }, contact);
  noEmail.context.traits = { name: "Shehan Study" };
  expect(() => freshsales.transform(noEmail, ctx({ domain: DOMAIN }))).toThrow("Either of email or targetable_id is required for creating sales activity. Aborting!");
  // RudderStack would look the contact up by e-mail (and the type by name); Sluice names the id it needs.
  expect(() => freshsales.transform(fixtureTrack("sales_activity", { salesActivityTypeId: "70000663932", ...activityProps }, contact), ctx({ domain: DOMAIN }))).toThrow(
    "context.externalId.id is required: Sluice does not look contacts up by email",
  );
});

test("FRESHSALES RudderStack fixture: lifecycle stage by id, with the e-mail from the properties; refusals", () => {
  const props = { email: "jamessampleton3@gmail.com", lifecycleStageId: "71012139273", ...activityProps, targetableType: "Contact" };
  const event = fixtureTrack("lifecycle_stage", props);
  event.context.traits = { name: "Shehan Study" };
  expect(freshsales.transform(event, ctx({ domain: DOMAIN }))).toEqual([
    {
      version: "1",
      type: "REST",
      method: "POST",
      endpoint: `${FIXTURE_API}/contacts/upsert`,
      headers: HEADERS,
      params: {},
      body: { JSON: { contact: { lifecycle_stage_id: "71012139273" }, unique_identifier: { emails: "jamessampleton3@gmail.com" } }, JSON_ARRAY: {}, XML: {}, FORM: {} },
      files: {},
    },
  ]);
  const { email: _e, ...noEmail } = props;
  expect(() => freshsales.transform({ ...event, properties: noEmail }, ctx({ domain: DOMAIN }))).toThrow("email is required for updating life Cycle Stages. Aborting!");
  const { lifecycleStageId: _l, ...noStage } = props;
  expect(() => freshsales.transform({ ...event, properties: noStage }, ctx({ domain: DOMAIN }))).toThrow("Either of lifecycleStageName or lifecycleStageId is required. Aborting!");
});

let s: TestServer;
const sink = startSink(() => Response.json({ contact: { id: 1 } }));
beforeAll(async () => {
  s = await startSluice({ args: ["--destination-base-url", `FRESHSALES=${sink.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  sink.stop();
  cleanup(s.dataDir);
});

test("FRESHSALES through the pipeline: an identify reaches the stand-in as a contact upsert with the token header", async () => {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "fs", type: "FRESHSALES", config: { apiKey: "fs-key", domain: "acme.myfreshworks.com" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  expect((await sendEvent(s.url, src.writeKey, "identify", { userId: "u-7", traits: { email: "ada@example.com", firstName: "Ada" } })).status).toBe(200);
  const got = await waitFor(() => sink.received.find((r) => r.path === "/crm/sales/api/contacts/upsert"), { what: "the contact upsert" });
  expect(got.method).toBe("POST");
  expect(got.headers.authorization).toBe("Token token=fs-key");
  expect(got.body.unique_identifier).toEqual({ emails: "ada@example.com" });
  expect(got.body.contact).toMatchObject({ emails: "ada@example.com", first_name: "Ada", external_id: "u-7" });
});
