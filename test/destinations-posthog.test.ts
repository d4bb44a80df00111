import { expect, test } from "bun:test";
import { posthog } from "../src/destinations/posthog";
import type { DestinationContext, SluiceEvent } from "../src/destinations/types";

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
const base = { messageId: "m-1", userId: "u-1", anonymousId: "a-1", timestamp: ts, originalTimestamp: "2024-05-01T09:59:59.000Z" };
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

test("POSTHOG track with context.traits → properties.$set carries them (person update)", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "E", context: { traits: { plan: "pro" } } };
  expect(posthog.transform(event, ctx())[0]!.body.JSON.properties).toMatchObject({ $set: { plan: "pro" } });
});

test("POSTHOG identify → event $identify with $set traits and originalTimestamp", () => {
  const event: SluiceEvent = { ...base, type: "identify", context: { ...context, traits: { email: "ada@example.com" } } };
  expect(posthog.transform(event, ctx())[0]!.body.JSON).toEqual({
    distinct_id: "u-1",
    messageId: "m-1",
    event: "$identify",
    $set: { email: "ada@example.com" },
    timestamp: "2024-05-01T09:59:59.000Z",
    properties: defaults,
    api_key: "phc_key",
    type: "identify",
  });
});

test("POSTHOG page / screen → $pageview and $screen ($screen_name from event)", () => {
  const page: SluiceEvent = { ...base, type: "page", name: "Cart", category: "Shop", properties: { title: "Your cart" }, context };
  expect(posthog.transform(page, ctx())[0]!.body.JSON).toEqual({
    distinct_id: "u-1",
    messageId: "m-1",
    event: "$pageview",
    name: "Cart",
    category: "Shop",
    timestamp: "2024-05-01T09:59:59.000Z",
    properties: { ...defaults, title: "Your cart" },
    api_key: "phc_key",
    type: "page",
  });
  const screen: SluiceEvent = { ...base, type: "screen", name: "Home", event: "Home" };
  const body = posthog.transform(screen, ctx())[0]!.body.JSON;
  expect(body).toMatchObject({ event: "$screen", type: "screen", name: "Home", timestamp: ts });
  expect(body.properties).toMatchObject({ $screen_name: "Home", distinct_id: "u-1" });
});

test("POSTHOG alias → $create_alias with properties.alias = userId and distinct_id = previousId", () => {
  const event: SluiceEvent = { ...base, type: "alias", previousId: "old-7" };
  const body = posthog.transform(event, ctx())[0]!.body.JSON;
  expect(body).toMatchObject({ event: "$create_alias", type: "alias", timestamp: "2024-05-01T09:59:59.000Z" });
  expect(body.properties).toMatchObject({ alias: "u-1", distinct_id: "old-7", $anon_distinct_id: "a-1" });
});

test("POSTHOG group → $groupidentify (legacy groupId/traits, or $group_* properties with useV2Group)", () => {
  const event: SluiceEvent = { ...base, type: "group", groupId: "acme", traits: { name: "Acme", groupType: "company" } };
  const legacy = posthog.transform(event, ctx())[0]!.body.JSON;
  expect(legacy).toMatchObject({ event: "$groupidentify", type: "group", groupId: "acme", traits: { name: "Acme", groupType: "company" } });
  const v2 = posthog.transform(event, ctx({ useV2Group: true }))[0]!.body.JSON;
  expect(v2.properties).toMatchObject({
    $group_key: "acme",
    $group_type: "company",
    $group_set: { name: "Acme" },
    $groups: { company: "acme" },
  });
});

test("POSTHOG yourInstance (self-hosted) → <instance>/batch; baseUrl override keeps /batch", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "E" };
  expect(posthog.transform(event, ctx({ yourInstance: "https://ph.internal.example.com/" }))[0]!.endpoint).toBe("https://ph.internal.example.com/batch");
  expect(posthog.transform(event, ctx({}, "http://127.0.0.1:8123"))[0]!.endpoint).toBe("http://127.0.0.1:8123/batch");
});

test("POSTHOG event filtering and missing teamApiKey", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Noise" };
  expect(posthog.transform(event, ctx({ eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "Noise" }] }))).toEqual([]);
  expect(posthog.transform(event, ctx({ eventFilteringOption: "whitelistedEvents", whitelistedEvents: [{ eventName: "Noise" }] }))).toHaveLength(1);
  expect(() => posthog.transform(event, ctx({ teamApiKey: undefined }))).toThrow("destination config is missing 'teamApiKey'");
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
