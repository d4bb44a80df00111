/**
 * BRAZE: Braze's REST API (Bearer restApiKey) on the instance named by dataCenter — user
 * attributes, custom events and purchases through /users/track, merges through /users/merge,
 * subscription groups, and /users/delete. The transform itself calls /users/identify (identity
 * resolution) and, with supportDedup, /users/export/ids (lookups.ts), as RudderStack's does.
 */
import { ownValue } from "../../lib/safe-keys";
import { endpointFor } from "../base-url";
import { chunkItems, compact, firstPresent, getPath, isDefined, isEventAllowed } from "../shared";
import { type DestinationContext, type DestinationDefinition, type DestinationRequest, type SluiceEvent, TransformError, configKeys, configOf, restRequest } from "../types";
import { isMappedToDestination, userAttributes } from "./attributes";
import { PARTNER, batchBraze } from "./batch";
import { BrazeConfig } from "./config";
import { DUPLICATE_USER, knownUser, reduceAttributes, rememberOrigin } from "./dedup";
import { ecommerceEventFor, ecommerceProperties } from "./ecommerce";
import { externalIdOf, integrationsOptions, userAliasOf, withExternalId, withUserIdentifier } from "./identity";
import { type Service, exportedUsers, mergeAlias } from "./lookups";

export { BrazeConfig };

type Obj = Record<string, any>;
type Call = (path: string, json: Obj) => DestinationRequest;

/** Braze's /users/delete takes at most 50 external ids. */
const DELETE_MAX = 50;

/** The REST endpoint of a Braze instance: US-0N → rest.iad-0N.braze.com, EU-0N → rest.fra-0N.braze.eu, AU-0N → rest.au-0N.braze.com. */
export function brazeBaseUrl(dataCenter: unknown): string {
  // RudderStack's own message for a missing data center, not the generic missing-key one.
  if (!dataCenter || typeof dataCenter !== "string") throw new TransformError("Invalid Data Center: valid values are EU, US, AU");
  const [region, number] = dataCenter.trim().toLowerCase().split("-");
  const hosts: Record<string, string> = { us: `iad-${number}.braze.com`, eu: `fra-${number}.braze.eu`, au: `au-${number}.braze.com` };
  // Own keys only: a data center `constructor-01` must not find Object's constructor.
  const host = ownValue(hosts, region ?? "");
  if (!host || !number) throw new TransformError(`Invalid Data Center: ${dataCenter}, valid values are EU, US, AU`);
  return `https://rest.${host}`;
}

/** The restApiKey, refused with RudderStack's own message when missing (never sent as "Bearer undefined"). */
function restApiKeyOf(ctx: DestinationContext): string {
  const key = configOf(ctx, BrazeConfig).restApiKey;
  if (key === undefined || key === null || key === "") throw new TransformError("Rest API Key not found. Aborting");
  return String(key);
}

/** Product keys Braze's purchase object has fields for; the rest can go in its properties. */
const PURCHASE_FIELDS = ["product_id", "sku", "price", "quantity", "currency"];
/** Braze reserves these names in custom event properties. */
const RESERVED_EVENT_PROPERTIES = ["time", "event_name"];

/** One purchase object per product of an Order Completed event. */
function purchases(event: SluiceEvent, config: BrazeConfig): Obj[] {
  const fail = (why: string) => new TransformError(`Invalid Order Completed event: ${why}`);
  const props: Obj = event.properties || {};
  const timestamp = firstPresent(event, ["timestamp", "originalTimestamp"]);
  if (!props.products) throw fail("Products array is missing in the message");
  if (!Array.isArray(props.products)) throw fail("Products is not an array");
  const products: Obj[] = props.products.filter(isDefined);
  if (products.length === 0) throw fail("Products array is empty");
  if (!timestamp) throw fail("Timestamp is missing in the message");
  products.forEach((product, i) => {
    if (!isDefined(product.product_id || product.sku)) throw fail(`Product Id is missing for product at index: ${i}`);
    if (!isDefined(product.price)) throw fail(`Price is missing for product at index: ${i}`);
    if (!isDefined(product.quantity)) throw fail(`Quantity is missing for product at index: ${i}`);
    if (!isDefined(props.currency) && !isDefined(product.currency)) throw fail(`Message properties and product at index: ${i} is missing currency`);
  });
  return products.map((product) => {
    const purchase: Obj = {
      product_id: String(product.product_id || product.sku),
      price: parseFloat(String(product.price)),
      currency: String(props.currency || product.currency),
      quantity: parseInt(String(product.quantity), 10),
      time: timestamp,
    };
    const extra = Object.fromEntries(Object.entries(product).filter(([k]) => !PURCHASE_FIELDS.includes(k)));
    if (config.sendPurchaseEventWithExtraProperties && Object.keys(extra).length > 0) purchase.properties = extra;
    return withUserIdentifier(purchase, event);
  });
}

function customEventProperties(event: SluiceEvent): Obj {
  const props = event.properties || {};
  if (typeof props !== "object") throw new TransformError("Invalid event properties");
  return Object.fromEntries(Object.entries(props).filter(([k]) => !RESERVED_EVENT_PROPERTIES.includes(k)));
}

/**
 * track, page and screen: the traits as attributes, plus purchases for a track "Order
 * Completed", a recommended ecommerce event when enabled, or else a custom event.
 */
function trackBody(event: SluiceEvent, name: string | undefined, config: BrazeConfig): Obj {
  const body: Obj = { partner: PARTNER };
  const attributes = userAttributes(event, config);
  if (Object.keys(attributes).length > 0) body.attributes = [withUserIdentifier(attributes, event)];
  const isTrack = event.type === "track";
  const ecommerce = isTrack && config.useEcommerceRecommendedEvents ? ecommerceEventFor(name) : undefined;
  if (!ecommerce && isTrack && typeof name === "string" && name.toLowerCase() === "order completed") return { ...body, purchases: purchases(event, config) };

  const properties = ecommerce ? ecommerceProperties(event, ecommerce) : customEventProperties(event);
  const brazeEvent = withUserIdentifier(compact({ name: ecommerce?.name ?? name, time: event.timestamp, properties }), event);
  const appId = integrationsOptions(event)?.appId;
  if (appId) brazeEvent.app_id = String(appId);
  return { ...body, events: [brazeEvent] };
}

/**
 * With supportDedup, a track's (page's, screen's) attributes reduced to what Braze does not
 * already hold of the user: none left, the body goes without them (its event or purchases still
 * go).
 */
async function deduplicated(body: Obj, event: SluiceEvent, config: BrazeConfig, service: Service): Promise<Obj> {
  if (!config.supportDedup || !Array.isArray(body.attributes)) return body;
  const whole = body.attributes[0];
  const known = knownUser(await exportedUsers(service, event), whole);
  const kept = reduceAttributes(whole, known);
  const { attributes: _whole, ...rest } = body;
  const json = kept ? { ...body, attributes: [kept] } : rest;
  rememberOrigin(json, whole, known);
  return json;
}

/**
 * identify: the attributes on /users/track. A user with an anonymousId (or an alias option) and
 * an external id first has that alias merged into the external id by a call of its own, as
 * RudderStack makes it, before the attributes are checked: an identify refused for its
 * attributes has still merged. With supportDedup, an identify that would update nothing is
 * refused in RudderStack's words.
 */
async function identify(event: SluiceEvent, config: BrazeConfig, service: Service, call: Call): Promise<DestinationRequest[]> {
  // Reverse ETL identifies name their user in context.externalId.
  const mappedId = isMappedToDestination(event) ? getPath(event, "context.externalId.0.id") : undefined;
  const ev: SluiceEvent = mappedId ? { ...event, userId: mappedId } : event;
  let attributes: Obj = {};
  let refusal: unknown;
  try {
    attributes = userAttributes(ev, config);
  } catch (err) {
    refusal = err;
  }
  const hasAttributes = Object.keys(attributes).length > 0;
  // RudderStack's router asks Braze about a batch's users before anything else, by the events as they came.
  const users = config.supportDedup && hasAttributes ? await exportedUsers(service, event) : undefined;
  if ((ev.anonymousId || isDefined(integrationsOptions(ev)?.alias)) && externalIdOf(ev)) {
    const alias = userAliasOf(ev);
    await mergeAlias(service, withExternalId(alias ? { user_alias: alias } : {}, ev));
  }
  if (refusal) throw refusal;
  if (!hasAttributes) throw new TransformError("No attributes found to update the user profile");
  const identified = withUserIdentifier(attributes, ev);
  if (!config.supportDedup) return [call("/users/track", { attributes: [identified] })];
  const known = knownUser(users, identified);
  const kept = reduceAttributes(identified, known);
  if (!kept) throw new TransformError(DUPLICATE_USER);
  const json = { attributes: [kept] };
  rememberOrigin(json, identified, known);
  return [call("/users/track", json)];
}

/** group: a subscription state change when enabled, else an `ab_rudder_group_<id>` attribute. */
function group(event: SluiceEvent, config: BrazeConfig, call: Call) {
  const groupId = firstPresent(event, ["groupId", "traits.groupId"]);
  if (!groupId) throw new TransformError("Invalid groupId");
  if (!config.enableSubscriptionGroupInGroupCall) {
    const attribute = withExternalId({ [`ab_rudder_group_${groupId}`]: true }, event);
    return [call("/users/track", { attributes: [attribute], partner: PARTNER })];
  }
  const traits = event.traits;
  if (!(traits && (traits.phone || traits.email))) throw new TransformError("Message should have traits with subscriptionState, email or phone");
  if (traits.subscriptionState !== "subscribed" && traits.subscriptionState !== "unsubscribed") {
    throw new TransformError("you must provide a subscription state in traits and possible values are subscribed and unsubscribed.");
  }
  const subscription: Obj = { subscription_group_id: groupId, subscription_state: traits.subscriptionState };
  if (event.userId) subscription.external_ids = [event.userId];
  const phone = firstPresent(event, ["traits.phone", "context.traits.phone", "properties.phone"]);
  const email = firstPresent(event, ["traits.email", "context.traits.email", "properties.email", "context.externalId.0.id"]);
  // Braze takes one channel per entry; RudderStack prefers the phone.
  if (phone) subscription.phones = [phone];
  else if (email) subscription.emails = [email];
  return [call("/v2/subscription/status/set", { subscription_groups: [subscription] })];
}

export const braze: DestinationDefinition<Promise<DestinationRequest[]>> = {
  name: "BRAZE",
  displayName: "Braze",
  config: {
    defaultConfig: configKeys(BrazeConfig, [
      "useNativeSDK", "connectionMode", "oneTrustCookieCategories", "enableBrazeLogging", "enablePushNotification", "allowUserSuppliedJavascript",
      "consentManagement", "ketchConsentPurposes", "usePlatformSpecificApiKeys", "androidApiKey", "iOSApiKey", "webApiKey",
    ]),
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
    // Listed rather than requiredKeysOf: the schema follows RudderStack's key order (dataCenter
    // first), while GET /destination-definitions has always named restApiKey first.
    requiredKeys: ["restApiKey", "dataCenter"],
  },
  configSchema: BrazeConfig,
  async transform(event, ctx) {
    const config = configOf(ctx, BrazeConfig);
    const apiKey = restApiKeyOf(ctx);
    const base = brazeBaseUrl(config.dataCenter);
    if (!isEventAllowed(event, config)) return [];
    const headers = { "Content-Type": "application/json", Accept: "application/json", Authorization: `Bearer ${apiKey}` };
    const call: Call = (path, json) => restRequest({ endpoint: endpointFor(ctx, `${base}${path}`), headers, json });
    const service: Service = { ctx, base, apiKey };

    switch (event.type) {
      case "track":
        // No name is sent as none, as RudderStack sends it: Braze answers for it.
        return [call("/users/track", await deduplicated(trackBody(event, event.event, config), event, config, service))];
      case "page":
        return [call("/users/track", await deduplicated(trackBody(event, event.name || getPath(event, "properties.name") || "Page Viewed", config), event, config, service))];
      case "screen":
        return [call("/users/track", await deduplicated(trackBody(event, event.name || getPath(event, "properties.name") || "Screen Viewed", config), event, config, service))];
      case "identify":
        return identify(event, config, service, call);
      case "group":
        return group(event, config, call);
      case "alias":
        if (!event.userId) throw new TransformError("[BRAZE]: userId is required for alias call");
        if (!event.previousId) throw new TransformError("[BRAZE]: previousId is required for alias call");
        return [
          call("/users/merge", {
            merge_updates: [{ identifier_to_merge: { external_id: event.previousId }, identifier_to_keep: { external_id: event.userId } }],
          }),
        ];
      default:
        throw new TransformError("Message type is not supported");
    }
  },
  batch(requests, ctx, refuse) {
    return batchBraze(requests, !!configOf(ctx, BrazeConfig).supportDedup, refuse);
  },
  deleteUsers(users, ctx: DestinationContext) {
    // RudderStack's deletion handler has its own message for either key missing.
    const config = configOf(ctx, BrazeConfig);
    if (!config.dataCenter || !config.restApiKey) throw new TransformError("data center / api key for deletion not present");
    const apiKey = String(config.restApiKey);
    // AU instances get their own host here; RudderStack's deletion handler sends every non-EU center to iad.
    const base = brazeBaseUrl(config.dataCenter);
    const ids = users.map((u) => u.userId).filter((id) => !!id);
    return chunkItems(ids, DELETE_MAX).map((externalIds) =>
      restRequest({
        endpoint: endpointFor(ctx, `${base}/users/delete`),
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${apiKey}` },
        json: { external_ids: externalIds },
      }),
    );
  },
};
