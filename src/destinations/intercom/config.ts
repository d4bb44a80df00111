/**
 * The INTERCOM config schema, apart from index.ts so that payloads.ts can take the typed config
 * without an import cycle.
 */
import { type Static, t } from "elysia";
import { eventFilteringSchema } from "../shared";

export const IntercomConfig = t.Object(
  {
    apiKey: t.String({ minLength: 1 }),
    appId: t.Optional(t.String()),
    apiVersion: t.Optional(t.String()),
    apiServer: t.Optional(t.String()),
    sendAnonymousId: t.Optional(t.Boolean()),
    updateLastRequestAt: t.Optional(t.Boolean()),
    collectContext: t.Optional(t.Boolean()),
    mobileApiKeyIOS: t.Optional(t.Any()),
    mobileApiKeyAndroid: t.Optional(t.Any()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);
export type IntercomConfig = Static<typeof IntercomConfig>;
