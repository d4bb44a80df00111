import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { tiktokAds } from "../../src/destinations/tiktok-ads";
import type { DestinationContext, DestinationRequest } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");
const ctx = (config: Record<string, unknown>): DestinationContext => ({ config, destination: { id: "d", name: "t", workspaceId: "w" } });
const base = { accessToken: "tok", pixelCode: "PIX1" };
const purchase = (extra: Record<string, unknown> = {}) => ({
  type: "track",
  messageId: "m-1",
  anonymousId: "anon-1",
  event: "Order Completed",
  timestamp: "2024-05-01T10:00:00.000Z",
  context: { ip: "203.0.113.9", userAgent: "UA/1", locale: "de-DE", page: { url: "https://shop.example/checkout" }, traits: { email: " Ada@Example.com ", phone: "+4915100000" }, externalId: [{ type: "tiktokExternalId", id: "ext-7" }] },
  properties: { order_id: 991, currency: "EUR", value: 30, products: [{ product_id: 17, name: "Socks", price: 10, quantity: 3 }] },
  ...extra,
});

test("v1: a standard event goes to /pixel/track/ with the pixel code, the mapped name and hashed user fields", () => {
  const [r] = tiktokAds.transform(purchase(), ctx({ ...base, hashUserProperties: true })) as DestinationRequest[];
  expect(r!.endpoint).toBe("https://business-api.tiktok.com/open_api/v1.3/pixel/track/");
  expect(r!.headers).toEqual({ "Access-Token": "tok", "Content-Type": "application/json" });
  expect(r!.body.JSON).toEqual({
    pixel_code: "PIX1",
    event: "PlaceAnOrder",
    event_id: "m-1",
    timestamp: "2024-05-01T10:00:00.000Z",
    properties: { order_id: "991", currency: "EUR", value: 30, contents: [{ content_type: "product", content_id: "17", content_name: "Socks", price: 10, quantity: 3 }] },
    context: {
      page: { url: "https://shop.example/checkout" },
      ip: "203.0.113.9",
      user_agent: "UA/1",
      user: { external_id: sha("ext-7"), email: sha("ada@example.com"), phone_number: sha("+4915100000") },
    },
    partner_name: "RudderStack",
  });
});

test("v2: Events 2.0 body with event_source, seconds, contents_ids and the names always hashed", () => {
  const event = purchase({ traits: { firstName: " Ada ", zip: "10 115" }, properties: { ...purchase().properties, eventSource: "app" } });
  const [r] = tiktokAds.transform(event, ctx({ ...base, version: "v2", hashUserProperties: false })) as DestinationRequest[];
  expect(r!.endpoint).toBe("https://business-api.tiktok.com/open_api/v1.3/event/track/");
  const body = r!.body.JSON as any;
  expect(body).toMatchObject({ event_source: "app", event_source_id: "PIX1", partner_name: "RudderStack" });
  expect(body.data).toHaveLength(1);
  expect(body.data[0]).toMatchObject({
    event: "PlaceAnOrder",
    event_id: "m-1",
    event_time: 1714557600,
    properties: { contents_ids: ["17"], num_items: 1, content_type: "product", order_id: "991" },
    user: { email: "ada@example.com", phone: "+4915100000", external_id: "ext-7", first_name: sha("ada"), zip_code: sha("10115"), locale: "de-DE" },
  });
});

test("eventsToStandard maps one event to several TikTok events; an unmapped name is refused unless sendCustomEvents", () => {
  const config = { ...base, version: "v2", eventsToStandard: [{ from: "Wishlisted", to: "AddToWishlist" }, { from: "wishlisted ", to: "Contact" }] };
  const [r] = tiktokAds.transform(purchase({ event: "Wishlisted" }), ctx(config)) as DestinationRequest[];
  expect((r!.body.JSON as any).data.map((d: any) => d.event)).toEqual(["AddToWishlist", "Contact"]);
  expect(() => tiktokAds.transform(purchase({ event: "Bought Thing" }), ctx(base))).toThrow("Event name (bought thing) is not valid, must be mapped to one of standard events");
  const [custom] = tiktokAds.transform(purchase({ event: "Bought Thing" }), ctx({ ...base, sendCustomEvents: true })) as DestinationRequest[];
  expect((custom!.body.JSON as any).event).toBe("Bought Thing");
});

test("refusals use RudderStack's texts", () => {
  expect(() => tiktokAds.transform(purchase(), ctx({ pixelCode: "P" }))).toThrow("Access Token not found. Aborting");
  expect(() => tiktokAds.transform(purchase(), ctx({ accessToken: "t", version: "v2" }))).toThrow("Pixel Code not found. Aborting");
  expect(() => tiktokAds.transform(purchase({ event: 5 }), ctx(base))).toThrow("Event is a required field and should be a string");
  expect(() => tiktokAds.transform({ type: "identify", messageId: "x" }, ctx(base))).toThrow("Event type identify is not supported");
});

test("batch: v1 calls become one /pixel/batch/ call; v2 calls merge per event source; test events go alone", () => {
  const v1 = ["a", "b"].flatMap((u) => (tiktokAds.transform(purchase({ anonymousId: u }), ctx(base)) as DestinationRequest[]).map((r) => ({ ...r, userKey: u })));
  const [batched] = tiktokAds.batch!(v1, ctx(base));
  expect(batched!.endpoint).toBe("https://business-api.tiktok.com/open_api/v1.3/pixel/batch/");
  expect((batched!.body.JSON as any).pixel_code).toBe("PIX1");
  expect((batched!.body.JSON as any).batch.map((b: any) => [b.type, b.pixel_code, b.event])).toEqual([["track", undefined, "PlaceAnOrder"], ["track", undefined, "PlaceAnOrder"]]);

  const v2c = { ...base, version: "v2" };
  const one = (u: string, props: Record<string, unknown>) => (tiktokAds.transform(purchase({ anonymousId: u, properties: props }), ctx(v2c)) as DestinationRequest[]).map((r) => ({ ...r, userKey: u }));
  const out = tiktokAds.batch!([...one("a", { eventSource: "web" }), ...one("b", { eventSource: "app" }), ...one("c", { eventSource: "web" }), ...one("d", { testEventCode: "T1" })], ctx(v2c));
  expect(out.map((r) => [(r.body.JSON as any).event_source, (r.body.JSON as any).data.length, (r.body.JSON as any).test_event_code])).toEqual([
    ["web", 2, undefined],
    ["app", 1, undefined],
    ["web", 1, "T1"],
  ]);
});

test("checkResponse reads TikTok's code: 40100 retries, 40001/40002 abort, 0 is delivered", () => {
  const req = {} as DestinationRequest;
  const check = (body: unknown) => tiktokAds.checkResponse!({ status: 200, body: JSON.stringify(body) }, req, ctx(base));
  expect(check({ code: 0, message: "OK", request_id: "r1", data: {} })).toEqual({ outcome: "ok" });
  expect(check({ code: 40100, message: "Too many requests" })).toEqual({ outcome: "retry", error: "Request failed with status: 40100" });
  expect(check({ code: 40001, message: "No permission to operate pixel code" })).toEqual({ outcome: "abort", error: "Request failed with status: 40001" });
});

// ---- through a real Sluice, to a stand-in of TikTok's Events API ---------------------------------------

const tiktok = startSink((r) => {
  // TikTok's Business API answers 200 with its own code: 40001 when the token may not use the pixel.
  const denied = r.headers["access-token"] === "no-permission";
  return Response.json(denied ? { code: 40001, message: "No permission to operate pixel code: PIX-E2E.", request_id: "req-2", data: {} } : { code: 0, message: "OK", request_id: "req-1", data: {} });
});
let sluice: TestServer;
beforeAll(async () => {
  sluice = await startSluice({ args: ["--destination-base-url", `TIKTOK_ADS=${tiktok.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await sluice.stop();
  tiktok.stop();
  cleanup(sluice.dataDir);
});

async function connected(accessToken: string) {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: `tiktok-${accessToken}`, type: "TIKTOK_ADS", config: { accessToken, pixelCode: "PIX-E2E", version: "v2", hashUserProperties: true }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  return { src, dst: dst.json as { id: string } };
}
const deliveries = async (id: string, state: string) => (await api(sluice.url, "GET", `/v2/destinations/${id}/deliveries?state=${state}`)).json.deliveries as any[];

test("TIKTOK_ADS end to end: a track reaches /event/track/ hashed, and TikTok's code 0 marks it delivered", async () => {
  const { src, dst } = await connected("good-token");
  const sent = await sendEvent(sluice.url, src.writeKey, "track", { userId: "u-e2e", event: "Product Added", properties: { product_id: "p1", price: 5 }, context: { traits: { email: "e2e@example.com" } } });
  expect(sent.status).toBe(200);
  const got = await waitFor(() => tiktok.received.find((r) => r.headers["access-token"] === "good-token"), { what: "the TikTok call" });
  expect(got.path).toBe("/open_api/v1.3/event/track/");
  expect(got.body.event_source_id).toBe("PIX-E2E");
  expect(got.body.data[0]).toMatchObject({ event: "AddToCart", user: { email: sha("e2e@example.com") }, properties: { content_type: "product" } });
  await waitFor(() => deliveries(dst.id, "succeeded").then((l) => (l.length === 1 ? l : undefined)), { what: "the delivery succeeded" });
});

test("TIKTOK_ADS end to end: a 200 answer with code 40001 aborts the delivery", async () => {
  const { src, dst } = await connected("no-permission");
  expect((await sendEvent(sluice.url, src.writeKey, "track", { userId: "u-denied", event: "Search", properties: { query: "socks" } })).status).toBe(200);
  const [row] = await waitFor(() => deliveries(dst.id, "aborted").then((l) => (l.length === 1 ? l : undefined)), { what: "the delivery aborted" });
  expect(row.lastError).toBe("Request failed with status: 40001");
});
