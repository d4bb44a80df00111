/**
 * The workspace configuration as the hot paths need it, in memory: sources by write key for
 * intake, and a routing snapshot (which destinations each source feeds) for delivery. Both are
 * synchronous reads, because they sit on intake's and the router's paths.
 *
 * Two variants behind one interface:
 * - `SqliteConfigStore` (one process): write-key lookups through an LRU in front of SQLite, the
 *   snapshot rebuilt after a change. Every change goes through this process, so invalidating
 *   on write keeps the caches exact.
 * - `ClusterConfigStore` (cluster mode, design §3.4 of src/cluster/README.md): other instances
 *   change the config too, so the whole routing set is held in memory and reloaded whenever the
 *   'config' epoch moves (this instance's writes and, through the epoch watch, everyone's).
 *   Misses on write keys never reach the database: a guessed key costs nothing.
 */
import type { Statement } from "bun:sqlite";
import { LRUCache } from "lru-cache";
import type { Db } from "../../db";
import type { SourceSettings } from "../../db/schema";
import type { EpochWatch } from "../cluster/bus";
import { findDefinition } from "../destinations/registry";
import type { AnyDestinationDefinition } from "../destinations/types";
import type { ControlPlaneStore, ControlPlaneWrite, RoutingAttachment, RoutingRows, WriteResult } from "./store";

export interface SourceRuntime {
  id: string;
  workspaceId: string;
  name: string;
  enabled: boolean;
  settings: SourceSettings;
  /**
   * The type a RudderStack workspace file gave the source's kind (sourceDefinition.type: `web`,
   * `android`, …), as given: rudder-server's hybrid-mode filter is keyed by it. Absent for
   * sources made through the API or Sluice's own file.
   */
  definitionType?: string;
  /** RudderStack's source-definition name (`Shopify`, `webhook`), when the source has a kind: a webhook source's mapping is chosen by it. */
  definitionName?: string;
  /** `webhook` for webhook sources: only their write keys are taken at /v1/webhook, as rudder-server takes them. */
  category?: string;
  /** The source's own config (RudderStack's `source.config`), as its webhook mapping reads it. */
  config?: Record<string, unknown>;
  /** RudderStack's dgSourceTrackingPlanConfig, as stored: the processor validates the source's events against its plan. */
  trackingPlanConfig?: Record<string, unknown>;
}

export interface DestinationRuntime {
  id: string;
  workspaceId: string;
  name: string;
  type: string;
  enabled: boolean;
  config: Record<string, unknown>;
  definition: AnyDestinationDefinition | undefined;
  transformation?: TransformationRuntime;
  /**
   * What a RudderStack workspace file said of this destination's definition (its
   * `destinationDefinition`): its name, display name and config (supportedMessageTypes,
   * supportedConnectionModes, hybridModeCloudEventsFilter, ...). rudder-server routes by these;
   * absent for destinations made through Sluice's API, which route by the built-in definition.
   */
  rudderDefinition?: { name: string; displayName?: string; config?: Record<string, unknown> };
}

export interface TransformationRuntime {
  id: string;
  versionId: string;
  code: string;
  /** The library code the version pinned, by import name: handed to the sandbox with the code. */
  libraries?: Record<string, string>;
  /**
   * Why the destination is held: the version's code (or a library it pinned) is not here, e.g.
   * a RudderStack workspace file named a transformation whose code stayed in RudderStack. The
   * router holds the queue as for a disabled destination: nothing goes out untransformed.
   */
  held?: string;
}

export interface RoutingSnapshot {
  version: number;
  sources: Map<string, SourceRuntime>;
  destinations: Map<string, DestinationRuntime>;
  /** sourceId → destinations connected to it (enabled or not). */
  bySource: Map<string, DestinationRuntime[]>;
}

export interface ConfigStore {
  /** The source of an event call; undefined for a key no source has. */
  sourceByWriteKey(writeKey: string): SourceRuntime | undefined;
  snapshot(): RoutingSnapshot;
  /**
   * After a control-plane write (the store's answer to it): resolves once this instance's caches
   * show the write, so the next request here sees it.
   */
  written(result: WriteResult): void | Promise<void>;
  /** Runs after each change of the snapshot. */
  onChange(listener: () => void): () => void;
}

/** The columns of the rows routing reads; both variants feed buildSnapshot with them. */
type RoutingInput = {
  sources: Array<Pick<RoutingRows["sources"][number], "id" | "workspaceId" | "name" | "enabled" | "settings" | "rudderDefinition" | "config" | "trackingPlanConfig">>;
  destinations: Array<Pick<RoutingRows["destinations"][number], "id" | "workspaceId" | "name" | "type" | "enabled" | "config" | "rudderDefinition">>;
  connections: Array<Pick<RoutingRows["connections"][number], "sourceId" | "destinationId">>;
  attachments: RoutingRows["attachments"];
  libraryVersions: RoutingRows["libraryVersions"];
};

function sourceRuntime(r: RoutingInput["sources"][number]): SourceRuntime {
  const out: SourceRuntime = { id: r.id, workspaceId: r.workspaceId, name: r.name, enabled: !!r.enabled, settings: r.settings ?? {}, config: r.config ?? {} };
  const def = r.rudderDefinition;
  if (typeof def?.type === "string" && def.type !== "") out.definitionType = def.type;
  if (typeof def?.name === "string" && def.name !== "") out.definitionName = def.name;
  if (typeof def?.category === "string" && def.category !== "") out.category = def.category;
  if (r.trackingPlanConfig) out.trackingPlanConfig = r.trackingPlanConfig;
  return out;
}

/** A sources row as SQLite hands it over (JSON columns as text). */
function sourceFromSqlite(r: any): RoutingInput["sources"][number] {
  return { ...r, settings: JSON.parse(r.settings || "{}"), rudderDefinition: r.rudderDefinition ? JSON.parse(r.rudderDefinition) : undefined, config: r.config ? JSON.parse(r.config) : null, trackingPlanConfig: r.trackingPlanConfig ? JSON.parse(r.trackingPlanConfig) : null };
}

function buildSnapshot(rows: RoutingInput, version: number): RoutingSnapshot {
  const sources = new Map<string, SourceRuntime>();
  for (const r of rows.sources) sources.set(r.id, sourceRuntime(r));
  const libraryCode = new Map(rows.libraryVersions.map((v) => [v.id, v.code]));
  const transformationByDest = new Map<string, TransformationRuntime>();
  for (const a of rows.attachments) transformationByDest.set(a.destinationId, transformationRuntime(a, libraryCode));
  const destinations = new Map<string, DestinationRuntime>();
  for (const r of rows.destinations) {
    destinations.set(r.id, {
      id: r.id,
      workspaceId: r.workspaceId,
      name: r.name,
      type: r.type,
      enabled: !!r.enabled,
      config: r.config,
      // Looked up at every rebuild: a kind a later version adds serves the rows kept for it.
      definition: findDefinition(r.type),
      transformation: transformationByDest.get(r.id),
      ...(r.rudderDefinition ? { rudderDefinition: r.rudderDefinition } : {}),
    });
  }
  const bySource = new Map<string, DestinationRuntime[]>();
  for (const r of rows.connections) {
    const d = destinations.get(r.destinationId);
    if (!d) continue;
    let list = bySource.get(r.sourceId);
    if (!list) bySource.set(r.sourceId, (list = []));
    list.push(d);
  }
  return { version, sources, destinations, bySource };
}

function transformationRuntime(a: RoutingAttachment, libraryCode: Map<string, string>): TransformationRuntime {
  const out: TransformationRuntime = { id: a.transformationId, versionId: a.versionId, code: a.code ?? "" };
  if (a.code === null) out.held = `transformation code missing: versionId ${a.externalId ?? a.versionId}`;
  const pinned = Object.entries(a.libraries ?? {});
  if (pinned.length) {
    out.libraries = {};
    for (const [importName, versionId] of pinned) {
      const code = libraryCode.get(versionId);
      if (code === undefined) out.held ??= `library missing: '${importName}' (version ${versionId}) of transformation version ${a.externalId ?? a.versionId}`;
      else out.libraries[importName] = code;
    }
  }
  return out;
}

const MISSING = Symbol("missing");

/** How often a SQLite server looks whether another process changed the control plane (sluice import-transformations). */
const EXTERNAL_WRITE_POLL_MS = 1000;

export class SqliteConfigStore implements ConfigStore {
  private byWriteKey = new LRUCache<string, SourceRuntime | typeof MISSING>({ max: 50_000 });
  private lookupStmt: Statement;
  private snapshotCache?: RoutingSnapshot;
  private version = 0;
  private listeners = new Set<() => void>();
  private epochStmt: Statement;
  private seenEpoch: number;
  private poll?: ReturnType<typeof setInterval>;

  constructor(private db: Db) {
    this.lookupStmt = db.$client.prepare(
      "SELECT id, workspace_id AS workspaceId, name, enabled, settings, rudder_definition AS rudderDefinition, config, tracking_plan_config AS trackingPlanConfig FROM sources WHERE write_key = ?",
    );
    this.epochStmt = db.$client.prepare("SELECT epoch FROM config_epoch WHERE id = 1");
    this.seenEpoch = this.readEpoch();
  }

  private readEpoch(): number {
    return (this.epochStmt.get() as { epoch: number } | null)?.epoch ?? 0;
  }

  /** Stops watching for other processes' writes, before the database closes: a tick after it would reload from a closed file. */
  close(): void {
    clearInterval(this.poll);
    this.listeners.clear();
  }

  /**
   * Another process may write the same file (\`sluice import-transformations\` supplying code
   * while the server runs): every control-plane write bumps config_epoch, and a server whose
   * config someone listens to looks at it each second. Started by the first listener (the
   * router), so tools that only read never poll.
   */
  private watchExternalWrites() {
    if (this.poll) return;
    this.poll = setInterval(() => {
      let epoch: number;
      try {
        epoch = this.readEpoch();
      } catch {
        // The database was closed (shutdown, a test's end): nothing more to watch.
        clearInterval(this.poll);
        return;
      }
      if (epoch !== this.seenEpoch) this.written();
    }, EXTERNAL_WRITE_POLL_MS);
    this.poll.unref?.();
  }

  sourceByWriteKey(writeKey: string): SourceRuntime | undefined {
    const hit = this.byWriteKey.get(writeKey);
    if (hit !== undefined) return hit === MISSING ? undefined : hit;
    const row = this.lookupStmt.get(writeKey) as any;
    const value: SourceRuntime | typeof MISSING = row ? sourceRuntime(sourceFromSqlite(row)) : MISSING;
    this.byWriteKey.set(writeKey, value);
    return value === MISSING ? undefined : value;
  }

  /** Every change goes through this process: dropping the caches keeps them exact. */
  written(): void {
    this.seenEpoch = this.readEpoch();
    this.byWriteKey.clear();
    this.snapshotCache = undefined;
    this.version++;
    for (const l of this.listeners) l();
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    this.watchExternalWrites();
    return () => this.listeners.delete(listener);
  }

  snapshot(): RoutingSnapshot {
    if (this.snapshotCache) return this.snapshotCache;
    const c = this.db.$client;
    const json = <T>(text: string | null): T => JSON.parse(text || "{}");
    const attachments = (
      c
        .query(
          `SELECT dt.destination_id AS destinationId, t.id AS transformationId, t.version_id AS versionId, v.code, v.external_id AS externalId, v.libraries
             FROM destination_transformations dt
             JOIN transformations t ON t.id = dt.transformation_id
             JOIN transformation_versions v ON v.id = t.version_id`,
        )
        .all() as any[]
    ).map((a): RoutingAttachment => ({ ...a, libraries: a.libraries ? JSON.parse(a.libraries) : null }));
    const pinned = [...new Set(attachments.flatMap((a) => Object.values(a.libraries ?? {})))];
    this.snapshotCache = buildSnapshot(
      {
        sources: (c.query("SELECT id, workspace_id AS workspaceId, name, enabled, settings, rudder_definition AS rudderDefinition, config, tracking_plan_config AS trackingPlanConfig FROM sources").all() as any[]).map(sourceFromSqlite),
        destinations: (c.query("SELECT id, workspace_id AS workspaceId, name, type, enabled, config, rudder_definition AS rudderDefinition FROM destinations").all() as any[]).map((r) => ({
          ...r,
          config: json<Record<string, unknown>>(r.config),
          rudderDefinition: r.rudderDefinition ? JSON.parse(r.rudderDefinition) : undefined,
        })),
        connections: c.query("SELECT source_id AS sourceId, destination_id AS destinationId FROM connections ORDER BY created_at").all() as any[],
        attachments,
        libraryVersions: pinned.length
          ? (c.query(`SELECT id, code FROM library_versions WHERE id IN (${pinned.map(() => "?").join(", ")})`).all(...pinned) as Array<{ id: string; code: string }>)
          : [],
      },
      this.version,
    );
    return this.snapshotCache;
  }
}

/**
 * Cluster mode: the whole routing set in memory, reloaded by the epoch watch whenever the
 * 'config' epoch moves. Register it before the watch starts: the watch's start runs the first
 * load, and serving before that would answer 401 to every write key.
 */
export class ClusterConfigStore implements ConfigStore {
  private current?: { snapshot: RoutingSnapshot; byWriteKey: Map<string, SourceRuntime> };
  private version = 0;
  private listeners = new Set<() => void>();

  constructor(
    private readonly store: ControlPlaneStore,
    private readonly watch: EpochWatch,
  ) {
    watch.onChange("config", () => this.reload());
  }

  sourceByWriteKey(writeKey: string): SourceRuntime | undefined {
    return this.loaded().byWriteKey.get(writeKey);
  }

  snapshot(): RoutingSnapshot {
    return this.loaded().snapshot;
  }

  /** The write bumped the epoch in its transaction; wait until this instance has reloaded at it. */
  async written(result: WriteResult): Promise<void> {
    if (result.epoch !== undefined) await this.watch.reach("config", result.epoch);
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Run by the epoch watch (never two at once), after the epoch it reloads for was committed. */
  private async reload(): Promise<void> {
    const rows = await this.store.routing();
    const snapshot = buildSnapshot(rows, ++this.version);
    const byWriteKey = new Map<string, SourceRuntime>();
    for (const r of rows.sources) byWriteKey.set(r.writeKey, snapshot.sources.get(r.id)!);
    this.current = { snapshot, byWriteKey };
    for (const l of this.listeners) l();
  }

  private loaded() {
    if (!this.current) throw new Error("the cluster config is read before its first load (start the epoch watch first)");
    return this.current;
  }
}

/**
 * A service's write: applied in one transaction, then awaited until this instance's config
 * caches show it, so the answer and the next request here see the change. (Here, not in
 * store.ts: the store interface knows nothing of the caches above it.)
 */
export async function commit(ctx: { controlPlane: ControlPlaneStore; config: Pick<ConfigStore, "written"> }, ops: ControlPlaneWrite[]): Promise<WriteResult> {
  const result = await ctx.controlPlane.write(ops);
  await ctx.config.written(result);
  return result;
}
