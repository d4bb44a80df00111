/**
 * Intake benchmark: the compiled binary under load from wrk (a separate process) on
 * 127.0.0.1 with keep-alive connections, against a bare Bun.serve that answers OK
 * without storing, in the same run. Writes the figures into BENCHMARKS.md.
 *
 *   npm run bench:intake [-- --seconds 10 --build --regulations N --full-only --no-record]
 */
import { BINARY, INTAKE_BODIES, adminApi, ensureBinary, fmt, record, requireWrk, rssMb, startProcess, startSluice, wrk } from "./bench-lib";
import { join } from "node:path";

const args = process.argv.slice(2);
const seconds = Number(args[args.indexOf("--seconds") + 1] || 10);
const regulations = Number(args[args.indexOf("--regulations") + 1] || 0);

requireWrk();
await ensureBinary();

const { track, batch } = INTAKE_BODIES;

async function measure(url: string, auth: string, pid: number) {
  const headers = { "content-type": "application/json", authorization: auth };
  // A short warm-up so JIT and page cache do not count against the first figure.
  wrk(`${url}/v1/track`, { body: track, headers, connections: 16, seconds: 2 });
  const single = wrk(`${url}/v1/track`, { body: track, headers, connections: 64, seconds, pid });
  const batched = wrk(`${url}/v1/batch`, { body: batch, headers, connections: 16, seconds, pid });
  return { single, batched };
}

const rows: string[] = [];
const bare = await startProcess([process.execPath, join(import.meta.dir, "bare-server.ts"), "--port", "0"]);
const base = await measure(bare.url, "Basic eDo=", bare.pid);
await bare.stop();

const variants: Array<{ name: string; args: string[]; regs?: number }> = [
  { name: "Sluice, sync FULL (default)", args: [] },
  { name: "Sluice, sync NORMAL", args: ["--sync", "NORMAL"] },
];
if (args.includes("--full-only")) variants.pop();
if (regulations) variants.push({ name: `Sluice, sync FULL, ${fmt(regulations)} active regulations`, args: [], regs: regulations });

rows.push("| Server | single calls/s (64 conn) | ratio to bare | p50 ms | p99 ms | p99 ratio | CPU µs per call | batch events/s (100/req, 16 conn) | CPU µs per batch event | RSS MB (peak) | non-2xx |");
rows.push("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
rows.push(`| bare Bun.serve (reads body, answers OK) | ${fmt(base.single.rps)} | 1.00 | ${fmt(base.single.p50ms, 2)} | ${fmt(base.single.p99ms, 2)} | 1.00 | ${fmt(base.single.cpuUs ?? NaN, 1)} | ${fmt(base.batched.rps * 100)} | ${fmt((base.batched.cpuUs ?? NaN) / 100, 2)} | | ${base.single.non2xx + base.batched.non2xx} |`);

for (const v of variants) {
  let s = await startSluice(v.args);
  const src = await adminApi(s.url, "POST", "/v2/sources", { name: "bench" });
  if (v.regs) {
    // The suppression index loads at start: seed while stopped, then start again on the same data.
    await s.stop(true);
    const { seedRegulations } = await import("../src/regulations/seed");
    seedRegulations(s.dir, v.regs);
    s = await startSluice(v.args, {}, s.dir);
  }
  const auth = `Basic ${btoa(`${src.writeKey}:`)}`;
  const r = await measure(s.url, auth, s.pid);
  const mem = rssMb(s.pid);
  const stored = await fetch(`${s.url}/metrics`).then((x) => x.text());
  const accepted = [...stored.matchAll(/sluice_events_accepted_total\{[^}]*\} (\d+)/g)].reduce((a, m) => a + Number(m[1]), 0);
  rows.push(
    `| ${v.name} | ${fmt(r.single.rps)} | ${fmt(r.single.rps / base.single.rps, 2)} | ${fmt(r.single.p50ms, 2)} | ${fmt(r.single.p99ms, 2)} | ${fmt(r.single.p99ms / base.single.p99ms, 2)} | ${fmt(r.single.cpuUs ?? NaN, 1)} | ${fmt(r.batched.rps * 100)} | ${fmt((r.batched.cpuUs ?? NaN) / 100, 2)} | ${fmt(mem.rss)} (${fmt(mem.peak)}) | ${r.single.non2xx + r.batched.non2xx} |`,
  );
  console.log(`${v.name}: stored ${accepted} events`);
  await s.stop();
}

rows.push("");
rows.push(`wrk ${seconds} s per figure, 2 threads; single call = one track event (~200 B); batch = 100 track events per request. Each event carries its own messageId, unique per request (wrk substitutes it), as SDKs send them, so deduplication is in every figure. CPU µs = user + system time of the server process (all threads) over the run, divided by the requests wrk completed (steadier than rates on a shared machine). Targets: single ≥ 0.70 of bare, p99 ≤ 1.5× bare, batch ≥ 200,000 events/s, RSS ≤ 150 MB.`);
await record("Intake", `npm run bench:intake -- --seconds ${seconds}${regulations ? ` --regulations ${regulations}` : ""}`, rows);
