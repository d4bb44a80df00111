/**
 * RudderStack's legacy Shopify app ("tracker"): store webhooks named by their topic become
 * identify (customers) or track events; the storefront's identifier calls tie a cart token to
 * the browser's anonymousId and session, kept in state under the bare cart token.
 */
import { copyFields, newMessage, setPath } from "../common";
import type { MapContext, MapResult } from "../types";
import {
  INTEGRATION,
  OK_ANSWER,
  URL_NAMESPACE,
  buildPayload,
  copyOtherFields,
  dropNulls,
  emailInPayload,
  getTolerant,
  isObject,
  isSet,
  isoTime,
  redisFields,
  setTolerant,
  sha256Hex,
  uuidV5,
  type Json,
  type PayloadSpec,
} from "./util";

/** RudderStack's Redis expiry for what this app keeps (REDIS_EXPIRY_TIME_IN_SEC's default). */
const CART_TTL_SECONDS = 3600;
/** A cart created and updated within this many ms with no items is Shopify's own empty cart, not a shopper's update. */
const EMPTY_CART_WINDOW_MS = 10_000;

const IDENTIFY_TOPICS = new Set(["customers_create", "customers_update"]);

const ECOM_EVENTS: Record<string, string> = {
  checkouts_create: "Checkout Started",
  checkouts_update: "Checkout Updated",
  orders_updated: "Order Updated",
  orders_create: "Order Created",
};

/** The other topics this app turns into track events, and their names. */
export const TRACK_EVENTS: Record<string, string> = {
  checkouts_delete: "Checkout Deleted",
  carts_update: "Cart Update",
  customers_enable: "Customer Enabled",
  customers_disable: "Customer Disabled",
  fulfillments_create: "Fulfillments Create",
  fulfillments_update: "Fulfillments Update",
  orders_delete: "Order Deleted",
  orders_edited: "Order Edited",
  orders_cancelled: "Order Cancelled",
  orders_fulfilled: "Order Fulfilled",
  orders_paid: "Order Paid",
  orders_partially_fulfilled: "Order Partially Fulfilled",
  customer_tags_added: "Customer Tags Added",
  customer_tags_removed: "Customer Tags Removed",
  customer_email_updated: "Customer Email Updated",
  collections_create: "Collection Created",
  collections_update: "Collection Updated",
  collections_delete: "Collection Deleted",
  collection_listings_add: "Collection Listings Added",
  collection_listings_remove: "Collection Listings Removed",
  collection_listings_update: "Collection Listings Updated",
  collection_publications_create: "Collection Publications Created",
  collection_publications_delete: "Collection Publications Deleted",
  collection_publications_update: "Collection Publications Updated",
  discounts_create: "Discount Created",
  discounts_delete: "Discount Deleted",
  discounts_update: "Discount Updated",
  discounts_redeemcode_added: "Discount Redeemcode Added",
  discounts_redeemcode_removed: "Discount Redeemcode Removed",
  draft_orders_create: "Draft Order Created",
  draft_orders_delete: "Draft Order Deleted",
  draft_orders_update: "Draft Order Updated",
  fulfillment_orders_split: "Fulfillment Orders Split",
  inventory_items_create: "Inventory Items Created",
  inventory_items_delete: "Inventory Items Deleted",
  inventory_items_update: "Inventory Items Updated",
  inventory_levels_connect: "Inventory Levels Connected",
  inventory_levels_disconnect: "Inventory Levels Disconnected",
  inventory_levels_update: "Inventory Levels Updated",
};

/** Events only the store's admin causes: without a cart token they get the `shopify-admin` user rather than a random anonymousId. */
const ADMIN_ONLY_EVENTS = new Set(["Order Deleted", "Fulfillments Create", "Fulfillments Update"]);

/**
 * A customer's fields as identify traits: most keep their name in camelCase; a few are renamed.
 * The customer id is the userId.
 */
const CUSTOMER_TRAITS: ReadonlyArray<readonly [string, string]> = [
  ["id", "userId"],
  ...[
    "email", "first_name", "last_name", "phone", ["addresses", "addressList"], ["default_address", "address"], "shipping_address", "billing_address",
    "accepts_marketing", ["orders_count", "orderCount"], "state", "total_spent", "note", "verified_email", "multipass_identifier", "tax_exempt", "tags",
    "last_order_name", "currency", "marketing_opt_in_level", "tax_exemptions", "sms_marketing_consent", "admin_graphql_api_id", "accepts_marketing_updated_at",
  ].map((f) => (Array.isArray(f) ? ([f[0]!, `traits.${f[1]}`] as const) : ([f, `traits.${camel(f)}`] as const))),
];

function camel(snake: string): string {
  return snake.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** An order's or checkout's summary fields. */
const ORDER_FIELDS: PayloadSpec = [["id", "order_id"], ["total_price", "value"], ["total_tax", "tax"], ["currency", "currency"]];
const ORDER_FIELDS_KEPT_APART = new Set(["id", "total_price", "total_tax", "currency", "line_items", "customer", "shipping_address", "billing_address"]);

/** A line item as a product: these fields are renamed, every other one is kept as it is. */
const LINE_ITEM_FIELDS: PayloadSpec = [["product_id", "product_id"], ["sku", "sku"], ["name", "title"], ["price", "price"], ["vendor", "brand"], ["quantity", "quantity"]];
const LINE_ITEM_FIELDS_KEPT_APART = new Set(["product_id", "sku", "name", "price", "vendor", "quantity", "variant_id", "variant_price", "variant_title"]);

/** Fields a generic track event does not copy into its properties (they go elsewhere or nowhere). */
const TRACK_FIELDS_KEPT_APART = new Set(["type", "event", "line_items", "customer", "shipping_address", "billing_address"]);

function productsOf(lineItems: unknown): Json[] {
  if (!Array.isArray(lineItems)) return [];
  return lineItems.filter(isObject).map((item) => {
    const product = copyOtherFields(buildPayload(item, LINE_ITEM_FIELDS), item, LINE_ITEM_FIELDS_KEPT_APART);
    product.variant = `${item.variant_id || ""} ${item.variant_price || ""} ${item.variant_title || ""}`;
    return product;
  });
}

/** The customer as userId and traits, the addresses as traits (overriding the customer's), and the order's user_id as a last resort. */
function addCustomerAndAddresses(message: Json, body: Json): void {
  if (isObject(body.customer)) copyFields(message, body.customer, CUSTOMER_TRAITS);
  if (body.shipping_address) setPath(message, "traits.shippingAddress", body.shipping_address);
  if (body.billing_address) setPath(message, "traits.billingAddress", body.billing_address);
  if (!message.userId && body.user_id) message.userId = body.user_id;
}

function identifyMessage(body: Json): Json {
  const message: Json = { ...newMessage(INTEGRATION), type: "identify" };
  copyFields(message, body, CUSTOMER_TRAITS);
  const timestamp = isoTime(body.updated_at);
  if (timestamp) message.timestamp = timestamp;
  return message;
}

function ecomMessage(body: Json, topic: string): Json {
  const message: Json = { ...newMessage(INTEGRATION), type: "track", event: ECOM_EVENTS[topic] };
  const properties = copyOtherFields(buildPayload(body, ORDER_FIELDS), body, ORDER_FIELDS_KEPT_APART);
  properties.products = productsOf(body.line_items);
  message.properties = dropNulls(properties);
  const timestamp = isoTime(body.updated_at);
  if (timestamp) message.timestamp = timestamp;
  addCustomerAndAddresses(message, body);
  return message;
}

function trackMessage(body: Json, topic: string): Json {
  const message: Json = { ...newMessage(INTEGRATION), type: "track", event: TRACK_EVENTS[topic] };
  message.properties = copyOtherFields({}, body, TRACK_FIELDS_KEPT_APART);
  message.properties.products = productsOf(body.line_items);
  addCustomerAndAddresses(message, body);
  return message;
}

/** The value of a note attribute (`[{name, value}]`, what the storefront script adds to the cart). */
function noteAttribute(attributes: unknown, name: string): unknown {
  if (!Array.isArray(attributes)) return undefined;
  return attributes.find((a) => isObject(a) && a.name === name)?.value;
}

/**
 * The anonymousId and sessionId of a non-identify event: from the cart's note attributes when
 * both are there, else from what the storefront stored for the cart token, else the token's
 * hash. An event without a cart token gets a random anonymousId, unless only the admin causes it.
 */
async function browserIds(message: Json, ctx: MapContext, cart: Record<string, unknown> | null): Promise<{ anonymousId?: unknown; sessionId?: unknown }> {
  const props: Json = message.properties ?? {};
  let anonymousId = noteAttribute(props.note_attributes, "rudderAnonymousId");
  let sessionId = noteAttribute(props.note_attributes, "rudderSessionId");
  if (isSet(anonymousId) && isSet(sessionId)) return { anonymousId, sessionId };

  const cartToken = message.event === TRACK_EVENTS.carts_update ? props.id || props.token : props.cart_token || null;
  if (!isSet(cartToken)) {
    if (ADMIN_ONLY_EVENTS.has(message.event)) return { anonymousId, sessionId };
    return { anonymousId: isSet(anonymousId) ? anonymousId : ctx.uuid(), sessionId };
  }
  const stored = cart ?? (await getTolerant(ctx.state, String(cartToken)));
  anonymousId = stored?.anonymousId;
  sessionId = stored?.sessionId;
  if (!isSet(anonymousId)) anonymousId = uuidV5(String(cartToken), URL_NAMESPACE);
  return { anonymousId, sessionId };
}

const itemsHash = (lineItems: unknown) => (Array.isArray(lineItems) && lineItems.length > 0 ? sha256Hex(JSON.stringify(lineItems)) : "EMPTY");

/**
 * Shopify posts carts/update for every change of a cart, the storefront's own included. An
 * update whose items hash the same as the last one seen is a repeat; without a stored hash, a
 * cart with no items updated within seconds of its creation is Shopify creating it. Both are
 * dropped (RudderStack answers OK). Otherwise the new hash is stored.
 */
async function isNewCartUpdate(body: Json, ctx: MapContext, cart: Record<string, unknown> | null): Promise<boolean> {
  const cartToken = body.token || body.id;
  const stored = cart ?? (await getTolerant(ctx.state, String(cartToken)));
  if (isSet(stored?.itemsHash)) {
    const hash = itemsHash(body.line_items);
    if (hash === stored!.itemsHash) return false;
    await setTolerant(ctx.state, String(cartToken), { itemsHash: hash }, CART_TTL_SECONDS);
    return true;
  }
  const sinceCreation = Date.parse(body.updated_at) - Date.parse(body.created_at);
  return !(sinceCreation < EMPTY_CART_WINDOW_MS && Array.isArray(body.line_items) && body.line_items.length === 0);
}

/** The storefront's identifier calls: which anonymousId (and items) or session a cart token belongs to. */
export function isTrackerIdentifier(body: Json): boolean {
  return body.event === "rudderIdentifier" || body.event === "rudderSessionIdentifier";
}

export async function trackerIdentifier(body: Json, ctx: MapContext): Promise<MapResult> {
  const cartToken = typeof body.cartToken === "string" ? body.cartToken.split("?")[0] : body.cartToken;
  // RudderStack would store under the key "undefined"; a call without a token has nothing to tie.
  if (!isSet(cartToken) || cartToken === "") return OK_ANSWER;
  const fields = body.event === "rudderIdentifier" ? { anonymousId: body.anonymousId, itemsHash: itemsHash(body.cart?.line_items) } : { sessionId: body.sessionId };
  // Not tolerant: RudderStack answers 500 when it cannot store this, so the storefront retries.
  await ctx.state.set(String(cartToken), redisFields(fields), CART_TTL_SECONDS);
  return OK_ANSWER;
}

export function isTrackerTopic(topic: string): boolean {
  return IDENTIFY_TOPICS.has(topic) || topic in ECOM_EVENTS || topic in TRACK_EVENTS;
}

export async function trackerWebhook(body: Json, topic: string, ctx: MapContext): Promise<MapResult> {
  if (!isTrackerTopic(topic)) return OK_ANSWER;

  let cart: Record<string, unknown> | null = null;
  if (topic === "carts_update") {
    cart = await getTolerant(ctx.state, String(body.id || body.token));
    if (!(await isNewCartUpdate(body, ctx, cart))) return OK_ANSWER;
  }

  const message = IDENTIFY_TOPICS.has(topic) ? identifyMessage(body) : topic in ECOM_EVENTS ? ecomMessage(body, topic) : trackMessage(body, topic);
  if (message.userId) message.userId = String(message.userId);
  if (!message.traits?.email) {
    const email = emailInPayload(body);
    if (email) setPath(message, "traits.email", email);
  }
  if (message.type !== "identify") {
    const { anonymousId, sessionId } = await browserIds(message, ctx, cart);
    if (isSet(anonymousId)) message.anonymousId = anonymousId;
    else if (!message.userId) message.userId = "shopify-admin";
    if (isSet(sessionId)) message.context.sessionId = sessionId;
  }
  message.integrations[INTEGRATION] = true;
  message.context.library = { name: "RudderStack Shopify Cloud", version: "1.0.0" };
  message.context.topic = topic;
  if (body.cart_token !== undefined) message.context.cart_token = body.cart_token;
  if (body.checkout_token !== undefined) message.context.checkout_token = body.checkout_token;
  if (topic === "orders_updated" && body.token !== undefined) message.context.order_token = body.token;
  return { events: [dropNulls(message)] };
}
