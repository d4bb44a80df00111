import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { facebookConversions } from "../../src/destinations/facebook-conversions";
import { type DestinationContext, type DestinationRequest, type SluiceEvent, TransformError } from "../../src/destinations/types";
import { type SinkRequest, type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

const NOW = Date.parse("2024-06-01T09:00:00Z");
const TS = "2024-06-01T08:30:00.000Z";
const sha = (s: string) => createHash("sha256").update(s).digest("hex");

const ctx = (config: Record<string, any> = {}, baseUrl?: string): DestinationContext => ({
  config: { datasetId: "ds-7", accessToken: "tok-7", actionSource: "website", ...config },
  destination: { id: "dest-fbc", name: "Conversions", workspaceId: "ws-1" },
  baseUrl,
  now: () => NOW,
});
const event = (e: Partial<SluiceEvent>): SluiceEvent => ({ type: "track", messageId: "m-1", anonymousId: "anon-1", timestamp: TS, ...e }) as SluiceEvent;
function sent(requests: DestinationRequest[]) {
  expect(requests).toHaveLength(1);
  const form = requests[0]!.body.FORM as { data: string[]; test_event_code?: string };
  return { request: requests[0]!, data: JSON.parse(form.data[0]!), form };
}

test("FACEBOOK_CONVERSIONS Product Added → AddToCart at graph.facebook.com/v25.0/<datasetId>/events, one product's id as content_ids, value from price", () => {
  const { request, data } = sent(
    facebookConversions.transform(
      event({
        userId: "u-1",
        event: "Product Added",
        context: { traits: { email: "Ann@Example.com" } },
        properties: { product_id: "p-1", name: "Lamp", price: "$19.999", quantity: 3, category: "home", email: "ann@example.com" },
      }),
      ctx(),
    ),
  );
  expect(request).toMatchObject({ method: "POST", endpoint: "https://graph.facebook.com/v25.0/ds-7/events?access_token=tok-7", headers: {}, params: {} });
  expect(data).toEqual({
    user_data: { external_id: sha("u-1"), em: sha("ann@example.com") },
    event_name: "AddToCart",
    event_time: Math.floor(Date.parse(TS) / 1000),
    event_id: "m-1",
    action_source: "website",
    custom_data: {
      product_id: "p-1",
      name: "Lamp",
      price: "$19.999",
      quantity: 3,
      category: "home",
      content_ids: "p-1",
      contents: [{ id: "p-1", quantity: 3, item_price: "$19.999" }],
      content_type: "product",
      content_category: "home",
      content_name: "Lamp",
      currency: "USD",
      value: 20,
    },
  });
});

test("FACEBOOK_CONVERSIONS Order Completed → Purchase with every product, num_items and the order's revenue; categoryToContent names the content type", () => {
  const { data } = sent(
    facebookConversions.transform(
      event({
        event: "order completed",
        properties: { revenue: 42, currency: "EUR", delivery_category: "home_delivery", products: [{ product_id: "a", price: 2, category: "tea" }, { sku: "b", quantity: 4 }, "junk"] },
      }),
      ctx({ categoryToContent: [{ from: "tea", to: "product_group" }] }),
    ),
  );
  expect(data.event_name).toBe("Purchase");
  expect(data.custom_data).toMatchObject({
    content_ids: ["a", "b"],
    contents: [
      { id: "a", quantity: 1, item_price: 2, delivery_category: "home_delivery" },
      { id: "b", quantity: 4, delivery_category: "home_delivery" },
    ],
    content_type: "product_group",
    currency: "EUR",
    value: 42,
    num_items: 2,
  });
});

test("FACEBOOK_CONVERSIONS Payment Info Entered without products is its own product; a custom event gets value and currency", () => {
  const payment = sent(facebookConversions.transform(event({ event: "Payment Info Entered", properties: { product_id: "plan-1", total: 9 } }), ctx())).data;
  expect(payment.event_name).toBe("AddPaymentInfo");
  expect(payment.custom_data).toMatchObject({ content_ids: ["plan-1"], num_items: 1, value: 9, currency: "USD" });
  const custom = sent(facebookConversions.transform(event({ event: "Level Up", properties: { level: 3 } }), ctx())).data;
  expect(custom.event_name).toBe("Level Up");
  expect(custom.custom_data).toEqual({ level: 3, currency: "USD" });
});

test("FACEBOOK_CONVERSIONS custom data: a dotted property name nests, as RudderStack's extractCustomFields writes it (issue 50)", () => {
  const customData = (properties: Record<string, unknown>, config: Record<string, any> = {}) =>
    sent(facebookConversions.transform(event({ event: "Signed Up", properties }), ctx(config))).data.custom_data;
  // The event that showed it: RudderStack sends custom_data.dotted: {key}, not "dotted.key".
  expect(customData({ "dotted.key": "v" })).toEqual({ dotted: { key: "v" }, currency: "USD" });
  // A numeric part makes a list; a name holding "/" stays whole; a later dotted name writes into
  // an object property, a later plain name replaces what a dotted one made.
  expect(customData({ "list.0": "x", "a/b.c": 1, meta: { pos: 1 }, "meta.size": 2, "gone.x": 1, gone: "plain" })).toEqual({
    list: ["x"], "a/b.c": 1, meta: { pos: 1, size: 2 }, gone: "plain", currency: "USD",
  });
  // The PII rules see the nested name: `email.work` nests under `email`, a default PII property, and is dropped.
  expect(customData({ "email.work": "ann@example.com", plan: "pro" })).toEqual({ plan: "pro", currency: "USD" });
  // A dotted name that writes into a product changes what the custom data reads from it, as there;
  // the event itself is left as it came.
  const properties = { products: [{ product_id: "p-1", quantity: 1 }], "products.0.quantity": 4, order_id: "o-1" };
  const input = event({ event: "Order Completed", properties });
  const { data } = sent(facebookConversions.transform(input, ctx()));
  expect(data.custom_data.contents).toEqual([{ id: "p-1", quantity: 4 }]);
  expect(input.properties).toEqual({ products: [{ product_id: "p-1", quantity: 1 }], "products.0.quantity": 4, order_id: "o-1" });
});

test("FACEBOOK_CONVERSIONS page and screen → PageView; eventsToEvents maps a track to a standard event", () => {
  expect(sent(facebookConversions.transform(event({ type: "page", properties: { url: "https://example.com/" } }), ctx())).data).toMatchObject({
    event_name: "PageView",
    event_source_url: "https://example.com/",
  });
  expect(sent(facebookConversions.transform(event({ type: "screen" }), ctx())).data.event_name).toBe("PageView");
  expect(sent(facebookConversions.transform(event({ event: "Joined" }), ctx({ eventsToEvents: [{ from: "Joined", to: "Subscribe" }] }))).data.event_name).toBe("Subscribe");
});

test("FACEBOOK_CONVERSIONS app events carry app_data: tracking flags and a 16-part extinfo (a2 for Android, i2 for iOS)", () => {
  const app = event({
    event: "Opened",
    context: {
      device: { type: "Android", adTrackingEnabled: true, model: "Pixel 8", advertisingId: "gaid-1" },
      app: { namespace: "com.example", build: "42", version: "1.2.3" },
      os: { version: "14" },
      locale: "en-GB",
      screen: { width: 1080, height: 2400, density: 3 },
    },
    properties: { application_tracking_enabled: false },
  });
  const { data } = sent(facebookConversions.transform(app, ctx({ actionSource: "app" })));
  expect(data.action_source).toBe("app");
  expect(data.user_data).toMatchObject({ madid: "gaid-1", anon_id: "gaid-1" });
  expect(data.app_data).toEqual({
    advertiser_tracking_enabled: true,
    application_tracking_enabled: false,
    extinfo: ["a2", "com.example", "42", "1.2.3", "14", "Pixel 8", "en-GB", "", "", 1080, 2400, 3, "", "", "", ""],
  });
  expect(Object.keys(data)).toEqual(["user_data", "event_name", "event_time", "event_id", "action_source", "app_data", "custom_data"]);

  const ios = { ...app, context: { ...app.context, device: { type: "iOS", adTrackingEnabled: false } } };
  expect(sent(facebookConversions.transform(ios, ctx({ actionSource: "app" }))).data.app_data.extinfo[0]).toBe("i2");
  const tv = { ...app, context: { ...app.context, device: { type: "roku", adTrackingEnabled: true } } };
  expect(() => facebookConversions.transform(tv, ctx({ actionSource: "app" }))).toThrow('"context.device.type" is not a valid value');
  const noFlag = { ...app, context: { ...app.context, device: { type: "android" } } };
  expect(() => facebookConversions.transform(noFlag, ctx({ actionSource: "app" }))).toThrow(new TransformError('Missing required value from "context.device.adTrackingEnabled"'));
});

test("FACEBOOK_CONVERSIONS refusals: no event name, an old event, a missing dataset id", () => {
  expect(() => facebookConversions.transform(event({ event: "" }), ctx())).toThrow("'event' is required and should be a string");
  expect(() => facebookConversions.transform(event({ event: "X", timestamp: "2024-05-20T00:00:00Z" }), ctx())).toThrow(
    "Events must be sent within 7 days of their occurrence or up to one minute in the future.",
  );
  expect(() => facebookConversions.transform(event({ event: "X" }), { ...ctx(), config: { accessToken: "t" } })).toThrow("Dataset Id not found. Aborting");
  expect(() => facebookConversions.transform(event({ event: "Products Searched", properties: { query: ["a"] } }), ctx())).toThrow("'query' should be in string format only");
});

test("FACEBOOK_CONVERSIONS test events and pre-hashed user data (integrations.FacebookConversions.hashed)", () => {
  const { data, form } = sent(
    facebookConversions.transform(
      event({ userId: "h-1", event: "X", context: { traits: { email: "h@example.com" } }, integrations: { "Facebook Conversions": { hashed: true } } }),
      ctx({ testDestination: "true", testEventCode: "TEST9", removeExternalId: true }),
    ),
  );
  expect(form.test_event_code).toBe("TEST9");
  expect(data.user_data).toEqual({ em: "h@example.com" });
});

test("FACEBOOK_CONVERSIONS hashes the UTF-8 bytes of personal data, as Meta does: names trimmed and lower-cased, the city lower-cased, a blacklisted property hashed as sent", () => {
  const { data } = sent(
    facebookConversions.transform(
      event({
        userId: "u-9",
        event: "Signed Up",
        context: { traits: { firstname: " JÜRGEN ", lastName: "Müller", address: { city: "São Paulo" } }, device: { advertisingId: "ad-1" } },
        properties: { street: "Straße 1", plan: "pro" },
      }),
      ctx({ blacklistPiiProperties: [{ blacklistPiiProperties: "street", blacklistPiiHash: true }] }),
    ),
  );
  // Digests computed apart from the UTF-8 bytes of jürgen, müller, são paulo and "Straße 1".
  expect(data.user_data).toEqual({
    external_id: sha("u-9"),
    ln: "2dbd218072117713f2d5996a726a9b216ed791ffd0783b6ba4ab6d61b8333192",
    fn: "19b720a911fced55aecd96bf4ddcada1c69be5a96dc523d5be336b8efbde3109",
    ct: "577abdbf90dadd651458eee7576c6e3684b5c27beabd465cc4bb3c42441b5b38",
    madid: "ad-1",
    anon_id: "ad-1",
  });
  expect(data.custom_data).toEqual({ street: "4ed1be7d5c5384d17256f2d9be0d1dd14bb66dde06bd219f4203d47d1d1cd225", plan: "pro", currency: "USD" });
});

// ---- through a real Sluice, to a stand-in of the Graph API -------------------------------------

/** A stand-in of the Conversions API's events endpoint, answering `{events_received, messages, fbtrace_id}` as Meta's reference shows. */
const graph = startSink((r: SinkRequest) => {
  if (r.method !== "POST" || !/^\/v25\.0\/[^/]+\/events$/.test(r.path) || r.query.access_token !== "ds-token") {
    return Response.json({ error: { message: "Invalid OAuth access token - Cannot parse access token", type: "OAuthException", code: 190, fbtrace_id: "T1" } }, { status: 400 });
  }
  const data = JSON.parse(new URLSearchParams(String(r.body)).get("data") ?? "[]");
  return Response.json({ events_received: data.length, messages: [], fbtrace_id: "T2" });
});

let sluice: TestServer;
beforeAll(async () => {
  sluice = await startSluice({ args: ["--destination-base-url", `FACEBOOK_CONVERSIONS=${graph.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await sluice.stop();
  graph.stop();
  cleanup(sluice.dataDir);
});

test("FACEBOOK_CONVERSIONS end to end: a page call reaches the dataset's events endpoint as PageView and is delivered", async () => {
  const src = await createSource(sluice.url);
  const dst = await api(sluice.url, "POST", "/v2/destinations", {
    name: "fbc-e2e",
    type: "FACEBOOK_CONVERSIONS",
    config: { datasetId: "dataset-e2e", accessToken: "ds-token", actionSource: "website" },
    sourceIds: [src.id],
  });
  expect(dst.status).toBe(201);
  const res = await sendEvent(sluice.url, src.writeKey, "page", { userId: "reader-1", name: "Docs", properties: { url: "https://example.com/docs", path: "/docs" } });
  expect(res.status).toBe(200);
  await waitFor(() => graph.received.some((r) => r.path === "/v25.0/dataset-e2e/events"), { what: "the call at the stand-in" });
  const call = graph.received.find((r) => r.path === "/v25.0/dataset-e2e/events")!;
  const [serverEvent] = JSON.parse(new URLSearchParams(String(call.body)).get("data")!);
  expect(serverEvent).toMatchObject({
    user_data: { external_id: sha("reader-1") },
    event_name: "PageView",
    event_source_url: "https://example.com/docs",
    action_source: "website",
    custom_data: { url: "https://example.com/docs", path: "/docs", currency: "USD" },
  });
  const id = (dst.json as { id: string }).id;
  const rows = await waitFor(async () => {
    const l = (await api(sluice.url, "GET", `/v2/destinations/${id}/deliveries?state=succeeded`)).json.deliveries as any[];
    return l.length === 1 ? l : undefined;
  }, { what: "the delivery succeeded" });
  expect(rows[0]).toMatchObject({ state: "succeeded", attempts: 1 });
});
