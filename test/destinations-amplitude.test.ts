import { expect, test } from "bun:test";
import { amplitude } from "../src/destinations/amplitude";
import type { DestinationContext, DestinationRequest, SluiceEvent } from "../src/destinations/types";

const ctx = (config: Record<string, any> = {}, baseUrl?: string): DestinationContext => ({
  config: { apiKey: "am_key", ...config },
  destination: { id: "dest-am", name: "Amplitude", workspaceId: "ws-1" },
  baseUrl,
});

const ts = "2024-05-01T10:00:00.000Z";
const context = {
  ip: "1.2.3.4",
  locale: "en-US",
  os: { name: "iOS", version: "17.4" },
  device: { model: "iPhone15,2", manufacturer: "Apple", type: "ios" },
  app: { name: "Shop", version: "2.3.0" },
  campaign: { source: "google", medium: "cpc" },
  traits: { plan: "pro" },
};
const base = { messageId: "m-1", userId: "user-42", anonymousId: "anon-1", timestamp: ts, context };
/** Fields every AM event gets from `context` above. */
const common = {
  os_name: "iOS",
  os_version: "17.4",
  device_model: "iPhone15,2",
  device_manufacturer: "Apple",
  platform: "ios",
  device_id: "anon-1",
  app_name: "Shop",
  app_version: "2.3.0",
  language: "en-US",
  insert_id: "m-1",
  user_id: "user-42",
  time: Date.parse(ts),
  session_id: -1,
  ip: "1.2.3.4",
  library: "rudderstack",
};
const httpapi = (events: unknown[]): DestinationRequest => ({
  version: "1",
  type: "REST",
  method: "POST",
  endpoint: "https://api2.amplitude.com/2/httpapi",
  headers: { "Content-Type": "application/json" },
  params: {},
  body: { JSON: { api_key: "am_key", events, options: { min_id_length: 1 } }, JSON_ARRAY: {}, XML: {}, FORM: {} },
  files: {},
});

test("AM track → POST api2.amplitude.com/2/httpapi with event_type and user_id", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Song Played", properties: { song: "Blue", seconds: 212 } };
  expect(amplitude.transform(event, ctx())).toEqual([
    httpapi([
      {
        ...common,
        event_type: "Song Played",
        event_properties: { song: "Blue", seconds: 212 },
        user_properties: { utm_source: "google", utm_medium: "cpc", plan: "pro" },
      },
    ]),
  ]);
});

test("AM track with revenue → revenue fields at the top level, removed from event_properties", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Order Completed", properties: { revenue: 30, price: 10, quantity: 3, product_id: "p1", coupon: "X" } };
  const [req] = amplitude.transform(event, ctx());
  const sent = (req!.body.JSON.events as any[])[0];
  expect(sent).toMatchObject({ event_type: "Order Completed", productId: "p1", revenueType: "Purchased", price: 10, quantity: 3, revenue: 30 });
  expect(sent.event_properties).toEqual({ coupon: "X" });
});

test("AM page / screen → 'Viewed <name> Page' / 'Viewed <name> Screen' with name in event_properties", () => {
  const page: SluiceEvent = { ...base, type: "page", name: "Pricing", properties: { path: "/pricing" } };
  const pageEvent = (amplitude.transform(page, ctx())[0]!.body.JSON.events as any[])[0];
  expect(pageEvent.event_type).toBe("Viewed Pricing Page");
  expect(pageEvent.event_properties).toEqual({ path: "/pricing", name: "Pricing" });
  const screen: SluiceEvent = { ...base, type: "screen", name: "Home" };
  expect((amplitude.transform(screen, ctx())[0]!.body.JSON.events as any[])[0].event_type).toBe("Viewed Home Screen");
  const custom = ctx({ useUserDefinedPageEventName: true, userProvidedPageEventString: "Page: {{ name }}" });
  expect((amplitude.transform(page, custom)[0]!.body.JSON.events as any[])[0].event_type).toBe("Page: Pricing");
});

test("AM identify → $identify event on /2/httpapi with traits as user_properties (operations applied)", () => {
  const event: SluiceEvent = {
    ...base,
    type: "identify",
    context: { ...context, traits: { email: "ada@example.com", logins: 4, address: { city: "London", country: "UK", postalCode: "N1" } } },
  };
  const [req] = amplitude.transform(event, ctx({ traitsToIncrement: [{ traits: "logins" }] }));
  expect(req).toEqual(
    httpapi([
      {
        ...common,
        event_type: "$identify",
        user_properties: { utm_source: "google", utm_medium: "cpc", email: "ada@example.com", postalCode: "N1", $add: { logins: 4 } },
        country: "UK",
        city: "London",
      },
    ]),
  );
});

test("AM group → $identify with groups on /2/httpapi plus Group Identify API form call", () => {
  const event: SluiceEvent = { ...base, type: "group", groupId: "g1", traits: { company: "Acme", size: 50 } };
  const reqs = amplitude.transform(event, ctx({ groupTypeTrait: "company", groupValueTrait: "size" }));
  expect(reqs).toHaveLength(2);
  const sent = (reqs[0]!.body.JSON.events as any[])[0];
  expect(sent).toMatchObject({ event_type: "$identify", groups: { Acme: 50 }, user_id: "user-42" });
  expect(sent.user_properties).toEqual({ utm_source: "google", utm_medium: "cpc", Acme: 50 });
  expect(reqs[1]).toMatchObject({
    method: "POST",
    endpoint: "https://api2.amplitude.com/groupidentify",
    body: {
      FORM: {
        api_key: "am_key",
        identification: [JSON.stringify({ group_type: "Acme", group_value: 50, group_properties: { company: "Acme", size: 50 } })],
      },
    },
  });
});

test("AM alias → User Mapping API (/usermap) form with global_user_id and user_id", () => {
  const event: SluiceEvent = { ...base, type: "alias", previousId: "old-9" };
  expect(amplitude.transform(event, ctx())[0]).toMatchObject({
    endpoint: "https://api2.amplitude.com/usermap",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: { FORM: { api_key: "am_key", mapping: [JSON.stringify({ global_user_id: "user-42", user_id: "old-9" })] } },
  });
});

test("AM residencyServer EU → api.eu.amplitude.com", () => {
  const [req] = amplitude.transform({ ...base, type: "track", event: "E" }, ctx({ residencyServer: "EU" }));
  expect(req!.endpoint).toBe("https://api.eu.amplitude.com/2/httpapi");
});

test("AM event filtering, missing apiKey, and baseUrl override", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Debug Ping" };
  expect(amplitude.transform(event, ctx({ eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "Debug Ping" }] }))).toEqual([]);
  expect(amplitude.transform(event, ctx({ eventFilteringOption: "whitelistedEvents", whitelistedEvents: [{ eventName: "Other" }] }))).toEqual([]);
  expect(() => amplitude.transform(event, ctx({ apiKey: "" }))).toThrow("destination config is missing 'apiKey'");
  expect(amplitude.transform(event, ctx({}, "http://127.0.0.1:5555"))[0]!.endpoint).toBe("http://127.0.0.1:5555/2/httpapi");
});

test("AM batch → /batch with {api_key, events}, at most 500 events per call; short user_ids sent alone", () => {
  const one = (i: number, userId = `user-${1000 + i}`) =>
    amplitude.transform({ ...base, messageId: `m${i}`, userId, type: "track", event: "E" }, ctx())[0]!;
  const reqs: DestinationRequest[] = Array.from({ length: 501 }, (_, i) => one(i));
  const batched = amplitude.batch!(reqs, ctx());
  expect(batched.map((r) => [r.endpoint, (r.body.JSON.events as any[]).length])).toEqual([
    ["https://api2.amplitude.com/batch", 500],
    ["https://api2.amplitude.com/batch", 1],
  ]);
  expect(batched[0]!.body.JSON.api_key).toBe("am_key");
  expect(batched[0]!.body.JSON.options).toBeUndefined();
  expect((batched[1]!.body.JSON.events as any[])[0].insert_id).toBe("m500");

  const withShort = [one(1), one(2, "abc"), one(3)];
  expect(amplitude.batch!(withShort, ctx()).map((r) => r.endpoint)).toEqual([
    "https://api2.amplitude.com/batch",
    "https://api2.amplitude.com/2/httpapi",
    "https://api2.amplitude.com/batch",
  ]);
});

test("AM deleteUsers → POST amplitude.com/api/2/deletions/users, Basic apiKey:apiSecret, 100 ids per request", () => {
  const users = Array.from({ length: 150 }, (_, i) => ({ userId: `u${i}` }));
  const reqs = amplitude.deleteUsers!(users, ctx({ apiSecret: "am_secret" }));
  expect(reqs).toHaveLength(2);
  expect(reqs[0]).toEqual({
    version: "1",
    type: "REST",
    method: "POST",
    endpoint: "https://amplitude.com/api/2/deletions/users",
    headers: { "Content-Type": "application/json", Authorization: `Basic ${btoa("am_key:am_secret")}` },
    params: {},
    body: {
      JSON: { user_ids: users.slice(0, 100).map((u) => u.userId), requester: "RudderStack", ignore_invalid_id: "true" },
      JSON_ARRAY: {},
      XML: {},
      FORM: {},
    },
    files: {},
  });
  expect((reqs[1]!.body.JSON.user_ids as string[]).length).toBe(50);
  expect(() => amplitude.deleteUsers!(users, ctx())).toThrow("destination config is missing 'apiSecret'");
  expect(amplitude.deleteUsers!(users, ctx({ apiSecret: "s", residencyServer: "EU" }))[0]!.endpoint).toBe(
    "https://analytics.eu.amplitude.com/api/2/deletions/users",
  );
});
