/**
 * MAILCHIMP's bodies, as RudderStack's mapping files build them: a list member's merge fields
 * and address (identify) and a member event (track). Nothing here calls the service.
 */
import { setOwn } from "../../lib/safe-keys";
import { genericField } from "../generic-fields";
import { firstPresent, getPath, isPlainObject, setPath, traitPaths } from "../shared";
import { type SluiceEvent, TransformError } from "../types";

type Obj = Record<string, any>;

export const STATUSES = ["subscribed", "unsubscribed", "cleaned", "pending", "transactional"];
export const STATUS_MESSAGE = "The status must be one of [subscribed, unsubscribed, cleaned, pending, transactional]";

/** Traits that the fixed mapping reads, so they are not also sent as merge fields of their own. */
const MAPPED_TRAITS = new Set([
  "email", "firstName", "lastName", "FirstName", "LastName", "firstname", "lastname",
  "addr1", "city", "state", "zip", "phone", "address", "addressLine1", "addressLine2", "birthday",
]);

const ADDRESS_REQUIRED = ["addr1", "city", "state", "zip"];

/** Where each address part is read: the trait, the trait's address object, a merge field already shaped, top-level traits first. */
const addressPaths = (key: string, mergeKey: string) => [
  `traits.${key}`, `traits.address.${key}`, `traits.merge_fields.ADDRESS.${mergeKey}`,
  `context.traits.${key}`, `context.traits.address.${key}`, `context.traits.merge_fields.ADDRESS.${mergeKey}`,
];
const ADDRESS_MAPPING: Array<[string, string[]]> = [
  ["addr1", addressPaths("addressLine1", "addr1")],
  ["addr2", addressPaths("addressLine2", "addr2")],
  ["city", addressPaths("city", "city")],
  ["state", addressPaths("state", "state")],
  ["zip", addressPaths("zip", "zip")],
  ["country", addressPaths("country", "country")],
];

/** The list the event names (`integrations.mailchimp.listId`, or the older `context.MailChimp.listId`), else the config's. */
export function audienceOf(event: SluiceEvent, configured: string): string {
  const own = mailchimpOptions(event);
  if (own && own.listId !== undefined && own.listId !== null) return String(own.listId);
  const legacy = getPath(event, "context.MailChimp.listId");
  if (legacy) return String(legacy);
  return configured;
}

/** `integrations.mailchimp` under RudderStack's three spellings, the first that is set. */
export function mailchimpOptions(event: SluiceEvent): Obj | undefined {
  for (const name of ["mailchimp", "MailChimp", "MAILCHIMP"]) {
    const v = getPath(event, `integrations.${name}`);
    if (v) return isPlainObject(v) ? v : {};
  }
  return undefined;
}

/** A trait name as a merge tag: word characters and spaces only, at most 10, upper case. */
export function mergeTagOf(key: string): string {
  return key.replace(/[^\s\w]/gi, "").slice(0, 10).toUpperCase();
}

/** An address is sent only whole: addr1, city, state and zip, each a non-empty text. */
export function validAddress(address: Obj): Obj {
  const keys = Object.keys(address);
  if (keys.length === 0) return address;
  if (!ADDRESS_REQUIRED.every((k) => keys.includes(k))) {
    throw new TransformError('For sending address information ["addr1", "city", "state", "zip"] fields are mandatory');
  }
  for (const k of ADDRESS_REQUIRED) {
    if (typeof address[k] !== "string" || address[k] === "") throw new TransformError(`To send as address information, ${k} field should be valid string`);
  }
  return { ...address };
}

/** The merge fields the fixed mapping gives: FNAME, LNAME, PHONE, BIRTHDAY (MM/DD) and ADDRESS. */
function mappedMergeFields(event: SluiceEvent): Obj {
  const fields: Obj = {};
  const first = genericField(event, "firstName");
  if (first !== undefined) fields.FNAME = first;
  const last = genericField(event, "lastName");
  if (last !== undefined) fields.LNAME = last;
  const phone = genericField(event, "phone");
  if (phone !== undefined) fields.PHONE = phone;
  const birthday = firstPresent(event, traitPaths("birthday"));
  if (birthday !== undefined) {
    const mmdd = String(birthday).slice(5).replace("-", "/");
    if (mmdd) fields.BIRTHDAY = mmdd;
  }
  const address: Obj = {};
  for (const [key, paths] of ADDRESS_MAPPING) {
    const v = firstPresent(event, paths);
    if (v !== undefined) address[key] = v;
  }
  if (Object.keys(address).length > 0) fields.ADDRESS = validAddress(address);
  return fields;
}

/**
 * The member's merge fields with `enableMergeFields`: the mapped ones, then every other trait
 * under its merge tag (a later one replacing a mapped one of the same tag).
 */
export function mergeFieldsOf(event: SluiceEvent): Obj {
  const fields = mappedMergeFields(event);
  const traits = genericField(event, "traits");
  if (isPlainObject(traits)) {
    for (const [key, value] of Object.entries(traits)) if (!MAPPED_TRAITS.has(key)) setOwn(fields, mergeTagOf(key), value);
  }
  return fields;
}

/**
 * The address check still applies to mapped fields when merge fields are off, as RudderStack
 * builds them (and refuses a partial address) before it looks at the setting.
 */
export function checkMappedFields(event: SluiceEvent): void {
  mappedMergeFields(event);
}

/**
 * A reverse-ETL row: its traits are the member as Mailchimp takes it, plus the first external
 * id under its identifier type (`email_address`); a shaped address is still checked.
 */
export function retlMember(event: SluiceEvent): Obj {
  const traits = genericField(event, "traits");
  const member: Obj = isPlainObject(traits) ? structuredClone(traits) : {};
  const type = getPath(event, "context.externalId.0.identifierType");
  if (typeof type === "string" && type) setPath(member, type, getPath(event, "context.externalId.0.id"));
  const address = getPath(member, "merge_fields.ADDRESS");
  if (isPlainObject(address) && Object.keys(address).length > 0) member.merge_fields.ADDRESS = validAddress(address);
  return member;
}

/** A time as `YYYY-MM-DDTHH:mm:ss+00:00` (UTC), or `Invalid date` as moment writes an unreadable one. */
export function utcSeconds(value: unknown): string {
  const ms = value === undefined || value === null ? NaN : new Date(value as any).getTime();
  if (Number.isNaN(ms)) return "Invalid date";
  return `${new Date(ms).toISOString().slice(0, 19)}+00:00`;
}

/** Mailchimp takes event properties as texts only: every other value goes as its JSON. */
function textValues(properties: unknown): unknown {
  if (!isPlainObject(properties) && !Array.isArray(properties)) return properties;
  const out: Obj = Array.isArray(properties) ? [] : {};
  for (const [k, v] of Object.entries(properties)) setOwn(out, k, typeof v === "string" ? v : JSON.stringify(v));
  return out;
}

/** The body of `POST …/members/{hash}/events`. */
export function memberEvent(event: SluiceEvent): Obj {
  const body: Obj = {};
  const name = event.event;
  if (!(name || name === 0 || name === false)) throw new TransformError('Missing required value from "event"');
  const properties = event.properties;
  const isSyncing = getPath(event, "properties.isSyncing");
  const text = String(name);
  if (text && !(text.length >= 2 && text.length <= 30)) throw new TransformError("Event name should be between 2 and 30 characters");
  body.name = text.trim().replace(/\s+/g, "_");
  if (properties) {
    const props = textValues(properties);
    if (isPlainObject(props) && props.isSyncing !== undefined && props.isSyncing !== null) delete props.isSyncing;
    body.properties = props;
  }
  body.occurred_at = utcSeconds(genericField(event, "timestamp"));
  if (isSyncing || isSyncing === 0 || isSyncing === false) body.is_syncing = isSyncing;
  return body;
}
