/**
 * Transformations and their versions. Every save of code makes a new versionId;
 * a destination runs at most one transformation.
 */
import type { ScopedContext } from "./context";
import { AppError, badRequest, notFound } from "../lib/errors";
import { newId } from "../lib/ids";
import { validateTransformationCode } from "../transformations/sandbox";
import type { TransformationCreate, TransformationUpdate } from "../transformations/schemas";
import { pinLibraries } from "./libraries";
import type { ControlPlaneWrite, TransformationRow, TransformationVersionRow } from "./store";
import { commit } from "./config-store";

/** Runs the code's top level in the sandbox (off this thread), with the libraries it imports, and checks the contract. */
export async function checkCode(code: string, where = "code", libraries?: Record<string, string>) {
  try {
    return await validateTransformationCode(code, {}, libraries);
  } catch (e) {
    throw badRequest(`${where}: ${(e as Error).message}`);
  }
}

/** Pins the libraries the code imports (400 for an import no library has), then checks the code with them. */
export async function pinAndCheck(ctx: ScopedContext, code: string, where = "code"): Promise<Record<string, string> | null> {
  const pinned = await pinLibraries(ctx, code, where);
  await checkCode(code, where, pinned.code);
  return Object.keys(pinned.versions).length ? pinned.versions : null;
}

/** Why a transformation's destinations are held, as the router sees it; null when it runs. */
export function heldReason(row: TransformationRow, version: TransformationVersionRow | undefined): string | null {
  if (!version || version.code === null) return `transformation code missing: versionId ${version?.externalId ?? row.versionId}`;
  return null;
}

function present(row: TransformationRow, version: TransformationVersionRow | undefined, destinationIds: string[]) {
  return {
    id: row.id,
    name: row.name,
    versionId: row.versionId,
    code: version?.code ?? "",
    libraries: version?.libraries ?? {},
    ...(row.externalId ? { rudderStackId: row.externalId } : {}),
    ...(version?.externalId ? { rudderStackVersionId: version.externalId } : {}),
    held: heldReason(row, version),
    destinationIds,
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
}

async function presentOne(ctx: ScopedContext, row: TransformationRow) {
  const [version, destinationIds] = await Promise.all([ctx.controlPlane.transformationVersion(row.id, row.versionId), ctx.controlPlane.destinationIdsOfTransformation(row.id)]);
  return present(row, version, destinationIds);
}

export async function findTransformationRow(ctx: ScopedContext, id: string): Promise<TransformationRow> {
  const row = await ctx.controlPlane.transformation(ctx.workspaceId, id);
  if (!row) throw notFound(`transformation '${id}' not found`);
  return row;
}

async function assertDestinations(ctx: ScopedContext, ids: string[]) {
  if (!ids.length) return;
  const found = await ctx.controlPlane.existingDestinationIds(ctx.workspaceId, ids);
  const missing = ids.find((id) => !found.has(id));
  if (missing) throw badRequest(`destinationIds: destination '${missing}' not found in this workspace`);
}

async function assertNameFree(ctx: ScopedContext, name: string) {
  if (await ctx.controlPlane.transformationByName(ctx.workspaceId, name)) throw new AppError("CONFLICT", `name: a transformation named '${name}' already exists`);
}

export async function listTransformations(ctx: ScopedContext) {
  const [rows, attached] = await Promise.all([ctx.controlPlane.transformations(ctx.workspaceId), ctx.controlPlane.attachments(ctx.workspaceId)]);
  const versions = await Promise.all(rows.map((r) => ctx.controlPlane.transformationVersion(r.id, r.versionId)));
  const byTransformation = new Map<string, string[]>();
  for (const a of attached.sort((x, y) => (x.destinationId < y.destinationId ? -1 : x.destinationId > y.destinationId ? 1 : 0))) {
    const ids = byTransformation.get(a.transformationId);
    if (ids) ids.push(a.destinationId);
    else byTransformation.set(a.transformationId, [a.destinationId]);
  }
  return rows.map((r, i) => present(r, versions[i], byTransformation.get(r.id) ?? []));
}

export async function getTransformation(ctx: ScopedContext, id: string) {
  return presentOne(ctx, await findTransformationRow(ctx, id));
}

/**
 * The operations of a create whose code was already checked (the workspace file checks all
 * first). `destinationsChecked`: the workspace file names destinations it creates in the same write.
 */
export async function planTransformationCreate(
  ctx: ScopedContext,
  input: Omit<TransformationCreate, "code"> & { code: string | null },
  destinationsChecked = false,
  extras: { libraries?: Record<string, string> | null; externalId?: string; versionExternalId?: string } = {},
): Promise<{ row: TransformationRow; ops: ControlPlaneWrite[] }> {
  if (!destinationsChecked) await assertDestinations(ctx, input.destinationIds ?? []);
  await assertNameFree(ctx, input.name);
  const now = ctx.now();
  const row: TransformationRow = { id: newId("trf"), workspaceId: ctx.workspaceId, name: input.name, versionId: newId("trv"), createdAt: now, updatedAt: now };
  if (extras.externalId) row.externalId = extras.externalId;
  const version = { libraries: extras.libraries ?? null, externalId: extras.versionExternalId ?? null };
  const ops: ControlPlaneWrite[] = [{ op: "insertTransformation", row, code: input.code, version }];
  if (input.destinationIds) ops.push({ op: "setTransformationDestinations", transformationId: row.id, destinationIds: input.destinationIds });
  return { row, ops };
}

/** The operations of an update whose code was already checked; the first is the row's own update. */
export async function planTransformationUpdate(
  ctx: ScopedContext,
  current: TransformationRow,
  input: Omit<TransformationUpdate, "code"> & { code?: string | null },
  destinationsChecked = false,
  extras: { libraries?: Record<string, string> | null; versionExternalId?: string } = {},
): Promise<{ row: TransformationRow; ops: ControlPlaneWrite[] }> {
  if (input.destinationIds && !destinationsChecked) await assertDestinations(ctx, input.destinationIds);
  if (input.name !== undefined && input.name !== current.name) await assertNameFree(ctx, input.name);
  const now = ctx.now();
  const versionId = input.code !== undefined ? newId("trv") : current.versionId;
  const row: TransformationRow = { ...current, name: input.name ?? current.name, versionId, updatedAt: now };
  const ops: ControlPlaneWrite[] = [{ op: "updateTransformation", id: row.id, set: { name: row.name, versionId, updatedAt: now } }];
  // The update comes first so its count says whether the row is still there; no foreign key
  // points at versionId, so the row may name its version before the version's insert.
  if (input.code !== undefined) {
    const version = { id: versionId, transformationId: row.id, code: input.code, createdAt: now, libraries: extras.libraries ?? null, externalId: extras.versionExternalId ?? null };
    ops.push({ op: "insertTransformationVersion", row: version });
  }
  if (input.destinationIds) ops.push({ op: "setTransformationDestinations", transformationId: row.id, destinationIds: input.destinationIds });
  return { row, ops };
}

export async function createTransformation(ctx: ScopedContext, input: TransformationCreate) {
  const libraries = await pinAndCheck(ctx, input.code);
  const { row, ops } = await planTransformationCreate(ctx, input, false, { libraries });
  await commit(ctx, ops);
  return presentOne(ctx, row);
}

export async function updateTransformation(ctx: ScopedContext, id: string, input: TransformationUpdate) {
  await findTransformationRow(ctx, id);
  const libraries = input.code !== undefined ? await pinAndCheck(ctx, input.code) : undefined;
  // Read again after the sandbox's await: the row may have changed meanwhile.
  const { row, ops } = await planTransformationUpdate(ctx, await findTransformationRow(ctx, id), input, false, { libraries });
  const { changes } = await commit(ctx, ops);
  if (changes[0] === 0) throw notFound(`transformation '${id}' not found`);
  return presentOne(ctx, row);
}

/** Every saved version of a transformation, newest first; `current` marks the one that runs. */
export async function listTransformationVersions(ctx: ScopedContext, id: string) {
  const row = await findTransformationRow(ctx, id);
  return (await ctx.controlPlane.transformationVersions(id)).map((v) => ({
    id: v.id,
    createdAt: new Date(v.createdAt).toISOString(),
    current: v.id === row.versionId,
    lines: v.code === null ? 0 : v.code.split("\n").length,
    bytes: v.code === null ? 0 : Buffer.byteLength(v.code),
  }));
}

/** One saved version with its code. */
export async function getTransformationVersion(ctx: ScopedContext, id: string, versionId: string) {
  const row = await findTransformationRow(ctx, id);
  const v = await ctx.controlPlane.transformationVersion(id, versionId);
  if (!v) throw notFound(`version '${versionId}' of transformation '${id}' not found`);
  return { id: v.id, transformationId: id, code: v.code, ...(v.libraries ? { libraries: v.libraries } : {}), createdAt: new Date(v.createdAt).toISOString(), current: v.id === row.versionId };
}

export async function deleteTransformation(ctx: ScopedContext, id: string) {
  await findTransformationRow(ctx, id);
  await commit(ctx, [{ op: "deleteTransformation", id }]);
}
