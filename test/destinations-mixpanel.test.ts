import { expect, test } from "bun:test";
import { mixpanel } from "../src/destinations/mixpanel";
import type { DestinationContext, DestinationRequest, SluiceEvent } from "../src/destinations/types";

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

test("MP track → POST api.mixpanel.com/import/ (JSON array, token Basic auth, strict=0, verbose=2) with event and properties", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Video Played", properties: { title: "Intro", duration: 30 } };
  const [req] = mixpanel.transform(event, ctx());
  expect(req).toEqual({
    version: "1",
    type: "REST",
    method: "POST",
    endpoint: "https://api.mixpanel.com/import/",
    headers: IMPORT_HEADERS,
    params: { strict: 0, verbose: 2 },
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
  expect(engage).toMatchObject({ method: "POST", endpoint: "https://api.mixpanel.com/engage/", headers: { "Content-Type": "application/json" }, params: {} });
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
  expect(items(groups!)).toEqual([{ $token: "mp_token", $group_key: "company", $group_id: "Acme", $set: { company: "Acme", employees: 50 } }]);
  expect(() => mixpanel.transform(event, ctx())).toThrow("destination config is missing 'groupKeySettings'");
});

test("MP dataResidency eu/in, strictMode, baseUrl override", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "E" };
  expect(mixpanel.transform(event, ctx({ dataResidency: "eu" }))[0]!.endpoint).toBe("https://api-eu.mixpanel.com/import/");
  expect(mixpanel.transform(event, ctx({ dataResidency: "in" }))[0]!.endpoint).toBe("https://api-in.mixpanel.com/import/");
  expect(mixpanel.transform(event, ctx({ strictMode: true }))[0]!.params).toEqual({ strict: 1, verbose: 2 });
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
  expect(task).toEqual([
    {
      version: "1",
      type: "REST",
      method: "POST",
      endpoint: "https://eu.mixpanel.com/api/app/data-deletions/v3.0/",
      headers: { "Content-Type": "application/json", Authorization: "Bearer gdpr" },
      params: { token: "mp_token" },
      body: { JSON: { distinct_ids: ["u0", "u1"], compliance_type: "GDPR" }, JSON_ARRAY: {}, XML: {}, FORM: {} },
      files: {},
    },
  ]);
  expect(() => mixpanel.deleteUsers!(users, ctx({ userDeletionApi: "task" }))).toThrow("destination config is missing 'gdprApiToken'");
});
