/**
 * What KLAVIYO's two request families share: the API versions and their revisions, headers,
 * trait exclusion lists, and the value rules of RudderStack's mapping files.
 */
import { setOwn } from "../../lib/safe-keys";
import { GENERIC_PATHS } from "../generic-fields";
import { extractCustomFields, firstPresent, getPath, isDefined, isPlainObject, isPresent, setPath } from "../shared";
import { type DestinationContext, type DestinationRequest, type SluiceEvent, TransformError, configOf, restRequest } from "../types";
import { endpointFor } from "../base-url";
import { KlaviyoConfig } from "./config";

export type Obj = Record<string, any>;

export const API = "https://a.klaviyo.com";

/**
 * RudderStack's API versions. A config without `apiVersion` (made before the key existed) runs
 * the v1 requests; v2 and v3 use the profile-import API. v3 states the consent in every
 * subscription job, unsubscribing too, and refuses a job that ends up stating none.
 */
const VERSIONS: Record<string, { revision: string; importApi: boolean; statesConsent: boolean }> = {
  v1: { revision: "2023-02-22", importApi: false, statesConsent: false },
  v2: { revision: "2024-10-15", importApi: true, statesConsent: false },
  v3: { revision: "2026-04-15", importApi: true, statesConsent: true },
};
export function versionOf(config: KlaviyoConfig) {
  const v = config.apiVersion;
  if (v === undefined || v === null) return { name: "v1", ...VERSIONS.v1! };
  const known = typeof v === "string" && Object.hasOwn(VERSIONS, v) ? VERSIONS[v] : undefined;
  if (!known) throw new TransformError(`Unsupported Klaviyo apiVersion: ${v}`);
  return { name: v as string, ...known };
}

export function headers(config: KlaviyoConfig, revision: string): Record<string, string> {
  return { Authorization: `Klaviyo-API-Key ${config.privateApiKey}`, "Content-Type": "application/json", Accept: "application/json", revision };
}

export function post(ctx: DestinationContext, path: string, revision: string, json: Obj, method: DestinationRequest["method"] = "POST"): DestinationRequest {
  return restRequest({ method, endpoint: endpointFor(ctx, `${API}${path}`), headers: headers(configOf(ctx, KlaviyoConfig), revision), json });
}

/** Traits RudderStack maps to v1 fields (or ignores), so they are not custom properties. */
export const V1_MAPPED_TRAITS = [
  "email", "firstName", "firstname", "first_name", "lastName", "lastname", "last_name", "phone", "title", "organization", "city", "region",
  "country", "zip", "image", "timezone", "id", "anonymousId", "userId", "properties",
];
/** The same for the profile-import API. */
export const V2_MAPPED_TRAITS = [
  "email", "firstName", "firstname", "first_name", "lastName", "lastname", "last_name", "phone", "title", "organization", "city", "region",
  "country", "zip", "image", "timezone", "anonymousId", "userId", "properties", "location", "_kx", "street", "address",
];

/** A value RudderStack's mapping files take: the first of the paths that is truthy, 0 or false. */
export const pick = (event: SluiceEvent, paths: string[]) => firstPresent(event, paths);
const traitsAndProps = (key: string) => [`traits.${key}`, `context.traits.${key}`, `properties.${key}`];
export const PATHS = {
  title: traitsAndProps("title"),
  organization: traitsAndProps("organization"),
  image: traitsAndProps("image"),
  timezone: traitsAndProps("timezone"),
  city: ["traits.city", "traits.address.city", "context.traits.city", "context.traits.address.city", "properties.city"],
  region: ["traits.region", "traits.address.region", "context.traits.region", "context.traits.address.region", "properties.region"],
  state: ["traits.state", "traits.address.state", "context.traits.address.state", "context.traits.state", "properties.state"],
  country: ["traits.country", "traits.address.country", "context.traits.country", "context.traits.address.country", "properties.country"],
  zip: ["traits", "traits.address", "context.traits", "context.traits.address", "properties"].flatMap((p) => ["zip", "postalcode", "postalCode"].map((k) => `${p}.${k}`)),
  street: ["traits.street", "traits.address.street", "context.traits.street", "context.traits.address.street", "properties.street"],
};

export const generic = (event: SluiceEvent, field: keyof typeof GENERIC_PATHS) => pick(event, GENERIC_PATHS[field]);

/** RudderStack's generic traits: `traits`, else `context.traits`. */
export function traitsInfo(event: SluiceEvent): Obj | undefined {
  const t = generic(event, "traits");
  return isPlainObject(t) ? t : undefined;
}

/**
 * A reverse ETL identify (`context.mappedToDestination`), as RudderStack reads it: the first
 * external id goes into the traits under its identifier type and becomes the userId, and the
 * subscription flag defaults to true, so that traits without `properties` subscribe to the
 * config's list with the config's consent. Returns the event to map (a copy when changed) and
 * the traits that decide the subscription.
 */
export function identifyInput(event: SluiceEvent): { event: SluiceEvent; traits: Obj | undefined } {
  if (!getPath(event, "context.mappedToDestination")) return { event, traits: traitsInfo(event) };
  const copy: SluiceEvent = structuredClone(event);
  const traits = traitsInfo(copy);
  const type = getPath(copy, "context.externalId.0.identifierType");
  const id = getPath(copy, "context.externalId.0.id");
  if (traits && typeof type === "string" && type !== "") setPath(traits, type, id);
  if (id) copy.userId = id;
  if (!traits) return { event: copy, traits };
  if (!traits.properties) return { event: copy, traits: { properties: { subscribe: true } } };
  if (isPlainObject(traits.properties) && traits.properties.subscribe === undefined) traits.properties.subscribe = true;
  return { event: copy, traits };
}

/**
 * The traits (top-level, then context, which wins) that no mapping named, taken as RudderStack
 * takes them (extractCustomFields, shared.ts): a key is a path, so a trait `a.b` is sent as
 * `{a: {b}}` (and as `a.b` again with flattenProperties). The traits are copied first, as that
 * writes into the objects it takes.
 */
export function customTraits(event: SluiceEvent, exclude: string[]): Obj {
  const copy = (v: unknown) => (v !== null && typeof v === "object" ? structuredClone(v) : v);
  return extractCustomFields({}, [copy(event.traits), copy(event.context?.traits)], exclude);
}

/**
 * RudderStack's flattening for Klaviyo (its flattenJson without array flattening): nested keys
 * joined by dots; an array is opened up (`a[0].b`, `a[1]`) only when its *first* item is an
 * object, an array or null, and is otherwise kept whole, whatever its later items hold: so
 * `[1, {b: 2}]` stays as it is while `[{b: 2}, 1]` becomes `a[0].b` and `a[1]`, and an array of
 * arrays becomes `a[0]`, `a[1]`, each of those flattened by the same rule. An empty object or
 * array stays as its own value. A value that is not an object is kept under the key "", as
 * RudderStack keeps it; nothing at all flattens to {}.
 */
export function flatten(value: unknown): Obj {
  const out: Obj = {};
  const walk = (cur: unknown, prefix: string) => {
    if (cur === null || typeof cur !== "object") {
      if (cur !== undefined) setOwn(out, prefix, cur);
    } else if (Array.isArray(cur)) {
      // typeof null is "object" too, so an array starting with null is opened up.
      if (cur.length === 0 || typeof cur[0] !== "object") setOwn(out, prefix, cur);
      else cur.forEach((v, i) => walk(v, `${prefix}[${i}]`));
    } else {
      const keys = Object.keys(cur);
      if (keys.length === 0 && prefix) setOwn(out, prefix, {});
      for (const k of keys) walk((cur as Obj)[k], prefix ? `${prefix}.${k}` : k);
    }
  };
  walk(value, "");
  return out;
}

/** A mapping's `isFloat` value: parsed as a number, refused when it is none. */
export function asFloat(v: unknown): number | undefined {
  if (!isDefined(v)) return undefined;
  const n = typeof v === "number" ? v : Number.parseFloat(String(v));
  if (Number.isNaN(n)) throw new TransformError("Invalid float value");
  return n;
}

/** `properties` without the keys a mapping already used; absent when the event has none. */
export function propertiesExcept(event: SluiceEvent, exclude: string[]): Obj | undefined {
  const props = event.properties;
  if (!isPresent(props)) return undefined;
  if (!isPlainObject(props)) return props;
  return Object.fromEntries(Object.entries(props).filter(([k]) => !exclude.includes(k)));
}

/**
 * The event as a track's or screen's profile is read from in RudderStack: the `properties` row of
 * its KlaviyoTrack (v1) or KlaviyoTrackV2 mapping names keys to leave out of the event's
 * properties, and RudderStack's mapping deletes them from the message itself before the profile
 * is built from it. So such a profile never takes its e-mail or phone from `properties.email` or
 * `properties.phone` (v1's e-commerce events, built from another mapping, still do).
 */
export function withoutExcludedProperties(event: SluiceEvent, exclude: string[]): SluiceEvent {
  return isPlainObject(event.properties) ? { ...event, properties: propertiesExcept(event, exclude) } : event;
}

/** The list a subscription goes to: the group's id, else the trait's, else the config's. */
export function listIdFor(event: SluiceEvent, traits: Obj | undefined, config: KlaviyoConfig): unknown {
  if (event.type === "group") return event.groupId;
  return traits?.properties?.listId || config.listId;
}

export const consentChannels = (consent: unknown): unknown[] => (Array.isArray(consent) ? consent : [consent]);
