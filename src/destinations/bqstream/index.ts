/**
 * BQSTREAM: track events' properties streamed as rows into one BigQuery table (insertAll).
 *
 * The transform makes what RudderStack's transformer makes (src/v0/destinations/bqstream):
 * `{datasetId, tableId, projectId, properties}`, the properties carrying `insertId` when the
 * `insertId` key names a property with a value. batch() merges a run into one call of up to 500
 * rows, `properties` then a list, as RudderStack's router does. The kind's client inserts them as
 * rudder-server's producer does (services/streammanager/bqstream) through Google's Go client: a
 * row's `insertId` is taken out of it and sent as the row's insertId (a random one when it has
 * none), over BigQuery's REST API.
 *
 * Where rudder-server turns every failed call into a 400 for the whole batch (its client retries
 * 5xx, backendError and rateLimitExceeded inside the call's time-out), Sluice retries those calls
 * and reads insertErrors row by row: a row refused for itself aborts; a row BigQuery left out
 * because another failed (`stopped`) or for a passing reason is retried.
 */
import { type Static, t } from "elysia";
import { endpointFor } from "../base-url";
import { credentialsProblem, googleBearer, googleError } from "../google";
import { itemVerdicts, mergeRequests } from "../item-batches";
import {
  type ConfigProblem,
  type DestinationDefinition,
  type DestinationRequest,
  type ProtocolAnswer,
  type ProtocolContext,
  type ResponseVerdict,
  TransformError,
  configKeys,
  configOf,
  isRetryableStatus,
  requiredKeysOf,
  restRequest,
} from "../types";

export const BqStreamConfig = t.Object(
  {
    projectId: t.String({ minLength: 1 }),
    datasetId: t.String({ minLength: 1 }),
    tableId: t.String({ minLength: 1 }),
    /** The service account's JSON key, as text (RudderStack's secret key). */
    credentials: t.String({ minLength: 1 }),
    /** The property whose value becomes each row's insertId, for BigQuery's best-effort de-duplication. */
    insertId: t.Optional(t.String()),
  },
  { additionalProperties: true },
);
export type BqStreamConfig = Static<typeof BqStreamConfig>;

/** rudder-server's client asks for this scope (gbq.BigqueryInsertdataScope). */
const SCOPE = "https://www.googleapis.com/auth/bigquery.insertdata";
/** RudderStack's MAX_ROWS_PER_REQUEST, after BigQuery's advice for streaming inserts. */
const MAX_ROWS = 500;
/** BigQuery refuses an insertAll request over 10 MB; the rest is room for each row's framing. */
const MAX_BYTES = 9 * 1024 * 1024;
/**
 * Reasons a row may pass with later: those Google's Go client retries a call for (backendError,
 * rateLimitExceeded; internalError for jobs), and `stopped`: the row was fine, another one was not.
 */
const PASSING_REASONS = new Set(["stopped", "backendError", "rateLimitExceeded", "internalError"]);

type Row = Record<string, unknown>;

/** RudderStack's output: one row in a processor output, a list of them once batched. */
interface BqOutput {
  datasetId: string;
  tableId: string;
  projectId: string;
  properties: Row | Row[];
}
const outputOf = (r: DestinationRequest) => r.body.JSON as unknown as BqOutput;

/** RudderStack's getInsertIdColValue: a non-empty string or a non-zero number of the named property, as text. */
function insertIdOf(properties: Row, column: string | undefined): string | undefined {
  if (!column || !Object.hasOwn(properties, column)) return undefined;
  const v = properties[column];
  return v && (typeof v === "string" || typeof v === "number") ? `${v}` : undefined;
}

/** rudder-server's GenericRecord.Save: the row's own `insertId` leaves the row and names it. */
function insertRow(row: Row): { insertId: string; json: Row } {
  const json: Row = { ...row };
  let insertId: string | undefined;
  if (Object.hasOwn(json, "insertId")) {
    const v = json.insertId;
    delete json.insertId;
    if (typeof v === "string") insertId = v;
    else if (v !== null && v !== undefined) insertId = typeof v === "object" ? JSON.stringify(v) : String(v);
  }
  // Google's Go client gives a row without one a random id, so its own retries of the call are de-duplicated.
  return { insertId: insertId || crypto.randomUUID(), json };
}

/** The rows a request carries: a batched output's list, or the one row of a single output (rudder-server's props.IsArray()). */
function rowsOf(request: DestinationRequest): Row[] {
  const p = outputOf(request).properties;
  return Array.isArray(p) ? p : [p];
}

/** The reason BigQuery gives a failed call (`error.errors[0].reason`), which its Go client retries by. */
function reasonOf(text: string): string | undefined {
  try {
    const r = JSON.parse(text)?.error?.errors?.[0]?.reason;
    return typeof r === "string" ? r : undefined;
  } catch {
    return undefined;
  }
}

async function insertAll(request: DestinationRequest, ctx: ProtocolContext): Promise<ProtocolAnswer> {
  const c = configOf(ctx, BqStreamConfig);
  const bearer = await googleBearer(ctx, c.credentials, { scope: SCOPE });
  if ("outcome" in bearer) return bearer;
  const rows = rowsOf(request).map(insertRow);
  const x = await ctx.http(restRequest({ endpoint: request.endpoint, headers: { authorization: bearer.authorization }, json: { rows } }));
  if (!x.ok) return { outcome: x.retry ? "retry" : "abort", error: x.error };
  if (x.status >= 200 && x.status < 300) return { outcome: "ok", response: x.text };
  const reason = reasonOf(x.text);
  const retry = isRetryableStatus(x.status) || reason === "backendError" || reason === "rateLimitExceeded";
  return { outcome: retry ? "retry" : "abort", error: googleError("BigQuery", x), response: x.text };
}

/** insertErrors as a verdict per row position: aborted for the row's own fault, retried where it may pass later. */
function rowVerdicts(body: string): Map<number, ResponseVerdict> {
  const failed = new Map<number, ResponseVerdict>();
  let answer: any;
  try {
    answer = JSON.parse(body);
  } catch {
    return failed;
  }
  for (const e of Array.isArray(answer?.insertErrors) ? answer.insertErrors : []) {
    const index = Number(e?.index ?? 0);
    if (!Number.isInteger(index) || index < 0) continue;
    const errors: Array<{ reason?: string; message?: string; location?: string }> = Array.isArray(e?.errors) ? e.errors : [];
    const reasons = errors.map((x) => String(x?.reason ?? ""));
    const passing = reasons.length > 0 && reasons.every((r) => PASSING_REASONS.has(r));
    const words = errors.map((x) => `${x?.reason || "error"}${x?.location ? ` at ${x.location}` : ""}${x?.message ? `: ${x.message}` : ""}`).join("; ");
    const error = reasons.length && reasons.every((r) => r === "stopped")
      ? "BigQuery did not insert the row (stopped): another row of the call was refused"
      : `BigQuery refused the row: ${words || "no reason given"}`;
    failed.set(index, { outcome: passing ? "retry" : "abort", error });
  }
  return failed;
}

export const bqStream: DestinationDefinition = {
  name: "BQSTREAM",
  displayName: "BigQuery Stream",
  config: {
    defaultConfig: configKeys(BqStreamConfig, ["rudderAccountId", "oneTrustCookieCategories", "ketchConsentPurposes", "consentManagement", "connectionMode"]),
    supportedMessageTypes: ["track"],
    requiredKeys: requiredKeysOf(BqStreamConfig),
  },
  configSchema: BqStreamConfig,
  checkConfig(config): ConfigProblem | undefined {
    // BigQuery's own rule for dataset ids; a wrong one would only ever answer 400 or 404.
    if (typeof config.datasetId === "string" && !/^[A-Za-z0-9_]{1,1024}$/.test(config.datasetId)) {
      return { key: "datasetId", message: "is not a BigQuery dataset id (letters, digits and underscores)" };
    }
    return credentialsProblem("credentials", config.credentials);
  },
  transform(event, ctx) {
    const c = configOf(ctx, BqStreamConfig);
    if (event.type !== "track") throw new TransformError(`Message Type not supported: ${event.type}`);
    const properties = event.properties;
    if (!properties || typeof properties !== "object") throw new TransformError("Invalid payload for the destination");
    const row: Row = { ...properties };
    const insertId = insertIdOf(properties, c.insertId);
    if (insertId) row.insertId = insertId;
    const output: BqOutput = { datasetId: c.datasetId, tableId: c.tableId, projectId: c.projectId, properties: row };
    const path = `/bigquery/v2/projects/${encodeURIComponent(c.projectId)}/datasets/${encodeURIComponent(c.datasetId)}/tables/${encodeURIComponent(c.tableId)}/insertAll`;
    return [restRequest({ endpoint: endpointFor(ctx, `https://bigquery.googleapis.com${path}`), json: output as unknown as Record<string, unknown> })];
  },
  batch(requests) {
    const size = (row: Row) => Buffer.byteLength(JSON.stringify(row)) + 100;
    const merged = mergeRequests(requests, { key: "properties", max: MAX_ROWS, maxBytes: MAX_BYTES, item: (r) => outputOf(r).properties as Row, size, group: (r) => r.endpoint });
    // RudderStack's batched output names the table as the first of its rows' outputs did; the
    // list stays the one mergeRequests fills, so itemVerdicts still finds each event's row.
    const firstOf = new Map<string, BqOutput>();
    for (const r of requests) if (!firstOf.has(r.endpoint)) firstOf.set(r.endpoint, outputOf(r));
    for (const m of merged) {
      const { datasetId, tableId, projectId } = firstOf.get(m.endpoint)!;
      m.body.JSON = { datasetId, tableId, projectId, properties: m.body.JSON.properties };
    }
    return merged;
  },
  checkResponse(answer, request) {
    return itemVerdicts(request, rowVerdicts(answer.body));
  },
  send: insertAll,
  notInTestApi: "a warehouse stream insert",
};
