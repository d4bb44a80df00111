/**
 * Validates one event against its source's tracking plan, as RudderStack does it in two places:
 * rudder-transformer decides the violations and whether the event is dropped
 * (src/util/eventValidation.js), rudder-server what is written into the event's context
 * (processor/trackingplan.go). Pure: nothing here reads a store, a clock or the environment, and
 * nothing is logged per event.
 */
import type { ErrorObject } from "ajv/dist/core";
import type { CompiledTrackingPlan } from "./plan";
import { type EventTypeSettings, planRefFor, readSetting, settingsForEventType, type TrackingPlanSettings } from "./settings";

export const ViolationType = {
  RequiredMissing: "Required-Missing",
  DatatypeMismatch: "Datatype-Mismatch",
  AdditionalProperties: "Additional-Properties",
  UnknownViolation: "Unknown-Violation",
  UnplannedEvent: "Unplanned-Event",
  AdvanceRulesViolation: "Advance-Rules-Violation",
} as const;
export type ViolationType = (typeof ViolationType)[keyof typeof ViolationType];

/** A violation as rudder-transformer returns it (its `validationErrors`), keys in its order. */
export interface Violation {
  type: ViolationType;
  message: string;
  /** The missing or unplanned property (Required-Missing, Additional-Properties only). */
  property?: string;
  meta: { instancePath?: string; schemaPath?: string };
}

/**
 * A violation as it lands in `context.violationErrors`: rudder-server decodes the transformer's
 * answer into a Go struct without `omitempty`, so `property` is always there ("" when none) and
 * comes last.
 */
export interface ContextViolation {
  type: string;
  message: string;
  meta: Record<string, string>;
  property: string;
}

export interface ContextFields {
  trackingPlanId: string;
  trackingPlanVersion: number;
  violationErrors: ContextViolation[];
}

export interface TrackingPlanOutcome {
  violations: Violation[];
  /** The event goes no further (RudderStack sends it to proc errors with status 400). */
  dropped: boolean;
  /** The violation that decided the drop, as rudder-transformer names it; "None" when kept. */
  violationType: ViolationType | "None";
  /** For a dropped event, the text RudderStack records as its error. */
  error?: string;
  /** The event's rules did not compile: RudderStack lets the event through unchecked. */
  compileError?: string;
  /** Fields to set on the event's context (applyContextFields); undefined: leave it alone. */
  contextFields?: ContextFields;
}

// `alias` is listed as unsupported in rudder-transformer; any other type is not listed at all.
const VALIDATED_TYPES = new Set(["track", "identify", "group", "page", "screen"]);

export function isValidatedEventType(type: unknown): boolean {
  return typeof type === "string" && VALIDATED_TYPES.has(type);
}

/**
 * rudder-transformer's `validate`: the violations of one event against the plan, or the compile
 * error of the rules that govern it. A track event the plan does not name (or names with empty
 * rules) is an Unplanned-Event; any other type the plan does not name has no violations.
 */
export function findViolations(
  plan: CompiledTrackingPlan,
  message: Record<string, unknown>,
  typeSettings: EventTypeSettings,
): { violations: Violation[] } | { error: string } {
  const type = String(message.type);
  const i = plan.indexOf(type, type === "track" ? message.event : "");
  const compiled = i < 0 ? undefined : plan.compiledAt(i, typeSettings.ajvOptions, typeSettings.ajvOptionsKey);
  if (!compiled) {
    if (type !== "track") return { violations: [] };
    return {
      violations: [{ type: ViolationType.UnplannedEvent, message: `no schema for event: ${String(message.event)}`, meta: {} }],
    };
  }
  if ("error" in compiled) return compiled;
  const validate = compiled.validate;
  if (validate(message)) return { violations: [] };
  return { violations: (validate.errors ?? []).map(toViolation) };
}

function toViolation(error: ErrorObject): Violation {
  const meta = { instancePath: error.instancePath, schemaPath: error.schemaPath };
  const message = error.message as string;
  switch (error.keyword) {
    case "required":
      return { type: ViolationType.RequiredMissing, message, property: error.params.missingProperty, meta };
    case "type":
      return { type: ViolationType.DatatypeMismatch, message, meta };
    case "additionalProperties":
    case "unevaluatedProperties": {
      const property = error.params.additionalProperty || error.params.unevaluatedProperty;
      return { type: ViolationType.AdditionalProperties, message: `${message} '${property}'`, property, meta };
    }
    case "minLength":
    case "maxLength":
    case "pattern":
    case "format":
    case "multipleOf":
    case "minimum":
    case "maximum":
    case "exclusiveMinimum":
    case "exclusiveMaximum":
    case "minItems":
    case "maxItems":
    case "uniqueItems":
    case "enum":
    case "if":
      return { type: ViolationType.AdvanceRulesViolation, message, meta };
    default:
      // const, contains, not, oneOf, anyOf, dependencies, propertyNames, false schemas, ...
      return { type: ViolationType.UnknownViolation, message, meta };
  }
}

const OTHER_VIOLATIONS: readonly string[] = [
  ViolationType.UnknownViolation,
  ViolationType.DatatypeMismatch,
  ViolationType.RequiredMissing,
  ViolationType.AdvanceRulesViolation,
];

/**
 * rudder-transformer's `handleValidationErrors`: whether the merged settings drop an event with
 * these violations, and for which. Settings are read in sorted key order: rudder-server sends the
 * merged config as a Go map, which Go's JSON encoding writes with sorted keys, and the transformer
 * walks it in the order received; when two settings both drop, the later names the violation.
 * Unknown values (not true/false, forward/drop) are ignored, as RudderStack ignores them.
 */
export function decideDrop(
  violations: readonly { type: string }[],
  merged: Record<string, unknown>,
): { dropped: boolean; violationType: ViolationType | "None" } {
  const present = new Set(violations.map((v) => v.type));
  let dropped = false;
  let violationType: ViolationType | "None" = "None";
  for (const key of Object.keys(merged).sort()) {
    const value = readSetting(merged[key]);
    if (key === "allowUnplannedEvents") {
      if (value === "false" && present.has(ViolationType.UnplannedEvent)) {
        dropped = true;
        violationType = ViolationType.UnplannedEvent;
      }
    } else if (key === "unplannedProperties") {
      if (value === "drop" && present.has(ViolationType.AdditionalProperties)) {
        dropped = true;
        violationType = ViolationType.AdditionalProperties;
      }
    } else if (key === "anyOtherViolation") {
      const other = value === "drop" ? OTHER_VIOLATIONS.find((t) => present.has(t)) : undefined;
      if (other) {
        dropped = true;
        violationType = other as ViolationType;
      }
    }
    // sendViolatedEventsTo: "procErrors" is its only value, and a dropped event goes there anyway.
  }
  return { dropped, violationType };
}

/** rudder-transformer's `constructValidationErrors`: the error text of a dropped event. */
export function violationSummary(violations: readonly Violation[]): string {
  const byType: Record<string, { property?: string; message?: string; schemaPath?: string }[]> = {};
  for (const v of violations) {
    const entry: { property?: string; message?: string; schemaPath?: string } = {};
    if (v.property) entry.property = v.property;
    if (v.message) entry.message = v.message;
    if (v.meta?.schemaPath) entry.schemaPath = v.meta.schemaPath;
    (byType[v.type] ??= []).push(entry);
  }
  return JSON.stringify(byType);
}

function toContextViolation(v: Violation): ContextViolation {
  return { type: v.type, message: v.message ?? "", meta: v.meta as Record<string, string>, property: v.property ?? "" };
}

export interface ValidateEventInput {
  /** The event as it reaches the processor. Ajv options that modify data (useDefaults, coerceTypes, removeAdditional) modify it, as in RudderStack. */
  message: Record<string, unknown>;
  settings: TrackingPlanSettings;
  /** The compiled plan for `planRefFor(settings, message)`; undefined when no such plan is known. */
  plan: CompiledTrackingPlan | undefined;
}

/**
 * The whole of RudderStack's tracking-plan step for one event: which events are checked, the
 * violations, the drop decision, and the context fields. An event of a source with no plan is
 * left alone entirely; every other event is annotated (unless propagateValidationErrors is
 * "false"), with `violationErrors: []` when it was not checked or had no violations, and dropped
 * ones are annotated too (the annotated event is what RudderStack records as dropped).
 */
export function validateEvent({ message, settings, plan }: ValidateEventInput): TrackingPlanOutcome {
  if (!settings.planId) return { violations: [], dropped: false, violationType: "None" };
  const ref = planRefFor(settings, message);
  const typeSettings = settingsForEventType(settings, String(message.type));
  const outcome = checkEvent(message, plan, ref.version, typeSettings);
  if (typeSettings.propagateValidationErrors) {
    outcome.contextFields = {
      trackingPlanId: ref.id,
      trackingPlanVersion: ref.version,
      violationErrors: outcome.violations.map(toContextViolation),
    };
  }
  return outcome;
}

function checkEvent(
  message: Record<string, unknown>,
  plan: CompiledTrackingPlan | undefined,
  version: number,
  typeSettings: EventTypeSettings,
): TrackingPlanOutcome {
  const pass: TrackingPlanOutcome = { violations: [], dropped: false, violationType: "None" };
  if (!typeSettings.validates || !isValidatedEventType(message.type)) return pass;
  // RudderStack's transformer throws on a missing version and the event passes unchecked.
  if (!version) return pass;
  if (!plan) {
    // RudderStack: the plan fetch answers 404, and the event fails with that status.
    return { ...pass, dropped: true, error: "Error occurred while validating: the tracking plan version the source names is not known" };
  }
  const found = findViolations(plan, message, typeSettings);
  if ("error" in found) return { ...pass, compileError: found.error };
  const { violations } = found;
  if (violations.length === 0) return pass;
  const { dropped, violationType } = decideDrop(violations, typeSettings.merged);
  return dropped ? { violations, dropped, violationType, error: violationSummary(violations) } : { violations, dropped, violationType };
}

/**
 * Writes the context fields as rudder-server's reportViolations does: a missing or null context
 * becomes one holding just these fields; a context that is not an object is left as it is.
 */
export function applyContextFields(message: Record<string, unknown>, fields: ContextFields | undefined): void {
  if (!fields) return;
  const context = message.context;
  if (context === undefined || context === null) {
    message.context = { ...fields };
    return;
  }
  if (typeof context !== "object" || Array.isArray(context)) return;
  const c = context as Record<string, unknown>;
  c.trackingPlanId = fields.trackingPlanId;
  c.trackingPlanVersion = fields.trackingPlanVersion;
  c.violationErrors = fields.violationErrors;
}
