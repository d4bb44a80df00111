/**
 * The PINTEREST_TAG config schema, apart from index.ts so that payload.ts can read the typed config
 * without an import cycle.
 */
import { type Static, t } from "elysia";
import { eventFilteringSchema } from "../shared";

/** RudderStack's exported configs hold "true"/"false" at times; both spellings are taken. */
const Flag = t.Optional(t.Union([t.Boolean(), t.Literal("true"), t.Literal("false")]));

export const PinterestTagConfig = t.Object(
  {
    tagId: t.Optional(t.String()),
    appId: t.Optional(t.String()),
    advertiserId: t.Optional(t.String()),
    /** `legacyApi` (Conversions API v3, the default) or `newApi` (API v5, per ad account). */
    apiVersion: t.Optional(t.String()),
    adAccountId: t.Optional(t.String()),
    sendAsTestEvent: Flag,
    conversionToken: t.Optional(t.String()),
    sendingUnHashedData: Flag,
    deduplicationKey: t.Optional(t.String()),
    sendExternalId: Flag,
    customProperties: t.Optional(t.Array(t.Any())),
    sendAsCustomEvent: Flag,
    eventsMapping: t.Optional(t.Array(t.Object({ from: t.Optional(t.String()), to: t.Optional(t.String()) }, { additionalProperties: true }))),
    enhancedMatch: Flag,
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);
export type PinterestTagConfig = Static<typeof PinterestTagConfig>;

/** A config switch: true, or RudderStack's "true". */
export const isOn = (v: unknown): boolean => v === true || v === "true";

/** `legacyApi` answers with Pinterest's Conversions API v3; any other value (RudderStack's `newApi`) with API v5. */
export const usesV5 = (config: PinterestTagConfig): boolean => (config.apiVersion ?? "legacyApi") !== "legacyApi";
