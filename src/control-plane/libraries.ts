/**
 * Transformation libraries: named modules a transformation imports (`import { f } from
 * "importName"`), as RudderStack's libraries. Every save of code makes a new version. A
 * transformation version pins the library versions current when it was saved, so editing a
 * library changes no running code until the transformation is saved again.
 */
import type { ScopedContext } from "./context";
import { AppError, badRequest, notFound } from "../lib/errors";
import { newId } from "../lib/ids";
import type { ControlPlaneWrite, LibraryRow } from "./store";
import { commit } from "./config-store";

export interface LibraryCreate {
  name: string;
  importName?: string;
  code: string;
}
export interface LibraryUpdate {
  name?: string;
  code?: string;
}

/**
 * The name code imports a library by when none is given: RudderStack's transformer imports a
 * library by its name in camelCase ("PII helpers" → "piiHelpers", "url-utils" → "urlUtils").
 */
export function importNameOf(name: string): string {
  const words = name.match(/[A-Z]{2,}(?=[A-Z][a-z]+[0-9]*|[^A-Za-z0-9]|$)|[A-Z]?[a-z]+[0-9]*|[A-Z]+|[0-9]+/g) ?? [];
  return words.map((w, i) => (i === 0 ? w.toLowerCase() : w[0]!.toUpperCase() + w.slice(1).toLowerCase())).join("");
}

const IMPORT_FROM = /\b(?:import|export)\s+(?:[\w$*\s{},]*?\s*from\s*)?["']([^"'\n]+)["']/g;

/** The module names the code imports (static `import … from "x"`, `import "x"`, `export … from "x"`). */
export function importsOf(code: string): string[] {
  const names = new Set<string>();
  for (const m of code.matchAll(IMPORT_FROM)) names.add(m[1]!);
  return [...names];
}

/** What a version saved now pins: import name → library version id, and the code the sandbox is handed. */
export interface PinnedLibraries {
  versions: Record<string, string>;
  code: Record<string, string>;
}

/**
 * The current versions of the libraries the code imports, and of those they import in turn.
 * An import no library of the workspace has is refused (400 naming it and `where`).
 */
export async function pinLibraries(ctx: ScopedContext, code: string, where = "code"): Promise<PinnedLibraries> {
  const out: PinnedLibraries = { versions: {}, code: {} };
  const queue = importsOf(code).map((name) => ({ name, from: where }));
  while (queue.length) {
    const { name, from } = queue.shift()!;
    if (name in out.versions) continue;
    const lib = await ctx.controlPlane.libraryByImportName(ctx.workspaceId, name);
    if (!lib) throw badRequest(`${from}: imports '${name}', and no library of this workspace has that import name (create it with POST /v2/libraries)`);
    const libCode = (await ctx.controlPlane.libraryVersionCode([lib.versionId])).get(lib.versionId);
    if (libCode === undefined) throw badRequest(`${from}: library '${name}' has no current version`);
    out.versions[name] = lib.versionId;
    out.code[name] = libCode;
    for (const next of importsOf(libCode)) queue.push({ name: next, from: `library '${name}'` });
  }
  return out;
}

function present(row: LibraryRow, code: string) {
  return {
    id: row.id,
    name: row.name,
    importName: row.importName,
    versionId: row.versionId,
    code,
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
}

async function presentOne(ctx: ScopedContext, row: LibraryRow) {
  return present(row, (await ctx.controlPlane.libraryVersionCode([row.versionId])).get(row.versionId) ?? "");
}

async function findLibraryRow(ctx: ScopedContext, id: string): Promise<LibraryRow> {
  const row = await ctx.controlPlane.library(ctx.workspaceId, id);
  if (!row) throw notFound(`library '${id}' not found`);
  return row;
}

const IMPORT_NAME = /^[A-Za-z_$][\w$-]*$/;

export async function listLibraries(ctx: ScopedContext) {
  const rows = await ctx.controlPlane.libraries(ctx.workspaceId);
  const codes = await ctx.controlPlane.libraryVersionCode(rows.map((r) => r.versionId));
  return rows.map((r) => present(r, codes.get(r.versionId) ?? ""));
}

export async function getLibrary(ctx: ScopedContext, id: string) {
  return presentOne(ctx, await findLibraryRow(ctx, id));
}

/** The operations of a create: the library and its first version. */
export async function planLibraryCreate(ctx: ScopedContext, input: LibraryCreate & { externalId?: string; versionExternalId?: string }): Promise<{ row: LibraryRow; ops: ControlPlaneWrite[] }> {
  const importName = input.importName ?? importNameOf(input.name);
  if (!IMPORT_NAME.test(importName)) throw badRequest(`importName: '${importName}' cannot be imported by name (letters, digits, _, $ and -, not starting with a digit)`);
  if (await ctx.controlPlane.libraryByImportName(ctx.workspaceId, importName)) throw new AppError("CONFLICT", `importName: a library imported as '${importName}' already exists`);
  const now = ctx.now();
  const row: LibraryRow = { id: newId("lib"), workspaceId: ctx.workspaceId, name: input.name, importName, versionId: newId("lbv"), createdAt: now, updatedAt: now, externalId: input.externalId ?? null };
  return { row, ops: [{ op: "insertLibrary", row, code: input.code, versionExternalId: input.versionExternalId ?? null }] };
}

/** The operations of an update; new code makes a new version, the current one from now on. */
export function planLibraryUpdate(ctx: ScopedContext, current: LibraryRow, input: LibraryUpdate & { versionExternalId?: string }): { row: LibraryRow; ops: ControlPlaneWrite[] } {
  const now = ctx.now();
  const versionId = input.code !== undefined ? newId("lbv") : current.versionId;
  const row: LibraryRow = { ...current, name: input.name ?? current.name, versionId, updatedAt: now };
  const ops: ControlPlaneWrite[] = [{ op: "updateLibrary", id: row.id, set: { name: row.name, versionId, updatedAt: now } }];
  if (input.code !== undefined) {
    ops.push({ op: "insertLibraryVersion", row: { id: versionId, libraryId: row.id, code: input.code, createdAt: now, externalId: input.versionExternalId ?? null } });
  }
  return { row, ops };
}

export async function createLibrary(ctx: ScopedContext, input: LibraryCreate) {
  const { row, ops } = await planLibraryCreate(ctx, input);
  await commit(ctx, ops);
  return presentOne(ctx, row);
}

/** New code is a new version: transformations keep running the version they pinned until they are saved again. */
export async function updateLibrary(ctx: ScopedContext, id: string, input: LibraryUpdate) {
  const { row, ops } = planLibraryUpdate(ctx, await findLibraryRow(ctx, id), input);
  const { changes } = await commit(ctx, ops);
  if (changes[0] === 0) throw notFound(`library '${id}' not found`);
  return presentOne(ctx, row);
}

/** Every version of a library, newest first, with its code. */
export async function listLibraryVersions(ctx: ScopedContext, id: string) {
  const row = await findLibraryRow(ctx, id);
  return (await ctx.controlPlane.libraryVersions(id)).map((v) => ({ id: v.id, code: v.code, createdAt: new Date(v.createdAt).toISOString(), current: v.id === row.versionId }));
}

/**
 * Refused (409, naming them) while the current version of a transformation pins a version of
 * the library: deleting it would hold their destinations. Older versions may still name it;
 * restoring one saves its code again, which pins the libraries of that moment.
 */
export async function deleteLibrary(ctx: ScopedContext, id: string) {
  const row = await findLibraryRow(ctx, id);
  const versionIds = new Set((await ctx.controlPlane.libraryVersions(id)).map((v) => v.id));
  const users: string[] = [];
  for (const t of await ctx.controlPlane.transformations(ctx.workspaceId)) {
    const v = await ctx.controlPlane.transformationVersion(t.id, t.versionId);
    if (Object.values(v?.libraries ?? {}).some((lv) => versionIds.has(lv))) users.push(t.name);
  }
  if (users.length) throw new AppError("CONFLICT", `library '${row.importName}' is imported by the transformation${users.length > 1 ? "s" : ""} ${users.map((n) => `'${n}'`).join(", ")}: remove the import and save them first`);
  await commit(ctx, [{ op: "deleteLibrary", id }]);
}
