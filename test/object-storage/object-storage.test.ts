import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { objectKeyOf } from "../../src/object-storage/stores";
import { type TestServer, api, cleanup, createSource, sendEvent, spawnSluice, startSluice, tempDir, waitFor } from "../support/helpers";
import { S3_KEYS, type TestStore, startStore } from "../support/s3";

const KEY = /^raw\/rudder-logs\/(src_[0-9a-f]+)\/(\d{4}-\d{2}-\d{2})\/(\d+)\.(src_[0-9a-f]+)\.[0-9a-f-]{36}\.json\.gz$/;
const today = () => new Date().toISOString().slice(0, 10);

test("object keys follow rudder-server's layout: <prefix>/rudder-logs/<sourceId>/<YYYY-MM-DD>/<unix>.<sourceId>.<uuid>.json.gz", () => {
  const name = `1764201600.src_1.${"0".repeat(8)}-0000-0000-0000-${"0".repeat(12)}.json.gz`;
  expect(objectKeyOf("/raw/", name)).toBe(`raw/rudder-logs/src_1/2025-11-27/${name}`);
  expect(objectKeyOf("", name)).toBe(`rudder-logs/src_1/2025-11-27/${name}`);
  expect(objectKeyOf("a/b", "stray.txt")).toBeUndefined();
});

describe("object storage through a real Sluice", () => {
  let store: TestStore;
  let s: TestServer;
  beforeAll(async () => {
    store = await startStore();
    s = await startSluice({ args: ["--destination-base-url", `S3=${store.url},MINIO=${store.url}`, "--object-storage-batch-events", "5", "--object-storage-batch-seconds", "1", "--retry-backoff-ms", "50"] });
  });
  afterAll(async () => {
    await s.stop();
    await store.stop();
    await cleanup(s.dataDir);
  });

  async function connected(type: string, config: Record<string, unknown>) {
    const src = await createSource(s.url);
    const dst = await api(s.url, "POST", "/v2/destinations", { name: `${type}-${crypto.randomUUID().slice(0, 6)}`, type, config, sourceIds: [src.id] });
    expect(dst.status).toBe(201);
    return { src, dst: dst.json as { id: string } };
  }
  const objectsOf = async (sourceId: string) => (await store.objects("raw/")).filter((o) => o.key.includes(`/${sourceId}/`));

  test("S3: events land as gzipped JSON lines under rudder-server's keys; a file closes at the event count, the rest at its age", async () => {
    const { src } = await connected("S3", { bucketName: store.bucket, prefix: "raw", ...S3_KEYS });
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const messageId = `m-${i}`;
      ids.push(messageId);
      expect((await sendEvent(s.url, src.writeKey, "track", { userId: `u${i % 3}`, event: "Bought", messageId, properties: { i } })).status).toBe(200);
    }
    const objects = await waitFor(async () => {
      const o = await objectsOf(src.id);
      return o.flatMap((x) => x.lines).length === 7 ? o : undefined;
    }, { what: "all seven events uploaded" });
    expect(objects.map((o) => o.lines.length).sort()).toEqual([2, 5]);
    for (const o of objects) {
      const m = KEY.exec(o.key)!;
      expect(m).not.toBeNull();
      expect(m[1]).toBe(src.id);
      expect(m[4]).toBe(src.id);
      expect(m[2]).toBe(today());
    }
    const events = objects.flatMap((o) => o.lines.map((l) => JSON.parse(l)));
    expect(events.map((e) => e.messageId).sort()).toEqual(ids);
    expect(events.find((e) => e.messageId === "m-3")).toMatchObject({ type: "track", event: "Bought", userId: "u0", properties: { i: 3 } });
  });

  test("MINIO: a store that fails keeps the files on disk and retries; once it recovers every event is uploaded, none twice", async () => {
    const { src, dst } = await connected("MINIO", { endPoint: "minio.invalid:9000", bucketName: store.bucket, prefix: "raw", accessKeyID: "S3RVER", secretAccessKey: "S3RVER" });
    store.mode = "fail";
    const before = store.seen.length;
    try {
      for (let i = 0; i < 12; i++) await sendEvent(s.url, src.writeKey, "identify", { userId: `f${i}`, messageId: `f-${i}`, traits: { i } });
      // Staged on disk counts as delivered: every delivery succeeds while the store is down.
      await waitFor(async () => ((await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=succeeded`)).json.deliveries as any[]).length === 12, { what: "all staged" });
      await waitFor(() => store.seen.slice(before).filter((r) => r.startsWith("PUT")).length >= 3, { what: "uploads tried again" });
      expect(await objectsOf(src.id)).toEqual([]);
    } finally {
      store.mode = "pass";
    }
    const objects = await waitFor(async () => {
      const o = await objectsOf(src.id);
      return o.flatMap((x) => x.lines).length >= 12 ? o : undefined;
    }, { what: "every event uploaded after recovery", timeoutMs: 20_000 });
    const ids = objects.flatMap((o) => o.lines.map((l) => JSON.parse(l).messageId)).sort();
    expect(ids).toEqual(Array.from({ length: 12 }, (_, i) => `f-${i}`).sort());
  });
});

describe("object storage across a kill -9", () => {
  test("a Sluice killed during an upload uploads the file when it starts again: nothing lost, the same key, no duplicate file", async () => {
    const store = await startStore();
    const dataDir = tempDir();
    const args = ["--destination-base-url", `S3=${store.url}`, "--object-storage-batch-events", "4", "--object-storage-batch-seconds", "60"];
    let first = await spawnSluice({ dataDir, args });
    try {
      const src = await createSource(first.url);
      const dst = await api(first.url, "POST", "/v2/destinations", { name: "s3-crash", type: "S3", config: { bucketName: store.bucket, prefix: "raw", ...S3_KEYS }, sourceIds: [src.id] });
      expect(dst.status).toBe(201);
      store.mode = "hold";
      for (let i = 0; i < 6; i++) await sendEvent(first.url, src.writeKey, "track", { userId: "k", event: "E", messageId: `k-${i}` });
      // Four events fill a file whose upload the store holds; two more wait in the next file.
      await waitFor(() => store.seen.some((r) => r.startsWith("PUT")), { what: "the upload to start" });
      await waitFor(async () => ((await api(first.url, "GET", `/v2/destinations/${dst.json.id}/deliveries?state=succeeded`)).json.deliveries as any[]).length === 6, { what: "all six staged" });
      first.proc.kill(9);
      await first.proc.exited;
      store.mode = "pass";

      first = await spawnSluice({ dataDir, args });
      const objects = await waitFor(async () => {
        const o = (await store.objects("raw/")).filter((x) => x.key.includes(src.id));
        return o.flatMap((x) => x.lines).length >= 6 ? o : undefined;
      }, { what: "every event uploaded after the restart", timeoutMs: 30_000 });
      const ids = objects.flatMap((o) => o.lines.map((l) => JSON.parse(l).messageId)).sort();
      expect(ids).toEqual(["k-0", "k-1", "k-2", "k-3", "k-4", "k-5"]);
      // The held file was uploaded again under its own key after the restart: two files, no third.
      expect(objects.map((o) => o.lines.length).sort()).toEqual([2, 4]);
      expect(objects.every((o) => KEY.test(o.key))).toBe(true);
    } finally {
      first.proc.kill(9);
      await store.stop();
      await cleanup(dataDir);
    }
  });
});
