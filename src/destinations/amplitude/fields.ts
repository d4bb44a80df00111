/**
 * The device, app and location fields of an Amplitude event, per message type, as
 * RudderStack's AM mapping files define them. Web events (other than screen) read browser, OS
 * and vendor from `context.userAgent`, as Amplitude's own browser SDK reports them.
 */
import { getPath, isAppleFamily, isDefined, isPlainObject, isPresent } from "../shared";
import type { SluiceEvent } from "../types";
import { amplitudeUserAgent } from "../user-agent";
import type { AmplitudeConfig } from "./config";

type Obj = Record<string, any>;

/** Which RudderStack mapping an event uses; they differ in a few fields. */
export type MappingKind = "identify" | "group" | "track" | "revenue" | "page" | "screen";

const isWeb = (event: SluiceEvent) => typeof event.channel === "string" && event.channel.toLowerCase() === "web";

/** A top-level trait named like the Amplitude field wins over the mapping (RudderStack's reverse-ETL rule). */
function traitFor(event: SluiceEvent, key: string): unknown {
  return isPlainObject(event.traits) ? event.traits[key] : undefined;
}

/**
 * Fields RudderStack computes (UA-derived on the web). A top-level trait of the same name is
 * used instead and then dropped from the traits, so it is not also sent as a user property.
 */
function computedFields(event: SluiceEvent, kind: MappingKind, config: AmplitudeConfig): Obj {
  const ua = isWeb(event) && kind !== "screen" ? amplitudeUserAgent(getPath(event, "context.userAgent")) : undefined;
  const fromUa = (value: string | undefined, path: string) => (ua ? value || getPath(event, path) : getPath(event, path));
  const eventId = getPath(event, "integrations.Amplitude.event_id");
  const fields: Array<[string, () => unknown]> = [
    ["os_name", () => fromUa(ua?.browser.name, "context.os.name")],
    ["os_version", () => fromUa(ua?.browser.version, "context.os.version")],
    ["device_model", () => fromUa(ua?.os.name, "context.device.model")],
    ["device_manufacturer", () => fromUa(ua?.device.vendor, "context.device.manufacturer")],
    ["platform", () => (kind !== "screen" && isWeb(event) ? "Web" : getPath(event, "context.device.type"))],
    ["device_brand", () => (config.mapDeviceBrand ? getPath(event, "context.device.brand") : undefined)],
  ];
  // The revenue mapping carries no event_id (group does: RudderStack's fixture Test 61).
  if (kind !== "revenue") fields.push(["event_id", () => (typeof eventId === "string" ? undefined : eventId)]);
  const out: Obj = {};
  for (const [key, compute] of fields) {
    const trait = traitFor(event, key);
    if (!isDefined(trait)) {
      out[key] = compute();
      continue;
    }
    out[key] = trait;
    // The screen mapping reads OS and device fields directly, so only its brand and event id consume the trait.
    if (kind !== "screen" || key === "device_brand" || key === "event_id") delete event.traits[key];
  }
  return out;
}

const PLAIN_FIELDS: Array<[string, string]> = [
  ["device_id", "anonymousId"],
  ["carrier", "context.network.carrier"],
  ["app_name", "context.app.name"],
  ["app_version", "context.app.version"],
  ["language", "context.locale"],
  ["insert_id", "messageId"],
];

const REVENUE_FIELDS: Array<[string, string]> = [
  ["productId", "properties.product_id"],
  ["price", "properties.price"],
  ["quantity", "properties.quantity"],
  ["revenue", "properties.revenue"],
  ["revenueType", "properties.revenue_type"],
];

/**
 * The mapped fields of one event. Mutates `event.traits` (a caller's copy) the way
 * RudderStack does, so a trait used as a field is not repeated in user_properties.
 */
export function mappedFields(event: SluiceEvent, kind: MappingKind, config: AmplitudeConfig): Obj {
  const out = computedFields(event, kind, config);
  // The group mapping predates insert_id; RudderStack sends group events without one.
  const plain = kind === "group" ? PLAIN_FIELDS.filter(([key]) => key !== "insert_id") : PLAIN_FIELDS;
  for (const [key, path] of kind === "revenue" ? [...plain, ...REVENUE_FIELDS] : plain) {
    const trait = traitFor(event, key);
    out[key] = isDefined(trait) ? trait : getPath(event, path);
  }
  return out;
}

const LOCATION: Array<[string, string[]]> = [
  ["region", ["context.location.region"]],
  ["location_lat", ["context.location.latitude"]],
  ["location_lng", ["context.location.longitude"]],
  ["dma", ["context.location.dma"]],
  ["country", ["context.location.country", "traits.address.country", "context.traits.address.country"]],
  ["city", ["context.location.city", "traits.address.city", "context.traits.address.city"]],
];

/** Location fields, filled where still empty; a top-level trait of the same name always wins. */
export function addLocation(event: SluiceEvent, payload: Obj): void {
  for (const [key, paths] of LOCATION) {
    for (const path of paths) {
      const trait = traitFor(event, key);
      if (isDefined(trait)) {
        payload[key] = trait;
        continue;
      }
      if (isDefined(payload[key])) continue;
      const value = getPath(event, path);
      if (isPresent(value)) payload[key] = value;
    }
  }
}

/** Mobile events: brand from the manufacturer (unless mapDeviceBrand) and the advertising ids. */
export function addMobileIds(event: SluiceEvent, payload: Obj, config: AmplitudeConfig): void {
  if (!config.mapDeviceBrand) payload.device_brand = getPath(event, "context.device.manufacturer");
  const type = getPath(event, "context.device.type");
  if (typeof type !== "string" || type === "") return;
  const advertisingId = getPath(event, "context.device.advertisingId");
  if (isAppleFamily(type)) {
    payload.idfa = advertisingId;
    payload.idfv = getPath(event, "context.device.id");
  } else if (type.toLowerCase() === "android") {
    payload.adid = advertisingId;
  }
}
