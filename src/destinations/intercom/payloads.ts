/**
 * The bodies Intercom's two APIs take, as RudderStack's INTERCOM transform builds them:
 * v1 (Intercom-Version 1.4: users, events, companies) and v2 (2.10: contacts, events, companies).
 */
import { createHash } from "node:crypto";
import { setOwn } from "../../lib/safe-keys";
import { genericField } from "../generic-fields";
import { compact, firstPresent, flattenJson, getPath, integrationsObject, isPlainObject } from "../shared";
import type { SluiceEvent } from "../types";
import type { IntercomConfig } from "./config";

type Obj = Record<string, any>;
export type ApiVersion = "v1" | "v2";

const USER_ID_PATHS = ["userId", "traits.userId", "traits.id", "context.traits.userId", "context.traits.id"];
const trait = (name: string) => [`traits.${name}`, `context.traits.${name}`];
/**
 * `traits.<name> || context.traits.<name>`, as RudderStack's workflow reads most fields: a falsy
 * top-level trait falls through to the context one, whose value is then taken as it is ("" and false too).
 */
const orTrait = (event: SluiceEvent, name: string): any => getPath(event, `traits.${name}`) || getPath(event, `context.traits.${name}`);

// Traits Intercom takes as standard attributes; the rest go to custom_attributes.
const RESERVED_USER: Record<ApiVersion, string[]> = {
  v1: ["userId", "email", "phone", "name", "createdAt", "firstName", "lastName", "firstname", "lastname", "company"],
  v2: [
    "userId", "role", "email", "phone", "name", "avatar", "company", "ownerId", "lastName", "lastname", "firstName",
    "firstname", "createdAt", "timestamp", "lastSeenAt", "originalTimestamp", "unsubscribedFromEmails",
  ],
};
const RESERVED_COMPANY: Record<ApiVersion, string[]> = {
  v1: ["remoteCreatedAt", "monthlySpend", "industry", "website", "size", "plan", "name", "userId"],
  v2: [
    "tags", "size", "plan", "name", "email", "userId", "website", "industry", "segments", "userCount", "createdAt",
    "sessionCount", "monthlySpend", "remoteCreatedAt",
  ],
};
// A company's own fields (and its `remove` flag), which are not custom attributes of it.
const COMPANY_STANDARD_KEYS = ["id", "name", "industry", "remove"];

/** Unix seconds, as Intercom's timestamps are; undefined for a missing or unreadable date. */
export function toSeconds(value: unknown): number | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  const ms = typeof value === "number" ? value : Date.parse(String(value));
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : undefined;
}

/** A number for a numeric trait; a value Number() cannot read is left out rather than sent as null. */
function toNumber(value: unknown): number | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  const n = Number(value);
  return Number.isFinite(n) ? n : undefined;
}

/**
 * The contact lookup field (`integrations.INTERCOM.lookup`, also under `intercom` or `Intercom`;
 * default email): the field the contact is searched by, never a custom attribute.
 */
export function lookupField(event: SluiceEvent): string {
  const lookup = integrationsObject(event, "INTERCOM")?.lookup;
  return lookup === undefined || lookup === null ? "email" : String(lookup);
}

export function userIdOf(event: SluiceEvent, config: IntercomConfig): unknown {
  const id = firstPresent(event, USER_ID_PATHS);
  return !id && config.sendAnonymousId && event.anonymousId ? event.anonymousId : id;
}

/** traits.name, else "first last" (either alone when only one is set), from RudderStack's generic name fields. */
export function nameOf(event: SluiceEvent): string | undefined {
  const name = firstPresent(event, trait("name"));
  if (name) return name;
  const first = genericField(event, "firstName");
  const last = genericField(event, "lastName");
  if (first && last) return `${first} ${last}`;
  return first || last || undefined;
}

/**
 * Custom attributes: the traits minus the reserved ones and the lookup field, flattened
 * (v1 joins nested keys with ".", v2 with "_", as Intercom v2 refuses dots in attribute names).
 */
function customAttributes(traits: unknown, reserved: string[], version: ApiVersion): Obj | undefined {
  if (!isPlainObject(traits)) return undefined;
  const rest: Obj = { ...traits };
  // RudderStack drops a reserved trait only when it holds a truthy value; false, 0 and "" stay custom.
  for (const key of reserved) if (rest[key]) delete rest[key];
  const out = Object.keys(rest).length > 0 ? flattenJson(rest, version === "v1" ? "." : "_") : rest;
  return Object.keys(out).length === 0 ? undefined : out;
}

/** traits.company as Intercom's companies list; a company without id or name is dropped (an empty list). */
function companiesOf(company: unknown): Obj[] | undefined {
  if (!isPlainObject(company)) return company ? [] : undefined;
  if (!company.name && !company.id) return [];
  const custom: Obj = {};
  for (const [key, value] of Object.entries(company)) {
    if (COMPANY_STANDARD_KEYS.includes(key) || value === undefined || value === null) continue;
    setOwn(custom, key, value === Object(value) ? JSON.stringify(value) : value);
  }
  return [
    compact({
      // Intercom needs an id: a named company without one gets a stable id from its name.
      company_id: company.id || createHash("md5").update(String(company.name)).digest("hex"),
      custom_attributes: custom,
      name: company.name,
      industry: company.industry,
      remove: company.remove,
    }),
  ];
}

/** rETL rows arrive already in Intercom's shape, with the user id as an external id. */
export function isMappedToDestination(event: SluiceEvent): boolean {
  const mapped = getPath(event, "context.mappedToDestination");
  return mapped === true || mapped === "true";
}

/** The traits of an rETL row with its external id (`context.externalId[0]`) set under its identifier type. */
export function mappedTraits(event: SluiceEvent): Obj {
  const traits: Obj = { ...(firstPresent(event, ["traits", "context.traits"]) ?? {}) };
  const external = getPath(event, "context.externalId.0");
  if (external?.identifierType && external.id !== undefined) setOwn(traits, String(external.identifierType), external.id);
  return traits;
}

/**
 * An rETL row as RudderStack reads it for the 2.x API: a row without an e-mail is matched by its
 * user id, which Intercom 2.x calls external_id (null otherwise, so it is never sent).
 */
export function retlRow(event: SluiceEvent, version: ApiVersion): Obj {
  const row = mappedTraits(event);
  row.external_id = version === "v2" && !row.email ? row.user_id : null;
  return row;
}

/**
 * The event RudderStack's later steps read: an rETL row's traits replaced by `retlRow` (its
 * workflow changes the row in place, so the contact search sees those fields too); any other
 * event as it came.
 */
export function retlView(event: SluiceEvent, version: ApiVersion): SluiceEvent {
  if (!isMappedToDestination(event)) return event;
  const view: SluiceEvent = { ...event };
  if (isPlainObject(event.traits) || !isPlainObject(getPath(event, "context.traits"))) view.traits = retlRow(event, version);
  else view.context = { ...event.context, traits: retlRow(event, version) };
  return view;
}

export function v1User(event: SluiceEvent, config: IntercomConfig): Obj {
  const traits = firstPresent(event, ["traits", "context.traits"]) ?? {};
  const base = isMappedToDestination(event)
    ? // A row's traits.company still becomes Intercom's companies list; a row's custom_attributes are not sent.
      { ...mappedTraits(event), companies: companiesOf(isPlainObject(traits) ? traits.company : undefined), custom_attributes: undefined }
    : {
        user_id: firstPresent(event, USER_ID_PATHS),
        email: genericField(event, "email"),
        phone: genericField(event, "phone"),
        signed_up_at: toSeconds(orTrait(event, "createdAt")),
        last_seen_user_agent: getPath(event, "context.userAgent"),
        custom_attributes: customAttributes(traits, [...RESERVED_USER.v1, lookupField(event)], "v1"),
        companies: companiesOf(isPlainObject(traits) ? traits.company : undefined),
      };
  const payload: Obj = {
    ...base,
    name: nameOf(event),
    update_last_request_at: typeof config.updateLastRequestAt === "boolean" ? config.updateLastRequestAt : true,
  };
  if (!payload.user_id && config.sendAnonymousId && event.anonymousId) payload.user_id = event.anonymousId;
  return compact(payload);
}

export function v2Contact(event: SluiceEvent, config: IntercomConfig): Obj {
  if (isMappedToDestination(event)) {
    const row = retlRow(event, "v2");
    const contact: Obj = {
      ...row,
      name: nameOf(event),
      custom_attributes: customAttributes(row.custom_attributes, [...RESERVED_USER.v2, lookupField(event)], "v2"),
    };
    if (!contact.external_id && config.sendAnonymousId && event.anonymousId) contact.external_id = event.anonymousId;
    return compact(contact);
  }
  const payload: Obj = {
    external_id: firstPresent(event, USER_ID_PATHS),
    email: genericField(event, "email"),
    phone: genericField(event, "phone"),
    avatar: genericField(event, "avatar"),
    last_seen_at: toSeconds(getPath(event, "context.traits.lastSeenAt")),
    role: orTrait(event, "role"),
    signed_up_at: toSeconds(orTrait(event, "createdAt")),
    owner_id: toNumber(orTrait(event, "ownerId")) || undefined,
    unsubscribed_from_emails: orTrait(event, "unsubscribedFromEmails"),
    name: nameOf(event),
    // v2 reads custom attributes from context.traits only, as RudderStack does.
    custom_attributes: customAttributes(getPath(event, "context.traits"), [...RESERVED_USER.v2, lookupField(event)], "v2"),
  };
  if (!payload.external_id && config.sendAnonymousId && event.anonymousId) payload.external_id = event.anonymousId;
  return compact(payload);
}

/** Properties as event metadata: Intercom's rich-link and monetary-amount objects stay whole, the rest is flattened. */
function eventMetadata(properties: unknown): Obj | undefined {
  if (!isPlainObject(properties)) return undefined;
  const reserved: Obj = {};
  const rest: Obj = {};
  for (const [key, value] of Object.entries(properties)) {
    const special =
      isPlainObject(value) && (("amount" in value && "currency" in value) || ("url" in value && "value" in value));
    setOwn(special ? reserved : rest, key, value);
  }
  return { ...reserved, ...flattenJson(rest) };
}

export function trackPayload(event: SluiceEvent, config: IntercomConfig, version: ApiVersion): Obj {
  if (isMappedToDestination(event)) {
    const row = retlRow(event, version);
    if (isPlainObject(row.metadata)) row.metadata = eventMetadata(row.metadata);
    return compact(row);
  }
  const created = toSeconds(firstPresent(event, ["timestamp", "originalTimestamp"]));
  const payload: Obj = {
    event_name: event.event,
    // Intercom 1.4 names the event time `created`; 2.x names it `created_at`.
    ...(version === "v1" ? { created } : { created_at: created }),
    user_id: firstPresent(event, USER_ID_PATHS),
    email: genericField(event, "email"),
    id: version === "v2" ? firstPresent(event, ["properties.id", "traits.id"]) : undefined,
    metadata: eventMetadata(event.properties),
  };
  if (!payload.user_id && config.sendAnonymousId && event.anonymousId) payload.user_id = event.anonymousId;
  return compact(payload);
}

export function companyPayload(event: SluiceEvent, version: ApiVersion): Obj {
  if (isMappedToDestination(event)) return compact(mappedTraits(event));
  // v1 reads the generic traits (traits, else context.traits); v2 the group's own traits.
  const traits = version === "v1" ? firstPresent(event, ["traits", "context.traits"]) : event.traits;
  return compact({
    company_id: event.groupId,
    name: firstPresent(event, trait("name")),
    website: genericField(event, "website"),
    plan: orTrait(event, "plan"),
    size: toNumber(orTrait(event, "size")),
    industry: orTrait(event, "industry"),
    monthly_spend: toNumber(orTrait(event, "monthlySpend")),
    remote_created_at: toNumber(orTrait(event, "remoteCreatedAt")),
    custom_attributes: customAttributes(
      traits,
      [...RESERVED_COMPANY[version], ...(lookupField(event) !== "email" ? [lookupField(event)] : [])],
      version,
    ),
  });
}

/** The v1 user update that puts the group's user in the company, when the user is known. */
export function v1Membership(event: SluiceEvent, config: IntercomConfig): Obj | undefined {
  const userId = event.userId || (config.sendAnonymousId ? event.anonymousId : undefined);
  const email = getPath(event, "context.traits.email");
  if (!userId && !email) return undefined;
  const company: Obj = { company_id: event.groupId };
  if (event.traits?.name) company.name = event.traits.name;
  return compact({ user_id: userId || undefined, email: email || undefined, companies: [company] });
}
