/**
 * KINESIS end to end against kinesalite (a real Kinesis implementation, started here): events in
 * through the event API, records out of the stream, checked by reading the stream back.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { kinesis } from "../../src/destinations/kinesis";
import type { DestinationContext, SluiceEvent } from "../../src/destinations/types";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, api, cleanup, createSource, startSluice, waitFor } from "../support/helpers";
import { KINESIS_KEYS, type Kinesalite, freePort, haveNode, requireKinesis, startKinesalite } from "../support/kinesalite";

requireKinesis("test/destinations/kinesis.test.ts");

const ctx = (config: Record<string, unknown>): DestinationContext => ({ config: { region: "us-east-1", stream: "s", ...config }, destination: { id: "dst_k", name: "k", workspaceId: "ws_1" } });

describe("KINESIS transform (RudderStack's shape)", () => {
  test("{message, userId}: the event as it is, userId falling back to anonymousId; the endpoint is the region's", () => {
    const event = { type: "track", event: "E", messageId: "m1", anonymousId: "a1", properties: { x: 1 } } as SluiceEvent;
    const [r] = kinesis.transform(event, ctx({ region: "eu-west-1" })) as any[];
    expect(r.body.JSON).toEqual({ message: event, userId: "a1" });
    expect(r.endpoint).toBe("https://kinesis.eu-west-1.amazonaws.com/");
    expect((kinesis.transform({ ...event, userId: "u1" } as SluiceEvent, ctx({})) as any[])[0].body.JSON.userId).toBe("u1");
  });
});

describe("KINESIS batching and per-record answers", () => {
  const req = (userId: string, i: number) => (kinesis.transform({ type: "track", event: "E", userId, messageId: `m${i}` } as SluiceEvent, ctx({})) as any[])[0];
  test("a run goes as one PutRecords call; a record the answer names as failed retries its own event only", () => {
    const own = [req("u1", 0), req("u2", 1), req("u1", 2)];
    const merged = kinesis.batch!(own, ctx({}));
    expect(merged).toHaveLength(1);
    expect((merged[0]!.body.JSON as any).records).toHaveLength(3);
    const answer = { FailedRecordCount: 1, Records: [{ SequenceNumber: "1", ShardId: "s" }, { ErrorCode: "ProvisionedThroughputExceededException", ErrorMessage: "Rate exceeded for shard" }, { SequenceNumber: "2", ShardId: "s" }] };
    const check = kinesis.checkResponse!({ status: 200, body: JSON.stringify(answer) }, merged[0]!, ctx({})) as any;
    expect(check.outcome).toBe("per-event");
    expect(check.verdictFor([own[0]])).toEqual({ outcome: "ok" });
    expect(check.verdictFor([own[1]])).toEqual({ outcome: "retry", error: "Kinesis refused the record: ProvisionedThroughputExceededException: Rate exceeded for shard" });
    expect(check.verdictFor([own[2]])).toEqual({ outcome: "ok" });
    expect(kinesis.checkResponse!({ status: 200, body: JSON.stringify({ FailedRecordCount: 0, Records: [{}, {}, {}] }) }, merged[0]!, ctx({}))).toEqual({ outcome: "ok" });
  });

  test("at most 500 records a call, and about 5 MB", () => {
    const many = Array.from({ length: 1201 }, (_, i) => req(`u${i}`, i));
    expect(kinesis.batch!(many, ctx({})).map((m) => (m.body.JSON as any).records.length)).toEqual([500, 500, 201]);
    const big = (i: number) => (kinesis.transform({ type: "track", event: "E", userId: "u", messageId: `b${i}`, properties: { pad: "x".repeat(1024 * 1024) } } as SluiceEvent, ctx({})) as any[])[0];
    expect(kinesis.batch!([big(0), big(1), big(2), big(3), big(4)], ctx({})).map((m) => (m.body.JSON as any).records.length)).toEqual([3, 2]);
  });
});

describe.if(haveNode)("KINESIS against kinesalite", () => {
  let k: Kinesalite;
  let s: TestServer;
  beforeAll(async () => {
    k = await startKinesalite();
    s = await startSluice({ args: ["--destination-base-url", `KINESIS=${k.url}`, "--retry-backoff-ms", "50"] });
  });
  afterAll(async () => {
    await s?.stop();
    await cleanup(s?.dataDir);
    await k?.stop();
  });

  const connect = async (config: Record<string, unknown>) => {
    const src = await createSource(s.url);
    const res = await api(s.url, "POST", "/v2/destinations", { name: `kinesis-${crypto.randomUUID().slice(0, 6)}`, type: "KINESIS", config: { region: "us-east-1", ...KINESIS_KEYS, ...config }, sourceIds: [src.id] });
    expect(res.status).toBe(201);
    return { src, dst: res.json as { id: string; name: string } };
  };
  const batch = (writeKey: string, events: unknown[]) =>
    fetch(`${s.url}/v1/batch`, { method: "POST", headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${writeKey}:`)}` }, body: JSON.stringify({ batch: events }) });
  const counts = async (id: string) => (await api(s.url, "GET", `/v2/destinations/${id}/stats`)).json.counts as Record<string, number>;

  test("300 events of three users: every one a record, its data the event's JSON, partitioned by userId, each user's in order, in few PutRecords calls", async () => {
    await k.createStream("events", 2);
    const { src, dst } = await connect({ stream: "events" });
    const events = Array.from({ length: 300 }, (_, i) => ({ type: "track", event: "Order", userId: `u${i % 3}`, messageId: `k-${i}`, properties: { i } }));
    expect((await batch(src.writeKey, events)).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).succeeded === 300, { what: "300 delivered", timeoutMs: 20_000 });
    const records = await k.records("events");
    expect(records).toHaveLength(300);
    for (const r of records) {
      expect(r.partitionKey).toBe(r.data.userId);
      expect(r.data).toMatchObject({ type: "track", event: "Order", messageId: expect.stringMatching(/^k-\d+$/) });
    }
    for (const user of ["u0", "u1", "u2"]) {
      const mine = records.filter((r) => r.partitionKey === user).map((r) => r.data.properties.i);
      expect(mine).toEqual([...mine].sort((a, b) => a - b));
      expect(mine).toHaveLength(100);
    }
    // Each delivery went once, in a PutRecords call of many records (the answer lists each call's records).
    const deliveries = (await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=succeeded&limit=100`)).json.deliveries as any[];
    expect(deliveries).toHaveLength(100);
    expect(deliveries.every((d) => d.attempts === 1)).toBe(true);
    const recordsPerCall = deliveries.map((d) => (JSON.parse(d.lastResponse.length < 1024 ? d.lastResponse : "{}").Records ?? [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).length);
    expect(Math.min(...recordsPerCall)).toBeGreaterThan(1);
  });

  test("useMessageId partitions by the event's messageId", async () => {
    await k.createStream("by-id");
    const { src, dst } = await connect({ stream: "by-id", useMessageId: true });
    expect((await batch(src.writeKey, [{ type: "identify", userId: "u9", messageId: "mid-1", traits: { a: 1 } }])).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).succeeded === 1, { what: "delivered" });
    const [r] = await k.records("by-id");
    expect(r!.partitionKey).toBe("mid-1");
    expect(r!.data).toMatchObject({ type: "identify", userId: "u9", traits: { a: 1 } });
  });

  test("a stream that does not exist aborts the delivery with Kinesis's own words", async () => {
    const { src, dst } = await connect({ stream: "missing-stream" });
    expect((await batch(src.writeKey, [{ type: "track", event: "E", userId: "u1" }])).status).toBe(200);
    const [row] = await waitFor(async () => {
      const l = (await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=aborted`)).json.deliveries as any[];
      return l.length ? l : undefined;
    }, { what: "the delivery aborted" });
    expect(JSON.stringify(row)).toContain("ResourceNotFoundException");
    expect(JSON.stringify(row)).toContain("missing-stream");
  });

  test("without credentials (none on the destination, none in the environment) the delivery aborts saying which keys to set", async () => {
    await k.createStream("no-keys");
    const src = await createSource(s.url);
    const res = await api(s.url, "POST", "/v2/destinations", { name: "kinesis-nokeys", type: "KINESIS", config: { region: "us-east-1", stream: "no-keys" }, sourceIds: [src.id] });
    expect(res.status).toBe(201);
    expect((await batch(src.writeKey, [{ type: "track", event: "E", userId: "u1" }])).status).toBe(200);
    const [row] = await waitFor(async () => {
      const l = (await api(s.url, "GET", `/v2/destinations/${res.json.id}/deliveries?state=aborted`)).json.deliveries as any[];
      return l.length ? l : undefined;
    }, { what: "the delivery aborted" });
    expect(JSON.stringify(row)).toContain("accessKeyID and accessKey");
  });

  test("a config without its stream or region is refused on save, naming the key", async () => {
    const src = await createSource(s.url);
    const noStream = await api(s.url, "POST", "/v2/destinations", { name: "k-bad", type: "KINESIS", config: { region: "us-east-1" }, sourceIds: [src.id] });
    expect(noStream.status).toBe(400);
    expect(noStream.text).toContain("stream");
    const noRegion = await api(s.url, "POST", "/v2/destinations", { name: "k-bad2", type: "KINESIS", config: { stream: "x", region: "" }, sourceIds: [src.id] });
    expect(noRegion.status).toBe(400);
    expect(noRegion.text).toContain("region");
  });

  test("the Test API does not support KINESIS (a streaming platform): the not-tested form", async () => {
    const { dst } = await connect({ stream: "events" });
    const res = await fetch(`${s.url}/v0/testDestination/${dst.id}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${ADMIN_EMAIL}:${ADMIN_TOKEN}`)}` },
      body: JSON.stringify({ message: { type: "track", event: "E", userId: "u" } }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ destinationId: dst.id, destinationName: dst.name, error: "the Test API does not support KINESIS destinations (a streaming platform): the server delivers them itself rather than through a transformer" });
  });
});

describe.if(haveNode)("KINESIS when Kinesis is down", () => {
  test("deliveries are retried, never aborted, and land once it is back; another destination is not held meanwhile", async () => {
    // Kinesis "comes back" as a forwarder to a kinesalite whose stream already exists, opening on
    // the port Sluice calls: a kinesalite started there afresh would first answer that the stream
    // does not exist, which aborts (as it should).
    const k = await startKinesalite();
    await k.createStream("later");
    const port = await freePort();
    // A short backoff: it doubles at every attempt, and the next one after Kinesis is back must come within the test's time.
    const s = await startSluice({ args: ["--destination-base-url", `KINESIS=http://127.0.0.1:${port}`, "--retry-backoff-ms", "20"] });
    let back: ReturnType<typeof Bun.serve> | undefined;
    const sink: string[] = [];
    const hook = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: async (req) => (sink.push(await req.text()), new Response("ok")) });
    try {
      const src = await createSource(s.url);
      const dst = (await api(s.url, "POST", "/v2/destinations", { name: "k-down", type: "KINESIS", config: { region: "us-east-1", stream: "later", ...KINESIS_KEYS }, sourceIds: [src.id] })).json;
      await api(s.url, "POST", "/v2/destinations", { name: "hook", type: "WEBHOOK", config: { webhookUrl: `http://127.0.0.1:${hook.port}/h` }, sourceIds: [src.id] });
      const events = Array.from({ length: 20 }, (_, i) => ({ type: "track", event: "E", userId: `u${i % 4}`, messageId: `d-${i}`, properties: { i } }));
      const res = await fetch(`${s.url}/v1/batch`, { method: "POST", headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${src.writeKey}:`)}` }, body: JSON.stringify({ batch: events }) });
      expect(res.status).toBe(200);
      // The webhook beside it gets every event while Kinesis is down.
      await waitFor(() => sink.length === 20, { what: "the webhook's 20 events" });
      const retrying = await waitFor(async () => {
        const c = (await api(s.url, "GET", `/v2/destinations/${dst.id}/stats`)).json.counts;
        return c.retrying >= 1 ? c : undefined;
      }, { what: "Kinesis deliveries retrying" });
      expect(retrying.aborted ?? 0).toBe(0);
      back = Bun.serve({
        port,
        hostname: "127.0.0.1",
        fetch: async (req) => {
          const answer = await fetch(k.url + new URL(req.url).pathname, { method: req.method, headers: req.headers, body: await req.arrayBuffer() });
          return new Response(await answer.arrayBuffer(), { status: answer.status, headers: answer.headers });
        },
      });
      await waitFor(async () => (await api(s.url, "GET", `/v2/destinations/${dst.id}/stats`)).json.counts.succeeded === 20, { what: "all 20 delivered once Kinesis is back", timeoutMs: 30_000 });
      expect((await api(s.url, "GET", `/v2/destinations/${dst.id}/stats`)).json.counts.aborted ?? 0).toBe(0);
      const records = await k.records("later");
      expect(new Set(records.map((r) => r.data.messageId)).size).toBe(20);
    } finally {
      hook.stop(true);
      back?.stop(true);
      await s.stop();
      await cleanup(s.dataDir);
      await k.stop();
    }
  }, 60_000);
});
