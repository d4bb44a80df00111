import { expect, test } from "bun:test";
import { customerio } from "../src/destinations/customerio";
import type { DestinationContext, SluiceEvent } from "../src/destinations/types";

const ctx = (config: Record<string, any> = {}, baseUrl?: string): DestinationContext => ({
  config: { siteID: "site_1", apiKey: "key_1", ...config },
  destination: { id: "dest-cio", name: "Customer.io", workspaceId: "ws-1" },
  baseUrl,
});
const AUTH = `Basic ${btoa("site_1:key_1")}`;
const HEADERS = { Authorization: AUTH, "Content-Type": "application/json" };
const ts = "2024-05-01T10:00:00.000Z";
const secs = Date.parse(ts) / 1000;

test("CUSTOMERIO identify → PUT track.customer.io/api/v1/customers/{id} with attributes, created_at and anonymous_id", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m-1",
    userId: "cio-42",
    anonymousId: "anon-1",
    timestamp: ts,
    traits: { email: "ada@example.com", plan: "pro", createdAt: "2024-01-01T00:00:00.000Z", address: { city: "London", country: "UK" } },
  };
  expect(customerio.transform(event, ctx())).toEqual([
    {
      version: "1",
      type: "REST",
      method: "PUT",
      endpoint: "https://track.customer.io/api/v1/customers/cio-42",
      headers: HEADERS,
      params: {},
      body: {
        JSON: {
          email: "ada@example.com",
          plan: "pro",
          city: "London",
          country: "UK",
          created_at: Date.parse("2024-01-01T00:00:00.000Z") / 1000,
          _timestamp: secs,
          anonymous_id: "anon-1",
        },
        JSON_ARRAY: {},
        XML: {},
        FORM: {},
      },
      files: {},
    },
  ]);
});

test("CUSTOMERIO track (identified) → POST /customers/{id}/events with name, type event, data and timestamp", () => {
  const event: SluiceEvent = { type: "track", messageId: "m-2", userId: "cio-42", event: "Purchased", timestamp: ts, properties: { price: 23 } };
  const [req] = customerio.transform(event, ctx());
  expect(req).toMatchObject({ method: "POST", endpoint: "https://track.customer.io/api/v1/customers/cio-42/events", headers: HEADERS });
  expect(req!.body.JSON).toEqual({ data: { price: 23 }, name: "Purchased", type: "event", timestamp: secs });
});

test("CUSTOMERIO track (anonymous) → POST /api/v1/events with anonymous_id", () => {
  const event: SluiceEvent = { type: "track", messageId: "m-3", anonymousId: "anon-7", event: "Viewed Pricing", timestamp: ts, properties: { plan: "pro" } };
  const [req] = customerio.transform(event, ctx());
  expect(req!.endpoint).toBe("https://track.customer.io/api/v1/events");
  expect(req!.body.JSON).toEqual({ data: { plan: "pro" }, name: "Viewed Pricing", type: "event", timestamp: secs, anonymous_id: "anon-7" });
});

test("CUSTOMERIO page → type 'page' named by page name; screen → 'Viewed <name> Screen'", () => {
  const page: SluiceEvent = { type: "page", messageId: "p", userId: "u1", name: "Pricing", timestamp: ts, properties: { url: "https://x.io/pricing" } };
  expect(customerio.transform(page, ctx())[0]!.body.JSON).toEqual({ data: { url: "https://x.io/pricing" }, name: "Pricing", type: "page", timestamp: secs });
  const screen: SluiceEvent = { type: "screen", messageId: "s", userId: "u1", event: "Home", timestamp: ts };
  expect(customerio.transform(screen, ctx())[0]!.body.JSON).toMatchObject({ name: "Viewed Home Screen", type: "event" });
});

test("CUSTOMERIO device events → PUT /customers/{id}/devices; Application Uninstalled → DELETE the device", () => {
  const opened: SluiceEvent = {
    type: "track",
    messageId: "d",
    userId: "u1",
    event: "Application Opened",
    timestamp: ts,
    context: { device: { token: "tok-1", type: "iOS" } },
  };
  expect(customerio.transform(opened, ctx())[0]).toMatchObject({
    method: "PUT",
    endpoint: "https://track.customer.io/api/v1/customers/u1/devices",
    body: { JSON: { device: { id: "tok-1", last_used: secs, platform: "ios" } } },
  });
  const removed = customerio.transform({ ...opened, event: "Application Uninstalled" }, ctx())[0]!;
  expect(removed).toMatchObject({ method: "DELETE", endpoint: "https://track.customer.io/api/v1/customers/u1/devices/tok-1", headers: { Authorization: AUTH } });
});

test("CUSTOMERIO alias → POST /api/v1/merge_customers (email ids detected); group → /api/v2/batch object", () => {
  const alias: SluiceEvent = { type: "alias", messageId: "al", userId: "ada@example.com", previousId: "old-1" };
  expect(customerio.transform(alias, ctx())[0]).toMatchObject({
    method: "POST",
    endpoint: "https://track.customer.io/api/v1/merge_customers",
    body: { JSON: { primary: { email: "ada@example.com" }, secondary: { id: "old-1" } } },
  });
  const group: SluiceEvent = { type: "group", messageId: "g", userId: "u1", groupId: "acme", traits: { name: "Acme", action: "identify" } };
  expect(customerio.transform(group, ctx())[0]).toMatchObject({
    endpoint: "https://track.customer.io/api/v2/batch",
    body: {
      JSON: {
        batch: [
          {
            identifiers: { object_id: "acme", object_type_id: "1" },
            type: "object",
            action: "identify",
            attributes: { name: "Acme" },
            cio_relationships: [{ identifiers: { id: "u1" } }],
          },
        ],
      },
    },
  });
});

test("CUSTOMERIO datacenter EU → track-eu.customer.io; baseUrl override; filtering; missing keys", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", userId: "u1", event: "E", timestamp: ts };
  expect(customerio.transform(event, ctx({ datacenter: "EU" }))[0]!.endpoint).toBe("https://track-eu.customer.io/api/v1/customers/u1/events");
  expect(customerio.transform(event, ctx({}, "http://127.0.0.1:4000"))[0]!.endpoint).toBe("http://127.0.0.1:4000/api/v1/customers/u1/events");
  expect(customerio.transform(event, ctx({ eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "E" }] }))).toEqual([]);
  expect(() => customerio.transform(event, ctx({ siteID: "" }))).toThrow("destination config is missing 'siteID'");
  expect(() => customerio.transform(event, ctx({ apiKey: undefined }))).toThrow("destination config is missing 'apiKey'");
});

test("CUSTOMERIO batch → consecutive group objects merged into one /v2/batch call (1000 max); other calls untouched", () => {
  const group = (i: number) => customerio.transform({ type: "group", messageId: `g${i}`, userId: "u1", groupId: `org-${i}` }, ctx())[0]!;
  const track = customerio.transform({ type: "track", messageId: "t", userId: "u1", event: "E", timestamp: ts }, ctx())[0]!;
  const batched = customerio.batch!([group(1), group(2), track, group(3)], ctx());
  expect(batched.map((r) => [r.endpoint.replace("https://track.customer.io/api", ""), (r.body.JSON.batch as unknown[] | undefined)?.length])).toEqual([
    ["/v2/batch", 2],
    ["/v1/customers/u1/events", undefined],
    ["/v2/batch", 1],
  ]);
  const many = customerio.batch!(Array.from({ length: 1001 }, (_, i) => group(i)), ctx());
  expect(many.map((r) => (r.body.JSON.batch as unknown[]).length)).toEqual([1000, 1]);
});

test("CUSTOMERIO deleteUsers → DELETE /api/v1/customers/{id} per user with Basic siteID:apiKey", () => {
  const reqs = customerio.deleteUsers!([{ userId: "u1" }, { userId: "a/b" }], ctx({ datacenter: "EU" }));
  expect(reqs).toEqual([
    {
      version: "1",
      type: "REST",
      method: "DELETE",
      endpoint: "https://track-eu.customer.io/api/v1/customers/u1",
      headers: { Authorization: AUTH },
      params: {},
      body: { JSON: {}, JSON_ARRAY: {}, XML: {}, FORM: {} },
      files: {},
    },
    expect.objectContaining({ endpoint: "https://track-eu.customer.io/api/v1/customers/a%2Fb" }),
  ]);
  expect(() => customerio.deleteUsers!([{ userId: "u1" }], ctx({ apiKey: "" }))).toThrow("destination config is missing 'apiKey'");
});
