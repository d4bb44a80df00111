/**
 * An S3-compatible server for the object-storage tests: s3rver (a devDependency) on a random
 * port, in front of it a proxy the test can make fail (503) or hold (never answer) to stand for
 * a store that is down or an upload cut off by a crash.
 */
import { S3Client } from "bun";
import { gunzipSync } from "node:zlib";
import S3rver from "s3rver";
import { tempDir } from "./helpers";

export const S3_KEYS = { accessKeyID: "S3RVER", accessKey: "S3RVER" };

export interface TestStore {
  /** The proxy's URL: what Sluice is given as the kind's base URL. */
  url: string;
  bucket: string;
  /** "pass": forward to s3rver; "fail": answer 503; "hold": keep the request unanswered. */
  mode: "pass" | "fail" | "hold";
  /** Requests that reached the proxy (method and path). */
  seen: string[];
  /** Every object under a prefix, as its key and its lines. */
  objects(prefix?: string): Promise<Array<{ key: string; lines: string[] }>>;
  stop(): Promise<void>;
}

export async function startStore(bucket = "events"): Promise<TestStore> {
  const s3 = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: tempDir("sluice-s3-"), configureBuckets: [{ name: bucket }] });
  const { port } = await s3.run();
  const held: Array<() => void> = [];
  const store: TestStore = {
    url: "",
    bucket,
    mode: "pass",
    seen: [],
    async objects(prefix = "") {
      const client = new S3Client({ endpoint: `http://127.0.0.1:${port}`, bucket, accessKeyId: "S3RVER", secretAccessKey: "S3RVER", region: "us-east-1" });
      const list = await client.list({ prefix });
      const out = [];
      for (const o of list.contents ?? []) {
        const bytes = new Uint8Array(await client.file(o.key).arrayBuffer());
        // node:zlib reads every gzip member of a file, as zcat, Athena and Spark do (Bun.gunzipSync stops after the first).
        out.push({ key: o.key, lines: gunzipSync(bytes).toString("utf8").split("\n").filter(Boolean) });
      }
      return out;
    },
    async stop() {
      for (const release of held.splice(0)) release();
      proxy.stop(true);
      await s3.close();
    },
  };
  const proxy = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      store.seen.push(`${req.method} ${url.pathname}`);
      if (store.mode === "fail") return new Response("<Error><Code>ServiceUnavailable</Code></Error>", { status: 503 });
      if (store.mode === "hold") return new Promise<Response>((resolve) => held.push(() => resolve(new Response("", { status: 503 }))));
      // The signature covers the Host header: it is passed on as the client sent it.
      return fetch(`http://127.0.0.1:${port}${url.pathname}${url.search}`, { method: req.method, headers: req.headers, body: req.body ? await req.arrayBuffer() : undefined });
    },
  });
  store.url = `http://127.0.0.1:${proxy.port}`;
  return store;
}
