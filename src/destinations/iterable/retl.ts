/**
 * Reverse ETL (`context.mappedToDestination`) for ITERABLE, as RudderStack reads it: an external id
 * typed `ITERABLE-users` makes the identify a user update with the first external id copied into
 * the traits; any other `ITERABLE-<catalog>` type makes it an upsert of that catalog's item.
 */
import { prototypeSegment } from "../../lib/safe-keys";
import { firstOf, getPath, isPlainObject, setPath } from "../shared";
import { type SluiceEvent, TransformError } from "../types";

export const isRetl = (event: SluiceEvent): boolean => !!getPath(event, "context.mappedToDestination");

/** The last `ITERABLE-…` external id (RudderStack's getDestinationExternalIDInfoForRetl keeps the last match). */
export function iterableExternalId(event: SluiceEvent): { id: unknown; objectType: string } | undefined {
  const ids = getPath(event, "context.externalId");
  if (!Array.isArray(ids)) return undefined;
  let found: { id: unknown; objectType: string } | undefined;
  for (const entry of ids) {
    const type = entry?.type;
    if (typeof type === "string" && type.includes("ITERABLE-")) found = { id: entry.id, objectType: type.replace("ITERABLE-", "") };
  }
  return found;
}

/** A copy of the event whose traits carry the first external id under its identifier type. */
export function withExternalIdInTraits(event: SluiceEvent): SluiceEvent {
  const type = getPath(event, "context.externalId.0.identifierType");
  if (typeof type !== "string" || type === "") return event;
  const unsafe = prototypeSegment(type.split("."));
  if (unsafe !== undefined) throw new TransformError(`Cannot set unsafe key: "${unsafe}" (at ${type})`);
  const copy: SluiceEvent = structuredClone(event);
  // RudderStack sets the id on the traits its generic field finds (top-level, else context.traits); with neither it has nowhere to put it.
  const traits = firstOf(copy, ["traits", "context.traits"]);
  if (isPlainObject(traits)) setPath(traits, type, getPath(event, "context.externalId.0.id"));
  return copy;
}
