/**
 * A source's tracking-plan settings, RudderStack's `dgSourceTrackingPlanConfig`:
 *
 *   { trackingPlan: { id, version }, config: { global: {...}, track: {...}, identify: {...}, ... },
 *     mergedConfig?, sourceId?, version?, deleted? }
 *
 * where each entry of `config` may hold `allowUnplannedEvents` ("true"/"false"),
 * `unplannedProperties` and `anyOtherViolation` ("forward"/"drop"), `propagateValidationErrors`,
 * `sendViolatedEventsTo` and `ajvOptions`. Values are read the way each side of RudderStack reads
 * them, and the two sides differ:
 *  - the drop settings, in rudder-transformer: `String(value).toLowerCase()`, so true, "true" and
 *    "TRUE" are one value; anything else is an unknown option, logged and ignored;
 *  - `propagateValidationErrors`, in rudder-server: only the exact string "false" stops the event's
 *    context from being annotated (false, "FALSE" and "no" annotate).
 */
import { type Static, t } from "elysia";
import { parseWith } from "../lib/schema";
import { type AjvOptions, ajvOptionsKey, RUDDERSTACK_AJV_OPTIONS } from "./ajv";

// Elysia's t.Integer also takes numeric strings (it is made for query strings); JSON here holds numbers.
const Int = t.Number({ multipleOf: 1 });

const TypeConfig = t.Union([t.Record(t.String(), t.Unknown()), t.Null()]);

export const TrackingPlanSettingsJson = t.Object({
  sourceId: t.Optional(t.String()),
  version: t.Optional(Int),
  config: t.Optional(t.Union([t.Record(t.String(), TypeConfig), t.Null()])),
  mergedConfig: t.Optional(t.Union([t.Record(t.String(), t.Unknown()), t.Null()])),
  deleted: t.Optional(t.Boolean()),
  trackingPlan: t.Optional(
    t.Union([t.Object({ id: t.Optional(t.String()), version: t.Optional(Int) }), t.Null()]),
  ),
});
export type TrackingPlanSettingsJson = Static<typeof TrackingPlanSettingsJson>;

export interface TrackingPlanSettings {
  /** "" when the source has no tracking plan: its events are neither validated nor annotated. */
  planId: string;
  planVersion: number;
  /** Per event type, and `global` for the defaults (RudderStack's `sourceTpConfig`). */
  config: Record<string, Record<string, unknown>>;
  /** A merged config the control plane sent; rudder-server then uses it for every event type. */
  mergedConfig?: Record<string, unknown>;
}

/** Reads `dgSourceTrackingPlanConfig`; throws AppError BAD_REQUEST naming the field at fault. */
export function parseTrackingPlanSettings(json: unknown): TrackingPlanSettings {
  const s = parseWith(TrackingPlanSettingsJson, json, "dgSourceTrackingPlanConfig");
  // fromEntries defines own properties: an event type named "__proto__" stays a key.
  const config = Object.fromEntries(Object.entries(s.config ?? {}).map(([eventType, c]) => [eventType, c ?? {}]));
  return {
    planId: s.trackingPlan?.id ?? "",
    planVersion: s.trackingPlan?.version ?? 0,
    config,
    mergedConfig: s.mergedConfig ?? undefined,
  };
}

export interface EventTypeSettings {
  /** RudderStack's `mergedTpConfig`: `global` overlaid with the event type's own entry. */
  merged: Record<string, unknown>;
  /** RudderStack's defaults, then `global.ajvOptions`, then the event type's `ajvOptions`. */
  ajvOptions: AjvOptions;
  ajvOptionsKey: string;
  /** rudder-server annotates the event's context unless this setting is the string "false". */
  propagateValidationErrors: boolean;
  /** rudder-transformer validates only when both `config` and the merged config are non-empty. */
  validates: boolean;
}

// Settings objects are built once per source and read per event: the per-type view is worked out once.
const UNNAMED_TYPE = "\u0000unnamed";
const perType = new WeakMap<TrackingPlanSettings, Map<string, EventTypeSettings>>();

export function settingsForEventType(settings: TrackingPlanSettings, eventType: string): EventTypeSettings {
  let byType = perType.get(settings);
  if (!byType) perType.set(settings, (byType = new Map()));
  // Types the config does not name share one entry: the type comes from the event's sender, and
  // a cache keyed by whatever they send would grow without bound.
  const key = Object.hasOwn(settings.config, eventType) ? eventType : UNNAMED_TYPE;
  let out = byType.get(key);
  if (!out) byType.set(key, (out = buildEventTypeSettings(settings, key)));
  return out;
}

function buildEventTypeSettings(settings: TrackingPlanSettings, eventType: string): EventTypeSettings {
  const { config } = settings;
  const own = Object.hasOwn(config, eventType) ? config[eventType] : undefined;
  const merged = settings.mergedConfig ?? { ...config.global, ...own };
  const ajvOptions = { ...RUDDERSTACK_AJV_OPTIONS, ...objectOrEmpty(config.global?.ajvOptions), ...objectOrEmpty(own?.ajvOptions) };
  return {
    merged,
    ajvOptions,
    ajvOptionsKey: ajvOptionsKey(ajvOptions),
    propagateValidationErrors: merged.propagateValidationErrors !== "false",
    validates: Object.keys(config).length > 0 && Object.keys(merged).length > 0,
  };
}

// `...(x || {})` in rudder-transformer: a string or array would spread index keys, which Ajv
// ignores, so anything but a plain object adds nothing.
function objectOrEmpty(value: unknown): Record<string, unknown> {
  return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** A drop setting as rudder-transformer reads it: `value?.toString()?.toLowerCase()`. */
export function readSetting(value: unknown): string | undefined {
  return value === undefined || value === null ? undefined : String(value).toLowerCase();
}

export interface PlanRef {
  id: string;
  version: number;
}

/**
 * The plan an event is validated against: the source's, unless the event was sent by a
 * RudderTyper client built for another version of that same plan (`context.ruddertyper`, a
 * positive number), as rudder-server picks it.
 */
export function planRefFor(settings: TrackingPlanSettings, message: Record<string, unknown>): PlanRef {
  const ref = { id: settings.planId, version: settings.planVersion };
  const context = message.context;
  if (!context || typeof context !== "object") return ref;
  const typer = (context as Record<string, unknown>).ruddertyper;
  if (!typer || typeof typer !== "object" || Array.isArray(typer)) return ref;
  const { trackingPlanId, trackingPlanVersion } = typer as Record<string, unknown>;
  if (trackingPlanId !== ref.id || trackingPlanVersion === undefined || trackingPlanVersion === null) return ref;
  if (typeof trackingPlanVersion === "number" && trackingPlanVersion > 0) ref.version = Math.trunc(trackingPlanVersion);
  return ref;
}
