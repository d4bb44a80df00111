/**
 * The control plane's store on PostgreSQL (cluster mode, design §2.1 and §3.4): the same
 * interface and answers as the SQLite store, through drizzle on Bun.sql.
 *
 * `write` applies its operations in one transaction and, in that same transaction, bumps the
 * 'config' epoch (cluster_epochs): every instance can tell from the epoch alone whether its
 * cached config is older than the database's, whether or not a notification reached it. The
 * NOTIFY itself belongs to the bus (src/cluster/bus.ts, being built): `afterWrite` runs inside the
 * transaction after the operations, which is where a NOTIFY must be sent to be delivered at
 * commit and only then.
 */
import { and, desc, eq, inArray, isNull, lt, sql } from "drizzle-orm";
import type { PgDb } from "../../../db/pg";
import {
  accessTokens,
  accounts,
  clusterEpochs,
  connections,
  destinationTransformations,
  destinations,
  libraries,
  libraryVersions,
  sessions,
  sources,
  transformationVersions,
  transformations,
  workspaces,
} from "../../../db/pg/schema";
import {
  type AccessTokenRow,
  type AccountRow,
  type AuthWrite,
  type ConnectionRow,
  type ControlPlaneStore,
  type ControlPlaneWrite,
  type RoutingRows,
  type DestinationRow,
  type LibraryRow,
  type LibraryVersionRow,
  type DestinationTransformationRow,
  type SourceRow,
  type TransformationRow,
  type SessionWithEmail,
  type TokenCandidate,
  type TransformationVersionRow,
  type WorkspaceRow,
  type WriteResult,
  destinationFromStore,
  sourceFromStore,
  uniqueViolation,
  withoutNulls,
} from "../../control-plane/store";
import { UNIQUE_VIOLATION } from "../../lib/postgres-errors";
import { AppError } from "../../lib/errors";

/** The transaction a write runs in (drizzle over Bun.sql). */
export type PgControlPlaneTx = Parameters<Parameters<PgDb["transaction"]>[0]>[0];

export interface PgControlPlaneStoreOptions {
  /**
   * Runs inside the write's transaction, after its operations and the epoch bump: the hook for
   * the bus's `NOTIFY` (delivered at commit, so never for a write that rolled back). A throw
   * rolls the write back.
   */
  afterWrite?: (tx: PgControlPlaneTx, epoch: number) => Promise<void> | void;
}


/**
 * A value for a jsonb column. drizzle's jsonb column stringifies the value and Bun.sql, told the
 * parameter is jsonb, encodes that string once more: the column would hold a JSON string, not an
 * object (drizzle's reads parse it back, but SQL such as config->>'webhookUrl' would see none;
 * drizzle-team/drizzle-orm#4942, fixed only in drizzle 1.0's beta). Sent as a text parameter and
 * cast by the server, it is stored as the object it is, whichever way Bun.sql later encodes
 * strings bound to jsonb parameters (oven-sh/bun#28819).
 */
function jsonb(value: unknown) {
  return sql`${JSON.stringify(value)}::text::jsonb`;
}

function sourceValues<T extends { settings?: unknown; rudderDefinition?: unknown; config?: unknown; trackingPlanConfig?: unknown }>(row: T) {
  const out: Record<string, unknown> = { ...row };
  if (row.settings !== undefined) out.settings = jsonb(row.settings);
  if (row.config != null) out.config = jsonb(row.config);
  if (row.trackingPlanConfig != null) out.trackingPlanConfig = jsonb(row.trackingPlanConfig);
  if (row.rudderDefinition != null) out.rudderDefinition = jsonb(row.rudderDefinition);
  return out as T;
}

function destinationValues<T extends { config?: unknown; rudderDefinition?: unknown }>(row: T) {
  const out: Record<string, unknown> = { ...row };
  if (row.config !== undefined) out.config = jsonb(row.config);
  // null clears the column; undefined leaves it (an insert without it stores NULL).
  if (row.rudderDefinition != null) out.rudderDefinition = jsonb(row.rudderDefinition);
  return out as T;
}

function versionValues<T extends { libraries?: unknown }>(row: T) {
  return row.libraries == null ? row : { ...row, libraries: jsonb(row.libraries) };
}

/** The unique constraint (or unique index) a statement violated; drizzle puts Bun.sql's error in `cause`. */
function violatedUnique(err: unknown): string | undefined {
  for (let e = err as { errno?: unknown; constraint?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (e.errno === UNIQUE_VIOLATION && typeof e.constraint === "string") return e.constraint;
  }
  return undefined;
}

export class PgControlPlaneStore implements ControlPlaneStore {
  constructor(
    private readonly db: PgDb,
    private readonly opts: PgControlPlaneStoreOptions = {},
  ) {}

  async source(workspaceId: string, id: string): Promise<SourceRow | undefined> {
    const [row] = await this.db.select().from(sources).where(and(eq(sources.id, id), eq(sources.workspaceId, workspaceId)));
    return row && sourceFromStore(row);
  }

  async routing(): Promise<RoutingRows> {
    // One snapshot for all reads, so a change committed meanwhile is seen whole or not at all.
    return this.db.transaction(
      async (tx) => {
        const attachments = await tx
          .select({
            destinationId: destinationTransformations.destinationId,
            transformationId: transformations.id,
            versionId: transformationVersions.id,
            code: transformationVersions.code,
            externalId: transformationVersions.externalId,
            libraries: transformationVersions.libraries,
          })
          .from(destinationTransformations)
          .innerJoin(transformations, eq(transformations.id, destinationTransformations.transformationId))
          .innerJoin(transformationVersions, eq(transformationVersions.id, transformations.versionId));
        const pinned = [...new Set(attachments.flatMap((a) => Object.values(a.libraries ?? {})))];
        return {
          sources: (await tx.select().from(sources)).map(sourceFromStore),
          destinations: (await tx.select().from(destinations)).map(destinationFromStore),
          connections: await tx.select().from(connections).orderBy(connections.createdAt),
          attachments: attachments.map(withoutNulls),
          libraryVersions: pinned.length ? await tx.select({ id: libraryVersions.id, code: libraryVersions.code }).from(libraryVersions).where(inArray(libraryVersions.id, pinned)) : [],
        };
      },
      { isolationLevel: "repeatable read", accessMode: "read only" },
    );
  }

  async sourceByName(workspaceId: string, name: string): Promise<SourceRow | undefined> {
    const [row] = await this.db.select().from(sources).where(and(eq(sources.workspaceId, workspaceId), eq(sources.name, name)));
    return row && sourceFromStore(row);
  }

  async sourceByWriteKey(writeKey: string): Promise<SourceRow | undefined> {
    const [row] = await this.db.select().from(sources).where(eq(sources.writeKey, writeKey));
    return row && sourceFromStore(row);
  }

  async sources(workspaceId: string): Promise<SourceRow[]> {
    return (await this.db.select().from(sources).where(eq(sources.workspaceId, workspaceId)).orderBy(sources.createdAt, sources.id)).map(sourceFromStore);
  }

  async existingSourceIds(workspaceId: string, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db.select({ id: sources.id }).from(sources).where(and(inArray(sources.id, ids), eq(sources.workspaceId, workspaceId)));
    return new Set(rows.map((r) => r.id));
  }

  async destination(workspaceId: string, id: string): Promise<DestinationRow | undefined> {
    const [row] = await this.db.select().from(destinations).where(and(eq(destinations.id, id), eq(destinations.workspaceId, workspaceId)));
    return row && destinationFromStore(row);
  }

  async destinationByName(workspaceId: string, name: string): Promise<DestinationRow | undefined> {
    const [row] = await this.db.select().from(destinations).where(and(eq(destinations.workspaceId, workspaceId), eq(destinations.name, name)));
    return row && destinationFromStore(row);
  }

  async destinations(workspaceId: string): Promise<DestinationRow[]> {
    return (await this.db.select().from(destinations).where(eq(destinations.workspaceId, workspaceId)).orderBy(destinations.createdAt, destinations.id)).map(destinationFromStore);
  }

  async existingDestinationIds(workspaceId: string, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db
      .select({ id: destinations.id })
      .from(destinations)
      .where(and(inArray(destinations.id, ids), eq(destinations.workspaceId, workspaceId)));
    return new Set(rows.map((r) => r.id));
  }

  async connections(workspaceId: string): Promise<ConnectionRow[]> {
    return this.db
      .select({ sourceId: connections.sourceId, destinationId: connections.destinationId, createdAt: connections.createdAt })
      .from(connections)
      .innerJoin(destinations, eq(destinations.id, connections.destinationId))
      .where(eq(destinations.workspaceId, workspaceId))
      .orderBy(connections.createdAt, connections.sourceId, connections.destinationId);
  }

  async connectionsOfSource(sourceId: string): Promise<ConnectionRow[]> {
    return this.db.select().from(connections).where(eq(connections.sourceId, sourceId)).orderBy(connections.createdAt, connections.destinationId);
  }

  async connectionsOfDestination(destinationId: string): Promise<ConnectionRow[]> {
    return this.db.select().from(connections).where(eq(connections.destinationId, destinationId)).orderBy(connections.createdAt, connections.sourceId);
  }

  async transformation(workspaceId: string, id: string): Promise<TransformationRow | undefined> {
    const [row] = await this.db.select().from(transformations).where(and(eq(transformations.id, id), eq(transformations.workspaceId, workspaceId)));
    return row && withoutNulls(row);
  }

  async transformationByName(workspaceId: string, name: string): Promise<TransformationRow | undefined> {
    const [row] = await this.db.select().from(transformations).where(and(eq(transformations.workspaceId, workspaceId), eq(transformations.name, name)));
    return row && withoutNulls(row);
  }

  async transformations(workspaceId: string): Promise<TransformationRow[]> {
    return (await this.db.select().from(transformations).where(eq(transformations.workspaceId, workspaceId)).orderBy(transformations.createdAt, transformations.id)).map(withoutNulls);
  }

  async transformationVersions(transformationId: string): Promise<TransformationVersionRow[]> {
    const rows = await this.db
      .select()
      .from(transformationVersions)
      .where(eq(transformationVersions.transformationId, transformationId))
      .orderBy(desc(transformationVersions.createdAt), desc(transformationVersions.id));
    return rows.map(withoutNulls);
  }

  async transformationVersion(transformationId: string, versionId: string): Promise<TransformationVersionRow | undefined> {
    const [row] = await this.db
      .select()
      .from(transformationVersions)
      .where(and(eq(transformationVersions.id, versionId), eq(transformationVersions.transformationId, transformationId)));
    return row && withoutNulls(row);
  }

  async versionCode(versionId: string): Promise<string | null | undefined> {
    const [row] = await this.db.select({ code: transformationVersions.code }).from(transformationVersions).where(eq(transformationVersions.id, versionId));
    return row?.code;
  }

  async versionByExternalId(workspaceId: string, externalId: string): Promise<TransformationVersionRow | undefined> {
    const [row] = await this.db
      .select({
        id: transformationVersions.id,
        transformationId: transformationVersions.transformationId,
        code: transformationVersions.code,
        createdAt: transformationVersions.createdAt,
        externalId: transformationVersions.externalId,
        libraries: transformationVersions.libraries,
      })
      .from(transformationVersions)
      .innerJoin(transformations, eq(transformations.id, transformationVersions.transformationId))
      .where(and(eq(transformationVersions.externalId, externalId), eq(transformations.workspaceId, workspaceId)))
      .orderBy(desc(transformationVersions.createdAt), desc(transformationVersions.id))
      .limit(1);
    return row && withoutNulls(row);
  }

  async transformationByExternalId(workspaceId: string, externalId: string): Promise<TransformationRow | undefined> {
    const [row] = await this.db.select().from(transformations).where(and(eq(transformations.workspaceId, workspaceId), eq(transformations.externalId, externalId)));
    return row && withoutNulls(row);
  }

  async libraries(workspaceId: string): Promise<LibraryRow[]> {
    return this.db.select().from(libraries).where(eq(libraries.workspaceId, workspaceId)).orderBy(libraries.importName);
  }

  async library(workspaceId: string, id: string): Promise<LibraryRow | undefined> {
    const [row] = await this.db.select().from(libraries).where(and(eq(libraries.id, id), eq(libraries.workspaceId, workspaceId)));
    return row;
  }

  async libraryByImportName(workspaceId: string, importName: string): Promise<LibraryRow | undefined> {
    const [row] = await this.db.select().from(libraries).where(and(eq(libraries.workspaceId, workspaceId), eq(libraries.importName, importName)));
    return row;
  }

  async libraryByExternalId(workspaceId: string, externalId: string): Promise<LibraryRow | undefined> {
    const [row] = await this.db.select().from(libraries).where(and(eq(libraries.workspaceId, workspaceId), eq(libraries.externalId, externalId)));
    return row;
  }

  async libraryVersions(libraryId: string): Promise<LibraryVersionRow[]> {
    return this.db.select().from(libraryVersions).where(eq(libraryVersions.libraryId, libraryId)).orderBy(desc(libraryVersions.createdAt), desc(libraryVersions.id));
  }

  async libraryVersionCode(ids: string[]): Promise<Map<string, string>> {
    if (!ids.length) return new Map();
    const rows = await this.db.select({ id: libraryVersions.id, code: libraryVersions.code }).from(libraryVersions).where(inArray(libraryVersions.id, ids));
    return new Map(rows.map((r) => [r.id, r.code]));
  }

  async destinationIdsOfTransformation(transformationId: string): Promise<string[]> {
    const rows = await this.db
      .select({ id: destinationTransformations.destinationId })
      .from(destinationTransformations)
      .where(eq(destinationTransformations.transformationId, transformationId))
      .orderBy(destinationTransformations.destinationId);
    return rows.map((r) => r.id);
  }

  async transformationIdOfDestination(destinationId: string): Promise<string | undefined> {
    const [row] = await this.db
      .select({ id: destinationTransformations.transformationId })
      .from(destinationTransformations)
      .where(eq(destinationTransformations.destinationId, destinationId));
    return row?.id;
  }

  async attachments(workspaceId: string): Promise<DestinationTransformationRow[]> {
    return this.db
      .select({ destinationId: destinationTransformations.destinationId, transformationId: destinationTransformations.transformationId })
      .from(destinationTransformations)
      .innerJoin(destinations, eq(destinations.id, destinationTransformations.destinationId))
      .where(eq(destinations.workspaceId, workspaceId));
  }

  async write(ops: ControlPlaneWrite[]): Promise<WriteResult> {
    // Nothing to change: no epoch to move (every instance would reload its config for nothing).
    if (ops.length === 0) return { changes: [] };
    return this.db.transaction(async (tx) => {
      // First, so concurrent config writes of all instances queue on this one row lock: they
      // commit one at a time in epoch order and cannot deadlock on each other's rows.
      const [bumped] = await tx
        .update(clusterEpochs)
        .set({ value: sql`${clusterEpochs.value} + 1` })
        .where(eq(clusterEpochs.name, "config"))
        .returning({ value: clusterEpochs.value });
      if (!bumped) throw new Error("cluster_epochs has no 'config' row: the database's migrations are incomplete");
      const changes: number[] = [];
      for (const op of ops) {
        try {
          changes.push(await apply(tx, op));
        } catch (err) {
          const constraint = violatedUnique(err);
          throw (constraint && uniqueViolation(op, constraint)) || err;
        }
      }
      await this.opts.afterWrite?.(tx, bumped.value);
      return { changes, epoch: bumped.value };
    });
  }

  async firstWorkspace(): Promise<WorkspaceRow | undefined> {
    const [row] = await this.db.select().from(workspaces).orderBy(workspaces.createdAt, workspaces.id).limit(1);
    return row;
  }

  async ownerOf(workspaceId: string): Promise<AccountRow | undefined> {
    const [row] = await this.db.select().from(accounts).where(eq(accounts.workspaceId, workspaceId)).orderBy(accounts.createdAt, accounts.id).limit(1);
    return row;
  }

  async accountByEmail(email: string): Promise<AccountRow | undefined> {
    const [row] = await this.db.select().from(accounts).where(eq(accounts.email, email));
    return row;
  }

  async tokenCandidates(lookup: string): Promise<TokenCandidate[]> {
    return this.db
      .select({ id: accessTokens.id, secretHash: accessTokens.secretHash, accountId: accessTokens.accountId, workspaceId: accessTokens.workspaceId, email: accounts.email })
      .from(accessTokens)
      .innerJoin(accounts, eq(accounts.id, accessTokens.accountId))
      .where(eq(accessTokens.lookup, lookup));
  }

  async token(id: string): Promise<AccessTokenRow | undefined> {
    const [row] = await this.db.select().from(accessTokens).where(eq(accessTokens.id, id));
    return row;
  }

  async tokensOfAccount(workspaceId: string, accountId: string): Promise<AccessTokenRow[]> {
    return this.db
      .select()
      .from(accessTokens)
      .where(and(eq(accessTokens.accountId, accountId), eq(accessTokens.workspaceId, workspaceId)))
      .orderBy(accessTokens.createdAt, accessTokens.id);
  }

  async session(idHash: string): Promise<SessionWithEmail | undefined> {
    const [row] = await this.db
      .select({
        idHash: sessions.idHash,
        tokenId: sessions.tokenId,
        accountId: sessions.accountId,
        workspaceId: sessions.workspaceId,
        createdAt: sessions.createdAt,
        expiresAt: sessions.expiresAt,
        email: accounts.email,
      })
      .from(sessions)
      .innerJoin(accounts, eq(accounts.id, sessions.accountId))
      .where(eq(sessions.idHash, idHash));
    return row;
  }

  /** No epoch bump and no afterWrite: see ControlPlaneStore.writeAuth for why revocation needs neither. */
  async writeAuth(ops: AuthWrite[]): Promise<number[]> {
    if (ops.length === 0) return [];
    return this.db.transaction(async (tx) => {
      const changes: number[] = [];
      for (const op of ops) changes.push(await applyAuth(tx, op));
      return changes;
    });
  }
}

async function applyAuth(tx: PgControlPlaneTx, op: AuthWrite): Promise<number> {
  switch (op.op) {
    case "insertWorkspace":
      return (await tx.insert(workspaces).values(op.row).returning({ id: workspaces.id })).length;
    case "insertAccount":
      return (await tx.insert(accounts).values(op.row).returning({ id: accounts.id })).length;
    case "insertToken":
      return (await tx.insert(accessTokens).values(op.row).returning({ id: accessTokens.id })).length;
    case "revokeToken": {
      const where = and(eq(accessTokens.id, op.id), eq(accessTokens.accountId, op.accountId), eq(accessTokens.workspaceId, op.workspaceId));
      return (await tx.delete(accessTokens).where(where).returning({ id: accessTokens.id })).length;
    }
    case "touchToken":
      return (await tx.update(accessTokens).set({ lastUsedAt: op.at }).where(eq(accessTokens.id, op.id)).returning({ id: accessTokens.id })).length;
    case "insertSession":
      return (await tx.insert(sessions).values(op.row).returning({ id: sessions.idHash })).length;
    case "deleteSession":
      return (await tx.delete(sessions).where(eq(sessions.idHash, op.idHash)).returning({ id: sessions.idHash })).length;
    case "deleteExpiredSessions":
      return (await tx.delete(sessions).where(lt(sessions.expiresAt, op.before)).returning({ id: sessions.idHash })).length;
    case "requireNoWorkspace": {
      // Held to the commit: a second instance starting now waits here, then finds the workspace.
      await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext('sluice-first-start'))`);
      const [found] = await tx.select({ id: workspaces.id }).from(workspaces).limit(1);
      if (found) throw new AppError("CONFLICT", "a workspace exists already");
      return 0;
    }
  }
}

async function apply(tx: PgControlPlaneTx, op: ControlPlaneWrite): Promise<number> {
  switch (op.op) {
    case "insertSource":
      return (await tx.insert(sources).values(sourceValues(op.row)).returning({ id: sources.id })).length;
    case "updateSource":
      return (await tx.update(sources).set(sourceValues(op.set)).where(eq(sources.id, op.id)).returning({ id: sources.id })).length;
    case "deleteSource":
      return (await tx.delete(sources).where(eq(sources.id, op.id)).returning({ id: sources.id })).length;
    case "insertDestination":
      return (await tx.insert(destinations).values(destinationValues(op.row)).returning({ id: destinations.id })).length;
    case "updateDestination":
      return (await tx.update(destinations).set(destinationValues(op.set)).where(eq(destinations.id, op.id)).returning({ id: destinations.id })).length;
    case "deleteDestination":
      return (await tx.delete(destinations).where(eq(destinations.id, op.id)).returning({ id: destinations.id })).length;
    case "setDestinationSources": {
      await tx.delete(connections).where(eq(connections.destinationId, op.destinationId));
      const sourceIds = [...new Set(op.sourceIds)];
      if (sourceIds.length === 0) return 0;
      const rows = sourceIds.map((sourceId) => ({ sourceId, destinationId: op.destinationId, createdAt: op.at }));
      return (await tx.insert(connections).values(rows).returning({ id: connections.sourceId })).length;
    }
    case "connect": {
      const row = { sourceId: op.sourceId, destinationId: op.destinationId, createdAt: op.at };
      return (await tx.insert(connections).values(row).onConflictDoNothing().returning({ id: connections.sourceId })).length;
    }
    case "disconnect": {
      const where = and(eq(connections.sourceId, op.sourceId), eq(connections.destinationId, op.destinationId));
      return (await tx.delete(connections).where(where).returning({ id: connections.sourceId })).length;
    }
    case "insertTransformation": {
      const n = (await tx.insert(transformations).values(op.row).returning({ id: transformations.id })).length;
      await tx.insert(transformationVersions).values(versionValues({ ...op.version, id: op.row.versionId, transformationId: op.row.id, code: op.code, createdAt: op.row.createdAt }));
      return n;
    }
    case "insertTransformationVersion":
      return (await tx.insert(transformationVersions).values(versionValues(op.row)).returning({ id: transformationVersions.id })).length;
    case "fillTransformationVersion": {
      const where = and(eq(transformationVersions.id, op.id), isNull(transformationVersions.code));
      return (await tx.update(transformationVersions).set(versionValues({ code: op.code, libraries: op.libraries })).where(where).returning({ id: transformationVersions.id })).length;
    }
    case "insertLibrary": {
      const n = (await tx.insert(libraries).values(op.row).returning({ id: libraries.id })).length;
      await tx.insert(libraryVersions).values({ id: op.row.versionId, libraryId: op.row.id, code: op.code, createdAt: op.row.createdAt, externalId: op.versionExternalId ?? null });
      return n;
    }
    case "insertLibraryVersion":
      return (await tx.insert(libraryVersions).values(op.row).returning({ id: libraryVersions.id })).length;
    case "updateLibrary":
      return (await tx.update(libraries).set(op.set).where(eq(libraries.id, op.id)).returning({ id: libraries.id })).length;
    case "deleteLibrary":
      return (await tx.delete(libraries).where(eq(libraries.id, op.id)).returning({ id: libraries.id })).length;
    case "updateTransformation":
      return (await tx.update(transformations).set(op.set).where(eq(transformations.id, op.id)).returning({ id: transformations.id })).length;
    case "deleteTransformation":
      return (await tx.delete(transformations).where(eq(transformations.id, op.id)).returning({ id: transformations.id })).length;
    case "setTransformationDestinations": {
      await tx.delete(destinationTransformations).where(eq(destinationTransformations.transformationId, op.transformationId));
      let n = 0;
      for (const destinationId of new Set(op.destinationIds)) n += await attach(tx, destinationId, op.transformationId);
      return n;
    }
    case "attachTransformation":
      return attach(tx, op.destinationId, op.transformationId);
  }
}

function attach(tx: PgControlPlaneTx, destinationId: string, transformationId: string): Promise<number> {
  return tx
    .insert(destinationTransformations)
    .values({ destinationId, transformationId })
    .onConflictDoUpdate({ target: destinationTransformations.destinationId, set: { transformationId } })
    .returning({ id: destinationTransformations.destinationId })
    .then((rows) => rows.length);
}
