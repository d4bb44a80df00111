/**
 * A tracking plan as RudderStack's control plane serves it, in either of its two formats, read
 * into one shape; and the plan compiled, one Ajv validator per planned event.
 *
 * Current format: `{ id?, name, version, events: [{ id, name, eventType, description, rules }] }`,
 * where a non-track event has the name "" and `rules` is the JSON Schema of the whole event.
 * Older format: `{ name, version, rules: { events: [{ name, rules }], identify?, group?, page?,
 * screen? } }`: track events by name under `rules.events`, one schema per other type. A plan
 * holding `events` is read in the current format, whatever else it holds (rudder-transformer's
 * test in trackingPlan.js).
 */
import { type Static, t } from "elysia";
import { parseWith } from "../lib/schema";
import { type AjvOptions, ajvOptionsKey, type CompiledSchema, compileSchema, createAjv, draftOf, RUDDERSTACK_AJV_OPTIONS } from "./ajv";
import { settingsForEventType, type TrackingPlanSettings } from "./settings";
import type AjvCore from "ajv/dist/core";

/** A JSON Schema: an object; `true`, `false`, null and `{}` all mean "no rules" to RudderStack. */
// Elysia's t.Integer also takes numeric strings (it is made for query strings); JSON here holds numbers.
const Int = t.Number({ multipleOf: 1 });

const Rules = t.Union([t.Record(t.String(), t.Unknown()), t.Boolean(), t.Null()]);

export const PlannedEventJson = t.Object({
  id: t.Optional(t.String()),
  name: t.String(),
  eventType: t.String(),
  description: t.Optional(t.Union([t.String(), t.Null()])),
  rules: t.Optional(Rules),
});

export const TrackingPlanJson = t.Object({
  id: t.Optional(t.String()),
  name: t.Optional(t.String()),
  version: t.Optional(t.Union([Int, t.String()])),
  events: t.Array(PlannedEventJson),
});
export type TrackingPlanJson = Static<typeof TrackingPlanJson>;

const LegacyTrackEventJson = t.Object({
  id: t.Optional(t.String()),
  name: t.String(),
  description: t.Optional(t.Union([t.String(), t.Null()])),
  rules: t.Optional(Rules),
});

export const LegacyTrackingPlanJson = t.Object({
  id: t.Optional(t.String()),
  name: t.Optional(t.String()),
  display_name: t.Optional(t.String()),
  version: t.Optional(t.Union([Int, t.String()])),
  // `events` holds the track events; every other key is an event type and its schema.
  rules: t.Object({ events: t.Optional(t.Array(LegacyTrackEventJson)) }, { additionalProperties: Rules }),
});
export type LegacyTrackingPlanJson = Static<typeof LegacyTrackingPlanJson>;

export interface PlannedEvent {
  eventType: string;
  /** The track event's name; "" for the other types. */
  name: string;
  id?: string;
  description?: string;
  /** The event's JSON Schema; undefined when the plan gives none (or `{}`): an unplanned event. */
  rules?: Record<string, unknown>;
}

export interface TrackingPlan {
  id?: string;
  name?: string;
  version?: number | string;
  format: "events" | "rules";
  events: PlannedEvent[];
}

function rulesOf(rules: Static<typeof Rules> | undefined): Record<string, unknown> | undefined {
  // RudderStack: `!eventSchema || Object.keys(eventSchema).length === 0` is "no schema".
  return rules && typeof rules === "object" && Object.keys(rules).length > 0 ? rules : undefined;
}

/** Reads a plan in either format; throws AppError BAD_REQUEST naming the field at fault. */
export function parseTrackingPlan(json: unknown): TrackingPlan {
  if (json && typeof json === "object" && Object.hasOwn(json, "events")) {
    const plan = parseWith(TrackingPlanJson, json, "plan");
    return {
      id: plan.id,
      name: plan.name,
      version: plan.version,
      format: "events",
      events: plan.events.map((e) => ({
        eventType: e.eventType,
        name: e.name,
        id: e.id,
        description: e.description ?? undefined,
        rules: rulesOf(e.rules),
      })),
    };
  }
  const plan = parseWith(LegacyTrackingPlanJson, json, "plan");
  const events: PlannedEvent[] = (plan.rules.events ?? []).map((e) => ({
    eventType: "track",
    name: e.name,
    id: e.id,
    description: e.description ?? undefined,
    rules: rulesOf(e.rules),
  }));
  for (const [eventType, rules] of Object.entries(plan.rules)) {
    // A track event is looked up in `rules.events` only: a `rules.track` schema is never used.
    if (eventType === "events" || eventType === "track") continue;
    events.push({ eventType, name: "", rules: rulesOf(rules as unknown as Static<typeof Rules>) });
  }
  return { id: plan.id, name: plan.name, version: plan.version, format: "rules", events };
}

export interface CompileProblem {
  eventType: string;
  eventName: string;
  /** Ajv's message (or RE2's, for a pattern it does not run). */
  message: string;
}

/**
 * A plan ready to validate events: events indexed by type and name, and one validator per event
 * and Ajv option set, compiled once and kept for the life of the plan.
 */
export class CompiledTrackingPlan {
  readonly plan: TrackingPlan;
  /** The schemas that did not compile when the plan was compiled. Events they govern pass unchecked. */
  readonly problems: CompileProblem[] = [];
  private readonly index = new Map<string, Map<string, number>>();
  /** Per Ajv option set (by key), the compiled rules of each planned event, by its position. */
  private readonly validators = new Map<string, (CompiledSchema | undefined)[]>();
  private readonly instances = new Map<string, AjvCore>();

  constructor(plan: TrackingPlan) {
    this.plan = plan;
    plan.events.forEach((e, i) => {
      let byName = this.index.get(e.eventType);
      if (!byName) this.index.set(e.eventType, (byName = new Map()));
      // RudderStack takes the first event that matches (Array.find).
      if (!byName.has(e.name)) byName.set(e.name, i);
    });
  }

  /** The position of the planned event for a type and name ("" for non-track types); -1 when none. */
  indexOf(eventType: string, name: unknown): number {
    if (typeof name !== "string") return -1;
    return this.index.get(eventType)?.get(name) ?? -1;
  }

  find(eventType: string, name: unknown): PlannedEvent | undefined {
    return this.plan.events[this.indexOf(eventType, name)];
  }

  /** The compiled rules of the planned event at `i` under an option set; compiled on first use. */
  compiledAt(i: number, options: AjvOptions, optionsKey: string): CompiledSchema | undefined {
    const rules = this.plan.events[i]?.rules;
    if (!rules) return undefined;
    let slots = this.validators.get(optionsKey);
    if (!slots) this.validators.set(optionsKey, (slots = []));
    return (slots[i] ??= this.compile(rules, options, optionsKey));
  }

  private compile(rules: Record<string, unknown>, options: AjvOptions, optionsKey: string): CompiledSchema {
    const draft = draftOf(rules);
    if (typeof draft !== "string") return draft;
    const instanceKey = `${draft}\u0000${optionsKey}`;
    let ajv = this.instances.get(instanceKey);
    if (!ajv) {
      try {
        ajv = createAjv(draft, options);
      } catch (e) {
        // Options Ajv refuses (e.g. a removed option): no schema compiles under them.
        return { error: e instanceof Error ? e.message : String(e) };
      }
      this.instances.set(instanceKey, ajv);
    }
    return compileSchema(ajv, rules);
  }
}

/**
 * Compiles every planned event's rules up front and reports those Ajv cannot compile. With
 * `settings`, each event compiles under the Ajv options the source sets for its type; without,
 * under RudderStack's defaults.
 */
export function compileTrackingPlan(plan: TrackingPlan, settings?: TrackingPlanSettings): CompiledTrackingPlan {
  const compiled = new CompiledTrackingPlan(plan);
  const defaultsKey = ajvOptionsKey(RUDDERSTACK_AJV_OPTIONS);
  plan.events.forEach((event, i) => {
    const typeSettings = settings ? settingsForEventType(settings, event.eventType) : undefined;
    const result = typeSettings
      ? compiled.compiledAt(i, typeSettings.ajvOptions, typeSettings.ajvOptionsKey)
      : compiled.compiledAt(i, RUDDERSTACK_AJV_OPTIONS, defaultsKey);
    if (result && "error" in result) compiled.problems.push({ eventType: event.eventType, eventName: event.name, message: result.error });
  });
  return compiled;
}
