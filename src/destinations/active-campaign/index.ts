/**
 * ACTIVE_CAMPAIGN: contacts, site tracking and event tracking through ActiveCampaign's API v3
 * (`{apiUrl}/api/3/…`, `Api-Token: apiKey`) and its event endpoint (`https://trackcmp.net/event`).
 *
 * identify syncs the contact and, with its id (the sync is made while transforming, as its
 * answer is needed), adds its tags (creating the ones the account lacks, whose ids are needed
 * too) and sets its list subscriptions; its custom fields (`fieldInfo`) go by the ids the
 * account's field list gives. page registers the page's domain for site tracking; track and
 * screen send the event, creating its name first when the account does not know it. The tag,
 * list and event-name writes RudderStack makes inside its transform are returned here as the
 * event's first requests (see the destinations README, "Lookups"), so they are sent, retried
 * and recorded like the rest.
 */
import { type Static, t } from "elysia";
import { endpointFor } from "../base-url";
import { compact, firstPresent, getPath, isPlainObject } from "../shared";
import { genericField } from "../generic-fields";
import {
  type DestinationContext,
  type DestinationDefinition,
  type DestinationRequest,
  type SluiceEvent,
  TransformError,
  configKeys,
  configOf,
  requireConfig,
  requiredKeysOf,
  restRequest,
} from "../types";
import { type Api, contactIdsByEmail, createEventName, createTag, eventNames, storedFields, storedTags, syncContact } from "./lookups";

type Obj = Record<string, any>;

export const ActiveCampaignConfig = t.Object(
  {
    apiUrl: t.String({ minLength: 1 }),
    apiKey: t.String({ minLength: 1 }),
    eventKey: t.Optional(t.String()),
    // An account id; an exported config may hold it as a number.
    actid: t.Optional(t.Union([t.String(), t.Number()])),
  },
  { additionalProperties: true },
);
export type ActiveCampaignConfig = Static<typeof ActiveCampaignConfig>;

const EVENT_ENDPOINT = "https://trackcmp.net/event";
const PAGE_PATHS = ["properties.domain", "properties.url", "context.page.url", "properties.referring_domain", "context.page.referring_domain"];
const EVENT_PATHS = ["event", "properties.name"];

function apiOf(ctx: DestinationContext): Api {
  const apiUrl = String(requireConfig(ctx, "apiUrl"));
  const apiKey = String(requireConfig(ctx, "apiKey"));
  return { base: endpointFor(ctx, apiUrl), headers: { "Content-Type": "application/json", "Api-Token": apiKey }, apiKey };
}

const post = (endpoint: string, headers: Record<string, string>, json: Obj) => restRequest({ method: "POST", endpoint, headers, json });

/** A trait read from the context traits before the top-level ones, as RudderStack reads tags, lists and fields. */
const contextTraitFirst = (event: SluiceEvent, key: string) => getPath(event, `context.traits.${key}`) || getPath(event, `traits.${key}`);

// ---------- identify ----------

function contactOf(event: SluiceEvent): Obj {
  const email = genericField(event, "emailOnly");
  if (email === undefined) throw new TransformError('Missing required value from "emailOnly"');
  return compact({ email, phone: genericField(event, "phone"), firstName: genericField(event, "firstName"), lastName: genericField(event, "lastName") });
}

/** The ids of the contact's tags: those the account has, then those created for it (in the event's order). */
async function tagIdsOf(event: SluiceEvent, ctx: DestinationContext, api: Api): Promise<unknown[]> {
  const tags = contextTraitFirst(event, "tags");
  if (!Array.isArray(tags)) return [];
  const stored = await storedTags(ctx, api);
  if (!stored) return [];
  const ids: unknown[] = [];
  const missing: unknown[] = [];
  for (const tag of tags) {
    const id = stored.get(tag);
    if (id) ids.push(id);
    else missing.push(tag);
  }
  for (const tag of missing) {
    const id = await createTag(ctx, api, tag);
    if (id !== undefined) ids.push(id);
  }
  return ids;
}

/** `{id, status: "subscribe" | "unsubscribe"}` entries (one or a list) as contactList bodies; other statuses are skipped. */
function listSubscriptions(event: SluiceEvent, contactId: unknown): Obj[] {
  const lists = getPath(event, "context.traits.lists") ? getPath(event, "context.traits.lists") : getPath(event, "traits.lists");
  if (!lists) return [];
  return (Array.isArray(lists) ? lists : [lists])
    .filter((l) => isPlainObject(l) && (l.status === "subscribe" || l.status === "unsubscribe"))
    .map((l) => ({ contactList: { list: l.id, contact: contactId, status: l.status === "subscribe" ? "1" : "2" } }));
}

/** `fieldInfo` (field title → value) as field values by id; a title the account has no field for is left out; a list goes as `||a||b||`. */
async function fieldValuesOf(event: SluiceEvent, ctx: DestinationContext, api: Api): Promise<Obj[]> {
  const info = contextTraitFirst(event, "fieldInfo");
  if (!info) return [];
  const fields = await storedFields(ctx, api);
  const values: Obj[] = [];
  for (const key of Object.keys(info)) {
    if (!fields.has(key)) continue;
    const value = info[key];
    values.push({ field: fields.get(key), value: Array.isArray(value) ? `||${value.map((v) => `${v}||`).join("")}` : value });
  }
  return values;
}

async function identify(event: SluiceEvent, ctx: DestinationContext, api: Api): Promise<DestinationRequest[]> {
  const contact = contactOf(event);
  const contactId = await syncContact(ctx, api, contact);
  const tagIds = await tagIdsOf(event, ctx, api);
  const subscriptions = listSubscriptions(event, contactId);
  const fieldValues = await fieldValuesOf(event, ctx, api);
  return [
    ...tagIds.map((tag) => post(`${api.base}/api/3/contactTags`, api.headers, { contactTag: { contact: contactId, tag } })),
    ...subscriptions.map((body) => post(`${api.base}/api/3/contactLists`, api.headers, body)),
    post(`${api.base}/api/3/contact/sync`, api.headers, { contact: compact({ ...contact, fieldValues }) }),
  ];
}

// ---------- page ----------

function page(event: SluiceEvent, api: Api): DestinationRequest {
  const value = firstPresent(event, PAGE_PATHS);
  if (value === undefined) throw new TransformError(`Missing required value from ${JSON.stringify(PAGE_PATHS)}`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TransformError(`Invalid URL: ${value}`);
  }
  return post(`${api.base}/api/3/siteTrackingDomains`, api.headers, { siteTrackingDomain: { name: url.hostname.replace("www.", "") } });
}

// ---------- track and screen ----------

async function trackEvent(event: SluiceEvent, ctx: DestinationContext, api: Api, forScreen: boolean): Promise<DestinationRequest[]> {
  const name = firstPresent(event, EVENT_PATHS);
  if (name === undefined) throw new TransformError(`Missing required value from ${JSON.stringify(EVENT_PATHS)}`);
  const known = await eventNames(ctx, api, forScreen);
  const requests: DestinationRequest[] = [];
  // An event name the account does not know is created first; its answer decides whether the event goes.
  if (!known.includes(name)) await createEventName(ctx, api, name);
  const config = configOf(ctx, ActiveCampaignConfig);
  const form: Obj = { event: name };
  const eventData = getPath(event, "properties.eventData") || getPath(event, "properties.name");
  if (eventData !== undefined && eventData !== null && eventData !== "") form.eventdata = eventData;
  if (config.actid !== undefined) form.actid = config.actid;
  if (config.eventKey !== undefined) form.key = config.eventKey;
  // RudderStack writes the e-mail into this JSON text as it is (`undefined` without one).
  const email = getPath(event, "context.traits.email");
  form.visit = `{"email":${JSON.stringify(String(email))}}`;
  requests.push(
    restRequest({
      method: "POST",
      endpoint: endpointFor(ctx, EVENT_ENDPOINT),
      headers: { "Content-Type": "application/x-www-form-urlencoded", "Api-Token": api.apiKey },
      form,
    }),
  );
  return requests;
}

export const activeCampaign: DestinationDefinition<Promise<DestinationRequest[]>, Promise<DestinationRequest[]>> = {
  name: "ACTIVE_CAMPAIGN",
  displayName: "ActiveCampaign",
  config: {
    defaultConfig: configKeys(ActiveCampaignConfig, ["useNativeSDK", "connectionMode", "consentManagement", "oneTrustCookieCategories", "ketchConsentPurposes"]),
    supportedMessageTypes: ["identify", "page", "screen", "track"],
    requiredKeys: requiredKeysOf(ActiveCampaignConfig),
    urlKeys: ["apiUrl"],
  },
  configSchema: ActiveCampaignConfig,
  async transform(event, ctx) {
    if (!event.type) throw new TransformError("Message Type is not present. Aborting message.");
    const api = apiOf(ctx);
    switch (String(event.type).toLowerCase()) {
      case "identify":
        return identify(event, ctx, api);
      case "page":
        return [page(event, api)];
      case "screen":
        return trackEvent(event, ctx, api, true);
      case "track":
        return trackEvent(event, ctx, api, false);
      default:
        throw new TransformError("Message type not supported");
    }
  },
  /**
   * ActiveCampaign deletes a contact by its own id (`DELETE /api/3/contacts/{id}`), found by its
   * e-mail (`GET /api/3/contacts?email=`): each user must come with an `email`. A user the
   * account does not know needs no request.
   */
  async deleteUsers(users, ctx) {
    const api = apiOf(ctx);
    const requests: DestinationRequest[] = [];
    for (const user of users) {
      const email = typeof user.email === "string" ? user.email.trim() : "";
      if (!email) throw new TransformError("ActiveCampaign finds contacts by e-mail address: every user to delete needs an 'email'");
      for (const id of await contactIdsByEmail(ctx, api, email)) {
        requests.push(restRequest({ method: "DELETE", endpoint: `${api.base}/api/3/contacts/${encodeURIComponent(String(id))}`, headers: { "Api-Token": api.apiKey } }));
      }
    }
    return requests;
  },
};
