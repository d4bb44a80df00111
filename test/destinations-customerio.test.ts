import { expect, test } from "bun:test";
import { customerio } from "../src/destinations/customerio";
import { jsonRequest } from "./helpers";
import type { DestinationContext, DestinationRequest, SluiceEvent } from "../src/destinations/types";

const ctx = (config: Record<string, any> = {}, baseUrl?: string): DestinationContext => ({
  config: { siteID: "site_1", apiKey: "key_1", ...config },
  destination: { id: "dest-cio", name: "Customer.io", workspaceId: "ws-1" },
  baseUrl,
});
const AUTH = `Basic ${btoa("site_1:key_1")}`;
/** RudderStack labels only the /v2/batch calls as JSON; the others carry the Authorization header alone. */
const HEADERS = { Authorization: AUTH };
const JSON_HEADERS = { Authorization: AUTH, "Content-Type": "application/json" };
const ts = "2024-05-01T10:00:00.000Z";
const secs = Date.parse(ts) / 1000;
const API = "https://track.customer.io/api";

const request = (method: DestinationRequest["method"], endpoint: string, json: Record<string, unknown>, headers: Record<string, string> = HEADERS) =>
  jsonRequest(method, endpoint, json, headers);
const one = (event: SluiceEvent, config?: Record<string, any>) => {
  const reqs = customerio.transform(event, ctx(config));
  expect(reqs).toHaveLength(1);
  return reqs[0]!;
};

test("CUSTOMERIO identify → PUT track.customer.io/api/v1/customers/{id} with attributes, address, created_at, _timestamp and anonymous_id", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m-1",
    userId: "cio-42",
    anonymousId: "anon-1",
    timestamp: ts,
    traits: { email: "ada@example.com", plan: "pro", gone: null, userId: "x", createdAt: "2024-01-01T00:00:00.000Z", address: { city: "London", country: "UK" } },
    user_properties: { legacy: true },
  };
  expect(one(event)).toEqual(
    request("PUT", `${API}/v1/customers/cio-42`, {
      email: "ada@example.com",
      plan: "pro",
      gone: null,
      legacy: true,
      city: "London",
      country: "UK",
      created_at: Date.parse("2024-01-01T00:00:00.000Z") / 1000,
      _timestamp: secs,
      anonymous_id: "anon-1",
    }),
  );
});

test("CUSTOMERIO identify by email → the email is URL-encoded in the path; context.traits when no traits", () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", anonymousId: "", context: { traits: { email: "ada@example.com", plan: "pro" } } };
  expect(one(event)).toEqual(request("PUT", `${API}/v1/customers/ada%40example.com`, { email: "ada@example.com", plan: "pro" }));
  expect(() => customerio.transform({ type: "identify", messageId: "m", anonymousId: "a" }, ctx())).toThrow("userId or email is not present");
});

test("CUSTOMERIO track (identified) → POST /customers/{id}/events with name, type event, data and timestamp", () => {
  const event: SluiceEvent = { type: "track", messageId: "m-2", userId: "cio-42", event: "Purchased", timestamp: ts, properties: { price: 23 } };
  expect(one(event)).toEqual(request("POST", `${API}/v1/customers/cio-42/events`, { data: { price: 23 }, name: "Purchased", type: "event", timestamp: secs }));
  // The name is sent as it came; a blank-looking name is still a name.
  expect(one({ ...event, event: " Purchased " }).body.JSON.name).toBe(" Purchased ");
  expect(() => customerio.transform({ ...event, event: "" }, ctx())).toThrow("Event is a required field and should be a string");
});

test("CUSTOMERIO track (anonymous) → POST /api/v1/events with anonymous_id; names cut to 100 bytes", () => {
  const event: SluiceEvent = { type: "track", messageId: "m-3", userId: "", anonymousId: "anon-7", event: "Viewed Pricing", originalTimestamp: ts, properties: { plan: "pro" } };
  expect(one(event)).toEqual(
    request("POST", `${API}/v1/events`, { data: { plan: "pro" }, name: "Viewed Pricing", type: "event", timestamp: secs, anonymous_id: "anon-7" }),
  );
  // "é" is two bytes: 60 of them are 120 bytes, cut to 50 whole characters.
  expect(one({ ...event, event: "é".repeat(60) }).body.JSON.name).toBe("é".repeat(50));
  expect(() => customerio.transform({ type: "track", messageId: "m", event: "E" }, ctx())).toThrow("Anonymous id/ user id is required");
});

test("CUSTOMERIO page → type 'page' named by page name or url; screen → 'Viewed <name> Screen'", () => {
  const page: SluiceEvent = { type: "page", messageId: "p", userId: "u1", name: "Pricing", timestamp: ts, properties: { url: "https://x.io/pricing" } };
  expect(one(page)).toEqual(request("POST", `${API}/v1/customers/u1/events`, { data: { url: "https://x.io/pricing" }, name: "Pricing", type: "page", timestamp: secs }));
  expect(one({ ...page, name: "" }).body.JSON.name).toBe("https://x.io/pricing");
  // An identified page without any name is still sent (RudderStack does), an anonymous one cannot be.
  expect(one({ ...page, name: undefined, properties: {} }).body.JSON).toEqual({ data: {}, type: "page", timestamp: secs });
  expect(() => customerio.transform({ ...page, userId: undefined, anonymousId: "a", name: undefined, properties: {} }, ctx())).toThrow(
    "Event Name type should be a string",
  );
  const screen: SluiceEvent = { type: "screen", messageId: "s", userId: "u1", event: "Home", timestamp: ts };
  expect(one(screen)).toEqual(request("POST", `${API}/v1/customers/u1/events`, { name: "Viewed Home Screen", type: "event", timestamp: secs }));
  const anonymous = one({ type: "screen", messageId: "s", anonymousId: "a", timestamp: ts });
  expect(anonymous.body.JSON).toEqual({ name: "Viewed  Screen", type: "event", timestamp: secs, anonymous_id: "a" });
});

test("CUSTOMERIO device events → PUT /customers/{id}/devices; Application Uninstalled → DELETE the device (token encoded)", () => {
  const opened: SluiceEvent = {
    type: "track",
    messageId: "d",
    userId: "u1",
    event: "Application Opened",
    timestamp: ts,
    properties: { app_version: "2.0" },
    context: { device: { token: "tok/1", type: "iPadOS" } },
  };
  expect(one(opened)).toEqual(
    request("PUT", `${API}/v1/customers/u1/devices`, { device: { app_version: "2.0", id: "tok/1", last_used: secs, platform: "ios" } }),
  );
  expect(one({ ...opened, event: "Token Refreshed" }, { deviceTokenEventName: "Token Refreshed" }).method).toBe("PUT");
  expect(one({ ...opened, event: "Application Uninstalled" })).toEqual(request("DELETE", `${API}/v1/customers/u1/devices/tok%2F1`, {}));
  expect(() => customerio.transform({ ...opened, event: "Application Uninstalled", context: {} }, ctx())).toThrow(
    "userId/email or device_token not present",
  );
  // Without a token a device event is an ordinary event.
  expect(one({ ...opened, context: {} }).endpoint).toBe(`${API}/v1/customers/u1/events`);
});

test("CUSTOMERIO alias → POST /api/v1/merge_customers (email ids detected)", () => {
  const alias: SluiceEvent = { type: "alias", messageId: "al", userId: "ada@example.com", previousId: "old-1" };
  expect(one(alias)).toEqual(request("POST", `${API}/v1/merge_customers`, { primary: { email: "ada@example.com" }, secondary: { id: "old-1" } }));
  expect(() => customerio.transform({ ...alias, previousId: "" }, ctx())).toThrow("Both userId and previousId are mandatory");
});

test("CUSTOMERIO group → /api/v2/batch object with Content-Type, related to the user", () => {
  const group: SluiceEvent = { type: "group", messageId: "g", userId: "u1", groupId: 7, traits: { name: "Acme", action: "delete", objectTypeId: 2 } };
  expect(one(group)).toEqual(
    request(
      "POST",
      `${API}/v2/batch`,
      {
        batch: [
          {
            identifiers: { object_id: "7", object_type_id: "2" },
            type: "object",
            action: "delete",
            // Only the action is taken out of the traits; objectTypeId stays an attribute too.
            attributes: { name: "Acme", objectTypeId: 2 },
            cio_relationships: [{ identifiers: { id: "u1" } }],
          },
        ],
      },
      JSON_HEADERS,
    ),
  );
  // No user id: the email relates the user; an unknown action falls back to identify; no traits → no attributes.
  const byEmail = one({ type: "group", messageId: "g", anonymousId: "a", groupId: "acme", properties: { action: "bogus" }, context: { traits: { email: "ada@example.com" } } });
  expect(byEmail.body.JSON.batch).toEqual([
    { identifiers: { object_id: "acme", object_type_id: "1" }, type: "object", action: "identify", attributes: {}, cio_relationships: [{ identifiers: { email: "ada@example.com" } }] },
  ]);
  expect(() => customerio.transform({ type: "group", messageId: "g", userId: "u1" }, ctx())).toThrow("groupId is required");
});

test("CUSTOMERIO datacenter EU → track-eu.customer.io; baseUrl override; filtering; missing keys", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", userId: "u1", event: "E", timestamp: ts };
  expect(one(event, { datacenter: "EU" }).endpoint).toBe("https://track-eu.customer.io/api/v1/customers/u1/events");
  expect(customerio.transform(event, ctx({}, "http://127.0.0.1:4000"))[0]!.endpoint).toBe("http://127.0.0.1:4000/api/v1/customers/u1/events");
  expect(customerio.transform(event, ctx({ eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "E" }] }))).toEqual([]);
  expect(() => customerio.transform(event, ctx({ siteID: "" }))).toThrow("destination config is missing 'siteID'");
  expect(() => customerio.transform(event, ctx({ apiKey: undefined }))).toThrow("destination config is missing 'apiKey'");
});

test("CUSTOMERIO batch → consecutive group objects merged into one /v2/batch call (1000 max); other calls untouched", () => {
  const group = (i: number) => customerio.transform({ type: "group", messageId: `g${i}`, userId: "u1", groupId: `org-${i}` }, ctx())[0]!;
  const track = customerio.transform({ type: "track", messageId: "t", userId: "u1", event: "E", timestamp: ts }, ctx())[0]!;
  const batched = customerio.batch!([group(1), group(2), track, group(3)], ctx());
  expect(batched.map((r) => [r.endpoint.replace(API, ""), (r.body.JSON.batch as unknown[] | undefined)?.length])).toEqual([
    ["/v2/batch", 2],
    ["/v1/customers/u1/events", undefined],
    ["/v2/batch", 1],
  ]);
  expect(batched[0]!.headers).toEqual(JSON_HEADERS);
  const many = customerio.batch!(Array.from({ length: 1001 }, (_, i) => group(i)), ctx());
  expect(many.map((r) => (r.body.JSON.batch as unknown[]).length)).toEqual([1000, 1]);
});

test("CUSTOMERIO deleteUsers → DELETE /api/v1/customers/{id} per user with Basic siteID:apiKey", () => {
  const reqs = customerio.deleteUsers!([{ userId: "u1" }, { userId: "a/b" }], ctx({ datacenter: "EU" }));
  expect(reqs).toEqual([
    request("DELETE", "https://track-eu.customer.io/api/v1/customers/u1", {}),
    expect.objectContaining({ endpoint: "https://track-eu.customer.io/api/v1/customers/a%2Fb" }),
  ]);
  expect(() => customerio.deleteUsers!([{ userId: "u1" }], ctx({ apiKey: "" }))).toThrow("destination config is missing 'apiKey'");
});
