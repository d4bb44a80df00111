/**
 * ITERABLE: Iterable's API with the `api_key` header: identify → users/update, track →
 * events/track (Order Completed → commerce/trackPurchase, Product Added/Removed →
 * commerce/updateCart), page and screen → events/track under RudderStack's event names, alias →
 * users/updateEmail. With `registerDeviceOrBrowserApiKey`, an identify carrying a push token also
 * registers the device or browser. Reverse-ETL identifies update users or upsert catalog items
 * (see retl.ts); batch.ts merges them into Iterable's bulk calls as RudderStack's router does,
 * and response.ts aborts the events whose items a bulk call's answer lists as failed.
 */
import { type Static, t } from "elysia";
import { endpointFor } from "../base-url";
import { genericField } from "../generic-fields";
import { compact, EVENT_FILTERING_KEYS, firstPresent, getPath, isAppleFamily, isEventAllowed, isPlainObject, isPresent, eventFilteringSchema, requireValue } from "../shared";
import { type DestinationContext, type DestinationDefinition, type DestinationRequest, type SluiceEvent, TransformError, configOf, requireConfig, requiredKeysOf, restRequest } from "../types";
import { batchIterable } from "./batch";
import { checkIterableResponse } from "./response";
import { isRetl, iterableExternalId, withExternalIdInTraits } from "./retl";

type Obj = Record<string, any>;

export const IterableConfig = t.Object(
  {
    apiKey: t.String({ minLength: 1 }),
    dataCenter: t.Optional(t.String()),
    preferUserId: t.Optional(t.Boolean()),
    trackAllPages: t.Optional(t.Boolean()),
    trackNamedPages: t.Optional(t.Boolean()),
    mapToSingleEvent: t.Optional(t.Boolean()),
    mergeNestedObjects: t.Optional(t.Boolean()),
    trackCategorisedPages: t.Optional(t.Boolean()),
    registerDeviceOrBrowserApiKey: t.Optional(t.String()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);
export type IterableConfig = Static<typeof IterableConfig>;

const USER_ID = ["userId", "traits.userId", "traits.id", "context.traits.userId", "context.traits.id", "anonymousId"];

const apiBase = (config: IterableConfig) => (config.dataCenter === "EUDC" ? "https://api.eu.iterable.com/api" : "https://api.iterable.com/api");
const preferUserId = (config: IterableConfig) => (config.preferUserId !== undefined ? config.preferUserId : true);
const mergeNestedObjects = (config: IterableConfig) => (config.mergeNestedObjects !== undefined ? config.mergeNestedObjects : true);
const millis = (v: unknown) => (isPresent(v) ? new Date(v as string).getTime() : undefined);
const int = (v: unknown) => (v ? Number.parseInt(String(v), 10) : undefined);
const present = (v: unknown) => (isPresent(v) ? v : undefined);
/**
 * An event's createdAt in ms, from RudderStack's generic createdAt: a `createdAt` trait, else the
 * event's `timestamp` (the gateway's skew-corrected time, or the sender's own), else its
 * originalTimestamp. Tracks, commerce calls, pages and screens alike.
 */
const createdAtOf = (event: SluiceEvent) => millis(genericField(event, "createdAt"));

/** A value RudderStack's mapping marks required: a missing one aborts the event naming where it was looked for. */
function requireUser(payload: Obj): Obj {
  if (!payload.email && !payload.userId) throw new TransformError("userId or email is mandatory for this request");
  return payload;
}

/** The user, as RudderStack's identify mapping builds it (also the `user` of commerce calls). */
function userOf(event: SluiceEvent, config: IterableConfig): Obj {
  return compact({
    email: firstPresent(event, ["traits.email", "context.traits.email"]),
    dataFields: firstPresent(event, ["traits", "context.traits"]),
    userId: firstPresent(event, USER_ID),
    preferUserId: preferUserId(config),
    mergeNestedObjects: mergeNestedObjects(config),
  });
}

function eventIds(event: SluiceEvent): Obj {
  return { email: firstPresent(event, ["properties.email", "context.traits.email"]), userId: firstPresent(event, USER_ID) };
}

function trackPayload(event: SluiceEvent): Obj {
  const p = event.properties;
  return requireUser(
    compact({
      ...eventIds(event),
      dataFields: present(p),
      id: isPresent(getPath(event, "properties.event_id")) ? String(getPath(event, "properties.event_id")) : undefined,
      eventName: present(event.event),
      createdAt: createdAtOf(event),
      campaignId: int(p?.campaignId),
      templateId: int(p?.templateId),
    }),
  );
}

/** Page and screen calls go as events when the config tracks them: all, categorised, or named ones. */
function pageOrScreenPayload(event: SluiceEvent, type: string, config: IterableConfig): Obj {
  const tracked =
    config.trackAllPages ||
    (config.trackCategorisedPages && (event.properties?.category || event.category)) ||
    (config.trackNamedPages && (event.properties?.name || event.name));
  if (!tracked) throw new TransformError(`Invalid ${type} call`);
  const p = event.properties;
  const name = firstPresent(event, ["name", "properties.name"]);
  return requireUser(
    compact({
      ...eventIds(event),
      dataFields: present(p),
      // An unnamed page is sent as "undefined page", as RudderStack names it.
      eventName: config.mapToSingleEvent === true ? `Loaded a ${type.charAt(0).toUpperCase()}${type.slice(1)}` : `${name} ${type}`,
      createdAt: createdAtOf(event),
      campaignId: int(p?.campaignId),
      templateId: int(p?.templateId),
    }),
  );
}

/** Commerce items: the products, or the properties themselves for a single product. */
function items(event: SluiceEvent): Obj[] {
  const list = Array.isArray(event.properties?.products) ? event.properties!.products : [event.properties];
  return list.map((item: unknown) => {
    const i: Obj = isPlainObject(item) ? item : {};
    const category = present(i.category);
    // Checked in the order of RudderStack's product mapping, so the first missing one is named.
    return compact({
      id: requireValue(i.product_id, "product_id"),
      sku: present(i.sku),
      name: requireValue(i.name, "name"),
      description: present(i.description),
      categories: typeof category === "string" ? category.split(",") : category,
      price: Number.parseFloat(requireValue(i.price, "price")),
      quantity: Number.parseInt(requireValue(i.quantity, "quantity"), 10),
      imageUrl: present(i.image_url),
      url: present(i.url),
      dataFields: present(i.properties),
    });
  });
}

function purchasePayload(event: SluiceEvent, config: IterableConfig): Obj {
  const p = event.properties;
  const id = firstPresent(event, ["properties.order_id", "properties.orderId", "properties.id", "properties.event_id"]);
  const total = requireValue(getPath(event, "properties.total"), "properties.total");
  return compact({
    id: id ? String(id) : undefined,
    dataFields: present(p),
    createdAt: createdAtOf(event),
    campaignId: int(p?.campaignId),
    templateId: int(p?.templateId),
    total: Number.parseFloat(total),
    user: requireUser(userOf(event, config)),
    items: items(event),
  });
}

/** The device or browser registration of an identify carrying a push token (needs its own key). */
function tokenRegistration(event: SluiceEvent, config: IterableConfig): { path: string; json: Obj } | undefined {
  const deviceToken = getPath(event, "context.device.token");
  const token = deviceToken || getPath(event, "context.os.token");
  if (!token || !config.registerDeviceOrBrowserApiKey) return undefined;
  const ids = { email: firstPresent(event, ["traits.email", "context.traits.email"]), userId: firstPresent(event, USER_ID) };
  if (deviceToken) {
    const device = compact({
      token: deviceToken,
      applicationName: present(getPath(event, "context.device.name")),
      dataFields: present(event.properties),
      platform: isAppleFamily(getPath(event, "context.device.type")) ? "APNS" : "GCM",
    });
    return { path: "/users/registerDeviceToken", json: compact({ ...ids, preferUserId: preferUserId(config), device }) };
  }
  return { path: "/users/registerBrowserToken", json: requireUser(compact({ browserToken: token, ...ids })) };
}

/** A reverse-ETL catalog row, already in the shape of the bulk item upsert so one row alone is a valid call. */
function catalogPayload(event: SluiceEvent, id: unknown): Obj {
  return { documents: Object.fromEntries([[String(id), requireValue(event.traits, "traits")]]), replaceUploadedFieldsOnly: true };
}

export const iterable: DestinationDefinition = {
  name: "ITERABLE",
  displayName: "Iterable",
  config: {
    // Listed, not configKeys: RudderStack's definition puts its device-mode settings, never read
    // here, before the event filtering keys, and this order is the one GET /destination-definitions
    // has always shown.
    defaultConfig: [
      "apiKey", "dataCenter", "packageName", "preferUserId", "trackAllPages", "trackNamedPages", "mapToSingleEvent", "mergeNestedObjects",
      "trackCategorisedPages", "oneTrustCookieCategories", "registerDeviceOrBrowserApiKey", "useNativeSDK", "initialisationIdentifier",
      "getInAppEventMapping", "purchaseEventMapping", "sendTrackForInapp", "animationDuration", "displayInterval", "onOpenScreenReaderMessage",
      "onOpenNodeToTakeFocus", "rightOffset", "topOffset", "bottomOffset", "handleLinks", "closeButtonColor", "closeButtonSize",
      "closeButtonColorTopOffset", "closeButtonColorSideOffset", "iconPath", "isRequiredToDismissMessage", "closeButtonPosition",
      "connectionMode", ...EVENT_FILTERING_KEYS, "consentManagement",
    ],
    supportedMessageTypes: ["identify", "track", "page", "screen", "alias"],
    requiredKeys: requiredKeysOf(IterableConfig),
  },
  configSchema: IterableConfig,
  transform(event, ctx: DestinationContext): DestinationRequest[] {
    const apiKey = String(requireConfig(ctx, "apiKey"));
    const c = configOf(ctx, IterableConfig);
    if (!isEventAllowed(event, c)) return [];
    const post = (path: string, json: Obj, key = apiKey) =>
      restRequest({ endpoint: endpointFor(ctx, `${apiBase(c)}${path}`), headers: { "Content-Type": "application/json", api_key: key }, json });
    if (!isPresent(event.type)) throw new TransformError("Event type is required");
    const type = String(event.type).toLowerCase();
    switch (type) {
      case "identify": {
        let e = event;
        if (isRetl(event)) {
          const external = iterableExternalId(event);
          if (!external) throw new TransformError("A reverse ETL identify needs a context.externalId of type ITERABLE-users or ITERABLE-<catalog name>");
          if (external.objectType !== "users") return [post(`/catalogs/${external.objectType}/items`, catalogPayload(event, external.id))];
          e = withExternalIdInTraits(event);
        }
        const requests = [post("/users/update", requireUser(userOf(e, c)))];
        const token = tokenRegistration(e, c);
        if (token) requests.push(post(token.path, token.json, String(c.registerDeviceOrBrowserApiKey)));
        return requests;
      }
      case "track": {
        const name = typeof event.event === "string" ? event.event.toLowerCase() : "";
        if (name === "order completed") return [post("/commerce/trackPurchase", purchasePayload(event, c))];
        if (name === "product added" || name === "product removed") {
          return [post("/commerce/updateCart", { user: requireUser(userOf(event, c)), items: items(event) })];
        }
        return [post("/events/track", trackPayload(event))];
      }
      case "page":
      case "screen":
        return [post("/events/track", pageOrScreenPayload(event, type, c))];
      case "alias":
        return [post("/users/updateEmail", { currentEmail: requireValue(event.previousId, "previousId"), newEmail: requireValue(event.userId, "userId") })];
      default:
        throw new TransformError(`Message type ${type} not supported`);
    }
  },
  batch: batchIterable,
  checkResponse: (answer, request) => checkIterableResponse(answer, request),
  deleteUsers(users, ctx) {
    const config = configOf(ctx, IterableConfig);
    if (!isPresent(config.apiKey)) throw new TransformError("api key for deletion not present");
    const apiKey = String(config.apiKey);
    return users
      .filter((u) => !!u.userId)
      .map((u) =>
        restRequest({
          method: "DELETE",
          endpoint: endpointFor(ctx, `${apiBase(config)}/users/byUserId/${encodeURIComponent(u.userId)}`),
          headers: { "Content-Type": "application/json", api_key: apiKey },
        }),
      );
  },
};
