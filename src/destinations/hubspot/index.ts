/**
 * HS: HubSpot contacts and events. Legacy API: contacts/v1 createOrUpdate by email (batched on
 * contacts/v1 batch) and track.hubspot.com events (GET with query params). New API: contacts
 * upserted by the lookup field when HubSpot holds it unique, else searched by it and updated or
 * created (CRM v3, batched), or updated by a `hsContactId` external id; custom behavioral
 * events `/events/v3/send` from the `hubspotEvents` mapping. Contact properties are the traits
 * the portal's property list names, typed by it (lookups.ts). An event with
 * `context.mappedToDestination` is a record write into any CRM object instead (records.ts).
 */
import { setOwn } from "../../lib/safe-keys";
import { endpointFor } from "../base-url";
import { GENERIC_PATHS, destinationExternalId } from "../generic-fields";
import { firstPresent, getPath, isEmail, isEventAllowed, isPlainObject, isPresent, refusedListField, traitsOf, wholeKey } from "../shared";
import { type ConfigProblem, type DestinationContext, type DestinationDefinition, type DestinationRequest, type SluiceEvent, TransformError, configOf, restRequest } from "../types";
import { batchRequests, readBatchAnswer } from "./batch";
import { HubspotConfig, authParts, isNewApi, isPrivateApp, validateConfig } from "./config";
import { type PropertyTypes, isUniqueProperty, propertyTypes, searchContact } from "./lookups";
import { isDateLike, utcMidnight, withoutSystemProperties } from "./property-values";
import { isRecordWrite, recordRequests } from "./records";

const API = "https://api.hubapi.com";
const TRACK_URL = "https://track.hubspot.com/v1/event";
type Obj = Record<string, any>;

/** RudderStack's isDefinedNotNullNotEmpty: no undefined, null, NaN, blank text or empty object/list. */
function isFilled(v: unknown): boolean {
  if (v === undefined || v === null || (typeof v === "number" && Number.isNaN(v))) return false;
  if (typeof v === "string") return v.trim().length > 0;
  if (typeof v === "object") return Object.keys(v as object).length > 0;
  return true;
}

/** HubSpot property names are lowercase with `_` for spaces and dots, as RudderStack formats trait keys. */
export function propertyName(key: string): string {
  return key.toLowerCase().replace(/\s+/g, "_").replace(/\./g, "_");
}

const everywhere = (path: string) => [`traits.${path}`, `context.traits.${path}`, `properties.${path}`];

// RudderStack's common contact mapping (HSCommonConfig), in its order.
const COMMON_MAPPING: Array<[string, string[]]> = [
  ["email", everywhere("email")],
  ["firstname", [...GENERIC_PATHS.firstName, "properties.firstname"]],
  ["lastname", [...GENERIC_PATHS.lastName, "properties.lastname"]],
  ["phone", GENERIC_PATHS.phone],
  ["address", everywhere("address.street")],
  ["city", everywhere("address.city")],
  ["country", everywhere("address.country")],
  ["state", everywhere("address.state")],
  ["zip", everywhere("address.postalcode")],
  ["company", everywhere("company.name")],
];

/** Traits, else (when there are none) the properties: where RudderStack reads contact properties from. */
function propertySource(event: SluiceEvent): Obj | undefined {
  const traits = traitsOf(event);
  if (isPlainObject(traits) && Object.keys(traits).length > 0) return traits;
  return isPlainObject(event.properties) ? event.properties : undefined;
}

/** A trait's value as its HubSpot property's type wants it, or RudderStack's refusal. */
function typedValue(key: string, type: string, raw: unknown): unknown {
  // HubSpot clears a property given an empty string, which is what a null trait means.
  let value: unknown = raw === null ? "" : raw;
  if (type === "date" && isDateLike(value)) value = utcMidnight(value);
  if (type === "string" && typeof value !== "string") value = typeof value === "object" ? JSON.stringify(value) : String(value);
  if ((type === "bool" && typeof value === "object") || (type === "number" && typeof value !== "number")) {
    throw new TransformError(`Property ${key} data type ${typeof value} is not matching with Hubspot property data type ${type}`);
  }
  return value;
}

/**
 * The contact properties of an event: the common mapping, then every other trait the portal
 * defines (by its HubSpot name), typed as the portal's property list says.
 */
function contactProperties(event: SluiceEvent, source: Obj, types: PropertyTypes): Obj {
  const out: Obj = {};
  for (const [key, paths] of COMMON_MAPPING) {
    const value = firstPresent(event, paths);
    if (value !== undefined) out[key] = value;
  }
  for (const [key, raw] of Object.entries(source)) {
    const name = propertyName(key);
    if (raw === undefined || out[key] || !Object.hasOwn(types, name)) continue;
    setOwn(out, name, typedValue(key, types[name]!, raw));
  }
  return out;
}

/** The contact properties, after reading the portal's property list when the event has traits to check against it. */
async function contactPropertiesOf(event: SluiceEvent, ctx: DestinationContext, config: HubspotConfig): Promise<Obj> {
  const source = propertySource(event);
  if (!source) return {};
  return contactProperties(event, source, await propertyTypes(ctx, config));
}

// ---------- legacy API ----------

async function legacyIdentify(event: SluiceEvent, ctx: DestinationContext): Promise<DestinationRequest[]> {
  const config = configOf(ctx, HubspotConfig);
  const traits = traitsOf(event);
  if (!traits || !traits.email) throw new TransformError("Identify without email is not supported.");
  const props = withoutSystemProperties(await contactPropertiesOf(event, ctx, config));
  const properties = Object.entries(props).map(([property, value]) => ({ property, value }));
  const { headers, params } = authParts(config);
  const url = `${API}/contacts/v1/contact/createOrUpdate/email/${traits.email}`;
  return [restRequest({ endpoint: endpointFor(ctx, url), headers, params, json: { properties } })];
}

async function legacyTrack(event: SluiceEvent, ctx: DestinationContext): Promise<DestinationRequest[]> {
  const config = configOf(ctx, HubspotConfig);
  if (!config.hubID) throw new TransformError("Invalid hub id value provided in the destination configuration");
  const params: Obj = {
    _a: config.hubID,
    _n: event.event,
    _m: getPath(event, "properties.revenue") || getPath(event, "properties.value") || getPath(event, "properties.total"),
    id: destinationExternalId(event, "hubspotId"),
    ...(await contactPropertiesOf(event, ctx, config)),
  };
  for (const key of Object.keys(params)) if (params[key] === undefined || params[key] === null) delete params[key];
  // The tracking endpoint authenticates by hub id (_a); only a private app token is added.
  const { headers } = isPrivateApp(config) ? authParts(config) : { headers: { "Content-Type": "application/json" } };
  return [restRequest({ method: "GET", endpoint: endpointFor(ctx, TRACK_URL), headers, params })];
}

// ---------- new API ----------

/** RudderStack's lookup: the configured field, then email, at the top level or in traits / context traits / properties. */
function lookupValue(event: SluiceEvent, lookupField: string): { field: string; value: unknown } | undefined {
  for (const field of [lookupField, "email"]) {
    let value = getPath(event, field);
    if (!isFilled(value)) {
      for (const base of ["traits", "context.traits", "properties"]) {
        const obj = getPath(event, base);
        value = obj && typeof obj === "object" ? obj[field] : undefined;
        if (isFilled(value)) break;
      }
    }
    if (isFilled(value)) return { field, value };
  }
  return undefined;
}

/**
 * RudderStack's order: a `hsContactId` external id updates that contact; else a lookup field
 * HubSpot holds unique upserts by it; else the contact is searched by it and updated when
 * found, created when not.
 */
async function newApiIdentify(event: SluiceEvent, ctx: DestinationContext): Promise<DestinationRequest[]> {
  const config = configOf(ctx, HubspotConfig);
  // HubSpot refuses invalid e-mails; RudderStack checks the trait before anything else here
  // (the legacy API's identify has no such check), with validator.js's isEmail (shared.ts): an
  // e-mail that is no text, for which validator throws there, is refused too.
  const email = traitsOf(event)?.email;
  if (email && !isEmail(email)) throw new TransformError(`Email "${email}" is invalid`);
  if (!config.lookupField) throw new TransformError("lookupField is a required field in webapp config");
  const lookupField = String(config.lookupField);
  const { headers, params } = authParts(config);
  // The property list first, as RudderStack's router reads it before any event of the batch.
  const props = withoutSystemProperties(await contactPropertiesOf(event, ctx, config));
  let contactId: unknown = destinationExternalId(event, "hsContactId");
  if (!isPresent(contactId)) {
    if (await isUniqueProperty(ctx, config, lookupField)) {
      const lookup = lookupValue(event, lookupField);
      if (!lookup) throw new TransformError(`Identify:: lookupField "${lookupField}" value not found in traits. Email fallback also not available.`);
      // objectWriteTraceId names the delivery, so a 207 answer's errors reach their own events (checkResponse).
      const input = { id: String(lookup.value), idProperty: lookup.field, properties: props, ...(ctx.jobId !== undefined ? { objectWriteTraceId: String(ctx.jobId) } : {}) };
      return [restRequest({ endpoint: endpointFor(ctx, `${API}/crm/v3/objects/contacts/batch/upsert`), headers, params, json: { inputs: [input] } })];
    }
    if (!traitsOf(event) && !event.properties) throw new TransformError("Identify - Invalid traits value for lookup field");
    const lookup = lookupValue(event, lookupField);
    if (!lookup) throw new TransformError("Identify:: email i.e a default lookup field for contact lookup not found in traits");
    contactId = await searchContact(ctx, config, lookup.field, lookup.value);
  }
  if (isPresent(contactId)) {
    const url = `${API}/crm/v3/objects/contacts/${contactId}`;
    return [restRequest({ method: "PATCH", endpoint: endpointFor(ctx, url), headers, params, json: { properties: props } })];
  }
  return [restRequest({ endpoint: endpointFor(ctx, `${API}/crm/v3/objects/contacts`), headers, params, json: { properties: props } })];
}

// RudderStack's HSTrackConfig and HSTrackPropertiesConfig mappings.
const TRACK_MAPPING: Array<[string, string[]]> = [
  ["utk", everywhere("utk")],
  ["email", GENERIC_PATHS.email],
  ["occurredAt", ["properties.occurred_at", "timestamp", "originalTimestamp"]],
  ["objectId", everywhere("objectId")],
];
const TRACK_PROPERTIES_MAPPING: Array<[string, string[]]> = [
  ["hs_asset_description", ["properties.assetDescription", "properties.hsAssetDescription"]],
  ["hs_asset_type", ["properties.assetType", "properties.hsAssetType"]],
  ["hs_campaign_id", ["properties.campaignId"]],
  ["hs_city", everywhere("address.city")],
  ["hs_country", everywhere("address.country")],
  ["hs_device_name", ["context.device.name"]],
  ["hs_element_class", ["properties.elementClass", "properties.hsElementClass"]],
  ["hs_element_id", ["properties.elementId", "properties.hsElementId"]],
];

function mapped(event: SluiceEvent, mapping: Array<[string, string[]]>): Obj {
  const out: Obj = {};
  for (const [key, paths] of mapping) {
    const value = firstPresent(event, paths);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** The `hubspotEvents` row for this event: names compared trimmed and case-insensitively. */
function eventMapping(event: SluiceEvent, config: HubspotConfig): { eventName: string; properties: Obj } {
  if (!event.event) throw new TransformError("event name is required for track call");
  if (!config.hubspotEvents) throw new TransformError("Event and property mappings are required for track call");
  if (typeof event.event !== "string") throw new TransformError("Event is a required field and should be a string");
  const name = event.event.trim().toLowerCase();
  const rows: Obj[] = Array.isArray(config.hubspotEvents) ? config.hubspotEvents : [];
  const found = rows.find(
    (m) => m?.rsEventName && String(m.rsEventName).trim().toLowerCase() === name && isFilled(m.hubspotEventName),
  );
  if (!found) throw new TransformError(`Event name '${name}' mappings are not configured in the destination`);
  const properties: Obj = {};
  for (const row of (Array.isArray(found.eventProperties) ? found.eventProperties : []) as Obj[]) {
    if (!isFilled(row?.from) || !row.to) continue;
    const value = getPath(event.properties, String(row.from));
    if (isFilled(value)) setOwn(properties, String(row.to), value);
  }
  return { eventName: String(found.hubspotEventName).trim(), properties };
}

/** Each event mapping's property rows read a path of the properties (`from`) and write a key (`to`). */
function checkHubspotConfig(c: Obj): ConfigProblem | undefined {
  const rows: unknown[] = Array.isArray(c.hubspotEvents) ? c.hubspotEvents : [];
  for (const [i, row] of rows.entries()) {
    if (!isPlainObject(row)) continue;
    const problem = refusedListField(row, "eventProperties", "from") ?? refusedListField(row, "eventProperties", "to", wholeKey);
    if (problem) return { ...problem, key: `hubspotEvents[${i}].${problem.key}` };
  }
  return undefined;
}

function newApiTrack(event: SluiceEvent, ctx: DestinationContext): DestinationRequest[] {
  const config = configOf(ctx, HubspotConfig);
  const { eventName, properties } = eventMapping(event, config);
  const json: Obj = { ...mapped(event, TRACK_MAPPING), eventName, properties: { ...properties, ...mapped(event, TRACK_PROPERTIES_MAPPING) } };
  if (!json.email && !json.utk && !json.objectId) throw new TransformError("Either of email, utk or objectId is required for custom behavioral events");
  const url = `${API}/events/v3/send`;
  if (isPrivateApp(config)) return [restRequest({ endpoint: endpointFor(ctx, url), headers: authParts(config).headers, json })];
  // With an API key RudderStack puts hapikey into the URL here, not into the params.
  return [restRequest({ endpoint: endpointFor(ctx, `${url}?hapikey=${config.apiKey}`), headers: { "Content-Type": "application/json" }, json })];
}

// ---------- deletion ----------

const GDPR_DELETE = `${API}/crm/v3/objects/contacts/gdpr-delete`;

/**
 * HubSpot's GDPR delete removes the contact permanently. It finds the contact by e-mail
 * (`idProperty: email`) or by another unique property; a bare userId is never sent as
 * HubSpot's own record id, which could name an unrelated contact.
 */
function deletionBody(user: Obj, config: HubspotConfig): Obj {
  if (isFilled(user.email)) return { objectId: String(user.email), idProperty: "email" };
  const lookupField = typeof config.lookupField === "string" ? config.lookupField.trim() : "";
  if (lookupField && lookupField !== "email" && isFilled(user.userId)) return { objectId: String(user.userId), idProperty: lookupField };
  throw new TransformError(
    `Deleting a HubSpot contact needs the user's email, or a lookupField other than email to find the userId by (user '${user.userId}')`,
  );
}

export const hubspot: DestinationDefinition<Promise<DestinationRequest[]>> = {
  name: "HS",
  displayName: "HubSpot",
  config: {
    // Listed, not configKeys: RudderStack's definition puts the fields of a hubspotEvents row
    // (rsEventName, hubspotEventName, eventProperties), never read at the top level, before the
    // event filtering keys, and this order is the one GET /destination-definitions has always shown.
    defaultConfig: [
      "authorizationType", "hubID", "apiKey", "accessToken", "apiVersion", "lookupField", "hubspotEvents",
      "rsEventName", "hubspotEventName", "eventProperties", "blacklistedEvents", "whitelistedEvents",
      "eventFilteringOption", "doAssociation", "useNativeSDK", "connectionMode", "consentManagement",
      "oneTrustCookieCategories", "ketchConsentPurposes",
    ],
    supportedMessageTypes: ["identify", "track"],
  },
  configSchema: HubspotConfig,
  checkConfig: checkHubspotConfig,
  async transform(event, ctx) {
    const config = configOf(ctx, HubspotConfig);
    if (!isEventAllowed(event, config)) return [];
    if (!event.type) throw new TransformError("Message type is not present. Aborting message.");
    validateConfig(config);
    // A row of a reverse-ETL sync, from any source: written as a CRM record (records.ts).
    if (isRecordWrite(event)) return recordRequests(event, ctx, config);
    const type = String(event.type).toLowerCase();
    if (type === "identify") return isNewApi(config) ? newApiIdentify(event, ctx) : legacyIdentify(event, ctx);
    if (type === "track") return isNewApi(config) ? newApiTrack(event, ctx) : legacyTrack(event, ctx);
    throw new TransformError(`Message type ${event.type} is not supported`);
  },
  batch(requests) {
    return batchRequests(requests);
  },
  checkResponse: readBatchAnswer,
  deleteUsers(users, ctx) {
    const config = configOf(ctx, HubspotConfig);
    if (!isNewApi(config) || !isPrivateApp(config) || !config.accessToken) {
      throw new TransformError("HubSpot user deletion needs apiVersion newApi with a private app accessToken");
    }
    const headers = { "Content-Type": "application/json", Authorization: `Bearer ${config.accessToken}` };
    return users.map((user) => restRequest({ endpoint: endpointFor(ctx, GDPR_DELETE), headers, json: deletionBody(user, config) }));
  },
};
