import { afterAll, beforeAll, expect, test } from "bun:test";
import { mautic } from "../src/destinations/mautic";
import type { DestinationContext, SluiceEvent } from "../src/destinations/types";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "./helpers";

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

test("MAUTIC identify → POST <subdomain>.mautic.net/api/contacts/new with RudderStack's contact fields (its fixture)", () => {
  const event = identify({
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
  });
  expect(mautic.transform(event, ctx())).toEqual([
    {
      version: "1",
      type: "REST",
      method: "POST",
      endpoint: "https://ruddertest2.mautic.net/api/contacts/new",
      headers: { "Content-Type": "application/json", Authorization: AUTH },
      params: {},
      body: {
        JSON: {
          email: "abc@xyz.com",
          title: "Mr",
          firstname: "Test",
          lastname: "Rudderlabs",
          phone: "9876543210",
          website: "abc.com",
          state: "Uttar Pradesh",
          zipcode: "243001",
          ipAddress: "14.5.67.21",
          last_active: ts,
          country: "India",
          haspurchased: "yes",
          role: "Manager",
          subscription_status: "New",
          prospect_or_customer: "Prospect",
          address1: "Flat No 58 ABC building XYZ Area near PQRS , 354408",
          address2: "",
        },
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
