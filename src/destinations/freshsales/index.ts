/**
 * FRESHSALES: Freshsales (Freshworks CRM) on `https://<domain>.myfreshworks.com/crm/sales/api`,
 * `Authorization: Token token=<apiKey>`. identify upserts the contact by e-mail; track names a
 * sales activity or a lifecycle stage (directly, or through `rudderEventsToFreshsalesEvents`);
 * group upserts the sales account by name.
 *
 * RudderStack also calls Freshsales from inside its transform: to turn a sales-activity or
 * lifecycle-stage *name* into its id, to find a contact's id by e-mail, and to read a contact's
 * accounts before linking one more. Sluice makes no calls there, so those inputs must carry
 * the ids themselves, and group upserts the account without linking the contact (see
 * src/destinations/freshsales/README.md).
 */
import { type Static, t } from "elysia";
import { endpointFor } from "../base-url";
import { genericField } from "../generic-fields";
import { compact, firstPresent, getPath, isPresent, requireValue, traitPaths, traitValue } from "../shared";
import { type DestinationDefinition, type DestinationRequest, type SluiceEvent, TransformError, configKeys, configOf, requireConfig, requiredKeysOf, restRequest } from "../types";

type Obj = Record<string, any>;

export const FreshsalesConfig = t.Object(
  {
    apiKey: t.String({ minLength: 1 }),
    domain: t.String({ minLength: 1 }),
    rudderEventsToFreshsalesEvents: t.Optional(t.Array(t.Object({ from: t.Optional(t.String()), to: t.Optional(t.String()) }, { additionalProperties: true }))),
  },
  { additionalProperties: true },
);
export type FreshsalesConfig = Static<typeof FreshsalesConfig>;

/** RudderStack lists some fields trait-then-context per key rather than per object; kept as its mapping has them. */
const CITY = ["traits.city", "traits.address.city", "context.traits.city", "context.traits.address.city"];
const STATE = ["traits.state", "traits.address.state", "context.traits.state", "context.traits.address.state"];
const COUNTRY = ["traits.address.country", "traits.country", "context.traits.address.country", "context.traits.country"];

/** A number, or nothing: RudderStack drops ids that do not convert (NaN) rather than sending them. */
const numberOrNothing = (n: number) => (Number.isNaN(n) ? undefined : n);
const toNumber = (v: unknown) => (isPresent(v) ? numberOrNothing(Number(v)) : undefined);
const toFloat = (v: unknown) => (isPresent(v) ? numberOrNothing(Number.parseFloat(String(v))) : undefined);

/** Freshsales takes the address as one line: street, city, state, country and postal code. */
function flattenAddress(address: unknown): unknown {
  if (!isPresent(address)) return undefined;
  if (!address || typeof address !== "object") return "";
  const a = address as Obj;
  return `${a.street || ""} ${a.city || ""} ${a.state || ""} ${a.country || ""} ${a.postalCode || ""}`;
}

/** The contact, per RudderStack's Freshsales identify mapping. */
function contactOf(event: SluiceEvent): Obj {
  return compact({
    emails: requireValue(genericField(event, "email"), "email"),
    first_name: genericField(event, "firstName"),
    last_name: genericField(event, "lastName"),
    subscription_status: traitValue(event, "subscriptionStatus"),
    job_title: firstPresent(event, ["traits.job_title", "traits.jobTitle", "context.traits.job_title", "context.traits.jobTitle"]),
    work_number: genericField(event, "phone"),
    external_id: genericField(event, "userId"),
    mobile_number: traitValue(event, "mobileNumber"),
    address: flattenAddress(genericField(event, "address")),
    city: firstPresent(event, CITY),
    state: firstPresent(event, STATE),
    country: firstPresent(event, COUNTRY),
    zipcode: genericField(event, "zipcode"),
    sales_accounts: traitValue(event, "salesAccounts", "sales_accounts"),
    territory_id: toNumber(traitValue(event, "territoryId")),
    lead_source_id: toNumber(traitValue(event, "leadSourceId")),
    owner_id: toNumber(traitValue(event, "ownerId")),
    subscription_types: traitValue(event, "subscriptionTypes"),
    medium: traitValue(event, "medium"),
    campaign_id: toNumber(firstPresent(event, [...traitPaths("campaignId", "campaign_id"), "context.campaign.name"])),
    keyword: firstPresent(event, [...traitPaths("keyword"), "context.campaign.term"]),
    time_zone: firstPresent(event, [...traitPaths("timeZone"), "context.timeZone"]),
    facebook: traitValue(event, "facebookUserName"),
    twitter: traitValue(event, "twitterUserName"),
    linkedin: traitValue(event, "linkedinUserName"),
    created_at: genericField(event, "createdAt"),
    updated_at: genericField(event, "timestamp"),
    contact_status_id: toNumber(traitValue(event, "contactStatusId")),
    lifecycle_stage_id: toNumber(traitValue(event, "lifecycleStageId")),
  });
}

/** The sales account, per RudderStack's Freshsales group mapping. */
function accountOf(event: SluiceEvent): Obj {
  return compact({
    name: requireValue(genericField(event, "name"), "name"),
    industry_type_id: toNumber(traitValue(event, "industryTypeId")),
    business_type_id: toNumber(firstPresent(event, ["traits.business_type_id", "traits.businessTypeId", "context.traits.business_type_id", "context.traits.businessTypeId"])),
    phone: genericField(event, "phone"),
    number_of_employees: toNumber(traitValue(event, "numberOfEmployees")),
    annual_revenue: toFloat(traitValue(event, "annualRevenue")),
    address: flattenAddress(genericField(event, "address")),
    city: firstPresent(event, CITY),
    state: firstPresent(event, STATE),
    country: firstPresent(event, COUNTRY),
    zipcode: genericField(event, "zipcode"),
    website: traitValue(event, "website"),
    territory_id: toNumber(traitValue(event, "territoryId")),
    parent_sales_account_id: toNumber(traitValue(event, "parentSalesAccountId")),
    owner_id: toNumber(traitValue(event, "ownerId")),
    facebook: traitValue(event, "facebookUserName"),
    twitter: traitValue(event, "twitterUserName"),
    linkedin: traitValue(event, "linkedinUserName"),
    created_at: genericField(event, "createdAt"),
    updated_at: genericField(event, "timestamp"),
  });
}

/** A sales activity, per RudderStack's mapping; the activity type and the contact must be given by id. */
function salesActivityOf(event: SluiceEvent): Obj {
  const p = (key: string) => getPath(event, `properties.${key}`);
  const activity = compact({
    sales_activity_name: p("salesActivityName"),
    title: requireValue(p("title"), "properties.title"),
    sales_activity_type_id: p("salesActivityTypeId"),
    sales_activity_outcome_id: p("salesActivityOutcomeId"),
    start_date: requireValue(p("startDate"), "properties.startDate"),
    end_date: requireValue(p("endDate"), "properties.endDate"),
    notes: p("notes"),
    owner_id: requireValue(p("ownerId"), "properties.ownerId"),
    targetable_id: getPath(event, "context.externalId.id"),
    targetable_type: requireValue(getPath(event, "context.externalId.type"), "context.externalId.type"),
    creater_id: p("createrId"),
    created_at: genericField(event, "timestamp"),
    updated_at: genericField(event, "timestamp"),
    location: p("location"),
    latitude: firstPresent(event, ["latitude", "context.address.latitude", "context.location.latitude"]),
    longitude: firstPresent(event, ["longitude", "context.address.longitude", "context.location.longitude"]),
    checkedin_at: p("checkedinAt"),
  });
  if (!activity.sales_activity_name && !activity.sales_activity_type_id) {
    throw new TransformError("Either of sales activity name or sales activity type id is required. Aborting!");
  }
  if (!activity.targetable_id && String(activity.targetable_type).toLowerCase() !== "contact") throw new TransformError("targetable_id is required. Aborting!");
  if (!activity.targetable_id && !genericField(event, "email")) {
    throw new TransformError("Either of email or targetable_id is required for creating sales activity. Aborting!");
  }
  if (!activity.sales_activity_type_id) throw new TransformError("properties.salesActivityTypeId is required: Sluice does not look sales activity types up by name");
  if (!activity.targetable_id) throw new TransformError("context.externalId.id is required: Sluice does not look contacts up by email");
  return activity;
}

function lifecycleStageOf(event: SluiceEvent): Obj {
  const emails = genericField(event, "email");
  if (!emails) throw new TransformError("email is required for updating life Cycle Stages. Aborting!");
  const id = getPath(event, "properties.lifecycleStageId");
  const name = getPath(event, "properties.lifecycleStageName");
  if (!id && !name) throw new TransformError("Either of lifecycleStageName or lifecycleStageId is required. Aborting!");
  if (!id) throw new TransformError("properties.lifecycleStageId is required: Sluice does not look lifecycle stages up by name");
  return { contact: { lifecycle_stage_id: id }, unique_identifier: { emails } };
}

/** The Freshsales events a track event stands for: mapped ones (case-insensitive), else its own name. */
function trackEventNames(event: SluiceEvent, config: FreshsalesConfig): string[] {
  if (typeof event.event !== "string" || !event.event) throw new TransformError("Event is a required field and should be a string");
  const name = String(event.event).toLowerCase();
  const mapped = new Set<string>();
  if (Array.isArray(config.rudderEventsToFreshsalesEvents)) {
    for (const m of config.rudderEventsToFreshsalesEvents) {
      if (typeof m?.from === "string" && m.from && typeof m.to === "string" && m.to && m.from.toLowerCase() === name) mapped.add(m.to);
    }
  }
  return mapped.size > 0 ? [...mapped] : [String(event.event)];
}

export const freshsales: DestinationDefinition = {
  name: "FRESHSALES",
  displayName: "Freshsales",
  config: {
    defaultConfig: configKeys(FreshsalesConfig, ["oneTrustCookieCategories"]),
    supportedMessageTypes: ["identify", "track", "group"],
    requiredKeys: requiredKeysOf(FreshsalesConfig),
    hostKeys: ["domain"],
  },
  configSchema: FreshsalesConfig,
  transform(event, ctx): DestinationRequest[] {
    const apiKey = String(requireConfig(ctx, "apiKey"));
    // RudderStack's configs hold the whole host (acme.myfreshworks.com); a bare account name works too.
    const domain = String(requireConfig(ctx, "domain")).trim().replace(/^https?:\/\//i, "").replace(/\/+$/, "");
    const api = `https://${domain.includes(".") ? domain : `${domain}.myfreshworks.com`}/crm/sales/api`;
    const headers = { Authorization: `Token token=${apiKey}`, "Content-Type": "application/json" };
    const post = (path: string, json: Obj) => restRequest({ endpoint: endpointFor(ctx, `${api}${path}`), headers, json });
    if (!event.type) throw new TransformError("Message Type is not present. Aborting message.");
    // RudderStack matches the type in any case and names it lower-cased when refusing it.
    const type = String(event.type).toLowerCase();
    switch (type) {
      case "identify": {
        const contact = contactOf(event);
        return [post("/contacts/upsert", { contact, unique_identifier: { emails: contact.emails } })];
      }
      case "track":
        return trackEventNames(event, configOf(ctx, FreshsalesConfig)).map((name) => {
          const kind = name.toLowerCase().trim().replace(/\s+/g, "_");
          if (kind === "sales_activity") return post("/sales_activities", { sales_activity: salesActivityOf(event) });
          if (kind === "lifecycle_stage") return post("/contacts/upsert", lifecycleStageOf(event));
          throw new TransformError(`event name ${name} is not supported. Aborting!`);
        });
      case "group": {
        const account = accountOf(event);
        return [post("/sales_accounts/upsert", { unique_identifier: { name: account.name }, sales_account: account })];
      }
      default:
        throw new TransformError(`message type ${type} not supported`);
    }
  },
};
