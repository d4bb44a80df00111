/**
 * Reading a plan pasted as text, and the events of a plan in either of RudderStack's formats
 * (`events: [...]`, or the older `rules: {events: [...], identify: {...}, ...}`), as the server
 * reads them (src/tracking-plans/plan.ts).
 */

export interface PlannedEventView {
  name: string;
  eventType: string;
  description: string;
  rules: unknown;
}

/** The pasted text as a JSON object, or an error that says what is wrong with it. */
export function parsePlanText(text: string): Record<string, unknown> {
  let plan: unknown;
  try {
    plan = JSON.parse(text);
  } catch (e) {
    throw new Error(`The plan is not valid JSON: ${(e as Error).message}`);
  }
  if (!plan || typeof plan !== "object" || Array.isArray(plan)) throw new Error("The plan must be a JSON object: {\"name\": …, \"version\": …, \"events\": […]}");
  return plan as Record<string, unknown>;
}

const asObject = (v: unknown): Record<string, unknown> | undefined => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);
const text = (v: unknown): string => (typeof v === "string" ? v : "");

export function plannedEvents(plan: Record<string, unknown>): PlannedEventView[] {
  if (Array.isArray(plan.events)) {
    return plan.events.map((e) => {
      const o = asObject(e) ?? {};
      return { name: text(o.name), eventType: text(o.eventType), description: text(o.description), rules: o.rules };
    });
  }
  const rules = asObject(plan.rules);
  if (!rules) return [];
  const out: PlannedEventView[] = [];
  for (const e of Array.isArray(rules.events) ? rules.events : []) {
    const o = asObject(e) ?? {};
    out.push({ name: text(o.name), eventType: "track", description: text(o.description), rules: o.rules });
  }
  for (const [eventType, schema] of Object.entries(rules)) {
    if (eventType !== "events" && eventType !== "track") out.push({ name: "", eventType, description: "", rules: schema });
  }
  return out;
}
