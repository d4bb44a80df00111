/**
 * MAUTIC: contacts through Mautic's REST API (Basic auth with the user's name and password),
 * on `https://<subDomainName>.mautic.net/api` or a self-hosted `<domainName>/api`.
 * identify creates or edits a contact; group adds the contact to (or removes it from) a
 * segment, campaign or company.
 *
 * The contact is named by `context.externalId` (type `mauticContactId`) or, as RudderStack
 * does, looked up by the configured lookup field (else the e-mail) with `GET /contacts?where…`:
 * identify edits the one contact found and creates one otherwise; group needs exactly one.
 */
import { type Static, t } from "elysia";
import { endpointFor } from "../base-url";
import { GENERIC_PATHS, destinationExternalId, genericField } from "../generic-fields";
import { basicAuth, compact, firstPresent, getPath, isEmail, isPresent, traitValue } from "../shared";
import { type DestinationContext, type DestinationDefinition, type DestinationRequest, type SluiceEvent, TransformError, configKeys, configOf, lookupOf, requiredKeysOf, restRequest } from "../types";

type Obj = Record<string, any>;

export const MauticConfig = t.Object(
  {
    userName: t.String({ minLength: 1 }),
    password: t.String({ minLength: 1 }),
    subDomainName: t.Optional(t.String()),
    domainMethod: t.Optional(t.String()),
    domainName: t.Optional(t.String()),
    lookUpField: t.Optional(t.String()),
  },
  { additionalProperties: true },
);
export type MauticConfig = Static<typeof MauticConfig>;

const PHONE = /^\d{10}$/;

/** Values Mautic accepts for its select fields; anything else is refused, as RudderStack does. */
const STRICT_VALUES: Record<string, Array<[string[], string]>> = {
  title: [
    [["Mr", "Mr.", "mr", "MR"], "Mr"],
    [["Mrs", "Mrs.", "mrs", "MRS"], "Mrs"],
    [["Miss", "Miss.", "miss", "MISS"], "Miss"],
  ],
  haspurchased: [
    [["yes", "Yes", "YES", "Y", "y"], "yes"],
    [["no", "No", "NO", "N", "n"], "no"],
  ],
  role: ["Individual Contributor", "Manager", "Director", "Executive", "Consultant"].map((v) => [[v, v.toLowerCase(), v.toUpperCase()], v] as [string[], string]),
  subscription_status: [
    [["New", "new", "NEW"], "New"],
    [["Existing", "existing", "EXISTING"], "Existing"],
  ],
  prospect_or_customer: [
    [["prospect", "Prospect", "PROSPECT"], "Prospect"],
    [["customer", "Customer", "CUSTOMER"], "Customer"],
  ],
};

function strict(destKey: string, value: unknown): unknown {
  if (!isPresent(value)) return undefined;
  const hit = STRICT_VALUES[destKey]!.find(([accepted]) => accepted.includes(value as string));
  if (!hit) throw new TransformError(`Invalid entry for key ${destKey}`);
  return hit[1];
}

/** The contact fields, per RudderStack's Mautic identify mapping. */
function contactFields(event: SluiceEvent): Obj {
  return {
    email: firstPresent(event, ["traits.email", "context.traits.email", "properties.email"]),
    title: strict("title", genericField(event, "title")),
    last_active: firstPresent(event, ["timestamp", "originalTimestamp"]),
    firstname: genericField(event, "firstName"),
    lastname: genericField(event, "lastName"),
    phone: genericField(event, "phone"),
    city: genericField(event, "city"),
    website: genericField(event, "website"),
    state: genericField(event, "state"),
    zipcode: genericField(event, "zipcode"),
    ipAddress: firstPresent(event, ["context.ip"]),
    country: genericField(event, "country"),
    haspurchased: strict("haspurchased", traitValue(event, "hasPurchased")),
    role: strict("role", traitValue(event, "role")),
    subscription_status: strict("subscription_status", traitValue(event, "subscriptionStatus")),
    prospect_or_customer: strict("prospect_or_customer", traitValue(event, "prospectOrCustomer")),
  };
}

/** Mautic's two address lines: given as addressLine1/2, or the address text split at 64 characters (128 at most). */
function addressLines(event: SluiceEvent): { address1?: string; address2?: string } {
  let address = genericField(event, "address");
  if (!address) return {};
  if (address && typeof address === "object") {
    if ("addressLine1" in address && "addressLine2" in address) return { address1: address.addressLine1, address2: address.addressLine2 };
    address = Object.values(address).reduce((text: string, v) => `${text}${v} `, "");
  }
  const text = String(address).length > 128 ? String(address).substring(0, 127) : String(address);
  return { address1: text.substring(0, 63), address2: text.substring(64) };
}

function identifyBody(event: SluiceEvent): Obj {
  const payload: Obj = compact(contactFields(event));
  if (payload.phone && !PHONE.test(String(payload.phone))) throw new TransformError("The provided phone number is invalid");
  // RudderStack's check is validator.js's isEmail (shared.ts); an e-mail that is no text, which
  // makes validator throw there, is refused too.
  if (payload.email && !isEmail(payload.email)) throw new TransformError("The provided email is invalid");
  const state = payload.state;
  if (typeof state === "string" && state.length > 1 && state[0] !== state[0]!.toUpperCase()) payload.state = state[0]!.toUpperCase() + state.substring(1);
  return compact({ ...payload, ...addressLines(event) });
}

const GROUP_CLASSES = ["segments", "campaigns", "companies"];

/**
 * Where each lookup field may be found in an event and the Mautic field it is searched by
 * (RudderStack's table). RudderStack's `state` entry names no Mautic field, so a state never
 * searches: the contact is then created, as RudderStack creates it.
 */
const LOOKUP_FIELDS: Record<string, { paths: string[]; field?: string }> = {
  title: { paths: ["traits.title", "context.traits.title"], field: "title" },
  firstName: { paths: GENERIC_PATHS.firstName, field: "firstname" },
  lastName: { paths: GENERIC_PATHS.lastName, field: "lastname" },
  role: { paths: ["traits.role", "context.traits.role"], field: "role" },
  phone: { paths: ["traits.phone", "context.traits.phone", "properties.phone"], field: "phone" },
  city: { paths: ["traits.address.city", "context.traits.address.city"], field: "city" },
  email: { paths: ["traits.email", "context.traits.email", "properties.email"], field: "email" },
  state: { paths: ["traits.state", "context.traits.state"] },
  zipcode: { paths: ["traits.zipcode", "context.traits.zipcode", "traits.zip", "context.traits.zip"], field: "zipcode" },
  country: { paths: ["traits.country", "context.traits.country"], field: "country" },
};

/** The Mautic field and value to search by: the lookup field's, else the event's e-mail; none when neither is there. */
function searchTerm(event: SluiceEvent, lookUpField: string | undefined): { field?: string; value?: unknown } {
  const entry = lookUpField ? LOOKUP_FIELDS[lookUpField] : undefined;
  if (entry) {
    for (const path of entry.paths) {
      const value = getPath(event, path);
      if (value) return { field: entry.field, value };
    }
  }
  const email = genericField(event, "email");
  return email ? { field: "email", value: email } : {};
}

interface Api {
  base: string;
  headers: Record<string, string>;
  ctx: DestinationContext;
}

/**
 * The ids of the contacts whose lookup field (or e-mail) holds the event's value; undefined
 * when the event has nothing to search by or Mautic answers no `contacts`.
 */
async function searchContactIds(event: SluiceEvent, config: MauticConfig, api: Api): Promise<string[] | undefined> {
  if (!genericField(event, "traits")) throw new TransformError("Traits are missing in the event");
  const lookUpField = config.lookUpField;
  if (lookUpField && !Object.hasOwn(LOOKUP_FIELDS, lookUpField)) {
    throw new TransformError(`Lookup field "${lookUpField}" specified in the destination configuration is not supported`);
  }
  const { field, value } = searchTerm(event, lookUpField);
  if (!field) return undefined;
  const res = await lookupOf(api.ctx)({
    method: "GET",
    endpoint: `${api.base}/contacts`,
    headers: api.headers,
    params: { "where[0][col]": field, "where[0][expr]": "eq", "where[0][val]": value },
  });
  if (res.status !== 200) throw new TransformError(`Failed to fetch contacts: "${JSON.stringify(res.body)}"`);
  const contacts = res.body && typeof res.body === "object" ? res.body.contacts : undefined;
  // Mautic keys the contacts it found by their ids.
  return contacts ? Object.keys(contacts) : undefined;
}

async function groupPath(event: SluiceEvent, config: MauticConfig, api: Api): Promise<string> {
  // The type is read from the first traits object (traits, else context.traits), not key by key.
  const traits = genericField(event, "traits");
  if (!traits?.type) throw new TransformError("`type` is missing in the traits");
  if (!event.groupId) throw new TransformError("`groupId` is missing in the event");
  // The class itself comes from the top-level traits only, as RudderStack reads it.
  const type = getPath(event, "traits.type");
  const groupClass = typeof type === "string" ? type.toLowerCase() : String(type);
  if (!GROUP_CLASSES.includes(groupClass)) {
    throw new TransformError(`Grouping type "${groupClass}" is not supported. Only "Segments", "Companies", and "Campaigns" are supported`);
  }
  let contactId = destinationExternalId(event, "mauticContactId");
  if (!contactId) {
    const found = await searchContactIds(event, config, api);
    if (!found || found.length === 0) throw new TransformError("Could not find any contact ID on lookup");
    if (found.length > 1) throw new TransformError("Found more than one contact on lookup");
    contactId = found[0];
  }
  const operation = event.traits?.operation;
  if (operation && operation !== "add" && operation !== "remove") {
    throw new TransformError(`Invalid value specified for operation "${operation}". Only "add" and "remove" are supported`);
  }
  return `/${groupClass}/${event.groupId}/contact/${contactId}/${operation || "add"}`;
}

/**
 * The API root: `domainMethod` picks the Mautic cloud subdomain (`subDomainNameOption`) or a
 * self-hosted domain (`domainNameOption`); without it, whichever of the two is set.
 */
function apiBase(config: MauticConfig): string {
  const domain = typeof config.domainName === "string" ? config.domainName.trim().replace(/\/+$/, "") : "";
  const subDomain = typeof config.subDomainName === "string" ? config.subDomainName.trim() : "";
  const useDomain = config.domainMethod === "domainNameOption" || (config.domainMethod !== "subDomainNameOption" && !subDomain);
  if (useDomain && domain) return `${/^https?:\/\//i.test(domain) ? domain : `https://${domain}`}/api`;
  if (subDomain) return `https://${subDomain}.mautic.net/api`;
  throw new TransformError("Please Provide either subDomain or Domain Name");
}

export const mautic: DestinationDefinition<Promise<DestinationRequest[]>> = {
  name: "MAUTIC",
  displayName: "Mautic",
  config: {
    defaultConfig: configKeys(MauticConfig),
    supportedMessageTypes: ["identify", "group"],
    requiredKeys: requiredKeysOf(MauticConfig),
    hostKeys: ["subDomainName", "domainName"],
  },
  configSchema: MauticConfig,
  async transform(event, ctx) {
    const config = configOf(ctx, MauticConfig);
    const { userName, password } = config;
    // RudderStack checks these in this order and takes any user name it is given.
    if (!password) throw new TransformError("Invalid password value specified in the destination configuration");
    if (!userName) throw new TransformError("Invalid userName value specified in the destination configuration");
    const base = endpointFor(ctx, apiBase(config));
    const headers = { "Content-Type": "application/json", Authorization: basicAuth(String(userName), String(password)) };
    const api: Api = { base, headers, ctx };
    if (!event.type) throw new TransformError("Event type is required");
    const type = String(event.type).toLowerCase();
    if (type === "identify") {
      const json = identifyBody(event);
      let contactId = destinationExternalId(event, "mauticContactId");
      if (!contactId) {
        const found = await searchContactIds(event, config, api);
        // Several contacts found: RudderStack creates another rather than pick one.
        if (found?.length === 1) contactId = found[0];
      }
      if (contactId) return [restRequest({ method: "PATCH", endpoint: `${base}/contacts/${contactId}/edit`, headers, json })];
      return [restRequest({ method: "POST", endpoint: `${base}/contacts/new`, headers, json })];
    }
    if (type === "group") return [restRequest({ method: "POST", endpoint: base + (await groupPath(event, config, api)), headers })];
    throw new TransformError(`Event type "${type}" is not supported`);
  },
};
