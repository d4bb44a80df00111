/**
 * What the AWS kinds share (KINESIS; FIREHOSE, EVENTBRIDGE and LAMBDA to come): credentials, a
 * call to a service's JSON API signed with Signature Version 4 as it goes out (aws4fetch: a
 * signature holds for minutes, so a retry an hour later is signed again), and how an answer
 * reads as rudder-server reads it (services/streammanager/common): a client fault aborts, a
 * server fault, throttling and an expired request are retried.
 *
 * Credentials: with `roleBasedAuth` and an `iamRoleARN`, the role assumed through STS with the
 * process's own AWS_* credentials and the workspace's id as external id, as rudder-server assumes
 * it (the temporary keys kept until five minutes before they expire); else the destination's
 * `accessKeyID` and `accessKey` (LAMBDA spells the first `accessKeyId`), else the process's
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, as the S3 kind does.
 */
import { AwsV4Signer } from "aws4fetch";
import { t } from "elysia";
import { LRUCache } from "lru-cache";
import { itemsOf } from "./item-batches";
import type { DestinationRequest, HttpExchange, ProtocolAnswer, ProtocolContext, ResponseVerdict } from "./types";
import { isRetryableStatus, restRequest } from "./types";

/**
 * The keys every AWS kind's definition has beside its own (LAMBDA spells the first
 * `accessKeyId`). roleBasedAuth with iamRoleARN assumes that role (awsCredentialsFor).
 */
export const awsKeys = {
  accessKeyID: t.Optional(t.String()),
  accessKey: t.Optional(t.String()),
  roleBasedAuth: t.Optional(t.Boolean()),
  iamRoleARN: t.Optional(t.String()),
};

/** An AWS region, as RudderStack's definitions take it. */
export const awsRegion = t.String({ minLength: 1, maxLength: 100 });

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

/** Why a call cannot be signed, naming the keys to set (`idKey`: LAMBDA's spelling differs). */
export const noCredentials = (idKey = "accessKeyID") =>
  `no AWS credentials: set ${idKey} and accessKey on the destination, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in Sluice's environment`;

/** `https://<service>.<region>.amazonaws.com/`, the endpoint of a service's JSON API. */
export const awsEndpoint = (service: string, region: string) => `https://${service}.${region}.amazonaws.com/`;

/**
 * Calls `target` (`Kinesis_20131202.PutRecords`) of a JSON API at `endpoint`, signed for
 * `service` in `region`, through delivery's HTTP client.
 */
export function awsJsonCall(
  ctx: ProtocolContext,
  call: { endpoint: string; service: string; region: string; target: string; body: Record<string, unknown>; credentials: AwsCredentials },
): Promise<HttpExchange> {
  const headers = { "content-type": "application/x-amz-json-1.1", "x-amz-target": call.target };
  return awsRestCall(ctx, { ...call, headers, body: JSON.stringify(call.body) });
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
  const parsed = awsError(x.text);
  // Lambda names the error in a header, its body in `Type`/`message` (User, Service).
  const type = x.headers.get("x-amzn-errortype")?.split(":")[0] || parsed.type;
  const message = parsed.message;
  const error = `${service} answered ${x.status}${type ? ` ${type}` : ""}${message ? `: ${message}` : ""}`;
  const retry = isRetryableStatus(x.status) || /Throttl|ProvisionedThroughputExceeded|RequestExpired/.test(type);
  return { outcome: retry ? "retry" : "abort", error, response: x.text };
}

/**
 * A signed POST to `endpoint`, its path included (LAMBDA's Invoke, STS, and the JSON APIs through
 * awsJsonCall): `body` goes as written, the bytes that were signed.
 */
export async function awsRestCall(
  ctx: ProtocolContext,
  call: { endpoint: string; service: string; region: string; headers: Record<string, string>; body: string; credentials: AwsCredentials },
): Promise<HttpExchange> {
  const signer = new AwsV4Signer({ method: "POST", url: call.endpoint, headers: call.headers, body: call.body, service: call.service, region: call.region, ...call.credentials });
  const signed = await signer.sign();
  const request = restRequest({ endpoint: signed.url.toString(), headers: Object.fromEntries(signed.headers) });
  // A JSON_ARRAY batch goes out as its text, unparsed: the signed bytes (src/pipeline/send.ts).
  request.body.JSON_ARRAY = { batch: call.body };
  return ctx.http(request);
}

/**
 * Puts a request's items (one, or a merged request's: mergeRequests) with one call of a JSON API
 * (PutRecords, PutRecordBatch, PutEvents): the service's answer as the response, or why not.
 */
export async function putItems<T>(
  request: DestinationRequest,
  ctx: ProtocolContext,
  call: { label: string; service: string; target: string; region: string; config: Record<string, any>; item(r: DestinationRequest): T; body(items: T[]): Record<string, unknown> },
): Promise<ProtocolAnswer> {
  const credentials = await awsCredentialsFor(ctx, call.config, request.endpoint);
  if ("outcome" in credentials) return credentials;
  const x = await awsJsonCall(ctx, { endpoint: request.endpoint, service: call.service, region: call.region, target: call.target, body: call.body(itemsOf(request, call.item)), credentials });
  if (!x.ok || x.status < 200 || x.status >= 300) return awsFailure(call.label, x);
  return { outcome: "ok", response: x.text };
}

/**
 * The items a 2xx answer names as failed, by position: `count` is the answer's failure count
 * (FailedRecordCount), `list` its per-item list, each failed one with ErrorCode and ErrorMessage.
 */
export function failedItems(body: string, spec: { count: string; list: string; what: string; outcome: "retry" | "abort" }): Map<number, ResponseVerdict> {
  const failed = new Map<number, ResponseVerdict>();
  const answer = JSON.parse(body) as Record<string, unknown>;
  if (!answer[spec.count]) return failed;
  const list = Array.isArray(answer[spec.list]) ? (answer[spec.list] as Array<{ ErrorCode?: string; ErrorMessage?: string }>) : [];
  list.forEach((r, i) => {
    if (r?.ErrorCode) failed.set(i, { outcome: spec.outcome, error: `${spec.what}: ${r.ErrorCode}${r.ErrorMessage ? `: ${r.ErrorMessage}` : ""}` });
  });
  return failed;
}

const assumed = new LRUCache<string, { credentials: AwsCredentials; until: number }>({ max: 1000 });

/** What a `<Name>value</Name>` element of STS's XML answer holds. */
const xmlValue = (xml: string, name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];

/**
 * The credentials a call is signed with: the assumed role's (roleBasedAuth with iamRoleARN), or
 * the destination's keys, or the environment's; or why there are none (retried when STS did not
 * answer). STS is AWS's, unless --destination-base-url points the kind elsewhere: a stand-in there
 * answers for STS too.
 */
export async function awsCredentialsFor(
  ctx: ProtocolContext,
  config: Record<string, any>,
  endpoint: string,
  idKey = "accessKeyID",
  env: Record<string, string | undefined> = process.env,
): Promise<AwsCredentials | { outcome: "abort" | "retry"; error: string }> {
  const role = config.roleBasedAuth === true && typeof config.iamRoleARN === "string" ? config.iamRoleARN.trim() : "";
  if (!role) return awsCredentials(config, idKey, env) ?? { outcome: "abort", error: noCredentials(idKey) };
  const base = env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY ? { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY, sessionToken: env.AWS_SESSION_TOKEN || undefined } : undefined;
  if (!base) return { outcome: "abort", error: `roleBasedAuth: assuming ${role} needs AWS credentials in Sluice's environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)` };
  const externalId = String(config.externalID || config.externalId || ctx.destination.workspaceId);
  const key = `${role}\u0000${externalId}\u0000${base.accessKeyId}`;
  const kept = assumed.get(key);
  if (kept && kept.until > Date.now()) return kept.credentials;
  const origin = /^https?:\/\/[^/]+/.exec(endpoint)?.[0] ?? "";
  const sts = /\.amazonaws\.com(\.cn)?$/i.test(new URL(origin || "https://sts.amazonaws.com").hostname) ? "https://sts.amazonaws.com/" : `${origin}/`;
  const body = new URLSearchParams({ Action: "AssumeRole", Version: "2011-06-15", RoleArn: role, RoleSessionName: "sluice", ExternalId: externalId, DurationSeconds: "3600" }).toString();
  const x = await awsRestCall(ctx, { endpoint: sts, service: "sts", region: "us-east-1", headers: { "content-type": "application/x-www-form-urlencoded" }, body, credentials: base });
  if (!x.ok) return { outcome: x.retry ? "retry" : "abort", error: `STS: ${x.error}` };
  if (x.status !== 200) {
    const message = xmlValue(x.text, "Message") ?? x.text.slice(0, 200);
    return { outcome: x.status >= 500 || x.status === 429 ? "retry" : "abort", error: `STS refused to assume ${role} (${x.status}): ${message}` };
  }
  const accessKeyId = xmlValue(x.text, "AccessKeyId");
  const secretAccessKey = xmlValue(x.text, "SecretAccessKey");
  const sessionToken = xmlValue(x.text, "SessionToken");
  if (!accessKeyId || !secretAccessKey) return { outcome: "retry", error: "STS answered without credentials" };
  const expires = Date.parse(xmlValue(x.text, "Expiration") ?? "") || Date.now() + 3_600_000;
  const credentials = { accessKeyId, secretAccessKey, sessionToken };
  assumed.set(key, { credentials, until: expires - 5 * 60_000 });
  return credentials;
}
