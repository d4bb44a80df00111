/**
 * BRAZE: Braze's REST API (Bearer restApiKey) on the instance named by dataCenter — user
 * attributes, custom events and purchases through /users/track, identity resolution through
 * /users/identify, merges through /users/merge, subscription groups, and /users/delete.
 */
import { t } from "elysia";
import { endpointFor } from "../base-url";
import {
  EVENT_FILTERING_KEYS,
  batchConsecutive,
  chunkItems,
  compact,
  eventFilteringSchema,
  firstOf,
  getPath,
  isEventAllowed,
  isPlainObject,
  timestampOf,
  traitsOf,
} from "../shared";
import { type DestinationContext, type DestinationDefinition, type SluiceEvent, TransformError, requireConfig, restRequest } from "../types";

type Obj = Record<string, any>;

const PARTNER = "RudderStack";
// Braze's per-request limits: /users/track 75 of each object type, /users/identify and
// /users/merge 50, subscription status 25, /users/delete 50 external ids.
const TRACK_MAX = 75;
const IDENTIFY_MAX = 50;
const MERGE_MAX = 50;
const SUBSCRIPTION_MAX = 25;
const DELETE_MAX = 50;

export const BrazeConfig = t.Object(
  {
    restApiKey: t.String({ minLength: 1 }),
    dataCenter: t.String({ minLength: 1 }),
    appKey: t.Optional(t.String()),
    trackAnonymousUser: t.Optional(t.Boolean()),
    enableSubscriptionGroupInGroupCall: t.Optional(t.Boolean()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);

/** The REST endpoint of a Braze instance: US-0N → rest.iad-0N.braze.com, EU-0N → rest.fra-0N.braze.eu. */
export function brazeBaseUrl(dataCenter: string): string {
  const [region = "", number = "01"] = dataCenter.trim().split("-");
  const r = region.toLowerCase();
  if (r === "eu") return `https://rest.fra-${number}.braze.eu`;
  if (r === "us") return `https://rest.iad-${number}.braze.com`;
  return `https://rest.${r}-${number}.braze.com`;
}

const ATTRIBUTE_MAP: Array<[string, string]> = [
  ["country", "address.country"],
  ["dob", "birthday"],
  ["email", "email"],
  ["first_name", "firstName"],
  ["gender", "gender"],
  ["home_city", "address.city"],
  ["image_url", "avatar"],
  ["last_name", "lastName"],
  ["phone", "phone"],
];
/** Traits consumed by the standard attributes above, so not repeated as custom attributes. */
const MAPPED_TRAITS = ["address", "birthday", "email", "firstName", "gender", "avatar", "lastName", "phone"];
const RESERVED_EVENT_PROPERTIES = ["time", "product_id", "quantity", "event_name", "price", "currency"];

function formatGender(gender: unknown): string | null {
  const g = typeof gender === "string" ? gender.toLowerCase() : "";
  if (["woman", "female", "w", "f"].includes(g)) return "F";
  if (["man", "male", "m"].includes(g)) return "M";
  if (["other", "o"].includes(g)) return "O";
  return null;
}

function externalIdFromContext(event: SluiceEvent): unknown {
  const ids = event.context?.externalId;
  return Array.isArray(ids) ? ids.find((x: any) => x?.type === "brazeExternalId")?.id : undefined;
}

/** Braze's user attributes object: standard attributes from traits plus every other trait. */
function userAttributes(event: SluiceEvent): Obj {
  const traits = traitsOf(event);
  if (!traits) return {};
  const data: Obj = {};
  for (const [dest, source] of ATTRIBUTE_MAP) {
    let value = getPath(traits, source);
    if (!value && value !== null) continue;
    // An explicit null clears the attribute at Braze.
    if (value === null && !MAPPED_TRAITS.includes(dest)) continue;
    if (dest === "gender") value = formatGender(value);
    if (dest === "email" && value !== null) {
      if (typeof value !== "string") throw new TransformError("Invalid email, email must be a valid string");
      value = value.toLowerCase();
    }
    data[dest] = value;
  }
  for (const [key, value] of Object.entries(traits)) if (!MAPPED_TRAITS.includes(key) && value !== undefined) data[key] = value;
  return data;
}

/** Identified users are addressed by external_id; anonymous ones by their rudder_id alias. */
function addUserIdentifier(payload: Obj, event: SluiceEvent): Obj {
  const userId = firstOf(event, ["userId", "traits.userId", "traits.id", "context.traits.userId", "context.traits.id"]);
  const external = externalIdFromContext(event);
  if (userId !== undefined || external !== undefined) {
    const id = external || event.userId;
    if (id) payload.external_id = id;
    return payload;
  }
  payload._update_existing_only = false;
  if (event.anonymousId) payload.user_alias = { alias_name: event.anonymousId, alias_label: "rudder_id" };
  return payload;
}

function purchases(event: SluiceEvent): Obj[] {
  const p = event.properties;
  const timestamp = timestampOf(event);
  const fail = (why: string) => new TransformError(`Invalid Order Completed event: ${why}`);
  if (!p) throw fail("Properties object is missing in the message");
  if (!p.products) throw fail("Products array is missing in the message");
  if (!Array.isArray(p.products)) throw fail("Products is not an array");
  if (p.products.length === 0) throw fail("Products array is empty");
  if (!timestamp) throw fail("Timestamp is missing in the message");
  return p.products.map((product: Obj, i: number) => {
    const productId = product.product_id ?? product.sku;
    if (productId === undefined || productId === null) throw fail(`Product Id is missing for product at index: ${i}`);
    if (product.price === undefined || product.price === null) throw fail(`Price is missing for product at index: ${i}`);
    if (product.quantity === undefined || product.quantity === null) throw fail(`Quantity is missing for product at index: ${i}`);
    const currency = p.currency ?? product.currency;
    if (currency === undefined || currency === null) throw fail(`Message properties and product at index: ${i} is missing currency`);
    return addUserIdentifier(
      { product_id: String(productId), price: parseFloat(product.price), currency, quantity: parseInt(product.quantity, 10), time: timestamp },
      event,
    );
  });
}

function integrationsObj(event: SluiceEvent): Obj | undefined {
  const i = event.integrations;
  return isPlainObject(i) ? (i.BRAZE ?? i.Braze ?? i.braze) : undefined;
}

/** track, page and screen: a custom event (or purchases) plus any traits as attributes. */
function trackBody(event: SluiceEvent, name: string): Obj {
  const attributes = userAttributes(event);
  const attributeList = Object.keys(attributes).length > 0 ? [addUserIdentifier(attributes, event)] : undefined;
  const properties: Obj = { ...(event.properties ?? {}) };
  if (event.type === "track" && name.toLowerCase() === "order completed") {
    return compact({ attributes: attributeList, purchases: purchases(event), partner: PARTNER });
  }
  for (const key of RESERVED_EVENT_PROPERTIES) delete properties[key];
  const brazeEvent = addUserIdentifier({ name, time: event.timestamp, properties }, event);
  const appId = integrationsObj(event)?.appId;
  if (appId !== undefined && appId !== null) brazeEvent.app_id = String(appId);
  return compact({ partner: PARTNER, attributes: attributeList, events: [brazeEvent] });
}

export const braze: DestinationDefinition = {
  name: "BRAZE",
  displayName: "Braze",
  config: {
    defaultConfig: [
      "appKey", "dataCenter", "restApiKey", "trackAnonymousUser", "enableSubscriptionGroupInGroupCall", ...EVENT_FILTERING_KEYS,
    ],
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
    requiredKeys: ["restApiKey", "dataCenter"],
  },
  configSchema: BrazeConfig,
  transform(event, ctx) {
    const apiKey = String(requireConfig(ctx, "restApiKey"));
    const base = brazeBaseUrl(String(requireConfig(ctx, "dataCenter")));
    if (!isEventAllowed(event, ctx.config)) return [];
    const headers = { "Content-Type": "application/json", Accept: "application/json", Authorization: `Bearer ${apiKey}` };
    const call = (path: string, json: Obj) => restRequest({ endpoint: endpointFor(ctx, `${base}${path}`), headers, json });

    switch (event.type) {
      case "track":
        if (typeof event.event !== "string" || event.event === "") throw new TransformError("Event name is required");
        return [call("/users/track", trackBody(event, event.event))];
      case "page":
        return [call("/users/track", trackBody(event, event.name || getPath(event, "properties.name") || "Page Viewed"))];
      case "screen":
        return [call("/users/track", trackBody(event, event.name || getPath(event, "properties.name") || "Screen Viewed"))];
      case "identify": {
        const requests = [];
        const alias = integrationsObj(event)?.alias;
        const externalId = externalIdFromContext(event) || event.userId;
        // Merge the anonymous profile into the identified one before updating it.
        if ((event.anonymousId || alias) && externalId) {
          const userAlias = alias ?? { alias_name: event.anonymousId, alias_label: "rudder_id" };
          requests.push(call("/users/identify", { aliases_to_identify: [{ user_alias: userAlias, external_id: externalId }], merge_behavior: "merge" }));
        }
        const attributes = userAttributes(event);
        if (Object.keys(attributes).length === 0) throw new TransformError("No attributes found to update the user profile");
        requests.push(call("/users/track", { attributes: [addUserIdentifier(attributes, event)] }));
        return requests;
      }
      case "group": {
        const groupId = firstOf(event, ["groupId", "traits.groupId"]);
        if (!groupId) throw new TransformError("Invalid groupId");
        if (ctx.config.enableSubscriptionGroupInGroupCall) {
          const traits = event.traits ?? {};
          if (!traits.phone && !traits.email) throw new TransformError("Message should have traits with subscriptionState, email or phone");
          if (traits.subscriptionState !== "subscribed" && traits.subscriptionState !== "unsubscribed") {
            throw new TransformError("you must provide a subscription state in traits and possible values are subscribed and unsubscribed.");
          }
          const phone = firstOf(event, ["traits.phone", "context.traits.phone", "properties.phone"]);
          const email = firstOf(event, ["traits.email", "context.traits.email", "properties.email"]);
          const group = compact({
            subscription_group_id: groupId,
            subscription_state: traits.subscriptionState,
            external_id: [event.userId],
            phones: phone ? [phone] : undefined,
            emails: !phone && email ? [email] : undefined,
          });
          return [call("/v2/subscription/status/set", { subscription_groups: [group] })];
        }
        const attribute: Obj = { [`ab_rudder_group_${groupId}`]: true };
        const externalGroupUser = externalIdFromContext(event) || event.userId;
        if (externalGroupUser) attribute.external_id = externalGroupUser;
        return [call("/users/track", { attributes: [attribute], partner: PARTNER })];
      }
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
  batch(requests) {
    const kind = (endpoint: string) => /\/(users\/track|users\/identify|users\/merge|v2\/subscription\/status\/set)$/.exec(endpoint)?.[1];
    return batchConsecutive(
      requests,
      (r) => (kind(r.endpoint) ? JSON.stringify([r.endpoint, r.headers]) : null),
      (run) => {
        const { endpoint, headers } = run[0]!;
        const bodies = run.map((r) => r.body.JSON as Obj);
        const list = (key: string) => bodies.flatMap((b) => (Array.isArray(b[key]) ? b[key] : []));
        const make = (json: Obj) => restRequest({ endpoint, headers, json });
        switch (kind(endpoint)) {
          case "users/identify":
            return chunkItems(list("aliases_to_identify"), IDENTIFY_MAX).map((a) => make({ aliases_to_identify: a, merge_behavior: "merge" }));
          case "users/merge":
            return chunkItems(list("merge_updates"), MERGE_MAX).map((m) => make({ merge_updates: m }));
          case "v2/subscription/status/set":
            return chunkItems(list("subscription_groups"), SUBSCRIPTION_MAX).map((s) => make({ subscription_groups: s }));
          default: {
            // Each object type is capped separately; the i-th request carries the i-th chunk of each.
            const attributes = chunkItems(list("attributes"), TRACK_MAX);
            const events = chunkItems(list("events"), TRACK_MAX);
            const purchaseList = chunkItems(list("purchases"), TRACK_MAX);
            const count = Math.max(attributes.length, events.length, purchaseList.length);
            return Array.from({ length: count }, (_, i) =>
              make(compact({ partner: PARTNER, attributes: attributes[i], events: events[i], purchases: purchaseList[i] })),
            );
          }
        }
      },
    );
  },
  deleteUsers(users, ctx: DestinationContext) {
    const apiKey = String(requireConfig(ctx, "restApiKey"));
    const base = brazeBaseUrl(String(requireConfig(ctx, "dataCenter")));
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
