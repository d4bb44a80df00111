/**
 * What FACEBOOK_PIXEL and FACEBOOK_CONVERSIONS share: both send server events to Meta's
 * Conversions API (`POST graph.facebook.com/<version>/<pixel or dataset id>/events`), one event
 * per call, as a form whose `data` is a list of one JSON-encoded server event. The user data,
 * the server-event fields, the PII rules for custom data, the content type and category, and the
 * time window Meta takes events in are the same for both, as in RudderStack's shared Facebook
 * utilities; each kind builds its own custom data.
 */
import { createHash } from "node:crypto";
import { readKey, setOwn } from "../../lib/safe-keys";
import { endpointFor } from "../base-url";
import { getPath, integrationsObject, isPlainObject } from "../shared";
import { type DestinationContext, type DestinationRequest, type SluiceEvent, TransformError, restRequest } from "../types";

type Obj = Record<string, any>;

/** The Graph API version RudderStack calls. */
export const GRAPH_API_VERSION = "v25.0";

/** Where a server event goes; the token rides in the query, as RudderStack sends it. */
export function eventsEndpoint(ctx: DestinationContext, id: string, accessToken: string): string {
  return endpointFor(ctx, `https://graph.facebook.com/${GRAPH_API_VERSION}/${id}/events?access_token=${accessToken}`);
}

/** The values Meta takes as `action_source`. */
export const ACTION_SOURCES = ["email", "website", "app", "phone_call", "chat", "physical_store", "system_generated", "other"];

/** Properties that never go into custom data: they are server-event fields. */
export const SERVER_EVENT_PROPERTIES = ["opt_out", "event_id", "action_source"];

/** Properties dropped from custom data unless whitelisted (or blacklisted with hashing). */
const DEFAULT_PII_PROPERTIES = [
  "email",
  "firstName",
  "lastName",
  "firstname",
  "lastname",
  "first_name",
  "last_name",
  "gender",
  "city",
  "country",
  "phone",
  "state",
  "zip",
  "postalCode",
  "birthday",
];

/** A config flag RudderStack may export as a string. */
export const isOn = (v: unknown): boolean => v === true || v === "true";

/**
 * SHA-256 of the text's UTF-8 bytes, as Meta hashes what it matches against (its documented
 * examples: `valéry` → 08e1996b…, `정` → 8fa8cd9c…). RudderStack's hashing library reads a
 * string as Latin-1 (one byte per UTF-16 unit, the high byte dropped), so for any value with a
 * character past U+007F (José, São Paulo, 정) it sends a hash Meta can never match, and
 * characters past U+00FF collide; Sluice keeps UTF-8 on purpose. ASCII values hash the same.
 */
export const sha256 = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex");

/** A date's milliseconds, as `new Date(v)` reads a value (NaN for what is no date). */
export function millisOf(v: unknown): number {
  try {
    return new Date(v as string).getTime();
  } catch {
    return Number.NaN; // an object that cannot be made a date
  }
}

/**
 * A value as text, as String() makes it; an object whose own `toString` is no function (which
 * makes String() throw, and RudderStack's transform crash) is written as JSON instead.
 */
export function textOf(v: unknown): string {
  try {
    return String(v);
  } catch {
    return JSON.stringify(v) ?? "";
  }
}

// ---- mapping ---------------------------------------------------------------------------------

/**
 * Where a mapped field is read: one path (its value as found, "" included) or a list of paths
 * (the first holding a value other than undefined, null, "" or NaN), as RudderStack's mapping
 * files distinguish a single source key from a list.
 */
export type Source = string | string[];

export interface Field {
  key: string;
  from: Source;
  required?: boolean;
  /** Used when the source holds nothing (undefined or null); a falsy default is no default. */
  default?: () => unknown;
  /** Applied to a value found (not to a default). */
  format?: (value: any) => any;
  /** What a missing required value is reported as (the mapping's source key); default `from`. */
  label?: Source;
}

export function valueAt(event: unknown, from: Source): any {
  if (typeof from === "string") return getPath(event, from);
  for (const path of from) {
    const v = getPath(event, path);
    if (v || v === 0 || v === false) return v;
  }
  return null;
}

const kept = (v: unknown) => !!v || v === 0 || v === false;

/** An object of the fields found, in the fields' order; a required one missing aborts in RudderStack's words. */
export function mapFields(event: unknown, fields: Field[]): Obj {
  const out: Obj = {};
  for (const f of fields) {
    let v = valueAt(event, f.from);
    if (v === undefined || v === null) v = f.default?.() || v;
    else if (f.format) v = f.format(v);
    if (kept(v)) setOwn(out, f.key, v);
    else if (f.required) throw new TransformError(`Missing required value from ${JSON.stringify(f.label ?? f.from)}`);
  }
  return out;
}

// ---- user data -------------------------------------------------------------------------------

/** Trait paths in RudderStack's order: each spelling under traits, then under context.traits. */
const traits = (...keys: string[]) => [...keys.map((k) => `traits.${k}`), ...keys.map((k) => `context.traits.${k}`)];

/** RudderStack's gender reading: f or m, hashed whatever `hashed` says; anything else is left out. */
function genderHash(gender: unknown): string | null {
  if (typeof gender !== "string") return null;
  const g = gender.toUpperCase();
  if (g === "FEMALE" || g === "F" || g === "WOMAN") return sha256("f");
  if (g === "MALE" || g === "M" || g === "MAN") return sha256("m");
  return null;
}

const trim = (v: any) => (typeof v === "string" ? v.trim() : v);
const lower = (v: any) => textOf(v).toLowerCase();

/**
 * The user_data fields. Personal data is SHA-256 hashed (Meta's rule), normalised first as
 * RudderStack does; an event whose integrations options say `hashed: true` carries it hashed
 * already, and it is sent as is.
 */
export function userDataFields(hashed: boolean, extra: Field[] = []): Field[] {
  const hash = (v: any) => (hashed ? textOf(v) : sha256(textOf(v)));
  const normalisedHash = (v: any) => hash(lower(trim(v)));
  return [
    { key: "external_id", from: ["userId", "traits.userId", "traits.id", "context.traits.userId", "context.traits.id", "anonymousId"], required: true, format: hash },
    { key: "em", from: traits("email"), format: normalisedHash },
    { key: "ph", from: traits("phone"), format: hash },
    { key: "ge", from: traits("gender"), format: genderHash },
    { key: "db", from: traits("birthday"), format: hash },
    { key: "ln", from: traits("lastname", "lastName", "last_name"), format: normalisedHash },
    { key: "fn", from: traits("firstname", "firstName", "first_name"), format: normalisedHash },
    { key: "name", from: traits("name"), format: textOf },
    { key: "ct", from: traits("address.city"), format: (v) => hash(lower(v)) },
    { key: "st", from: traits("address.state"), format: (v) => hash(lower(v)) },
    { key: "zp", from: [...traits("address.zip"), ...traits("address.postalCode")], format: (v) => hash(lower(v)) },
    { key: "country", from: traits("address.country"), format: (v) => hash(lower(v)) },
    { key: "client_ip_address", from: ["context.ip", "request_ip"] },
    { key: "client_user_agent", from: "context.userAgent" },
    { key: "fbc", from: ["context.fbc", "properties.fbc"] },
    { key: "fbp", from: ["context.fbp", "properties.fbp"] },
    { key: "subscription_id", from: "context.subscription_id" },
    { key: "lead_id", from: "context.lead_id" },
    { key: "fb_login_id", from: "context.fb_login_id" },
    ...extra,
  ];
}

/** The event's integrations options for the kind (`integrations.FacebookPixel`, …), under RudderStack's names for it. */
export function optionsOf(event: SluiceEvent, names: string[]): Obj | undefined {
  return integrationsObject(event, ...names);
}

/**
 * Meta's click id, `fb.1.<event time in ms>.<fbclid>`, made from the page URL's `fbclid` when the
 * event carries no `fbc` (Meta's recipe, as RudderStack follows it).
 */
function fbcFromPageUrl(event: SluiceEvent): string | undefined {
  const url = getPath(event, "context.page.url");
  if (!url) return undefined;
  let fbclid: string | null;
  try {
    fbclid = new URL(url).searchParams.get("fbclid");
  } catch {
    return undefined;
  }
  if (!fbclid) return undefined;
  const created = valueAt(event, ["timestamp", "originalTimestamp"]);
  return `fb.1.${millisOf(created)}.${fbclid}`;
}

/** user_data: the mapped fields, `external_id` dropped when the config says so, a two-part name split into fn/ln, fbc deduced. */
export function userData(event: SluiceEvent, removeExternalId: unknown, hashed: boolean, extra: Field[] = []): Obj {
  const data = mapFields(event, userDataFields(hashed, extra));
  if (isOn(removeExternalId)) delete data.external_id;
  const parts = typeof data.name === "string" ? data.name.split(" ") : undefined;
  if (parts && parts.length === 2) {
    const hash = (v: string) => (hashed ? v : sha256(v));
    data.fn = hash(parts[0]!);
    data.ln = hash(parts[1]!);
  }
  delete data.name;
  data.fbc = data.fbc || fbcFromPageUrl(event);
  return data;
}

// ---- server event fields ---------------------------------------------------------------------

/** RudderStack's seconds: an all-digits value is taken as it is; a date becomes whole seconds. */
function unixSeconds(v: any): any {
  if (/^[+-]?\d+$/.test(textOf(v))) return v;
  return Math.floor(millisOf(v) / 1000);
}

const SERVER_EVENT_FIELDS: Field[] = [
  { key: "event_name", from: ["event", "type"], required: true },
  { key: "event_time", from: ["timestamp", "originalTimestamp"], label: "timestamp", required: true, format: unixSeconds },
  { key: "event_source_url", from: ["context.page.url", "properties.url"] },
  { key: "opt_out", from: ["traits.opt_out", "context.traits.opt_out", "properties.opt_out"] },
  { key: "event_id", from: ["traits.event_id", "context.traits.event_id", "properties.event_id", "messageId"] },
  { key: "action_source", from: ["traits.action_source", "context.traits.action_source", "properties.action_source"] },
];

/** The server event's own fields (event_name, event_time, …); action_source is checked against Meta's list. */
export function serverEventFields(event: SluiceEvent, fallbackActionSource: unknown): Obj {
  const common = mapFields(event, SERVER_EVENT_FIELDS);
  let actionSource = fallbackActionSource;
  if (common.action_source) {
    if (!ACTION_SOURCES.includes(common.action_source)) throw new TransformError("Invalid Action Source type");
    actionSource = common.action_source;
  }
  common.action_source = actionSource;
  return common;
}

/** With `limitedDataUSage` on, the event's `context.dataProcessingOptions` [options, country, state] go along. */
export function addDataProcessingOptions(common: Obj, event: SluiceEvent, limitedDataUse: unknown): void {
  if (!isOn(limitedDataUse)) return;
  const options = getPath(event, "context.dataProcessingOptions");
  if (!Array.isArray(options)) return;
  [common.data_processing_options, common.data_processing_options_country, common.data_processing_options_state] = options;
}

/**
 * Meta refuses events older than 7 days (62 for a physical store's) or more than a minute
 * ahead; RudderStack refuses them before sending, counting whole seconds as it does.
 */
export function checkEventTime(event: SluiceEvent, timestamp: unknown, now: number): void {
  const actionSource = getPath(event, "traits.action_source") || getPath(event, "context.traits.action_source") || getPath(event, "properties.action_source");
  const at = timestamp === undefined || timestamp === null ? now : millisOf(timestamp);
  const start = Math.floor(at / 1000);
  const current = Math.floor(now / 1000);
  const days = Math.ceil((current - start) / 86400);
  const minutes = Math.ceil((start - current) / 60);
  const window = actionSource === "physical_store" ? 62 : 7;
  if (days > window || minutes > 1) throw new TransformError(`Events must be sent within ${window} days of their occurrence or up to one minute in the future.`);
}

// ---- config lists ----------------------------------------------------------------------------

/** A `[{from, to}]` list's entries with both sides set (an empty string counts), as RudderStack keeps them. */
function validPairs(list: unknown): Obj[] {
  if (!Array.isArray(list)) return [];
  return list.filter((e) => isPlainObject(e) && (e.from || e.from === "") && (e.to || e.to === ""));
}

/** from → to of a `[{from, to}]` list, blank `from`s skipped; keys in lower case unless told. */
export function pairMap(list: unknown, lowerCase = true): Map<string, any> | undefined {
  if (!Array.isArray(list)) return undefined;
  const map = new Map<string, any>();
  for (const e of validPairs(list)) {
    const from = String(e.from);
    if (from.trim() === "") continue;
    map.set(lowerCase ? from.toLowerCase() : from, e.to);
  }
  return map;
}

/** The standard event a track maps to through `eventsToEvents`, else its name in lower case. */
export function mappedEventName(event: SluiceEvent, eventsToEvents: unknown): string {
  const name = String(event.event).toLowerCase();
  return pairMap(eventsToEvents)?.get(name) || name;
}

// ---- custom data -----------------------------------------------------------------------------

/** The event's properties but `exclude`d ones, as custom data starts. */
export function propertiesExcept(event: SluiceEvent, exclude: string[]): Obj {
  const out: Obj = {};
  const props = event.properties;
  if (!isPlainObject(props)) return out;
  for (const [k, v] of Object.entries(props)) if (!exclude.includes(k) && v !== undefined) setOwn(out, k, v);
  return out;
}

/**
 * Custom data without personal data: default PII properties are dropped unless whitelisted;
 * blacklisted properties are dropped, or hashed when the blacklist entry says so.
 */
export function withoutPii(event: SluiceEvent, customData: Obj, blacklist: unknown, whitelist: unknown, hashed: boolean): Obj {
  const out: Obj = { ...customData };
  const allowed = (Array.isArray(whitelist) ? whitelist : []).map((e) => e?.whitelistPiiProperties);
  const denied = new Map<string, unknown>();
  for (const e of Array.isArray(blacklist) ? blacklist : []) denied.set(String(e?.blacklistPiiProperties), e?.blacklistPiiHash);
  for (const key of Object.keys(out)) {
    const pii = DEFAULT_PII_PROPERTIES.includes(key) && !allowed.includes(key);
    if (denied.has(key) && denied.get(key)) {
      const raw = textOf(readKey(event.properties, key));
      setOwn(out, key, hashed ? raw : sha256(raw));
    } else if (pii) delete out[key];
  }
  return out;
}

/**
 * Meta's content_type: the event's integrations option, else the config's category mapping of
 * the event's category (or its first product's), else the default for the event.
 */
export function contentType(event: SluiceEvent, fallback: unknown, categoryToContent: unknown, options: Obj | undefined): any {
  if (options?.contentType) return options.contentType;
  const props = event.properties;
  let category = props?.category;
  if (!category && Array.isArray(props?.products) && props.products.length > 0 && isObject(props.products[0])) category = props.products[0].category;
  if (Array.isArray(categoryToContent) && category) {
    const to = pairMap(categoryToContent, false)?.get(textOf(category));
    if (to) return to;
  }
  return fallback;
}

/** Meta's content_category is text: a list is joined with commas, a number made text; an object is refused. */
export function contentCategory(category: unknown): any {
  let c: any = category;
  if (Array.isArray(c)) c = c.map(textOf).join(",");
  if (c && typeof c !== "string" && typeof c !== "object") c = textOf(c);
  if (c && typeof c === "object") throw new TransformError("'properties.category' must be either be a string or an array");
  return c;
}

/** A value that is an object and not a list (RudderStack's isObject). */
export const isObject = (v: unknown): boolean => v !== null && (typeof v === "object" || typeof v === "function") && !Array.isArray(v);

// ---- the request -----------------------------------------------------------------------------

/**
 * The request: one server event (user_data, its fields, app_data and custom_data when not
 * empty) as the form's `data` list, with `test_event_code` for a test destination.
 */
export function serverEventRequest(parts: {
  endpoint: string;
  userData: Obj;
  common: Obj;
  customData?: Obj;
  appData?: Obj;
  testDestination: unknown;
  testEventCode: unknown;
}): DestinationRequest {
  const body: Obj = { user_data: parts.userData, ...parts.common };
  if (parts.appData && Object.keys(parts.appData).length > 0) body.app_data = parts.appData;
  // A key set to undefined counts: RudderStack then sends `custom_data: {}`.
  if (parts.customData && Object.keys(parts.customData).length > 0) body.custom_data = parts.customData;
  const form: Obj = { data: [JSON.stringify(body)] };
  if (isOn(parts.testDestination) && parts.testEventCode !== undefined) form.test_event_code = parts.testEventCode;
  return restRequest({ endpoint: parts.endpoint, form });
}
