/**
 * Delivery benchmark: the compiled binary delivering to a local webhook sink (a
 * separate process that records each event's latency from receivedAt to arrival).
 * In the same run the sink's own capacity is measured with wrk, so the delivery rate
 * is also a ratio. Writes the run into docs/benchmarks/delivery.md and its line into
 * BENCHMARKS.md.
 *
 *   npm run bench:delivery [-- --events 50000 --seconds 10 --build] [--binary PATH --no-record] [--kind SEGMENT]
 *
 * `--binary` runs another build (an A/B: run each binary in turns, with --no-record).
 * `--kind SEGMENT` delivers to a batching kind instead of WEBHOOK (the router's batch() path,
 * whose calls carry many events; no latency is measured there) and is only printed.
 */
import { join, resolve } from "node:path";
import { BINARY, adminApi, basicAuth, ensureBinary, fmt, numberArg, record, requireWrk, rssMb, startProcess, sendBatches, startSluice, wrk } from "./bench-lib";

const total = numberArg("--events", 50_000);
const seconds = numberArg("--seconds", 10);

const kindAt = process.argv.indexOf("--kind");
const kind = kindAt > 0 ? process.argv[kindAt + 1]!.toUpperCase() : "WEBHOOK";
if (kind !== "WEBHOOK" && kind !== "SEGMENT") throw new Error("--kind takes WEBHOOK or SEGMENT");
if (kind !== "WEBHOOK" && !process.argv.includes("--no-record")) process.argv.push("--no-record");
const binaryAt = process.argv.indexOf("--binary");
const binary = binaryAt > 0 ? resolve(process.argv[binaryAt + 1]!) : BINARY;
requireWrk();
if (binary === BINARY) await ensureBinary();

const sink = await startProcess([process.execPath, join(import.meta.dir, "bare-server.ts"), "--port", "0", "--sink"]);
const sinkStats = async () => (await (await fetch(`${sink.url}/__stats`)).json()) as { count: number; p50: number; p99: number };
const resetSink = () => fetch(`${sink.url}/__reset`);

const event = (i: number) => ({ type: "track", userId: `user-${i % 1000}`, event: "Benchmark Event", properties: { i } });
const capacity = wrk(`${sink.url}/hook`, { body: JSON.stringify({ ...event(1), receivedAt: new Date().toISOString() }), headers: { "content-type": "application/json" }, connections: 16, seconds: 5 });
await resetSink();

const rows: string[] = [
  `| Destinations | drain: events delivered/s | ratio to sink capacity | steady load: events/s in | delivered p50 ms | delivered p99 ms | RSS MB (peak) |`,
  "| --- | --- | --- | --- | --- | --- | --- |",
];

const results: Array<{ destinations: number; transformation: boolean; drainRate: number; p99: number }> = [];
const variants: Array<{ destinations: number; transformation?: string }> = [
  { destinations: 1 },
  { destinations: 1, transformation: "export function transformEvent(event, metadata) { return event; }" },
  { destinations: 10 },
];
for (const { destinations, transformation } of variants) {
  const s = await startSluice(["--destination-concurrency", "16", ...(kind === "SEGMENT" ? ["--destination-base-url", `SEGMENT=${sink.url}`] : [])], {}, undefined, binary);
  const src = await adminApi(s.url, "POST", "/v2/sources", { name: "bench" });
  const destIds: string[] = [];
  for (let d = 0; d < destinations; d++) {
    const config = kind === "SEGMENT" ? { writeKey: `bench-${d}` } : { webhookUrl: `${sink.url}/hook/${d}` };
    const dst = await adminApi(s.url, "POST", "/v2/destinations", { name: `${kind.toLowerCase()}-${d}`, type: kind, config, sourceIds: [src.id] });
    destIds.push(dst.id);
  }
  if (transformation) await adminApi(s.url, "POST", "/v2/transformations", { name: "trivial", code: transformation, destinationIds: destIds });
  const auth = basicAuth(src.writeKey);

  // 1. Drain: accept `total` events as fast as intake takes them, then time how long
  //    until the sink has every delivery.
  await resetSink();
  const perDest = destinations === 1 ? total : Math.round(total / 5);
  const started = performance.now();
  const batches: Array<Array<Record<string, unknown>>> = [];
  for (let i = 0; i < perDest; i += 100) batches.push(Array.from({ length: Math.min(100, perDest - i) }, (_, j) => event(i + j)));
  await sendBatches(s.url, auth, batches);

  const expected = perDest * destinations;
  const deadline = Date.now() + 300_000;
  while ((await sinkStats()).count < expected) {
    if (Date.now() > deadline) throw new Error("delivery did not drain in 5 minutes");
    await Bun.sleep(50); // polling the sink's counter, not waiting for a guess
  }
  const drainRate = expected / ((performance.now() - started) / 1000);

  // 2. Steady load below saturation: single calls from 4 connections; latency at the sink.
  await resetSink();
  const steady = wrk(`${s.url}/v1/track`, {
    body: JSON.stringify({ userId: "steady-user", event: "Steady", properties: { a: 1 } }),
    bodies: Array.from({ length: 100 }, (_, u) => JSON.stringify({ userId: `steady-user-${u}`, event: "Steady", properties: { a: 1 } })),
    headers: { authorization: auth, "content-type": "application/json" },
    connections: destinations === 1 ? 4 : 1,
    threads: 1,
    seconds,
  });
  const inRate = steady.rps;
  const want = Math.floor(inRate * seconds * destinations * 0.99);
  const until = Date.now() + 120_000;
  while ((await sinkStats()).count < want && Date.now() < until) await Bun.sleep(50);
  const lat = await sinkStats();
  const mem = rssMb(s.pid);
  results.push({ destinations, transformation: !!transformation, drainRate, p99: lat.p99 });
  rows.push(
    `| ${destinations}${transformation ? " + trivial transformEvent" : ""} | ${fmt(drainRate)} | ${fmt(drainRate / capacity.rps, 2)} | ${fmt(inRate)} (${fmt(inRate * destinations)} deliveries/s) | ${fmt(lat.p50)} | ${fmt(lat.p99)} | ${fmt(mem.rss)} (${fmt(mem.peak)}) |`,
  );
  await s.stop();
}
await sink.stop();

rows.push("");
rows.push(
  `Sink capacity (wrk, 16 connections, straight at the sink): ${fmt(capacity.rps)} requests/s. Drain: ${fmt(total)} events (10 destinations: ${fmt(total / 5)} events × 10) accepted through /v1/batch from 1,000 users, timed from the first request until the sink has every delivery. Steady: wrk single track calls (4 connections for 1 destination, 1 for 10) for ${seconds} s, rotating over 100 users; latency is receivedAt → arrival at the sink. --destination-concurrency 16. Targets: ≥ 10,000 events/s to one destination, p99 ≤ 100 ms while not saturated.`,
);
const [one, withTransformation, ten] = results as [(typeof results)[number], (typeof results)[number], (typeof results)[number]];
await record({
  name: "delivery",
  title: "Delivery",
  command: `npm run bench:delivery -- --events ${total} --seconds ${seconds}`,
  lines: rows,
  latest:
    `one destination ${fmt(one.drainRate)} events/s (${fmt(one.drainRate / capacity.rps, 2)} of the sink's ${fmt(capacity.rps)} requests/s; ≥ 10,000: ${one.drainRate >= 10_000 ? "met" : "not met"}), p99 ${fmt(one.p99)} ms not saturated (≤ 100: ${one.p99 <= 100 ? "met" : "not met"}); ` +
    `with a transformEvent ${fmt(withTransformation.drainRate)}, p99 ${fmt(withTransformation.p99)} ms; ten destinations ${fmt(ten.drainRate)}, p99 ${fmt(ten.p99)} ms.`,
});
