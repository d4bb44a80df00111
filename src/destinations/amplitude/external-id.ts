/**
 * Reverse ETL (`context.mappedToDestination`): RudderStack's AM copies the first external id
 * into the traits under its identifier type before mapping, so an id typed `device_id` becomes
 * the event's device_id (a trait named like a field wins) and also stays in user_properties;
 * an id typed `user_id` also becomes the userId.
 */
import { firstOf, getPath, isPlainObject } from "../shared";
import type { SluiceEvent } from "../types";
import { setDotted } from "./user-properties";

/** A copy of the event with the external id applied; the caller's event is left as it was. */
export function withExternalId(event: SluiceEvent): SluiceEvent {
  if (!getPath(event, "context.mappedToDestination")) return event;
  const type = getPath(event, "context.externalId.0.identifierType");
  const id = getPath(event, "context.externalId.0.id");
  if (typeof type !== "string" || type === "") return event;
  const copy: SluiceEvent = structuredClone(event);
  // The same traits RudderStack's getFieldValueFromMessage picks: top-level, else context.traits.
  // With neither, RudderStack has nowhere to put the id, and only a user_id still applies.
  const traits = firstOf(copy, ["traits", "context.traits"]);
  if (isPlainObject(traits)) setDotted(traits, type, id);
  if (type === "user_id") copy.userId = id;
  return copy;
}
