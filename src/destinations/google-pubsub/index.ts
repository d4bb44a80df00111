/**
 * GOOGLEPUBSUB: each event as one message on a Google Cloud Pub/Sub topic, the topic picked by
 * `eventToTopicMap`, attributes by `eventToAttributesMap`.
 *
 * The transform makes what RudderStack's transformer makes, `{userId, message, topicId,
 * attributes}`; the kind's client publishes the JSON of `message` with those attributes, as
 * rudder-server's producer does (services/streammanager/googlepubsub), over Pub/Sub's REST API
 * where rudder-server uses gRPC. A run of a topic's messages goes in one publish call (up to 1,000
 * messages and 10 MB); Pub/Sub takes or refuses a call whole.
 *
 * `testConfig.endpoint` (rudder-server's key for an emulator, `host:port`) sends the calls there
 * over plain HTTP without credentials, as rudder-server does.
 */
import { type Static, t } from "elysia";
import { isPrototypeKey } from "../../lib/safe-keys";
import { endpointFor } from "../base-url";
import { credentialsProblem, googleBearer, googleError } from "../google";
import { itemsOf, mergeRequests } from "../item-batches";
import { FromTo, getPath, isPlainObject, mappedByEvent } from "../shared";
import {
  type ConfigProblem,
  type DestinationDefinition,
  type DestinationRequest,
  type ProtocolAnswer,
  type ProtocolContext,
  type SluiceEvent,
  TransformError,
  configKeys,
  configOf,
  isRetryableStatus,
  requiredKeysOf,
  restRequest,
} from "../types";

export const PubSubConfig = t.Object(
  {
    projectId: t.String({ minLength: 1 }),
    /** The service account's JSON key, as text; not needed with testConfig.endpoint. */
    credentials: t.Optional(t.String()),
    /** Event name or message type (any case), or `*`, to the topic's id. */
    eventToTopicMap: t.Array(FromTo, { minItems: 1 }),
    /** Event name, type or `*` to the keys whose values become the message's attributes. */
    eventToAttributesMap: t.Optional(t.Array(FromTo)),
    /** rudder-server's emulator setting: `host:port`, reached over plain HTTP without credentials. */
    testConfig: t.Optional(t.Object({ endpoint: t.Optional(t.String()) }, { additionalProperties: true })),
  },
  { additionalProperties: true },
);
export type PubSubConfig = Static<typeof PubSubConfig>;

const SCOPE = "https://www.googleapis.com/auth/pubsub";
const MAX_MESSAGES = 1000;
const MAX_BYTES = 10 * 1024 * 1024;

interface PubSubOutput {
  userId: unknown;
  message: Record<string, unknown>;
  topicId: string;
  attributes: Record<string, string>;
}
const outputOf = (r: DestinationRequest) => r.body.JSON as unknown as PubSubOutput;

const asText = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));
const present = (v: unknown) => v !== undefined && v !== null;

/** RudderStack's attributes: each mapped key's value from the event's root, else properties, traits, context.traits; named by its last segment. */
function attributesOf(event: SluiceEvent, c: PubSubConfig): Record<string, string> {
  const keysBy = new Map<string, string[]>();
  for (const m of c.eventToAttributesMap ?? []) {
    if (typeof m.from !== "string" || m.from === "") continue;
    const k = m.from.toLowerCase();
    keysBy.set(k, [...(keysBy.get(k) ?? []), String(m.to)]);
  }
  const keys = (typeof event.event === "string" && event.event ? keysBy.get(event.event.toLowerCase()) : undefined) ?? keysBy.get(String(event.type).toLowerCase()) ?? keysBy.get("*");
  const out: Record<string, string> = {};
  for (const key of keys ?? []) {
    let value = getPath(event, key);
    if (!present(value)) {
      for (const source of ["properties", "traits", "context.traits"]) {
        const nested = getPath(event, source);
        if (!nested) continue;
        const v = (isPlainObject(nested) && Object.hasOwn(nested, key) ? nested[key] : undefined) || getPath(nested, key);
        if (present(v)) {
          value = v;
          break;
        }
      }
    }
    const name = key.split(".").at(-1)!;
    if (present(value) && !isPrototypeKey(name)) out[name] = asText(value);
  }
  return out;
}

/** Where the publish calls go: the emulator of testConfig.endpoint, or Pub/Sub (or its --destination-base-url). */
function baseOf(ctx: { baseUrl?: string }, c: PubSubConfig): string {
  const emulator = c.testConfig?.endpoint?.trim();
  if (emulator) return /^https?:\/\//.test(emulator) ? emulator.replace(/\/+$/, "") : `http://${emulator}`;
  return endpointFor(ctx, "https://pubsub.googleapis.com");
}

async function publish(request: DestinationRequest, ctx: ProtocolContext): Promise<ProtocolAnswer> {
  const c = configOf(ctx, PubSubConfig);
  const outputs = itemsOf(request, outputOf);
  const headers: Record<string, string> = {};
  if (!c.testConfig?.endpoint?.trim()) {
    const bearer = await googleBearer(ctx, c.credentials, { scope: SCOPE });
    if ("outcome" in bearer) return bearer;
    headers.authorization = bearer.authorization;
  }
  const body = { messages: outputs.map((o) => ({ data: Buffer.from(JSON.stringify(o.message)).toString("base64"), ...(Object.keys(o.attributes ?? {}).length ? { attributes: o.attributes } : {}) })) };
  const x = await ctx.http(restRequest({ endpoint: request.endpoint, headers, json: body }));
  if (!x.ok) return { outcome: x.retry ? "retry" : "abort", error: x.error };
  if (x.status >= 200 && x.status < 300) return { outcome: "ok", response: x.text };
  const retry = isRetryableStatus(x.status);
  return { outcome: retry ? "retry" : "abort", error: googleError("Pub/Sub", x), response: x.text };
}

export const googlePubSub: DestinationDefinition = {
  name: "GOOGLEPUBSUB",
  displayName: "Google Cloud Pub/Sub",
  config: {
    defaultConfig: configKeys(PubSubConfig, ["oneTrustCookieCategories", "consentManagement", "connectionMode"]),
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
    requiredKeys: requiredKeysOf(PubSubConfig),
  },
  configSchema: PubSubConfig,
  checkConfig(config): ConfigProblem | undefined {
    for (const key of ["eventToTopicMap", "eventToAttributesMap"]) {
      const list = Array.isArray(config[key]) ? config[key] : [];
      const i = list.findIndex((m: any) => isPlainObject(m) && typeof m.from === "string" && isPrototypeKey(m.from.toLowerCase()));
      if (i >= 0) return { key: `${key}[${i}].from`, message: "may not be a prototype key" };
    }
    const topics = (Array.isArray(config.eventToTopicMap) ? config.eventToTopicMap : []).filter((m: any) => isPlainObject(m) && typeof m.from === "string" && m.from && typeof m.to === "string" && m.to);
    if (!topics.length) return { key: "eventToTopicMap", message: "maps no event to a topic (each entry: {from: event name, type or *, to: topic id})" };
    const bad = topics.find((m: any) => !/^[A-Za-z][\w.~+%-]{2,254}$/.test(m.to));
    if (bad) return { key: "eventToTopicMap", message: `'${String(bad.to).slice(0, 80)}' is not a Pub/Sub topic id (3 to 255 letters, digits and - _ . ~ + %, starting with a letter)` };
    if (!config.testConfig?.endpoint) return credentialsProblem("credentials", config.credentials);
    return undefined;
  },
  transform(event, ctx) {
    const c = configOf(ctx, PubSubConfig);
    if (!event.type) throw new TransformError("type is required for event");
    const topicId = mappedByEvent(c.eventToTopicMap, event);
    if (!topicId) throw new TransformError("No topic set for this event");
    const output: PubSubOutput = { userId: event.userId || event.anonymousId, message: event as Record<string, unknown>, topicId, attributes: attributesOf(event, c) };
    const endpoint = `${baseOf(ctx, c)}/v1/projects/${encodeURIComponent(c.projectId)}/topics/${encodeURIComponent(topicId)}:publish`;
    return [restRequest({ endpoint, json: output as unknown as Record<string, unknown> })];
  },
  batch(requests) {
    const size = (o: PubSubOutput) => Math.ceil((JSON.stringify(o.message).length * 4) / 3) + JSON.stringify(o.attributes ?? {}).length + 50;
    return mergeRequests(requests, { key: "messages", max: MAX_MESSAGES, maxBytes: MAX_BYTES, item: outputOf, size, group: (r) => r.endpoint });
  },
  send: publish,
  notInTestApi: "a message queue",
};
