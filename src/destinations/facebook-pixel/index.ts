/**
 * FACEBOOK_PIXEL: Meta Pixel events sent server-side through the Conversions API
 * (`POST https://graph.facebook.com/v25.0/<pixelId>/events?access_token=…`), one server event per
 * call, as RudderStack's cloud mode sends them: hashed user data, e-commerce tracks as Meta's
 * standard events (ViewContent, AddToCart, Purchase, Search, InitiateCheckout, …), other tracks
 * as custom events with flattened properties, page and screen calls as `Viewed page …` (or
 * PageView with `standardPageCall`), identifies (with `advancedMapping`) as user data alone.
 */
import { type Static, t } from "elysia";
import { eventFilteringSchema, flattenJson, isEventAllowed } from "../shared";
import { type DestinationDefinition, type SluiceEvent, TransformError, configKeys, configOf, nowOf, requiredKeysOf } from "../types";
import {
  SERVER_EVENT_PROPERTIES,
  addDataProcessingOptions,
  checkEventTime,
  eventsEndpoint,
  isOn,
  mappedEventName,
  optionsOf,
  propertiesExcept,
  serverEventFields,
  serverEventRequest,
  textOf,
  userData,
  withoutPii,
} from "./conversions-api";
import { type Category, ECOMMERCE_TYPES, IDENTIFY, PAGE, UNFLATTENED, categoryOf, standardCustomData, withListsKept } from "./ecommerce";
import { checkGraphResponse } from "./response";

type Obj = Record<string, any>;

/** RudderStack's names for the event's per-destination options (`integrations.FacebookPixel`). */
const OPTION_NAMES = ["fb_pixel", "fb pixel", "FacebookPixel", "Facebook Pixel", "FB Pixel", "Facebook_Pixel"];

/** A flag RudderStack's exported configs may hold as text. */
const Flag = t.Union([t.Boolean(), t.Literal("true"), t.Literal("false")]);
const Pairs = t.Array(t.Object({ from: t.Optional(t.Any()), to: t.Optional(t.Any()) }, { additionalProperties: true }));

export const FacebookPixelConfig = t.Object(
  {
    blacklistPiiProperties: t.Optional(t.Array(t.Object({ blacklistPiiProperties: t.Optional(t.String()), blacklistPiiHash: t.Optional(Flag) }, { additionalProperties: true }))),
    pixelId: t.String({ minLength: 1 }),
    eventsToEvents: t.Optional(Pairs),
    valueFieldIdentifier: t.Optional(t.String()),
    advancedMapping: t.Optional(Flag),
    whitelistPiiProperties: t.Optional(t.Array(t.Object({ whitelistPiiProperties: t.Optional(t.String()) }, { additionalProperties: true }))),
    limitedDataUSage: t.Optional(Flag),
    accessToken: t.String({ minLength: 1 }),
    testDestination: t.Optional(Flag),
    testEventCode: t.Optional(t.String()),
    standardPageCall: t.Optional(Flag),
    ...eventFilteringSchema,
    removeExternalId: t.Optional(Flag),
    // Read by RudderStack's transformer though its definition lists it for the web SDK only.
    categoryToContent: t.Optional(Pairs),
  },
  { additionalProperties: true },
);
export type FacebookPixelConfig = Static<typeof FacebookPixelConfig>;

/** The category of an event, refusing what the Pixel's server events cannot carry. */
function categoryFor(event: SluiceEvent, type: string, config: FacebookPixelConfig): Category {
  switch (type) {
    case "identify":
      if (!isOn(config.advancedMapping)) {
        throw new TransformError('For identify events, "Advanced Mapping" configuration must be enabled on the RudderStack dashboard');
      }
      return IDENTIFY;
    case "page":
    case "screen":
      // Both read as a page, screens included (`Viewed page <name>`), as RudderStack's do.
      return { ...PAGE, standard: isOn(config.standardPageCall) };
    case "track":
      if (!event.event) throw new TransformError("'event' is required");
      if (typeof event.event !== "string") throw new TransformError("event name should be string");
      return categoryOf(mappedEventName(event, config.eventsToEvents));
    default:
      throw new TransformError(`Message type ${type} not supported`);
  }
}

/** Custom data of a page, screen or track: the properties (flattened, PII rules applied), then the category's own. */
function customDataOf(event: SluiceEvent, category: Category, common: Obj, config: FacebookPixelConfig, hashed: boolean, options: Obj | undefined): Obj {
  let customData = flattenJson(propertiesExcept(event, [...SERVER_EVENT_PROPERTIES, ...UNFLATTENED]));
  if (Object.keys(customData).length === 0 && category.standard) {
    throw new TransformError(`After excluding ${SERVER_EVENT_PROPERTIES}, no fields are present in 'properties' for a standard event`);
  }
  customData = withoutPii(event, customData, config.blacklistPiiProperties, config.whitelistPiiProperties, hashed);
  const props: Obj = event.properties || {};
  if (category.standard) {
    common.event_name = category.eventName;
    customData = standardCustomData(customData, event, props, category, config, options);
    customData.currency = ECOMMERCE_TYPES.includes(category.type) ? props.currency || "USD" : undefined;
    return customData;
  }
  if (category.type === "page") {
    common.event_name = event.name ? `Viewed page ${textOf(event.name)}` : "Viewed a page";
    return customData;
  }
  // A custom event: its revenue is Meta's value.
  customData.value = props.revenue;
  delete customData.revenue;
  return withListsKept(customData, props);
}

export const facebookPixel: DestinationDefinition = {
  name: "FACEBOOK_PIXEL",
  displayName: "Facebook Pixel",
  config: {
    defaultConfig: configKeys(FacebookPixelConfig, [
      "useUpdatedMapping",
      "useNativeSDK",
      "legacyConversionPixelId",
      "connectionMode",
      "consentManagement",
      "autoConfig",
      "oneTrustCookieCategories",
      "ketchConsentPurposes",
    ]),
    supportedMessageTypes: ["identify", "page", "screen", "track"],
    requiredKeys: requiredKeysOf(FacebookPixelConfig),
  },
  configSchema: FacebookPixelConfig,
  transform(event, ctx) {
    const config = configOf(ctx, FacebookPixelConfig);
    if (!isEventAllowed(event, config)) return [];
    if (!event.type) throw new TransformError("'type' is missing");
    checkEventTime(event, event.timestamp || event.originalTimestamp, nowOf(ctx));
    const category = categoryFor(event, String(event.type).toLowerCase(), config);
    if (!config.pixelId) throw new TransformError("Pixel Id not found. Aborting");
    if (!config.accessToken) throw new TransformError("Access token not found. Aborting");

    const options = optionsOf(event, OPTION_NAMES);
    const hashed = !!options?.hashed;
    const user = userData(event, config.removeExternalId, hashed);
    const common = serverEventFields(event, event.channel === "web" ? "website" : event.channel === "mobile" ? "app" : "other");
    const customData = category === IDENTIFY ? undefined : customDataOf(event, category, common, config, hashed, options);
    addDataProcessingOptions(common, event, config.limitedDataUSage);
    return [
      serverEventRequest({
        endpoint: eventsEndpoint(ctx, config.pixelId, config.accessToken),
        userData: user,
        common,
        customData,
        testDestination: config.testDestination,
        testEventCode: config.testEventCode,
      }),
    ];
  },
  checkResponse: (answer) => checkGraphResponse(answer),
};
