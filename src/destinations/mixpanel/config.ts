/**
 * The MP config schema, apart from index.ts so that profile.ts can take the typed config without
 * an import cycle.
 */
import { type Static, t } from "elysia";
import { eventFilteringSchema } from "../shared";

const ConfigList = t.Optional(t.Array(t.Any()));

export const MixpanelConfig = t.Object(
  {
    token: t.String({ minLength: 1 }),
    apiSecret: t.Optional(t.String()),
    serviceAccountUserName: t.Optional(t.String()),
    serviceAccountSecret: t.Optional(t.String()),
    projectId: t.Optional(t.String()),
    dataResidency: t.Optional(t.String()),
    identityMergeApi: t.Optional(t.String()),
    groupKeySettings: ConfigList,
    useNewMapping: t.Optional(t.Boolean()),
    strictMode: t.Optional(t.Boolean()),
    userDeletionApi: t.Optional(t.String()),
    gdprApiToken: t.Optional(t.String()),
    useUserDefinedPageEventName: t.Optional(t.Boolean()),
    userDefinedPageEventTemplate: t.Optional(t.String()),
    useUserDefinedScreenEventName: t.Optional(t.Boolean()),
    userDefinedScreenEventTemplate: t.Optional(t.String()),
    dropTraitsInTrackEvent: t.Optional(t.Boolean()),
    propIncrements: ConfigList,
    setOnceProperties: ConfigList,
    unionProperties: ConfigList,
    appendProperties: ConfigList,
    ...eventFilteringSchema,
  },
  { additionalProperties: true },
);
export type MixpanelConfig = Static<typeof MixpanelConfig>;
