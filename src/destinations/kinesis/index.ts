/**
 * KINESIS: each event as one record of an Amazon Kinesis data stream.
 *
 * The transform makes what RudderStack's transformer makes, `{message, userId}` (userId falling
 * back to anonymousId), carried as the request's JSON body; the kind's client then writes it as
 * rudder-server's Kinesis producer does (services/streammanager/kinesis): the JSON of `message` as
 * the record's data, partitioned by `message.messageId` with `useMessageId`, else by that userId.
 * Where rudder-server puts one record a call, Sluice puts a run of records in one PutRecords call
 * (up to 500 records and 5 MB, Kinesis's limits); a record the answer names as failed
 * (throughput exceeded, an internal failure) is retried alone, from the first failed one of
 * its user (src/pipeline/scheduler.ts).
 */
import { type Static, t } from "elysia";
import { awsCredentials, awsEndpoint, awsFailure, awsJsonCall } from "../aws";
import { endpointFor } from "../base-url";
import { isPlainObject } from "../shared";
import {
  type DestinationDefinition,
  type DestinationRequest,
  type ProtocolAnswer,
  type ProtocolContext,
  type ResponseVerdict,
  TransformError,
  configKeys,
  configOf,
  requiredKeysOf,
  restRequest,
} from "../types";

/** RudderStack's text pattern for both: 1 to 100 characters (or a template, which Sluice does not expand). */
const Name = t.String({ minLength: 1, maxLength: 100 });

export const KinesisConfig = t.Object(
  {
    region: Name,
    stream: Name,
    accessKeyID: t.Optional(t.String()),
    accessKey: t.Optional(t.String()),
    useMessageId: t.Optional(t.Boolean()),
    /** Not read: Sluice signs with the keys above or the process's AWS_* environment (src/destinations/aws.ts). */
    roleBasedAuth: t.Optional(t.Boolean()),
    iamRoleARN: t.Optional(t.String()),
  },
  { additionalProperties: true },
);
export type KinesisConfig = Static<typeof KinesisConfig>;

/** Kinesis's limits of one PutRecords call. */
const MAX_RECORDS = 500;
const MAX_BYTES = 5 * 1024 * 1024;

/** RudderStack's output, as each event's request carries it. */
interface KinesisOutput {
  message: Record<string, unknown>;
  userId: unknown;
}

/** A merged request's outputs, and where each event's own request went in it. */
const merged = new WeakMap<DestinationRequest, { outputs: KinesisOutput[]; at: Map<DestinationRequest, number> }>();

const outputOf = (r: DestinationRequest) => r.body.JSON as unknown as KinesisOutput;

/** A record as PutRecords takes it. */
function recordOf(o: KinesisOutput, c: KinesisConfig): { Data: string; PartitionKey: string } {
  const data = Buffer.from(JSON.stringify(o.message)).toString("base64");
  let key = c.useMessageId && o.message.messageId != null ? String(o.message.messageId) : "";
  if (!key) key = o.userId == null ? "" : String(o.userId);
  return { Data: data, PartitionKey: key };
}

async function putRecords(request: DestinationRequest, ctx: ProtocolContext): Promise<ProtocolAnswer> {
  const c = configOf(ctx, KinesisConfig);
  const credentials = awsCredentials(c);
  if (!credentials) return { outcome: "abort", error: "no AWS credentials: set accessKeyID and accessKey on the destination, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in Sluice's environment" };
  const outputs = merged.get(request)?.outputs ?? [outputOf(request)];
  const records = outputs.map((o) => recordOf(o, c));
  // An empty partition key is refused by Kinesis (rudder-server sends it and is refused too).
  if (records.some((r) => r.PartitionKey === "")) return { outcome: "abort", error: "the event has no userId or anonymousId to partition by" };
  const x = await awsJsonCall(ctx, {
    endpoint: request.endpoint,
    service: "kinesis",
    region: c.region,
    target: "Kinesis_20131202.PutRecords",
    body: { StreamName: c.stream, Records: records },
    credentials,
  });
  if (!x.ok || x.status < 200 || x.status >= 300) return awsFailure("Kinesis", x);
  return { outcome: "ok", response: x.text };
}

/** A PutRecords answer: the failed records' verdicts, by position. */
function failedRecords(body: string): Map<number, ResponseVerdict> {
  const failed = new Map<number, ResponseVerdict>();
  const answer = JSON.parse(body) as { FailedRecordCount?: number; Records?: Array<{ ErrorCode?: string; ErrorMessage?: string }> };
  if (!answer.FailedRecordCount) return failed;
  (answer.Records ?? []).forEach((r, i) => {
    // Both codes PutRecords gives a record (ProvisionedThroughputExceededException, InternalFailure) pass later.
    if (r.ErrorCode) failed.set(i, { outcome: "retry", error: `Kinesis refused the record: ${r.ErrorCode}${r.ErrorMessage ? `: ${r.ErrorMessage}` : ""}` });
  });
  return failed;
}

export const kinesis: DestinationDefinition = {
  name: "KINESIS",
  displayName: "Amazon Kinesis",
  config: {
    defaultConfig: configKeys(KinesisConfig, ["consentManagement", "connectionMode", "oneTrustCookieCategories", "ketchConsentPurposes"]),
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
    requiredKeys: requiredKeysOf(KinesisConfig),
  },
  configSchema: KinesisConfig,
  transform(event, ctx) {
    const c = configOf(ctx, KinesisConfig);
    if (!isPlainObject(event)) throw new TransformError("the event is not an object");
    const output: KinesisOutput = { message: event as Record<string, unknown>, userId: event.userId || event.anonymousId };
    return [restRequest({ endpoint: endpointFor(ctx, awsEndpoint("kinesis", c.region)), json: output as unknown as Record<string, unknown> })];
  },
  batch(requests) {
    const out: DestinationRequest[] = [];
    let current: { request: DestinationRequest; outputs: KinesisOutput[]; at: Map<DestinationRequest, number>; bytes: number } | undefined;
    for (const r of requests) {
      const output = outputOf(r);
      // Base64 grows data by a third; the partition key and JSON framing are small beside it.
      const bytes = Math.ceil((JSON.stringify(output.message).length * 4) / 3) + 300;
      if (!current || current.request.endpoint !== r.endpoint || current.outputs.length >= MAX_RECORDS || current.bytes + bytes > MAX_BYTES) {
        const request = { ...r, body: { ...r.body, JSON: { records: [] as KinesisOutput[] } } };
        current = { request, outputs: request.body.JSON.records, at: new Map(), bytes: 0 };
        merged.set(request, { outputs: current.outputs, at: current.at });
        out.push(request);
      }
      current.at.set(r, current.outputs.length);
      current.outputs.push(output);
      current.bytes += bytes;
    }
    return out;
  },
  checkResponse(answer, request) {
    const m = merged.get(request);
    const failed = failedRecords(answer.body);
    if (!failed.size) return { outcome: "ok" };
    if (!m) return failed.get(0) ?? { outcome: "ok" };
    return {
      outcome: "per-event",
      verdictFor(own) {
        for (const r of own) {
          const at = m.at.get(r);
          const verdict = at === undefined ? undefined : failed.get(at);
          if (verdict) return verdict;
        }
        return { outcome: "ok" };
      },
    };
  },
  send: putRecords,
  notInTestApi: "a streaming platform",
};
