import { afterAll, beforeAll, expect, test } from "bun:test";
import { freshsales } from "../src/destinations/freshsales";
import type { DestinationContext, SluiceEvent } from "../src/destinations/types";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "./helpers";

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
