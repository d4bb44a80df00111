/** Request and response schemas of the catalog API: they validate, type and document. */
import { t } from "elysia";
import { PathId } from "../lib/schema";

const SourceId = t.String({ minLength: 1, pattern: "^[^\\u0000]*$", description: "The source whose events are listed (a source of the caller's workspace)." });

export const CatalogListQuery = t.Object(
  {
    sourceId: SourceId,
    sort: t.Optional(
      t.Union([t.Literal("count"), t.Literal("lastSeen"), t.Literal("firstSeen"), t.Literal("event")], {
        description: "`count` (default: most events first), `lastSeen` or `firstSeen` (newest first), `event` (by type, then name).",
      }),
    ),
    search: t.Optional(t.String({ maxLength: 200, description: "Only models whose event name contains this text (any case)." })),
    type: t.Optional(t.String({ maxLength: 50, description: "Only models of this message type (`track`, `identify`, `page`, …)." })),
  },
  { additionalProperties: false },
);
export type CatalogListQuery = typeof CatalogListQuery.static;

export const CatalogModelParams = t.Object({ type: PathId });
export const CatalogModelQuery = t.Object(
  {
    sourceId: SourceId,
    event: t.Optional(t.String({ maxLength: 10_000, description: "The track event's name; omitted (or empty) for the other types, whose events make one model per type." })),
  },
  { additionalProperties: false },
);
export type CatalogModelQuery = typeof CatalogModelQuery.static;

const JsonTypeCounts = t.Record(t.String(), t.Integer(), {
  description: "Sampled events in which the path held a value of each JSON type (`string`, `integer`, `number`, `boolean`, `null`, `object`, `array`; an event holding two types at one path, say in two array elements, counts under both).",
});

export const CatalogProperty = t.Object({
  path: t.String({ description: "Dot-flattened from the event's root; `[]` marks an array's elements: `properties.products[].price`." }),
  types: JsonTypeCounts,
  present: t.Number({
    minimum: 0,
    maximum: 1,
    description: "Share of the model's sampled events (`sampled`) that had the path, from 0 to 1 (4 decimals). For a path inside an array: events in which at least one element had it.",
  }),
  examples: t.Optional(
    t.Array(t.Union([t.String(), t.Number(), t.Boolean()]), {
      description: "Up to 3 distinct values (text cut to 80 characters). Absent when the source keeps none (settings.catalogExamples false), and for e-mail, phone and IP-like paths and values unless settings.catalogPersonalExamples is true.",
    }),
  ),
  firstSeen: t.String({ format: "date-time", description: "receivedAt of the first sampled event with the path." }),
  lastSeen: t.String({ format: "date-time", description: "receivedAt of the last sampled event with the path." }),
});

export const CatalogModel = t.Object({
  type: t.String({ description: "The message type: track, identify, page, screen, group, alias." }),
  event: t.String({ description: "The track event's name; \"\" for the other types (one model per type, as tracking plans key them)." }),
  count: t.Integer({ description: "Every event of the model, exactly (none sampled away)." }),
  firstSeen: t.String({ format: "date-time" }),
  lastSeen: t.String({ format: "date-time" }),
  daily: t.Record(t.String(), t.Integer(), { description: "Events per UTC day (YYYY-MM-DD) over the last 30 days; days without events are left out." }),
  sampled: t.Integer({
    description:
      "Events whose properties were read: every event while the process reads fewer than --catalog-sample-per-second a second, a sample beyond (and always a model's first ones). `present` and `types` are out of these.",
  }),
  properties: t.Array(CatalogProperty, { description: "The model's property paths (properties, traits, context.traits and the event's own top-level fields), by path." }),
  overflowPaths: t.Integer({ description: "Occurrences of paths beyond --catalog-max-paths (or longer than 300 characters): counted, not listed." }),
});

export const CatalogEvents = t.Object({
  sourceId: t.String(),
  events: t.Array(CatalogModel),
  overflow: t.Object(
    {
      models: t.Integer({ description: "(type, event) pairs refused because the source had --catalog-max-models models (each counted once per Sluice process)." }),
      events: t.Integer({ description: "Events of those pairs: counted, not catalogued." }),
    },
    { description: "What the bound of models per source left out." },
  ),
});
export type CatalogEvents = typeof CatalogEvents.static;

export const CatalogModelDetail = t.Composite([
  CatalogModel,
  t.Object({
    jsonSchema: t.Record(t.String(), t.Unknown(), {
      description:
        "A draft JSON Schema (draft-07) of the whole event from what was observed, for a tracking plan's rules: each path with its types, required where present in at least 99% of the sampled events (with its parent), objects closed (`additionalProperties: false`) unless paths overflowed; the event and its `context` stay open.",
    }),
  }),
]);
export type CatalogModelDetail = typeof CatalogModelDetail.static;
