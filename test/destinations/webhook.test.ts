import { afterAll, beforeAll, expect, test } from "bun:test";
import type { DestinationContext, SluiceEvent } from "../../src/destinations/types";
import { webhook } from "../../src/destinations/webhook";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

const ctx = (config: Record<string, any> = {}): DestinationContext => ({
  config: { webhookUrl: "https://hooks.example.com/in", ...config },
  destination: { id: "dest-hook", name: "Hook", workspaceId: "ws-1" },
});
const track = (extra: Record<string, unknown> = {}): SluiceEvent => ({
  type: "track",
  messageId: "m-1",
  anonymousId: "anon-1",
  event: "spin_result",
  properties: { bet: 0, level: 6, tags: ["a"], nested: { ok: true } },
  context: { traits: { city: "Dhaka" } },
  ...extra,
});

test("WEBHOOK POST: the event as the body, content-type, config headers lower-cased and blank rows skipped", () => {
  const [req] = webhook.transform(track(), ctx({ headers: [{ from: "", to: "" }, { from: "X-Team", to: "growth" }] }));
  expect(req).toEqual({
    version: "1",
    type: "REST",
    method: "POST",
    endpoint: "https://hooks.example.com/in",
    headers: { "content-type": "application/json", "x-team": "growth" },
    params: {},
    body: { JSON: track(), JSON_ARRAY: {}, XML: {}, FORM: {} },
    files: {},
  });
});

test("WEBHOOK: header, fullPath and appendPath set by a user transformation steer the request and leave the body", () => {
  const event = track({ header: { "X-Dynamic": "yes" }, appendPath: "/users/42?x=1" });
  const [req] = webhook.transform(event, ctx());
  expect(req!.endpoint).toBe("https://hooks.example.com/in/users/42?x=1");
  expect(req!.headers).toEqual({ "content-type": "application/json", "X-Dynamic": "yes" });
  expect(req!.body.JSON).toEqual(track());

  const [full] = webhook.transform(track({ fullPath: "https://other.example.com/collect", appendPath: "/v2" }), ctx());
  expect(full!.endpoint).toBe("https://other.example.com/collect/v2");
  expect(Object.keys(full!.body.JSON)).not.toContain("fullPath");
  expect(Object.keys(full!.body.JSON)).not.toContain("appendPath");

  // The same two may come from integrations.WEBHOOK; the event's own keys win.
  const viaIntegrations = track({ integrations: { All: true, WEBHOOK: { appendPath: "/from-integrations" } } });
  expect(webhook.transform(viaIntegrations, ctx())[0]!.endpoint).toBe("https://hooks.example.com/in/from-integrations");
});

test("WEBHOOK: context.ip is set from request_ip when the event has none; top-level nulls are dropped", () => {
  const [req] = webhook.transform(track({ request_ip: "10.1.2.3", channel: null, context: { traits: {} } }), ctx());
  expect(req!.body.JSON.context).toEqual({ traits: {}, ip: "10.1.2.3" });
  expect("channel" in req!.body.JSON).toBe(false);
  const [own] = webhook.transform(track({ request_ip: "10.1.2.3", context: { ip: "1.1.1.1" } }), ctx());
  expect(own!.body.JSON.context).toEqual({ ip: "1.1.1.1" });
});

test("WEBHOOK GET/DELETE: no body and no content-type; properties (traits for identify) flattened into typed params", () => {
  const [get] = webhook.transform(track(), ctx({ webhookMethod: "GET" }));
  expect(get!.method).toBe("GET");
  expect(get!.headers).toEqual({});
  expect(get!.params).toEqual({ bet: 0, level: 6, "tags[0]": "a", "nested.ok": true });
  expect(get!.body.JSON).toEqual({});
  const identify: SluiceEvent = { type: "identify", messageId: "m", userId: "u", context: { traits: { age: 30, email: "a@example.com" } } };
  expect(webhook.transform(identify, ctx({ webhookMethod: "DELETE" }))[0]!.params).toEqual({ age: 30, email: "a@example.com" });
});

test("WEBHOOK: a transformation's header values that are not text are sent as JSON; undefined ones are left out", () => {
  const header = { text: "abc", empty: "", num: 10, yes: true, obj: { k1: "v1" }, list: [1, "a"], none: null, unset: undefined, fn: () => 1 };
  const [req] = webhook.transform(track({ header }), ctx({ headers: [{ from: "num", to: "from-config" }] }));
  expect(req!.headers).toEqual({
    "content-type": "application/json",
    text: "abc",
    empty: "",
    num: "10",
    yes: "true",
    obj: '{"k1":"v1"}',
    list: '[1,"a"]',
    none: "null",
  });
  // A list as `header` counts by index; text or a number as `header` sets nothing. The key never reaches the body.
  expect(webhook.transform(track({ header: ["v0", 2] }), ctx())[0]!.headers).toEqual({ "content-type": "application/json", "0": "v0", "1": "2" });
  const plain = webhook.transform(track({ header: "x-a: b" }), ctx())[0]!;
  expect(plain.headers).toEqual({ "content-type": "application/json" });
  expect(plain.body.JSON).not.toHaveProperty("header");
});

test("WEBHOOK config headers: values that are not text as JSON, a null value as an empty header, a row without a value left out", () => {
  const headers = [
    { from: "X-Count", to: 2 },
    { from: "X-Meta", to: { a: 1 } },
    { from: "X-Empty", to: null },
    { from: "X-Unset" },
  ];
  expect(webhook.transform(track(), ctx({ headers }))[0]!.headers).toEqual({ "content-type": "application/json", "x-count": "2", "x-meta": '{"a":1}', "x-empty": "" });
});

test("WEBHOOK: fullPath and appendPath of any value but null are used as text; a null one falls back", () => {
  expect(webhook.transform(track({ fullPath: null, appendPath: 7 }), ctx())[0]!.endpoint).toBe("https://hooks.example.com/in7");
  const viaIntegrations = track({ fullPath: null, integrations: { webhook: { fullPath: "https://other.example.com/x" } } });
  expect(webhook.transform(viaIntegrations, ctx())[0]!.endpoint).toBe("https://other.example.com/x");
});

test("WEBHOOK: request_ip is copied only when it is set, and only into a context object or where there is none", () => {
  expect(webhook.transform(track({ request_ip: "", context: undefined }), ctx())[0]!.body.JSON).not.toHaveProperty("context");
  expect(webhook.transform(track({ request_ip: 0, context: { ip: null } }), ctx())[0]!.body.JSON.context).toEqual({ ip: null });
  expect(webhook.transform(track({ request_ip: "10.0.0.1", context: "web" }), ctx())[0]!.body.JSON.context).toBe("web");
  expect(webhook.transform(track({ request_ip: "10.0.0.1", context: null }), ctx())[0]!.body.JSON.context).toEqual({ ip: "10.0.0.1" });
});

test("WEBHOOK definition: RudderStack's keys, extra keys accepted", () => {
  expect(webhook.config.defaultConfig).toEqual(["webhookUrl", "webhookMethod", "headers", "oneTrustCookieCategories"]);
});

let s: TestServer;
const sink = startSink();
beforeAll(async () => {
  s = await startSluice({ args: ["--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  sink.stop();
  cleanup(s.dataDir);
});

test("WEBHOOK through the pipeline: a transformation's header (any value, as text) and appendPath reach the sink as header and path, not body", async () => {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", {
    name: "steered",
    type: "WEBHOOK",
    config: { webhookUrl: `${sink.url}/hook`, headers: [{ from: "X-Static", to: "1" }], oneTrustCookieCategories: [] },
    sourceIds: [src.id],
  });
  expect(dst.status).toBe(201);
  const code = `export function transformEvent(event) {
    event.header = { "x-tenant": "t-" + event.userId, "x-count": 3, "x-meta": { plan: "pro" } };
    event.appendPath = "/users/" + event.userId;
    return event;
  }`;
  expect((await api(s.url, "POST", "/v2/transformations", { name: "steer", code, destinationIds: [dst.json.id] })).status).toBe(201);
  expect((await sendEvent(s.url, src.writeKey, "track", { userId: "42", event: "Bought" })).status).toBe(200);
  const got = await waitFor(() => sink.received.find((r) => r.path === "/hook/users/42"), { what: "the steered request" });
  expect(got.headers["x-tenant"]).toBe("t-42");
  expect(got.headers["x-static"]).toBe("1");
  expect(got.headers["x-count"]).toBe("3");
  expect(got.headers["x-meta"]).toBe('{"plan":"pro"}');
  expect(got.body.userId).toBe("42");
  expect(got.body).not.toHaveProperty("header");
  expect(got.body).not.toHaveProperty("appendPath");
});
