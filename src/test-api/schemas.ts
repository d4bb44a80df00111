/**
 * Request and result schemas of the Test API (docs/api.md, Test API): they validate, type and document.
 * Bodies are checked with `parseWith` in the routes, not by Elysia: the spec fixes exact
 * error bodies for `message.type`, which must come after the auth and id checks.
 */
import { PathId } from "../lib/schema";
import { t } from "elysia";

const notAccepted = (what: string) => t.Never({ errorMessage: what });

export const TestStage = t.Object(
  {
    user_transform: t.Optional(t.Boolean({ description: "Run the destination's user transformation." })),
    dest_transform: t.Optional(t.Boolean({ description: "Show the request in the destination's format." })),
    send_to_destination: t.Optional(t.Boolean({ description: "Send that request and show the answer." })),
  },
  {
    // A misspelt stage would silently count as false; refusing it names the mistake.
    additionalProperties: notAccepted("is not a stage (user_transform, dest_transform, send_to_destination)"),
    description: "Which stages run. Omitted: all three. Given: a stage left out counts as false.",
  },
);
export type TestStage = typeof TestStage.static;

// `message.type` is not in the schema: its errors have fixed bodies (as RudderStack's Test API), checked by the service.
const Message = t.Record(t.String(), t.Unknown(), {
  description: "An event of type identify, track, page, screen, group or alias (spec §2.1). Not stored, queued or shown in live events.",
  errorMessage: "expected an object",
});

export const TestDestinationBody = t.Object(
  {
    message: Message,
    stage: t.Optional(TestStage),
    destinationConfig: t.Optional(
      t.Record(t.String(), t.Unknown(), {
        description: "Replaces the stored configuration for this request. Keys must be among the definition's `defaultConfig`.",
        errorMessage: "expected an object",
      }),
    ),
  },
  { additionalProperties: notAccepted("is not accepted (the body holds message, stage and destinationConfig)") },
);
export type TestDestinationBody = typeof TestDestinationBody.static;

export const TestSourceBody = t.Object(
  { message: Message, stage: t.Optional(TestStage) },
  { additionalProperties: notAccepted("is not accepted by testSource (the body holds message and stage; destinationConfig is for testDestination)") },
);
export type TestSourceBody = typeof TestSourceBody.static;

export const ForceQuery = t.Object({
  force: t.Optional(t.Boolean({ description: "true: test disabled destinations (and, for testSource, a disabled source) anyway.", errorMessage: "expected true or false" })),
});

export const DestinationIdParams = t.Object({ destination_id: PathId });
export const SourceIdParams = t.Object({ source_id: PathId });

const ErrorObject = t.Object({ error: t.String() });

const DestinationRequest = t.Object({
  version: t.String(),
  type: t.String({ description: "REST" }),
  method: t.String(),
  endpoint: t.String(),
  headers: t.Record(t.String(), t.String()),
  params: t.Record(t.String(), t.Unknown(), { description: "Query parameters; values keep their type (0 stays 0), as in RudderStack's output." }),
  body: t.Object({
    JSON: t.Record(t.String(), t.Unknown()),
    JSON_ARRAY: t.Record(t.String(), t.Unknown()),
    XML: t.Record(t.String(), t.Unknown()),
    FORM: t.Record(t.String(), t.Unknown()),
  }),
  files: t.Record(t.String(), t.Unknown()),
});
export type DestinationRequestView = typeof DestinationRequest.static;

/** One processed message; a field is present only when its stage ran. */
export const TestEntry = t.Object({
  user_transformed_payload: t.Optional(t.Record(t.String(), t.Unknown(), { description: "The transformed event, or {error}." })),
  dest_transformed_payload: t.Optional(t.Union([t.Array(DestinationRequest), ErrorObject])),
  destination_response: t.Optional(t.Union([t.Array(t.Unknown(), { description: "Per request: the parsed JSON answer, or its text." }), ErrorObject])),
  destination_response_status: t.Optional(t.Array(t.Integer())),
});
export type TestEntry = typeof TestEntry.static;

export const DestinationTestResult = t.Object({
  destinationId: t.String(),
  destination: t.String({ description: "The definition name, e.g. WEBHOOK." }),
  destinationName: t.String(),
  data: t.Array(TestEntry, { description: "One entry per message after the user transformation: none when it dropped the message, several when it fanned out." }),
  filtered: t.Optional(
    t.String({
      description:
        "Present when the pipeline would not deliver the message to this destination, with the reason: the user's consent denies it, its `integrations` turn the destination off, the destination does not take its type server side (or leaves it to the device in hybrid mode), or an event allow/deny list drops it. No stage ran and `data` is empty.",
    }),
  ),
});
export type DestinationTestResult = typeof DestinationTestResult.static;

/** A destination that was not tested: disabled (without force), delivered by the server itself, or in device mode. */
export const DestinationNotTested = t.Object({ destinationId: t.String(), destinationName: t.String(), error: t.String() });
export type DestinationNotTested = typeof DestinationNotTested.static;

export const TestOutcome = t.Union([DestinationTestResult, DestinationNotTested]);
export type TestOutcome = typeof TestOutcome.static;
