import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { http } from "../../src/destinations/http";
import type { DestinationContext, DestinationRequest, SluiceEvent } from "../../src/destinations/types";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

/** A config as Sluice's API saves it: with RudderStack's dashboard default (isDefaultMapping for POST, PUT, PATCH). */
const ctx = (config: Record<string, any>, baseUrl?: string): DestinationContext => ({
  config: http.withDashboardDefaults!(config),
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
  // Query values keep their types, as in RudderStack's output (the URL gets "99.5").
  expect(req!.params).toEqual({ event: "Order Completed", total: 99.5 });
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

test("HTTP missing apiUrl or auth credentials → RudderStack's texts", () => {
  const url = { apiUrl: "https://a.example.com" };
  expect(() => http.transform(track, ctx({}))).toThrow("API URL is required. Aborting");
  expect(() => http.transform(track, ctx({ ...url, auth: "basicAuth" }))).toThrow("Username is required for Basic Authentication. Aborting");
  expect(() => http.transform(track, ctx({ ...url, auth: "bearerTokenAuth" }))).toThrow("Token is required for Bearer Token Authentication. Aborting");
  expect(() => http.transform(track, ctx({ ...url, auth: "apiKeyAuth", apiKeyValue: "v" }))).toThrow(
    "API Key Name is required for API Key Authentication. Aborting",
  );
  expect(() => http.transform(track, ctx({ ...url, auth: "apiKeyAuth", apiKeyName: "x-key" }))).toThrow(
    "API Key Value is required for API Key Authentication. Aborting",
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

// RudderStack's own HTTP destination fixtures: an identify with traits and an order with products.
const rsTraits = { email: "john.doe@example.com", firstName: "John", lastName: "Doe", address: { city: "New York", pinCode: "123456" } };
const rsIdentify: SluiceEvent = { type: "identify", messageId: "m-i", userId: "userId123", anonymousId: "anonId123", traits: rsTraits };
const rsOrder: SluiceEvent = {
  type: "track",
  messageId: "m-o",
  userId: "userId123",
  event: "Order Completed",
  properties: {
    currency: "USD",
    products: [
      { product_id: "622c6f5d5cf86a4c77358033", sku: "8472-998-0112", name: "Cones of Dunshire", price: 40 },
      { product_id: "577c6f5d5cf86a4c7735ba03", sku: "3309-483-2201", name: "Five Crowns", price: 5 },
    ],
  },
};

const contactsMapping = [
  { from: "$.traits.firstName", to: "$.contacts.first_name" },
  { from: "$.traits.email", to: "$.contacts.email" },
  { from: "$.traits.address.pinCode", to: "$.contacts.address.pin_code" },
];
const contacts = { first_name: "John", email: "john.doe@example.com", address: { pin_code: "123456" } };

test("HTTP headers and queryParams whose `to` is a JSON path ($.h1, $.'content-type', $['q1']) → plain header / param names; GET without a mapping has no body", () => {
  const config = {
    apiUrl: "http://abc.com/contacts",
    auth: "basicAuth",
    username: "test-user",
    password: "",
    method: "GET",
    format: "JSON",
    headers: [
      { to: "$.h1", from: "'val1'" },
      { to: "$.h2", from: "2" },
      { to: "$.'content-type'", from: "'application/json'" },
      { to: "$.h3", from: "$.traits.firstName" },
    ],
    queryParams: [
      { to: "$['q1']", from: "'val1'" },
      { to: "$.q2", from: "$.traits.email" },
      { to: "user name", from: "val2" },
    ],
  };
  const [req] = http.transform(rsOrder, ctx(config));
  expect(req).toEqual({
    version: "1",
    type: "REST",
    method: "GET",
    endpoint: "http://abc.com/contacts",
    headers: {
      Authorization: `Basic ${btoa("test-user:")}`,
      h1: "val1",
      h2: "2",
      "content-type": "application/json",
      "Content-Type": "application/json",
    },
    params: { q1: "val1", "user name": "val2" },
    body: empty,
    files: {},
  });
  // With traits present the path-valued header and param are filled too.
  const withTraits = http.transform({ ...rsOrder, traits: rsTraits }, ctx(config))[0]!;
  expect(withTraits.headers.h3).toBe("John");
  expect(withTraits.params.q2).toBe("john.doe@example.com");
});

test("HTTP propertiesMapping into nested paths (RudderStack's identify fixture) → nested JSON body", () => {
  const config = {
    apiUrl: "http://abc.com/contacts",
    isDefaultMapping: false,
    propertiesMapping: contactsMapping,
  };
  const [req] = http.transform(rsIdentify, ctx(config));
  expect(req!.body).toEqual({
    ...empty,
    JSON: { contacts },
  });
});

test("HTTP [*] wildcard mappings build one element per product; XML under xmlRootKey (RudderStack's fixture, byte for byte)", () => {
  const config = {
    apiUrl: "http://abc.com/events",
    auth: "bearerTokenAuth",
    bearerToken: "test-token",
    format: "XML",
    xmlRootKey: "body",
    isDefaultMapping: false,
    headers: [{ to: "$.h1", from: "'val1'" }],
    propertiesMapping: [
      { from: "$.event", to: "$.event" },
      { from: "$.properties.currency", to: "$.currency" },
      { from: "$.userId", to: "$.userId" },
      { from: "$.properties.products[*].product_id", to: "$.properties.items[*].item_id" },
      { from: "$.properties.products[*].name", to: "$.properties.items[*].name" },
      { from: "$.properties.products[*].price", to: "$.properties.items[*].price" },
    ],
  };
  const [req] = http.transform(rsOrder, ctx(config));
  expect(req!.method).toBe("POST");
  expect(req!.headers).toEqual({ Authorization: "Bearer test-token", h1: "val1", "Content-Type": "application/xml" });
  expect(req!.body).toEqual({
    ...empty,
    XML: {
      payload:
        '<?xml version="1.0" encoding="UTF-8"?><body><event>Order Completed</event><currency>USD</currency><userId>userId123</userId>' +
        "<properties><items><item_id>622c6f5d5cf86a4c77358033</item_id><name>Cones of Dunshire</name><price>40</price></items>" +
        "<items><item_id>577c6f5d5cf86a4c7735ba03</item_id><name>Five Crowns</name><price>5</price></items></properties></body>",
    },
  });
  // The same mappings as JSON: an array of objects.
  const json = http.transform(rsOrder, ctx({ ...config, format: "JSON" }))[0]!;
  expect(json.body.JSON.properties).toEqual({
    items: [
      { item_id: "622c6f5d5cf86a4c77358033", name: "Cones of Dunshire", price: 40 },
      { item_id: "577c6f5d5cf86a4c7735ba03", name: "Five Crowns", price: 5 },
    ],
  });
  // An order without products still gets its (empty) list, as in RudderStack's batched fixture.
  const viewed = http.transform({ type: "track", messageId: "m-v", userId: "userId1", event: "Product Viewed" }, ctx({ ...config, format: "JSON" }))[0]!;
  expect(viewed.body.JSON).toEqual({ event: "Product Viewed", userId: "userId1", properties: { items: [] } });
  // A wildcard source into a plain target is the list itself; `$[...]` and `$.'a-b'` keys work on both sides.
  const list = http.transform(
    rsOrder,
    ctx({
      apiUrl: "http://abc.com/e",
      isDefaultMapping: false,
      propertiesMapping: [
        { from: "$.properties.products[*].sku", to: "$.skus" },
        { from: "$['properties'].currency", to: "$.'cur-rency'" },
        { from: "$.properties.products[1].name", to: "$.lines[0].name" },
      ],
    }),
  )[0]!;
  expect(list.body.JSON).toEqual({ skus: ["8472-998-0112", "3309-483-2201"], "cur-rency": "USD", lines: [{ name: "Five Crowns" }] });
});

test("HTTP DELETE with apiKeyAuth and a JSON-path pathParam, no mapping → URI-encoded id appended, empty body", () => {
  const config = {
    apiUrl: "http://abc.com/contacts",
    auth: "apiKeyAuth",
    apiKeyName: "x-api-key",
    apiKeyValue: "test-api-key",
    method: "DELETE",
    isDefaultMapping: false,
    pathParams: [{ path: "$.traits.email" }],
  };
  const [req] = http.transform(rsIdentify, ctx(config));
  expect(req).toEqual({
    version: "1",
    type: "REST",
    method: "DELETE",
    endpoint: "http://abc.com/contacts/john.doe%40example.com",
    headers: { "x-api-key": "test-api-key", "Content-Type": "application/json" },
    params: {},
    body: empty,
    files: {},
  });
  // A list of pathParams, even empty, collapses repeated slashes as RudderStack does; none leaves the URL alone.
  expect(http.transform(rsIdentify, ctx({ apiUrl: "http://abc.com//a//b", pathParams: [] }))[0]!.endpoint).toBe("http://abc.com/a/b");
  expect(http.transform(rsIdentify, ctx({ apiUrl: "http://abc.com//a" }))[0]!.endpoint).toBe("http://abc.com//a");
  expect(() => http.transform(rsIdentify, ctx({ apiUrl: "http://abc.com", pathParams: [{ path: "$.traits.nope" }] }))).toThrow(
    "HTTP path parameter '$.traits.nope' has no value in the event",
  );
});

test("HTTP FORM with nested mapping → first-level values, objects JSON-encoded (RudderStack's fixture)", () => {
  const config = {
    apiUrl: "http://abc.com/contacts",
    format: "FORM",
    isDefaultMapping: false,
    propertiesMapping: contactsMapping,
  };
  const [req] = http.transform(rsIdentify, ctx(config));
  expect(req!.headers).toEqual({ "Content-Type": "application/x-www-form-urlencoded" });
  expect(req!.body).toEqual({
    ...empty,
    FORM: { contacts: JSON.stringify(contacts) },
  });
});

test("HTTP takes merge events too (RudderStack's HTTP definition restricts no message type); bad paths are config errors", () => {
  expect(http.config.supportedMessageTypes).toContain("merge");
  const merge: SluiceEvent = { type: "merge", messageId: "m-m", userId: "u", mergeProperties: [{ type: "email", value: "a@b.co" }] };
  expect(http.transform(merge, ctx({ apiUrl: "https://a.example.com" }))[0]!.body.JSON).toEqual(merge);
  const bad = { apiUrl: "https://a.example.com", isDefaultMapping: false, propertiesMapping: [{ from: "$..deep", to: "$.x" }] };
  expect(() => http.transform(track, ctx(bad))).toThrow("HTTP mapping path '$..deep' is not supported");
});

test("HTTP GET and DELETE without a mapping carry no body; query values come from queryParams only", () => {
  for (const method of ["GET", "DELETE"] as const) {
    for (const format of ["JSON", "FORM", "XML"]) {
      const [req] = http.transform(track, ctx({ apiUrl: "https://api.example.com/users", method, format, queryParams: [{ from: "$.userId", to: "id" }] }));
      expect(req!.method).toBe(method);
      expect(req!.body).toEqual(empty);
      expect(req!.params).toEqual({ id: "user-42" });
    }
  }
  // POST, PUT and PATCH saved without a mapping send the whole event (the dashboard's default);
  // a config without either reaching the transform as it is, as in RudderStack's, sends none.
  expect(http.transform(track, ctx({ apiUrl: "https://api.example.com/users", method: "PUT" }))[0]!.body.JSON.event).toBe("Order Completed");
  const raw: DestinationContext = { config: { apiUrl: "https://api.example.com/users", method: "PUT" }, destination: { id: "d", name: "d", workspaceId: "w" } };
  expect(http.transform(track, raw)[0]!.body).toEqual(empty);
  // A mapping is built whatever the method, as RudderStack builds it.
  const mapped = http.transform(track, ctx({ apiUrl: "https://a.example.com", method: "GET", propertiesMapping: [{ from: "$.event", to: "$.name" }] }))[0]!;
  expect(mapped.body.JSON).toEqual({ name: "Order Completed" });
  const whole = http.transform(track, ctx({ apiUrl: "https://a.example.com", method: "DELETE", isDefaultMapping: true }))[0]!;
  expect(whole.body.JSON.messageId).toBe("msg-1");
});

test("HTTP mappings build every target's containers even when the source is missing; lists keep their nulls", () => {
  const identify: SluiceEvent = { type: "identify", messageId: "m", userId: "u1", traits: { firstName: "Ada", tags: ["a", null, "b"], extra: null } };
  const config = {
    apiUrl: "https://a.example.com",
    propertiesMapping: [
      { from: "$.traits.firstName", to: "$.contact.first_name" },
      { from: "$.traits.address.pinCode", to: "$.contact.address.pin_code" },
      { from: "$.traits.nope", to: "$.meta.source" },
      { from: "$.traits.tags", to: "$.tags" },
      { from: "$.traits.extra", to: "$.extra" },
    ],
  };
  const [json] = http.transform(identify, ctx(config));
  expect(JSON.parse(JSON.stringify(json!.body.JSON))).toEqual({ contact: { first_name: "Ada", address: {} }, meta: {}, tags: ["a", null, "b"] });
  // FORM: first-level values, text as is, anything else as JSON, an empty object too.
  const [form] = http.transform(identify, ctx({ ...config, format: "FORM" }));
  expect(form!.body.FORM).toEqual({ contact: '{"first_name":"Ada","address":{}}', meta: "{}", tags: '["a",null,"b"]' });
  // XML leaves the removed list item out.
  const [xml] = http.transform(identify, ctx({ ...config, format: "XML" }));
  expect(xml!.body.XML.payload).toBe('<?xml version="1.0" encoding="UTF-8"?><root><contact><first_name>Ada</first_name><address/></contact><meta/><tags>a</tags><tags>b</tags></root>');
  // A later missing value never replaces an earlier one.
  const twice = http.transform(identify, ctx({ apiUrl: "https://a.example.com", propertiesMapping: [{ from: "$.userId", to: "$.id" }, { from: "$.traits.nope", to: "$.id" }] }))[0]!;
  expect(twice.body.JSON).toEqual({ id: "u1" });
});

test("HTTP [*] sources: one match is the value itself; a list keeps an item with nothing mapped; constants reach every item", () => {
  const order = (products: unknown[]): SluiceEvent => ({ type: "track", messageId: "m", userId: "u1", event: "Order Completed", properties: { currency: "EUR", products } });
  const skus = { apiUrl: "https://a.example.com", propertiesMapping: [{ from: "$.properties.products[*].sku", to: "$.skus" }] };
  expect(http.transform(order([{ sku: "A" }, { sku: "B" }]), ctx(skus))[0]!.body.JSON).toEqual({ skus: ["A", "B"] });
  expect(http.transform(order([{ sku: "A" }, { name: "no sku" }]), ctx(skus))[0]!.body.JSON).toEqual({ skus: "A" });
  expect(http.transform(order([{ name: "no sku" }]), ctx(skus))[0]!.body.JSON).toEqual({});
  const items = {
    apiUrl: "https://a.example.com",
    propertiesMapping: [
      { from: "$.properties.currency", to: "$.items[*].currency" },
      { from: "$.properties.products[*].sku", to: "$.items[*].id" },
      { from: "fixed", to: "$.items[*].source" },
    ],
  };
  expect(http.transform(order([{ sku: "A" }, { name: "no sku" }]), ctx(items))[0]!.body.JSON).toEqual({
    items: [
      { currency: "EUR", id: "A", source: "fixed" },
      { currency: "EUR", source: "fixed" },
    ],
  });
  expect(http.transform(order([]), ctx(items))[0]!.body.JSON).toEqual({ items: [] });
  // A target ending in [*] takes the matches as the list.
  const list = { apiUrl: "https://a.example.com", propertiesMapping: [{ from: "$.properties.products[*].sku", to: "$.ids[*]" }] };
  expect(http.transform(order([{ sku: "A" }]), ctx(list))[0]!.body.JSON).toEqual({ ids: ["A"] });
  expect(http.transform(order([{ name: "x" }]), ctx(list))[0]!.body.JSON).toEqual({ ids: [] });
});

test("HTTP mapped headers: a null or missing value leaves the header out, any other non-text refuses the event; query values keep their type", () => {
  const event: SluiceEvent = { ...track, context: { traits: { tier: null, plan: { name: "pro" } } } };
  const config = (headers: unknown) => ({
    apiUrl: "https://a.example.com",
    headers,
    queryParams: [
      { from: "$.properties.total", to: "total" },
      { from: "$.properties.items", to: "items" },
      { from: "$.context.traits.tier", to: "tier" },
    ],
  });
  const [req] = http.transform(event, ctx(config([{ from: "$.context.traits.tier", to: "x-tier" }, { from: "$.nope", to: "x-nope" }, { from: "7", to: "x-seven" }])));
  expect(req!.headers).toEqual({ "x-seven": "7", "Content-Type": "application/json" });
  expect(req!.params).toEqual({ total: 99.5, items: [{ sku: "A" }] });
  expect(() => http.transform(event, ctx(config([{ from: "$.context.traits.plan", to: "x-plan" }])))).toThrow('Header "x-plan" has a non-string value of type "object"');
  expect(() => http.transform(event, ctx(config([{ from: "$.properties.total", to: "x-total" }])))).toThrow('Header "x-total" has a non-string value of type "number"');
});

test("HTTP a `from` RudderStack would evaluate as an expression refuses the event instead of being sent as text", () => {
  const config = (from: string) => ({ apiUrl: "https://a.example.com", headers: [{ from, to: "X-Leak" }] });
  expect(() => http.transform(track, ctx(config("process.env||$.userId")))).toThrow("Error in custom mappings: process is not defined");
  expect(() => http.transform(track, ctx(config("'id-' + $.userId")))).toThrow("Error in custom mappings: ''id-' + $.userId' is an expression");
  // A quoted constant may hold a `$`; text without one is a constant.
  expect(http.transform(track, ctx(config("'$5'")))[0]!.headers["X-Leak"]).toBe("$5");
  expect(http.transform(track, ctx(config("five")))[0]!.headers["X-Leak"]).toBe("five");
});

test("HTTP batching groups requests with the same URL, headers and query wherever they sit, keeping each user's order", () => {
  const config = { apiUrl: "https://api.example.com/bulk", isBatchingEnabled: true, maxBatchSize: 2, headers: [{ from: "$.context.traits.team", to: "x-team" }] };
  const req = (user: string, team: string, n: number): DestinationRequest => ({
    ...http.transform({ type: "track", messageId: `${user}-${n}`, userId: user, event: `E${n}`, context: { traits: { team } } }, ctx(config))[0]!,
    userKey: user,
  });
  const events = (r: DestinationRequest) => JSON.parse(r.body.JSON_ARRAY.batch as string).map((e: SluiceEvent) => e.event);
  // RudderStack's router fixture: three of one user's requests around another user's.
  const batched = http.batch!([req("u1", "red", 1), req("u2", "blue", 2), req("u1", "red", 3), req("u1", "red", 4)], ctx(config));
  expect(batched.map(events)).toEqual([["E1", "E3"], ["E4"], ["E2"]]);
  expect(batched.map((r) => r.userKey)).toEqual(["u1", "u1", "u2"]);
  // One user's requests never overtake each other: the third waits behind the second.
  const own = http.batch!([req("u1", "red", 1), req("u1", "blue", 2), req("u1", "red", 3)], ctx(config));
  expect(own.map(events)).toEqual([["E1"], ["E2"], ["E3"]]);
});

describe("HTTP through the pipeline", () => {
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

  test("a GET without a mapping arrives with its query and no body; a FORM field of an unfilled object arrives as {}", async () => {
    const src = await createSource(s.url);
    const destination = async (name: string, config: Record<string, unknown>) => {
      const res = await api(s.url, "POST", "/v2/destinations", { name, type: "HTTP", config, sourceIds: [src.id] });
      expect(res.status).toBe(201);
    };
    await destination("lookup", { apiUrl: `${sink.url}/lookup`, method: "GET", queryParams: [{ from: "$.userId", to: "id" }] });
    await destination("form", {
      apiUrl: `${sink.url}/form`,
      format: "FORM",
      propertiesMapping: [
        { from: "$.traits.firstName", to: "$.name" },
        { from: "$.traits.address.pinCode", to: "$.contact.address.pin_code" },
      ],
    });
    expect((await sendEvent(s.url, src.writeKey, "identify", { userId: "u-7", traits: { firstName: "Ada" } })).status).toBe(200);
    const get = await waitFor(() => sink.received.find((r) => r.path === "/lookup"), { what: "the GET" });
    expect(get.method).toBe("GET");
    expect(get.query).toEqual({ id: "u-7" });
    expect(get.body).toBeUndefined();
    const form = await waitFor(() => sink.received.find((r) => r.path === "/form"), { what: "the form" });
    expect(Object.fromEntries(new URLSearchParams(form.body))).toEqual({ name: "Ada", contact: '{"address":{}}' });
  });

  test("the API saves RudderStack's dashboard default for POST, PUT and PATCH; not for GET or DELETE, nor over a mapping", async () => {
    const save = async (config: Record<string, unknown>) => {
      const res = await api(s.url, "POST", "/v2/destinations", { name: `h-${crypto.randomUUID().slice(0, 8)}`, type: "HTTP", config });
      expect(res.status).toBe(201);
      return res.json.config;
    };
    expect(await save({ apiUrl: "https://a.example.com" })).toEqual({ apiUrl: "https://a.example.com", isDefaultMapping: true });
    expect(await save({ apiUrl: "https://a.example.com", method: "PATCH" })).toMatchObject({ isDefaultMapping: true });
    expect(await save({ apiUrl: "https://a.example.com", method: "GET" })).toEqual({ apiUrl: "https://a.example.com", method: "GET" });
    expect(await save({ apiUrl: "https://a.example.com", isDefaultMapping: false })).toEqual({ apiUrl: "https://a.example.com", isDefaultMapping: false });
    const mapped = [{ from: "$.event", to: "$.name" }];
    expect(await save({ apiUrl: "https://a.example.com", propertiesMapping: mapped })).toEqual({ apiUrl: "https://a.example.com", propertiesMapping: mapped });
  });

  test("migration 0012 gives stored POST/PUT/PATCH configs without either key isDefaultMapping: true, so they keep sending the whole event", async () => {
    const { migrationSql } = await import("../../db/migrations");
    const db = s.sluice.db.$client;
    const insert = db.prepare("INSERT INTO destinations (id, workspace_id, name, type, config, enabled, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 1, 0, 0)");
    const rows: Array<[string, string, Record<string, unknown>]> = [
      ["dst_old_post", "HTTP", { apiUrl: "https://a.example.com" }],
      ["dst_old_get", "HTTP", { apiUrl: "https://a.example.com", method: "get" }],
      ["dst_old_mapped", "HTTP", { apiUrl: "https://a.example.com", propertiesMapping: [] }],
      ["dst_old_off", "HTTP", { apiUrl: "https://a.example.com", isDefaultMapping: false }],
      ["dst_old_hook", "WEBHOOK", { webhookUrl: "https://a.example.com" }],
    ];
    for (const [id, type, config] of rows) insert.run(id, s.sluice.workspaceId, id, type, JSON.stringify(config));
    db.exec(migrationSql["0012_http-default-mapping"]!);
    const configOf = (id: string) => JSON.parse((db.query("SELECT config FROM destinations WHERE id = ?").get(id) as { config: string }).config);
    expect(configOf("dst_old_post")).toEqual({ apiUrl: "https://a.example.com", isDefaultMapping: true });
    expect(configOf("dst_old_get")).toEqual({ apiUrl: "https://a.example.com", method: "get" });
    expect(configOf("dst_old_mapped")).toEqual({ apiUrl: "https://a.example.com", propertiesMapping: [] });
    expect(configOf("dst_old_off")).toEqual({ apiUrl: "https://a.example.com", isDefaultMapping: false });
    expect(configOf("dst_old_hook")).toEqual({ webhookUrl: "https://a.example.com" });
  });
});
