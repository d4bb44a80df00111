/**
 * KAFKA, CONFLUENT_CLOUD and AZURE_EVENT_HUB end to end against the protocol stand-in broker
 * (test/support/kafka-broker.ts: no Kafka broker can be installed here). Events in through the
 * event API, records out as the broker received them: keys, values, topics, order, TLS with a
 * self-signed CA, SASL PLAIN and SCRAM, a broker that refuses, stalls or is down.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Type } from "avsc";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type TestServer, ADMIN_EMAIL, ADMIN_TOKEN, api, cleanup, createSource, spawnSluice, startSluice, waitFor } from "../support/helpers";
import { type KafkaBroker, startKafkaBroker } from "../support/kafka-broker";
import { type Sshd, haveSshd, requireSshd, startSshd } from "../support/sshd";

requireSshd("kafka.test.ts");

let s: TestServer;
const brokers: KafkaBroker[] = [];
const start = (opts: Parameters<typeof startKafkaBroker>[0]) => {
  const b = startKafkaBroker(opts);
  brokers.push(b);
  return b;
};

beforeAll(async () => {
  s = await startSluice({ args: ["--retry-backoff-ms", "20", "--destination-timeout-ms", "3000"] });
});
afterAll(async () => {
  await s?.stop();
  await cleanup(s?.dataDir);
  for (const b of brokers) await b.stop();
});

const connect = async (type: string, config: Record<string, unknown>) => {
  const src = await createSource(s.url);
  const res = await api(s.url, "POST", "/v2/destinations", { name: `${type}-${crypto.randomUUID().slice(0, 6)}`, type, config, sourceIds: [src.id] });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`);
  return { src, dst: res.json as { id: string; name: string } };
};
const send = (writeKey: string, events: unknown[]) =>
  fetch(`${s.url}/v1/batch`, { method: "POST", headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${writeKey}:`)}` }, body: JSON.stringify({ batch: events }) });
const counts = async (id: string) => (await api(s.url, "GET", `/v2/destinations/${id}/stats`)).json.counts as Record<string, number>;
const hostPort = (b: KafkaBroker) => ({ hostName: b.host, port: String(b.port) });
const value = (r: { value: Buffer | null }) => JSON.parse(r.value!.toString("utf8"));

/** A CA and a certificate for 127.0.0.1 signed by it, made with openssl. */
function certificates() {
  const dir = mkdtempSync(join(tmpdir(), "sluice-kafka-tls-"));
  const run = (args: string[]) => {
    const p = Bun.spawnSync(["openssl", ...args], { cwd: dir, stderr: "pipe" });
    if (p.exitCode !== 0) throw new Error(`openssl ${args[0]}: ${p.stderr.toString()}`);
  };
  run(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Sluice Test CA"]);
  run(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"]);
  Bun.write(join(dir, "ext.cnf"), "subjectAltName=IP:127.0.0.1\n");
  run(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf"]);
  const read = (f: string) => readFileSync(join(dir, f), "utf8");
  return { ca: read("ca.pem"), key: read("server.key"), cert: read("server.pem") };
}

describe("KAFKA", () => {
  test("300 events of three users: one record each, the event's JSON as value and userId as key, each user's in order, few produce calls", async () => {
    const b = start({ topics: { events: 3 } });
    const { src, dst } = await connect("KAFKA", { ...hostPort(b), topic: "events" });
    const events = Array.from({ length: 300 }, (_, i) => ({ type: "track", event: "Order", userId: `u${i % 3}`, messageId: `k-${i}`, properties: { i } }));
    expect((await send(src.writeKey, events)).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).succeeded === 300, { what: "300 delivered", timeoutMs: 20_000 });
    expect(b.records).toHaveLength(300);
    for (const r of b.records) expect(r.key!.toString()).toBe(value(r).userId);
    for (const u of ["u0", "u1", "u2"]) {
      const mine = b.records.filter((r) => r.key!.toString() === u).map((r) => value(r).properties.i);
      expect(mine).toHaveLength(100);
      expect(mine).toEqual([...mine].sort((x, y) => x - y));
    }
    expect(b.produceRequests).toBeLessThan(100);
  });

  test("topics: integrations.Kafka.topic, then enableMultiTopic's maps (type any case; track names exact case), then the config's", async () => {
    const b = start({ topics: { main: 1, people: 1, orders: 1, chosen: 1 } });
    const { src, dst } = await connect("KAFKA", {
      ...hostPort(b),
      topic: "main",
      enableMultiTopic: true,
      eventTypeToTopicMap: [{ from: "IDENTIFY", to: "people" }],
      eventToTopicMap: [{ from: "Order Completed", to: "orders" }],
    });
    const events = [
      { type: "identify", userId: "a", messageId: "t1" },
      { type: "track", event: "Order Completed", userId: "a", messageId: "t2" },
      { type: "track", event: "order completed", userId: "a", messageId: "t3" },
      { type: "track", event: "Other", userId: "a", messageId: "t4", integrations: { Kafka: { topic: "chosen" } } },
    ];
    expect((await send(src.writeKey, events)).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).succeeded === 4, { what: "4 delivered" });
    const topicOf = (id: string) => b.records.find((r) => value(r).messageId === id)?.topic;
    expect([topicOf("t1"), topicOf("t2"), topicOf("t3"), topicOf("t4")]).toEqual(["people", "orders", "main", "chosen"]);
  });

  test("TLS with the destination's CA certificate, and SASL PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 over it", async () => {
    const { ca, key, cert } = certificates();
    for (const [saslType, mechanism] of [["plain", "plain"], ["sha256", "scram-sha-256"], ["sha512", "scram-sha-512"]] as const) {
      const b = start({ topics: { secure: 1 }, tls: { key, cert }, sasl: { mechanism, username: "sluice", password: "s3cret" } });
      const { src, dst } = await connect("KAFKA", { ...hostPort(b), topic: "secure", sslEnabled: true, caCertificate: ca, useSASL: true, saslType, username: "sluice", password: "s3cret" });
      expect((await send(src.writeKey, [{ type: "track", event: "E", userId: "t", messageId: `tls-${saslType}` }])).status).toBe(200);
      await waitFor(async () => (await counts(dst.id)).succeeded === 1, { what: `delivered over TLS with ${saslType}` });
      expect(b.records.map((r) => value(r).messageId)).toEqual([`tls-${saslType}`]);
    }
  });

  test("a wrong password aborts with Kafka's refusal; another CA's broker is never trusted (retried, nothing sent)", async () => {
    const { ca, key, cert } = certificates();
    const other = certificates();
    const b = start({ topics: { secure: 1 }, tls: { key, cert }, sasl: { mechanism: "plain", username: "sluice", password: "right" } });
    const wrong = await connect("KAFKA", { ...hostPort(b), topic: "secure", sslEnabled: true, caCertificate: ca, useSASL: true, saslType: "plain", username: "sluice", password: "wrong" });
    expect((await send(wrong.src.writeKey, [{ type: "track", event: "E", userId: "w" }])).status).toBe(200);
    await waitFor(async () => (await counts(wrong.dst.id)).aborted === 1, { what: "aborted on refused credentials" });
    expect(JSON.stringify((await api(s.url, "GET", `/v2/destinations/${wrong.dst.id}/deliveries?state=aborted`)).json.deliveries)).toContain("credentials");
    const untrusted = await connect("KAFKA", { ...hostPort(b), topic: "secure", sslEnabled: true, caCertificate: other.ca, useSASL: true, saslType: "plain", username: "sluice", password: "right" });
    expect((await send(untrusted.src.writeKey, [{ type: "track", event: "E", userId: "x" }])).status).toBe(200);
    await waitFor(async () => (await counts(untrusted.dst.id)).retrying === 1, { what: "retrying against an untrusted broker" });
    expect(b.records).toHaveLength(0);
  });

  test("a retriable refusal is retried, a record Kafka never takes aborts; a stalled or down broker holds only its own destination", async () => {
    const b = start({ topics: { flaky: 1, big: 1 } });
    b.failNext("flaky", 6 /* NOT_LEADER_OR_FOLLOWER */, 3);
    const flaky = await connect("KAFKA", { ...hostPort(b), topic: "flaky" });
    expect((await send(flaky.src.writeKey, [{ type: "track", event: "E", userId: "f", messageId: "flaky-1" }])).status).toBe(200);
    await waitFor(async () => (await counts(flaky.dst.id)).succeeded === 1, { what: "delivered after retries" });
    expect(b.records.filter((r) => r.topic === "flaky")).toHaveLength(1);

    b.failNext("big", 10 /* MESSAGE_TOO_LARGE */, 5);
    const big = await connect("KAFKA", { ...hostPort(b), topic: "big" });
    expect((await send(big.src.writeKey, [{ type: "track", event: "E", userId: "b" }])).status).toBe(200);
    await waitFor(async () => (await counts(big.dst.id)).aborted === 1, { what: "aborted: too large" });

    // A broker that stalls, and one that is down, beside a webhook that must not wait on them.
    const stalled = start({ topics: { slow: 1 } });
    stalled.stall(true);
    const down = start({ topics: { gone: 1 } });
    const downPort = down.port;
    await down.stop();
    const sink: string[] = [];
    const hook = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: async (req) => (sink.push(await req.text()), new Response("ok")) });
    try {
      const src = await createSource(s.url);
      const mk = (name: string, type: string, config: Record<string, unknown>) => api(s.url, "POST", "/v2/destinations", { name, type, config, sourceIds: [src.id] });
      const slowDst = (await mk("slow", "KAFKA", { ...hostPort(stalled), topic: "slow" })).json;
      const goneDst = (await mk("gone", "KAFKA", { hostName: "127.0.0.1", port: String(downPort), topic: "gone" })).json;
      await mk("hook", "WEBHOOK", { webhookUrl: `http://127.0.0.1:${hook.port}/h` });
      const events = Array.from({ length: 30 }, (_, i) => ({ type: "track", event: "E", userId: `h${i % 3}`, messageId: `h-${i}` }));
      expect((await send(src.writeKey, events)).status).toBe(200);
      await waitFor(() => sink.length === 30, { what: "the webhook's 30 events while Kafka stalls and is down", timeoutMs: 10_000 });
      await waitFor(async () => (await counts(goneDst.id)).retrying >= 1, { what: "the down broker's deliveries retrying" });
      await waitFor(async () => (await counts(slowDst.id)).retrying >= 1, { what: "the stalled broker's deliveries retrying", timeoutMs: 20_000 });
      expect((await counts(goneDst.id)).aborted ?? 0).toBe(0);
      stalled.stall(false);
      await waitFor(async () => (await counts(slowDst.id)).succeeded === 30, { what: "the stalled broker's 30 once it answers", timeoutMs: 30_000 });
    } finally {
      hook.stop(true);
    }
  }, 90_000);

  test("configs that cannot work are refused on save, naming the key", async () => {
    const src = await createSource(s.url);
    const save = (config: Record<string, unknown>) => api(s.url, "POST", "/v2/destinations", { name: `k-bad-${crypto.randomUUID().slice(0, 6)}`, type: "KAFKA", config, sourceIds: [src.id] });
    expect((await save({ hostName: "127.0.0.1", port: "9092" })).text).toContain("topic");
    const badCa = await save({ hostName: "127.0.0.1", port: "9092", topic: "t", sslEnabled: true, caCertificate: "-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----" });
    expect(badCa.status).toBe(400);
    expect(badCa.text).toContain("caCertificate");
    const badPort = await save({ hostName: "127.0.0.1", port: "99999", topic: "t" });
    expect(badPort.status).toBe(400);
    expect(badPort.text).toContain("port");
    const badSasl = await save({ hostName: "127.0.0.1", port: "9092", topic: "t", useSASL: true, saslType: "md5" });
    expect(badSasl.status).toBe(400);
    expect(badSasl.text).toContain("saslType");
  });

  test("convertToAvro: the value as Avro binary by the event's schemaId, with the schema id header when embedAvroSchemaID; no schemaId aborts, as in rudder-server", async () => {
    const b = start({ topics: { avro: 1 } });
    const schema = { type: "record", name: "Event", fields: [{ name: "event", type: "string" }, { name: "userId", type: "string" }, { name: "properties", type: { type: "record", name: "Props", fields: [{ name: "price", type: "double" }, { name: "coupon", type: ["null", "string"], default: null }] } }] };
    const { src, dst } = await connect("KAFKA", { ...hostPort(b), topic: "avro", convertToAvro: true, embedAvroSchemaID: true, avroSchemas: [{ schemaId: "42", schema: JSON.stringify(schema) }] });
    const events = [
      { type: "track", event: "Order", userId: "a1", messageId: "av-1", properties: { price: 9.5, coupon: { string: "X1" } }, integrations: { Kafka: { schemaId: "42" } } },
      { type: "track", event: "Order", userId: "a1", messageId: "av-2", properties: { price: 1 } },
    ];
    expect((await send(src.writeKey, events)).status).toBe(200);
    await waitFor(async () => {
      const c = await counts(dst.id);
      return c.succeeded === 1 && c.aborted === 1;
    }, { what: "one delivered as Avro, one aborted without a schemaId" });
    const [r] = b.records;
    expect([...r!.value!.subarray(0, 5)]).toEqual([0, 0, 0, 0, 42]);
    const decoded = Type.forSchema(schema as any).fromBuffer(r!.value!.subarray(5)) as any;
    expect({ event: decoded.event, userId: decoded.userId, price: decoded.properties.price, coupon: decoded.properties.coupon }).toEqual({ event: "Order", userId: "a1", price: 9.5, coupon: "X1" });
    expect(JSON.stringify((await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=aborted`)).json.deliveries)).toContain("schemaId is not available for event with messageId: av-2");
    const bad = await api(s.url, "POST", "/v2/destinations", { name: "k-bad-avro", type: "KAFKA", config: { ...hostPort(b), topic: "avro", convertToAvro: true, avroSchemas: [{ schemaId: "1", schema: "{\"type\": \"nope\"}" }] } });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("avroSchemas[0].schema");
  });

  test("useSSH's settings are checked on save, naming the key: host, user, port, and a private key that parses", async () => {
    const b = start({ topics: { t: 1 } });
    const base = { ...hostPort(b), topic: "t", useSSH: true, sshHost: "bastion", sshPort: "22", sshUser: "u" };
    const refused = async (config: Record<string, unknown>, key: string) => {
      const res = await api(s.url, "POST", "/v2/destinations", { name: `k-ssh-${crypto.randomUUID().slice(0, 6)}`, type: "KAFKA", config });
      expect(res.status).toBe(400);
      expect(res.text).toContain(key);
    };
    await refused({ ...base, sshHost: "" }, "sshHost");
    await refused({ ...base, sshUser: "" }, "sshUser");
    await refused({ ...base, sshPort: "0" }, "sshPort");
    await refused(base, "sshPrivateKey");
    await refused({ ...base, sshPrivateKey: "not a key" }, "sshPrivateKey");
  });
});

describe.if(haveSshd)("KAFKA through an SSH tunnel (useSSH), a real sshd", () => {
  let sshd: Sshd;
  beforeAll(async () => {
    sshd = await startSshd();
  });
  afterAll(async () => {
    await sshd?.close();
  });
  const sshConfig = (extra: Record<string, unknown> = {}) => ({ useSSH: true, sshHost: "127.0.0.1", sshPort: String(sshd.port), sshUser: sshd.user, sshPrivateKey: sshd.privateKey, ...extra });

  test("records reach the broker through the SSH server, plain and with TLS over the tunnel; with the server down they wait and are not sent another way", async () => {
    const b = start({ topics: { tunnelled: 1 } });
    const { src, dst } = await connect("KAFKA", { ...hostPort(b), topic: "tunnelled", ...sshConfig({ sshHostKey: sshd.hostKey }) });
    expect((await send(src.writeKey, Array.from({ length: 20 }, (_, i) => ({ type: "track", event: "E", userId: `u${i % 2}`, properties: { i } })))).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).succeeded === 20, { what: "20 delivered through the tunnel", timeoutMs: 20_000 });
    expect(b.records.map((r) => value(r).properties.i).sort((x: number, y: number) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i));

    const { ca, key, cert } = certificates();
    const secure = start({ topics: { sealed: 1 }, tls: { key, cert }, sasl: { mechanism: "plain", username: "sluice", password: "right" } });
    const tls = await connect("KAFKA", { ...hostPort(secure), topic: "sealed", sslEnabled: true, caCertificate: ca, useSASL: true, saslType: "plain", username: "sluice", password: "right", ...sshConfig() });
    expect((await send(tls.src.writeKey, [{ type: "track", event: "Sealed", userId: "t" }])).status).toBe(200);
    await waitFor(async () => (await counts(tls.dst.id)).succeeded === 1, { what: "delivered with TLS through the tunnel", timeoutMs: 20_000 });
    expect(value(secure.records[0]!).event).toBe("Sealed");

    // The tunnel is the only way: with the SSH server stopped the broker gets nothing, and the
    // event goes once the server is back.
    await sshd.stop();
    const later = start({ topics: { later: 1 } });
    const waiting = await connect("KAFKA", { ...hostPort(later), topic: "later", ...sshConfig() });
    expect((await send(waiting.src.writeKey, [{ type: "track", event: "Later", userId: "l" }])).status).toBe(200);
    await waitFor(async () => (await counts(waiting.dst.id)).retrying === 1, { what: "retrying while the SSH server is down" });
    expect(later.records).toHaveLength(0);
    expect(later.connections).toBe(0);
    await sshd.start();
    await waitFor(async () => (await counts(waiting.dst.id)).succeeded === 1, { what: "delivered once the SSH server is back", timeoutMs: 20_000 });
    expect(value(later.records[0]!).event).toBe("Later");
  }, 60_000);

  test("a key the server does not authorize, or a host key that is not the server's: nothing is sent, the delivery says why", async () => {
    const b = start({ topics: { t: 1 } });
    const wrongKey = await connect("KAFKA", { ...hostPort(b), topic: "t", ...sshConfig({ sshPrivateKey: sshd.otherPrivateKey }) });
    const wrongHost = await connect("KAFKA", { ...hostPort(b), topic: "t", ...sshConfig({ sshHostKey: sshd.notTheHostKey }) });
    for (const d of [wrongKey, wrongHost]) expect((await send(d.src.writeKey, [{ type: "track", event: "E", userId: "x" }])).status).toBe(200);
    for (const d of [wrongKey, wrongHost]) await waitFor(async () => (await counts(d.dst.id)).retrying === 1, { what: "retrying, refused by SSH" });
    const errors = async (id: string) => JSON.stringify((await api(s.url, "GET", `/v2/destinations/${id}/deliveries?state=retrying`)).json.deliveries);
    expect(await errors(wrongKey.dst.id)).toContain("SSH to 127.0.0.1");
    expect(await errors(wrongHost.dst.id)).toContain("SSH to 127.0.0.1");
    expect(b.records).toHaveLength(0);
  });
});

describe("CONFLUENT_CLOUD and AZURE_EVENT_HUB", () => {
  test("each connects with TLS and SASL PLAIN as rudder-server does: the API key and secret; $ConnectionString and the connection string", async () => {
    const { ca, key, cert } = certificates();
    // These kinds trust the system's authorities, as their clouds' certificates need: the test's CA
    // is added to them for a Sluice process of its own (NODE_EXTRA_CA_CERTS).
    const confluent = start({ topics: { "cc-topic": 1 }, tls: { key, cert }, sasl: { mechanism: "plain", username: "API_KEY", password: "API_SECRET" } });
    const azure = start({ topics: { hub: 1 }, tls: { key, cert }, sasl: { mechanism: "plain", username: "$ConnectionString", password: "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=v" } });
    const dir = mkdtempSync(join(tmpdir(), "sluice-ca-"));
    await Bun.write(join(dir, "ca.pem"), ca);
    const t = await spawnSluice({ env: { NODE_EXTRA_CA_CERTS: join(dir, "ca.pem") }, args: ["--destination-base-url", `CONFLUENT_CLOUD=http://${confluent.bootstrap},AZURE_EVENT_HUB=http://${azure.bootstrap}`] });
    try {
      const src = await createSource(t.url);
      const cc = await api(t.url, "POST", "/v2/destinations", { name: "cc", type: "CONFLUENT_CLOUD", config: { topic: "cc-topic", bootstrapServer: "pkc-xxxx.confluent.cloud:9092", apiKey: "API_KEY", apiSecret: "API_SECRET" }, sourceIds: [src.id] });
      const eh = await api(t.url, "POST", "/v2/destinations", { name: "eh", type: "AZURE_EVENT_HUB", config: { topic: "hub", bootstrapServer: "ns.servicebus.windows.net:9093", eventHubsConnectionString: "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=v" }, sourceIds: [src.id] });
      expect([cc.status, eh.status]).toEqual([201, 201]);
      const res = await fetch(`${t.url}/v1/track`, { method: "POST", headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${src.writeKey}:`)}` }, body: JSON.stringify({ userId: "z", event: "E", messageId: "both" }) });
      expect(res.status).toBe(200);
      await waitFor(() => confluent.records.length === 1 && azure.records.length === 1, { what: "one record on each", timeoutMs: 15_000 });
      expect(value(confluent.records[0]!).messageId).toBe("both");
      expect(azure.records[0]!.key!.toString()).toBe("z");
    } finally {
      t.proc.kill("SIGKILL");
      await t.proc.exited;
      await cleanup(t.dataDir);
    }
  });

  test("the Test API does not support the Kafka kinds: the not-tested form", async () => {
    const b = start({ topics: { t: 1 } });
    const { dst } = await connect("KAFKA", { ...hostPort(b), topic: "t" });
    const res = await fetch(`${s.url}/v0/testDestination/${dst.id}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${ADMIN_EMAIL}:${ADMIN_TOKEN}`)}` },
      body: JSON.stringify({ message: { type: "track", event: "E", userId: "u" } }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toContain("the Test API does not support KAFKA destinations (a streaming platform)");
  });
});
