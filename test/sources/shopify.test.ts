/**
 * The Shopify webhook source: the legacy app's webhooks and identifier calls, the web pixel's
 * events, and the pixel app's webhooks, with the state they share. The mapping is called
 * directly with payloads written for these tests after Shopify's documented formats; the events
 * are compared whole, as the gateway would serialize them.
 */
import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/lib/errors";
import { shopify } from "../../src/sources/shopify";
import { PIXEL_NAMESPACE, URL_NAMESPACE, sha256Hex, uuidV5 } from "../../src/sources/shopify/util";
import type { MapContext, MapResult, SourceState, WebhookRequest } from "../../src/sources/types";

const RANDOM_ID = "3b7c9e2a-5d41-4f86-9a0b-c2e4f6a8b1d3";

/** A state that remembers what was set, with its expiry; `failing` makes every call throw. */
class MemoryState implements SourceState {
  hashes = new Map<string, Record<string, unknown>>();
  ttls = new Map<string, number | undefined>();
  constructor(private failing = false) {}
  async get(key: string) {
    if (this.failing) throw new Error("store down");
    return this.hashes.get(key) ?? null;
  }
  async set(key: string, fields: Record<string, unknown>, ttlSeconds?: number) {
    if (this.failing) throw new Error("store down");
    this.hashes.set(key, { ...(this.hashes.get(key) ?? {}), ...fields });
    this.ttls.set(key, ttlSeconds);
  }
}

function ctx(state: SourceState = new MemoryState()): MapContext {
  return {
    source: { id: "src-1", name: "shop", workspaceId: "ws-1", writeKey: "wk", config: {} },
    state,
    uuid: () => RANDOM_ID,
    now: () => Date.UTC(2025, 2, 14, 12, 0, 0),
  };
}

function post(body: unknown, query: Record<string, string> = {}, headers: Record<string, string> = {}): WebhookRequest {
  const all = { writeKey: "wk", ...query };
  return {
    method: "POST",
    url: `/v1/webhook?${new URLSearchParams(all)}`,
    proto: "HTTP/1.1",
    headers: Object.fromEntries(Object.entries({ "Content-Type": "application/json", ...headers }).map(([k, v]) => [k, [v]])),
    query_parameters: Object.fromEntries(Object.entries(all).map(([k, v]) => [k, [v]])),
    body: typeof body === "string" ? body : JSON.stringify(body),
  };
}

/** The events as they leave Sluice: through JSON, so an undefined field is no field. */
async function events(request: WebhookRequest, context = ctx()): Promise<unknown[]> {
  const result: MapResult = await shopify.map(request, context);
  expect(result.answer).toBeUndefined();
  return JSON.parse(JSON.stringify(result.events));
}

async function answered(request: WebhookRequest, context = ctx()) {
  const result = await shopify.map(request, context);
  expect(result).toEqual({ events: [], answer: { body: "OK", contentType: "text/plain" } });
}

async function refusal(request: WebhookRequest, message: string) {
  let caught: unknown;
  try {
    await shopify.map(request, ctx());
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(AppError);
  expect((caught as AppError).status).toBe(400);
  expect((caught as AppError).message).toBe(message);
}

const LEGACY_LIBRARY = { name: "RudderStack Shopify Cloud", version: "1.0.0" };
const SERVER_LIBRARY = { eventOrigin: "server", name: "RudderStack Shopify Cloud", version: "2.0.0" };
const CLIENT_LIBRARY = { name: "RudderStack Shopify Cloud", eventOrigin: "client", version: "2.0.0" };

const lineItem = {
  id: 9001,
  product_id: 4411,
  variant_id: 5522,
  variant_title: "Large",
  name: "Wool Scarf - Large",
  title: "Wool Scarf",
  sku: "SCF-L",
  vendor: "Northknit",
  price: "25.00",
  quantity: 2,
  gift_card: false,
};

describe("legacy app webhooks", () => {
  test("orders_create: an ecommerce track event with the browser's ids from the stored cart", async () => {
    const state = new MemoryState();
    state.hashes.set("cart-abc", { anonymousId: "anon-77", sessionId: "1710412345678", itemsHash: "EMPTY" });
    const order = {
      id: 700100,
      email: "ines@example.org",
      cart_token: "cart-abc",
      checkout_token: null,
      currency: "EUR",
      total_price: "50.00",
      total_tax: "8.68",
      financial_status: "paid",
      note: null,
      updated_at: "2025-03-14T10:15:00+01:00",
      line_items: [lineItem],
      customer: { id: 3300, email: "ines@example.org", first_name: "Ines", last_name: "Vidal", orders_count: 3, note: null },
      shipping_address: { address1: "Carrer de Mallorca 401", city: "Barcelona", zip: "08013", country: "Spain" },
    };
    expect(await events(post(order, { topic: "orders_create" }), ctx(state))).toEqual([
      {
        type: "track",
        event: "Order Created",
        userId: "3300",
        anonymousId: "anon-77",
        timestamp: "2025-03-14T09:15:00.000Z",
        properties: {
          order_id: 700100,
          value: "50.00",
          tax: "8.68",
          currency: "EUR",
          email: "ines@example.org",
          cart_token: "cart-abc",
          financial_status: "paid",
          updated_at: "2025-03-14T10:15:00+01:00",
          products: [
            {
              product_id: 4411,
              sku: "SCF-L",
              title: "Wool Scarf",
              price: "25.00",
              brand: "Northknit",
              quantity: 2,
              id: 9001,
              gift_card: false,
              variant: "5522  Large",
            },
          ],
        },
        traits: {
          email: "ines@example.org",
          firstName: "Ines",
          lastName: "Vidal",
          orderCount: 3,
          shippingAddress: { address1: "Carrer de Mallorca 401", city: "Barcelona", zip: "08013", country: "Spain" },
        },
        context: {
          library: LEGACY_LIBRARY,
          integration: { name: "SHOPIFY" },
          topic: "orders_create",
          sessionId: "1710412345678",
          cart_token: "cart-abc",
          checkout_token: null,
        },
        integrations: { SHOPIFY: true },
      },
    ]);
  });

  test("customers_update: an identify of the customer", async () => {
    const customer = {
      id: 3300,
      email: "ines@example.org",
      first_name: "Ines",
      last_name: "Vidal",
      phone: null,
      state: "enabled",
      verified_email: true,
      tags: "vip",
      addresses: [{ city: "Barcelona" }],
      default_address: { city: "Barcelona" },
      updated_at: "2025-03-14T10:00:00Z",
    };
    expect(await events(post(customer, { topic: "customers_update" }))).toEqual([
      {
        type: "identify",
        userId: "3300",
        timestamp: "2025-03-14T10:00:00.000Z",
        traits: {
          email: "ines@example.org",
          firstName: "Ines",
          lastName: "Vidal",
          state: "enabled",
          verifiedEmail: true,
          tags: "vip",
          addressList: [{ city: "Barcelona" }],
          address: { city: "Barcelona" },
        },
        context: { library: LEGACY_LIBRARY, integration: { name: "SHOPIFY" }, topic: "customers_update" },
        integrations: { SHOPIFY: true },
      },
    ]);
  });

  test("an admin-only event without a cart token is the shopify-admin user's", async () => {
    const [event] = (await events(post({ id: 88, order_id: 700100, status: "success", line_items: [] }, { topic: "fulfillments_create" }))) as any[];
    expect(event.userId).toBe("shopify-admin");
    expect(event.anonymousId).toBeUndefined();
    expect(event.properties).toEqual({ id: 88, order_id: 700100, status: "success", products: [] });
  });

  test("an order without a cart token gets a random anonymousId; one unknown in the state gets the token's hash", async () => {
    const [random] = (await events(post({ id: 1, line_items: [] }, { topic: "orders_paid" }))) as any[];
    expect(random.anonymousId).toBe(RANDOM_ID);
    const [hashed] = (await events(post({ id: 1, cart_token: "cart-zzz", line_items: [] }, { topic: "orders_paid" }))) as any[];
    expect(hashed.anonymousId).toBe(uuidV5("cart-zzz", URL_NAMESPACE));
  });

  test("carts_update: a repeat of the stored items is dropped, a change is an event and stores the new hash", async () => {
    const state = new MemoryState();
    const cart = { id: "cart-abc", token: "cart-abc", line_items: [lineItem], created_at: "2025-03-14T09:00:00Z", updated_at: "2025-03-14T09:05:00Z" };
    state.hashes.set("cart-abc", { anonymousId: "anon-77", itemsHash: sha256Hex(JSON.stringify(cart.line_items)) });
    await answered(post(cart, { topic: "carts_update" }), ctx(state));

    const changed = { ...cart, line_items: [{ ...lineItem, quantity: 3 }] };
    const [event] = (await events(post(changed, { topic: "carts_update" }), ctx(state))) as any[];
    expect(event.event).toBe("Cart Update");
    expect(event.anonymousId).toBe("anon-77");
    expect(state.hashes.get("cart-abc")!.itemsHash).toBe(sha256Hex(JSON.stringify(changed.line_items)));
    expect(state.ttls.get("cart-abc")).toBe(3600);
  });

  test("carts_update: Shopify's own empty cart, updated right after its creation, is dropped", async () => {
    await answered(post({ id: "c9", token: "c9", line_items: [], created_at: "2025-03-14T09:00:00.000Z", updated_at: "2025-03-14T09:00:04.000Z" }, { topic: "carts_update" }));
  });

  test("the storefront's identifier calls store the cart token's anonymousId, items and session", async () => {
    const state = new MemoryState();
    await answered(post({ event: "rudderIdentifier", cartToken: "cart-abc?key=1", anonymousId: "anon-77", cart: { line_items: [] } }), ctx(state));
    await answered(post({ event: "rudderSessionIdentifier", cartToken: "cart-abc", sessionId: 1710412345678 }), ctx(state));
    expect(state.hashes.get("cart-abc")).toEqual({ anonymousId: "anon-77", itemsHash: "EMPTY", sessionId: "1710412345678" });
    expect(state.ttls.get("cart-abc")).toBe(3600);
  });

  test("a topic Shopify's app does not map is answered OK", async () => {
    await answered(post({ id: 5 }, { topic: "products_create" }));
  });

  test("the topic can come from Shopify's X-Shopify-Topic header", async () => {
    const [event] = (await events(post({ id: 1, line_items: [] }, {}, { "X-Shopify-Topic": "orders/paid" }))) as any[];
    expect(event.event).toBe("Order Paid");
    expect(event.context.topic).toBe("orders_paid");
  });

  test("a failing store: lookups and the items hash are done without, identifier calls fail", async () => {
    const down = new MemoryState(true);
    const [event] = (await events(post({ id: "cart-q", token: "cart-q", line_items: [lineItem] }, { topic: "carts_update" }), ctx(down))) as any[];
    expect(event.anonymousId).toBe(uuidV5("cart-q", URL_NAMESPACE));
    await expect(shopify.map(post({ event: "rudderIdentifier", cartToken: "cart-q", anonymousId: "a" }), ctx(down))).rejects.toThrow("store down");
  });
});

describe("web pixel", () => {
  const context = {
    document: { location: { href: "https://shop.example.com/checkouts/cn/tok-42?utm_source=mail&utm_campaign=spring", pathname: "/checkouts/cn/tok-42" }, title: "Checkout" },
    navigator: { userAgent: "Mozilla/5.0 (X11; Linux x86_64)" },
    window: { location: { href: "https://shop.example.com/checkouts/cn/tok-42", pathname: "/checkouts/cn/tok-42", search: "" }, screen: { height: 900, width: 1440 } },
  };

  test("checkout_completed: Order Completed with the known userId, and the cart token tied to the browser", async () => {
    const state = new MemoryState();
    state.hashes.set("pixel:client-1", { userId: "3300" });
    const body = {
      name: "checkout_completed",
      id: "sh-evt-1",
      clientId: "client-1",
      timestamp: "2025-03-14T11:00:00.000Z",
      pixelEventLabel: true,
      context,
      data: {
        checkout: {
          token: "ck-9",
          email: "ines@example.org",
          currencyCode: "EUR",
          order: { id: "gid://shopify/OrderIdentity/700100" },
          totalPrice: { amount: 50, currencyCode: "EUR" },
          subtotalPrice: { amount: 45, currencyCode: "EUR" },
          totalTax: { amount: 8.68, currencyCode: "EUR" },
          discountsAmount: { amount: 0, currencyCode: "EUR" },
          shippingLine: null,
          lineItems: [{ quantity: 2, title: "Wool Scarf", variant: { sku: "SCF-L", price: { amount: 25 }, image: null, product: { id: "4411", title: "Wool Scarf", vendor: "Northknit", type: "scarf", url: "/products/wool-scarf" } } }],
        },
      },
    };
    const { pixelEventLabel: _, ...details } = body;
    expect(await events(post(body, { topic: "checkouts_update" }), ctx(state))).toEqual([
      {
        type: "track",
        event: "Order Completed",
        anonymousId: "client-1",
        userId: "3300",
        messageId: "sh-evt-1",
        timestamp: "2025-03-14T11:00:00.000Z",
        properties: {
          products: [{ quantity: 2, name: "Wool Scarf", price: 25, sku: "SCF-L", product_id: "4411", variant: "Wool Scarf", category: "scarf", url: "/products/wool-scarf", brand: "Northknit" }],
          order_id: "gid://shopify/OrderIdentity/700100",
          checkout_id: "ck-9",
          total: 50,
          currency: "EUR",
          discount: 0,
          revenue: 45,
          value: 50,
          tax: 8.68,
        },
        context: {
          page: { title: "Checkout", url: "https://shop.example.com/checkouts/cn/tok-42", path: "/checkouts/cn/tok-42", search: "" },
          userAgent: "Mozilla/5.0 (X11; Linux x86_64)",
          screen: { height: 900, width: 1440 },
          traits: { email: "ines@example.org" },
          library: CLIENT_LIBRARY,
          topic: "checkout_completed",
          campaign: { name: "spring", source: "mail" },
          shopifyDetails: details,
        },
        integrations: { SHOPIFY: true, DATA_WAREHOUSE: { options: { jsonPaths: ["track.context.shopifyDetails"] } } },
      },
    ]);
    expect(state.hashes.get("pixel:tok-42")).toEqual({ anonymousId: "client-1" });
    expect(state.ttls.get("pixel:tok-42")).toBe(43200);
  });

  test("page_viewed is a page call; an unknown pixel event is answered OK", async () => {
    const [page] = (await events(post({ name: "page_viewed", id: "sh-2", clientId: "client-2", pixelEventLabel: true, context, data: {} }))) as any[];
    expect(page.type).toBe("page");
    expect(page.name).toBe("Page View");
    expect(page.properties).toEqual({ title: "Checkout", url: "https://shop.example.com/checkouts/cn/tok-42", path: "/checkouts/cn/tok-42", search: "" });
    expect(page.integrations.DATA_WAREHOUSE).toEqual({ options: { jsonPaths: ["page.context.shopifyDetails"] } });
    await answered(post({ name: "alert_displayed", clientId: "client-2", pixelEventLabel: true, data: {} }));
  });

  test("the pixel's identifier calls tie a cart token and a userId to the browser", async () => {
    const state = new MemoryState();
    await answered(post({ event: "rudderIdentifier", action: "stitchCartTokenToAnonId", cartToken: "tok-42", anonymousId: "client-1", pixelEventLabel: true }), ctx(state));
    await answered(post({ event: "rudderIdentifier", action: "stitchUserIdToAnonId", anonymousId: "client-1", userId: 3300, pixelEventLabel: true }), ctx(state));
    expect(state.hashes.get("pixel:tok-42")).toEqual({ anonymousId: "client-1" });
    expect(state.ttls.get("pixel:tok-42")).toBe(43200);
    expect(state.hashes.get("pixel:client-1")).toEqual({ userId: "3300" });
    expect(state.ttls.get("pixel:client-1")).toBe(86400);
  });
});

describe("pixel app webhooks", () => {
  test("orders_create: the browser from the cart token, an identify for the customer, the userId stored", async () => {
    const state = new MemoryState();
    state.hashes.set("pixel:tok-42", { anonymousId: "client-1" });
    const order = {
      id: 700100,
      cart_token: "tok-42",
      email: "ines@example.org",
      currency: "EUR",
      total_price: "50.00",
      total_tax: "8.68",
      updated_at: "2025-03-14T10:15:00+01:00",
      line_items: [lineItem],
      customer: { id: 3300, email: "ines@example.org", first_name: "Ines", last_name: null, created_at: "2024-01-02T03:04:05Z" },
      shipping_address: { address1: "Carrer de Mallorca 401", city: "Barcelona", province: null, zip: "08013", country: "Spain" },
    };
    const traits = {
      email: "ines@example.org",
      firstName: "Ines",
      createdAt: "2024-01-02T03:04:05Z",
      address: { street: "Carrer de Mallorca 401", city: "Barcelona", state: null, postalCode: "08013", country: "Spain" },
      cart_token_hash: uuidV5("tok-42", PIXEL_NAMESPACE),
    };
    expect(await events(post(order, { topic: "orders_create", version: "pixel" }), ctx(state))).toEqual([
      {
        type: "track",
        event: "Order Created",
        userId: "3300",
        anonymousId: "client-1",
        timestamp: "2025-03-14T09:15:00.000Z",
        properties: {
          order_id: "700100",
          value: 50,
          tax: 8.68,
          currency: "EUR",
          products: [{ product_id: "4411", sku: "SCF-L", title: "Wool Scarf - Large", price: 25, brand: "Northknit", quantity: 2 }],
        },
        context: {
          library: SERVER_LIBRARY,
          integration: { name: "SHOPIFY" },
          traits,
          topic: "orders_create",
          cart_token: "tok-42",
          shopifyDetails: order,
        },
        integrations: { SHOPIFY: true, DATA_WAREHOUSE: { options: { jsonPaths: ["track.context.shopifyDetails"] } } },
      },
      {
        type: "identify",
        userId: "3300",
        anonymousId: "client-1",
        context: { library: SERVER_LIBRARY, integration: { name: "SHOPIFY" }, traits },
        integrations: { SHOPIFY: true },
      },
    ]);
    expect(state.hashes.get("pixel:client-1")).toEqual({ userId: "3300" });
    expect(state.ttls.get("pixel:client-1")).toBe(86400);
  });

  test("a cart token the pixel never saw: the anonymousId is the token's hash; no customer, no identify", async () => {
    const [event, ...rest] = (await events(post({ id: 1, cart_token: "tok-new", line_items: [] }, { topic: "orders_paid", version: "pixel" }))) as any[];
    expect(rest).toEqual([]);
    expect(event.event).toBe("Order Paid");
    expect(event.anonymousId).toBe(uuidV5("tok-new", PIXEL_NAMESPACE));
    expect(event.properties).toEqual({ products: [] });
  });

  test("customers_create is not one of the pixel app's topics", async () => {
    await answered(post({ id: 3300 }, { topic: "customers_create", version: "pixel" }));
  });
});

describe("the sample and malformed bodies", () => {
  test("the sample maps to an Order Created event", async () => {
    const query = shopify.sample.query ?? {};
    const [event] = (await events(post(shopify.sample.body, query))) as any[];
    expect(event.event).toBe("Order Created");
    expect(event.userId).toBe("7234567890123");
  });

  test("malformed JSON, a missing body, a body that is no object", async () => {
    await refusal(post("{not json", { topic: "orders_create" }), "Malformed JSON in request body");
    await refusal(post("", { topic: "orders_create" }), "request.body is not present in V2 spec payload");
    await refusal(post([{ id: 1 }], { topic: "orders_create" }), "Invalid payload: a Shopify webhook body is a JSON object");
  });

  test("RudderStack's texts for a missing or empty topic", async () => {
    await refusal(post({ id: 1 }), "Invalid topic in query_parameters");
    await refusal({ ...post({ id: 1 }), query_parameters: {} }, "Query_parameters is missing");
    await refusal({ ...post({ id: 1 }), query_parameters: { topic: [] } }, "Topic not found");
  });
});
