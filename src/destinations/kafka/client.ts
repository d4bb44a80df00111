/**
 * The Kafka kinds' client: kafkajs producers, one per destination's connection settings (brokers,
 * TLS, SASL), kept while used and closed after a minute idle, as REDIS keeps its connections.
 *
 * Why kafkajs: pure JavaScript with no dependencies, it runs inside `bun build --compile` as it
 * is; @platformatic/kafka, the other maintained pure-JS client, loads a .wasm file from its
 * package folder at start, which the single-file binary does not have (tried: ENOENT).
 *
 * A send is all or nothing: kafkajs retries a call briefly itself (a leader moving), and what it
 * cannot deliver is retried later by the router, with backoff, or aborted when Kafka says the
 * record can never pass (kafkajs' `retriable: false`: too large, refused credentials).
 */
import { createHash } from "node:crypto";
import { Kafka, type Producer, type SASLOptions, logLevel } from "kafkajs";
import { rejectAfter } from "../../lib/deadline";
import type { ProtocolAnswer, ProtocolContext } from "../types";
import { type SshSettings, SshTunnel } from "./ssh-tunnel";

/** A connection's settings: what makes two destinations share a producer. */
export interface KafkaTarget {
  brokers: string[];
  /** TLS: true (the system's authorities), or the PEM of the authority that signed the brokers' certificates. */
  tls: false | true | { ca: string };
  sasl?: { mechanism: "plain" | "scram-sha-256" | "scram-sha-512"; username: string; password: string };
  /** Through an SSH server (useSSH): the brokers are reached from there (ssh-tunnel.ts). */
  ssh?: Omit<SshSettings, "address">;
}

/** One record batch of a topic: the messages in order. */
export interface KafkaSend {
  topic: string;
  messages: Array<{ key: string; value: string | Buffer }>;
}

const IDLE_CLOSE_MS = 60_000;

interface Kept {
  producer: Producer;
  tunnel?: SshTunnel;
  connected?: Promise<void>;
  lastUsed: number;
}

const producers = new Map<string, Kept>();
let sweeper: ReturnType<typeof setInterval> | undefined;

function sweep() {
  const now = Date.now();
  for (const [key, kept] of producers) {
    if (now - kept.lastUsed < IDLE_CLOSE_MS) continue;
    producers.delete(key);
    close(kept);
  }
  if (!producers.size && sweeper) {
    clearInterval(sweeper);
    sweeper = undefined;
  }
}

function close(kept: Kept) {
  kept.producer.disconnect().catch(() => {}).finally(() => kept.tunnel?.close());
}

const keyOf = (t: KafkaTarget, timeoutMs: number, sshAddress?: string) =>
  createHash("sha256").update(JSON.stringify([t.brokers, t.tls, t.sasl ?? null, t.ssh ?? null, sshAddress ?? null, timeoutMs])).digest("hex");

function producerFor(t: KafkaTarget, timeoutMs: number, sshAddress: string | undefined): Kept {
  const key = keyOf(t, timeoutMs, sshAddress);
  let kept = producers.get(key);
  if (!kept) {
    const tunnel = t.ssh && sshAddress ? new SshTunnel({ ...t.ssh, address: sshAddress }, timeoutMs) : undefined;
    const kafka = new Kafka({
      ...(tunnel ? { socketFactory: tunnel.socketFactory() } : {}),
      clientId: "sluice",
      brokers: t.brokers,
      ssl: t.tls === false ? false : t.tls === true ? true : { ca: [t.tls.ca] },
      sasl: t.sasl as SASLOptions | undefined,
      connectionTimeout: Math.min(timeoutMs, 5_000),
      authenticationTimeout: Math.min(timeoutMs, 5_000),
      requestTimeout: timeoutMs,
      // A short retry inside the call; longer outages are the router's, with its backoff.
      retry: { retries: 1, initialRetryTime: 100, maxRetryTime: 1_000 },
      logLevel: logLevel.NOTHING,
    });
    // Whether a topic is created on first use is the broker's setting (auto.create.topics.enable), as with any client.
    kept = { producer: kafka.producer({ allowAutoTopicCreation: true }), tunnel, lastUsed: Date.now() };
    producers.set(key, kept);
    sweeper ??= setInterval(sweep, IDLE_CLOSE_MS / 2);
    sweeper.unref?.();
  }
  kept.lastUsed = Date.now();
  return kept;
}

/** kafkajs' reading of a failure, in Kafka's words; retried unless Kafka says it never passes. */
function failure(err: unknown): ProtocolAnswer {
  const e = err as { name?: string; message?: string; retriable?: boolean; originalError?: { message?: string; retriable?: boolean; type?: string }; type?: string };
  const inner = e.originalError;
  const text = [e.message, inner?.message && inner.message !== e.message ? inner.message : undefined].filter(Boolean).join(": ");
  // Out of kafkajs' own retries (a broker down, a leader moving): the router tries again later.
  if (e.name === "KafkaJSNumberOfRetriesExceeded") return { outcome: inner?.retriable === false ? "abort" : "retry", error: `Kafka: ${text}` };
  if (e.name === "KafkaJSSASLAuthenticationError") return { outcome: "abort", error: `Kafka refused the credentials: ${text}` };
  return { outcome: e.retriable === false ? "abort" : "retry", error: `Kafka: ${text || String(err)}` };
}

/**
 * Produces the batches in order (acks from all in-sync replicas, as rudder-server's producer
 * asks), after the outbound address policy has passed each bootstrap host; through an SSH
 * server, the policy passes that server (the one Sluice connects to, pinned to the address it
 * checked), and the brokers are names the SSH server resolves.
 */
export async function produce(t: KafkaTarget, sends: KafkaSend[], ctx: ProtocolContext): Promise<ProtocolAnswer> {
  let sshAddress: string | undefined;
  for (const host of t.ssh ? [t.ssh.host] : t.brokers.map((b) => b.replace(/:\d+$/, "").replace(/^\[|\]$/g, ""))) {
    const reached = await ctx.reach(host);
    if (!reached.ok) return { outcome: reached.retry ? "retry" : "abort", error: reached.error };
    if (t.ssh) sshAddress = reached.address;
  }
  const key = keyOf(t, ctx.timeoutMs, sshAddress);
  const kept = producerFor(t, ctx.timeoutMs, sshAddress);
  // kafkajs can wait on a broker that accepts and never answers (its connect has no deadline of
  // its own): the call is given up at the delivery time-out, and the producer with it.
  const timedOut = () => Object.assign(new Error(`no answer within ${ctx.timeoutMs} ms`), { name: "KafkaTimeout", retriable: true });
  try {
    kept.connected ??= kept.producer.connect();
    await rejectAfter(kept.connected, ctx.timeoutMs, timedOut);
    const results = await rejectAfter(
      kept.producer.sendBatch({ acks: -1, timeout: ctx.timeoutMs, topicMessages: sends.map((s) => ({ topic: s.topic, messages: s.messages })) }),
      ctx.timeoutMs,
      timedOut,
    );
    const where = results.map((r) => `${r.topicName}[${r.partition}]@${r.baseOffset}`).join(", ");
    return { outcome: "ok", response: `Message delivered to topic: ${[...new Set(sends.map((s) => s.topic))].join(", ")} (${where})` };
  } catch (err) {
    const answer = failure(err);
    // A retry starts from a fresh producer: one left half-connected or waiting would hold the next call too.
    if (answer.outcome === "retry" && producers.get(key) === kept) {
      producers.delete(key);
      close(kept);
    }
    return answer;
  }
}
