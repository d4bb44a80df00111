/**
 * HTTP: RudderStack's generic HTTP destination. The user describes the request (URL with
 * templated path segments, method, auth, headers, query, body mapping and format); every
 * value can be a constant or a JSON path into the event (`$.properties.id`).
 */
import { type Static, t } from "elysia";
import { isPrototypeKey, prototypeSegmentMessage, setOwn } from "../../lib/safe-keys";
import { endpointFor } from "../base-url";
import {
  basicAuth,
  eventFilteringSchema,
  isEventAllowed,
  refusedConfigPath,
  requestKey,
  wholeKey,
} from "../shared";
import {
  type ConfigProblem,
  type DestinationContext,
  type DestinationDefinition,
  type DestinationRequest,
  type SluiceEvent,
  TransformError,
  configKeys,
  configOf,
  requiredKeysOf,
  restRequest,
} from "../types";
import { parsePath, prototypeSegmentOf, readPath } from "./json-path";
import { applyMappings, withoutNulls } from "./mappings";

const MappingList = t.Array(t.Object({ from: t.Optional(t.String()), to: t.Optional(t.String()) }, { additionalProperties: true }));

export const HttpConfig = t.Object(
  {
    apiUrl: t.String({ minLength: 1 }),
    auth: t.Optional(t.Union([t.Literal("noAuth"), t.Literal("basicAuth"), t.Literal("bearerTokenAuth"), t.Literal("apiKeyAuth")])),
    username: t.Optional(t.String()),
    password: t.Optional(t.String()),
    bearerToken: t.Optional(t.String()),
    apiKeyName: t.Optional(t.String()),
    apiKeyValue: t.Optional(t.String()),
    method: t.Optional(t.Union([t.Literal("POST"), t.Literal("PUT"), t.Literal("PATCH"), t.Literal("GET"), t.Literal("DELETE")])),
    format: t.Optional(t.Union([t.Literal("JSON"), t.Literal("XML"), t.Literal("FORM")])),
    isDefaultMapping: t.Optional(t.Boolean()),
    propertiesMapping: t.Optional(MappingList),
    queryParams: t.Optional(MappingList),
    headers: t.Optional(MappingList),
    pathParams: t.Optional(t.Array(t.Object({ path: t.Optional(t.String()) }, { additionalProperties: true }))),
    xmlRootKey: t.Optional(t.String()),
    isBatchingEnabled: t.Optional(t.Boolean()),
    maxBatchSize: t.Optional(t.Union([t.Number({ minimum: 1 }), t.String()])),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);
export type HttpConfig = Static<typeof HttpConfig>;

/** Used when batching is on but no size is configured, so one call never grows unbounded. */
const DEFAULT_MAX_BATCH_SIZE = 100;
const METHODS = ["POST", "PUT", "PATCH", "GET", "DELETE"] as const;

/** The value a JSON path names in the event (the first one when it has a wildcard). */
function jsonPath(event: unknown, path: string): unknown {
  const v = readPath(event, parsePath(path));
  return path.includes("*") && Array.isArray(v) ? v[0] : v;
}

const PLACEHOLDER = /\{\{\s*(\$[^}]*?)\s*\}\}/g;
const isJsonPath = (v: unknown): v is string => typeof v === "string" && v.trim().startsWith("$");

function refusedJsonPath(key: string, path: string): ConfigProblem | undefined {
  const bad = prototypeSegmentOf(path);
  return bad === undefined ? undefined : { key, message: prototypeSegmentMessage(bad) };
}

/**
 * Every path and key the config names, checked before it is saved or tested: mapping sources
 * and targets, path parameters, apiUrl placeholders and the API key's header name. A `to`
 * that is not a path is a key of the built object, so it is checked as one.
 */
function checkHttpConfig(c: Record<string, any>): ConfigProblem | undefined {
  for (const list of ["propertiesMapping", "queryParams", "headers"]) {
    const rows: unknown = c[list];
    if (!Array.isArray(rows)) continue;
    for (const [i, row] of rows.entries()) {
      const from = row?.from;
      const to = row?.to;
      const problem =
        (isJsonPath(from) ? refusedJsonPath(`${list}[${i}].from`, from) : undefined) ??
        (isJsonPath(to) ? refusedJsonPath(`${list}[${i}].to`, to) : refusedConfigPath(`${list}[${i}].to`, to, wholeKey));
      if (problem) return problem;
    }
  }
  if (Array.isArray(c.pathParams)) {
    for (const [i, row] of c.pathParams.entries()) {
      const problem = isJsonPath(row?.path) ? refusedJsonPath(`pathParams[${i}].path`, row.path) : undefined;
      if (problem) return problem;
    }
  }
  if (typeof c.apiUrl === "string") {
    for (const [, path] of c.apiUrl.matchAll(PLACEHOLDER)) {
      const problem = refusedJsonPath("apiUrl", path!);
      if (problem) return problem;
    }
  }
  return isPrototypeKey(c.apiKeyName) ? { key: "apiKeyName", message: prototypeSegmentMessage(c.apiKeyName) } : undefined;
}

/** A config value the chosen auth needs, refused in RudderStack's words when it is empty. */
function needed(ctx: DestinationContext, key: keyof HttpConfig, message: string): string {
  const v = configOf(ctx, HttpConfig)[key];
  if (v === undefined || v === null || v === "") throw new TransformError(message);
  return String(v);
}

function authHeaders(ctx: DestinationContext): Record<string, string> {
  const c = configOf(ctx, HttpConfig);
  switch (c.auth) {
    case "basicAuth":
      needed(ctx, "username", "Username is required for Basic Authentication. Aborting");
      return { Authorization: basicAuth(String(c.username), String(c.password ?? "")) };
    case "bearerTokenAuth":
      return { Authorization: `Bearer ${needed(ctx, "bearerToken", "Token is required for Bearer Token Authentication. Aborting")}` };
    case "apiKeyAuth": {
      const name = needed(ctx, "apiKeyName", "API Key Name is required for API Key Authentication. Aborting");
      return { [name]: needed(ctx, "apiKeyValue", "API Key Value is required for API Key Authentication. Aborting") };
    }
    default:
      return {};
  }
}

const CONTENT_TYPES = { JSON: "application/json", XML: "application/xml", FORM: "application/x-www-form-urlencoded" };

/**
 * apiUrl with `{{$.path}}` placeholders filled (URI-encoded; older RudderStack versions filled
 * them) and RudderStack's pathParams appended, each URI-encoded. As in RudderStack, a list of
 * pathParams (even an empty one) also collapses repeated slashes in the path.
 */
function buildUrl(event: SluiceEvent, apiUrl: string, pathParams: unknown): string {
  const url = apiUrl.replace(PLACEHOLDER, (_, path: string) => {
    const v = jsonPath(event, path);
    if (v === undefined || v === null || typeof v === "object") {
      throw new TransformError(`HTTP apiUrl placeholder '${path}' has no value in the event`);
    }
    return encodeURIComponent(String(v));
  });
  if (!Array.isArray(pathParams)) return url;
  const segments = pathParams.map(({ path }: { path?: string }) => {
    const p = String(path ?? "");
    if (p.includes("/")) throw new TransformError('HTTP path parameter cannot contain "/"');
    const v = p.includes("$") ? jsonPath(event, p) : p;
    if (v === undefined || v === null) throw new TransformError(`HTTP path parameter '${p}' has no value in the event`);
    return encodeURIComponent(String(v));
  });
  const suffix = segments.length > 0 ? `/${segments.join("/")}` : "";
  return `${url}${suffix}`.replace(/([^:]\/)\/+/g, "$1");
}

function xmlName(key: string): string {
  return key.replace(/[^\w.-]/g, "_").replace(/^[^A-Za-z_]/, "_");
}

function xmlEscape(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/'/g, "&apos;").replace(/"/g, "&quot;");
}

/** Arrays repeat their element, as RudderStack's XML builder does; empty nodes self-close. */
function xmlElement(tag: string, value: unknown): string {
  if (Array.isArray(value)) return value.map((v) => xmlElement(tag, v)).join("");
  if (value === null || value === undefined) return "";
  if (typeof value === "object") {
    const inner = Object.entries(value).map(([k, v]) => xmlElement(xmlName(k), v)).join("");
    return inner === "" ? `<${tag}/>` : `<${tag}>${inner}</${tag}>`;
  }
  const text = String(value);
  return text === "" ? `<${tag}/>` : `<${tag}>${xmlEscape(text)}</${tag}>`;
}

export function toXml(payload: Record<string, unknown>, rootKey = "root"): string {
  return `<?xml version="1.0" encoding="UTF-8"?>${xmlElement(xmlName(rootKey), payload)}`;
}

export const http: DestinationDefinition = {
  name: "HTTP",
  displayName: "HTTP",
  config: {
    defaultConfig: configKeys(HttpConfig, ["oneTrustCookieCategories", "connectionMode", "consentManagement"]),
    // RudderStack's HTTP definition restricts no message type.
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias", "merge"],
    requiredKeys: requiredKeysOf(HttpConfig),
    urlKeys: ["apiUrl"],
  },
  configSchema: HttpConfig,
  checkConfig: checkHttpConfig,
  // RudderStack's dashboard has "Send the event payload as it is" on unless mappings are chosen.
  // Sluice fills it in for the methods that carry a body, so a GET or DELETE saved without a
  // mapping still sends none.
  withDashboardDefaults(config) {
    const method = String(config.method ?? "POST").toUpperCase();
    const bodyless = method === "GET" || method === "DELETE";
    return config.isDefaultMapping === undefined && !Array.isArray(config.propertiesMapping) && !bodyless ? { ...config, isDefaultMapping: true } : config;
  },
  transform(event, ctx) {
    const apiUrl = needed(ctx, "apiUrl", "API URL is required. Aborting");
    const c = configOf(ctx, HttpConfig);
    if (!isEventAllowed(event, c)) return [];
    const method = String(c.method || "POST").toUpperCase() as DestinationRequest["method"];
    if (!METHODS.includes(method as any)) throw new TransformError(`destination config 'method' must be one of ${METHODS.join(", ")}`);
    const format = (c.format || "JSON") as keyof typeof CONTENT_TYPES;
    if (!Object.hasOwn(CONTENT_TYPES, format)) throw new TransformError("destination config 'format' must be one of JSON, XML, FORM");

    // RudderStack's server reads headers as text only, so RudderStack refuses a mapped header
    // that is not text; a missing one is left out.
    const extra: Record<string, string> = {};
    for (const [k, v] of Object.entries(applyMappings(event, c.headers))) {
      if (v === undefined) continue;
      if (typeof v !== "string") throw new TransformError(`Header "${k}" has a non-string value of type "${typeof v}"`);
      setOwn(extra, k, v);
    }
    const headers = { ...authHeaders(ctx), ...extra, "Content-Type": CONTENT_TYPES[format] };

    // Query values keep their types, as in RudderStack's output; the URL gets their text.
    const params: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(applyMappings(event, c.queryParams))) if (v !== undefined) setOwn(params, k, v);

    const payload = withoutNulls(bodyOf(event, c));
    const empty = Object.keys(payload).length === 0;

    const endpoint = endpointFor(ctx, buildUrl(event, apiUrl, c.pathParams));
    if (format === "XML") {
      return [restRequest({ method, endpoint, headers, params, xml: empty ? {} : { payload: toXml(payload, c.xmlRootKey || "root") } })];
    }
    if (format === "FORM") {
      // RudderStack's FORM body: first-level values, text as is and anything else (numbers,
      // objects, even an empty one, lists) as JSON.
      const form: Record<string, string> = {};
      for (const [k, v] of Object.entries(payload)) setOwn(form, k, typeof v === "string" ? v : JSON.stringify(v));
      return [restRequest({ method, endpoint, headers, params, form })];
    }
    return [restRequest({ method, endpoint, headers, params, json: payload })];
  },
  batch(requests, ctx) {
    const config = configOf(ctx, HttpConfig);
    const format = config.format || "JSON";
    if (!config.isBatchingEnabled || format !== "JSON") return requests;
    const size = Number(config.maxBatchSize) > 0 ? Number(config.maxBatchSize) : DEFAULT_MAX_BATCH_SIZE;
    return groupInBatches(requests, size).map((chunk) => {
      const first = chunk[0]!;
      const bodies = chunk.map((r) => r.body.JSON).filter((b) => Object.keys(b).length > 0);
      const merged = restRequest({ method: first.method, endpoint: first.endpoint, headers: first.headers, params: first.params, json: bodies });
      const users = new Set(chunk.map((r) => r.userKey));
      return users.size === 1 && first.userKey !== undefined ? { ...merged, userKey: first.userKey } : merged;
    });
  },
};

/**
 * The body before nulls are removed, as RudderStack's transformer builds it: `isDefaultMapping`
 * sends the whole event, otherwise `propertiesMapping` builds one (none: an empty body), for
 * every method alike. RudderStack's dashboard saves `isDefaultMapping: true` unless mappings are
 * chosen; Sluice's API does the same for POST, PUT and PATCH (withDashboardDefaults), so a config
 * saved through it without either sends the whole event, and a GET or DELETE none.
 */
function bodyOf(event: SluiceEvent, c: HttpConfig): Record<string, unknown> {
  if (c.isDefaultMapping === true) return structuredClone(event);
  return applyMappings(event, c.propertiesMapping);
}

/**
 * RudderStack's batches: requests with the same URL, headers and query go together, whatever
 * lies between them, groups in the order they first appear, at most `size` to a batch. A
 * request joins its group's latest batch only when no later group holds a request of the same
 * user, so each user's requests still go in order; otherwise it starts a new group at the end.
 */
function groupInBatches(requests: DestinationRequest[], size: number): DestinationRequest[][] {
  const groups: Array<{ key: string; batches: DestinationRequest[][]; users: Set<string | undefined> }> = [];
  for (const r of requests) {
    const key = requestKey(r);
    let at = groups.findLastIndex((g) => g.key === key);
    if (at !== -1 && groups.slice(at + 1).some((g) => g.users.has(r.userKey))) at = -1;
    if (at === -1) {
      groups.push({ key, batches: [[r]], users: new Set([r.userKey]) });
      continue;
    }
    const g = groups[at]!;
    const last = g.batches[g.batches.length - 1]!;
    if (last.length < size) last.push(r);
    else g.batches.push([r]);
    g.users.add(r.userKey);
  }
  return groups.flatMap((g) => g.batches);
}
