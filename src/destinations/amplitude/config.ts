/**
 * The AM config schema, apart from index.ts so that the files index.ts imports can take the
 * typed config without an import cycle.
 */
import { type Static, t } from "elysia";
import { eventFilteringSchema } from "../shared";

const TraitList = t.Optional(t.Array(t.Object({ traits: t.Optional(t.String()) }, { additionalProperties: true })));

export const AmplitudeConfig = t.Object(
  {
    apiKey: t.String({ minLength: 1 }),
    apiSecret: t.Optional(t.String()),
    residencyServer: t.Optional(t.String()),
    groupTypeTrait: t.Optional(t.String()),
    groupValueTrait: t.Optional(t.String()),
    traitsToIncrement: TraitList,
    traitsToSetOnce: TraitList,
    traitsToAppend: TraitList,
    traitsToPrepend: TraitList,
    enableEnhancedUserOperations: t.Optional(t.Boolean()),
    trackProductsOnce: t.Optional(t.Boolean()),
    trackRevenuePerProduct: t.Optional(t.Boolean()),
    mapDeviceBrand: t.Optional(t.Boolean()),
    userProvidedPageEventString: t.Optional(t.String()),
    useUserDefinedPageEventName: t.Optional(t.Boolean()),
    userProvidedScreenEventString: t.Optional(t.String()),
    useUserDefinedScreenEventName: t.Optional(t.Boolean()),
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);
export type AmplitudeConfig = Static<typeof AmplitudeConfig>;
