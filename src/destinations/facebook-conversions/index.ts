/**
 * FACEBOOK_CONVERSIONS: events to Meta's Conversions API for a dataset
 * (`POST https://graph.facebook.com/v25.0/<datasetId>/events?access_token=…`), one server event per
 * call, as RudderStack sends them: hashed user data, e-commerce tracks as Meta's standard events
 * (ViewContent, AddToCart, Purchase, Search, InitiateCheckout, AddPaymentInfo, AddToWishlist, …)
 * with their custom data, other tracks as custom events with value and currency, page and screen
 * calls as PageView, and app data for events whose action source is `app`.
 */
import { type Static, t } from "elysia";
import { extractCustomFields, isEventAllowed } from "../shared";
import { type DestinationDefinition, type SluiceEvent, TransformError, configKeys, configOf, nowOf, requiredKeysOf } from "../types";
import {
  SERVER_EVENT_PROPERTIES,
  addDataProcessingOptions,
  checkEventTime,
  eventsEndpoint,
  mappedEventName,
  optionsOf,
  serverEventFields,
  serverEventRequest,
  userData,
  withoutPii,
} from "../facebook-pixel/conversions-api";
import { checkGraphResponse } from "../facebook-pixel/response";
import { type Category, PAGE_VIEW, appDataOf, categoryOf, customDataOf } from "./custom-data";

/** RudderStack's names for the event's per-destination options (`integrations.FacebookConversions`). */
const OPTION_NAMES = ["fb_conversions", "fb conversions", "FacebookConversions", "Facebook Conversions", "FB Conversions", "Facebook_Conversions"];

const Flag = t.Union([t.Boolean(), t.Literal("true"), t.Literal("false")]);
const Pairs = t.Array(t.Object({ from: t.Optional(t.Any()), to: t.Optional(t.Any()) }, { additionalProperties: true }));

export const FacebookConversionsConfig = t.Object(
  {
    blacklistPiiProperties: t.Optional(t.Array(t.Object({ blacklistPiiProperties: t.Optional(t.String()), blacklistPiiHash: t.Optional(Flag) }, { additionalProperties: true }))),
    datasetId: t.String({ minLength: 1 }),
    eventsToEvents: t.Optional(Pairs),
    whitelistPiiProperties: t.Optional(t.Array(t.Object({ whitelistPiiProperties: t.Optional(t.String()) }, { additionalProperties: true }))),
    limitedDataUSage: t.Optional(Flag),
    actionSource: t.Optional(t.String()),
    accessToken: t.String({ minLength: 1 }),
    testDestination: t.Optional(Flag),
    testEventCode: t.Optional(t.String()),
    removeExternalId: t.Optional(Flag),
    // Read by RudderStack's transformer, though its definition does not list it.
    categoryToContent: t.Optional(Pairs),
  },
  { additionalProperties: true },
);
export type FacebookConversionsConfig = Static<typeof FacebookConversionsConfig>;

function categoryFor(event: SluiceEvent, type: string, config: FacebookConversionsConfig): Category {
  switch (type) {
    case "page":
    case "screen":
      return PAGE_VIEW;
    case "track":
      if (!event.event || typeof event.event !== "string") throw new TransformError("'event' is required and should be a string");
      return categoryOf(mappedEventName(event, config.eventsToEvents));
    default:
      throw new TransformError(`Message type ${type} not supported`);
  }
}

export const facebookConversions: DestinationDefinition = {
  name: "FACEBOOK_CONVERSIONS",
  displayName: "Facebook Conversions",
  config: {
    defaultConfig: configKeys(FacebookConversionsConfig, ["connectionMode", "consentManagement", "oneTrustCookieCategories", "ketchConsentPurposes"]),
    supportedMessageTypes: ["page", "screen", "track"],
    requiredKeys: requiredKeysOf(FacebookConversionsConfig),
  },
  configSchema: FacebookConversionsConfig,
  transform(event, ctx) {
    const config = configOf(ctx, FacebookConversionsConfig);
    if (!isEventAllowed(event, config)) return [];
    if (!event.type) throw new TransformError("'type' is missing");
    checkEventTime(event, event.timestamp || event.originalTimestamp, nowOf(ctx));
    if (!config.datasetId) throw new TransformError("Dataset Id not found. Aborting");
    if (!config.accessToken) throw new TransformError("Access token not found. Aborting");
    const category = categoryFor(event, String(event.type).toLowerCase(), config);

    const options = optionsOf(event, OPTION_NAMES);
    const hashed = !!options?.hashed;
    const user = userData(event, config.removeExternalId, hashed, [
      { key: "madid", from: "context.device.advertisingId" },
      { key: "anon_id", from: ["properties.anon_id", "context.device.advertisingId"] },
    ]);
    // A standard event goes by Meta's name.
    const named = category.standard ? { ...event, event: category.eventName } : event;
    const common = serverEventFields(named, config.actionSource);
    // RudderStack takes the properties with extractCustomFields, which reads each name as a path
    // (`dotted.key` → custom_data `{dotted: {key}}`) and writes into the property objects it
    // shares (`{a: {}, "a.b": 1}` adds `b` to `a`), which what follows then reads: so it works on
    // a copy of the properties, and the rest of the event is read with that copy.
    const properties = event.properties !== null && typeof event.properties === "object" ? structuredClone(event.properties) : event.properties;
    const read: SluiceEvent = { ...event, properties };
    let customData = extractCustomFields({}, [properties], SERVER_EVENT_PROPERTIES);
    customData = withoutPii(read, customData, config.blacklistPiiProperties, config.whitelistPiiProperties, hashed);
    customData = customDataOf(customData, read, category, config.categoryToContent, options);
    addDataProcessingOptions(common, event, config.limitedDataUSage);
    const appData = common.action_source === "app" ? appDataOf(read) : undefined;
    return [
      serverEventRequest({
        endpoint: eventsEndpoint(ctx, config.datasetId, config.accessToken),
        userData: user,
        common,
        customData,
        appData,
        testDestination: config.testDestination,
        testEventCode: config.testEventCode,
      }),
    ];
  },
  checkResponse: (answer) => checkGraphResponse(answer),
};
