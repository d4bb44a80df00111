/**
 * Compares Sluice's destination kinds with RudderStack's published test cases: every processor
 * and router case of rudder-transformer's test/integrations/destinations/<kind>/ is run through
 * the kind's transform (and batch() for router cases) and the outputs are compared with the
 * ones RudderStack publishes. A developer tool, not part of `npm test`: it needs a checkout of
 * rudder-transformer (Elastic License 2.0), which it reads and never writes into.
 *
 *   npx bun scripts/compare-rudderstack.ts --rudder-transformer /path/to/rudder-transformer [kind ...]
 *       [--processor|--router] [-v] [--case N] [--now ISO]
 *
 *   kind          a kind by its RudderStack name (MP, HS), RudderStack's folder (mp, hs) or
 *                 Sluice's folder (mixpanel, hubspot); default: every kind of the registry
 *   --processor   only processor cases; --router: only router cases
 *   -v            each differing case as a short diff (and the lookups it made), and the cases
 *                 never transformed with the reason
 *   --case N      only case N (its index in the data.ts list, as printed)
 *   --now ISO     the clock of cases whose mockFns fix none, for kinds that name no clock of their
 *                 own (kinds.ts); default: the real clock
 *
 * What is compared and what is left out: scripts/compare-rudderstack/compare.ts. What is done
 * differently for some kinds: scripts/compare-rudderstack/kinds.ts. How the cases are loaded:
 * scripts/compare-rudderstack/fixtures.ts; how lookups are answered: .../stand-in.ts.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { type CaseResult, type Feature, processorCase, routerCase } from "./compare-rudderstack/compare";
import { FixtureCopy, caseClock, installJestStandIn, restoreReplacedProperties } from "./compare-rudderstack/fixtures";
import { folderOf, optionsOf, selectKinds } from "./compare-rudderstack/kinds";
import { StandIn } from "./compare-rudderstack/stand-in";

const USAGE = "usage: npx bun scripts/compare-rudderstack.ts --rudder-transformer /path/to/rudder-transformer [kind ...] [--processor|--router] [-v] [--case N] [--now ISO]";

function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

// ---- arguments -------------------------------------------------------------------------------

let checkout: string | undefined;
let verbose = false;
let caseIndex: number | undefined;
let fallbackNow: number | undefined;
const features = new Set<Feature>();
const wanted: string[] = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!;
  const value = () => (a.includes("=") ? a.slice(a.indexOf("=") + 1) : (argv[++i] ?? fail(`${a} needs a value`)));
  if (a === "--rudder-transformer" || a.startsWith("--rudder-transformer=")) checkout = resolve(value());
  else if (a === "-v" || a === "--verbose") verbose = true;
  else if (a === "--processor") features.add("processor");
  else if (a === "--router") features.add("router");
  else if (a === "--case" || a.startsWith("--case=")) {
    caseIndex = Number(value());
    if (!Number.isInteger(caseIndex) || caseIndex < 0) fail("--case takes a case index (0, 1, …)");
  } else if (a === "--now" || a.startsWith("--now=")) {
    fallbackNow = Date.parse(value());
    if (Number.isNaN(fallbackNow)) fail("--now takes an ISO 8601 date-time");
  } else if (a === "-h" || a === "--help") {
    console.log(USAGE);
    process.exit(0);
  } else if (a.startsWith("-")) fail(`unknown option ${a}`);
  else wanted.push(a);
}
if (!checkout) fail("--rudder-transformer is required (git clone https://github.com/rudderlabs/rudder-transformer)");
if (!existsSync(join(checkout, "test/integrations/destinations"))) fail(`${checkout} has no test/integrations/destinations: not a rudder-transformer checkout`);
if (features.size === 0) features.add("processor").add("router");

const kinds = selectKinds(wanted, fail);

// ---- running ---------------------------------------------------------------------------------

interface FeatureSummary {
  total: number;
  never: number;
  /** Differing where the published output holds only after earlier cases (kinds.ts, afterEarlierCases): not counted. */
  apart: number;
  matched: number;
  notes: string[];
}
interface KindSummary {
  name: string;
  folder: string;
  missing?: boolean;
  /** Features whose cases could not be loaded. */
  failed?: Set<Feature>;
  processor?: FeatureSummary;
  router?: FeatureSummary;
}

function summarize(results: CaseResult[], jobIdKey?: string): FeatureSummary {
  const transformed = results.filter((r) => !r.never && !r.apart);
  const matched = transformed.filter((r) => r.ok);
  const count = (f: (r: CaseResult) => boolean | undefined) => transformed.filter(f).length;
  const notes: string[] = [];
  const serverAdded = count((r) => r.ok && r.serverAdded);
  if (serverAdded) notes.push(`${serverAdded} of the matches only once the keys derived from server-added fields are left out`);
  const otherOrder = count((r) => r.ok && r.otherOrder);
  if (otherOrder) notes.push(`${otherOrder} of the matches in another order`);
  const items = count((r) => !r.ok && r.itemsMatch);
  if (items) notes.push(`${items} more match item by item (only the grouping into calls differs)`);
  const jobId = count((r) => !r.ok && r.jobIdOnly);
  if (jobId) notes.push(`${jobId} more equal but for ${jobIdKey} (RudderStack's job id)`);
  const env = transformed.filter((r) => r.env);
  if (env.length) notes.push(`${env.length} run with RudderStack operator settings (envOverrides), ${env.filter((r) => r.ok).length} of them match`);
  // The rETL split is shown where some rETL case differs.
  const retl = transformed.filter((r) => r.retl);
  if (retl.some((r) => !r.ok)) notes.push(`rETL cases ${retl.filter((r) => r.ok).length}/${retl.length}, event stream ${matched.length - retl.filter((r) => r.ok).length}/${transformed.length - retl.length}`);
  const apart = results.filter((r) => r.apart).length;
  return { total: results.length, never: results.length - transformed.length - apart, apart, matched: matched.length, notes };
}

function printResults(name: string, feature: Feature, results: CaseResult[], s: FeatureSummary) {
  const differ = s.total - s.never - s.apart - s.matched;
  const apart = s.apart ? `, ${s.apart} apart (RudderStack's output there needs earlier cases)` : "";
  console.log(`${name} ${feature}: ${s.matched}/${s.total - s.never - s.apart} match, ${differ} differ, ${s.never} never transformed${apart}${s.notes.length ? ` (${s.notes.join("; ")})` : ""}`);
  for (const r of results) {
    if (r.never) {
      if (verbose) console.log(`  n/a  #${r.index} ${r.label}: ${r.never}`);
      continue;
    }
    const tags = [
      r.serverAdded ? "after leaving out server-added keys" : "",
      r.otherOrder ? "another order" : "",
      r.itemsMatch ? "items match, grouping differs" : "",
      r.jobIdOnly ? "equal but for RudderStack's job id" : "",
      r.env ? `RudderStack setting ${r.env}` : "",
      r.retl ? "rETL" : "",
      r.schemaRefused ? "config fails Sluice's schema" : "",
      r.apart ? `apart: ${r.apart}` : "",
    ].filter(Boolean);
    if (r.ok && !(verbose && (r.serverAdded || r.otherOrder))) continue;
    console.log(`  ${r.ok ? "ok* " : r.apart ? "--  " : "✗   "}#${r.index} ${r.label}${tags.length ? ` [${tags.join("; ")}]` : ""}`);
    if (!verbose) continue;
    const limit = 12;
    for (const d of r.diffs.slice(0, limit)) console.log(`       ${d}`);
    if (r.diffs.length > limit) console.log(`       … ${r.diffs.length - limit} more`);
    for (const j of r.skippedJobs ?? []) console.log(`       (left out, never transformed) ${j}`);
    for (const c of r.calls) console.log(`       · lookup ${c}`);
  }
}

installJestStandIn();
const fixtures = new FixtureCopy(checkout);
const standIn = new StandIn();
const summaries: KindSummary[] = [];
try {
  for (const def of kinds) {
    const opts = optionsOf(def.name);
    const folder = folderOf(def.name);
    const summary: KindSummary = { name: def.name, folder };
    summaries.push(summary);
    console.log(`\n== ${def.name} (${folder})`);
    if (!fixtures.addDestination(folder)) {
      summary.missing = true;
      console.log(`RudderStack publishes no cases for ${def.name} (no test/integrations/destinations/${folder})`);
      continue;
    }
    try {
      standIn.use(await fixtures.mocks(folder), opts.anyQueryPaths);
    } catch (e) {
      console.log(`${def.name}: could not load network.ts (${(e as Error)?.message ?? e}); lookups answer 500`);
      standIn.use([]);
    }
    for (const feature of ["processor", "router"] as const) {
      if (!features.has(feature)) continue;
      let cases;
      try {
        cases = await fixtures.cases(folder, feature);
      } catch (e) {
        console.log(`${def.name} ${feature}: could not load the cases: ${(e as Error)?.stack ?? e}`);
        (summary.failed ??= new Set()).add(feature);
        continue;
      }
      if (!cases) {
        console.log(`${def.name} ${feature}: RudderStack publishes no ${feature} cases`);
        continue;
      }
      const results: CaseResult[] = [];
      for (let i = 0; i < cases.length; i++) {
        if (caseIndex !== undefined && caseIndex !== i) continue;
        const tc = cases[i]!;
        caseClock.now = undefined;
        restoreReplacedProperties();
        standIn.startCase();
        const kindClock = opts.clock ? Date.parse(opts.clock) : undefined;
        const run = { def, opts, standIn, now: () => caseClock.now ?? kindClock ?? fallbackNow ?? Date.now() };
        try {
          tc.mockFns?.(standIn.adapter());
          results.push(await (feature === "processor" ? processorCase(run, tc, i) : routerCase(run, tc, i)));
        } catch (e) {
          results.push({ index: i, label: String(tc.description ?? tc.name), ok: false, diffs: [`comparison failed: ${(e as Error)?.stack ?? e}`], calls: [] });
        }
      }
      const s = summarize(results, opts.jobIdKey);
      summary[feature] = s;
      printResults(def.name, feature, results, s);
    }
  }
} finally {
  standIn.stop();
  fixtures.remove();
}

// ---- summary ---------------------------------------------------------------------------------

// "—": RudderStack publishes no such cases; "not run": left out by --processor/--router.
function cell(k: KindSummary, f: Feature): string {
  if (k.missing) return "no cases";
  if (!features.has(f)) return "not run";
  if (k.failed?.has(f)) return "not loaded";
  const s = k[f];
  return s ? `${s.matched}/${s.total - s.never - s.apart}` : "—";
}
const rows = summaries.map((k) => [
  `${k.name} (${k.folder})`,
  cell(k, "processor"),
  cell(k, "router"),
  k.missing ? "—" : `${k.processor?.never ?? 0} + ${k.router?.never ?? 0}`,
  k.missing ? "—" : `${k.processor?.apart ?? 0} + ${k.router?.apart ?? 0}`,
]);
const header = ["kind", "processor", "router", "never transformed (processor + router)", "apart"];
const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
const line = (r: string[]) => r.map((v, c) => v.padEnd(widths[c]!)).join("  ").trimEnd();
console.log(`\n${line(header)}\n${widths.map((w) => "-".repeat(w)).join("  ")}\n${rows.map(line).join("\n")}`);
const total = (f: Feature) => {
  if (!features.has(f)) return "not run";
  const t = summaries.reduce((a, k) => ({ m: a.m + (k[f]?.matched ?? 0), t: a.t + (k[f] ? k[f]!.total - k[f]!.never - k[f]!.apart : 0) }), { m: 0, t: 0 });
  return `${t.m}/${t.t}`;
};
const never = (f: Feature) => summaries.reduce((a, k) => a + (k[f]?.never ?? 0), 0);
const apart = (f: Feature) => summaries.reduce((a, k) => a + (k[f]?.apart ?? 0), 0);
console.log(line(["all", total("processor"), total("router"), `${never("processor")} + ${never("router")}`, `${apart("processor")} + ${apart("router")}`]));
console.log("(matched/transformed cases; never transformed: cases whose inputs rudder-server never hands a transform;");
console.log(" apart: differing cases whose published output RudderStack gives only after earlier cases ran in its process, kinds.ts afterEarlierCases)");
