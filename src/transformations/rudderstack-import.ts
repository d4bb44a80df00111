/**
 * `sluice import-transformations FILE`: the code of RudderStack transformations and libraries,
 * from a JSON export of RudderStack's Transformations API, into this Sluice's control plane.
 *
 * A RudderStack workspaceConfig.json names each destination's transformation by versionId only
 * (the code stays in RudderStack's control plane), so Sluice holds those destinations. The
 * export supplies the code: a version known by its versionId and still without code gets it,
 * and its destinations start receiving (a running server picks the write up, see
 * SqliteConfigStore and, in cluster mode, the 'config' epoch).
 *
 * Accepted shapes (what RudderStack's API answers, alone or combined):
 *   [ transformation, ... ]
 *   { "transformations": [ transformation, ... ], "libraries": [ library, ... ] }
 *   transformation: { id, versionId, name, code, codeVersion?, libraries?: [library, ...] }
 *   library:        { id?, versionId?, name, importName?, code }
 * A library's import name defaults to its name in camelCase, as RudderStack's transformer has it.
 */
import type { ScopedContext } from "../control-plane/context";
import { badRequest } from "../lib/errors";
import { importNameOf, importsOf, planLibraryCreate, planLibraryUpdate } from "../control-plane/libraries";
import type { ControlPlaneWrite, LibraryRow } from "../control-plane/store";
import { commit } from "../control-plane/config-store";
import { checkCode, planTransformationCreate, planTransformationUpdate } from "../control-plane/transformations";

interface ExportedLibrary {
  id?: string;
  versionId?: string;
  name: string;
  importName: string;
  code: string;
}
interface ExportedTransformation {
  id: string;
  versionId: string;
  name: string;
  code: string;
}

export interface ImportSummary {
  libraries: { created: string[]; updated: string[]; unchanged: string[] };
  transformations: {
    /** Versions a workspace file named without code: their destinations now receive. */
    supplied: string[];
    created: string[];
    /** A new version of a transformation Sluice had under RudderStack's id. */
    versioned: string[];
    unchanged: string[];
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : undefined);

function libraryOf(x: unknown, where: string): ExportedLibrary {
  if (!isObject(x)) throw badRequest(`${where}: expected an object with name and code`);
  const name = str(x.name);
  if (!name) throw badRequest(`${where}.name: is required`);
  if (typeof x.code !== "string" || !x.code) throw badRequest(`${where}.code: is required`);
  return { id: str(x.id), versionId: str(x.versionId), name, importName: str(x.importName) ?? importNameOf(name), code: x.code };
}

/** The export as lists, or a 400 naming the first thing that is not as documented above. */
export function parseTransformationsExport(doc: unknown): { transformations: ExportedTransformation[]; libraries: ExportedLibrary[] } {
  const list = Array.isArray(doc) ? doc : isObject(doc) ? (doc.transformations ?? []) : undefined;
  if (!Array.isArray(list)) throw badRequest("expected a list of transformations, or an object with `transformations` and `libraries` lists");
  const libraries: ExportedLibrary[] = [];
  if (isObject(doc) && doc.libraries !== undefined) {
    if (!Array.isArray(doc.libraries)) throw badRequest("libraries: expected a list");
    doc.libraries.forEach((l, i) => libraries.push(libraryOf(l, `libraries[${i}]`)));
  }
  const transformations = list.map((x, i): ExportedTransformation => {
    const where = `transformations[${i}]`;
    if (!isObject(x)) throw badRequest(`${where}: expected an object with id, versionId, name and code`);
    const versionId = str(x.versionId);
    if (!versionId) throw badRequest(`${where}.versionId: is required`);
    if (typeof x.code !== "string" || !x.code) throw badRequest(`${where}.code: is required`);
    if (Array.isArray(x.libraries)) {
      // RudderStack lists a transformation's libraries by reference; with code they are imported too.
      x.libraries.forEach((l, j) => {
        if (isObject(l) && typeof l.code === "string") libraries.push(libraryOf(l, `${where}.libraries[${j}]`));
      });
    }
    const id = str(x.id) ?? versionId;
    return { id, versionId, name: str(x.name) ?? id, code: x.code };
  });
  return { transformations, libraries };
}

/**
 * Applies the export as one write, all or nothing, after every transformation's code ran its
 * top level in the sandbox with the libraries it imports (the export's, else the workspace's).
 */
export async function importTransformations(ctx: ScopedContext, doc: unknown): Promise<ImportSummary> {
  const parsed = parseTransformationsExport(doc);
  const store = ctx.controlPlane;
  const summary: ImportSummary = { libraries: { created: [], updated: [], unchanged: [] }, transformations: { supplied: [], created: [], versioned: [], unchanged: [] } };
  const ops: ControlPlaneWrite[] = [];

  // Libraries first: the transformations pin what this import leaves current.
  const current = new Map<string, { versionId: string; code: string }>();
  for (const lib of parsed.libraries) {
    if (current.has(lib.importName)) continue;
    const existing: LibraryRow | undefined = (lib.id ? await store.libraryByExternalId(ctx.workspaceId, lib.id) : undefined) ?? (await store.libraryByImportName(ctx.workspaceId, lib.importName));
    if (existing) {
      const code = (await store.libraryVersionCode([existing.versionId])).get(existing.versionId);
      if (code === lib.code) {
        summary.libraries.unchanged.push(existing.importName);
        current.set(existing.importName, { versionId: existing.versionId, code });
        continue;
      }
      const p = planLibraryUpdate(ctx, existing, { code: lib.code, versionExternalId: lib.versionId });
      ops.push(...p.ops);
      summary.libraries.updated.push(existing.importName);
      current.set(existing.importName, { versionId: p.row.versionId, code: lib.code });
    } else {
      const p = await planLibraryCreate(ctx, { name: lib.name, importName: lib.importName, code: lib.code, externalId: lib.id, versionExternalId: lib.versionId });
      ops.push(...p.ops);
      summary.libraries.created.push(lib.importName);
      current.set(lib.importName, { versionId: p.row.versionId, code: lib.code });
    }
  }

  const resolve = async (name: string, from: string) => {
    const planned = current.get(name);
    if (planned) return planned;
    const lib = await store.libraryByImportName(ctx.workspaceId, name);
    const code = lib && (await store.libraryVersionCode([lib.versionId])).get(lib.versionId);
    if (!lib || code === undefined) throw badRequest(`${from}: imports '${name}', which is neither in this file's libraries nor a library of this workspace`);
    return { versionId: lib.versionId, code };
  };

  const names = new Set<string>();
  for (const [i, tr] of parsed.transformations.entries()) {
    const where = `transformations[${i}] (${tr.name})`;
    const pins: Record<string, string> = {};
    const code: Record<string, string> = {};
    const queue = importsOf(tr.code).map((name) => ({ name, from: where }));
    while (queue.length) {
      const { name, from } = queue.shift()!;
      if (name in pins) continue;
      const lib = await resolve(name, from);
      pins[name] = lib.versionId;
      code[name] = lib.code;
      queue.push(...importsOf(lib.code).map((next) => ({ name: next, from: `library '${name}'` })));
    }
    await checkCode(tr.code, `${where}.code`, code);
    const libraries = Object.keys(pins).length ? pins : null;

    const version = await store.versionByExternalId(ctx.workspaceId, tr.versionId);
    if (version) {
      if (version.code !== null) {
        summary.transformations.unchanged.push(tr.name);
        continue;
      }
      ops.push({ op: "fillTransformationVersion", id: version.id, code: tr.code, libraries });
      // A workspace file named it after RudderStack's id; the export knows its name.
      const row = await store.transformation(ctx.workspaceId, version.transformationId);
      if (row && row.name !== tr.name && row.name === (row.externalId ?? tr.versionId) && !names.has(tr.name) && !(await store.transformationByName(ctx.workspaceId, tr.name))) {
        ops.push({ op: "updateTransformation", id: row.id, set: { name: tr.name, updatedAt: ctx.now() } });
        names.add(tr.name);
      }
      summary.transformations.supplied.push(tr.name);
      continue;
    }
    const existing = await store.transformationByExternalId(ctx.workspaceId, tr.id);
    if (existing) {
      ops.push(...(await planTransformationUpdate(ctx, existing, { code: tr.code }, true, { libraries, versionExternalId: tr.versionId })).ops);
      summary.transformations.versioned.push(tr.name);
      continue;
    }
    let name = tr.name;
    if (names.has(name) || (await store.transformationByName(ctx.workspaceId, name))) name = `${tr.name} (${tr.id})`;
    names.add(name);
    ops.push(...(await planTransformationCreate(ctx, { name, code: tr.code }, true, { libraries, externalId: tr.id, versionExternalId: tr.versionId })).ops);
    summary.transformations.created.push(name);
  }
  if (ops.length) await commit(ctx, ops);
  return summary;
}

/** The summary as the command prints it. */
export function formatImportSummary(file: string, s: ImportSummary): string {
  const line = (label: string, names: string[]) => (names.length ? `  ${label}: ${names.join(", ")}\n` : "");
  const l = s.libraries;
  const t = s.transformations;
  const body =
    line("libraries created", l.created) +
    line("libraries updated (new version)", l.updated) +
    line("libraries unchanged", l.unchanged) +
    line("transformations whose code was missing, now supplied (their destinations receive again)", t.supplied) +
    line("transformations created", t.created) +
    line("transformations with a new version", t.versioned) +
    line("transformations unchanged (the version has code already)", t.unchanged);
  return `${file}: imported\n${body || "  nothing to import\n"}`;
}
