/**
 * KLAVIYO: Klaviyo's JSON:API (revision 2024-10-15, RudderStack's `v2`), `Authorization:
 * Klaviyo-API-Key <privateApiKey>`. identify imports the profile (`/api/profile-import`, an
 * upsert) and, with `traits.properties.subscribe` and a list, subscribes or unsubscribes it;
 * track and screen create events with the profile inline; group subscribes the user to the list
 * named by the groupId. RudderStack's `v1` (create, then patch on a 409) needs the answer of one
 * call to make the next; Sluice sends the v2 upsert for both versions.
 */
import { t } from "elysia";
import { endpointFor } from "../base-url";
import { destinationExternalId } from "../generic-fields";
import { batchConsecutive, chunkItems, compact, EVENT_FILTERING_KEYS, firstPresent, flattenJson, getPath, isEventAllowed, isPlainObject, isPresent, traitPaths, traitValue, eventFilteringSchema } from "../shared";
import { type DestinationContext, type DestinationDefinition, type DestinationRequest, type SluiceEvent, TransformError, restRequest } from "../types";

type Obj = Record<string, any>;

export const KlaviyoConfig = t.Object(
  {
    privateApiKey: t.Optional(t.String()),
    publicApiKey: t.Optional(t.String()),
    apiVersion: t.Optional(t.String()),
    listId: t.Optional(t.String()),
    consent: t.Optional(t.Union([t.Array(t.String()), t.String()])),
    flattenProperties: t.Optional(t.Boolean()),
    enforceEmailAsPrimary: t.Optional(t.Boolean()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);

const API = "https://a.klaviyo.com/api";
const REVISION = "2024-10-15";
// Klaviyo's bulk subscription jobs take at most 100 profiles.
const MAX_SUBSCRIPTIONS = 100;
/** Traits that are Klaviyo profile fields, so they are not repeated as custom properties. */
const PROFILE_FIELDS = new Set([
  "email", "phone", "firstName", "lastName", "title", "organization", "city", "region", "country", "zip", "address", "timezone",
  "latitude", "longitude", "location", "image", "avatar", "properties",
]);
const E164 = /^\+[1-9]\d{1,14}$/;

function headers(key: string): Record<string, string> {
  return { Authorization: `Klaviyo-API-Key ${key}`, "Content-Type": "application/json", Accept: "application/json", revision: REVISION };
}

/** The profile's attributes, per RudderStack's v2 profile mapping. */
function profileAttributes(event: SluiceEvent, config: Obj, withProperties: boolean): Obj {
  const traits: Obj = firstPresent(event, ["traits", "context.traits"]) ?? {};
  const phone = traitValue(event, "phone");
  if (isPresent(phone) && !E164.test(String(phone))) throw new TransformError("Phone number is not in E.164 format");
  const attributes: Obj = compact({
    external_id: config.enforceEmailAsPrimary ? undefined : event.userId || undefined,
    email: traitValue(event, "email"),
    phone_number: phone,
    first_name: firstPresent(event, [...traitPaths("firstName"), ...traitPaths("firstname"), ...traitPaths("first_name")]),
    last_name: firstPresent(event, [...traitPaths("lastName"), ...traitPaths("lastname"), ...traitPaths("last_name")]),
    organization: traitValue(event, "organization"),
    title: traitValue(event, "title"),
    image: firstPresent(event, [...traitPaths("image"), ...traitPaths("avatar")]),
  });
  const location = compact({
    address1: firstPresent(event, [...traitPaths("address.street"), ...traitPaths("address.address1")]),
    address2: traitValue(event, "address.address2"),
    city: firstPresent(event, [...traitPaths("address.city"), ...traitPaths("city")]),
    region: firstPresent(event, [...traitPaths("address.state"), ...traitPaths("region")]),
    zip: firstPresent(event, [...traitPaths("address.postalCode"), ...traitPaths("zip")]),
    country: firstPresent(event, [...traitPaths("address.country"), ...traitPaths("country")]),
    latitude: firstPresent(event, ["context.location.latitude", ...traitPaths("latitude")]),
    longitude: firstPresent(event, ["context.location.longitude", ...traitPaths("longitude")]),
    timezone: firstPresent(event, ["context.timezone", ...traitPaths("timezone")]),
  });
  if (Object.keys(location).length > 0) attributes.location = location;
  if (!attributes.email && !attributes.phone_number && !attributes.external_id && !destinationExternalId(event, "klaviyo-profileId")) {
    throw new TransformError("None of email, phone, userId or a klaviyo-profileId external id is present");
  }
  if (withProperties) {
    const properties: Obj = Object.fromEntries(Object.entries(traits).filter(([k]) => !PROFILE_FIELDS.has(k)));
    if (config.enforceEmailAsPrimary && event.userId) properties._id = event.userId;
    if (Object.keys(properties).length > 0) attributes.properties = properties;
    const patch = patchProperties(event);
    if (patch) attributes.meta = { patch_properties: patch };
  }
  return attributes;
}

/** `integrations.Klaviyo.fieldsToUnset / fieldsToAppend / fieldsToUnappend` → Klaviyo's patch_properties. */
function patchProperties(event: SluiceEvent): Obj | undefined {
  const opts = getPath(event, "integrations.Klaviyo") ?? getPath(event, "integrations.KLAVIYO");
  if (!isPlainObject(opts)) return undefined;
  const traits: Obj = firstPresent(event, ["traits", "context.traits"]) ?? {};
  const pick = (keys: unknown) => (Array.isArray(keys) ? Object.fromEntries(keys.filter((k) => k in traits).map((k) => [k, traits[k]])) : {});
  const patch = compact({
    unset: Array.isArray(opts.fieldsToUnset) && opts.fieldsToUnset.length ? opts.fieldsToUnset : undefined,
    append: Object.keys(pick(opts.fieldsToAppend)).length ? pick(opts.fieldsToAppend) : undefined,
    unappend: Object.keys(pick(opts.fieldsToUnappend)).length ? pick(opts.fieldsToUnappend) : undefined,
  });
  return Object.keys(patch).length ? patch : undefined;
}

function profileData(event: SluiceEvent, config: Obj, withProperties: boolean): Obj {
  const data: Obj = { type: "profile", attributes: profileAttributes(event, config, withProperties) };
  const id = destinationExternalId(event, "klaviyo-profileId");
  if (id) data.id = id;
  return data;
}

/** A bulk (un)subscription job for one profile; consent channels from the config (email by default). */
function subscriptionJob(event: SluiceEvent, config: Obj, listId: string, subscribe: boolean): Obj {
  const email = traitValue(event, "email");
  const phone = traitValue(event, "phone");
  if (!email && !phone) throw new TransformError("Profile Id, Email or/and Phone are required to subscribe to a list");
  const channels: string[] = Array.isArray(config.consent) ? config.consent : typeof config.consent === "string" ? [config.consent] : ["email"];
  const attributes: Obj = compact({ email, phone_number: phone });
  if (subscribe) {
    const subscriptions: Obj = {};
    if (channels.includes("email") && email) subscriptions.email = { marketing: { consent: "SUBSCRIBED" } };
    if (channels.includes("sms") && phone) subscriptions.sms = { marketing: { consent: "SUBSCRIBED" } };
    attributes.subscriptions = subscriptions;
  }
  return {
    data: {
      type: subscribe ? "profile-subscription-bulk-create-job" : "profile-subscription-bulk-delete-job",
      attributes: { profiles: { data: [{ type: "profile", attributes }] } },
      relationships: { list: { data: { type: "list", id: listId } } },
    },
  };
}

function eventBody(event: SluiceEvent, config: Obj): Obj {
  const name = event.type === "screen" ? event.name || event.event : event.event;
  if (name !== undefined && typeof name !== "string") throw new TransformError("Event type should be a string");
  const props = isPlainObject(event.properties) ? event.properties : {};
  const properties = config.flattenProperties ? flattenJson(props) : props;
  return {
    data: {
      type: "event",
      attributes: compact({
        properties,
        time: firstPresent(event, ["timestamp", "originalTimestamp"]),
        value: props.revenue ?? props.value,
        metric: { data: { type: "metric", attributes: { name } } },
        profile: { data: profileData(event, config, false) },
        unique_id: event.messageId,
      }),
    },
  };
}

const subscriptionPath = (subscribe: boolean) => (subscribe ? "/profile-subscription-bulk-create-jobs" : "/profile-subscription-bulk-delete-jobs");

export const klaviyo: DestinationDefinition = {
  name: "KLAVIYO",
  displayName: "Klaviyo",
  config: {
    defaultConfig: [
      "publicApiKey", "privateApiKey", "apiVersion", "consent", "flattenProperties", "listId", "enforceEmailAsPrimary", ...EVENT_FILTERING_KEYS,
      "useNativeSDK", "connectionMode", "sendPageAsTrack", "additionalPageInfo", "oneTrustCookieCategories",
    ],
    supportedMessageTypes: ["identify", "track", "screen", "group"],
    requiredKeys: ["privateApiKey"],
  },
  configSchema: KlaviyoConfig,
  transform(event, ctx: DestinationContext): DestinationRequest[] {
    if (!ctx.config.privateApiKey) throw new TransformError(`Private API Key is a required field for ${event.type} events`);
    if (!isEventAllowed(event, ctx.config)) return [];
    const h = headers(String(ctx.config.privateApiKey));
    const post = (path: string, json: Obj) => restRequest({ endpoint: endpointFor(ctx, `${API}${path}`), headers: h, json });
    switch (event.type) {
      case "identify": {
        const requests = [post("/profile-import", { data: profileData(event, ctx.config, true) })];
        const traitProps = firstPresent(event, ["traits.properties", "context.traits.properties"]);
        const listId = traitProps?.listId || ctx.config.listId;
        if (isPresent(traitProps?.subscribe) && listId) {
          const subscribe = !!traitProps.subscribe;
          requests.push(post(subscriptionPath(subscribe), subscriptionJob(event, ctx.config, String(listId), subscribe)));
        }
        return requests;
      }
      case "track":
      case "screen":
        return [post("/events", eventBody(event, ctx.config))];
      case "group": {
        if (!event.groupId) throw new TransformError("groupId is a required field for group events");
        const subscribe = firstPresent(event, ["traits.subscribe", "context.traits.subscribe"]);
        if (!isPresent(subscribe)) throw new TransformError("Subscribe flag should be included in group call");
        return [post(subscriptionPath(!!subscribe), subscriptionJob(event, ctx.config, String(event.groupId), !!subscribe))];
      }
      default:
        throw new TransformError(`Event type ${event.type} is not supported`);
    }
  },
  batch(requests) {
    // Consecutive jobs for the same list (and direction) become one job of up to 100 profiles.
    const jobKey = (r: DestinationRequest) =>
      /profile-subscription-bulk-(create|delete)-jobs$/.test(r.endpoint) ? JSON.stringify([r.endpoint, r.headers, getPath(r.body.JSON, "data.relationships.list.data.id")]) : null;
    return batchConsecutive(requests, jobKey, (run) => {
      const first = run[0]!.body.JSON as Obj;
      const profiles = run.flatMap((r) => getPath(r.body.JSON, "data.attributes.profiles.data") ?? []);
      return chunkItems(profiles, MAX_SUBSCRIPTIONS).map((data) =>
        restRequest({
          endpoint: run[0]!.endpoint,
          headers: run[0]!.headers,
          json: { data: { ...first.data, attributes: { profiles: { data } } } },
        }),
      );
    });
  },
};
