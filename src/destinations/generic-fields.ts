/**
 * RudderStack's generic field table: where a common field (email, firstName, zipcode, …) may
 * sit in an event. Mapping files that say `sourceFromGenericMap` read a field from these paths,
 * in this order, so kinds that share the table find the same value RudderStack finds.
 */
import { firstPresent, traitPaths } from "./shared";
import type { SluiceEvent } from "./types";

export const GENERIC_PATHS = {
  address: traitPaths("address"),
  createdAt: [...traitPaths("createdAt"), "timestamp", "originalTimestamp"],
  email: [...traitPaths("email"), "properties.email", "context.externalId.0.id"],
  emailOnly: [...traitPaths("email"), "properties.email"],
  timestamp: ["timestamp", "originalTimestamp"],
  traits: ["traits", "context.traits"],
  groupId: ["groupId", "traits.groupId"],
  userId: ["userId", "traits.userId", "traits.id", "context.traits.userId", "context.traits.id", "anonymousId"],
  userIdOnly: ["userId", "traits.userId", "traits.id", "context.traits.userId", "context.traits.id"],
  name: traitPaths("name"),
  title: traitPaths("title"),
  firstName: ["traits.firstName", "traits.firstname", "traits.first_name", "context.traits.firstName", "context.traits.firstname", "context.traits.first_name"],
  lastName: ["traits.lastName", "traits.lastname", "traits.last_name", "context.traits.lastName", "context.traits.lastname", "context.traits.last_name"],
  gender: traitPaths("gender"),
  phone: [...traitPaths("phone"), "properties.phone"],
  website: [...traitPaths("website"), "properties.website"],
  birthday: [...traitPaths("birthday"), ...traitPaths("dateOfBirth"), "traits.dateofbirth", "context.dateofbirth", ...traitPaths("dob"), ...traitPaths("DOB")],
  state: [...traitPaths("state"), "context.geo.region"],
  country: traitPaths("country"),
  region: [...traitPaths("region"), "context.geo.region"],
  city: ["traits.address.city", "context.traits.address.city", "context.geo.city"],
  avatar: [...traitPaths("avatar"), ...traitPaths("avatarURL"), ...traitPaths("avatar_URL")],
  zipcode: [
    ...["zip", "zipcode", "zip_code", "zipCode", "postalcode", "postal_code", "postalCode"].map((k) => `traits.${k}`),
    ...["zipcode", "zip_code", "zip", "zipCode", "postalcode", "postal_code", "postalCode"].map((k) => `traits.address.${k}`),
    ...["zip", "zipcode", "zip_code", "zipCode", "postalcode", "postal_code", "postalCode"].map((k) => `context.traits.${k}`),
    ...["zip", "zipcode", "zip_code", "zipCode", "postalcode", "postal_code", "postalCode"].map((k) => `context.traits.address.${k}`),
    "context.geo.postal",
  ],
} satisfies Record<string, string[]>;

export type GenericField = keyof typeof GENERIC_PATHS;

/** The first present value of a generic field (0 and false count; "", null and undefined do not). */
export function genericField(event: SluiceEvent, field: GenericField): any {
  return firstPresent(event, GENERIC_PATHS[field]);
}

/** The id of the `context.externalId` entry of this type (RudderStack's getDestinationExternalID). */
export function destinationExternalId(event: SluiceEvent, type: string): unknown {
  const ids = event.context?.externalId;
  if (!Array.isArray(ids)) return undefined;
  // RudderStack's getDestinationExternalID keeps the last entry of the type.
  return ids.findLast((x: any) => x && x.type === type)?.id;
}
