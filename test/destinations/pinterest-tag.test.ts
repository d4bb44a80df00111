import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { MAX_EVENTS_PER_CALL, pinterestTag } from "../../src/destinations/pinterest-tag";
import { type DestinationContext, type DestinationRequest, type SluiceEvent, TransformError } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

const V3 = "https://ct.pinterest.com/events/v3";
const v3 = { advertiserId: "549000111", appId: "77001", sendingUnHashedData: true };
const v5 = { apiVersion: "newApi", adAccountId: "549000222", conversionToken: "pins-token", sendingUnHashedData: true };
const ctx = (config: Record<string, any>): DestinationContext => ({ config, destination: { id: "dest-pin", name: "Pinterest", workspaceId: "ws-1" } });
const sha = (text: string) => createHash("sha256").update(text).digest("hex");
const ts = "2024-03-05T10:20:30.400Z";
const seconds = Math.floor(Date.parse(ts) / 1000);

const track = (over: Partial<SluiceEvent> = {}): SluiceEvent => ({
  type: "track",
  messageId: "msg-1",
  userId: "user-1",
  anonymousId: "anon-1",
  event: "Order Completed",
  timestamp: ts,
  channel: "web",
  context: {
    traits: { email: " Ada@Example.com ", phone: "+44 (0)20 7946 0000", firstName: "ABC ", gender: "Female", address: { city: "London", zip: "SW1A-1AA" } },
    ip: "203.0.113.9",
    userAgent: "Mozilla/5.0",
    page: { url: "https://shop.example.com/checkout" },
  },
  properties: {
    order_id: 9001,
    currency: "GBP",
    revenue: 42.5,
    products: [
      { product_id: "p-1", name: "Kettle", price: 30, quantity: 1, category: "Kitchen" },
      { sku: "sku-2", name: "Mug", price: 6.25, quantity: 2 },
    ],
  },
  ...over,
});
const bodyOf = (r: DestinationRequest) => r.body.JSON as Record<string, any>;

test("PINTEREST_TAG Order Completed (v3) → one checkout event at ct.pinterest.com/events/v3, personal data normalised and SHA-256 hashed", () => {
  const [req, ...rest] = pinterestTag.transform(track(), ctx(v3));
  expect(rest).toEqual([]);
  expect(req!).toMatchObject({ method: "POST", endpoint: V3, headers: { "Content-Type": "application/json" }, params: {} });
  expect(bodyOf(req!)).toEqual({
    event_name: "checkout",
    event_time: seconds,
    event_source_url: "https://shop.example.com/checkout",
    action_source: "web",
    event_id: "msg-1",
    app_id: "77001",
    advertiser_id: "549000111",
    user_data: {
      em: [sha("ada@example.com")],
      // Digits only, leading zeros cut: Pinterest's rule for phone numbers.
      ph: [sha("4402079460000")],
      ge: [sha("f")],
      // sha256("abc"), the FIPS 180-2 test vector: the trimmed, lower-cased first name.
      fn: ["ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"],
      ct: [sha("london")],
      zp: [sha("11")],
      client_ip_address: "203.0.113.9",
      client_user_agent: "Mozilla/5.0",
    },
    custom_data: {
      currency: "GBP",
      value: "42.5",
      order_id: "9001",
      num_items: 3,
      content_ids: ["p-1", "sku-2"],
      contents: [
        { quantity: 1, item_price: "30", item_name: "Kettle", id: "p-1", item_category: "Kitchen" },
        { quantity: 2, item_price: "6.25", item_name: "Mug", id: "sku-2" },
      ],
    },
  });
});

test("PINTEREST_TAG newApi → POST /v5/ad_accounts/{adAccountId}/events with Bearer conversionToken; no advertiser_id; ad tracking as advertiser_tracking_enabled and opt_out", () => {
  const event = track({ context: { ...track().context, device: { adTrackingEnabled: false, advertisingId: "AD-ID-1" } } });
  const [req] = pinterestTag.transform(event, ctx({ ...v5, sendAsTestEvent: true }));
  expect(req!.endpoint).toBe("https://api.pinterest.com/v5/ad_accounts/549000222/events");
  expect(req!.headers).toEqual({ "Content-Type": "application/json", Authorization: "Bearer pins-token" });
  expect(req!.params).toEqual({ test: true });
  const body = bodyOf(req!);
  expect(body.advertiser_id).toBeUndefined();
  expect(body).toMatchObject({ advertiser_tracking_enabled: false, opt_out: true });
  // A device advertising id is hashed as it is (no normalising).
  expect(body.user_data.hashed_maids).toEqual([sha("AD-ID-1")]);
  // v3 sends opt_out alone.
  const [legacy] = pinterestTag.transform(event, ctx(v3));
  expect(bodyOf(legacy!)).toMatchObject({ opt_out: true, advertiser_id: "549000111" });
  expect(bodyOf(legacy!).advertiser_tracking_enabled).toBeUndefined();
});

test("PINTEREST_TAG event names: the dashboard's mapping in snake case (one event per mapping), then e-commerce names, then custom, else the event's own", () => {
  const names = (event: SluiceEvent, config: Record<string, any>) => pinterestTag.transform(event, ctx({ ...v3, ...config })).map((r) => bodyOf(r).event_name);
  const mapping = { eventsMapping: [{ from: "Video Played", to: "WatchVideo" }, { from: "Video Played", to: "ViewCategory" }, { from: "Other", to: "Lead" }] };
  expect(names(track({ event: "Video Played", properties: {} }), mapping)).toEqual(["watch_video", "view_category"]);
  expect(names(track({ event: "Product Added", properties: {} }), {})).toEqual(["add_to_cart"]);
  expect(names(track({ event: "products searched", properties: { query: "mugs" } }), {})).toEqual(["search"]);
  expect(names(track({ event: "Coupon Applied", properties: {} }), { sendAsCustomEvent: true })).toEqual(["custom"]);
  expect(names(track({ event: "Coupon Applied", properties: {} }), { sendAsCustomEvent: "false" })).toEqual(["Coupon Applied"]);
  const page = (category?: string): SluiceEvent => ({ ...track(), type: "page", event: undefined, category, properties: {} });
  expect(names(page(), {})).toEqual(["page_visit"]);
  expect(names(page("Kitchen"), {})).toEqual(["view_category"]);
  // A page carries no custom_data; a screen is named by its name.
  expect(bodyOf(pinterestTag.transform(page(), ctx(v3))[0]!).custom_data).toBeUndefined();
  expect(names({ ...track(), type: "screen", event: undefined, name: "Home", properties: {} }, {})).toEqual(["Home"]);
});

test("PINTEREST_TAG single product properties, deduplicationKey, sendExternalId and the sender's own hashes", () => {
  const event = track({ event: "Product Viewed", properties: { product_id: 7, price: 9.5, quantity: "2", numOfItems: "4", eventRef: "ref-9" } });
  const [req] = pinterestTag.transform(event, ctx({ ...v3, deduplicationKey: "properties.eventRef", sendExternalId: true }));
  const body = bodyOf(req!);
  expect(body.event_id).toBe("ref-9");
  expect(body.custom_data).toEqual({ num_items: 4, content_ids: ["7"], contents: [{ quantity: 2, item_price: "9.5", id: "7" }] });
  expect(body.user_data.external_id).toEqual([sha("user-1")]);
  // Without the path in the event the messageId is the event id.
  expect(bodyOf(pinterestTag.transform(track(), ctx({ ...v3, deduplicationKey: "properties.eventRef" }))[0]!).event_id).toBe("msg-1");

  // sendingUnHashedData off: the values are the sender's hashes, sent in lists as they came (the gender too).
  const hashed = track({ context: { traits: { email: "5f2b", gender: "HASHED-G" }, ip: "198.51.100.1", userAgent: "UA" } });
  expect(bodyOf(pinterestTag.transform(hashed, ctx({ ...v3, sendingUnHashedData: false }))[0]!).user_data).toEqual({
    em: ["5f2b"],
    ge: ["HASHED-G"],
    client_ip_address: "198.51.100.1",
    client_user_agent: "UA",
  });
});

test("PINTEREST_TAG names, city, state and country are only trimmed and lower-cased before hashing; text past ASCII is hashed from its UTF-8 bytes", () => {
  const event = track({
    context: {
      traits: { email: "ada@example.com", firstName: " Mary Ann ", lastName: "O'Brien-Smith", address: { city: " São Paulo ", state: " NY ", country: "US " } },
      ip: "203.0.113.9",
      userAgent: "Mozilla/5.0",
    },
  });
  const user = bodyOf(pinterestTag.transform(event, ctx(v3))[0]!).user_data;
  // Inner spaces and punctuation stay, as RudderStack normalises.
  expect(user.fn).toEqual(["343b97011010c3549fe7fcd6c226ed9431ea37b0b77ed78f6300a0098925faf1"]); // sha256("mary ann")
  expect(user.ln).toEqual(["5349291f7c643970cc1b897c8ffb45a8b630e59c1fecc3d1e4dc8e292a7971a9"]); // sha256("o'brien-smith")
  expect(user.st).toEqual([sha("ny")]);
  expect(user.country).toEqual([sha("us")]);
  // sha256 of "são paulo" in UTF-8, what Pinterest matches; RudderStack hashes its Latin-1 bytes
  // (995d1e62…), a digest no platform matches, so Sluice keeps UTF-8.
  expect(user.ct).toEqual(["577abdbf90dadd651458eee7576c6e3684b5c27beabd465cc4bb3c42441b5b38"]);
  const nordic = track({ context: { traits: { email: "b@example.com", firstName: "Bjørn", lastName: "ØDEGAARD" }, ip: "203.0.113.9", userAgent: "UA" } });
  const nordicUser = bodyOf(pinterestTag.transform(nordic, ctx(v3))[0]!).user_data;
  expect(nordicUser.fn).toEqual(["9981679719f6d9fdef217c7b6c28070feaa48b00d73ecb08b92b5bcd45aa3a96"]); // sha256("bjørn")
  expect(nordicUser.ln).toEqual(["fe371f225a74546270e4c99973b5a2324710f8851363e9b325dac1a4c193eb9e"]); // sha256("ødegaard")
});

test("PINTEREST_TAG content_ids: a list whenever products are given, empty when none has an id; absent for a single product without one", () => {
  const customOf = (properties: Record<string, unknown>) => bodyOf(pinterestTag.transform(track({ properties }), ctx(v3))[0]!).custom_data;
  expect(customOf({ products: [] })).toEqual({ num_items: 0, content_ids: [], contents: [] });
  expect(customOf({ products: [{ name: "Scarf" }] })).toEqual({ num_items: 0, content_ids: [], contents: [{ quantity: 1, item_name: "Scarf" }] });
  // Products without an id are skipped in content_ids, not sent as empty entries.
  expect(customOf({ products: [{ product_id: "p-1" }, { name: "Hat" }, { sku: 12 }] }).content_ids).toEqual(["p-1", "12"]);
  // A null id is skipped (RudderStack sends the text "null").
  expect(customOf({ products: [{ id: null }] }).content_ids).toEqual([]);
  // Without products the properties are the one product: no id, no content_ids.
  expect(customOf({ name: "Gloves" })).toEqual({ num_items: 0, contents: [{ quantity: 1, item_name: "Gloves" }] });
});

test("PINTEREST_TAG refuses in RudderStack's words: config, message type, event name, time, action source, user data", () => {
  const refusal = (event: SluiceEvent, config: Record<string, any>) => {
    try {
      pinterestTag.transform(event, ctx(config));
    } catch (e) {
      expect(e).toBeInstanceOf(TransformError);
      return (e as Error).message;
    }
    return "no refusal";
  };
  expect(refusal(track(), { ...v3, advertiserId: "" })).toBe("Advertiser Id not found. Aborting");
  expect(refusal(track(), { ...v5, adAccountId: undefined })).toBe("Ad Account ID not found. Aborting");
  expect(refusal(track(), { ...v5, conversionToken: "" })).toBe("Conversion Token not found. Aborting");
  expect(refusal({ ...track(), type: "identify" }, v3)).toBe("message type identify is not supported");
  expect(refusal(track({ event: undefined }), v3)).toBe("event_name could not be mapped. Aborting.");
  expect(refusal(track({ timestamp: "not a date" }), v3)).toBe("event_time is required");
  expect(refusal(track({ channel: undefined }), v3)).toBe("action_source is required");
  expect(refusal(track({ channel: "server" }), v3)).toBe("Action source must be one of app_android, app_ios, web, offline");
  expect(refusal(track({ context: { traits: { firstName: "Ada" }, ip: "203.0.113.9" } }), v3)).toBe(
    "It is required at least one of em, hashed_maids or pair of client_ip_address and client_user_agent",
  );
  // An action source in the traits or properties wins over the channel.
  expect(refusal(track({ channel: "server", properties: { action_source: "offline" } }), v3)).toBe("no refusal");
});

test("PINTEREST_TAG batch(): consecutive events as {data: [...]}, at most 1000 per call; a v5 destination's batch keeps its endpoint and token", () => {
  const requests = Array.from({ length: MAX_EVENTS_PER_CALL + 1 }, (_, i) => ({ ...pinterestTag.transform(track({ messageId: `m-${i}` }), ctx(v3))[0]!, userKey: `u-${i % 3}` }));
  const batched = pinterestTag.batch!(requests, ctx(v3));
  expect(batched.map((b) => (b.body.JSON.data as unknown[]).length)).toEqual([1000, 1]);
  expect(batched[0]!).toMatchObject({ endpoint: V3, headers: { "Content-Type": "application/json" }, params: {} });
  expect((batched[0]!.body.JSON.data as any[]).map((e) => e.event_id).slice(0, 3)).toEqual(["m-0", "m-1", "m-2"]);
  expect((batched[1]!.body.JSON.data as any[])[0].event_id).toBe("m-1000");
  // Several users in one call: the call belongs to no single user.
  expect(batched[0]!.userKey).toBeUndefined();

  const [one] = pinterestTag.batch!(pinterestTag.transform(track(), ctx(v5)), ctx(v5));
  expect(one!).toMatchObject({ endpoint: "https://api.pinterest.com/v5/ad_accounts/549000222/events", headers: { Authorization: "Bearer pins-token" } });
  expect(Object.keys(one!.body.JSON)).toEqual(["data"]);
});

test("PINTEREST_TAG event filtering drops a track the allow list does not name", () => {
  const config = { ...v3, eventFilteringOption: "whitelistedEvents", whitelistedEvents: [{ eventName: "Order Completed" }] };
  expect(pinterestTag.transform(track({ event: "Coupon Applied" }), ctx(config))).toEqual([]);
  expect(pinterestTag.transform(track(), ctx(config))).toHaveLength(1);
});

// ---- through a real Sluice --------------------------------------------------------------------

/**
 * A stand-in of Pinterest's API v5 conversions endpoint with the answers of its reference: 200
 * `{num_events_received, num_events_processed, events: [{status, error_message, warning_message}]}`,
 * and 401 `{code, message}` for a token it does not know.
 */
const TOKENS = new Set(["pins-token"]);
const pins = startSink((r) => {
  if (r.method !== "POST" || !/^\/v5\/ad_accounts\/\d+\/events$/.test(r.path)) return Response.json({ code: 404, message: "Resource not found." }, { status: 404 });
  const token = /^Bearer (.+)$/.exec(r.headers.authorization ?? "")?.[1];
  if (!token || !TOKENS.has(token)) return Response.json({ code: 2, message: "Authentication failed." }, { status: 401 });
  const data: unknown[] = Array.isArray(r.body?.data) ? r.body.data : [];
  return Response.json({
    num_events_received: data.length,
    num_events_processed: data.length,
    events: data.map(() => ({ status: "processed", error_message: "", warning_message: "" })),
  });
});

let sluice: TestServer;
beforeAll(async () => {
  sluice = await startSluice({ args: ["--destination-base-url", `PINTEREST_TAG=${pins.url}`] });
});
afterAll(async () => {
  await sluice.stop();
  pins.stop();
  await cleanup(sluice.dataDir);
});

async function connected(config: Record<string, unknown>) {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: `pins-${crypto.randomUUID().slice(0, 8)}`, type: "PINTEREST_TAG", config, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  return { src, dst: dst.json as { id: string } };
}
const deliveries = async (id: string, state: string) => (await api(sluice.url, "GET", `/v2/destinations/${id}/deliveries?state=${state}`)).json.deliveries as any[];

test("PINTEREST_TAG end to end: a track reaches the v5 events endpoint as {data: [event]} with the token, hashed, and is delivered", async () => {
  const { src, dst } = await connected({ ...v5, adAccountId: "549000333" });
  const sent = await sendEvent(sluice.url, src.writeKey, "track", {
    userId: "e2e-1",
    event: "Product Added",
    properties: { product_id: "p-9", price: 12, action_source: "web" },
    context: { traits: { email: "E2E@example.com" } },
  });
  expect(sent.status).toBe(200);
  const [call] = await waitFor(() => {
    const calls = pins.received.filter((r) => r.path === "/v5/ad_accounts/549000333/events");
    return calls.length > 0 ? calls : undefined;
  }, { what: "the events call" });
  expect(call!.headers.authorization).toBe("Bearer pins-token");
  expect(call!.body.data).toHaveLength(1);
  expect(call!.body.data[0]).toMatchObject({
    event_name: "add_to_cart",
    action_source: "web",
    user_data: { em: [sha("e2e@example.com")] },
    custom_data: { content_ids: ["p-9"], contents: [{ id: "p-9", item_price: "12", quantity: 1 }] },
  });
  const [row] = await waitFor(() => deliveries(dst.id, "succeeded").then((l) => (l.length === 1 ? l : undefined)), { what: "the delivery succeeded" });
  expect(row).toMatchObject({ state: "succeeded", attempts: 1 });
});

test("PINTEREST_TAG end to end: a token Pinterest refuses (401) aborts the delivery", async () => {
  const { src, dst } = await connected({ ...v5, adAccountId: "549000444", conversionToken: "revoked" });
  expect((await sendEvent(sluice.url, src.writeKey, "track", { userId: "e2e-2", event: "Order Completed", channel: "web", context: { traits: { email: "x@example.com" } } })).status).toBe(200);
  const [row] = await waitFor(() => deliveries(dst.id, "aborted").then((l) => (l.length === 1 ? l : undefined)), { what: "the delivery aborted" });
  expect(row.lastError).toContain("401");
  expect(pins.received.filter((r) => r.path === "/v5/ad_accounts/549000444/events")).toHaveLength(1);
});
