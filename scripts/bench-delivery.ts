/**
 * Delivery benchmark: the compiled binary delivering to a local webhook sink (a
 * separate process that records each event's latency from receivedAt to arrival).
 * In the same run the sink's own capacity is measured with wrk, so the delivery rate
 * is also a ratio. Writes the run into docs/benchmarks/delivery.md and its line into
 * BENCHMARKS.md.
 *
 *   npm run bench:delivery [-- --events 50000 --seconds 10 --build] [--binary PATH --no-record] [--kind SEGMENT]
 *
 * Rows: WEBHOOK to one destination (with and without a transformation), to ten on one source and
 * to a hundred over ten sources; SEGMENT, a batching kind (the router's batch() path, whose
 * /batch calls carry a user's queued events), to one and to ten. Each row reports deliveries/s,
 * its ratio to the sink's rate, calls per event, and for WEBHOOK the lag p50/p99 under steady load.
 * `--binary` runs another build (an A/B: run each binary in turns, with --no-record).
 * `--kind SEGMENT` (or WEBHOOK) runs only that kind's rows, and only prints them.
 */
import { join, resolve } from "node:path";
import { BINARY, adminApi, basicAuth, ensureBinary, fmt, numberArg, record, requireWrk, rssMb, startProcess, sendBatches, startSluice, wrk } from "./bench-lib";

const total = numberArg("--events", 50_000);
const seconds = numberArg("--seconds", 10);

const kindAt = process.argv.indexOf("--kind");
const kind = kindAt > 0 ? process.argv[kindAt + 1]!.toUpperCase() : "WEBHOOK";
if (kind !== "WEBHOOK" && kind !== "SEGMENT") throw new Error("--kind takes WEBHOOK or SEGMENT");
if (kindAt > 0 && !process.argv.includes("--no-record")) process.argv.push("--no-record");
const binaryAt = process.argv.indexOf("--binary");
const binary = binaryAt > 0 ? resolve(process.argv[binaryAt + 1]!) : BINARY;
requireWrk();
if (binary === BINARY) await ensureBinary();

const sink = await startProcess([process.execPath, join(import.meta.dir, "bare-server.ts"), "--port", "0", "--sink"]);
const sinkStats = async () => (await (await fetch(`${sink.url}/__stats`)).json()) as { count: number; requests: number; p50: number; p99: number };
const resetSink = () => fetch(`${sink.url}/__reset`);

const event = (i: number) => ({ type: "track", userId: `user-${i % 1000}`, event: "Benchmark Event", properties: { i } });
const capacity = wrk(`${sink.url}/hook`, { body: JSON.stringify({ ...event(1), receivedAt: new Date().toISOString() }), headers: { "content-type": "application/json" }, connections: 16, seconds: 5 });
await resetSink();

const rows: string[] = [
  `| Kind | Destinations | drain: deliveries/s | ratio to sink capacity | calls per event | steady load: events/s in | delivered p50 ms | delivered p99 ms | RSS MB (peak) |`,
  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
];

type Variant = { kind: "WEBHOOK" | "SEGMENT"; destinations: number; sources?: number; transformation?: string };
const results: Array<Variant & { drainRate: number; callsPerEvent: number; p50: number; p99: number }> = [];
const allVariants: Variant[] = [
  { kind: "WEBHOOK", destinations: 1 },
  { kind: "WEBHOOK", destinations: 1, transformation: "export function transformEvent(event, metadata) { return event; }" },
  { kind: "WEBHOOK", destinations: 10 },
  { kind: "WEBHOOK", destinations: 100, sources: 10 },
  { kind: "SEGMENT", destinations: 1 },
  { kind: "SEGMENT", destinations: 10 },
];
// --kind SEGMENT (or WEBHOOK) runs only that kind's rows.
const variants = kindAt > 0 ? allVariants.filter((v) => v.kind === kind) : allVariants;
for (const variant of variants) {
  const { kind: vkind, destinations, transformation } = variant;
  const sources = variant.sources ?? 1;
  const s = await startSluice(["--destination-concurrency", "16", "--destination-base-url", `SEGMENT=${sink.url}`], {}, undefined, binary);
  const auths: string[] = [];
  const destIds: string[] = [];
  for (let so = 0; so < sources; so++) {
    const src = await adminApi(s.url, "POST", "/v2/sources", { name: `bench-${so}` });
    auths.push(basicAuth(src.writeKey));
    for (let d = 0; d < destinations / sources; d++) {
      const n = destIds.length;
      const config = vkind === "SEGMENT" ? { writeKey: `bench-${n}` } : { webhookUrl: `${sink.url}/hook/${n}` };
      const dst = await adminApi(s.url, "POST", "/v2/destinations", { name: `${vkind.toLowerCase()}-${n}`, type: vkind, config, sourceIds: [src.id] });
      destIds.push(dst.id);
    }
  }
  if (transformation) await adminApi(s.url, "POST", "/v2/transformations", { name: "trivial", code: transformation, destinationIds: destIds });

  // 1. Drain: accept the events as fast as intake takes them, then time how long until the
  //    sink has every delivery. Many destinations share a smaller number of events.
  await resetSink();
  const perSource = destinations === 1 ? total : Math.round(total / (destinations === 10 ? 5 : 50));
  const started = performance.now();
  for (const auth of auths) {
    const batches: Array<Array<Record<string, unknown>>> = [];
    for (let i = 0; i < perSource; i += 100) batches.push(Array.from({ length: Math.min(100, perSource - i) }, (_, j) => event(i + j)));
    await sendBatches(s.url, auth, batches);
  }
  const expected = perSource * destinations;
  const deadline = Date.now() + 300_000;
  while ((await sinkStats()).count < expected) {
    if (Date.now() > deadline) throw new Error("delivery did not drain in 5 minutes");
    await Bun.sleep(50); // polling the sink's counter, not waiting for a guess
  }
  const drainRate = expected / ((performance.now() - started) / 1000);
  const drained = await sinkStats();
  const callsPerEvent = drained.requests / drained.count;

  // 2. Steady load below saturation (WEBHOOK: its events carry receivedAt, so latency shows).
  let inRate = 0;
  let lat = { p50: 0, p99: 0 };
  if (vkind === "WEBHOOK" && sources === 1) {
    await resetSink();
    const steady = wrk(`${s.url}/v1/track`, {
      body: JSON.stringify({ userId: "steady-user", event: "Steady", properties: { a: 1 } }),
      bodies: Array.from({ length: 100 }, (_, u) => JSON.stringify({ userId: `steady-user-${u}`, event: "Steady", properties: { a: 1 } })),
      headers: { authorization: auths[0]!, "content-type": "application/json" },
      connections: destinations === 1 ? 4 : 1,
      threads: 1,
      seconds,
    });
    inRate = steady.rps;
    const want = Math.floor(inRate * seconds * destinations * 0.99);
    const until = Date.now() + 120_000;
    while ((await sinkStats()).count < want && Date.now() < until) await Bun.sleep(50);
    lat = await sinkStats();
  }
  const mem = rssMb(s.pid);
  results.push({ ...variant, drainRate, callsPerEvent, p50: lat.p50, p99: lat.p99 });
  const steadyCells = inRate ? `${fmt(inRate)} (${fmt(inRate * destinations)} deliveries/s) | ${fmt(lat.p50)} | ${fmt(lat.p99)}` : "— | — | —";
  rows.push(
    `| ${vkind}${transformation ? " + trivial transformEvent" : ""} | ${destinations}${sources > 1 ? ` over ${sources} sources` : ""} | ${fmt(drainRate)} | ${fmt(drainRate / capacity.rps, 2)} | ${fmt(callsPerEvent, 3)} | ${steadyCells} | ${fmt(mem.rss)} (${fmt(mem.peak)}) |`,
  );
  await s.stop();
}
await sink.stop();

rows.push("");
rows.push(
  `Sink capacity (wrk, 16 connections, straight at the sink): ${fmt(capacity.rps)} requests/s. Drain: ${fmt(total)} events to one destination, ${fmt(total / 5)} × 10 to ten, ${fmt(total / 50)} a source × 10 sources × 10 destinations to a hundred, accepted through /v1/batch from 1,000 users, timed from the first request until the sink has every delivery (deliveries/s). Calls per event: the sink's requests over the events they carried (SEGMENT's /batch carries many). Steady (WEBHOOK, one source): wrk single track calls (4 connections for 1 destination, 1 for 10) for ${seconds} s, rotating over 100 users; latency is receivedAt → arrival at the sink. --destination-concurrency 16. Targets: ≥ 10,000 events/s to one WEBHOOK destination (or ≥ 0.5 of the sink), p99 ≤ 100 ms while not saturated; aggregate deliveries/s not falling as destinations are added.`,
);
if (kindAt > 0) {
  console.log(rows.join("\n"));
  process.exit(0);
}
const row = (k: string, d: number, t = false, so = 1) => results.find((r) => r.kind === k && r.destinations === d && !!r.transformation === t && (r.sources ?? 1) === so)!;
const [one, withTransformation, ten, hundred, seg] = [row("WEBHOOK", 1), row("WEBHOOK", 1, true), row("WEBHOOK", 10), row("WEBHOOK", 100, false, 10), row("SEGMENT", 1)];
await record({
  name: "delivery",
  title: "Delivery",
  command: `npm run bench:delivery -- --events ${total} --seconds ${seconds}`,
  lines: rows,
  latest:
    `one WEBHOOK destination ${fmt(one.drainRate)} events/s (${fmt(one.drainRate / capacity.rps, 2)} of the sink's ${fmt(capacity.rps)} requests/s; ≥ 10,000 or 0.5 of the sink: ${one.drainRate >= Math.min(10_000, capacity.rps / 2) ? "met" : "not met"}), p99 ${fmt(one.p99)} ms not saturated (≤ 100: ${one.p99 <= 100 ? "met" : "not met"}); ` +
    `with a transformEvent ${fmt(withTransformation.drainRate)}; ten destinations ${fmt(ten.drainRate)} deliveries/s; a hundred over ten sources ${fmt(hundred.drainRate)}; SEGMENT ${fmt(seg.drainRate)} events/s at ${fmt(seg.callsPerEvent, 3)} calls an event.`,
});
