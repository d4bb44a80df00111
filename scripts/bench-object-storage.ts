/**
 * Object-storage benchmark: events/s from intake to uploaded objects, with the compiled binary
 * and an S3 destination, against the same store written directly by a plain loop in the same
 * run (the same events as gzipped JSON-lines files of the same size, uploaded one after another
 * with Bun's S3 client), so the figure is also a ratio. The store is s3rver (the tests' S3
 * stand-in) on 127.0.0.1, serving both. Writes the run into docs/benchmarks/object-storage.md
 * and its line into BENCHMARKS.md.
 *
 *   npm run bench:object-storage [-- --events 100000 --file-events 10000 --build] [--binary PATH --no-record]
 */
import { S3Client } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import S3rver from "s3rver";
import { BINARY, adminApi, basicAuth, ensureBinary, fmt, numberArg, record, rssMb, sendBatches, startSluice } from "./bench-lib";

const total = numberArg("--events", 100_000);
const fileEvents = numberArg("--file-events", 10_000);
const binaryAt = process.argv.indexOf("--binary");
const binary = binaryAt > 0 ? process.argv[binaryAt + 1]! : BINARY;
if (binary === BINARY) await ensureBinary();

const storeDir = mkdtempSync(join(tmpdir(), "sluice-bench-s3-"));
const s3 = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: storeDir, configureBuckets: [{ name: "bench" }] });
const { port } = await s3.run();
const endpoint = `http://127.0.0.1:${port}`;
const client = new S3Client({ endpoint, bucket: "bench", accessKeyId: "S3RVER", secretAccessKey: "S3RVER", region: "us-east-1" });

const event = (i: number) => ({ type: "track", userId: `user-${i % 1000}`, event: "Benchmark Event", messageId: `bench-${i}`, properties: { i, plan: "pro", price: 9.99 } });

/** Events in the objects under a prefix: each new object is read once. */
async function countUploaded(prefix: string, seen: Map<string, number>): Promise<number> {
  const list = await client.list({ prefix, maxKeys: 1000 });
  for (const o of list.contents ?? []) {
    if (seen.has(o.key)) continue;
    const bytes = new Uint8Array(await client.file(o.key).arrayBuffer());
    seen.set(o.key, gunzipSync(bytes).toString("utf8").split("\n").filter(Boolean).length);
  }
  return [...seen.values()].reduce((a, b) => a + b, 0);
}

// 1. Baseline: a plain loop writes the same events straight to the store, in files of the same size.
const baseStarted = performance.now();
for (let f = 0; f * fileEvents < total; f++) {
  const lines: string[] = [];
  for (let i = f * fileEvents; i < Math.min(total, (f + 1) * fileEvents); i++) lines.push(`${JSON.stringify({ ...event(i), receivedAt: new Date().toISOString() })}\n`);
  await client.write(`baseline/${f}.json.gz`, Bun.gzipSync(Buffer.from(lines.join(""))));
}
const baseRate = total / ((performance.now() - baseStarted) / 1000);

// 2. Sluice: the same events through /v1/batch to an S3 destination, timed until every one is in an object.
const s = await startSluice(["--destination-base-url", `S3=${endpoint}`, "--object-storage-batch-events", String(fileEvents), "--object-storage-batch-seconds", "1"], { SLUICE_ALLOW_DESTINATION_HOSTS: "127.0.0.0/8,::1" }, undefined, binary);
const src = await adminApi(s.url, "POST", "/v2/sources", { name: "bench" });
await adminApi(s.url, "POST", "/v2/destinations", { name: "archive", type: "S3", config: { bucketName: "bench", prefix: "sluice", accessKeyID: "S3RVER", accessKey: "S3RVER" }, sourceIds: [src.id] });
const auth = basicAuth(src.writeKey);
const batches: Array<Array<Record<string, unknown>>> = [];
for (let i = 0; i < total; i += 100) batches.push(Array.from({ length: Math.min(100, total - i) }, (_, j) => event(i + j)));
const started = performance.now();
await sendBatches(s.url, auth, batches);
const acceptedIn = (performance.now() - started) / 1000;
const seen = new Map<string, number>();
const deadline = Date.now() + 300_000;
let peakRss = 0;
while ((await countUploaded("sluice/", seen)) < total) {
  if (Date.now() > deadline) throw new Error("the events were not all uploaded within 5 minutes");
  peakRss = Math.max(peakRss, rssMb(s.pid).rss);
  await Bun.sleep(100); // polling the store's listing, not waiting for a guess
}
const rate = total / ((performance.now() - started) / 1000);
const mem = rssMb(s.pid);
await s.stop();
await s3.close();
rmSync(storeDir, { recursive: true, force: true });

const ratio = rate / baseRate;
await record({
  name: "object-storage",
  title: "Object storage",
  command: `npm run bench:object-storage -- --events ${total} --file-events ${fileEvents}`,
  lines: [
    "| Writer | events/s into objects | ratio | objects | RSS MB (peak) |",
    "| --- | --- | --- | --- | --- |",
    `| plain loop: gzip + PUT, files of ${fmt(fileEvents)} events | ${fmt(baseRate)} | 1.00 | ${Math.ceil(total / fileEvents)} | — |`,
    `| Sluice: /v1/batch → S3 destination (accepted in ${fmt(acceptedIn, 1)} s) | ${fmt(rate)} | ${fmt(ratio, 2)} | ${seen.size} | ${fmt(mem.rss)} (${fmt(Math.max(peakRss, mem.peak))}) |`,
    "",
    `${fmt(total)} events of 1,000 users through /v1/batch (100 a request, 8 at a time), timed from the first request until the store lists objects holding every event; the baseline writes the same events as gzipped JSON-lines files of the same size with Bun's S3 client, one after another. Both write to the same s3rver on 127.0.0.1, which runs in the benchmark's process. Sluice runs with \`--object-storage-batch-seconds 1\`, so the last, partly filled file waits 1 s for its age rather than the default 30. No target is set by the issue; the ratio says what staging, fsync and the upload loop cost against writing straight to the store.`,
  ],
  latest: `${fmt(rate)} events/s from intake to uploaded objects (intake accepted them at ${fmt(total / acceptedIn)}/s), ${fmt(ratio, 2)} of a plain loop gzipping and writing the same files to the same store (${fmt(baseRate)}/s); RSS ${fmt(Math.max(peakRss, mem.peak))} MB at peak.`,
});
