/** Sources: where events come from, each with its write key. */
import { and, eq } from "drizzle-orm";
import { connections, sources } from "../../db/schema";
import { AppError, notFound } from "../lib/errors";
import type { ScopedContext } from "../lib/context";
import { newId, newWriteKey } from "../lib/ids";
import type { SourceCreate, SourceUpdate } from "./schemas";

type Row = typeof sources.$inferSelect;

function present(ctx: ScopedContext, row: Row) {
  const destinationIds = ctx.db
    .select({ id: connections.destinationId })
    .from(connections)
    .where(eq(connections.sourceId, row.id))
    .all()
    .map((r) => r.id);
  return {
    id: row.id,
    name: row.name,
    writeKey: row.writeKey,
    enabled: row.enabled,
    settings: row.settings ?? {},
    createdAt: new Date(row.createdAt).toISOString(),
    destinationIds,
  };
}

export function findSourceRow(ctx: ScopedContext, id: string): Row {
  const row = ctx.db.select().from(sources).where(and(eq(sources.id, id), eq(sources.workspaceId, ctx.workspaceId))).get();
  if (!row) throw notFound(`source '${id}' not found`);
  return row;
}

export function listSources(ctx: ScopedContext) {
  return ctx.db.select().from(sources).where(eq(sources.workspaceId, ctx.workspaceId)).orderBy(sources.createdAt, sources.id).all().map((r) => present(ctx, r));
}

export function getSource(ctx: ScopedContext, id: string) {
  return present(ctx, findSourceRow(ctx, id));
}

function assertWriteKeyFree(ctx: ScopedContext, writeKey: string, exceptId?: string) {
  const other = ctx.db.select({ id: sources.id }).from(sources).where(eq(sources.writeKey, writeKey)).get();
  if (other && other.id !== exceptId) throw new AppError("CONFLICT", "writeKey: already used by another source");
}

function assertNameFree(ctx: ScopedContext, name: string, exceptId?: string) {
  const other = ctx.db.select({ id: sources.id }).from(sources).where(and(eq(sources.workspaceId, ctx.workspaceId), eq(sources.name, name))).get();
  if (other && other.id !== exceptId) throw new AppError("CONFLICT", `name: a source named '${name}' already exists`);
}

export function createSource(ctx: ScopedContext, input: SourceCreate) {
  assertNameFree(ctx, input.name);
  const writeKey = input.writeKey ?? newWriteKey();
  assertWriteKeyFree(ctx, writeKey);
  const now = ctx.now();
  const row = ctx.db
    .insert(sources)
    .values({ id: newId("src"), workspaceId: ctx.workspaceId, name: input.name, writeKey, enabled: input.enabled ?? true, settings: input.settings ?? {}, createdAt: now, updatedAt: now })
    .returning()
    .get();
  ctx.config.invalidate();
  return present(ctx, row);
}

export function updateSource(ctx: ScopedContext, id: string, input: SourceUpdate) {
  const current = findSourceRow(ctx, id);
  if (input.name !== undefined) assertNameFree(ctx, input.name, id);
  if (input.writeKey !== undefined) assertWriteKeyFree(ctx, input.writeKey, id);
  const row = ctx.db
    .update(sources)
    .set({
      name: input.name ?? current.name,
      writeKey: input.writeKey ?? current.writeKey,
      enabled: input.enabled ?? current.enabled,
      settings: input.settings ? { ...current.settings, ...input.settings } : current.settings,
      updatedAt: ctx.now(),
    })
    .where(eq(sources.id, id))
    .returning()
    .get();
  ctx.config.invalidate();
  return present(ctx, row);
}

export function deleteSource(ctx: ScopedContext, id: string) {
  findSourceRow(ctx, id);
  ctx.db.delete(sources).where(eq(sources.id, id)).run();
  ctx.config.invalidate();
}
