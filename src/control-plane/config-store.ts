/**
 * The workspace configuration as the hot paths need it, in memory. Sources by write
 * key sit in an LRU in front of SQLite; routing (which destinations each source feeds)
 * is a snapshot rebuilt after any change. Every change to the control plane goes
 * through this process, so invalidating on write keeps the caches exact.
 */
import type { Statement } from "bun:sqlite";
import { LRUCache } from "lru-cache";
import type { Db } from "../../db";
import { findDefinition } from "../destinations/registry";
import type { DestinationDefinition } from "../destinations/types";
import type { SourceSettings } from "../../db/schema";

export interface SourceRuntime {
  id: string;
  workspaceId: string;
  name: string;
  enabled: boolean;
  settings: SourceSettings;
}

export interface DestinationRuntime {
  id: string;
  workspaceId: string;
  name: string;
  type: string;
  enabled: boolean;
  config: Record<string, unknown>;
  definition: DestinationDefinition | undefined;
  transformation?: { id: string; versionId: string; code: string };
}

export interface RoutingSnapshot {
  version: number;
  sources: Map<string, SourceRuntime>;
  destinations: Map<string, DestinationRuntime>;
  /** sourceId → destinations connected to it (enabled or not). */
  bySource: Map<string, DestinationRuntime[]>;
}

const MISSING = Symbol("missing");

export class ConfigStore {
  private byWriteKey = new LRUCache<string, SourceRuntime | typeof MISSING>({ max: 50_000 });
  private lookupStmt: Statement;
  private snapshotCache?: RoutingSnapshot;
  private version = 0;
  private listeners = new Set<() => void>();

  constructor(private db: Db) {
    this.lookupStmt = db.$client.prepare(
      "SELECT id, workspace_id AS workspaceId, name, enabled, settings FROM sources WHERE write_key = ?",
    );
  }

  sourceByWriteKey(writeKey: string): SourceRuntime | undefined {
    const hit = this.byWriteKey.get(writeKey);
    if (hit !== undefined) return hit === MISSING ? undefined : hit;
    const row = this.lookupStmt.get(writeKey) as any;
    const value: SourceRuntime | typeof MISSING = row
      ? { id: row.id, workspaceId: row.workspaceId, name: row.name, enabled: !!row.enabled, settings: JSON.parse(row.settings || "{}") }
      : MISSING;
    this.byWriteKey.set(writeKey, value);
    return value === MISSING ? undefined : value;
  }

  /** Called after every control-plane write. */
  invalidate() {
    this.byWriteKey.clear();
    this.snapshotCache = undefined;
    this.version++;
    for (const l of this.listeners) l();
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  snapshot(): RoutingSnapshot {
    if (this.snapshotCache) return this.snapshotCache;
    const c = this.db.$client;
    const sources = new Map<string, SourceRuntime>();
    for (const r of c.query("SELECT id, workspace_id AS workspaceId, name, enabled, settings FROM sources").all() as any[]) {
      sources.set(r.id, { id: r.id, workspaceId: r.workspaceId, name: r.name, enabled: !!r.enabled, settings: JSON.parse(r.settings || "{}") });
    }
    const transformationByDest = new Map<string, { id: string; versionId: string; code: string }>();
    for (const r of c
      .query(
        `SELECT dt.destination_id AS destinationId, t.id, t.version_id AS versionId, v.code
           FROM destination_transformations dt
           JOIN transformations t ON t.id = dt.transformation_id
           JOIN transformation_versions v ON v.id = t.version_id`,
      )
      .all() as any[]) {
      transformationByDest.set(r.destinationId, { id: r.id, versionId: r.versionId, code: r.code });
    }
    const destinations = new Map<string, DestinationRuntime>();
    for (const r of c.query("SELECT id, workspace_id AS workspaceId, name, type, enabled, config FROM destinations").all() as any[]) {
      destinations.set(r.id, {
        id: r.id,
        workspaceId: r.workspaceId,
        name: r.name,
        type: r.type,
        enabled: !!r.enabled,
        config: JSON.parse(r.config),
        definition: findDefinition(r.type),
        transformation: transformationByDest.get(r.id),
      });
    }
    const bySource = new Map<string, DestinationRuntime[]>();
    for (const r of c.query("SELECT source_id AS sourceId, destination_id AS destinationId FROM connections ORDER BY created_at").all() as any[]) {
      const d = destinations.get(r.destinationId);
      if (!d) continue;
      let list = bySource.get(r.sourceId);
      if (!list) bySource.set(r.sourceId, (list = []));
      list.push(d);
    }
    this.snapshotCache = { version: this.version, sources, destinations, bySource };
    return this.snapshotCache;
  }
}
