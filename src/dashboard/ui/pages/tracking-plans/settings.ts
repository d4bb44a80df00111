/**
 * A source's tracking-plan settings as the page edits them: RudderStack's four `global` settings
 * of dgSourceTrackingPlanConfig, each one of two values, read as RudderStack reads them (any case,
 * text or boolean) and written as text, as RudderStack's control plane sends them.
 */
import type { SourceTrackingPlan } from "../../types";

export const SETTINGS = [
  {
    key: "allowUnplannedEvents",
    label: "Unplanned events",
    help: "a track event the plan does not name",
    options: [
      { value: "true", label: "true (forward)" },
      { value: "false", label: "false (drop)" },
    ],
  },
  {
    key: "unplannedProperties",
    label: "Unplanned properties",
    help: "properties the event's schema does not allow",
    options: [
      { value: "forward", label: "forward" },
      { value: "drop", label: "drop" },
    ],
  },
  {
    key: "anyOtherViolation",
    label: "Other violations",
    help: "a required property missing, a wrong type, …",
    options: [
      { value: "forward", label: "forward" },
      { value: "drop", label: "drop" },
    ],
  },
  {
    key: "propagateValidationErrors",
    label: "Add violations to events",
    help: "context.violationErrors, for destinations to see",
    options: [
      { value: "true", label: "true" },
      { value: "false", label: "false" },
    ],
  },
] as const;

export type SettingKey = (typeof SETTINGS)[number]["key"];
export type SettingValues = Record<SettingKey, string>;

/** RudderStack's defaults: nothing dropped, violations added to the event. */
export const DEFAULTS: SettingValues = { allowUnplannedEvents: "true", unplannedProperties: "forward", anyOtherViolation: "forward", propagateValidationErrors: "true" };

type Stored = SourceTrackingPlan["dgSourceTrackingPlanConfig"];

/** The four values a source's stored settings hold in `global` (a value of another kind: the default). */
export function valuesOf(stored: Stored): SettingValues {
  const global = stored?.config?.global ?? {};
  const out = { ...DEFAULTS };
  for (const s of SETTINGS) {
    const v = global[s.key];
    const read = v === undefined || v === null ? "" : String(v).toLowerCase();
    if (s.options.some((o) => o.value === read)) out[s.key] = read;
  }
  return out;
}

/** The event types besides `global` with settings of their own: kept as they are on save. */
export const ownTypes = (stored: Stored): string[] => Object.keys(stored?.config ?? {}).filter((t) => t !== "global");

/**
 * The settings to save or to preview: the plan and version, the four values in `global` (with
 * whatever else `global` held, ajvOptions say), each event type's own settings kept. A merged
 * config from elsewhere is left out: rudder-server would use it instead of these.
 */
export function settingsFor(stored: Stored, planId: string, version: number, values: SettingValues) {
  const config = { ...(stored?.config ?? {}) };
  config.global = { ...(stored?.config?.global ?? {}), ...values };
  return { trackingPlan: { id: planId, version }, config };
}
