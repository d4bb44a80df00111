import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Kafka, logLevel, Partitioners, type KafkaConfig, type Producer } from "kafkajs";
import { crc32c, startKafkaBroker, type KafkaBroker, type KafkaBrokerOptions } from "./kafka-broker";

const started: KafkaBroker[] = [];
const producers: Producer[] = [];
afterEach(async () => {
  await Promise.all(producers.splice(0).map((p) => p.disconnect().catch(() => {})));
  await Promise.all(started.splice(0).map((b) => b.stop()));
});

function broker(opts: KafkaBrokerOptions = { topics: { events: 3 } }) {
  const b = startKafkaBroker(opts);
  started.push(b);
  return b;
}

function producer(b: KafkaBroker, config: Partial<KafkaConfig> = {}) {
  const kafka = new Kafka({ clientId: "sluice-test", brokers: [b.bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 1 }, ...config });
  // The default partitioner, named explicitly, so kafkajs does not warn about its v2 change.
  const p = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  producers.push(p);
  return p;
}

const text = (b: Buffer | null) => b?.toString("utf8") ?? null;
const seen = (b: KafkaBroker) => [...new Set(b.requests.map((r) => `${r.apiKey}v${r.apiVersion}`))];

// --- raw wire helpers, for requests kafkajs would never send -------------------------------------

function frame(apiKey: number, apiVersion: number, body: Buffer): Buffer {
  const clientId = Buffer.from("raw");
  const head = Buffer.alloc(14);
  head.writeInt32BE(10 + clientId.length + body.length, 0);
  head.writeInt16BE(apiKey, 4);
  head.writeInt16BE(apiVersion, 6);
  head.writeInt32BE(42, 8); // correlation id
  head.writeInt16BE(clientId.length, 12);
  return Buffer.concat([head, clientId, body]);
}

/** One v2 record batch holding one record with a null key; values under 50 bytes keep every varint one byte. */
function recordBatch(value: string, { attributes = 0, breakCrc = false } = {}): Buffer {
  const v = Buffer.from(value);
  // attributes, timestampDelta 0, offsetDelta 0, key length -1 (zigzag 1), value length, value, 0 headers
  const rec = Buffer.concat([Buffer.from([0, 0, 0, 1, v.length * 2]), v, Buffer.from([0])]);
  const tail = Buffer.alloc(40);
  tail.writeInt16BE(attributes, 0);
  tail.writeInt32BE(0, 2); // lastOffsetDelta
  tail.writeBigInt64BE(1700000000000n, 6); // baseTimestamp
  tail.writeBigInt64BE(1700000000000n, 14); // maxTimestamp
  tail.writeBigInt64BE(-1n, 22); // producerId
  tail.writeInt16BE(-1, 30); // producerEpoch
  tail.writeInt32BE(-1, 32); // baseSequence
  tail.writeInt32BE(1, 36); // record count
  const crcd = Buffer.concat([tail, Buffer.from([rec.length * 2]), rec]);
  const head = Buffer.alloc(21);
  head.writeBigInt64BE(0n, 0);
  head.writeInt32BE(9 + crcd.length, 8); // batchLength counts from partitionLeaderEpoch
  head.writeInt32BE(-1, 12);
  head.writeInt8(2, 16); // magic
  head.writeUInt32BE((crc32c(crcd) ^ (breakCrc ? 1 : 0)) >>> 0, 17);
  return Buffer.concat([head, crcd]);
}

/** A Produce v7 request body: one topic, partition 0, acks -1. */
function produceBody(topic: string, records: Buffer): Buffer {
  const name = Buffer.from(topic);
  const b = Buffer.alloc(2 + 2 + 4 + 4 + 2 + name.length + 4 + 4 + 4);
  let o = b.writeInt16BE(-1, 0); // transactional_id null
  o = b.writeInt16BE(-1, o); // acks
  o = b.writeInt32BE(1000, o); // timeout_ms
  o = b.writeInt32BE(1, o); // one topic
  o = b.writeInt16BE(name.length, o);
  o += name.copy(b, o);
  o = b.writeInt32BE(1, o); // one partition
  o = b.writeInt32BE(0, o); // partition 0
  b.writeInt32BE(records.length, o);
  return Buffer.concat([b, records]);
}

/** Sends one frame on a fresh socket; gives back the response body, or "closed" if the broker hung up. */
function exchange(port: number, request: Buffer): Promise<Buffer | "closed"> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(request));
    let got = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      if (got.length >= 4 && got.length >= 4 + got.readInt32BE(0)) {
        socket.destroy();
        resolve(got.subarray(8, 4 + got.readInt32BE(0))); // past size and correlation id
      }
    });
    socket.on("error", () => {});
    socket.on("close", () => resolve("closed"));
  });
}

/** The error code and base offset of the only partition in a Produce v7 response. */
function partitionResult(body: Buffer) {
  const nameLen = body.readInt16BE(4);
  const p = 6 + nameLen + 4; // topic count, name, partition count
  return { partition: body.readInt32BE(p), errorCode: body.readInt16BE(p + 4), baseOffset: body.readBigInt64BE(p + 6) };
}

// -------------------------------------------------------------------------------------------------

describe("kafka broker stand-in", () => {
  test("crc32c matches the standard check value", () => {
    expect(crc32c(Buffer.from("123456789"))).toBe(0xe3069283);
  });

  test("a kafkajs producer's keys, values and headers land in the right partitions with offsets 0,1,2…", async () => {
    const b = broker();
    const p = producer(b);
    await p.connect();
    const result = await p.send({
      topic: "events",
      messages: [
        { partition: 0, key: "a", value: "one", headers: { source: "web", trace: "t1" } },
        { partition: 2, key: "b", value: "two" },
        { partition: 0, key: null, value: "three", headers: { source: "ios" } },
        { partition: 1, key: "c", value: null },
        { partition: 0, key: "d", value: "four", timestamp: "1700000000123" },
      ],
    });
    expect(result.map((r) => [r.partition, r.errorCode, r.baseOffset]).sort()).toEqual([
      [0, 0, "0"],
      [1, 0, "0"],
      [2, 0, "0"],
    ]);
    const byPartition = (n: number) => b.records.filter((r) => r.partition === n);
    expect(byPartition(0).map((r) => [text(r.key), text(r.value), r.offset])).toEqual([
      ["a", "one", 0n],
      [null, "three", 1n],
      ["d", "four", 2n],
    ]);
    expect(byPartition(0)[0].headers).toEqual({ source: Buffer.from("web"), trace: Buffer.from("t1") });
    expect(byPartition(0)[1].headers).toEqual({ source: Buffer.from("ios") });
    expect(byPartition(0)[2].timestamp).toBe(1700000000123n);
    expect(byPartition(1).map((r) => [text(r.key), r.value, r.offset])).toEqual([["c", null, 0n]]);
    expect(byPartition(2).map((r) => [text(r.key), text(r.value), r.offset, r.headers])).toEqual([["b", "two", 0n, {}]]);
    expect(b.records.every((r) => r.topic === "events")).toBe(true);

    // Keyed messages without a partition go where kafkajs's partitioner says, and offsets keep counting.
    await p.send({ topic: "events", messages: [{ key: "a", value: "five" }, { key: "a", value: "six" }] });
    const later = b.records.slice(5);
    expect(later[0].partition).toBe(later[1].partition);
    const earlier = b.records.slice(0, 5).filter((r) => r.partition === later[0].partition).length;
    expect(later.map((r) => r.offset)).toEqual([BigInt(earlier), BigInt(earlier + 1)]);

    // The versions kafkajs 2.2.4 chose from what the stand-in advertises.
    expect(seen(b)).toEqual(["18v2", "3v6", "0v7"]);
    expect(b.unsupported).toEqual([]);
    expect(b.produceRequests).toBe(2);
  });

  test("a request larger than one TCP read is reassembled", async () => {
    const b = broker();
    const p = producer(b);
    await p.connect();
    const messages = Array.from({ length: 3000 }, (_, i) => ({ partition: 1, key: `k${i}`, value: `${i}:`.padEnd(400, "x") }));
    await p.send({ topic: "events", messages });
    expect(b.records).toHaveLength(3000);
    expect(b.records[2999]).toMatchObject({ partition: 1, offset: 2999n, key: Buffer.from("k2999") });
    expect(b.produceRequests).toBe(1);
  });

  test("acks=0 gets no answer and is still recorded", async () => {
    const b = broker();
    const p = producer(b);
    await p.connect();
    await p.send({ topic: "events", acks: 0, messages: [{ partition: 1, value: "fire and forget" }] });
    for (let i = 0; i < 50 && b.records.length === 0; i++) await Bun.sleep(10);
    expect(b.records.map((r) => [r.partition, text(r.value), r.offset])).toEqual([[1, "fire and forget", 0n]]);
  });

  test("a record batch with a wrong CRC is refused with CORRUPT_MESSAGE and nothing is stored", async () => {
    const b = broker();
    const good = await exchange(b.port, frame(0, 7, produceBody("events", recordBatch("hello"))));
    expect(good).not.toBe("closed");
    expect(partitionResult(good as Buffer)).toEqual({ partition: 0, errorCode: 0, baseOffset: 0n });

    const bad = await exchange(b.port, frame(0, 7, produceBody("events", recordBatch("hello", { breakCrc: true }))));
    expect(bad).not.toBe("closed");
    expect(partitionResult(bad as Buffer)).toEqual({ partition: 0, errorCode: 2, baseOffset: -1n });
    expect(b.records.map((r) => [text(r.value), r.timestamp])).toEqual([["hello", 1700000000000n]]);
  });

  test("a compressed batch answers UNSUPPORTED_COMPRESSION_TYPE", async () => {
    const b = broker();
    const res = await exchange(b.port, frame(0, 7, produceBody("events", recordBatch("gz", { attributes: 1 }))));
    expect(partitionResult(res as Buffer).errorCode).toBe(76);
    expect(b.records).toEqual([]);
  });

  test("an unknown topic answers UNKNOWN_TOPIC_OR_PARTITION unless topics are auto-created", async () => {
    const strict = broker();
    const res = await exchange(strict.port, frame(0, 7, produceBody("nope", recordBatch("x"))));
    expect(partitionResult(res as Buffer).errorCode).toBe(3);
    const q = producer(strict);
    await q.connect();
    await expect(q.send({ topic: "nope", messages: [{ value: "x" }] })).rejects.toThrow(/does not host this topic-partition/);
    expect(strict.records).toEqual([]);

    const lax = broker({ autoCreateTopics: true });
    const p = producer(lax);
    await p.connect();
    await p.send({ topic: "fresh", messages: [{ value: "x" }] });
    expect(lax.records.map((r) => [r.topic, r.partition, r.offset])).toEqual([["fresh", 0, 0n]]);
  }, 20_000);

  test("an api key it does not serve closes the connection and is listed", async () => {
    const b = broker();
    expect(await exchange(b.port, frame(19, 3, Buffer.alloc(0)))).toBe("closed"); // CreateTopics
    expect(await exchange(b.port, frame(0, 3, produceBody("events", recordBatch("old"))))).toBe("closed"); // Produce v3
    expect(b.unsupported).toEqual([{ apiKey: 19, apiVersion: 3 }, { apiKey: 0, apiVersion: 3 }]);
    expect(b.records).toEqual([]);
  });

  describe("SASL", () => {
    for (const mechanism of ["plain", "scram-sha-256", "scram-sha-512"] as const) {
      test(`${mechanism} with the right password produces`, async () => {
        const b = broker({ topics: { events: 1 }, sasl: { mechanism, username: "sluice", password: "s3cret,=pw" } });
        const p = producer(b, { sasl: { mechanism, username: "sluice", password: "s3cret,=pw" } as any });
        await p.connect();
        await p.send({ topic: "events", messages: [{ value: "authed" }] });
        expect(b.records.map((r) => text(r.value))).toEqual(["authed"]);
        expect(seen(b)).toEqual(["18v2", "17v1", "36v1", "3v6", "0v7"]);
      });

      test(`${mechanism} with a wrong password fails to connect and records nothing`, async () => {
        const b = broker({ topics: { events: 1 }, sasl: { mechanism, username: "sluice", password: "s3cret" } });
        const p = producer(b, { sasl: { mechanism, username: "sluice", password: "wrong" } as any });
        await expect(p.connect()).rejects.toThrow(/authentication failed: invalid credentials/i);
        expect(b.records).toEqual([]);
        expect(b.produceRequests).toBe(0);
      });
    }

    test("a Produce before authenticating closes the connection", async () => {
      const b = broker({ topics: { events: 1 }, sasl: { mechanism: "plain", username: "u", password: "p" } });
      expect(await exchange(b.port, frame(0, 7, produceBody("events", recordBatch("sneaky"))))).toBe("closed");
      expect(b.records).toEqual([]);
      expect(b.unsupported).toEqual([]);
    });
  });

  describe("TLS", () => {
    let dir = "";
    const pem = (name: string) => readFileSync(join(dir, name), "utf8");
    const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
    const newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), "kafka-stand-in-tls-"));
      for (const ca of ["ca", "other-ca"]) openssl("req", "-x509", ...newKey, "-keyout", `${ca}.key`, "-out", `${ca}.pem`, "-days", "1", "-subj", `/CN=Sluice test ${ca}`);
      openssl("req", ...newKey, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1");
      writeFileSync(join(dir, "ext.cnf"), "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1\n");
      openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "1", "-days", "1", "-extfile", "ext.cnf", "-out", "server.pem");
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    test("a client trusting the CA produces over TLS; one trusting another CA cannot connect", async () => {
      const b = broker({ topics: { events: 1 }, tls: { key: pem("server.key"), cert: pem("server.pem") } });
      const p = producer(b, { ssl: { ca: [pem("ca.pem")] } });
      await p.connect();
      await p.send({ topic: "events", messages: [{ value: "encrypted" }] });
      expect(b.records.map((r) => text(r.value))).toEqual(["encrypted"]);

      const stranger = producer(b, { ssl: { ca: [pem("other-ca.pem")] } });
      await expect(stranger.connect()).rejects.toThrow();
      // Plain TCP against the TLS port gets nowhere either.
      await expect(producer(b, { connectionTimeout: 500, requestTimeout: 500 }).connect()).rejects.toThrow();
      expect(b.records).toHaveLength(1);
    }, 20_000);
  });

  describe("faults", () => {
    test("a retriable partition error is retried and the send succeeds", async () => {
      const b = broker();
      const p = producer(b);
      await p.connect();
      b.failNext("events", 6); // NOT_LEADER_OR_FOLLOWER
      const [result] = await p.send({ topic: "events", messages: [{ partition: 0, value: "eventually" }] });
      expect(result.errorCode).toBe(0);
      expect(b.produceRequests).toBe(2);
      expect(b.records.map((r) => [text(r.value), r.offset])).toEqual([["eventually", 0n]]);
    }, 20_000);

    test("a retriable error that outlasts the retries, and a non-retriable one, reject the send", async () => {
      const b = broker();
      const p = producer(b);
      await p.connect();
      b.failNext("events", 6, 2); // retries: 1 means two attempts
      await expect(p.send({ topic: "events", messages: [{ partition: 0, value: "x" }] })).rejects.toThrow();
      expect(b.produceRequests).toBe(2);

      b.failNext("events", 10); // MESSAGE_TOO_LARGE
      await expect(p.send({ topic: "events", messages: [{ partition: 0, value: "huge" }] })).rejects.toThrow(/too large|larger/i);
      expect(b.produceRequests).toBe(3);
      expect(b.records).toEqual([]);

      // The failures are used up: the next send goes through.
      await p.send({ topic: "events", messages: [{ partition: 0, value: "fine" }] });
      expect(b.records.map((r) => [text(r.value), r.offset])).toEqual([["fine", 0n]]);
    }, 20_000);

    test("a stalled broker makes a send with a short request timeout fail", async () => {
      const b = broker();
      const p = producer(b, { requestTimeout: 300 });
      await p.connect();
      // A first send caches the topic's metadata, so the stalled request is the Produce itself.
      await p.send({ topic: "events", messages: [{ value: "warm-up" }] });
      b.stall(true);
      await expect(p.send({ topic: "events", timeout: 300, messages: [{ value: "lost" }] })).rejects.toThrow(/timed out/i);
      expect(b.produceRequests).toBeGreaterThanOrEqual(2);
      expect(b.records.map((r) => text(r.value))).toEqual(["warm-up"]);
    }, 20_000);

    test("dropped connections are survived by the next send", async () => {
      const b = broker();
      const p = producer(b);
      await p.connect();
      await p.send({ topic: "events", messages: [{ partition: 0, value: "before" }] });
      const before = b.connections;
      b.dropConnections();
      await p.send({ topic: "events", messages: [{ partition: 0, value: "after" }] });
      expect(b.connections).toBeGreaterThan(before);
      expect(b.records.map((r) => [text(r.value), r.offset])).toEqual([["before", 0n], ["after", 1n]]);
    }, 20_000);

    test("refused connections fail connect until refusing stops", async () => {
      const b = broker();
      b.refuseConnections(true);
      await expect(producer(b).connect()).rejects.toThrow();
      expect(b.connections).toBe(0);
      b.refuseConnections(false);
      const p = producer(b);
      await p.connect();
      await p.send({ topic: "events", messages: [{ value: "let in" }] });
      expect(b.records).toHaveLength(1);
    }, 20_000);
  });
});
