/**
 * Intake benchmark: the compiled binary under load from wrk (a separate process) on
 * 127.0.0.1 with keep-alive connections, against a bare Bun.serve that answers OK
 * without storing, in the same run. Writes the figures into BENCHMARKS.md.
 *
 *   npm run bench:intake [-- --seconds 10 --build --regulations N --full-only --no-record]
 */
import { BINARY, INTAKE_BODIES, adminApi, basicAuth, ensureBinary, fmt, mean, numberArg, record, requireWrk, rssMb, startProcess, startSluice, wrk } from "./bench-lib";
import { join } from "node:path";

const args = process.argv.slice(2);
const seconds = numberArg("--seconds", 10);
const regulations = numberArg("--regulations", 0);

requireWrk();
await ensureBinary();

const { track, batch } = INTAKE_BODIES;
/**
 * The same events without a messageId: Sluice makes one and skips deduplication for them.
 * The unique value moves to a `requestId` field, so wrk still makes a body per request and
 * the load costs the machine the same.
 */
const withoutIds = (body: string) => body.replaceAll('"messageId":', '"requestId":');

async function measure(url: string, auth: string, pid: number, bodies = { track, batch }) {
  const headers = { "content-type": "application/json", authorization: auth };
  // A short warm-up so JIT and page cache do not count against the first figure.
  wrk(`${url}/v1/track`, { body: bodies.track, headers, connections: 16, seconds: 2 });
  const single = wrk(`${url}/v1/track`, { body: bodies.track, headers, connections: 64, seconds, pid });
  const batched = wrk(`${url}/v1/batch`, { body: bodies.batch, headers, connections: 16, seconds, pid });
  // Memory before the extra batch run, so the RSS column counts the same events as before it.
  const mem = rssMb(pid);
  // With FULL, 16 connections may be bound by the commit–fsync cycle rather than by CPU:
  // more requests in flight show which.
  const batched64 = wrk(`${url}/v1/batch`, { body: bodies.batch, headers, connections: 64, seconds, pid });
  return { single, batched, batched64, mem, memEnd: rssMb(pid) };
}

const rows: string[] = [];
const bare = await startProcess([process.execPath, join(import.meta.dir, "bare-server.ts"), "--port", "0"]);
const base = await measure(bare.url, "Basic eDo=", bare.pid);
await bare.stop();

const variants: Array<{ name: string; args: string[]; regs?: number }> = [{ name: "Sluice, sync FULL (default)", args: [] }];
if (!args.includes("--full-only")) variants.push({ name: "Sluice, sync NORMAL", args: ["--sync", "NORMAL"] });
if (regulations) variants.push({ name: `Sluice, sync FULL, ${fmt(regulations)} active regulations`, args: [], regs: regulations });

rows.push("| Server | single calls/s (64 conn) | ratio to bare | p50 ms | p99 ms | p99 ratio | CPU µs per call | batch events/s (100/req, 16 conn) | CPU µs per batch event | batch events/s (64 conn) | RSS MB (peak) | RSS MB at the end (peak) | non-2xx |");
rows.push("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
rows.push(`| bare Bun.serve (reads body, answers OK) | ${fmt(base.single.rps)} | 1.00 | ${fmt(base.single.p50ms, 2)} | ${fmt(base.single.p99ms, 2)} | 1.00 | ${fmt(base.single.cpuUs ?? NaN, 1)} | ${fmt(base.batched.rps * 100)} | ${fmt((base.batched.cpuUs ?? NaN) / 100, 2)} | ${fmt(base.batched64.rps * 100)} | | | ${base.single.non2xx + base.batched.non2xx + base.batched64.non2xx} |`);

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
  const auth = basicAuth(src.writeKey);
  const r = await measure(s.url, auth, s.pid);
  const mem = r.mem;
  const stored = await fetch(`${s.url}/metrics`).then((x) => x.text());
  const accepted = [...stored.matchAll(/sluice_events_accepted_total\{[^}]*\} (\d+)/g)].reduce((a, m) => a + Number(m[1]), 0);
  rows.push(
    `| ${v.name} | ${fmt(r.single.rps)} | ${fmt(r.single.rps / base.single.rps, 2)} | ${fmt(r.single.p50ms, 2)} | ${fmt(r.single.p99ms, 2)} | ${fmt(r.single.p99ms / base.single.p99ms, 2)} | ${fmt(r.single.cpuUs ?? NaN, 1)} | ${fmt(r.batched.rps * 100)} | ${fmt((r.batched.cpuUs ?? NaN) / 100, 2)} | ${fmt(r.batched64.rps * 100)} | ${fmt(mem.rss)} (${fmt(mem.peak)}) | ${fmt(r.memEnd.rss)} (${fmt(r.memEnd.peak)}) | ${r.single.non2xx + r.batched.non2xx + r.batched64.non2xx} |`,
  );
  console.log(`${v.name}: stored ${accepted} events`);
  await s.stop();
}

/**
 * What deduplication costs: two servers at once, one sent the events with their messageIds,
 * the other the same events without (Sluice makes the ids and skips deduplication for them),
 * taking turns under the same load so a slow moment of the machine falls on both.
 */
async function deduplicationCost(rounds = 3) {
  const servers = await Promise.all(
    [{ track, batch }, { track: withoutIds(track), batch: withoutIds(batch) }].map(async (bodies) => {
      const s = await startSluice([]);
      const src = await adminApi(s.url, "POST", "/v2/sources", { name: "bench" });
      const headers = { "content-type": "application/json", authorization: basicAuth(src.writeKey) };
      wrk(`${s.url}/v1/track`, { body: bodies.track, headers, connections: 16, seconds: 2 });
      return { s, bodies, headers, single: [] as number[], batch: [] as number[] };
    }),
  );
  const half = Math.max(2, Math.round(seconds / 2));
  for (let r = 0; r < rounds; r++) {
    for (const x of r % 2 ? [...servers].reverse() : servers) {
      x.single.push(wrk(`${x.s.url}/v1/track`, { body: x.bodies.track, headers: x.headers, connections: 64, seconds: half, pid: x.s.pid }).cpuUs ?? NaN);
      x.batch.push((wrk(`${x.s.url}/v1/batch`, { body: x.bodies.batch, headers: x.headers, connections: 16, seconds: half, pid: x.s.pid }).cpuUs ?? NaN) / 100);
    }
  }
  // Peak, not current: the server that waits for its turn gives memory back meanwhile.
  const out = servers.map((x) => ({ single: mean(x.single), batch: mean(x.batch), rss: rssMb(x.s.pid).peak }));
  for (const x of servers) await x.s.stop();
  return out;
}

const [withDedup, withoutDedup] = await deduplicationCost();
rows.push("");
rows.push("| Deduplication (interleaved, sync FULL) | CPU µs per call | CPU µs per batch event | peak RSS MB |");
rows.push("| --- | --- | --- | --- |");
rows.push(`| events with their messageIds | ${fmt(withDedup!.single, 1)} | ${fmt(withDedup!.batch, 2)} | ${fmt(withDedup!.rss)} |`);
rows.push(`| the same events without messageIds (not deduplicated) | ${fmt(withoutDedup!.single, 1)} | ${fmt(withoutDedup!.batch, 2)} | ${fmt(withoutDedup!.rss)} |`);
rows.push(`| cost of deduplication | ${fmt(withDedup!.single - withoutDedup!.single, 1)} | ${fmt(withDedup!.batch - withoutDedup!.batch, 2)} | ${fmt(withDedup!.rss - withoutDedup!.rss)} |`);

rows.push("");
rows.push(`wrk ${seconds} s per figure, 2 threads; single call = one track event (~200 B); batch = 100 track events per request, at 16 connections and again at 64 (RSS is read before the 64-connection run, and again at the end). Each event carries its own messageId, unique per request (wrk substitutes it), as SDKs send them, so deduplication is in every figure of the first table. The second table runs two servers at once, taking turns for 3 rounds of ${Math.max(2, Math.round(seconds / 2))} s: one gets the events with messageIds, the other the same events with the field renamed (Sluice makes the ids and does not deduplicate them). CPU µs = user + system time of the server process (all threads) over the run, divided by the requests wrk completed (steadier than rates on a shared machine). Targets: single ≥ 0.70 of bare, p99 ≤ 1.5× bare, batch ≥ 200,000 events/s, RSS ≤ 150 MB.`);
await record("Intake", `npm run bench:intake -- --seconds ${seconds}${regulations ? ` --regulations ${regulations}` : ""}`, rows);
