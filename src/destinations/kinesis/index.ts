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
import { awsEndpoint, awsKeys, awsRegion, failedItems, putItems } from "../aws";
import { endpointFor } from "../base-url";
import { itemVerdicts, itemsOf, mergeRequests } from "../item-batches";
import { isPlainObject } from "../shared";
import {
  type DestinationDefinition,
  type DestinationRequest,
  type ProtocolAnswer,
  type ProtocolContext,
  TransformError,
  configKeys,
  configOf,
  requiredKeysOf,
  restRequest,
} from "../types";

/** RudderStack's text pattern: 1 to 100 characters (or a template, which Sluice does not expand). */
const Name = t.String({ minLength: 1, maxLength: 100 });

export const KinesisConfig = t.Object(
  {
    region: awsRegion,
    stream: Name,
    useMessageId: t.Optional(t.Boolean()),
    ...awsKeys,
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
  const records = itemsOf(request, outputOf).map((o) => recordOf(o, c));
  // An empty partition key is refused by Kinesis (rudder-server sends it and is refused too).
  if (records.some((r) => r.PartitionKey === "")) return { outcome: "abort", error: "the event has no userId or anonymousId to partition by" };
  return putItems(request, ctx, {
    label: "Kinesis",
    service: "kinesis",
    target: "Kinesis_20131202.PutRecords",
    region: c.region,
    config: c,
    item: outputOf,
    body: () => ({ StreamName: c.stream, Records: records }),
  });
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
    // Base64 grows data by a third; the partition key and JSON framing are small beside it.
    const size = (o: KinesisOutput) => Math.ceil((JSON.stringify(o.message).length * 4) / 3) + 300;
    return mergeRequests(requests, { key: "records", max: MAX_RECORDS, maxBytes: MAX_BYTES, item: outputOf, size, group: (r) => r.endpoint });
  },
  checkResponse(answer, request) {
    // Both codes PutRecords gives a record (ProvisionedThroughputExceededException, InternalFailure) pass later.
    return itemVerdicts(request, failedItems(answer.body, { count: "FailedRecordCount", list: "Records", what: "Kinesis refused the record", outcome: "retry" }));
  },
  send: putRecords,
  notInTestApi: "a streaming platform",
};
