/**
 * WEBHOOK: the event itself, sent to a URL of the user's choosing.
 * Config keys follow RudderStack's WEBHOOK definition so workspace files carry over.
 */
import { type Static, t } from "elysia";
import { isPrototypeKey, prototypeSegmentMessage, setOwn } from "../../lib/safe-keys";
import { endpointFor } from "../base-url";
import { flattenJson, integrationsObject, isPlainObject } from "../shared";
import {
  type ConfigProblem,
  type DestinationDefinition,
  type DestinationRequest,
  type SluiceEvent,
  TransformError,
  configKeys,
  configOf,
  requireConfig,
  requiredKeysOf,
  restRequest,
} from "../types";

const Header = t.Object({ from: t.Optional(t.String()), to: t.Optional(t.Any()) }, { additionalProperties: true });

export const WebhookConfig = t.Object(
  {
    webhookUrl: t.String({ minLength: 1 }),
    webhookMethod: t.Optional(t.Union([t.Literal("POST"), t.Literal("PUT"), t.Literal("PATCH"), t.Literal("GET"), t.Literal("DELETE")])),
    headers: t.Optional(t.Union([t.Array(Header), t.Record(t.String(), t.String())])),
  },
  { additionalProperties: true },
);
export type WebhookConfig = Static<typeof WebhookConfig>;

/**
 * A header value as text. RudderStack's server reads headers as text only: the WEBHOOK
 * transform JSON-encodes anything else a user transformation sets (`10` → "10", `true` →
 * "true", `null` → "null", objects and lists as JSON), and what JSON cannot hold (undefined,
 * a function) leaves the header out. Config values get the same treatment.
 */
function headerText(value: unknown): string | undefined {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/**
 * Config headers as RudderStack's getHashFromArray reads them: names lower-cased, rows with a
 * blank name skipped, a row without a value left out. A null value is an empty header, as
 * RudderStack's server reads it. (An object of name → value is accepted too.)
 */
function configHeaders(headers: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  const add = (name: string, value: unknown) => {
    const text = value === null ? "" : headerText(value);
    if (text !== undefined) setOwn(out, name, text);
  };
  if (Array.isArray(headers)) {
    for (const h of headers) if (h && typeof h.from === "string" && h.from.trim()) add(h.from.toLowerCase(), h.to);
  } else if (headers && typeof headers === "object") {
    for (const [k, v] of Object.entries(headers)) add(k, v);
  }
  return out;
}

/** Header names are keys of the headers object: one that names a prototype is refused on save. */
function checkWebhookConfig(config: WebhookConfig): ConfigProblem | undefined {
  const { headers } = config;
  if (Array.isArray(headers)) {
    for (const [i, h] of headers.entries()) {
      const name = typeof h?.from === "string" ? h.from.toLowerCase() : undefined;
      if (isPrototypeKey(name)) return { key: `headers[${i}].from`, message: prototypeSegmentMessage(name!) };
    }
  } else if (isPlainObject(headers)) {
    const name = Object.keys(headers).find(isPrototypeKey);
    if (name !== undefined) return { key: `headers.${name}`, message: prototypeSegmentMessage(name) };
  }
  return undefined;
}

/** `integrations.WEBHOOK` (or `webhook` / `Webhook`) of the event: where fullPath/appendPath may also come from. */
function integrationsOptions(event: SluiceEvent): Record<string, any> {
  return integrationsObject(event, "WEBHOOK") ?? {};
}

/**
 * A user transformation may steer one event's request (RudderStack's WEBHOOK does the same):
 * `header` adds headers, `fullPath` replaces the URL and `appendPath` is added to it. The
 * three keys are instructions, not data, so they never reach the body.
 */
const STEERING_KEYS = new Set(["header", "fullPath", "appendPath"]);

/** The event's value, else the one under `integrations.WEBHOOK`: whatever is set (not null), as text. */
function steering(event: SluiceEvent, key: "fullPath" | "appendPath"): string | undefined {
  const v = event[key] ?? integrationsOptions(event)[key];
  return v === undefined || v === null ? undefined : String(v);
}

function steeredEndpoint(event: SluiceEvent, url: string): string {
  return (steering(event, "fullPath") ?? url) + (steering(event, "appendPath") ?? "");
}

/** The transformation's `header` object (a list counts by index, as in RudderStack), each value as text. */
function eventHeaders(event: SluiceEvent): Record<string, string> {
  const out: Record<string, string> = {};
  if (event.header === null || typeof event.header !== "object") return out;
  for (const [k, v] of Object.entries(event.header)) {
    const text = headerText(v);
    if (text !== undefined) setOwn(out, k, text);
  }
  return out;
}

/**
 * The body: the event without the steering keys and top-level nulls. When the event has no
 * `context.ip`, a `request_ip` is copied there, as RudderStack does: into the context object,
 * or a new one when there is none (a context that is some other value stays as it is).
 */
function webhookBody(event: SluiceEvent): Record<string, unknown> {
  const body: Record<string, any> = {};
  for (const [k, v] of Object.entries(event)) if (!STEERING_KEYS.has(k) && v !== undefined && v !== null) setOwn(body, k, v);
  const ip = event.context?.ip ?? event.request_ip;
  if (ip) {
    if (!event.context) body.context = { ip };
    else if (isPlainObject(event.context)) body.context = { ...event.context, ip };
  }
  return body;
}

/** GET and DELETE carry the traits (identify) or properties, flattened, as typed query parameters. */
function queryParams(event: SluiceEvent): Record<string, unknown> {
  const source = event.type === "identify" ? (event.traits ?? event.context?.traits) : event.properties;
  return isPlainObject(source) ? flattenJson(source) : {};
}

export const webhook: DestinationDefinition = {
  name: "WEBHOOK",
  displayName: "Webhook",
  config: {
    defaultConfig: configKeys(WebhookConfig, ["oneTrustCookieCategories"]),
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias", "merge"],
    requiredKeys: requiredKeysOf(WebhookConfig),
    urlKeys: ["webhookUrl"],
  },
  configSchema: WebhookConfig,
  checkConfig: checkWebhookConfig,
  transform(event: SluiceEvent, ctx): DestinationRequest[] {
    const config = configOf(ctx, WebhookConfig);
    const url = String(requireConfig(ctx, "webhookUrl"));
    const method = String(config.webhookMethod || "POST").toUpperCase() as DestinationRequest["method"];
    if (!["POST", "PUT", "PATCH", "GET", "DELETE"].includes(method)) {
      throw new TransformError(`destination config 'webhookMethod' must be one of POST, PUT, PATCH, GET, DELETE`);
    }
    const endpoint = endpointFor(ctx, steeredEndpoint(event, url));
    const withBody = method !== "GET" && method !== "DELETE";
    const headers = { ...(withBody ? { "content-type": "application/json" } : {}), ...configHeaders(config.headers), ...eventHeaders(event) };
    if (!withBody) return [restRequest({ method, endpoint, headers, params: queryParams(event) })];
    return [restRequest({ method, endpoint, headers, json: webhookBody(event) })];
  },
};
