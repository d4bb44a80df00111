/**
 * What the AWS kinds share (KINESIS; FIREHOSE, EVENTBRIDGE and LAMBDA to come): credentials, a
 * call to a service's JSON API signed with Signature Version 4 as it goes out (aws4fetch: a
 * signature holds for minutes, so a retry an hour later is signed again), and how an answer
 * reads as rudder-server reads it (services/streammanager/common): a client fault aborts, a
 * server fault, throttling and an expired request are retried.
 *
 * Credentials: the destination's `accessKeyID` and `accessKey` (LAMBDA spells the first
 * `accessKeyId`), else the process's AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
 * AWS_SESSION_TOKEN, as the S3 kind does. `roleBasedAuth` with `iamRoleARN` (rudder-server
 * assumes that role through STS) is not done: such a destination without keys is signed with the
 * environment's credentials, or aborts naming the keys to set.
 */
import { AwsV4Signer } from "aws4fetch";
import type { HttpExchange, ProtocolAnswer, ProtocolContext } from "./types";
import { restRequest } from "./types";

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** The keys of a config, or of the environment; undefined when neither has both. */
export function awsCredentials(config: Record<string, any>, idKey = "accessKeyID", env: Record<string, string | undefined> = process.env): AwsCredentials | undefined {
  const id = typeof config[idKey] === "string" ? config[idKey].trim() : "";
  const secret = typeof config.accessKey === "string" ? config.accessKey.trim() : "";
  if (id && secret) return { accessKeyId: id, secretAccessKey: secret };
  if (env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY) {
    return { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY, sessionToken: env.AWS_SESSION_TOKEN || undefined };
  }
  return undefined;
}

/** `https://<service>.<region>.amazonaws.com/`, the endpoint of a service's JSON API. */
export const awsEndpoint = (service: string, region: string) => `https://${service}.${region}.amazonaws.com/`;

/**
 * Calls `target` (`Kinesis_20131202.PutRecords`) of a JSON API at `endpoint`, signed for
 * `service` in `region`, through delivery's HTTP client.
 */
export async function awsJsonCall(
  ctx: ProtocolContext,
  call: { endpoint: string; service: string; region: string; target: string; body: Record<string, unknown>; credentials: AwsCredentials },
): Promise<HttpExchange> {
  const headers = { "content-type": "application/x-amz-json-1.1", "x-amz-target": call.target };
  // The client serialises the body as JSON.stringify does here, so the signed bytes are the sent ones.
  const body = JSON.stringify(call.body);
  const signer = new AwsV4Signer({ method: "POST", url: call.endpoint, headers, body, service: call.service, region: call.region, ...call.credentials });
  const signed = await signer.sign();
  return ctx.http(restRequest({ endpoint: signed.url.toString(), headers: Object.fromEntries(signed.headers), json: call.body }));
}

/** An AWS error answer's type (`ResourceNotFoundException`) and message. */
export function awsError(text: string): { type: string; message: string } {
  try {
    const v = JSON.parse(text) as Record<string, unknown>;
    const type = String(v.__type ?? v.code ?? "").replace(/^.*#/, "");
    const message = String(v.message ?? v.Message ?? "");
    return { type, message };
  } catch {
    return { type: "", message: text.slice(0, 200) };
  }
}

/**
 * A failed exchange or a non-2xx answer as a protocol answer: retried when nothing was answered,
 * on a 5xx, on throttling (`ProvisionedThroughputExceededException` is Kinesis's) or an expired
 * request; aborted with the service's own words otherwise.
 */
export function awsFailure(service: string, x: HttpExchange): ProtocolAnswer {
  if (!x.ok) return { outcome: x.retry ? "retry" : "abort", error: x.error };
  const { type, message } = awsError(x.text);
  const error = `${service} answered ${x.status}${type ? ` ${type}` : ""}${message ? `: ${message}` : ""}`;
  const retry = x.status >= 500 || x.status === 429 || x.status === 408 || /Throttl|ProvisionedThroughputExceeded|RequestExpired/.test(type);
  return { outcome: retry ? "retry" : "abort", error, response: x.text };
}
