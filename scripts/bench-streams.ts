/**
 * Streaming kinds' benchmark (issue 47): events a second from intake into Kinesis (kinesalite) and
 * into the Kafka stand-in broker (test/support/kafka-broker.ts), each beside a plain loop of the
 * same client (aws4fetch's PutRecords; kafkajs' sendBatch) writing the same records to the same
 * server in the same run, with Sluice's concurrency (16 calls in flight) and run size (100
 * records a call). The figure is the ratio; target ≥ 0.8 of the plain loop. Each server runs in a
 * process of its own; Sluice is the compiled binary.
 *
 *   npm run bench:streams [-- --events 20000 --rounds 2] [--no-record]
 */
import { join } from "node:path";
import { AwsClient } from "aws4fetch";
import { Kafka, logLevel } from "kafkajs";
import { ROOT, adminApi, basicAuth, ensureBinary, fmt, median, numberArg, record, sendBatches, startProcess, startSluice } from "./bench-lib";

const total = numberArg("--events", 20_000);
const rounds = numberArg("--rounds", 2);
const CONCURRENCY = 16;
const PER_CALL = 100;
const USERS = 1000;
await ensureBinary();

/** The event as intake makes it, near enough: what both sides write, JSON-encoded. */
const event = (i: number) => ({ type: "track", userId: `user-${i % USERS}`, event: "Benchmark Event", messageId: `m-${i}`, properties: { i, plan: "pro" }, context: { library: { name: "bench" } } });

/** Runs `calls` with CONCURRENCY in flight; the elapsed seconds. */
async function loop(calls: number, call: (k: number) => Promise<void>): Promise<number> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < calls) await call(next++);
    }),
  );
  return (performance.now() - started) / 1000;
}

// ---- servers, each a process of its own -------------------------------------------------------

const kinesisPort = 40_000 + Math.floor(Math.random() * 10_000);
const kinesalite = Bun.spawn(["node", join(ROOT, "node_modules/kinesalite/cli.js"), "--port", String(kinesisPort), "--createStreamMs", "0"], { stdout: "ignore", stderr: "ignore" });
const kinesisUrl = `http://127.0.0.1:${kinesisPort}`;
const aws = new AwsClient({ accessKeyId: "AKIDBENCH", secretAccessKey: "bench", region: "us-east-1", service: "kinesis", retries: 0 });
const kinesisCall = async (target: string, body: unknown) => {
  const res = await aws.fetch(`${kinesisUrl}/`, { method: "POST", headers: { "content-type": "application/x-amz-json-1.1", "x-amz-target": `Kinesis_20131202.${target}` }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${target}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : {};
};
for (let i = 0; ; i++) {
  if ((await kinesisCall("ListStreams", {}).catch(() => undefined)) !== undefined) break;
  if (i > 100) throw new Error("kinesalite did not start");
  await Bun.sleep(100);
}
const brokerScript = `import { startKafkaBroker } from ${JSON.stringify(join(ROOT, "test/support/kafka-broker.ts"))}; const b = startKafkaBroker({ autoCreateTopics: true }); console.log(JSON.stringify({ url: "http://" + b.bootstrap })); setInterval(() => {}, 1 << 30);`;
const broker = await startProcess([process.execPath, "-e", brokerScript]);
const bootstrap = new URL(broker.url).host;

// ---- the plain loops --------------------------------------------------------------------------

async function plainKinesis(stream: string): Promise<number> {
  const seconds = await loop(Math.ceil(total / PER_CALL), async (k) => {
    const records = Array.from({ length: Math.min(PER_CALL, total - k * PER_CALL) }, (_, j) => {
      const e = event(k * PER_CALL + j);
      return { Data: Buffer.from(JSON.stringify(e)).toString("base64"), PartitionKey: e.userId };
    });
    const answer = await kinesisCall("PutRecords", { StreamName: stream, Records: records });
    if (answer.FailedRecordCount) throw new Error(`plain loop: ${answer.FailedRecordCount} records failed`);
  });
  return total / seconds;
}

const kafka = new Kafka({ clientId: "bench", brokers: [bootstrap], logLevel: logLevel.NOTHING });
const producer = kafka.producer({ allowAutoTopicCreation: true });
await producer.connect();
async function plainKafka(topic: string): Promise<number> {
  const seconds = await loop(Math.ceil(total / PER_CALL), async (k) => {
    const messages = Array.from({ length: Math.min(PER_CALL, total - k * PER_CALL) }, (_, j) => {
      const e = event(k * PER_CALL + j);
      return { key: e.userId, value: JSON.stringify(e) };
    });
    await producer.sendBatch({ acks: -1, topicMessages: [{ topic, messages }] });
  });
  return total / seconds;
}

// ---- Sluice -----------------------------------------------------------------------------------

async function throughSluice(type: "KINESIS" | "KAFKA", config: Record<string, unknown>): Promise<{ rate: number; calls?: number }> {
  const baseUrl = type === "KINESIS" ? kinesisUrl : `http://${bootstrap}`;
  const sluice = await startSluice(["--destination-base-url", `${type}=${baseUrl}`]);
  try {
    const src = await adminApi(sluice.url, "POST", "/v2/sources", { name: "bench" });
    const dst = await adminApi(sluice.url, "POST", "/v2/destinations", { name: type.toLowerCase(), type, config, sourceIds: [src.id] });
    const batches: Array<Array<Record<string, unknown>>> = [];
    for (let i = 0; i < total; i += 500) batches.push(Array.from({ length: Math.min(500, total - i) }, (_, j) => event(i + j)));
    const started = performance.now();
    await sendBatches(sluice.url, basicAuth(src.writeKey), batches);
    for (;;) {
      const { counts } = await adminApi(sluice.url, "GET", `/v2/destinations/${dst.id}/stats`);
      if (counts.aborted) throw new Error(`${type}: ${counts.aborted} deliveries aborted`);
      if (counts.succeeded >= total) break;
      if (performance.now() - started > 300_000) throw new Error(`${type}: ${counts.succeeded} of ${total} delivered in 5 minutes`);
      await Bun.sleep(50);
    }
    return { rate: total / ((performance.now() - started) / 1000) };
  } finally {
    await sluice.stop();
  }
}

const rows: Array<{ kind: string; plain: number[]; sluice: number[] }> = [
  { kind: "KINESIS", plain: [], sluice: [] },
  { kind: "KAFKA", plain: [], sluice: [] },
];
try {
  for (let r = 0; r < rounds; r++) {
    const stream = `bench-${r}`;
    await kinesisCall("CreateStream", { StreamName: stream, ShardCount: 4 });
    await Bun.sleep(200);
    // Alternate which goes first, so a slow moment of the machine falls on both.
    const kinesisPair = async () => {
      const p = await plainKinesis(stream);
      const s = await throughSluice("KINESIS", { region: "us-east-1", stream, accessKeyID: "AKIDBENCH", accessKey: "bench" });
      return [p, s.rate] as const;
    };
    const kafkaPair = async () => {
      const p = await plainKafka(`plain-${r}`);
      const s = await throughSluice("KAFKA", { hostName: "127.0.0.1", port: bootstrap.split(":")[1], topic: `sluice-${r}` });
      return [p, s.rate] as const;
    };
    const [kp, ks] = await kinesisPair();
    rows[0]!.plain.push(kp);
    rows[0]!.sluice.push(ks);
    const [fp, fs] = await kafkaPair();
    rows[1]!.plain.push(fp);
    rows[1]!.sluice.push(fs);
    console.log(`round ${r + 1}: KINESIS plain ${fmt(kp)} / Sluice ${fmt(ks)} events/s; KAFKA plain ${fmt(fp)} / Sluice ${fmt(fs)} events/s`);
  }
} finally {
  await producer.disconnect().catch(() => {});
  kinesalite.kill("SIGKILL");
  await broker.stop();
}

const ratio = (row: (typeof rows)[number]) => median(row.sluice) / median(row.plain);
const met = (x: number) => (x >= 0.8 ? "met" : "not met");
const lines = [
  "| Kind | plain loop, events/s | through Sluice, events/s | ratio (target ≥ 0.8) |",
  "| --- | --- | --- | --- |",
  ...rows.map((row) => `| ${row.kind} | ${row.plain.map((x) => fmt(x)).join(", ")} | ${row.sluice.map((x) => fmt(x)).join(", ")} | ${fmt(ratio(row), 2)} (${met(ratio(row))}) |`),
  "",
  `${fmt(total)} events a round, ${rounds} rounds, medians compared. The plain loop writes the same records (the event's JSON, keyed by its user) with the same client, ${CONCURRENCY} calls in flight and ${PER_CALL} records a call, as Sluice's destination concurrency and run size; Sluice's figure runs from the first event call to the last delivery, intake included. Kinesis: kinesalite (4 shards), in its own Node.js process; Kafka: the stand-in broker in its own Bun process.`,
];
await record({
  name: "streams",
  title: "Streaming kinds",
  command: `bun scripts/bench-streams.ts --events ${total} --rounds ${rounds}`,
  lines,
  latest: rows.map((row, i) => `${row.kind} ${fmt(median(row.sluice))}${i ? "" : " events/s"}, ${fmt(ratio(row), 2)}${i ? "" : " of the plain loop"} (${met(ratio(row))})`).join("; "),
});
