/** Connections: which sources feed which destinations. */
import { notFound } from "../lib/errors";
import type { ScopedContext } from "./context";
import { findDestinationRow } from "./destinations";
import { commit } from "./config-store";
import type { Connection } from "./schemas";
import { findSourceRow } from "./sources";

export async function listConnections(ctx: ScopedContext) {
  return (await ctx.controlPlane.connections(ctx.workspaceId)).map((r) => ({ sourceId: r.sourceId, destinationId: r.destinationId, createdAt: new Date(r.createdAt).toISOString() }));
}

/** Idempotent: connecting twice keeps one connection. */
export async function createConnection(ctx: ScopedContext, input: Connection) {
  await findSourceRow(ctx, input.sourceId);
  await findDestinationRow(ctx, input.destinationId);
  await commit(ctx, [{ op: "connect", sourceId: input.sourceId, destinationId: input.destinationId, at: ctx.now() }]);
  return { sourceId: input.sourceId, destinationId: input.destinationId };
}

export async function deleteConnection(ctx: ScopedContext, input: Connection) {
  await findSourceRow(ctx, input.sourceId);
  await findDestinationRow(ctx, input.destinationId);
  // The write's own count decides the 404, so a concurrent disconnect is told apart.
  const { changes } = await commit(ctx, [{ op: "disconnect", sourceId: input.sourceId, destinationId: input.destinationId }]);
  if (changes[0] === 0) throw notFound(`no connection from '${input.sourceId}' to '${input.destinationId}'`);
}
