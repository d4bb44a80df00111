/**
 * RudderStack's `apiVersion: v2` and `v3`: Klaviyo's JSON:API with the profile-import upsert,
 * events carrying the profile inline, and profile-subscription bulk jobs.
 */
import { destinationExternalId } from "../generic-fields";
import { compact, integrationsObject, isDefined, isPlainObject } from "../shared";
import { type DestinationContext, type DestinationRequest, type SluiceEvent, TransformError, configOf } from "../types";
import {
  asFloat, consentChannels, customTraits, flatten, generic, identifyInput, listIdFor, type Obj, PATHS, pick, post, propertiesExcept, traitsInfo,
  V2_MAPPED_TRAITS, type versionOf, withoutExcludedProperties,
} from "./common";
import { KlaviyoConfig } from "./config";

type Version = ReturnType<typeof versionOf>;

/**
 * libphonenumber's test as RudderStack applies it: with spaces, dashes and brackets removed,
 * a `+`, a country code and digits only. The number is sent as written.
 */
function isE164(phone: unknown): boolean {
  return typeof phone === "string" && /^\+[1-9]\d{1,14}$/.test(phone.replace(/[^\d+]/g, ""));
}

const integrationOptions = (event: SluiceEvent) => integrationsObject(event, "klaviyo");

/** `integrations.Klaviyo.fieldsToUnset / fieldsToAppend / fieldsToUnappend` → Klaviyo's patch_properties, and the traits they used. */
function patchProperties(event: SluiceEvent): { meta: Obj; used: string[] } {
  const opts = integrationOptions(event);
  const traits = traitsInfo(event) ?? {};
  const patch: Obj = {};
  let used: string[] = [];
  if (Array.isArray(opts?.fieldsToUnset)) {
    patch.unset = opts.fieldsToUnset;
    used = opts.fieldsToUnset;
  }
  for (const [option, op] of [["fieldsToAppend", "append"], ["fieldsToUnappend", "unappend"]] as const) {
    const keys = opts?.[option];
    if (!Array.isArray(keys)) continue;
    patch[op] = Object.fromEntries(keys.filter((k) => isDefined(traits[k])).map((k) => [k, traits[k]]));
    used = used.concat(keys);
  }
  return { meta: { patch_properties: patch }, used };
}

/** The profile (RudderStack's KlaviyoProfileV2 mapping); an identify carries `meta` beside the attributes, an event inside them. */
export function profileData(event: SluiceEvent, config: KlaviyoConfig, forIdentify: boolean): Obj {
  const attributes: Obj = compact({
    external_id: generic(event, "userIdOnly"),
    anonymous_id: pick(event, ["anonymousId"]),
    email: generic(event, "emailOnly"),
    first_name: generic(event, "firstName"),
    last_name: generic(event, "lastName"),
    phone_number: generic(event, "phone"),
    title: pick(event, PATHS.title),
    organization: pick(event, PATHS.organization),
    _kx: pick(event, ["traits._kx", "context.traits._kx"]),
    image: pick(event, PATHS.image),
  });
  const location = compact({
    city: pick(event, PATHS.city),
    region: pick(event, [...PATHS.region, ...PATHS.state]),
    country: pick(event, PATHS.country),
    zip: pick(event, PATHS.zip),
    ip: pick(event, ["context.ip", "request_ip"]),
    timezone: pick(event, PATHS.timezone),
    latitude: pick(event, ["latitude", "context.address.latitude", "context.location.latitude"]),
    longitude: pick(event, ["longitude", "context.address.longitude", "context.location.longitude"]),
    address1: pick(event, PATHS.street),
  });
  if (Object.keys(location).length > 0) attributes.location = location;
  if (isDefined(attributes.phone_number) && !isE164(attributes.phone_number)) throw new TransformError("Phone number is not in E.164 format.");
  const { meta, used } = patchProperties(event);
  let properties = customTraits(event, [...V2_MAPPED_TRAITS, ...used]);
  if (config.flattenProperties) properties = flatten(properties);
  if (config.enforceEmailAsPrimary) {
    // With the userId as external_id too, Klaviyo could find two profiles for one person.
    delete attributes.external_id;
    properties._id = generic(event, "userIdOnly");
  }
  const data: Obj = compact({ type: "profile", id: destinationExternalId(event, "klaviyo-profileId"), attributes: { ...attributes, properties: compact(properties) } });
  if (forIdentify) data.meta = meta;
  else data.attributes.meta = meta;
  return data;
}

function subscriptionJob(event: SluiceEvent, traits: Obj | undefined, ctx: DestinationContext, version: Version, subscribe: boolean): DestinationRequest {
  const config = configOf(ctx, KlaviyoConfig);
  const consent = traits?.consent || traits?.properties?.consent || config.consent;
  const email = generic(event, "email");
  const phone = generic(event, "phone");
  const attributes: Obj = { email, phone_number: phone };
  if ((subscribe || version.statesConsent) && consent) {
    const channels = consentChannels(consent);
    const status = { marketing: { consent: subscribe ? "SUBSCRIBED" : "UNSUBSCRIBED" } };
    const subscriptions: Obj = {};
    if (channels.includes("email") && email) subscriptions.email = status;
    if (channels.includes("sms") && phone) subscriptions.sms = status;
    if (Object.keys(subscriptions).length > 0) attributes.subscriptions = subscriptions;
  }
  if (version.statesConsent && !attributes.subscriptions) {
    throw new TransformError("No subscriptions could be resolved for v3 API version. Ensure consent channels (email/sms) match the identifiers present in the event");
  }
  // Klaviyo takes a profile id for subscribing only.
  const profile = compact({ type: "profile", id: subscribe ? destinationExternalId(event, "klaviyo-profileId") : undefined, attributes: compact(attributes) });
  // RudderStack refuses only a profile id without e-mail and phone, not a profile with neither.
  if (!email && !phone && profile.id) throw new TransformError("Profile Id, Email or/and Phone are required to subscribe to a list");
  return post(ctx, `/api/${subscribe ? "profile-subscription-bulk-create-jobs" : "profile-subscription-bulk-delete-jobs"}`, version.revision, {
    data: {
      type: subscribe ? "profile-subscription-bulk-create-job" : "profile-subscription-bulk-delete-job",
      attributes: { profiles: { data: [profile] } },
      relationships: { list: { data: { type: "list", id: listIdFor(event, traits, config) } } },
    },
  });
}

export function v2Identify(input: SluiceEvent, ctx: DestinationContext, version: Version): DestinationRequest[] {
  const config = configOf(ctx, KlaviyoConfig);
  const { event, traits } = identifyInput(input);
  const requests = [post(ctx, "/api/profile-import", version.revision, { data: profileData(event, config, true) })];
  const subscribe = isPlainObject(traits?.properties) ? traits.properties.subscribe : undefined;
  if (isDefined(subscribe) && (traits!.properties.listId || config.listId)) requests.push(subscriptionJob(event, traits, ctx, version, !!subscribe));
  return requests;
}

export function v2Event(event: SluiceEvent, ctx: DestinationContext, version: Version): DestinationRequest {
  const name = event.event || event.name;
  if (name && typeof name !== "string") throw new TransformError("Event type should be a string");
  const excluded = ["event", "email", "phone", "revenue", "total", "value", "value_currency", "currency"];
  const attributes: Obj = compact({
    value: asFloat(pick(event, ["properties.revenue", "properties.total", "properties.value"])),
    value_currency: pick(event, ["properties.currency"]),
    time: generic(event, "timestamp"),
    properties: propertiesExcept(event, excluded),
  });
  const config = configOf(ctx, KlaviyoConfig);
  if (config.flattenProperties) attributes.properties = flatten(attributes.properties);
  // Read without the excluded properties, so no e-mail or phone from them (withoutExcludedProperties).
  attributes.profile = { data: profileData(withoutExcludedProperties(event, excluded), config, false) };
  attributes.metric = { data: { type: "metric", attributes: { name } } };
  attributes.unique_id = event.messageId;
  return post(ctx, "/api/events", version.revision, { data: { type: "event", attributes } });
}

export function v2Group(event: SluiceEvent, ctx: DestinationContext, version: Version): DestinationRequest[] {
  if (!event.groupId) throw new TransformError("groupId is a required field for group events");
  const traits = traitsInfo(event);
  if (!isDefined(traits?.subscribe)) throw new TransformError("Subscribe flag should be included in group call");
  return [subscriptionJob(event, traits, ctx, version, !!traits!.subscribe)];
}
