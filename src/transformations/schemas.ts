import { t } from "elysia";

export const TransformationCreate = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200 }),
    code: t.String({ minLength: 1, description: "JavaScript defining exactly one of transformEvent(event, metadata) or transformBatch(events, metadata)." }),
    destinationIds: t.Optional(t.Array(t.String(), { description: "Destinations that run this transformation (a destination runs at most one)." })),
  },
  { additionalProperties: false },
);
export type TransformationCreate = typeof TransformationCreate.static;

export const TransformationUpdate = t.Partial(TransformationCreate, { additionalProperties: false });
export type TransformationUpdate = typeof TransformationUpdate.static;

export const TransformationTest = t.Object(
  {
    code: t.String({ minLength: 1 }),
    events: t.Array(t.Record(t.String(), t.Unknown()), { description: "Events to run through the code." }),
    libraries: t.Optional(
      t.Record(t.String(), t.String(), {
        description: "Library code by import name, e.g. an unsaved edit of a library. An import not named here runs the workspace's library of that import name (its current version).",
      }),
    ),
  },
  { additionalProperties: false },
);
export type TransformationTest = typeof TransformationTest.static;

export const LibraryCreate = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200 }),
    importName: t.Optional(
      t.String({ minLength: 1, maxLength: 200, description: "What code imports it by (`import { f } from \"importName\"`). Default: the name in camelCase, as RudderStack's transformer does. Unique within the workspace." }),
    ),
    code: t.String({ minLength: 1, description: "A JavaScript module: what it exports, transformations and other libraries import." }),
  },
  { additionalProperties: false },
);

export const LibraryUpdate = t.Object(
  { name: t.Optional(t.String({ minLength: 1, maxLength: 200 })), code: t.Optional(t.String({ minLength: 1, description: "New code makes a new version." })) },
  { additionalProperties: false },
);

export const Library = t.Object({
  id: t.String(),
  name: t.String(),
  importName: t.String(),
  versionId: t.String({ description: "The current version: what a transformation saved now pins." }),
  code: t.String(),
  createdAt: t.String({ format: "date-time" }),
  updatedAt: t.String({ format: "date-time" }),
});
