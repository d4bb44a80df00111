/**
 * RudderStack's Shopify pixel app, store side: the webhooks the app subscribes (the URL carries
 * `version=pixel` and the topic). Orders and checkouts become ecommerce track events, the other
 * known topics generic ones; the browser's anonymousId comes from the cart's note attributes or
 * from what the web pixel stored for the cart token (pixel.ts), and a known customer also gets
 * an identify.
 */
import { setOwn } from "../../lib/safe-keys";
import { getPath, newMessage, setPath } from "../common";
import type { MapContext, MapResult } from "../types";
import { USER_ID_TTL_SECONDS } from "./pixel";
import { TRACK_EVENTS } from "./tracker";
import {
  INTEGRATION,
  OK_ANSWER,
  PIXEL_NAMESPACE,
  buildPayload,
  dropNulls,
  emailInPayload,
  isObject,
  isPresent,
  isSet,
  isoTime,
  redisFields,
  uuidV5,
  type Json,
  type KeySpec,
  type PayloadSpec,
} from "./util";

const ECOM_EVENTS: Record<string, string> = {
  checkouts_create: "Checkout Started Webhook",
  checkouts_update: "Checkout Updated",
  orders_updated: "Order Updated",
  orders_create: "Order Created",
  orders_cancelled: "Order Cancelled",
};

/** Topics whose other generic track events RudderStack takes (the legacy app's list, with its two ecommerce topics). */
const isGenericTopic = (topic: string) => Object.hasOwn(TRACK_EVENTS, topic) || topic === "checkouts_update" || topic === "orders_create";

const ORDER_FIELDS: PayloadSpec = [["id", "order_id", "string"], ["total_price", "value", "number"], ["total_tax", "tax", "number"], ["currency", "currency"]];
const LINE_ITEM_FIELDS: PayloadSpec = [["product_id", "product_id", "string"], ["sku", "sku"], ["name", "title"], ["price", "price", "number"], ["vendor", "brand"], ["quantity", "quantity"]];

/** The customer's traits (its id is the userId). */
const CUSTOMER_TRAITS: KeySpec = [
  ["email", "email"],
  ["first_name", "firstName"],
  ["last_name", "lastName"],
  ["phone", "phone"],
  ["shipping_address.company", "company"],
  ["created_at", "createdAt"],
];
/** The shipping address as the `address` trait. */
const ADDRESS_TRAITS: KeySpec = [
  ["address1", "address.street"],
  ["city", "address.city"],
  ["province", "address.state"],
  ["zip", "address.postalCode"],
  ["country", "address.country"],
];

const productsOf = (lineItems: unknown): Json[] => (Array.isArray(lineItems) ? lineItems.map((item) => buildPayload(item, LINE_ITEM_FIELDS)) : []);

/** Copies every value found, null included (RudderStack drops the customer's nulls afterwards, not the address's). */
function copyFound(into: Json, from: unknown, spec: KeySpec): void {
  for (const [source, dest] of spec) {
    const value = getPath(from, source);
    if (value !== undefined) setPath(into, dest, value);
  }
}

function ecomMessage(body: Json, topic: string): Json {
  const message: Json = { ...newMessage(INTEGRATION), type: "track", event: ECOM_EVENTS[topic] };
  const lineItems = body.line_items;
  if (Array.isArray(lineItems) && lineItems.length > 0) {
    const properties = buildPayload(body, ORDER_FIELDS);
    // An update's total is not a new value to count.
    if (topic === "orders_updated" || topic === "checkouts_update") delete properties.value;
    properties.products = productsOf(lineItems);
    message.properties = dropNulls(properties);
  } else {
    message.properties = {};
  }
  let traits: Json = {};
  if (body.customer) {
    copyFound(traits, body.customer, CUSTOMER_TRAITS);
    const id = getPath(body.customer, "id");
    if (id) message.userId = id;
    traits = dropNulls(traits);
  }
  const timestamp = isoTime(body.updated_at);
  if (timestamp) message.timestamp = timestamp;
  if (body.shipping_address) copyFound(traits, body.shipping_address, ADDRESS_TRAITS);
  message.context.traits = traits;
  return message;
}

function genericMessage(body: Json, topic: string): Json {
  return { ...newMessage(INTEGRATION), type: "track", event: TRACK_EVENTS[topic], properties: { products: productsOf(body.line_items) } };
}

function noteAnonymousId(body: Json): unknown {
  if (!Array.isArray(body.note_attributes)) return null;
  const attribute = body.note_attributes.find((a: unknown) => isObject(a) && a.name === "rudderAnonymousId");
  return attribute ? attribute.value : null;
}

/** The identify that goes with an event of a known shopper: the same ids and traits. */
function identifyOf(message: Json): Json {
  const identify: Json = { ...newMessage(INTEGRATION), type: "identify" };
  if (message.userId) identify.userId = message.userId;
  if (message.anonymousId) identify.anonymousId = message.anonymousId;
  identify.context.traits = dropNulls(structuredClone(message.context.traits ?? {}));
  identify.integrations[INTEGRATION] = true;
  identify.context.library = { eventOrigin: "server", name: "RudderStack Shopify Cloud", version: "2.0.0" };
  return identify;
}

export async function pixelAppWebhook(body: Json, topic: string, ctx: MapContext): Promise<MapResult> {
  let message: Json;
  if (Object.hasOwn(ECOM_EVENTS, topic)) message = ecomMessage(body, topic);
  else if (isGenericTopic(topic)) message = genericMessage(body, topic);
  else return OK_ANSWER;

  // The browser: the storefront's note attribute, else whose the web pixel said the cart token
  // was, else the token's hash (the webhook came before the pixel's call), else a random id.
  // None of the state calls here is tolerant: RudderStack fails the request when one fails.
  const cartToken = body.cart_token || null;
  const fromNote = noteAnonymousId(body);
  if (isSet(fromNote)) message.anonymousId = fromNote;
  else if (cartToken) {
    const stored = await ctx.state.get(`pixel:${cartToken}`);
    message.anonymousId = stored?.anonymousId || uuidV5(String(cartToken), PIXEL_NAMESPACE);
  }
  if (!message.anonymousId) message.anonymousId = ctx.uuid();

  // A customer known here is the browser's user for the web pixel's later events too.
  if (message.anonymousId && message.userId) {
    await ctx.state.set(`pixel:${message.anonymousId}`, redisFields({ userId: message.userId }), USER_ID_TTL_SECONDS);
  }

  if (!getPath(message, "context.traits.email")) {
    const email = emailInPayload(body);
    if (email) setPath(message, "context.traits.email", email);
  }
  message.integrations[INTEGRATION] = true;
  message.context.library = { eventOrigin: "server", name: "RudderStack Shopify Cloud", version: "2.0.0" };
  message.context.topic = topic;
  if (body.cart_token !== undefined) message.context.cart_token = body.cart_token;
  if (body.checkout_token !== undefined) message.context.checkout_token = body.checkout_token;
  message.context.shopifyDetails = body;
  if (topic === "orders_updated" && body.token !== undefined) message.context.order_token = body.token;
  message.integrations.DATA_WAREHOUSE = { options: { jsonPaths: [`${message.type}.context.shopifyDetails`] } };
  if (cartToken) {
    const traits: Json = { ...(message.context.traits ?? {}) };
    setOwn(traits, "cart_token_hash", uuidV5(String(cartToken), PIXEL_NAMESPACE));
    message.context.traits = traits;
  }

  const known = await ctx.state.get(`pixel:${message.anonymousId}`);
  if (isPresent(known)) message.userId = known!.userId;
  if (message.userId) message.userId = String(message.userId);

  const event = dropNulls(message);
  // A known shopper (a userId, or a customer on the order) also gets an identify.
  if (event.userId || body.customer) return { events: [event, identifyOf(event)] };
  return { events: [event] };
}
