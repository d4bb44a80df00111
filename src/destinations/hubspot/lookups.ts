/**
 * HS's lookups, the calls RudderStack's HS makes before it builds a request:
 *
 * - the portal's contact property list (`GET /properties/v1/contacts/properties`), whose names
 *   decide which traits are sent and whose types convert them;
 * - the CRM v3 contact properties (`GET /crm/v3/properties/contacts`), to learn whether the
 *   lookup field holds unique values (then the contact is upserted by it);
 * - the contact search by the lookup field (`POST /crm/v3/objects/contacts/search`), to update
 *   the contact found or create a new one;
 * - for record writes, the search of any object type by the record's identifier
 *   (`POST /crm/v3/objects/<type>/search`, the values of a batch's records together).
 *
 * A 408, 429, 5xx or network failure is thrown by the lookup client itself (the delivery is
 * retried); any other answer but 200 aborts the event in RudderStack's words.
 */
import { endpointFor } from "../base-url";
import { gathered } from "../gathering";
import { isPlainObject } from "../shared";
import { type DestinationContext, type LookupAnswer, RetryableTransformError, TransformError, lookupOf, remembered } from "../types";

const API = "https://api.hubapi.com";

/** Property name → HubSpot type (`string`, `number`, `bool`, `date`, `datetime`, `enumeration`). */
export type PropertyTypes = Record<string, string>;

export interface HubspotAuth {
  authorizationType?: string;
  accessToken?: string;
  apiKey?: string;
}

const isPrivateApp = (config: HubspotAuth) => config.authorizationType === "newPrivateAppApi";

/**
 * RudderStack reads the property list once per router batch and keeps it no longer. The
 * transforms of one Sluice batch run together and share one call; its answer is kept this long,
 * about the time a batch takes, so that a batch whose events arrive here a little apart still
 * shares it while a property created in HubSpot is used as soon as RudderStack would.
 */
export const PROPERTY_TYPES_KEEP_MS = 5_000;
/** RudderStack keeps the CRM v3 property list per destination and object type for 24 hours. */
export const UNIQUE_PROPERTIES_KEEP_MS = 24 * 60 * 60 * 1000;
/** The answer's body as RudderStack's error texts quote it (its parsed JSON, else its text). */
const quoted = (answer: LookupAnswer) => JSON.stringify(answer.body || "");

/** The portal's contact properties and their types (RudderStack's getProperties). */
export function propertyTypes(ctx: DestinationContext, config: HubspotAuth): Promise<PropertyTypes> {
  return remembered(ctx, "contactPropertyTypes", PROPERTY_TYPES_KEEP_MS, async () => {
    const endpoint = endpointFor(ctx, `${API}/properties/v1/contacts/properties`);
    const answer = isPrivateApp(config)
      ? await lookupOf(ctx)({ method: "GET", endpoint, headers: { "Content-Type": "application/json", Authorization: `Bearer ${config.accessToken}` } })
      : await lookupOf(ctx)({ method: "GET", endpoint, params: { hapikey: config.apiKey } });
    if (answer.status !== 200) throw new TransformError(`Failed to get hubspot properties: ${quoted(answer)}`);
    const types: PropertyTypes = Object.create(null);
    if (Array.isArray(answer.body)) {
      for (const p of answer.body) if (p && typeof p.name === "string") types[p.name] = p.type;
    }
    return types;
  });
}

/**
 * Whether HubSpot holds `field` unique among the objects of `objectType` (RudderStack's
 * isLookupFieldUnique): the CRM v3 list is kept 24 hours per object type, and fetched again when
 * it does not name the field (a property created since).
 */
export async function isUniqueProperty(ctx: DestinationContext, config: HubspotAuth, field: string, objectType = "contacts"): Promise<boolean> {
  const unique = await remembered(
    ctx,
    `uniqueProperties:${objectType}`,
    UNIQUE_PROPERTIES_KEEP_MS,
    async () => {
      const endpoint = endpointFor(ctx, `${API}/crm/v3/properties/${encodeURIComponent(objectType)}`);
      const answer = isPrivateApp(config)
        ? await lookupOf(ctx)({ method: "GET", endpoint, headers: { Authorization: `Bearer ${config.accessToken}` } })
        : await lookupOf(ctx)({ method: "GET", endpoint, params: { hapikey: config.apiKey } });
      if (answer.status !== 200) throw new TransformError(`Failed to fetch HubSpot ${objectType} properties: ${quoted(answer)}`);
      const map: Record<string, boolean> = Object.create(null);
      const results = answer.body?.results;
      if (Array.isArray(results)) {
        for (const p of results) if (p && typeof p.name === "string") map[p.name] = Boolean(p.hasUniqueValue);
      }
      return map;
    },
    { usable: (map) => Object.hasOwn(map, field) },
  );
  return Object.hasOwn(unique, field) ? unique[field]! : false;
}

/**
 * The id of the one contact whose `field` equals `value`, or null when there is none
 * (RudderStack's searchContacts). Two or more is ambiguous and aborts the event.
 */
export async function searchContact(ctx: DestinationContext, config: HubspotAuth, field: string, value: unknown): Promise<string | null> {
  const json = {
    filterGroups: [{ filters: [{ propertyName: field, value, operator: "EQ" }] }],
    sorts: ["ascending"],
    properties: [field],
    limit: 2,
    after: 0,
  };
  const endpoint = endpointFor(ctx, `${API}/crm/v3/objects/contacts/search`);
  const answer = isPrivateApp(config)
    ? await lookupOf(ctx)({ method: "POST", endpoint, headers: { "Content-Type": "application/json", Authorization: `Bearer ${config.accessToken}` }, json })
    : await lookupOf(ctx)({ method: "POST", endpoint, headers: { "Content-Type": "application/json" }, params: { hapikey: config.apiKey }, json });
  if (answer.status !== 200) throw new TransformError(`Failed to get hubspot contacts: ${quoted(answer)}`);
  const results = answer.body?.results;
  if (!Array.isArray(results) || results.length === 0) return null;
  if (results.length > 1) {
    throw new TransformError("Unable to get single Hubspot contact. More than one contacts found. Retry with unique lookupPropertyName and lookupValue");
  }
  const id = results[0]?.id;
  return id === undefined || id === null ? null : String(id);
}

// ---------- record search (record writes, records.ts) ----------

/** HubSpot's search takes at most 100 values in an IN filter (RudderStack's chunk) and answers at most 100 records a page. */
const SEARCH_VALUES_MAX = 100;
const SEARCH_PAGE_LIMIT = 100;
/** HubSpot's search pages through at most 10,000 results: this many pages of 100. */
const SEARCH_PAGES_MAX = 100;

/**
 * A property HubSpot also matches a record by: a contact's other e-mails. RudderStack searches it
 * too, since an e-mail held there is not found by `email` and creating it would be refused as a
 * duplicate.
 */
const SECONDARY_PROPERTY: Record<string, string> = { email: "hs_additional_emails" };

/** A record the search found: its id, its identifier's value and, where there is one, its secondary property's. */
interface FoundRecord {
  id: string;
  value: string;
  secondary?: string;
}

/**
 * The records of `objectType` whose `identifierType` (or, for e-mails, whose other e-mails) is one
 * of `values` (lower-cased), every page of HubSpot's answer (RudderStack's getExistingContactsData).
 */
async function searchRecords(ctx: DestinationContext, config: HubspotAuth, objectType: string, identifierType: string, values: string[]): Promise<FoundRecord[]> {
  const secondary = SECONDARY_PROPERTY[identifierType];
  const filterGroups = [{ filters: [{ propertyName: identifierType, values, operator: "IN" }] }];
  const properties = [identifierType];
  if (secondary) {
    filterGroups.push({ filters: [{ propertyName: secondary, values, operator: "IN" }] });
    properties.push(secondary);
  }
  const endpoint = endpointFor(ctx, `${API}/crm/v3/objects/${encodeURIComponent(objectType)}/search`);
  const auth: { headers: Record<string, string>; params?: Record<string, unknown> } = isPrivateApp(config)
    ? { headers: { "Content-Type": "application/json", Authorization: `Bearer ${config.accessToken}` } }
    : { headers: { "Content-Type": "application/json" }, params: { hapikey: config.apiKey } };
  const found: FoundRecord[] = [];
  let after = 0;
  for (let page = 0; page < SEARCH_PAGES_MAX; page++) {
    const json = { filterGroups, properties, limit: SEARCH_PAGE_LIMIT, after };
    let answer: LookupAnswer;
    try {
      answer = await lookupOf(ctx)({ method: "POST", endpoint, ...auth, json });
    } catch (err) {
      // A failure worth retrying is retried, in RudderStack's words where HubSpot answered.
      if (err instanceof RetryableTransformError) throw new RetryableTransformError(searchFailure(err.answer, err.message), err.retryAfterMs, err.answer);
      throw err;
    }
    if (answer.status < 200 || answer.status > 299) throw new TransformError(searchFailure(answer));
    const results = Array.isArray(answer.body?.results) ? answer.body.results : [];
    for (const r of results) {
      if (!r || r.id === undefined || r.id === null) continue;
      const props = isPlainObject(r.properties) ? r.properties : {};
      found.push({ id: String(r.id), value: String(props[identifierType] || ""), ...(secondary ? { secondary: props[secondary] ?? undefined } : {}) });
    }
    const next = Number(answer.body?.paging?.next?.after);
    if (!next) break;
    after = next;
  }
  return found;
}

/** RudderStack's text for a failed record search: HubSpot's message, else why nothing was answered. */
function searchFailure(answer: LookupAnswer | undefined, why?: string): string {
  return `rETL - Error during searching object record. ${answer ? JSON.stringify(answer.body?.message) : `(${why})`}`;
}

/**
 * The HubSpot record of `objectType` whose `identifierType` is `value` (compared without case), or
 * whose other e-mails hold it (`bySecondary`), or null (RudderStack's splitEventsForCreateUpdate).
 * The searches of a batch's records go together, up to 100 values a call.
 */
export async function findRecord(
  ctx: DestinationContext,
  config: HubspotAuth,
  objectType: string,
  identifierType: string,
  value: unknown,
): Promise<{ id: string; bySecondary: boolean } | null> {
  const wanted = String(value ?? "").toLowerCase();
  if (!wanted) return null;
  const key = `recordSearch:${JSON.stringify([objectType, identifierType])}`;
  const found = await gathered(ctx, key, [[wanted, wanted]], SEARCH_VALUES_MAX, (values) => searchRecords(ctx, config, objectType, identifierType, values));
  const primary = found.find((r) => r.value.toLowerCase() === wanted);
  if (primary) return { id: primary.id, bySecondary: false };
  const other = found.find((r) => r.secondary !== undefined && String(r.secondary).toLowerCase().split(";").includes(wanted));
  return other ? { id: other.id, bySecondary: true } : null;
}
