/**
 * SENDGRID's lookup, the call RudderStack's SENDGRID makes before it builds an identify: the
 * account's field definitions (`GET /v3/marketing/field_definitions`), whose custom fields turn
 * the names `customFieldsMapping` maps traits to into the ids SendGrid takes contacts' custom
 * fields by (`user_name` → `w1_T`).
 *
 * A 408, 429, 5xx or network failure is thrown by the lookup client itself (the delivery is
 * retried); any other answer but a 2xx aborts the event with SendGrid's own error message, as
 * RudderStack reports it.
 */
import { endpointFor } from "../base-url";
import { isPlainObject } from "../shared";
import { type DestinationContext, type LookupAnswer, TransformError, lookupOf, remembered } from "../types";

const FIELD_DEFINITIONS = "https://api.sendgrid.com/v3/marketing/field_definitions";

/** RudderStack keeps the custom field list per destination for an hour (its AUTH_CACHE_TTL). */
export const CUSTOM_FIELDS_KEEP_MS = 60 * 60 * 1000;
const CACHE_KEY = "customFields";

/** A custom field definition as SendGrid lists it. */
export interface CustomField {
  id: unknown;
  name: unknown;
}

/**
 * The account's custom fields, from the destination's memory while RudderStack would still hold
 * them; transforms asking while the call is on the wire share it. An answer without a custom
 * field list is used but not kept, as RudderStack keeps none.
 */
export async function customFields(ctx: DestinationContext, apiKey: string): Promise<CustomField[]> {
  const fields = await remembered(ctx, CACHE_KEY, CUSTOM_FIELDS_KEEP_MS, () => fetchCustomFields(ctx, apiKey), { keep: (list) => list !== undefined });
  return fields ?? [];
}

async function fetchCustomFields(ctx: DestinationContext, apiKey: string): Promise<CustomField[] | undefined> {
  const answer = await lookupOf(ctx)({
    method: "GET",
    endpoint: endpointFor(ctx, FIELD_DEFINITIONS),
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${apiKey}` },
  });
  if (answer.status < 200 || answer.status >= 300) throw new TransformError(errorMessageOf(answer));
  const list = isPlainObject(answer.body) ? answer.body.custom_fields : undefined;
  return Array.isArray(list) ? list.filter(isPlainObject).map((f) => ({ id: f.id, name: f.name })) : undefined;
}

/**
 * The message of SendGrid's first error (`{"errors": [{"field", "message"}]}`), which is
 * RudderStack's whole text; an answer without one is quoted whole instead.
 */
function errorMessageOf(answer: LookupAnswer): string {
  const first = isPlainObject(answer.body) && Array.isArray(answer.body.errors) ? answer.body.errors[0] : undefined;
  if (isPlainObject(first) && typeof first.message === "string") return first.message;
  return `Failed to fetch SendGrid field definitions: ${JSON.stringify(answer.body || "")}`;
}
