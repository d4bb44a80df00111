/**
 * The calls INTERCOM makes while transforming, as RudderStack's INTERCOM does: the contact
 * search (2.x identify and group), the company whose Intercom id a group needs, and the company
 * an identify takes its contact out of. Their error texts are RudderStack's; an answer worth
 * retrying (time-out, 408, 429, 5xx) never reaches here, the lookup client has the delivery
 * retried. Nothing is cached: RudderStack asks again for every event.
 */
import { GENERIC_PATHS, type GenericField, genericField } from "../generic-fields";
import { getPath, isPlainObject } from "../shared";
import { type DestinationContext, type LookupAnswer, type SluiceEvent, TransformError, lookupOf } from "../types";
import { isMappedToDestination, lookupField } from "./payloads";

type Obj = Record<string, any>;

export interface Service {
  /** The API's base URL, already pointed where `--destination-base-url` says. */
  base: string;
  headers: Record<string, string>;
}

const is2xx = (status: number) => status >= 200 && status < 300;

/**
 * What the contact is searched by: the lookup field (the e-mail, lowercased, by default) and the
 * user id as external_id; an rETL row without an e-mail by its external_id alone. `event` is the
 * event as RudderStack's later steps read it (payloads.ts `retlView`).
 */
export function contactLookups(event: SluiceEvent): Array<{ field: string; value: unknown }> {
  const lookups: Array<{ field: string; value: unknown }> = [];
  const add = (field: string, value: unknown) => {
    if (value) lookups.push({ field, value });
  };
  const traits = event.traits;
  if (isMappedToDestination(event) && isPlainObject(traits) && traits.external_id && !traits.email) {
    add("external_id", traits.external_id);
    return lookups;
  }
  const field = lookupField(event);
  const generic = Object.hasOwn(GENERIC_PATHS, field) ? genericField(event, field as GenericField) : undefined;
  let value = generic || getPath(event, "context.traits")?.[field];
  // RudderStack lowercases the e-mail it searches by: Intercom keeps contacts' e-mails lowercased.
  if (field === "email" && typeof value === "string") value = value.toLowerCase();
  add(field, value);
  if (field !== "external_id") add("external_id", genericField(event, "userIdOnly"));
  return lookups;
}

/**
 * `POST /contacts/search` by the event's lookups: the id of the first contact found, undefined
 * for none. Without lookups, or with one that is not a plain value, nothing is asked and no
 * contact is known, as in RudderStack.
 */
export async function searchContact(ctx: DestinationContext, api: Service, event: SluiceEvent): Promise<string | undefined> {
  const lookups = contactLookups(event);
  if (lookups.length === 0) return undefined;
  if (lookups.some((l) => !["string", "number", "boolean"].includes(typeof l.value))) return undefined;
  const answer = await lookupOf(ctx)({
    method: "POST",
    endpoint: `${api.base}/contacts/search`,
    headers: api.headers,
    json: {
      query: {
        operator: lookups.length > 1 ? "OR" : "AND",
        value: lookups.map((l) => ({ field: l.field, operator: "=", value: l.value })),
      },
    },
  });
  if (!is2xx(answer.status)) throw new TransformError(`Unable to search contact due to : ${errorsOf(answer)}`);
  const contacts = answer.body?.data;
  return (contacts?.length > 0 ? contacts[0]?.id : undefined) ?? undefined;
}

/** `POST /companies` (Intercom creates the company or updates it by company_id): its Intercom id. */
export async function createOrUpdateCompany(ctx: DestinationContext, api: Service, company: Obj): Promise<string> {
  const answer = await lookupOf(ctx)({ method: "POST", endpoint: `${api.base}/companies`, headers: api.headers, json: company });
  if (!is2xx(answer.status)) throw new TransformError(`Unable to Create or Update Company due to : ${errorsOf(answer)}`);
  const id = answer.body?.id;
  if (!id) throw new TransformError("Unable to create or update company");
  return id;
}

/**
 * Takes the contact out of the company an identify names with `remove: true`: the company's
 * Intercom id by its company_id (else by its name), then `DELETE /contacts/{id}/companies/{id}`.
 */
export async function detachContactFromCompany(ctx: DestinationContext, api: Service, contactId: string, company: Obj): Promise<void> {
  if (!company.id && !company.name) return;
  const query = company.id ? `company_id=${encodeURIComponent(String(company.id))}` : `name=${encodeURIComponent(String(company.name))}`;
  const found = await lookupOf(ctx)({ method: "GET", endpoint: `${api.base}/companies?${query}`, headers: api.headers });
  if (!is2xx(found.status)) throw new TransformError(`Unable to get company id due to : ${bodyOf(found)}`);
  const companyId = found.body?.id;
  if (!companyId) return;
  const detached = await lookupOf(ctx)({ method: "DELETE", endpoint: `${api.base}/contacts/${contactId}/companies/${companyId}`, headers: api.headers });
  if (!is2xx(detached.status)) throw new TransformError(`Unable to detach contact and company due to : ${bodyOf(detached)}`);
}

/** Intercom's error list of an answer, quoted as RudderStack quotes it ("undefined" when there is none). */
function errorsOf(answer: LookupAnswer): string {
  return String(JSON.stringify(isPlainObject(answer.body) ? answer.body.errors : undefined));
}

/** A whole answer, quoted as RudderStack quotes it for the company calls. */
function bodyOf(answer: LookupAnswer): string {
  return String(JSON.stringify(answer.body));
}
