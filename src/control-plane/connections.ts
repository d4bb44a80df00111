/** Connections: which sources feed which destinations. */
import { and, eq } from "drizzle-orm";
import { connections, destinations } from "../../db/schema";
import { notFound } from "../lib/errors";
import type { ScopedContext } from "../lib/context";
import { findDestinationRow } from "./destinations";
import type { Connection } from "./schemas";
import { findSourceRow } from "./sources";

export function listConnections(ctx: ScopedContext) {
  return ctx.db
    .select({ sourceId: connections.sourceId, destinationId: connections.destinationId, createdAt: connections.createdAt })
    .from(connections)
    .innerJoin(destinations, eq(destinations.id, connections.destinationId))
    .where(eq(destinations.workspaceId, ctx.workspaceId))
    .all()
    .map((r) => ({ ...r, createdAt: new Date(r.createdAt).toISOString() }));
}

/** Idempotent: connecting twice keeps one connection. */
export function createConnection(ctx: ScopedContext, input: Connection) {
  findSourceRow(ctx, input.sourceId);
  findDestinationRow(ctx, input.destinationId);
  ctx.db.insert(connections).values({ ...input, createdAt: ctx.now() }).onConflictDoNothing().run();
  ctx.config.invalidate();
  return { sourceId: input.sourceId, destinationId: input.destinationId };
}

export function deleteConnection(ctx: ScopedContext, input: Connection) {
  findSourceRow(ctx, input.sourceId);
  findDestinationRow(ctx, input.destinationId);
  const removed = ctx.db
    .delete(connections)
    .where(and(eq(connections.sourceId, input.sourceId), eq(connections.destinationId, input.destinationId)))
    .returning()
    .all();
  if (removed.length === 0) throw notFound(`no connection from '${input.sourceId}' to '${input.destinationId}'`);
  ctx.config.invalidate();
}
