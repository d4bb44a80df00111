/**
 * Soak: the compiled binary under steady load for a long time, to see that memory, delivery
 * lag and the database stay flat. Single track calls from a separate process (wrk when
 * installed, else a Bun process) go through intake, a user transformation and delivery to a
 * local webhook sink, at half the capacity measured first on a throwaway server (a burst,
 * timed until the sink has every event), unless --rate says the rate. Retention is short, so
 * it runs during the soak and the database should stop growing within the warm-up.
 *
 * Each minute: the server's RSS (/proc) and JavaScript heap (/metrics), the database and WAL
 * sizes, the age of the oldest stored event, delivery lag (receivedAt → arrival at the sink,
 * p50/p99 over the minute), events in and delivered. At the end: docs/soak.png, the run in
 * docs/benchmarks/soak.md and its line in BENCHMARKS.md, with the goals after warm-up: RSS and
 * lag flat within 10%, the database bounded by retention.
 *
 *   npm run soak [-- --minutes 60 --rate N --warmup-minutes 5 --retention-minutes 2 --load wrk|bun --no-record --build]
 *   npm run soak -- --minutes 2 --smoke   (CI: checks the loop end to end, writes no figures; exits 1 on failure)
 */
import { Database } from "bun:sqlite";
import { rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { adminApi, BINARY, basicAuth, cpuTimeUs, ensureBinary, fmt, gitHead, machine, mean, numberArg, ROOT, rssMb, startProcess, startSluice, writeRun } from "./bench-lib";
import { CHROMIUM, renderPng } from "./lib/chromium";
import { chartPageHtml } from "./lib/line-charts";
import { type LoadRun, type LoadSummary, type LoadTarget, type LoadTool, pacedConnections, startLoad, USERS } from "./lib/soak-load";

const argv = process.argv.slice(2);
const smoke = argv.includes("--smoke");
const noRecord = smoke || argv.includes("--no-record");
const minutes = numberArg("--minutes", 60);
const warmupMinutes = numberArg("--warmup-minutes", Math.min(5, minutes / 2));
// Shorter than the warm-up, so the database has reached its size when the goals are judged.
const retentionMinutes = numberArg("--retention-minutes", Math.min(2, minutes / 4));
const sampleSeconds = numberArg("--sample-seconds", 60);
const burstSeconds = numberArg("--burst-seconds", smoke ? 5 : 10);
const fixedRate = numberArg("--rate", 0);
const loadArg = argv.includes("--load") ? argv[argv.indexOf("--load") + 1] : undefined;
if (loadArg !== undefined && loadArg !== "wrk" && loadArg !== "bun") {
  console.error(`--load takes wrk or bun, got '${loadArg}'`);
  process.exit(2);
}
if (loadArg === "wrk" && !Bun.which("wrk")) {
  console.error("--load wrk: wrk is not installed (apt-get install wrk), or leave --load out to use the Bun load process");
  process.exit(2);
}
// The chart is drawn at the end: a missing Chromium must stop the run before its hour, not after.
if (!noRecord && !(await Bun.file(CHROMIUM).exists())) {
  console.error(`the chart needs Chromium at ${CHROMIUM} (apt-get install chromium, or CHROMIUM_PATH); or run with --no-record`);
  process.exit(2);
}
const tool: LoadTool = (loadArg as LoadTool | undefined) ?? (Bun.which("wrk") ? "wrk" : "bun");

/** One user in a hundred is dropped by the transformation, the rest get a property: both prove it ran. */
const TRANSFORMATION = `export function transformEvent(event, metadata) {
  if (event.userId === "soak-user-0") return null;
  return { ...event, properties: { ...event.properties, soakTransformed: true } };
}`;
const serverArgs = ["--retention-hours", String(retentionMinutes / 60)];

interface Counts {
  accepted: number;
  succeeded: number;
  filtered: number;
  heapBytes: number;
}

/** Sums a metric's series in Prometheus text, optionally only those whose labels contain `having`. */
function metricSum(text: string, name: string, having = ""): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name) || (line[name.length] !== "{" && line[name.length] !== " ")) continue;
    if (having && !line.includes(having)) continue;
    sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}

async function counts(url: string): Promise<Counts> {
  const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
  return {
    accepted: metricSum(text, "sluice_events_accepted_total"),
    succeeded: metricSum(text, "sluice_deliveries_total", 'outcome="succeeded"'),
    filtered: metricSum(text, "sluice_deliveries_total", 'outcome="filtered"'),
    heapBytes: metricSum(text, "sluice_js_heap_bytes"),
  };
}

async function pollUntil(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await Bun.sleep(100);
  }
}

// Whatever way this process ends, the servers and the load it started end with it.
const children = new Set<number>();
const dataDirs = new Set<string>();
let runningLoad: LoadRun | undefined;
process.on("exit", () => {
  runningLoad?.kill();
  for (const pid of children) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {} // already gone
  }
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
});
const sink = await startProcess([process.execPath, join(import.meta.dir, "bare-server.ts"), "--port", "0", "--sink"]);
children.add(sink.pid);
const sinkWindow = async () => {
  // Stats then reset: the few arrivals between the two calls are missed by both (the counts
  // that matter come from Sluice's /metrics).
  const stats = (await (await fetch(`${sink.url}/__stats`)).json()) as { count: number; p50: number; p99: number };
  await fetch(`${sink.url}/__reset`);
  return stats;
};

/** A source, a webhook destination to the sink, and the transformation on it. */
async function configure(url: string): Promise<LoadTarget> {
  const src = await adminApi(url, "POST", "/v2/sources", { name: "soak" });
  const dst = await adminApi(url, "POST", "/v2/destinations", { name: "sink", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/hook` }, sourceIds: [src.id] });
  await adminApi(url, "POST", "/v2/transformations", { name: "soak", code: TRANSFORMATION, destinationIds: [dst.id] });
  return { url: `${url}/v1/track`, auth: basicAuth(src.writeKey) };
}

const settled = (c: Counts) => c.succeeded + c.filtered;

/**
 * Events a second the whole path sustains: a burst of unpaced calls into a fresh server,
 * timed from its first call until every event has been delivered (or dropped by the
 * transformation), so intake and delivery share the CPU as they do in the soak.
 */
async function measureCapacity(): Promise<{ rate: number; accepted: number; seconds: number }> {
  const s = await startSluice(serverArgs);
  children.add(s.pid);
  dataDirs.add(s.dir);
  try {
    const target = await configure(s.url);
    const started = performance.now();
    runningLoad = startLoad(tool, target, { rate: 0, seconds: burstSeconds, connections: 16 });
    const load: LoadSummary = await runningLoad.done;
    runningLoad = undefined;
    if (load.non2xx || load.errors) throw new Error(`capacity burst: ${load.non2xx} answers other than 2xx and ${load.errors} connection errors`);
    const { accepted } = await counts(s.url);
    const limitMs = smoke ? 120_000 : 600_000;
    if (!(await pollUntil(async () => settled(await counts(s.url)) >= accepted, limitMs))) throw new Error(`capacity burst: not delivered within ${limitMs / 60_000} minutes`);
    const seconds = (performance.now() - started) / 1000;
    return { rate: accepted / seconds, accepted, seconds };
  } finally {
    await s.stop();
    children.delete(s.pid);
    dataDirs.delete(s.dir);
  }
}

interface Sample {
  /** Minutes since the load started, at the end of the interval. */
  t: number;
  rssMb: number;
  peakMb: number;
  heapMb: number;
  dbMb: number;
  walMb: number;
  lagP50: number;
  lagP99: number;
  /** Arrivals at the sink that the lag figures cover. */
  lagCount: number;
  inPerS: number;
  deliveredPerS: number;
  /** Accepted, not yet delivered or dropped. */
  backlog: number;
  /** Age of the oldest stored event: retention at work keeps it near the retention window. */
  oldestS: number;
  /** Server CPU over the interval, % of one core. */
  cpuPct: number;
}

const mb = (bytes: number) => bytes / 1048576;
const fileMb = (dir: string, name: string) => {
  try {
    return mb(statSync(join(dir, name)).size);
  } catch {
    return 0;
  }
};
function oldestEventAgeS(dir: string): number {
  try {
    const db = new Database(join(dir, "sluice.db"), { readonly: true });
    try {
      const row = db.query("SELECT received_at AS r FROM events ORDER BY id LIMIT 1").get() as { r: number } | null;
      return row ? (Date.now() - row.r) / 1000 : 0;
    } finally {
      db.close();
    }
  } catch {
    return NaN;
  }
}

// ---------------------------------------------------------------------------------------

await ensureBinary();
let capacity: Awaited<ReturnType<typeof measureCapacity>> | undefined;
if (!fixedRate) {
  console.log(`capacity: a ${burstSeconds} s burst of unpaced track calls (${tool}, 16 connections) into a fresh server...`);
  capacity = await measureCapacity();
  console.log(`capacity: ${fmt(capacity.accepted)} events through in ${fmt(capacity.seconds, 1)} s = ${fmt(capacity.rate)} events/s`);
}
const rate = Math.max(1, Math.round(fixedRate || capacity!.rate / 2));
const totalSamples = Math.max(1, Math.round((minutes * 60) / sampleSeconds));

const s = await startSluice(serverArgs);
children.add(s.pid);
dataDirs.add(s.dir);
const target = await configure(s.url);
await sinkWindow();
console.log(`soak: ${minutes} min at ${fmt(rate)} events/s (${tool}, ${pacedConnections(rate)} connections), retention ${retentionMinutes} min, warm-up ${warmupMinutes} min, data dir ${s.dir}`);

const samples: Sample[] = [];
let crashed: string | undefined;
let loadFailed: string | undefined;
const started = performance.now();
const load = startLoad(tool, target, { rate, seconds: minutes * 60, connections: pacedConnections(rate) });
runningLoad = load;
load.done.catch((err) => (loadFailed = String(err)));
let prev: Counts = { accepted: 0, succeeded: 0, filtered: 0, heapBytes: 0 };
let prevCpu = cpuTimeUs(s.pid);
let prevAt = started;
let sinkTotal = 0;
for (let k = 1; k <= totalSamples && !loadFailed; k++) {
  const at = started + k * sampleSeconds * 1000;
  while (performance.now() < at) await Bun.sleep(Math.min(1000, at - performance.now())); // the sampling interval
  let c: Counts;
  try {
    c = await counts(s.url);
  } catch (err) {
    crashed = `Sluice did not answer /metrics at minute ${fmt((k * sampleSeconds) / 60, 1)}: ${err}`;
    break;
  }
  const now = performance.now();
  const secs = (now - prevAt) / 1000;
  const lag = await sinkWindow();
  sinkTotal += lag.count;
  let cpu = NaN;
  try {
    cpu = cpuTimeUs(s.pid);
  } catch {} // the process is gone: the next /metrics call reports it
  const mem = rssMb(s.pid);
  const sample: Sample = {
    t: (k * sampleSeconds) / 60,
    rssMb: mem.rss,
    peakMb: mem.peak,
    heapMb: mb(c.heapBytes),
    dbMb: fileMb(s.dir, "sluice.db"),
    walMb: fileMb(s.dir, "sluice.db-wal"),
    lagP50: lag.p50,
    lagP99: lag.p99,
    lagCount: lag.count,
    inPerS: (c.accepted - prev.accepted) / secs,
    deliveredPerS: (c.succeeded - prev.succeeded) / secs,
    backlog: c.accepted - settled(c),
    oldestS: oldestEventAgeS(s.dir),
    cpuPct: ((cpu - prevCpu) / 1e6 / secs) * 100,
  };
  samples.push(sample);
  prev = c;
  prevCpu = cpu;
  prevAt = now;
  console.log(
    `t=${fmt(sample.t, 1)} min  RSS ${fmt(sample.rssMb)} MB  heap ${fmt(sample.heapMb)} MB  db ${fmt(sample.dbMb, 1)} + WAL ${fmt(sample.walMb, 1)} MB  ` +
      `lag p50 ${fmt(sample.lagP50)} p99 ${fmt(sample.lagP99)} ms  in ${fmt(sample.inPerS)}/s  delivered ${fmt(sample.deliveredPerS)}/s  backlog ${fmt(sample.backlog)}  ` +
      `oldest event ${fmt(sample.oldestS)} s  CPU ${fmt(sample.cpuPct)}%`,
  );
}
const loadSummary = await (crashed ? load.stop() : load.done).catch(() => undefined);
// Once the load has stopped, everything accepted must come out: delivered, or dropped by the transformation.
let final: Counts | undefined;
let drainedSeconds = NaN;
if (!crashed) {
  const drainStart = performance.now();
  const drained = await pollUntil(async () => settled((final = await counts(s.url))) >= final.accepted, 120_000).catch(() => false);
  if (drained) drainedSeconds = (performance.now() - drainStart) / 1000;
  sinkTotal += (await sinkWindow()).count;
}
runningLoad = undefined;
await s.stop();
await sink.stop();
children.clear();
dataDirs.clear();

// ---------------------------------------------------------------------------------------

if (smoke) {
  const results: Array<[string, boolean, string]> = [];
  const check = (name: string, ok: boolean, detail = "") => results.push([name, ok, detail]);
  if (capacity) check("capacity measured", capacity.rate > 0, `${fmt(capacity.rate)} events/s`);
  check("the server answered throughout (no crash)", !crashed, crashed ?? "");
  check("the load process ran and got only 2xx answers", !loadFailed && !!loadSummary && !loadSummary.non2xx && !loadSummary.errors, loadFailed ?? JSON.stringify(loadSummary));
  check(`${totalSamples} samples taken`, samples.length === totalSamples, `${samples.length}`);
  check("events accepted in every interval", samples.length > 0 && samples.every((x) => x.inPerS > 0));
  check("events delivered in every interval", samples.length > 0 && samples.every((x) => x.deliveredPerS > 0));
  check("RSS, heap and file sizes sampled", samples.length > 0 && samples.every((x) => x.rssMb > 0 && x.heapMb > 0 && x.dbMb > 0));
  check("lag measured at the sink in every interval", samples.length > 0 && samples.every((x) => x.lagCount > 0 && Number.isFinite(x.lagP99)));
  check("every accepted event delivered or dropped after the load stopped", Number.isFinite(drainedSeconds), final ? JSON.stringify(final) : "");
  // soak-user-0's events (1 in USERS) are the ones the transformation drops.
  const droppedShare = final ? final.filtered / final.accepted : 0;
  check("the transformation ran (it dropped the one user in a hundred)", Math.abs(droppedShare - 1 / USERS) < 0.5 / USERS, `${fmt(droppedShare * 100, 2)}% dropped`);
  check("the sink received the delivered events", !!final && sinkTotal >= final.succeeded * 0.99 && sinkTotal <= final.succeeded, `${fmt(sinkTotal)} of ${fmt(final?.succeeded ?? 0)}`);
  const last = samples[samples.length - 1];
  check("retention ran (oldest stored event within twice the retention window)", !!last && last.oldestS <= retentionMinutes * 120 + 10, last ? `${fmt(last.oldestS)} s` : "");
  for (const [name, ok, detail] of results) console.log(`${ok ? "ok" : "FAILED"}: ${name}${detail ? ` (${detail})` : ""}`);
  const failed = results.filter((r) => !r[1]).length;
  console.log(failed ? `soak smoke: ${failed} check(s) failed` : "soak smoke: all checks passed");
  process.exit(failed ? 1 : 0);
}

if (crashed || loadFailed) {
  console.error(crashed ?? `the load failed: ${loadFailed}`);
  process.exit(1);
}

// The goals, after warm-up: the mean of the first three samples against the last three.
const after = samples.filter((x) => x.t > warmupMinutes + 1e-9);
const k = Math.max(1, Math.min(3, Math.floor(after.length / 3)));
const firstOf = (f: (x: Sample) => number) => mean(after.slice(0, k).map(f));
const lastOf = (f: (x: Sample) => number) => mean(after.slice(-k).map(f));
const change = (f: (x: Sample) => number) => lastOf(f) / firstOf(f) - 1;
const judged = after.length >= 2;
// Lag is counted in whole milliseconds at the sink: below 10 ms, 10% is under its resolution.
const LAG_FLOOR_MS = 2;
const rssFlat = judged && Math.abs(change((x) => x.rssMb)) <= 0.1;
const lagFlat = judged && (Math.abs(change((x) => x.lagP50)) <= 0.1 || Math.abs(lastOf((x) => x.lagP50) - firstOf((x) => x.lagP50)) <= LAG_FLOOR_MS);
const dbOf = (x: Sample) => x.dbMb + x.walMb;
const maxDb = Math.max(...samples.map(dbOf));
const retentionS = retentionMinutes * 60;
// Bounded: no growth after warm-up beyond 10%, and the oldest event never much older than the window.
const oldestMax = Math.max(...after.map((x) => x.oldestS));
const dbBounded = judged && change(dbOf) <= 0.1 && oldestMax <= retentionS + Math.max(60, retentionS / 5);
/** The verdict; when not met, whether the figure rose or fell (a fall is no leak, but not flat either). */
const verdict = (ok: boolean, f?: (x: Sample) => number) =>
  !judged ? "not judged (too few samples after warm-up)" : ok ? "**met**" : `**not met**${f ? ` (${change(f) > 0 ? "rose" : "fell"} ${fmt(Math.abs(change(f)) * 100, 0)}%)` : ""}`;

/** Minutes as whole numbers when they are (the usual one-minute samples), else to a tenth. */
const fmtMin = (m: number) => fmt(m, Number.isInteger(Math.round(m * 1000) / 1000) ? 0 : 1);
const minutesOf = (xs: Sample[]) => (xs.length ? `${fmtMin(xs[0]!.t - sampleSeconds / 60)}–${fmtMin(xs[xs.length - 1]!.t)}` : "");
const commit = gitHead();
// The binary may be older than the commit (ensureBinary builds only when it is missing, or with --build).
const binaryBuilt = `${statSync(BINARY).mtime.toISOString().slice(0, 16).replace("T", " ")} UTC`;
const shownArgs = argv.filter((a) => a !== "--build");
const command = `npm run soak${shownArgs.length ? ` -- ${shownArgs.join(" ")}` : ""}`;
const meanIn = mean(samples.map((x) => x.inPerS));
const row = (name: string, f: (x: Sample) => number, digits: number, goal: string) =>
  `| ${name} | ${fmt(firstOf(f), digits)} | ${fmt(lastOf(f), digits)} | ${judged ? `${change(f) >= 0 ? "+" : ""}${fmt(change(f) * 100, 1)}%` : ""} | ${goal} |`;
// A summary, not the whole series: about eight rows (the chart has every minute).
const step = Math.max(1, Math.ceil(samples.length / 8));
const shown = samples.filter((_, i) => (i + 1) % step === 0 || i === 0 || i === samples.length - 1);
const lines = [
  `Command: \`${command}\` (commit ${commit}; dist/sluice built ${binaryBuilt}). ${fmtMin(minutes)} min, sampled every ${fmt(sampleSeconds)} s; chart: [docs/soak.png](../soak.png). Machine: ${machine()}.`,
  "",
  `Rate: ${fmt(rate)} events/s asked, ${fmt(meanIn)} accepted on average: ${
    capacity ? `half the measured capacity of ${fmt(capacity.rate)} events/s (a ${burstSeconds} s burst of unpaced single calls, ${fmt(capacity.accepted)} events through in ${fmt(capacity.seconds, 1)} s)` : "set with --rate"
  }. Load: ${tool === "wrk" ? "wrk" : "a Bun process"}, single track calls of ~400 B over ${USERS} users, ${pacedConnections(rate)} connections, each with its own messageId; a transformEvent drops one user in a hundred and adds a property to the rest; one webhook destination on a local sink (127.0.0.1). Retention ${fmt(retentionMinutes, 1)} min (\`--retention-hours ${fmt(retentionMinutes / 60, 4)}\`); warm-up ${fmt(warmupMinutes, 1)} min. Requests: ${fmt(loadSummary?.requests ?? 0)}, non-2xx ${fmt(loadSummary?.non2xx ?? 0)}, connection errors ${fmt(loadSummary?.errors ?? 0)}; once the load stopped, what was still queued was delivered within ${fmt(drainedSeconds, 1)} s.`,
  "",
  `| After warm-up | first (minutes ${minutesOf(after.slice(0, k))}) | last (minutes ${minutesOf(after.slice(-k))}) | change | goal |`,
  "| --- | --- | --- | --- | --- |",
  row("RSS MB", (x) => x.rssMb, 0, `flat within 10%: ${verdict(rssFlat, (x) => x.rssMb)}`),
  row("JavaScript heap MB (main thread)", (x) => x.heapMb, 0, "reported"),
  row("delivery lag p50 ms", (x) => x.lagP50, 1, `flat within 10% (or ${LAG_FLOOR_MS} ms): ${verdict(lagFlat, (x) => x.lagP50)}`),
  row("delivery lag p99 ms", (x) => x.lagP99, 1, "reported"),
  row("database + WAL MB", dbOf, 1, `bounded by retention (no growth beyond 10%, oldest event ≤ ${fmt(oldestMax)} s): ${verdict(dbBounded)}`),
  "",
  `Largest database + WAL: ${fmt(maxDb, 1)} MB. Peak RSS: ${fmt(Math.max(...samples.map((x) => x.peakMb)))} MB. Lag is counted in whole milliseconds at the sink; delivered/s leaves out the events the transformation drops.`,
  "",
  "| minute | RSS MB | heap MB | db MB | WAL MB | lag p50 ms | lag p99 ms | in/s | delivered/s | oldest event s | CPU % |",
  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ...shown.map(
    (x) =>
      `| ${fmtMin(x.t)} | ${fmt(x.rssMb)} | ${fmt(x.heapMb)} | ${fmt(x.dbMb, 1)} | ${fmt(x.walMb, 1)} | ${fmt(x.lagP50)} | ${fmt(x.lagP99)} | ${fmt(x.inPerS)} | ${fmt(x.deliveredPerS)} | ${fmt(x.oldestS)} | ${fmt(x.cpuPct)} |`,
  ),
  "",
  `Goals after warm-up (${k > 1 ? `the mean of the first ${k} samples against that of the last ${k}` : "the first sample against the last"}): RSS flat within 10% — ${verdict(rssFlat, (x) => x.rssMb)}; delivery lag (p50) flat within 10% — ${verdict(lagFlat, (x) => x.lagP50)}; database size bounded by retention — ${verdict(dbBounded)}.`,
];
console.log(`\n${lines.join("\n")}\n`);
for (const x of samples) console.log(JSON.stringify(x));

if (noRecord) process.exit(0);

const x = samples.map((v) => v.t);
const html = chartPageHtml({
  title: `Sluice soak: ${fmtMin(minutes)} min at ${fmt(rate)} events/s`,
  subtitle: `${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, commit ${commit}. ${capacity ? `Half the measured capacity (${fmt(capacity.rate)} events/s). ` : ""}Intake → transformEvent → webhook on 127.0.0.1; retention ${fmt(retentionMinutes, 1)} min; shaded: warm-up.`,
  x,
  xLabel: "minutes",
  shade: { until: warmupMinutes, label: "warm-up" },
  columns: 3,
  panelWidth: 400,
  panelHeight: 270,
  panels: [
    { title: "Memory", unit: "MB", series: [{ name: "RSS", color: "#1f77b4", values: samples.map((v) => v.rssMb) }, { name: "JS heap", color: "#ff7f0e", values: samples.map((v) => v.heapMb) }] },
    {
      title: "Database",
      unit: "MB",
      series: [
        { name: "db + WAL", color: "#2ca02c", values: samples.map(dbOf) },
        { name: "db", color: "#17becf", values: samples.map((v) => v.dbMb) },
        { name: "WAL", color: "#9467bd", values: samples.map((v) => v.walMb) },
      ],
    },
    { title: "Throughput", unit: "events/s", series: [{ name: "in", color: "#7f7f7f", values: samples.map((v) => v.inPerS) }, { name: "delivered", color: "#2ca02c", values: samples.map((v) => v.deliveredPerS) }] },
    // p50 and p99 apart: on one scale the p99's swings flatten the p50, which the goal is about.
    { title: "Delivery lag p50", unit: "ms, receivedAt → sink", series: [{ name: "p50", color: "#1f77b4", values: samples.map((v) => v.lagP50) }] },
    { title: "Delivery lag p99", unit: "ms", series: [{ name: "p99", color: "#d62728", values: samples.map((v) => v.lagP99) }] },
    { title: "Oldest stored event", unit: "s; retention " + fmt(retentionS) + " s", series: [{ name: "age", color: "#8c564b", values: samples.map((v) => v.oldestS) }] },
  ],
});
const rssOf = (x: Sample) => x.rssMb;
const lagOf = (x: Sample) => x.lagP50;
writeRun({
  name: "soak",
  title: "Soak",
  body: lines.join("\n"),
  commit,
  latest:
    `${fmtMin(minutes)} min at ${fmt(meanIn)} events/s: RSS ${fmt(firstOf(rssOf))} → ${fmt(lastOf(rssOf))} MB (${verdict(rssFlat, rssOf)}), ` +
    `delivery lag p50 ${fmt(firstOf(lagOf), 1)} → ${fmt(lastOf(lagOf), 1)} ms (${verdict(lagFlat, lagOf)}), database + WAL ${fmt(firstOf(dbOf), 1)} → ${fmt(lastOf(dbOf), 1)} MB (${verdict(dbBounded)}); peak RSS ${fmt(Math.max(...samples.map((x) => x.peakMb)))} MB.`,
});
await renderPng(html, join(ROOT, "docs", "soak.png"), { width: 3 * 400 + 32, height: 640 });
console.log("wrote docs/soak.png, docs/benchmarks/soak.md and the soak's line in BENCHMARKS.md");
