/**
 * HS's config: its schema, which API and credentials it names, and the auth parts every request
 * (and lookup) carries. Shared by the event path (index.ts) and the record writes (records.ts).
 */
import { type Static, t } from "elysia";
import { eventFilteringSchema } from "../shared";
import { TransformError } from "../types";

export const HubspotConfig = t.Object(
  {
    authorizationType: t.Optional(t.String()),
    hubID: t.Optional(t.Union([t.String(), t.Number()])),
    apiKey: t.Optional(t.String()),
    accessToken: t.Optional(t.String()),
    apiVersion: t.Optional(t.String()),
    lookupField: t.Optional(t.String()),
    hubspotEvents: t.Optional(t.Array(t.Any())),
    ...eventFilteringSchema,
    doAssociation: t.Optional(t.Boolean()),
  },
  { additionalProperties: true },
);
export type HubspotConfig = Static<typeof HubspotConfig>;

export const isNewApi = (config: HubspotConfig) => config.apiVersion === "newApi";
export const isPrivateApp = (config: HubspotConfig) => config.authorizationType === "newPrivateAppApi";

/** The credentials the chosen auth needs, refused in RudderStack's words when missing. */
export function validateConfig(config: HubspotConfig): void {
  if (isPrivateApp(config)) {
    if (!config.accessToken) throw new TransformError("Access Token not found. Aborting");
    return;
  }
  if (!config.hubID) throw new TransformError("Hub ID not found. Aborting");
  if (!config.apiKey) throw new TransformError("API Key not found. Aborting");
}

/** A private app's Bearer token in the headers, else the API key as the `hapikey` parameter. */
export function authParts(config: HubspotConfig): { headers: Record<string, string>; params: Record<string, unknown> } {
  if (isPrivateApp(config)) return { headers: { "Content-Type": "application/json", Authorization: `Bearer ${config.accessToken}` }, params: {} };
  return { headers: { "Content-Type": "application/json" }, params: { hapikey: config.apiKey } };
}
