/**
 * WEBHOOK: the event itself, sent to a URL of the user's choosing.
 * Config keys follow RudderStack's WEBHOOK definition so workspace files carry over.
 */
import { t } from "elysia";
import { endpointFor } from "../base-url";
import {
  type DestinationDefinition,
  type DestinationRequest,
  type SluiceEvent,
  TransformError,
  requireConfig,
  restRequest,
} from "../types";

const Header = t.Object({ from: t.String(), to: t.String() });

export const WebhookConfig = t.Object({
  webhookUrl: t.String({ minLength: 1 }),
  webhookMethod: t.Optional(t.Union([t.Literal("POST"), t.Literal("PUT"), t.Literal("PATCH"), t.Literal("GET"), t.Literal("DELETE")])),
  headers: t.Optional(t.Union([t.Array(Header), t.Record(t.String(), t.String())])),
});

/** Flattens an object into query parameters: `a.b` for nesting, `a[0]` for arrays. */
export function flattenParams(value: unknown, prefix = "", out: Record<string, string> = {}): Record<string, string> {
  if (Array.isArray(value)) {
    value.forEach((v, i) => flattenParams(v, `${prefix}[${i}]`, out));
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) flattenParams(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (prefix && value !== undefined) {
    out[prefix] = value === null ? "" : String(value);
  }
  return out;
}

function configHeaders(headers: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(headers)) {
    for (const h of headers) if (h && typeof h.from === "string" && h.from) out[h.from] = String(h.to ?? "");
  } else if (headers && typeof headers === "object") {
    for (const [k, v] of Object.entries(headers)) out[k] = String(v);
  }
  return out;
}

export const webhook: DestinationDefinition = {
  name: "WEBHOOK",
  displayName: "Webhook",
  config: {
    defaultConfig: ["webhookUrl", "webhookMethod", "headers"],
    supportedMessageTypes: ["identify", "track", "page", "screen", "group", "alias", "merge"],
    requiredKeys: ["webhookUrl"],
  },
  configSchema: WebhookConfig,
  transform(event: SluiceEvent, ctx): DestinationRequest[] {
    const url = String(requireConfig(ctx, "webhookUrl"));
    const method = String(ctx.config.webhookMethod || "POST").toUpperCase() as DestinationRequest["method"];
    if (!["POST", "PUT", "PATCH", "GET", "DELETE"].includes(method)) {
      throw new TransformError(`destination config 'webhookMethod' must be one of POST, PUT, PATCH, GET, DELETE`);
    }
    const endpoint = endpointFor(ctx, url);
    const headers = configHeaders(ctx.config.headers);
    if (method === "GET" || method === "DELETE") {
      const source = event.type === "identify" ? (event.traits ?? event.context?.traits) : event.properties;
      return [restRequest({ method, endpoint, headers, params: flattenParams(source ?? {}) })];
    }
    return [restRequest({ method, endpoint, headers: { "content-type": "application/json", ...headers }, json: event })];
  },
};
