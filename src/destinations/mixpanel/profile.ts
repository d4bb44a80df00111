/**
 * Mixpanel user profiles as RudderStack's MP destination builds them for identify: the `$set`
 * of mapped ($email, $first_name, …) and custom traits with device fields, and the
 * config-driven `$set_once` / `$union` / `$append` operations, whose traits then leave `$set`.
 */
import { setOwn } from "../../lib/safe-keys";
import { copyFieldsExcept, firstPresent, getPath, isAppleFamily, isPlainObject, traitPaths, withoutUndefined } from "../shared";
import { type SluiceEvent, TransformError } from "../types";
import { parseUserAgent } from "../user-agent";
import type { MixpanelConfig } from "./config";

type Obj = Record<string, any>;
export type Mapping = Array<[string, string[]]>;

/** Each destination key from the first source path holding a present value. */
export function mapPaths(source: unknown, table: Mapping): Obj {
  const out: Obj = {};
  for (const [key, paths] of table) {
    const value = firstPresent(source, paths);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

const each = (...names: string[]) => names.flatMap((n) => [`traits.${n}`, `context.traits.${n}`]);

/** MPIdentifyConfig: profile properties read from the traits, then the context. */
const PROFILE: Mapping = [
  ["$created", traitPaths("createdAt")],
  // RudderStack's `emailOnly`: an external id is never taken for an e-mail.
  ["$email", [...traitPaths("email"), "properties.email"]],
  ["$first_name", traitPaths("firstName", "firstname", "first_name")],
  ["$last_name", traitPaths("lastName", "lastname", "last_name")],
  ["$name", traitPaths("name")],
  ["$username", each("username", "userName")],
  ["$phone", [...traitPaths("phone"), "properties.phone"]],
  ["$avatar", traitPaths("avatar")],
  ["$country_code", [...each("address.country", "country"), "context.location.country"]],
  ["$city", [...each("city", "address.city"), "context.location.city"]],
  ["$region", [...each("state", "address.state"), "context.location.region"]],
  ["$geo_source", ["context.location.geoSource"]],
  ["$timezone", ["context.location.timezone"]],
  ["$latitude", ["context.location.latitude"]],
  ["$longitude", ["context.location.longitude"]],
  ["$carrier", ["context.network.carrier"]],
  ["$manufacturer", ["context.device.manufacturer"]],
  ["$model", ["context.device.model"]],
  ["$screen_height", ["context.screen.height"]],
  ["$screen_width", ["context.screen.width"]],
  ["$wifi", ["context.network.wifi"]],
  ["$unsubscribed", [...traitPaths("unsubscribed"), "properties.unsubscribed"]],
  ["$initial_referrer", ["context.page.initial_referrer", "context.page.initialReferrer"]],
  ["$initial_referring_domain", ["context.page.initial_referring_domain", "context.page.initialReferringDomain"]],
];

/** MPSetOnceConfig: the same names, read from the traits picked for an operation. */
const OPERATION_PROFILE: Mapping = [
  ["$created", ["createdAt"]],
  ["$email", ["email"]],
  ["$first_name", ["firstName", "firstname", "first_name"]],
  ["$last_name", ["lastName", "lastname", "last_name"]],
  ["$name", ["name"]],
  ["$username", ["username", "userName"]],
  ["$phone", ["phone"]],
  ["$avatar", ["avatar"]],
  ["$country_code", ["country", "address.country"]],
  ["$city", ["city", "address.city"]],
  ["$region", ["state", "address.state", "location.region"]],
  ["$unsubscribed", ["unsubscribed"]],
  ["$geo_source", ["location.geoSource"]],
  ["$timezone", ["location.timezone"]],
  ["$latitude", ["location.latitude"]],
  ["$longitude", ["location.longitude"]],
  ["$carrier", ["network.carrier"]],
  ["$manufacturer", ["device.manufacturer"]],
  ["$model", ["device.model"]],
  ["$screen_height", ["screen.height"]],
  ["$screen_width", ["screen.width"]],
  ["$wifi", ["network.wifi"]],
  ["$initial_referrer", ["page.initial_referrer"]],
  ["$initial_referring_domain", ["page.initial_referring_domain", "page.initialReferringDomain"]],
];

const IOS_PROFILE: Mapping = [
  ["$os", ["context.os.name"]],
  ["$ios_device_model", ["context.device.model"]],
  ["$ios_version", ["context.os.version"]],
  ["$ios_app_release", ["context.app.version"]],
  ["$ios_app_version", ["context.app.build"]],
  ["$ios_lib_version", ["properties.iosLibVersion"]],
];
const ANDROID_PROFILE: Mapping = [
  ["$os", ["context.os.name"]],
  ["$android_model", ["context.device.model"]],
  ["$android_os_version", ["context.os.version"]],
  ["$android_manufacturer", ["context.device.manufacturer"]],
  ["$android_app_version", ["context.app.version"]],
  ["$android_app_version_code", ["context.app.build"]],
  ["$android_lib_version", ["properties.androidLibVersion"]],
  ["$android_brand", ["properties.androidBrand", "context.device.manufacturer"]],
];

/** Traits already sent under a $-name are not repeated as custom properties. */
const EXCLUDED = new Set([
  "createdAt", "email", "firstName", "firstname", "first_name", "lastName", "lastname", "last_name", "name",
  "username", "userName", "phone", "avatar", "address", "country", "city", "state", "unsubscribed",
]);


/** `$browser` / `$browser_version` for web events, from the user agent. */
export function browserFields(event: SluiceEvent): Obj {
  const ua = getPath(event, "context.userAgent");
  if (event.channel !== "web" || !ua) return {};
  const { browser } = parseUserAgent(ua);
  return { $browser: browser.name, $browser_version: browser.version };
}

/** iOS / Android profile fields and push tokens, when the event names its device. */
function deviceFields(event: SluiceEvent): Obj {
  const device = getPath(event, "context.device");
  if (!isPlainObject(device)) return {};
  const type = typeof device.type === "string" ? device.type.toLowerCase() : "";
  const tokens = device.token !== undefined && device.token !== null ? [device.token] : undefined;
  if (isAppleFamily(type)) return withoutUndefined({ $ios_devices: tokens, ...mapPaths(event, IOS_PROFILE) });
  if (type === "android") return withoutUndefined({ $android_devices: tokens, ...mapPaths(event, ANDROID_PROFILE) });
  return {};
}

/** The `$set` of an identify call. */
export function profileProperties(event: SluiceEvent, config: MixpanelConfig): Obj {
  const out = mapPaths(event, PROFILE);
  if (out.$geo_source !== undefined && out.$geo_source !== "reverse_geocoding") {
    throw new TransformError("$geo_source value must be either null or 'reverse_geocoding' ");
  }
  // RudderStack composes a name only from both parts.
  if (!out.$name && out.$first_name && out.$last_name) out.$name = `${out.$first_name} ${out.$last_name}`;
  copyFieldsExcept([event.traits, event.context?.traits], out, EXCLUDED);
  // Configs saved before RudderStack's "new mapping" expect $firstName/$lastName.
  if (!config.useNewMapping) {
    if (out.$first_name) [out.$firstName, out.$first_name] = [out.$first_name, undefined];
    if (out.$last_name) [out.$lastName, out.$last_name] = [out.$last_name, undefined];
  }
  return withoutUndefined({ ...out, ...deviceFields(event), ...browserFields(event) });
}

const nonEmpty = (v: unknown) =>
  v !== undefined &&
  v !== null &&
  !(typeof v === "number" && Number.isNaN(v)) &&
  !(typeof v === "string" && v.trim() === "") &&
  !(typeof v === "object" && Object.keys(v as object).length === 0);

function unsetPath(target: unknown, path: string): void {
  const parts = path.split(".");
  const parent = parts.length === 1 ? target : getPath(target, parts.slice(0, -1).join("."));
  if (isPlainObject(parent)) delete parent[parts[parts.length - 1]!];
}

/** The profile operations RudderStack drives from config, in the order it sends them. */
export const PROFILE_OPERATIONS: Array<[string, keyof MixpanelConfig]> = [
  ["$set_once", "setOnceProperties"],
  ["$union", "unionProperties"],
  ["$append", "appendProperties"],
];

/**
 * Takes the configured properties (dotted paths into traits, then context traits) out of the
 * event's traits and maps them like a profile. Returns the operation's properties and the
 * event with those traits removed, so later operations and `$set` do not repeat them.
 */
export function takeOperationTraits(event: SluiceEvent, list: unknown): { props: Obj; event: SluiceEvent } {
  const paths = (Array.isArray(list) ? list : []).map((item) => item?.property).filter((p): p is string => typeof p === "string" && p !== "");
  if (paths.length === 0) return { props: {}, event };
  const traits = structuredClone(isPlainObject(event.traits) ? event.traits : {});
  const contextTraits = structuredClone(isPlainObject(event.context?.traits) ? event.context.traits : {});
  const picked: Obj = {};
  for (const path of paths) {
    const name = path.split(".").pop()!;
    const fromTraits = getPath(traits, path);
    const fromContext = getPath(contextTraits, path);
    if (nonEmpty(fromTraits)) {
      setOwn(picked, name, fromTraits);
      unsetPath(traits, path);
    }
    if (nonEmpty(fromContext)) {
      if (!Object.hasOwn(picked, name)) setOwn(picked, name, fromContext);
      unsetPath(contextTraits, path);
    }
  }
  const props = Object.keys(picked).length > 0 ? copyFieldsExcept([picked], mapPaths(picked, OPERATION_PROFILE), EXCLUDED) : {};
  return { props, event: { ...event, traits, context: { ...event.context, traits: contextTraits } } };
}
