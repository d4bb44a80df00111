/**
 * Config as code: a workspace file applied at every start, idempotently, keyed by
 * name. Accepts Sluice's own YAML/JSON shape and RudderStack's workspaceConfig.json,
 * so a self-hoster migrates by pointing --config at the file they already have.
 * What the file names it owns (fields, connections, attached transformation);
 * what it does not name is left as the API made it.
 */
import { putTrackingPlan } from "../tracking-plans/service";
import { t } from "elysia";
import { readdirSync } from "node:fs";
import { dirname, extname, join } from "node:path";
import type { ScopedContext } from "./context";
import { AppError } from "../lib/errors";
import { firstError } from "../lib/schema";
import type { RudderDefinition, RudderSourceDefinition } from "../../db/schema";
import { findDefinition } from "../destinations/registry";
import { connectionModeOf, planDestinationCreate, planDestinationUpdate, validateDestinationConfig } from "./destinations";
import { type SourceLookup, isPulledKind, planSourceCreate, planSourceUpdate, sourceUpdateOp } from "./sources";
import type { ControlPlaneWrite, DestinationRow, SourceRow, TransformationRow } from "./store";
import { commit } from "./config-store";
import { pinAndCheck, planTransformationCreate, planTransformationUpdate } from "./transformations";

export const WorkspaceFile = t.Object(
  {
    sources: t.Optional(
      t.Array(
        t.Object(
          {
            name: t.String({ minLength: 1 }),
            writeKey: t.Optional(t.String({ minLength: 8 })),
            enabled: t.Optional(t.Boolean()),
            settings: t.Optional(
              t.Object(
                { lenientValidation: t.Optional(t.Boolean()), catalogExamples: t.Optional(t.Boolean()), catalogPersonalExamples: t.Optional(t.Boolean()) },
                { additionalProperties: false },
              ),
            ),
            type: t.Optional(t.String({ minLength: 1, description: "A webhook source type (`Shopify`, `Auth0`, …), as the API's." })),
            config: t.Optional(t.Record(t.String(), t.Unknown())),
            dgSourceTrackingPlanConfig: t.Optional(t.Record(t.String(), t.Unknown(), { description: "The source's tracking plan and its handling, as RudderStack's." })),
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
    trackingPlans: t.Optional(t.Array(t.Record(t.String(), t.Unknown()), { description: "Tracking plans as RudderStack exports them (POST /v2/tracking-plans takes the same)." })),
  },
  { additionalProperties: false },
);
export type WorkspaceFile = typeof WorkspaceFile.static;

export class WorkspaceFileError extends Error {}

/** A source as Sluice imports it; `sourceDefinition` is what a RudderStack file said of its kind (absent for Sluice's own file). */
export type FileSource = NonNullable<WorkspaceFile["sources"]>[number] & { sourceDefinition?: RudderSourceDefinition };

/** A destination as Sluice imports it; the RudderStack parts are absent for Sluice's own file. */
export type FileDestination = NonNullable<WorkspaceFile["destinations"]>[number] & {
  rudderDefinition?: RudderDefinition;
  /** The transformations RudderStack ran for it: their code stays in RudderStack's control plane unless the file carries it. */
  transformationRefs?: Array<{ versionId: string; id?: string; code?: string }>;
};

/** A workspace file of either shape, normalized. */
export interface Workspace {
  format: "sluice" | "rudderstack";
  sources: FileSource[];
  destinations: FileDestination[];
  transformations: NonNullable<WorkspaceFile["transformations"]>;
  /** Tracking plans as RudderStack exports them: applied before the sources that name them. */
  trackingPlans: Array<Record<string, unknown>>;
}

/** RudderStack's workspaceConfig.json nests destinations inside sources; Sluice's file lists them side by side. */
function isRudderStackConfig(doc: any): boolean {
  return Array.isArray(doc?.sources) && doc.sources.some((s: any) => Array.isArray(s?.destinations) || s?.sourceDefinition);
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

function rudderDefinitionOf(def: any): RudderDefinition {
  const out: RudderDefinition = { name: def.name };
  if (typeof def.displayName === "string") out.displayName = def.displayName;
  if (isObject(def.config)) out.config = def.config;
  return out;
}

function sourceDefinitionOf(def: Record<string, unknown>): RudderSourceDefinition {
  const out: RudderSourceDefinition = {
    name: typeof def.name === "string" ? def.name : "",
    category: typeof def.category === "string" && def.category !== "" ? def.category : null,
    type: typeof def.type === "string" && def.type !== "" ? def.type : null,
  };
  if (typeof def.displayName === "string") out.displayName = def.displayName;
  return out;
}

function transformationRefsOf(list: unknown): FileDestination["transformationRefs"] {
  if (!Array.isArray(list)) return undefined;
  const refs = list
    .filter((x): x is Record<string, unknown> => isObject(x) && typeof x.versionId === "string" && x.versionId !== "")
    .map((x) => ({ versionId: x.versionId as string, ...(typeof x.id === "string" ? { id: x.id } : {}), ...(typeof x.code === "string" && x.code ? { code: x.code } : {}) }));
  return refs.length ? refs : undefined;
}

function fromRudderStack(doc: any, file: string): Workspace {
  const out: Workspace = { format: "rudderstack", sources: [], destinations: [], transformations: [], trackingPlans: Array.isArray(doc.trackingPlans) ? doc.trackingPlans.filter(isObject) : [] };
  const destByKey = new Map<string, FileDestination>();
  doc.sources.forEach((s: any, i: number) => {
    const where = `sources[${i}]`;
    if (typeof s?.name !== "string" || !s.name) throw new WorkspaceFileError(`${file}: ${where}.name: is required`);
    if (typeof s.writeKey !== "string" || !s.writeKey) throw new WorkspaceFileError(`${file}: ${where}.writeKey: is required`);
    const source: FileSource = { name: s.name, writeKey: s.writeKey, enabled: s.enabled !== false };
    if (isObject(s.config) && Object.keys(s.config).length) source.config = s.config;
    if (isObject(s.dgSourceTrackingPlanConfig)) source.dgSourceTrackingPlanConfig = s.dgSourceTrackingPlanConfig;
    if (isObject(s.sourceDefinition)) source.sourceDefinition = sourceDefinitionOf(s.sourceDefinition);
    out.sources.push(source);
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
      const config: Record<string, unknown> = isObject(d.config) ? { ...d.config } : {};
      // rudder-server's processor skips a destination whose connection is not processor-enabled:
      // the SDK sends to it from the device. Routing and /sourceConfig read the mode from here.
      if (typeof config.connectionMode !== "string" && d.isProcessorEnabled === false) config.connectionMode = "device";
      const dest: FileDestination = { name, type, config, enabled: d.enabled !== false, sources: [s.name], rudderDefinition: rudderDefinitionOf(d.destinationDefinition) };
      const refs = transformationRefsOf(d.transformations);
      if (refs) dest.transformationRefs = refs;
      destByKey.set(key, dest);
      out.destinations.push(dest);
    });
  });
  return out;
}

/** The text of a workspace file as a document: YAML for .yaml/.yml, else JSON. */
export function parseWorkspaceText(text: string, file: string): unknown {
  const ext = extname(file).toLowerCase();
  try {
    return ext === ".yaml" || ext === ".yml" ? Bun.YAML.parse(text) : JSON.parse(text);
  } catch (e) {
    throw new WorkspaceFileError(`${file}: not valid ${ext === ".yaml" || ext === ".yml" ? "YAML" : "JSON"}: ${(e as Error).message}`);
  }
}

/** Either shape as a Workspace; throws WorkspaceFileError, naming `file` and the path, for what cannot be read as one. */
export function normalizeWorkspace(doc: unknown, file: string): Workspace {
  if (!isObject(doc)) throw new WorkspaceFileError(`${file}: expected an object with sources, destinations and transformations`);
  if (isRudderStackConfig(doc)) return fromRudderStack(doc, file);
  const err = firstError(WorkspaceFile, doc);
  if (err) throw new WorkspaceFileError(`${file}: ${err}`);
  const own = doc as WorkspaceFile;
  return { format: "sluice", sources: own.sources ?? [], destinations: own.destinations ?? [], transformations: own.transformations ?? [], trackingPlans: own.trackingPlans ?? [] };
}

/** The first name a destination or transformation refers to that the file does not define. */
export function referenceProblem(ws: Workspace): string | undefined {
  const sourceNames = new Set(ws.sources.map((s) => s.name));
  const destNames = new Set(ws.destinations.map((d) => d.name));
  for (const [i, d] of ws.destinations.entries()) {
    for (const [j, s] of (d.sources ?? []).entries()) if (!sourceNames.has(s)) return `destinations[${i}].sources[${j}]: no source named '${s}' in this file`;
  }
  for (const [i, tr] of ws.transformations.entries()) {
    for (const [j, d] of (tr.destinations ?? []).entries()) if (!destNames.has(d)) return `transformations[${i}].destinations[${j}]: no destination named '${d}' in this file`;
  }
  return undefined;
}

/** Destinations of a kind this version lacks, by kind; they are kept and receive nothing. */
export function heldKinds(ws: Workspace): Map<string, string[]> {
  const held = new Map<string, string[]>();
  for (const d of ws.destinations) {
    // A device-mode destination is the SDK's to send to: Sluice needs no kind for it.
    if (findDefinition(d.type) || connectionModeOf(d.config) === "device") continue;
    const names = held.get(d.type);
    if (names) names.push(d.name);
    else held.set(d.type, [d.name]);
  }
  return held;
}

/** A source of a kind RudderStack pulls from (cloud, warehouse, singer): see isPulledKind. */
export function isPulledSource(s: FileSource): boolean {
  return isPulledKind(s.sourceDefinition);
}

/**
 * Version ids of the RudderStack transformations whose code lies beside the file, as
 * `transformations/<versionId>.js`. Listed rather than looked up by the file's ids, so no path is
 * ever built from what the file says.
 */
export function transformationFilesBeside(file: string): Set<string> {
  try {
    return new Set(readdirSync(join(dirname(file), "transformations")).filter((n) => n.endsWith(".js")).map((n) => n.slice(0, -3)));
  } catch {
    return new Set();
  }
}

export async function readWorkspaceFile(file: string): Promise<Workspace> {
  const f = Bun.file(file);
  if (!(await f.exists())) throw new WorkspaceFileError(`${file}: file not found`);
  const ws = normalizeWorkspace(parseWorkspaceText(await f.text(), file), file);
  // Cross-references and destination configs are checked before anything is written. A kind
  // this version lacks is not an error: its destinations are kept (heldKinds).
  ws.destinations.forEach((d, i) => {
    if (!findDefinition(d.type)) return;
    try {
      validateDestinationConfig(d.type, d.config, `destinations[${i}].config`);
    } catch (e) {
      throw new WorkspaceFileError(`${file}: ${(e as Error).message}`);
    }
  });
  const problem = referenceProblem(ws);
  if (problem) throw new WorkspaceFileError(`${file}: ${problem}`);
  return ws;
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
  // One line per kind, not per destination: a workspace may hold dozens of one kind.
  for (const [kind, destinations] of heldKinds(doc)) {
    ctx.log.warn("destination kind not in this version of Sluice: its destinations are kept with their config, marked unsupported, and receive nothing", { file, kind, destinations });
  }
  const pulled = new Map<string, string[]>();
  for (const s of doc.sources.filter(isPulledSource)) pulled.set(s.sourceDefinition!.name, [...(pulled.get(s.sourceDefinition!.name) ?? []), s.name]);
  for (const [kind, sources] of pulled) {
    ctx.log.warn("source kind that RudderStack pulls from (cloud or warehouse): Sluice pulls nothing; imported as a source whose write key accepts event calls, marked unsupported", { file, kind, sources });
  }
  // Code is checked in the sandbox, with the libraries it imports, before anything is planned.
  const pins = new Map<string, Record<string, string> | null>();
  for (const [i, tr] of doc.transformations.entries()) {
    try {
      pins.set(tr.name, await pinAndCheck(ctx, tr.code, `transformations[${i}].code`));
    } catch (e) {
      throw new WorkspaceFileError(`${file}: ${(e as Error).message}`);
    }
  }
  const references = await rudderStackReferences(ctx, doc, file);
  const held = [...references.values()].filter((r) => r.code === undefined);
  if (held.length) {
    ctx.log.warn("RudderStack transformation whose code is not here: its destinations are held (their events queue, nothing is delivered untransformed) until the code is supplied", {
      file,
      versionIds: held.map((r) => r.versionId),
      destinations: held.flatMap((r) => r.destinations),
    });
  }
  // Plans first: the sources below may name them. Each is stored once per version (idempotent at
  // every start); one whose schemas do not compile is kept and marked, as RudderStack meets it.
  for (const [i, plan] of doc.trackingPlans.entries()) {
    if (!ctx.trackingPlans) break;
    try {
      const stored = await putTrackingPlan(ctx, { store: ctx.trackingPlans }, plan, { keepBroken: true });
      if (stored.problems.length) ctx.log.warn("tracking plan kept with schemas that do not compile: the events they govern pass unchecked, as in RudderStack", { file, plan: stored.id, problems: stored.problems });
    } catch (e) {
      throw new WorkspaceFileError(`${file}: trackingPlans[${i}]: ${(e as Error).message}`);
    }
  }
  try {
    await commit(ctx, await planWorkspaceFile(ctx, doc, pins, references));
  } catch (e) {
    if (e instanceof AppError) throw new WorkspaceFileError(`${file}: ${e.message}`);
    throw e;
  }
  return { sources: doc.sources.length, destinations: doc.destinations.length, transformations: doc.transformations.length };
}

/** A RudderStack transformation version the file's destinations run, with its code if Sluice can read it. */
interface RudderStackReference {
  versionId: string;
  /** RudderStack's transformation id. */
  id?: string;
  code?: string;
  libraries: Record<string, string> | null;
  /** The destinations (by name) that run it. */
  destinations: string[];
}

/**
 * Each transformation version the file's destinations name, with its code from the file's own
 * entry or `transformations/<versionId>.js` beside it, checked in the sandbox with its
 * libraries. A destination runs its first one, as rudder-server's processor does.
 */
async function rudderStackReferences(ctx: ScopedContext, doc: Workspace, file: string): Promise<Map<string, RudderStackReference>> {
  const out = new Map<string, RudderStackReference>();
  const beside = doc.format === "rudderstack" ? transformationFilesBeside(file) : new Set<string>();
  for (const d of doc.destinations) {
    const [ref, ...more] = d.transformationRefs ?? [];
    if (!ref) continue;
    if (more.length) ctx.log.warn("destination names several transformations: Sluice runs the first, as rudder-server does", { file, destination: d.name, versionIds: d.transformationRefs!.map((r) => r.versionId) });
    const seen = out.get(ref.versionId);
    if (seen) {
      seen.destinations.push(d.name);
      seen.code ??= ref.code;
      continue;
    }
    out.set(ref.versionId, { versionId: ref.versionId, id: ref.id, code: ref.code, libraries: null, destinations: [d.name] });
  }
  for (const r of out.values()) {
    let where = `the transformation ${r.versionId} of ${r.destinations.join(", ")}`;
    // The name comes from listing the folder, never from the file: no path is built from what the file says.
    if (r.code === undefined && beside.has(r.versionId)) {
      where = `transformations/${r.versionId}.js`;
      r.code = await Bun.file(join(dirname(file), "transformations", `${r.versionId}.js`)).text();
    }
    if (r.code === undefined) continue;
    try {
      r.libraries = await pinAndCheck(ctx, r.code, where);
    } catch (e) {
      throw new WorkspaceFileError(`${file}: ${(e as Error).message}`);
    }
  }
  return out;
}

/**
 * The operations that make each destination run its RudderStack transformation version: found
 * by RudderStack's versionId, else a new version of the transformation with RudderStack's id,
 * else a new transformation (named after RudderStack's id). A version whose code is not here is
 * stored without code: its destinations are held. Code supplied later fills it.
 */
async function planRudderStackReferences(
  ctx: ScopedContext,
  references: Map<string, RudderStackReference>,
  destinationIds: Map<string, string>,
  planned: Set<string>,
): Promise<ControlPlaneWrite[]> {
  const store = ctx.controlPlane;
  const ops: ControlPlaneWrite[] = [];
  for (const r of references.values()) {
    const code = r.code ?? null;
    let transformationId: string;
    const version = await store.versionByExternalId(ctx.workspaceId, r.versionId);
    if (version) {
      transformationId = version.transformationId;
      if (version.code === null && code !== null) ops.push({ op: "fillTransformationVersion", id: version.id, code, libraries: r.libraries });
      const row = (await store.transformations(ctx.workspaceId)).find((t) => t.id === transformationId);
      if (row && row.versionId !== version.id) ops.push({ op: "updateTransformation", id: transformationId, set: { versionId: version.id, updatedAt: ctx.now() } });
    } else {
      const existing = r.id ? await store.transformationByExternalId(ctx.workspaceId, r.id) : undefined;
      const extras = { libraries: r.libraries, versionExternalId: r.versionId, externalId: r.id };
      let name = r.id ?? r.versionId;
      if (!existing && (planned.has(name) || (await store.transformationByName(ctx.workspaceId, name)))) name = `${name} (RudderStack ${r.versionId})`;
      const p = existing ? await planTransformationUpdate(ctx, existing, { code }, true, extras) : await planTransformationCreate(ctx, { name, code }, true, extras);
      ops.push(...p.ops);
      transformationId = p.row.id;
    }
    for (const d of r.destinations) ops.push({ op: "attachTransformation", destinationId: destinationIds.get(d)!, transformationId });
  }
  return ops;
}

/** The file's operations, keyed by name; a name the file repeats updates what its first entry planned. */
async function planWorkspaceFile(
  ctx: ScopedContext,
  doc: Workspace,
  pins: Map<string, Record<string, string> | null>,
  references: Map<string, RudderStackReference>,
): Promise<ControlPlaneWrite[]> {
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
  for (const s of doc.sources) {
    const existing = await lookup.byName(s.name);
    // The file owns the source's plan settings: a source without them has none.
    const fromFile = { rudderDefinition: s.sourceDefinition, trackingPlanConfig: s.dgSourceTrackingPlanConfig ?? null };
    const row = existing
      ? await planSourceUpdate(ctx, existing, { writeKey: s.writeKey, enabled: s.enabled ?? true, settings: s.settings, config: s.config ?? {} }, lookup, fromFile)
      : await planSourceCreate(ctx, { name: s.name, writeKey: s.writeKey, enabled: s.enabled, settings: s.settings, config: s.config, type: s.type }, lookup, fromFile);
    ops.push(existing ? sourceUpdateOp(row) : { op: "insertSource", row });
    plannedSources.set(s.name, row);
  }

  const plannedDestinations = new Map<string, DestinationRow>();
  for (const d of doc.destinations) {
    const existing = plannedDestinations.get(d.name) ?? (await store.destinationByName(ctx.workspaceId, d.name));
    const input = { type: d.type, config: d.config, enabled: d.enabled ?? true, sourceIds: (d.sources ?? []).map((n) => plannedSources.get(n)!.id) };
    // The file's source names were resolved above: no need to look the ids up.
    const fromFile = { rudderDefinition: d.rudderDefinition };
    const planned = existing ? await planDestinationUpdate(ctx, existing, input, fromFile) : await planDestinationCreate(ctx, { name: d.name, ...input }, fromFile);
    ops.push(...planned.ops);
    plannedDestinations.set(d.name, planned.row);
  }

  const plannedTransformations = new Map<string, { row: TransformationRow; code: string | null | undefined }>();
  for (const tr of doc.transformations) {
    let current = plannedTransformations.get(tr.name);
    if (!current) {
      const row = await store.transformationByName(ctx.workspaceId, tr.name);
      if (row) current = { row, code: await store.versionCode(row.versionId) };
    }
    // A new version only when the code changed.
    if (!current || current.code !== tr.code) {
      const extras = { libraries: pins.get(tr.name) ?? null };
      const planned = current ? await planTransformationUpdate(ctx, current.row, { code: tr.code }, true, extras) : await planTransformationCreate(ctx, { name: tr.name, code: tr.code }, true, extras);
      ops.push(...planned.ops);
      current = { row: planned.row, code: tr.code };
    }
    plannedTransformations.set(tr.name, current);
    for (const d of tr.destinations ?? []) ops.push({ op: "attachTransformation", destinationId: plannedDestinations.get(d)!.id, transformationId: current.row.id });
  }
  const destinationIds = new Map([...plannedDestinations].map(([name, row]) => [name, row.id]));
  ops.push(...(await planRudderStackReferences(ctx, references, destinationIds, new Set(plannedTransformations.keys()))));
  return ops;
}
