/** Destinations: where events go, each of a kind from the destination registry. */
import type { RudderDefinition } from "../../db/schema";
import { findDefinition, listDefinitions, urlKeysOf } from "../destinations/registry";
import type { AnyDestinationDefinition } from "../destinations/types";
import { AppError, badRequest, notFound } from "../lib/errors";
import type { AuthContext, Scoped, ScopedContext } from "./context";
import { newId } from "../lib/ids";
import { firstError } from "../lib/schema";
import type { DestinationCreate, DestinationUpdate } from "./schemas";
import type { ControlPlaneWrite, DestinationChanges, DestinationRow } from "./store";
import { commit } from "./config-store";

function present(ctx: ScopedContext, row: DestinationRow, sourceIds: string[], transformationId: string | undefined) {
  return {
    id: row.id,
    name: row.name,
    type: row.type,
    enabled: row.enabled,
    config: row.config,
    // Looked up now, not stored: the version that adds the kind serves the destination as kept.
    unsupported: findDefinition(row.type) === undefined,
    sourceIds,
    transformationId: transformationId ?? null,
    // The running configuration's view: a transformation whose code never came from RudderStack.
    heldReason: ctx.config.snapshot().destinations.get(row.id)?.transformation?.held ?? null,
    createdAt: new Date(row.createdAt).toISOString(),
  };
}

async function presentOne(ctx: ScopedContext, row: DestinationRow) {
  const [links, transformationId] = await Promise.all([ctx.controlPlane.connectionsOfDestination(row.id), ctx.controlPlane.transformationIdOfDestination(row.id)]);
  return present(ctx, row, links.map((c) => c.sourceId), transformationId);
}

export async function findDestinationRow(ctx: Scoped<AuthContext>, id: string): Promise<DestinationRow> {
  const row = await ctx.controlPlane.destination(ctx.workspaceId, id);
  if (!row) throw notFound(`destination '${id}' not found`);
  return row;
}

/**
 * The scheme a URL parser would see: it drops leading and trailing control characters and
 * spaces and every tab and newline, so ` file:` and `fi\nle:` are file URLs too.
 */
function schemeOf(value: string, hostMayFollow = false): string | undefined {
  const url = value.replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, "").replace(/[\t\n\r]/g, "");
  // Where a bare host is allowed, `host:8080` is a host and port, not a scheme.
  const m = (hostMayFollow ? /^([a-z][a-z0-9+.-]*):(?!\d)/i : /^([a-z][a-z0-9+.-]*):/i).exec(url);
  return m?.[1]?.toLowerCase();
}

const isWebScheme = (scheme: string | undefined) => scheme === "http" || scheme === "https";

/**
 * Destinations are called over http or https only: any other scheme (file:, ftp:, gopher:,
 * data:) could make the server read local files or speak other protocols for whoever writes
 * the config. Empty values are left to the schema and the kind's required keys.
 */
function urlProblem(def: AnyDestinationDefinition, config: Record<string, unknown>, prefix: string): string | undefined {
  for (const key of urlKeysOf(def)) {
    const v = config[key];
    if (typeof v === "string" && v.trim() !== "" && !isWebScheme(schemeOf(v))) return `${prefix}.${key}: must be an http or https URL`;
  }
  for (const key of def.config.hostKeys ?? []) {
    const v = config[key];
    const scheme = typeof v === "string" ? schemeOf(v, true) : undefined;
    if (scheme !== undefined && !isWebScheme(scheme)) return `${prefix}.${key}: must be a host name or an http or https URL`;
  }
  return undefined;
}

/**
 * Checks the type names a known kind and the config fits its schema, calls only http(s) URLs
 * and names no path that reaches a prototype; throws a 400 naming the field.
 */
export function validateDestinationConfig(type: string, config: Record<string, unknown>, prefix = "config") {
  const def = findDefinition(type);
  if (!def) {
    throw badRequest(`type: unknown destination type '${type}' (known: ${listDefinitions().map((d) => d.name).join(", ")})`);
  }
  // A device-mode config is the SDK's, not the server's: it need not have what the server sends
  // with (GA4's apiSecret). Its URLs are still checked, so switching the mode never reaches a file: URL.
  if (connectionModeOf(config) === "device") {
    const err = urlProblem(def, config, prefix);
    if (err) throw badRequest(err);
    return;
  }
  const err = firstError(def.configSchema, config, prefix) ?? urlProblem(def, config, prefix);
  if (err) throw badRequest(err);
  const problem = def.checkConfig?.(config);
  if (problem) throw badRequest(`${prefix}.${problem.key}: ${problem.message}`);
}

export type ConnectionMode = "cloud" | "device" | "hybrid";

/**
 * How a destination is sent to, as RudderStack's config says it (`connectionMode`; an import
 * sets "device" for a connection that was not processor-enabled): cloud, the server delivers;
 * device, the SDK does (listed in /sourceConfig); hybrid, both. Cloud when unset.
 */
export function connectionModeOf(config: Record<string, unknown>): ConnectionMode {
  const mode = typeof config.connectionMode === "string" ? config.connectionMode.toLowerCase() : "";
  return mode === "device" || mode === "hybrid" ? mode : "cloud";
}

async function assertNameFree(ctx: ScopedContext, name: string, exceptId?: string) {
  const other = await ctx.controlPlane.destinationByName(ctx.workspaceId, name);
  if (other && other.id !== exceptId) throw new AppError("CONFLICT", `name: a destination named '${name}' already exists`);
}

async function assertSourcesInWorkspace(ctx: ScopedContext, sourceIds: string[]) {
  if (sourceIds.length === 0) return;
  const found = await ctx.controlPlane.existingSourceIds(ctx.workspaceId, sourceIds);
  const missing = sourceIds.find((id) => !found.has(id));
  if (missing) throw badRequest(`sourceIds: source '${missing}' not found in this workspace`);
}

export async function listDestinations(ctx: ScopedContext) {
  const [rows, links, attached] = await Promise.all([
    ctx.controlPlane.destinations(ctx.workspaceId),
    ctx.controlPlane.connections(ctx.workspaceId),
    ctx.controlPlane.attachments(ctx.workspaceId),
  ]);
  const byDestination = new Map<string, string[]>();
  for (const c of links) {
    const ids = byDestination.get(c.destinationId);
    if (ids) ids.push(c.sourceId);
    else byDestination.set(c.destinationId, [c.sourceId]);
  }
  const transformationOf = new Map(attached.map((a) => [a.destinationId, a.transformationId]));
  return rows.map((r) => present(ctx, r, byDestination.get(r.id) ?? [], transformationOf.get(r.id)));
}

export async function getDestination(ctx: ScopedContext, id: string) {
  return presentOne(ctx, await findDestinationRow(ctx, id));
}

/**
 * What a workspace file brings to a create or an update. Its sources were resolved in the same
 * plan; a kind this version lacks is kept (unsupported, it receives nothing) where the API
 * refuses it, because a RudderStack workspace names ~200 kinds and one missing must not stop
 * the rest; and a RudderStack file's destinationDefinition is kept with the row.
 */
export interface FromWorkspaceFile {
  rudderDefinition?: RudderDefinition;
}

function checkConfig(type: string, config: Record<string, unknown>, fromFile: FromWorkspaceFile | undefined) {
  if (fromFile && !findDefinition(type)) return;
  validateDestinationConfig(type, config);
}

/** A config saved through the API, as RudderStack's dashboard would have saved it (the kind's withDashboardDefaults). */
function withDashboardDefaults(type: string, config: Record<string, unknown>): Record<string, unknown> {
  const def = findDefinition(type);
  return def?.withDashboardDefaults ? def.withDashboardDefaults(config) : config;
}

/** The operations of a create, after its checks (sourceIds are ids of this workspace's sources). */
export async function planDestinationCreate(ctx: ScopedContext, input: DestinationCreate, fromFile?: FromWorkspaceFile): Promise<{ row: DestinationRow; ops: ControlPlaneWrite[] }> {
  checkConfig(input.type, input.config, fromFile);
  await assertNameFree(ctx, input.name);
  if (!fromFile) await assertSourcesInWorkspace(ctx, input.sourceIds ?? []);
  const now = ctx.now();
  const config = fromFile ? input.config : withDashboardDefaults(input.type, input.config);
  const row: DestinationRow = { id: newId("dst"), workspaceId: ctx.workspaceId, name: input.name, type: input.type, config, enabled: input.enabled ?? true, createdAt: now, updatedAt: now };
  if (fromFile?.rudderDefinition) row.rudderDefinition = fromFile.rudderDefinition;
  return { row, ops: [{ op: "insertDestination", row }, { op: "setDestinationSources", destinationId: row.id, sourceIds: input.sourceIds ?? [], at: now }] };
}

/** The operations of an update, after its checks; the first is the row's own update. */
export async function planDestinationUpdate(ctx: ScopedContext, current: DestinationRow, input: DestinationUpdate, fromFile?: FromWorkspaceFile): Promise<{ row: DestinationRow; ops: ControlPlaneWrite[] }> {
  const type = input.type ?? current.type;
  const config = input.config === undefined ? current.config : fromFile ? input.config : withDashboardDefaults(type, input.config);
  if (input.type !== undefined || input.config !== undefined) checkConfig(type, config, fromFile);
  if (input.name !== undefined) await assertNameFree(ctx, input.name, current.id);
  if (input.sourceIds && !fromFile) await assertSourcesInWorkspace(ctx, input.sourceIds);
  const now = ctx.now();
  const { rudderDefinition: kept, ...rest } = current;
  // The file's definition describes the file's kind: another kind set through the API drops it.
  const rudderDefinition = fromFile?.rudderDefinition ?? (type === current.type ? kept : undefined);
  const row: DestinationRow = { ...rest, name: input.name ?? current.name, type, config, enabled: input.enabled ?? current.enabled, updatedAt: now, ...(rudderDefinition ? { rudderDefinition } : {}) };
  const set: DestinationChanges = { name: row.name, type, config, enabled: row.enabled, updatedAt: now };
  if (rudderDefinition !== kept) set.rudderDefinition = rudderDefinition ?? null;
  const ops: ControlPlaneWrite[] = [{ op: "updateDestination", id: row.id, set }];
  if (input.sourceIds) ops.push({ op: "setDestinationSources", destinationId: row.id, sourceIds: input.sourceIds, at: now });
  return { row, ops };
}

export async function createDestination(ctx: ScopedContext, input: DestinationCreate) {
  const { row, ops } = await planDestinationCreate(ctx, input);
  await commit(ctx, ops);
  return presentOne(ctx, row);
}

export async function updateDestination(ctx: ScopedContext, id: string, input: DestinationUpdate) {
  const { row, ops } = await planDestinationUpdate(ctx, await findDestinationRow(ctx, id), input);
  const { changes } = await commit(ctx, ops);
  // Deleted between the read and the write.
  if (changes[0] === 0) throw notFound(`destination '${id}' not found`);
  return presentOne(ctx, row);
}

export async function deleteDestination(ctx: ScopedContext, id: string) {
  await findDestinationRow(ctx, id);
  await commit(ctx, [{ op: "deleteDestination", id }]);
}
