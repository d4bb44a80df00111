/** JSON values as the Facebook Lead Ads mapping and its hydration read them. */

export const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** A JSON value as a JavaScript template literal (or a property key) prints it, without running anything the payload names. */
export function asText(v: unknown): string {
  if (typeof v === "string") return v;
  if (Array.isArray(v)) return v.map((x) => (x === null || x === undefined ? "" : asText(x))).join(",");
  if (v !== null && typeof v === "object") return "[object Object]";
  return String(v);
}
