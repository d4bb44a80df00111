/**
 * A field-by-field mapping of an event into a payload, read the way RudderStack's mapping files
 * are read, so that which value wins and which one is dropped is the same: a single path takes
 * its value as it is, a list of paths the first value that is not undefined, null, "" or NaN
 * (0 and false count); formats apply to a defined value; a value that is still not present is
 * left out, or refused when the field is required (`Missing required value from …`).
 */
import { createHash } from "node:crypto";
import { getPath, isPresent, setPath } from "../shared";
import { type SluiceEvent, TransformError } from "../types";

export type Format =
  | "toString"
  | "trim"
  | "toLower"
  | "sha256"
  | "removeSpacesAndDashes"
  | "secondTimestamp"
  | "attStatus";

export interface FieldMapping {
  to: string;
  /** One path (its value as it is) or a list of paths (the first present value). */
  from: string | readonly string[];
  formats?: readonly Format[];
  required?: boolean;
  /** The name a refusal shows, where RudderStack's mapping names a generic field instead of paths. */
  named?: string;
}

export const sha256 = (value: string): string => createHash("sha256").update(value).digest("hex");

const ATT_STATUSES = ["AUTHORIZED", "DENIED", "NOT_DETERMINED", "RESTRICTED", "NOT_APPLICABLE"];

function applyFormat(value: any, format: Format): any {
  switch (format) {
    case "toString":
      return String(value);
    case "trim":
      return typeof value === "string" ? value.trim() : value;
    case "toLower":
      return String(value).toLowerCase();
    case "sha256":
      return sha256(String(value));
    case "removeSpacesAndDashes":
      return typeof value === "string" ? value.replace(/[ -]/g, "") : value;
    case "secondTimestamp":
      // A value already in milliseconds (digits only) is kept as RudderStack keeps it.
      if ((typeof value === "number" && Number.isInteger(value)) || (typeof value === "string" && /^\d+$/.test(value))) return value;
      return Math.floor(new Date(value).getTime() / 1000);
    case "attStatus": {
      const upper = String(value).toUpperCase();
      return ATT_STATUSES.includes(upper) ? upper : undefined;
    }
  }
}

export function valueOf(event: SluiceEvent, from: FieldMapping["from"]): any {
  if (typeof from === "string") return getPath(event, from);
  for (const path of from) {
    const v = getPath(event, path);
    if (isPresent(v)) return v;
  }
  return undefined;
}

/** Values taken from the event are copied, so that changing the payload never changes the event. */
const own = (v: unknown): unknown => (v !== null && typeof v === "object" ? structuredClone(v) : v);

export function mapFields(event: SluiceEvent, fields: readonly FieldMapping[]): Record<string, any> {
  const payload: Record<string, any> = {};
  for (const field of fields) {
    let value = valueOf(event, field.from);
    if (value !== undefined && value !== null) for (const f of field.formats ?? []) value = applyFormat(value, f);
    if (isPresent(value)) setPath(payload, field.to, own(value));
    else if (field.required) throw new TransformError(`Missing required value from ${JSON.stringify(field.named ?? field.from)}`);
  }
  return payload;
}

/** lodash's isEmpty as RudderStack's isDefinedAndNotNullAndNotEmpty reads it: a number or boolean counts as empty. */
export function isNonEmpty(v: unknown): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v === "string" || Array.isArray(v)) return v.length > 0;
  if (typeof v === "object") return Object.keys(v).length > 0;
  return false;
}

/** The first `context.externalId` entry of this type (RudderStack's getDestinationExternalID takes the first). */
export function firstExternalId(event: SluiceEvent, type: string): unknown {
  const ids = event.context?.externalId;
  if (!Array.isArray(ids)) return undefined;
  return ids.find((x: any) => x?.type === type)?.id;
}

/** A config switch: true, or the text "true" that exported configs hold. */
export const isOn = (v: unknown): boolean => v === true || v === "true";
