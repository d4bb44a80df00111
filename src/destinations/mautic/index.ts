/**
 * MAUTIC: contacts through Mautic's REST API (Basic auth with the user's name and password),
 * on `https://<subDomainName>.mautic.net/api` or a self-hosted `<domainName>/api`.
 * identify creates or edits a contact; group adds the contact to (or removes it from) a
 * segment, campaign or company.
 *
 * RudderStack looks the contact up (`GET /contacts?where…`) inside its transform to choose
 * between edit and create. Sluice makes no calls there: a contact named by
 * `context.externalId` (type `mauticContactId`) is edited, any other is sent to
 * `/contacts/new`, which Mautic merges into the contact holding the same unique identifier
 * (email by default).
 */
import { type Static, t } from "elysia";
import { endpointFor } from "../base-url";
import { destinationExternalId, genericField } from "../generic-fields";
import { basicAuth, compact, firstPresent, getPath, isPresent, traitValue } from "../shared";
import { type DestinationDefinition, type DestinationRequest, type SluiceEvent, TransformError, configKeys, configOf, requiredKeysOf, restRequest } from "../types";

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

// RudderStack's own check of the user name (an e-mail address) and of e-mail traits; its fixtures
// accept a user name with capitals (TestRudderlabs45823@gmail.com), so letters match in either case.
const EMAIL = /^[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,3}$/i;
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
  if (payload.email && !EMAIL.test(String(payload.email))) throw new TransformError("The provided email is invalid");
  const state = payload.state;
  if (typeof state === "string" && state.length > 1 && state[0] !== state[0]!.toUpperCase()) payload.state = state[0]!.toUpperCase() + state.substring(1);
  return compact({ ...payload, ...addressLines(event) });
}

const GROUP_CLASSES = ["segments", "campaigns", "companies"];

function groupPath(event: SluiceEvent): string {
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
  const contactId = destinationExternalId(event, "mauticContactId");
  if (!contactId) throw new TransformError("context.externalId must name the contact (type mauticContactId): Sluice does not look contacts up");
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

export const mautic: DestinationDefinition = {
  name: "MAUTIC",
  displayName: "Mautic",
  config: {
    defaultConfig: configKeys(MauticConfig),
    supportedMessageTypes: ["identify", "group"],
    requiredKeys: requiredKeysOf(MauticConfig),
    hostKeys: ["subDomainName", "domainName"],
  },
  configSchema: MauticConfig,
  transform(event, ctx): DestinationRequest[] {
    const config = configOf(ctx, MauticConfig);
    const { userName, password } = config;
    if (!userName) throw new TransformError("Invalid userName value specified in the destination configuration");
    if (!password) throw new TransformError("Invalid password value specified in the destination configuration");
    const base = apiBase(config);
    if (!EMAIL.test(String(userName ?? ""))) throw new TransformError("Invalid user name provided in the destination configuration");
    const headers = { "Content-Type": "application/json", Authorization: basicAuth(String(userName), String(password)) };
    if (!event.type) throw new TransformError("Event type is required");
    const type = String(event.type).toLowerCase();
    if (type === "identify") {
      const contactId = destinationExternalId(event, "mauticContactId");
      const json = identifyBody(event);
      if (contactId) return [restRequest({ method: "PATCH", endpoint: endpointFor(ctx, `${base}/contacts/${contactId}/edit`), headers, json })];
      return [restRequest({ method: "POST", endpoint: endpointFor(ctx, `${base}/contacts/new`), headers, json })];
    }
    if (type === "group") return [restRequest({ method: "POST", endpoint: endpointFor(ctx, base + groupPath(event)), headers })];
    throw new TransformError(`Event type "${type}" is not supported`);
  },
};
