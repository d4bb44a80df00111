import { expect, test } from "bun:test";
import { amplitude } from "../src/destinations/amplitude";
import { parseUserAgent } from "../src/destinations/user-agent";
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
