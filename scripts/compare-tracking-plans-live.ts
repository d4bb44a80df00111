/**
 * Generated events against generated tracking plans, validated by a running rudder-transformer's
 * `/v0/validate` and by Sluice's engine (src/tracking-plans/), and compared. A developer tool, not
 * part of `npm test`: it needs rudder-transformer (Elastic License 2.0) built and running locally
 * (CONTRIBUTING.md, "Generated events against a running rudder-transformer"); nothing of it is
 * read or copied here, it is only sent requests.
 *
 *   npx bun scripts/compare-tracking-plans-live.ts [--transformer URL] [--events N] [--seed S]
 *       [--config-backend-port P] [-v] [--json FILE]
 *
 *   --transformer URL          the running transformer (default http://localhost:9090)
 *   --events N                 how many events to send (default 2000)
 *   --seed S                   the generator's seed (default "sluice"); a seed gives the same plans,
 *                              settings and events
 *   --config-backend-port P    the port of the config-backend stand-in this script serves (default
 *                              9091); start the transformer with CONFIG_BACKEND_URL=http://localhost:P
 *   -v                         per category, the first differing events with both answers
 *   --json FILE                every differing event, whole
 *
 * What the transformer is asked, and how: rudder-transformer fetches a plan by
 * `GET {CONFIG_BACKEND_URL}/workspaces/{workspaceId}/tracking-plans/{id}?version={version}` (Basic
 * auth with CONFIG_BACKEND_HOSTED_SECRET as user name when that is set; none otherwise), answers
 * 200 with the plan JSON in either of RudderStack's formats, and keeps it by id and version for the
 * life of the process. This script serves the generated plans there from a Bun.serve stand-in
 * (404 for a version it does not hold), under plan ids holding a per-run nonce so that a
 * transformer left running keeps no stale plan. Each generated source's events go in one
 * `POST /v0/validate` as rudder-server's processor sends them: a JSON array of
 * `{ message, metadata: { workspaceId, sourceId, jobId, trackingPlanId, trackingPlanVersion,
 * sourceTpConfig, mergedTpConfig } }`, encoded as Go encodes them (object keys sorted, empty
 * `sourceTpConfig`/`mergedTpConfig`/zero version left out: `omitempty`), with the plan version a
 * RudderTyper event names (`context.ruddertyper`) put in its metadata as rudder-server does, and
 * `mergedTpConfig` as rudder-server's `GetMergedConfig` gives it: the control plane's `mergedConfig`
 * when sent, else `global` overlaid with the type of the first event, kept for the later ones
 * (rudder-server stores the first merge on its copy of the source, one copy per gateway job: a
 * generated source's events are taken as one SDK batch request). The answer is one
 * `{ output, metadata, statusCode, validationErrors, error }` per event.
 *
 * Sluice's engine gets the same message and the source's `dgSourceTrackingPlanConfig`
 * (parseTrackingPlanSettings, planRefFor, compileTrackingPlan of the same plan JSON, validateEvent,
 * applyContextFields). What is compared, per event:
 *  - the violations (type, message, property, meta), in order;
 *  - the drop: rudder-transformer's statusCode other than 200 against `dropped`, and for a 400 its
 *    `error` against Sluice's `error`;
 *  - whether the event was checked at all: a 200 with "Error occurred while validating" (a schema
 *    that does not compile, a missing version) against Sluice's `compileError` (or no version);
 *  - the annotated event: the transformer's `output` with the context fields rudder-server's
 *    `reportViolations` writes (plan id and version of the batch's first event, the violations as
 *    its Go struct holds them, nothing when `propagateValidationErrors` is "false") against the
 *    message after applyContextFields.
 * An event that differs only through a difference src/tracking-plans/README.md documents is
 * counted apart, with the reason, when the difference accounts for it: a pattern RE2 refuses; a
 * schema the meta-schema refuses (Sluice, run again with `validateSchema: false`, answers as the
 * transformer did: its shared Ajv refuses such a schema for the first event only); the per-type
 * merged config (Sluice, run again with rudder-server's stored merge as `mergedConfig`, answers as
 * the transformer did); the annotated version (the answer with the event's own version written is
 * Sluice's); or two of these together.
 *
 * The message both get is in Go's key order, as the transformer gets it from rudder-server. How
 * many events Sluice would answer otherwise in the sender's key order is printed apart (the order
 * of Additional-Properties violations, or with `allErrors: false` which extra key is named).
 */
import { writeFileSync } from "node:fs";
import { Rng } from "./compare-generated/generate";
import { type CompiledTrackingPlan, compileTrackingPlan, parseTrackingPlan } from "../src/tracking-plans/plan";
import { parseTrackingPlanSettings, planRefFor, settingsForEventType, type TrackingPlanSettings } from "../src/tracking-plans/settings";
import { applyContextFields, isValidatedEventType, type TrackingPlanOutcome, validateEvent } from "../src/tracking-plans/validate";

const USAGE =
  "usage: npx bun scripts/compare-tracking-plans-live.ts [--transformer URL] [--events N] [--seed S] [--config-backend-port P] [-v] [--json FILE]";

let transformerUrl = "http://localhost:9090";
let eventCount = 2000;
let seed = "sluice";
let backendPort = 9091;
let verbose = false;
let jsonFile: string | undefined;
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = () => {
      const eq = a.indexOf("=");
      if (eq >= 0) return a.slice(eq + 1);
      const v = argv[++i];
      if (v === undefined) {
        console.error(`${a} needs a value\n${USAGE}`);
        process.exit(2);
      }
      return v;
    };
    if (a === "--transformer" || a.startsWith("--transformer=")) transformerUrl = value().replace(/\/+$/, "");
    else if (a === "--events" || a.startsWith("--events=")) eventCount = Number(value());
    else if (a === "--seed" || a.startsWith("--seed=")) seed = value();
    else if (a === "--config-backend-port" || a.startsWith("--config-backend-port=")) backendPort = Number(value());
    else if (a === "--json" || a.startsWith("--json=")) jsonFile = value();
    else if (a === "-v" || a === "--verbose") verbose = true;
    else {
      console.error(`unknown argument ${a}\n${USAGE}`);
      process.exit(2);
    }
  }
  if (!Number.isInteger(eventCount) || eventCount < 1 || !Number.isInteger(backendPort)) {
    console.error(USAGE);
    process.exit(2);
  }
}

type Obj = Record<string, any>;

// ---- JSON as Go writes it, and comparison -------------------------------------------------------

/** A value as rudder-server re-encodes it: object keys sorted (Go's encoding of a map; the keys here are ASCII, where JavaScript's sort is Go's byte order). */
function goOrder(value: any): any {
  if (Array.isArray(value)) return value.map(goOrder);
  if (value && typeof value === "object") {
    const out: Obj = {};
    for (const k of Object.keys(value).sort()) if (value[k] !== undefined) out[k] = goOrder(value[k]);
    return out;
  }
  return value;
}

/** Canonical JSON: keys sorted, undefined left out (as JSON leaves it out). */
function canon(value: unknown): string {
  return JSON.stringify(goOrder(JSON.parse(JSON.stringify(value ?? null))));
}

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v));

// ---- schema vocabulary --------------------------------------------------------------------------

const FORMATS: Record<string, { good: string[]; bad: string[] }> = {
  email: { good: ["ada@example.com", "j.smith+cakes@mail.example.org"], bad: ["ada-at-example.com", "@example.com", "a b@example.com"] },
  "date-time": {
    good: ["2024-05-01T10:00:00Z", "2024-05-01T10:00:00.123+02:00"],
    bad: ["2024-05-01", "2024-05-01T10:00:00", "yesterday", "2024-13-01T10:00:00Z"],
  },
  date: { good: ["2024-02-29", "2023-12-31"], bad: ["2023-02-29", "01/02/2024", "2024-1-5"] },
  uri: { good: ["https://example.com/a?b=1", "mailto:ada@example.com"], bad: ["example.com/a", "not a uri"] },
  uuid: { good: ["1b4e28ba-2fa1-4d3b-a3f5-ef19b5a7633b"], bad: ["1234", "1b4e28ba2fa14d3ba3f5ef19b5a7633b-x"] },
  ipv4: { good: ["192.168.1.20", "8.8.8.8"], bad: ["256.1.1.1", "1.2.3", "::1"] },
  hostname: { good: ["shop.example.com"], bad: ["-bad-.example", "a_b.example.com"] },
  time: { good: ["10:20:30Z", "23:59:59+01:00"], bad: ["25:00:00Z", "noon"] },
  // Given in ajvOptions.formats as a string (a pattern) when the source sets it; unknown otherwise.
  sku: { good: ["SKU-1042"], bad: ["sku-1", "SKU-"] },
};
const CUSTOM_FORMAT = "^SKU-\\d+$";

/** Patterns with values they take and refuse; `re2: false` for what RE2 does not run. */
const PATTERNS: { p: string; good: string[]; bad: string[]; re2?: false }[] = [
  { p: "^[A-Z]{3}-\\d{2}$", good: ["ABC-12"], bad: ["abc-12", "ABCD-1"] },
  { p: "^\\S+$", good: ["token_1"], bad: ["two words", "a\u00a0b", "tab\tbed"] },
  { p: "^[a-z]+(?:-[a-z]+)*$", good: ["red-velvet", "lemon"], bad: ["Red", "a--b"] },
  { p: "^.{1,5}$", good: ["abc", "é"], bad: ["abcdefg", "a\u2028b", "a\rb"] },
  { p: "^\\d+(\\.\\d{1,2})?$", good: ["12.50", "7"], bad: ["1.234", "1,5"] },
  { p: "^\\p{Lu}", good: ["Émile", "Zola"], bad: ["émile", "1st"] },
  { p: "colou?r", good: ["my colour", "color"], bad: ["colr"] },
  { p: "^[\\w.-]+$", good: ["a.b-c_d"], bad: ["a b", "ä"] },
  { p: "^\\s*$", good: ["", " \t", "\u3000"], bad: ["x"] },
  { p: "^[^\\s@]+@[^\\s@]+$", good: ["a@b"], bad: ["a @b", "a@b@c"] },
  { p: "^(?<!x)y+$", good: ["yy"], bad: ["xy"] },
  { p: "^(?=.*\\d)[a-z\\d]+$", good: ["abc1"], bad: ["abc"], re2: false },
  { p: "^(a+)\\1$", good: ["aa"], bad: ["aaa"], re2: false },
  { p: "^(?<c>[a-z])\\k<c>$", good: ["aa"], bad: ["ab"], re2: false },
];

const PROP_NAMES = [
  "sku", "price", "quantity", "currency", "coupon", "category", "email", "signup_date", "plan", "seats", "tags",
  "items", "address", "rating", "url", "referrer", "order_id", "discount", "colour", "size", "is_gift", "note",
  "level", "score", "session_length", "flavour", "tiers", "pickup", "voucher", "region", "device_ip", "started_at",
];
const EXTRA_NAMES = ["utm_source", "debug", "experiment", "coupon_code", "legacy_id", "zz_internal", "AAA", "nested_extra", "color", "Price"];
const TRACK_NAMES = [
  "Order Completed", "Product Viewed", "Product Added", "Checkout Started", "Signed Up", "Subscription Renewed",
  "Cake Ordered", "Video Played", "Search Performed", "Coupon Applied", "Article Read", "Cart Abandoned",
  "Payment Failed", "Invite Sent", "Level Completed", "Form Submitted", "Loaf Sliced", "Oven Preheated",
];
const WORDS = ["lemon", "chocolate", "carrot", "red", "blue", "pro", "basic", "Ada", "Zoë", "naïve café", "東京", "x", "hello world"];

interface GenCtx {
  rng: Rng;
  draft4: boolean;
  /** 2019-09 vocabulary allowed (unevaluatedProperties, if/then, dependentRequired). */
  modern: boolean;
  customFormat: boolean;
}

/** A property's schema. */
function genProp(c: GenCtx, depth: number): Obj {
  const { rng } = c;
  const kind = rng.pick([
    "string", "string", "stringLen", "format", "format", "pattern", "pattern", "enum", "number", "number",
    "integer", "boolean", "union", "array", "array", "object", "object", "const", "anyOf", "nullable",
  ]);
  switch (kind) {
    case "string":
      return { type: "string" };
    case "stringLen":
      return { type: "string", minLength: rng.int(1, 3), maxLength: rng.int(4, 12) };
    case "format": {
      const names = ["email", "date-time", "date", "uri", "uuid", "ipv4", "hostname", "time"];
      if (c.customFormat) names.push("sku", "sku");
      return { type: "string", format: rng.pick(names) };
    }
    case "pattern": {
      // Patterns RE2 refuses are rare: their events are counted apart, not compared.
      let pat = rng.pick(PATTERNS);
      if (pat.re2 === false && rng.chance(0.8)) pat = PATTERNS[0]!;
      return { type: "string", pattern: pat.p };
    }
    case "enum":
      return rng.chance(0.7) ? { type: "string", enum: rng.some(WORDS, 0.4).concat("lemon") } : { enum: [1, 2, 3, "three", null] };
    case "number": {
      const s: Obj = { type: "number" };
      if (rng.chance(0.6)) s.minimum = rng.int(-5, 10);
      if (rng.chance(0.6)) s.maximum = rng.int(100, 1000);
      if (rng.chance(0.3)) {
        if (c.draft4) {
          s.minimum ??= 0;
          s.exclusiveMinimum = true;
        } else {
          delete s.minimum;
          s.exclusiveMinimum = 0;
        }
      }
      if (rng.chance(0.15)) s.multipleOf = rng.pick([0.01, 0.5, 5]);
      return s;
    }
    case "integer": {
      const s: Obj = { type: "integer", minimum: rng.int(0, 2), maximum: rng.int(5, 50) };
      if (rng.chance(0.3)) s.multipleOf = rng.pick([2, 5]);
      if (rng.chance(0.2)) {
        if (c.draft4) s.exclusiveMaximum = true;
        else {
          s.exclusiveMaximum = s.maximum;
          delete s.maximum;
        }
      }
      return s;
    }
    case "boolean":
      return { type: "boolean" };
    case "union":
      return { type: rng.pick([["string", "null"], ["number", "string"], ["integer", "boolean"]]) };
    case "nullable":
      return { type: ["string", "null"], maxLength: 8 };
    case "array": {
      const items = depth < 2 && rng.chance(0.3) ? genObject(c, depth + 1) : genProp(c, 3);
      const s: Obj = { type: "array", items };
      if (rng.chance(0.4)) s.minItems = rng.int(1, 2);
      if (rng.chance(0.4)) s.maxItems = rng.int(3, 5);
      if (rng.chance(0.25)) s.uniqueItems = true;
      if (rng.chance(0.05) && !c.draft4) return { type: "array", items: [{ type: "string" }, { type: "number" }], minItems: 2, additionalItems: false };
      return s;
    }
    case "object":
      return depth < 2 ? genObject(c, depth + 1) : { type: "object" };
    case "const":
      return c.draft4 && rng.chance(0.8) ? { enum: ["v1"] } : { const: "v1" };
    case "anyOf":
      return rng.chance(0.7)
        ? { anyOf: [{ type: "string", minLength: 2 }, { type: "number" }] }
        : rng.chance(0.5)
          ? { oneOf: [{ type: "integer" }, { type: "number", minimum: 10 }] }
          : { not: { type: "null" } };
    default:
      return { type: "string" };
  }
}

/** An object schema with properties, required names, additionalProperties and the like. */
function genObject(c: GenCtx, depth: number, minProps = 1): Obj {
  const { rng } = c;
  const n = rng.int(minProps, depth === 0 ? 6 : 3);
  const properties: Obj = {};
  const names = new Set<string>();
  while (names.size < n) names.add(rng.pick(PROP_NAMES));
  for (const name of names) {
    properties[name] = genProp(c, depth);
    if (rng.chance(0.08) && properties[name].type === "string" && !properties[name].format && !properties[name].pattern) properties[name].default = "dflt";
    if (rng.chance(0.15)) properties[name].description = `The ${name}.`;
  }
  const s: Obj = { type: "object", properties };
  const required = [...names].filter(() => rng.chance(0.45));
  // A required name the properties do not define: strictRequired refuses the schema.
  if (rng.chance(0.02)) required.push("undefined_required");
  if (required.length) s.required = required;
  const closing = rng.next();
  if (closing < 0.4) s.additionalProperties = false;
  else if (closing < 0.5) s.additionalProperties = true;
  else if (closing < 0.55) s.additionalProperties = { type: "string" };
  else if (closing < 0.62 && c.modern) {
    // unevaluatedProperties sees what allOf's branches evaluated.
    s.allOf = [{ properties: { [rng.pick(EXTRA_NAMES)]: { type: "string" } } }];
    s.unevaluatedProperties = false;
  } else if (closing < 0.64) s.unevaluatedProperties = false; // draft-04: an unknown keyword
  else if (closing < 0.68) {
    s.patternProperties = { "^x_": { type: "string" } };
    s.additionalProperties = false;
  }
  if (c.modern && rng.chance(0.05)) {
    const [a, b] = [...names];
    if (a && b) {
      s.if = { properties: { [a]: { const: "pro" } }, required: [a] };
      s.then = { required: [b] };
    }
  }
  if (c.modern && rng.chance(0.03)) {
    const [a, b] = [...names];
    if (a && b) s.dependentRequired = { [a]: [b] };
  }
  if (rng.chance(0.03)) s.minProperties = 2;
  if (rng.chance(0.02)) s["x-pii"] = true; // unknown keyword: refused unless strict is off
  return s;
}

// ---- valid values, and values that break a rule --------------------------------------------------

function sample(schema: any, rng: Rng): any {
  if (!schema || typeof schema !== "object") return "v";
  if (Object.hasOwn(schema, "const")) return schema.const;
  if (schema.enum) return rng.pick(schema.enum.filter((v: unknown) => v !== null));
  if (schema.anyOf || schema.oneOf) return rng.chance(0.5) ? "ab" : 11;
  if (schema.not) return "x";
  let type = schema.type;
  if (Array.isArray(type)) type = rng.pick(type.filter((t: string) => t !== "null"));
  switch (type) {
    case "string": {
      if (schema.format) return rng.pick(FORMATS[schema.format]?.good ?? ["x"]);
      if (schema.pattern) return rng.pick(PATTERNS.find((p) => p.p === schema.pattern)?.good ?? ["x"]);
      const min = schema.minLength ?? 0;
      const max = schema.maxLength ?? 20;
      let s = rng.pick(WORDS);
      while ([...s].length < min) s += "a";
      return [...s].slice(0, max).join("");
    }
    case "number": {
      const lo = schema.exclusiveMinimum === true ? schema.minimum + 1 : typeof schema.exclusiveMinimum === "number" ? schema.exclusiveMinimum + 1 : (schema.minimum ?? -50);
      const hi = schema.maximum ?? 500;
      if (schema.multipleOf) return schema.multipleOf * rng.int(Math.ceil(lo / schema.multipleOf), Math.floor(hi / schema.multipleOf));
      return rng.chance(0.5) ? rng.int(lo, hi) : rng.float(lo, hi);
    }
    case "integer": {
      const lo = schema.minimum ?? 0;
      const hi = schema.exclusiveMaximum === true ? schema.maximum - 1 : typeof schema.exclusiveMaximum === "number" ? schema.exclusiveMaximum - 1 : (schema.maximum ?? 100);
      if (schema.multipleOf) return schema.multipleOf * rng.int(Math.ceil(lo / schema.multipleOf), Math.floor(hi / schema.multipleOf));
      return rng.int(lo, hi);
    }
    case "boolean":
      return rng.chance(0.5);
    case "array": {
      if (Array.isArray(schema.items)) return ["a", 1];
      const n = rng.int(schema.minItems ?? 0, Math.min(schema.maxItems ?? 3, 3));
      const out: unknown[] = [];
      for (let i = 0; i < n; i++) {
        let v = sample(schema.items, rng);
        if (schema.uniqueItems && out.some((x) => canon(x) === canon(v))) v = typeof v === "number" ? v + i + 1 : typeof v === "string" ? v + i : v;
        out.push(v);
      }
      return out;
    }
    case "object": {
      const out: Obj = {};
      const props = schema.properties ?? {};
      const required = new Set(schema.required ?? []);
      for (const [k, s] of Object.entries(props)) if (required.has(k) || rng.chance(0.7)) out[k] = sample(s, rng);
      if (schema.patternProperties && rng.chance(0.3)) out.x_note = "ok";
      if (schema.allOf && rng.chance(0.5)) for (const b of schema.allOf) for (const k of Object.keys(b.properties ?? {})) out[k] = "allowed";
      return out;
    }
    default:
      return rng.pick(["v", 1, true]);
  }
}

/** A value of another JSON type than the schema asks for. */
function wrongType(schema: any, rng: Rng): any {
  const types: string[] = Array.isArray(schema?.type) ? schema.type : schema?.type ? [schema.type] : [];
  const candidates: [string, unknown][] = [
    ["string", "12"],
    ["number", 12.5],
    ["integer", 7],
    ["boolean", true],
    ["array", ["a", "b"]],
    ["object", { a: 1 }],
    ["null", null],
  ];
  const other = candidates.filter(([t]) => !types.includes(t) && !(t === "integer" && types.includes("number")));
  return rng.pick(other)[1];
}

/** A value of the right type that breaks an advanced rule of the schema; undefined when it has none. */
function breakRule(schema: any, rng: Rng): unknown {
  if (!schema || typeof schema !== "object") return undefined;
  const options: (() => unknown)[] = [];
  if (schema.enum) options.push(() => "not-listed");
  if (Object.hasOwn(schema, "const")) options.push(() => "v2");
  if (schema.format && FORMATS[schema.format]) options.push(() => rng.pick(FORMATS[schema.format]!.bad));
  if (schema.pattern) {
    const p = PATTERNS.find((x) => x.p === schema.pattern);
    if (p) options.push(() => rng.pick(p.bad));
  }
  if (schema.minLength) options.push(() => "");
  if (schema.maxLength) options.push(() => "a".repeat(schema.maxLength + 3));
  if (typeof schema.minimum === "number") options.push(() => (schema.exclusiveMinimum === true ? schema.minimum : schema.minimum - 1));
  if (typeof schema.maximum === "number") options.push(() => (schema.exclusiveMaximum === true ? schema.maximum : schema.maximum + 1));
  if (typeof schema.exclusiveMinimum === "number") options.push(() => schema.exclusiveMinimum);
  if (typeof schema.exclusiveMaximum === "number") options.push(() => schema.exclusiveMaximum);
  if (schema.multipleOf) options.push(() => schema.multipleOf * 3 + (schema.type === "integer" ? 1 : 0.003));
  if (schema.type === "array" && !Array.isArray(schema.items)) {
    if (schema.minItems) options.push(() => []);
    if (schema.maxItems) options.push(() => Array.from({ length: schema.maxItems + 1 }, () => sample(schema.items, rng)));
    if (schema.uniqueItems) {
      options.push(() => {
        const v = sample(schema.items, rng);
        return [v, clone(v ?? null)];
      });
    }
    options.push(() => [wrongType(schema.items, rng)]);
  }
  if (schema.anyOf || schema.oneOf) options.push(() => (schema.anyOf ? "a" : 12));
  if (schema.not) options.push(() => null);
  if (!options.length) return undefined;
  return rng.pick(options)();
}

// ---- walking a value along its schema -----------------------------------------------------------

interface Slot {
  parent: Obj | any[];
  key: string | number;
  schema: any;
  depth: number;
}

/** The places in `value` that `schema` (an object schema) has a rule for, nested ones included. */
function slots(schema: any, value: any, depth = 0, out: Slot[] = []): Slot[] {
  if (!schema || typeof schema !== "object" || !value || typeof value !== "object") return out;
  if (Array.isArray(value)) {
    if (schema.items && !Array.isArray(schema.items)) value.forEach((v, i) => {
      out.push({ parent: value, key: i, schema: schema.items, depth: depth + 1 });
      slots(schema.items, v, depth + 1, out);
    });
    return out;
  }
  for (const [k, s] of Object.entries<any>(schema.properties ?? {})) {
    if (!Object.hasOwn(value, k)) continue;
    out.push({ parent: value, key: k, schema: s, depth });
    slots(s, value[k], depth + 1, out);
  }
  return out;
}

/** The objects in `value` with an object schema (where required or extra keys can be tried). */
function objectsIn(schema: any, value: any, depth = 0, out: { schema: any; value: Obj; depth: number }[] = []) {
  if (!schema || typeof schema !== "object" || !value || typeof value !== "object") return out;
  if (Array.isArray(value)) {
    if (schema.items && !Array.isArray(schema.items)) for (const v of value) objectsIn(schema.items, v, depth + 1, out);
    return out;
  }
  if (schema.properties || schema.required || schema.additionalProperties !== undefined) out.push({ schema, value, depth });
  for (const [k, s] of Object.entries<any>(schema.properties ?? {})) if (Object.hasOwn(value, k)) objectsIn(s, value[k], depth + 1, out);
  return out;
}

type Mutation = "missing-required" | "wrong-type" | "extra-properties" | "advanced-rules";

/** Applies one kind of violation to `value`; whether it found a place to (nested: below the top). */
function mutate(kind: Mutation, schema: any, value: any, rng: Rng, nested: boolean): boolean {
  const deep = (d: number) => (nested ? d > 0 : true);
  switch (kind) {
    case "missing-required": {
      const objs = objectsIn(schema, value).filter((o) => deep(o.depth) && (o.schema.required ?? []).some((k: string) => Object.hasOwn(o.value, k)));
      if (!objs.length) return false;
      const o = rng.pick(objs);
      const present = (o.schema.required as string[]).filter((k) => Object.hasOwn(o.value, k));
      for (const k of rng.chance(0.3) ? present : [rng.pick(present)]) delete o.value[k];
      return true;
    }
    case "wrong-type": {
      const ss = slots(schema, value).filter((s) => deep(s.depth) && s.schema && (s.schema.type || s.schema.enum));
      if (!ss.length) return false;
      for (const s of rng.chance(0.3) ? rng.some(ss, 0.5).concat(rng.pick(ss)) : [rng.pick(ss)]) (s.parent as any)[s.key] = wrongType(s.schema, rng);
      return true;
    }
    case "extra-properties": {
      const objs = objectsIn(schema, value).filter((o) => deep(o.depth));
      if (!objs.length) return false;
      const o = rng.pick(objs);
      const n = rng.int(1, 3);
      for (let i = 0; i < n; i++) o.value[rng.pick(EXTRA_NAMES)] = rng.pick<unknown>(["x", 3, { deep: true }, null, [1]]);
      return true;
    }
    case "advanced-rules": {
      const ss = slots(schema, value).filter((s) => deep(s.depth) && breakRule(s.schema, new Rng("probe")) !== undefined);
      if (!ss.length) return false;
      for (const s of rng.chance(0.25) ? rng.some(ss, 0.5).concat(rng.pick(ss)) : [rng.pick(ss)]) {
        const v = breakRule(s.schema, rng);
        if (v !== undefined) (s.parent as any)[s.key] = v;
      }
      return true;
    }
  }
}

// ---- plans ---------------------------------------------------------------------------------------

const SCHEMA_URIS: [string | undefined, number][] = [
  [undefined, 40],
  ["http://json-schema.org/draft-07/schema#", 22],
  ["http://json-schema.org/draft-04/schema#", 18],
  ["https://json-schema.org/draft/2019-09/schema", 10],
  ["http://json-schema.org/draft-06/schema#", 8],
  ["https://json-schema.org/draft/2020-12/schema", 1],
  ["draft-04", 1],
];

function weighted<T>(rng: Rng, items: [T, number][]): T {
  const total = items.reduce((a, [, w]) => a + w, 0);
  let x = rng.next() * total;
  for (const [v, w] of items) if ((x -= w) < 0) return v;
  return items[items.length - 1]![0];
}

/** One planned event: its type, name, rules, and the schema of its payload (where mutations go). */
interface Planned {
  eventType: string;
  name: string;
  rules: Obj;
  /** Where the payload lives in the message, and its schema. */
  payloads: { path: string[]; schema: Obj }[];
  empty?: boolean;
}

const ENVELOPE_KEYS = ["anonymousId", "channel", "context", "event", "integrations", "messageId", "originalTimestamp", "properties", "rudderId", "sentAt", "traits", "type", "userId", "name"];

function genRules(rng: Rng, eventType: string, customFormat: boolean): Planned["rules"] & { __payloads: Planned["payloads"] } {
  const $schema = weighted(rng, SCHEMA_URIS);
  const draft4 = $schema?.includes("draft-04") ?? false;
  const c: GenCtx = { rng, draft4, modern: !draft4 && ($schema === undefined || $schema.includes("2019") || rng.chance(0.3)), customFormat };
  const rules: Obj = {};
  if ($schema) rules.$schema = $schema;
  rules.type = "object";
  const properties: Obj = {};
  const payloads: Planned["payloads"] = [];
  const required: string[] = [];
  if (eventType === "identify") {
    const traits = genObject(c, 0);
    const where = rng.pick(["context", "top", "both"]);
    if (where !== "top") {
      properties.context = { type: "object", properties: { traits } };
      if (rng.chance(0.5)) properties.context.required = ["traits"];
      payloads.push({ path: ["context", "traits"], schema: traits });
    }
    if (where !== "context") {
      properties.traits = where === "both" ? clone(traits) : traits;
      payloads.push({ path: ["traits"], schema: properties.traits });
      if (rng.chance(0.5)) required.push("traits");
    }
  } else if (eventType === "group") {
    properties.traits = genObject(c, 0);
    payloads.push({ path: ["traits"], schema: properties.traits });
    if (rng.chance(0.6)) required.push("traits");
  } else {
    properties.properties = genObject(c, 0);
    payloads.push({ path: ["properties"], schema: properties.properties });
    if (rng.chance(0.7)) required.push("properties");
    if ((eventType === "page" || eventType === "screen") && rng.chance(0.5)) {
      properties.name = { type: "string", minLength: 1 };
      if (rng.chance(0.5)) required.push("name");
    }
  }
  if (rng.chance(0.2)) {
    const ctx = (properties.context ??= { type: "object", properties: {} });
    ctx.properties.library = { type: "object", properties: { name: { type: "string" }, version: { type: "string", pattern: "^\\d+\\.\\d+\\.\\d+$" } }, required: ["name"] };
    ctx.required = [...(ctx.required ?? []), "library"];
    if (rng.chance(0.3)) ctx.properties.locale = { type: "string", pattern: "^[a-z]{2}-[A-Z]{2}$" };
  }
  if (rng.chance(0.25)) {
    properties.userId = { type: rng.pick(["string", ["string", "null"]]) };
    if (rng.chance(0.4)) required.push("userId");
  }
  if (rng.chance(0.1)) {
    // The whole envelope closed: every key the events carry is listed, now and then one is not.
    for (const k of ENVELOPE_KEYS) if (!properties[k] && rng.chance(0.93)) properties[k] = {};
    rules.additionalProperties = false;
  }
  rules.properties = properties;
  if (required.length) rules.required = required;
  return Object.assign(rules, { __payloads: payloads });
}

function plannedEvent(rng: Rng, eventType: string, name: string, customFormat: boolean): Planned {
  const { __payloads, ...rules } = genRules(rng, eventType, customFormat);
  // config-backend injects `version` into the schemas of non-track events.
  if (eventType !== "track" && rng.chance(0.5)) rules.version = rng.int(1, 9);
  return { eventType, name, rules, payloads: __payloads };
}

interface PlanVersion {
  version: number;
  json: Obj;
  events: Planned[];
}

function genPlanVersion(rng: Rng, id: string, version: number, trackPool: string[], customFormat: boolean): PlanVersion {
  const events: Planned[] = [];
  for (const name of rng.some(trackPool, 0.7)) events.push(plannedEvent(rng, "track", name, customFormat));
  if (!events.length) events.push(plannedEvent(rng, "track", trackPool[0]!, customFormat));
  if (rng.chance(0.15)) events.push({ eventType: "track", name: rng.pick(TRACK_NAMES), rules: {}, payloads: [], empty: true });
  if (rng.chance(0.05)) events.push({ ...plannedEvent(rng, "track", events[0]!.name, customFormat) }); // a second event of one name
  for (const t of ["identify", "group", "page", "screen"]) if (rng.chance(0.5)) events.push(plannedEvent(rng, t, "", customFormat));
  const current = rng.chance(0.6);
  let json: Obj;
  if (current) {
    json = {
      id,
      name: `Plan ${id}`,
      version,
      events: events.map((e, i) => ({
        id: `ev_${i}`,
        // A non-track event is named "" in this format; now and then one is not (and is never found).
        name: e.eventType !== "track" && rng.chance(0.05) ? "Identify" : e.name,
        eventType: e.eventType,
        description: rng.chance(0.3) ? null : `${e.eventType} ${e.name}`,
        rules: e.rules,
      })),
    };
  } else {
    const rules: Obj = { events: events.filter((e) => e.eventType === "track").map((e) => ({ name: e.name, rules: e.rules, description: "" })) };
    for (const e of events) if (e.eventType !== "track" && !rules[e.eventType]) rules[e.eventType] = e.rules;
    // A `rules.track` schema is never used by RudderStack.
    if (rng.chance(0.1)) rules.track = { type: "object", required: ["nothing_here"] };
    json = { id, name: `Plan ${id}`, display_name: `Plan ${id}`, version, rules };
  }
  // What the transformer gets is what it is served: keep the JSON, and look events up through it.
  return { version, json: clone(json), events };
}

// ---- settings ------------------------------------------------------------------------------------

const AJV_OPTIONS: [Obj, number][] = [
  [{}, 6],
  [{ allErrors: false }, 3],
  [{ verbose: false }, 1],
  [{ strict: false }, 3],
  [{ coerceTypes: true }, 2],
  [{ coerceTypes: "array" }, 1],
  [{ useDefaults: true }, 2],
  [{ removeAdditional: "all" }, 1],
  [{ removeAdditional: true }, 1],
  [{ allowUnionTypes: false }, 1],
  [{ strictRequired: false }, 1],
  [{ messages: false }, 1],
  [{ validateFormats: false }, 1],
  [{ ownProperties: true, strictTypes: false }, 1],
  [{ unicodeRegExp: false }, 1],
  [{ $data: true }, 1],
  [{ strictSchema: false, allErrors: true }, 1],
];

function genEntry(rng: Rng, customFormat: boolean, isGlobal: boolean): Obj {
  const e: Obj = {};
  if (rng.chance(isGlobal ? 0.85 : 0.4)) e.allowUnplannedEvents = weighted<unknown>(rng, [["true", 8], ["false", 8], [true, 2], [false, 2], ["TRUE", 1], ["False", 1], ["maybe", 1]]);
  if (rng.chance(isGlobal ? 0.85 : 0.4)) e.unplannedProperties = weighted<unknown>(rng, [["forward", 8], ["drop", 8], ["DROP", 1], ["Forward", 1], ["keep", 1]]);
  if (rng.chance(isGlobal ? 0.85 : 0.4)) e.anyOtherViolation = weighted<unknown>(rng, [["forward", 8], ["drop", 8], ["Drop", 1], ["ignore", 1], [true, 1]]);
  if (rng.chance(isGlobal ? 0.6 : 0.25)) e.propagateValidationErrors = weighted<unknown>(rng, [["true", 6], ["false", 4], [true, 2], [false, 2], ["FALSE", 1]]);
  if (rng.chance(0.3)) e.sendViolatedEventsTo = rng.pick(["procErrors", "procerrors", "elsewhere"]);
  if (rng.chance(isGlobal ? 0.4 : 0.15)) {
    const o = clone(weighted(rng, AJV_OPTIONS));
    if (customFormat && rng.chance(0.85)) o.formats = { sku: CUSTOM_FORMAT };
    e.ajvOptions = o;
  } else if (customFormat && isGlobal && rng.chance(0.85)) e.ajvOptions = { formats: { sku: CUSTOM_FORMAT } };
  return e;
}

function genSettings(rng: Rng, planId: string, version: number, customFormat: boolean): Obj {
  const config: Obj = {};
  const shape = rng.next();
  if (shape < 0.04) {
    // No config at all: nothing is validated.
  } else if (shape < 0.1) {
    config.track = genEntry(rng, customFormat, true);
  } else {
    config.global = genEntry(rng, customFormat, true);
    for (const t of ["track", "identify", "group", "page", "screen"]) if (rng.chance(0.18)) config[t] = rng.chance(0.1) ? null : genEntry(rng, customFormat, false);
  }
  const s: Obj = { sourceId: `src_${planId}`, version: rng.int(1, 40), config, trackingPlan: { id: planId, version }, deleted: false };
  if (rng.chance(0.06)) s.mergedConfig = rng.chance(0.2) ? {} : genEntry(rng, customFormat, true);
  return s;
}

/** rudder-server's `GetMergedConfig`: the control plane's, else global overlaid with one type's. */
function goMerged(settings: Obj, eventType: string): Obj {
  if (settings.mergedConfig) return settings.mergedConfig;
  const config = settings.config ?? {};
  return { ...(config.global ?? {}), ...(Object.hasOwn(config, eventType) ? (config[eventType] ?? {}) : {}) };
}

// ---- events --------------------------------------------------------------------------------------

type Category =
  | "valid"
  | Mutation
  | "nested"
  | "mixed"
  | "unplanned-track"
  | "identify"
  | "page"
  | "screen"
  | "group"
  | "alias"
  | "ruddertyper"
  | "odd";

const CATEGORIES: [Category, number][] = [
  ["valid", 14],
  ["missing-required", 9],
  ["wrong-type", 9],
  ["extra-properties", 9],
  ["advanced-rules", 10],
  ["nested", 7],
  ["mixed", 6],
  ["unplanned-track", 7],
  ["identify", 6],
  ["page", 5],
  ["screen", 3],
  ["group", 4],
  ["alias", 2],
  ["ruddertyper", 6],
  ["odd", 3],
];

function envelope(rng: Rng, type: string): Obj {
  const m: Obj = {
    type,
    messageId: rng.uuid(),
    anonymousId: rng.uuid(),
    channel: rng.pick(["web", "server", "mobile"]),
    context: {
      library: { name: rng.pick(["analytics.js", "rudder-sdk-js", "ruddertyper"]), version: rng.pick(["3.0.1", "2.48", "1.0.0"]) },
      ip: "10.0.0.1",
      locale: rng.pick(["en-US", "de-DE", "fr"]),
    },
    originalTimestamp: "2024-05-01T10:00:00.000Z",
    sentAt: "2024-05-01T10:00:01.000Z",
    rudderId: rng.uuid(),
  };
  const uid = rng.next();
  if (uid < 0.7) m.userId = `u_${rng.int(1, 999)}`;
  else if (uid < 0.8) m.userId = rng.int(1, 999);
  else if (uid < 0.85) m.userId = null;
  if (rng.chance(0.1)) m.integrations = { All: true };
  return m;
}

function setPath(obj: Obj, path: string[], value: unknown) {
  let o = obj;
  for (const k of path.slice(0, -1)) {
    if (!o[k] || typeof o[k] !== "object") o[k] = {};
    o = o[k];
  }
  o[path[path.length - 1]!] = value;
}

function getPath(obj: Obj, path: string[]): any {
  let o: any = obj;
  for (const k of path) o = o?.[k];
  return o;
}

/** Fills the event's payloads from a planned event and applies the category's violations. */
function fill(rng: Rng, m: Obj, planned: Planned | undefined, muts: Mutation[], nested: boolean): void {
  if (!planned || !planned.payloads.length) {
    const key = m.type === "identify" || m.type === "group" ? "traits" : "properties";
    m[key] = { [rng.pick(PROP_NAMES)]: rng.pick<unknown>(["x", 2, true]) };
    return;
  }
  for (const p of planned.payloads) setPath(m, p.path, sample(p.schema, rng));
  if (planned.rules.properties?.name && rng.chance(0.85)) m.name = rng.pick(["Home", "Pricing", ""]);
  for (const mut of muts) {
    const p = rng.pick(planned.payloads);
    const value = getPath(m, p.path);
    if (!mutate(mut, p.schema, value, rng, nested)) {
      // Nothing to break below the top: break the payload itself.
      if (mut === "missing-required" && !nested && (planned.rules.required ?? []).includes(p.path[0])) delete m[p.path[0]!];
      else if (mut === "wrong-type" && !nested) setPath(m, p.path, wrongType(p.schema, rng));
      else if (mut === "extra-properties" && value && typeof value === "object" && !Array.isArray(value)) value[rng.pick(EXTRA_NAMES)] = "x";
    }
  }
}

/** Client order: the keys of the message as a sender might write them (the generator's is fine). */
function shuffleKeys(rng: Rng, o: Obj): Obj {
  const keys = Object.keys(o);
  for (let i = keys.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [keys[i], keys[j]] = [keys[j]!, keys[i]!];
  }
  const out: Obj = {};
  for (const k of keys) out[k] = o[k];
  return out;
}

function genEvent(rng: Rng, category: Category, source: Source): Obj {
  const pv = source.versions.find((v) => v.version === source.settings.trackingPlan.version) ?? source.versions[0]!;
  const trackEvents = pv.events.filter((e) => e.eventType === "track" && !e.empty);
  const pickTrack = () => rng.pick(trackEvents);
  const ofType = (t: string) => pv.events.find((e) => e.eventType === t && !e.empty);
  const muts = (): Mutation[] => rng.some<Mutation>(["missing-required", "wrong-type", "extra-properties", "advanced-rules"], 0.5);
  switch (category) {
    case "valid":
    case "missing-required":
    case "wrong-type":
    case "extra-properties":
    case "advanced-rules":
    case "nested":
    case "mixed": {
      const planned = pickTrack();
      const m = envelope(rng, "track");
      m.event = planned?.name ?? "Order Completed";
      const list: Mutation[] =
        category === "valid" ? [] : category === "nested" ? [rng.pick<Mutation>(["missing-required", "wrong-type", "extra-properties", "advanced-rules"])] : category === "mixed" ? muts() : [category];
      fill(rng, m, planned, list, category === "nested");
      return m;
    }
    case "unplanned-track": {
      const m = envelope(rng, "track");
      const planned = new Set(pv.events.filter((e) => e.eventType === "track" && !e.empty).map((e) => e.name));
      const x = rng.next();
      const empty = pv.events.find((e) => e.empty);
      if (x < 0.6) m.event = rng.pick(TRACK_NAMES.filter((n) => !planned.has(n)).concat("Something Else"));
      else if (x < 0.75 && empty) m.event = empty.name;
      else if (x < 0.85) m.event = rng.pick<unknown>([undefined, "", null]);
      else if (x < 0.92) m.event = rng.int(1, 5);
      else m.event = (trackEvents[0]?.name ?? "Order Completed").toLowerCase();
      if (m.event === undefined) delete m.event;
      m.properties = { [rng.pick(PROP_NAMES)]: "x" };
      return m;
    }
    case "identify":
    case "page":
    case "screen":
    case "group": {
      const m = envelope(rng, category);
      if (category === "group") m.groupId = `g_${rng.int(1, 50)}`;
      const planned = ofType(category);
      fill(rng, m, planned, rng.chance(0.35) ? [] : muts(), false);
      return m;
    }
    case "alias": {
      const m = envelope(rng, "alias");
      m.previousId = `p_${rng.int(1, 99)}`;
      m.properties = { anything: true };
      return m;
    }
    case "ruddertyper": {
      const m = envelope(rng, "track");
      const versions = source.versions.map((v) => v.version);
      const x = rng.next();
      let version: unknown;
      if (x < 0.5) version = rng.pick(versions);
      else if (x < 0.62) version = Math.max(...versions) + 7; // not served: the fetch answers 404
      else if (x < 0.72) version = String(rng.pick(versions));
      else if (x < 0.8) version = rng.pick([0, -1, null]);
      else if (x < 0.86) version = rng.pick(versions) + 0.5;
      else version = rng.pick(versions);
      const sameId = x >= 0.86 ? rng.chance(0.5) : true;
      const typer: Obj = { name: "RudderTyper", version: "1.0.0", trackingPlanId: sameId ? source.id : "tp_other", trackingPlanVersion: version };
      m.context.ruddertyper = typer;
      // The events of the version the typer names, when there is one.
      const tv = typeof version === "number" ? source.versions.find((v) => v.version === Math.trunc(version as number)) : undefined;
      const evs = (tv ?? pv).events.filter((e) => e.eventType === "track" && !e.empty);
      const planned = evs.length ? rng.pick(evs) : undefined;
      m.event = planned?.name ?? "Order Completed";
      fill(rng, m, planned, rng.chance(0.5) ? [] : muts(), false);
      return m;
    }
    case "odd": {
      const planned = pickTrack();
      const m = envelope(rng, "track");
      m.event = planned?.name ?? "Order Completed";
      fill(rng, m, planned, [], false);
      const x = rng.next();
      if (x < 0.2) m.properties = null;
      else if (x < 0.35) m.properties = ["a", 1];
      else if (x < 0.45) m.properties = "text";
      else if (x < 0.6) delete m.properties;
      else if (x < 0.7) m.context = "not an object";
      else if (x < 0.78) delete m.context;
      else if (x < 0.84) m.context = null;
      else if (x < 0.9) m.context = [1, 2];
      else if (x < 0.95) m.type = rng.pick(["Track", "custom", "screenview"]);
      else delete m.type;
      return m;
    }
  }
}

// ---- sources ---------------------------------------------------------------------------------------

interface Source {
  id: string;
  versions: PlanVersion[];
  settings: Obj;
}

function genSource(rng: Rng, id: string): Source {
  const customFormat = rng.chance(0.12);
  const trackPool = rng.some(TRACK_NAMES, 0.25);
  if (trackPool.length < 2) trackPool.push(rng.pick(TRACK_NAMES), "Order Completed");
  const count = rng.int(1, 3);
  const first = rng.int(1, 5);
  const versions: PlanVersion[] = [];
  for (let i = 0; i < count; i++) versions.push(genPlanVersion(rng, id, first + i * rng.int(1, 3), trackPool, customFormat));
  // Mostly the latest version; a version of 0 (none set) now and then.
  const version = rng.chance(0.02) ? 0 : rng.chance(0.75) ? versions[versions.length - 1]!.version : rng.pick(versions).version;
  return { id, versions, settings: genSettings(rng, id, version, customFormat) };
}

// ---- the config-backend stand-in -----------------------------------------------------------------

const nonce = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
const workspaceId = `ws_live_${nonce}`;
const served = new Map<string, Obj>();
let fetches = 0;
let authHeaders = 0;
const backend = Bun.serve({
  port: backendPort,
  hostname: "127.0.0.1",
  fetch(req) {
    const url = new URL(req.url);
    const m = /^\/workspaces\/([^/]+)\/tracking-plans\/([^/]+)$/.exec(url.pathname);
    if (!m || req.method !== "GET") return new Response("not found", { status: 404 });
    fetches++;
    if (req.headers.get("authorization")) authHeaders++;
    const plan = served.get(`${decodeURIComponent(m[1]!)}/${decodeURIComponent(m[2]!)}/${url.searchParams.get("version")}`);
    return plan ? Response.json(plan) : Response.json({ message: "tracking plan not found" }, { status: 404 });
  },
});

// ---- running and comparing -----------------------------------------------------------------------

interface TransformerAnswer {
  output: Obj;
  metadata: Obj;
  statusCode: number;
  validationErrors?: Obj[];
  error?: string;
}

/** What rudder-server's reportViolations does with one answer (plan id and version of the batch's first event). */
function annotateAsServer(answer: TransformerAnswer, mergedSent: Obj | undefined, id: string, version: number): Obj {
  const output = clone(answer.output);
  if (mergedSent?.propagateValidationErrors === "false") return output;
  const violationErrors = (answer.validationErrors ?? []).map((v) => ({
    type: v.type ?? "",
    message: v.message ?? "",
    meta: v.meta ?? null,
    property: v.property ?? "",
  }));
  const fields = { trackingPlanId: id, trackingPlanVersion: version, violationErrors };
  const context = output.context;
  if (context === undefined || context === null) output.context = fields;
  else if (typeof context === "object" && !Array.isArray(context)) Object.assign(context, fields);
  return output;
}

interface SluiceRun {
  outcome: TrackingPlanOutcome;
  output: Obj;
  /** The event was not checked for a reason RudderStack throws on (no version, a schema that does not compile). */
  errored: boolean;
}

function runSluice(message: Obj, settings: TrackingPlanSettings, plans: Map<string, CompiledTrackingPlan>): SluiceRun {
  const m = clone(message);
  const ref = planRefFor(settings, m);
  const outcome = validateEvent({ message: m, settings, plan: plans.get(`${ref.id}:${ref.version}`) });
  applyContextFields(m, outcome.contextFields);
  const ts = settingsForEventType(settings, String(m.type));
  const errored = outcome.compileError !== undefined || (ts.validates && isValidatedEventType(m.type) && !ref.version);
  return { outcome, output: m, errored };
}

interface Verdict {
  same: boolean;
  diffs: string[];
}

function compare(answer: TransformerAnswer, expected: Obj, run: SluiceRun): Verdict {
  const diffs: string[] = [];
  const tViolations = canon(answer.validationErrors ?? []);
  const sViolations = canon(run.outcome.violations);
  if (tViolations !== sViolations) diffs.push("violations");
  const tDropped = answer.statusCode !== 200;
  if (tDropped !== run.outcome.dropped) diffs.push("drop");
  if (answer.statusCode === 400 && run.outcome.dropped && answer.error !== run.outcome.error) diffs.push("error text");
  const tErrored = answer.statusCode === 200 && typeof answer.error === "string" && answer.error.startsWith("Error occurred while validating");
  if (tErrored !== run.errored) diffs.push("checked");
  if (canon(expected) !== canon(run.output)) diffs.push("annotated output");
  return { same: diffs.length === 0, diffs };
}

type Apart = "RE2 patterns" | "meta-schema refusal" | "per-type merged config" | "annotated version";

/**
 * The settings with `validateSchema: false` in the Ajv options of the entries that give an event
 * type its options: how rudder-transformer's shared Ajv compiles a schema the second time, after
 * the meta-schema (or an unknown `$schema`) refused it the first time. undefined when no entry
 * gives that type options (adding one would change the merged config).
 */
function pairs<T>(xs: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i++) for (let j = i + 1; j < xs.length; j++) out.push([xs[i]!, xs[j]!]);
  return out;
}

function withoutMetaValidation(settings: Obj, eventType: string): Obj | undefined {
  const s = clone(settings);
  const config = s.config ?? {};
  const entries = ["global", eventType].filter((k) => config[k] && typeof config[k] === "object");
  if (!entries.length) return undefined;
  for (const k of entries) {
    const o = config[k].ajvOptions;
    config[k].ajvOptions = { ...(o && typeof o === "object" && !Array.isArray(o) ? o : {}), validateSchema: false };
  }
  return s;
}

interface Row {
  category: Category;
  /** "match", "differ", or the documented difference(s) that account for it, joined by " + ". */
  outcome: string;
  diffs: string[];
  sourceId: string;
  message: Obj;
  metadata: Obj;
  answer: TransformerAnswer;
  sluice: { violations: unknown; dropped: boolean; error?: string; compileError?: string; output: Obj };
  expectedOutput: Obj;
  /** The rules Sluice found for the event (plan version, type and name); undefined when none. */
  rules?: Obj;
}

const rng = new Rng(`${seed}:tracking-plans-live`);
const started = Date.now();
const rows: Row[] = [];
let keyOrderSensitive = 0;
let keyOrderOther = 0;
let keyOrderDrop = 0;
let sources = 0;
let transformerFailures = 0;

try {
  const health = await fetch(`${transformerUrl}/health`).then((r) => r.text()).catch((e) => `unreachable: ${e}`);
  if (!health.includes("UP")) {
    console.error(`rudder-transformer at ${transformerUrl} is not up (${health}); see CONTRIBUTING.md`);
    process.exit(1);
  }
  while (rows.length < eventCount) {
    const id = `tp_${nonce}_${sources++}`;
    const source = genSource(rng, id);
    for (const v of source.versions) served.set(`${workspaceId}/${id}/${v.version}`, v.json);
    const settings = parseTrackingPlanSettings(clone(source.settings));
    const plans = new Map<string, CompiledTrackingPlan>();
    for (const v of source.versions) plans.set(`${id}:${v.version}`, compileTrackingPlan(parseTrackingPlan(clone(v.json)), settings));

    const n = Math.min(rng.int(6, 18), eventCount - rows.length);
    const clientOrder: Obj[] = [];
    const categories: Category[] = [];
    for (let i = 0; i < n; i++) {
      const category = weighted(rng, CATEGORIES);
      categories.push(category);
      clientOrder.push(shuffleKeys(rng, genEvent(rng, category, source)));
    }
    const messages = clientOrder.map(goOrder);

    // rudder-server: metadata per event, merged config stored on the first call.
    let storedMerge: Obj | undefined;
    const items = messages.map((message, i) => {
      const eventType = String(message.type ?? "");
      storedMerge ??= goMerged(source.settings, eventType);
      let version = source.settings.trackingPlan.version as number;
      const typer = message.context?.ruddertyper;
      if (typer && typeof typer === "object" && !Array.isArray(typer) && typer.trackingPlanId === id && typeof typer.trackingPlanVersion === "number" && typer.trackingPlanVersion > 0) {
        version = Math.trunc(typer.trackingPlanVersion);
      }
      const config = source.settings.config ?? {};
      const metadata: Obj = { workspaceId, sourceId: source.settings.sourceId, jobId: rows.length + i + 1, trackingPlanId: id };
      if (version) metadata.trackingPlanVersion = version;
      if (Object.keys(config).length) metadata.sourceTpConfig = config;
      if (Object.keys(storedMerge).length) metadata.mergedTpConfig = storedMerge;
      return { message, metadata: goOrder(metadata) };
    });
    const res = await fetch(`${transformerUrl}/v0/validate`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(items) });
    const answers = (await res.json().catch(() => null)) as TransformerAnswer[] | null;
    if (res.status !== 200 || !Array.isArray(answers) || answers.length !== items.length) {
      transformerFailures++;
      console.error(`source ${id}: the transformer answered ${res.status} with ${Array.isArray(answers) ? answers.length : "no"} answers for ${items.length} events`);
      continue;
    }
    const batchVersion = (items[0]!.metadata.trackingPlanVersion as number | undefined) ?? 0;

    for (let i = 0; i < items.length; i++) {
      const { message, metadata } = items[i]!;
      const answer = answers[i]!;
      const run = runSluice(message, settings, plans);
      const planFor = (m: Obj) => {
        const ref = planRefFor(settings, m);
        return plans.get(`${ref.id}:${ref.version}`);
      };
      const expected = annotateAsServer(answer, metadata.mergedTpConfig, id, batchVersion);
      const verdict = compare(answer, expected, run);
      let outcome: Row["outcome"] = verdict.same ? "match" : "differ";
      if (!verdict.same) {
        const ownVersion = (metadata.trackingPlanVersion as number | undefined) ?? 0;
        const eventType = String(message.type ?? "");
        const fixes: Apart[] = [];
        if (run.outcome.compileError && withoutMetaValidation(source.settings, eventType)) fixes.push("meta-schema refusal");
        if (canon(goMerged(source.settings, eventType)) !== canon(storedMerge)) fixes.push("per-type merged config");
        if (ownVersion !== batchVersion) fixes.push("annotated version");
        // Each documented difference the event is open to, alone and then together: the first set
        // that, taken out, leaves the answers equal is the reason.
        const sets = [...fixes.map((f) => [f]), ...(fixes.length > 1 ? pairs(fixes) : []), ...(fixes.length > 2 ? [fixes] : [])];
        if (run.outcome.compileError?.includes("Sluice does not run")) outcome = "RE2 patterns";
        else {
          for (const set of sets) {
            let json: Obj | undefined = clone(source.settings);
            if (set.includes("meta-schema refusal")) json = withoutMetaValidation(json, eventType);
            if (!json) continue;
            if (set.includes("per-type merged config")) json.mergedConfig = storedMerge;
            const exp = annotateAsServer(answer, metadata.mergedTpConfig, id, set.includes("annotated version") ? ownVersion : batchVersion);
            const again = runSluice(message, parseTrackingPlanSettings(json), plans);
            if (compare(answer, exp, again).same) {
              outcome = set.join(" + ");
              break;
            }
            // The meta-schema's refusal hid a pattern RE2 does not run.
            if (set.includes("meta-schema refusal") && again.outcome.compileError?.includes("Sluice does not run")) {
              outcome = [...set, "RE2 patterns"].join(" + ");
              break;
            }
          }
        }
      }
      // Informational: would the event's own key order give Sluice other violations (order included)?
      const own = runSluice(clone(clientOrder[i]!), settings, plans);
      if (canon(own.outcome.violations) !== canon(run.outcome.violations)) {
        const sorted = (vs: unknown[]) => vs.map(canon).sort().join("\n");
        if (sorted(own.outcome.violations) === sorted(run.outcome.violations)) keyOrderSensitive++;
        else keyOrderOther++;
        if (own.outcome.dropped !== run.outcome.dropped) keyOrderDrop++;
      }
      rows.push({
        category: categories[i]!,
        outcome,
        diffs: verdict.diffs,
        sourceId: id,
        message,
        metadata,
        answer,
        sluice: { violations: run.outcome.violations, dropped: run.outcome.dropped, error: run.outcome.error, compileError: run.outcome.compileError, output: run.output },
        expectedOutput: expected,
        rules: planFor(message)?.find(String(message.type), message.type === "track" ? message.event : "")?.rules,
      });
    }
  }
} finally {
  backend.stop(true);
}

// ---- report --------------------------------------------------------------------------------------

const pct = (a: number, b: number) => (b ? `${((100 * a) / b).toFixed(1)}%` : "-");
const cats = CATEGORIES.map(([c]) => c);
const lines: string[][] = [["category", "events", "matched", "apart", "differ", "with violations", "dropped", "not checked"]];
function tally(rs: Row[], label: string) {
  const matched = rs.filter((r) => r.outcome === "match").length;
  const differ = rs.filter((r) => r.outcome === "differ").length;
  const apart = rs.length - matched - differ;
  const compared = rs.length - apart;
  lines.push([
    label,
    String(rs.length),
    `${matched}/${compared} (${pct(matched, compared)})`,
    String(apart),
    String(differ),
    String(rs.filter((r) => (r.answer.validationErrors ?? []).length > 0).length),
    String(rs.filter((r) => r.answer.statusCode !== 200).length),
    String(rs.filter((r) => r.answer.statusCode === 200 && r.answer.error?.startsWith("Error occurred while validating")).length),
  ]);
}
for (const c of cats) tally(rows.filter((r) => r.category === c), c);
tally(rows, "all");
const widths = lines[0]!.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
console.log(
  `Sluice's engine vs rudder-transformer ${transformerUrl}/v0/validate: ${rows.length} events of ${sources} generated sources (seed ${JSON.stringify(seed)}), ${((Date.now() - started) / 1000).toFixed(1)} s`,
);
console.log("matched: of the events compared (all but those apart), the same violations, drop, error text, checked or not, and annotated event\n");
for (const l of lines) console.log(l.map((x, i) => (i === 0 ? x.padEnd(widths[i]!) : x.padStart(widths[i]!))).join("  "));

const apartCounts = new Map<string, number>();
for (const r of rows) if (r.outcome !== "match" && r.outcome !== "differ") apartCounts.set(r.outcome, (apartCounts.get(r.outcome) ?? 0) + 1);
const matchedAll = rows.filter((r) => r.outcome === "match").length;
const apartAll = [...apartCounts.values()].reduce((a, b) => a + b, 0);
console.log(`\nall: ${matchedAll}/${rows.length - apartAll} compared events matched (${pct(matchedAll, rows.length - apartAll)}); ${matchedAll + apartAll}/${rows.length} with those apart`);
const why: Record<Apart, string> = {
  "RE2 patterns": "a pattern RE2 does not run (lookahead, backreference): Sluice refuses the schema, RudderStack runs it",
  "meta-schema refusal":
    "a schema its meta-schema refuses (or an unknown $schema): RudderStack refuses it for the first event only, as its shared Ajv keeps the failed schema and compiles it unvalidated the next time; Sluice refuses it every time (compiled without validateSchema, Sluice answers the same)",
  "per-type merged config": "rudder-server keeps the merged config of the first event type of a gateway request (here: a source's events); with that merge Sluice answers the same",
  "annotated version": "rudder-server writes the batch's first plan version into every event; with the event's own version the answers are the same",
};
if (apartCounts.size) {
  console.log("apart (differences src/tracking-plans/README.md documents):");
  for (const [k, n] of [...apartCounts].sort((a, b) => b[1] - a[1])) console.log(`  ${k}: ${n}`);
  const seen = new Set([...apartCounts.keys()].flatMap((k) => k.split(" + ")));
  for (const k of Object.keys(why) as Apart[]) if (seen.has(k)) console.log(`  - ${k}: ${why[k]}`);
}
const unknownVersion = rows.filter((r) => r.answer.statusCode === 404).length;
console.log(
  `notes: ${unknownVersion} events name a plan version the config backend does not hold (404: dropped by both; the error texts differ by design and are not compared); ` +
    `had Sluice seen each event in its own key order rather than Go's sorted one, ${keyOrderSensitive} events would list the same violations in another order and ${keyOrderOther} other violations (${keyOrderDrop} another drop); ` +
    `config backend fetched ${fetches} times${authHeaders ? `, ${authHeaders} with an Authorization header` : ", never with an Authorization header"}` +
    (transformerFailures ? `; ${transformerFailures} batches the transformer failed` : ""),
);

const differing = rows.filter((r) => r.outcome === "differ");
if (verbose) {
  for (const c of [...cats, ...apartCounts.keys()]) {
    const rs = rows.filter((r) => (r.outcome === "differ" && r.category === c) || r.outcome === c).slice(0, 3);
    for (const r of rs) {
      console.log(`\n--- ${r.outcome === "differ" ? `${c}: differs in ${r.diffs.join(", ")}` : `apart (${c}), ${r.category}: ${r.diffs.join(", ")}`} (source ${r.sourceId})`);
      console.log(`message:      ${JSON.stringify(r.message)}`);
      console.log(`metadata:     ${JSON.stringify(r.metadata)}`);
      console.log(`rules:        ${JSON.stringify(r.rules)}`);
      console.log(`transformer:  ${r.answer.statusCode} ${JSON.stringify(r.answer.validationErrors)} ${r.answer.error ?? ""}`);
      console.log(`sluice:       ${r.sluice.dropped ? "dropped" : "kept"} ${JSON.stringify(r.sluice.violations)} ${r.sluice.error ?? ""} ${r.sluice.compileError ?? ""}`);
      if (r.diffs.includes("annotated output")) {
        console.log(`rudderstack out: ${canon(r.expectedOutput)}`);
        console.log(`sluice out:      ${canon(r.sluice.output)}`);
      }
    }
  }
}
if (jsonFile) {
  writeFileSync(jsonFile, JSON.stringify({ seed, events: rows.length, transformer: transformerUrl, differing: rows.filter((r) => r.outcome !== "match") }, null, 2));
  console.log(`differing and apart events written to ${jsonFile}`);
}
process.exit(transformerFailures ? 1 : 0);
