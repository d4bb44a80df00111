/**
 * Webhook sources end to end: a real Sluice process, one source per service made with its
 * `type`, each connected to a WEBHOOK destination of its own on a real HTTP sink. The payloads
 * are written here after each service's documented webhook format (Shopify's orders/create,
 * checkouts/create, customers/create and carts/update, its web pixel's identifier calls, an
 * Auth0 log stream batch, a Customer.io reporting webhook, an Iterable system webhook, a Braze
 * Currents batch, Slack's Events API); the test checks what each request is answered and the
 * exact events the sink gets.
 *
 * Shopify's identity state (a cart token's anonymousId and session, the pixel's cart token and
 * userId) is written by one request and read by a later one, survives a restart on the same
 * data dir, and (cluster mode) is shared by two instances on one PostgreSQL.
 *
 * Bad input: a body a mapping cannot read is answered 400 with the mapping's text and nothing is
 * stored (the sink and the source's received count both say so); an event-stream source's key
 * is refused (401), a disabled webhook source too (404). A state store that fails makes an
 * identifier call a 503 with Retry-After, while an order is still taken without the state.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { type SluiceProcess, api, basic, cleanup, createSource, query, readEvents, spawnSluice, startSink, startSluice, waitFor } from "../support/helpers";
import { PG_URL, havePostgres, pgScratch, requirePostgres } from "../support/pg";

requirePostgres("webhook-sources.test.ts");

type Sink = ReturnType<typeof startSink>;
type Event = Record<string, any>;

// ---------------------------------------------------------------------------------------------
// Ids computed here, independently of Sluice's code: RFC 4122 name-based UUIDs, sha256, md5.

/** RFC 4122 version 5 UUID of `name` in `namespace`. */
function uuidV5(name: string, namespace: string): string {
  const hash = createHash("sha1").update(Buffer.from(namespace.replaceAll("-", ""), "hex")).update(name).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const h = hash.subarray(0, 16).toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}
/** RFC 4122's URL namespace, which the legacy Shopify app hashes a cart token in. */
const URL_NAMESPACE = "6ba7b811-9dad-11d1-80b4-00c04fd430c8";
/** rudder-integrations-lib's namespace, which the pixel app hashes a cart token in. */
const PIXEL_NAMESPACE = "e76c6e51-06f9-4222-9636-5aba7e3a84b6";

test("the UUIDv5 helper gives RFC 4122's published example", () => {
  // Python's uuid.uuid5(uuid.NAMESPACE_DNS, "python.org").
  expect(uuidV5("python.org", "6ba7b810-9dad-11d1-80b4-00c04fd430c8")).toBe("886313e1-3b8a-5372-9b90-0c9aee199e5d");
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const isoOf = (text: string | number) => new Date(text).toISOString();

// ---------------------------------------------------------------------------------------------
// The server, its sources and destinations.

let s: SluiceProcess;
let sink: Sink;
/** Sources by role; each delivers to the sink at `/<role>`. */
const src: Record<string, { id: string; writeKey: string }> = {};

const SOURCES: Array<{ role: string; type?: string; config?: Record<string, unknown> }> = [
  { role: "shop", type: "Shopify" },
  // A second Shopify source of the same workspace: the store's pixel app webhooks can come through another source.
  { role: "shop2", type: "shopify" },
  { role: "auth0", type: "Auth0" },
  { role: "cio", type: "Customerio" },
  { role: "iterable", type: "iterable" },
  { role: "braze", type: "Braze", config: { customMapping: [{ from: "users.messages.email.Open", to: "Email Opened" }] } },
  { role: "slack", type: "slack" },
  { role: "hook", type: "webhook" },
  // An event-stream source (SDKs, HTTP API): no type.
  { role: "sdk" },
];

beforeAll(async () => {
  sink = startSink();
  s = await spawnSluice();
  for (const { role, type, config } of SOURCES) {
    const made = await createSource(s.url, { name: role, ...(type ? { type } : {}), ...(config ? { config } : {}) });
    src[role] = made;
    const dst = await api(s.url, "POST", "/v2/destinations", { name: `to-${role}`, type: "WEBHOOK", config: { webhookUrl: `${sink.url}/${role}` }, sourceIds: [made.id] });
    expect(dst.status).toBe(201);
  }
}, 60_000);

afterAll(async () => {
  s.proc.kill("SIGTERM");
  await s.proc.exited;
  sink.stop();
  await cleanup(s.dataDir);
});

interface Answer {
  status: number;
  text: string;
  contentType: string | null;
}

/** A request to /v1/webhook with the source's write key in the query (or Basic auth). */
async function hook(
  role: string,
  body: unknown,
  opts: { query?: Record<string, string>; headers?: Record<string, string>; method?: string; basicAuth?: boolean; writeKey?: string; url?: string } = {},
): Promise<Answer> {
  const writeKey = opts.writeKey ?? src[role]!.writeKey;
  const query = new URLSearchParams({ ...(opts.basicAuth ? {} : { writeKey }), ...opts.query });
  const res = await fetch(`${opts.url ?? s.url}/v1/webhook?${query}`, {
    method: opts.method ?? "POST",
    headers: { "content-type": "application/json", ...(opts.basicAuth ? { authorization: basic(writeKey) } : {}), ...opts.headers },
    body: opts.method === "GET" ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text(), contentType: res.headers.get("content-type") };
}

/** What the sink got from a source so far, in arrival order. */
const at = (role: string, from: Sink = sink): Event[] => from.received.filter((r) => r.path === `/${role}`).map((r) => r.body as Event);

/** Waits until the sink holds `count` more events of the source than `before`, and answers those. */
async function arrivals(role: string, before: number, count: number, from: Sink = sink): Promise<Event[]> {
  await waitFor(() => at(role, from).length >= before + count, { timeoutMs: 15_000, what: `${count} event(s) of ${role} at the sink` });
  return at(role, from).slice(before);
}

/** The source's received count, as the overview API counts it (the events stored). */
async function receivedBy(role: string, url = s.url): Promise<number> {
  const res = await api(url, "GET", "/v2/stats/timeseries?minutes=60");
  expect(res.status).toBe(200);
  const row = (res.json.sources as Array<{ id: string; totals: { received: number } }>).find((x) => x.id === src[role]!.id);
  return row?.totals.received ?? 0;
}

/**
 * What the server adds to every event (enrich.ts): checked here, then left out so the rest of
 * the event can be compared whole. `own` names the times the mapping set itself.
 */
function withoutStamps(e: Event, own: { receivedAt?: string; messageId?: string } = {}): Event {
  const { messageId, receivedAt, sentAt, originalTimestamp, timestamp, request_ip, ...rest } = e;
  if (own.messageId) expect(messageId).toBe(own.messageId);
  else expect(messageId).toMatch(UUID);
  if (own.receivedAt) expect(receivedAt).toBe(own.receivedAt);
  else expect(receivedAt).toMatch(ISO);
  for (const t of [sentAt, originalTimestamp, timestamp]) expect(t).toMatch(ISO);
  expect(request_ip).toBe("127.0.0.1");
  return rest;
}

const OK_TEXT = { status: 200, text: "ok", contentType: "text/plain;charset=utf-8" };
const SHOPIFY_OK = { status: 200, text: "OK", contentType: "text/plain" };

// ---------------------------------------------------------------------------------------------
// Shopify, after its webhook reference (shopify.dev/docs/api/webhooks: orders/create,
// checkouts/create, customers/create, carts/update).

const LEGACY_LIBRARY = { name: "RudderStack Shopify Cloud", version: "1.0.0" };
const PIXEL_LIBRARY = { eventOrigin: "server", name: "RudderStack Shopify Cloud", version: "2.0.0" };

const address = {
  first_name: "Ines",
  last_name: "Duarte",
  company: null,
  address1: "Rua Augusta 120",
  address2: "3º Esq",
  city: "Lisboa",
  province: "Lisboa",
  country: "Portugal",
  zip: "1100-053",
  phone: "+351912345678",
  name: "Ines Duarte",
  province_code: "11",
  country_code: "PT",
  latitude: 38.7105,
  longitude: -9.1376,
};

const customer = {
  id: 6207791235123,
  email: "ines.duarte@example.com",
  created_at: "2025-01-20T08:01:00+00:00",
  updated_at: "2025-04-02T15:20:07+00:00",
  first_name: "Ines",
  last_name: "Duarte",
  state: "enabled",
  note: null,
  verified_email: true,
  multipass_identifier: null,
  tax_exempt: false,
  phone: "+351912345678",
  currency: "EUR",
  tags: "newsletter",
  admin_graphql_api_id: "gid://shopify/Customer/6207791235123",
};

const lineItems = [
  {
    id: 14567890123457,
    product_id: 8123400000001,
    variant_id: 45120000000011,
    title: "Cork Notebook",
    name: "Cork Notebook - A5",
    variant_title: "A5",
    sku: "NB-CORK-A5",
    vendor: "Papelaria Sul",
    price: "14.50",
    quantity: 2,
    requires_shipping: true,
    taxable: true,
    gift_card: false,
  },
];

/** An orders/create body of Shopify's documented shape. */
function orderBody(over: Record<string, unknown> = {}) {
  return {
    id: 5923812345678,
    admin_graphql_api_id: "gid://shopify/Order/5923812345678",
    email: "ines.duarte@example.com",
    created_at: "2025-04-02T11:20:05-04:00",
    updated_at: "2025-04-02T11:20:07-04:00",
    name: "#1042",
    number: 42,
    order_number: 1042,
    token: "4f8a2c1e9b7d6a5c3e1f0b9d8c7a6e5f",
    cart_token: "Z2NwLWV1cm9wZS13ZXN0MTowMUpQ",
    checkout_token: "9c1b7e5a3d2f4e6a8b0c2d4e6f8a0b1c",
    currency: "EUR",
    presentment_currency: "EUR",
    financial_status: "paid",
    fulfillment_status: null,
    subtotal_price: "29.00",
    total_price: "33.95",
    total_tax: "5.42",
    total_discounts: "0.00",
    note: null,
    note_attributes: [],
    tags: "",
    line_items: lineItems,
    customer,
    shipping_address: address,
    billing_address: address,
    ...over,
  };
}

/** The products the legacy app makes of `lineItems`: a few fields renamed, the others kept; `title` is the line's own. */
const legacyProducts = [
  {
    product_id: 8123400000001,
    sku: "NB-CORK-A5",
    title: "Cork Notebook",
    price: "14.50",
    brand: "Papelaria Sul",
    quantity: 2,
    id: 14567890123457,
    requires_shipping: true,
    taxable: true,
    gift_card: false,
    variant: "45120000000011  A5",
  },
];

/** The customer's traits as the legacy app maps them (nulls left out). */
const legacyCustomerTraits = {
  email: "ines.duarte@example.com",
  firstName: "Ines",
  lastName: "Duarte",
  state: "enabled",
  verifiedEmail: true,
  taxExempt: false,
  phone: "+351912345678",
  currency: "EUR",
  tags: "newsletter",
  adminGraphqlApiId: "gid://shopify/Customer/6207791235123",
};

describe("Shopify", () => {
  test("orders/create with ?topic=orders_create: an Order Created track, the customer as userId, the cart token's hash as anonymousId", async () => {
    const before = at("shop").length;
    const received = await receivedBy("shop");
    expect(await hook("shop", orderBody(), { query: { topic: "orders_create" } })).toEqual(OK_TEXT);
    expect(await receivedBy("shop")).toBe(received + 1);
    const [e] = await arrivals("shop", before, 1);
    expect(withoutStamps(e!)).toEqual({
      type: "track",
      event: "Order Created",
      userId: "6207791235123",
      // No identifier call told whose browser this cart is: the token's name-based UUID.
      anonymousId: uuidV5("Z2NwLWV1cm9wZS13ZXN0MTowMUpQ", URL_NAMESPACE),
      properties: {
        order_id: 5923812345678,
        value: "33.95",
        tax: "5.42",
        currency: "EUR",
        admin_graphql_api_id: "gid://shopify/Order/5923812345678",
        email: "ines.duarte@example.com",
        created_at: "2025-04-02T11:20:05-04:00",
        updated_at: "2025-04-02T11:20:07-04:00",
        name: "#1042",
        number: 42,
        order_number: 1042,
        token: "4f8a2c1e9b7d6a5c3e1f0b9d8c7a6e5f",
        cart_token: "Z2NwLWV1cm9wZS13ZXN0MTowMUpQ",
        checkout_token: "9c1b7e5a3d2f4e6a8b0c2d4e6f8a0b1c",
        presentment_currency: "EUR",
        financial_status: "paid",
        subtotal_price: "29.00",
        total_discounts: "0.00",
        note_attributes: [],
        tags: "",
        products: legacyProducts,
      },
      traits: { ...legacyCustomerTraits, shippingAddress: address, billingAddress: address },
      context: {
        library: LEGACY_LIBRARY,
        integration: { name: "SHOPIFY" },
        topic: "orders_create",
        cart_token: "Z2NwLWV1cm9wZS13ZXN0MTowMUpQ",
        checkout_token: "9c1b7e5a3d2f4e6a8b0c2d4e6f8a0b1c",
        ip: "127.0.0.1",
      },
      integrations: { SHOPIFY: true },
    });
    // updated_at is the event's time, in UTC.
    expect(e!.timestamp).toBe("2025-04-02T15:20:07.000Z");
  });

  test("the same topic from Shopify's X-Shopify-Topic header (orders/create), with the write key as Basic auth", async () => {
    const before = at("shop").length;
    const answer = await hook("shop", orderBody({ id: 5923812345679, cart_token: "hdr-cart-1" }), {
      basicAuth: true,
      headers: { "X-Shopify-Topic": "orders/create", "X-Shopify-Shop-Domain": "papelaria-sul.myshopify.com", "X-Shopify-Webhook-Id": "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043" },
    });
    expect(answer).toEqual(OK_TEXT);
    const [e] = await arrivals("shop", before, 1);
    expect(e!.type).toBe("track");
    expect(e!.event).toBe("Order Created");
    expect(e!.userId).toBe("6207791235123");
    expect(e!.anonymousId).toBe(uuidV5("hdr-cart-1", URL_NAMESPACE));
    expect(e!.properties.order_id).toBe(5923812345679);
    expect(e!.properties.value).toBe("33.95");
    expect(e!.context.topic).toBe("orders_create");
    expect(e!.context.cart_token).toBe("hdr-cart-1");
  });

  test("customers/create: an identify of the customer, no anonymousId", async () => {
    const before = at("shop").length;
    const body = {
      ...customer,
      accepts_marketing: false,
      orders_count: 3,
      total_spent: "101.85",
      last_order_id: 5923812345678,
      last_order_name: "#1042",
      tax_exemptions: [],
      addresses: [{ id: 8801, customer_id: 6207791235123, ...address, default: true }],
      default_address: { id: 8801, customer_id: 6207791235123, ...address, default: true },
    };
    expect(await hook("shop", body, { query: { topic: "customers_create" } })).toEqual(OK_TEXT);
    const [e] = await arrivals("shop", before, 1);
    expect(withoutStamps(e!)).toEqual({
      type: "identify",
      userId: "6207791235123",
      traits: {
        ...legacyCustomerTraits,
        addressList: body.addresses,
        address: body.default_address,
        acceptsMarketing: false,
        orderCount: 3,
        totalSpent: "101.85",
        lastOrderName: "#1042",
        taxExemptions: [],
      },
      context: { library: LEGACY_LIBRARY, integration: { name: "SHOPIFY" }, topic: "customers_create", ip: "127.0.0.1" },
      integrations: { SHOPIFY: true },
    });
    expect(e!.timestamp).toBe("2025-04-02T15:20:07.000Z");
  });

  test("cart token identity across requests: the storefront's identifier calls, then a checkout and an order of that cart get its anonymousId and session", async () => {
    const cart = "c1-7e0a9f3b2d4c6e8a";
    const received = await receivedBy("shop");
    // The storefront script's calls (RudderStack's legacy app): the cart token with a query the
    // script appends, the browser's anonymousId and the cart; then the session.
    expect(await hook("shop", { event: "rudderIdentifier", cartToken: `${cart}?key=4bd1c7`, anonymousId: "browser-anon-7f3a", cart: { token: cart, line_items: lineItems } })).toEqual(SHOPIFY_OK);
    expect(await hook("shop", { event: "rudderSessionIdentifier", cartToken: cart, sessionId: "1743606005123" })).toEqual(SHOPIFY_OK);
    // Identifier calls are no events.
    expect(await receivedBy("shop")).toBe(received);

    const before = at("shop").length;
    const checkout = {
      id: 35123456789012,
      token: "chk-5e2a9c7b1d3f",
      cart_token: cart,
      email: "ines.duarte@example.com",
      created_at: "2025-04-02T11:18:00-04:00",
      updated_at: "2025-04-02T11:18:30-04:00",
      currency: "EUR",
      subtotal_price: "29.00",
      total_price: "33.95",
      total_tax: "5.42",
      line_items: lineItems,
      abandoned_checkout_url: "https://papelaria-sul.myshopify.com/checkouts/chk-5e2a9c7b1d3f/recover",
      note_attributes: [],
    };
    expect(await hook("shop", checkout, { query: { topic: "checkouts_create" } })).toEqual(OK_TEXT);
    const [started] = await arrivals("shop", before, 1);
    expect(withoutStamps(started!)).toEqual({
      type: "track",
      event: "Checkout Started",
      anonymousId: "browser-anon-7f3a",
      properties: {
        order_id: 35123456789012,
        value: "33.95",
        tax: "5.42",
        currency: "EUR",
        token: "chk-5e2a9c7b1d3f",
        cart_token: cart,
        email: "ines.duarte@example.com",
        created_at: "2025-04-02T11:18:00-04:00",
        updated_at: "2025-04-02T11:18:30-04:00",
        subtotal_price: "29.00",
        abandoned_checkout_url: "https://papelaria-sul.myshopify.com/checkouts/chk-5e2a9c7b1d3f/recover",
        note_attributes: [],
        products: legacyProducts,
      },
      // No customer on the checkout: the email found in the body.
      traits: { email: "ines.duarte@example.com" },
      context: {
        library: LEGACY_LIBRARY,
        integration: { name: "SHOPIFY" },
        topic: "checkouts_create",
        cart_token: cart,
        sessionId: "1743606005123",
        ip: "127.0.0.1",
      },
      integrations: { SHOPIFY: true },
    });

    // The order of that cart, its topic from Shopify's header.
    const order = orderBody({ id: 5923812345680, cart_token: cart });
    expect(await hook("shop", order, { headers: { "X-Shopify-Topic": "orders/create" } })).toEqual(OK_TEXT);
    const [created] = await arrivals("shop", before + 1, 1);
    expect([created!.event, created!.userId, created!.anonymousId, created!.context.sessionId, created!.properties.order_id]).toEqual([
      "Order Created",
      "6207791235123",
      "browser-anon-7f3a",
      "1743606005123",
      5923812345680,
    ]);
  });

  test("carts/update: a cart whose items the storefront already told is no event; a change is one, with the cart's anonymousId; its repeat is none", async () => {
    const cart = "c1-5b8d0e2f4a6c";
    expect(await hook("shop", { event: "rudderIdentifier", cartToken: cart, anonymousId: "browser-anon-c4d1", cart: { token: cart, line_items: lineItems } })).toEqual(SHOPIFY_OK);
    const cartBody = (items: unknown[]) => ({
      id: cart,
      token: cart,
      line_items: items,
      note: "",
      updated_at: "2025-04-02T15:30:00.000Z",
      created_at: "2025-04-02T15:00:00.000Z",
    });
    const received = await receivedBy("shop");
    // The same items as the identifier call stored: a repeat, answered OK.
    expect(await hook("shop", cartBody(lineItems), { query: { topic: "carts_update" } })).toEqual(SHOPIFY_OK);
    expect(await receivedBy("shop")).toBe(received);

    const before = at("shop").length;
    const changed = [{ ...lineItems[0], quantity: 3 }];
    expect(await hook("shop", cartBody(changed), { query: { topic: "carts_update" } })).toEqual(OK_TEXT);
    const [e] = await arrivals("shop", before, 1);
    expect([e!.type, e!.event, e!.anonymousId, e!.properties.id, e!.properties.products[0].quantity]).toEqual(["track", "Cart Update", "browser-anon-c4d1", cart, 3]);
    // The new items' hash was stored: the same update again is a repeat.
    expect(await hook("shop", cartBody(changed), { query: { topic: "carts_update" } })).toEqual(SHOPIFY_OK);
    expect(await receivedBy("shop")).toBe(received + 1);
  });

  test("a topic Shopify's mapping does not map (app/uninstalled) answers OK and stores nothing", async () => {
    const before = at("shop").length;
    const received = await receivedBy("shop");
    const app = { id: 1, name: "Sluice", email: "owner@papelaria-sul.example", domain: "papelaria-sul.example", myshopify_domain: "papelaria-sul.myshopify.com" };
    expect(await hook("shop", app, { query: { topic: "app_uninstalled" } })).toEqual(SHOPIFY_OK);
    expect(await hook("shop", app, { headers: { "X-Shopify-Topic": "app/uninstalled" } })).toEqual(SHOPIFY_OK);
    expect(await receivedBy("shop")).toBe(received);
    // A later order arrives alone: nothing of the two requests above was delivered.
    expect(await hook("shop", orderBody({ id: 5923812345681, cart_token: "after-skip" }), { query: { topic: "orders_create" } })).toEqual(OK_TEXT);
    const got = await arrivals("shop", before, 1);
    expect(got.map((e) => e.properties?.order_id)).toEqual([5923812345681]);
    expect(await receivedBy("shop")).toBe(received + 1);
  });

  test("the pixel app: the web pixel ties a cart token to its browser through one source, the store's order webhook (?version=pixel) through another source gets it; the customer then names the browser's later pixel events", async () => {
    const cart = "Z2NwLXBpeGVsLWNhcnQtOTE";
    const browser = "pixel-client-0f6b2e91";
    // The web pixel's identifier call (pixelEventLabel), to the first Shopify source.
    expect(await hook("shop", { pixelEventLabel: true, event: "rudderIdentifier", action: "stitchCartTokenToAnonId", cartToken: cart, anonymousId: browser })).toEqual(SHOPIFY_OK);

    // The store's webhook for the pixel app, to the second source of the same workspace.
    const before = at("shop2").length;
    const order = orderBody({ id: 5923812345690, cart_token: cart });
    expect(await hook("shop2", order, { query: { topic: "orders_create", version: "pixel" } })).toEqual(OK_TEXT);
    const [track, identify] = await arrivals("shop2", before, 2);
    const traits = {
      email: "ines.duarte@example.com",
      firstName: "Ines",
      lastName: "Duarte",
      phone: "+351912345678",
      createdAt: "2025-01-20T08:01:00+00:00",
      address: { street: "Rua Augusta 120", city: "Lisboa", state: "Lisboa", postalCode: "1100-053", country: "Portugal" },
      cart_token_hash: uuidV5(cart, PIXEL_NAMESPACE),
    };
    expect(withoutStamps(track!)).toEqual({
      type: "track",
      event: "Order Created",
      userId: "6207791235123",
      anonymousId: browser,
      properties: {
        order_id: "5923812345690",
        value: 33.95,
        tax: 5.42,
        currency: "EUR",
        products: [{ product_id: "8123400000001", sku: "NB-CORK-A5", title: "Cork Notebook - A5", price: 14.5, brand: "Papelaria Sul", quantity: 2 }],
      },
      context: {
        library: PIXEL_LIBRARY,
        integration: { name: "SHOPIFY" },
        traits,
        topic: "orders_create",
        cart_token: cart,
        checkout_token: "9c1b7e5a3d2f4e6a8b0c2d4e6f8a0b1c",
        shopifyDetails: order,
        ip: "127.0.0.1",
      },
      integrations: { SHOPIFY: true, DATA_WAREHOUSE: { options: { jsonPaths: ["track.context.shopifyDetails"] } } },
    });
    expect(track!.timestamp).toBe("2025-04-02T15:20:07.000Z");
    expect(withoutStamps(identify!)).toEqual({
      type: "identify",
      userId: "6207791235123",
      anonymousId: browser,
      context: { library: PIXEL_LIBRARY, integration: { name: "SHOPIFY" }, traits, ip: "127.0.0.1" },
      integrations: { SHOPIFY: true },
    });

    // The web pixel's next event from that browser carries the customer the order named.
    const pageBefore = at("shop").length;
    const page = {
      pixelEventLabel: true,
      id: "sh-8d1f0c2a-7b3e-4a59-9c6d-2e1f0a3b4c5d",
      name: "page_viewed",
      clientId: browser,
      timestamp: "2025-04-02T15:40:00.000Z",
      data: {},
      context: {
        document: { title: "Cork Notebook – Papelaria Sul", location: { href: "https://papelaria-sul.example/products/cork-notebook" } },
        navigator: { userAgent: "Mozilla/5.0 (X11; Linux x86_64)" },
        window: { location: { href: "https://papelaria-sul.example/products/cork-notebook", pathname: "/products/cork-notebook", search: "" }, screen: { height: 1080, width: 1920 } },
      },
    };
    expect(await hook("shop", page)).toEqual(OK_TEXT);
    const [viewed] = await arrivals("shop", pageBefore, 1);
    expect([viewed!.type, viewed!.name, viewed!.anonymousId, viewed!.userId, viewed!.messageId, viewed!.timestamp]).toEqual([
      "page",
      "Page View",
      browser,
      "6207791235123",
      "sh-8d1f0c2a-7b3e-4a59-9c6d-2e1f0a3b4c5d",
      "2025-04-02T15:40:00.000Z",
    ]);
    expect(viewed!.properties).toEqual({ url: "https://papelaria-sul.example/products/cork-notebook", path: "/products/cork-notebook", search: "", title: "Cork Notebook – Papelaria Sul" });
  });

  test("a pixel app webhook for a cart the pixel never saw: the token's hash (pixel namespace), no identify without a customer", async () => {
    const before = at("shop2").length;
    const checkout = { id: 35123456789013, token: "chk-nc-1", cart_token: "never-seen-cart", currency: "EUR", total_price: "10.00", line_items: [], updated_at: "2025-04-02T11:18:30-04:00" };
    expect(await hook("shop2", checkout, { query: { topic: "checkouts_create", version: "pixel" } })).toEqual(OK_TEXT);
    const [e] = await arrivals("shop2", before, 1);
    expect([e!.type, e!.event, e!.anonymousId, e!.userId, e!.properties, e!.context.traits]).toEqual([
      "track",
      "Checkout Started Webhook",
      uuidV5("never-seen-cart", PIXEL_NAMESPACE),
      undefined,
      {},
      { cart_token_hash: uuidV5("never-seen-cart", PIXEL_NAMESPACE) },
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// The other services.

describe("Auth0: a log stream batch (JSON array of log events)", () => {
  test("a signup becomes an identify, an API operation a track named after its code", async () => {
    const signup = {
      log_id: "90020250402152005123456789012345678901234567890123456789",
      data: {
        date: "2025-04-02T15:20:05.123Z",
        type: "ss",
        description: "",
        connection: "Username-Password-Authentication",
        connection_id: "con_4Hd8Qw2Lp0Zs6Tx1",
        client_id: "Vb3Nq8Rt2Lm6Xp9Wz4Kc7Hd1Fs5Gj0Ya",
        client_name: "Papelaria Web",
        ip: "198.51.100.23",
        user_agent: "Firefox 124.0.0 / Linux 0.0.0",
        details: { body: { email: "ines.duarte@example.com", connection: "Username-Password-Authentication", tenant: "papelaria" } },
        user_id: "auth0|67ed5d45c0b1a2f3e4d5c6b7",
        user_name: "ines.duarte@example.com",
        strategy: "auth0",
        strategy_type: "database",
        log_id: "90020250402152005123456789012345678901234567890123456789",
      },
    };
    const apiCall = {
      log_id: "90020250402152107987654321098765432109876543210987654321",
      data: {
        date: "2025-04-02T15:21:07.456Z",
        type: "sapi",
        description: "Update a user",
        client_id: "Mk2Pz7Xq4Lw9Nr1Tb6Hs3Jd8Fc5Gv0Ye",
        client_name: "",
        ip: "203.0.113.77",
        user_agent: "node-fetch/1.0",
        details: {
          request: {
            method: "patch",
            path: "/api/v2/users/auth0|67ed5d45c0b1a2f3e4d5c6b7",
            auth: { user: { user_id: "google-oauth2|1180004", name: "Support Agent", email: "agent@papelaria-sul.example" }, strategy: "jwt" },
          },
          response: { statusCode: 200 },
        },
        user_id: "google-oauth2|1180004",
        log_id: "90020250402152107987654321098765432109876543210987654321",
      },
    };
    const before = at("auth0").length;
    const received = await receivedBy("auth0");
    expect(await hook("auth0", [signup, apiCall])).toEqual(OK_TEXT);
    expect(await receivedBy("auth0")).toBe(received + 2);
    const got = await arrivals("auth0", before, 2);
    const identify = got.find((e) => e.type === "identify")!;
    const track = got.find((e) => e.type === "track")!;
    expect(identify.anonymousId).toMatch(UUID);
    expect(track.anonymousId).toMatch(UUID);
    expect(identify.anonymousId).not.toBe(track.anonymousId);
    expect(withoutStamps(identify)).toEqual({
      type: "identify",
      userId: "auth0|67ed5d45c0b1a2f3e4d5c6b7",
      anonymousId: identify.anonymousId,
      properties: {
        client_id: "Vb3Nq8Rt2Lm6Xp9Wz4Kc7Hd1Fs5Gj0Ya",
        client_name: "Papelaria Web",
        details: signup.data.details,
        log_id: signup.log_id,
        description: "",
        source_type: "ss",
      },
      traits: { connection: "Username-Password-Authentication", connection_id: "con_4Hd8Qw2Lp0Zs6Tx1" },
      context: {
        library: { name: "unknown", version: "unknown" },
        integration: { name: "Auth0" },
        ip: "198.51.100.23",
        request_ip: "198.51.100.23",
        traits: { user_name: "ines.duarte@example.com", userId: "auth0|67ed5d45c0b1a2f3e4d5c6b7" },
        userAgent: "Firefox 124.0.0 / Linux 0.0.0",
      },
      integrations: { Auth0: false },
    });
    // Auth0's date is both the original time and the time sent: no skew to correct.
    expect([identify.originalTimestamp, identify.sentAt]).toEqual(["2025-04-02T15:20:05.123Z", "2025-04-02T15:20:05.123Z"]);
    expect(withoutStamps(track)).toEqual({
      type: "track",
      event: "Success API Operation",
      userId: "google-oauth2|1180004",
      anonymousId: track.anonymousId,
      properties: {
        client_id: "Mk2Pz7Xq4Lw9Nr1Tb6Hs3Jd8Fc5Gv0Ye",
        client_name: "",
        details: apiCall.data.details,
        log_id: apiCall.log_id,
        description: "Update a user",
        source_type: "sapi",
      },
      context: {
        library: { name: "unknown", version: "unknown" },
        integration: { name: "Auth0" },
        ip: "203.0.113.77",
        request_ip: "203.0.113.77",
        traits: { userId: "google-oauth2|1180004" },
        userAgent: "node-fetch/1.0",
      },
      integrations: { Auth0: false },
    });
    // The event's own context.ip is kept; the caller's address is the request_ip.
    expect(track.request_ip).toBe("127.0.0.1");
  });
});

describe("Customer.io: a reporting webhook", () => {
  test("an email opened becomes the track Email Opened of the customer, the email in context.traits", async () => {
    const body = {
      event_id: "01HW2Q5X7ZK3M9R4T6V8Y0B2D4",
      object_type: "email",
      metric: "opened",
      timestamp: 1743607207,
      data: {
        action_id: 96,
        broadcast_id: 12,
        customer_id: "cust-20931",
        delivery_id: "RAECAAGRvBb1cQ8YSTl4yYq6cTg=",
        identifiers: { id: "cust-20931", email: "ines.duarte@example.com", cio_id: "d9c106000123" },
        recipient: "ines.duarte@example.com",
        subject: "Your notebook has shipped",
      },
    };
    const before = at("cio").length;
    expect(await hook("cio", body)).toEqual(OK_TEXT);
    const [e] = await arrivals("cio", before, 1);
    expect(withoutStamps(e!)).toEqual({
      type: "track",
      event: "Email Opened",
      userId: "cust-20931",
      properties: {
        eventId: "01HW2Q5X7ZK3M9R4T6V8Y0B2D4",
        deliveryId: "RAECAAGRvBb1cQ8YSTl4yYq6cTg=",
        actionId: 96,
        broadcastId: 12,
        emailSubject: "Your notebook has shipped",
      },
      context: {
        library: { name: "unknown", version: "unknown" },
        integration: { name: "Customer.io" },
        traits: { email: "ines.duarte@example.com", cioId: "d9c106000123" },
        ip: "127.0.0.1",
      },
      integrations: { "Customer.io": false },
    });
    expect([e!.originalTimestamp, e!.sentAt]).toEqual([isoOf(1743607207 * 1000), isoOf(1743607207 * 1000)]);
  });
});

describe("Iterable: a system webhook", () => {
  test("emailOpen becomes a track of that name, dataFields as properties, the email's md5 as userId, createdAt as the times", async () => {
    const dataFields = {
      email: "ines.duarte@example.com",
      createdAt: "2025-04-02 15:25:31 +00:00",
      campaignId: 5120943,
      campaignName: "April restock",
      templateId: 7200318,
      templateName: "Restock v3",
      messageId: "2b9d5e0f7a1c4e3b8d6f0a2c4e6b8d1f",
      emailSubject: "Back in stock: Cork Notebook",
      channelId: 38211,
      messageTypeId: 40112,
      experimentId: null,
      userAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 18_3 like Mac OS X)",
      userAgentDevice: "iPhone",
      ip: "192.0.2.61",
      proxySource: "Apple",
    };
    const before = at("iterable").length;
    expect(await hook("iterable", { email: "ines.duarte@example.com", eventName: "emailOpen", dataFields })).toEqual(OK_TEXT);
    const [e] = await arrivals("iterable", before, 1);
    const { email: _, ...properties } = dataFields;
    // The mapping sets receivedAt itself (Iterable's createdAt), and Sluice keeps a mapping's own.
    expect(withoutStamps(e!, { receivedAt: "2025-04-02T15:25:31.000Z" })).toEqual({
      type: "track",
      event: "emailOpen",
      userId: createHash("md5").update("ines.duarte@example.com").digest("hex"),
      properties,
      context: {
        library: { name: "unknown", version: "unknown" },
        integration: { name: "Iterable", version: "1.0.0" },
        traits: { email: "ines.duarte@example.com" },
        ip: "127.0.0.1",
      },
      integrations: { Iterable: false },
    });
    expect(e!.timestamp).toBe("2025-04-02T15:25:31.000Z");
  });
});

describe("Braze Currents: a batch of events", () => {
  test("each event a track in order, ids and device in their places, customMapping renaming one type", async () => {
    const batch = {
      events: [
        {
          event_type: "users.messages.email.Open",
          id: "a1f3c5e7-0b2d-4f6a-8c0e-2a4c6e8f0b13",
          time: 1743607300,
          user: { user_id: "67ed5e1a9f0b3c2d1e4f5a6b", external_user_id: "cust-20931", timezone: "Europe/Lisbon" },
          properties: {
            campaign_id: "0e4b7d2c-9a1f-4c3e-8b5d-7f6a2e1c0d9b",
            campaign_name: "April restock",
            dispatch_id: "67ed5e1a9f0b3c2d1e4f5a6c",
            email_address: "ines.duarte@example.com",
            user_agent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4)",
            machine_open: "false",
          },
        },
        {
          event_type: "users.behaviors.app.SessionStart",
          id: "c3e5a7b9-2d4f-4a6c-8e0b-4c6e8a0b2d35",
          time: 1743607360,
          user: { user_id: "67ed5e1a9f0b3c2d1e4f5a6b", external_user_id: "cust-20931", device_id: "7d3a1e9c-5b2f-4c8a-9e6d-1f0b3a5c7e92" },
          properties: { app_id: "4c9e2a7f-1b3d-4e5a-8f6c-0d2b4a6e8c1f", platform: "ios", os_version: "iOS 18.3", device_model: "iPhone16,1", session_id: "s-9921" },
        },
      ],
    };
    const before = at("braze").length;
    expect(await hook("braze", batch)).toEqual(OK_TEXT);
    const [open, session] = await arrivals("braze", before, 2);
    const lib = { library: { name: "unknown", version: "unknown" }, integration: { name: "Braze" } };
    expect(withoutStamps(open!, { messageId: "a1f3c5e7-0b2d-4f6a-8c0e-2a4c6e8f0b13" })).toEqual({
      type: "track",
      event: "Email Opened",
      userId: "cust-20931",
      anonymousId: "67ed5e1a9f0b3c2d1e4f5a6b",
      traits: { email: "ines.duarte@example.com" },
      properties: { campaign_id: "0e4b7d2c-9a1f-4c3e-8b5d-7f6a2e1c0d9b", campaign_name: "April restock", dispatch_id: "67ed5e1a9f0b3c2d1e4f5a6c", machine_open: "false" },
      context: { ...lib, timezone: "Europe/Lisbon", userAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4)", ip: "127.0.0.1" },
      integrations: { Braze: false },
    });
    expect(open!.timestamp).toBe(isoOf(1743607300 * 1000));
    expect(withoutStamps(session!, { messageId: "c3e5a7b9-2d4f-4a6c-8e0b-4c6e8a0b2d35" })).toEqual({
      type: "track",
      event: "users.behaviors.app.SessionStart",
      userId: "cust-20931",
      anonymousId: "67ed5e1a9f0b3c2d1e4f5a6b",
      properties: { app_id: "4c9e2a7f-1b3d-4e5a-8f6c-0d2b4a6e8c1f", session_id: "s-9921" },
      context: { ...lib, device: { id: "7d3a1e9c-5b2f-4c8a-9e6d-1f0b3a5c7e92", model: "iPhone16,1" }, os: { name: "ios", version: "iOS 18.3" }, ip: "127.0.0.1" },
      integrations: { Braze: false },
    });
    expect(session!.timestamp).toBe(isoOf(1743607360 * 1000));
  });
});

describe("Slack: the Events API", () => {
  test("url_verification: the challenge is answered to Slack as JSON, nothing stored", async () => {
    const before = at("slack").length;
    const received = await receivedBy("slack");
    const answer = await hook("slack", { token: "Jhj5dZrVaK7ZwHHjRyZWjbDl", challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", type: "url_verification" });
    expect(answer).toEqual({ status: 200, text: JSON.stringify({ challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" }), contentType: "application/json" });
    expect(await receivedBy("slack")).toBe(received);
    expect(at("slack").length).toBe(before);
  });

  test("a message event becomes the track Message, the Slack user hashed into the anonymousId", async () => {
    const event = {
      type: "message",
      channel: "C07PQ3L9M2R",
      user: "U06RT4K8W1Z",
      text: "Restock is live :tada:",
      ts: "1743607500.000200",
      event_ts: "1743607500.000200",
      channel_type: "channel",
    };
    const body = {
      token: "Jhj5dZrVaK7ZwHHjRyZWjbDl",
      team_id: "T05KQ2M8ZRB",
      api_app_id: "A07H2L5N8PQ",
      event,
      type: "event_callback",
      event_id: "Ev07QK2M4N6P",
      event_time: 1743607500,
      authorizations: [{ enterprise_id: null, team_id: "T05KQ2M8ZRB", user_id: "U07BOT00001", is_bot: true, is_enterprise_install: false }],
      is_ext_shared_channel: false,
    };
    const before = at("slack").length;
    expect(await hook("slack", body)).toEqual(OK_TEXT);
    const [e] = await arrivals("slack", before, 1);
    expect(withoutStamps(e!)).toEqual({
      type: "track",
      event: "Message",
      anonymousId: createHash("sha256").update("U06RT4K8W1Z").digest("hex").slice(0, 36),
      properties: event,
      context: {
        library: { name: "unknown", version: "unknown" },
        integration: { name: "SLACK" },
        externalId: [{ type: "slackUserId", id: "U06RT4K8W1Z" }],
        ip: "127.0.0.1",
      },
      integrations: { SLACK: false },
    });
    expect([e!.originalTimestamp, e!.sentAt]).toEqual(["2025-04-02T15:25:00.000Z", "2025-04-02T15:25:00.000Z"]);
  });
});

// ---------------------------------------------------------------------------------------------
// Bad input and refusals.

describe("refusals", () => {
  /**
   * A request the mapping cannot read: 400 with its text, nothing stored; then a good request of
   * the same source arrives alone at the sink.
   */
  async function refused(role: string, request: Parameters<typeof hook>, text: string, good: Parameters<typeof hook>, isGood: (e: Event) => boolean) {
    const before = at(role).length;
    const received = await receivedBy(role);
    expect(await hook(...request)).toEqual({ status: 400, text, contentType: "text/plain;charset=utf-8" });
    expect(await receivedBy(role)).toBe(received);
    expect(await hook(...good)).toEqual(OK_TEXT);
    const got = await arrivals(role, before, 1);
    expect(got.length).toBe(1);
    expect(isGood(got[0]!)).toBe(true);
    expect(await receivedBy(role)).toBe(received + 1);
  }

  const goodOrder = (id: number): Parameters<typeof hook> => ["shop", orderBody({ id, cart_token: `good-${id}` }), { query: { topic: "orders_create" } }];
  const isOrder = (id: number) => (e: Event) => e.event === "Order Created" && e.properties.order_id === id;

  test("Shopify: malformed JSON, a body that is no object, no topic at all", async () => {
    await refused("shop", ["shop", "{\"id\": 1,", { query: { topic: "orders_create" } }], "Malformed JSON in request body", goodOrder(7001), isOrder(7001));
    await refused("shop", ["shop", [orderBody()], { query: { topic: "orders_create" } }], "Invalid payload: a Shopify webhook body is a JSON object", goodOrder(7002), isOrder(7002));
    // Neither ?topic= nor X-Shopify-Topic.
    await refused("shop", ["shop", orderBody()], "Invalid topic in query_parameters", goodOrder(7003), isOrder(7003));
  });

  test("Iterable without an event name; Braze without an event list or with no usable event; Slack without its event; Auth0 logs that are no list", async () => {
    const goodIterable: Parameters<typeof hook> = ["iterable", { email: "a@example.com", eventName: "emailClick", dataFields: { campaignId: 1 } }];
    await refused("iterable", ["iterable", { email: "a@example.com", dataFields: { campaignId: 1 } }], "Unknown event type from Iterable", goodIterable, (e) => e.event === "emailClick");
    const goodBraze = (id: string): Parameters<typeof hook> => ["braze", { events: [{ event_type: "users.behaviors.CustomEvent", id, time: 1743607400, user: { external_user_id: "cust-1" } }] }];
    await refused("braze", ["braze", { events: "none" }], "eventList should be an array", goodBraze("b-good-1"), (e) => e.messageId === "b-good-1");
    // No event here has a user: each is dropped, and a batch left empty is refused.
    await refused("braze", ["braze", { events: [{ event_type: "users.messages.email.Send", id: "x", time: 1 }] }], "All requests in the batch failed", goodBraze("b-good-2"), (e) => e.messageId === "b-good-2");
    const goodSlack: Parameters<typeof hook> = ["slack", { type: "event_callback", event: { type: "reaction_added", user: "U1", reaction: "+1", event_ts: "1743607600.1" }, event_time: 1743607600 }];
    await refused("slack", ["slack", { type: "event_callback", event_time: 1743607600 }], "Missing the required event data", goodSlack, (e) => e.event === "Reaction Added");
    const goodAuth0: Parameters<typeof hook> = ["auth0", { logs: [{ log_id: "l-good", data: { type: "slo", date: "2025-04-02T15:30:00.000Z", user_id: "auth0|x" } }] }];
    await refused("auth0", ["auth0", { logs: { log_id: "l-1" } }], "Auth0 logs must be an array of log records", goodAuth0, (e) => e.event === "Success Logout");
  });

  test("a body that makes a mapping throw (an event type no text can be made of) is a 400 in Sluice's words, never a 500", async () => {
    const goodBraze: Parameters<typeof hook> = ["braze", { events: [{ event_type: "users.behaviors.CustomEvent", id: "b-good-3", time: 1743607400, user: { external_user_id: "cust-1" } }] }];
    await refused("braze", ["braze", { events: [{ event_type: { toString: 1 }, id: "x", user: { external_user_id: "cust-1" } }] }], "the Braze mapping could not read this request", goodBraze, (e) => e.messageId === "b-good-3");
  });

  test("an event-stream (SDK) source's key: 401 invalid write key; unknown key too; no key: 401", async () => {
    const received = await receivedBy("sdk");
    expect(await hook("sdk", orderBody(), { query: { topic: "orders_create" } })).toEqual({ status: 401, text: "invalid write key", contentType: "text/plain;charset=utf-8" });
    expect(await hook("sdk", {}, { basicAuth: true })).toEqual({ status: 401, text: "invalid write key", contentType: "text/plain;charset=utf-8" });
    expect(await hook("shop", {}, { writeKey: "no-such-write-key-0001" })).toEqual({ status: 401, text: "invalid write key", contentType: "text/plain;charset=utf-8" });
    const none = await fetch(`${s.url}/v1/webhook?topic=orders_create`, { method: "POST", body: "{}" });
    expect([none.status, await none.text()]).toEqual([401, "failed to read writekey from query params"]);
    expect(await receivedBy("sdk")).toBe(0);
    expect(at("sdk")).toEqual([]);
    expect(received).toBe(0);
  });

  test("a disabled webhook source: 404 source is disabled, nothing stored; enabled again, it takes requests", async () => {
    expect(await hook("hook", { probe: "enabled-1" })).toEqual(OK_TEXT);
    await arrivals("hook", 0, 1);
    expect((await api(s.url, "PATCH", `/v2/sources/${src.hook!.id}`, { enabled: false })).status).toBe(200);
    const received = await receivedBy("hook");
    expect(await hook("hook", { probe: "disabled-1" })).toEqual({ status: 404, text: "source is disabled", contentType: "text/plain;charset=utf-8" });
    expect(await receivedBy("hook")).toBe(received);
    expect((await api(s.url, "PATCH", `/v2/sources/${src.hook!.id}`, { enabled: true })).status).toBe(200);
    expect(await hook("hook", { probe: "enabled-2" })).toEqual(OK_TEXT);
    const got = await arrivals("hook", 1, 1);
    expect(at("hook").map((e) => e.properties.probe)).toEqual(["enabled-1", "enabled-2"]);
    expect(got[0]!.event).toBe("webhook_source_event");
  });
});

// ---------------------------------------------------------------------------------------------
// State that outlives the process.

describe("restart", () => {
  test("a cart token's identity recorded before a restart on the same data dir is found after it", async () => {
    const cart = "c1-restart-2f8e6d4b";
    expect(await hook("shop", { event: "rudderIdentifier", cartToken: cart, anonymousId: "browser-anon-restart", cart: { token: cart, line_items: lineItems } })).toEqual(SHOPIFY_OK);
    // And the pixel's, through the pixel app's path.
    expect(await hook("shop", { pixelEventLabel: true, event: "rudderIdentifier", action: "stitchCartTokenToAnonId", cartToken: `px-${cart}`, anonymousId: "pixel-client-restart" })).toEqual(SHOPIFY_OK);

    s.proc.kill("SIGTERM");
    expect(await s.proc.exited).toBe(0);
    s = await spawnSluice({ dataDir: s.dataDir });

    const before = at("shop").length;
    expect(await hook("shop", orderBody({ id: 5923812345700, cart_token: cart }), { query: { topic: "orders_create" } })).toEqual(OK_TEXT);
    const [legacy] = await arrivals("shop", before, 1);
    expect([legacy!.event, legacy!.anonymousId, legacy!.properties.order_id]).toEqual(["Order Created", "browser-anon-restart", 5923812345700]);

    const before2 = at("shop2").length;
    expect(await hook("shop2", orderBody({ id: 5923812345701, cart_token: `px-${cart}`, customer: undefined }), { query: { topic: "orders_create", version: "pixel" } })).toEqual(OK_TEXT);
    const [pixel] = await arrivals("shop2", before2, 1);
    expect([pixel!.event, pixel!.anonymousId, pixel!.properties.order_id]).toEqual(["Order Created", "pixel-client-restart", "5923812345701"]);
  }, 60_000);
});

describe("a failing state store", () => {
  test("an identifier call that cannot be stored is a 503 with Retry-After (the storefront retries); an order is stored without the state", async () => {
    // In process, so the test can take the table away under the running server (either store).
    const server = await startSluice();
    try {
      const shop = await createSource(server.url, { name: "shop", type: "Shopify" });
      await query(server, "DROP TABLE source_state");
      const res = await fetch(`${server.url}/v1/webhook?writeKey=${shop.writeKey}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ event: "rudderIdentifier", cartToken: "c1-broken-store", anonymousId: "browser-anon-broken", cart: { line_items: lineItems } }),
      });
      expect([res.status, await res.text(), res.headers.get("retry-after")]).toEqual([503, "webhook source state could not be read or written; retry later", "5"]);
      const order = await fetch(`${server.url}/v1/webhook?writeKey=${shop.writeKey}&topic=orders_create`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(orderBody({ id: 5923812345710, cart_token: "c1-broken-store" })),
      });
      expect([order.status, await order.text()]).toEqual([200, "ok"]);
      const stored = await readEvents(server);
      expect(stored.map((e) => [e.event, e.anonymousId, e.properties.order_id])).toEqual([["Order Created", uuidV5("c1-broken-store", URL_NAMESPACE), 5923812345710]]);
    } finally {
      await server.stop();
      await cleanup(server.dataDir);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Cluster mode: two instances on one PostgreSQL share the state.

describe.if(havePostgres)("cluster mode: two instances on one PostgreSQL", () => {
  const scratch = pgScratch("t_whsrc");

  test("a Shopify identity recorded through one instance is found through the other", async () => {
    const schema = scratch.schema();
    const start = async () => {
      const p = await spawnSluice({ args: ["--database", PG_URL, "--database-schema", schema] });
      scratch.onStop(async () => {
        p.proc.kill(9);
        await p.proc.exited;
        await cleanup(p.dataDir);
      });
      return p;
    };
    const clusterSink = startSink();
    scratch.onStop(async () => clusterSink.stop());
    // The source and its destination are made before the second instance starts, so it loads
    // them at its start: whichever instance routes an event knows the destination.
    const a = await start();
    const shop = await createSource(a.url, { name: "shop", type: "Shopify" });
    expect((await api(a.url, "POST", "/v2/destinations", { name: "to-shop", type: "WEBHOOK", config: { webhookUrl: `${clusterSink.url}/shop` }, sourceIds: [shop.id] })).status).toBe(201);
    const b = await start();
    // Both take the source's key (a GET to a Shopify source checks the key and stores nothing).
    for (const p of [a, b]) expect((await fetch(`${p.url}/v1/webhook?writeKey=${shop.writeKey}`)).status).toBe(200);
    const to = (p: SluiceProcess) => ({ url: p.url, writeKey: shop.writeKey });

    // The legacy app's identity through A, the order through B.
    expect(await hook("", { event: "rudderIdentifier", cartToken: "cluster-cart-1", anonymousId: "cluster-anon-1", cart: { line_items: lineItems } }, to(a))).toEqual(SHOPIFY_OK);
    expect(await hook("", orderBody({ id: 8800001, cart_token: "cluster-cart-1" }), { ...to(b), query: { topic: "orders_create" } })).toEqual(OK_TEXT);
    // The pixel's through B, the pixel app's order through A.
    expect(await hook("", { pixelEventLabel: true, event: "rudderIdentifier", action: "stitchCartTokenToAnonId", cartToken: "cluster-cart-2", anonymousId: "cluster-anon-2" }, to(b))).toEqual(SHOPIFY_OK);
    expect(await hook("", orderBody({ id: 8800002, cart_token: "cluster-cart-2", customer: undefined }), { ...to(a), query: { topic: "orders_create", version: "pixel" } })).toEqual(OK_TEXT);

    const got = await arrivals("shop", 0, 2, clusterSink);
    const byOrder = Object.fromEntries(got.map((e) => [String(e.properties.order_id), e.anonymousId]));
    expect(byOrder).toEqual({ "8800001": "cluster-anon-1", "8800002": "cluster-anon-2" });
  }, 60_000);
});
