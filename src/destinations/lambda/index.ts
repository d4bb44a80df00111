/**
 * LAMBDA: events handed to an AWS Lambda function, invoked asynchronously.
 *
 * The transform makes what RudderStack's transformer makes, `{payload: the event's JSON,
 * destConfig: {invocationType: "Event", lambda, clientContext}}`; with `enableBatchInput`,
 * batch() joins a run of events into one payload (a JSON list), at most `maxBatchSize` of them
 * and 256 KB, as RudderStack's router does, and refuses an event over 256 KB alone. The kind's
 * client invokes the function as rudder-server's Lambda producer does
 * (services/streammanager/lambda): the payload as written, the invocation type and client
 * context from the destination's config.
 */
import { type Static, t } from "elysia";
import { awsCredentialsFor, awsFailure, awsKeys, awsRegion, awsRestCall } from "../aws";
import { endpointFor } from "../base-url";
import { type DestinationDefinition, type DestinationRequest, type ProtocolAnswer, type ProtocolContext, TransformError, configKeys, configOf, requiredKeysOf, restRequest } from "../types";

export const LambdaConfig = t.Object(
  {
    region: awsRegion,
    /** The function's name or ARN. */
    lambda: t.String({ minLength: 1 }),
    /** LAMBDA spells it `accessKeyId`, where the other AWS kinds have `accessKeyID`. */
    accessKeyId: t.Optional(t.String()),
    accessKey: t.Optional(t.String()),
    enableBatchInput: t.Optional(t.Boolean()),
    /** Text in RudderStack's configs ("20"); a number is taken too. */
    maxBatchSize: t.Optional(t.Union([t.String(), t.Number()])),
    /** Base64 of a JSON object, handed to the function as its client context. */
    clientContext: t.Optional(t.String()),
    /** Not in RudderStack's definition, read by rudder-server: Event (default), RequestResponse or DryRun. */
    invocationType: t.Optional(t.String()),
    roleBasedAuth: awsKeys.roleBasedAuth,
    iamRoleARN: awsKeys.iamRoleARN,
  },
  { additionalProperties: true },
);
export type LambdaConfig = Static<typeof LambdaConfig>;

/** An asynchronous invocation's payload limit. */
const MAX_PAYLOAD_BYTES = 256 * 1024;

interface LambdaOutput {
  payload: string;
  destConfig: { invocationType: string; lambda: string; clientContext?: string };
}

const outputOf = (r: DestinationRequest) => r.body.JSON as unknown as LambdaOutput;

function endpointOf(ctx: { baseUrl?: string }, c: LambdaConfig): string {
  return endpointFor(ctx, `https://lambda.${c.region}.amazonaws.com/2015-03-31/functions/${encodeURIComponent(c.lambda)}/invocations`);
}

async function invoke(request: DestinationRequest, ctx: ProtocolContext): Promise<ProtocolAnswer> {
  const c = configOf(ctx, LambdaConfig);
  const credentials = await awsCredentialsFor(ctx, c, request.endpoint, "accessKeyId");
  if ("outcome" in credentials) return credentials;
  const { payload } = outputOf(request);
  if (!payload) return { outcome: "abort", error: "[Lambda] error :: Invalid payload" };
  const headers: Record<string, string> = { "content-type": "application/json", "x-amz-invocation-type": c.invocationType || "Event" };
  if (c.clientContext) headers["x-amz-client-context"] = c.clientContext;
  const x = await awsRestCall(ctx, { endpoint: request.endpoint, service: "lambda", region: c.region, headers, body: payload, credentials });
  if (!x.ok || x.status < 200 || x.status >= 300) return awsFailure("Lambda", x);
  return { outcome: "ok", response: x.text || `Event delivered to Lambda :: ${c.lambda}` };
}

export const lambda: DestinationDefinition = {
  name: "LAMBDA",
  displayName: "AWS Lambda",
  config: {
    defaultConfig: configKeys(LambdaConfig, ["oneTrustCookieCategories", "consentManagement", "connectionMode"]),
    supportedMessageTypes: ["identify", "page", "screen", "track", "alias", "group"],
    requiredKeys: requiredKeysOf(LambdaConfig),
  },
  configSchema: LambdaConfig,
  transform(event, ctx) {
    const c = configOf(ctx, LambdaConfig);
    if (!Object.keys(c ?? {}).length) throw new TransformError("destination.Config cannot be undefined");
    const output: LambdaOutput = { payload: JSON.stringify(event), destConfig: { invocationType: "Event", lambda: c.lambda, clientContext: c.clientContext } };
    return [restRequest({ endpoint: endpointOf(ctx, c), json: output as unknown as Record<string, unknown> })];
  },
  batch(requests, ctx, refuse) {
    const c = configOf(ctx, LambdaConfig);
    const out: DestinationRequest[] = [];
    const fitting = requests.filter((r) => {
      // RudderStack measures an event as the list holding it alone.
      if (Buffer.byteLength(outputOf(r).payload) + 2 <= MAX_PAYLOAD_BYTES) return true;
      refuse?.(r, "payload size limit exceeded");
      return false;
    });
    if (!c.enableBatchInput) return fitting;
    const max = Number(c.maxBatchSize);
    let chunk: DestinationRequest[] = [];
    let bytes = 2;
    const flush = () => {
      if (!chunk.length) return;
      const payload = `[${chunk.map((r) => outputOf(r).payload).join(",")}]`;
      const first = chunk[0]!;
      out.push({ ...first, body: { ...first.body, JSON: { ...outputOf(first), payload } } });
      chunk = [];
      bytes = 2;
    };
    for (const r of fitting) {
      const size = Buffer.byteLength(outputOf(r).payload);
      if ((Number.isInteger(max) && max > 0 && chunk.length >= max) || bytes + size + (chunk.length ? 1 : 0) > MAX_PAYLOAD_BYTES) flush();
      chunk.push(r);
      bytes += size + (chunk.length > 1 ? 1 : 0);
    }
    flush();
    return out;
  },
  send: invoke,
  notInTestApi: "a serverless function",
};
