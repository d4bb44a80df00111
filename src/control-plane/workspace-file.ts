/**
 * Config as code: a workspace file applied at every start, idempotently, keyed by
 * name. Accepts Sluice's own YAML/JSON shape and RudderStack's workspaceConfig.json,
 * so a self-hoster migrates by pointing --config at the file they already have.
 * What the file names it owns (fields, connections, attached transformation);
 * what it does not name is left as the API made it.
 */
import { t } from "elysia";
import { extname } from "node:path";
import type { ScopedContext } from "../lib/context";
import { AppError } from "../lib/errors";
import { firstError } from "../lib/schema";
import { planDestinationCreate, planDestinationUpdate, validateDestinationConfig } from "./destinations";
import { type SourceLookup, planSourceCreate, planSourceUpdate, sourceUpdateOp } from "./sources";
import type { ControlPlaneWrite, DestinationRow, SourceRow, TransformationRow } from "./store";
import { commit } from "./store";
import { checkCode, planTransformationCreate, planTransformationUpdate } from "./transformations";

export const WorkspaceFile = t.Object(
  {
    sources: t.Optional(
      t.Array(
        t.Object(
          {
            name: t.String({ minLength: 1 }),
            writeKey: t.Optional(t.String({ minLength: 8 })),
            enabled: t.Optional(t.Boolean()),
            settings: t.Optional(t.Object({ lenientValidation: t.Optional(t.Boolean()) }, { additionalProperties: false })),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    destinations: t.Optional(
      t.Array(
        t.Object(
          {
            name: t.String({ minLength: 1 }),
            type: t.String({ minLength: 1 }),
            config: t.Record(t.String(), t.Unknown()),
            enabled: t.Optional(t.Boolean()),
            sources: t.Optional(t.Array(t.String())),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    transformations: t.Optional(
      t.Array(
        t.Object(
          { name: t.String({ minLength: 1 }), code: t.String({ minLength: 1 }), destinations: t.Optional(t.Array(t.String())) },
          { additionalProperties: false },
        ),
      ),
    ),
  },
  { additionalProperties: false },
);
export type WorkspaceFile = typeof WorkspaceFile.static;

export class WorkspaceFileError extends Error {}

/** RudderStack's workspaceConfig.json nests destinations inside sources; Sluice's file lists them side by side. */
function isRudderStackConfig(doc: any): boolean {
  return Array.isArray(doc?.sources) && doc.sources.some((s: any) => Array.isArray(s?.destinations) || s?.sourceDefinition);
}

function fromRudderStack(doc: any, file: string): WorkspaceFile {
  const out: Required<WorkspaceFile> = { sources: [], destinations: [], transformations: [] };
  const destByKey = new Map<string, WorkspaceFile["destinations"] extends (infer D)[] | undefined ? D : never>();
  doc.sources.forEach((s: any, i: number) => {
    const where = `sources[${i}]`;
    if (typeof s?.name !== "string" || !s.name) throw new WorkspaceFileError(`${file}: ${where}.name: is required`);
    if (typeof s.writeKey !== "string" || !s.writeKey) throw new WorkspaceFileError(`${file}: ${where}.writeKey: is required`);
    out.sources.push({ name: s.name, writeKey: s.writeKey, enabled: s.enabled !== false });
    (s.destinations ?? []).forEach((d: any, j: number) => {
      const dw = `${where}.destinations[${j}]`;
      const type = d?.destinationDefinition?.name;
      if (typeof type !== "string" || !type) throw new WorkspaceFileError(`${file}: ${dw}.destinationDefinition.name: is required`);
      const name = typeof d.name === "string" && d.name ? d.name : String(d.id ?? `${type}-${j}`);
      const key = String(d.id ?? name);
      const existing = destByKey.get(key);
      if (existing) {
        existing.sources!.push(s.name);
        return;
      }
      const dest = { name, type, config: (d.config ?? {}) as Record<string, unknown>, enabled: d.enabled !== false, sources: [s.name] };
      destByKey.set(key, dest);
      out.destinations.push(dest);
    });
  });
  return out;
}

export async function readWorkspaceFile(file: string): Promise<WorkspaceFile> {
  const f = Bun.file(file);
  if (!(await f.exists())) throw new WorkspaceFileError(`${file}: file not found`);
  const text = await f.text();
  const ext = extname(file).toLowerCase();
  let doc: unknown;
  try {
    doc = ext === ".yaml" || ext === ".yml" ? Bun.YAML.parse(text) : JSON.parse(text);
  } catch (e) {
    throw new WorkspaceFileError(`${file}: not valid ${ext === ".json" ? "JSON" : "YAML"}: ${(e as Error).message}`);
  }
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) throw new WorkspaceFileError(`${file}: expected an object with sources, destinations and transformations`);
  const normalized = isRudderStackConfig(doc) ? fromRudderStack(doc, file) : (doc as WorkspaceFile);
  if (!isRudderStackConfig(doc)) {
    const err = firstError(WorkspaceFile, normalized);
    if (err) throw new WorkspaceFileError(`${file}: ${err}`);
  }
  // Cross-references and destination configs are checked before anything is written.
  const sourceNames = new Set((normalized.sources ?? []).map((s) => s.name));
  const destNames = new Set((normalized.destinations ?? []).map((d) => d.name));
  (normalized.destinations ?? []).forEach((d, i) => {
    try {
      validateDestinationConfig(d.type, d.config, `destinations[${i}].config`);
    } catch (e) {
      const msg = (e as Error).message.replace(/^type:/, `destinations[${i}].type:`);
      throw new WorkspaceFileError(`${file}: ${msg}`);
    }
    (d.sources ?? []).forEach((s, j) => {
      if (!sourceNames.has(s)) throw new WorkspaceFileError(`${file}: destinations[${i}].sources[${j}]: no source named '${s}' in this file`);
    });
  });
  (normalized.transformations ?? []).forEach((tr, i) =>
    (tr.destinations ?? []).forEach((d, j) => {
      if (!destNames.has(d)) throw new WorkspaceFileError(`${file}: transformations[${i}].destinations[${j}]: no destination named '${d}' in this file`);
    }),
  );
  return normalized;
}

export interface ApplySummary {
  sources: number;
  destinations: number;
  transformations: number;
}

/**
 * Applies the file as one write: either all of it takes effect or none. Everything that reads
 * (is there a source of this name? is this write key taken?) runs first and sees the store as
 * the file's earlier entries will have left it; the store then applies the planned operations in
 * one transaction (a transaction cannot span the reads' awaits: src/control-plane/store.ts).
 */
export async function applyWorkspaceFile(ctx: ScopedContext, file: string): Promise<ApplySummary> {
  const doc = await readWorkspaceFile(file);
  // Code is checked in the sandbox before anything is planned.
  for (const [i, tr] of (doc.transformations ?? []).entries()) {
    try {
      await checkCode(tr.code, `transformations[${i}].code`);
    } catch (e) {
      throw new WorkspaceFileError(`${file}: ${(e as Error).message}`);
    }
  }
  try {
    await commit(ctx, await planWorkspaceFile(ctx, doc));
  } catch (e) {
    if (e instanceof AppError) throw new WorkspaceFileError(`${file}: ${e.message}`);
    throw e;
  }
  return { sources: doc.sources?.length ?? 0, destinations: doc.destinations?.length ?? 0, transformations: doc.transformations?.length ?? 0 };
}

/** The file's operations, keyed by name; a name the file repeats updates what its first entry planned. */
async function planWorkspaceFile(ctx: ScopedContext, doc: WorkspaceFile): Promise<ControlPlaneWrite[]> {
  const store = ctx.controlPlane;
  const ops: ControlPlaneWrite[] = [];

  const plannedSources = new Map<string, SourceRow>();
  const lookup: SourceLookup = {
    byName: async (name) => plannedSources.get(name) ?? store.sourceByName(ctx.workspaceId, name),
    byWriteKey: async (key) => {
      for (const r of plannedSources.values()) if (r.writeKey === key) return r;
      const row = await store.sourceByWriteKey(key);
      // A source the file already planned holds the key only if its plan kept it (the loop above).
      return row && ![...plannedSources.values()].some((r) => r.id === row.id) ? row : undefined;
    },
  };
  for (const s of doc.sources ?? []) {
    const existing = await lookup.byName(s.name);
    const row = existing
      ? await planSourceUpdate(ctx, existing, { writeKey: s.writeKey, enabled: s.enabled ?? true, settings: s.settings }, lookup)
      : await planSourceCreate(ctx, { name: s.name, writeKey: s.writeKey, enabled: s.enabled, settings: s.settings }, lookup);
    ops.push(existing ? sourceUpdateOp(row) : { op: "insertSource", row });
    plannedSources.set(s.name, row);
  }

  const plannedDestinations = new Map<string, DestinationRow>();
  for (const d of doc.destinations ?? []) {
    const existing = plannedDestinations.get(d.name) ?? (await store.destinationByName(ctx.workspaceId, d.name));
    const input = { type: d.type, config: d.config, enabled: d.enabled ?? true, sourceIds: (d.sources ?? []).map((n) => plannedSources.get(n)!.id) };
    // The file's source names were resolved above: no need to look the ids up.
    const planned = existing ? await planDestinationUpdate(ctx, existing, input, true) : await planDestinationCreate(ctx, { name: d.name, ...input }, true);
    ops.push(...planned.ops);
    plannedDestinations.set(d.name, planned.row);
  }

  const plannedTransformations = new Map<string, { row: TransformationRow; code: string | undefined }>();
  for (const tr of doc.transformations ?? []) {
    let current = plannedTransformations.get(tr.name);
    if (!current) {
      const row = await store.transformationByName(ctx.workspaceId, tr.name);
      if (row) current = { row, code: await store.versionCode(row.versionId) };
    }
    // A new version only when the code changed.
    if (!current || current.code !== tr.code) {
      const planned = current ? await planTransformationUpdate(ctx, current.row, { code: tr.code }, true) : await planTransformationCreate(ctx, { name: tr.name, code: tr.code }, true);
      ops.push(...planned.ops);
      current = { row: planned.row, code: tr.code };
    }
    plannedTransformations.set(tr.name, current);
    for (const d of tr.destinations ?? []) ops.push({ op: "attachTransformation", destinationId: plannedDestinations.get(d)!.id, transformationId: current.row.id });
  }
  return ops;
}
