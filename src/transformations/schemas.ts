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
  },
  { additionalProperties: false },
);
