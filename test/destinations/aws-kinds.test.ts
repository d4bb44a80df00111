/**
 * FIREHOSE, EVENTBRIDGE and LAMBDA end to end against a stand-in of their APIs that verifies each
 * call's SigV4 signature as AWS does (test/support/aws-stand-in.ts): events in through the event
 * API, calls out as the services take them.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, api, cleanup, createSource, spawnSluice, startSluice, waitFor } from "../support/helpers";
import { type AwsCall, startAwsStandIn } from "../support/aws-stand-in";

const KEYS = { accessKeyID: "AKIDAWSKINDS", accessKey: "aws-kinds-secret" };
let aws: ReturnType<typeof startAwsStandIn>;
let s: TestServer;

beforeAll(async () => {
  aws = startAwsStandIn({ keys: { [KEYS.accessKeyID]: KEYS.accessKey } });
  const baseUrls = ["FIREHOSE", "EVENTBRIDGE", "LAMBDA"].map((k) => `${k}=${aws.url}`).join(",");
  s = await startSluice({ args: ["--destination-base-url", baseUrls, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s?.stop();
  await cleanup(s?.dataDir);
  aws?.stop();
});

async function connect(type: string, config: Record<string, unknown>) {
  const src = await createSource(s.url);
  const res = await api(s.url, "POST", "/v2/destinations", { name: `${type}-${crypto.randomUUID().slice(0, 6)}`, type, config: { region: "us-east-1", ...config }, sourceIds: [src.id] });
  if (res.status !== 201) throw new Error(`create ${type}: ${res.status} ${res.text}`);
  return { src, dst: res.json as { id: string; name: string } };
}
const send = (writeKey: string, events: unknown[]) =>
  fetch(`${s.url}/v1/batch`, { method: "POST", headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${writeKey}:`)}` }, body: JSON.stringify({ batch: events }) });
const counts = async (id: string) => (await api(s.url, "GET", `/v2/destinations/${id}/stats`)).json.counts as Record<string, number>;
const callsFor = (pred: (c: AwsCall) => boolean) => aws.calls.filter(pred);
const decoded = (data: string) => JSON.parse(Buffer.from(data, "base64").toString("utf8"));

describe("FIREHOSE", () => {
  test("mapEvents picks each event's stream (name, then type, then *; any case); records in PutRecordBatch calls, signed", async () => {
    const tag = crypto.randomUUID().slice(0, 6);
    const { src, dst } = await connect("FIREHOSE", { ...KEYS, mapEvents: [{ from: "Order Completed", to: `orders-${tag}` }, { from: "IDENTIFY", to: `people-${tag}` }, { from: "*", to: `rest-${tag}` }] });
    const events = [
      ...Array.from({ length: 30 }, (_, i) => ({ type: "track", event: i % 2 ? "order completed" : "Viewed", userId: `u${i % 3}`, messageId: `f-${tag}-${i}` })),
      { type: "identify", userId: "u1", messageId: `f-${tag}-id`, traits: { a: 1 } },
    ];
    expect((await send(src.writeKey, events)).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).succeeded === 31, { what: "31 delivered" });
    const calls = callsFor((c) => c.target === "Firehose_20150804.PutRecordBatch" && String((c.json as any).DeliveryStreamName).endsWith(tag));
    const byStream = new Map<string, string[]>();
    for (const c of calls) {
      const j = c.json as any;
      for (const r of j.Records) byStream.set(j.DeliveryStreamName, [...(byStream.get(j.DeliveryStreamName) ?? []), decoded(r.Data).messageId]);
    }
    expect(byStream.get(`orders-${tag}`)).toHaveLength(15);
    expect(byStream.get(`rest-${tag}`)).toHaveLength(15);
    expect(byStream.get(`people-${tag}`)).toEqual([`f-${tag}-id`]);
    expect(calls.length).toBeLessThan(31);
    expect(calls.every((c) => c.service === "firehose" && c.region === "us-east-1")).toBe(true);
  });

  test("an event no map entry names aborts with RudderStack's words; a config mapping nothing is refused on save", async () => {
    const { src, dst } = await connect("FIREHOSE", { ...KEYS, mapEvents: [{ from: "Only This", to: "s" }] });
    expect((await send(src.writeKey, [{ type: "track", event: "Other", userId: "u" }])).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).aborted === 1, { what: "aborted" });
    const rows = (await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=aborted`)).json.deliveries;
    expect(JSON.stringify(rows)).toContain("No delivery stream set for this event");
    const bad = await api(s.url, "POST", "/v2/destinations", { name: "fh-bad", type: "FIREHOSE", config: { region: "us-east-1", mapEvents: [{ from: "", to: "" }] } });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("mapEvents");
  });

  test("a record the answer names as failed is retried alone; the others are delivered once", async () => {
    const tag = crypto.randomUUID().slice(0, 6);
    const { src, dst } = await connect("FIREHOSE", { ...KEYS, mapEvents: [{ from: "*", to: `partial-${tag}` }] });
    let failedOnce = false;
    const seen: string[] = [];
    const prev = aws.calls.length;
    // The first call for this stream: its second record fails.
    const events = Array.from({ length: 3 }, (_, i) => ({ type: "track", event: "E", userId: `p${i}`, messageId: `p-${tag}-${i}` }));
    const handle = (c: AwsCall) => {
      const j = c.json as any;
      if (j?.DeliveryStreamName !== `partial-${tag}`) return undefined;
      for (const r of j.Records) seen.push(decoded(r.Data).messageId);
      if (failedOnce) return undefined;
      failedOnce = true;
      return { status: 200, body: { FailedPutCount: 1, Encrypted: false, RequestResponses: j.Records.map((_: unknown, i: number) => (i === 1 ? { ErrorCode: "ServiceUnavailableException", ErrorMessage: "Slow down." } : { RecordId: `r${i}` })) } };
    };
    aws.setHandler(handle);
    try {
      expect((await send(src.writeKey, events)).status).toBe(200);
      await waitFor(async () => (await counts(dst.id)).succeeded === 3, { what: "3 delivered" });
    } finally {
      aws.setHandler(undefined);
    }
    expect(aws.calls.length).toBeGreaterThan(prev);
    // The failed record went twice, each other once.
    const times = (id: string) => seen.filter((x) => x === id).length;
    const failed = seen[1]!;
    expect(times(failed)).toBe(2);
    for (const id of events.map((e) => e.messageId).filter((id) => id !== failed)) expect(times(id)).toBe(1);
  });
});

describe("EVENTBRIDGE", () => {
  test("entries as RudderStack makes them (Source rudderstack, Detail the event's JSON, Resources from resourceID), up to 10 a PutEvents call", async () => {
    const tag = crypto.randomUUID().slice(0, 6);
    const { src, dst } = await connect("EVENTBRIDGE", { ...KEYS, detailType: `dt-${tag}`, eventBusName: "bus-1", resourceID: [{ arn: "arn:aws:r1" }, { arn: "" }] });
    const events = Array.from({ length: 25 }, (_, i) => ({ type: "track", event: "E", userId: `u${i % 2}`, messageId: `e-${tag}-${i}`, properties: { i } }));
    expect((await send(src.writeKey, events)).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).succeeded === 25, { what: "25 delivered" });
    const calls = callsFor((c) => c.target === "AWSEvents.PutEvents" && (c.json as any).Entries[0].DetailType === `dt-${tag}`);
    const entries = calls.flatMap((c) => (c.json as any).Entries);
    expect(entries).toHaveLength(25);
    expect(calls.every((c) => (c.json as any).Entries.length <= 10 && c.service === "events")).toBe(true);
    expect(entries[0]).toEqual({ DetailType: `dt-${tag}`, Detail: expect.any(String), EventBusName: "bus-1", Resources: ["arn:aws:r1"], Source: "rudderstack" });
    expect(JSON.parse(entries[0].Detail)).toMatchObject({ type: "track", event: "E" });
  });

  test("an entry the answer names as failed is aborted, as rudder-server answers 400 for it; the others are delivered", async () => {
    const tag = crypto.randomUUID().slice(0, 6);
    const { src, dst } = await connect("EVENTBRIDGE", { ...KEYS, detailType: `fail-${tag}` });
    aws.setHandler((c) => {
      const j = c.json as any;
      if (j?.Entries?.[0]?.DetailType !== `fail-${tag}`) return undefined;
      return { status: 200, body: { FailedEntryCount: 1, Entries: j.Entries.map((_: unknown, i: number) => (i === 0 ? { ErrorCode: "MalformedDetail", ErrorMessage: "Detail is malformed." } : { EventId: `ev${i}` })) } };
    });
    try {
      expect((await send(src.writeKey, [{ type: "track", event: "A", userId: "x1" }, { type: "track", event: "B", userId: "x2" }])).status).toBe(200);
      await waitFor(async () => {
        const c = await counts(dst.id);
        return c.aborted === 1 && c.succeeded === 1;
      }, { what: "one aborted, one delivered" });
    } finally {
      aws.setHandler(undefined);
    }
    const rows = (await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=aborted`)).json.deliveries;
    expect(JSON.stringify(rows)).toContain("MalformedDetail");
  });
});

describe("LAMBDA", () => {
  test("each event invokes the function asynchronously with the event's JSON, its client context, signed", async () => {
    const { src, dst } = await connect("LAMBDA", { accessKeyId: KEYS.accessKeyID, accessKey: KEYS.accessKey, lambda: "arn:aws:lambda:us-east-1:123:function:single", clientContext: "eyJhIjoxfQ==" });
    expect((await send(src.writeKey, [{ type: "track", event: "E", userId: "l1", messageId: "l-1" }, { type: "identify", userId: "l1", messageId: "l-2" }])).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).succeeded === 2, { what: "2 delivered" });
    const calls = callsFor((c) => c.service === "lambda" && decodeURIComponent(c.path).includes("function:single"));
    expect(calls).toHaveLength(2);
    expect(calls[0]!.path).toBe(`/2015-03-31/functions/${encodeURIComponent("arn:aws:lambda:us-east-1:123:function:single")}/invocations`);
    expect(calls[0]!.headers["x-amz-invocation-type"]).toBe("Event");
    expect(calls[0]!.headers["x-amz-client-context"]).toBe("eyJhIjoxfQ==");
    expect(calls.map((c) => (c.json as any).messageId)).toEqual(["l-1", "l-2"]);
  });

  test("enableBatchInput: a user's events in one payload (a JSON list), at most maxBatchSize", async () => {
    const { src, dst } = await connect("LAMBDA", { accessKeyId: KEYS.accessKeyID, accessKey: KEYS.accessKey, lambda: "batched", enableBatchInput: true, maxBatchSize: "4" });
    const events = Array.from({ length: 10 }, (_, i) => ({ type: "track", event: "E", userId: "one", messageId: `b-${i}` }));
    expect((await send(src.writeKey, events)).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).succeeded === 10, { what: "10 delivered" });
    const calls = callsFor((c) => c.service === "lambda" && c.path.includes("/functions/batched/"));
    const lists = calls.map((c) => (c.json as any[]).map((e) => e.messageId));
    expect(lists.flat()).toEqual(events.map((e) => e.messageId));
    expect(Math.max(...lists.map((l) => l.length))).toBeLessThanOrEqual(4);
    expect(lists.length).toBeLessThan(10);
  });

  test("a function that does not exist aborts with Lambda's words; without credentials the delivery aborts naming accessKeyId", async () => {
    const { src, dst } = await connect("LAMBDA", { accessKeyId: KEYS.accessKeyID, accessKey: KEYS.accessKey, lambda: "gone" });
    aws.setHandler((c) => (c.path.includes("/functions/gone/") ? { status: 404, body: { Type: "User", message: "Function not found: arn:aws:lambda:us-east-1:123:function:gone" } } : undefined));
    try {
      expect((await send(src.writeKey, [{ type: "track", event: "E", userId: "g" }])).status).toBe(200);
      await waitFor(async () => (await counts(dst.id)).aborted === 1, { what: "aborted" });
    } finally {
      aws.setHandler(undefined);
    }
    expect(JSON.stringify((await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=aborted`)).json.deliveries)).toContain("Function not found");
    const nokeys = await connect("LAMBDA", { lambda: "f" });
    expect((await send(nokeys.src.writeKey, [{ type: "track", event: "E", userId: "g" }])).status).toBe(200);
    await waitFor(async () => (await counts(nokeys.dst.id)).aborted === 1, { what: "aborted without keys" });
    expect(JSON.stringify((await api(s.url, "GET", `/v2/destinations/${nokeys.dst.id}/deliveries?state=aborted`)).json.deliveries)).toContain("set accessKeyId and accessKey");
  });

  test("throttled (429) and failing (5xx) invocations are retried, then delivered", async () => {
    const { src, dst } = await connect("LAMBDA", { accessKeyId: KEYS.accessKeyID, accessKey: KEYS.accessKey, lambda: "flaky" });
    let n = 0;
    aws.setHandler((c) => {
      if (!c.path.includes("/functions/flaky/")) return undefined;
      n++;
      if (n === 1) return { status: 429, body: { Type: "User", message: "Rate Exceeded." } };
      if (n === 2) return { status: 500, body: { Type: "Service", message: "ServiceException" } };
      return undefined;
    });
    try {
      expect((await send(src.writeKey, [{ type: "track", event: "E", userId: "f" }])).status).toBe(200);
      await waitFor(async () => (await counts(dst.id)).succeeded === 1, { what: "delivered after two retries" });
    } finally {
      aws.setHandler(undefined);
    }
    expect(n).toBe(3);
  });
});

test("the Test API does not support the AWS kinds: the not-tested form", async () => {
  for (const [type, config] of [["FIREHOSE", { mapEvents: [{ from: "*", to: "s" }] }], ["EVENTBRIDGE", { detailType: "d" }], ["LAMBDA", { lambda: "f" }]] as const) {
    const { dst } = await connect(type, { ...KEYS, ...config });
    const res = await fetch(`${s.url}/v0/testDestination/${dst.id}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${ADMIN_EMAIL}:${ADMIN_TOKEN}`)}` },
      body: JSON.stringify({ message: { type: "track", event: "E", userId: "u" } }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toContain(`the Test API does not support ${type} destinations`);
  }
  // Every call Sluice made was signed as AWS checks it.
  expect(aws.refused).toEqual([]);
});

describe("roleBasedAuth", () => {
  test("with iamRoleARN, the role is assumed through STS with Sluice's own AWS credentials and the workspace's id as external id; calls are signed with the temporary keys, assumed once", async () => {
    const keys: Record<string, string> = { AKIDSLUICEBASE: "sluice-base-secret" };
    const sts: Array<{ role: string | null; externalId: string | null; signedBy: string }> = [];
    const stand = startAwsStandIn({
      keys,
      handle(call) {
        if (call.service !== "sts") return undefined;
        const form = new URLSearchParams(call.body);
        sts.push({ role: form.get("RoleArn"), externalId: form.get("ExternalId"), signedBy: call.accessKeyId });
        // The temporary keys become keys the stand-in verifies from now on.
        keys.ASIATEMPORARY1 = "temporary-secret";
        const expiration = new Date(Date.now() + 3_600_000).toISOString();
        return {
          status: 200,
          body: `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials><AccessKeyId>ASIATEMPORARY1</AccessKeyId><SecretAccessKey>temporary-secret</SecretAccessKey><SessionToken>session-token-1</SessionToken><Expiration>${expiration}</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>`,
        };
      },
    });
    const t = await spawnSluice({ env: { AWS_ACCESS_KEY_ID: "AKIDSLUICEBASE", AWS_SECRET_ACCESS_KEY: "sluice-base-secret" }, args: ["--destination-base-url", `FIREHOSE=${stand.url}`] });
    try {
      const src = await createSource(t.url);
      const role = "arn:aws:iam::123456789012:role/sluice-writes";
      const dst = (await api(t.url, "POST", "/v2/destinations", { name: "fh-role", type: "FIREHOSE", config: { region: "us-east-1", roleBasedAuth: true, iamRoleARN: role, mapEvents: [{ from: "*", to: "role-stream" }] }, sourceIds: [src.id] })).json;
      for (let round = 0; round < 3; round++) {
        const res = await fetch(`${t.url}/v1/track`, { method: "POST", headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${src.writeKey}:`)}` }, body: JSON.stringify({ userId: `r${round}`, event: "E" }) });
        expect(res.status).toBe(200);
        await waitFor(async () => (await api(t.url, "GET", `/v2/destinations/${dst.id}/stats`)).json.counts.succeeded === round + 1, { what: `round ${round} delivered` });
      }
      expect(sts).toHaveLength(1);
      expect(sts[0]).toMatchObject({ role, signedBy: "AKIDSLUICEBASE" });
      expect(sts[0]!.externalId).toStartWith("ws_");
      const puts = stand.calls.filter((c) => c.target === "Firehose_20150804.PutRecordBatch");
      expect(puts).toHaveLength(3);
      for (const p of puts) {
        expect(p.accessKeyId).toBe("ASIATEMPORARY1");
        expect(p.headers["x-amz-security-token"]).toBe("session-token-1");
      }
      expect(stand.refused).toEqual([]);
    } finally {
      t.proc.kill("SIGKILL");
      await t.proc.exited;
      await cleanup(t.dataDir);
      stand.stop();
    }
  }, 30_000);

  test("without AWS credentials in Sluice's environment, a role cannot be assumed: the delivery aborts saying so", async () => {
    const { src, dst } = await connect("FIREHOSE", { roleBasedAuth: true, iamRoleARN: "arn:aws:iam::1:role/r", mapEvents: [{ from: "*", to: "s" }] });
    expect((await send(src.writeKey, [{ type: "track", event: "E", userId: "n" }])).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).aborted === 1, { what: "aborted" });
    expect(JSON.stringify((await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=aborted`)).json.deliveries)).toContain("needs AWS credentials in Sluice's environment");
  });
});
