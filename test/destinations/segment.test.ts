import { expect, test } from "bun:test";
import { segment } from "../../src/destinations/segment";
import type { DestinationContext, SluiceEvent } from "../../src/destinations/types";

const ctx = (config: Record<string, any> = { writeKey: "wk_123" }, baseUrl?: string): DestinationContext => ({
  config,
  destination: { id: "dest-seg", name: "Segment", workspaceId: "ws-1" },
  baseUrl,
});
const AUTH = `Basic ${btoa("wk_123:")}`;
const context = { ip: "8.8.8.8", library: { name: "rudder-js", version: "3.0.0" }, traits: { plan: "pro" } };
const base = { messageId: "m-1", userId: "u-1", anonymousId: "a-1", context, timestamp: "2024-05-01T10:00:00.000Z" };
/** What RudderStack keeps of every event: ids, type and `timeStamp` (context, name, groupId... are dropped). */
const kept = { anonymousId: "a-1", userId: "u-1", timeStamp: "2024-05-01T10:00:00.000Z" };

test("SEGMENT track → POST api.segment.io/v1/batch, one item with event and properties, Basic writeKey auth", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Product Viewed", properties: { sku: "A1", price: 9 } };
  const [req, ...rest] = segment.transform(event, ctx());
  expect(rest).toEqual([]);
  expect(req).toEqual({
    version: "1",
    type: "REST",
    method: "POST",
    endpoint: "https://api.segment.io/v1/batch",
    headers: { "Content-Type": "application/json", Authorization: AUTH },
    params: {},
    body: {
      JSON: {
        batch: [{ ...kept, type: "track", event: "Product Viewed", traits: { plan: "pro" }, properties: { sku: "A1", price: 9 } }],
      },
      JSON_ARRAY: {},
      XML: {},
      FORM: {},
    },
    files: {},
  });
});

test("SEGMENT identify → traits from the event (context.traits as fallback), their anonymousId removed", () => {
  const event: SluiceEvent = { ...base, type: "identify", traits: { email: "a@b.co", anonymousId: "a-1" } };
  const [req] = segment.transform(event, ctx());
  expect(req!.endpoint).toBe("https://api.segment.io/v1/batch");
  expect(req!.body.JSON).toEqual({ batch: [{ ...kept, type: "identify", traits: { email: "a@b.co" } }] });
  // The event itself is not changed.
  expect(event.traits.anonymousId).toBe("a-1");
});

test("SEGMENT page / screen / group / alias → the same reduced item with only their type (name, groupId, previousId dropped)", () => {
  const events: SluiceEvent[] = [
    { ...base, type: "page", name: "Pricing", category: "Docs", properties: { path: "/pricing" } },
    { ...base, type: "screen", name: "Home" },
    { ...base, type: "group", groupId: "g-9", traits: { name: "Acme" } },
    { ...base, type: "alias", previousId: "old-1" },
  ];
  const items = events.map((e) => segment.transform(e, ctx())[0]!.body.JSON.batch);
  expect(items).toEqual([
    [{ ...kept, type: "page", traits: { plan: "pro" }, properties: { path: "/pricing" } }],
    [{ ...kept, type: "screen", traits: { plan: "pro" } }],
    [{ ...kept, type: "group", traits: { name: "Acme" } }],
    [{ ...kept, type: "alias", traits: { plan: "pro" } }],
  ]);
});

test("SEGMENT userId: an empty userId falls back to trait ids, then anonymousId; originalTimestamp when no timestamp", () => {
  const anon: SluiceEvent = { type: "track", messageId: "m-2", userId: "", anonymousId: "a-9", event: "E", originalTimestamp: "2024-01-01T00:00:00.000Z" };
  expect(segment.transform(anon, ctx())[0]!.body.JSON.batch).toEqual([
    { anonymousId: "a-9", type: "track", userId: "a-9", event: "E", timeStamp: "2024-01-01T00:00:00.000Z" },
  ]);
  const byTrait: SluiceEvent = { type: "identify", messageId: "m-3", anonymousId: "a-9", context: { traits: { id: "t-1" } } };
  expect((segment.transform(byTrait, ctx())[0]!.body.JSON.batch as any[])[0].userId).toBe("t-1");
});

test("SEGMENT sends what it has: no event name or groupId is not an error (RudderStack does not validate)", () => {
  expect(segment.transform({ ...base, type: "track" }, ctx())[0]!.body.JSON.batch).toEqual([{ ...kept, type: "track", traits: { plan: "pro" } }]);
  expect(segment.transform({ ...base, type: "group" }, ctx())).toHaveLength(1);
});

test("SEGMENT missing writeKey → TransformError naming the key", () => {
  expect(() => segment.transform({ ...base, type: "track", event: "E" }, ctx({}))).toThrow("destination config is missing 'writeKey'");
});

test("SEGMENT baseUrl override → /v1/batch on the local sink", () => {
  const [req] = segment.transform({ ...base, type: "track", event: "E" }, ctx(undefined, "http://127.0.0.1:7000"));
  expect(req!.endpoint).toBe("http://127.0.0.1:7000/v1/batch");
});

test("SEGMENT batch → consecutive one-item batches concatenated in order; 500KB per call", () => {
  const reqs = [
    segment.transform({ ...base, type: "identify", traits: { plan: "pro" } }, ctx())[0]!,
    segment.transform({ ...base, messageId: "m-2", type: "track", event: "E1" }, ctx())[0]!,
    segment.transform({ ...base, messageId: "m-3", type: "page", name: "Home" }, ctx())[0]!,
  ];
  const [batched, ...rest] = segment.batch!(reqs, ctx());
  expect(rest).toEqual([]);
  expect(batched!.endpoint).toBe("https://api.segment.io/v1/batch");
  expect(batched!.headers).toEqual({ "Content-Type": "application/json", Authorization: AUTH });
  expect(batched!.body.JSON).toEqual({
    batch: [
      { ...kept, type: "identify", traits: { plan: "pro" } },
      { ...kept, type: "track", event: "E1", traits: { plan: "pro" } },
      { ...kept, type: "page", traits: { plan: "pro" } },
    ],
  });

  // Another writeKey never shares a call.
  const other = segment.transform({ ...base, type: "track", event: "E" }, ctx({ writeKey: "wk_other" }))[0]!;
  expect(segment.batch!([reqs[0]!, other, reqs[1]!], ctx())).toHaveLength(3);

  // ~30KB messages: 20 of them exceed one 500KB call.
  const big = Array.from({ length: 20 }, (_, i) =>
    segment.transform({ ...base, type: "track", event: `Big ${i}`, properties: { blob: "x".repeat(30_000) } }, ctx())[0]!,
  );
  const calls = segment.batch!(big, ctx());
  expect(calls.length).toBe(2);
  for (const call of calls) expect(JSON.stringify(call.body.JSON).length).toBeLessThanOrEqual(500 * 1024);
  expect(calls.flatMap((c) => (c.body.JSON.batch as any[]).map((m) => m.event))).toEqual(big.map((_, i) => `Big ${i}`));
});

test("SEGMENT RudderStack fixture: a page without anonymousId and a track without traits leave those keys out", () => {
  const fixtureContext = { page: { path: "/tests/html/index4.html" }, traits: { age: 23, email: "testmp@rudderstack.com", firstname: "Test Kafka" } };
  const common = { messageId: "m", userId: "user12345", originalTimestamp: "2020-04-17T14:55:31.367Z", timestamp: "2020-04-17T20:25:31.381+05:30" };
  const page = segment.transform({ ...common, type: "page", name: "home", context: fixtureContext, properties: { path: "/tests/html/index4.html", referrer: "" } }, ctx({ writeKey: "abcdefghijklmnopqrstuvwxyz" }))[0]!;
  expect(page.headers.Authorization).toBe("Basic YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo6");
  expect(page.body.JSON).toEqual({
    batch: [
      {
        type: "page",
        userId: "user12345",
        traits: { age: 23, email: "testmp@rudderstack.com", firstname: "Test Kafka" },
        properties: { path: "/tests/html/index4.html", referrer: "" },
        timeStamp: "2020-04-17T20:25:31.381+05:30",
      },
    ],
  });
  const track = segment.transform({ ...common, type: "track", anonymousId: "anon-1", event: "test track with property", context: { page: fixtureContext.page }, properties: { test_prop_1: "test prop", test_prop_2: 1232 } }, ctx())[0]!;
  expect(track.body.JSON).toEqual({
    batch: [
      {
        anonymousId: "anon-1",
        type: "track",
        userId: "user12345",
        event: "test track with property",
        properties: { test_prop_1: "test prop", test_prop_2: 1232 },
        timeStamp: "2020-04-17T20:25:31.381+05:30",
      },
    ],
  });
});

test("SEGMENT numeric ids (as rudder-server passes them) are forwarded as numbers", () => {
  const event = { type: "alias", messageId: "m", userId: 42, anonymousId: 7, previousId: 41, timestamp: "2024-05-01T10:00:00.000Z" } as unknown as SluiceEvent;
  expect(segment.transform(event, ctx())[0]!.body.JSON.batch).toEqual([{ anonymousId: 7, type: "alias", userId: 42, timeStamp: "2024-05-01T10:00:00.000Z" }]);
});
