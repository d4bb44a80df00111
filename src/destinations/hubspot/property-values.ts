/** What HubSpot's property types ask of a written value, shared by contact and record writes. */

type Obj = Record<string, any>;

// HubSpot keeps these itself; a write naming them is refused.
const SYSTEM_PROPERTIES = new Set(["hs_object_id"]);

export const withoutSystemProperties = (props: Obj): Obj => Object.fromEntries(Object.entries(props).filter(([k]) => !SYSTEM_PROPERTIES.has(k)));

/** A value a `date` property could be given: RudderStack converts only these. */
export const isDateLike = (value: unknown): value is string | number | Date => typeof value === "string" || typeof value === "number" || value instanceof Date;

/** RudderStack's midnight-UTC milliseconds for a `date` property; what is no date stays as it is. */
export function utcMidnight(value: string | number | Date): unknown {
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return value;
  date.setUTCHours(0, 0, 0, 0);
  return date.getTime();
}
