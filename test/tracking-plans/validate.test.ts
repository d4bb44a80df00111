import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/lib/errors";
import { compileTrackingPlan, parseTrackingPlan } from "../../src/tracking-plans/plan";
import { parseTrackingPlanSettings, planRefFor, type TrackingPlanSettings } from "../../src/tracking-plans/settings";
import { applyContextFields, decideDrop, isValidatedEventType, validateEvent } from "../../src/tracking-plans/validate";

// A bakery's plan, current format. Non-track events are named "".
const bakeryPlan = {
  id: "tp_bakery",
  name: "Bakery",
  version: 4,
  events: [
    {
      id: "ev_cake",
      name: "Cake Ordered",
      eventType: "track",
      description: "A customer ordered a cake.",
      rules: {
        $schema: "http://json-schema.org/draft-07/schema#",
        type: "object",
        required: ["properties"],
        properties: {
          properties: {
            type: "object",
            additionalProperties: false,
            required: ["flavour", "tiers"],
            properties: {
              flavour: { type: "string", enum: ["lemon", "chocolate", "carrot"] },
              tiers: { type: "integer", minimum: 1, maximum: 5 },
              baker: { const: "Ana" },
              pickup: { type: "string", format: "date" },
              voucher: { type: "string", pattern: "^[A-Z]{3}-[0-9]{2}$" },
            },
          },
        },
      },
    },
    {
      id: "ev_loaf",
      name: "Loaf Sliced",
      eventType: "track",
      rules: {
        $schema: "https://json-schema.org/draft/2019-09/schema",
        type: "object",
        properties: {
          properties: {
            type: "object",
            properties: { thickness: { type: "number" } },
            allOf: [{ properties: { seeds: { type: "boolean" } } }],
            unevaluatedProperties: false,
          },
        },
      },
    },
    { id: "ev_empty", name: "Oven Preheated", eventType: "track", rules: {} },
    {
      id: "ev_identify",
      name: "",
      eventType: "identify",
      // config-backend puts `version` into non-track schemas; RudderStack removes it before compiling.
      rules: { version: 2, type: "object", required: ["traits"], properties: { traits: { type: "object", required: ["loyalty"], properties: { loyalty: { type: "string" } } } } },
    },
  ],
};

const defaults = { allowUnplannedEvents: "true", unplannedProperties: "forward", anyOtherViolation: "forward" };

function settingsWith(global: Record<string, unknown>, extra: Record<string, unknown> = {}): TrackingPlanSettings {
  return parseTrackingPlanSettings({ trackingPlan: { id: "tp_bakery", version: 4 }, config: { global: { ...defaults, ...global } }, ...extra });
}

const plan = compileTrackingPlan(parseTrackingPlan(bakeryPlan));

function cake(properties: Record<string, unknown>, rest: Record<string, unknown> = {}) {
  return { type: "track", event: "Cake Ordered", userId: "u1", context: { ip: "10.0.0.1" }, properties, ...rest };
}

const goodCake = { flavour: "lemon", tiers: 2 };

describe("violation types", () => {
  test("a valid event: no violations, kept, context annotated with violationErrors []", () => {
    const out = validateEvent({ message: cake(goodCake), settings: settingsWith({ anyOtherViolation: "drop", unplannedProperties: "drop" }), plan });
    expect(out).toEqual({
      violations: [],
      dropped: false,
      violationType: "None",
      contextFields: { trackingPlanId: "tp_bakery", trackingPlanVersion: 4, violationErrors: [] },
    });
  });

  test("missing required property → Required-Missing with the property; anyOtherViolation drop drops", () => {
    const out = validateEvent({ message: cake({ flavour: "lemon" }), settings: settingsWith({ anyOtherViolation: "drop" }), plan });
    expect(out.violations).toEqual([
      {
        type: "Required-Missing",
        message: "must have required property 'tiers'",
        property: "tiers",
        meta: { instancePath: "/properties", schemaPath: "#/properties/properties/required" },
      },
    ]);
    expect(out.dropped).toBe(true);
    expect(out.violationType).toBe("Required-Missing");
    expect(out.error).toBe(
      JSON.stringify({ "Required-Missing": [{ property: "tiers", message: "must have required property 'tiers'", schemaPath: "#/properties/properties/required" }] }),
    );
    // Dropped events are annotated too; in the context every violation carries `property`, last.
    expect(JSON.stringify(out.contextFields?.violationErrors)).toBe(
      '[{"type":"Required-Missing","message":"must have required property \'tiers\'","meta":{"instancePath":"/properties","schemaPath":"#/properties/properties/required"},"property":"tiers"}]',
    );
  });

  test("wrong type → Datatype-Mismatch; anyOtherViolation forward keeps the event", () => {
    const out = validateEvent({ message: cake({ flavour: "lemon", tiers: "two" }), settings: settingsWith({}), plan });
    expect(out.violations).toEqual([
      { type: "Datatype-Mismatch", message: "must be integer", meta: { instancePath: "/properties/tiers", schemaPath: "#/properties/properties/properties/tiers/type" } },
    ]);
    expect(out.dropped).toBe(false);
    expect(out.violationType).toBe("None");
    expect(out.contextFields?.violationErrors).toEqual([
      {
        type: "Datatype-Mismatch",
        message: "must be integer",
        meta: { instancePath: "/properties/tiers", schemaPath: "#/properties/properties/properties/tiers/type" },
        property: "",
      },
    ]);
  });

  test("additionalProperties: false → Additional-Properties naming the property; unplannedProperties drop drops", () => {
    const out = validateEvent({ message: cake({ ...goodCake, candles: 30 }), settings: settingsWith({ unplannedProperties: "drop" }), plan });
    expect(out.violations).toEqual([
      {
        type: "Additional-Properties",
        message: "must NOT have additional properties 'candles'",
        property: "candles",
        meta: { instancePath: "/properties", schemaPath: "#/properties/properties/additionalProperties" },
      },
    ]);
    expect(out).toMatchObject({ dropped: true, violationType: "Additional-Properties" });
    expect(validateEvent({ message: cake({ ...goodCake, candles: 30 }), settings: settingsWith({ anyOtherViolation: "drop" }), plan }).dropped).toBe(false);
  });

  test("unevaluatedProperties: false (2019-09) → Additional-Properties; allOf's properties count as evaluated", () => {
    const message = { type: "track", event: "Loaf Sliced", properties: { thickness: 1.5, seeds: true, crust: "dark" } };
    const out = validateEvent({ message, settings: settingsWith({ unplannedProperties: "drop" }), plan });
    expect(out.violations).toEqual([
      {
        type: "Additional-Properties",
        message: "must NOT have unevaluated properties 'crust'",
        property: "crust",
        meta: { instancePath: "/properties", schemaPath: "#/properties/properties/unevaluatedProperties" },
      },
    ]);
    expect(out.dropped).toBe(true);
  });

  test("enum, maximum, format and pattern → Advance-Rules-Violation, in schema order", () => {
    const message = cake({ flavour: "vanilla", tiers: 9, pickup: "next tuesday", voucher: "abc-12" });
    const out = validateEvent({ message, settings: settingsWith({ anyOtherViolation: "drop" }), plan });
    expect(out.violations).toEqual([
      { type: "Advance-Rules-Violation", message: "must be equal to one of the allowed values", meta: { instancePath: "/properties/flavour", schemaPath: "#/properties/properties/properties/flavour/enum" } },
      { type: "Advance-Rules-Violation", message: "must be <= 5", meta: { instancePath: "/properties/tiers", schemaPath: "#/properties/properties/properties/tiers/maximum" } },
      { type: "Advance-Rules-Violation", message: 'must match format "date"', meta: { instancePath: "/properties/pickup", schemaPath: "#/properties/properties/properties/pickup/format" } },
      { type: "Advance-Rules-Violation", message: 'must match pattern "^[A-Z]{3}-[0-9]{2}$"', meta: { instancePath: "/properties/voucher", schemaPath: "#/properties/properties/properties/voucher/pattern" } },
    ]);
    expect(out).toMatchObject({ dropped: true, violationType: "Advance-Rules-Violation" });
  });

  test("a keyword RudderStack does not classify (const) → Unknown-Violation", () => {
    const out = validateEvent({ message: cake({ ...goodCake, baker: "Bo" }), settings: settingsWith({ anyOtherViolation: "drop" }), plan });
    expect(out.violations).toEqual([
      { type: "Unknown-Violation", message: "must be equal to constant", meta: { instancePath: "/properties/baker", schemaPath: "#/properties/properties/properties/baker/const" } },
    ]);
    expect(out.violationType).toBe("Unknown-Violation");
  });

  test("anyOtherViolation names the first of Unknown, Datatype, Required, Advance present", () => {
    const out = validateEvent({ message: cake({ flavour: "vanilla", tiers: "x", baker: "Bo" }), settings: settingsWith({ anyOtherViolation: "drop" }), plan });
    expect(out.violations.map((v) => v.type)).toEqual(["Advance-Rules-Violation", "Datatype-Mismatch", "Unknown-Violation"]);
    expect(out.violationType).toBe("Unknown-Violation");
  });
});

describe("unplanned events", () => {
  const unplanned = { type: "track", event: "Bread Burnt", properties: {} };

  test("a track event the plan does not name → Unplanned-Event with empty meta", () => {
    const out = validateEvent({ message: unplanned, settings: settingsWith({}), plan });
    expect(out.violations).toEqual([{ type: "Unplanned-Event", message: "no schema for event: Bread Burnt", meta: {} }]);
    expect(out.dropped).toBe(false);
    expect(out.contextFields?.violationErrors).toEqual([{ type: "Unplanned-Event", message: "no schema for event: Bread Burnt", meta: {}, property: "" }]);
  });

  test("a planned track event with empty rules is unplanned too", () => {
    const out = validateEvent({ message: { type: "track", event: "Oven Preheated" }, settings: settingsWith({}), plan });
    expect(out.violations.map((v) => v.type)).toEqual(["Unplanned-Event"]);
  });

  test("a track event without a name → 'no schema for event: undefined'", () => {
    const out = validateEvent({ message: { type: "track" }, settings: settingsWith({}), plan });
    expect(out.violations[0]!.message).toBe("no schema for event: undefined");
  });

  test.each([
    ["false", true],
    ["FALSE", true],
    [false, true],
    ["true", false],
    [true, false],
    ["maybe", false],
  ])("allowUnplannedEvents %p → dropped %p", (value, dropped) => {
    const out = validateEvent({ message: unplanned, settings: settingsWith({ allowUnplannedEvents: value }), plan });
    expect(out.dropped).toBe(dropped);
    expect(out.violationType).toBe(dropped ? "Unplanned-Event" : "None");
  });

  test("an identify, page or group the plan does not name has no violations", () => {
    const noIdentify = compileTrackingPlan(parseTrackingPlan({ ...bakeryPlan, events: bakeryPlan.events.slice(0, 1) }));
    for (const type of ["identify", "page", "group", "screen"]) {
      const out = validateEvent({ message: { type, traits: {} }, settings: settingsWith({ allowUnplannedEvents: "false" }), plan: noIdentify });
      expect(out.violations).toEqual([]);
      expect(out.dropped).toBe(false);
    }
  });

  test("a non-track event is matched by type, and its schema's injected `version` is ignored", () => {
    const out = validateEvent({ message: { type: "identify", traits: { name: "Jo" } }, settings: settingsWith({ anyOtherViolation: "drop" }), plan });
    expect(out.violations).toEqual([
      {
        type: "Required-Missing",
        message: "must have required property 'loyalty'",
        property: "loyalty",
        meta: { instancePath: "/traits", schemaPath: "#/properties/traits/required" },
      },
    ]);
    expect(out.dropped).toBe(true);
  });
});

describe("event types", () => {
  test("track, identify, group, page and screen are validated; alias and others are not", () => {
    expect(["track", "identify", "group", "page", "screen"].every(isValidatedEventType)).toBe(true);
    expect(["alias", "unknown", "toString", undefined, 1].some(isValidatedEventType)).toBe(false);
  });

  test("alias: not validated, still annotated with violationErrors []", () => {
    const out = validateEvent({ message: { type: "alias", previousId: "a", userId: "b" }, settings: settingsWith({ allowUnplannedEvents: "false" }), plan });
    expect(out).toEqual({
      violations: [],
      dropped: false,
      violationType: "None",
      contextFields: { trackingPlanId: "tp_bakery", trackingPlanVersion: 4, violationErrors: [] },
    });
  });
});

describe("settings", () => {
  test("an event type's own entry overrides global", () => {
    const settings = parseTrackingPlanSettings({
      trackingPlan: { id: "tp_bakery", version: 4 },
      config: { global: { ...defaults, anyOtherViolation: "drop" }, track: { anyOtherViolation: "forward" } },
    });
    expect(validateEvent({ message: cake({ flavour: "lemon" }), settings, plan }).dropped).toBe(false);
    expect(validateEvent({ message: { type: "identify", traits: {} }, settings, plan }).dropped).toBe(true);
  });

  test("a merged config sent by the control plane is used for every event type", () => {
    const settings = parseTrackingPlanSettings({
      trackingPlan: { id: "tp_bakery", version: 4 },
      config: { global: { anyOtherViolation: "forward" }, track: { anyOtherViolation: "forward" } },
      mergedConfig: { anyOtherViolation: "drop" },
    });
    expect(validateEvent({ message: cake({ flavour: "lemon" }), settings, plan }).dropped).toBe(true);
  });

  test("an empty config (or merged config) turns validation off; events are still annotated", () => {
    const none = parseTrackingPlanSettings({ trackingPlan: { id: "tp_bakery", version: 4 }, config: {} });
    const out = validateEvent({ message: { type: "track", event: "Bread Burnt" }, settings: none, plan });
    expect(out).toEqual({ violations: [], dropped: false, violationType: "None", contextFields: { trackingPlanId: "tp_bakery", trackingPlanVersion: 4, violationErrors: [] } });
    const emptyMerged = settingsWith({ allowUnplannedEvents: "false" }, { mergedConfig: {} });
    expect(validateEvent({ message: { type: "track", event: "Bread Burnt" }, settings: emptyMerged, plan }).violations).toEqual([]);
  });

  test.each([
    ["false", false],
    [false, true],
    ["FALSE", true],
    ["true", true],
    [undefined, true],
  ])("propagateValidationErrors %p → context annotated %p (only the string \"false\" stops it)", (value, annotated) => {
    const out = validateEvent({ message: cake({ flavour: "lemon" }), settings: settingsWith({ propagateValidationErrors: value, anyOtherViolation: "drop" }), plan });
    expect(out.contextFields !== undefined).toBe(annotated);
    expect(out.violations).toHaveLength(1);
    expect(out.dropped).toBe(true);
  });

  test("a source without a tracking plan: nothing validated, nothing annotated", () => {
    const settings = parseTrackingPlanSettings({ config: { global: { allowUnplannedEvents: "false" } } });
    expect(validateEvent({ message: { type: "track", event: "Bread Burnt" }, settings, plan })).toEqual({ violations: [], dropped: false, violationType: "None" });
  });

  test("a RudderTyper client of the same plan picks the version; another plan's does not", () => {
    const settings = settingsWith({});
    expect(planRefFor(settings, { context: { ruddertyper: { trackingPlanId: "tp_bakery", trackingPlanVersion: 2 } } })).toEqual({ id: "tp_bakery", version: 2 });
    expect(planRefFor(settings, { context: { ruddertyper: { trackingPlanId: "tp_other", trackingPlanVersion: 2 } } })).toEqual({ id: "tp_bakery", version: 4 });
    expect(planRefFor(settings, { context: { ruddertyper: { trackingPlanId: "tp_bakery", trackingPlanVersion: "2" } } })).toEqual({ id: "tp_bakery", version: 4 });
    const out = validateEvent({ message: cake(goodCake, { context: { ruddertyper: { trackingPlanId: "tp_bakery", trackingPlanVersion: 3 } } }), settings, plan });
    expect(out.contextFields?.trackingPlanVersion).toBe(3);
  });

  test("a plan version that is not known drops the event, as RudderStack's 404 from the plan fetch does", () => {
    const out = validateEvent({ message: cake(goodCake), settings: settingsWith({}), plan: undefined });
    expect(out.dropped).toBe(true);
    expect(out.violations).toEqual([]);
    expect(out.contextFields?.violationErrors).toEqual([]);
  });

  test("when two settings drop, the one later in key order names the violation", () => {
    const violations = [{ type: "Additional-Properties" }, { type: "Datatype-Mismatch" }];
    expect(decideDrop(violations, { unplannedProperties: "drop", anyOtherViolation: "drop" })).toEqual({ dropped: true, violationType: "Additional-Properties" });
    expect(decideDrop(violations, { sendViolatedEventsTo: "procErrors", anyOtherViolation: "Forward" })).toEqual({ dropped: false, violationType: "None" });
  });

  test("settings that are not RudderStack's shape are refused naming the field", () => {
    expect(() => parseTrackingPlanSettings({ trackingPlan: { id: "tp", version: "4" } })).toThrow(AppError);
    expect(() => parseTrackingPlanSettings({ config: { track: "drop" } })).toThrow(/config/);
  });
});

describe("Ajv options", () => {
  test("ajvOptions of the event type over global over RudderStack's defaults; each option set compiles its own validator", () => {
    const message = () => cake({ flavour: "vanilla", tiers: 9 });
    const allErrors = validateEvent({ message: message(), settings: settingsWith({}), plan });
    expect(allErrors.violations).toHaveLength(2);
    const firstOnly = parseTrackingPlanSettings({
      trackingPlan: { id: "tp_bakery", version: 4 },
      config: { global: { ...defaults, ajvOptions: { allErrors: true } }, track: { ajvOptions: { allErrors: false } } },
    });
    expect(validateEvent({ message: message(), settings: firstOnly, plan }).violations).toHaveLength(1);
    expect(validateEvent({ message: message(), settings: settingsWith({}), plan }).violations).toHaveLength(2);
  });

  test("data-changing options change the event, as in RudderStack (coerceTypes)", () => {
    const settings = settingsWith({ ajvOptions: { coerceTypes: true } });
    const message = cake({ flavour: "lemon", tiers: "3" });
    expect(validateEvent({ message, settings, plan }).violations).toEqual([]);
    expect((message.properties as Record<string, unknown>).tiers).toBe(3);
  });
});

describe("drafts", () => {
  const draftPlan = (schema: string) =>
    parseTrackingPlan({
      events: [
        {
          name: "Slice Cut",
          eventType: "track",
          rules: { $schema: schema, type: "object", properties: { properties: { type: "object", properties: { width: { type: "number", maximum: 10, exclusiveMaximum: true } } } } },
        },
      ],
    });

  test("draft-04 `$schema` uses the draft-04 class: boolean exclusiveMaximum", () => {
    const compiled = compileTrackingPlan(draftPlan("http://json-schema.org/draft-04/schema#"));
    expect(compiled.problems).toEqual([]);
    const out = validateEvent({ message: { type: "track", event: "Slice Cut", properties: { width: 10 } }, settings: settingsWith({}), plan: compiled });
    expect(out.violations).toEqual([
      { type: "Advance-Rules-Violation", message: "must be < 10", meta: { instancePath: "/properties/width", schemaPath: "#/properties/properties/properties/width/maximum" } },
    ]);
  });

  test("the same schema under draft-07 (2019-09 class) does not compile; the event passes unchecked", () => {
    const compiled = compileTrackingPlan(draftPlan("http://json-schema.org/draft-07/schema#"));
    expect(compiled.problems).toHaveLength(1);
    expect(compiled.problems[0]).toMatchObject({ eventType: "track", eventName: "Slice Cut" });
    expect(compiled.problems[0]!.message).toContain("exclusiveMaximum");
    const out = validateEvent({ message: { type: "track", event: "Slice Cut", properties: { width: 99 } }, settings: settingsWith({ anyOtherViolation: "drop" }), plan: compiled });
    expect(out.violations).toEqual([]);
    expect(out.dropped).toBe(false);
    expect(out.compileError).toContain("exclusiveMaximum");
    expect(out.contextFields?.violationErrors).toEqual([]);
  });

  test("2019-09 keywords (minContains) work under the 2019-09 class", () => {
    const compiled = compileTrackingPlan(
      parseTrackingPlan({
        events: [
          {
            name: "Tray Filled",
            eventType: "track",
            rules: {
              $schema: "https://json-schema.org/draft/2019-09/schema",
              type: "object",
              properties: { properties: { type: "object", properties: { rolls: { type: "array", contains: { type: "string" }, minContains: 2 } } } },
            },
          },
        ],
      }),
    );
    const out = validateEvent({ message: { type: "track", event: "Tray Filled", properties: { rolls: ["rye", 3] } }, settings: settingsWith({}), plan: compiled });
    expect(out.violations.map((v) => [v.type, v.message])).toEqual([
      ["Datatype-Mismatch", "must be string"],
      ["Unknown-Violation", "must contain at least 2 valid item(s)"],
    ]);
  });
});

describe("the older plan format", () => {
  const legacy = parseTrackingPlan({
    name: "workspaces/ws/tracking-plans/tp_old",
    display_name: "Old bakery",
    version: 1,
    rules: {
      events: [
        {
          id: "ev_1",
          name: "Cake Ordered",
          version: "1-0-0",
          rules: { type: "object", properties: { properties: { type: "object", required: ["flavour"], properties: { flavour: { type: "string" } } } } },
        },
      ],
      identify: { type: "object", properties: { traits: { type: "object", required: ["email"], properties: { email: { type: "string" } } } } },
      // Never consulted: track events are looked up under `events` only.
      track: { type: "object", required: ["nothing"], properties: { nothing: {} } },
    },
  });
  const compiled = compileTrackingPlan(legacy);

  test("is read into the same shape: track events by name, other types by type with name \"\"", () => {
    expect(legacy.format).toBe("rules");
    expect(legacy.events.map((e) => [e.eventType, e.name])).toEqual([
      ["track", "Cake Ordered"],
      ["identify", ""],
    ]);
  });

  test("validates track events and per-type schemas", () => {
    const settings = settingsWith({ anyOtherViolation: "drop" });
    expect(validateEvent({ message: { type: "track", event: "Cake Ordered", properties: {} }, settings, plan: compiled }).violations[0]).toMatchObject({
      type: "Required-Missing",
      property: "flavour",
    });
    expect(validateEvent({ message: { type: "identify", traits: {} }, settings, plan: compiled }).violations[0]).toMatchObject({ property: "email" });
    expect(validateEvent({ message: { type: "track", event: "Bread Burnt" }, settings, plan: compiled }).violations[0]!.type).toBe("Unplanned-Event");
  });

  test("a plan in neither format is refused naming the field", () => {
    expect(() => parseTrackingPlan({ events: [{ name: "x" }] })).toThrow(/eventType/);
    expect(() => parseTrackingPlan({ name: "no rules" })).toThrow(AppError);
  });
});

describe("schemas that do not compile", () => {
  const broken = parseTrackingPlan({
    id: "tp_broken",
    events: [
      // strictRequired: a required property must be declared under properties.
      { name: "Cake Ordered", eventType: "track", rules: { type: "object", required: ["flavour"], properties: {} } },
      { name: "Loaf Sliced", eventType: "track", rules: { type: "object", properties: { properties: { type: "nonsense" } } } },
      { name: "Tart Baked", eventType: "track", rules: { type: "object", properties: { properties: { type: "object" } } } },
    ],
  });

  test("are reported up front with the event's name and Ajv's message", () => {
    const compiled = compileTrackingPlan(broken);
    expect(compiled.problems.map((p) => p.eventName)).toEqual(["Cake Ordered", "Loaf Sliced"]);
    expect(compiled.problems[0]!.message).toContain('strict mode: required property "flavour" is not defined');
    expect(compiled.problems[1]!.message).toContain("schema is invalid");
  });

  test("let their events through with no violations, as RudderStack does", () => {
    const compiled = compileTrackingPlan(broken);
    const out = validateEvent({ message: { type: "track", event: "Cake Ordered" }, settings: settingsWith({ anyOtherViolation: "drop" }), plan: compiled });
    expect(out).toMatchObject({ violations: [], dropped: false, violationType: "None" });
    expect(out.compileError).toContain("strict mode");
    expect(validateEvent({ message: { type: "track", event: "Tart Baked", properties: 1 }, settings: settingsWith({}), plan: compiled }).violations[0]!.type).toBe(
      "Datatype-Mismatch",
    );
  });
});

describe("patterns run on RE2", () => {
  const patterned = compileTrackingPlan(
    parseTrackingPlan({
      events: [
        {
          name: "Code Entered",
          eventType: "track",
          rules: {
            type: "object",
            properties: {
              properties: {
                type: "object",
                properties: { code: { type: "string", pattern: "^(a+)+$" }, after: { type: "string", pattern: "(?<=x)y" } },
                patternProperties: { "^(b+)+$": { type: "number" } },
              },
            },
          },
        },
        { name: "Lookahead", eventType: "track", rules: { type: "object", properties: { p: { type: "string", pattern: "^(?=a)" } } } },
        { name: "Backreference", eventType: "track", rules: { type: "object", properties: { p: { type: "string", pattern: "(a)\\1" } } } },
      ],
    }),
  );

  test("a catastrophic-backtracking pattern answers at once", () => {
    const start = performance.now();
    const out = validateEvent({ message: { type: "track", event: "Code Entered", properties: { code: `${"a".repeat(40)}!` } }, settings: settingsWith({}), plan: patterned });
    expect(performance.now() - start).toBeLessThan(200);
    expect(out.violations).toEqual([
      { type: "Advance-Rules-Violation", message: 'must match pattern "^(a+)+$"', meta: { instancePath: "/properties/code", schemaPath: "#/properties/properties/properties/code/pattern" } },
    ]);
    expect(validateEvent({ message: { type: "track", event: "Code Entered", properties: { code: "aaaa" } }, settings: settingsWith({}), plan: patterned }).violations).toEqual([]);
  });

  test("patternProperties keys are matched by RE2 too, quickly", () => {
    const start = performance.now();
    const key = `${"b".repeat(40)}!`;
    const out = validateEvent({ message: { type: "track", event: "Code Entered", properties: { [key]: "x", bbbb: "not a number" } }, settings: settingsWith({}), plan: patterned });
    expect(performance.now() - start).toBeLessThan(200);
    expect(out.violations).toEqual([
      { type: "Datatype-Mismatch", message: "must be number", meta: { instancePath: "/properties/bbbb", schemaPath: "#/properties/properties/patternProperties/%5E(b%2B)%2B%24/type" } },
    ]);
  });

  test("lookbehind runs; lookahead and backreferences are reported as not compiling", () => {
    const settings = settingsWith({});
    expect(validateEvent({ message: { type: "track", event: "Code Entered", properties: { after: "xy" } }, settings, plan: patterned }).violations).toEqual([]);
    expect(validateEvent({ message: { type: "track", event: "Code Entered", properties: { after: "ay" } }, settings, plan: patterned }).violations).toHaveLength(1);
    expect(patterned.problems.map((p) => p.eventName)).toEqual(["Lookahead", "Backreference"]);
    expect(patterned.problems[0]!.message).toContain("does not run");
  });
});

describe("RE2 patterns mean what they mean in JavaScript", () => {
  const re = (pattern: string) =>
    compileTrackingPlan(parseTrackingPlan({ events: [{ name: "Typed", eventType: "track", rules: { type: "object", properties: { v: { type: "string", pattern } } } }] }));
  const matches = (pattern: string, value: string) =>
    validateEvent({ message: { type: "track", event: "Typed", v: value }, settings: settingsWith({}), plan: re(pattern) }).violations.length === 0;

  test.each([
    ["^\\S+$", "no\u00a0break"],
    ["^\\s+$", "\u3000\u2028"],
    ["^[^\\s]+$", "a\u00a0b"],
    ["^a.c$", "a\rc"],
    ["^a.c$", "a\u2028c"],
    ["^.$", "😀"],
    ["^\\u0041[\\u{42}-\\u{43}]$", "AB"],
    ["^(?<year>\\d{4})$", "2024"],
  ])("%p on %p as new RegExp(pattern, 'u') decides", (pattern, value) => {
    expect(matches(pattern, value)).toBe(new RegExp(pattern, "u").test(value));
  });
});

describe("applyContextFields", () => {
  const fields = { trackingPlanId: "tp_bakery", trackingPlanVersion: 4, violationErrors: [] };

  test("sets the three fields on the context, keeping what is there", () => {
    const message: Record<string, unknown> = { context: { ip: "10.0.0.1" } };
    applyContextFields(message, fields);
    expect(message.context).toEqual({ ip: "10.0.0.1", ...fields });
  });

  test("a missing or null context becomes one holding the fields; a context that is not an object is left alone", () => {
    const missing: Record<string, unknown> = {};
    applyContextFields(missing, fields);
    expect(missing.context).toEqual(fields);
    const nulled: Record<string, unknown> = { context: null };
    applyContextFields(nulled, fields);
    expect(nulled.context).toEqual(fields);
    const text: Record<string, unknown> = { context: "web" };
    applyContextFields(text, fields);
    expect(text.context).toBe("web");
  });
});
