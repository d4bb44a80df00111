/**
 * Config as code: a workspace file applied at every start, idempotently, keyed by
 * name. Accepts Sluice's own YAML/JSON shape and RudderStack's workspaceConfig.json,
 * so a self-hoster migrates by pointing --config at the file they already have.
 * What the file names it owns (fields, connections, attached transformation);
 * what it does not name is left as the API made it.
 */
import { and, eq } from "drizzle-orm";
import { t } from "elysia";
import { extname } from "node:path";
import { transact } from "../../db";
import { destinations, sources } from "../../db/schema";
import type { ScopedContext } from "../lib/context";
import { AppError } from "../lib/errors";
import { firstError } from "../lib/schema";
import { createDestination, updateDestination, validateDestinationConfig } from "./destinations";
import { createSource, updateSource } from "./sources";
import { attachTransformation, checkCode, upsertTransformationByName } from "./transformations";

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

/** Applies the file inside one transaction: either all of it takes effect or none. */
export async function applyWorkspaceFile(ctx: ScopedContext, file: string): Promise<ApplySummary> {
  const doc = await readWorkspaceFile(file);
  // Code is checked in the sandbox (asynchronously) before the one transaction begins.
  for (const [i, tr] of (doc.transformations ?? []).entries()) {
    try {
      await checkCode(tr.code, `transformations[${i}].code`);
    } catch (e) {
      throw new WorkspaceFileError(`${file}: ${(e as Error).message}`);
    }
  }
  const apply = () => {
    const sourceIds = new Map<string, string>();
    for (const s of doc.sources ?? []) {
      const existing = ctx.db.select().from(sources).where(and(eq(sources.workspaceId, ctx.workspaceId), eq(sources.name, s.name))).get();
      const saved = existing
        ? updateSource(ctx, existing.id, { writeKey: s.writeKey, enabled: s.enabled ?? true, settings: s.settings })
        : createSource(ctx, { name: s.name, writeKey: s.writeKey, enabled: s.enabled, settings: s.settings });
      sourceIds.set(s.name, saved.id);
    }
    const destIds = new Map<string, string>();
    for (const d of doc.destinations ?? []) {
      const existing = ctx.db.select().from(destinations).where(and(eq(destinations.workspaceId, ctx.workspaceId), eq(destinations.name, d.name))).get();
      const input = { type: d.type, config: d.config, enabled: d.enabled ?? true, sourceIds: (d.sources ?? []).map((n) => sourceIds.get(n)!) };
      const saved = existing ? updateDestination(ctx, existing.id, input) : createDestination(ctx, { name: d.name, ...input });
      destIds.set(d.name, saved.id);
    }
    for (const tr of doc.transformations ?? []) {
      const saved = upsertTransformationByName(ctx, tr.name, tr.code);
      for (const d of tr.destinations ?? []) attachTransformation(ctx, destIds.get(d)!, saved.id);
    }
  };
  try {
    transact(ctx.db, apply);
  } catch (e) {
    if (e instanceof AppError) throw new WorkspaceFileError(`${file}: ${e.message}`);
    throw e;
  }
  return { sources: doc.sources?.length ?? 0, destinations: doc.destinations?.length ?? 0, transformations: doc.transformations?.length ?? 0 };
}
