/**
 * The KLAVIYO config schema, apart from index.ts so that common.ts, v1.ts and v2.ts can read the
 * typed config without an import cycle.
 */
import { type Static, t } from "elysia";
import { eventFilteringSchema } from "../shared";

export const KlaviyoConfig = t.Object(
  {
    apiVersion: t.Optional(t.String()),
    publicApiKey: t.Optional(t.String()),
    privateApiKey: t.Optional(t.String()),
    consent: t.Optional(t.Union([t.Array(t.String()), t.String()])),
    flattenProperties: t.Optional(t.Boolean()),
    listId: t.Optional(t.String()),
    enforceEmailAsPrimary: t.Optional(t.Boolean()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);
export type KlaviyoConfig = Static<typeof KlaviyoConfig>;
