/**
 * Transformations and their versions. Every save of code makes a new versionId;
 * a destination runs at most one transformation.
 */
import { and, desc, eq, inArray } from "drizzle-orm";
import { transact } from "../../db";
import { destinationTransformations, destinations, transformationVersions, transformations } from "../../db/schema";
import type { ScopedContext } from "../lib/context";
import { AppError, badRequest, notFound } from "../lib/errors";
import { newId } from "../lib/ids";
import { validateTransformationCode } from "../transformations/sandbox";
import type { TransformationCreate, TransformationUpdate } from "../transformations/schemas";

type Row = typeof transformations.$inferSelect;

/** Runs the code's top level in the sandbox (off this thread) and checks the contract. */
export async function checkCode(code: string, where = "code") {
  try {
    return await validateTransformationCode(code);
  } catch (e) {
    throw badRequest(`${where}: ${(e as Error).message}`);
  }
}

function present(ctx: ScopedContext, row: Row) {
  const version = ctx.db.select().from(transformationVersions).where(eq(transformationVersions.id, row.versionId)).get();
  const destinationIds = ctx.db
    .select({ id: destinationTransformations.destinationId })
    .from(destinationTransformations)
    .where(eq(destinationTransformations.transformationId, row.id))
    .all()
    .map((r) => r.id);
  return {
    id: row.id,
    name: row.name,
    versionId: row.versionId,
    code: version?.code ?? "",
    destinationIds,
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
}

export function findTransformationRow(ctx: ScopedContext, id: string): Row {
  const row = ctx.db.select().from(transformations).where(and(eq(transformations.id, id), eq(transformations.workspaceId, ctx.workspaceId))).get();
  if (!row) throw notFound(`transformation '${id}' not found`);
  return row;
}

function assertDestinations(ctx: ScopedContext, ids: string[]) {
  if (!ids.length) return;
  const found = new Set(
    ctx.db.select({ id: destinations.id }).from(destinations).where(and(inArray(destinations.id, ids), eq(destinations.workspaceId, ctx.workspaceId))).all().map((r) => r.id),
  );
  const missing = ids.find((id) => !found.has(id));
  if (missing) throw badRequest(`destinationIds: destination '${missing}' not found in this workspace`);
}

function newVersion(ctx: ScopedContext, transformationId: string, code: string): string {
  const id = newId("trv");
  ctx.db.insert(transformationVersions).values({ id, transformationId, code, createdAt: ctx.now() }).run();
  return id;
}

/** Makes `transformationId` the one transformation of the destination (replacing any other). */
export function attachTransformation(ctx: ScopedContext, destinationId: string, transformationId: string) {
  ctx.db
    .insert(destinationTransformations)
    .values({ destinationId, transformationId })
    .onConflictDoUpdate({ target: destinationTransformations.destinationId, set: { transformationId } })
    .run();
  ctx.config.invalidate();
}

function setDestinations(ctx: ScopedContext, transformationId: string, destinationIds: string[]) {
  ctx.db.delete(destinationTransformations).where(eq(destinationTransformations.transformationId, transformationId)).run();
  for (const d of new Set(destinationIds)) attachTransformation(ctx, d, transformationId);
}

export function listTransformations(ctx: ScopedContext) {
  return ctx.db.select().from(transformations).where(eq(transformations.workspaceId, ctx.workspaceId)).orderBy(transformations.createdAt, transformations.id).all().map((r) => present(ctx, r));
}

export function getTransformation(ctx: ScopedContext, id: string) {
  return present(ctx, findTransformationRow(ctx, id));
}

export async function createTransformation(ctx: ScopedContext, input: TransformationCreate) {
  await checkCode(input.code);
  return createChecked(ctx, input);
}

/** Creates a transformation whose code was already checked (the workspace file checks all first). */
function createChecked(ctx: ScopedContext, input: TransformationCreate) {
  assertDestinations(ctx, input.destinationIds ?? []);
  const exists = ctx.db.select({ id: transformations.id }).from(transformations).where(and(eq(transformations.workspaceId, ctx.workspaceId), eq(transformations.name, input.name))).get();
  if (exists) throw new AppError("CONFLICT", `name: a transformation named '${input.name}' already exists`);
  const row = transact(ctx.db, () => {
    const id = newId("trf");
    const now = ctx.now();
    // The version row references the transformation, so the transformation goes in first with a placeholder.
    ctx.db.insert(transformations).values({ id, workspaceId: ctx.workspaceId, name: input.name, versionId: "", createdAt: now, updatedAt: now }).run();
    const versionId = newVersion(ctx, id, input.code);
    const row = ctx.db.update(transformations).set({ versionId }).where(eq(transformations.id, id)).returning().get();
    if (input.destinationIds) setDestinations(ctx, id, input.destinationIds);
    return row;
  });
  ctx.config.invalidate();
  return present(ctx, row);
}

export async function updateTransformation(ctx: ScopedContext, id: string, input: TransformationUpdate) {
  findTransformationRow(ctx, id);
  if (input.code !== undefined) await checkCode(input.code);
  return updateChecked(ctx, id, input);
}

function updateChecked(ctx: ScopedContext, id: string, input: TransformationUpdate) {
  const current = findTransformationRow(ctx, id);
  if (input.destinationIds) assertDestinations(ctx, input.destinationIds);
  if (input.name !== undefined && input.name !== current.name) {
    const exists = ctx.db.select({ id: transformations.id }).from(transformations).where(and(eq(transformations.workspaceId, ctx.workspaceId), eq(transformations.name, input.name))).get();
    if (exists) throw new AppError("CONFLICT", `name: a transformation named '${input.name}' already exists`);
  }
  const row = transact(ctx.db, () => {
    const versionId = input.code !== undefined ? newVersion(ctx, id, input.code) : current.versionId;
    const row = ctx.db.update(transformations).set({ name: input.name ?? current.name, versionId, updatedAt: ctx.now() }).where(eq(transformations.id, id)).returning().get();
    if (input.destinationIds) setDestinations(ctx, id, input.destinationIds);
    return row;
  });
  ctx.config.invalidate();
  return present(ctx, row);
}

/** Every saved version of a transformation, newest first; `current` marks the one that runs. */
export function listTransformationVersions(ctx: ScopedContext, id: string) {
  const row = findTransformationRow(ctx, id);
  return ctx.db
    .select({ id: transformationVersions.id, createdAt: transformationVersions.createdAt, code: transformationVersions.code })
    .from(transformationVersions)
    .where(eq(transformationVersions.transformationId, id))
    // Version ids are time-ordered, so they break ties between saves within one millisecond.
    .orderBy(desc(transformationVersions.createdAt), desc(transformationVersions.id))
    .all()
    .map((v) => ({ id: v.id, createdAt: new Date(v.createdAt).toISOString(), current: v.id === row.versionId, lines: v.code.split("\n").length, bytes: Buffer.byteLength(v.code) }));
}

/** One saved version with its code. */
export function getTransformationVersion(ctx: ScopedContext, id: string, versionId: string) {
  const row = findTransformationRow(ctx, id);
  const v = ctx.db
    .select()
    .from(transformationVersions)
    .where(and(eq(transformationVersions.id, versionId), eq(transformationVersions.transformationId, id)))
    .get();
  if (!v) throw notFound(`version '${versionId}' of transformation '${id}' not found`);
  return { id: v.id, transformationId: id, code: v.code, createdAt: new Date(v.createdAt).toISOString(), current: v.id === row.versionId };
}

export function deleteTransformation(ctx: ScopedContext, id: string) {
  findTransformationRow(ctx, id);
  ctx.db.delete(transformations).where(eq(transformations.id, id)).run();
  ctx.config.invalidate();
}

/** For the workspace file, whose code was checked before its transaction: a new version only when the code changed. */
export function upsertTransformationByName(ctx: ScopedContext, name: string, code: string) {
  const existing = ctx.db.select().from(transformations).where(and(eq(transformations.workspaceId, ctx.workspaceId), eq(transformations.name, name))).get();
  if (!existing) return createChecked(ctx, { name, code });
  const current = ctx.db.select().from(transformationVersions).where(eq(transformationVersions.id, existing.versionId)).get();
  if (current?.code === code) return present(ctx, existing);
  return updateChecked(ctx, existing.id, { code });
}
