/**
 * Runs rudder-transformer's own tracking-plan tests (test/__tests__/eventValidation.test.js and
 * trackingPlan.test.js) against Sluice's engine (src/tracking-plans/) and prints matched/total per
 * file. A developer tool, not part of `npm test`: it needs a checkout of rudder-transformer
 * (Elastic License 2.0), which it reads at run time and never copies.
 *
 *   npx bun scripts/compare-tracking-plans.ts --rudder-transformer /path/to/rudder-transformer [-v]
 *
 * Each test file is evaluated as Jest would run it, with stand-ins for `jest`, `describe`, `it`,
 * `expect` and `require`: requiring `src/util/eventValidation` or `src/util/trackingPlan` gives
 * adapters that answer RudderStack's function signatures through Sluice's engine, and requiring
 * `node-fetch` gives the mock the tests feed plans through. The stand-in for the config backend
 * keeps fetched plans by id and version as rudder-transformer's cache does (the tests rely on it:
 * some cases name a plan only through an earlier case). The names of the violation types the cases
 * expect are read from the checkout's src/util/eventValidation.js, not from Sluice, so a misspelt
 * type in Sluice fails the cases.
 */
import { readFileSync, existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { CompiledTrackingPlan, parseTrackingPlan, type TrackingPlan } from "../src/tracking-plans/plan";
import { parseTrackingPlanSettings, settingsForEventType } from "../src/tracking-plans/settings";
import { decideDrop, findViolations, isValidatedEventType, validateEvent } from "../src/tracking-plans/validate";

const USAGE = "usage: npx bun scripts/compare-tracking-plans.ts --rudder-transformer /path/to/rudder-transformer [-v]";
const FILES = ["test/__tests__/eventValidation.test.js", "test/__tests__/trackingPlan.test.js"];

let checkout: string | undefined;
let verbose = false;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!;
  if (a === "--rudder-transformer") checkout = argv[++i];
  else if (a === "-v" || a === "--verbose") verbose = true;
  else {
    console.error(`unknown argument ${a}\n${USAGE}`);
    process.exit(2);
  }
}
if (!checkout) {
  console.error(USAGE);
  process.exit(2);
}
const root = resolve(checkout);
for (const f of [...FILES, "src/util/eventValidation.js"]) {
  if (!existsSync(join(root, f))) {
    console.error(`${join(root, f)} not found\n${USAGE}`);
    process.exit(2);
  }
}

/** RudderStack's `violationTypes` object, read from its source (a flat object of string literals). */
function rudderViolationTypes(): Record<string, string> {
  const src = readFileSync(join(root, "src/util/eventValidation.js"), "utf8");
  const body = /const violationTypes = \{([^}]*)\}/.exec(src)?.[1];
  if (!body) throw new Error("violationTypes not found in src/util/eventValidation.js");
  const out: Record<string, string> = {};
  for (const m of body.matchAll(/(\w+)\s*:\s*'([^']*)'/g)) out[m[1]!] = m[2]!;
  return out;
}

// ---- jest stand-ins ----------------------------------------------------------------------

type MockFn = ((...args: unknown[]) => unknown) & {
  mockResolvedValue(v: unknown): MockFn;
  mockReturnValue(v: unknown): MockFn;
  mockImplementation(f: (...args: unknown[]) => unknown): MockFn;
};

function mockFn(): MockFn {
  let impl: (...args: unknown[]) => unknown = () => undefined;
  const fn = ((...args: unknown[]) => impl(...args)) as MockFn;
  fn.mockResolvedValue = (v) => ((impl = () => Promise.resolve(v)), fn);
  fn.mockReturnValue = (v) => ((impl = () => v), fn);
  fn.mockImplementation = (f) => ((impl = f), fn);
  return fn;
}

/** Jest's toEqual: recursive equality that ignores properties whose value is undefined. */
function jestEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => jestEqual(x, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const keys = new Set([...Object.keys(ao), ...Object.keys(bo)]);
  for (const k of keys) if (!jestEqual(ao[k], bo[k])) return false;
  return true;
}

class ExpectationFailed extends Error {}

function expect(actual: unknown) {
  return {
    toEqual(expected: unknown) {
      if (!jestEqual(actual, expected)) {
        throw new ExpectationFailed(`expected ${JSON.stringify(expected)}\n       got ${JSON.stringify(actual)}`);
      }
    },
  };
}

interface Suite {
  name: string;
  beforeAll: (() => unknown)[];
  afterAll: (() => unknown)[];
  children: (Suite | { name: string; fn: () => unknown })[];
}

// ---- adapters: RudderStack's function signatures over Sluice's engine ----------------------

interface AdapterState {
  fetch: MockFn;
  /** rudder-transformer's tpCache: `${id}::${version}` → the plan JSON first fetched. */
  raw: Map<string, unknown>;
  compiled: Map<unknown, { plan: TrackingPlan; compiled: CompiledTrackingPlan }>;
}

function newState(): AdapterState {
  return { fetch: mockFn(), raw: new Map(), compiled: new Map() };
}

async function getTrackingPlan(state: AdapterState, id: unknown, version: unknown): Promise<unknown> {
  const key = `${id}::${version}`;
  if (state.raw.has(key)) return state.raw.get(key);
  const response = (await state.fetch(`config-backend/tracking-plans/${id}?version=${version}`)) as any;
  if (response.status !== 200) throw new Error(`Tracking plan not found (${response.status})`);
  const json = await response.json();
  state.raw.set(key, json);
  return json;
}

function compiledOf(state: AdapterState, raw: unknown) {
  let entry = state.compiled.get(raw);
  if (!entry) {
    const plan = parseTrackingPlan(raw);
    entry = { plan, compiled: new CompiledTrackingPlan(plan) };
    state.compiled.set(raw, entry);
  }
  return entry;
}

function requireMetadata(metadata: any) {
  for (const k of ["trackingPlanId", "trackingPlanVersion", "workspaceId"]) {
    if (!metadata?.[k]) throw new Error(`${metadata?.[k]} does not exist for event`);
  }
}

function adapters(state: () => AdapterState, violationTypes: Record<string, string>) {
  const trackingPlan = {
    getTrackingPlan: (id: unknown, version: unknown) => getTrackingPlan(state(), id, version),
    async getEventSchema(id: unknown, version: unknown, eventType: unknown, eventName: unknown) {
      const raw = await getTrackingPlan(state(), id, version);
      const { plan, compiled } = compiledOf(state(), raw);
      // RudderStack's older format keys non-track schemas by type alone; Sluice reads them as name "".
      const name = eventType !== "track" && plan.format === "rules" ? "" : eventName;
      return compiled.find(eventType as string, name)?.rules;
    },
  };

  async function validate(event: any) {
    requireMetadata(event.metadata);
    const { trackingPlanId, trackingPlanVersion, sourceTpConfig } = event.metadata;
    const raw = await getTrackingPlan(state(), trackingPlanId, trackingPlanVersion);
    const { compiled } = compiledOf(state(), raw);
    const settings = parseTrackingPlanSettings({ trackingPlan: { id: String(trackingPlanId), version: 1 }, config: sourceTpConfig });
    const found = findViolations(compiled, event.message, settingsForEventType(settings, String(event.message.type)));
    if ("error" in found) throw new Error(found.error);
    return found.violations;
  }

  const eventValidation = {
    violationTypes,
    isEventTypeSupported: (type: unknown) => isValidatedEventType(type),
    handleValidationErrors(validationErrors: { type: string }[], metadata: any, curDrop: boolean, curType: string) {
      const { dropped, violationType } = decideDrop(validationErrors, metadata.mergedTpConfig ?? {});
      return { dropEvent: curDrop || dropped, violationType: dropped ? violationType : curType };
    },
    validate,
    async handleValidation(event: any) {
      const metadata = event.metadata ?? {};
      const message = event.message ?? {};
      // rudder-server always sends a merged config; a case without one means an empty one.
      const settings = parseTrackingPlanSettings({
        trackingPlan: { id: String(metadata.trackingPlanId ?? ""), version: metadata.trackingPlanVersion ? 1 : 0 },
        config: metadata.sourceTpConfig ?? {},
        mergedConfig: metadata.mergedTpConfig ?? {},
      });
      const typeSettings = settingsForEventType(settings, String(message.type));
      // The transformer fetches the plan only for an event it goes on to check.
      let plan: CompiledTrackingPlan | undefined;
      if (typeSettings.validates && isValidatedEventType(message.type)) {
        requireMetadata(metadata);
        plan = compiledOf(state(), await getTrackingPlan(state(), metadata.trackingPlanId, metadata.trackingPlanVersion)).compiled;
      }
      const outcome = validateEvent({ message, settings, plan });
      if (outcome.compileError) throw new Error(outcome.compileError);
      return { dropEvent: outcome.dropped, violationType: outcome.violationType, validationErrors: outcome.violations };
    },
  };
  return { eventValidation, trackingPlan };
}

// ---- running one file ----------------------------------------------------------------------

interface FileResult {
  matched: number;
  total: number;
  failures: string[];
}

async function runFile(file: string, violationTypes: Record<string, string>): Promise<FileResult> {
  const source = readFileSync(join(root, file), "utf8");
  let state = newState();
  const { eventValidation, trackingPlan } = adapters(() => state, violationTypes);

  const top: Suite = { name: file, beforeAll: [], afterAll: [], children: [] };
  let current = top;
  const jest = {
    mock: () => undefined,
    fn: () => mockFn(),
    resetModules: () => {
      state = newState();
    },
  };
  const requireStandIn = (spec: string) => {
    if (spec === "node-fetch") return state.fetch;
    if (/src\/util\/eventValidation$/.test(spec)) return eventValidation;
    if (/src\/util\/trackingPlan$/.test(spec)) return trackingPlan;
    throw new Error(`${file} requires ${spec}, which the comparison has no stand-in for`);
  };
  const describe = (name: string, body: () => void) => {
    const suite: Suite = { name, beforeAll: [], afterAll: [], children: [] };
    current.children.push(suite);
    const parent = current;
    current = suite;
    body();
    current = parent;
  };
  const it = (name: string, fn: () => unknown) => void current.children.push({ name, fn });
  const fakeProcess = { env: {} as Record<string, string | undefined> };
  const run = new Function(
    "require", "jest", "describe", "it", "test", "expect", "beforeAll", "afterAll", "process", "module", "exports",
    source,
  );
  run(
    requireStandIn, jest, describe, it, it, expect,
    (fn: () => unknown) => current.beforeAll.push(fn),
    (fn: () => unknown) => current.afterAll.push(fn),
    fakeProcess, { exports: {} }, {},
  );

  const result: FileResult = { matched: 0, total: 0, failures: [] };
  async function runSuite(suite: Suite, path: string) {
    for (const hook of suite.beforeAll) await hook();
    for (const child of suite.children) {
      if ("children" in child) {
        await runSuite(child, `${path} › ${child.name}`);
        continue;
      }
      result.total++;
      try {
        await child.fn();
        result.matched++;
      } catch (e) {
        result.failures.push(`#${result.total} ${path} › ${child.name}\n       ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    for (const hook of suite.afterAll) await hook();
  }
  await runSuite(top, file.split("/").pop()!);
  return result;
}

const violationTypes = rudderViolationTypes();
let allMatched = 0;
let allTotal = 0;
for (const file of FILES) {
  const r = await runFile(file, violationTypes);
  allMatched += r.matched;
  allTotal += r.total;
  console.log(`${file}: ${r.matched}/${r.total} matched (${((100 * r.matched) / Math.max(r.total, 1)).toFixed(1)}%)`);
  if (verbose || r.failures.length <= 10) for (const f of r.failures) console.log(`  MISMATCH ${f}`);
}
console.log(`total: ${allMatched}/${allTotal}`);
process.exit(allMatched / allTotal >= 0.95 ? 0 : 1);
