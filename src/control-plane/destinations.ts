/** Destinations: where events go, each of a kind from the destination registry. */
import { and, eq, inArray } from "drizzle-orm";
import { transact } from "../../db";
import { connections, destinationTransformations, destinations, sources } from "../../db/schema";
import { findDefinition, listDefinitions } from "../destinations/registry";
import { AppError, badRequest, notFound } from "../lib/errors";
import type { ScopedContext } from "../lib/context";
import { newId } from "../lib/ids";
import { firstError } from "../lib/schema";
import type { DestinationCreate, DestinationUpdate } from "./schemas";

type Row = typeof destinations.$inferSelect;

function present(ctx: ScopedContext, row: Row) {
  const sourceIds = ctx.db.select({ id: connections.sourceId }).from(connections).where(eq(connections.destinationId, row.id)).all().map((r) => r.id);
  const t = ctx.db.select().from(destinationTransformations).where(eq(destinationTransformations.destinationId, row.id)).get();
  return {
    id: row.id,
    name: row.name,
    type: row.type,
    enabled: row.enabled,
    config: row.config,
    sourceIds,
    transformationId: t?.transformationId ?? null,
    createdAt: new Date(row.createdAt).toISOString(),
  };
}

export function findDestinationRow(ctx: ScopedContext, id: string): Row {
  const row = ctx.db.select().from(destinations).where(and(eq(destinations.id, id), eq(destinations.workspaceId, ctx.workspaceId))).get();
  if (!row) throw notFound(`destination '${id}' not found`);
  return row;
}

/** Checks the type names a known kind and the config fits its schema; throws a 400 naming the field. */
export function validateDestinationConfig(type: string, config: Record<string, unknown>, prefix = "config") {
  const def = findDefinition(type);
  if (!def) {
    throw badRequest(`type: unknown destination type '${type}' (known: ${listDefinitions().map((d) => d.name).join(", ")})`);
  }
  const err = firstError(def.configSchema, config, prefix);
  if (err) throw badRequest(err);
}

function assertNameFree(ctx: ScopedContext, name: string, exceptId?: string) {
  const other = ctx.db.select({ id: destinations.id }).from(destinations).where(and(eq(destinations.workspaceId, ctx.workspaceId), eq(destinations.name, name))).get();
  if (other && other.id !== exceptId) throw new AppError("CONFLICT", `name: a destination named '${name}' already exists`);
}

function assertSourcesInWorkspace(ctx: ScopedContext, sourceIds: string[]) {
  if (sourceIds.length === 0) return;
  const found = new Set(
    ctx.db.select({ id: sources.id }).from(sources).where(and(inArray(sources.id, sourceIds), eq(sources.workspaceId, ctx.workspaceId))).all().map((r) => r.id),
  );
  const missing = sourceIds.find((id) => !found.has(id));
  if (missing) throw badRequest(`sourceIds: source '${missing}' not found in this workspace`);
}

function setConnections(ctx: ScopedContext, destinationId: string, sourceIds: string[]) {
  ctx.db.delete(connections).where(eq(connections.destinationId, destinationId)).run();
  const now = ctx.now();
  for (const sourceId of new Set(sourceIds)) ctx.db.insert(connections).values({ sourceId, destinationId, createdAt: now }).run();
}

export function listDestinations(ctx: ScopedContext) {
  return ctx.db.select().from(destinations).where(eq(destinations.workspaceId, ctx.workspaceId)).orderBy(destinations.createdAt, destinations.id).all().map((r) => present(ctx, r));
}

export function getDestination(ctx: ScopedContext, id: string) {
  return present(ctx, findDestinationRow(ctx, id));
}

export function createDestination(ctx: ScopedContext, input: DestinationCreate) {
  validateDestinationConfig(input.type, input.config);
  assertNameFree(ctx, input.name);
  assertSourcesInWorkspace(ctx, input.sourceIds ?? []);
  const now = ctx.now();
  const row = transact(ctx.db, () => {
    const row = ctx.db
      .insert(destinations)
      .values({ id: newId("dst"), workspaceId: ctx.workspaceId, name: input.name, type: input.type, config: input.config, enabled: input.enabled ?? true, createdAt: now, updatedAt: now })
      .returning()
      .get();
    setConnections(ctx, row.id, input.sourceIds ?? []);
    return row;
  });
  ctx.config.invalidate();
  return present(ctx, row);
}

export function updateDestination(ctx: ScopedContext, id: string, input: DestinationUpdate) {
  const current = findDestinationRow(ctx, id);
  const type = input.type ?? current.type;
  const config = input.config ?? current.config;
  if (input.type !== undefined || input.config !== undefined) validateDestinationConfig(type, config);
  if (input.name !== undefined) assertNameFree(ctx, input.name, id);
  if (input.sourceIds) assertSourcesInWorkspace(ctx, input.sourceIds);
  const row = transact(ctx.db, () => {
    const row = ctx.db
      .update(destinations)
      .set({ name: input.name ?? current.name, type, config, enabled: input.enabled ?? current.enabled, updatedAt: ctx.now() })
      .where(eq(destinations.id, id))
      .returning()
      .get();
    if (input.sourceIds) setConnections(ctx, id, input.sourceIds);
    return row;
  });
  ctx.config.invalidate();
  return present(ctx, row);
}

export function deleteDestination(ctx: ScopedContext, id: string) {
  findDestinationRow(ctx, id);
  ctx.db.delete(destinations).where(eq(destinations.id, id)).run();
  ctx.config.invalidate();
}
