/**
 * GA4: events through the Measurement Protocol (`/mp/collect`), for web (gtag: client_id +
 * measurement_id) or app (firebase: app_instance_id + firebase_app_id) clients. RudderStack's
 * ecommerce events map to GA4's recommended events (see mapping.ts); page → page_view,
 * group → join_group. One event per request, as RudderStack sends them. With `debugMode` the
 * validation server's complaints abort the event (response.ts).
 */
import { type Static, t } from "elysia";
import { endpointFor } from "../base-url";
import { destinationExternalId } from "../generic-fields";
import {
  compact,
  eventFilteringSchema,
  extractCustomFields,
  firstPresent,
  flattenJson,
  getPath,
  integrationsObject,
  isEventAllowed,
  isPresent,
  timestampOf,
  toMillis,
  withoutUndefined,
} from "../shared";
import {
  type DestinationContext,
  type DestinationDefinition,
  type SluiceEvent,
  TransformError,
  configKeys,
  configOf,
  nowOf,
  requiredKeysOf,
  restRequest,
} from "../types";
import {
  GROUP_COMMON,
  GROUP_PARAMS,
  PAGE_PARAMS,
  PRODUCT_ITEM,
  ROOT_ITEM,
  STANDARD_EVENTS,
  type Standard,
  TRACK_PAGE_COMMON,
  mapParams,
  sourceNames,
} from "./mapping";
import { checkGa4Response } from "./response";

type Obj = Record<string, any>;

const ENDPOINT = "https://www.google-analytics.com/mp/collect";
const DEBUG_ENDPOINT = "https://www.google-analytics.com/debug/mp/collect";
// GA4 drops events outside this window, so RudderStack rejects them up front.
const MAX_PAST_MS = 72 * 3600 * 1000;
const MAX_FUTURE_MS = 15 * 60 * 1000;

export const Ga4Config = t.Object(
  {
    apiSecret: t.String({ minLength: 1 }),
    debugMode: t.Optional(t.Boolean()),
    typesOfClient: t.Union([t.Literal("gtag"), t.Literal("firebase")]),
    measurementId: t.Optional(t.String()),
    firebaseAppId: t.Optional(t.String()),
    piiPropertiesToIgnore: t.Optional(t.Array(t.Any())),
    connectionMode: t.Optional(t.String()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);
export type Ga4Config = Static<typeof Ga4Config>;

const RESERVED_EVENTS = [
  "ad_activeview", "ad_click", "ad_exposure", "ad_impression", "ad_query", "adunit_exposure", "app_clear_data",
  "app_install", "app_update", "app_remove", "error", "first_open", "first_visit", "in_app_purchase",
  "notification_dismiss", "notification_foreground", "notification_open", "notification_receive", "os_update",
  "screen_view", "session_start", "user_engagement",
];
const RESERVED_WEB_EVENTS = [
  "app_remove", "app_store_refund", "app_store_subscription_cancel", "app_store_subscription_convert",
  "app_store_subscription_renew", "first_open", "first_visit", "in_app_purchase", "session_start", "user_engagement",
];
const RESERVED_PREFIXES = ["google_", "ga_", "firebase_"];
const PARAM_EXCLUSIONS = ["firebase_conversion", "user_properties", "engagementTimeMsec", "sessionId"];
const RESERVED_USER_PROPERTIES = ["first_open_time", "first_visit_time", "last_deep_link_referrer", "user_id", "first_open_after_install"];
/** Names under which an event's `integrations` object may carry GA4 options (client id, session, consents). */
const INTEGRATION_NAMES = ["GA4", "Google Analytics 4", "googleAnalytics4", "Google Analytics 4 (GA4)"];
const CONSENT_KEYS = ["ad_user_data", "ad_personalization"];
const CONSENT_VALUES = ["GRANTED", "DENIED"];

/** A copy of an event's object, for RudderStack's extractCustomFields to write into as it does into the message. */
const copyOf = (v: unknown) => (v !== null && typeof v === "object" ? structuredClone(v) : v);

/**
 * Properties (or traits) not already sent as mapped parameters, flattened with `_` as GA4 params
 * must be flat. RudderStack takes them with extractCustomFields, which reads each name as a path
 * (shared.ts): `dotted.key` becomes `{dotted: {key}}` and so the parameter `dotted_key`, `a.0`
 * becomes `a_0`, and a name holding `/` stays as it is.
 */
function customParams(sources: unknown[], excluded: string[]): Obj {
  return flattenJson(extractCustomFields({}, sources.map(copyOf), excluded), "_", true);
}

/** GA4 drops parameters that are objects, arrays or blank, so RudderStack removes them (items excepted). */
function validParams(params: Obj): Obj {
  return Object.fromEntries(
    Object.entries(params).filter(
      ([k, v]) => k === "items" || (v !== undefined && v !== null && typeof v !== "object" && String(v).trim() !== ""),
    ),
  );
}

const ITEM_NAMES = sourceNames(PRODUCT_ITEM);

function requireIdOrName(item: Obj): Obj {
  if (!isPresent(item.item_id) && !isPresent(item.item_name)) throw new TransformError("One of product_id or name is required");
  return item;
}

/** `properties.products` as GA4 items, each product's unmapped fields kept as item parameters. */
function itemsFromProducts(event: SluiceEvent, required: boolean): Obj[] {
  const products = getPath(event, "properties.products");
  if (required && (!products || products.length === 0)) {
    throw new TransformError(`Products is an required field for '${event.event}' event`);
  }
  if (required && !Array.isArray(products)) throw new TransformError("Invalid type. Expected Array of products");
  if (!Array.isArray(products)) return [];
  return products.map((product: unknown) => ({
    ...requireIdOrName(mapParams(product, PRODUCT_ITEM)),
    ...validParams(customParams([product], ITEM_NAMES)),
  }));
}

function itemFromProperties(event: SluiceEvent): Obj {
  if (!event.properties) throw new TransformError(`Item/product parameters not found for '${event.event}' event`);
  return requireIdOrName(validParams(mapParams(event.properties, ROOT_ITEM)));
}

/** A recommended event: its mapped parameters, items, then the remaining properties as custom parameters. */
function standardEventParams(event: SluiceEvent, standard: Standard): Obj {
  const params = mapParams(event, standard.params);
  let items = standard.itemList ? itemsFromProducts(event, standard.itemList === "required") : [];
  let excluded = [...sourceNames(standard.params), "products", ...PARAM_EXCLUSIONS];
  if (standard.item && items.length === 0) {
    items = [itemFromProperties(event)];
    // The root properties went into the item, so they are not repeated as event parameters.
    excluded = [...excluded, ...sourceNames(ROOT_ITEM)];
  }
  if (items.length > 0) params.items = items;
  return { ...params, ...customParams([event.properties], excluded), ...mapParams(event, TRACK_PAGE_COMMON) };
}

function validateCustomName(name: string): void {
  const lower = name.toLowerCase();
  if (RESERVED_WEB_EVENTS.includes(lower)) throw new TransformError("Reserved custom event names are not allowed");
  if (["_", "firebase_", "ga_", "google_", "gtag."].some((prefix) => lower.startsWith(prefix))) {
    throw new TransformError("Reserved custom prefix names are not allowed");
  }
  if (!/^[A-Za-z]\w*$/.test(name)) {
    throw new TransformError("Event name must start with a letter and can only contain letters, numbers, and underscores");
  }
}

/** The GA4 event name RudderStack derives for an event (page → page_view, group → join_group). */
function eventName(event: SluiceEvent, type: string): string {
  const raw = type === "page" ? "page_view" : type === "group" ? "join_group" : event.event;
  if (!raw) throw new TransformError("Event name is required");
  if (typeof raw !== "string") throw new TransformError("track:: event name should be string");
  // RudderStack's normalisation: trim and join words with underscores; case is kept.
  const name = raw.trim().replace(/\s+/g, "_");
  if (RESERVED_EVENTS.includes(name.toLowerCase())) throw new TransformError("track:: Reserved event names are not allowed");
  return name;
}

/** The single GA4 event's name and parameters, before RudderStack's final clean-up. */
function ga4Event(event: SluiceEvent, type: string, name: string): { name: string; params: Obj } {
  const standard = STANDARD_EVENTS[name.toUpperCase()];
  if (type === "track" && standard) return { name: standard.name, params: standardEventParams(event, standard) };
  if (type === "group") {
    const custom = customParams([event.traits, getPath(event, "context.traits")], [...sourceNames(GROUP_PARAMS), "products", ...PARAM_EXCLUSIONS]);
    return { name, params: { ...mapParams(event, GROUP_PARAMS), ...custom, ...mapParams(event, GROUP_COMMON) } };
  }
  if (type === "track") validateCustomName(name);
  const own = type === "page" ? mapParams(event, PAGE_PARAMS) : {};
  return { name, params: { ...own, ...customParams([event.properties], PARAM_EXCLUSIONS), ...mapParams(event, TRACK_PAGE_COMMON) } };
}

const integrationOptions = (event: SluiceEvent) => integrationsObject(event, ...INTEGRATION_NAMES);

/**
 * properties.user_properties and context.traits as GA4 user properties ({key: {value}}), taken as
 * RudderStack takes them (extractCustomFields: a later source replaces an earlier one even when
 * its value is invalid, and a dotted name nests, so `a.b` writes an object under `a`), invalid
 * names and values then dropped. The config's piiPropertiesToIgnore names are trimmed, blanks
 * ignored, as there.
 */
function userProperties(event: SluiceEvent, config: Ga4Config): Obj | undefined {
  const pii = (Array.isArray(config.piiPropertiesToIgnore) ? config.piiPropertiesToIgnore : [])
    .map((x: any) => x?.piiProperty)
    .filter((name: unknown): name is string => typeof name === "string" && name.trim() !== "")
    .map((name: string) => name.trim());
  const sources = [getPath(event, "properties.user_properties"), getPath(event, "context.traits")].map(copyOf);
  const out: Obj = {};
  for (const [key, value] of Object.entries(extractCustomFields({}, sources, [...RESERVED_USER_PROPERTIES, ...pii]))) {
    const validKey = /^[A-Za-z]\w{0,23}$/.test(key) && !RESERVED_PREFIXES.some((x) => key.toLowerCase().startsWith(x));
    const validValue =
      (typeof value === "string" && value.trim() !== "" && value.trim().length <= 36) ||
      (typeof value === "number" && String(value).length <= 36) ||
      typeof value === "boolean";
    if (validKey && validValue) out[key] = { value };
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Consent mode signals from the event's GA4 integration options; only GRANTED and DENIED are valid. */
function consent(options: Obj | undefined): Obj | undefined {
  const given = options?.consents;
  const out = Object.fromEntries(CONSENT_KEYS.filter((k) => CONSENT_VALUES.includes(given?.[k])).map((k) => [k, given[k]]));
  return Object.keys(out).length > 0 ? out : undefined;
}

/** GA4 takes microseconds, but RudderStack truncates the timestamp to whole seconds first. */
function timestampMicros(event: SluiceEvent, ctx: DestinationContext): number | undefined {
  const ms = toMillis(timestampOf(event));
  if (ms === undefined) return undefined;
  const now = nowOf(ctx);
  if (ms < now - MAX_PAST_MS) throw new TransformError("Allowed timestamp is [72 hours] into the past");
  if (ms > now + MAX_FUTURE_MS) throw new TransformError("Allowed timestamp is [15 minutes] into the future");
  return Math.floor(ms / 1000) * 1_000_000;
}

function nonPersonalizedAds(event: SluiceEvent): boolean | undefined {
  const adTracking = getPath(event, "context.device.adTrackingEnabled");
  if ([true, "true", 1, "1"].includes(adTracking)) return false;
  if ([false, "false", 0, "0"].includes(adTracking)) return true;
  return undefined;
}

function userId(event: SluiceEvent): string | undefined {
  const v = firstPresent(event, ["userId", "traits.userId", "traits.id", "context.traits.userId", "context.traits.id"]);
  return v === undefined ? undefined : String(v);
}

/** client_id (gtag) or app_instance_id (firebase); a hybrid-mode web SDK passes its own client id. */
function clientIds(event: SluiceEvent, client: string, hybrid: boolean, options: Obj | undefined): Obj {
  if (client === "firebase") {
    const appInstanceId = destinationExternalId(event, "ga4AppInstanceId");
    if (appInstanceId === undefined || appInstanceId === null) throw new TransformError("ga4AppInstanceId must be provided under externalId");
    return { app_instance_id: appInstanceId };
  }
  const clientId = (hybrid && options?.clientId) || destinationExternalId(event, "ga4ClientId") || event.anonymousId || event.rudderId;
  if (clientId === undefined || clientId === null) throw new TransformError("ga4ClientId or anonymousId must be provided");
  return { client_id: clientId };
}

/** The event's parameters after RudderStack's clean-up: reserved prefixes, session overrides, invalid values. */
function finalParams(params: Obj, hybrid: boolean, options: Obj | undefined): Obj {
  const kept = Object.fromEntries(Object.entries(params).filter(([k]) => !RESERVED_PREFIXES.some((x) => k.toLowerCase().startsWith(x))));
  if (hybrid && options?.sessionId) kept.session_id = options.sessionId;
  if (options?.sessionNumber) kept.session_number = options.sessionNumber;
  // Nulls go first, as there (removeUndefinedAndNullValues): so an `items` property sent as null is
  // left out, where an item's own `items: null` is kept (validParams alone).
  return validParams(compact(kept));
}

/** The collect call's query parameters, after RudderStack's config checks (in its order and words). */
function collectQuery(config: Ga4Config): Record<string, string> {
  // Any falsy value counts as missing there.
  const missing = (v: unknown) => !v;
  if (missing(config.typesOfClient)) throw new TransformError("Client type not found. Aborting ");
  if (missing(config.apiSecret)) throw new TransformError("API Secret not found. Aborting ");
  const client = config.typesOfClient;
  if (client === "gtag" && missing(config.measurementId)) throw new TransformError("measurementId must be provided. Aborting");
  if (client === "firebase" && missing(config.firebaseAppId)) throw new TransformError("firebaseAppId must be provided. Aborting");
  if (client !== "gtag" && client !== "firebase") throw new TransformError("Invalid type of client");
  const query: Record<string, string> = { api_secret: String(config.apiSecret) };
  if (client === "gtag") query.measurement_id = String(config.measurementId);
  else query.firebase_app_id = String(config.firebaseAppId);
  return query;
}

export const ga4: DestinationDefinition = {
  name: "GA4",
  displayName: "Google Analytics 4 (GA4)",
  config: {
    defaultConfig: configKeys(Ga4Config, [
      "oneTrustCookieCategories", "ketchConsentPurposes", "sdkBaseUrl", "debugView", "useNativeSDK", "capturePageView", "useNativeSDKToSend", "extendPageViewParams", "overrideClientAndSessionId", "consentManagement", "blockPageViewEvent", "sendUserId",
      "serverContainerUrl", "eventDelivery", "enableServerSideIdentify", "sendLoginSignup", "generateLead",
    ]),
    supportedMessageTypes: ["track", "page", "group"],
    requiredKeys: requiredKeysOf(Ga4Config),
  },
  configSchema: Ga4Config,
  transform(event, ctx) {
    // RudderStack checks the message type before the config, and words each error its own way.
    if (!event.type) throw new TransformError("Message Type is not present. Aborting message.");
    const config = configOf(ctx, Ga4Config);
    const query = collectQuery(config);
    const client = config.typesOfClient;
    if (!isEventAllowed(event, config)) return [];
    const type = String(event.type).toLowerCase();
    if (!["track", "page", "group"].includes(type)) throw new TransformError(`Message type ${type} not supported`);
    const hybrid = config.connectionMode === "hybrid";
    // In hybrid mode the web SDK sends page views itself; RudderStack's server keeps only track and
    // group for the cloud (hybridModeCloudEventsFilter), so page calls never reach its transform.
    if (hybrid && type === "page") return [];

    const name = eventName(event, type);
    const options = integrationOptions(event);
    const body: Obj = {
      user_id: userId(event),
      timestamp_micros: timestampMicros(event, ctx),
      non_personalized_ads: nonPersonalizedAds(event),
      ...clientIds(event, client, hybrid, options),
    };
    const ga4 = ga4Event(event, type, name);
    const params = finalParams(ga4.params, hybrid, options);
    body.user_properties = userProperties(event, config);
    body.consent = consent(options);
    body.events = [Object.keys(params).length > 0 ? { name: ga4.name, params } : { name: ga4.name }];

    return [
      restRequest({
        endpoint: endpointFor(ctx, config.debugMode ? DEBUG_ENDPOINT : ENDPOINT),
        headers: { HOST: "www.google-analytics.com", "Content-Type": "application/json" },
        params: query,
        json: withoutUndefined(body),
      }),
    ];
  },
  checkResponse: (answer) => checkGa4Response(answer),
};
