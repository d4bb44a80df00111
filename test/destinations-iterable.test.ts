import { afterAll, beforeAll, expect, test } from "bun:test";
import { iterable } from "../src/destinations/iterable";
import type { DestinationContext, SluiceEvent } from "../src/destinations/types";
import { type TestServer, api, cleanup, createSource, jsonRequest, sendEvent, startSink, startSluice, waitFor } from "./helpers";

const ctx = (config: Record<string, any> = {}): DestinationContext => ({
  config: { apiKey: "it-key", ...config },
  destination: { id: "dest-it", name: "Iterable", workspaceId: "ws-1" },
});
const HEADERS = { "Content-Type": "application/json", api_key: "it-key" };
const API = "https://api.iterable.com/api";
const ts = "2020-02-02T00:23:09.544Z";
const ms = Date.parse(ts);

test("ITERABLE identify → POST /api/users/update with email, userId and the traits as dataFields", () => {
  const event: SluiceEvent = { type: "identify", messageId: "m", userId: "u-1", anonymousId: "a-1", context: { traits: { email: "ada@example.com", plan: "pro" } } };
  expect(iterable.transform(event, ctx())).toEqual([
    jsonRequest("POST", `${API}/users/update`, { email: "ada@example.com", dataFields: { email: "ada@example.com", plan: "pro" }, userId: "u-1", preferUserId: true, mergeNestedObjects: true }, HEADERS),
  ]);
  expect(iterable.transform(event, ctx({ preferUserId: false, mergeNestedObjects: false, dataCenter: "EUDC" }))[0]).toMatchObject({
    endpoint: "https://api.eu.iterable.com/api/users/update",
    body: { JSON: { preferUserId: false, mergeNestedObjects: false } },
  });
});

test("ITERABLE track → POST /api/events/track; Order Completed → commerce/trackPurchase with items; Product Added → commerce/updateCart", () => {
  const track: SluiceEvent = { type: "track", messageId: "m", userId: "u-1", event: "Played", timestamp: ts, properties: { email: "p@example.com", event_id: 7, campaignId: "12", song: "x" } };
  expect(iterable.transform(track, ctx())).toEqual([
    jsonRequest(
      "POST",
      `${API}/events/track`,
      { email: "p@example.com", userId: "u-1", dataFields: track.properties!, id: "7", eventName: "Played", createdAt: ms, campaignId: 12 },
      HEADERS,
    ),
  ]);
  const order: SluiceEvent = {
    type: "track",
    messageId: "m",
    userId: "u-1",
    event: "Order Completed",
    timestamp: ts,
    traits: { email: "ada@example.com" },
    properties: { order_id: 101, total: "20.5", products: [{ product_id: "p1", sku: "s1", name: "Tee", price: "10.25", quantity: "2", category: "a,b" }] },
  };
  const [purchase] = iterable.transform(order, ctx());
  expect(purchase!.endpoint).toBe(`${API}/commerce/trackPurchase`);
  expect(purchase!.body.JSON).toEqual({
    id: "101",
    dataFields: order.properties!,
    createdAt: ms,
    total: 20.5,
    user: { email: "ada@example.com", dataFields: { email: "ada@example.com" }, userId: "u-1", preferUserId: true, mergeNestedObjects: true },
    items: [{ id: "p1", sku: "s1", name: "Tee", categories: ["a", "b"], price: 10.25, quantity: 2 }],
  });
  const [cart] = iterable.transform({ ...order, event: "Product Added", properties: { product_id: "p2", price: 3, quantity: 1 } }, ctx());
  expect(cart!.endpoint).toBe(`${API}/commerce/updateCart`);
  expect((cart!.body.JSON as any).items).toEqual([{ id: "p2", price: 3, quantity: 1 }]);
});

test("ITERABLE page / screen: tracked per trackAllPages / trackNamedPages / trackCategorisedPages, named '<name> page' or 'Loaded a Page'", () => {
  const page: SluiceEvent = { type: "page", messageId: "m", userId: "u-1", name: "Home", originalTimestamp: ts, properties: { url: "https://x" } };
  expect(iterable.transform(page, ctx({ trackAllPages: true }))[0]!.body.JSON).toEqual({ userId: "u-1", dataFields: { url: "https://x" }, eventName: "Home page", createdAt: ms });
  expect(iterable.transform(page, ctx({ trackNamedPages: true, mapToSingleEvent: true }))[0]!.body.JSON.eventName).toBe("Loaded a Page");
  expect(iterable.transform({ ...page, type: "screen" }, ctx({ trackAllPages: true }))[0]!.body.JSON.eventName).toBe("Home screen");
  expect(() => iterable.transform(page, ctx())).toThrow("Invalid page call");
});

test("ITERABLE alias → users/updateEmail; a push token with registerDeviceOrBrowserApiKey also registers the device", () => {
  const [alias] = iterable.transform({ type: "alias", messageId: "m", userId: "new@example.com", previousId: "old@example.com" }, ctx());
  expect(alias!.endpoint).toBe(`${API}/users/updateEmail`);
  expect(alias!.body.JSON).toEqual({ currentEmail: "old@example.com", newEmail: "new@example.com" });
  const identify: SluiceEvent = { type: "identify", messageId: "m", userId: "u-1", traits: { email: "a@b.co" }, context: { device: { token: "tok", type: "ios" } } };
  const reqs = iterable.transform(identify, ctx({ registerDeviceOrBrowserApiKey: "reg-key", packageName: "com.app" }));
  expect(reqs).toHaveLength(2);
  expect(reqs[1]!.endpoint).toBe(`${API}/users/registerDeviceToken`);
  expect(reqs[1]!.headers.api_key).toBe("reg-key");
  expect(reqs[1]!.body.JSON).toEqual({ email: "a@b.co", userId: "u-1", preferUserId: true, device: { token: "tok", applicationName: "com.app", platform: "APNS" } });
  expect(iterable.transform(identify, ctx())).toHaveLength(1);
  expect(() => iterable.transform({ type: "track", messageId: "m", event: "E" } as SluiceEvent, ctx())).toThrow("userId or email is mandatory for this request");
});

test("ITERABLE batch: consecutive users/update → users/bulkUpdate, events/track → events/trackBulk; others unchanged", () => {
  const identify = (i: number) => iterable.transform({ type: "identify", messageId: `m${i}`, userId: `u${i}` }, ctx())[0]!;
  const track = (i: number) => iterable.transform({ type: "track", messageId: `t${i}`, userId: `u${i}`, event: `E${i}` }, ctx())[0]!;
  const alias = iterable.transform({ type: "alias", messageId: "a", userId: "n", previousId: "o" }, ctx())[0]!;
  const out = iterable.batch!([identify(1), identify(2), track(1), track(2), alias, track(3)], ctx());
  expect(out.map((r) => r.endpoint)).toEqual([`${API}/users/bulkUpdate`, `${API}/events/trackBulk`, `${API}/users/updateEmail`, `${API}/events/trackBulk`]);
  expect((out[0]!.body.JSON.users as any[]).map((u) => u.userId)).toEqual(["u1", "u2"]);
  expect((out[1]!.body.JSON.events as any[]).map((e) => e.eventName)).toEqual(["E1", "E2"]);
});

test("ITERABLE deleteUsers → DELETE /api/users/byUserId/{userId} per user", () => {
  const reqs = iterable.deleteUsers!([{ userId: "u 1" }, { userId: "u2" }], ctx());
  expect(reqs.map((r) => `${r.method} ${r.endpoint}`)).toEqual([`DELETE ${API}/users/byUserId/u%201`, `DELETE ${API}/users/byUserId/u2`]);
  expect(reqs[0]!.headers.api_key).toBe("it-key");
});

let s: TestServer;
const sink = startSink(() => Response.json({ code: "Success" }));
beforeAll(async () => {
  s = await startSluice({ args: ["--destination-base-url", `ITERABLE=${sink.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  sink.stop();
  cleanup(s.dataDir);
});

test("ITERABLE through the pipeline: events arrive on trackBulk with the api_key header; a deletion reaches users/byUserId", async () => {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "it", type: "ITERABLE", config: { apiKey: "k-1" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const batch = Array.from({ length: 5 }, (_, i) => ({ type: "track", userId: `u-${i}`, event: `E${i}` }));
  expect((await sendEvent(s.url, src.writeKey, "batch", { batch })).status).toBe(200);
  const events = () => sink.received.filter((r) => r.path === "/api/events/trackBulk").flatMap((r) => r.body.events as any[]);
  await waitFor(() => events().length >= 5, { what: "5 Iterable events" });
  expect(sink.received[0]!.headers.api_key).toBe("k-1");
  expect(events().map((e) => e.eventName).sort()).toEqual(["E0", "E1", "E2", "E3", "E4"]);
  expect((await api(s.url, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [dst.json.id], users: [{ userId: "u-3" }] })).status).toBe(201);
  const del = await waitFor(() => sink.received.find((r) => r.method === "DELETE"), { what: "the deletion request" });
  expect(del.path).toBe("/api/users/byUserId/u-3");
});
