/**
 * GOOGLE_CLOUD_FUNCTION: events posted to a Google Cloud Function's URL.
 *
 * The transform makes what RudderStack's transformer makes: the event itself; with
 * `enableBatchInput`, batch() joins a run into a list of at most `maxBatchSize` (10 by default),
 * as RudderStack's router does. The kind's client posts it as rudder-server's producer does
 * (services/streammanager/googlecloudfunction): with `requireAuthentication`, an ID token for the
 * function's URL from the service account in `credentials`. Like rudder-server, a call that times
 * out counts as made (a function that is slow to answer was still invoked), and any answer other
 * than 2xx is read by its status: 5xx and 429 retried, the rest aborted.
 */
import { type Static, t } from "elysia";
import { credentialsProblem, googleBearer } from "../google";
import { endpointFor } from "../base-url";
import { type ConfigProblem, type DestinationDefinition, type DestinationRequest, type ProtocolAnswer, type ProtocolContext, TransformError, configKeys, configOf, isRetryableStatus, requiredKeysOf, restRequest } from "../types";

export const CloudFunctionConfig = t.Object(
  {
    googleCloudFunctionUrl: t.String({ minLength: 1 }),
    requireAuthentication: t.Optional(t.Boolean()),
    /** The service account's JSON key, as text; needed with requireAuthentication. */
    credentials: t.Optional(t.String()),
    enableBatchInput: t.Optional(t.Boolean()),
    /** Text or a number; 10 when absent. */
    maxBatchSize: t.Optional(t.Union([t.String(), t.Number()])),
  },
  { additionalProperties: true },
);
export type CloudFunctionConfig = Static<typeof CloudFunctionConfig>;

async function call(request: DestinationRequest, ctx: ProtocolContext): Promise<ProtocolAnswer> {
  const c = configOf(ctx, CloudFunctionConfig);
  const headers: Record<string, string> = {};
  if (c.requireAuthentication) {
    const bearer = await googleBearer(ctx, c.credentials, { audience: c.googleCloudFunctionUrl }, "[GoogleCloudFunction] Failed to receive token: ");
    if ("outcome" in bearer) return bearer;
    headers.authorization = bearer.authorization;
  }
  const x = await ctx.http({ ...request, headers: { ...request.headers, ...headers } });
  if (!x.ok) {
    if (x.error.startsWith("timed out")) return { outcome: "ok", response: "[GoogleCloudFunction] :: Function is called" };
    return { outcome: x.retry ? "retry" : "abort", error: `[GOOGLE_CLOUD_FUNCTION] error :: Function call was not executed ${x.error}` };
  }
  if (x.status >= 200 && x.status < 300) return { outcome: "ok", response: x.text || "[GoogleCloudFunction] :: Function call is executed" };
  const error = `[GOOGLE_CLOUD_FUNCTION] error :: Function call failed ${x.text.slice(0, 300)}`;
  return { outcome: isRetryableStatus(x.status) ? "retry" : "abort", error, response: x.text };
}

export const googleCloudFunction: DestinationDefinition = {
  name: "GOOGLE_CLOUD_FUNCTION",
  displayName: "Google Cloud Function",
  config: {
    defaultConfig: configKeys(CloudFunctionConfig, ["oneTrustCookieCategories", "consentManagement", "connectionMode"]),
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias"],
    requiredKeys: requiredKeysOf(CloudFunctionConfig),
    urlKeys: ["googleCloudFunctionUrl"],
  },
  configSchema: CloudFunctionConfig,
  checkConfig(config): ConfigProblem | undefined {
    if (config.requireAuthentication) return credentialsProblem("credentials", config.credentials);
    return undefined;
  },
  transform(event, ctx) {
    const c = configOf(ctx, CloudFunctionConfig);
    if (!c.googleCloudFunctionUrl) throw new TransformError("[GCF]:: Url not found. Aborting");
    if (c.requireAuthentication && !c.credentials) throw new TransformError("[GCF]:: Service Account credentials are required if your function required authentication. Aborting");
    return [restRequest({ endpoint: endpointFor(ctx, c.googleCloudFunctionUrl), json: event as Record<string, unknown> })];
  },
  batch(requests, ctx) {
    const c = configOf(ctx, CloudFunctionConfig);
    if (!c.enableBatchInput) return requests;
    const max = Number(c.maxBatchSize ?? 10) > 0 ? Math.floor(Number(c.maxBatchSize ?? 10)) : 10;
    const out: DestinationRequest[] = [];
    for (let i = 0; i < requests.length; i += max) {
      const chunk = requests.slice(i, i + max);
      out.push(restRequest({ endpoint: chunk[0]!.endpoint, json: chunk.map((r) => r.body.JSON) }));
    }
    return out;
  },
  send: call,
  notInTestApi: "a serverless function",
};
