/**
 * How fast the tracking-plan engine validates track events against a 50-event plan (one compiled
 * validator per event, compiled once), on one core, through validateEvent (lookup, validation,
 * drop decision, context fields).
 *
 *   npx bun scripts/bench-tracking-plan.ts [--seconds 3]
 */
import { compileTrackingPlan, parseTrackingPlan } from "../src/tracking-plans/plan";
import { parseTrackingPlanSettings } from "../src/tracking-plans/settings";
import { validateEvent } from "../src/tracking-plans/validate";

const secondsArg = process.argv.indexOf("--seconds");
const seconds = secondsArg > 0 ? Number(process.argv[secondsArg + 1]) : 3;

const EVENTS = 50;
function rulesFor(i: number) {
  return {
    $schema: "http://json-schema.org/draft-07/schema#",
    type: "object",
    required: ["properties"],
    properties: {
      properties: {
        type: "object",
        additionalProperties: false,
        required: ["order_id", "total", "currency"],
        properties: {
          order_id: { type: "string", minLength: 4 },
          total: { type: "number", minimum: 0 },
          currency: { type: "string", enum: ["USD", "EUR", "GBP"] },
          coupon: { type: ["string", "null"], pattern: "^[A-Z0-9]{4,12}$" },
          email: { type: "string", format: "email" },
          items: {
            type: "array",
            maxItems: 50,
            items: { type: "object", required: ["sku"], properties: { sku: { type: "string" }, qty: { type: "integer", minimum: 1 } } },
          },
          [`field_${i}`]: { type: "boolean" },
        },
      },
      context: { type: "object" },
    },
  };
}

const planJson = {
  id: "tp_bench",
  name: "Bench plan",
  version: 1,
  events: Array.from({ length: EVENTS }, (_, i) => ({ id: `ev_${i}`, name: `Event ${i}`, eventType: "track", rules: rulesFor(i) })),
};

const compileStart = performance.now();
const plan = compileTrackingPlan(parseTrackingPlan(planJson));
const compileMs = performance.now() - compileStart;
if (plan.problems.length) throw new Error(JSON.stringify(plan.problems));
const settings = parseTrackingPlanSettings({
  trackingPlan: { id: "tp_bench", version: 1 },
  config: { global: { allowUnplannedEvents: "true", unplannedProperties: "forward", anyOtherViolation: "forward", ajvOptions: {} } },
});

function event(i: number, valid: boolean) {
  return {
    type: "track",
    event: `Event ${i % EVENTS}`,
    userId: `u${i}`,
    messageId: `m${i}`,
    timestamp: "2024-01-01T00:00:00.000Z",
    context: { library: { name: "analytics-node", version: "3.0.0" }, ip: "10.0.0.1" },
    properties: {
      order_id: `ord_${i}`,
      total: valid ? 42.5 : "42.5",
      currency: valid ? "EUR" : "JPY",
      coupon: "SAVE2024",
      email: "someone@example.com",
      items: [{ sku: "a-1", qty: 2 }, { sku: "b-2", qty: 1 }],
      ...(valid ? {} : { unplanned: true }),
    },
  };
}

function measure(label: string, valid: boolean) {
  // Events are built up front so the loop times the engine, not the event's construction.
  const pool = Array.from({ length: 1000 }, (_, i) => event(i, valid));
  for (let i = 0; i < 20_000; i++) validateEvent({ message: pool[i % pool.length]!, settings, plan });
  let n = 0;
  let violations = 0;
  const start = performance.now();
  const deadline = start + seconds * 1000;
  while (performance.now() < deadline) {
    for (let k = 0; k < 1000; k++) violations += validateEvent({ message: pool[k]!, settings, plan }).violations.length;
    n += 1000;
  }
  const elapsed = (performance.now() - start) / 1000;
  console.log(`${label}: ${Math.round(n / elapsed).toLocaleString("en-US")} events/s (${n.toLocaleString("en-US")} events, ${(violations / n).toFixed(1)} violations each)`);
}

console.log(`compiled a ${EVENTS}-event plan in ${compileMs.toFixed(0)} ms`);
measure("valid track events", true);
measure("track events with 3 violations", false);
