import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { snapchatConversion } from "../../src/destinations/snapchat-conversion";
import type { DestinationContext, DestinationRequest } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");
const NOW = Date.parse("2025-03-10T12:00:00Z");
const ctx = (config: Record<string, unknown>): DestinationContext => ({ config, destination: { id: "d", name: "s", workspaceId: "w" }, now: () => NOW });
const legacy = { apiKey: "snap-key", pixelId: "px-1" };
const v3 = { ...legacy, apiVersion: "newApi", snapAppId: "snap-app", appId: "com.example.app" };
const order = (extra: Record<string, unknown> = {}) => ({
  type: "track",
  messageId: "m-9",
  anonymousId: "anon-9",
  channel: "web",
  event: "Order Completed",
  timestamp: "2025-03-09T08:30:00.250Z",
  context: { ip: "198.51.100.4", userAgent: "Mozilla/5.0 Test", page: { url: "https://shop.example/thanks" }, traits: { email: "Grace@Example.com", phone: "+1 (555) 010-0199", firstName: "Grace" } },
  properties: { order_id: "o-1", currency: "USD", products: [{ product_id: "a", price: 2.5, quantity: 2 }, { product_id: "b", price: "5" }] },
  ...extra,
});

test("v2 (legacyApi): a web purchase goes to /v2/conversion with hashed fields, item ids and the products' price sum", () => {
  const [r] = snapchatConversion.transform(order(), ctx(legacy)) as DestinationRequest[];
  expect(r!.endpoint).toBe("https://tr.snapchat.com/v2/conversion");
  expect(r!.headers).toEqual({ Authorization: "Bearer snap-key", "Content-Type": "application/json" });
  expect(r!.body.JSON).toEqual({
    event_type: "PURCHASE",
    transaction_id: "o-1",
    currency: "USD",
    item_ids: ["a", "b"],
    price: "10",
    user_agent: "mozilla/5.0 test",
    hashed_email: sha("grace@example.com"),
    hashed_phone_number: sha("15550100199"),
    hashed_ip_address: sha("198.51.100.4"),
    hashed_first_name_sha: sha("grace"),
    timestamp: String(Date.parse("2025-03-09T08:30:00.250Z")).slice(0, 10),
    event_conversion_type: "WEB",
    pixel_id: "px-1",
    page_url: "https://shop.example/thanks",
  });
});

test("v3 (newApi): user_data hashed, custom_data and contents, sent to the pixel's /v3 URL with the token as a parameter", () => {
  const [r] = snapchatConversion.transform(order(), ctx(v3)) as DestinationRequest[];
  expect(r!.endpoint).toBe("https://tr.snapchat.com/v3/px-1/events");
  expect(r!.params).toEqual({ access_token: "snap-key" });
  const [entry] = (r!.body.JSON as any).data;
  expect(entry).toMatchObject({
    event_name: "PURCHASE",
    event_id: "o-1",
    action_source: "WEB",
    event_source_url: "https://shop.example/thanks",
    custom_data: { currency: "USD", content_ids: ["a", "b"], value: "10", contents: [{ id: "a", item_price: 2.5, quantity: 2 }, { id: "b", item_price: "5" }] },
    user_data: { em: sha("grace@example.com"), ph: sha("15550100199"), fn: sha("grace"), client_ip_address: "198.51.100.4", client_user_agent: "Mozilla/5.0 Test" },
  });
});

test("v3: an app event goes to the Snap app's URL with app_data and extinfo", () => {
  const event = order({ channel: "mobile", context: { device: { type: "ios", advertisingId: "ad-1", model: "iPhone15,2" }, app: { namespace: "com.example.app", build: "42", version: "4.2" }, os: { version: "17.4" } } });
  const [r] = snapchatConversion.transform(event, ctx(v3)) as DestinationRequest[];
  expect(r!.endpoint).toBe("https://tr.snapchat.com/v3/snap-app/events");
  const [entry] = (r!.body.JSON as any).data;
  expect(entry.action_source).toBe("MOBILE_APP");
  expect(entry.user_data.madid).toBe("ad-1");
  expect(entry.app_data.app_id).toBe("com.example.app");
  expect(entry.app_data.extinfo.slice(0, 6)).toEqual(["i2", "com.example.app", "42", "4.2", "17.4", "iPhone15,2"]);
});

test("names and city are trimmed and lower-cased before hashing, inner spaces kept; text past ASCII is hashed from its UTF-8 bytes (v2 and v3)", () => {
  const traits = { email: "grace@example.com", firstName: " Bjørn ", lastName: "Mary Ann", address: { city: "SÃO PAULO " } };
  const event = order({ context: { ip: "198.51.100.4", userAgent: "UA", traits } });
  // sha256 in UTF-8 of "bjørn" and "são paulo", what Snap matches; RudderStack hashes their Latin-1
  // bytes (c68cae97…, 995d1e62…), digests no platform matches, so Sluice keeps UTF-8.
  const bjorn = "9981679719f6d9fdef217c7b6c28070feaa48b00d73ecb08b92b5bcd45aa3a96";
  const saoPaulo = "577abdbf90dadd651458eee7576c6e3684b5c27beabd465cc4bb3c42441b5b38";
  const maryAnn = "343b97011010c3549fe7fcd6c226ed9431ea37b0b77ed78f6300a0098925faf1"; // sha256("mary ann")
  const [legacyReq] = snapchatConversion.transform(event, ctx(legacy)) as DestinationRequest[];
  expect(legacyReq!.body.JSON).toMatchObject({ hashed_first_name_sha: bjorn, hashed_last_name_sha: maryAnn, hashed_city_sha: saoPaulo });
  const [v3Req] = snapchatConversion.transform(event, ctx(v3)) as DestinationRequest[];
  expect((v3Req!.body.JSON as any).data[0].user_data).toMatchObject({ fn: bjorn, ln: maryAnn, ct: saoPaulo });
});

test("v3: an e-mail validator's isEmail refuses (.vanderberg@…, van..derberg@…) is not sent, as RudderStack checks it (issue 50)", () => {
  const userData = (email: string) => {
    const event = order();
    event.context.traits.email = email;
    const [r] = snapchatConversion.transform(event as any, ctx(v3)) as DestinationRequest[];
    return (r!.body.JSON as any).data[0].user_data ?? {};
  };
  expect(userData(".vanderberg@example.com").em).toBeUndefined();
  expect(userData("van..derberg@example.com").em).toBeUndefined();
  expect(userData("vanderberg@example.com").em).toBeDefined();
});

test("rudderEventsToSnapEvents maps a track to several Snap events; a page is PAGE_VIEW", () => {
  const config = { ...legacy, rudderEventsToSnapEvents: [{ from: "Joined Club", to: "sign_up" }, { from: "joined  club", to: "subscribe" }] };
  const out = snapchatConversion.transform(order({ event: "Joined Club" }), ctx(config)) as DestinationRequest[];
  expect(out.map((r) => (r.body.JSON as any).event_type)).toEqual(["SIGN_UP", "SUBSCRIBE"]);
  const merged = snapchatConversion.transform(order({ event: "Joined Club" }), ctx({ ...config, apiVersion: "newApi" })) as DestinationRequest[];
  expect(merged).toHaveLength(1);
  expect((merged[0]!.body.JSON as any).data.map((d: any) => d.event_name)).toEqual(["SIGN_UP", "SUBSCRIBE"]);
  const [page] = snapchatConversion.transform({ ...order(), type: "page", event: undefined }, ctx(legacy)) as DestinationRequest[];
  expect((page!.body.JSON as any).event_type).toBe("PAGE_VIEW");
});

test("refusals use RudderStack's texts", () => {
  expect(() => snapchatConversion.transform(order({ event: "Bought" }), ctx(legacy))).toThrow("Event Bought doesn't match with Snapchat Events!");
  expect(() => snapchatConversion.transform(order(), ctx({ apiKey: "k" }))).toThrow("Pixel Id is required for web and offline events");
  expect(() => snapchatConversion.transform(order({ channel: "mobile" }), ctx({ apiKey: "k", appId: "a" }))).toThrow("Snap App Id is required for app events");
  expect(() => snapchatConversion.transform(order({ context: {} }), ctx(legacy))).toThrow("At least one of email or phone or advertisingId or ip and userAgent is required");
  expect(() => snapchatConversion.transform(order({ timestamp: "2025-02-01T00:00:00Z" }), ctx(v3))).toThrow("Events must be sent within 7 days of their occurrence");
  expect(() => snapchatConversion.transform(order({ timestamp: "2025-01-01T00:00:00Z" }), ctx(legacy))).toThrow("Events must be sent within 37 days of their occurrence");
});

test("batch: v2 bodies become one JSON array; v3 calls to the same URL merge their data", () => {
  const two = (config: Record<string, unknown>) => ["u1", "u2"].flatMap((u) => (snapchatConversion.transform(order({ anonymousId: u }), ctx(config)) as DestinationRequest[]).map((r) => ({ ...r, userKey: u })));
  const [a] = snapchatConversion.batch!(two(legacy), ctx(legacy));
  expect(a!.endpoint).toBe("https://tr.snapchat.com/v2/conversion");
  expect(JSON.parse(a!.body.JSON_ARRAY.batch as string)).toHaveLength(2);
  const merged = snapchatConversion.batch!(two(v3), ctx(v3));
  expect(merged).toHaveLength(1);
  expect((merged[0]!.body.JSON as any).data).toHaveLength(2);
  expect(merged[0]!.params).toEqual({ access_token: "snap-key" });
});

// ---- through a real Sluice, to a stand-in of Snap's Conversions API ------------------------------------

// Snap's v3 events endpoint answers 200 with the request's status.
const snap = startSink(() => Response.json({ status: "SUCCESS", reason: "All records processed" }));
let sluice: TestServer;
beforeAll(async () => {
  sluice = await startSluice({ args: ["--destination-base-url", `SNAPCHAT_CONVERSION=${snap.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await sluice.stop();
  snap.stop();
  cleanup(sluice.dataDir);
});

test("SNAPCHAT_CONVERSION end to end: a v3 track reaches /v3/<pixel>/events with the token and hashed e-mail, and is delivered", async () => {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: "snap-e2e", type: "SNAPCHAT_CONVERSION", config: { apiKey: "e2e-key", pixelId: "px-e2e", apiVersion: "newApi" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const sent = await sendEvent(sluice.url, src.writeKey, "track", { userId: "u-e2e", channel: "web", event: "Product Added", properties: { product_id: "p-1", price: 3 }, context: { traits: { email: "e2e@example.com" } } });
  expect(sent.status).toBe(200);
  const got = await waitFor(() => snap.received.find((r) => r.query.access_token === "e2e-key"), { what: "the Snap call" });
  expect(got.path).toBe("/v3/px-e2e/events");
  expect(got.body.data[0]).toMatchObject({ event_name: "ADD_CART", action_source: "WEB", user_data: { em: sha("e2e@example.com") }, custom_data: { content_ids: "p-1", value: 3 } });
  const id = (dst.json as { id: string }).id;
  await waitFor(async () => {
    const l = (await api(sluice.url, "GET", `/v2/destinations/${id}/deliveries?state=succeeded`)).json.deliveries as any[];
    return l.length === 1 ? l : undefined;
  }, { what: "the delivery succeeded" });
});
