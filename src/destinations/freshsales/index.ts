/**
 * FRESHSALES: Freshsales (Freshworks CRM) on `https://<domain>.myfreshworks.com/crm/sales/api`,
 * `Authorization: Token token=<apiKey>`. identify upserts the contact by e-mail; track names a
 * sales activity or a lifecycle stage (directly, or through `rudderEventsToFreshsalesEvents`);
 * group upserts the sales account by name.
 *
 * As RudderStack's, the transform asks Freshsales first (lookups.ts): a sales-activity or
 * lifecycle-stage *name* becomes its id, a sales activity without a contact id gets the id of
 * the contact of the event's e-mail, and a group with the user's e-mail links the account to
 * the contact next to its other accounts.
 */
import { type Static, t } from "elysia";
import { endpointFor } from "../base-url";
import { genericField } from "../generic-fields";
import { compact, firstPresent, getPath, isPresent, requireValue, traitPaths, traitValue } from "../shared";
import {
  type DestinationContext,
  type DestinationDefinition,
  type DestinationRequest,
  type SluiceEvent,
  TransformError,
  configKeys,
  configOf,
  lookupOf,
  requireConfig,
  requiredKeysOf,
  restRequest,
} from "../types";
import { type Api, accountsWith, contactId, lifecycleStageId, salesActivityTypeId } from "./lookups";

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
    // RudderStack's identify takes the e-mail from the traits or properties only, never from externalId.
    emails: requireValue(genericField(event, "emailOnly"), "emailOnly"),
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

/**
 * A sales activity, per RudderStack's mapping. Its type may be named (`salesActivityName`) and
 * its contact left to the event's e-mail: both are then looked up.
 */
async function salesActivityOf(event: SluiceEvent, api: Api): Promise<Obj> {
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
  const email = genericField(event, "email");
  if (!activity.targetable_id && !email) {
    throw new TransformError("Either of email or targetable_id is required for creating sales activity. Aborting!");
  }
  const typeId = activity.sales_activity_type_id || (await salesActivityTypeId(api, activity.sales_activity_name));
  const targetableId = activity.targetable_id || (await contactId(api, email));
  return { ...activity, targetable_id: targetableId, sales_activity_type_id: typeId };
}

async function lifecycleStageOf(event: SluiceEvent, api: Api): Promise<Obj> {
  const emails = genericField(event, "email");
  if (!emails) throw new TransformError("email is required for updating life Cycle Stages. Aborting!");
  const id = getPath(event, "properties.lifecycleStageId");
  const name = getPath(event, "properties.lifecycleStageName");
  if (!id && !name) throw new TransformError("Either of lifecycleStageName or lifecycleStageId is required. Aborting!");
  return { contact: { lifecycle_stage_id: id || (await lifecycleStageId(api, name)) }, unique_identifier: { emails } };
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

function apiOf(ctx: DestinationContext): Api {
  const apiKey = String(requireConfig(ctx, "apiKey"));
  // RudderStack's configs hold the whole host (acme.myfreshworks.com); a bare account name works too.
  const domain = String(requireConfig(ctx, "domain")).trim().replace(/^https?:\/\//i, "").replace(/\/+$/, "");
  const base = endpointFor(ctx, `https://${domain.includes(".") ? domain : `${domain}.myfreshworks.com`}/crm/sales/api`);
  return { base, headers: { Authorization: `Token token=${apiKey}`, "Content-Type": "application/json" }, lookup: (req) => lookupOf(ctx)(req) };
}

export const freshsales: DestinationDefinition<Promise<DestinationRequest[]>> = {
  name: "FRESHSALES",
  displayName: "Freshsales",
  config: {
    defaultConfig: configKeys(FreshsalesConfig, ["oneTrustCookieCategories"]),
    supportedMessageTypes: ["identify", "track", "group"],
    requiredKeys: requiredKeysOf(FreshsalesConfig),
    hostKeys: ["domain"],
  },
  configSchema: FreshsalesConfig,
  async transform(event, ctx) {
    const api = apiOf(ctx);
    const post = (path: string, json: Obj) => restRequest({ endpoint: `${api.base}${path}`, headers: api.headers, json });
    if (!event.type) throw new TransformError("Message Type is not present. Aborting message.");
    // RudderStack matches the type in any case and names it lower-cased when refusing it.
    const type = String(event.type).toLowerCase();
    switch (type) {
      case "identify": {
        const contact = contactOf(event);
        return [post("/contacts/upsert", { contact, unique_identifier: { emails: contact.emails } })];
      }
      case "track": {
        const requests: DestinationRequest[] = [];
        for (const name of trackEventNames(event, configOf(ctx, FreshsalesConfig))) {
          const kind = name.toLowerCase().trim().replace(/\s+/g, "_");
          if (kind === "sales_activity") requests.push(post("/sales_activities", { sales_activity: await salesActivityOf(event, api) }));
          else if (kind === "lifecycle_stage") requests.push(post("/contacts/upsert", await lifecycleStageOf(event, api)));
          else throw new TransformError(`event name ${name} is not supported. Aborting!`);
        }
        return requests;
      }
      case "group": {
        const account = accountOf(event);
        const email = genericField(event, "email");
        if (!email) return [post("/sales_accounts/upsert", { unique_identifier: { name: account.name }, sales_account: account })];
        const salesAccounts = await accountsWith(api, email, account);
        return [post("/contacts/upsert", { contact: { sales_accounts: salesAccounts }, unique_identifier: { emails: email } })];
      }
      default:
        throw new TransformError(`message type ${type} not supported`);
    }
  },
};
