import { expect, test } from "bun:test";
import { http } from "../src/destinations/http";
import type { DestinationContext, SluiceEvent } from "../src/destinations/types";

const ctx = (config: Record<string, any>, baseUrl?: string): DestinationContext => ({
  config,
  destination: { id: "dest-http", name: "My API", workspaceId: "ws-1" },
  baseUrl,
});

const track: SluiceEvent = {
  type: "track",
  messageId: "msg-1",
  userId: "user-42",
  anonymousId: "anon-1",
  event: "Order Completed",
  properties: { order_id: "o-1", total: 99.5, coupon: null, items: [{ sku: "A" }] },
  context: { ip: "1.2.3.4", traits: { email: "ada@example.com" } },
  timestamp: "2024-05-01T10:00:00.000Z",
};

const empty = { JSON: {}, JSON_ARRAY: {}, XML: {}, FORM: {} };

test("HTTP track with default mapping → POST apiUrl with the whole event as JSON (nulls dropped)", () => {
  const [req] = http.transform(track, ctx({ apiUrl: "https://api.example.com/events" }));
  const { coupon: _null, ...properties } = track.properties;
  expect(req).toEqual({
    version: "1",
    type: "REST",
    method: "POST",
    endpoint: "https://api.example.com/events",
    headers: { "Content-Type": "application/json" },
    params: {},
    body: { ...empty, JSON: { ...track, properties } },
    files: {},
  });
});

test("HTTP sends every message type (identify, page, screen, group, alias) to the configured URL", () => {
  for (const type of ["identify", "page", "screen", "group", "alias"]) {
    const event: SluiceEvent = { type, messageId: `m-${type}`, userId: "u1", traits: { plan: "pro" } };
    const [req] = http.transform(event, ctx({ apiUrl: "https://api.example.com/in", method: "PATCH" }));
    expect(req!.method).toBe("PATCH");
    expect(req!.endpoint).toBe("https://api.example.com/in");
    expect(req!.body.JSON).toEqual(event);
  }
});

test("HTTP basicAuth + mapped headers + query params → Authorization Basic and event values", () => {
  const [req] = http.transform(
    track,
    ctx({
      apiUrl: "https://api.example.com/events",
      method: "PUT",
      auth: "basicAuth",
      username: "svc",
      password: "s3cret",
      headers: [
        { to: "X-User", from: "$.userId" },
        { to: "X-Source", from: "sluice" },
      ],
      queryParams: [
        { to: "event", from: "$.event" },
        { to: "total", from: "$.properties.total" },
        { to: "missing", from: "$.properties.nope" },
      ],
    }),
  );
  expect(req!.method).toBe("PUT");
  expect(req!.headers).toEqual({
    Authorization: `Basic ${btoa("svc:s3cret")}`,
    "X-User": "user-42",
    "X-Source": "sluice",
    "Content-Type": "application/json",
  });
  expect(req!.params).toEqual({ event: "Order Completed", total: "99.5" });
});

test("HTTP bearerTokenAuth and apiKeyAuth → Authorization Bearer / named key header", () => {
  const bearer = http.transform(track, ctx({ apiUrl: "https://a.example.com", auth: "bearerTokenAuth", bearerToken: "tok" }))[0]!;
  expect(bearer.headers.Authorization).toBe("Bearer tok");
  const apiKey = http.transform(track, ctx({ apiUrl: "https://a.example.com", auth: "apiKeyAuth", apiKeyName: "x-api-key", apiKeyValue: "k1" }))[0]!;
  expect(apiKey.headers["x-api-key"]).toBe("k1");
  expect(apiKey.headers.Authorization).toBeUndefined();
});

test("HTTP propertiesMapping (isDefaultMapping false) → body built from the mapped paths", () => {
  const [req] = http.transform(
    track,
    ctx({
      apiUrl: "https://api.example.com/orders",
      isDefaultMapping: false,
      propertiesMapping: [
        { from: "$.properties.order_id", to: "$.order.id" },
        { from: "$.properties.total", to: "$.order.amount" },
        { from: "$.context.traits.email", to: "$.customer_email" },
        { from: "web", to: "$.channel" },
        { from: "$.properties.items[0].sku", to: "$.first_sku" },
      ],
    }),
  );
  expect(req!.body.JSON).toEqual({
    order: { id: "o-1", amount: 99.5 },
    customer_email: "ada@example.com",
    channel: "web",
    first_sku: "A",
  });
});

test("HTTP apiUrl {{$.path}} templating and pathParams → values URI-encoded into the path", () => {
  const event = { ...track, userId: "a b/c" };
  const [req] = http.transform(
    event,
    ctx({ apiUrl: "https://api.example.com/users/{{$.userId}}/events", pathParams: [{ path: "$.event" }, { path: "v2" }] }),
  );
  expect(req!.endpoint).toBe("https://api.example.com/users/a%20b%2Fc/events/Order%20Completed/v2");
  expect(() => http.transform(track, ctx({ apiUrl: "https://api.example.com/{{$.properties.nope}}" }))).toThrow(
    "HTTP apiUrl placeholder '$.properties.nope' has no value in the event",
  );
});

test("HTTP XML format → body.XML.payload with an XML document under the root key", () => {
  const [req] = http.transform(
    track,
    ctx({
      apiUrl: "https://api.example.com/xml",
      format: "XML",
      xmlRootKey: "order",
      isDefaultMapping: false,
      propertiesMapping: [
        { from: "$.properties.order_id", to: "$.id" },
        { from: "$.properties.items", to: "$.item" },
        { from: "A&B <co>", to: "$.vendor" },
      ],
    }),
  );
  expect(req!.headers).toEqual({ "Content-Type": "application/xml" });
  expect(req!.body.XML).toEqual({
    payload: '<?xml version="1.0" encoding="UTF-8"?><order><id>o-1</id><item><sku>A</sku></item><vendor>A&amp;B &lt;co&gt;</vendor></order>',
  });
  expect(req!.body.JSON).toEqual({});
});

test("HTTP FORM format → first-level values as strings, objects JSON-encoded", () => {
  const [req] = http.transform(
    track,
    ctx({
      apiUrl: "https://api.example.com/form",
      format: "FORM",
      isDefaultMapping: false,
      propertiesMapping: [
        { from: "$.event", to: "$.event" },
        { from: "$.properties.total", to: "$.total" },
        { from: "$.properties.items", to: "$.items" },
      ],
    }),
  );
  expect(req!.headers).toEqual({ "Content-Type": "application/x-www-form-urlencoded" });
  expect(req!.body.FORM).toEqual({ event: "Order Completed", total: "99.5", items: '[{"sku":"A"}]' });
});

test("HTTP event filtering: whitelisted keeps only listed track events, blacklisted drops listed ones", () => {
  const allow = { apiUrl: "https://a.example.com", eventFilteringOption: "whitelistedEvents", whitelistedEvents: [{ eventName: "Signed Up" }] };
  expect(http.transform(track, ctx(allow))).toEqual([]);
  expect(http.transform({ ...track, event: "Signed Up" }, ctx(allow))).toHaveLength(1);
  // Filtering applies to track events only.
  expect(http.transform({ type: "identify", messageId: "m", userId: "u" }, ctx(allow))).toHaveLength(1);
  const deny = { apiUrl: "https://a.example.com", eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "Order Completed" }] };
  expect(http.transform(track, ctx(deny))).toEqual([]);
  expect(http.transform({ ...track, event: "Other" }, ctx(deny))).toHaveLength(1);
});

test("HTTP missing apiUrl or auth credentials → TransformError naming the key", () => {
  expect(() => http.transform(track, ctx({}))).toThrow("destination config is missing 'apiUrl'");
  expect(() => http.transform(track, ctx({ apiUrl: "https://a.example.com", auth: "basicAuth" }))).toThrow(
    "destination config is missing 'username'",
  );
  expect(() => http.transform(track, ctx({ apiUrl: "https://a.example.com", auth: "bearerTokenAuth" }))).toThrow(
    "destination config is missing 'bearerToken'",
  );
});

test("HTTP baseUrl override → same path and query on the local sink", () => {
  const [req] = http.transform(track, ctx({ apiUrl: "https://api.example.com/v1/events?src=rs" }, "http://127.0.0.1:9999"));
  expect(req!.endpoint).toBe("http://127.0.0.1:9999/v1/events?src=rs");
});

test("HTTP batching (isBatchingEnabled, JSON) → consecutive same-endpoint requests as a JSON array, maxBatchSize each", () => {
  const config = { apiUrl: "https://api.example.com/bulk", isBatchingEnabled: true, maxBatchSize: 2 };
  const events = ["a", "b", "c"].map((id) => ({ type: "track", messageId: id, userId: id, event: "E" }));
  const other = http.transform(events[0]!, ctx({ ...config, apiUrl: "https://api.example.com/other" }))[0]!;
  const reqs = [...events.map((e) => http.transform(e, ctx(config))[0]!), other];
  const batched = http.batch!(reqs, ctx(config));
  expect(batched).toHaveLength(3);
  expect(batched[0]!.endpoint).toBe("https://api.example.com/bulk");
  expect(JSON.parse(batched[0]!.body.JSON_ARRAY.batch as string)).toEqual([events[0], events[1]]);
  expect(JSON.parse(batched[1]!.body.JSON_ARRAY.batch as string)).toEqual([events[2]]);
  expect(batched[0]!.body.JSON).toEqual({});
  expect(batched[2]!.endpoint).toBe("https://api.example.com/other");
  // Without batching enabled (or for XML/FORM) requests go one by one.
  expect(http.batch!(reqs, ctx({ ...config, isBatchingEnabled: false }))).toEqual(reqs);
});
