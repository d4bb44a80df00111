import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, setSystemTime, test } from "bun:test";
import { mixpanel } from "../../src/destinations/mixpanel";
import { type DestinationContext, type DestinationRequest, type SluiceEvent, TransformError } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

const ctx = (config: Record<string, any> = {}, baseUrl?: string): DestinationContext => ({
  config: { token: "mp_token", ...config },
  destination: { id: "dest-mp", name: "Mixpanel", workspaceId: "ws-1" },
  baseUrl,
});
const items = (r: DestinationRequest) => JSON.parse(r.body.JSON_ARRAY.batch as string);
const IMPORT_HEADERS = { "Content-Type": "application/json", Authorization: `Basic ${btoa("mp_token:")}` };

const ts = "2024-05-01T10:00:00.000Z";
const context = {
  ip: "9.9.9.9",
  os: { name: "Android", version: "14" },
  page: { url: "https://example.com/a", referrer: "https://google.com" },
  library: { name: "rudder-android" },
  campaign: { name: "spring", source: "newsletter" },
  traits: { plan: "pro" },
};
const base = { messageId: "1714557600000-5b1c3f0e-8a2d-4e57-9f1c-2a7b9c0d1e2f", userId: "u-1", anonymousId: "a-1", timestamp: ts, context };

test("MP track → POST api.mixpanel.com/import/ (JSON array, token Basic auth, strict=0 and no verbose) with event and properties", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Video Played", properties: { title: "Intro", duration: 30 } };
  const [req] = mixpanel.transform(event, ctx());
  expect(req).toEqual({
    version: "1",
    type: "REST",
    method: "POST",
    endpoint: "https://api.mixpanel.com/import/",
    headers: IMPORT_HEADERS,
    params: { strict: 0 },
    body: {
      JSON: {},
      JSON_ARRAY: {
        batch: JSON.stringify([
          {
            event: "Video Played",
            properties: {
              title: "Intro",
              duration: 30,
              plan: "pro",
              ip: "9.9.9.9",
              campaign_id: "spring",
              $user_id: "u-1",
              $current_url: "https://example.com/a",
              $os: "Android",
              $referrer: "https://google.com",
              $os_version: "14",
              mp_lib: "rudder-android",
              $insert_id: "5b1c3f0e-8a2d-4e57-9f1c-2a7b9c0d1e2f",
              token: "mp_token",
              distinct_id: "u-1",
              time: Date.parse(ts),
              utm_campaign: "spring",
              utm_source: "newsletter",
            },
          },
        ]),
      },
      XML: {},
      FORM: {},
    },
    files: {},
  });
});

test("MP track with revenue → /engage $append $transactions before the /import event", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Order Completed", properties: { revenue: 25 } };
  const [engage, imp] = mixpanel.transform(event, ctx());
  expect(engage!.endpoint).toBe("https://api.mixpanel.com/engage/");
  expect(items(engage!)).toEqual([{ $append: { $transactions: { $time: ts, $amount: 25 } }, $token: "mp_token", $distinct_id: "u-1" }]);
  expect(imp!.endpoint).toBe("https://api.mixpanel.com/import/");
});

test("MP page / screen → 'Loaded a Page' / 'Loaded a Screen' on /import with name and category", () => {
  const page: SluiceEvent = { ...base, type: "page", name: "Pricing", category: "Docs", properties: { path: "/pricing" } };
  const [pageReq] = mixpanel.transform(page, ctx());
  const [sent] = items(pageReq!);
  expect(sent.event).toBe("Loaded a Page");
  expect(sent.properties).toMatchObject({ path: "/pricing", name: "Pricing", category: "Docs", distinct_id: "u-1", token: "mp_token" });
  const screen: SluiceEvent = { ...base, type: "screen", name: "Home" };
  expect(items(mixpanel.transform(screen, ctx())[0]!)[0].event).toBe("Loaded a Screen");
  const custom = ctx({ useUserDefinedPageEventName: true, userDefinedPageEventTemplate: "Viewed {{ category }} {{ name }} Page" });
  // As in RudderStack, {{ category }} reads properties.category; a missing one collapses.
  expect(items(mixpanel.transform({ ...page, properties: { category: "Guides" } }, custom)[0]!)[0].event).toBe("Viewed Guides Pricing Page");
  expect(items(mixpanel.transform(page, custom)[0]!)[0].event).toBe("Viewed Pricing Page");
});

test("MP identify → /engage $set profile, then /import $merge of userId and anonymousId", () => {
  const event: SluiceEvent = {
    ...base,
    type: "identify",
    context: { ...context, traits: { email: "ada@example.com", firstName: "Ada", lastName: "Lovelace", plan: "pro", address: { city: "London" } } },
  };
  const [engage, merge] = mixpanel.transform(event, ctx({ useNewMapping: true }));
  expect(engage).toMatchObject({ method: "POST", endpoint: "https://api.mixpanel.com/engage/", headers: { "Content-Type": "application/json" } });
  // verbose=2 makes /engage and /groups answer why they refuse a call (otherwise a bare 200 "0").
  expect(engage!.params).toEqual({ verbose: 2 });
  expect(items(engage!)).toEqual([
    {
      $set: { $email: "ada@example.com", $first_name: "Ada", $last_name: "Lovelace", $name: "Ada Lovelace", $city: "London", plan: "pro" },
      $token: "mp_token",
      $distinct_id: "u-1",
      $ip: "9.9.9.9",
      $time: Date.parse(ts),
    },
  ]);
  expect(merge!.endpoint).toBe("https://api.mixpanel.com/import/");
  expect(items(merge!)).toEqual([{ event: "$merge", properties: { $distinct_ids: ["u-1", "a-1"], token: "mp_token" } }]);
  // Configs from before RudderStack's "new mapping" keep $firstName/$lastName.
  expect(items(mixpanel.transform(event, ctx())[0]!)[0].$set).toMatchObject({ $firstName: "Ada", $lastName: "Lovelace" });
});

test("MP identify with Simplified ID Merge → $device: distinct id and no $merge", () => {
  const event: SluiceEvent = { ...base, userId: undefined, type: "identify", context: { traits: { plan: "pro" } } };
  const reqs = mixpanel.transform(event, ctx({ identityMergeApi: "simplified" }));
  expect(reqs).toHaveLength(1);
  expect(items(reqs[0]!)[0].$distinct_id).toBe("$device:a-1");
});

test("MP track: empty context values are skipped, Mixpanel's property names from properties, nulls kept", () => {
  const event: SluiceEvent = {
    ...base,
    type: "track",
    event: "E",
    context: { os: { name: "", version: "14" }, app: { build: "", version: "1.0.5" } },
    properties: { appBuildNumber: "", brand: "Acme", radio: "LTE", bluetoothVersion: "5", hasNfc: false, coupon: null },
  };
  const props = items(mixpanel.transform(event, ctx())[0]!)[0].properties;
  expect(props.$os).toBeUndefined();
  expect(props.$app_build_number).toBeUndefined();
  expect(props).toMatchObject({ $os_version: "14", $app_version_string: "1.0.5", $brand: "Acme", $radio: "LTE", $bluetooth_version: "5", $has_nfc: false, coupon: null });
});

test("MP web events: $browser and $browser_version from the user agent", () => {
  const ua = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_2) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.117 Safari/537.36";
  const event: SluiceEvent = { ...base, channel: "web", type: "page", name: "Contact Us", context: { ...context, userAgent: ua } };
  const [sent] = items(mixpanel.transform(event, ctx())[0]!);
  expect(sent.properties).toMatchObject({ $browser: "Chrome", $browser_version: "79.0.3945.117", name: "Contact Us" });
  // Page events keep the whole message id; only track trims it to Mixpanel's 36 characters.
  expect(sent.properties.$insert_id).toBe(base.messageId);
  expect(items(mixpanel.transform({ ...event, channel: "mobile" }, ctx())[0]!)[0].properties.$browser).toBeUndefined();
  // ua-parser-js 1.x's names, as RudderStack's: Samsung's browser is "Samsung Internet", in-app browsers are named.
  const browserOf = (userAgent: string) => {
    const [req] = mixpanel.transform({ ...event, context: { ...context, userAgent } }, ctx());
    const { $browser, $browser_version } = items(req!)[0].properties;
    return [$browser, $browser_version];
  };
  expect(browserOf("Mozilla/5.0 (Linux; Android 13; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36")).toEqual([
    "Samsung Internet",
    "23.0",
  ]);
  expect(
    browserOf("Mozilla/5.0 (Linux; Android 13; SM-A536B Build/TP1A.220624.014; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/124.0.6367.82 Mobile Safari/537.36 Instagram 329.0.0.41.93 Android"),
  ).toEqual(["Instagram", "329.0.0.41.93"]);
});

test("MP track: dropTraitsInTrackEvent and propIncrements (/engage $add before the event)", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Played", properties: { plays: 2, skips: 0, title: "x" } };
  expect(items(mixpanel.transform(event, ctx({ dropTraitsInTrackEvent: true }))[0]!)[0].properties.plan).toBeUndefined();
  const reqs = mixpanel.transform(event, ctx({ propIncrements: [{ property: "plays" }, { property: "skips" }] }));
  expect(reqs.map((r) => r.endpoint)).toEqual(["https://api.mixpanel.com/engage/", "https://api.mixpanel.com/import/"]);
  expect(reqs[0]!.headers).toEqual({ "Content-Type": "application/json" });
  expect(items(reqs[0]!)).toEqual([{ $add: { plays: 2 }, $token: "mp_token", $distinct_id: "u-1" }]);
});

test("MP properties over Mixpanel's limits abort the event", () => {
  const many = Object.fromEntries(Array.from({ length: 240 }, (_, i) => [`p${i}`, i]));
  expect(() => mixpanel.transform({ ...base, type: "track", event: "E", properties: many }, ctx())).toThrow("exceed the limit of 255 keys");
  const long = { list: Array.from({ length: 256 }, (_, i) => i) };
  expect(() => mixpanel.transform({ ...base, type: "page", properties: long }, ctx())).toThrow("Mixpanel array property 'list' exceeds the limit of 255 elements");
});

test("MP identify: device fields and push tokens for iOS / Android, $geo_source checked", () => {
  const ios: SluiceEvent = {
    ...base,
    anonymousId: undefined,
    type: "identify",
    context: {
      app: { build: "1", version: "1.0" },
      device: { model: "iPhone XR", manufacturer: "Apple", type: "ios", token: "tok-1" },
      network: { carrier: "AT&T", wifi: true },
      os: { name: "iOS", version: "8.1.0" },
      traits: { userId: "u-1" },
    },
  };
  expect(items(mixpanel.transform(ios, ctx({ useNewMapping: true }))[0]!)[0].$set).toEqual({
    $carrier: "AT&T",
    $manufacturer: "Apple",
    $model: "iPhone XR",
    $wifi: true,
    userId: "u-1",
    $ios_devices: ["tok-1"],
    $os: "iOS",
    $ios_device_model: "iPhone XR",
    $ios_version: "8.1.0",
    $ios_app_release: "1.0",
    $ios_app_version: "1",
  });
  const android = { ...ios, context: { ...ios.context, device: { model: "Pixel", manufacturer: "Google", type: "android" }, os: { name: "Android", version: "14" } } };
  expect(items(mixpanel.transform(android, ctx())[0]!)[0].$set).toMatchObject({
    $os: "Android",
    $android_model: "Pixel",
    $android_os_version: "14",
    $android_manufacturer: "Google",
    $android_app_version: "1.0",
    $android_app_version_code: "1",
    $android_brand: "Google",
  });
  expect(() => mixpanel.transform({ ...ios, context: { location: { geoSource: "ip" } } }, ctx())).toThrow("$geo_source");
});

test("MP identify: setOnceProperties / unionProperties / appendProperties → /engage operations, taken out of $set", () => {
  const event: SluiceEvent = {
    ...base,
    anonymousId: undefined,
    type: "identify",
    traits: { firstName: "Ada", nationality: "UK", address: { city: "London", zip: "N1" }, tags: "a", visits: [1], plan: "pro" },
    context: { ip: "9.9.9.9", traits: { nationality: "FR", tags: "ctx" } },
  };
  const config = {
    useNewMapping: true,
    setOnceProperties: [{ property: "nationality" }, { property: "firstName" }, { property: "address.city" }],
    unionProperties: [{ property: "tags" }, { property: "nationality" }],
    appendProperties: [{ property: "visits" }, { property: "missing" }],
  };
  const reqs = mixpanel.transform(event, ctx(config));
  expect(reqs.map((r) => r.endpoint)).toEqual(Array(4).fill("https://api.mixpanel.com/engage/"));
  expect(reqs.map((r) => items(r)[0])).toEqual([
    { $set_once: { $first_name: "Ada", $city: "London", nationality: "UK" }, $token: "mp_token", $distinct_id: "u-1" },
    { $union: { tags: ["a"] }, $token: "mp_token", $distinct_id: "u-1" },
    { $append: { visits: [1] }, $token: "mp_token", $distinct_id: "u-1" },
    { $set: { $name: undefined, plan: "pro" }, $token: "mp_token", $distinct_id: "u-1", $ip: "9.9.9.9", $time: Date.parse(ts) },
  ].map((r) => JSON.parse(JSON.stringify(r))));
  // The event itself is left as it was.
  expect(event.traits!.address).toEqual({ city: "London", zip: "N1" });
});

test("MP identify: profile names read traits before context traits, email and phone also from properties; $name needs both parts", () => {
  const event: SluiceEvent = {
    ...base,
    anonymousId: undefined,
    type: "identify",
    traits: { first_name: "T" },
    context: { traits: { firstName: "C" } },
    properties: { email: "p@x.io", phone: "123", unsubscribed: true },
  };
  expect(items(mixpanel.transform(event, ctx({ useNewMapping: true }))[0]!)[0].$set).toEqual({
    $first_name: "T",
    $email: "p@x.io",
    $phone: "123",
    $unsubscribed: true,
  });
});

test("MP alias → $create_alias on /import (refused under Simplified ID Merge)", () => {
  const event: SluiceEvent = { ...base, type: "alias", previousId: "old-1" };
  expect(items(mixpanel.transform(event, ctx())[0]!)).toEqual([{ event: "$create_alias", properties: { distinct_id: "old-1", alias: "u-1", token: "mp_token" } }]);
  expect(() => mixpanel.transform(event, ctx({ identityMergeApi: "simplified" }))).toThrow("not supported");
});

test("MP group → /engage $set of the group key on the user, then /groups $set of the group profile", () => {
  const event: SluiceEvent = { ...base, type: "group", groupId: "acme", traits: { company: "Acme", employees: 50 } };
  const [engage, groups] = mixpanel.transform(event, ctx({ groupKeySettings: [{ groupKey: "company" }] }));
  expect(items(engage!)).toEqual([{ $token: "mp_token", $distinct_id: "u-1", $set: { company: ["Acme"] }, $ip: "9.9.9.9" }]);
  expect(groups!.endpoint).toBe("https://api.mixpanel.com/groups/");
  expect([engage!.params, groups!.params]).toEqual([{ verbose: 2 }, { verbose: 2 }]);
  expect(items(groups!)).toEqual([{ $token: "mp_token", $group_key: "company", $group_id: "Acme", $set: { company: "Acme", employees: 50 } }]);
  expect(() => mixpanel.transform(event, ctx())).toThrow("`Group Key Settings` is not configured in destination");
});

test("MP dataResidency eu/in, strictMode, baseUrl override", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "E" };
  expect(mixpanel.transform(event, ctx({ dataResidency: "eu" }))[0]!.endpoint).toBe("https://api-eu.mixpanel.com/import/");
  expect(mixpanel.transform(event, ctx({ dataResidency: "in" }))[0]!.endpoint).toBe("https://api-in.mixpanel.com/import/");
  expect(mixpanel.transform(event, ctx({ strictMode: true }))[0]!.params).toEqual({ strict: 1 });
  expect(mixpanel.transform(event, ctx({}, "http://127.0.0.1:3001"))[0]!.endpoint).toBe("http://127.0.0.1:3001/import/");
});

test("MP event filtering and missing token", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Heartbeat" };
  expect(mixpanel.transform(event, ctx({ eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "Heartbeat" }] }))).toEqual([]);
  expect(() => mixpanel.transform(event, ctx({ token: undefined }))).toThrow("destination config is missing 'token'");
});

test("MP batch → consecutive /import requests merged up to 2000 items, /engage kept separate and in order", () => {
  const track = (i: number) => mixpanel.transform({ ...base, messageId: `m${i}`, type: "track", event: "E" }, ctx())[0]!;
  const batched = mixpanel.batch!(Array.from({ length: 2001 }, (_, i) => track(i)), ctx());
  expect(batched.map((r) => [r.endpoint, items(r).length])).toEqual([
    ["https://api.mixpanel.com/import/", 2000],
    ["https://api.mixpanel.com/import/", 1],
  ]);
  expect(batched[0]!.headers).toEqual(IMPORT_HEADERS);
  const identify = mixpanel.transform({ ...base, anonymousId: undefined, type: "identify", traits: { a: 1 } }, ctx());
  const mixed = mixpanel.batch!([track(1), track(2), ...identify, track(3)], ctx());
  expect(mixed.map((r) => [r.endpoint.replace("https://api.mixpanel.com", ""), items(r).length])).toEqual([
    ["/import/", 2],
    ["/engage/", 1],
    ["/import/", 1],
  ]);
});

test("MP batch → /groups capped at 200 per call", () => {
  const group = (i: number) =>
    mixpanel.transform({ ...base, messageId: `g${i}`, type: "group", groupId: `g${i}`, traits: {} }, ctx({ groupKeySettings: [{ groupKey: "groupId" }] }))[1]!;
  const batched = mixpanel.batch!(Array.from({ length: 201 }, (_, i) => group(i)), ctx());
  expect(batched.map((r) => items(r).length)).toEqual([200, 1]);
});

/** A GDPR/CCPA deletion task request (userDeletionApi=task). */
const deletionTask = (host: string, gdprToken: string, token: string, distinctIds: string[], complianceType: string): DestinationRequest => ({
  version: "1",
  type: "REST",
  method: "POST",
  endpoint: `${host}/api/app/data-deletions/v3.0/`,
  headers: { "Content-Type": "application/json", Authorization: `Bearer ${gdprToken}` },
  params: { token },
  body: { JSON: { distinct_ids: distinctIds, compliance_type: complianceType }, JSON_ARRAY: {}, XML: {}, FORM: {} },
  files: {},
});

test("MP deleteUsers → POST /engage with $delete per user (1000 per call), or GDPR deletion task with userDeletionApi=task", () => {
  const users = Array.from({ length: 1001 }, (_, i) => ({ userId: `u${i}` }));
  const reqs = mixpanel.deleteUsers!(users, ctx());
  expect(reqs).toHaveLength(2);
  expect(reqs[0]).toMatchObject({
    method: "POST",
    endpoint: "https://api.mixpanel.com/engage",
    headers: { accept: "text/plain", "content-type": "application/json" },
  });
  expect(items(reqs[0]!)[0]).toEqual({ $distinct_id: "u0", $token: "mp_token", $delete: null, $ignore_alias: true });
  expect(items(reqs[0]!)).toHaveLength(1000);
  expect(items(reqs[1]!)).toHaveLength(1);

  const task = mixpanel.deleteUsers!(users.slice(0, 2), ctx({ userDeletionApi: "task", gdprApiToken: "gdpr", dataResidency: "eu" }));
  expect(task).toEqual([deletionTask("https://eu.mixpanel.com", "gdpr", "mp_token", ["u0", "u1"], "GDPR")]);
  expect(() => mixpanel.deleteUsers!(users, ctx({ userDeletionApi: "task" }))).toThrow("destination config is missing 'gdprApiToken'");
});

// Cases from RudderStack's test/integrations/destinations/mp/processor/data.ts (rudder-transformer
// e5ff288a): the destination's token is "dummyApiKey" (sampleDestination).
const fx = (config: Record<string, any> = {}) => ctx({ token: "dummyApiKey", ...config });
const FX_AUTH = `Basic ${btoa("dummyApiKey:")}`;
const FX_UA = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_2) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.117 Safari/537.36";
const fxPage = {
  path: "/destinations/mixpanel",
  referrer: "",
  search: "",
  title: "",
  url: "https://docs.rudderstack.com/destinations/mixpanel",
  category: "destination",
  initial_referrer: "https://docs.rudderstack.com",
  initial_referring_domain: "docs.rudderstack.com",
};
const fxContext = (extra: Record<string, any> = {}) => ({
  app: { build: "1.0.0", name: "RudderLabs JavaScript SDK", namespace: "com.rudderlabs.javascript", version: "1.0.5" },
  ip: "0.0.0.0",
  library: { name: "RudderLabs JavaScript SDK", version: "1.0.5" },
  locale: "en-GB",
  os: { name: "", version: "" },
  screen: { density: 2 },
  traits: {},
  page: fxPage,
  userAgent: FX_UA,
  ...extra,
});
const fxEvent = (fields: Record<string, any>): SluiceEvent => ({
  anonymousId: "e6ab2c5e-2cda-44a9-a962-e2f67df78bca",
  channel: "web",
  integrations: { All: true },
  messageId: "dd266c67-9199-4a52-ba32-f46ddde67312",
  originalTimestamp: "2020-01-24T06:29:02.358Z",
  request_ip: "[::1]:53708",
  sentAt: "2020-01-24T06:29:02.359Z",
  timestamp: "2020-01-24T11:59:02.402+05:30",
  type: "track",
  context: fxContext(),
  ...fields,
});
// Mixpanel's default properties RudderStack maps from fxContext().
const FX_DEFAULTS = {
  ip: "0.0.0.0",
  $current_url: "https://docs.rudderstack.com/destinations/mixpanel",
  $screen_dpi: 2,
  mp_lib: "RudderLabs JavaScript SDK",
  $initial_referrer: "https://docs.rudderstack.com",
  $initial_referring_domain: "docs.rudderstack.com",
  $app_build_number: "1.0.0",
  $app_version_string: "1.0.5",
  $app_name: "RudderLabs JavaScript SDK",
  $app_namespace: "com.rudderlabs.javascript",
  token: "dummyApiKey",
};
const FX_BROWSER = { $browser: "Chrome", $browser_version: "79.0.3945.117" };
// RudderStack's processor and router fixtures send the same identify from an (emulated) iOS device.
const FX_IOS_CONTEXT = {
  app: { build: "1", name: "LeanPlumIntegrationAndroid", namespace: "com.android.SampleLeanPlum", version: "1.0" },
  device: { id: "5094f5704b9cf2b3", manufacturer: "Google", model: "Android SDK built for x86", name: "generic_x86", type: "ios", token: "test_device_token" },
  library: { name: "com.rudderstack.android.sdk.core", version: "1.0.1-beta.1" },
  network: { carrier: "Android", bluetooth: false, cellular: true, wifi: true },
  os: { name: "iOS", version: "8.1.0" },
  screen: { density: 420, height: 1794, width: 1080 },
};
const FX_IOS_TRAITS = { anonymousId: "5094f5704b9cf2b3", userId: "test_user_id" };
const fxIosIdentify: SluiceEvent = {
  type: "identify",
  messageId: "id2",
  anonymousId: "5094f5704b9cf2b3",
  userId: "test_user_id",
  channel: "mobile",
  originalTimestamp: "2020-03-12T09:05:03.421Z",
  context: { ...FX_IOS_CONTEXT, traits: FX_IOS_TRAITS },
  properties: { name: "MainActivity", automatic: true },
};
/** The profile RudderStack's /engage $set carries for fxIosIdentify. */
const FX_IOS_SET = {
  $carrier: "Android",
  $manufacturer: "Google",
  $model: "Android SDK built for x86",
  $screen_height: 1794,
  $screen_width: 1080,
  $wifi: true,
  anonymousId: "5094f5704b9cf2b3",
  userId: "test_user_id",
  $ios_devices: ["test_device_token"],
  $os: "iOS",
  $ios_device_model: "Android SDK built for x86",
  $ios_version: "8.1.0",
  $ios_app_release: "1.0",
  $ios_app_version: "1",
};
const summary = (r: DestinationRequest) => ({ endpoint: r.endpoint, headers: r.headers, params: r.params, items: items(r) });

// RudderStack's fixtures run with the clock at 2020-01-25 (its mocked Date.now), which the 5-year age limit needs.
describe("MP fixtures at RudderStack's mocked clock", () => {
  beforeEach(() => setSystemTime(new Date(Date.UTC(2020, 0, 25))));
  afterEach(() => setSystemTime());

  test("MP RudderStack fixture: page → /import 'Loaded a Page' with app name/namespace, snake_case initial referrer, UTM and browser; params strict only", () => {
    const event = fxEvent({
      type: "page",
      name: "Contact Us",
      userId: "hjikl",
      context: fxContext({
        campaign: { name: "test_name", source: "rudder", medium: "test_medium", term: "test_tem", content: "test_content", test: "test", keyword: "test_keyword" },
      }),
    });
    expect(mixpanel.transform(event, fx()).map(summary)).toEqual([
      {
        endpoint: "https://api.mixpanel.com/import/",
        headers: { Authorization: FX_AUTH, "Content-Type": "application/json" },
        params: { strict: 0 },
        items: [
          {
            event: "Loaded a Page",
            properties: {
              ...FX_DEFAULTS,
              campaign_id: "test_name",
              $user_id: "hjikl",
              $insert_id: "dd266c67-9199-4a52-ba32-f46ddde67312",
              distinct_id: "hjikl",
              time: 1579847342402,
              utm_campaign: "test_name",
              utm_source: "rudder",
              utm_medium: "test_medium",
              utm_term: "test_tem",
              utm_content: "test_content",
              utm_test: "test",
              utm_keyword: "test_keyword",
              name: "Contact Us",
              ...FX_BROWSER,
            },
          },
        ],
      },
    ]);
  });

  test("MP RudderStack fixture: user-defined page event name; a missing template is refused with RudderStack's text", () => {
    const event = fxEvent({ type: "page", name: "Contact Us", category: "Contact", userId: "hjikl" });
    const [req] = mixpanel.transform(event, fx({ useUserDefinedPageEventName: true, userDefinedPageEventTemplate: "Viewed a {{ name }} page" }));
    expect(items(req!)[0].event).toBe("Viewed a Contact Us page");
    expect(items(req!)[0].properties).toMatchObject({ name: "Contact Us", category: "Contact" });
    expect(() => mixpanel.transform(event, fx({ useUserDefinedPageEventName: true }))).toThrow(
      "Event name template is not configured. Please provide a valid value for the `Page/Screen Event Name Template` in the destination dashboard.",
    );
  });

  test("MP RudderStack fixture: screen → 'Loaded a Screen' with the properties first and no browser for mobile", () => {
    const event = fxEvent({
      type: "screen",
      channel: "mobile",
      name: "Contact Us",
      userId: "hjikl",
      properties: { category: "communication" },
      context: fxContext({ app: { build: "1.0.0", name: "RudderLabs Android SDK", namespace: "com.rudderlabs.javascript", version: "1.0.5" }, page: undefined }),
    });
    expect(items(mixpanel.transform(event, fx())[0]!)).toEqual([
      {
        event: "Loaded a Screen",
        properties: {
          category: "communication",
          ip: "0.0.0.0",
          $user_id: "hjikl",
          $screen_dpi: 2,
          mp_lib: "RudderLabs JavaScript SDK",
          $app_build_number: "1.0.0",
          $app_version_string: "1.0.5",
          $insert_id: "dd266c67-9199-4a52-ba32-f46ddde67312",
          $app_name: "RudderLabs Android SDK",
          $app_namespace: "com.rudderlabs.javascript",
          token: "dummyApiKey",
          distinct_id: "hjikl",
          time: 1579847342402,
          name: "Contact Us",
        },
      },
    ]);
  });

  test("MP RudderStack fixture: identify with a blank userId → /engage $set for the anonymousId, no $merge", () => {
    const event = fxEvent({
      type: "identify",
      userId: "",
      messageId: "2536eda4-d638-4c93-8014-8ffe3f083214",
      context: fxContext({
        traits: { city: "Disney", country: "USA", email: "mickey@disney.com", firstName: "Mickey", lastName: "Mouse", createdAt: "2020-01-23T08:54:02.362Z" },
      }),
    });
    expect(mixpanel.transform(event, fx({ useNewMapping: true })).map(summary)).toEqual([
      {
        endpoint: "https://api.mixpanel.com/engage/",
        headers: { "Content-Type": "application/json" },
        params: { verbose: 2 },
        items: [
          {
            $set: {
              $created: "2020-01-23T08:54:02.362Z",
              $email: "mickey@disney.com",
              $first_name: "Mickey",
              $last_name: "Mouse",
              $country_code: "USA",
              $city: "Disney",
              $initial_referrer: "https://docs.rudderstack.com",
              $initial_referring_domain: "docs.rudderstack.com",
              $name: "Mickey Mouse",
              ...FX_BROWSER,
            },
            $token: "dummyApiKey",
            $distinct_id: "e6ab2c5e-2cda-44a9-a962-e2f67df78bca",
            $ip: "0.0.0.0",
            $time: 1579847342402,
          },
        ],
      },
    ]);
  });

  test("MP RudderStack fixture: track with revenue and propIncrements → $append, $add (truthy values only), then the event", () => {
    const event = fxEvent({
      event: "test revenue MIXPANEL",
      userId: "",
      messageId: "a6a0ad5a-bd26-4f19-8f75-38484e580fc7",
      timestamp: "2020-01-24T11:59:02.403+05:30",
      properties: { currency: "USD", revenue: 45.89, counter: 1, item_purchased: "2", number_of_logins: "" },
      context: fxContext({ traits: { city: "Disney", country: "USA", email: "mickey@disney.com", firstName: "Mickey" } }),
    });
    const config = fx({ propIncrements: [{ property: "counter" }, { property: "item_purchased" }, { property: "number_of_logins" }] });
    const anon = "e6ab2c5e-2cda-44a9-a962-e2f67df78bca";
    const [revenue, add, track] = mixpanel.transform(event, config);
    expect(items(revenue!)).toEqual([{ $append: { $transactions: { $time: "2020-01-24T06:29:02.403Z", $amount: 45.89 } }, $token: "dummyApiKey", $distinct_id: anon }]);
    expect(items(add!)).toEqual([{ $add: { counter: 1, item_purchased: "2" }, $token: "dummyApiKey", $distinct_id: anon }]);
    expect(items(track!)).toEqual([
      {
        event: "test revenue MIXPANEL",
        properties: {
          currency: "USD",
          revenue: 45.89,
          counter: 1,
          item_purchased: "2",
          number_of_logins: "",
          city: "Disney",
          country: "USA",
          email: "mickey@disney.com",
          firstName: "Mickey",
          ...FX_DEFAULTS,
          $insert_id: "a6a0ad5a-bd26-4f19-8f75-38484e580fc7",
          distinct_id: anon,
          time: 1579847342403,
          ...FX_BROWSER,
        },
      },
    ]);
  });

  test("MP RudderStack fixture: alias → $create_alias; missing ids, same ids and Simplified ID merge are refused", () => {
    const event = fxEvent({ type: "alias", userId: "1234abc", previousId: "e6ab2c5e-2cda-44a9-a962-e2f67df78bca" });
    expect(mixpanel.transform(event, fx()).map(summary)).toEqual([
      {
        endpoint: "https://api.mixpanel.com/import/",
        headers: { Authorization: FX_AUTH, "Content-Type": "application/json" },
        params: { strict: 0 },
        items: [{ event: "$create_alias", properties: { distinct_id: "e6ab2c5e-2cda-44a9-a962-e2f67df78bca", alias: "1234abc", token: "dummyApiKey" } }],
      },
    ]);
    const { anonymousId: _a, previousId: _p, ...noIds } = event;
    expect(() => mixpanel.transform(noIds as SluiceEvent, fx())).toThrow("Either `previousId` or `anonymousId` should be present in alias payload");
    expect(() => mixpanel.transform({ ...event, userId: "test_user_id", previousId: "test_user_id" }, fx())).toThrow(
      "One of `previousId` or `anonymousId` is same as `userId`. Aborting",
    );
    expect(() => mixpanel.transform(event, fx({ identityMergeApi: "simplified" }))).toThrow(
      "The use of the alias call in the context of the `Simplified ID merge` feature is not supported anymore.",
    );
  });

  test("MP RudderStack fixture: group → user $set of the key values, one /groups profile per value; errors without settings or key", () => {
    const event = fxEvent({ type: "group", channel: "mobile", userId: "hjikl", traits: { company: ["testComp", "testComp1"] } });
    const config = fx({ groupKeySettings: [{ groupKey: "company" }] });
    expect(mixpanel.transform(event, config).map((r) => [r.endpoint, items(r)])).toEqual([
      ["https://api.mixpanel.com/engage/", [{ $token: "dummyApiKey", $distinct_id: "hjikl", $set: { company: ["testComp", "testComp1"] }, $ip: "0.0.0.0" }]],
      ["https://api.mixpanel.com/groups/", [{ $token: "dummyApiKey", $group_key: "company", $group_id: "testComp", $set: { company: ["testComp", "testComp1"] } }]],
      ["https://api.mixpanel.com/groups/", [{ $token: "dummyApiKey", $group_key: "company", $group_id: "testComp1", $set: { company: ["testComp", "testComp1"] } }]],
    ]);
    expect(() => mixpanel.transform(event, fx())).toThrow("`Group Key Settings` is not configured in destination");
    expect(() => mixpanel.transform({ ...event, traits: {} }, config)).toThrow(
      "Group Key is not present. Please ensure that the group key is included in the payload as configured in the `Group Key Settings` in destination",
    );
  });

  test("MP RudderStack fixture: identify from an iOS device with apiSecret → device fields, $ios_devices and $merge; $time from originalTimestamp", () => {
    const reqs = mixpanel.transform(fxIosIdentify, fx({ apiSecret: "some_api_secret", dataResidency: "eu", strictMode: true }));
    expect(reqs.map(summary)).toEqual([
      {
        endpoint: "https://api-eu.mixpanel.com/engage/",
        headers: { "Content-Type": "application/json" },
        params: { verbose: 2 },
        items: [
          {
            $set: FX_IOS_SET,
            $token: "dummyApiKey",
            $distinct_id: "test_user_id",
            $time: 1584003903421,
          },
        ],
      },
      {
        endpoint: "https://api-eu.mixpanel.com/import/",
        headers: { Authorization: FX_AUTH, "Content-Type": "application/json" },
        params: { strict: 1 },
        items: [{ event: "$merge", properties: { $distinct_ids: ["test_user_id", "5094f5704b9cf2b3"], token: "dummyApiKey" } }],
      },
    ]);
  });

  test("MP RudderStack fixture: events over 5 years old are refused; a blank or invalid timestamp falls back to originalTimestamp for revenue and sends time null; revenue without any valid time is refused", () => {
    const old = fxEvent({ event: "FirstTrackCall12", userId: "u", timestamp: "2012-09-30T07:15:23.523Z" });
    expect(() => mixpanel.transform(old, fx())).toThrow("Event timestamp should be within last 5 years");
    expect(() => mixpanel.transform({ ...old, type: "page" }, fx())).toThrow("Event timestamp should be within last 5 years");
    // Profile updates carry no age limit.
    expect(mixpanel.transform({ ...old, type: "identify" }, fx())[0]!.endpoint).toBe("https://api.mixpanel.com/engage/");

    const blank = fxEvent({ event: "Application Installed", timestamp: "", originalTimestamp: "2022-09-05T07:46:20.290Z", properties: { revenue: 12.13 } });
    const [revenue, track] = mixpanel.transform(blank, fx());
    expect(items(revenue!)[0].$append.$transactions).toEqual({ $time: "2022-09-05T07:46:20.290Z", $amount: 12.13 });
    expect(items(track!)[0].properties.time).toBe(1662363980290);
    const invalid = mixpanel.transform({ ...blank, timestamp: "safaff" }, fx());
    expect(items(invalid[0]!)[0].$append.$transactions.$time).toBe("2022-09-05T07:46:20.290Z");
    expect(items(invalid[1]!)[0].properties.time).toBeNull();
    // A revenue entry needs a time: with neither timestamp valid the whole event is refused, as in RudderStack.
    expect(() => mixpanel.transform({ ...blank, timestamp: "safaff", originalTimestamp: "not a date" }, fx())).toThrow(
      new TransformError("Neither timestamp nor originalTimestamp is a valid date."),
    );
    // Without revenue the event goes, its time null.
    expect(items(mixpanel.transform({ ...blank, properties: {}, originalTimestamp: "not a date" }, fx())[0]!)[0].properties.time).toBeNull();
  });

  test("MP RudderStack fixture: session id as text, message-id timestamp prefix cut from $insert_id", () => {
    const event: SluiceEvent = {
      type: "track",
      event: "Application Installed",
      channel: "mobile",
      messageId: "1662363980287-168cf720-6227-4b56-a98e-c49bdc7279e9",
      anonymousId: "39da706ec83d0e90",
      originalTimestamp: "2022-09-05T07:46:20.290Z",
      properties: { build: 4, version: "1.0" },
      context: {
        os: { name: "Android", version: "12" },
        app: { name: "Sample Kotlin", build: "4", version: "1.0", namespace: "com.example.testapp1mg" },
        device: { id: "39da706ec83d0e90", name: "emu64a", type: "Android", model: "sdk_gphone64_arm64", manufacturer: "Google" },
        screen: { width: 1440, height: 2984, density: 560 },
        traits: { anonymousId: "39da706ec83d0e90" },
        library: { name: "com.rudderstack.android.sdk.core", version: "1.7.0" },
        network: { wifi: true, carrier: "T-Mobile", cellular: true, bluetooth: true },
        sessionId: 1662363980,
      },
    };
    expect(items(mixpanel.transform(event, fx({ apiSecret: "s", useNewMapping: true }))[0]!)[0].properties).toEqual({
      build: 4,
      version: "1.0",
      anonymousId: "39da706ec83d0e90",
      $os: "Android",
      $screen_height: 2984,
      $screen_width: 1440,
      $screen_dpi: 560,
      $carrier: "T-Mobile",
      $os_version: "12",
      $device: "emu64a",
      $manufacturer: "Google",
      $model: "sdk_gphone64_arm64",
      mp_device_model: "sdk_gphone64_arm64",
      $wifi: true,
      $bluetooth_enabled: true,
      mp_lib: "com.rudderstack.android.sdk.core",
      $app_build_number: "4",
      $app_version_string: "1.0",
      $insert_id: "168cf720-6227-4b56-a98e-c49bdc7279e9",
      $session_id: "1662363980",
      $app_name: "Sample Kotlin",
      $app_namespace: "com.example.testapp1mg",
      token: "dummyApiKey",
      distinct_id: "39da706ec83d0e90",
      time: 1662363980290,
    });
  });

  test("MP RudderStack fixture: set-once, union and append operations before $set; no timestamps → $time null", () => {
    const event: SluiceEvent = {
      type: "identify",
      messageId: "m",
      userId: "Santiy",
      anonymousId: "e6ab2c5e-2cda-44a9-a962-e2f67df78bca",
      channel: "web",
      request_ip: "[::1]:53709",
      context: fxContext({
        traits: {
          address: { city: "Disney" },
          country: "USA",
          email: "TestSanity@disney.com",
          firstName: "Mickey test",
          lastName: "VarChange",
          createdAt: "2020-01-23T08:54:02.362Z",
          nationality: "USA",
          random: "superProp",
          unionProperty1: "union-1",
          unionProperty2: [1, 2, 3],
          appendProperty1: ["append-1"],
          appendProperty2: 0,
          appendProperty3: null,
        },
      }),
    };
    const config = fx({
      apiSecret: "dummySecret",
      identityMergeApi: "simplified",
      useNewMapping: false,
      setOnceProperties: [{ property: "nationality" }, { property: "firstName" }, { property: "address.city" }],
      unionProperties: [{ property: "unionProperty1" }, { property: "unionProperty2" }],
      appendProperties: [{ property: "appendProperty1" }, { property: "appendProperty2" }, { property: "appendProperty3" }],
    });
    const head = { $token: "dummyApiKey", $distinct_id: "Santiy" };
    expect(mixpanel.transform(event, config).map((r) => items(r)[0])).toEqual([
      { $set_once: { $first_name: "Mickey test", $city: "Disney", nationality: "USA" }, ...head },
      { $union: { unionProperty1: ["union-1"], unionProperty2: [1, 2, 3] }, ...head },
      { $append: { appendProperty1: ["append-1"], appendProperty2: 0 }, ...head },
      {
        $set: {
          $created: "2020-01-23T08:54:02.362Z",
          $email: "TestSanity@disney.com",
          $country_code: "USA",
          $initial_referrer: "https://docs.rudderstack.com",
          $initial_referring_domain: "docs.rudderstack.com",
          random: "superProp",
          appendProperty3: null,
          $lastName: "VarChange",
          ...FX_BROWSER,
        },
        ...head,
        $ip: "0.0.0.0",
        $time: null,
      },
    ]);
  });

  test("MP RudderStack fixture: unsupported type and a $geo_source other than reverse_geocoding are refused", () => {
    expect(() => mixpanel.transform(fxEvent({ type: "test", userId: "1234abc" }), fx())).toThrow("Event type 'test' is not supported");
    const geo = fxEvent({ type: "identify", context: fxContext({ location: { geoSource: "abc" } }) });
    expect(() => mixpanel.transform(geo, fx())).toThrow("$geo_source value must be either null or 'reverse_geocoding' ");
  });
});

// RudderStack's router fixture (test/integrations/destinations/mp/router/data.ts, rudder-transformer
// be0e34b0) and deleteUsers fixture (263c5ba8, with network.ts 351f34db). The router fixture predates
// the processor fixture above: its field content (apiSecret auth, seconds, no $app_name) is older, so
// only its batching is compared here, with the field content of the newer processor fixture.
describe("MP router and deleteUsers fixtures at RudderStack's mocked clock", () => {
  beforeEach(() => setSystemTime(new Date(Date.UTC(2020, 0, 25))));
  afterEach(() => setSystemTime());

  const rt = (config: Record<string, any> = {}) => ctx({ apiSecret: "test_api_secret", token: "test_api_token", strictMode: true, ...config });
  const RT_TS = "2023-07-06T11:59:02.402+05:30";
  const mobileContext = {
    ...FX_IOS_CONTEXT,
    locale: "en-US",
    timezone: "Asia/Kolkata",
    userAgent: "Dalvik/2.1.0 (Linux; U; Android 8.1.0; Android SDK built for x86 Build/OSM1.180201.007)",
  };
  const inputs: Array<[SluiceEvent, DestinationContext]> = [
    [fxEvent({ type: "page", name: "Contact Us", userId: "hjikl", timestamp: RT_TS }), rt()],
    [
      {
        type: "track",
        event: "Product Viewed",
        anonymousId: "anonId01",
        userId: "userId01",
        channel: "mobile",
        messageId: "id2",
        context: mobileContext,
        properties: { name: "T-Shirt", revenue: 18.9 },
        originalTimestamp: "2020-01-24T06:29:02.362Z",
        timestamp: RT_TS,
      },
      rt({ identityMergeApi: "simplified" }),
    ],
    [
      fxEvent({
        type: "identify",
        userId: "",
        messageId: "2536eda4-d638-4c93-8014-8ffe3f083214",
        request_ip: "[::1]:53709",
        timestamp: RT_TS,
        context: fxContext({ traits: { city: "Disney", country: "USA", email: "mickey@disney.com", firstName: "Mickey" } }),
      }),
      rt(),
    ],
    [
      fxEvent({
        type: "identify",
        anonymousId: "anonId01",
        userId: undefined,
        messageId: "2536eda4-d638-4c93-8014-8ffe3f083214",
        timestamp: RT_TS,
        context: fxContext({
          traits: { city: "Disney", country: "USA", email: "mickey@disney.com", firstName: "Mickey", lastName: "Mouse", createdAt: "2020-01-23T08:54:02.362Z" },
        }),
      }),
      rt({ identityMergeApi: "simplified" }),
    ],
    [{ ...fxIosIdentify, event: "MainActivity", context: { ...mobileContext, traits: FX_IOS_TRAITS } }, rt()],
    [
      fxEvent({ type: "group", anonymousId: "anonId06", userId: "userId06", timestamp: RT_TS, traits: { company: "testComp" }, context: fxContext({ traits: undefined }) }),
      rt({ groupKeySettings: [{ groupKey: "company" }] }),
    ],
  ];
  const RT_MS = Date.parse(RT_TS);
  const importHeaders = { "Content-Type": "application/json", Authorization: `Basic ${btoa("test_api_token:")}` };
  const engageHeaders = { "Content-Type": "application/json" };

  test("MP RudderStack fixture (router): page, revenue track, three identifies and a group → runs per endpoint in event order; a group without its key is refused", () => {
    const transformed = inputs.flatMap(([event, c]) => mixpanel.transform(event, c));
    const batched = mixpanel.batch!(transformed, rt());
    expect(batched.map(summary)).toEqual([
      {
        endpoint: "https://api.mixpanel.com/import/",
        headers: importHeaders,
        params: { strict: 1 },
        items: [
          {
            event: "Loaded a Page",
            properties: { ...FX_DEFAULTS, $user_id: "hjikl", $insert_id: "dd266c67-9199-4a52-ba32-f46ddde67312", token: "test_api_token", distinct_id: "hjikl", time: RT_MS, name: "Contact Us", ...FX_BROWSER },
          },
        ],
      },
      {
        endpoint: "https://api.mixpanel.com/engage/",
        headers: engageHeaders,
        params: { verbose: 2 },
        items: [{ $append: { $transactions: { $time: "2023-07-06T06:29:02.402Z", $amount: 18.9 } }, $token: "test_api_token", $distinct_id: "userId01" }],
      },
      {
        endpoint: "https://api.mixpanel.com/import/",
        headers: importHeaders,
        params: { strict: 1 },
        items: [
          {
            event: "Product Viewed",
            properties: {
              name: "T-Shirt",
              revenue: 18.9,
              $user_id: "userId01",
              $os: "iOS",
              $screen_height: 1794,
              $screen_width: 1080,
              $screen_dpi: 420,
              $carrier: "Android",
              $os_version: "8.1.0",
              $device: "generic_x86",
              $manufacturer: "Google",
              $model: "Android SDK built for x86",
              mp_device_model: "Android SDK built for x86",
              $wifi: true,
              $bluetooth_enabled: false,
              mp_lib: "com.rudderstack.android.sdk.core",
              $app_build_number: "1",
              $app_version_string: "1.0",
              $insert_id: "id2",
              $app_name: "LeanPlumIntegrationAndroid",
              $app_namespace: "com.android.SampleLeanPlum",
              token: "test_api_token",
              distinct_id: "userId01",
              time: RT_MS,
              $device_id: "anonId01",
            },
          },
        ],
      },
      {
        endpoint: "https://api.mixpanel.com/engage/",
        headers: engageHeaders,
        params: { verbose: 2 },
        items: [
          {
            $set: {
              $email: "mickey@disney.com",
              $country_code: "USA",
              $city: "Disney",
              $initial_referrer: "https://docs.rudderstack.com",
              $initial_referring_domain: "docs.rudderstack.com",
              $firstName: "Mickey",
              ...FX_BROWSER,
            },
            $token: "test_api_token",
            $distinct_id: "e6ab2c5e-2cda-44a9-a962-e2f67df78bca",
            $ip: "0.0.0.0",
            $time: RT_MS,
          },
          {
            $set: {
              $created: "2020-01-23T08:54:02.362Z",
              $email: "mickey@disney.com",
              $country_code: "USA",
              $city: "Disney",
              $initial_referrer: "https://docs.rudderstack.com",
              $initial_referring_domain: "docs.rudderstack.com",
              $name: "Mickey Mouse",
              $firstName: "Mickey",
              $lastName: "Mouse",
              ...FX_BROWSER,
            },
            $token: "test_api_token",
            $distinct_id: "$device:anonId01",
            $ip: "0.0.0.0",
            $time: RT_MS,
          },
          {
            $set: FX_IOS_SET,
            $token: "test_api_token",
            $distinct_id: "test_user_id",
            $time: Date.parse("2020-03-12T09:05:03.421Z"),
          },
        ],
      },
      {
        endpoint: "https://api.mixpanel.com/import/",
        headers: importHeaders,
        params: { strict: 1 },
        items: [{ event: "$merge", properties: { $distinct_ids: ["test_user_id", "5094f5704b9cf2b3"], token: "test_api_token" } }],
      },
      {
        endpoint: "https://api.mixpanel.com/engage/",
        headers: engageHeaders,
        params: { verbose: 2 },
        items: [{ $token: "test_api_token", $distinct_id: "userId06", $set: { company: ["testComp"] }, $ip: "0.0.0.0" }],
      },
      {
        endpoint: "https://api.mixpanel.com/groups/",
        headers: engageHeaders,
        params: { verbose: 2 },
        items: [{ $token: "test_api_token", $group_key: "company", $group_id: "testComp", $set: { company: "testComp" } }],
      },
    ]);
    const [group, groupConfig] = inputs[5]!;
    expect(() => mixpanel.transform({ ...group, traits: undefined }, groupConfig)).toThrow(
      new TransformError(
        "Group Key is not present. Please ensure that the group key is included in the payload as configured in the `Group Key Settings` in destination",
      ),
    );
  });

  test("MP RudderStack fixture (deleteUsers): /engage $delete, 1000 per call, users without a userId skipped; EU host; deletion task with Bearer and ?token", () => {
    const deletion = (token: string, distinctIds: string[], host = "https://api.mixpanel.com"): DestinationRequest => ({
      version: "1",
      type: "REST",
      method: "POST",
      endpoint: `${host}/engage`,
      headers: { accept: "text/plain", "content-type": "application/json" },
      params: {},
      body: {
        JSON: {},
        JSON_ARRAY: { batch: JSON.stringify(distinctIds.map((id) => ({ $distinct_id: id, $token: token, $delete: null, $ignore_alias: true }))) },
        XML: {},
        FORM: {},
      },
      files: {},
    });
    const config = { token: "testToken", prefixProperties: true, useNativeSDK: false };
    // Test 1: two users, one call.
    expect(mixpanel.deleteUsers!([{ userId: "rudder1" }, { userId: "rudder1" }], ctx(config))).toEqual([deletion("testToken", ["rudder1", "rudder1"])]);
    // Test 0: more than 1000 users are split 1000 per call.
    const many = mixpanel.deleteUsers!(Array.from({ length: 1200 }, () => ({ userId: "rudder1" })), ctx(config));
    expect(many.map((r) => items(r).length)).toEqual([1000, 200]);
    // Test 3: no user with a userId, nothing to call.
    expect(mixpanel.deleteUsers!([{ userId: "", name: "test1" }], ctx(config))).toEqual([]);
    // Test 6: the EU project's host.
    expect(mixpanel.deleteUsers!([{ userId: "rudder1" }], ctx({ token: "test_token", dataResidency: "eu" }))).toEqual([
      deletion("test_token", ["rudder1"], "https://api-eu.mixpanel.com"),
    ]);
    // Test 4: the deletion-task API, CCPA outside the EU.
    const task = ctx({ token: "test_token", userDeletionApi: "task", gdprApiToken: "test_gdpr_token" });
    expect(mixpanel.deleteUsers!([{ userId: "rudder1" }, { userId: "rudder2" }, { userId: "rudder3" }], task)).toEqual([
      deletionTask("https://mixpanel.com", "test_gdpr_token", "test_token", ["rudder1", "rudder2", "rudder3"], "CCPA"),
    ]);
    // Tests 2 and 5: a missing token or GDPR token is refused (in Sluice's wording for config keys).
    expect(() => mixpanel.deleteUsers!([{ userId: "rudder1" }], ctx({ token: "" }))).toThrow("destination config is missing 'token'");
    expect(() => mixpanel.deleteUsers!([{ userId: "rudder1" }], ctx({ token: "test_token", userDeletionApi: "task", dataResidency: "eu" }))).toThrow(
      "destination config is missing 'gdprApiToken'",
    );
  });
});

test("MP checkResponse: an /engage or /groups answer naming an error aborts the call's events; /import and plain answers are delivered", () => {
  const event: SluiceEvent = { ...base, type: "group", groupId: "acme", traits: { company: "Acme" } };
  const [engage, groups] = mixpanel.transform(event, ctx({ groupKeySettings: [{ groupKey: "company" }] }));
  const [imp] = mixpanel.transform({ ...base, type: "track", event: "E" }, ctx());
  const check = (request: DestinationRequest, body: string) => mixpanel.checkResponse!({ status: 200, body }, request, ctx());
  const refused = JSON.stringify({ status: 0, error: "$distinct_id is required" });
  expect(check(engage!, refused)).toEqual({ outcome: "abort", error: "Engage API error: $distinct_id is required" });
  expect(check(groups!, refused)).toEqual({ outcome: "abort", error: "Groups API error: $distinct_id is required" });
  expect(check(engage!, JSON.stringify({ status: 1, error: null }))).toEqual({ outcome: "ok" });
  expect(check(groups!, "1")).toEqual({ outcome: "ok" });
  expect(check(imp!, JSON.stringify({ code: 200, num_records_imported: 1, status: "OK", error: "ignored" }))).toEqual({ outcome: "ok" });
  // The same paths behind a base-URL override.
  const [local] = mixpanel.transform({ ...base, type: "identify", traits: { a: 1 }, anonymousId: undefined }, ctx({}, "http://127.0.0.1:3001"));
  expect(check(local!, refused)).toEqual({ outcome: "abort", error: "Engage API error: $distinct_id is required" });
});

describe("MP through the pipeline", () => {
  let s: TestServer;
  // Like Mixpanel asked with verbose: /engage and /groups answer 200 and say why they refuse a call
  // (here: the profile of user "refused" and of group "refused-group"); /import answers with its own summary.
  const sink = startSink((req) => {
    if (req.path === "/import/") return Response.json({ code: 200, num_records_imported: req.body.length, status: "OK" });
    const refused = (req.body as any[]).some((item) => item.$distinct_id === "refused" || item.$group_id === "refused-group");
    return Response.json(refused ? { status: 0, error: "profile refused" } : { status: 1, error: null });
  });
  beforeAll(async () => {
    s = await startSluice({ args: ["--destination-base-url", `MP=${sink.url}`, "--retry-backoff-ms", "20"] });
  });
  afterAll(async () => {
    await s.stop();
    sink.stop();
    await cleanup(s.dataDir);
  });

  test("MP through the pipeline: verbose=2 on /engage and /groups only; a refused profile update is aborted with Mixpanel's error, the rest delivered", async () => {
    const src = await createSource(s.url);
    const dst = await api(s.url, "POST", "/v2/destinations", {
      name: "mp",
      type: "MP",
      config: { token: "tok", groupKeySettings: [{ groupKey: "groupId" }] },
      sourceIds: [src.id],
    });
    expect(dst.status).toBe(201);
    const stats = async () => (await api(s.url, "GET", `/v2/destinations/${dst.json.id}/stats`)).json;
    // One at a time, so that no call carries two of them.
    expect((await sendEvent(s.url, src.writeKey, "identify", { userId: "refused", traits: { plan: "pro" } })).status).toBe(200);
    await waitFor(async () => ((await stats()).counts.aborted === 1 ? true : undefined), { what: "the refused identify aborted" });
    expect((await stats()).lastError.error).toBe("Engage API error: profile refused");
    expect((await sendEvent(s.url, src.writeKey, "identify", { userId: "kept", traits: { plan: "pro" } })).status).toBe(200);
    await waitFor(async () => ((await stats()).counts.succeeded === 1 ? true : undefined), { what: "the kept identify delivered" });
    expect((await sendEvent(s.url, src.writeKey, "group", { userId: "kept", groupId: "refused-group" })).status).toBe(200);
    await waitFor(async () => ((await stats()).counts.aborted === 2 ? true : undefined), { what: "the group with a refused group profile aborted" });
    expect((await stats()).lastError.error).toBe("Groups API error: profile refused");
    expect((await sendEvent(s.url, src.writeKey, "track", { userId: "kept", event: "Played" })).status).toBe(200);
    await waitFor(async () => ((await stats()).counts.succeeded === 2 ? true : undefined), { what: "the track delivered" });

    const queries = sink.received.map((r) => [r.path, r.query]);
    expect(queries).toContainEqual(["/engage/", { verbose: "2" }]);
    expect(queries).toContainEqual(["/groups/", { verbose: "2" }]);
    expect(queries).toContainEqual(["/import/", { strict: "0" }]);
    expect(sink.received.filter((r) => r.path === "/import/").every((r) => r.query.verbose === undefined)).toBe(true);
  });
});

test("MP alias passes numeric ids on as numbers, and $email is never taken from an external id (RudderStack's emailOnly)", () => {
  const alias = mixpanel.transform({ type: "alias", messageId: "a", userId: 42, previousId: 7, timestamp: new Date().toISOString() } as any, { config: { token: "t" }, destination: { id: "d", name: "d", workspaceId: "w" } });
  const sent = JSON.parse(alias[0]!.body.JSON_ARRAY.batch as string)[0];
  expect(sent.properties).toMatchObject({ distinct_id: 7, alias: 42 });
  const identify = mixpanel.transform(
    { type: "identify", messageId: "i", userId: "u1", traits: { name: "Ada" }, context: { externalId: [{ type: "mpId", id: "ext-1" }] }, timestamp: new Date().toISOString() } as any,
    { config: { token: "t" }, destination: { id: "d", name: "d", workspaceId: "w" } },
  );
  const profile = JSON.stringify(identify.map((r) => r.body));
  expect(profile).toContain("Ada");
  expect(profile).not.toContain("ext-1");
});

test("MP sends a track without an event name as RudderStack does (Mixpanel answers for it), rather than refusing it", () => {
  const requests = mixpanel.transform({ type: "track", messageId: "t", userId: "u1", properties: { a: 1 }, timestamp: new Date().toISOString() } as any, { config: { token: "t" }, destination: { id: "d", name: "d", workspaceId: "w" } });
  expect(requests).toHaveLength(1);
  const sent = JSON.parse(requests[0]!.body.JSON_ARRAY.batch as string)[0];
  expect(sent.event).toBeUndefined();
  expect(sent.properties.a).toBe(1);
});
