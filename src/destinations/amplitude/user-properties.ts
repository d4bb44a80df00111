/**
 * Amplitude `user_properties` as RudderStack's AM destination builds them: configured traits
 * moved under Amplitude's operations ($add, $setOnce, $append, $prepend), address traits
 * spread to top-level fields, `$unset` from `integrations.Amplitude.fieldsToUnset`, and, with
 * `enableEnhancedUserOperations`, every plain property moved under `$set`.
 */
import { setOwn } from "../../lib/safe-keys";
import { getPath, isPlainObject, setPath } from "../shared";
import type { SluiceEvent } from "../types";
import type { AmplitudeConfig } from "./config";

type Obj = Record<string, any>;

const OPERATION_CONFIG: Array<[string, keyof AmplitudeConfig]> = [
  ["$add", "traitsToIncrement"],
  ["$setOnce", "traitsToSetOnce"],
  ["$append", "traitsToAppend"],
  ["$prepend", "traitsToPrepend"],
];
/** The operations `$set` must not repeat: a key under one of these is not also set. */
const OPERATIONS = ["$setOnce", "$add", "$unset", "$append", "$prepend"];
const ADDRESS_FIELDS = ["city", "country", "postalCode", "state", "street"];

/**
 * Sets a dotted path as RudderStack's set-value does (trait `a.b` becomes `{a: {b}}`); setPath
 * refuses the keys that would reach an object's prototype: those abort the event, as in RudderStack.
 */
export function setDotted(target: Obj, path: string, value: unknown): void {
  setPath(target, path, value);
}

function deleteDotted(target: Obj, path: string): void {
  const parts = path.split(".");
  const parent = parts.length === 1 ? target : getPath(target, parts.slice(0, -1).join("."));
  if (isPlainObject(parent)) delete parent[parts[parts.length - 1]!];
}

/**
 * Moves each configured trait under its operation. A configured name the event lacks still
 * gets its (empty) slot, so the operation is sent as `{}` — RudderStack does the same.
 */
export function applyTraitOperations(traits: Obj, config: AmplitudeConfig): Obj {
  const out: Obj = JSON.parse(JSON.stringify(traits));
  for (const [op, key] of OPERATION_CONFIG) {
    const list = config[key];
    if (!Array.isArray(list)) continue;
    const moved: Obj = {};
    for (const item of list) {
      const name = item?.traits;
      if (typeof name !== "string" || name === "") continue;
      setOwn(moved, name, getPath(out, name));
      deleteDotted(out, name);
    }
    if (Object.keys(moved).length > 0) out[op] = moved;
  }
  return out;
}

function unsetFields(event: SluiceEvent): Obj | undefined {
  const fields = getPath(event, "integrations.Amplitude.fieldsToUnset");
  return Array.isArray(fields) ? Object.fromEntries(fields.map((f) => [f, "-"])) : undefined;
}

/**
 * user_properties with the event's traits (after operations) and `userProperties`; `address`
 * is spread into top-level fields that are not already set.
 */
export function traitUserProperties(event: SluiceEvent, traits: Obj | undefined, config: AmplitudeConfig, base: Obj): Obj {
  const props: Obj = { ...base, ...(isPlainObject(event.userProperties) ? event.userProperties : {}) };
  if (isPlainObject(traits)) {
    for (const [key, value] of Object.entries(applyTraitOperations(traits, config))) {
      if (key !== "address") {
        setDotted(props, `${key}`, value);
        continue;
      }
      for (const field of ADDRESS_FIELDS) {
        if (props[field] === undefined || props[field] === null) props[field] = getPath(value, field);
      }
    }
  }
  const unset = unsetFields(event);
  if (unset) props.$unset = unset;
  return props;
}

/** Enhanced user operations: plain properties go under `$set`, unless an operation already names them. */
export function moveToSet(props: Obj): Obj {
  const named = new Set(OPERATIONS.flatMap((op) => (isPlainObject(props[op]) ? Object.keys(props[op]) : [])));
  const out: Obj = {};
  const set: Obj = {};
  for (const [key, value] of Object.entries(props)) {
    if (OPERATIONS.includes(key)) out[key] = value;
    else if (!named.has(key)) setOwn(set, key, value);
  }
  if (Object.keys(set).length > 0) out.$set = set;
  return out;
}
