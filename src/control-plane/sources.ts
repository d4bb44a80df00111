/** Sources: where events come from, each with its write key. */
import type { RudderSourceDefinition } from "../../db/schema";
import { AppError, badRequest, notFound } from "../lib/errors";
import { SOURCE_MAPPINGS, findSourceMapping, webhookDefinition } from "../sources/registry";
import { type SampleRun, mapSample } from "../sources/sample";
import type { SamplePayload } from "../sources/types";
import type { AuthContext, Scoped, ScopedContext } from "./context";
import { newId, newWriteKey } from "../lib/ids";
import { setOwn } from "../lib/safe-keys";
import type { SourceCreate, SourceUpdate } from "./schemas";
import { type ControlPlaneWrite, type SourceChanges, type SourceRow, writeKeyTaken } from "./store";
import { commit } from "./config-store";

/**
 * rudder-server takes events only from event-stream sources (no category) and webhooks; cloud,
 * warehouse and singer sources are pulled by RudderStack's own services, which Sluice does not have.
 */
export function isPulledKind(def: Pick<RudderSourceDefinition, "category"> | undefined): boolean {
  const category = def?.category?.toLowerCase() ?? "";
  return category !== "" && category !== "webhook";
}

/**
 * What the API shows of a config key whose name ends in Token or Secret (Facebook Lead Ads'
 * `pageAccessToken` and `verifyToken`): the value is never answered. A PATCH that sends the mask
 * back keeps the saved value, so a config read, edited and sent whole loses no secret.
 */
export const SECRET_MASK = "********";
const isSecretConfigKey = (key: string) => /(token|secret)$/i.test(key);

function maskedConfig(config: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) setOwn(out, k, isSecretConfigKey(k) && v !== null && v !== undefined && v !== "" ? SECRET_MASK : v);
  return out;
}

/** The config an update sends, with the saved value wherever it sent a secret's mask back. */
function unmaskedConfig(input: Record<string, unknown>, saved: Record<string, unknown> | null | undefined): Record<string, unknown> {
  if (!saved || !Object.entries(input).some(([k, v]) => v === SECRET_MASK && isSecretConfigKey(k))) return input;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input)) setOwn(out, k, v === SECRET_MASK && isSecretConfigKey(k) && Object.hasOwn(saved, k) ? saved[k] : v);
  return out;
}

function present(row: SourceRow, destinationIds: string[]) {
  const def = row.rudderDefinition;
  return {
    id: row.id,
    name: row.name,
    writeKey: row.writeKey,
    enabled: row.enabled,
    settings: row.settings ?? {},
    unsupported: isPulledKind(def),
    sourceDefinition: def ? { name: def.name, category: def.category ?? null, type: def.type ?? null } : null,
    config: maskedConfig(row.config ?? {}),
    createdAt: new Date(row.createdAt).toISOString(),
    destinationIds,
  };
}

async function presentOne(ctx: ScopedContext, row: SourceRow) {
  return present(row, (await ctx.controlPlane.connectionsOfSource(row.id)).map((c) => c.destinationId));
}

export async function findSourceRow(ctx: Scoped<AuthContext>, id: string): Promise<SourceRow> {
  const row = await ctx.controlPlane.source(ctx.workspaceId, id);
  if (!row) throw notFound(`source '${id}' not found`);
  return row;
}

export async function listSources(ctx: ScopedContext) {
  const [rows, links] = await Promise.all([ctx.controlPlane.sources(ctx.workspaceId), ctx.controlPlane.connections(ctx.workspaceId)]);
  const bySource = new Map<string, string[]>();
  for (const c of links) {
    const ids = bySource.get(c.sourceId);
    if (ids) ids.push(c.destinationId);
    else bySource.set(c.sourceId, [c.destinationId]);
  }
  return rows.map((r) => present(r, bySource.get(r.id) ?? []));
}

export async function getSource(ctx: ScopedContext, id: string) {
  return presentOne(ctx, await findSourceRow(ctx, id));
}

/** Every webhook source type, as GET /source-types lists them. */
export function listSourceTypes() {
  return [...SOURCE_MAPPINGS]
    .sort((a, b) => a.displayName.localeCompare(b.displayName))
    .map((m) => ({ name: m.name, displayName: m.displayName, category: "webhook" as const, setup: m.setup, sample: m.sample, takesGet: !!m.takesGet }));
}

/** A webhook source's mapping run on its type's sample, or on the payload given; nothing is stored. */
export async function sampleSource(ctx: ScopedContext, id: string, payload?: SamplePayload): Promise<Omit<SampleRun, "request"> & { request: Record<string, unknown> }> {
  const row = await findSourceRow(ctx, id);
  const mapping = findSourceMapping(row.rudderDefinition?.category === "webhook" ? row.rudderDefinition.name : undefined);
  if (!mapping) throw badRequest(`source '${id}' is not a webhook source of a type Sluice maps; only those take samples`);
  const run = await mapSample(mapping, { id: row.id, name: row.name, workspaceId: row.workspaceId, writeKey: row.writeKey, config: row.config ?? {} }, payload);
  const { json: _, ...request } = run.request;
  return { ...run, request };
}

/**
 * Where the checks look for a clashing name or write key: the store, or (the workspace file)
 * the store as the file's earlier entries will have left it.
 */
export interface SourceLookup {
  byName(name: string): Promise<SourceRow | undefined>;
  byWriteKey(writeKey: string): Promise<SourceRow | undefined>;
}

function storeLookup(ctx: ScopedContext): SourceLookup {
  return { byName: (name) => ctx.controlPlane.sourceByName(ctx.workspaceId, name), byWriteKey: (key) => ctx.controlPlane.sourceByWriteKey(key) };
}

async function assertWriteKeyFree(lookup: SourceLookup, writeKey: string, exceptId?: string) {
  const other = await lookup.byWriteKey(writeKey);
  if (other && other.id !== exceptId) throw writeKeyTaken();
}

async function assertNameFree(lookup: SourceLookup, name: string, exceptId?: string) {
  const other = await lookup.byName(name);
  if (other && other.id !== exceptId) throw new AppError("CONFLICT", `name: a source named '${name}' already exists`);
}

/**
 * What a workspace file brings to a create or an update: a RudderStack file's sourceDefinition,
 * kept with the row (Sluice's own file and the API bring none, and leave a kept one as it is).
 */
export interface SourceFromWorkspaceFile {
  rudderDefinition?: RudderSourceDefinition;
  /** The file's dgSourceTrackingPlanConfig; null: the file names none (cleared). */
  trackingPlanConfig?: Record<string, unknown> | null;
}

/** The stored definition of a webhook source type the API names; 400 for a type Sluice does not map. */
function webhookDefinitionOf(type: string): RudderSourceDefinition {
  const mapping = findSourceMapping(type);
  if (!mapping) throw badRequest(`type: '${type}' is not a webhook source type Sluice maps (GET /source-types lists them)`);
  return webhookDefinition(mapping);
}

/** The row a create writes, after the checks a create makes. */
export async function planSourceCreate(ctx: ScopedContext, input: SourceCreate, lookup = storeLookup(ctx), fromFile?: SourceFromWorkspaceFile): Promise<SourceRow> {
  await assertNameFree(lookup, input.name);
  const writeKey = input.writeKey ?? newWriteKey();
  await assertWriteKeyFree(lookup, writeKey);
  const now = ctx.now();
  const row: SourceRow = { id: newId("src"), workspaceId: ctx.workspaceId, name: input.name, writeKey, enabled: input.enabled ?? true, settings: input.settings ?? {}, createdAt: now, updatedAt: now };
  if (input.config) row.config = input.config;
  if (input.type !== undefined) row.rudderDefinition = webhookDefinitionOf(input.type);
  if (fromFile?.rudderDefinition) row.rudderDefinition = fromFile.rudderDefinition;
  if (fromFile?.trackingPlanConfig) row.trackingPlanConfig = fromFile.trackingPlanConfig;
  return row;
}

/** The row an update leaves, after the checks an update makes. */
export async function planSourceUpdate(ctx: ScopedContext, current: SourceRow, input: SourceUpdate, lookup = storeLookup(ctx), fromFile?: SourceFromWorkspaceFile): Promise<SourceRow> {
  if (input.name !== undefined) await assertNameFree(lookup, input.name, current.id);
  if (input.writeKey !== undefined) await assertWriteKeyFree(lookup, input.writeKey, current.id);
  const rudderDefinition = fromFile?.rudderDefinition ?? current.rudderDefinition;
  return {
    ...current,
    name: input.name ?? current.name,
    writeKey: input.writeKey ?? current.writeKey,
    enabled: input.enabled ?? current.enabled,
    settings: input.settings ? { ...current.settings, ...input.settings } : current.settings,
    // Replaced whole, as a destination's config is: the caller sends what the mapping should read.
    config: (input.config ? unmaskedConfig(input.config, current.config) : current.config) ?? null,
    updatedAt: ctx.now(),
    ...(rudderDefinition ? { rudderDefinition } : {}),
    ...(fromFile && "trackingPlanConfig" in fromFile ? { trackingPlanConfig: fromFile.trackingPlanConfig ?? null } : {}),
  };
}

export function sourceUpdateOp(row: SourceRow): ControlPlaneWrite {
  const set: SourceChanges = { name: row.name, writeKey: row.writeKey, enabled: row.enabled, settings: row.settings, config: row.config ?? null, updatedAt: row.updatedAt };
  // Never cleared: no API call changes what kind of source it is.
  if (row.rudderDefinition) set.rudderDefinition = row.rudderDefinition;
  if (row.trackingPlanConfig !== undefined) set.trackingPlanConfig = row.trackingPlanConfig;
  return { op: "updateSource", id: row.id, set };
}

export async function createSource(ctx: ScopedContext, input: SourceCreate) {
  const row = await planSourceCreate(ctx, input);
  await commit(ctx, [{ op: "insertSource", row }]);
  return present(row, []);
}

export async function updateSource(ctx: ScopedContext, id: string, input: SourceUpdate) {
  const row = await planSourceUpdate(ctx, await findSourceRow(ctx, id), input);
  const { changes } = await commit(ctx, [sourceUpdateOp(row)]);
  // Deleted between the read and the write.
  if (changes[0] === 0) throw notFound(`source '${id}' not found`);
  return presentOne(ctx, row);
}

export async function deleteSource(ctx: ScopedContext, id: string) {
  await findSourceRow(ctx, id);
  await commit(ctx, [{ op: "deleteSource", id }]);
}
