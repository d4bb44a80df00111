/**
 * A RudderStack workspace's webhook sources, imported from its workspaceConfig.json, take the
 * services' posts at the same URL with the same write keys, mapped by their type: a Shopify
 * order and an Auth0 log record reach the source's destination as their events. The generic
 * webhook source reads its `putRequestDetailsInContext` from the file's source config.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { type SluiceProcess, cleanup, spawnSluice, startSink, tempDir, waitFor } from "../support/helpers";

const SHOPIFY_KEY = "2bWsWriteKeyShopifyStore01";
const AUTH0_KEY = "2bWsWriteKeyAuth0Tenant001";
const HOOK_KEY = "2bWsWriteKeyGenericHook001";
const SDK_KEY = "2bWsWriteKeyStorefrontWeb0";
const SEGMENT_KEY = "2bWsWriteKeySegmentFwd0001";
let s: SluiceProcess;
let sink: ReturnType<typeof startSink>;
let dir: string;

const destination = (url: string) => ({
  id: "2bWsDstWebhookSink0001",
  name: "Sink",
  enabled: true,
  config: { webhookUrl: url, webhookMethod: "POST", headers: [] },
  destinationDefinition: { name: "WEBHOOK", displayName: "Webhook" },
});
const source = (id: string, name: string, writeKey: string, def: Record<string, unknown>, url: string, config: Record<string, unknown> = {}) => ({
  id, name, writeKey, enabled: true, config, sourceDefinition: def, destinations: [destination(url)],
});

beforeAll(async () => {
  sink = startSink();
  dir = tempDir();
  const url = `${sink.url}/hook`;
  const file = {
    sources: [
      source("2bWsSrcShopify01", "Shop", SHOPIFY_KEY, { name: "Shopify", displayName: "Shopify", category: "webhook", type: "shopify" }, url),
      source("2bWsSrcAuth0001", "Auth0 tenant", AUTH0_KEY, { name: "Auth0", displayName: "Auth0", category: "webhook", type: "cloud" }, url),
      source("2bWsSrcHook0001", "Forms", HOOK_KEY, { name: "webhook", displayName: "Webhook Source", category: "webhook", type: "cloud" }, url, { putRequestDetailsInContext: true }),
      source("2bWsSrcSegment01", "Segment forward", SEGMENT_KEY, { name: "Segment", displayName: "Segment", category: "webhook", type: "cloud" }, url),
      source("2bWsSrcWeb00001", "Web", SDK_KEY, { name: "Javascript", displayName: "JavaScript", category: null, type: "web" }, url),
    ],
  };
  await Bun.write(join(dir, "workspaceConfig.json"), JSON.stringify(file));
  s = await spawnSluice({ args: ["--config", join(dir, "workspaceConfig.json")] });
});
afterAll(async () => {
  s.proc.kill("SIGTERM");
  await s.proc.exited;
  sink.stop();
  await cleanup(s.dataDir);
  await cleanup(dir);
});

const delivered = () => sink.received.map((r) => r.body as Record<string, any>);

test("a Shopify order posted as Shopify posts it becomes Order Created, with the customer as userId", async () => {
  const order = {
    id: 820982911946154500,
    email: "jon@example.com",
    created_at: "2024-05-01T10:00:00-04:00",
    updated_at: "2024-05-01T10:00:02-04:00",
    total_price: "199.00",
    currency: "USD",
    cart_token: "ws-cart-1",
    line_items: [{ id: 1, product_id: 632910392, sku: "IPOD-342-N", name: "IPod Nano", price: "199.00", quantity: 1, vendor: "Apple" }],
    customer: { id: 115310627314723950, email: "jon@example.com", first_name: "Jon" },
  };
  const res = await fetch(`${s.url}/v1/webhook?writeKey=${SHOPIFY_KEY}&topic=orders_create`, { method: "POST", headers: { "content-type": "application/json", "x-shopify-topic": "orders/create" }, body: JSON.stringify(order) });
  expect([res.status, await res.text()]).toEqual([200, "ok"]);
  const e = await waitFor(() => delivered().find((x) => x.event === "Order Created"), { what: "the Shopify order event" });
  expect(e.type).toBe("track");
  expect(e.userId).toBe("115310627314723950");
  expect(e.properties.order_id).toBe(820982911946154500);
  expect(e.properties.products).toEqual([expect.objectContaining({ product_id: 632910392, sku: "IPOD-342-N", title: "IPod Nano", price: "199.00", quantity: 1, brand: "Apple" })]);
  expect(e.context.library).toEqual({ name: "RudderStack Shopify Cloud", version: "1.0.0" });
  expect(e.context.topic).toBe("orders_create");
  expect(e.integrations).toEqual({ SHOPIFY: true });
});

test("an Auth0 log record becomes its event; a topic-less Shopify post and an SDK key are answered as rudder-server answers", async () => {
  const record = { log_id: "9002", data: { date: "2024-05-01T12:00:00.000Z", type: "ss", description: "", client_id: "c1", ip: "203.0.113.9", user_agent: "curl/8", user_id: "auth0|ws-user-1", details: {} } };
  const res = await fetch(`${s.url}/v1/webhook?writeKey=${AUTH0_KEY}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify([record]) });
  expect(res.status).toBe(200);
  const e = await waitFor(() => delivered().find((x) => x.userId === "auth0|ws-user-1"), { what: "the Auth0 event" });
  expect(e.type).toBe("identify");
  expect(e.context.integration).toEqual({ name: "Auth0" });
  // The user's address the mapping wrote is kept (context.ip); request_ip is the poster's, as in rudder-server.
  expect(e.context.ip).toBe("203.0.113.9");
  expect(e.context.request_ip).toBe("203.0.113.9");
  expect(e.request_ip).toBe("127.0.0.1");

  const sdk = await fetch(`${s.url}/v1/webhook?writeKey=${SDK_KEY}`, { method: "POST", body: "{}" });
  expect([sdk.status, await sdk.text()]).toEqual([401, "invalid write key"]);
});

test("the generic webhook source reads putRequestDetailsInContext from the file's source config", async () => {
  const res = await fetch(`${s.url}/v1/webhook?writeKey=${HOOK_KEY}&form=contact`, { method: "POST", headers: { "content-type": "application/json", "x-form-id": "f-7" }, body: JSON.stringify({ name: "Ana" }) });
  expect(res.status).toBe(200);
  const e = await waitFor(() => delivered().find((x) => x.event === "webhook_source_event" && x.properties?.name === "Ana"), { what: "the generic webhook event" });
  expect(e.context.method).toBe("POST");
  expect(e.context.query_parameters).toEqual({ writeKey: HOOK_KEY, form: "contact" });
  expect(e.context.headers["X-Form-Id"]).toBe("f-7");
  expect(e.context.headers.Host).toBeUndefined();
});

test("an event's own request_ip, receivedAt and messageId are kept, as rudder-server's gateway keeps them (Segment forwards whole events)", async () => {
  const event = { type: "track", event: "Forwarded", userId: "seg-u1", messageId: "seg-msg-1", request_ip: "198.51.100.7", receivedAt: "2024-05-14T09:20:01.000Z", timestamp: "2024-05-14T09:20:00.123Z" };
  const res = await fetch(`${s.url}/v1/webhook?writeKey=${SEGMENT_KEY}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(event) });
  expect(res.status).toBe(200);
  const e = await waitFor(() => delivered().find((x) => x.event === "Forwarded"), { what: "the forwarded Segment event" });
  expect([e.request_ip, e.receivedAt, e.messageId, e.timestamp]).toEqual(["198.51.100.7", "2024-05-14T09:20:01.000Z", "seg-msg-1", "2024-05-14T09:20:00.123Z"]);
  expect(e.context.ip).toBe("198.51.100.7");
});
