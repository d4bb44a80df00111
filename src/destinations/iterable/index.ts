/**
 * ITERABLE: Iterable's API with the `api_key` header: identify → users/update, track →
 * events/track (Order Completed → commerce/trackPurchase, Product Added/Removed →
 * commerce/updateCart), page and screen → events/track under RudderStack's event names, alias →
 * users/updateEmail. With `registerDeviceOrBrowserApiKey`, an identify carrying a push token also
 * registers the device or browser. Consecutive users/update and events/track requests are sent
 * through users/bulkUpdate and events/trackBulk, as RudderStack's router batches them.
 */
import { t } from "elysia";
import { endpointFor } from "../base-url";
import { genericField } from "../generic-fields";
import { batchConsecutive, chunkItems, compact, EVENT_FILTERING_KEYS, firstPresent, getPath, isAppleFamily, isEventAllowed, isPlainObject, isPresent, eventFilteringSchema } from "../shared";
import { type DestinationContext, type DestinationDefinition, type DestinationRequest, type SluiceEvent, TransformError, requireConfig, restRequest } from "../types";

type Obj = Record<string, any>;

export const IterableConfig = t.Object(
  {
    apiKey: t.String({ minLength: 1 }),
    dataCenter: t.Optional(t.String()),
    preferUserId: t.Optional(t.Boolean()),
    mergeNestedObjects: t.Optional(t.Boolean()),
    trackAllPages: t.Optional(t.Boolean()),
    trackCategorisedPages: t.Optional(t.Boolean()),
    trackNamedPages: t.Optional(t.Boolean()),
    mapToSingleEvent: t.Optional(t.Boolean()),
    registerDeviceOrBrowserApiKey: t.Optional(t.String()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);

// Iterable's bulk limits as RudderStack applies them: 1,000 users or 8,000 events, 4 MB a request.
const MAX_USERS = 1000;
const MAX_EVENTS = 8000;
const MAX_BYTES = 4 * 1024 * 1024;
const USER_ID = ["userId", "traits.userId", "traits.id", "context.traits.userId", "context.traits.id", "anonymousId"];

const apiBase = (config: Obj) => (config.dataCenter === "EUDC" ? "https://api.eu.iterable.com/api" : "https://api.iterable.com/api");
const preferUserId = (config: Obj) => (config.preferUserId !== undefined ? config.preferUserId : true);
const mergeNestedObjects = (config: Obj) => (config.mergeNestedObjects !== undefined ? config.mergeNestedObjects : true);
const millis = (v: unknown) => (isPresent(v) ? new Date(v as string).getTime() : undefined);
const int = (v: unknown) => (v ? Number.parseInt(String(v), 10) : undefined);

function requireUser(payload: Obj): Obj {
  if (!payload.email && !payload.userId) throw new TransformError("userId or email is mandatory for this request");
  return payload;
}

/** The user, as RudderStack's identify mapping builds it (also the `user` of commerce calls). */
function userOf(event: SluiceEvent, config: Obj): Obj {
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
      dataFields: p,
      id: isPresent(getPath(event, "properties.event_id")) ? String(getPath(event, "properties.event_id")) : undefined,
      eventName: event.event,
      createdAt: millis(genericField(event, "createdAt")),
      campaignId: int(p?.campaignId),
      templateId: int(p?.templateId),
    }),
  );
}

/** Page and screen calls go as events when the config tracks them: all, categorised, or named ones. */
function pageOrScreenPayload(event: SluiceEvent, config: Obj): Obj {
  const type = event.type;
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
      dataFields: p,
      eventName: config.mapToSingleEvent === true ? `Loaded a ${type.charAt(0).toUpperCase()}${type.slice(1)}` : `${name} ${type}`,
      createdAt: millis(event.originalTimestamp),
      campaignId: int(p?.campaignId),
      templateId: int(p?.templateId),
    }),
  );
}

/** Commerce items: the products, or the properties themselves for a single product. */
function items(event: SluiceEvent): Obj[] {
  const list = Array.isArray(event.properties?.products) ? event.properties!.products : [event.properties ?? {}];
  return list.map((item: unknown) => {
    const i: Obj = isPlainObject(item) ? item : {};
    const out: Obj = compact({
      id: i.product_id,
      sku: i.sku,
      name: i.name,
      categories: typeof i.category === "string" ? i.category.split(",") : i.category,
      url: i.url,
      imageUrl: i.image_url,
      description: i.description,
    });
    out.price = Number.parseFloat(i.price);
    out.quantity = Number.parseInt(i.quantity, 10);
    return out;
  });
}

function purchasePayload(event: SluiceEvent, config: Obj): Obj {
  const p = event.properties ?? {};
  const id = firstPresent(event, ["properties.order_id", "properties.orderId", "properties.event_id"]);
  return compact({
    id: isPresent(id) ? String(id) : undefined,
    dataFields: event.properties,
    createdAt: millis(genericField(event, "createdAt")),
    campaignId: int(p.campaignId),
    templateId: int(p.templateId),
    total: Number.parseFloat(p.total),
    user: requireUser(userOf(event, config)),
    items: items(event),
  });
}

/** The device or browser registration of an identify carrying a push token (needs its own key). */
function tokenRegistration(event: SluiceEvent, config: Obj): { path: string; json: Obj } | undefined {
  const token = getPath(event, "context.device.token") || getPath(event, "context.os.token");
  if (!token || !config.registerDeviceOrBrowserApiKey) return undefined;
  const ids = { email: firstPresent(event, ["traits.email", "context.traits.email"]), userId: firstPresent(event, USER_ID) };
  if (getPath(event, "context.device.token")) {
    const type = getPath(event, "context.device.type");
    return {
      path: "/users/registerDeviceToken",
      json: compact({ ...ids, preferUserId: preferUserId(config), device: compact({ token, applicationName: config.packageName, platform: isAppleFamily(type) ? "APNS" : "GCM" }) }),
    };
  }
  return { path: "/users/registerBrowserToken", json: requireUser(compact({ ...ids, browserToken: token })) };
}

export const iterable: DestinationDefinition = {
  name: "ITERABLE",
  displayName: "Iterable",
  config: {
    defaultConfig: [
      "apiKey", "dataCenter", "packageName", "preferUserId", "trackAllPages", "trackNamedPages", "mapToSingleEvent", "mergeNestedObjects",
      "trackCategorisedPages", "oneTrustCookieCategories", "registerDeviceOrBrowserApiKey", "useNativeSDK", "initialisationIdentifier",
      "getInAppEventMapping", "purchaseEventMapping", "sendTrackForInapp", "animationDuration", "displayInterval", "onOpenScreenReaderMessage",
      "onOpenNodeToTakeFocus", "rightOffset", "topOffset", "bottomOffset", "handleLinks", "closeButtonColor", "closeButtonSize",
      "closeButtonColorTopOffset", "closeButtonColorSideOffset", "iconPath", "isRequiredToDismissMessage", "closeButtonPosition",
      "connectionMode", ...EVENT_FILTERING_KEYS, "consentManagement",
    ],
    supportedMessageTypes: ["identify", "track", "page", "screen", "alias"],
    requiredKeys: ["apiKey"],
  },
  configSchema: IterableConfig,
  transform(event, ctx: DestinationContext): DestinationRequest[] {
    const apiKey = String(requireConfig(ctx, "apiKey"));
    if (!isEventAllowed(event, ctx.config)) return [];
    const c = ctx.config;
    const post = (path: string, json: Obj, key = apiKey) =>
      restRequest({ endpoint: endpointFor(ctx, `${apiBase(c)}${path}`), headers: { "Content-Type": "application/json", api_key: key }, json });
    switch (event.type) {
      case "identify": {
        const requests = [post("/users/update", requireUser(userOf(event, c)))];
        const token = tokenRegistration(event, c);
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
        return [post("/events/track", pageOrScreenPayload(event, c))];
      case "alias":
        if (!isPresent(event.previousId)) throw new TransformError('Missing required value from "previousId"');
        if (!isPresent(event.userId)) throw new TransformError('Missing required value from "userId"');
        return [post("/users/updateEmail", { currentEmail: event.previousId, newEmail: event.userId })];
      default:
        throw new TransformError(`Message type ${event.type} not supported`);
    }
  },
  batch(requests) {
    const kind = (r: DestinationRequest) => (r.endpoint.endsWith("/users/update") ? "users" : r.endpoint.endsWith("/events/track") ? "events" : null);
    return batchConsecutive(
      requests,
      (r) => (kind(r) ? JSON.stringify([kind(r), r.endpoint, r.headers]) : null),
      (run) => {
        const isUsers = kind(run[0]!) === "users";
        const endpoint = run[0]!.endpoint.replace(isUsers ? /\/users\/update$/ : /\/events\/track$/, isUsers ? "/users/bulkUpdate" : "/events/trackBulk");
        const bodies = run.map((r) => r.body.JSON);
        return chunkItems(bodies, isUsers ? MAX_USERS : MAX_EVENTS, MAX_BYTES - 64).map((list) =>
          restRequest({ endpoint, headers: run[0]!.headers, json: isUsers ? { users: list } : { events: list } }),
        );
      },
    );
  },
  deleteUsers(users, ctx) {
    const apiKey = String(requireConfig(ctx, "apiKey"));
    return users
      .filter((u) => !!u.userId)
      .map((u) =>
        restRequest({
          method: "DELETE",
          endpoint: endpointFor(ctx, `${apiBase(ctx.config)}/users/byUserId/${encodeURIComponent(u.userId)}`),
          headers: { "Content-Type": "application/json", api_key: apiKey },
        }),
      );
  },
};
