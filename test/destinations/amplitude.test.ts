import { afterAll, beforeAll, expect, test } from "bun:test";
import { amplitude } from "../../src/destinations/amplitude";
import { AM_BATCH_LIMITS } from "../../src/destinations/amplitude/batch";
import { amplitudeUserAgent } from "../../src/destinations/user-agent";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";
import { type DestinationContext, type DestinationRequest, type SluiceEvent, TransformError } from "../../src/destinations/types";

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

/** An AM event's requests as the pipeline hands them to batch(): with the event's user as userKey. */
const transformedFor = (userKey: string, event: Record<string, any> & { type: string }, config: Record<string, any> = {}) =>
  amplitude.transform({ ...base, userId: userKey, ...event } as SluiceEvent, ctx(config)).map((r) => ({ ...r, userKey }));
const trackFor = (userKey: string, i: number) => transformedFor(userKey, { type: "track", event: `E${i}`, messageId: `${userKey}-m${i}` });
const shapeOf = (reqs: DestinationRequest[]) =>
  reqs.map((r) => [r.endpoint.replace("https://api2.amplitude.com/", ""), r.userKey, ((r.body.JSON.events as any[]) ?? []).map((e) => e.insert_id ?? e.event_type)]);
/** Runs `fn` with RudderStack's events-per-user-call limit lowered, as its router cases lower it. */
function withUserCallLimit<T>(limit: number, fn: () => T): T {
  const before = AM_BATCH_LIMITS.MAX_USERS_DEVICES_PER_BATCH;
  AM_BATCH_LIMITS.MAX_USERS_DEVICES_PER_BATCH = limit;
  try {
    return fn();
  } finally {
    AM_BATCH_LIMITS.MAX_USERS_DEVICES_PER_BATCH = before;
  }
}

test("AM batch → per user: a user's events share /batch calls (first call's body, options kept); a user's lone event goes as transformed; calls in order of their first event", () => {
  const reqs = [trackFor("user-1", 1), trackFor("user-2", 1), trackFor("user-1", 2), trackFor("abc", 1), trackFor("user-1", 3), trackFor("abc", 2)].flat();
  const batched = amplitude.batch!(reqs, ctx());
  expect(shapeOf(batched)).toEqual([
    ["batch", "user-1", ["user-1-m1", "user-1-m2", "user-1-m3"]],
    ["2/httpapi", "user-2", ["user-2-m1"]],
    ["batch", "abc", ["abc-m1", "abc-m2"]],
  ]);
  expect(batched[1]).toEqual(reqs[1]!);
  expect(batched[0]!.headers).toEqual({ "Content-Type": "application/json" });
  // A user_id under 5 characters is batched too: min_id_length goes with it.
  expect(batched[2]!.body.JSON).toEqual({ api_key: "am_key", events: [sent([reqs[3]!]), sent([reqs[5]!])], options: { min_id_length: 1 } });
  expect(amplitude.batch!([], ctx())).toEqual([]);
});

test("AM batch: group and alias calls go as transformed and end the user's batch, so the user's calls keep their order", () => {
  const groupConfig = { groupTypeTrait: "type", groupValueTrait: "value" };
  const reqs = [
    transformedFor("user-1", { type: "identify", messageId: "i1" }),
    transformedFor("user-1", { type: "group", messageId: "g1", traits: { type: "Company", value: "ABC" } }, groupConfig),
    transformedFor("user-1", { type: "track", event: "A", messageId: "t1" }),
    transformedFor("user-1", { type: "track", event: "B", messageId: "t2" }),
    transformedFor("user-1", { type: "alias", previousId: "old-1", messageId: "a1" }),
    transformedFor("user-1", { type: "page", name: "Home", messageId: "p1" }),
  ].flat();
  expect(shapeOf(amplitude.batch!(reqs, ctx(groupConfig)))).toEqual([
    ["batch", "user-1", ["i1"]],
    ["2/httpapi", "user-1", ["$identify"]],
    ["groupidentify", "user-1", []],
    ["batch", "user-1", ["t1", "t2"]],
    ["usermap", "user-1", []],
    ["batch", "user-1", ["p1"]],
  ]);
  // A user's only JSON event beside form calls is sent as transformed.
  const lone = [transformedFor("user-2", { type: "alias", previousId: "old-2" }), transformedFor("user-2", { type: "track", event: "A" })].flat();
  expect(amplitude.batch!(lone, ctx())).toEqual(lone);
});

test("AM batch: a revenue event's split-out products stay with it — alone when it is the user's only event, never cut between calls", () => {
  const config = { trackProductsOnce: false, trackRevenuePerProduct: false };
  const revenue = transformedFor("user-1", { type: "track", event: "Order Completed", messageId: "o1", properties: { revenue: 10, products: [{ product_id: "p1" }, { product_id: "p2" }] } }, config);
  expect(revenue.map((r) => sent([r]).insert_id)).toEqual(["o1", "o1-1", "o1-2"]);
  expect(amplitude.batch!(revenue, ctx(config))).toEqual(revenue);
  const identify = transformedFor("user-1", { type: "identify", messageId: "i1" }, config);
  withUserCallLimit(3, () => {
    expect(shapeOf(amplitude.batch!([...identify, ...revenue], ctx(config)))).toEqual([
      ["batch", "user-1", ["i1"]],
      ["batch", "user-1", ["o1", "o1-1", "o1-2"]],
    ]);
    expect(shapeOf(amplitude.batch!([...revenue, ...identify], ctx(config)))).toEqual([
      ["batch", "user-1", ["o1", "o1-1", "o1-2"]],
      ["batch", "user-1", ["i1"]],
    ]);
  });
});

test("AM batch limits: at most 1,000 events per call (RudderStack's) and 20MB of JSON (Amplitude's)", () => {
  const many = Array.from({ length: 1001 }, (_, i) => trackFor("user-1", i)).flat();
  expect(amplitude.batch!(many, ctx()).map((r) => (r.body.JSON.events as any[]).length)).toEqual([1000, 1]);
  const big = "x".repeat(7 * 1024 * 1024);
  const heavy = [1, 2, 3].flatMap((i) => transformedFor("user-1", { type: "track", event: "Upload", messageId: `h${i}`, properties: { blob: big } }));
  const calls = amplitude.batch!(heavy, ctx());
  expect(shapeOf(calls)).toEqual([
    ["batch", "user-1", ["h1", "h2"]],
    ["batch", "user-1", ["h3"]],
  ]);
  for (const c of calls) expect(Buffer.byteLength(JSON.stringify(c.body.JSON))).toBeLessThan(20 * 1024 * 1024);
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

test("AM user agents → the names Amplitude's fork of ua-parser-js (0.7.24, RudderStack's AM) gives: Chrome Mobile, iPhone / iPad, Mac, Linux", () => {
  // Each expectation is what @amplitude/ua-parser-js 0.7.24 answers for the agent.
  const cases: Array<[string, [string?, string?, string?, string?]]> = [
    [CHROME_MAC, ["Chrome", "77.0.3865.90", "Mac", undefined]],
    ["Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.91", ["Edge", "120.0.2210.91", "Windows", undefined]],
    ["Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1", ["Mobile Safari", "17.4", "iPhone", "Apple"]],
    ["Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1", ["Mobile Safari", "17.4", "iPad", "Apple"]],
    ["Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/124.0.6367.88 Mobile/15E148 Safari/604.1", ["Chrome Mobile", "124.0.6367.88", "iPhone", "Apple"]],
    ["Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.3 Safari/605.1.15", ["Safari", "17.3", "Mac", undefined]],
    ["Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Mobile Safari/537.36", ["Chrome Mobile", "121.0.0.0", "Android", "Samsung"]],
    // A tablet's Chrome says no "Mobile", so it stays Chrome.
    ["Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", ["Chrome", "120.0.0.0", "Android", "Samsung"]],
    ["Mozilla/5.0 (Linux; Android 13; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36", ["Samsung Browser", "23.0", "Android", "Samsung"]],
    ["Mozilla/5.0 (Linux; Android 13; Pixel 7 Build/TQ3A.230901.001; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/124.0.6367.82 Mobile Safari/537.36", ["Chrome WebView", "124.0.6367.82", "Android", "Google"]],
    ["Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0", ["Firefox", "121.0", "Linux", undefined]],
    ["Mozilla/5.0 (X11; Fedora; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0", ["Firefox", "125.0", "Linux", undefined]],
  ];
  // AM sends the browser as os_name/os_version, the OS as device_model and the vendor as device_manufacturer.
  for (const [ua, expected] of cases) {
    const event: SluiceEvent = { ...base, channel: "web", context: { userAgent: ua }, type: "track", event: "Clicked" };
    const f = sent(amplitude.transform(event, ctx()));
    expect([f.os_name, f.os_version, f.device_model, f.device_manufacturer]).toEqual(expected);
  }
  expect(amplitudeUserAgent(undefined)).toEqual({ browser: {}, os: {}, device: {} });
});

test("AM user agents: a crafted agent is read in bounded time (the fork RudderStack pins backtracks for seconds on this one)", () => {
  const crafted = `Mozilla/5.0 (Linux; Android 9; redmi${" ".repeat(5000)}!`;
  const started = performance.now();
  const f = sent(amplitude.transform({ ...base, channel: "web", context: { userAgent: crafted }, type: "track", event: "Clicked" }, ctx()));
  expect(performance.now() - started).toBeLessThan(1000);
  expect([f.platform, f.device_model]).toEqual(["Web", "Android"]);
});

test("AM user agents: one agent is parsed once, however many requests and events carry it", () => {
  const ua = "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Mobile Safari/537.36 sluice-cache-test";
  const first = amplitudeUserAgent(ua);
  expect(amplitudeUserAgent(ua)).toBe(first);
  expect(Object.isFrozen(first.browser)).toBe(true);
});

const webDevice = { os_name: "Chrome", os_version: "77.0.3865.90", device_model: "Mac", library: "rudderstack", platform: "Web", app_name: "RudderLabs JavaScript SDK", app_version: "1.0.0", language: "en-US", session_id: -1 };
// RudderStack's web identify fixtures (router Test 0, processor Tests 5, 11, 53, 59) are one call replayed with
// different traits and contexts, so its message fields and what its traits become are written once.
const webIdentifyMessage = {
  type: "identify",
  messageId: "84e26acc-56a5-4835-8233-591137fca468",
  session_id: "3049dc4c-5a95-4ccd-a3e7-d74a7e411f22",
  originalTimestamp: "2019-10-14T09:03:17.562Z",
  anonymousId: "123456",
  userId: "123456",
  integrations: { All: true },
};
const webIdentifyTraits = { anonymousId: "123456", email: "test@rudderstack.com", address: { city: "kolkata", country: "India", postalCode: 712136, state: "WB", street: "" }, ip: "0.0.0.0", age: 26 };
const webIdentifyUserProperties = {
  initial_referrer: "https://docs.rudderstack.com",
  initial_referring_domain: "docs.rudderstack.com",
  anonymousId: "123456",
  email: "test@rudderstack.com",
  postalCode: 712136,
  state: "WB",
  street: "",
  ip: "0.0.0.0",
  age: 26,
};
const webIdentifySent = {
  ...webDevice,
  device_id: "123456",
  insert_id: "84e26acc-56a5-4835-8233-591137fca468",
  ip: "0.0.0.0",
  user_properties: webIdentifyUserProperties,
  event_type: "$identify",
  time: 1571043797562,
  user_id: "123456",
  country: "India",
  city: "kolkata",
};

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
  ...webIdentifyMessage,
  sentAt: "2019-10-14T09:03:22.563Z",
};
const retlIdentifySent = {
  ...webIdentifySent,
  os_version: "test os",
  device_id: "lynnanderson@smith.net",
  user_properties: { ...webIdentifyUserProperties, device_id: "lynnanderson@smith.net" },
};

test("AM reverse-ETL identify: an external id typed device_id becomes device_id and user_properties.device_id (fixture Test 5)", () => {
  const [req] = amplitude.transform(structuredClone(retlIdentify), ctx({ apiKey: "abcde", groupTypeTrait: "email", groupValueTrait: "age" }));
  expect(req!.body.JSON).toEqual({ api_key: "abcde", events: [retlIdentifySent], options: { min_id_length: 1 } });
});

test("AM without mappedToDestination the external id is ignored: device_id is the anonymousId (fixture Test 7)", () => {
  const { mappedToDestination: _m, ...plainContext } = retlContext;
  const [req] = amplitude.transform({ ...structuredClone(retlIdentify), context: plainContext }, ctx({ apiKey: "abcde" }));
  const sentEvent = (req!.body.JSON.events as any[])[0];
  expect(sentEvent.device_id).toBe("123456");
  expect(sentEvent.user_properties.device_id).toBeUndefined();
});

/** A reverse-ETL context: the external id is the destination's own identifier of the given type. */
const mappedTo = (id: string, identifierType: string) => ({ mappedToDestination: true, externalId: [{ id, identifierType, type: "AM-users" }] });

test("AM reverse-ETL track with an external user_id: it becomes user_id and stays in user_properties; the caller's event is untouched", () => {
  const event: SluiceEvent = { type: "track", event: "Signed Up", messageId: "m-r1", timestamp: ts, traits: { plan: "pro" }, context: mappedTo("ext-user-1", "user_id") };
  const before = structuredClone(event);
  const sentEvent = (amplitude.transform(event, ctx())[0]!.body.JSON.events as any[])[0];
  expect(sentEvent.user_id).toBe("ext-user-1");
  expect(sentEvent.device_id).toBeUndefined();
  expect(sentEvent.user_properties).toEqual({ plan: "pro", user_id: "ext-user-1" });
  expect(event).toEqual(before);
});

test("AM event_id: identify, track, page, screen, group and alias carry it; revenue does not", () => {
  const integrations = { Amplitude: { event_id: 9 } };
  const eventIdOf = (e: Record<string, any>) => (amplitude.transform({ ...base, type: "track", ...e, integrations } as SluiceEvent, ctx())[0]!.body.JSON.events as any[])[0].event_id;
  expect(eventIdOf({ type: "identify" })).toBe(9);
  expect(eventIdOf({ type: "track", event: "Clicked" })).toBe(9);
  expect(eventIdOf({ type: "page", name: "Home" })).toBe(9);
  expect(eventIdOf({ type: "screen", name: "Home" })).toBe(9);
  expect(eventIdOf({ type: "track", event: "Paid", properties: { revenue: 4, revenue_type: "Purchased" } })).toBeUndefined();
  expect(eventIdOf({ type: "group", groupId: "g-1" })).toBe(9);
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

test("AM end to end: several users' events → calls of one user each, in each user's order; reverse-ETL identify takes device_id from the external id", async () => {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: "amp-e2e", type: "AM", config: { apiKey: "e2e-key" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const { type: _t, messageId: _m, ...identify } = retlIdentify;
  const batch = [{ type: "identify", ...identify, userId: "retl-user-1" }];
  for (let k = 0; k < 3; k++) for (const user of ["buyer-1", "buyer-2"]) batch.push({ type: "track", userId: user, event: `step ${k}` } as any);
  expect((await sendEvent(sluice.url, src.writeKey, "batch", { batch })).status).toBe(200);
  const mine = () => sink.received.filter((r) => r.body?.api_key === "e2e-key");
  const events = () => mine().flatMap((r) => r.body.events ?? []);
  await waitFor(() => events().length >= 7, { what: "7 events at the Amplitude stand-in" });
  for (const call of mine()) {
    expect(call.method).toBe("POST");
    expect(call.headers["content-type"]).toBe("application/json");
    // Per user: one user's events in each call, min_id_length kept; a lone event goes to /2/httpapi.
    expect(new Set(call.body.events.map((e: any) => e.user_id)).size).toBe(1);
    expect(call.body.options).toEqual({ min_id_length: 1 });
    expect(call.path).toBe(call.body.events.length === 1 ? "/2/httpapi" : "/batch");
  }
  expect(events().length).toBe(7);
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
const eventsOf = (event: SluiceEvent, config: Record<string, any>) => amplitude.transform(event, ctx(config)).map((r) => r.body.JSON);
const FX_PAGE = { ...routerContext.page };
const FX_REF = { initial_referrer: "https://docs.rudderstack.com", initial_referring_domain: "docs.rudderstack.com" };
/** The web page fixture (router Test 0, Tests 8, 9, 63, 70–73): "ApplicationLoaded" with request_ip and a string session_id. */
const fxPageEvent = (fields: Record<string, any> = {}): SluiceEvent => ({
  channel: "web",
  context: { ...routerContext, traits: { email: "test@rudderstack.com", anonymousId: "12345" } },
  request_ip: "1.1.1.1",
  type: "page",
  messageId: "5e10d13a-bf9a-44bf-b884-43a9e591ea71",
  session_id: "3049dc4c-5a95-4ccd-a3e7-d74a7e411f22",
  originalTimestamp: "2019-10-14T11:15:18.299Z",
  anonymousId: "00000000000000000000000000",
  userId: "12345",
  properties: FX_PAGE,
  integrations: { All: true },
  name: "ApplicationLoaded",
  sentAt: "2019-10-14T11:15:53.296Z",
  ...fields,
});
const fxPageSent = (fields: Record<string, any> = {}) => ({
  ...webDevice,
  device_id: "00000000000000000000000000",
  event_type: "Viewed ApplicationLoaded Page",
  event_properties: { ...FX_PAGE, name: "ApplicationLoaded" },
  insert_id: "5e10d13a-bf9a-44bf-b884-43a9e591ea71",
  ip: "1.1.1.1",
  user_properties: { ...FX_REF, email: "test@rudderstack.com", anonymousId: "12345" },
  user_id: "12345",
  time: 1571051718299,
  ...fields,
});

test("AM web identify with context.traits → city/country top-level, address spread into user_properties (router fixture Test 0)", () => {
  const event: SluiceEvent = {
    channel: "web",
    context: { ...routerContext, ip: "0.0.0.0", traits: webIdentifyTraits },
    ...webIdentifyMessage,
    sentAt: "2019-10-14T09:03:22.563Z",
  };
  expect(eventsOf(event, { apiKey: "abcde", groupTypeTrait: "email", groupValueTrait: "age" })).toEqual([
    { api_key: "abcde", events: [webIdentifySent], options: { min_id_length: 1 } },
  ]);
});

test("AM web page → 'Viewed <name> Page', ip from request_ip when context.ip is absent (router fixture Test 0)", () => {
  expect(eventsOf(fxPageEvent(), { apiKey: "abcde" })).toEqual([{ api_key: "abcde", events: [fxPageSent()], options: { min_id_length: 1 } }]);
});

test("AM reverse-ETL group: the external id also lands in the Group Identify group_properties", () => {
  const event: SluiceEvent = { type: "group", messageId: "g-1", userId: "user-42", timestamp: ts, traits: { company: "Acme", plan: "gold" }, context: mappedTo("dev-9", "device_id") };
  const [identify, groupCall] = amplitude.transform(event, ctx({ groupTypeTrait: "company", groupValueTrait: "plan" }));
  expect((identify!.body.JSON.events as any[])[0]).toMatchObject({ device_id: "dev-9", groups: { Acme: "gold" } });
  expect(JSON.parse((groupCall!.body.FORM as any).identification[0])).toEqual({
    group_type: "Acme",
    group_value: "gold",
    group_properties: { company: "Acme", plan: "gold", device_id: "dev-9" },
  });
});

// RudderStack processor fixtures "Test 73"–"Test 77": page/screen names, with and without user-defined templates.
/** RudderStack's http-source fixtures carry no messageId (so no insert_id is sent). */
const fxHttp = (event: Record<string, any>) => event as SluiceEvent;
/** The http screen fixture (Tests 26, 50–52, 62, 74–77) and what it sends without a template. */
const fxHttpScreen = (fields: Record<string, any> = {}) =>
  fxHttp({
    type: "screen",
    userId: "identified user id",
    anonymousId: "anon-id-new",
    event: "Screen View",
    properties: { prop1: "5" },
    context: { ip: "14.5.67.21", library: { name: "http" } },
    timestamp: "2020-02-02T00:23:09.544Z",
    ...fields,
  });
const fxHttpScreenSent = (fields: Record<string, any> = {}) => ({
  device_id: "anon-id-new",
  event_properties: { prop1: "5", name: "Screen View" },
  user_properties: {},
  event_type: "Viewed Screen View Screen",
  user_id: "identified user id",
  time: 1580602989544,
  session_id: -1,
  ip: "14.5.67.21",
  library: "rudderstack",
  ...fields,
});
test("AM page without name or category → 'Viewed  Page', no name in event_properties, event_id kept (fixture Test 73)", () => {
  const { category: _c, ...properties } = FX_PAGE;
  const event = fxPageEvent({
    context: { ...fxPageEvent().context, page: { ...FX_PAGE, title: "Home Page" } },
    properties,
    integrations: { All: true, Amplitude: { event_id: 2 } },
    name: undefined,
    sentAt: undefined,
  });
  const [body] = eventsOf(event, { apiKey: "abcde", useUserDefinedPageEventName: false, userProvidedPageEventString: "Viewed {{context.page.title}} event." });
  expect((body!.events as any[])[0]).toEqual(fxPageSent({ event_properties: properties, event_id: 2, event_type: "Viewed  Page" }));
});

test("AM screen names: template 'My {{ event }} event.', template off, '{{ event }}', and an empty template → name (fixtures Tests 74–77)", () => {
  const screen = (over: Record<string, unknown>) => fxHttpScreen({ messageId: "m-screen", ...over });
  const expected = (eventType: string, name: string) => fxHttpScreenSent({ insert_id: "m-screen", event_properties: { prop1: "5", name }, event_type: eventType });
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
  const { revenue: _r, quantity: _q, ...withoutRevenueFields } = ORDER;
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
            event_properties: { ...withoutRevenueFields, revenue_type: "Purchased" },
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

// Processor fixtures Tests 8–77 of the same file (rudder-transformer 0695b86c).
const FX_CAMPAIGN = { source: "google", medium: "medium", term: "keyword", content: "some content", name: "some campaign", test: "other value" };
const FX_UTM = { utm_source: "google", utm_medium: "medium", utm_term: "keyword", utm_content: "some content", utm_name: "some campaign", utm_test: "other value" };
const UA_85 = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/85.0.4183.121 Safari/537.36";
const UA_86 = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_6) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/86.0.4240.198 Safari/537.36";
/** The web context of the group and alias fixtures (Chrome 85, campaign, app 1.1.5). */
const fxGroupContext = {
  ...routerContext,
  app: { ...routerContext.app, version: "1.1.5" },
  library: { name: "RudderLabs JavaScript SDK", version: "1.1.5" },
  traits: { name: "Shehan Study", category: "SampleIdentify", email: "test@rudderstack.com", plan: "Open source", logins: 5, createdAt: 1599264000 },
  userAgent: UA_85,
  campaign: FX_CAMPAIGN,
};
const fxGroupTraits = {
  KEY_3: { CHILD_KEY_92: "value_95", CHILD_KEY_102: "value_103" },
  KEY_2: { CHILD_KEY_92: "value_95", CHILD_KEY_102: "value_103" },
  name_trait: "Company",
  value_trait: "ABC",
};
const fxGroup = (fields: Record<string, any> = {}): SluiceEvent => ({
  channel: "web",
  context: fxGroupContext,
  type: "group",
  messageId: "e5034df0-a404-47b4-a463-76df99934fea",
  originalTimestamp: "2020-10-20T07:54:58.983Z",
  anonymousId: "my-anonymous-id-new",
  userId: "sampleusrRudder3",
  integrations: { All: true },
  groupId: "Sample_groupId23",
  traits: fxGroupTraits,
  ...fields,
});
const fxGroupEvent = {
  os_name: "Chrome",
  os_version: "85.0.4183.121",
  device_model: "Mac",
  platform: "Web",
  device_id: "my-anonymous-id-new",
  app_name: "RudderLabs JavaScript SDK",
  app_version: "1.1.5",
  language: "en-US",
  user_properties: { ...FX_REF, ...FX_UTM, Company: "ABC" },
  event_type: "$identify",
  groups: { Company: "ABC" },
  time: 1603180498983,
  user_id: "sampleusrRudder3",
  session_id: -1,
  library: "rudderstack",
};
const amRequest = (events: unknown[], host = "https://api2.amplitude.com") =>
  request(`${host}/2/httpapi`, { "Content-Type": "application/json" }, { JSON: { api_key: "abcde", events, options: { min_id_length: 1 } } });
const amForm = (path: string, form: Record<string, unknown>, host = "https://api2.amplitude.com") => request(`${host}/${path}`, {}, { FORM: { api_key: "abcde", ...form } });
const fxConfig = (config: Record<string, any> = {}) => ctx({ apiKey: "abcde", ...config });

test("AM RudderStack fixture: page with integrations.Amplitude.groups carries the groups (Tests 8, 9)", () => {
  expect(amplitude.transform(fxPageEvent(), fxConfig())).toEqual([amRequest([fxPageSent()])]);
  const withGroups = fxPageEvent({ integrations: { All: false, Amplitude: { groups: { Company: "ABC" } } } });
  expect(amplitude.transform(withGroups, fxConfig())).toEqual([amRequest([fxPageSent({ groups: { Company: "ABC" } })])]);
});

test("AM RudderStack fixture: identify reads top-level traits over context.traits; address spread, city/country top-level (Test 11)", () => {
  const event: SluiceEvent = {
    channel: "web",
    context: {
      ...routerContext,
      ip: "0.0.0.0",
      traits: { address: { city: "Sealdah", country: "India", postalCode: 700014, state: "WB", street: "" } },
    },
    traits: webIdentifyTraits,
    ...webIdentifyMessage,
  };
  expect(amplitude.transform(event, fxConfig())).toEqual([amRequest([webIdentifySent])]);
});

test("AM RudderStack fixture: session_id from '1598597129', 'user:1598597129', a number, or -1; then context.sessionId (Tests 12–15, 65–68)", () => {
  const identify = (fields: Record<string, any>): SluiceEvent => fxHttp({
    type: "identify",
    userId: "ubcdfghi0001",
    anonymousId: "123456",
    timestamp: "2020-08-28T09:00:00.000Z",
    context: {
      traits: { device_id: "adddd0001", device_os: "ios", device_make: "apple iphone", app_version: "v1.0", timestamp: "2020-08-28 09:00:00" },
      library: { name: "http" },
    },
    ...fields,
  });
  const expected = (session_id: number) => [
    amRequest([
      {
        // A context trait named device_id is only a user property: RudderStack reads field overrides from top-level traits.
        device_id: "123456",
        user_properties: { device_id: "adddd0001", device_os: "ios", device_make: "apple iphone", app_version: "v1.0", timestamp: "2020-08-28 09:00:00" },
        event_type: "$identify",
        time: Date.parse("2020-08-28T09:00:00.000Z"),
        user_id: "ubcdfghi0001",
        session_id,
        library: "rudderstack",
      },
    ]),
  ];
  expect(amplitude.transform(identify({ session_id: "1598597129" }), fxConfig())).toEqual(expected(1598597129));
  expect(amplitude.transform(identify({ session_id: "user:1598597129" }), fxConfig())).toEqual(expected(1598597129));
  expect(amplitude.transform(identify({ session_id: 1598597129 }), fxConfig())).toEqual(expected(1598597129));
  expect(amplitude.transform(identify({}), fxConfig())).toEqual(expected(-1));
  const sessionOf = (fields: Record<string, any>) => sent(amplitude.transform(identify(fields), fxConfig())).session_id;
  expect(sessionOf({ context: { sessionId: "1662393792" } })).toBe(1662393792);
  expect(sessionOf({ session_id: "3049dc4c-5a95-4ccd-a3e7-d74a7e411f22", context: { sessionId: "1662393792" } })).toBe(1662393792);
  expect(sessionOf({ context: { sessionId: "3049dc4c-5a95-4ccd-a3e7-d74a7e411f22" } })).toBe(-1);
});

test("AM RudderStack fixture: group from integrations groups, or from groupTypeTrait/groupValueTrait with group_properties (Tests 16, 17, 54)", () => {
  const viaIntegrations = fxGroup({ integrations: { All: true, Amplitude: { groups: { group_type: "Company", group_value: "ABC" } } } });
  expect(amplitude.transform(viaIntegrations, fxConfig())).toEqual([
    amRequest([fxGroupEvent]),
    amForm("groupidentify", { identification: ['{"group_type":"Company","group_value":"ABC"}'] }),
  ]);
  const identification = [
    '{"group_type":"Company","group_value":"ABC","group_properties":{"KEY_3":{"CHILD_KEY_92":"value_95","CHILD_KEY_102":"value_103"},"KEY_2":{"CHILD_KEY_92":"value_95","CHILD_KEY_102":"value_103"},"name_trait":"Company","value_trait":"ABC"}}',
  ];
  expect(amplitude.transform(fxGroup(), fxConfig({ groupTypeTrait: "name_trait", groupValueTrait: "value_trait" }))).toEqual([
    amRequest([fxGroupEvent]),
    amForm("groupidentify", { identification }),
  ]);
  const eu = "https://api.eu.amplitude.com";
  expect(amplitude.transform(fxGroup(), fxConfig({ groupTypeTrait: "name_trait", groupValueTrait: "value_trait", residencyServer: "EU" }))).toEqual([
    amRequest([fxGroupEvent], eu),
    amForm("groupidentify", { identification }, eu),
  ]);
});

test("AM RudderStack fixture: group with an integer integrations event_id carries it (Test 61)", () => {
  const event = fxGroup({ integrations: { All: true, Amplitude: { event_id: 3 } } });
  expect(amplitude.transform(event, fxConfig({ groupTypeTrait: "name_trait", groupValueTrait: "value_trait" }))[0]).toEqual(
    amRequest([{ ...fxGroupEvent, event_id: 3 }]),
  );
});

test("AM RudderStack fixture: group errors — a non-primitive group value, and neither user nor device id (Tests 18, 69)", () => {
  const config = fxConfig({ groupTypeTrait: "name_trait", groupValueTrait: "value_trait" });
  expect(() => amplitude.transform(fxGroup({ traits: { ...fxGroupTraits, value_trait: ["ABC"] } }), config)).toThrow(
    new TransformError("Group call parameters are not valid"),
  );
  expect(() => amplitude.transform(fxGroup({ userId: undefined, anonymousId: undefined }), config)).toThrow(
    new TransformError("Either of user ID or device ID fields must be specified"),
  );
});

test("AM RudderStack fixture: alias → /usermap mapping; unmap drops global_user_id; event_id kept; EU host (Tests 19, 20, 55, 64)", () => {
  const alias = (fields: Record<string, any> = {}): SluiceEvent => ({
    channel: "web",
    context: fxGroupContext,
    type: "alias",
    messageId: "dd46338d-5f83-493b-bd28-3b48f55d0be8",
    originalTimestamp: "2020-10-20T08:14:28.778Z",
    anonymousId: "my-anonymous-id-new",
    userId: "newUserIdAlias",
    integrations: { All: true },
    previousId: "sampleusrRudder3",
    ...fields,
  });
  const props = JSON.stringify({ ...FX_REF, ...FX_UTM });
  expect(amplitude.transform(alias(), fxConfig())).toEqual([
    amForm("usermap", { mapping: [`{"global_user_id":"newUserIdAlias","user_id":"sampleusrRudder3","user_properties":${props}}`] }),
  ]);
  expect(amplitude.transform(alias({ integrations: { All: false, Amplitude: { unmap: "sampleusrRudder3" } } }), fxConfig())).toEqual([
    amForm("usermap", { mapping: [`{"user_id":"sampleusrRudder3","user_properties":${props},"unmap":true}`] }),
  ]);
  expect(amplitude.transform(alias(), fxConfig({ residencyServer: "EU" }))).toEqual([
    amForm("usermap", { mapping: [`{"global_user_id":"newUserIdAlias","user_id":"sampleusrRudder3","user_properties":${props}}`] }, "https://api.eu.amplitude.com"),
  ]);
  expect(amplitude.transform(alias({ integrations: { All: true, Amplitude: { event_id: 67 } } }), fxConfig())).toEqual([
    amForm("usermap", { mapping: [`{"global_user_id":"newUserIdAlias","user_id":"sampleusrRudder3","event_id":67,"user_properties":${props}}`] }),
  ]);
});

/** The Android/iOS track fixtures (Tests 21–25, 47–49). */
const fxMobileTrack = (device: Record<string, any> | undefined, os: Record<string, any> | undefined, carrier = "Android"): SluiceEvent => ({
  type: "track",
  event: "Sample track event BEFORE IDENTIFY1**",
  userId: "0572f78fa49c648e",
  channel: "mobile",
  context: {
    ...(os ? { os } : {}),
    app: { name: "AMTestProject", build: "1", version: "1.0", namespace: "com.rudderstack.android.rudderstack.sampleAndroidApp" },
    ...(device ? { device } : {}),
    locale: "en-US",
    traits: { id: "0572f78fa49c648e", userId: "0572f78fa49c648e", address: {}, company: {}, anonymousId: "0572f78fa49c648e" },
    network: { wifi: true, carrier, cellular: true, bluetooth: false },
    timezone: "Asia/Kolkata",
    userAgent: "Dalvik/2.1.0 (Linux; U; Android 9; AOSP on IA Emulator Build/PSR1.180720.117)",
  },
  messageId: "1600355223510-93e866a7-dc74-4256-a5f4-a41f54532466",
  anonymousId: "0572f78fa49c648e",
  integrations: { All: true },
  originalTimestamp: "2020-09-17T15:07:03.515Z",
});
const fxMobileSent = (fields: Record<string, any>, carrier = "Android") => ({
  device_id: "0572f78fa49c648e",
  carrier,
  app_name: "AMTestProject",
  app_version: "1.0",
  language: "en-US",
  insert_id: "1600355223510-93e866a7-dc74-4256-a5f4-a41f54532466",
  user_properties: { id: "0572f78fa49c648e", userId: "0572f78fa49c648e", address: {}, company: {}, anonymousId: "0572f78fa49c648e" },
  event_type: "Sample track event BEFORE IDENTIFY1**",
  user_id: "0572f78fa49c648e",
  time: 1600355223515,
  session_id: -1,
  library: "rudderstack",
  ...fields,
});

test("AM RudderStack fixture: mobile track → device_brand from the manufacturer, adid for Android, idfa/idfv for the Apple family (Tests 21–25, 47–49)", () => {
  expect(amplitude.transform(fxMobileTrack(undefined, { name: "Android", version: "9" }), fxConfig())).toEqual([
    amRequest([fxMobileSent({ os_name: "Android", os_version: "9" })]),
  ]);
  const android = { id: "0572f78fa49c648e", name: "generic_x86_arm", type: "Android", model: "AOSP on IA Emulator", manufacturer: "Google", adTrackingEnabled: true, advertisingId: "44c97318-9040-4361-8bc7-4eb30f665ca8" };
  const androidSent = { os_name: "Android", os_version: "9", device_model: "AOSP on IA Emulator", device_manufacturer: "Google", platform: "Android", device_brand: "Google" };
  expect(amplitude.transform(fxMobileTrack(android, { name: "Android", version: "9" }), fxConfig())).toEqual([
    amRequest([fxMobileSent({ ...androidSent, adid: "44c97318-9040-4361-8bc7-4eb30f665ca8" })]),
  ]);
  const { advertisingId: _a, ...noAdId } = android;
  expect(amplitude.transform(fxMobileTrack({ ...noAdId, adTrackingEnabled: false }, { name: "Android", version: "9" }), fxConfig())).toEqual([
    amRequest([fxMobileSent(androidSent)]),
  ]);
  const iphone = { id: "0572f78fa49c648e", name: "iphone_xr_64", type: "iOS", model: "iPhone XR", manufacturer: "Apple", adTrackingEnabled: true, advertisingId: "1606e649-c97e-4d5f-a2ef-b81dbc66741a" };
  const iosSent = { os_name: "iOS", os_version: "14.4.1", device_model: "iPhone XR", device_manufacturer: "Apple", platform: "iOS", device_brand: "Apple", idfv: "0572f78fa49c648e" };
  expect(amplitude.transform(fxMobileTrack(iphone, { name: "iOS", version: "14.4.1" }, "AT&T"), fxConfig())).toEqual([
    amRequest([fxMobileSent({ ...iosSent, idfa: "1606e649-c97e-4d5f-a2ef-b81dbc66741a" }, "AT&T")]),
  ]);
  for (const type of ["watchos", "ipados", "tvos"]) {
    const device = { id: "0572f78fa49c648e", type, manufacturer: "Apple", adTrackingEnabled: true, advertisingId: "1606e649-c97e-4d5f-a2ef-b81dbc66741a" };
    expect(amplitude.transform(fxMobileTrack(device, undefined, "AT&T"), fxConfig())).toEqual([
      amRequest([
        fxMobileSent(
          { device_manufacturer: "Apple", platform: type, device_brand: "Apple", idfa: "1606e649-c97e-4d5f-a2ef-b81dbc66741a", idfv: "0572f78fa49c648e" },
          "AT&T",
        ),
      ]),
    ]);
  }
});

test("AM RudderStack fixture: mapDeviceBrand sends context.device.brand on web and mobile, not the manufacturer (Tests 50–52)", () => {
  const device = { brand: "testBrand", manufacturer: "testManufacturer" };
  const mobile = fxMobileTrack(device, { name: "Android", version: "9" });
  expect(amplitude.transform({ ...mobile, context: { ...mobile.context, page: FX_PAGE } }, fxConfig({ mapDeviceBrand: true }))).toEqual([
    amRequest([
      fxMobileSent({
        os_name: "Android",
        os_version: "9",
        device_manufacturer: "testManufacturer",
        device_brand: "testBrand",
        user_properties: { ...FX_REF, id: "0572f78fa49c648e", userId: "0572f78fa49c648e", address: {}, company: {}, anonymousId: "0572f78fa49c648e" },
      }),
    ]),
  ]);
  const screen = fxHttpScreen({ channel: "web", context: { ip: "14.5.67.21", device, library: { name: "http" } } });
  expect(amplitude.transform(screen, fxConfig({ mapDeviceBrand: true }))).toEqual([
    amRequest([fxHttpScreenSent({ device_manufacturer: "testManufacturer", device_brand: "testBrand" })]),
  ]);
  // Web identify: the manufacturer comes from the context when the agent names no vendor.
  const identify: SluiceEvent = {
    channel: "web",
    context: { ...routerContext, device, ip: "0.0.0.0", traits: { anonymousId: "123456", age: 26 } },
    type: "identify",
    messageId: "m",
    originalTimestamp: "2019-10-14T09:03:17.562Z",
    anonymousId: "123456",
    userId: "123456",
  };
  expect(sent(amplitude.transform(identify, fxConfig({ mapDeviceBrand: true })))).toMatchObject({ device_manufacturer: "testManufacturer", device_brand: "testBrand" });
});

test("AM RudderStack fixture: http screen → 'Viewed <event> Screen', empty user_properties, integrations event_id (Tests 26, 62)", () => {
  const screen = fxHttpScreen({ properties: { prop1: "5", event_id: 7 }, integrations: { All: true, Amplitude: { event_id: 7 } } });
  expect(amplitude.transform(screen, fxConfig())).toEqual([
    amRequest([fxHttpScreenSent({ event_id: 7, event_properties: { prop1: "5", event_id: 7, name: "Screen View" } })]),
  ]);
});

test("AM RudderStack fixture: trackProductsOnce/trackRevenuePerProduct combinations (Tests 27–34)", () => {
  const products = [
    { sku: "45790-32", url: "https://www.example.com/product/path", name: "Monopoly: 3rd Edition", price: 19, category: "Games", quantity: 1, image_url: "https:///www.example.com/product/path.jpg", product_id: "507f1f77bcf86cd799439011" },
    { sku: "46493-32", name: "Uno Card Game", price: 3, category: "Games", quantity: 2, product_id: "505bd76785ebb509fc183733" },
  ];
  const order = { ...ORDER, price: 25 };
  const { revenue: _r, price: _p, quantity: _q, ...rest } = order;
  const head = {
    device_id: "50be5c78-6c3f-4b60-be84-97805a316fb1",
    user_properties: { anonymousId: "50be5c78-6c3f-4b60-be84-97805a316fb1" },
    time: 1597383030118,
    session_id: -1,
    library: "rudderstack",
  };
  const revenueOrder = { ...head, insert_id: "7208bbb6-2c4e-45bb-bf5b-ad426f3593e9", event_type: "Order Completed", revenueType: "Purchased", price: 25, quantity: 2, revenue: 48 };
  const plainOrder = { ...head, insert_id: "7208bbb6-2c4e-45bb-bf5b-ad426f3593e9", event_type: "Order Completed", event_properties: order };
  const purchased = (i: number, withRevenue: boolean) => {
    const { price, quantity, product_id, ...props } = products[i]!;
    return {
      ...head,
      event_type: "Product Purchased",
      insert_id: `7208bbb6-2c4e-45bb-bf5b-ad426f3593e9-${i + 1}`,
      ...(withRevenue ? { event_properties: props, productId: product_id, revenueType: "Purchased", price, quantity } : { event_properties: products[i] }),
    };
  };
  const run = (properties: Record<string, any>, trackProductsOnce: boolean, trackRevenuePerProduct: boolean) =>
    amplitude.transform(amOrder(properties), amFx({ trackProductsOnce, trackRevenuePerProduct })).map((r) => sent([r]));
  // Test 27: products split out, the order keeps its revenue; products without revenue fields.
  expect(run({ ...order, products }, false, false)).toEqual([{ ...revenueOrder, event_properties: rest }, purchased(0, false), purchased(1, false)]);
  // Test 28: one event, products kept, revenue on the order.
  expect(run({ ...order, products }, true, false)).toEqual([{ ...revenueOrder, event_properties: { ...rest, products } }]);
  // Test 29: products split out with revenue, the order without products and without revenue fields.
  expect(run({ ...order, products }, false, true)).toEqual([plainOrder, purchased(0, true), purchased(1, true)]);
  // Test 30: the order keeps its products, no revenue fields; products split out with revenue.
  expect(run({ ...order, products }, true, true)).toEqual([{ ...plainOrder, event_properties: { ...order, products } }, purchased(0, true), purchased(1, true)]);
  // Tests 31–34: without products the order always carries the revenue.
  for (const [once, perProduct] of [[true, true], [true, false], [false, true], [false, false]] as const) {
    expect(run(order, once, perProduct)).toEqual([{ ...revenueOrder, event_properties: rest }]);
  }
});

test("AM RudderStack fixture: identify trait operations $add, $setOnce, $append, $prepend; empty names skipped; no traits → no operations (Tests 35–39, 43)", () => {
  const traits = { city: "Durgapur", name: "Manashi", phone: "990099009900", friends: 3, age: 12, subjects: 5, experience: 2 };
  const identify = (page: Record<string, any>, withTraits = true): SluiceEvent => ({
    type: "identify",
    userId: "User_111",
    channel: "web",
    context: {
      os: { name: "", version: "" },
      app: { name: "RudderLabs JavaScript SDK", build: "1.0.0", version: "1.1.8", namespace: "com.rudderlabs.javascript" },
      page,
      locale: "en-GB",
      ...(withTraits ? { traits } : {}),
      campaign: {},
      userAgent: UA_86,
    },
    messageId: "6f08cc45-95c3-40c1-90f2-2f44a92947ef",
    anonymousId: "2f8b0ba7-d76e-4b91-9577-d1b6ebd68946",
    integrations: { All: true },
    originalTimestamp: "2020-11-20T06:18:22.342Z",
  });
  const localPage = { url: "http://localhost:1111/RudderAmplitude.html", path: "/RudderAmplitude.html", title: "Amplitude Testing By Rudder", search: "", referrer: "http://localhost:1111/" };
  const identifySent = (user_properties: Record<string, any>) =>
    amRequest([
      {
        os_name: "Chrome",
        os_version: "86.0.4240.198",
        device_model: "Mac",
        platform: "Web",
        device_id: "2f8b0ba7-d76e-4b91-9577-d1b6ebd68946",
        app_name: "RudderLabs JavaScript SDK",
        app_version: "1.1.8",
        language: "en-GB",
        insert_id: "6f08cc45-95c3-40c1-90f2-2f44a92947ef",
        user_properties,
        event_type: "$identify",
        time: 1605853102342,
        user_id: "User_111",
        session_id: -1,
        library: "rudderstack",
      },
    ]);
  const increment = [{ traits: "age" }, { traits: "friends" }];
  expect(amplitude.transform(identify(FX_PAGE), amFx({ traitsToIncrement: increment }))).toEqual([
    identifySent({ ...FX_REF, name: "Manashi", phone: "990099009900", subjects: 5, experience: 2, $add: { age: 12, friends: 3 } }),
  ]);
  const setOnce = [{ traits: "subjects" }, { traits: "" }];
  expect(amplitude.transform(identify(localPage), amFx({ traitsToSetOnce: setOnce }))).toEqual([
    identifySent({ name: "Manashi", phone: "990099009900", friends: 3, age: 12, experience: 2, $setOnce: { subjects: 5 } }),
  ]);
  const append = [{ traits: "name" }, { traits: "" }];
  expect(amplitude.transform(identify(localPage), amFx({ traitsToAppend: append }))).toEqual([
    identifySent({ phone: "990099009900", friends: 3, age: 12, subjects: 5, experience: 2, $append: { name: "Manashi" } }),
  ]);
  const prepend = [{ traits: "experience" }, { traits: "" }];
  expect(amplitude.transform(identify(localPage), amFx({ traitsToPrepend: prepend }))).toEqual([
    identifySent({ name: "Manashi", phone: "990099009900", friends: 3, age: 12, subjects: 5, $prepend: { experience: 2 } }),
  ]);
  const all = amFx({ traitsToIncrement: increment, traitsToSetOnce: setOnce, traitsToAppend: append, traitsToPrepend: prepend });
  expect(amplitude.transform(identify(localPage), all)).toEqual([
    identifySent({ phone: "990099009900", $add: { age: 12, friends: 3 }, $setOnce: { subjects: 5 }, $append: { name: "Manashi" }, $prepend: { experience: 2 } }),
  ]);
  expect(amplitude.transform(identify(FX_PAGE, false), amFx({ traitsToIncrement: increment }))).toEqual([identifySent(FX_REF)]);
});

/** The Android track fixtures with location (Tests 40–46, 56–58). */
const fxLocationTrack = (location: Record<string, any>, fields: Record<string, any> = {}): SluiceEvent => ({
  type: "track",
  event: "App_Opened",
  userId: "ab419c3a-47ce-11ec-82ac-16a1bb813a59",
  channel: "mobile",
  context: {
    source: "test",
    traits: { anonymousId: "50be5c78-6c3f-4b60-be84-97805a31aaa1", address: { city: "kolkata", country: "India", postalCode: 712136, state: "WB", street: "" } },
    locale: "en-US",
    network: { carrier: "T-Mobile" },
    location,
    library: { name: "rudder-sdk-ruby-sync", version: "1.0.6" },
    os: { name: "Android", version: "11" },
    app: { version: "2.6.0 v3" },
    device: { type: "Android", model: "SM-A025M", manufacturer: "samsung" },
  },
  messageId: "7208abb6-2c4e-45bb-bf5b-aa426f3593a2",
  timestamp: "2020-08-14T05:30:30.118Z",
  properties: { externalID: "1637170658229-3961832492194264209" },
  integrations: { All: true },
  ...fields,
});
const fxLocationSent = (fields: Record<string, any>) => ({
  os_name: "Android",
  os_version: "11",
  device_model: "SM-A025M",
  device_manufacturer: "samsung",
  platform: "Android",
  carrier: "T-Mobile",
  app_version: "2.6.0 v3",
  language: "en-US",
  insert_id: "7208abb6-2c4e-45bb-bf5b-aa426f3593a2",
  user_properties: { anonymousId: "50be5c78-6c3f-4b60-be84-97805a31aaa1", address: { postalCode: 712136, state: "WB", street: "" } },
  event_properties: { externalID: "1637170658229-3961832492194264209" },
  event_type: "App_Opened",
  user_id: "ab419c3a-47ce-11ec-82ac-16a1bb813a59",
  device_brand: "samsung",
  time: 1597383030118,
  session_id: -1,
  library: "rudderstack",
  ...fields,
});
const FX_SF = {
  country: "United States",
  city: "San Francisco",
  region: "California",
  latitude: "37.7672319",
  longitude: "-122.4021353",
  dma: "San Francisco-Oakland-San Jose, CA",
};
const FX_SF_SENT = {
  region: "California",
  location_lat: "37.7672319",
  location_lng: "-122.4021353",
  dma: "San Francisco-Oakland-San Jose, CA",
  country: "United States",
  city: "San Francisco",
};

test("AM RudderStack fixture: location fields, country/city from the address when the location has none, no device_id without anonymousId (Tests 40–42, 45, 46)", () => {
  expect(amplitude.transform(fxLocationTrack(FX_SF), fxConfig())).toEqual([amRequest([fxLocationSent(FX_SF_SENT)])]);
  const { country: _c, city: _ci, region: _r, ...coords } = FX_SF;
  const { country: _sc, city: _sci, region: _sr, ...coordsSent } = FX_SF_SENT;
  expect(amplitude.transform(fxLocationTrack(coords), fxConfig())).toEqual([amRequest([fxLocationSent({ ...coordsSent, country: "India", city: "kolkata" })])]);
  expect(amplitude.transform(fxLocationTrack({}), fxConfig())).toEqual([amRequest([fxLocationSent({ country: "India", city: "kolkata" })])]);
  // A mobile screen named by `event`, with request_ip.
  const screen = fxLocationTrack(FX_SF, {
    type: "screen",
    event: "Home",
    userId: "9e187bff-2867-11ec-82ac-02cdd434d6bf",
    properties: { name: "Home", externalID: "1637763064335-7225034711957140329" },
    request_ip: "186.54.216.75",
    anonymousId: "066a37dc92b16284",
    messageId: "1639061715808-a934f1c2-7b55-4e78-bd4d-df209c30c8a1",
    timestamp: "2021-12-09T14:55:15.914Z",
  });
  expect(amplitude.transform(screen, fxConfig())).toEqual([
    amRequest([
      fxLocationSent({
        ...FX_SF_SENT,
        device_id: "066a37dc92b16284",
        event_properties: { name: "Home", externalID: "1637763064335-7225034711957140329" },
        insert_id: "1639061715808-a934f1c2-7b55-4e78-bd4d-df209c30c8a1",
        ip: "186.54.216.75",
        event_type: "Viewed Home Screen",
        user_id: "9e187bff-2867-11ec-82ac-02cdd434d6bf",
        time: 1639061715914,
      }),
    ]),
  ]);
});

test("AM RudderStack fixture: integrations event_id 3 and 0 are sent, the string '0' is not (Tests 56–58)", () => {
  const sentWith = (event_id: unknown) => amplitude.transform(fxLocationTrack(FX_SF, { integrations: { All: true, Amplitude: { event_id } } }), fxConfig());
  expect(sentWith(3)).toEqual([amRequest([fxLocationSent({ ...FX_SF_SENT, event_id: 3 })])]);
  expect(sentWith(0)).toEqual([amRequest([fxLocationSent({ ...FX_SF_SENT, event_id: 0 })])]);
  expect(sentWith("0")).toEqual([amRequest([fxLocationSent(FX_SF_SENT)])]);
});

test("AM RudderStack fixture: revenue 0 still counts as revenue: products split out, the order keeps them (Test 44)", () => {
  const products = [{ sku: "46493-32", name: "Uno Card Game", price: 3, category: "Games", quantity: 2, product_id: "505bd76785ebb509fc183733" }];
  const properties = { tax: 2, revenue: 0, price: 25, quantity: 2, currency: "USD", products };
  const event = fxLocationTrack({}, { event: "Order Completed", userId: "userID123", channel: undefined, properties });
  const reqs = amplitude.transform(event, fxConfig({ trackProductsOnce: true, trackRevenuePerProduct: true }));
  const { device_brand: _b, ...noBrand } = fxLocationSent({ country: "India", city: "kolkata", user_id: "userID123", event_type: "Order Completed", event_properties: properties });
  expect(reqs).toEqual([
    amRequest([noBrand]),
    amRequest([
      {
        ...noBrand,
        event_type: "Product Purchased",
        insert_id: "7208abb6-2c4e-45bb-bf5b-aa426f3593a2-1",
        event_properties: { sku: "46493-32", name: "Uno Card Game", category: "Games" },
        productId: "505bd76785ebb509fc183733",
        revenueType: "Purchased",
        price: 3,
        quantity: 2,
      },
    ]),
  ]);
});

test("AM RudderStack fixture: reverse-ETL identify on the EU host with an integrations event_id (Tests 53, 59)", () => {
  const expected = (host: string, extra: Record<string, any>) => amRequest([{ ...retlIdentifySent, ...extra }], host);
  expect(amplitude.transform(retlIdentify, fxConfig({ residencyServer: "EU" }))).toEqual([expected("https://api.eu.amplitude.com", {})]);
  const withEventId = { ...retlIdentify, session_id: undefined, integrations: { All: true, Amplitude: { event_id: 6 } } };
  expect(amplitude.transform(withEventId, fxConfig())).toEqual([expected("https://api2.amplitude.com", { event_id: 6 })]);
});

test("AM RudderStack fixture: user-defined page names — '{{ name }}' template, '{{name}}', empty template, and template off without a name (Tests 63, 70–73)", () => {
  const integrations = { All: true, Amplitude: { event_id: 2 } };
  const page = fxPageEvent({ integrations });
  expect(amplitude.transform(page, fxConfig())).toEqual([amRequest([fxPageSent({ event_id: 2 })])]);
  const named = (template: string) => fxConfig({ useUserDefinedPageEventName: true, userProvidedPageEventString: template });
  expect(amplitude.transform(page, named("My custom Page Name is {{ name }} . Custom Name."))).toEqual([
    amRequest([fxPageSent({ event_id: 2, event_type: "My custom Page Name is ApplicationLoaded . Custom Name." })]),
  ]);
  expect(amplitude.transform(page, named("{{name}}"))).toEqual([amRequest([fxPageSent({ event_id: 2, event_type: "ApplicationLoaded" })])]);
  expect(amplitude.transform(page, named(""))).toEqual([amRequest([fxPageSent({ event_id: 2, event_type: "ApplicationLoaded" })])]);
  const { category: _c, ...noCategory } = FX_PAGE;
  const unnamed = fxPageEvent({ integrations, name: undefined, properties: noCategory, context: { ...fxPageEvent().context, page: { ...FX_PAGE, title: "Home Page" } } });
  expect(amplitude.transform(unnamed, fxConfig({ useUserDefinedPageEventName: false, userProvidedPageEventString: "Viewed {{context.page.title}} event." }))).toEqual([
    amRequest([fxPageSent({ event_id: 2, event_type: "Viewed  Page", event_properties: noCategory })]),
  ]);
});

test("AM RudderStack fixture (deleteUsers): users without a userId skipped, 100 ids per call, Basic apiKey:apiSecret (deleteUsers Test 0, network.ts)", () => {
  const ids = Array.from({ length: 119 }, (_, i) => (i % 2 === 0 ? "test_user_id" : "user_sdk2"));
  const users = [{ userIderror: "user_sdk2" } as unknown as { userId: string }, ...ids.map((userId) => ({ userId }))];
  const deletion = (userIds: string[]) =>
    request("https://amplitude.com/api/2/deletions/users", { "Content-Type": "application/json", Authorization: "Basic MTIzNDphYmNk" }, {
      JSON: { user_ids: userIds, requester: "RudderStack", ignore_invalid_id: "true" },
    });
  expect(amplitude.deleteUsers!(users, ctx({ apiKey: "1234", apiSecret: "abcd" }))).toEqual([deletion(ids.slice(0, 100)), deletion(ids.slice(100))]);
});

test("AM RudderStack router (Test 1): five identifies and an alias of one user, one identify of another; 3 events per call as its case sets", () => {
  const identify = (userId: string, k: number) => transformedFor(userId, { type: "identify", messageId: `${userId}-${k}`, anonymousId: userId, traits: { [`trait${k}`]: `value${k}` } }, { apiKey: "am2" });
  const reqs = [identify("123456", 1), identify("123", 2), identify("123456", 3), identify("123456", 4), identify("123456", 5), identify("123456", 6)].flat();
  reqs.push(...transformedFor("123456", { type: "alias", previousId: "old", messageId: "a8" }, { apiKey: "am2" }));
  const batched = withUserCallLimit(3, () => amplitude.batch!(reqs, ctx({ apiKey: "am2" })));
  expect(shapeOf(batched)).toEqual([
    ["batch", "123456", ["123456-1", "123456-3", "123456-4"]],
    ["2/httpapi", "123", ["123-2"]],
    ["batch", "123456", ["123456-5", "123456-6"]],
    ["usermap", "123456", []],
  ]);
  expect(batched[0]!.body.JSON.options).toEqual({ min_id_length: 1 });
});
