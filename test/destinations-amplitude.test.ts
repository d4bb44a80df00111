import { afterAll, beforeAll, expect, test } from "bun:test";
import { amplitude } from "../src/destinations/amplitude";
import { parseUserAgent } from "../src/destinations/user-agent";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "./helpers";
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
/** Fields every AM event gets from `context` above (no channel: platform is the device type). */
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
const request = (endpoint: string, headers: Record<string, string>, body: Partial<DestinationRequest["body"]>): DestinationRequest => ({
  version: "1",
  type: "REST",
  method: "POST",
  endpoint,
  headers,
  params: {},
  body: { JSON: {}, JSON_ARRAY: {}, XML: {}, FORM: {}, ...body },
  files: {},
});
const httpapi = (events: unknown[]) =>
  request("https://api2.amplitude.com/2/httpapi", { "Content-Type": "application/json" }, { JSON: { api_key: "am_key", events, options: { min_id_length: 1 } } });
const sent = (reqs: DestinationRequest[], i = 0) => (reqs[i]!.body.JSON.events as any[])[0];

const CHROME_MAC = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_14_5) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/77.0.3865.90 Safari/537.36";
const webContext = {
  app: { name: "RudderLabs JavaScript SDK", version: "1.0.0" },
  library: { name: "RudderLabs JavaScript SDK", version: "1.0.0" },
  userAgent: CHROME_MAC,
  locale: "en-US",
  ip: "0.0.0.0",
  os: { name: "", version: "" },
  page: { initial_referrer: "https://docs.rudderstack.com", initial_referring_domain: "docs.rudderstack.com" },
  traits: { email: "test@rudderstack.com" },
};
/** What RudderStack sends for a web event with `webContext`: browser as os, OS as device model, platform Web. */
const webCommon = {
  os_name: "Chrome",
  os_version: "77.0.3865.90",
  device_model: "Mac",
  platform: "Web",
  device_id: "anon-1",
  app_name: "RudderLabs JavaScript SDK",
  app_version: "1.0.0",
  language: "en-US",
  insert_id: "m-1",
  user_id: "user-42",
  time: Date.parse(ts),
  session_id: -1,
  ip: "0.0.0.0",
  library: "rudderstack",
};
const initialRef = { initial_referrer: "https://docs.rudderstack.com", initial_referring_domain: "docs.rudderstack.com" };

test("AM track → POST api2.amplitude.com/2/httpapi with event_type, event_properties and traits as user_properties", () => {
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
  expect(() => amplitude.transform({ ...event, event: "" }, ctx())).toThrow("Event not present. Please send event field");
});

test("AM web events read browser, OS and platform from the user agent (screen does not)", () => {
  const track: SluiceEvent = { ...base, channel: "web", context: webContext, type: "track", event: "Clicked", properties: { x: 1 } };
  expect(amplitude.transform(track, ctx())).toEqual([
    httpapi([{ ...webCommon, event_type: "Clicked", event_properties: { x: 1 }, user_properties: { ...initialRef, email: "test@rudderstack.com" } }]),
  ]);
  // Without a user agent the context values are used, even empty ones.
  const noUa = sent(amplitude.transform({ ...track, context: { ...webContext, userAgent: undefined } }, ctx()));
  expect([noUa.os_name, noUa.os_version, noUa.device_model, noUa.platform]).toEqual(["", "", undefined, "Web"]);
  const screen = sent(amplitude.transform({ ...track, type: "screen", name: "Home" }, ctx()));
  expect([screen.os_name, screen.device_model, screen.platform]).toEqual(["", undefined, undefined]);
});

test("AM platform: no channel and no device type → no platform (RudderStack has no 'Server' default)", () => {
  const event: SluiceEvent = { ...base, context: { ip: "1.2.3.4" }, type: "track", event: "E" };
  expect(sent(amplitude.transform(event, ctx())).platform).toBeUndefined();
  expect(sent(amplitude.transform({ ...event, channel: "server" }, ctx())).platform).toBeUndefined();
});

test("AM track with revenue → revenue fields at the top level, removed from event_properties", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Order Completed", properties: { revenue: 30, price: 10, quantity: 3, product_id: "p1", coupon: "X" } };
  const got = sent(amplitude.transform(event, ctx()));
  expect(got).toMatchObject({ event_type: "Order Completed", productId: "p1", revenueType: "Purchased", price: 10, quantity: 3, revenue: 30 });
  expect(got.event_properties).toEqual({ coupon: "X" });
  // With revenue_type, RudderStack's revenue mapping applies: no price → price is the revenue, quantity 1, and no event_id.
  const typed = sent(
    amplitude.transform({ ...event, properties: { revenue: 48, revenue_type: "Purchased", quantity: 2 }, integrations: { Amplitude: { event_id: 3 } } }, ctx()),
  );
  expect(typed).toMatchObject({ price: 48, quantity: 1, revenue: 48, revenueType: "Purchased", event_properties: { revenue_type: "Purchased" } });
  expect(typed.event_id).toBeUndefined();
});

test("AM products: trackProductsOnce=false splits products into 'Product Purchased' events with their own insert_id", () => {
  const products = [
    { product_id: "a", price: 19, quantity: 1, name: "A" },
    { product_id: "b", price: 3, quantity: 2, name: "B" },
  ];
  const event: SluiceEvent = { ...base, type: "track", event: "Order Completed", properties: { revenue: 48, products, coupon: "X" } };
  const reqs = amplitude.transform(event, ctx({ trackProductsOnce: false, trackRevenuePerProduct: true }));
  expect(reqs.map((r) => sent([r]).event_type)).toEqual(["Order Completed", "Product Purchased", "Product Purchased"]);
  expect(sent(reqs, 0).event_properties).toEqual({ revenue: 48, coupon: "X" });
  expect(sent(reqs, 0).revenue).toBeUndefined();
  expect(sent(reqs, 1)).toMatchObject({ insert_id: "m-1-1", productId: "a", price: 19, quantity: 1, event_properties: { name: "A" } });
  expect(sent(reqs, 2)).toMatchObject({ insert_id: "m-1-2", productId: "b", price: 3, quantity: 2 });
});

test("AM page / screen → 'Viewed <name> Page' / 'Viewed <name> Screen' with name in event_properties", () => {
  const page: SluiceEvent = { ...base, type: "page", name: "Pricing", properties: { path: "/pricing" } };
  expect(amplitude.transform(page, ctx())).toEqual([
    httpapi([
      {
        ...common,
        event_type: "Viewed Pricing Page",
        event_properties: { path: "/pricing", name: "Pricing" },
        user_properties: { utm_source: "google", utm_medium: "cpc", plan: "pro" },
      },
    ]),
  ]);
  // A screen's name falls back to its event; with neither, RudderStack leaves the gap.
  expect(sent(amplitude.transform({ ...base, type: "screen", event: "Screen View" }, ctx())).event_type).toBe("Viewed Screen View Screen");
  expect(sent(amplitude.transform({ ...base, type: "screen" }, ctx())).event_type).toBe("Viewed  Screen");
});

test("AM user-defined page / screen names: the first placeholder's path fills every placeholder; empty template → name", () => {
  const page: SluiceEvent = { ...base, type: "page", name: "Pricing", context: { ...context, page: { title: "Home" } } };
  const name = (config: Record<string, any>, event = page) => sent(amplitude.transform(event, ctx(config))).event_type;
  expect(name({ useUserDefinedPageEventName: true, userProvidedPageEventString: "My custom Page Name is {{ name }} . Custom Name." })).toBe(
    "My custom Page Name is Pricing . Custom Name.",
  );
  expect(name({ useUserDefinedPageEventName: true, userProvidedPageEventString: "{{context.page.title}} / {{ name }}" })).toBe("Home / Home");
  expect(name({ useUserDefinedPageEventName: true, userProvidedPageEventString: "" })).toBe("Pricing");
  expect(name({ useUserDefinedPageEventName: false, userProvidedPageEventString: "X {{ name }}" })).toBe("Viewed Pricing Page");
  expect(name({ useUserDefinedScreenEventName: true, userProvidedScreenEventString: "My {{ event }} event." }, { ...base, type: "screen", event: "Screen View" })).toBe(
    "My Screen View event.",
  );
  expect(() => amplitude.transform({ ...page, name: undefined }, ctx({ useUserDefinedPageEventName: true, userProvidedPageEventString: "" }))).toThrow(
    "Event type is missing",
  );
});

test("AM identify (web) → $identify with traits as user_properties; address spread, city/country top-level", () => {
  const event: SluiceEvent = {
    ...base,
    channel: "web",
    type: "identify",
    session_id: "anon:1598597129",
    context: { ...webContext, traits: { email: "ada@example.com", logins: 4, address: { city: "London", country: "UK", postalCode: "N1" } } },
  };
  expect(amplitude.transform(event, ctx({ traitsToIncrement: [{ traits: "logins" }, { traits: "" }] }))).toEqual([
    httpapi([
      {
        ...webCommon,
        session_id: 1598597129,
        event_type: "$identify",
        user_properties: { ...initialRef, email: "ada@example.com", postalCode: "N1", $add: { logins: 4 } },
        country: "UK",
        city: "London",
      },
    ]),
  ]);
});

test("AM identify: top-level traits named like an Amplitude field win (reverse ETL), func fields leave user_properties", () => {
  const event: SluiceEvent = { ...base, type: "identify", traits: { os_version: "test os", ip: "9.9.9.9", city: "Kolkata", email: "a@b.c" } };
  const got = sent(amplitude.transform(event, ctx()));
  expect(got).toMatchObject({ os_version: "test os", city: "Kolkata", ip: "1.2.3.4" });
  expect(got.user_properties).toEqual({ utm_source: "google", utm_medium: "cpc", ip: "9.9.9.9", email: "a@b.c" });
});

test("AM identify: operations, $unset from fieldsToUnset, skipUserPropertiesSync", () => {
  const event: SluiceEvent = {
    ...base,
    context: { traits: { visits: 1, first_name: "John", tags: ["t1"], email: "j@x.io" } },
    type: "identify",
    integrations: { Amplitude: { fieldsToUnset: ["old_field"], skipUserPropertiesSync: true } },
  };
  const config = { traitsToIncrement: [{ traits: "visits" }], traitsToSetOnce: [{ traits: "first_name" }], traitsToAppend: [{ traits: "tags" }], traitsToPrepend: [{ traits: "missing" }] };
  const got = sent(amplitude.transform(event, ctx(config)));
  expect(got.user_properties).toEqual({
    $add: { visits: 1 },
    $setOnce: { first_name: "John" },
    $append: { tags: ["t1"] },
    $prepend: { missing: undefined },
    email: "j@x.io",
    $unset: { old_field: "-" },
  });
  expect(got.$skip_user_properties_sync).toBe(true);
  // With enhanced user operations every plain property goes under $set.
  const enhanced = sent(amplitude.transform(event, ctx({ ...config, enableEnhancedUserOperations: true })));
  expect(JSON.parse(JSON.stringify(enhanced.user_properties))).toEqual({
    $add: { visits: 1 },
    $setOnce: { first_name: "John" },
    $append: { tags: ["t1"] },
    $prepend: {},
    $unset: { old_field: "-" },
    $set: { email: "j@x.io" },
  });
});

test("AM track with enhanced user operations: traits under $set, configured ones under their operation only", () => {
  const event: SluiceEvent = { ...base, context: { traits: { logins: 3, plan: "pro" } }, type: "track", event: "E" };
  const got = sent(amplitude.transform(event, ctx({ enableEnhancedUserOperations: true, traitsToIncrement: [{ traits: "logins" }] })));
  expect(got.user_properties).toEqual({ $add: { logins: 3 }, $set: { plan: "pro" } });
});

test("AM mobile: device_brand from the manufacturer, idfa/idfv for Apple devices, adid for Android", () => {
  const ios: SluiceEvent = {
    ...base,
    channel: "mobile",
    type: "track",
    event: "E",
    context: { device: { id: "dev-1", type: "iOS", model: "iPhone XR", manufacturer: "Apple", advertisingId: "ad-1" }, network: { carrier: "AT&T" } },
  };
  expect(sent(amplitude.transform(ios, ctx()))).toMatchObject({ platform: "iOS", device_brand: "Apple", idfa: "ad-1", idfv: "dev-1", carrier: "AT&T" });
  const android = { ...ios, context: { device: { type: "Android", manufacturer: "Google", advertisingId: "ad-2", brand: "Pixel" } } };
  const got = sent(amplitude.transform(android, ctx()));
  expect([got.adid, got.idfa, got.device_brand]).toEqual(["ad-2", undefined, "Google"]);
  expect(sent(amplitude.transform(android, ctx({ mapDeviceBrand: true }))).device_brand).toBe("Pixel");
});

test("AM location fields and integrations.Amplitude event_id / groups", () => {
  const event: SluiceEvent = {
    ...base,
    type: "track",
    event: "E",
    context: { location: { country: "United States", city: "San Francisco", region: "California", latitude: "37.7", longitude: "-122.4", dma: "SF" } },
    integrations: { Amplitude: { event_id: 0, groups: { Company: "ABC" } } },
  };
  expect(sent(amplitude.transform(event, ctx()))).toMatchObject({
    region: "California",
    location_lat: "37.7",
    location_lng: "-122.4",
    dma: "SF",
    country: "United States",
    city: "San Francisco",
    event_id: 0,
    groups: { Company: "ABC" },
  });
  expect(sent(amplitude.transform({ ...event, integrations: { Amplitude: { event_id: "7" } } }, ctx())).event_id).toBeUndefined();
});

test("AM group → $identify with groups (no insert_id) plus Group Identify API form call without headers", () => {
  const event: SluiceEvent = { ...base, type: "group", groupId: "g1", traits: { company: "Acme", size: 50 } };
  const reqs = amplitude.transform(event, ctx({ groupTypeTrait: "company", groupValueTrait: "size" }));
  const { insert_id: _none, ...groupCommon } = common;
  expect(reqs).toEqual([
    httpapi([{ ...groupCommon, event_type: "$identify", groups: { Acme: 50 }, user_properties: { utm_source: "google", utm_medium: "cpc", Acme: 50 } }]),
    request("https://api2.amplitude.com/groupidentify", {}, {
      FORM: { api_key: "am_key", identification: [JSON.stringify({ group_type: "Acme", group_value: 50, group_properties: { company: "Acme", size: 50 } })] },
    }),
  ]);
  // Without the traits in config, integrations.Amplitude.groups names the group.
  const viaIntegrations = amplitude.transform({ ...event, integrations: { Amplitude: { groups: { group_type: "Company", group_value: "ABC" } } } }, ctx());
  expect(sent(viaIntegrations).groups).toEqual({ Company: "ABC" });
  expect(viaIntegrations[1]!.body.FORM.identification).toEqual([JSON.stringify({ group_type: "Company", group_value: "ABC" })]);
  expect(() => amplitude.transform({ ...event, traits: { company: "Acme", size: ["x"] } }, ctx({ groupTypeTrait: "company", groupValueTrait: "size" }))).toThrow(
    "Group call parameters are not valid",
  );
  expect(() => amplitude.transform({ ...event, userId: undefined, anonymousId: undefined }, ctx())).toThrow("Either of user ID or device ID");
});

test("AM alias → User Mapping API (/usermap) form with global_user_id, user_id, event_id and user_properties", () => {
  const event: SluiceEvent = { ...base, type: "alias", previousId: "old-9", integrations: { Amplitude: { event_id: 67 } } };
  expect(amplitude.transform(event, ctx())).toEqual([
    request("https://api2.amplitude.com/usermap", {}, {
      FORM: {
        api_key: "am_key",
        mapping: [JSON.stringify({ global_user_id: "user-42", user_id: "old-9", event_id: 67, user_properties: { utm_source: "google", utm_medium: "cpc" } })],
      },
    }),
  ]);
  const unmap = amplitude.transform({ ...event, integrations: { Amplitude: { unmap: "old-9" } } }, ctx());
  expect(unmap[0]!.body.FORM.mapping).toEqual([JSON.stringify({ user_id: "old-9", user_properties: { utm_source: "google", utm_medium: "cpc" }, unmap: true })]);
});

test("AM residencyServer EU → api.eu.amplitude.com", () => {
  const [req] = amplitude.transform({ ...base, type: "track", event: "E" }, ctx({ residencyServer: "EU" }));
  expect(req!.endpoint).toBe("https://api.eu.amplitude.com/2/httpapi");
});

test("AM event filtering, missing apiKey, unsupported type, and baseUrl override", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Debug Ping" };
  expect(amplitude.transform(event, ctx({ eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "Debug Ping" }] }))).toEqual([]);
  expect(amplitude.transform(event, ctx({ eventFilteringOption: "whitelistedEvents", whitelistedEvents: [{ eventName: "Other" }] }))).toEqual([]);
  expect(() => amplitude.transform(event, ctx({ apiKey: "" }))).toThrow("destination config is missing 'apiKey'");
  expect(() => amplitude.transform({ ...event, type: "merge" }, ctx())).toThrow("message type not supported");
  expect(amplitude.transform(event, ctx({}, "http://127.0.0.1:5555"))[0]!.endpoint).toBe("http://127.0.0.1:5555/2/httpapi");
});

test("AM batch → /batch with {api_key, events}, at most 500 events per call; short user_ids and form calls sent alone", () => {
  const one = (i: number, userId = `user-${1000 + i}`) =>
    amplitude.transform({ ...base, messageId: `m${i}`, userId, type: "track", event: "E" }, ctx())[0]!;
  const reqs: DestinationRequest[] = Array.from({ length: 501 }, (_, i) => one(i));
  const batched = amplitude.batch!(reqs, ctx());
  expect(batched.map((r) => [r.endpoint, (r.body.JSON.events as any[]).length])).toEqual([
    ["https://api2.amplitude.com/batch", 500],
    ["https://api2.amplitude.com/batch", 1],
  ]);
  expect(batched[0]!.headers).toEqual({ "Content-Type": "application/json" });
  expect(batched[0]!.body.JSON.api_key).toBe("am_key");
  expect(batched[0]!.body.JSON.options).toBeUndefined();
  expect((batched[1]!.body.JSON.events as any[])[0].insert_id).toBe("m500");

  const alias = amplitude.transform({ ...base, type: "alias", previousId: "p" }, ctx())[0]!;
  const mixed = [one(1), one(2, "abc"), one(3), alias, one(4), one(5)];
  expect(amplitude.batch!(mixed, ctx()).map((r) => r.endpoint)).toEqual([
    "https://api2.amplitude.com/batch",
    "https://api2.amplitude.com/2/httpapi",
    "https://api2.amplitude.com/batch",
    "https://api2.amplitude.com/usermap",
    "https://api2.amplitude.com/batch",
  ]);
});

test("AM deleteUsers → POST amplitude.com/api/2/deletions/users, Basic apiKey:apiSecret, 100 ids per request", () => {
  const users = Array.from({ length: 150 }, (_, i) => ({ userId: `u${i}` }));
  const reqs = amplitude.deleteUsers!(users, ctx({ apiSecret: "am_secret" }));
  expect(reqs).toHaveLength(2);
  expect(reqs[0]).toEqual(
    request("https://amplitude.com/api/2/deletions/users", { "Content-Type": "application/json", Authorization: `Basic ${btoa("am_key:am_secret")}` }, {
      JSON: { user_ids: users.slice(0, 100).map((u) => u.userId), requester: "RudderStack", ignore_invalid_id: "true" },
    }),
  );
  expect((reqs[1]!.body.JSON.user_ids as string[]).length).toBe(50);
  expect(() => amplitude.deleteUsers!(users, ctx())).toThrow("destination config is missing 'apiSecret'");
  expect(amplitude.deleteUsers!(users, ctx({ apiSecret: "s", residencyServer: "EU" }))[0]!.endpoint).toBe(
    "https://analytics.eu.amplitude.com/api/2/deletions/users",
  );
});

test("AM user agents → the names Amplitude's fork of ua-parser-js reports for common browsers", () => {
  const cases: Array<[string, [string?, string?, string?, string?]]> = [
    [CHROME_MAC, ["Chrome", "77.0.3865.90", "Mac", undefined]],
    ["Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.91", ["Edge", "120.0.2210.91", "Windows", undefined]],
    ["Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1", ["Mobile Safari", "17.4", "iOS", "Apple"]],
    ["Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.3 Safari/605.1.15", ["Safari", "17.3", "Mac", undefined]],
    ["Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Mobile Safari/537.36", ["Chrome", "121.0.0.0", "Android", "Samsung"]],
    ["Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0", ["Firefox", "121.0", "Ubuntu", undefined]],
  ];
  // AM sends the browser as os_name/os_version, the OS as device_model and the vendor as device_manufacturer.
  for (const [ua, expected] of cases) {
    const event: SluiceEvent = { ...base, channel: "web", context: { userAgent: ua }, type: "track", event: "Clicked" };
    const f = sent(amplitude.transform(event, ctx()));
    expect([f.os_name, f.os_version, f.device_model, f.device_manufacturer]).toEqual(expected);
  }
  expect(parseUserAgent(undefined)).toEqual({ browser: {}, os: {}, device: {} });
});

// RudderStack processor fixture "Test 5" (reverse ETL identify with an external device_id).
const retlContext = {
  externalId: [{ id: "lynnanderson@smith.net", identifierType: "device_id", type: "AM-users" }],
  mappedToDestination: "true",
  app: { build: "1.0.0", name: "RudderLabs JavaScript SDK", namespace: "com.rudderlabs.javascript", version: "1.0.0" },
  userAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_14_5) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/77.0.3865.90 Safari/537.36",
  locale: "en-US",
  ip: "0.0.0.0",
  os: { name: "", version: "" },
  page: { initial_referrer: "https://docs.rudderstack.com", initial_referring_domain: "docs.rudderstack.com" },
};
const retlIdentify: SluiceEvent = {
  channel: "web",
  context: retlContext,
  traits: {
    anonymousId: "123456",
    email: "test@rudderstack.com",
    city: "kolkata",
    address: { country: "India", postalCode: 712136, state: "WB", street: "" },
    os_version: "test os",
    ip: "0.0.0.0",
    age: 26,
  },
  type: "identify",
  messageId: "84e26acc-56a5-4835-8233-591137fca468",
  session_id: "3049dc4c-5a95-4ccd-a3e7-d74a7e411f22",
  originalTimestamp: "2019-10-14T09:03:17.562Z",
  anonymousId: "123456",
  userId: "123456",
  integrations: { All: true },
  sentAt: "2019-10-14T09:03:22.563Z",
};

test("AM reverse-ETL identify: an external id typed device_id becomes device_id and user_properties.device_id (fixture Test 5)", () => {
  const [req] = amplitude.transform(structuredClone(retlIdentify), ctx({ apiKey: "abcde", groupTypeTrait: "email", groupValueTrait: "age" }));
  expect(req!.body.JSON).toEqual({
    api_key: "abcde",
    events: [
      {
        os_name: "Chrome",
        os_version: "test os",
        device_model: "Mac",
        platform: "Web",
        device_id: "lynnanderson@smith.net",
        app_name: "RudderLabs JavaScript SDK",
        app_version: "1.0.0",
        language: "en-US",
        insert_id: "84e26acc-56a5-4835-8233-591137fca468",
        ip: "0.0.0.0",
        user_properties: {
          initial_referrer: "https://docs.rudderstack.com",
          initial_referring_domain: "docs.rudderstack.com",
          anonymousId: "123456",
          email: "test@rudderstack.com",
          postalCode: 712136,
          state: "WB",
          street: "",
          ip: "0.0.0.0",
          age: 26,
          device_id: "lynnanderson@smith.net",
        },
        event_type: "$identify",
        time: 1571043797562,
        user_id: "123456",
        session_id: -1,
        country: "India",
        city: "kolkata",
        library: "rudderstack",
      },
    ],
    options: { min_id_length: 1 },
  });
});

test("AM without mappedToDestination the external id is ignored: device_id is the anonymousId (fixture Test 7)", () => {
  const { mappedToDestination: _m, ...plainContext } = retlContext;
  const [req] = amplitude.transform({ ...structuredClone(retlIdentify), context: plainContext }, ctx({ apiKey: "abcde" }));
  const sentEvent = (req!.body.JSON.events as any[])[0];
  expect(sentEvent.device_id).toBe("123456");
  expect(sentEvent.user_properties.device_id).toBeUndefined();
});

test("AM reverse-ETL track with an external user_id: it becomes user_id and stays in user_properties; the caller's event is untouched", () => {
  const event: SluiceEvent = {
    type: "track",
    event: "Signed Up",
    messageId: "m-r1",
    timestamp: ts,
    traits: { plan: "pro" },
    context: { mappedToDestination: true, externalId: [{ id: "ext-user-1", identifierType: "user_id", type: "AM-users" }] },
  };
  const before = structuredClone(event);
  const sentEvent = (amplitude.transform(event, ctx())[0]!.body.JSON.events as any[])[0];
  expect(sentEvent.user_id).toBe("ext-user-1");
  expect(sentEvent.device_id).toBeUndefined();
  expect(sentEvent.user_properties).toEqual({ plan: "pro", user_id: "ext-user-1" });
  expect(event).toEqual(before);
});

test("AM event_id: identify, track, page, screen and alias carry it; revenue and group do not", () => {
  const integrations = { Amplitude: { event_id: 9 } };
  const eventIdOf = (e: Record<string, any>) => (amplitude.transform({ ...base, type: "track", ...e, integrations } as SluiceEvent, ctx())[0]!.body.JSON.events as any[])[0].event_id;
  expect(eventIdOf({ type: "identify" })).toBe(9);
  expect(eventIdOf({ type: "track", event: "Clicked" })).toBe(9);
  expect(eventIdOf({ type: "page", name: "Home" })).toBe(9);
  expect(eventIdOf({ type: "screen", name: "Home" })).toBe(9);
  expect(eventIdOf({ type: "track", event: "Paid", properties: { revenue: 4, revenue_type: "Purchased" } })).toBeUndefined();
  expect(eventIdOf({ type: "group", groupId: "g-1" })).toBeUndefined();
  const alias = amplitude.transform({ ...base, type: "alias", previousId: "old-1", integrations }, ctx())[0]!;
  expect(JSON.parse((alias.body.FORM as any).mapping[0]).event_id).toBe(9);
});

let sluice: TestServer;
const sink = startSink((r) => new Response(r.path.includes("deletions") ? "{}" : "{\"code\":200}"));
beforeAll(async () => {
  sluice = await startSluice({ args: ["--destination-base-url", `AM=${sink.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await sluice.stop();
  sink.stop();
  cleanup(sluice.dataDir);
});

test("AM end to end: reverse-ETL identify and several users' tracks → /batch with device_id from the external id, per-user order kept", async () => {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: "amp-e2e", type: "AM", config: { apiKey: "e2e-key" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const { type: _t, messageId: _m, ...identify } = retlIdentify;
  const batch = [{ type: "identify", ...identify, userId: "retl-user-1" }];
  for (const user of ["buyer-1", "buyer-2"]) for (let k = 0; k < 3; k++) batch.push({ type: "track", userId: user, event: `step ${k}` } as any);
  expect((await sendEvent(sluice.url, src.writeKey, "batch", { batch })).status).toBe(200);
  const mine = () => sink.received.filter((r) => r.body?.api_key === "e2e-key");
  const events = () => mine().flatMap((r) => r.body.events ?? []);
  await waitFor(() => events().length >= 7, { what: "7 events at the Amplitude stand-in" });
  expect(mine().every((r) => r.method === "POST" && r.path === "/batch" && r.headers["content-type"] === "application/json")).toBe(true);
  expect(mine().length).toBeLessThan(7);
  const identified = events().find((e: any) => e.event_type === "$identify");
  expect(identified).toMatchObject({ user_id: "retl-user-1", device_id: "lynnanderson@smith.net", os_version: "test os", platform: "Web" });
  expect(identified.user_properties.device_id).toBe("lynnanderson@smith.net");
  for (const user of ["buyer-1", "buyer-2"]) {
    expect(events().filter((e: any) => e.user_id === user).map((e: any) => e.event_type)).toEqual(["step 0", "step 1", "step 2"]);
  }
});

test("AM end to end: suppress_with_delete reaches the User Privacy API with Basic apiKey:apiSecret; the deletion completes", async () => {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: "amp-del", type: "AM", config: { apiKey: "del-key", apiSecret: "del-secret" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const reg = await api(sluice.url, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [dst.json.id], users: [{ userId: "gone-user-1" }] });
  expect(reg.status).toBe(201);
  const call = await waitFor(() => sink.received.find((r) => r.path === "/api/2/deletions/users" && r.body?.user_ids?.includes("gone-user-1")), { what: "the deletion call" });
  expect(call.method).toBe("POST");
  expect(call.headers.authorization).toBe(`Basic ${btoa("del-key:del-secret")}`);
  expect(call.body).toEqual({ user_ids: ["gone-user-1"], requester: "RudderStack", ignore_invalid_id: "true" });
  const deletionOf = async () => {
    const list = (await api(sluice.url, "GET", "/v2/regulations")).json;
    const items: any[] = Array.isArray(list) ? list : (list.regulations ?? list.items ?? list.data ?? []);
    return items.find((r) => JSON.stringify(r).includes("gone-user-1"))?.deletion;
  };
  await waitFor(async () => (await deletionOf())?.[0]?.status === "complete", { what: "deletion complete" });
});

// RudderStack router fixture "Test 0": a web identify with context.traits only, and a page with request_ip.
const routerContext = {
  app: { build: "1.0.0", name: "RudderLabs JavaScript SDK", namespace: "com.rudderlabs.javascript", version: "1.0.0" },
  library: { name: "RudderLabs JavaScript SDK", version: "1.0.0" },
  userAgent: retlContext.userAgent,
  locale: "en-US",
  os: { name: "", version: "" },
  screen: { density: 2 },
  page: { path: "/destinations/amplitude", referrer: "", search: "", title: "", url: "https://docs.rudderstack.com/destinations/amplitude", category: "destination", ...retlContext.page },
};
const webDevice = { os_name: "Chrome", os_version: "77.0.3865.90", device_model: "Mac", library: "rudderstack", platform: "Web", app_name: "RudderLabs JavaScript SDK", app_version: "1.0.0", language: "en-US", session_id: -1 };
const eventsOf = (event: SluiceEvent, config: Record<string, any>) => amplitude.transform(event, ctx(config)).map((r) => r.body.JSON);

test("AM web identify with context.traits → city/country top-level, address spread into user_properties (router fixture Test 0)", () => {
  const event: SluiceEvent = {
    channel: "web",
    context: {
      ...routerContext,
      ip: "0.0.0.0",
      traits: { anonymousId: "123456", email: "test@rudderstack.com", address: { city: "kolkata", country: "India", postalCode: 712136, state: "WB", street: "" }, ip: "0.0.0.0", age: 26 },
    },
    type: "identify",
    messageId: "84e26acc-56a5-4835-8233-591137fca468",
    session_id: "3049dc4c-5a95-4ccd-a3e7-d74a7e411f22",
    originalTimestamp: "2019-10-14T09:03:17.562Z",
    anonymousId: "123456",
    userId: "123456",
    integrations: { All: true },
    sentAt: "2019-10-14T09:03:22.563Z",
  };
  expect(eventsOf(event, { apiKey: "abcde", groupTypeTrait: "email", groupValueTrait: "age" })).toEqual([
    {
      api_key: "abcde",
      events: [
        {
          ...webDevice,
          device_id: "123456",
          insert_id: "84e26acc-56a5-4835-8233-591137fca468",
          city: "kolkata",
          country: "India",
          user_properties: {
            initial_referrer: "https://docs.rudderstack.com",
            initial_referring_domain: "docs.rudderstack.com",
            anonymousId: "123456",
            email: "test@rudderstack.com",
            postalCode: 712136,
            state: "WB",
            street: "",
            ip: "0.0.0.0",
            age: 26,
          },
          event_type: "$identify",
          time: 1571043797562,
          user_id: "123456",
          ip: "0.0.0.0",
        },
      ],
      options: { min_id_length: 1 },
    },
  ]);
});

test("AM web page → 'Viewed <name> Page', ip from request_ip when context.ip is absent (router fixture Test 0)", () => {
  const properties = { ...routerContext.page };
  const event: SluiceEvent = {
    channel: "web",
    context: { ...routerContext, traits: { email: "test@rudderstack.com", anonymousId: "12345" } },
    request_ip: "1.1.1.1",
    type: "page",
    messageId: "5e10d13a-bf9a-44bf-b884-43a9e591ea71",
    session_id: "3049dc4c-5a95-4ccd-a3e7-d74a7e411f22",
    originalTimestamp: "2019-10-14T11:15:18.299Z",
    anonymousId: "00000000000000000000000000",
    userId: "12345",
    properties,
    integrations: { All: true },
    name: "ApplicationLoaded",
    sentAt: "2019-10-14T11:15:53.296Z",
  };
  expect(eventsOf(event, { apiKey: "abcde" })).toEqual([
    {
      api_key: "abcde",
      events: [
        {
          ...webDevice,
          device_id: "00000000000000000000000000",
          event_type: "Viewed ApplicationLoaded Page",
          event_properties: { ...properties, name: "ApplicationLoaded" },
          insert_id: "5e10d13a-bf9a-44bf-b884-43a9e591ea71",
          ip: "1.1.1.1",
          user_properties: {
            initial_referrer: "https://docs.rudderstack.com",
            initial_referring_domain: "docs.rudderstack.com",
            email: "test@rudderstack.com",
            anonymousId: "12345",
          },
          user_id: "12345",
          time: 1571051718299,
        },
      ],
      options: { min_id_length: 1 },
    },
  ]);
});

test("AM reverse-ETL group: the external id also lands in the Group Identify group_properties", () => {
  const event: SluiceEvent = {
    type: "group",
    messageId: "g-1",
    userId: "user-42",
    timestamp: ts,
    traits: { company: "Acme", plan: "gold" },
    context: { mappedToDestination: true, externalId: [{ id: "dev-9", identifierType: "device_id", type: "AM-users" }] },
  };
  const [identify, groupCall] = amplitude.transform(event, ctx({ groupTypeTrait: "company", groupValueTrait: "plan" }));
  expect((identify!.body.JSON.events as any[])[0]).toMatchObject({ device_id: "dev-9", groups: { Acme: "gold" } });
  expect(JSON.parse((groupCall!.body.FORM as any).identification[0])).toEqual({
    group_type: "Acme",
    group_value: "gold",
    group_properties: { company: "Acme", plan: "gold", device_id: "dev-9" },
  });
});

// RudderStack processor fixtures "Test 73"–"Test 77": page/screen names, with and without user-defined templates.
test("AM page without name or category → 'Viewed  Page', no name in event_properties, event_id kept (fixture Test 73)", () => {
  const properties = { path: "/destinations/amplitude", referrer: "", search: "", title: "", url: "https://docs.rudderstack.com/destinations/amplitude", initial_referrer: "https://docs.rudderstack.com", initial_referring_domain: "docs.rudderstack.com" };
  const event: SluiceEvent = {
    channel: "web",
    context: { ...routerContext, page: { ...routerContext.page, title: "Home Page" }, traits: { email: "test@rudderstack.com", anonymousId: "12345" } },
    request_ip: "1.1.1.1",
    type: "page",
    messageId: "5e10d13a-bf9a-44bf-b884-43a9e591ea71",
    session_id: "3049dc4c-5a95-4ccd-a3e7-d74a7e411f22",
    originalTimestamp: "2019-10-14T11:15:18.299Z",
    anonymousId: "00000000000000000000000000",
    userId: "12345",
    properties,
    integrations: { All: true, Amplitude: { event_id: 2 } },
  };
  const [body] = eventsOf(event, { apiKey: "abcde", useUserDefinedPageEventName: false, userProvidedPageEventString: "Viewed {{context.page.title}} event." });
  expect((body!.events as any[])[0]).toEqual({
    ...webDevice,
    device_id: "00000000000000000000000000",
    event_properties: properties,
    insert_id: "5e10d13a-bf9a-44bf-b884-43a9e591ea71",
    ip: "1.1.1.1",
    event_id: 2,
    user_properties: { initial_referrer: "https://docs.rudderstack.com", initial_referring_domain: "docs.rudderstack.com", email: "test@rudderstack.com", anonymousId: "12345" },
    event_type: "Viewed  Page",
    user_id: "12345",
    time: 1571051718299,
  });
});

test("AM screen names: template 'My {{ event }} event.', template off, '{{ event }}', and an empty template → name (fixtures Tests 74–77)", () => {
  const screen = (over: Record<string, unknown>): SluiceEvent => ({
    type: "screen",
    messageId: "m-screen",
    userId: "identified user id",
    anonymousId: "anon-id-new",
    event: "Screen View",
    properties: { prop1: "5" },
    context: { ip: "14.5.67.21", library: { name: "http" } },
    timestamp: "2020-02-02T00:23:09.544Z",
    ...over,
  });
  const expected = (eventType: string, name: string) => ({
    device_id: "anon-id-new",
    insert_id: "m-screen",
    event_properties: { prop1: "5", name },
    user_properties: {},
    event_type: eventType,
    user_id: "identified user id",
    time: 1580602989544,
    session_id: -1,
    ip: "14.5.67.21",
    library: "rudderstack",
  });
  const first = (event: SluiceEvent, config: Record<string, any>) => (eventsOf(event, { apiKey: "abcde", ...config })[0]!.events as any[])[0];
  expect(first(screen({}), { useUserDefinedScreenEventName: true, userProvidedScreenEventString: "My {{ event }} event." })).toEqual(expected("My Screen View event.", "Screen View"));
  expect(first(screen({}), { useUserDefinedScreenEventName: false, userProvidedScreenEventString: "My {{ event }} event." })).toEqual(expected("Viewed Screen View Screen", "Screen View"));
  expect(first(screen({ event: "Screen same as event" }), { useUserDefinedScreenEventName: true, userProvidedScreenEventString: "{{ event }}" })).toEqual(
    expected("Screen same as event", "Screen same as event"),
  );
  expect(first(screen({ event: undefined, name: "Screen" }), { useUserDefinedScreenEventName: true, userProvidedScreenEventString: "" })).toEqual(expected("Screen", "Screen"));
});

test("AM alias: top-level traits named global_user_id, user_id or event_id win over the mapping (RudderStack's reverse-ETL rule)", () => {
  const event: SluiceEvent = { ...base, type: "alias", previousId: "old-1", traits: { user_id: "mapped-old", event_id: "7" }, integrations: { Amplitude: { event_id: 3 } } };
  const [req] = amplitude.transform(event, ctx());
  expect(JSON.parse((req!.body.FORM as any).mapping[0])).toEqual({
    global_user_id: "user-42",
    user_id: "mapped-old",
    event_id: "7",
    user_properties: { utm_source: "google", utm_medium: "cpc" },
  });
});

// Cases from RudderStack's test/integrations/destinations/am/processor/data.ts (rudder-transformer 0695b86c).
const amFx = (config: Record<string, any> = {}) =>
  ctx({ apiKey: "abcde", groupTypeTrait: "email", groupValueTrait: "age", trackProductsOnce: true, trackRevenuePerProduct: false, ...config });
const amOrder = (properties: Record<string, any>, fields: Record<string, any> = {}): SluiceEvent => ({
  type: "track",
  event: "Order Completed",
  sentAt: "2020-08-14T05:30:30.118Z",
  context: {
    source: "test",
    traits: { anonymousId: "50be5c78-6c3f-4b60-be84-97805a316fb1" },
    library: { name: "rudder-sdk-ruby-sync", version: "1.0.6" },
  },
  messageId: "7208bbb6-2c4e-45bb-bf5b-ad426f3593e9",
  timestamp: "2020-08-14T05:30:30.118Z",
  properties,
  anonymousId: "50be5c78-6c3f-4b60-be84-97805a316fb1",
  integrations: { S3: false, All: true },
  ...fields,
});
const ORDER = {
  tax: 2,
  total: 27.5,
  coupon: "hasbros",
  revenue: 48,
  quantity: 2,
  currency: "USD",
  discount: 2.5,
  order_id: "50314b8e9bcf000000000000",
  shipping: 3,
  subtotal: 22.5,
  affiliation: "Google Store",
  checkout_id: "fksdjfsdjfisjf9sdfjsd9f",
};

test("AM RudderStack fixture: track without an event name and an unsupported type are refused with RudderStack's texts", () => {
  const { event: _e, ...noName } = amOrder({ ...ORDER, revenue_type: "Purchased" });
  expect(() => amplitude.transform(noName as SluiceEvent, amFx())).toThrow("Event not present. Please send event field");
  expect(() => amplitude.transform({ ...amOrder({}), type: "UNSUPPORTED-TYPE" }, amFx())).toThrow("message type not supported");
});

test("AM RudderStack fixture: revenue with revenue_type → price from revenue, quantity 1, revenue fields out of event_properties", () => {
  const [req] = amplitude.transform(amOrder({ ...ORDER, revenue_type: "Purchased" }), amFx());
  expect(req).toEqual({
    version: "1",
    type: "REST",
    method: "POST",
    endpoint: "https://api2.amplitude.com/2/httpapi",
    headers: { "Content-Type": "application/json" },
    params: {},
    body: {
      JSON: {
        api_key: "abcde",
        events: [
          {
            device_id: "50be5c78-6c3f-4b60-be84-97805a316fb1",
            quantity: 1,
            revenue: 48,
            revenueType: "Purchased",
            insert_id: "7208bbb6-2c4e-45bb-bf5b-ad426f3593e9",
            user_properties: { anonymousId: "50be5c78-6c3f-4b60-be84-97805a316fb1" },
            event_properties: {
              tax: 2,
              total: 27.5,
              coupon: "hasbros",
              revenue_type: "Purchased",
              currency: "USD",
              discount: 2.5,
              order_id: "50314b8e9bcf000000000000",
              shipping: 3,
              subtotal: 22.5,
              affiliation: "Google Store",
              checkout_id: "fksdjfsdjfisjf9sdfjsd9f",
            },
            event_type: "Order Completed",
            price: 48,
            time: 1597383030118,
            session_id: -1,
            library: "rudderstack",
          },
        ],
        options: { min_id_length: 1 },
      },
      JSON_ARRAY: {},
      XML: {},
      FORM: {},
    },
    files: {},
  });
});

test("AM RudderStack fixture: revenue with products, trackProductsOnce and no per-product revenue → one event keeping the products", () => {
  const products = [
    { sku: "45790-32", url: "https://www.example.com/product/path", name: "Monopoly: 3rd Edition", price: 19, category: "Games", quantity: 1, image_url: "https:///www.example.com/product/path.jpg", product_id: "507f1f77bcf86cd799439011" },
    { sku: "46493-32", name: "Uno Card Game", price: 3, category: "Games", quantity: 2, product_id: "505bd76785ebb509fc183733" },
  ];
  const reqs = amplitude.transform(amOrder({ ...ORDER, products }), amFx());
  expect(reqs).toHaveLength(1);
  const { revenue: _r, quantity: _q, ...rest } = ORDER;
  expect(reqs[0]!.body.JSON.events).toEqual([
    {
      device_id: "50be5c78-6c3f-4b60-be84-97805a316fb1",
      insert_id: "7208bbb6-2c4e-45bb-bf5b-ad426f3593e9",
      user_properties: { anonymousId: "50be5c78-6c3f-4b60-be84-97805a316fb1" },
      event_properties: { ...rest, products },
      event_type: "Order Completed",
      revenueType: "Purchased",
      price: 48,
      quantity: 1,
      revenue: 48,
      time: 1597383030118,
      session_id: -1,
      library: "rudderstack",
    },
  ]);
});
