/**
 * The BRAZE config schema, apart from index.ts so that the files index.ts imports can take the
 * typed config without an import cycle.
 */
import { type Static, t } from "elysia";
import { eventFilteringSchema } from "../shared";

export const BrazeConfig = t.Object(
  {
    appKey: t.Optional(t.String()),
    dataCenter: t.String({ minLength: 1 }),
    restApiKey: t.String({ minLength: 1 }),
    trackAnonymousUser: t.Optional(t.Boolean()),
    enableSubscriptionGroupInGroupCall: t.Optional(t.Boolean()),
    enableNestedArrayOperations: t.Optional(t.Boolean()),
    supportDedup: t.Optional(t.Any()),
    sendPurchaseEventWithExtraProperties: t.Optional(t.Boolean()),
    useEcommerceRecommendedEvents: t.Optional(t.Boolean()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);
export type BrazeConfig = Static<typeof BrazeConfig>;
