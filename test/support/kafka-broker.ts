/**
 * A single-node Kafka broker stand-in for Sluice's tests: no real broker can run on the test
 * machines, and a mock of the client would hide the bytes on the wire. It speaks just enough of
 * the Kafka wire protocol over TCP (or TLS) for a kafkajs 2.2.4 producer to connect, authenticate
 * and produce: ApiVersions, Metadata, Produce, SaslHandshake and SaslAuthenticate, each at the one
 * version kafkajs picks. It is written from the public protocol guide (kafka.apache.org/protocol,
 * the record-batch format in the Kafka docs, KIP-43/KIP-84/KIP-152 for SASL, RFC 5802/7677 for
 * SCRAM), on purpose not from any client's or broker's code: a stand-in sharing the client's
 * parser would share its mistakes too. Faults (error codes, stalls, dropped and refused
 * connections) can be switched on so tests see how the producer copes.
 */
import type { Socket } from "bun";
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from "node:crypto";

export type ReceivedRecord = {
  topic: string;
  partition: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer>;
  timestamp: bigint;
  offset: bigint;
};
export type SaslMechanism = "plain" | "scram-sha-256" | "scram-sha-512";
export type KafkaBrokerOptions = {
  /** topic -> partition count. */
  topics?: Record<string, number>;
  /** When false (the default) an unknown topic answers UNKNOWN_TOPIC_OR_PARTITION. */
  autoCreateTopics?: boolean;
  sasl?: { mechanism: SaslMechanism; username: string; password: string };
  /** PEM key and certificate: serve TLS instead of plain TCP. */
  tls?: { key: string; cert: string };
};
export type KafkaBroker = {
  host: "127.0.0.1";
  port: number;
  bootstrap: string;
  records: ReceivedRecord[];
  /** Every request seen, in order, so a test can tell which API versions the client chose. */
  requests: { apiKey: number; apiVersion: number }[];
  /** Requests with an api key or version this broker does not serve; each closed its connection. */
  unsupported: { apiKey: number; apiVersion: number }[];
  /** Produce requests received, stalled ones included. */
  readonly produceRequests: number;
  /** Connections accepted (refused ones not counted). */
  readonly connections: number;
  failNext(topic: string, errorCode: number, times?: number): void;
  stall(on: boolean): void;
  dropConnections(): void;
  refuseConnections(on: boolean): void;
  stop(): Promise<void>;
};

const PRODUCE = 0, METADATA = 3, SASL_HANDSHAKE = 17, API_VERSIONS = 18, SASL_AUTHENTICATE = 36;
// The highest version kafkajs 2.2.4 implements of each; kafkajs takes min(its best, our max), so
// advertising exactly these keeps every request in a single, non-flexible (pre-KIP-482) format.
const VERSIONS: Record<number, number> = { [PRODUCE]: 7, [METADATA]: 6, [API_VERSIONS]: 2, [SASL_HANDSHAKE]: 1, [SASL_AUTHENTICATE]: 1 };

const CORRUPT_MESSAGE = 2, UNKNOWN_TOPIC_OR_PARTITION = 3, UNSUPPORTED_SASL_MECHANISM = 33;
const SASL_AUTHENTICATION_FAILED = 58, UNSUPPORTED_COMPRESSION_TYPE = 76;
const SCRAM_ITERATIONS = 4096;

const CRC32C_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1; // reflected Castagnoli polynomial
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32C (Castagnoli), the checksum of a v2 record batch. */
export function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const b of bytes) crc = CRC32C_TABLE[(crc ^ b) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** Reads the protocol's primitive types; running off the end throws, which closes the connection. */
class Reader {
  pos = 0;
  constructor(readonly buf: Buffer) {}
  take(n: number): Buffer {
    if (n < 0 || this.pos + n > this.buf.length) throw new RangeError("read past the end of the frame");
    return this.buf.subarray(this.pos, (this.pos += n));
  }
  int8 = () => this.take(1).readInt8(0);
  int16 = () => this.take(2).readInt16BE(0);
  int32 = () => this.take(4).readInt32BE(0);
  int64 = () => this.take(8).readBigInt64BE(0);
  bool = () => this.int8() !== 0;
  string(): string | null {
    const len = this.int16();
    return len < 0 ? null : this.take(len).toString("utf8");
  }
  bytes(): Buffer | null {
    const len = this.int32();
    return len < 0 ? null : this.take(len);
  }
  array<T>(item: () => T): T[] | null {
    const count = this.int32();
    if (count < 0) return null;
    return Array.from({ length: count }, item);
  }
  /** Unsigned LEB128 then zigzag, as the record format encodes varint and varlong. */
  varlong(): bigint {
    let raw = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (shift > 63n) throw new RangeError("varint too long");
      const b = this.take(1)[0];
      raw |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    return (raw >> 1n) ^ -(raw & 1n);
  }
  varint = () => Number(this.varlong());
  varBytes(): Buffer | null {
    const len = this.varint();
    return len < 0 ? null : this.take(len);
  }
}

class Writer {
  private parts: Buffer[] = [];
  private fixed(size: number, write: (b: Buffer) => void): this {
    const b = Buffer.alloc(size);
    write(b);
    this.parts.push(b);
    return this;
  }
  int16 = (v: number) => this.fixed(2, (b) => b.writeInt16BE(v));
  int32 = (v: number) => this.fixed(4, (b) => b.writeInt32BE(v));
  int64 = (v: bigint) => this.fixed(8, (b) => b.writeBigInt64BE(v));
  bool = (v: boolean) => this.fixed(1, (b) => b.writeInt8(v ? 1 : 0));
  string(s: string | null): this {
    if (s === null) return this.int16(-1);
    const b = Buffer.from(s, "utf8");
    this.int16(b.length).parts.push(b);
    return this;
  }
  bytes(b: Buffer | null): this {
    if (b === null) return this.int32(-1);
    this.int32(b.length).parts.push(b);
    return this;
  }
  array<T>(items: T[], write: (item: T) => void): this {
    this.int32(items.length);
    for (const item of items) write(item);
    return this;
  }
  build = () => Buffer.concat(this.parts);
}

type Decoded = Omit<ReceivedRecord, "topic" | "partition" | "offset">;

/** Decodes every v2 batch in a partition's records, or gives the error code to refuse them with. */
function decodeBatches(buf: Buffer): Decoded[] | number {
  const out: Decoded[] = [];
  let pos = 0;
  try {
    while (pos < buf.length) {
      // baseOffset(8) batchLength(4) partitionLeaderEpoch(4) magic(1) crc(4), then the CRC'd part.
      if (buf.length - pos < 61) return CORRUPT_MESSAGE;
      const end = pos + 12 + buf.readInt32BE(pos + 8);
      if (end < pos + 61 || end > buf.length) return CORRUPT_MESSAGE;
      // Produce v3+ only carries magic 2; older message sets have no place here.
      if (buf.readInt8(pos + 16) !== 2) return CORRUPT_MESSAGE;
      if (crc32c(buf.subarray(pos + 21, end)) !== buf.readUInt32BE(pos + 17)) return CORRUPT_MESSAGE;
      const r = new Reader(buf.subarray(pos + 21, end));
      if ((r.int16() & 0x07) !== 0) return UNSUPPORTED_COMPRESSION_TYPE;
      r.int32(); // lastOffsetDelta: offsets are ours to assign
      const baseTimestamp = r.int64();
      r.take(8 + 8 + 2 + 4); // maxTimestamp, producerId, producerEpoch, baseSequence
      const count = r.int32();
      for (let i = 0; i < count; i++) {
        const rec = new Reader(r.take(r.varint()));
        rec.int8(); // record attributes, unused
        const timestamp = baseTimestamp + rec.varlong();
        rec.varint(); // offsetDelta
        const key = rec.varBytes();
        const value = rec.varBytes();
        const headers: Record<string, Buffer> = {};
        for (let h = rec.varint(); h > 0; h--) {
          const name = (rec.varBytes() ?? Buffer.alloc(0)).toString("utf8");
          headers[name] = rec.varBytes() ?? Buffer.alloc(0);
        }
        out.push({ key: key && Buffer.from(key), value: value && Buffer.from(value), headers, timestamp });
      }
      if (r.pos !== r.buf.length) return CORRUPT_MESSAGE;
      pos = end;
    }
  } catch {
    return CORRUPT_MESSAGE;
  }
  return out;
}

type Scram = { hash: "sha256" | "sha512"; clientFirstBare: string; serverFirst: string; nonce: string; salt: Buffer };
// pending: the start of a request still arriving; unsent: response bytes the socket has not taken yet.
type Conn = { socket: Socket; pending: Buffer; unsent: Buffer; closed: boolean; authenticated: boolean; handshaken: boolean; scram?: Scram };

const hmac = (hash: string, key: Buffer, data: string) => createHmac(hash, key).update(data).digest();
const scramAttrs = (msg: string) => new Map(msg.split(",").map((kv) => [kv.slice(0, 1), kv.slice(2)] as const));
// RFC 5802 escapes "," and "=" in the username as =2C and =3D.
const scramName = (s: string) => s.replace(/=2C/g, ",").replace(/=3D/g, "=");

export function startKafkaBroker(opts: KafkaBrokerOptions = {}): KafkaBroker {
  const topics = new Map(Object.entries(opts.topics ?? {}));
  const nextOffset = new Map<string, bigint>();
  const failures = new Map<string, { code: number; times: number }[]>();
  const conns = new Map<Socket, Conn>();
  const sasl = opts.sasl;
  const mechanism = sasl?.mechanism.toUpperCase();
  let stalled = false;
  let refusing = false;
  let produceRequests = 0;
  let connections = 0;
  let port = 0;

  // SASL's two APIs are advertised (and served) only by a SASL listener.
  const advertised = new Map(
    Object.entries(VERSIONS)
      .map(([k, v]) => [Number(k), v] as const)
      .filter(([k]) => sasl || (k !== SASL_HANDSHAKE && k !== SASL_AUTHENTICATE)),
  );

  const records: ReceivedRecord[] = [];
  const requests: KafkaBroker["requests"] = [];
  const unsupported: KafkaBroker["unsupported"] = [];

  function reply(conn: Conn, correlationId: number, body: Writer) {
    const payload = body.build();
    const head = Buffer.alloc(8);
    head.writeInt32BE(4 + payload.length, 0); // response header v0: just the correlation id
    head.writeInt32BE(correlationId, 4);
    send(conn, Buffer.concat([head, payload]));
  }

  function send(conn: Conn, bytes: Buffer) {
    conn.unsent = conn.unsent.length ? Buffer.concat([conn.unsent, bytes]) : bytes;
    flush(conn);
  }

  // Bun's socket.write may take only part of a buffer; the rest waits for the drain event.
  function flush(conn: Conn) {
    if (!conn.closed && conn.unsent.length) conn.unsent = conn.unsent.subarray(Math.max(0, conn.socket.write(conn.unsent)));
  }

  function close(conn: Conn) {
    conn.closed = true;
    conns.delete(conn.socket);
    conn.socket.terminate();
  }

  function knownTopic(name: string, mayCreate: boolean): number | undefined {
    if (!topics.has(name) && mayCreate && opts.autoCreateTopics) topics.set(name, 1);
    return topics.get(name);
  }

  function apiVersions(version: number): Writer {
    const w = new Writer().int16(0);
    w.array([...advertised], ([key, v]) => w.int16(key).int16(v).int16(v));
    return version >= 1 ? w.int32(0) : w; // throttle_time_ms arrived in v1
  }

  function metadata(r: Reader): Writer {
    const wanted = r.array(() => r.string()!); // null asks for every topic
    const allowCreate = r.bool();
    const names = wanted ?? [...topics.keys()];
    const w = new Writer().int32(0); // throttle_time_ms
    w.array([0], () => w.int32(0).string("127.0.0.1").int32(port).string(null));
    w.string("sluice-kafka-stand-in").int32(0); // cluster_id, controller_id
    w.array(names, (name) => {
      const count = knownTopic(name, allowCreate);
      w.int16(count === undefined ? UNKNOWN_TOPIC_OR_PARTITION : 0).string(name).bool(false);
      w.array(Array.from({ length: count ?? 0 }, (_, i) => i), (i) => {
        w.int16(0).int32(i).int32(0); // error, partition, leader: node 0 leads everything
        w.array([0], () => w.int32(0)).array([0], () => w.int32(0)).array([], () => {}); // replicas, isr, offline
      });
    });
    return w;
  }

  function produce(r: Reader): { acks: number; body: Writer } {
    r.string(); // transactional_id
    const acks = r.int16();
    r.int32(); // timeout_ms: everything is written at once, nothing to wait for
    const topicData = r.array(() => {
      const name = r.string()!;
      return { name, partitions: r.array(() => ({ index: r.int32(), records: r.bytes() }))! };
    })!;
    const results = topicData.map(({ name, partitions }) => {
      const queued = failures.get(name);
      const failure = queued?.[0];
      if (failure && --failure.times <= 0) queued!.shift();
      const count = knownTopic(name, true);
      return {
        name,
        partitions: partitions.map(({ index, records: raw }) => {
          if (failure) return { index, error: failure.code, base: -1n };
          if (count === undefined || index < 0 || index >= count) return { index, error: UNKNOWN_TOPIC_OR_PARTITION, base: -1n };
          const decoded = decodeBatches(raw ?? Buffer.alloc(0));
          if (typeof decoded === "number") return { index, error: decoded, base: -1n };
          const key = `${name}/${index}`;
          const base = nextOffset.get(key) ?? 0n;
          decoded.forEach((d, i) => records.push({ topic: name, partition: index, ...d, offset: base + BigInt(i) }));
          nextOffset.set(key, base + BigInt(decoded.length));
          return { index, error: 0, base };
        }),
      };
    });
    const w = new Writer();
    w.array(results, (t) => {
      w.string(t.name);
      // base_offset, log_append_time_ms (-1: CreateTime), log_start_offset
      w.array(t.partitions, (p) => w.int32(p.index).int16(p.error).int64(p.base).int64(-1n).int64(0n));
    });
    return { acks, body: w.int32(0) };
  }

  function saslHandshake(conn: Conn, r: Reader): Writer {
    conn.handshaken = r.string()?.toUpperCase() === mechanism;
    const w = new Writer().int16(conn.handshaken ? 0 : UNSUPPORTED_SASL_MECHANISM);
    return w.array([mechanism!], (m) => w.string(m));
  }

  /** One SaslAuthenticate step: returns the server's bytes, or null when authentication failed. */
  function saslStep(conn: Conn, input: Buffer): Buffer | null {
    const { username, password } = sasl!;
    if (mechanism === "PLAIN") {
      const [, user, pass] = input.toString("utf8").split("\0"); // authzid NUL authcid NUL passwd
      conn.authenticated = user === username && pass === password;
      return conn.authenticated ? Buffer.alloc(0) : null;
    }
    const msg = input.toString("utf8");
    if (!conn.scram) {
      // client-first: gs2 header ("n,," - no channel binding) then the bare message.
      const clientFirstBare = msg.split(",").slice(2).join(",");
      const attrs = scramAttrs(clientFirstBare);
      if (!msg.startsWith("n,") || scramName(attrs.get("n") ?? "") !== username || !attrs.get("r")) return null;
      const nonce = attrs.get("r")! + randomBytes(18).toString("base64");
      const salt = randomBytes(16);
      const serverFirst = `r=${nonce},s=${salt.toString("base64")},i=${SCRAM_ITERATIONS}`;
      const hash = mechanism === "SCRAM-SHA-512" ? "sha512" : "sha256";
      conn.scram = { hash, clientFirstBare, serverFirst, nonce, salt };
      return Buffer.from(serverFirst);
    }
    const { hash, clientFirstBare, serverFirst, nonce, salt } = conn.scram;
    const proofAt = msg.lastIndexOf(",p=");
    const attrs = scramAttrs(msg);
    if (proofAt < 0 || attrs.get("r") !== nonce) return null;
    const authMessage = `${clientFirstBare},${serverFirst},${msg.slice(0, proofAt)}`;
    const salted = pbkdf2Sync(password, salt, SCRAM_ITERATIONS, hash === "sha512" ? 64 : 32, hash);
    const storedKey = createHash(hash).update(hmac(hash, salted, "Client Key")).digest();
    const signature = hmac(hash, storedKey, authMessage);
    const proof = Buffer.from(msg.slice(proofAt + 3), "base64");
    if (proof.length !== signature.length) return null;
    // ClientKey = proof XOR ClientSignature; it is right when its hash is the StoredKey.
    const clientKey = proof.map((b, i) => b ^ signature[i]);
    if (!timingSafeEqual(createHash(hash).update(clientKey).digest(), storedKey)) return null;
    conn.authenticated = true;
    return Buffer.from(`v=${hmac(hash, hmac(hash, salted, "Server Key"), authMessage).toString("base64")}`);
  }

  function handle(conn: Conn, frame: Buffer) {
    const r = new Reader(frame);
    // Request header v1: api_key, api_version, correlation_id, client_id.
    const apiKey = r.int16(), apiVersion = r.int16(), correlationId = r.int32();
    r.string();
    requests.push({ apiKey, apiVersion });
    if (apiKey === PRODUCE) produceRequests++;
    const max = advertised.get(apiKey);
    // ApiVersions is answered at any older version too: clients probe with their newest first.
    if (max === undefined || (apiKey === API_VERSIONS ? apiVersion < 0 || apiVersion > max : apiVersion !== max)) {
      unsupported.push({ apiKey, apiVersion });
      return close(conn);
    }
    // As a SASL listener does, only the handshake itself may come before authentication.
    const preAuth = apiKey === API_VERSIONS || apiKey === SASL_HANDSHAKE || apiKey === SASL_AUTHENTICATE;
    if (sasl && !conn.authenticated && !preAuth) return close(conn);
    if (stalled) return;
    if (apiKey === API_VERSIONS) return reply(conn, correlationId, apiVersions(apiVersion));
    if (apiKey === METADATA) return reply(conn, correlationId, metadata(r));
    if (apiKey === SASL_HANDSHAKE) return reply(conn, correlationId, saslHandshake(conn, r));
    if (apiKey === SASL_AUTHENTICATE) {
      if (!conn.handshaken || conn.authenticated) return close(conn);
      const answer = saslStep(conn, r.bytes() ?? Buffer.alloc(0));
      const w = new Writer().int16(answer ? 0 : SASL_AUTHENTICATION_FAILED);
      w.string(answer ? null : "Authentication failed: invalid credentials");
      reply(conn, correlationId, w.bytes(answer ?? Buffer.alloc(0)).int64(0n)); // session_lifetime_ms 0: no re-auth
      if (!answer) {
        conn.closed = true; // a broker drops the connection after a failed authentication
        conn.socket.end();
      }
      return;
    }
    const { acks, body } = produce(r);
    if (acks !== 0) reply(conn, correlationId, body); // acks=0: the client waits for nothing
  }

  function receive(conn: Conn, chunk: Buffer) {
    conn.pending = conn.pending.length ? Buffer.concat([conn.pending, chunk]) : Buffer.from(chunk);
    // Every request is a 4-byte size and that many bytes; they are answered in order, as a broker does.
    while (conn.pending.length >= 4 && !conn.closed) {
      const size = conn.pending.readInt32BE(0);
      if (size < 8 || size > 64 * 1024 * 1024) return close(conn);
      if (conn.pending.length < 4 + size) break;
      const frame = conn.pending.subarray(4, 4 + size);
      conn.pending = conn.pending.subarray(4 + size);
      try {
        handle(conn, frame);
      } catch {
        close(conn); // a request we cannot parse: a real broker closes the connection too
      }
    }
  }

  const server = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    tls: opts.tls && { key: opts.tls.key, cert: opts.tls.cert },
    socket: {
      // For TLS this runs once the handshake is done.
      open(socket) {
        if (refusing) return socket.terminate();
        connections++;
        conns.set(socket, { socket, pending: Buffer.alloc(0), unsent: Buffer.alloc(0), closed: false, authenticated: false, handshaken: false });
      },
      data(socket, chunk) {
        const conn = conns.get(socket);
        if (conn) receive(conn, chunk);
      },
      drain(socket) {
        const conn = conns.get(socket);
        if (conn) flush(conn);
      },
      close(socket) {
        const conn = conns.get(socket);
        if (conn) conn.closed = true;
        conns.delete(socket);
      },
      error() {}, // a client hanging up mid-write is not the broker's failure
    },
  });
  port = server.port;

  return {
    host: "127.0.0.1",
    port,
    bootstrap: `127.0.0.1:${port}`,
    records,
    requests,
    unsupported,
    get produceRequests() { return produceRequests; },
    get connections() { return connections; },
    failNext(topic, errorCode, times = 1) {
      failures.set(topic, [...(failures.get(topic) ?? []), { code: errorCode, times }]);
    },
    stall(on) { stalled = on; },
    dropConnections() {
      for (const conn of [...conns.values()]) close(conn);
    },
    refuseConnections(on) { refusing = on; },
    async stop() {
      for (const conn of [...conns.values()]) close(conn);
      server.stop(true);
    },
  };
}
