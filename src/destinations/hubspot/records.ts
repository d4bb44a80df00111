/**
 * Record writes: an event with `context.mappedToDestination` is taken as a row to write into a
 * HubSpot CRM object, as RudderStack's HS takes the rows of its reverse-ETL sources. Its external
 * id `{type: "HS-<objectType>", identifierType, id}` names the object type and the property the
 * row is found by; the traits are the record's properties, as they are (no common mapping, no
 * portal filter: the row was mapped to HubSpot's names already).
 *
 * - `HS-association` (new API): `POST /crm/v3/associations/<from>/<to>/batch/create` with the
 *   traits and the external id's `associationTypeId` as `type`.
 * - New API, an identifier HubSpot holds unique for that object type: an upsert by it
 *   (`/crm/v3/objects/<type>/batch/upsert`).
 * - Else the record is searched by the identifier: found → `PATCH /crm/v3/objects/<type>/<id>`,
 *   not found → `POST /crm/v3/objects/<type>` with the identifier added to the properties.
 *
 * batch.ts merges them per object type into batch/create, batch/update and batch/upsert calls, and
 * associations into one batch/create per pair of types.
 */
import { setOwn } from "../../lib/safe-keys";
import { endpointFor } from "../base-url";
import { getPath, isEmail, isPlainObject, traitsOf } from "../shared";
import { type DestinationContext, type DestinationRequest, type SluiceEvent, TransformError, restRequest } from "../types";
import { type HubspotConfig, authParts, isNewApi } from "./config";
import { type PropertyTypes, findRecord, isUniqueProperty, propertyTypes } from "./lookups";
import { isDateLike, utcMidnight, withoutSystemProperties } from "./property-values";

const API = "https://api.hubapi.com";
type Obj = Record<string, any>;

// RudderStack's GENERIC_TRUE_VALUES: what a `mappedToDestination` of any type may say for true.
const TRUE_TEXTS = new Set(["true", "True", "TRUE", "t", "T", "1"]);

/** Whether the event is a record write: `context.mappedToDestination` true, as text or not. */
export function isRecordWrite(event: SluiceEvent): boolean {
  const mapped = getPath(event, "context.mappedToDestination");
  return !!mapped && TRUE_TEXTS.has(String(mapped));
}

/** The external ids naming a HubSpot object (`HS-<objectType>`), in their order. */
function hubspotIds(event: SluiceEvent): Obj[] {
  const raw = getPath(event, "context.externalId");
  const list: unknown[] = Array.isArray(raw) ? raw : isPlainObject(raw) && Object.keys(raw).length > 0 ? [raw] : [];
  return list.filter((x): x is Obj => isPlainObject(x) && typeof x.type === "string" && x.type.includes("HS-"));
}

/** The record's object type, identifier and value: RudderStack reads the last HubSpot external id. */
function recordIdOf(event: SluiceEvent): { objectType?: string; identifierType?: string; id?: unknown } {
  const last = hubspotIds(event).at(-1);
  if (!last) return {};
  return { objectType: last.type.replace("HS-", ""), identifierType: last.identifierType || undefined, id: last.id };
}

const objectPath = (objectType: string) => `/crm/v3/objects/${encodeURIComponent(objectType)}`;
const missing = (v: unknown) => v === undefined || v === null;

/** The record's properties: the traits, `date` properties as midnight-UTC milliseconds, no system property. */
function recordProperties(traits: Obj, types: PropertyTypes): Obj {
  const out: Obj = {};
  for (const [key, value] of Object.entries(traits)) {
    setOwn(out, key, Object.hasOwn(types, key) && types[key] === "date" && isDateLike(value) ? utcMidnight(value) : value);
  }
  return withoutSystemProperties(out);
}

/** An association between two records, from the external id's types and the traits' `from` and `to`. */
function associationRequest(event: SluiceEvent, ctx: DestinationContext, config: HubspotConfig, traits: Obj): DestinationRequest {
  // RudderStack reads the first HubSpot external id here (the last one for the object type).
  const ids = hubspotIds(event)[0] ?? {};
  const { fromObjectType, toObjectType, associationTypeId } = ids;
  if (!fromObjectType || !toObjectType) throw new TransformError("rETL - association needs fromObjectType and toObjectType in its external id");
  const path = `/crm/v3/associations/${encodeURIComponent(fromObjectType)}/${encodeURIComponent(toObjectType)}/batch/create`;
  const { headers, params } = authParts(config);
  return restRequest({ endpoint: endpointFor(ctx, `${API}${path}`), headers, params, json: { inputs: [{ ...traits, type: associationTypeId }] } });
}

/**
 * The request writing one record, after RudderStack's lookups: the portal's property list (for the
 * `date` properties), whether the identifier is unique for the object type (new API), and the
 * search for the record.
 */
export async function recordRequests(event: SluiceEvent, ctx: DestinationContext, config: HubspotConfig): Promise<DestinationRequest[]> {
  // Reverse-ETL sources send rows as identifies only.
  if (String(event.type).toLowerCase() !== "identify") throw new TransformError(`Message type ${event.type} is not supported`);
  const newApi = isNewApi(config);
  const given = traitsOf(event);
  const traits: Obj = isPlainObject(given) ? { ...given } : {};
  // HubSpot refuses invalid e-mails; RudderStack's new API checks the trait first (the legacy one does not).
  if (newApi && traits.email && !isEmail(traits.email)) throw new TransformError(`Email "${traits.email}" is invalid`);
  const { objectType, identifierType, id } = recordIdOf(event);
  if (objectType && objectType.toLowerCase() === "association") {
    // RudderStack's legacy API has no association write: the record has no operation there.
    if (!newApi) throw new TransformError("operation not found");
    return [associationRequest(event, ctx, config, traits)];
  }
  if (!objectType || !identifierType) throw new TransformError("rETL - external Id not found.");
  const identifier = String(identifierType);
  const types = await propertyTypes(ctx, config);
  const { headers, params } = authParts(config);

  if (newApi && (await isUniqueProperty(ctx, config, identifier, objectType))) {
    if (!id) throw new TransformError("rETL - identifierType or destinationExternalId not found for upsert");
    // objectWriteTraceId names the delivery, so a 207 answer's errors reach their own events (checkResponse).
    const input = { id: String(id), idProperty: identifier, properties: recordProperties(traits, types), ...(ctx.jobId !== undefined ? { objectWriteTraceId: String(ctx.jobId) } : {}) };
    return [restRequest({ endpoint: endpointFor(ctx, `${API}${objectPath(objectType)}/batch/upsert`), headers, params, json: { inputs: [input] } })];
  }

  const found = await findRecord(ctx, config, objectType, identifier, id);
  // A created record carries its identifier. RudderStack's legacy API writes it on updates too;
  // never over the primary value of a contact found by one of its other e-mails.
  if (!missing(id) && (!found || (!newApi && !found.bySecondary))) setOwn(traits, identifier, id);
  const json = { properties: recordProperties(traits, types) };
  if (found) {
    return [restRequest({ method: "PATCH", endpoint: endpointFor(ctx, `${API}${objectPath(objectType)}/${encodeURIComponent(found.id)}`), headers, params, json })];
  }
  return [restRequest({ endpoint: endpointFor(ctx, `${API}${objectPath(objectType)}`), headers, params, json })];
}
