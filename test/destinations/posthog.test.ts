import { expect, test } from "bun:test";
import { posthog } from "../../src/destinations/posthog";
import { parseUserAgent } from "../../src/destinations/user-agent";
import { type DestinationContext, type SluiceEvent, TransformError } from "../../src/destinations/types";

const ctx = (config: Record<string, any> = {}, baseUrl?: string): DestinationContext => ({
  config: { teamApiKey: "phc_key", ...config },
  destination: { id: "dest-ph", name: "PostHog", workspaceId: "ws-1" },
  baseUrl,
});

const context = {
  ip: "10.1.1.1",
  library: { name: "RudderLabs JavaScript SDK", version: "3.0.1" },
  page: { url: "https://shop.example.com/cart?x=1", path: "/cart" },
  os: { name: "macOS" },
  campaign: { source: "newsletter", name: "spring" },
};
const ts = "2024-05-01T10:00:00.000Z";
const orig = "2024-05-01T09:59:59.000Z";
const base = { messageId: "m-1", userId: "u-1", anonymousId: "a-1", timestamp: ts, originalTimestamp: orig };
/** The default properties RudderStack derives from `context` above. */
const defaults = {
  $os: "macOS",
  $current_url: "https://shop.example.com/cart?x=1",
  $host: "shop.example.com",
  $pathname: "/cart",
  $lib: "RudderLabs JavaScript SDK",
  $lib_version: "3.0.1",
  $time: ts,
  $ip: "10.1.1.1",
  $timestamp: ts,
  $anon_distinct_id: "a-1",
  distinct_id: "u-1",
  utm_source: "newsletter",
  utm_campaign: "spring",
};
/** The defaults of an event with no context. */
const bare = { $time: ts, $timestamp: ts, $anon_distinct_id: "a-1", distinct_id: "u-1" };
const body = (event: SluiceEvent, config?: Record<string, any>): Record<string, any> => posthog.transform(event, ctx(config))[0]!.body.JSON;

test("POSTHOG track → POST app.posthog.com/batch, type capture, event name, properties merged with defaults", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Added to Cart", properties: { sku: "A", price: 3 }, context };
  const [req] = posthog.transform(event, ctx());
  expect(req).toEqual({
    version: "1",
    type: "REST",
    method: "POST",
    endpoint: "https://app.posthog.com/batch",
    headers: { "Content-Type": "application/json" },
    params: {},
    body: {
      JSON: {
        distinct_id: "u-1",
        messageId: "m-1",
        event: "Added to Cart",
        timestamp: ts,
        properties: { ...defaults, sku: "A", price: 3 },
        api_key: "phc_key",
        type: "capture",
      },
      JSON_ARRAY: {},
      XML: {},
      FORM: {},
    },
    files: {},
  });
});

test("POSTHOG web event (RudderStack's own example) → $os, $browser, $browser_version from the user agent; empty context values dropped", () => {
  const event: SluiceEvent = {
    channel: "web",
    context: {
      app: { build: "1.0.0", name: "RudderLabs JavaScript SDK", namespace: "com.rudderlabs.javascript", version: "1.1.7" },
      traits: { name: "Shehan Study", email: "c@rudderlabs.com", logins: 5 },
      library: { name: "RudderLabs JavaScript SDK", version: "1.1.7" },
      userAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/86.0.4240.111 Safari/537.36",
      locale: "en-GB",
      os: { name: "", version: "" },
      screen: { density: 2 },
      campaign: {},
      page: { path: "/Rectified.html", referrer: "http://localhost:1112/", initial_referrer: "https://search.example/", search: "", title: "", url: "http://localhost:1112/Rectified.html" },
      ip: "0.0.0.0",
    },
    type: "track",
    messageId: "07cd68e5",
    originalTimestamp: "2020-11-04T13:21:09.712Z",
    anonymousId: "a47b753d",
    userId: "uid-3",
    event: "order completed",
    properties: { total: 1009 },
  };
  expect(body(event)).toEqual({
    distinct_id: "uid-3",
    event: "order completed",
    messageId: "07cd68e5",
    properties: {
      $set: { name: "Shehan Study", email: "c@rudderlabs.com", logins: 5 },
      $current_url: "http://localhost:1112/Rectified.html",
      $pathname: "/Rectified.html",
      $lib: "RudderLabs JavaScript SDK",
      $lib_version: "1.1.7",
      $time: "2020-11-04T13:21:09.712Z",
      $ip: "0.0.0.0",
      $timestamp: "2020-11-04T13:21:09.712Z",
      $anon_distinct_id: "a47b753d",
      distinct_id: "uid-3",
      $screen_density: 2,
      $locale: "en-GB",
      $useragent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/86.0.4240.111 Safari/537.36",
      $app_version: "1.1.7",
      $app_name: "RudderLabs JavaScript SDK",
      $app_namespace: "com.rudderlabs.javascript",
      $app_build: "1.0.0",
      $os: "Mac OS",
      $browser: "Chrome",
      $browser_version: "86.0.4240.111",
      $host: "localhost:1112",
      total: 1009,
    },
    timestamp: "2020-11-04T13:21:09.712Z",
    api_key: "phc_key",
    type: "capture",
  });
  // Only web events are read this way; a server event keeps context.os.name.
  const server = body({ ...event, channel: "server", context: { ...event.context, os: { name: "Linux" } } });
  expect(server.properties.$os).toBe("Linux");
  expect(server.properties.$browser).toBeUndefined();
});

test("POSTHOG user agents → the names ua-parser-js 1.x gives (browser, version, OS), as RudderStack reads them", () => {
  const cases: Array<[string, string, string, string]> = [
    ["Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1", "Mobile Safari", "17.0", "iOS"],
    ["Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.91", "Edge", "120.0.2210.91", "Windows"],
    ["Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0", "Firefox", "121.0", "Windows"],
    ["Mozilla/5.0 (Linux; Android 13; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36", "Samsung Internet", "23.0", "Android"],
    // Agents a short list of rules would miss: in-app browsers, smaller browsers, other systems.
    ["Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 329.0.3.29.90 (iPhone14,5; iOS 17_4; en_US; en; scale=3.00; 1170x2532; 593000000)", "Instagram", "329.0.3.29.90", "iOS"],
    ["Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile DuckDuckGo/5 Safari/537.36", "DuckDuckGo", "5", "Android"],
    ["Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36", "Chrome", "124.0.0.0", "Chromium OS"],
    ["Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", "Chrome", "120.0.0.0", "Linux"],
    ["Mozilla/5.0 (Macintosh; Intel Mac OS X 14_1) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15", "Safari", "17.1", "Mac OS"],
  ];
  const read = (ua: string) => {
    const { browser, os } = parseUserAgent(ua);
    return [browser, os.name];
  };
  for (const [ua, name, version, os] of cases) expect(read(ua)).toEqual([{ name, version }, os]);
  expect(read("curl/8.0")).toEqual([{}, undefined]);
});

test("POSTHOG track with context.traits → properties.$set carries them (person update)", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "E", context: { traits: { plan: "pro" } } };
  expect(body(event).properties).toEqual({ $set: { plan: "pro" }, ...bare });
});

test("POSTHOG identify → event $identify with $set traits and the event's timestamp; no traits → aborted", () => {
  const event: SluiceEvent = { ...base, type: "identify", context: { ...context, traits: { email: "ada@example.com" } } };
  expect(body(event)).toEqual({
    distinct_id: "u-1",
    messageId: "m-1",
    event: "$identify",
    $set: { email: "ada@example.com" },
    timestamp: ts,
    properties: defaults,
    api_key: "phc_key",
    type: "identify",
  });
  expect(() => posthog.transform({ ...base, type: "identify" }, ctx())).toThrow('Missing required value from "traits"');
});

test("POSTHOG page / screen → $pageview and $screen ($screen_name from event), empty name left out", () => {
  const page: SluiceEvent = { ...base, type: "page", name: "Cart", category: "Shop", properties: { title: "Your cart" }, context };
  expect(body(page)).toEqual({
    distinct_id: "u-1",
    messageId: "m-1",
    event: "$pageview",
    name: "Cart",
    category: "Shop",
    timestamp: ts,
    properties: { ...defaults, title: "Your cart" },
    api_key: "phc_key",
    type: "page",
  });
  const screen: SluiceEvent = { ...base, type: "screen", name: "Home", event: "Home", category: "" };
  expect(body(screen)).toEqual({
    distinct_id: "u-1",
    messageId: "m-1",
    event: "$screen",
    name: "Home",
    timestamp: ts,
    properties: { ...bare, $screen_name: "Home" },
    api_key: "phc_key",
    type: "screen",
  });
});

test("POSTHOG alias → $create_alias with properties.distinct_id = userId and alias = previousId, no top-level ids", () => {
  const event: SluiceEvent = { ...base, type: "alias", previousId: "old-7" };
  expect(body(event)).toEqual({
    event: "$create_alias",
    properties: { ...bare, distinct_id: "u-1", alias: "old-7" },
    timestamp: ts,
    api_key: "phc_key",
    type: "alias",
  });
  expect(() => posthog.transform({ ...base, type: "alias" }, ctx())).toThrow('Missing required value from "previousId"');
});

test("POSTHOG group → $groupidentify (legacy groupId/traits, or $group_* properties with useV2Group)", () => {
  const event: SluiceEvent = { ...base, type: "group", groupId: "acme", traits: { name: "Acme", groupType: "company" } };
  expect(body(event)).toEqual({
    timestamp: ts,
    groupId: "acme",
    distinct_id: "u-1",
    traits: { name: "Acme", groupType: "company" },
    messageId: "m-1",
    event: "$groupidentify",
    properties: bare,
    api_key: "phc_key",
    type: "group",
  });
  expect(body(event, { useV2Group: true })).toEqual({
    timestamp: ts,
    distinct_id: "u-1",
    messageId: "m-1",
    event: "$groupidentify",
    properties: { ...bare, $group_key: "acme", $group_type: "company", $group_set: { name: "Acme" }, $groups: { company: "acme" } },
    api_key: "phc_key",
    type: "group",
  });
  // No group type: no $groups association.
  expect(body({ ...event, traits: { name: "Acme" } }, { useV2Group: true }).properties).not.toHaveProperty("$groups");
});

test("POSTHOG distinct ids are strings; timestamp falls back to properties.timestamp", () => {
  const event: SluiceEvent = { messageId: "m", userId: 42 as any, type: "track", event: "E", properties: { timestamp: "2020-01-01T00:00:00.000Z" } };
  const json = body(event);
  expect([json.distinct_id, json.properties.distinct_id, json.timestamp]).toEqual(["42", "42", "2020-01-01T00:00:00.000Z"]);
});

test("POSTHOG an event over 1MB is aborted, as PostHog would refuse it", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Big", properties: { blob: "x".repeat(1024 * 1024) } };
  expect(() => posthog.transform(event, ctx())).toThrow("exceeds PostHog's 1 MB limit");
});

test("POSTHOG yourInstance (self-hosted) → <instance>/batch; baseUrl override keeps /batch", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "E" };
  expect(posthog.transform(event, ctx({ yourInstance: "https://ph.internal.example.com/" }))[0]!.endpoint).toBe("https://ph.internal.example.com/batch");
  expect(posthog.transform(event, ctx({}, "http://127.0.0.1:8123"))[0]!.endpoint).toBe("http://127.0.0.1:8123/batch");
});

test("POSTHOG event filtering, missing ids and missing teamApiKey", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Noise" };
  expect(posthog.transform(event, ctx({ eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "Noise" }] }))).toEqual([]);
  expect(posthog.transform(event, ctx({ eventFilteringOption: "whitelistedEvents", whitelistedEvents: [{ eventName: "Noise" }] }))).toHaveLength(1);
  expect(() => posthog.transform(event, ctx({ teamApiKey: undefined }))).toThrow("destination config is missing 'teamApiKey'");
  expect(() => posthog.transform({ type: "track", messageId: "m", event: "E" }, ctx())).toThrow("Either userId or anonymousId");
});

test("POSTHOG batch → one /batch call {api_key, batch:[events without api_key]} in order", () => {
  const events: SluiceEvent[] = [
    { ...base, messageId: "1", type: "track", event: "A" },
    { ...base, messageId: "2", type: "identify", traits: { x: 1 } },
    { ...base, messageId: "3", type: "page", name: "P" },
  ];
  const reqs = events.map((e) => posthog.transform(e, ctx())[0]!);
  const batched = posthog.batch!(reqs, ctx());
  expect(batched).toHaveLength(1);
  expect(batched[0]!.endpoint).toBe("https://app.posthog.com/batch");
  const { api_key, batch } = batched[0]!.body.JSON as { api_key: string; batch: any[] };
  expect(api_key).toBe("phc_key");
  expect(batch.map((e) => [e.messageId, e.type])).toEqual([["1", "capture"], ["2", "identify"], ["3", "page"]]);
  expect(batch.every((e) => !("api_key" in e))).toBe(true);
});

// Cases from RudderStack's test/integrations/destinations/posthog fixtures (processor/data.ts
// 4b69f4af…, router/data.ts 459b0b70… for alias, which is after RudderStack swapped alias ids).
const fxKey = "K_HlByO3IE73-Tz4ch1LNDs0JGdwbknNGolFc4HdoAE";
const fxCtx = (config: Record<string, any> = {}) => ctx({ teamApiKey: fxKey, ...config });
const fxJson = (event: SluiceEvent, config?: Record<string, any>) => posthog.transform(event, fxCtx(config))[0]!.body.JSON;
const fxMobileContext = {
  ip: "0.0.0.0",
  device: { id: "df16bffa-5c3d-4fbb-9bce-3bab098129a7R", manufacturer: "Xiaomi", model: "Redmi 6", name: "xiaomi" },
  network: { carrier: "Banglalink" },
  os: { name: "android", version: "8.1.0" },
  app: { build: "1.0.0", name: "RudderLabs JavaScript SDK", namespace: "com.rudderlabs.javascript", version: "1.1.7" },
  traits: { address: { city: "Dhaka", country: "Bangladesh" }, anonymousId: "c82cbdff-e5be-4009-ac78-cdeea09ab4b1" },
};
const fxMobileProps = {
  $set: { address: { city: "Dhaka", country: "Bangladesh" }, anonymousId: "c82cbdff-e5be-4009-ac78-cdeea09ab4b1" },
  $os: "android",
  $device_id: "df16bffa-5c3d-4fbb-9bce-3bab098129a7R",
  $ip: "0.0.0.0",
  $device_manufacturer: "Xiaomi",
  $os_version: "8.1.0",
  $app_version: "1.1.7",
  $device_name: "xiaomi",
  $network_carrier: "Banglalink",
  $app_name: "RudderLabs JavaScript SDK",
  $device_model: "Redmi 6",
  $app_namespace: "com.rudderlabs.javascript",
  $app_build: "1.0.0",
};
const fxWebContext = {
  app: { build: "1.0.0", name: "RudderLabs JavaScript SDK", namespace: "com.rudderlabs.javascript", version: "1.1.5" },
  traits: { name: "Shehan Study", category: "SampleIdentify", email: "c@rudderlabs.com", plan: "Open source", logins: 5, createdAt: 1599264000 },
  library: { name: "RudderLabs JavaScript SDK", version: "1.1.5" },
  userAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/85.0.4183.121 Safari/537.36",
  locale: "en-US",
  os: { name: "", version: "" },
  screen: { density: 0.8999999761581421 },
  page: {
    path: "/destinations/amplitude",
    referrer: "",
    search: "",
    title: "",
    url: "https://docs.rudderstack.com/destinations/amplitude",
    category: "destination",
    initial_referrer: "https://docs.rudderstack.com",
    initial_referring_domain: "docs.rudderstack.com",
  },
};
const fxWebProps = {
  $set: fxWebContext.traits,
  $current_url: "https://docs.rudderstack.com/destinations/amplitude",
  $pathname: "/destinations/amplitude",
  $lib: "RudderLabs JavaScript SDK",
  $lib_version: "1.1.5",
  $anon_distinct_id: "my-anonymous-id-new",
  distinct_id: "sampleusrRudder7",
  $screen_density: 0.8999999761581421,
  $locale: "en-US",
  $useragent: fxWebContext.userAgent,
  $app_version: "1.1.5",
  $app_name: "RudderLabs JavaScript SDK",
  $app_namespace: "com.rudderlabs.javascript",
  $app_build: "1.0.0",
  $os: "Mac OS",
  $browser: "Chrome",
  $browser_version: "85.0.4183.121",
  $host: "docs.rudderstack.com",
};
const fxGroup: SluiceEvent = {
  channel: "web",
  context: fxWebContext,
  type: "group",
  messageId: "e5034df0-a404-47b4-a463-76df99934fea",
  anonymousId: "my-anonymous-id-new",
  userId: "sampleusrRudder7",
  groupId: "Sample_groupId27",
  traits: { groupType: "company", name_trait: "Company", value_trait: "Comapny-ABC" },
};

test("POSTHOG RudderStack fixture: alias → $create_alias, distinct_id = userId, alias = previousId, trailing slash of yourInstance dropped", () => {
  const event: SluiceEvent = {
    messageId: "m",
    event: "event-alias",
    context: fxMobileContext,
    type: "alias",
    timestamp: "2020-11-04T13:21:09.712Z",
    userId: "uid-1",
    previousId: "prevId_1",
    anonymousId: "f3cf54d8-f237-45d2-89f7-ccd70d42cf31",
  };
  const [req] = posthog.transform(event, fxCtx({ yourInstance: "https://app.posthog.com/" }));
  expect(req!.endpoint).toBe("https://app.posthog.com/batch");
  expect(req!.body.JSON).toEqual({
    properties: {
      ...fxMobileProps,
      $time: "2020-11-04T13:21:09.712Z",
      $timestamp: "2020-11-04T13:21:09.712Z",
      $anon_distinct_id: "f3cf54d8-f237-45d2-89f7-ccd70d42cf31",
      distinct_id: "uid-1",
      alias: "prevId_1",
    },
    timestamp: "2020-11-04T13:21:09.712Z",
    event: "$create_alias",
    api_key: fxKey,
    type: "alias",
  });
});

test("POSTHOG RudderStack fixture: mobile track → capture with device, network and app properties and context traits as $set", () => {
  const event: SluiceEvent = {
    anonymousId: "c82cbdff-e5be-4009-ac78-cdeea09ab4b1",
    event: "Product Brought",
    context: { ...fxMobileContext, app: undefined },
    type: "track",
    properties: { bet_amount: 9, battle_id: "N/A", win_amount: 0 },
    timestamp: "2020-11-04T13:21:09.712Z",
    userId: "uid-2",
    messageId: "e4408cb8-16dd-41e9-a313-a7a9cdc4bac5",
  };
  const { $app_version, $app_name, $app_namespace, $app_build, ...props } = fxMobileProps;
  expect(fxJson(event)).toEqual({
    distinct_id: "uid-2",
    event: "Product Brought",
    messageId: "e4408cb8-16dd-41e9-a313-a7a9cdc4bac5",
    properties: {
      ...props,
      $time: "2020-11-04T13:21:09.712Z",
      $timestamp: "2020-11-04T13:21:09.712Z",
      $anon_distinct_id: "c82cbdff-e5be-4009-ac78-cdeea09ab4b1",
      distinct_id: "uid-2",
      bet_amount: 9,
      battle_id: "N/A",
      win_amount: 0,
    },
    timestamp: "2020-11-04T13:21:09.712Z",
    api_key: fxKey,
    type: "capture",
  });
});

test("POSTHOG RudderStack fixture: web track with a null or numeric userId → anonymousId or the id as text; Mac OS / Chrome from the agent", () => {
  const event: SluiceEvent = {
    channel: "web",
    context: {
      traits: { name: "Rudder Usr", plan: "Paid" },
      userAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/86.0.4240.111 Safari/537.36",
      locale: "en-GB",
      os: { name: "", version: "" },
      campaign: {},
      page: { path: "/Rectified.html", referrer: "http://localhost:1112/", url: "http://localhost:1112/Rectified.html", loaded: "40" },
    },
    type: "track",
    messageId: "07cde5-9ad9-4a79-af51-f71bc9ed71",
    originalTimestamp: "2022-08-12T13:21:09.712Z",
    anonymousId: "a4753d-c7d3-40ca-88dc-a1bbe997e8",
    userId: null as any,
    event: "card checkout",
    properties: { total: 1009, viewport_height: "173", viewport_width: "969" },
  };
  const expected = (id: string) => ({
    messageId: "07cde5-9ad9-4a79-af51-f71bc9ed71",
    distinct_id: id,
    properties: {
      $set: { name: "Rudder Usr", plan: "Paid" },
      $os: "Mac OS",
      $host: "localhost:1112",
      $time: "2022-08-12T13:21:09.712Z",
      $timestamp: "2022-08-12T13:21:09.712Z",
      $locale: "en-GB",
      $browser: "Chrome",
      $pathname: "/Rectified.html",
      $useragent: event.context.userAgent,
      distinct_id: id,
      $current_url: "http://localhost:1112/Rectified.html",
      $viewport_width: "969",
      $browser_version: "86.0.4240.111",
      $viewport_height: "173",
      $anon_distinct_id: "a4753d-c7d3-40ca-88dc-a1bbe997e8",
      $performance_page_loaded: "40",
      total: 1009,
      viewport_height: "173",
      viewport_width: "969",
    },
    event: "card checkout",
    timestamp: "2022-08-12T13:21:09.712Z",
    api_key: fxKey,
    type: "capture",
  });
  expect(fxJson(event)).toEqual(expected("a4753d-c7d3-40ca-88dc-a1bbe997e8"));
  expect(fxJson({ ...event, userId: 123 as any })).toEqual(expected("123"));
});

test("POSTHOG RudderStack fixture: mobile identify → $identify, $set from context traits (not in properties)", () => {
  const traits = { id: "sajal", email: "identify@test.com", address: { city: "KOlkata" } };
  const event: SluiceEvent = {
    type: "identify",
    event: "identify",
    userId: "sajal",
    channel: "mobile",
    context: {
      os: { name: "Android", version: "10" },
      device: { id: "9c6bd77ea9da3e68", name: "raphaelin", type: "Android", model: "Redmi K20 Pro", manufacturer: "Xiaomi" },
      locale: "en-IN",
      screen: { width: 1080, height: 2210, density: 440 },
      traits,
      library: { name: "com.rudderstack.android.sdk.core", version: "1.0.8" },
      timezone: "Asia/Kolkata",
    },
    messageId: "1605215561266-084c95fb-aaf6-4abf-9b3b-7ac449a2d4fb",
    anonymousId: "9c6bd77ea9da3e68",
    originalTimestamp: "2020-11-12T21:12:41.266Z",
  };
  expect(fxJson(event)).toEqual({
    distinct_id: "sajal",
    timestamp: "2020-11-12T21:12:41.266Z",
    messageId: "1605215561266-084c95fb-aaf6-4abf-9b3b-7ac449a2d4fb",
    $set: traits,
    properties: {
      $os: "Android",
      $screen_height: 2210,
      $screen_width: 1080,
      $lib: "com.rudderstack.android.sdk.core",
      $lib_version: "1.0.8",
      $time: "2020-11-12T21:12:41.266Z",
      $device_id: "9c6bd77ea9da3e68",
      $timestamp: "2020-11-12T21:12:41.266Z",
      $anon_distinct_id: "9c6bd77ea9da3e68",
      distinct_id: "sajal",
      $screen_density: 440,
      $device_manufacturer: "Xiaomi",
      $os_version: "10",
      $timezone: "Asia/Kolkata",
      $locale: "en-IN",
      $device_name: "raphaelin",
      $device_model: "Redmi K20 Pro",
    },
    event: "$identify",
    api_key: fxKey,
    type: "identify",
  });
});

test("POSTHOG RudderStack fixture: screen → $screen with $screen_name from the event name and the event's timestamp", () => {
  const event: SluiceEvent = {
    type: "screen",
    event: "HomePage",
    userId: "sajal",
    channel: "mobile",
    context: { traits: { id: "sajal" }, os: { name: "Android", version: "10" } },
    messageId: "1605215561320-917a2554-87fd-4f9e-881d-9d29e8f30490",
    properties: { name: "HomePage" },
    anonymousId: "9c6bd77ea9da3e68",
    originalTimestamp: "2020-11-12T21:12:41.320Z",
  };
  expect(fxJson(event)).toEqual({
    properties: {
      $set: { id: "sajal" },
      $os: "Android",
      $os_version: "10",
      $time: "2020-11-12T21:12:41.320Z",
      $timestamp: "2020-11-12T21:12:41.320Z",
      $anon_distinct_id: "9c6bd77ea9da3e68",
      distinct_id: "sajal",
      $screen_name: "HomePage",
      name: "HomePage",
    },
    timestamp: "2020-11-12T21:12:41.320Z",
    distinct_id: "sajal",
    messageId: "1605215561320-917a2554-87fd-4f9e-881d-9d29e8f30490",
    event: "$screen",
    api_key: fxKey,
    type: "screen",
  });
});

test("POSTHOG RudderStack fixture: group without useV2Group → groupId and traits (groupType kept) at the top level", () => {
  expect(fxJson(fxGroup, { useV2Group: false })).toEqual({
    groupId: "Sample_groupId27",
    distinct_id: "sampleusrRudder7",
    traits: fxGroup.traits,
    messageId: "e5034df0-a404-47b4-a463-76df99934fea",
    properties: fxWebProps,
    event: "$groupidentify",
    api_key: fxKey,
    type: "group",
  });
});

test("POSTHOG RudderStack fixture: group with useV2Group → $group_key, $group_set without groupType, $group_type, $groups; utm_* from the campaign", () => {
  expect(fxJson(fxGroup, { useV2Group: true })).toEqual({
    properties: {
      ...fxWebProps,
      $group_key: "Sample_groupId27",
      $group_set: { name_trait: "Company", value_trait: "Comapny-ABC" },
      $group_type: "company",
      $groups: { company: "Sample_groupId27" },
    },
    distinct_id: "sampleusrRudder7",
    messageId: "e5034df0-a404-47b4-a463-76df99934fea",
    event: "$groupidentify",
    api_key: fxKey,
    type: "group",
  });
  const campaign = { source: "google", medium: "medium", term: "keyword", content: "some content", name: "some campaign" };
  const utm = fxJson({ ...fxGroup, context: { campaign } }, { useV2Group: true }).properties;
  expect(utm).toMatchObject({ utm_source: "google", utm_medium: "medium", utm_campaign: "some campaign", utm_content: "some content", utm_term: "keyword" });
});

test("POSTHOG RudderStack fixture: missing required values and oversized events are refused in RudderStack's words", () => {
  expect(() => posthog.transform({ messageId: "m", userId: "u", type: "track" }, fxCtx())).toThrow('Missing required value from "event"');
  expect(() => posthog.transform({ messageId: "m", userId: "u", type: "identify" }, fxCtx())).toThrow('Missing required value from "traits"');
  // RudderStack's router input check names the field it checked.
  expect(() => posthog.transform({ messageId: "m", type: "track", event: "E" }, fxCtx())).toThrow(
    new TransformError("message: Either userId or anonymousId must be provided"),
  );
  const big: SluiceEvent = { messageId: "m", userId: "u", type: "track", event: "Big", properties: { blob: "x".repeat(1024 * 1024) } };
  expect(() => posthog.transform(big, fxCtx())).toThrow(
    /^Event size \(\d+ bytes\) exceeds PostHog's 1 MB limit\. PostHog will reject this event with "maximum event size exceeded"\. Please reduce the size of the event properties to stay within the limit\.$/,
  );
});

test("POSTHOG events over 900,000 bytes (measured without the api key) are refused, below PostHog's documented 1MB, as RudderStack does", () => {
  const sized = (bytes: number): SluiceEvent => {
    const event: SluiceEvent = { messageId: "m", userId: "u", type: "track", event: "Big", properties: { blob: "" } };
    const { api_key: _key, ...sent } = posthog.transform(event, fxCtx())[0]!.body.JSON;
    return { ...event, properties: { blob: "x".repeat(bytes - Buffer.byteLength(JSON.stringify(sent))) } };
  };
  expect(posthog.transform(sized(900_000), fxCtx())).toHaveLength(1);
  expect(() => posthog.transform(sized(900_001), fxCtx())).toThrow("Event size (900001 bytes) exceeds PostHog's 1 MB limit.");
  expect(() => posthog.transform(sized(1_000_000), fxCtx())).toThrow("Event size (1000000 bytes)");
});

test("POSTHOG sends no $initial_referrer or $initial_referring_domain, whatever the page carries ($direct included), as RudderStack's mapping", () => {
  const page = { url: "https://example.com/", initial_referrer: "$direct", initial_referring_domain: "", initialReferrer: "$direct", referrer: "$direct" };
  for (const type of ["track", "page", "identify", "group"] as const) {
    const event: SluiceEvent = { messageId: "m", userId: "u", anonymousId: "a", type, event: "E", traits: { t: 1 }, channel: "web", context: { page, traits: { t: 1 } } };
    const props = posthog.transform(event, fxCtx())[0]!.body.JSON.properties as Record<string, unknown>;
    expect(props.$current_url).toBe("https://example.com/");
    expect(Object.keys(props).filter((k) => k.includes("initial"))).toEqual([]);
  }
});
