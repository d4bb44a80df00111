/**
 * What both of Customer.io's Track API shapes (the v1 calls of index.ts, the v2 envelope of
 * track-api-v2.ts) read from an event the same way: the person's ids, reverse-ETL external ids,
 * attribute paths, and a group's object operation.
 */
import { isEmail } from "../shared";
import { prototypeSegment } from "../../lib/safe-keys";
import { firstOf, firstPresent, getPath, isPlainObject, withoutUndefined } from "../shared";
import { type SluiceEvent, TransformError } from "../types";

type Obj = Record<string, any>;

/** RudderStack's generic userId lookup (its "userIdOnly"): the anonymous id is not one. */
export const USER_ID = ["userId", "traits.userId", "traits.id", "context.traits.userId", "context.traits.id"];
export const EMAIL = ["traits.email", "context.traits.email", "properties.email", "context.externalId.0.id"];
export const TIMESTAMP = ["timestamp", "originalTimestamp"];
export const CREATED_AT = ["traits.createdAt", "context.traits.createdAt"];
export const ADDRESS_FIELDS = ["city", "country", "postalCode", "state", "street"];
export const DEVICE_EVENTS = ["Application Installed", "Application Opened", "Application Uninstalled"];
export const DEVICE_DELETE_EVENT = "Application Uninstalled";
const OBJECT_ACTIONS = ["identify", "delete", "add_relationships", "delete_relationships"];

// RudderStack tells an e-mail from an id with validator's isEmail (issue 50), as shared.ts does.
export { isEmail };

/**
 * Writes `value` under `parts` (one key per level); a path that could reach an object's prototype
 * is skipped, as RudderStack's safe setter refuses it.
 */
export function setAttributePath(body: Obj, parts: string[], value: unknown): void {
  if (prototypeSegment(parts) !== undefined) return;
  let cur = body;
  for (const part of parts.slice(0, -1)) {
    const next = cur[part];
    // Copied on the way down: the value may be the event's own object, which must stay untouched.
    cur[part] = next === null || typeof next !== "object" ? {} : Array.isArray(next) ? [...next] : { ...next };
    cur = cur[part];
  }
  cur[parts[parts.length - 1]!] = value;
}

/**
 * A reverse-ETL row (`context.mappedToDestination`) names the Customer.io person by its first
 * external id: RudderStack writes that id into the traits under its identifier type (`email`,
 * `id`, …), where identify sends it as an attribute, and makes it the userId. Applied to a copy,
 * so the caller's event stays as it was.
 */
export function withExternalId(event: SluiceEvent): SluiceEvent {
  if (!getPath(event, "context.mappedToDestination")) return event;
  const type = getPath(event, "context.externalId.0.identifierType");
  const id = getPath(event, "context.externalId.0.id");
  const copy: SluiceEvent = structuredClone(event);
  // The traits RudderStack's generic "traits" field picks: top-level, else context.traits; with neither there is nowhere to write.
  const traits = firstOf(copy, ["traits", "context.traits"]);
  if (typeof type === "string" && type !== "" && isPlainObject(traits)) setAttributePath(traits, type.split("."), id);
  if (id) copy.userId = id;
  return copy;
}

/**
 * A group as a Customer.io object operation, related to the user who sent it; both API shapes
 * send it as it is (v1 wraps it in `/v2/batch` too). Ids are text, as RudderStack's object
 * mapping makes them.
 */
export function objectOperation(event: SluiceEvent): Obj {
  const objectId = firstPresent(event, ["groupId", "traits.groupId"]);
  if (objectId === undefined) throw new TransformError('Missing required value from "groupId"');
  const typeId = getPath(event, "traits.objectTypeId");
  const action = firstPresent(event, ["traits.action", "properties.action"]);
  const { action: _inAction, ...attributes } = event.traits || {};
  const userId = firstPresent(event, USER_ID);
  const who = userId !== undefined ? String(userId) : firstPresent(event, ["context.traits.email", "properties.email", "context.externalId.0.id"]);
  return {
    identifiers: withoutUndefined({ object_id: String(objectId), object_type_id: typeId == null ? "1" : String(typeId) || undefined }),
    type: "object",
    action: OBJECT_ACTIONS.includes(action) ? action : "identify",
    attributes,
    cio_relationships: who ? [{ identifiers: { [isEmail(who) ? "email" : "id"]: who } }] : [],
  };
}
