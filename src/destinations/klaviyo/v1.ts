/**
 * RudderStack's `apiVersion: v1` (and configs without the key): revision 2023-02-22, events
 * with a `$`-keyed profile, e-commerce events renamed to Klaviyo's metrics, and
 * `list_id`/`subscriptions` subscription jobs.
 */
import { compact, isPlainObject } from "../shared";
import { type DestinationContext, type DestinationRequest, type SluiceEvent, TransformError, configOf } from "../types";
import {
  asFloat, consentChannels, customTraits, flatten, generic, identifyInput, listIdFor, type Obj, PATHS, pick, post, propertiesExcept, traitsInfo,
  V1_MAPPED_TRAITS, withoutExcludedProperties,
} from "./common";
import { KlaviyoConfig } from "./config";
import { createOrFindProfile } from "./lookups";

const REVISION = "2023-02-22";

type Mapping = Array<[dest: string, source: string, float?: boolean]>;
const VIEWED_PRODUCT: Mapping = [
  ["ProductName", "name"], ["ProductID", "product_id"], ["SKU", "sku"], ["ImageURL", "image_url"], ["URL", "url"], ["Brand", "brand"],
  ["Price", "price"], ["CompareAtPrice", "compare_at_price"], ["Categories", "categories"],
];
const ADDED_TO_CART: Mapping = [
  ["$value", "value", true], ["AddedItemProductName", "name"], ["AddedItemProductID", "product_id"], ["AddedItemSKU", "sku"],
  ["AddedItemImageURL", "image_url"], ["AddedItemURL", "url"], ["AddedItemPrice", "price"], ["AddedItemQuantity", "quantity"],
  ["AddedItemCategories", "categories"], ["ItemNames", "item_names"], ["CheckoutURL", "checkout_url"],
];
const STARTED_CHECKOUT: Mapping = [
  ["$event_id", "order_id"], ["$value", "value", true], ["Categories", "categories"], ["CheckoutURL", "checkout_url"], ["ItemNames", "item_names"],
];
const ITEM: Mapping = [
  ["ProductID", "product_id"], ["SKU", "sku"], ["ProductName", "name"], ["Quantity", "quantity"], ["ItemPrice", "price"], ["RowTotal", "row_total"],
  ["ProductURL", "url"], ["ImageURL", "image_url"], ["ProductCategories", "categories"],
];
/** Segment's e-commerce events (trimmed, lower case) and the Klaviyo metric each becomes. */
const ECOMMERCE: Record<string, { metric: string; mapping: Mapping }> = {
  "product viewed": { metric: "Viewed Product", mapping: VIEWED_PRODUCT },
  "product clicked": { metric: "Viewed Product", mapping: VIEWED_PRODUCT },
  "product added": { metric: "Added to Cart", mapping: ADDED_TO_CART },
  "checkout started": { metric: "Started Checkout", mapping: STARTED_CHECKOUT },
};

function mapFields(source: unknown, mapping: Mapping): Obj {
  const out: Obj = {};
  if (!isPlainObject(source)) return out;
  for (const [dest, key, float] of mapping) {
    const v = source[key];
    if (v || v === 0 || v === false) out[dest] = float ? asFloat(v) : v;
  }
  return out;
}

/** The event's `$`-keyed profile (RudderStack's KlaviyoProfile mapping) plus the unmapped traits. */
function eventProfile(event: SluiceEvent, config: KlaviyoConfig): Obj {
  const profile: Obj = compact({
    $email: generic(event, "emailOnly"),
    $first_name: generic(event, "firstName"),
    $last_name: generic(event, "lastName"),
    $phone_number: generic(event, "phone"),
    $city: pick(event, PATHS.city),
    $region: pick(event, [...PATHS.region, ...PATHS.state]),
    $country: pick(event, PATHS.country),
    $zip: pick(event, PATHS.zip),
    $consent: pick(event, ["context.traits.consent", "traits.consent", "properties.consent"]),
    $image: pick(event, PATHS.image),
    $address1: pick(event, PATHS.street),
  });
  if (!config.enforceEmailAsPrimary) profile.$id = generic(event, "userId");
  else {
    if (!profile.$email && !profile.$phone_number) throw new TransformError("None of email and phone are present in the payload");
    profile._id = generic(event, "userId");
  }
  return { ...compact(profile), ...customTraits(event, V1_MAPPED_TRAITS) };
}

export function v1Event(event: SluiceEvent, ctx: DestinationContext): DestinationRequest {
  const config = configOf(ctx, KlaviyoConfig);
  const raw = event.event;
  if (raw && typeof raw !== "string") throw new TransformError("Event type should be a string");
  const key = typeof raw === "string" ? raw.trim().toLowerCase() : "";
  const ecommerce = Object.hasOwn(ECOMMERCE, key) ? ECOMMERCE[key] : undefined;
  let attributes: Obj;
  // The event the profile is read from (withoutExcludedProperties).
  let profileSource = event;
  if (ecommerce && event.properties) {
    const properties = mapFields(event.properties, ecommerce.mapping);
    const items = event.properties.items || event.properties.products;
    const mapped = Array.isArray(items) ? items.map((item) => compact(mapFields(item, ITEM))).filter((item) => Object.keys(item).length > 0) : [];
    if (mapped.length > 0) properties.items = mapped;
    attributes = { metric: { name: ecommerce.metric }, properties };
  } else {
    const sources = ["event", "properties.event", "properties.name"];
    const name = pick(event, sources);
    if (name === undefined) throw new TransformError(`Missing required value from ${JSON.stringify(sources)}`);
    const excluded = ["email", "phone", "revenue", "total", "value"];
    attributes = compact({ metric: { name }, properties: propertiesExcept(event, excluded) });
    const props: Obj = isPlainObject(event.properties) ? event.properties : {};
    const value = props.revenue || props.total || props.value;
    if (value) attributes.value = value;
    profileSource = withoutExcludedProperties(event, excluded);
  }
  if (config.flattenProperties) attributes.properties = flatten(attributes.properties);
  const profile = eventProfile(profileSource, config);
  attributes.profile = config.flattenProperties ? flatten(profile) : profile;
  if (event.timestamp) attributes.time = event.timestamp;
  return post(ctx, "/api/events", REVISION, { data: { type: "event", attributes } });
}

/** A `list_id`/`subscriptions` job; channels only when a consent is given (the trait's, else the config's). */
export function v1Subscription(event: SluiceEvent, traits: Obj | undefined, ctx: DestinationContext): DestinationRequest {
  const config = configOf(ctx, KlaviyoConfig);
  const subscription: Obj = { email: generic(event, "email"), phone_number: generic(event, "phone") };
  const consent = traits?.properties?.consent || config.consent;
  if (consent) {
    const channels: Obj = {};
    const list = consentChannels(consent);
    if (list.includes("email")) channels.email = ["MARKETING"];
    if (list.includes("sms")) channels.sms = ["MARKETING"];
    subscription.channels = channels;
  }
  const attributes = compact({ list_id: listIdFor(event, traits, config), subscriptions: [compact(subscription)] });
  return post(ctx, "/api/profile-subscription-bulk-create-jobs", REVISION, { data: { type: "profile-subscription-bulk-create-job", attributes } });
}

/**
 * RudderStack's v1 identify: the profile is created at Klaviyo while transforming (lookups.ts),
 * and the event's request is the PATCH of the id Klaviyo answers with (the new profile's, or the
 * existing one's), the same profile in its body; then, with `subscribe` and a list, the job.
 */
export async function v1Identify(input: SluiceEvent, ctx: DestinationContext): Promise<DestinationRequest[]> {
  const config = configOf(ctx, KlaviyoConfig);
  const { event, traits } = identifyInput(input);
  const attributes: Obj = compact({
    external_id: generic(event, "userId"),
    // emailOnly: an external id is never taken for the e-mail.
    email: generic(event, "emailOnly"),
    first_name: generic(event, "firstName"),
    last_name: generic(event, "lastName"),
    phone_number: generic(event, "phone"),
    title: pick(event, PATHS.title),
    organization: pick(event, PATHS.organization),
    image: pick(event, PATHS.image),
  });
  const location = compact({
    city: pick(event, PATHS.city),
    region: pick(event, [...PATHS.region, ...PATHS.state]),
    country: pick(event, PATHS.country),
    zip: pick(event, PATHS.zip),
    timezone: pick(event, PATHS.timezone),
    address1: pick(event, PATHS.street),
  });
  if (Object.keys(location).length > 0) attributes.location = location;
  let properties = customTraits(event, V1_MAPPED_TRAITS);
  if (config.enforceEmailAsPrimary) {
    if (!attributes.email && !attributes.phone_number) throw new TransformError("None of email and phone are present in the payload");
    delete attributes.external_id;
    properties._id = generic(event, "userId");
  }
  properties = compact(properties);
  if (config.flattenProperties) properties = flatten(properties);
  if (Object.keys(properties).length > 0) attributes.properties = properties;
  const id = await createOrFindProfile(ctx, config.privateApiKey, { data: { type: "profile", attributes } });
  const requests = [post(ctx, `/api/profiles/${encodeURIComponent(String(id))}`, REVISION, { data: { type: "profile", attributes, id } }, "PATCH")];
  if (traits?.properties?.subscribe && (traits.properties.listId || config.listId)) requests.push(v1Subscription(event, traits, ctx));
  return requests;
}

export function v1Group(event: SluiceEvent, ctx: DestinationContext): DestinationRequest[] {
  if (!event.groupId) throw new TransformError("groupId is a required field for group events");
  if (!event.traits?.subscribe) throw new TransformError("Subscribe flag should be true for group call");
  return [v1Subscription(event, traitsInfo(event), ctx)];
}
