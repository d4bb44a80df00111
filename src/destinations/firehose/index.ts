/**
 * FIREHOSE: each event as one record of an Amazon Data Firehose delivery stream, the stream
 * picked by `mapEvents`.
 *
 * The transform makes what RudderStack's transformer makes, `{message, userId,
 * deliveryStreamMapTo}` (userId is the anonymousId there, as RudderStack has it); the kind's client
 * writes it as rudder-server's Firehose producer does (services/streammanager/firehose): the JSON
 * of `message` as the record's data. Where rudder-server puts one record a call, Sluice puts a run
 * of records for one stream in one PutRecordBatch call (up to 500 records and 4 MiB, Firehose's
 * limits); a record the answer names as failed is retried alone.
 */
import { type Static, t } from "elysia";
import { isPrototypeKey } from "../../lib/safe-keys";
import { awsEndpoint, awsKeys, awsRegion, failedItems, putItems } from "../aws";
import { endpointFor } from "../base-url";
import { itemVerdicts, mergeRequests } from "../item-batches";
import { FromTo, isPlainObject, mappedByEvent } from "../shared";
import {
  type ConfigProblem,
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

export const FirehoseConfig = t.Object(
  {
    region: awsRegion,
    /** Event name or message type (any case), or `*`, to the delivery stream's name. */
    mapEvents: t.Array(FromTo, { minItems: 1 }),
    ...awsKeys,
  },
  { additionalProperties: true },
);
export type FirehoseConfig = Static<typeof FirehoseConfig>;

const MAX_RECORDS = 500;
const MAX_BYTES = 4 * 1024 * 1024;

interface FirehoseOutput {
  message: Record<string, unknown>;
  userId: unknown;
  deliveryStreamMapTo: string;
}

const outputOf = (r: DestinationRequest) => r.body.JSON as unknown as FirehoseOutput;

function putRecordBatch(request: DestinationRequest, ctx: ProtocolContext): Promise<ProtocolAnswer> {
  const c = configOf(ctx, FirehoseConfig);
  return putItems(request, ctx, {
    label: "Firehose",
    service: "firehose",
    target: "Firehose_20150804.PutRecordBatch",
    region: c.region,
    config: c,
    item: outputOf,
    body: (outputs) => ({ DeliveryStreamName: outputs[0]!.deliveryStreamMapTo, Records: outputs.map((o) => ({ Data: Buffer.from(JSON.stringify(o.message)).toString("base64") })) }),
  });
}

export const firehose: DestinationDefinition = {
  name: "FIREHOSE",
  displayName: "Amazon Kinesis Firehose",
  config: {
    defaultConfig: configKeys(FirehoseConfig, ["oneTrustCookieCategories"]),
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
    requiredKeys: requiredKeysOf(FirehoseConfig),
  },
  configSchema: FirehoseConfig,
  checkConfig(config): ConfigProblem | undefined {
    const list = Array.isArray(config.mapEvents) ? config.mapEvents : [];
    const i = list.findIndex((m: any) => isPlainObject(m) && typeof m.from === "string" && isPrototypeKey(m.from.toLowerCase()));
    if (i >= 0) return { key: `mapEvents[${i}].from`, message: "may not be a prototype key" };
    if (!list.some((m: any) => isPlainObject(m) && typeof m.from === "string" && m.from !== "" && typeof m.to === "string" && m.to !== "")) {
      return { key: "mapEvents", message: "maps no event to a delivery stream (each entry: {from: event name, type or *, to: stream name})" };
    }
    return undefined;
  },
  transform(event, ctx) {
    const c = configOf(ctx, FirehoseConfig);
    const stream = mappedByEvent(c.mapEvents, event);
    if (!stream) throw new TransformError("No delivery stream set for this event");
    const output: FirehoseOutput = { message: event as Record<string, unknown>, userId: event.anonymousId, deliveryStreamMapTo: stream };
    return [restRequest({ endpoint: endpointFor(ctx, awsEndpoint("firehose", c.region)), json: output as unknown as Record<string, unknown> })];
  },
  batch(requests) {
    const size = (o: FirehoseOutput) => Math.ceil((JSON.stringify(o.message).length * 4) / 3) + 100;
    return mergeRequests(requests, { key: "records", max: MAX_RECORDS, maxBytes: MAX_BYTES, item: outputOf, size, group: (r) => `${r.endpoint} ${outputOf(r).deliveryStreamMapTo}` });
  },
  checkResponse(answer, request) {
    // Firehose's record errors (ServiceUnavailableException, InternalFailure) pass later.
    return itemVerdicts(request, failedItems(answer.body, { count: "FailedPutCount", list: "RequestResponses", what: "Firehose refused the record", outcome: "retry" }));
  },
  send: putRecordBatch,
  notInTestApi: "a streaming platform",
};
