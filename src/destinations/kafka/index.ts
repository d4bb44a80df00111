/**
 * KAFKA: each event as one record of a Kafka topic, through the Kafka client (client.ts,
 * kafkajs) that CONFLUENT_CLOUD and AZURE_EVENT_HUB share with it (kafkaKind).
 *
 * The transforms make what RudderStack's transformer makes: `{message, userId, topic}` (userId
 * falling back to anonymousId; KAFKA adds `schemaId` from `integrations.Kafka`), the topic from
 * `integrations.<Kind>.topic`, then for KAFKA with `enableMultiTopic` from `eventTypeToTopicMap`
 * (the type, any case) or for track `eventToTopicMap` (the name, exact case), then the config's
 * `topic`. The client then produces as rudder-server's producer does
 * (services/streammanager/kafka): the JSON of `message` as the value, userId as the key, the
 * output's topic or else the config's. Where rudder-server produces one record a call, a run of
 * records goes in one produce call.
 */
import { X509Certificate } from "node:crypto";
import type { TObject } from "@sinclair/typebox";
import { type Static, t } from "elysia";
import { itemVerdicts, itemsOf, mergeRequests } from "../item-batches";
import { FromTo, integrationsObject, isPlainObject } from "../shared";
import {
  type ConfigProblem,
  type DestinationContext,
  type DestinationDefinition,
  type DestinationRequest,
  type ProtocolAnswer,
  type ProtocolContext,
  type SluiceEvent,
  configKeys,
  configOf,
  requiredKeysOf,
  restRequest,
} from "../types";
import { avroType, avroValue } from "./avro";
import { type KafkaSend, type KafkaTarget, produce } from "./client";
import { sshHostKeyProblem, sshKeyProblem } from "./ssh-tunnel";

const Port = t.Union([t.String({ pattern: "^\\d{1,5}$" }), t.Integer({ minimum: 1, maximum: 65535 })]);

export const KafkaConfig = t.Object(
  {
    /** One host, or several separated by commas, all on `port`. */
    hostName: t.String({ minLength: 1 }),
    port: Port,
    topic: t.String({ minLength: 1 }),
    sslEnabled: t.Optional(t.Boolean()),
    /** PEM of the authority that signed the brokers' certificates; the system's when empty. */
    caCertificate: t.Optional(t.String()),
    /** Only with sslEnabled, as rudder-server applies it. */
    useSASL: t.Optional(t.Boolean()),
    saslType: t.Optional(t.String()),
    username: t.Optional(t.String()),
    password: t.Optional(t.String()),
    enableMultiTopic: t.Optional(t.Boolean()),
    eventTypeToTopicMap: t.Optional(t.Array(FromTo)),
    eventToTopicMap: t.Optional(t.Array(FromTo)),
    /** Values as Avro binary by the event's schemaId among avroSchemas (avro.ts). */
    convertToAvro: t.Optional(t.Boolean()),
    avroSchemas: t.Optional(t.Array(t.Object({ schemaId: t.Optional(t.String()), schema: t.Optional(t.String()) }, { additionalProperties: true }))),
    embedAvroSchemaID: t.Optional(t.Boolean()),
    /** Through an SSH server (ssh-tunnel.ts): the brokers are reached from there. */
    useSSH: t.Optional(t.Boolean()),
    sshHost: t.Optional(t.String()),
    sshPort: t.Optional(Port),
    sshUser: t.Optional(t.String()),
    /** Sluice's own key (rudder-server asks RudderStack's control plane for it): OpenSSH or PEM. */
    sshPrivateKey: t.Optional(t.String()),
    /** The SSH server's public key (`ssh-ed25519 AAAA…`); any key is accepted without it, as in rudder-server. */
    sshHostKey: t.Optional(t.String()),
  },
  { additionalProperties: true },
);
export type KafkaConfig = Static<typeof KafkaConfig>;

/** RudderStack's output. */
export interface KafkaOutput {
  message: Record<string, unknown>;
  userId?: unknown;
  topic?: string;
  schemaId?: unknown;
}
const outputOf = (r: DestinationRequest) => r.body.JSON as unknown as KafkaOutput;

const SASL_TYPES: Record<string, "plain" | "scram-sha-256" | "scram-sha-512"> = { plain: "plain", sha256: "scram-sha-256", sha512: "scram-sha-512" };

/** The brokers: `--destination-base-url KIND=URL` names the bootstrap server instead (its host and port). */
function brokersOf(ctx: { baseUrl?: string }, configured: string[]): string[] {
  // A base URL's host and port; its scheme means nothing here (the settings take http or https).
  if (ctx.baseUrl) {
    const u = new URL(ctx.baseUrl.includes("://") ? ctx.baseUrl : `kafka://${ctx.baseUrl}`);
    return [u.port ? `${u.hostname}:${u.port}` : u.hostname];
  }
  return configured.map((b) => b.trim()).filter(Boolean);
}

function kafkaBrokers(c: KafkaConfig): string[] {
  return String(c.hostName)
    .split(",")
    .map((h) => h.trim())
    .filter(Boolean)
    .map((h) => `${h}:${c.port}`);
}

function kafkaTarget(brokers: string[], c: KafkaConfig): KafkaTarget {
  const tls: KafkaTarget["tls"] = c.sslEnabled ? (c.caCertificate?.trim() ? { ca: c.caCertificate } : true) : false;
  const mechanism = SASL_TYPES[String(c.saslType ?? "plain").toLowerCase()] ?? "plain";
  const sasl = c.sslEnabled && c.useSASL ? { mechanism, username: c.username ?? "", password: c.password ?? "" } : undefined;
  const ssh = c.useSSH
    ? { host: String(c.sshHost ?? "").trim(), port: Number(c.sshPort), user: String(c.sshUser ?? ""), privateKey: String(c.sshPrivateKey ?? ""), hostKey: c.sshHostKey?.trim() || undefined }
    : undefined;
  return { brokers, tls, sasl, ssh };
}

/** rudder-server's checks of the SSH settings (kafkamanager's validate), and Sluice's of the keys: what is wrong, by key. */
function sshProblem(c: Record<string, any>): ConfigProblem | undefined {
  if (!c.useSSH) return undefined;
  if (!String(c.sshHost ?? "").trim()) return { key: "sshHost", message: "cannot be empty with useSSH" };
  if (!String(c.sshUser ?? "").trim()) return { key: "sshUser", message: "cannot be empty with useSSH" };
  const port = Number(c.sshPort);
  if (!Number.isInteger(port) || port < 1 || port > 65535) return { key: "sshPort", message: "must be a port number, 1 to 65535, with useSSH" };
  if (!String(c.sshPrivateKey ?? "").trim()) {
    return { key: "sshPrivateKey", message: "is needed with useSSH: the private key whose public key the SSH server authorizes (rudder-server asks RudderStack's control plane for it; Sluice keeps it here)" };
  }
  const key = sshKeyProblem(String(c.sshPrivateKey));
  if (key) return { key: "sshPrivateKey", message: `is not a usable private key (${key}); an encrypted key is not supported` };
  if (c.sshHostKey && String(c.sshHostKey).trim()) {
    const host = sshHostKeyProblem(String(c.sshHostKey));
    if (host) return { key: "sshHostKey", message: `is not an SSH public key (${host})` };
  }
  return undefined;
}

/** The request's endpoint names the brokers (the config's, or --destination-base-url's), for the client and the delivery log. */
const endpointOf = (brokers: string[]) => `kafka://${brokers.join(",")}`;
const brokersIn = (endpoint: string) => endpoint.replace(/^kafka:\/\//, "").split(",").filter(Boolean);

/**
 * The record batches of a (merged) request, grouped by topic in order of first appearance, and
 * the events that cannot be sent (by their place in the request), with why.
 */
function sendsOf(outputs: KafkaOutput[], config: Record<string, any>): { sends: KafkaSend[]; failed: Map<number, string> } {
  const byTopic = new Map<string, KafkaSend["messages"]>();
  const failed = new Map<number, string>();
  outputs.forEach((o, i) => {
    const topic = o.topic || String(config.topic ?? "");
    const key = o.userId === undefined || o.userId === null ? "" : String(o.userId);
    let value: string | Buffer = JSON.stringify(o.message);
    if (config.convertToAvro && Array.isArray(config.avroSchemas) && config.avroSchemas.length) {
      const avro = avroValue(o.message, o.schemaId, config.avroSchemas, config.embedAvroSchemaID === true);
      if (!Buffer.isBuffer(avro)) return void failed.set(i, avro.error);
      value = avro;
    }
    byTopic.set(topic, [...(byTopic.get(topic) ?? []), { key, value }]);
  });
  return { sends: [...byTopic].map(([topic, messages]) => ({ topic, messages })), failed };
}

/** An answer naming the events of a merged request that were not sent, for checkResponse. */
interface KafkaAnswer {
  delivered: string;
  failed?: Array<{ at: number; error: string }>;
}

/** The configured CA certificate, refused on save when it is no PEM certificate. */
function caProblem(config: Record<string, any>): ConfigProblem | undefined {
  const ca = config.caCertificate;
  if (!config.sslEnabled || typeof ca !== "string" || !ca.trim()) return undefined;
  try {
    new X509Certificate(ca);
    return undefined;
  } catch (e) {
    return { key: "caCertificate", message: `is not a PEM certificate (${(e as Error).message})` };
  }
}

/** What the three kinds share: batching a run into one produce call, and the kind's own client. */
export function kafkaKind(spec: {
  name: string;
  displayName: string;
  schema: TObject;
  output(event: SluiceEvent, ctx: DestinationContext): KafkaOutput;
  /** The configured brokers, host:port each. */
  brokers(config: Record<string, any>): string[];
  /** How to connect to `brokers`. */
  target(brokers: string[], config: Record<string, any>): KafkaTarget;
  refuse?(config: Record<string, any>): string | undefined;
  checkConfig?(config: Record<string, any>): ConfigProblem | undefined;
}): DestinationDefinition {
  return {
    name: spec.name,
    displayName: spec.displayName,
    config: {
      defaultConfig: configKeys(spec.schema, ["oneTrustCookieCategories", "consentManagement", "connectionMode", "sshHost", "sshPort", "sshUser", "sshPublicKey"]),
      supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
      requiredKeys: requiredKeysOf(spec.schema),
    },
    configSchema: spec.schema,
    checkConfig: spec.checkConfig,
    transform(event, ctx) {
      return [restRequest({ endpoint: endpointOf(brokersOf(ctx, spec.brokers(configOf(ctx, spec.schema)))), json: spec.output(event, ctx) as unknown as Record<string, unknown> })];
    },
    batch(requests) {
      // rudder-server's producer takes 1 MB a batch.
      const size = (o: KafkaOutput) => JSON.stringify(o.message).length + 100;
      return mergeRequests(requests, { key: "records", max: 500, maxBytes: 1024 * 1024, item: outputOf, size, group: () => "" });
    },
    async send(request: DestinationRequest, ctx: ProtocolContext): Promise<ProtocolAnswer> {
      const config = configOf(ctx, spec.schema) as Record<string, any>;
      const refused = spec.refuse?.(config);
      if (refused) return { outcome: "abort", error: refused };
      const target = spec.target(brokersIn(request.endpoint), config);
      if (!target.brokers.length) return { outcome: "abort", error: "no broker to connect to" };
      const { sends, failed } = sendsOf(itemsOf(request, outputOf), config);
      // rudder-server answers 400 for a record it cannot serialize: final, for that event only.
      if (!sends.length) return { outcome: "abort", error: [...failed.values()][0] ?? "nothing to send" };
      const answer = await produce(target, sends, ctx);
      if (answer.outcome !== "ok" || !failed.size) return answer;
      const named: KafkaAnswer = { delivered: answer.response, failed: [...failed].map(([at, error]) => ({ at, error })) };
      return { outcome: "ok", response: JSON.stringify(named) };
    },
    checkResponse(answer, request) {
      if (!answer.body.startsWith("{")) return { outcome: "ok" };
      const failed = new Map((JSON.parse(answer.body) as KafkaAnswer).failed?.map((f) => [f.at, { outcome: "abort" as const, error: f.error }]) ?? []);
      return itemVerdicts(request, failed);
    },
    notInTestApi: "a streaming platform",
  };
}

/** KAFKA's topic with enableMultiTopic: the type's (any case) for identify, page, screen, group and alias; the name's (exact case) for track. */
function multiTopic(event: SluiceEvent, c: KafkaConfig): string | undefined {
  if (!c.enableMultiTopic) return undefined;
  const lookup = (list: unknown, key: string, lower: boolean) => {
    let found: string | undefined;
    for (const m of Array.isArray(list) ? list : []) {
      if (!isPlainObject(m) || typeof m.from !== "string" || m.from === "") continue;
      if ((lower ? m.from.toLowerCase() : m.from) === key) found = m.to as string | undefined;
    }
    return found;
  };
  const type = String(event.type);
  if (["identify", "screen", "page", "group", "alias"].includes(type)) return lookup(c.eventTypeToTopicMap, type, true);
  if (type === "track" && typeof event.event === "string" && event.event) return lookup(c.eventToTopicMap, event.event, false);
  return undefined;
}

export const kafka = kafkaKind({
  name: "KAFKA",
  displayName: "Apache Kafka",
  schema: KafkaConfig,
  output(event, ctx) {
    const c = configOf(ctx, KafkaConfig);
    const options = integrationsObject(event, "KAFKA", "kafka", "Kafka");
    const topic = (options?.topic as string | undefined) || multiTopic(event, c) || c.topic;
    const out: KafkaOutput = { message: event as Record<string, unknown>, userId: event.userId || event.anonymousId, topic };
    if (options?.schemaId !== undefined && options.schemaId !== null) out.schemaId = options.schemaId;
    // RudderStack leaves out keys without a value.
    return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined && v !== null)) as unknown as KafkaOutput;
  },
  brokers: (config) => kafkaBrokers(config as KafkaConfig),
  target: (brokers, config) => kafkaTarget(brokers, config as KafkaConfig),
  // A config saved before these checks, or imported from a workspace file: not sent, saying why.
  refuse: (config) => {
    const problem = sshProblem(config);
    return problem ? `${problem.key} ${problem.message}; the event is not sent` : undefined;
  },
  checkConfig(config) {
    const port = Number(config.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535) return { key: "port", message: "must be a port number, 1 to 65535" };
    if (config.useSASL && config.saslType !== undefined && !(String(config.saslType).toLowerCase() in SASL_TYPES)) {
      return { key: "saslType", message: "must be plain, sha256 or sha512" };
    }
    if (config.convertToAvro && Array.isArray(config.avroSchemas)) {
      for (const [i, entry] of config.avroSchemas.entries()) {
        if (!entry?.schemaId) return { key: `avroSchemas[${i}].schemaId`, message: "is empty: name the schema's id, as events name it in integrations.Kafka.schemaId" };
        const type = avroType(String(entry.schema ?? ""));
        if ("problem" in type) return { key: `avroSchemas[${i}].schema`, message: `is not an Avro schema: ${type.problem}` };
      }
    }
    return sshProblem(config) ?? caProblem(config);
  },
});
