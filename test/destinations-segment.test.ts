import { expect, test } from "bun:test";
import { segment } from "../src/destinations/segment";
import type { DestinationContext, SluiceEvent } from "../src/destinations/types";

const ctx = (config: Record<string, any> = { writeKey: "wk_123" }, baseUrl?: string): DestinationContext => ({
  config,
  destination: { id: "dest-seg", name: "Segment", workspaceId: "ws-1" },
  baseUrl,
});
const AUTH = `Basic ${btoa("wk_123:")}`;
const context = { ip: "8.8.8.8", library: { name: "rudder-js", version: "3.0.0" } };
const base = { messageId: "m-1", userId: "u-1", anonymousId: "a-1", context, timestamp: "2024-05-01T10:00:00.000Z" };

test("SEGMENT track → POST api.segment.io/v1/track with Basic writeKey auth and the Segment message", () => {
  const event: SluiceEvent = { ...base, type: "track", event: "Product Viewed", properties: { sku: "A1", price: 9 } };
  const [req] = segment.transform(event, ctx());
  expect(req).toEqual({
    version: "1",
    type: "REST",
    method: "POST",
    endpoint: "https://api.segment.io/v1/track",
    headers: { "Content-Type": "application/json", Authorization: AUTH },
    params: {},
    body: {
      JSON: { ...base, event: "Product Viewed", properties: { sku: "A1", price: 9 } },
      JSON_ARRAY: {},
      XML: {},
      FORM: {},
    },
    files: {},
  });
});

test("SEGMENT identify → /v1/identify with traits (anonymousId trait removed)", () => {
  const event: SluiceEvent = { ...base, type: "identify", traits: { email: "a@b.co", anonymousId: "a-1" } };
  const [req] = segment.transform(event, ctx());
  expect(req!.endpoint).toBe("https://api.segment.io/v1/identify");
  expect(req!.body.JSON).toEqual({ ...base, traits: { email: "a@b.co" } });
});

test("SEGMENT page / screen → /v1/page and /v1/screen with name, category and properties", () => {
  const page: SluiceEvent = { ...base, type: "page", name: "Pricing", category: "Docs", properties: { path: "/pricing" } };
  expect(segment.transform(page, ctx())[0]!).toMatchObject({
    endpoint: "https://api.segment.io/v1/page",
    body: { JSON: { ...base, name: "Pricing", category: "Docs", properties: { path: "/pricing" } } },
  });
  const screen: SluiceEvent = { ...base, type: "screen", name: "Home" };
  expect(segment.transform(screen, ctx())[0]!).toMatchObject({ endpoint: "https://api.segment.io/v1/screen", body: { JSON: { ...base, name: "Home" } } });
});

test("SEGMENT group / alias → /v1/group with groupId + traits, /v1/alias with previousId", () => {
  const group: SluiceEvent = { ...base, type: "group", groupId: "g-9", traits: { name: "Acme" } };
  expect(segment.transform(group, ctx())[0]!).toMatchObject({
    endpoint: "https://api.segment.io/v1/group",
    body: { JSON: { ...base, groupId: "g-9", traits: { name: "Acme" } } },
  });
  const alias: SluiceEvent = { ...base, type: "alias", previousId: "old-1" };
  expect(segment.transform(alias, ctx())[0]!.body.JSON).toEqual({ ...base, previousId: "old-1" });
  expect(() => segment.transform({ ...base, type: "group" }, ctx())).toThrow("groupId is required");
});

test("SEGMENT missing writeKey → TransformError naming the key", () => {
  expect(() => segment.transform({ ...base, type: "track", event: "E" }, ctx({}))).toThrow("destination config is missing 'writeKey'");
});

test("SEGMENT baseUrl override → /v1/<type> on the local sink", () => {
  const [req] = segment.transform({ ...base, type: "track", event: "E" }, ctx(undefined, "http://127.0.0.1:7000"));
  expect(req!.endpoint).toBe("http://127.0.0.1:7000/v1/track");
});

test("SEGMENT batch → consecutive calls merged into /v1/batch items with their type; 500KB per call", () => {
  const reqs = [
    segment.transform({ ...base, type: "identify", traits: { plan: "pro" } }, ctx())[0]!,
    segment.transform({ ...base, type: "track", event: "E1" }, ctx())[0]!,
    segment.transform({ ...base, type: "page", name: "Home" }, ctx())[0]!,
  ];
  const [batched, ...rest] = segment.batch!(reqs, ctx());
  expect(rest).toEqual([]);
  expect(batched!.endpoint).toBe("https://api.segment.io/v1/batch");
  expect(batched!.headers).toEqual({ "Content-Type": "application/json", Authorization: AUTH });
  expect(batched!.body.JSON).toEqual({
    batch: [
      { ...base, traits: { plan: "pro" }, type: "identify" },
      { ...base, event: "E1", type: "track" },
      { ...base, name: "Home", type: "page" },
    ],
  });

  // ~30KB messages: 20 of them exceed one 500KB call.
  const big = Array.from({ length: 20 }, (_, i) =>
    segment.transform({ ...base, messageId: `m${i}`, type: "track", event: "Big", properties: { blob: "x".repeat(30_000) } }, ctx())[0]!,
  );
  const calls = segment.batch!(big, ctx());
  expect(calls.length).toBe(2);
  for (const call of calls) expect(JSON.stringify(call.body.JSON).length).toBeLessThanOrEqual(500 * 1024);
  expect(calls.flatMap((c) => (c.body.JSON.batch as any[]).map((m) => m.messageId))).toEqual(big.map((_, i) => `m${i}`));
});
