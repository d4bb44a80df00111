/**
 * A/B of two Sluice binaries under the intake load of bench-intake.ts. Both servers run at
 * once and take turns under wrk (A B, B A, A B, ...), so a slow or fast moment of this noisy
 * machine falls on both alike; a difference that does not show here is not worth code.
 *
 *   bun scripts/ab-intake.ts OLD NEW [--rounds 6] [--seconds 3] [--batch] [--record]
 *
 * A binary may carry environment settings for its process: `dist/sluice@SLUICE_X=1,Y=2`.
 * Reported per binary, as means over its rounds: events/s, p99, CPU µs per request of the
 * main thread and of the whole process (user + system, from /proc), and the largest RSS.
 * Build the old binary from a worktree: git worktree add /tmp/old HEAD && (cd /tmp/old && npm run build).
 * With --record the run goes into docs/benchmarks/ab-history.md and its line, as the latest
 * intake A/B, into BENCHMARKS.md.
 */
import { resolve } from "node:path";
import { INTAKE_BODIES, adminApi, balancedOrder, basicAuth, fmt, mean, median, numberArg, record, requireWrk, rssMb, startSluice, wrk } from "./bench-lib";

const args = process.argv.slice(2);
const rounds = numberArg("--rounds", 6);
const seconds = numberArg("--seconds", 3);
const batchMode = args.includes("--batch");
const WITH_VALUE = new Set(["--rounds", "--seconds"]);
const specs = args.filter((a, i) => !a.startsWith("--") && !WITH_VALUE.has(args[i - 1] ?? ""));
if (specs.length !== 2) {
  console.error("usage: bun scripts/ab-intake.ts OLD NEW [--rounds 6] [--seconds 3] [--batch] [--record]");
  process.exit(2);
}
requireWrk();

const { track, batch } = INTAKE_BODIES;

async function start(spec: string) {
  const [bin, envs] = spec.split("@");
  const env = envs ? Object.fromEntries(envs.split(",").map((kv) => kv.split("=") as [string, string])) : {};
  const p = await startSluice([], env, undefined, resolve(bin!));
  const src = await adminApi(p.url, "POST", "/v2/sources", { name: "ab" });
  const headers = { "content-type": "application/json", authorization: basicAuth(src.writeKey) };
  return { spec, ...p, headers, runs: [] as Array<{ events: number; p99: number; main: number; all: number; rss: number }> };
}

const servers = [await start(specs[0]!), await start(specs[1]!)];
for (const s of servers) wrk(`${s.url}/v1/track`, { body: track, headers: s.headers, connections: 16, seconds: 2 });
for (let r = 0; r < rounds; r++) {
  for (const s of balancedOrder(servers, r)) {
    const w = batchMode
      ? wrk(`${s.url}/v1/batch`, { body: batch, headers: s.headers, connections: 16, seconds, pid: s.pid })
      : wrk(`${s.url}/v1/track`, { body: track, headers: s.headers, connections: 64, seconds, pid: s.pid });
    s.runs.push({
      events: w.rps * (batchMode ? 100 : 1),
      p99: w.p99ms,
      main: w.mainCpuUs!,
      all: w.cpuUs!,
      rss: rssMb(s.pid).rss,
    });
  }
}
for (const s of servers) await s.stop();

const unit = batchMode ? "request of 100 events" : "call";
const rows = [
  `| Binary | events/s | p99 ms (mean) | p99 ms (median) | main-thread CPU µs per ${unit} | process CPU µs per ${unit} | RSS MB (max) |`,
  "| --- | --- | --- | --- | --- | --- | --- |",
  ...servers.map((s) => {
    const m = (k: "events" | "p99" | "main" | "all") => mean(s.runs.map((x) => x[k]));
    return `| ${s.spec} | ${fmt(m("events"))} | ${fmt(m("p99"), 2)} | ${fmt(median(s.runs.map((x) => x.p99)), 2)} | ${fmt(m("main"), 1)} | ${fmt(m("all"), 1)} | ${fmt(Math.max(...s.runs.map((x) => x.rss)))} |`;
  }),
  "",
  `${rounds} interleaved rounds of wrk ${seconds} s each per binary, ${batchMode ? "/v1/batch of 100 events at 16 connections" : "single track calls at 64 connections"}; means over the rounds, and the median p99 (one disturbed round moves the mean).`,
];
const [a, b] = servers as [(typeof servers)[number], (typeof servers)[number]];
const meanOf = (s: typeof a, k: "events" | "main") => mean(s.runs.map((x) => x[k]));
if (args.includes("--record"))
  await record({
    name: "ab-intake",
    doc: "ab-history",
    title: `Intake A/B${batchMode ? " (batch)" : ""}`,
    label: "Intake",
    command: `bun scripts/ab-intake.ts ${args.join(" ")}`,
    lines: rows,
    latest:
      `${a.spec} → ${b.spec}, ${batchMode ? "batches" : "single calls"}: ${fmt(meanOf(a, "events"))} → ${fmt(meanOf(b, "events"))} events/s, ` +
      `main-thread CPU ${fmt(meanOf(a, "main"), 1)} → ${fmt(meanOf(b, "main"), 1)} µs a ${unit}, p99 (median) ${fmt(median(a.runs.map((x) => x.p99)), 2)} → ${fmt(median(b.runs.map((x) => x.p99)), 2)} ms.`,
  });
else console.log(rows.join("\n"));
