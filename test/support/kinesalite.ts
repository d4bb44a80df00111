/**
 * kinesalite (npm, a Kinesis implementation in Node.js) started by the tests on a port of their
 * own, in memory, and a signed client to create streams and read their records back. It needs
 * Node.js, which every machine of this project has; a laptop without it skips the Kinesis tests
 * with a message, and CI (SLUICE_REQUIRE_KINESIS, set by .ci/run) fails instead.
 */
import { AwsClient } from "aws4fetch";
import { join } from "node:path";
import { waitFor } from "./helpers";

export const KINESIS_KEYS = { accessKeyID: "AKIDSLUICETEST", accessKey: "sluice-test-secret" };
const CLI = join(import.meta.dir, "../../node_modules/kinesalite/cli.js");

export const haveNode = Bun.which("node") !== null;

export function requireKinesis(file: string) {
  if (haveNode) return;
  if (process.env.SLUICE_REQUIRE_KINESIS) throw new Error(`${file}: Node.js is needed to run kinesalite (SLUICE_REQUIRE_KINESIS is set)`);
  console.warn(`${file}: skipped, Node.js is not installed (kinesalite runs on it)`);
}

export interface Kinesalite {
  url: string;
  port: number;
  call(target: string, body: Record<string, unknown>): Promise<{ status: number; json: any }>;
  createStream(name: string, shards?: number): Promise<void>;
  /** Every record of the stream, oldest first, over all its shards. */
  records(stream: string): Promise<Array<{ data: any; partitionKey: string; shard: string }>>;
  stop(): Promise<void>;
}

export async function startKinesalite(port = 0): Promise<Kinesalite> {
  const chosen = port || (await freePort());
  const proc = Bun.spawn(["node", CLI, "--port", String(chosen), "--createStreamMs", "0", "--deleteStreamMs", "0", "--updateStreamMs", "0"], { stdout: "pipe", stderr: "pipe" });
  const url = `http://127.0.0.1:${chosen}`;
  const aws = new AwsClient({ accessKeyId: KINESIS_KEYS.accessKeyID, secretAccessKey: KINESIS_KEYS.accessKey, region: "us-east-1", service: "kinesis" });
  const call = async (target: string, body: Record<string, unknown>) => {
    const res = await aws.fetch(`${url}/`, { method: "POST", headers: { "content-type": "application/x-amz-json-1.1", "x-amz-target": `Kinesis_20131202.${target}` }, body: JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : {} };
  };
  await waitFor(async () => (await call("ListStreams", {}).catch(() => undefined))?.status === 200, { what: "kinesalite to listen", timeoutMs: 15_000 });
  return {
    url,
    port: chosen,
    call,
    async createStream(name, shards = 1) {
      const r = await call("CreateStream", { StreamName: name, ShardCount: shards });
      if (r.status !== 200) throw new Error(`CreateStream ${name}: ${r.status} ${JSON.stringify(r.json)}`);
      await waitFor(async () => (await call("DescribeStream", { StreamName: name })).json.StreamDescription?.StreamStatus === "ACTIVE", { what: `stream ${name} active` });
    },
    async records(stream) {
      const shards = (await call("DescribeStream", { StreamName: stream })).json.StreamDescription.Shards as Array<{ ShardId: string }>;
      const out: Array<{ data: any; partitionKey: string; shard: string; seq: string }> = [];
      for (const { ShardId } of shards) {
        let iterator = (await call("GetShardIterator", { StreamName: stream, ShardId, ShardIteratorType: "TRIM_HORIZON" })).json.ShardIterator;
        for (;;) {
          const r = (await call("GetRecords", { ShardIterator: iterator, Limit: 10_000 })).json;
          for (const rec of r.Records ?? []) out.push({ data: JSON.parse(Buffer.from(rec.Data, "base64").toString("utf8")), partitionKey: rec.PartitionKey, shard: ShardId, seq: rec.SequenceNumber });
          if (!r.Records?.length || !r.NextShardIterator) break;
          iterator = r.NextShardIterator;
        }
      }
      return out.sort((a, b) => (BigInt(a.seq) < BigInt(b.seq) ? -1 : BigInt(a.seq) > BigInt(b.seq) ? 1 : 0));
    },
    async stop() {
      proc.kill("SIGKILL");
      await proc.exited;
    },
  };
}

export async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}
