/**
 * How RudderStack's ZENDESK kind shapes Zendesk users and organizations from traits:
 * a few traits map to Zendesk's own fields, the other scalar traits become custom
 * `user_fields` / `organization_fields`, and the external id is repeated as the `id` field.
 */
import { assignOwn, setOwn } from "../../lib/safe-keys";
import { TransformError } from "../types";
import { getPath, isPresent } from "../shared";

type Obj = Record<string, any>;

/** Traits Zendesk has a field for (or that name the user), so they are not sent as custom user fields. */
const USER_OWN_TRAITS = ["email", "name", "organizationId", "timezone", "phone", "userId", "id"];
const ORG_OWN_TRAITS = ["name", "domainNames", "tags", "groupId", "url", "deleted"];

const USER_MAPPING: Array<[string, string]> = [
  ["email", "email"],
  ["name", "name"],
  ["organization_id", "organizationId"],
  ["time_zone", "timezone"],
  ["phone", "phone"],
];
const ORG_MAPPING: Array<[string, string]> = [
  ["name", "traits.name"],
  ["domain_names", "traits.domainNames"],
  ["tags", "traits.tags"],
  ["external_id", "groupId"],
  ["url", "traits.url"],
  ["deleted", "traits.deleted"],
];

function mapped(source: Obj | undefined, mapping: Array<[string, string]>): Obj {
  const out: Obj = {};
  for (const [dest, from] of mapping) {
    const v = getPath(source, from);
    if (isPresent(v)) out[dest] = v;
  }
  return out;
}

/**
 * Scalar traits without a Zendesk field of their own. Objects (and null, which is one to
 * RudderStack) are left out: `company: { id, remove }` steers memberships, it is no field.
 */
function customFields(traits: Obj, own: string[]): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(traits)) {
    if (own.includes(k) || typeof v === "object" || v === undefined) continue;
    setOwn(out, k, v);
  }
  return out;
}

/** The `user` object of `users/create_or_update.json` for an identify. */
export function userPayload(traits: Obj | undefined, userId: unknown, verified: boolean): Obj {
  const t: Obj = traits && typeof traits === "object" ? traits : {};
  const user = mapped(t, USER_MAPPING);
  if (user.name === undefined) throw new TransformError('Missing required value from "name"');
  const externalId = t.userId || t.id || userId;
  if (externalId !== undefined && externalId !== null) user.external_id = externalId;
  const fields: Obj = externalId ? { id: externalId } : {};
  assignOwn(fields, customFields(t, USER_OWN_TRAITS));
  if (Object.keys(fields).length > 0) user.user_fields = fields;
  if (verified) user.verified = true;
  return { user };
}

/** The `organization` object of `organizations/create_or_update.json` for a group call. */
export function organizationPayload(event: Obj): Obj {
  const organization = mapped(event, ORG_MAPPING);
  const fields: Obj = organization.external_id ? { id: organization.external_id } : {};
  assignOwn(fields, customFields(event.traits, ORG_OWN_TRAITS));
  if (Object.keys(fields).length > 0) organization.organization_fields = fields;
  return { organization };
}
