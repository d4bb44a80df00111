/**
 * Facebook Lead Ads through LeadsBridge (RudderStack's `facebook_lead_ads` source): LeadsBridge
 * posts each lead's form as form fields, which arrive here as `{field: [values…]}`. The lead
 * becomes one identify call: known fields go to standard traits (name, phone, address…), then
 * every field, with its single value unwrapped, is copied into `context.traits` as it came.
 */
import { copyFields, jsonBody, newMessage } from "../common";
import { setOwn } from "../../lib/safe-keys";
import { mappingError, type SourceMapping } from "../types";

export const INTEGRATION = "FacebookLeadAds";

/** Lead form field → trait. The lead id is handled apart (see `leadId`). */
const TRAITS: ReadonlyArray<readonly [string, string]> = [
  ["full_name", "context.traits.name"],
  ["first_name", "context.traits.firstName"],
  ["last_name", "context.traits.lastName"],
  ["date_of_birth", "context.traits.birthday"],
  ["phone_number", "context.traits.phone"],
  ["email", "context.traits.email"],
  ["gender", "context.traits.gender"],
  ["zip_code", "context.traits.address.zipCode"],
  ["post_code", "context.traits.address.postalCode"],
  ["state", "context.traits.address.state"],
  ["city", "context.traits.address.city"],
  ["country", "context.traits.address.country"],
  ["province", "context.traits.address.province"],
  ["street_address", "context.traits.address.street"],
  ["company_name", "context.traits.company.name"],
];

/**
 * The body's fields with one-value lists unwrapped (`["x"]` → `"x"`), lists of several values
 * kept, empty lists and nulls dropped: @rudderstack/integrations-lib's flattenQueryParams. Like
 * there, a falsy body has no fields and any other body is read with Object.entries (a list or a
 * string by index, a number or boolean as nothing). `__proto__` is left out: there the plain
 * assignment makes it the object's prototype, never one of its fields.
 */
function unwrapFields(body: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!body) return out;
  for (const [key, value] of Object.entries(body as object)) {
    const v = Array.isArray(value) && value.length <= 1 ? value[0] : value;
    if (v === undefined || v === null || key === "__proto__") continue;
    setOwn(out, key, v);
  }
  return out;
}

/**
 * The lead's id: `id`, else `facebook_lead_id`. As RudderStack reads a list of source keys, an
 * empty string, NaN or null is passed over for the next key, while false and 0 are taken.
 */
function leadId(fields: Record<string, unknown>): unknown {
  for (const key of ["id", "facebook_lead_id"]) {
    const v = Object.hasOwn(fields, key) ? fields[key] : undefined;
    if (v || v === false || v === 0) return v;
  }
  return undefined;
}

/** A JSON value as a JavaScript template literal prints it, without running anything the payload names. */
function asText(v: unknown): string {
  if (typeof v === "string") return v;
  if (Array.isArray(v)) return v.map((x) => (x === null || x === undefined ? "" : asText(x))).join(",");
  if (v !== null && typeof v === "object") return "[object Object]";
  return String(v);
}

/**
 * LeadsBridge's `created_time` (`mm/dd/yyyy hh:mm`, no zone) read as UTC, as RudderStack reads it:
 * `new Date("<value> UTC")`. Bun's date parser follows V8's for these legacy formats, so the same
 * texts parse and the same ones are refused; an unreadable time leaves the event without one.
 */
function createdAt(value: unknown): string | undefined {
  if (!value) return undefined;
  const date = new Date(`${asText(value)} UTC`);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

export const facebookLeadAds: SourceMapping = {
  name: "facebook_lead_ads",
  displayName: "Facebook Lead Ads (Leads Bridge)",
  setup:
    "In LeadsBridge, create a bridge with your Facebook Lead Ads page and form as the source and the Webhook integration as the destination; paste this URL as the webhook URL, method POST, and map the lead fields you want sent (keep LeadsBridge's field names such as email, first_name, phone_number, created_time and id).",
  sample: {
    body: {
      id: ["1093842215561820"],
      created_time: ["03/14/2025 16:42"],
      full_name: ["Maria Gonzalez"],
      first_name: ["Maria"],
      last_name: ["Gonzalez"],
      email: ["maria.gonzalez@example.org"],
      phone_number: ["+14155550142"],
      city: ["Austin"],
      state: ["TX"],
      zip_code: ["73301"],
      country: ["US"],
      company_name: ["Gonzalez Design Studio"],
      "what_is_your_budget?": ["$5,000 - $10,000"],
      ad_name: ["Spring Promo - Carousel"],
      form_name: ["Free Consultation"],
    },
  },
  map(request, ctx) {
    const fields = unwrapFields(jsonBody(request));
    if (Object.keys(fields).length === 0) throw mappingError("input event must have at least one field");

    const event: Record<string, any> = { ...newMessage(INTEGRATION), type: "identify" };
    const id = leadId(fields);
    if (id !== undefined && id !== null) event.userId = id;
    copyFields(event, fields, TRAITS);

    const originalTimestamp = createdAt(fields.created_time);
    if (originalTimestamp) event.originalTimestamp = originalTimestamp;
    if (!event.userId) event.anonymousId = ctx.uuid();

    // Every field as it came, over the standard traits of the same name (an `address` field
    // replaces the address built above, as in RudderStack).
    const traits = (event.context.traits ??= {}) as Record<string, unknown>;
    for (const [key, value] of Object.entries(fields)) setOwn(traits, key, value);
    return { events: [event] };
  },
};
