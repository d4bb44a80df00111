import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { facebookPixel } from "../../src/destinations/facebook-pixel";
import { checkGraphResponse } from "../../src/destinations/facebook-pixel/response";
import { type DestinationContext, type DestinationRequest, type SluiceEvent, TransformError } from "../../src/destinations/types";
import { type SinkRequest, type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

const NOW = Date.parse("2024-03-10T12:00:00Z");
const TS = "2024-03-10T11:00:00.250Z";
const TS_SECONDS = Math.floor(Date.parse(TS) / 1000);
const sha = (s: string) => createHash("sha256").update(s).digest("hex");

const BASE = { pixelId: "px-1", accessToken: "tok-1" };
const ctx = (config: Record<string, any> = {}, baseUrl?: string): DestinationContext => ({
  config: { ...BASE, ...config },
  destination: { id: "dest-fbp", name: "Pixel", workspaceId: "ws-1" },
  baseUrl,
  now: () => NOW,
});
const event = (e: Partial<SluiceEvent>): SluiceEvent => ({ type: "track", messageId: "m-1", anonymousId: "anon-1", channel: "web", timestamp: TS, ...e }) as SluiceEvent;
/** The single server event a request carries, and the request without it. */
function sent(requests: DestinationRequest[]) {
  expect(requests).toHaveLength(1);
  const r = requests[0]!;
  const form = r.body.FORM as { data: string[]; test_event_code?: string };
  expect(form.data).toHaveLength(1);
  return { request: r, data: JSON.parse(form.data[0]!), form };
}

test("FACEBOOK_PIXEL identify with advancedMapping → POST graph.facebook.com/v25.0/<pixelId>/events, user data normalised and SHA-256 hashed", () => {
  const { request, data } = sent(
    facebookPixel.transform(
      event({
        type: "identify",
        userId: "u-42",
        context: {
          ip: "203.0.113.9",
          userAgent: "Mozilla/5.0",
          fbp: "fb.1.1700000000.111",
          traits: { email: "  Ada@Example.COM ", phone: 447700900123, gender: "Female", firstName: "Ada", lastName: "Lovelace", address: { city: "London", zip: "NW1" } },
        },
      }),
      ctx({ advancedMapping: true }),
    ),
  );
  expect(request).toMatchObject({ method: "POST", endpoint: "https://graph.facebook.com/v25.0/px-1/events?access_token=tok-1", headers: {}, params: {} });
  expect(request.body.JSON).toEqual({});
  expect(data).toEqual({
    user_data: {
      external_id: sha("u-42"),
      em: sha("ada@example.com"),
      ph: sha("447700900123"),
      ge: sha("f"),
      ln: sha("lovelace"),
      fn: sha("ada"),
      ct: sha("london"),
      zp: sha("nw1"),
      client_ip_address: "203.0.113.9",
      client_user_agent: "Mozilla/5.0",
      fbp: "fb.1.1700000000.111",
    },
    event_name: "identify",
    event_time: TS_SECONDS,
    event_id: "m-1",
    action_source: "website",
  });
  // Keys in RudderStack's order: the form's JSON text is what Meta receives.
  expect(Object.keys(data)).toEqual(["user_data", "event_name", "event_time", "event_id", "action_source"]);
});

// Expected digests written out (computed apart, from the UTF-8 bytes), so that the test does not
// share the code it checks.
const UTF8_SHA = {
  "renée@exämple.com": "cdb2ed0416c0d3b4d47461de69acfe9b4c85701632c081ffb4924a4c309ff324",
  zoë: "2752b88686847fa5c86f47b94ce652b7b3f22a91c37617d451a4db9afa431450",
  ångström: "d792fdbd024c6c8239fbb1d588beab4a614f12fb166e006c32cb85bceb2881ac",
  köln: "72903358b624f52cbea526d61506f68b2943ff6da81d9c94b931ffac00703c29",
  "île-de-france": "99ce399723718aa0ae8d9ec887f823e31236caace3914a0bd38c098a32201026",
  Łukasz: "c57b4f3ac483cacc29c0126f482eff34874bc6310fbd3730c9e929b9a0674b68",
  Żak: "db8ad14a9adb1bfac11e66a85d1fd36bdb4a60acd31d6e322a8e9251ed12d410",
};

test("FACEBOOK_PIXEL user data per field: em/fn/ln trimmed and lower-cased; ct/st/zp/country lower-cased only; ph, db, external_id as sent; gender to f/m", () => {
  const { data } = sent(
    facebookPixel.transform(
      event({
        type: "identify",
        userId: " U-7 ",
        traits: {
          email: " Renée@Exämple.com ",
          firstName: "\t Zoë ",
          last_name: " ÅNGSTRÖM",
          phone: "+49 (170) 1234",
          birthday: "1990-01-02",
          gender: "man",
          address: { city: "KÖLN", state: "Île-de-France", postalCode: " SW1A 1AA", country: "DE" },
        },
      }),
      ctx({ advancedMapping: true }),
    ),
  );
  expect(data.user_data).toEqual({
    external_id: sha(" U-7 "),
    em: UTF8_SHA["renée@exämple.com"],
    ph: sha("+49 (170) 1234"),
    ge: sha("m"),
    db: sha("1990-01-02"),
    ln: UTF8_SHA.ångström,
    fn: UTF8_SHA.zoë,
    ct: UTF8_SHA.köln,
    st: UTF8_SHA["île-de-france"],
    // Not trimmed: RudderStack trims only e-mail and names.
    zp: sha(" sw1a 1aa"),
    country: sha("de"),
  });
  // Meta hashes the UTF-8 bytes; RudderStack's library hashes Latin-1 ones (a hash Meta cannot match).
  expect(data.user_data.fn).not.toBe(createHash("sha256").update("zoë", "latin1").digest("hex"));
});

test("FACEBOOK_PIXEL a two-word name fills fn/ln hashed as written; other genders and a name of one or three words are left out", () => {
  const user = (traits: Record<string, unknown>) =>
    sent(facebookPixel.transform(event({ type: "identify", userId: "u", context: { traits } }), ctx({ advancedMapping: true }))).data.user_data;
  expect(user({ name: "Łukasz Żak", firstName: "Other", gender: "nonbinary" })).toEqual({ external_id: sha("u"), fn: UTF8_SHA.Łukasz, ln: UTF8_SHA.Żak });
  expect(user({ name: "Ada King Lovelace", gender: 1 })).toEqual({ external_id: sha("u") });
  expect(user({ name: "Ada" })).toEqual({ external_id: sha("u") });
  // A number is made text before hashing.
  expect(user({ address: { zip: 10115 } })).toEqual({ external_id: sha("u"), zp: sha("10115") });
});

test("FACEBOOK_PIXEL identify without advancedMapping → refused in RudderStack's words", () => {
  expect(() => facebookPixel.transform(event({ type: "identify", userId: "u" }), ctx())).toThrow(
    new TransformError('For identify events, "Advanced Mapping" configuration must be enabled on the RudderStack dashboard'),
  );
  // RudderStack's exported configs may hold the flag as text.
  expect(facebookPixel.transform(event({ type: "identify", userId: "u" }), ctx({ advancedMapping: "true" }))).toHaveLength(1);
});

test("FACEBOOK_PIXEL custom track → flattened properties as custom_data, revenue as value, default PII properties dropped, content_ids kept as a list", () => {
  const { data } = sent(
    facebookPixel.transform(
      event({
        event: "Spin Result",
        context: { traits: { email: "kim@example.com" } },
        properties: { revenue: 12.5, bet: { size: 2, colour: "red" }, email: "kim@example.com", phone: "1", content_ids: ["a", "b"], event_id: "evt-9", action_source: "app" },
      }),
      ctx({ removeExternalId: true }),
    ),
  );
  expect(data).toEqual({
    user_data: { em: sha("kim@example.com") },
    event_name: "Spin Result",
    event_time: TS_SECONDS,
    event_id: "evt-9",
    action_source: "app",
    custom_data: { "bet.size": 2, "bet.colour": "red", value: 12.5, content_ids: ["a", "b"] },
  });
});

test("FACEBOOK_PIXEL whitelisted PII is kept, blacklisted properties are dropped or hashed; `hashed: true` in the event's options sends them as they are", () => {
  const config = {
    whitelistPiiProperties: [{ whitelistPiiProperties: "city" }],
    blacklistPiiProperties: [
      { blacklistPiiProperties: "coupon", blacklistPiiHash: true },
      { blacklistPiiProperties: "email", blacklistPiiHash: false },
    ],
  };
  const props = { city: "Paris", coupon: "SAVE10", email: "x@example.com", plan: "pro" };
  expect(sent(facebookPixel.transform(event({ event: "Upgraded", properties: props }), ctx(config))).data.custom_data).toEqual({ city: "Paris", coupon: sha("SAVE10"), plan: "pro" });
  const prehashed = sent(
    facebookPixel.transform(event({ event: "Upgraded", userId: "already-hashed", properties: props, integrations: { FacebookPixel: { hashed: true } } }), ctx(config)),
  ).data;
  expect(prehashed.custom_data.coupon).toBe("SAVE10");
  expect(prehashed.user_data.external_id).toBe("already-hashed");
});

test("FACEBOOK_PIXEL Order Completed → Purchase with contents, num_items, value and USD; categoryToContent names the content type", () => {
  const { data } = sent(
    facebookPixel.transform(
      event({
        event: "Order Completed",
        properties: {
          order_id: "o-1",
          revenue: "30.456",
          category: "shoes",
          products: [
            { product_id: "p-1", price: 10, quantity: 2 },
            { sku: "s-2", price: 10.45 },
            { name: "no id" },
          ],
        },
      }),
      ctx({ categoryToContent: [{ from: "shoes", to: "product_group" }] }),
    ),
  );
  expect(data.event_name).toBe("Purchase");
  expect(data.custom_data).toEqual({
    order_id: "o-1",
    revenue: "30.456",
    category: "shoes",
    "products[0].product_id": "p-1",
    "products[0].price": 10,
    "products[0].quantity": 2,
    "products[1].sku": "s-2",
    "products[1].price": 10.45,
    "products[2].name": "no id",
    content_category: "shoes",
    content_ids: ["p-1", "s-2"],
    content_type: "product_group",
    currency: "USD",
    value: 30.46,
    contents: [
      { id: "p-1", quantity: 2, item_price: 10 },
      { id: "s-2", quantity: 1, item_price: 10.45 },
    ],
    num_items: 2,
  });
});

test("FACEBOOK_PIXEL e-commerce refusals: products not a list, a search query object, a revenue that is no number", () => {
  expect(() => facebookPixel.transform(event({ event: "Order Completed", properties: { products: { id: 1 } } }), ctx())).toThrow("'properties.products' is not sent as an Array<Object>");
  expect(() => facebookPixel.transform(event({ event: "Products Searched", properties: { query: { q: "x" } } }), ctx())).toThrow("'query' should be in string format only");
  expect(() => facebookPixel.transform(event({ event: "Product List Viewed", properties: { value: "lots" } }), ctx())).toThrow("Revenue could not be converted to number");
});

test("FACEBOOK_PIXEL Product Viewed is valued at its price unless valueFieldIdentifier says properties.value; eventsToEvents maps a track to a standard event", () => {
  const viewed = event({ event: "Product Viewed", properties: { product_id: "p-9", name: "Hat", price: 20, value: 25, currency: "EUR" } });
  expect(sent(facebookPixel.transform(viewed, ctx())).data.custom_data).toMatchObject({ content_ids: ["p-9"], content_name: "Hat", value: 20, currency: "EUR", content_type: "product" });
  expect(sent(facebookPixel.transform(viewed, ctx({ valueFieldIdentifier: "properties.value" }))).data.custom_data.value).toBe(25);

  const mapped = sent(facebookPixel.transform(event({ event: "Signed Up", properties: { plan: "pro" } }), ctx({ eventsToEvents: [{ from: "signed up", to: "CompleteRegistration" }] }))).data;
  expect(mapped.event_name).toBe("CompleteRegistration");
  expect(mapped.custom_data).toEqual({ plan: "pro" });
});

test("FACEBOOK_PIXEL page → `Viewed page <name>`; with standardPageCall → PageView, refused when it has no properties", () => {
  const page = event({ type: "page", name: "Pricing", properties: { url: "https://example.com/pricing", title: "Pricing" } });
  const plain = sent(facebookPixel.transform(page, ctx())).data;
  expect(plain.event_name).toBe("Viewed page Pricing");
  expect(plain.event_source_url).toBe("https://example.com/pricing");
  expect(plain.custom_data).toEqual({ url: "https://example.com/pricing", title: "Pricing" });
  expect(sent(facebookPixel.transform(event({ type: "screen" }), ctx())).data.event_name).toBe("Viewed a page");
  expect(sent(facebookPixel.transform(page, ctx({ standardPageCall: true }))).data.event_name).toBe("PageView");
  expect(() => facebookPixel.transform(event({ type: "page", name: "Empty" }), ctx({ standardPageCall: true }))).toThrow(
    "After excluding opt_out,event_id,action_source, no fields are present in 'properties' for a standard event",
  );
});

test("FACEBOOK_PIXEL refuses events older than 7 days (62 for a physical store) or over a minute ahead, by the context's clock", () => {
  const days = (n: number) => new Date(NOW - n * 86_400_000).toISOString();
  expect(() => facebookPixel.transform(event({ event: "Old", timestamp: days(8) }), ctx())).toThrow("Events must be sent within 7 days of their occurrence or up to one minute in the future.");
  expect(() => facebookPixel.transform(event({ event: "Ahead", timestamp: new Date(NOW + 120_000).toISOString() }), ctx())).toThrow("up to one minute in the future");
  const store = event({ event: "In store", timestamp: days(30), properties: { action_source: "physical_store" } });
  expect(sent(facebookPixel.transform(store, ctx())).data.action_source).toBe("physical_store");
  expect(() => facebookPixel.transform({ ...store, timestamp: days(63) }, ctx())).toThrow("Events must be sent within 62 days");
});

test("FACEBOOK_PIXEL refusals: no event name, a non-string name, an invalid action_source", () => {
  expect(() => facebookPixel.transform(event({ event: undefined }), ctx())).toThrow("'event' is required");
  expect(() => facebookPixel.transform(event({ event: 42 as any }), ctx())).toThrow("event name should be string");
  expect(() => facebookPixel.transform(event({ event: "X", properties: { action_source: "fax" } }), ctx())).toThrow("Invalid Action Source type");
  expect(() => facebookPixel.transform(event({ event: "X" }), { ...ctx(), config: { accessToken: "t" } })).toThrow("Pixel Id not found. Aborting");
});

test("FACEBOOK_PIXEL test events, limited data use, and fbc made from the page URL's fbclid", () => {
  const e = event({
    event: "Clicked",
    context: { page: { url: "https://shop.example.com/?fbclid=AbC123" }, dataProcessingOptions: ["LDU", 1, 1000] },
  });
  const { data, form } = sent(facebookPixel.transform(e, ctx({ testDestination: true, testEventCode: "TEST42", limitedDataUSage: true })));
  expect(form.test_event_code).toBe("TEST42");
  expect(data.user_data.fbc).toBe(`fb.1.${Date.parse(TS)}.AbC123`);
  expect(data).toMatchObject({ data_processing_options: "LDU", data_processing_options_country: 1, data_processing_options_state: 1000 });
  // A custom event without revenue still carries custom_data (RudderStack sends it empty).
  expect(data.custom_data).toEqual({});
});

test("FACEBOOK_PIXEL event filtering: a denied track sends nothing", () => {
  expect(facebookPixel.transform(event({ event: "Noise" }), ctx({ eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "Noise" }] }))).toEqual([]);
});

test("FACEBOOK_PIXEL reads a 2xx answer: events_received is delivered; an error object aborts or retries by its code; an HTML page retries", () => {
  const req = facebookPixel.transform(event({ event: "X" }), ctx())[0]!;
  const check = (body: unknown) => checkGraphResponse({ status: 200, body: typeof body === "string" ? body : JSON.stringify(body) });
  expect(check({ events_received: 1, messages: [], fbtrace_id: "AbCdEf" })).toEqual({ outcome: "ok" });
  expect(facebookPixel.checkResponse!({ status: 200, body: JSON.stringify({ events_received: 1, messages: [], fbtrace_id: "x" }) }, req, ctx())).toEqual({ outcome: "ok" });
  expect(check({ error: { message: "Invalid parameter", type: "OAuthException", code: 100, error_subcode: 2804003, error_user_title: "Event Timestamp Too Old", error_user_msg: "older than 7 days", fbtrace_id: "x" } })).toEqual({
    outcome: "abort",
    error: "Event Timestamp Too Old. Facebook responded with error code: 100 and sub-code: 2804003",
  });
  expect(check({ error: { message: "(#4) Application request limit reached", type: "OAuthException", code: 4, fbtrace_id: "x" } })).toEqual({
    outcome: "retry",
    error: "(#4) Application request limit reached. Facebook responded with error code: 4",
  });
  expect(check("<!DOCTYPE html><html><body><div><h1>Sorry, something went wrong.</h1></div></body></html>")).toEqual({
    outcome: "retry",
    error: "Invalid response format (HTML) during response transformation",
  });
});

// ---- through a real Sluice, to a stand-in of the Graph API -------------------------------------

/**
 * A stand-in of the Conversions API's `POST /<version>/<pixel id>/events`, answering as Meta's
 * reference shows: `{events_received, messages, fbtrace_id}` for a known token, and for an
 * unknown one a 400 carrying the Graph API's error object (OAuthException, code 190).
 */
const TOKENS = new Set(["good-token"]);
const graph = startSink((r: SinkRequest) => {
  if (r.method !== "POST" || !/^\/v25\.0\/[^/]+\/events$/.test(r.path)) return Response.json({ error: { message: "Unknown path", type: "GraphMethodException", code: 100, fbtrace_id: "T1" } }, { status: 400 });
  if (!TOKENS.has(r.query.access_token ?? "")) {
    return Response.json({ error: { message: "Invalid OAuth access token - Cannot parse access token", type: "OAuthException", code: 190, fbtrace_id: "T2" } }, { status: 400 });
  }
  const data = JSON.parse(new URLSearchParams(String(r.body)).get("data") ?? "[]");
  if (data.some((e: any) => e.event_name === "Rejected")) {
    // Meta answers some event errors inside a 200 (the case RudderStack's response handler reads).
    return Response.json({ error: { message: "Invalid parameter", type: "OAuthException", code: 100, error_subcode: 2804019, error_user_title: "Server Side Api Parameter Error", fbtrace_id: "T3" } });
  }
  return Response.json({ events_received: data.length, messages: [], fbtrace_id: "T4" });
});

let sluice: TestServer;
beforeAll(async () => {
  sluice = await startSluice({ args: ["--destination-base-url", `FACEBOOK_PIXEL=${graph.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await sluice.stop();
  graph.stop();
  cleanup(sluice.dataDir);
});

async function connected(config: Record<string, unknown>) {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", { name: `fbp-${Math.random().toString(36).slice(2)}`, type: "FACEBOOK_PIXEL", config, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  return { src, dst: dst.json as { id: string } };
}
const deliveries = async (id: string, state: string) => (await api(sluice.url, "GET", `/v2/destinations/${id}/deliveries?state=${state}`)).json.deliveries as any[];
const callsFor = (pixel: string) => graph.received.filter((r) => r.path === `/v25.0/${pixel}/events`);

test("FACEBOOK_PIXEL end to end: a Product Added reaches the Graph API as a form whose data is the server event, and is delivered", async () => {
  const { src, dst } = await connected({ pixelId: "pixel-e2e", accessToken: "good-token" });
  const res = await sendEvent(sluice.url, src.writeKey, "track", {
    userId: "buyer-1",
    event: "Product Added",
    context: { traits: { email: "Buyer@Example.com" } },
    properties: { product_id: "sku-1", name: "Mug", price: 9.99, quantity: 2 },
  });
  expect(res.status).toBe(200);
  await waitFor(() => callsFor("pixel-e2e").length > 0, { what: "the call at the stand-in" });
  const call = callsFor("pixel-e2e")[0]!;
  expect(call.query.access_token).toBe("good-token");
  expect(call.headers["content-type"]).toContain("application/x-www-form-urlencoded");
  const [serverEvent] = JSON.parse(new URLSearchParams(String(call.body)).get("data")!);
  expect(serverEvent).toMatchObject({
    user_data: { external_id: sha("buyer-1"), em: sha("buyer@example.com") },
    event_name: "AddToCart",
    action_source: "other",
    custom_data: { content_ids: ["sku-1"], content_name: "Mug", value: 9.99, currency: "USD", contents: [{ id: "sku-1", quantity: 2, item_price: 9.99 }] },
  });
  const [row] = await waitFor(() => deliveries(dst.id, "succeeded").then((l) => (l.length === 1 ? l : undefined)), { what: "the delivery succeeded" });
  expect(row).toMatchObject({ state: "succeeded", attempts: 1 });
});

test("FACEBOOK_PIXEL end to end: an error object in a 200 answer aborts with RudderStack's message; a bad token's 400 aborts", async () => {
  const { src, dst } = await connected({ pixelId: "pixel-e2e-2", accessToken: "good-token" });
  await sendEvent(sluice.url, src.writeKey, "track", { userId: "u-2", event: "Rejected", properties: { a: 1 } });
  const [aborted] = await waitFor(() => deliveries(dst.id, "aborted").then((l) => (l.length === 1 ? l : undefined)), { what: "the delivery aborted" });
  expect(aborted.lastError).toBe("Server Side Api Parameter Error. Facebook responded with error code: 100 and sub-code: 2804019");

  const bad = await connected({ pixelId: "pixel-e2e-3", accessToken: "expired-token" });
  await sendEvent(sluice.url, bad.src.writeKey, "track", { userId: "u-3", event: "Anything" });
  const [refused] = await waitFor(() => deliveries(bad.dst.id, "aborted").then((l) => (l.length === 1 ? l : undefined)), { what: "the bad token's delivery aborted" });
  expect(refused).toMatchObject({ state: "aborted", attempts: 1 });
  expect(callsFor("pixel-e2e-3")).toHaveLength(1);
});
