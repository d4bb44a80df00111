/**
 * Sends published processor cases of one kind, in the order given, to a running rudder-transformer
 * and sets its answers beside the published outputs: whether RudderStack's own transformer gives a
 * case's published output for that case alone, or only after other cases ran in the same process
 * (kinds.ts, afterEarlierCases). A developer tool, like compare-rudderstack.ts; start the
 * transformer as CONTRIBUTING.md says, and a fresh one for each question, since what it keeps
 * between calls is the point.
 *
 *   npx bun scripts/replay-rudderstack.ts --transformer http://localhost:9090 [--rudder-transformer PATH]
 *       <kind> <case index> [<case index> ...] [--timestamps-now]
 *
 *   --timestamps-now  the inputs' timestamp, originalTimestamp and sentAt become the current time
 *                     (the transformer runs on the real clock; kinds that refuse old events, such
 *                     as FACEBOOK_PIXEL, would refuse every published case). The outputs are then
 *                     compared leaving out what those times give (see the header of the output).
 *
 * Shown per case: RudderStack's answer (status, error or event name and body), the published one,
 * and whether they are equal. FACEBOOK_PIXEL's 11 12 13 14, say, shows case 14 answered as
 * published only after 12 and 13; 14 alone gives "Viewed a page", as Sluice does.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { diffText, stable } from "./compare-rudderstack/compare";
import { FixtureCopy, installJestStandIn } from "./compare-rudderstack/fixtures";
import { folderOf, selectKinds } from "./compare-rudderstack/kinds";

const USAGE = "usage: npx bun scripts/replay-rudderstack.ts --transformer URL [--rudder-transformer PATH] <kind> <case index> [...] [--timestamps-now]";

function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

let transformer: string | undefined;
let checkout = resolve("../rudder-transformer");
let timestampsNow = false;
const positional: string[] = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!;
  const value = () => (a.includes("=") ? a.slice(a.indexOf("=") + 1) : (argv[++i] ?? fail(`${a} needs a value`)));
  if (a === "--transformer" || a.startsWith("--transformer=")) transformer = value().replace(/\/$/, "");
  else if (a === "--rudder-transformer" || a.startsWith("--rudder-transformer=")) checkout = resolve(value());
  else if (a === "--timestamps-now") timestampsNow = true;
  else if (a === "-h" || a === "--help") {
    console.log(USAGE);
    process.exit(0);
  } else if (a.startsWith("-")) fail(`unknown option ${a}`);
  else positional.push(a);
}
if (!transformer) fail("--transformer is required (the URL of a running rudder-transformer)");
if (!existsSync(join(checkout, "test/integrations/destinations"))) fail(`${checkout} is not a rudder-transformer checkout`);
const [kindName, ...indexTexts] = positional;
if (!kindName || indexTexts.length === 0) fail("name a kind and at least one case index");
const indexes = indexTexts.map((t) => {
  const n = Number(t);
  if (!Number.isInteger(n) || n < 0) fail(`${t} is not a case index`);
  return n;
});
const [def] = selectKinds([kindName], fail);
const folder = folderOf(def!.name);

/** Keys whose values the inputs' times give (left out when --timestamps-now moved them). */
const FROM_TIMES = new Set(["event_time", "timestamp", "time", "$time", "originalTimestamp", "sentAt", "createdAt"]);

/** One output as compared: status, error, and the body with JSON-in-text parsed (FACEBOOK_PIXEL's form data). */
function shown(o: any): unknown {
  const parse = (v: unknown): unknown => {
    if (typeof v === "string" && /^[[{]/.test(v)) {
      try {
        return parse(JSON.parse(v));
      } catch {
        return v;
      }
    }
    if (Array.isArray(v)) return v.map(parse);
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).filter(([k]) => !(timestampsNow && FROM_TIMES.has(k))).map(([k, x]) => [k, parse(x)]));
    return v;
  };
  return { statusCode: o?.statusCode, error: o?.error, body: parse(o?.output?.body), endpoint: o?.output?.endpoint };
}

installJestStandIn();
const fixtures = new FixtureCopy(checkout);
try {
  if (!fixtures.addDestination(folder)) fail(`RudderStack publishes no cases for ${def!.name}`);
  const cases = (await fixtures.cases(folder, "processor")) ?? fail(`RudderStack publishes no processor cases for ${def!.name}`);
  const now = new Date().toISOString();
  for (const index of indexes) {
    const tc = cases[index] ?? fail(`there is no processor case ${index} (${cases.length} cases)`);
    const inputs = structuredClone(tc.input.request.body) as any[];
    if (timestampsNow) for (const input of inputs) for (const k of ["timestamp", "originalTimestamp", "sentAt"]) if (input.message?.[k]) input.message[k] = now;
    const res = await fetch(`${transformer}/v0/destinations/${folder}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(inputs) });
    const text = await res.text();
    let answer: any[];
    try {
      answer = JSON.parse(text);
    } catch {
      fail(`the transformer answered HTTP ${res.status}, not JSON: ${text.slice(0, 200)}`);
    }
    const theirs = (Array.isArray(answer) ? answer : [answer]).map(shown);
    const published = (tc.output.response.body as any[]).map(shown);
    const equal = stable(theirs) === stable(published);
    console.log(`#${index} ${tc.id ?? ""} ${String(tc.description ?? "").trim()}`);
    console.log(`   ${equal ? "as published" : "differs from the published output:"}`);
    if (!equal) for (const d of diffText(theirs, published).slice(0, 8)) console.log(`     ${d.replace("ours=", "transformer=").replace("theirs=", "published=")}`);
  }
} finally {
  fixtures.remove();
}
