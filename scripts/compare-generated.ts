/**
 * Compares Sluice's destination kinds with a running rudder-transformer on events nobody tuned
 * for: identify, track, page, screen, group and alias calls of many shapes from a seeded random
 * generator (scripts/compare-generated/generate.ts), each sent to RudderStack's processor
 * endpoint and to the kind's transform with the same config, the outputs compared by the rules
 * of scripts/compare-rudderstack/compare.ts. A developer tool, not part of `npm test`: it needs a
 * rudder-transformer (Elastic License 2.0) running locally and a checkout of it for the configs;
 * it reads the checkout and never writes into it, and copies nothing of it here.
 *
 *   npx bun scripts/compare-generated.ts --transformer http://localhost:9090 [kind ...]
 *       [--events N] [--seed S] [-v] [--rudder-transformer PATH] [--concurrency N] [--json FILE]
 *
 *   kind          a kind by its RudderStack name (MP), RudderStack's folder (mp) or Sluice's folder
 *                 (mixpanel); default: every kind of the registry (those without a config to take
 *                 are listed as not run)
 *   --events N    events per kind and message type (default 60)
 *   --seed S      the generator's seed (default "sluice"); a (seed, kind, type) gives the same events
 *   -v            per kind, more of its differences, the first event showing each of the most
 *                 common ones as a diff, and more of RudderStack's words for the refusals
 *   --rudder-transformer PATH   the checkout whose published cases give each kind's config
 *                 (default ../rudder-transformer next to this repository)
 *   --concurrency N  events in flight to the transformer at once (default 8)
 *   --json FILE   every event that differs (message, config case, diffs), for reading at leisure
 *
 * The config: each kind's first published processor case (test/integrations/destinations/
 * <folder>/processor/data.ts, loaded as scripts/compare-rudderstack.ts loads them) whose inputs
 * rudder-server would hand the kind, all of one config, that Sluice's schema (and checkConfig)
 * accepts, that is no rETL case, runs with no RudderStack operator setting, and whose published
 * outputs are all requests. The destination object sent is that case's, with the fields a real
 * one always carries (DestinationDefinition with the kind's Name, ID, WorkspaceID, ...).
 *
 * Which events: only message types in the kind's supportedMessageTypes (rudder-server never
 * sends it the others). An event for which Sluice's transform makes a lookup (it asks the
 * service first: INTERCOM, HS, ZENDESK, FRESHSALES, MAUTIC, SENDGRID, KLAVIYO, BRAZE, for
 * some events or configs) is left out and never sent to RudderStack, which would make the same
 * call to the real service with the published case's placeholder credentials; such events are
 * counted apart. The lookups are seen through the comparison's own stand-in (stand-in.ts), which
 * knows no mocks here, so a lookup fails and is never answered. An event for which RudderStack's
 * transform called the service and could not reach it (its answer says so: a network error) is
 * left out as well and counted apart: what it becomes depends on that call. Run the transformer
 * where it reaches no service (CONTRIBUTING.md).
 *
 * Counting: an event matches when processorCase (compare.ts) finds both outputs equal, or when
 * both sides refuse it (an error on both sides, whatever the words or the class: those
 * differences are reported apart). Both clocks are the real one: the kinds are called with
 * Date.now, RudderStack reads its own. An event whose outputs are equal only once RudderStack's
 * SHA-256 digests of the event's non-ASCII texts are read as the UTF-8 ones is counted apart
 * (compare-generated/latin1.ts: RudderStack hashes Latin-1 bytes, the platforms match UTF-8).
 */
import { existsSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { Value } from "@sinclair/typebox/value";
import type { AnyDestinationDefinition } from "../src/destinations/types";
import { type CaseResult, neverTransformed, processorCase, rsMessage, stable } from "./compare-rudderstack/compare";
import { FixtureCopy, type RsCase, installJestStandIn } from "./compare-rudderstack/fixtures";
import { folderOf, optionsOf, selectKinds } from "./compare-rudderstack/kinds";
import { StandIn } from "./compare-rudderstack/stand-in";
import { CALL_TYPES, type CallType, type GeneratedEvent, Rng, generateEvent } from "./compare-generated/generate";
import { Transformer, destinationOf, metadataOf, pool } from "./compare-generated/transformer";
import { type Difference, differenceKinds, isBothRefuse } from "./compare-generated/differences";
import { withUtf8Digests } from "./compare-generated/latin1";

const USAGE =
  "usage: npx bun scripts/compare-generated.ts --transformer http://localhost:9090 [kind ...] [--events N] [--seed S] [-v] [--rudder-transformer PATH] [--concurrency N] [--json FILE]";

function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

// ---- arguments -------------------------------------------------------------------------------

let transformerUrl: string | undefined;
let checkout = resolve(dirname(import.meta.dir), "..", "rudder-transformer");
let events = 60;
let seed = "sluice";
let verbose = false;
let concurrency = 8;
let jsonFile: string | undefined;
const wanted: string[] = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!;
  const value = () => (a.includes("=") ? a.slice(a.indexOf("=") + 1) : (argv[++i] ?? fail(`${a} needs a value`)));
  const count = (name: string) => {
    const n = Number(value());
    if (!Number.isInteger(n) || n < 1) fail(`${name} takes a whole number above 0`);
    return n;
  };
  if (a === "--transformer" || a.startsWith("--transformer=")) transformerUrl = value().replace(/\/+$/, "");
  else if (a === "--rudder-transformer" || a.startsWith("--rudder-transformer=")) checkout = resolve(value());
  else if (a === "--events" || a.startsWith("--events=")) events = count("--events");
  else if (a === "--concurrency" || a.startsWith("--concurrency=")) concurrency = count("--concurrency");
  else if (a === "--seed" || a.startsWith("--seed=")) seed = value();
  else if (a === "--json" || a.startsWith("--json=")) jsonFile = resolve(value());
  else if (a === "-v" || a === "--verbose") verbose = true;
  else if (a === "-h" || a === "--help") {
    console.log(USAGE);
    process.exit(0);
  } else if (a.startsWith("-")) fail(`unknown option ${a}`);
  else wanted.push(a);
}
if (!transformerUrl) fail("--transformer is required (the URL of a running rudder-transformer, e.g. http://localhost:9090)");
if (!existsSync(join(checkout, "test/integrations/destinations"))) fail(`${checkout} has no test/integrations/destinations: pass the rudder-transformer checkout with --rudder-transformer`);

const kinds = selectKinds(wanted, fail);

// ---- the config of each kind -------------------------------------------------------------------

const isSuccess = (o: any) => o?.error === undefined && o?.statusCode >= 200 && o?.statusCode < 300;

/**
 * A RudderStack answer saying its transform called the service and could not reach it (no such
 * host, refused, timed out): what the event becomes depends on that call, so it is not compared.
 */
function triedTheService(o: any): boolean {
  if (o?.error === undefined) return false;
  if (o?.statTags?.errorCategory === "network") return true;
  return /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|DNS lookup failed|socket hang up/.test(String(o.error));
}

const isCompared = (r: { lookup?: boolean; theirLookup?: string; unanswered?: string; latin1?: boolean }) => !r.lookup && !r.theirLookup && !r.unanswered && !r.latin1;

/** The first published processor case whose config fits (see the header), with its index. */
function firstValidConfig(def: AnyDestinationDefinition, cases: RsCase[]): { index: number; tc: RsCase; destination: any } | undefined {
  for (const [index, tc] of cases.entries()) {
    const inputs: any[] = tc.input?.request?.body ?? [];
    const outputs: any[] = tc.output?.response?.body ?? [];
    if (!Array.isArray(inputs) || inputs.length === 0 || !Array.isArray(outputs) || outputs.length === 0) continue;
    if (tc.envOverrides) continue;
    if (inputs.some((i) => neverTransformed(def, i.message))) continue;
    if (inputs.some((i) => ["true", "1"].includes(String(i?.message?.context?.mappedToDestination)))) continue;
    if (new Set(inputs.map((i) => stable(i.destination?.Config ?? {}))).size !== 1) continue;
    const config: Record<string, any> = inputs[0].destination?.Config ?? {};
    if (!Value.Check(def.configSchema, config)) continue;
    if (def.checkConfig?.(config)) continue;
    if (!outputs.every(isSuccess)) continue;
    return { index, tc, destination: inputs[0].destination };
  }
  return undefined;
}

// ---- running ---------------------------------------------------------------------------------

interface EventResult {
  type: CallType;
  label: string;
  /** Left out: Sluice's transform looked the service up. */
  lookup?: boolean;
  /** Left out: RudderStack's transform called the service and could not reach it (what it said). */
  theirLookup?: string;
  /** The transformer gave no answer for it (not compared). */
  unanswered?: string;
  /** Apart: equal once RudderStack's Latin-1 digests of the event's texts are read as UTF-8 (compare-generated/latin1.ts). */
  latin1?: boolean;
  ok?: boolean;
  bothRefuse?: boolean;
  messageDiffers?: boolean;
  classDiffers?: boolean;
  /** RudderStack's words when both sides refuse. */
  refusal?: string;
  diffs?: string[];
  message?: any;
}

interface KindReport {
  name: string;
  folder: string;
  skipped?: string;
  configCase?: string;
  types: CallType[];
  results: EventResult[];
}

const transformer = new Transformer(transformerUrl);
const health = await transformer.health();
if (!health.ok) {
  console.error(`the transformer at ${transformerUrl} is not answering /health (${health.text}); start it first (CONTRIBUTING.md)`);
  process.exit(1);
}

installJestStandIn();
const fixtures = new FixtureCopy(checkout);
const standIn = new StandIn();
const reports: KindReport[] = [];
const started = Date.now();
let jobId = 1;

/** A published-case shape around one generated event, for processorCase. */
function asCase(input: any, outputs: any[], label: string): RsCase {
  return { description: label, input: { request: { body: [input] } }, output: { response: { body: outputs } } };
}

try {
  for (const def of kinds) {
    const folder = folderOf(def.name);
    const report: KindReport = { name: def.name, folder, types: [], results: [] };
    reports.push(report);
    console.log(`\n== ${def.name} (${folder})`);
    if (def.serverDelivered) {
      report.skipped = "delivered by the server itself (no transform to compare)";
      console.log(`${def.name}: ${report.skipped}`);
      continue;
    }
    if (!fixtures.addDestination(folder)) {
      report.skipped = `RudderStack publishes no cases (no test/integrations/destinations/${folder}), so no config`;
      console.log(`${def.name}: ${report.skipped}`);
      continue;
    }
    let cases: RsCase[] | undefined;
    try {
      cases = await fixtures.cases(folder, "processor");
    } catch (e) {
      report.skipped = `could not load the published processor cases: ${(e as Error)?.message ?? e}`;
      console.log(`${def.name}: ${report.skipped}`);
      continue;
    }
    const chosen = cases ? firstValidConfig(def, cases) : undefined;
    if (!chosen) {
      report.skipped = cases ? "no published processor case with a config that fits (see the header)" : "RudderStack publishes no processor cases, so no config";
      console.log(`${def.name}: ${report.skipped}`);
      continue;
    }
    report.configCase = `processor case #${chosen.index} ${JSON.stringify(String(chosen.tc.description ?? chosen.tc.name ?? "").trim())}`;
    console.log(`config: ${report.configCase}`);
    const destination = destinationOf(def, chosen.destination);
    const displayName = destination.DestinationDefinition.DisplayName;
    const run = { def, opts: optionsOf(def.name), standIn, now: () => Date.now() };
    report.types = CALL_TYPES.filter((t) => (def.config.supportedMessageTypes as string[]).includes(t));
    const notTaken = CALL_TYPES.filter((t) => !report.types.includes(t));
    if (notTaken.length) console.log(`not taken by the definition (never sent by rudder-server): ${notTaken.join(", ")}`);

    for (const type of report.types) {
      const rng = new Rng(`${seed}:${def.name}:${type}`);
      const generated: GeneratedEvent[] = Array.from({ length: events }, () => generateEvent(rng, type, displayName, Date.now()));
      const inputs = generated.map((g) => ({ message: g.message, metadata: metadataOf(g.message, destination, jobId++), destination }));
      // Sluice's transform first: an event it looks the service up for is left out (see the header).
      const lookups: boolean[] = [];
      for (const [k, input] of inputs.entries()) {
        standIn.startCase();
        const probe = await processorCase(run, asCase(input, [], generated[k]!.label), k);
        lookups.push(probe.calls.length > 0);
      }
      const answers = await pool(inputs, concurrency, async (input, k) => {
        if (lookups[k]) return undefined;
        try {
          return await transformer.process(def, input);
        } catch (e) {
          return `${(e as Error)?.message ?? e}`;
        }
      });
      const results: EventResult[] = [];
      for (const [k, input] of inputs.entries()) {
        const g = generated[k]!;
        const answer = answers[k];
        if (lookups[k]) {
          results.push({ type, label: g.label, lookup: true });
          continue;
        }
        if (typeof answer === "string" || answer === undefined) {
          results.push({ type, label: g.label, unanswered: String(answer) });
          continue;
        }
        const unreached = answer.find(triedTheService);
        if (unreached) {
          results.push({ type, label: g.label, theirLookup: rsMessage(unreached.error), message: input.message });
          continue;
        }
        standIn.startCase();
        let r: CaseResult;
        try {
          r = await processorCase(run, asCase(input, answer, g.label), k);
        } catch (e) {
          r = { index: k, label: g.label, ok: false, diffs: [`comparison failed: ${(e as Error)?.stack ?? e}`], calls: [] };
        }
        if (r.calls.length > 0) {
          // A lookup on the second run only (a kind that remembers): left out as well.
          results.push({ type, label: g.label, lookup: true });
          continue;
        }
        if (!r.ok) {
          const utf8 = withUtf8Digests(answer, input.message);
          if (utf8.replaced > 0) {
            standIn.startCase();
            const again = await processorCase(run, asCase(input, utf8.answer as any[], g.label), k);
            if (again.ok) {
              results.push({ type, label: g.label, latin1: true, diffs: r.diffs, message: input.message });
              continue;
            }
          }
        }
        const both = !r.ok && isBothRefuse(r.diffs);
        const refused = both || (r.ok && answer.length > 0 && answer.every((o: any) => !isSuccess(o)));
        results.push({
          type,
          label: g.label,
          ok: r.ok || both,
          bothRefuse: refused,
          refusal: refused ? rsMessage(answer[0]?.error) : undefined,
          messageDiffers: both && r.diffs.some((d) => /^\[\d+\] error: /.test(d)),
          classDiffers: both && r.diffs.some((d) => /^\[\d+\] error class: /.test(d)),
          diffs: r.diffs,
          message: input.message,
        });
      }
      report.results.push(...results);
      const compared = results.filter(isCompared);
      const matched = compared.filter((x) => x.ok).length;
      const notes = [
        `${compared.filter((x) => x.bothRefuse).length} refused by both`,
        compared.some((x) => x.messageDiffers) ? `${compared.filter((x) => x.messageDiffers).length} of them in other words` : "",
        compared.some((x) => x.classDiffers) ? `${compared.filter((x) => x.classDiffers).length} with another error class` : "",
        results.some((x) => x.lookup) ? `${results.filter((x) => x.lookup).length} left out: Sluice looks the service up` : "",
        results.some((x) => x.theirLookup) ? `${results.filter((x) => x.theirLookup).length} left out: RudderStack calls the service (unreachable here)` : "",
        results.some((x) => x.unanswered) ? `${results.filter((x) => x.unanswered).length} unanswered by the transformer` : "",
        results.some((x) => x.latin1) ? `${results.filter((x) => x.latin1).length} apart: RudderStack hashes Latin-1 bytes` : "",
      ].filter(Boolean);
      console.log(`${def.name} ${type}: ${matched}/${compared.length} match (${notes.join("; ")})`);
    }
    printKind(report);
  }
} finally {
  standIn.stop();
  fixtures.remove();
}

// ---- reporting -------------------------------------------------------------------------------

function tally(results: EventResult[]) {
  const compared = results.filter(isCompared);
  const matched = compared.filter((x) => x.ok).length;
  const bothRefuse = compared.filter((x) => x.bothRefuse).length;
  return {
    compared: compared.length,
    matched,
    bothRefuse,
    /** Matched with requests (or nothing) on both sides: the payloads themselves equal. */
    equalRequests: matched - bothRefuse,
    otherWords: compared.filter((x) => x.messageDiffers || x.classDiffers).length,
    lookup: results.filter((x) => x.lookup).length,
    theirLookup: results.filter((x) => x.theirLookup).length,
    unanswered: results.filter((x) => x.unanswered).length,
    latin1: results.filter((x) => x.latin1).length,
  };
}

function percent(n: number, of: number): string {
  return of ? `${((100 * n) / of).toFixed(1)}%` : "—";
}

/** Texts counted, most common first. */
function ranked(texts: string[]): Array<[string, number]> {
  const counts = new Map<string, number>();
  for (const t of texts) counts.set(t, (counts.get(t) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}

/** The difference kinds of some events, most common first: [kind, events showing it]. */
function commonDifferences(results: EventResult[]): Array<[string, number]> {
  return ranked(results.filter((r) => !r.ok && !r.latin1 && r.diffs).flatMap((r) => [...new Set(differenceKinds(r.diffs!).map((d: Difference) => d.kind))]));
}

function leftOut(t: ReturnType<typeof tally>): string {
  return `${t.lookup} / ${t.theirLookup}${t.unanswered ? ` + ${t.unanswered} unanswered` : ""}`;
}

function printKind(report: KindReport) {
  const t = tally(report.results);
  console.log(`${report.name}: ${t.matched}/${t.compared} match (${percent(t.matched, t.compared)}), ${t.equalRequests} of them with equal requests, ${t.bothRefuse} refused by both`);
  const refusals = ranked(report.results.filter((r) => r.bothRefuse).map((r) => `${r.type}: ${r.refusal}`));
  if (refusals.length) {
    console.log(`  refused by both, most often (RudderStack's words):`);
    for (const [k, n] of refusals.slice(0, verbose ? 8 : 3)) console.log(`    ${String(n).padStart(4)}  ${k.length > 150 ? `${k.slice(0, 150)}…` : k}`);
  }
  const unanswered = ranked(report.results.filter((r) => r.unanswered).map((r) => r.unanswered!));
  for (const [k, n] of unanswered.slice(0, 2)) console.log(`  ${n} unanswered: ${k.length > 200 ? `${k.slice(0, 200)}…` : k}`);
  const theirs = ranked(report.results.filter((r) => r.theirLookup).map((r) => `${r.type}: ${r.theirLookup}`));
  if (theirs.length) {
    console.log(`  left out, RudderStack calls the service where Sluice does not (RudderStack's words):`);
    for (const [k, n] of theirs.slice(0, verbose ? 8 : 3)) console.log(`    ${String(n).padStart(4)}  ${k.length > 150 ? `${k.slice(0, 150)}…` : k}`);
  }
  const common = commonDifferences(report.results);
  if (common.length) {
    const shown = verbose ? common.slice(0, 12) : common.slice(0, 4);
    console.log(`  most common differences (events):`);
    for (const [k, n] of shown) console.log(`    ${String(n).padStart(4)}  ${k}`);
    if (common.length > shown.length) console.log(`    … ${common.length - shown.length} more kinds of differences${verbose ? "" : " (-v shows more)"}`);
  }
  if (!verbose) return;
  // The first event showing each of the most common kinds of differences.
  const differing = report.results.filter((r) => !r.ok && !r.latin1 && r.diffs);
  const examples = new Set<EventResult>();
  for (const [k] of common.slice(0, 5)) {
    const first = differing.find((r) => differenceKinds(r.diffs!).some((d) => d.kind === k));
    if (first) examples.add(first);
  }
  for (const r of examples) {
    console.log(`  ✗ ${r.label}`);
    for (const d of r.diffs!.slice(0, 12)) console.log(`       ${d}`);
    if (r.diffs!.length > 12) console.log(`       … ${r.diffs!.length - 12} more`);
  }
  for (const r of report.results.filter((r) => r.messageDiffers || r.classDiffers).slice(0, 2)) {
    console.log(`  both refuse, other words: ${r.label}`);
    for (const d of r.diffs!.slice(0, 3)) console.log(`       ${d}`);
  }
}

const rows = reports.map((k) => {
  const t = tally(k.results);
  if (k.skipped) return [k.name, "not run", "—", "—", "—", "—", "—", k.skipped];
  return [
    k.name,
    `${t.matched}/${t.compared}`,
    percent(t.matched, t.compared),
    String(t.equalRequests),
    `${t.bothRefuse}${t.otherWords ? ` (${t.otherWords} in other words)` : ""}`,
    leftOut(t),
    String(t.latin1),
    k.types.join(" "),
  ];
});
const header = ["kind", "matched", "%", "equal requests", "refused by both", "left out (Sluice / RS look up)", "apart (Latin-1 hashes)", "message types"];
const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
const line = (r: string[]) => r.map((v, c) => v.padEnd(widths[c]!)).join("  ").trimEnd();
console.log(`\n${line(header)}\n${widths.map((w) => "-".repeat(w)).join("  ")}\n${rows.map(line).join("\n")}`);
const all = reports.flatMap((k) => k.results);
const total = tally(all);
console.log(
  line([
    "all",
    `${total.matched}/${total.compared}`,
    percent(total.matched, total.compared),
    String(total.equalRequests),
    `${total.bothRefuse}${total.otherWords ? ` (${total.otherWords} in other words)` : ""}`,
    leftOut(total),
    String(total.latin1),
    "",
  ]),
);
console.log(
  `(${events} events per kind and message type, seed ${JSON.stringify(seed)}, ${transformerUrl}, ${((Date.now() - started) / 1000).toFixed(0)} s. matched: of the events compared, equal outputs or refused by both; ` +
    `equal requests: matched with the same requests on both sides; left out: events Sluice's transform looks the service up for (never sent), ` +
    `and events RudderStack's transform tried to look the service up for (unreachable here); apart: equal but for RudderStack's hashes of non-ASCII text, ` +
    `which it takes from Latin-1 bytes where the platforms hash UTF-8)`,
);
const overall = commonDifferences(all);
if (overall.length) {
  console.log(`\nmost common differences over all kinds (events showing each):`);
  for (const [k, n] of overall.slice(0, 20)) console.log(`  ${String(n).padStart(5)}  ${k}`);
}
if (jsonFile) {
  const differing = reports.flatMap((k) => k.results.filter((r) => !r.lookup && (!r.ok || r.messageDiffers || r.classDiffers || r.theirLookup)).map((r) => ({ kind: k.name, config: k.configCase, ...r })));
  writeFileSync(jsonFile, JSON.stringify({ seed, events, transformer: transformerUrl, differing }, null, 2));
  console.log(`\n${differing.length} events written to ${jsonFile}`);
}
