/**
 * HS's lookups, the calls RudderStack's HS makes before it builds a request:
 *
 * - the portal's contact property list (`GET /properties/v1/contacts/properties`), whose names
 *   decide which traits are sent and whose types convert them;
 * - the CRM v3 contact properties (`GET /crm/v3/properties/contacts`), to learn whether the
 *   lookup field holds unique values (then the contact is upserted by it);
 * - the contact search by the lookup field (`POST /crm/v3/objects/contacts/search`), to update
 *   the contact found or create a new one.
 *
 * A 408, 429, 5xx or network failure is thrown by the lookup client itself (the delivery is
 * retried); any other answer but 200 aborts the event in RudderStack's words.
 */
import { endpointFor } from "../base-url";
import { type DestinationContext, type LookupAnswer, TransformError, lookupOf, remembered } from "../types";

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
 * Whether HubSpot holds `field` unique among contacts (RudderStack's isLookupFieldUnique): the
 * CRM v3 list is kept 24 hours, and fetched again when it does not name the field (a property
 * created since).
 */
export async function isUniqueProperty(ctx: DestinationContext, config: HubspotAuth, field: string): Promise<boolean> {
  const objectType = "contacts";
  const unique = await remembered(
    ctx,
    `uniqueProperties:${objectType}`,
    UNIQUE_PROPERTIES_KEEP_MS,
    async () => {
      const endpoint = endpointFor(ctx, `${API}/crm/v3/properties/${objectType}`);
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
