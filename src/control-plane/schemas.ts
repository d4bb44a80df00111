/** Request and response schemas of the control-plane API: they validate, type and document. */
import { PathId } from "../lib/schema";
import { t } from "elysia";

const Name = t.String({ minLength: 1, maxLength: 200, description: "Unique within the workspace." });

export const SourceSettings = t.Object(
  {
    lenientValidation: t.Optional(
      t.Boolean({ description: "Accept event calls missing call-specific fields (track without event, ...). Off by default." }),
    ),
    catalogExamples: t.Optional(
      t.Boolean({
        description:
          "The event catalog keeps up to 3 example values per property path of this source's events (GET /v2/catalog/events). On by default; false keeps none (they may be personal data), and examples already kept stop showing at once.",
      }),
    ),
    catalogPersonalExamples: t.Optional(
      t.Boolean({
        description:
          "Keep examples also for paths that look like an e-mail address, a phone number or an IP address (`email`, `phone`, `mobile`, `ip`, `ip_address`, `request_ip`, …), for the event's user ids (`userId`, `anonymousId`, `previousId`) and for values that are e-mail or IP addresses. Off by default: such examples are never kept.",
      }),
    ),
  },
  { additionalProperties: false },
);

const SourceConfig = t.Record(t.String(), t.Unknown(), {
  description:
    "The source's own config, as RudderStack keeps it (`source.config`), read by webhook mappings: the generic webhook's `putRequestDetailsInContext`, Braze's `customMapping`. Other keys are kept and ignored.",
});

const SourceFields = {
  name: Name,
  writeKey: t.Optional(t.String({ minLength: 8, maxLength: 200, description: "Generated when omitted." })),
  enabled: t.Optional(t.Boolean()),
  settings: t.Optional(SourceSettings),
  config: t.Optional(SourceConfig),
};

export const SourceCreate = t.Object(
  {
    ...SourceFields,
    type: t.Optional(
      t.String({
        minLength: 1,
        maxLength: 100,
        description:
          "A webhook source type, by RudderStack's source-definition name (`Shopify`, `Auth0`, `Customerio`, `webhook`; any case; the list is GET /source-types): requests to /v1/webhook with this source's write key are mapped as that service's webhooks. Omitted: an event-stream source (SDKs, HTTP API), whose write key /v1/webhook refuses, as rudder-server does. Fixed once the source is made.",
      }),
    ),
  },
  { additionalProperties: false },
);
export type SourceCreate = typeof SourceCreate.static;

export const SourceUpdate = t.Partial(t.Object(SourceFields), { additionalProperties: false });
export type SourceUpdate = typeof SourceUpdate.static;

export const Source = t.Object({
  id: t.String(),
  name: t.String(),
  writeKey: t.String(),
  enabled: t.Boolean(),
  settings: SourceSettings,
  unsupported: t.Boolean({
    description:
      "True for a source of a kind RudderStack pulls data from (a cloud, warehouse or singer source: `sourceDefinition.category` set and not `webhook`). Only a RudderStack workspace file makes such a source: Sluice pulls nothing, so no data comes from the service; the source is kept with its write key, which still takes event calls like any other source's.",
  }),
  sourceDefinition: t.Union(
    [
      t.Object({
        name: t.String({ description: "RudderStack's name of the kind, e.g. `Javascript`, `salesforce`." }),
        category: t.Union([t.String(), t.Null()], { description: "`cloud`, `warehouse`, `singer-protocol`, `webhook`; null for event-stream sources (SDKs, HTTP)." }),
        type: t.Union([t.String(), t.Null()], { description: "The platform, e.g. `web`, `android`, `cloud`: a hybrid-mode destination's hybridModeCloudEventsFilter is keyed by it." }),
      }),
      t.Null(),
    ],
    { description: "What the RudderStack workspace file this source was imported from said of its kind; null for sources made through the API or Sluice's own file." },
  ),
  config: SourceConfig,
  createdAt: t.String({ format: "date-time" }),
  destinationIds: t.Array(t.String()),
});

export const DestinationCreate = t.Object(
  {
    name: Name,
    type: t.String({ minLength: 1, description: "A destination-definition name, e.g. WEBHOOK." }),
    config: t.Record(t.String(), t.Unknown()),
    enabled: t.Optional(t.Boolean()),
    sourceIds: t.Optional(t.Array(t.String(), { description: "Sources to connect." })),
  },
  { additionalProperties: false },
);
export type DestinationCreate = typeof DestinationCreate.static;

export const DestinationUpdate = t.Partial(DestinationCreate, { additionalProperties: false });
export type DestinationUpdate = typeof DestinationUpdate.static;

export const Destination = t.Object({
  id: t.String(),
  name: t.String(),
  type: t.String(),
  enabled: t.Boolean(),
  config: t.Record(t.String(), t.Unknown()),
  unsupported: t.Boolean({
    description:
      "True when this version of Sluice has no destination kind `type`. Only a workspace file makes such a destination (a RudderStack workspace names kinds Sluice lacks, such as S3 or BIGQUERY): it is kept with its config and connections, receives nothing and queues nothing, and starts receiving, as kept, under a version that has the kind. The API refuses such a type (400) on create, and on an update that sets `type` or `config`.",
  }),
  sourceIds: t.Array(t.String()),
  transformationId: t.Union([t.String(), t.Null()]),
  heldReason: t.Optional(
    t.Union([t.String(), t.Null()], {
      description:
        "Why the destination is held although enabled, e.g. `transformation code missing: versionId X`: a RudderStack workspace file named its transformation, whose code stayed in RudderStack. Its events are routed and queue, nothing is delivered untransformed; they flow once the code is supplied (`transformations/<versionId>.js` beside the file, `code` in the file, or `sluice import-transformations`). Null when it is not held.",
    }),
  ),
  createdAt: t.String({ format: "date-time" }),
});

export const Connection = t.Object(
  { sourceId: t.String({ minLength: 1 }), destinationId: t.String({ minLength: 1 }) },
  { additionalProperties: false },
);
export type Connection = typeof Connection.static;

export const IdParams = t.Object({ id: PathId });

export const TokenCreate = t.Object({ name: t.String({ minLength: 1, maxLength: 100, description: "What the token is for, shown in the token list" }) }, { additionalProperties: false });
export const Token = t.Object({
  id: t.String(),
  name: t.String(),
  createdAt: t.String({ format: "date-time" }),
  lastUsedAt: t.Union([t.String({ format: "date-time" }), t.Null()], { description: "Last use, to the minute; null when never used" }),
});
export const TokenCreated = t.Composite([Token, t.Object({ token: t.String({ description: "The secret: shown once, store it now" }) })]);

export const WorkspaceCheckEntry = t.Object({
  kind: t.Union([t.Literal("source"), t.Literal("destination"), t.Literal("transformation")]),
  name: t.String(),
  type: t.String({ description: "The source's or destination's kind as the file names it; for a transformation, its version id or name." }),
  status: t.Union([t.Literal("runs"), t.Literal("device"), t.Literal("held"), t.Literal("error")], {
    description:
      "`runs`: Sluice takes or delivers its events. `device`: the SDK sends to it (listed in /sourceConfig); the server delivers nothing. `held`: imported and kept, but nothing flows (see reason). `error`: a config error that stops `sluice serve --config` with this file.",
  }),
  reason: t.String({ description: "What will happen and why, for a person." }),
});
export const WorkspaceCheck = t.Object({
  format: t.Union([t.Literal("sluice"), t.Literal("rudderstack")], { description: "Which shape the file has: Sluice's own or RudderStack's workspaceConfig.json." }),
  entries: t.Array(WorkspaceCheckEntry),
  counts: t.Object({ runs: t.Integer(), device: t.Integer(), held: t.Integer(), error: t.Integer() }),
});
export type WorkspaceCheck = typeof WorkspaceCheck.static;
export type WorkspaceCheckEntry = typeof WorkspaceCheckEntry.static;

export const SamplePayloadSchema = t.Object(
  {
    query: t.Optional(t.Record(t.String(), t.String(), { description: "Query parameters added to the URL (Shopify's `topic`, Adjust's event fields)." })),
    headers: t.Optional(t.Record(t.String(), t.String())),
    body: t.Unknown({ description: "The JSON the service would post." }),
  },
  { additionalProperties: false },
);

export const SampleRequest = t.Object({ payload: t.Optional(SamplePayloadSchema) }, { additionalProperties: false });

export const SourceType = t.Object({
  name: t.String({ description: "RudderStack's source-definition name: the `type` to create a source with." }),
  displayName: t.String(),
  category: t.Literal("webhook"),
  setup: t.String({ description: "Where in the service the webhook URL goes, in one paragraph." }),
  sample: SamplePayloadSchema,
  takesGet: t.Boolean({ description: "GET requests are mapped too (Adjust; Facebook's URL check); other types answer a GET 200 with nothing." }),
});

export const SampleRun = t.Object({
  request: t.Record(t.String(), t.Unknown(), { description: "The request as the mapping got it (method, url, headers, query_parameters, body)." }),
  events: t.Array(t.Record(t.String(), t.Unknown()), { description: "The events it became, before intake adds messageId, receivedAt and the other server fields." }),
  answer: t.Optional(t.Object({ body: t.String(), contentType: t.String(), status: t.Optional(t.Number()) })),
  error: t.Optional(t.Object({ status: t.Number(), message: t.String() }, { description: "What /v1/webhook would answer: the mapping's refusal." })),
});
