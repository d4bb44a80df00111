/**
 * Intake benchmark: the compiled binary under load from wrk (a separate process) on
 * 127.0.0.1 with keep-alive connections, against a bare Bun.serve that answers OK
 * without storing, in the same run. Writes the run into docs/benchmarks/intake.md and its
 * figures' line into BENCHMARKS.md.
 *
 *   npm run bench:intake [-- --seconds 8 --rounds 4 --build --regulations N --full-only --no-record]
 *
 * Every server runs from the start, and they take turns under each load (single calls, then
 * batches at 16 connections, then at 64), in rounds whose order is balanced (bench-lib's balancedOrder): this machine's speed
 * drifts by a third within minutes, and a slow minute must fall on the baseline as much as on
 * Sluice, or the ratios measure the minute. `--seconds` is each server's time under each load,
 * split over the rounds.
 */
import { INTAKE_BODIES, REQUEST_ID, type WrkResult, adminApi, balancedOrder, cpuTimeUs, basicAuth, ensureBinary, fmt, median, numberArg, range, record, requireWrk, rssMb, startProcess, startSluice, wrk } from "./bench-lib";
import { join } from "node:path";
import { RecentMessageIds } from "../src/gateway/dedup";

const args = process.argv.slice(2);
const seconds = numberArg("--seconds", 8);
const rounds = numberArg("--rounds", 4);
const turn = Math.max(1, Math.round(seconds / rounds));
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

type Load = "single" | "batch16" | "batch64";
interface Server {
  name: string;
  url: string;
  pid: number;
  sluice: boolean;
  headers: Record<string, string>;
  bodies: { track: string; batch: string };
  runs: Record<Load, WrkResult[]>;
  mem?: { rss: number; peak: number };
  memEnd?: { rss: number; peak: number };
  stop(): Promise<void>;
}

const servers: Server[] = [];
const bare = await startProcess([process.execPath, join(import.meta.dir, "bare-server.ts"), "--port", "0"]);
servers.push({ name: "bare Bun.serve (reads body, answers OK)", ...bare, sluice: false, headers: { "content-type": "application/json", authorization: "Basic eDo=" }, bodies: { track, batch }, runs: { single: [], batch16: [], batch64: [] } });

const variants: Array<{ name: string; args: string[]; regs?: number; noIds?: boolean }> = [{ name: "Sluice, sync FULL (default)", args: [] }];
variants.push({ name: "Sluice, sync FULL, the events without messageIds (not deduplicated)", args: [], noIds: true });
if (!args.includes("--full-only")) variants.push({ name: "Sluice, sync NORMAL", args: ["--sync", "NORMAL"] });
if (regulations) variants.push({ name: `Sluice, sync FULL, ${fmt(regulations)} active regulations`, args: [], regs: regulations });

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
  const bodies = v.noIds ? { track: withoutIds(track), batch: withoutIds(batch) } : { track, batch };
  servers.push({ name: v.name, ...s, sluice: true, headers: { "content-type": "application/json", authorization: basicAuth(src.writeKey) }, bodies, runs: { single: [], batch16: [], batch64: [] } });
}

// A short warm-up so JIT and page cache do not count against the first figures.
for (const s of servers) wrk(`${s.url}/v1/track`, { body: s.bodies.track, headers: s.headers, connections: 16, seconds: 2 });

/** Waits (up to 2 s) until the process has used under a tenth of a core for 100 ms: its checkpoint and collector are done. */
async function settle(pid: number) {
  const deadline = Date.now() + 2000;
  let last = cpuTimeUs(pid);
  while (Date.now() < deadline) {
    await Bun.sleep(100);
    const now = cpuTimeUs(pid);
    if (now - last < 10_000) return;
    last = now;
  }
}

/**
 * A Shopify order (about 10 KB) to /v1/webhook, against a track call of the same size carrying
 * the same order as its properties, on the same server, in alternating turns: the webhook's
 * cost is the mapping (and its state lookup) on top of what every event call pays.
 */
async function webhookPhase(s: Server): Promise<{ rows: string[]; ratio: number }> {
  const { shopify } = await import("../src/sources/shopify");
  const src = await adminApi(s.url, "POST", "/v2/sources", { name: "bench-shopify", type: "Shopify" });
  const base = shopify.sample.body as Record<string, any>;
  const item = base.line_items[0];
  const order = {
    ...base,
    cart_token: `cart-${REQUEST_ID}`,
    checkout_token: `co-${REQUEST_ID}`,
    line_items: Array.from({ length: 30 }, (_, i) => ({ ...item, id: item.id + i, sku: `${item.sku}-${i}`, properties: [{ name: "gift", value: i % 2 ? "yes" : "no" }], tax_lines: [{ title: "VAT", rate: 0.21, price: "6.93" }] })),
  };
  const webhookBody = JSON.stringify(order);
  const trackBody = JSON.stringify({ userId: "bench-user", event: "Order Completed", messageId: REQUEST_ID, properties: order });
  const calls = [
    { name: "track call, the order as properties", url: `${s.url}/v1/track`, body: trackBody, headers: s.headers, runs: [] as WrkResult[] },
    { name: "Shopify orders/create webhook", url: `${s.url}/v1/webhook?writeKey=${src.writeKey}&topic=orders_create`, body: webhookBody, headers: { "content-type": "application/json" }, runs: [] as WrkResult[] },
  ];
  for (let r = 0; r < rounds; r++) {
    for (const c of r % 2 ? [...calls].reverse() : calls) {
      c.runs.push(wrk(c.url, { body: c.body, headers: c.headers, connections: 64, seconds: turn, pid: s.pid }));
      await settle(s.pid);
    }
  }
  const cpuRatios = calls[1]!.runs.map((w, r) => (w.cpuUs ?? NaN) / (calls[0]!.runs[r]!.cpuUs ?? NaN));
  const rows = [
    "",
    `Webhook sources: a Shopify order of ${fmt(webhookBody.length / 1024, 1)} KB to /v1/webhook against a track call of ${fmt(trackBody.length / 1024, 1)} KB with the same order as its properties, on the FULL server, in alternating turns (64 connections, ${turn} s each).`,
    "",
    "| Call | calls/s | p50 ms | p99 ms | CPU µs per call (main thread) | non-2xx |",
    "| --- | --- | --- | --- | --- | --- |",
    ...calls.map((c) => {
      const x = summary(c.runs);
      return `| ${c.name} | ${fmt(x.rps)} | ${fmt(x.p50, 2)} | ${fmt(x.p99, 2)} | ${fmt(x.cpu, 1)} (${fmt(x.main, 1)}) | ${x.non2xx} |`;
    }),
    "",
    `CPU per webhook call against per track call: ${fmt(median(cpuRatios), 2)} (${range(cpuRatios, 2)} over the rounds); target ≤ 2.`,
  ];
  return { rows, ratio: median(cpuRatios) };
}

async function phase(load: Load) {
  for (let r = 0; r < rounds; r++) {
    for (const s of balancedOrder(servers, r)) {
      const result =
        load === "single"
          ? wrk(`${s.url}/v1/track`, { body: s.bodies.track, headers: s.headers, connections: 64, seconds: turn, pid: s.pid })
          : wrk(`${s.url}/v1/batch`, { body: s.bodies.batch, headers: s.headers, connections: load === "batch16" ? 16 : 64, seconds: turn, pid: s.pid });
      s.runs[load].push(result);
      await settle(s.pid);
    }
  }
}

await phase("single");
await phase("batch16");
// Memory before the extra batch runs, so this column counts the same events as in earlier runs.
for (const s of servers) if (s.sluice) s.mem = rssMb(s.pid);
// With FULL, 16 connections may be bound by the commit–fsync cycle rather than by CPU: more requests in flight show which.
await phase("batch64");
for (const s of servers) if (s.sluice) s.memEnd = rssMb(s.pid);
const webhookRows = await webhookPhase(servers[1]!);
for (const s of servers) await s.stop();

/**
 * The same work without HTTP or the disk around it, so without their noise: hashing a
 * messageId into its key, then the lookup and insert of every event, into the tables of
 * RecentMessageIds holding `keys` already (about what a server holds after this run).
 */
function dedupInIsolation(keys: number): string {
  const recent = new RecentMessageIds(24 * 3600_000);
  for (let i = 0; i < keys; i++) recent.add(RecentMessageIds.key("bench", `fill-${i}`));
  const n = 500_000;
  const ids = Array.from({ length: n }, (_, i) => `${crypto.randomUUID()}-${i}`);
  let t = performance.now();
  const k = ids.map((id) => RecentMessageIds.key("bench", id));
  const hash = ((performance.now() - t) * 1000) / n;
  t = performance.now();
  for (const key of k) if (!recent.has(key)) recent.add(key);
  const probe = ((performance.now() - t) * 1000) / n;
  return `In isolation (RecentMessageIds in this process, ${fmt(keys / 1e6)} million keys held): hashing a messageId into its key ${fmt(hash, 2)} µs, looking it up and adding it ${fmt(probe, 2)} µs.`;
}

/** Over the rounds: the rate over all turns, latencies as medians, CPU per request over all requests. */
function summary(runs: WrkResult[]) {
  const requests = runs.reduce((a, w) => a + w.requests, 0);
  const cpu = (k: "cpuUs" | "mainCpuUs") => runs.reduce((a, w) => a + (w[k] ?? NaN) * w.requests, 0) / requests;
  return {
    rps: runs.reduce((a, w) => a + w.rps, 0) / runs.length,
    p50: median(runs.map((w) => w.p50ms)),
    p99: median(runs.map((w) => w.p99ms)),
    cpu: cpu("cpuUs"),
    main: cpu("mainCpuUs"),
    non2xx: runs.reduce((a, w) => a + w.non2xx, 0),
  };
}

/** The ratio to the bare server's figure of the same round: its median, and the lowest and highest. */
function ratios(s: Server, load: Load, of: (w: WrkResult) => number) {
  const xs = s.runs[load].map((w, r) => of(w) / of(servers[0]!.runs[load][r]!));
  return `${fmt(median(xs), 2)} (${range(xs, 2)})`;
}

const rows: string[] = [];
rows.push("| Server | single calls/s (64 conn) | ratio to bare (range over rounds) | p50 ms | p99 ms | p99 ratio (range) | CPU µs per call (main thread) | batch events/s (100/req, 16 conn) | CPU µs per batch event (main thread) | batch events/s (64 conn) | RSS MB (peak) | RSS MB at the end (peak) | non-2xx |");
rows.push("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
for (const s of servers) {
  const one = summary(s.runs.single);
  const b16 = summary(s.runs.batch16);
  const b64 = summary(s.runs.batch64);
  const isBase = s === servers[0];
  rows.push(
    `| ${s.name} | ${fmt(one.rps)} | ${isBase ? "1.00" : ratios(s, "single", (w) => w.rps)} | ${fmt(one.p50, 2)} | ${fmt(one.p99, 2)} | ${isBase ? "1.00" : ratios(s, "single", (w) => w.p99ms)} | ${fmt(one.cpu, 1)} (${fmt(one.main, 1)}) | ${fmt(b16.rps * 100)} | ${fmt(b16.cpu / 100, 2)} (${fmt(b16.main / 100, 2)}) | ${fmt(b64.rps * 100)} | ${s.mem ? `${fmt(s.mem.rss)} (${fmt(s.mem.peak)})` : ""} | ${s.memEnd ? `${fmt(s.memEnd.rss)} (${fmt(s.memEnd.peak)})` : ""} | ${one.non2xx + b16.non2xx + b64.non2xx} |`,
  );
}

// Deduplication's cost: the two FULL servers compared round by round (a slow minute falls on both).
const [withIds, noIds] = [servers[1]!, servers[2]!];
/** Per round, the difference between the two (per event), as "median (lowest to highest)". */
const paired = (load: Load, k: "cpuUs" | "mainCpuUs", per: number) => {
  const xs = withIds.runs[load].map((w, r) => ((w[k] ?? NaN) - (noIds.runs[load][r]![k] ?? NaN)) / per);
  const d = per === 1 ? 1 : 2;
  return `${fmt(median(xs), d)} (${fmt(Math.min(...xs), d)} to ${fmt(Math.max(...xs), d)})`;
};
rows.push("");
rows.push(
  `Deduplication, from the two FULL servers (one sent the events with their messageIds, the other the same events with the field renamed: Sluice makes the ids and does not deduplicate them), CPU µs more with the ids, median over the rounds (lowest to highest): a single call ${paired("single", "cpuUs", 1)}, main thread ${paired("single", "mainCpuUs", 1)}; a batch event ${paired("batch16", "cpuUs", 100)}, main thread ${paired("batch16", "mainCpuUs", 100)}. RSS ${fmt((withIds.memEnd?.rss ?? NaN) - (noIds.memEnd?.rss ?? NaN))} MB more at the end.`,
);
rows.push(...webhookRows.rows);
rows.push("");
rows.push(dedupInIsolation(3_000_000));
rows.push("");
rows.push(
  `wrk, 2 threads; ${rounds} rounds in which every server takes a turn of ${turn} s under the load, in a balanced order (each server follows every other equally often) and once the server before it has gone idle, for each load in turn: single calls at 64 connections, then batches at 16, then at 64 (${fmt(turn * rounds)} s per server and load). Rates are means over the rounds, p50 and p99 medians over them; each ratio is taken against the bare server's figure of the same round, and the median of those is shown with the lowest and highest. Single call = one track event (~200 B); batch = 100 track events per request. Each event carries its own messageId, unique per request (wrk substitutes it), as SDKs send them, so deduplication is in every Sluice figure but those of the server sent none. CPU µs = user + system time of the server process (all threads; the main thread alone in brackets) over the turns, divided by the requests wrk completed (steadier than rates on a shared machine). RSS after the 16-connection batches, and again at the end. Targets: single calls ≥ 0.5 of bare with --sync FULL and ≥ 0.7 with NORMAL; RSS ≤ 150 MB steady and ≤ 200 MB at peaks (the first targets also asked p99 ≤ 1.5× bare and batches ≥ 200,000 events/s).`,
);
/** The median ratio of a server's single-call rate to the bare server's, over the rounds. */
const singleRatio = (s: Server) => median(s.runs.single.map((w, r) => w.rps / servers[0]!.runs.single[r]!.rps));
const met = (ok: boolean) => (ok ? "met" : "not met");
const full = servers[1]!;
const normal = servers.find((s) => s.name === "Sluice, sync NORMAL");
const fullRatio = singleRatio(full);
const rss = full.memEnd ?? { rss: NaN, peak: NaN };
const latest = [
  `FULL single calls ${fmt(fullRatio, 2)} of bare (≥ 0.5: ${met(fullRatio >= 0.5)})`,
  normal ? `, NORMAL ${fmt(singleRatio(normal), 2)} (≥ 0.7: ${met(singleRatio(normal) >= 0.7)})` : "",
  `; FULL p99 ${fmt(median(full.runs.single.map((w, r) => w.p99ms / servers[0]!.runs.single[r]!.p99ms)), 2)}× bare`,
  `; FULL batches ${fmt(summary(full.runs.batch16).rps * 100)} events/s`,
  `; FULL RSS at the end ${fmt(rss.rss)} MB, peak ${fmt(rss.peak)} (≤ 150 / 200: ${met(rss.rss <= 150 && rss.peak <= 200)})`,
  `; a 10 KB Shopify webhook ${fmt(webhookRows.ratio, 2)}× the CPU of a track call of its size (≤ 2: ${met(webhookRows.ratio <= 2)}).`,
].join("");
await record({
  name: "intake",
  title: "Intake",
  command: `npm run bench:intake -- --seconds ${seconds} --rounds ${rounds}${regulations ? ` --regulations ${regulations}` : ""}`,
  lines: rows,
  latest,
});
