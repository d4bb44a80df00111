/**
 * Event call schemas (docs/api.md, Event calls). The same TypeBox objects validate requests, type the
 * code and document the calls in OpenAPI. Unknown fields are kept: SDKs send many.
 */
import { t, type TSchema } from "elysia";

/** Any JSON object. Not t.Record: its check walks every key with a regex (Object.entries per call). */
const Obj = (description: string) => t.Object({}, { description, additionalProperties: true, errorMessage: "expected an object" });
const Str = (description: string, minLength = 0) => t.String({ description, minLength, errorMessage: minLength ? "expected a non-empty string" : "expected a string" });
/** An id: a string, or a number, which stays a number in the event as rudder-server keeps it (only the user's ordering key is its text). */
const Id = (description: string, minLength = 0) =>
  t.Union([t.String({ minLength }), t.Number()], { description, errorMessage: minLength ? "expected a non-empty string or a number" : "expected a string or a number" });

/** ISO 8601 date-time, e.g. 2024-05-01T12:00:00.000Z; offsets and fewer fraction digits are accepted. */
export const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)$/i;
const DateTime = (description: string) =>
  t.String({ description, pattern: ISO_DATE_TIME.source, errorMessage: "expected an ISO 8601 date-time such as 2024-05-01T12:00:00.000Z" });

const common = {
  anonymousId: t.Optional(Id("Identifier of a user without a unique identifier. userId or anonymousId is required. A number is kept as a number.")),
  userId: t.Optional(Id("Unique identifier of the user. A number is kept as a number, as rudder-server keeps it; the user's events are ordered by its decimal text (42 → \"42\").")),
  messageId: t.Optional(Str("Deduplication key; generated when absent.")),
  context: t.Optional(Obj("Information about the message (traits, ip, library, ...).")),
  integrations: t.Optional(Obj("Destinations to enable or disable by their definition's display name, exactly as rudder-server reads it, e.g. {\"All\": false, \"Webhook\": true}; an object value turns a destination on, and an All that is not a boolean sends the event nowhere.")),
  timestamp: t.Optional(DateTime("When the event happened (historical import). Defaults to the server's corrected time.")),
  originalTimestamp: t.Optional(DateTime("Client time when the event was made.")),
  sentAt: t.Optional(DateTime("Client time when the event was sent.")),
};

const open = { additionalProperties: true } as const;

export const CALL_TYPES = ["identify", "track", "page", "screen", "group", "alias", "merge"] as const;
export type CallType = (typeof CALL_TYPES)[number];
export const BATCH_TYPES = new Set(["identify", "track", "page", "screen", "group", "alias"]);

const MergeProperty = t.Object({ type: Str("Identifier kind, e.g. email."), value: Str("Identifier value.") }, open);

/** Strict schemas: call-specific fields required. */
export const CallSchemas: Record<CallType, TSchema> = {
  identify: t.Object({ ...common, traits: t.Optional(Obj("Traits of the user.")) }, open),
  track: t.Object({ ...common, event: Str("Name of the action performed.", 1), properties: t.Optional(Obj("Properties of the event.")) }, open),
  page: t.Object({ ...common, name: Str("Name of the viewed page.", 1), properties: t.Optional(Obj("Properties of the page.")) }, open),
  screen: t.Object({ ...common, name: Str("Name of the viewed screen.", 1), properties: t.Optional(Obj("Properties of the screen.")) }, open),
  group: t.Object({ ...common, groupId: Id("Unique identifier of the group.", 1), traits: t.Optional(Obj("Traits of the group.")) }, open),
  alias: t.Object({ ...common, previousId: Id("Previous identifier of the user.", 1), userId: Id("New identifier of the user.", 1), traits: t.Optional(Obj("Traits.")) }, open),
  merge: t.Object({ ...common, mergeProperties: t.Array(MergeProperty, { minItems: 1, description: "Identifiers to merge into one profile.", errorMessage: "expected an array of {type, value} strings" }) }, open),
};

/**
 * Lenient schemas (source setting lenientValidation): call-specific fields may be
 * missing, but when present they must still have the right type.
 */
export const LenientCallSchemas: Record<CallType, TSchema> = {
  identify: CallSchemas.identify,
  track: t.Object({ ...common, event: t.Optional(Str("Name of the action performed.")), properties: t.Optional(Obj("Properties of the event.")) }, open),
  page: t.Object({ ...common, name: t.Optional(Str("Name of the viewed page.")), properties: t.Optional(Obj("Properties of the page.")) }, open),
  screen: t.Object({ ...common, name: t.Optional(Str("Name of the viewed screen.")), properties: t.Optional(Obj("Properties of the screen.")) }, open),
  group: t.Object({ ...common, groupId: t.Optional(Id("Unique identifier of the group.")), traits: t.Optional(Obj("Traits of the group.")) }, open),
  alias: t.Object({ ...common, previousId: t.Optional(Id("Previous identifier of the user.")), traits: t.Optional(Obj("Traits.")) }, open),
  merge: t.Object({ ...common, mergeProperties: t.Optional(t.Array(MergeProperty, { errorMessage: "expected an array of {type, value} strings" })) }, open),
};

export const BatchCall = t.Object(
  {
    batch: t.Array(t.Object({ type: t.String({ description: "identify, track, page, screen, group or alias" }) }, open), {
      minItems: 1,
      description: "The calls, each with a `type` and that call's fields.",
    }),
    sentAt: t.Optional(DateTime("Client time when the batch was sent; applies to every entry without its own.")),
    context: t.Optional(Obj("Context merged into entries that carry none.")),
  },
  open,
);

export const MAX_CALL_BYTES = 32 * 1024;
export const MAX_BATCH_BYTES = 4 * 1024 * 1024;
