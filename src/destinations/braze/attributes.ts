/**
 * Braze's user attributes object from an event's traits: the standard attributes Braze
 * names itself, every other trait as a custom attribute, and (when enabled) the nested
 * array operations $add / $update / $remove on object traits.
 */
import { ownValue, setOwn } from "../../lib/safe-keys";
import { firstPresent, getPath, isPlainObject } from "../shared";
import { type SluiceEvent, TransformError } from "../types";
import type { BrazeConfig } from "./config";

type Obj = Record<string, any>;

/** Braze standard attribute ← trait path. */
const STANDARD_ATTRIBUTES: Array<[string, string]> = [
  ["country", "address.country"],
  ["dob", "birthday"],
  ["email", "email"],
  ["first_name", "firstName"],
  ["gender", "gender"],
  ["home_city", "address.city"],
  ["image_url", "avatar"],
  ["last_name", "lastName"],
  ["phone", "phone"],
];
/**
 * Traits the standard attributes consume, so they are not repeated as custom attributes.
 * RudderStack checks the attribute name against this same list to let an explicit null
 * through (clearing the attribute at Braze), which only email, gender and phone match.
 */
const CONSUMED_TRAITS = ["address", "birthday", "email", "firstName", "gender", "avatar", "lastName", "phone"];

function formatGender(gender: unknown): string | null {
  const g = typeof gender === "string" ? gender.toLowerCase() : "";
  if (["woman", "female", "w", "f"].includes(g)) return "F";
  if (["man", "male", "m"].includes(g)) return "M";
  if (["other", "o"].includes(g)) return "O";
  return null;
}

function standardAttribute(name: string, value: unknown): unknown {
  if (name === "gender") return formatGender(value);
  if (name !== "email" || value === null) return value;
  if (typeof value !== "string") throw new TransformError("Invalid email, email must be a valid string");
  return value.toLowerCase();
}

/** Reverse ETL events arrive already in Braze's shape (`context.mappedToDestination`). */
export function isMappedToDestination(event: SluiceEvent): boolean {
  return !!getPath(event, "context.mappedToDestination");
}

export function userAttributes(event: SluiceEvent, config: BrazeConfig): Obj {
  const traits = firstPresent(event, ["traits", "context.traits"]);
  if (isMappedToDestination(event)) return isPlainObject(traits) ? { ...traits } : {};
  if (!isPlainObject(traits)) return {};
  const data: Obj = {};
  for (const [name, path] of STANDARD_ATTRIBUTES) {
    const value = getPath(traits, path);
    if (value || (value === null && CONSUMED_TRAITS.includes(name))) data[name] = standardAttribute(name, value);
  }
  for (const [key, value] of Object.entries(traits)) if (!CONSUMED_TRAITS.includes(key) && value !== undefined) setOwn(data, key, value);
  if (config.enableNestedArrayOperations) applyNestedOperations(traits, data, event.properties?.mergeObjectsUpdateOperation);
  return data;
}

const identified = (item: Obj) => ({ $identifier_key: item?.identifier, $identifier_value: item?.[item?.identifier] });

function updateEntry(item: Obj): Obj {
  const { [String(item?.identifier)]: _id, identifier: _key, ...rest } = item ?? {};
  return { ...identified(item), $new_object: rest };
}

/**
 * An object trait `{update, remove, add}` becomes Braze's `{$update, $remove, $add}`.
 * With an update the trait is replaced by the operations alone and `_merge_objects`
 * (from `properties.mergeObjectsUpdateOperation`, default false) is set; without one,
 * RudderStack adds the operations next to the trait's own keys, and so do we.
 */
function applyNestedOperations(traits: Obj, data: Obj, mergeObjects: unknown): void {
  for (const [key, value] of Object.entries(traits)) {
    if (!isPlainObject(value)) continue;
    const { update, remove, add } = value as Obj;
    if (!update && !remove && !add) continue;
    let target: Obj;
    if (update) {
      if (!Array.isArray(update)) continue;
      target = { $update: update.map(updateEntry) };
      data._merge_objects = mergeObjects !== undefined && mergeObjects !== null ? mergeObjects : false;
    } else {
      const own = ownValue(data, key);
      if (!isPlainObject(own)) continue;
      target = { ...own };
    }
    if (remove && Array.isArray(remove)) target.$remove = remove.map(identified);
    if (add) target.$add = add;
    setOwn(data, key, target);
  }
}
