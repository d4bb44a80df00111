/** Shapes of the Data Regulation API (docs/api.md), for OpenAPI and for the code. */
import { PathId } from "../lib/schema";
import { type Static, t } from "elysia";

export const REGULATION_TYPES = ["suppress", "suppress_with_delete"] as const;
export type RegulationType = (typeof REGULATION_TYPES)[number];

export const DELETION_STATUSES = ["pending", "running", "complete", "failed", "aborted"] as const;
export type DeletionStatus = (typeof DELETION_STATUSES)[number];

export const RegulationUser = t.Object(
  { userId: t.String({ minLength: 1 }), phone: t.Optional(t.String()), email: t.Optional(t.String()) },
  { additionalProperties: t.String(), description: "`userId` and, optionally, `phone`, `email` and custom identifiers (strings)." },
);
export type RegulationUser = Static<typeof RegulationUser>;

/**
 * The request body. It is checked by hand in `createRegulations`, which names each
 * rule broken; this schema documents it and types the checked value.
 */
export const RegulationCreate = t.Object({
  regulationType: t.Union([t.Literal("suppress"), t.Literal("suppress_with_delete")]),
  sourceIds: t.Optional(t.Array(t.String({ minLength: 1 }), { minItems: 1, description: "suppress only; omitted: every source of the workspace." })),
  destinationIds: t.Optional(t.Array(t.String({ minLength: 1 }), { minItems: 1, description: "suppress_with_delete only, and required there." })),
  users: t.Array(RegulationUser, { minItems: 1 }),
});
export type RegulationCreate = Static<typeof RegulationCreate>;

export const DeletionState = t.Object({
  destinationId: t.String(),
  status: t.Union([t.Literal("pending"), t.Literal("running"), t.Literal("complete"), t.Literal("failed"), t.Literal("aborted")]),
  reason: t.Optional(t.String()),
  updatedAt: t.String({ format: "date-time" }),
});
export type DeletionState = Static<typeof DeletionState>;

export const Regulation = t.Object({
  id: t.String(),
  workspaceId: t.String(),
  canceled: t.Boolean(),
  regulationType: t.Union([t.Literal("suppress"), t.Literal("suppress_with_delete")]),
  attributes: RegulationUser,
  sourceIds: t.Optional(t.Array(t.String())),
  destinationIds: t.Optional(t.Array(t.String())),
  createdAt: t.String({ format: "date-time" }),
  deletion: t.Optional(t.Array(DeletionState)),
});
export type Regulation = Static<typeof Regulation>;

export const RegulationPage = t.Object({
  data: t.Array(Regulation),
  paging: t.Object({ next: t.Optional(t.String({ description: "`/v2/regulations?after_cursor=<cursor>`; absent on the last page." })) }),
});
export type RegulationPage = Static<typeof RegulationPage>;

export const RegulationListQuery = t.Object({ after_cursor: t.Optional(t.String()) });
export const RegulationIdParams = t.Object({ regulation_id: PathId });
