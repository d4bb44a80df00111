import { afterAll, beforeAll, expect, test } from "bun:test";
import { heap } from "../../src/destinations/heap";
import type { DestinationContext, SluiceEvent } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

const ctx = (config: Record<string, any> = { appId: "4141" }, baseUrl?: string): DestinationContext => ({
  config,
  destination: { id: "dest-heap", name: "Heap", workspaceId: "ws-1" },
  baseUrl,
});
const HEADERS = { Accept: "application/json", "Content-Type": "application/json" };
const ts = "2024-05-01T10:00:00.000Z";

test("HEAP track → POST heapanalytics.com/api/track with identity, event, timestamp and flattened properties", () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "m-1",
    userId: "u-1",
    anonymousId: "a-1",
    event: "Purchase",
    timestamp: ts,
    properties: { amount: 99, cart: { items: 2, coupon: "X" }, tags: ["a", "b"], idempotencyKey: "idem-1" },
  };
  expect(heap.transform(event, ctx())).toEqual([
    {
      version: "1",
      type: "REST",
      method: "POST",
      endpoint: "https://heapanalytics.com/api/track",
      headers: HEADERS,
      params: {},
      body: {
        JSON: {
          identity: "u-1",
          properties: { amount: 99, "cart.items": 2, "cart.coupon": "X", "tags[0]": "a", "tags[1]": "b" },
          app_id: "4141",
          event: "Purchase",
          timestamp: ts,
          idempotency_key: "idem-1",
        },
        JSON_ARRAY: {},
        XML: {},
        FORM: {},
      },
      files: {},
    },
  ]);
});

test("HEAP identify → POST /api/add_user_properties with identity and flattened traits", () => {
  const event: SluiceEvent = {
    type: "identify",
    messageId: "m-2",
    userId: "u-9",
    anonymousId: "a-9",
    context: { traits: { email: "ada@example.com", address: { city: "London" } } },
  };
  const [req] = heap.transform(event, ctx());
  expect(req!.endpoint).toBe("https://heapanalytics.com/api/add_user_properties");
  expect(req!.headers).toEqual(HEADERS);
  expect(req!.body.JSON).toEqual({ identity: "u-9", properties: { email: "ada@example.com", "address.city": "London" }, app_id: "4141" });
  const { userId: _u, ...noUser } = event;
  expect(heap.transform({ ...noUser, context: { traits: { id: "t-1", plan: "pro" } } }, ctx())[0]!.body.JSON.identity).toBe("t-1");
  expect(heap.transform({ ...event, userId: "", context: { traits: { id: "t-1" } } }, ctx())[0]!.body.JSON.identity).toBe("t-1");
  expect(() => heap.transform({ type: "identify", messageId: "m", userId: "u" }, ctx())).toThrow("traits are required");
});

test("HEAP identify without a user id sets the properties of the anonymousId, as RudderStack does", () => {
  const anonymous: SluiceEvent = { type: "identify", messageId: "m-3", anonymousId: "a-9", context: { traits: { plan: "pro" } } };
  expect(heap.transform(anonymous, ctx())[0]!.body.JSON).toEqual({ identity: "a-9", properties: { plan: "pro" }, app_id: "4141" });
  // A blank userId is no id: the chain goes on to the anonymousId.
  expect(heap.transform({ ...anonymous, userId: "" }, ctx())[0]!.body.JSON.identity).toBe("a-9");
  // Traits are checked first, and with no id at all RudderStack's refusal stands.
  const { anonymousId: _a, ...noIds } = anonymous;
  expect(() => heap.transform(noIds, ctx())).toThrow("userId is required");
  expect(() => heap.transform({ type: "identify", messageId: "m" }, ctx())).toThrow("traits are required");
});

test("HEAP track: a blank userId falls through to the anonymousId; no id at all is refused", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", userId: "", anonymousId: "a-5", event: "E", timestamp: ts };
  expect(heap.transform(event, ctx())[0]!.body.JSON.identity).toBe("a-5");
  expect(() => heap.transform({ type: "track", messageId: "m", event: "E", timestamp: ts }, ctx())).toThrow("userId is required");
  expect(() => heap.transform({ type: "track", messageId: "m", userId: "u" }, ctx())).toThrow("event is required");
});

test("HEAP track: no userId falls back to anonymousId; dataResidency EU → c.eu.heap-api.com", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", anonymousId: "a-5", event: "E", timestamp: ts };
  const [req] = heap.transform(event, ctx({ appId: "4141", dataResidency: "EU" }));
  expect(req!.endpoint).toBe("https://c.eu.heap-api.com/api/track");
  expect(req!.body.JSON.identity).toBe("a-5");
  const identify: SluiceEvent = { type: "identify", messageId: "m", userId: "u", traits: { a: 1 } };
  expect(heap.transform(identify, ctx({ appId: "1", dataResidency: "EU" }))[0]!.endpoint).toBe("https://c.eu.heap-api.com/api/add_user_properties");
  expect(heap.transform(event, ctx({ appId: "1", dataResidency: "US" }))[0]!.endpoint).toBe("https://heapanalytics.com/api/track");
});

test("HEAP refuses other message types; missing appId; baseUrl override", () => {
  expect(() => heap.transform({ type: "page", messageId: "m", userId: "u" }, ctx())).toThrow("not supported");
  const event: SluiceEvent = { type: "track", messageId: "m", userId: "u", event: "E" };
  expect(() => heap.transform(event, ctx({}))).toThrow("destination config is missing 'appId'");
  expect(heap.transform(event, ctx(undefined, "http://localhost:9090"))[0]!.endpoint).toBe("http://localhost:9090/api/track");
});

test("HEAP event filtering (whitelist / blacklist)", () => {
  const event: SluiceEvent = { type: "track", messageId: "m", userId: "u", event: "Page Scrolled" };
  expect(heap.transform(event, ctx({ appId: "1", eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "Page Scrolled" }] }))).toEqual([]);
  expect(heap.transform(event, ctx({ appId: "1", eventFilteringOption: "whitelistedEvents", whitelistedEvents: [{ eventName: "Page Scrolled" }] }))).toHaveLength(1);
});

test("HEAP sends one request per event, as RudderStack does (no bulk calls)", () => {
  expect(heap.batch).toBeUndefined();
});

test("HEAP track: an empty idempotencyKey is not sent; no properties → {}; originalTimestamp when no timestamp", () => {
  const event: SluiceEvent = {
    type: "track",
    messageId: "m",
    anonymousId: "a-1",
    event: "E",
    originalTimestamp: ts,
    properties: { idempotencyKey: "" },
  };
  expect(heap.transform(event, ctx())[0]!.body.JSON).toEqual({ identity: "a-1", properties: {}, app_id: "4141", event: "E", timestamp: ts });
  const { properties: _none, ...noProps } = event;
  expect(heap.transform(noProps, ctx())[0]!.body.JSON).toEqual({ identity: "a-1", properties: {}, app_id: "4141", event: "E", timestamp: ts });
});

// Cases from RudderStack's test/integrations/destinations/heap/processor/data.ts and router/data.ts
// (rudder-transformer 78a4d185 / 04577cdc), run through the CDK v2 workflow RudderStack uses for HEAP.
const FIXTURE_CTX = ctx({ appId: "<app id>" });
const fixtureContext = {
  app: { build: "1.0.0", name: "RudderLabs JavaScript SDK", namespace: "com.rudderlabs.javascript", version: "1.0.0" },
  ip: "0.0.0.0",
  library: { name: "RudderLabs JavaScript SDK", version: "1.0.0" },
  locale: "en-US",
  os: { name: "", version: "" },
  screen: { density: 2 },
  traits: { anonymousId: "sampath", email: "sampath@gmail.com" },
  userAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_2) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.88 Safari/537.36",
};
const fixtureTrack = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}): SluiceEvent => ({
  anonymousId: "sampath",
  channel: "web",
  context: fixtureContext,
  event: "Send Transactional Email",
  integrations: { All: true },
  messageId: "c0c5b892-0d54-449f-b85f-ebb39ff04e67",
  originalTimestamp: "2020-01-16T13:23:20.844Z",
  properties,
  sentAt: "2020-01-16T13:23:23.782Z",
  timestamp: "2020-01-16T18:53:20.866+05:30",
  type: "track",
  userId: "sampath",
  ...extra,
});
const fixtureRequest = (endpoint: string, json: Record<string, unknown>) => ({
  version: "1",
  type: "REST",
  method: "POST",
  endpoint,
  headers: { "Content-Type": "application/json", Accept: "application/json" },
  params: {},
  body: { JSON: json, XML: {}, JSON_ARRAY: {}, FORM: {} },
  files: {},
});

/** The fixtures' identify of user "sampath" (anonymousId "sampath"), its userId as given. */
function fixtureIdentify(userId: string): SluiceEvent {
  const { traits: _t, ...context } = fixtureContext;
  return {
    anonymousId: "sampath",
    channel: "web",
    context,
    integrations: { All: true },
    traits: { anonymousId: "sampath", email: "sampath@gmail.com" },
    messageId: "fca2e71a-5d30-48e1-ba45-761c16e3820f",
    originalTimestamp: "2020-01-16T13:21:59.076Z",
    timestamp: "2020-01-16T18:51:59.097+05:30",
    type: "identify",
    userId,
  };
}

const SAMPATH_PROPERTIES = fixtureRequest("https://heapanalytics.com/api/add_user_properties", {
  identity: "sampath",
  properties: { anonymousId: "sampath", email: "sampath@gmail.com" },
  app_id: "<app id>",
});

test("HEAP RudderStack fixture: identify sends the top-level traits as user properties", () => {
  expect(heap.transform(fixtureIdentify("sampath"), FIXTURE_CTX)).toEqual([SAMPATH_PROPERTIES] as any);
});

test("HEAP RudderStack fixture: track sends identity, event, properties and the event's timestamp", () => {
  expect(heap.transform(fixtureTrack({ subject: "Welcome to My App!", variation: "A" }), FIXTURE_CTX)).toEqual([
    fixtureRequest("https://heapanalytics.com/api/track", {
      identity: "sampath",
      event: "Send Transactional Email",
      properties: { subject: "Welcome to My App!", variation: "A" },
      app_id: "<app id>",
      timestamp: "2020-01-16T18:53:20.866+05:30",
    }),
  ] as any);
});

test("HEAP RudderStack fixture: idempotencyKey moves out of the properties into idempotency_key; timestamp before originalTimestamp", () => {
  const event = fixtureTrack({ subject: "Welcome to My App!", variation: "A", idempotencyKey: "1234" }, { originalTimestamp: "2020-01-17T13:23:20.844Z" });
  expect(heap.transform(event, FIXTURE_CTX)).toEqual([
    fixtureRequest("https://heapanalytics.com/api/track", {
      identity: "sampath",
      event: "Send Transactional Email",
      properties: { subject: "Welcome to My App!", variation: "A" },
      timestamp: "2020-01-16T18:53:20.866+05:30",
      idempotency_key: "1234",
      app_id: "<app id>",
    }),
  ] as any);
});

test("HEAP RudderStack fixture: nested properties and lists are flattened to dotted keys and [i]", () => {
  const event = fixtureTrack({ Location: { City: "Los Angeles", State: "CA" }, hobbies: ["Music", "Running"] });
  expect(heap.transform(event, FIXTURE_CTX)[0]!.body.JSON.properties).toEqual({
    "Location.City": "Los Angeles",
    "Location.State": "CA",
    "hobbies[0]": "Music",
    "hobbies[1]": "Running",
  });
});

test("HEAP RudderStack fixture: a page call is refused with the CDK workflow's text", () => {
  expect(() => heap.transform({ ...fixtureTrack({}), type: "page" }, FIXTURE_CTX)).toThrow("message type page is not supported");
});

test("HEAP RudderStack fixture: an identify with a blank userId sets the anonymousId's properties", () => {
  expect(heap.transform(fixtureIdentify(""), FIXTURE_CTX)).toEqual([SAMPATH_PROPERTIES] as any);
});

test("HEAP RudderStack fixture: dataResidency 'eu' sends identify and track to the EU endpoint", () => {
  const eu = ctx({ appId: "<app id>", dataResidency: "eu" });
  expect(heap.transform(fixtureTrack({ a: 1 }), eu)[0]!.endpoint).toBe("https://c.eu.heap-api.com/api/track");
  const identify: SluiceEvent = { type: "identify", messageId: "m", userId: "sampath", traits: { email: "sampath@gmail.com" } };
  expect(heap.transform(identify, eu)[0]!.endpoint).toBe("https://c.eu.heap-api.com/api/add_user_properties");
});

let s: TestServer;
const sink = startSink();
beforeAll(async () => {
  s = await startSluice({ args: ["--destination-base-url", `HEAP=${sink.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  sink.stop();
  cleanup(s.dataDir);
});

test("HEAP through the pipeline: an anonymous identify is delivered under its anonymousId", async () => {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "heap", type: "HEAP", config: { appId: "app-1" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  expect((await sendEvent(s.url, src.writeKey, "identify", { anonymousId: "anon-7", traits: { plan: "free" } })).status).toBe(200);
  const req = await waitFor(() => sink.received.find((r) => r.path === "/api/add_user_properties"), { what: "Heap's add_user_properties call" });
  expect(req.body).toEqual({ identity: "anon-7", properties: { plan: "free" }, app_id: "app-1" });
  const stats = await waitFor(
    async () => {
      const st = (await api(s.url, "GET", `/v2/destinations/${dst.json.id}/stats`)).json;
      return st.counts.succeeded === 1 ? st : undefined;
    },
    { what: "the identify delivered" },
  );
  expect(stats.counts.aborted).toBe(0);
});
