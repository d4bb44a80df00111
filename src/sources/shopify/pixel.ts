/**
 * RudderStack's Shopify pixel app, browser side: the web pixel posts Shopify's standard customer
 * events (`page_viewed`, `product_added_to_cart`, `checkout_completed`, ...) marked with
 * `pixelEventLabel`, and identifier calls that tie a cart token or a userId to the browser's
 * clientId.
 */
import { getPath, setPath } from "../common";
import type { MapContext, MapResult } from "../types";
import { setOwn } from "../../lib/safe-keys";
import { INTEGRATION, OK_ANSWER, dropNulls, dropUndefined, isObject, isPresent, isSet, mapKeys, redisFields, setTolerant, type Json, type KeySpec } from "./util";

/** How long RudderStack keeps a cart token's anonymousId, and an anonymousId's userId. */
export const CART_TOKEN_TTL_SECONDS = 12 * 3600;
export const USER_ID_TTL_SECONDS = 24 * 3600;

const EVENT_NAMES: Record<string, string> = {
  cart_viewed: "Cart Viewed",
  product_added_to_cart: "Product Added",
  product_removed_from_cart: "Product Removed",
  page_viewed: "Page Viewed",
  product_viewed: "Product Viewed",
  collection_viewed: "Collection Viewed",
  checkout_started: "Checkout Started",
  checkout_completed: "Order Completed",
  checkout_address_info_submitted: "Checkout Address Info Submitted",
  checkout_contact_info_submitted: "Checkout Contact Info Submitted",
  checkout_shipping_info_submitted: "Checkout Shipping Info Submitted",
  payment_info_submitted: "Payment Info Entered",
  search_submitted: "Search Submitted",
};

/**
 * The page, user agent and screen, from the event's context (Shopify's `document`, `navigator`,
 * `window`). RudderStack looks for the referrer at `context.context.document.referrer`, which
 * Shopify never sends, so the referrer is left out as it leaves it out.
 */
const CONTEXT_FIELDS: KeySpec = [
  ["context.document.referrer", "page.referrer"],
  ["document.title", "page.title"],
  ["navigator.userAgent", "userAgent"],
  ["window.location.href", "page.url"],
  ["window.location.pathname", "page.path"],
  ["window.location.search", "page.search"],
  ["window.screen.height", "screen.height"],
  ["window.screen.width", "screen.width"],
];

/** A product variant (Shopify's ProductVariant) as an ecommerce product. */
const VARIANT_FIELDS: KeySpec = [
  ["product.id", "product_id"],
  ["product.title", "variant"],
  ["image.src", "image_url"],
  ["price.amount", "price"],
  ["product.type", "category"],
  ["product.url", "url"],
  ["product.vendor", "brand"],
  ["sku", "sku"],
  ["title", "name"],
];
const under = (prefix: string, spec: KeySpec): KeySpec => spec.map(([s, d]) => [`${prefix}.${s}`, d] as const);

/** A cart line: its merchandise is a variant. */
const CART_LINE_FIELDS: KeySpec = [...under("merchandise", VARIANT_FIELDS), ["quantity", "quantity"]];
/** A checkout line item: named by its own title, the rest from its variant. */
const CHECKOUT_LINE_FIELDS: KeySpec = [["quantity", "quantity"], ["title", "name"], ...under("variant", VARIANT_FIELDS.filter(([s]) => s !== "title"))];
/** product_viewed's product: its image and name are the product's, not the variant's. */
const VIEWED_PRODUCT_FIELDS: KeySpec = [
  ["productVariant.product.id", "product_id"],
  ["productVariant.product.title", "variant"],
  ["productVariant.product.vendor", "brand"],
  ["productVariant.product.type", "category"],
  ["productVariant.product.image.src", "image_url"],
  ["productVariant.price.amount", "price"],
  ["productVariant.price.currencyCode", "currency"],
  ["productVariant.product.url", "url"],
  ["productVariant.sku", "sku"],
  ["productVariant.product.title", "name"],
  ["cartLine.quantity", "quantity"],
];

const CAMPAIGN_FIELDS: Record<string, string> = { utm_campaign: "name", utm_medium: "medium", utm_term: "term", utm_content: "content" };

const CHECKOUT_STEPS = new Set(["checkout_address_info_submitted", "checkout_contact_info_submitted", "checkout_shipping_info_submitted", "payment_info_submitted"]);

const listOf = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** The campaign of the page's URL: its utm_ parameters, the four usual ones renamed, the others without the prefix. */
function campaignOf(context: unknown): Json | undefined {
  const href = getPath(context, "document.location.href");
  if (!href || typeof href !== "string") return undefined;
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return undefined;
  }
  const campaign: Json = {};
  for (const [param, field] of Object.entries(CAMPAIGN_FIELDS)) {
    const value = url.searchParams.get(param);
    if (value !== null) campaign[field] = value;
  }
  url.searchParams.forEach((value, key) => {
    if (key.startsWith("utm_") && !Object.hasOwn(CAMPAIGN_FIELDS, key)) setOwn(campaign, key.slice(4), value);
  });
  return Object.keys(campaign).length > 0 ? campaign : undefined;
}

/**
 * The cart token of an event that names one, as the 4th segment of a path: the checkout page's
 * (`/checkouts/cn/<token>`), the token the store's webhooks carry as `cart_token`. RudderStack
 * looks for cart_viewed's at `properties.cart_id`, which Shopify's event does not have (its cart
 * is `data.cart.id`), so in practice only checkout events store one.
 */
const CART_TOKEN_PATHS: Record<string, string> = {
  cart_viewed: "properties.cart_id",
  checkout_started: "context.document.location.pathname",
  checkout_completed: "context.document.location.pathname",
  checkout_address_info_submitted: "context.document.location.pathname",
  checkout_contact_info_submitted: "context.document.location.pathname",
  checkout_shipping_info_submitted: "context.document.location.pathname",
  payment_info_submitted: "context.document.location.pathname",
};

function cartTokenOf(body: Json): unknown {
  const where = CART_TOKEN_PATHS[body.name];
  const path = where ? getPath(body, where) : undefined;
  return typeof path === "string" ? path.split("/")[3] : undefined;
}

/** The event's type, name and properties; undefined for an event this app does not map. */
function eventBody(body: Json): { type: "track" | "page"; name: string; properties: unknown; email?: boolean } | undefined {
  const data: Json = isObject(body.data) ? body.data : {};
  const name = EVENT_NAMES[body.name];
  switch (body.name) {
    case "page_viewed":
      return { type: "page", name: "Page View", properties: mapKeys(body.context, CONTEXT_FIELDS).page };
    case "cart_viewed": {
      const lines = listOf(getPath(data, "cart.lines"));
      return {
        type: "track",
        name: name!,
        properties: dropUndefined({
          products: lines.map((line) => mapKeys(line, CART_LINE_FIELDS)),
          cart_id: getPath(data, "cart.id"),
          // The cart's total, as RudderStack takes it: the last line's.
          total: lines.length ? getPath(lines[lines.length - 1], "cost.totalAmount.amount") : undefined,
        }),
      };
    }
    case "collection_viewed":
      return {
        type: "track",
        name: "Product List Viewed",
        properties: dropUndefined({
          cart_id: body.clientId,
          list_id: body.id,
          products: listOf(getPath(data, "collection.productVariants")).map((v) => mapKeys(v, VARIANT_FIELDS)),
        }),
      };
    case "product_viewed":
      return { type: "track", name: name!, properties: mapKeys(data, VIEWED_PRODUCT_FIELDS) };
    case "product_added_to_cart":
    case "product_removed_from_cart":
      return { type: "track", name: name!, properties: mapKeys(data, under("cartLine", CART_LINE_FIELDS)) };
    case "checkout_started":
    case "checkout_completed": {
      const checkout = getPath(data, "checkout");
      const amount = (path: string) => getPath(checkout, `${path}.amount`);
      return {
        type: "track",
        name: name!,
        email: true,
        properties: dropUndefined(
          dropNulls({
            products: listOf(getPath(checkout, "lineItems")).map((item) => mapKeys(item, CHECKOUT_LINE_FIELDS)),
            order_id: getPath(checkout, "order.id"),
            checkout_id: getPath(checkout, "token"),
            total: amount("totalPrice"),
            currency: getPath(checkout, "currencyCode"),
            discount: amount("discountsAmount"),
            shipping: amount("shippingLine.price"),
            revenue: amount("subtotalPrice"),
            value: amount("totalPrice"),
            tax: amount("totalTax"),
          }),
        ),
      };
    }
    case "search_submitted":
      return { type: "track", name: name!, properties: dropUndefined({ query: getPath(data, "searchResult.query") }) };
    default:
      if (CHECKOUT_STEPS.has(body.name)) return { type: "track", name: name!, email: true, properties: dropUndefined({ checkout_id: getPath(data, "checkout.token") }) };
      return undefined;
  }
}

export async function pixelEvent(body: Json, ctx: MapContext): Promise<MapResult> {
  const mapped = eventBody(body);
  if (!mapped) return OK_ANSWER;

  // Remember whose browser a cart token is, for the store's webhooks (server.ts). RudderStack
  // does not wait for this write and survives its failure.
  const cartToken = cartTokenOf(body);
  if (isPresent(body.clientId) && isPresent(cartToken)) {
    await setTolerant(ctx.state, `pixel:${cartToken}`, { anonymousId: body.clientId }, CART_TOKEN_TTL_SECONDS);
  }

  const details: Json = { ...body };
  delete details.query_parameters;
  delete details.pixelEventLabel;

  const context: Json = mapKeys(body.context, CONTEXT_FIELDS);
  if (mapped.email && isPresent(getPath(body.data, "checkout.email"))) setPath(context, "traits.email", getPath(body.data, "checkout.email"));
  context.library = { name: "RudderStack Shopify Cloud", eventOrigin: "client", version: "2.0.0" };
  context.topic = body.name;
  context.shopifyDetails = details;
  const campaign = campaignOf(body.context);
  if (campaign) context.campaign = campaign;

  const message: Json = {
    type: mapped.type,
    ...(mapped.type === "page" ? { name: mapped.name } : { event: mapped.name }),
    properties: mapped.properties,
    context,
    integrations: { [INTEGRATION]: true, DATA_WAREHOUSE: { options: { jsonPaths: [`${mapped.type}.context.shopifyDetails`] } } },
    anonymousId: body.clientId,
    messageId: body.id,
    timestamp: body.timestamp,
  };
  // A userId the store told about this browser (a checkout's customer, below and in server.ts).
  // Not tolerant: RudderStack fails the request when it cannot read it.
  if (isSet(body.clientId)) {
    const known = await ctx.state.get(`pixel:${body.clientId}`);
    if (isPresent(known)) message.userId = known!.userId;
  }
  return { events: [dropNulls(message)] };
}

/** The pixel's identifier call: not an event, a cart token's or a userId's tie to the browser. */
export function isPixelIdentifier(body: Json): boolean {
  return body.event === "rudderIdentifier";
}

export async function pixelIdentifier(body: Json, ctx: MapContext): Promise<MapResult> {
  const { cartToken, anonymousId, userId, action } = body;
  if (cartToken && anonymousId && action === "stitchCartTokenToAnonId") {
    // Not tolerant: RudderStack fails the request when it cannot store this.
    await ctx.state.set(`pixel:${cartToken}`, redisFields({ anonymousId }), CART_TOKEN_TTL_SECONDS);
  }
  // RudderStack does not wait for this write, so its failure never reaches the answer.
  if (action === "stitchUserIdToAnonId" && anonymousId && userId) await setTolerant(ctx.state, `pixel:${anonymousId}`, { userId }, USER_ID_TTL_SECONDS);
  return OK_ANSWER;
}
