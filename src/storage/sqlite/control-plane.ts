/**
 * The control plane's store on SQLite (design §2.1): drizzle over the one main connection.
 * Not the hot path (ConfigStore caches what intake and delivery read), so no prepared statements.
 *
 * `write` applies its operations inside one bun:sqlite transaction and runs synchronously from
 * start to commit: nothing else on this connection can run in between, which is why the store,
 * not the caller, owns the transaction (see src/control-plane/store.ts).
 */
import type { Changes } from "bun:sqlite";
import { and, asc, desc, eq, inArray, isNull, lt, sql } from "drizzle-orm";
import type { Db } from "../../../db";
import {
  accessTokens,
  accounts,
  configEpoch,
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
} from "../../../db/schema";
import {
  type AccessTokenRow,
  type AccountRow,
  type AuthWrite,
  type ConnectionRow,
  type ControlPlaneStore,
  type ControlPlaneWrite,
  type DestinationRow,
  type LibraryRow,
  type LibraryVersionRow,
  type RoutingRows,
  type DestinationTransformationRow,
  type SourceRow,
  type TransformationRow,
  type TransformationVersionRow,
  type SessionWithEmail,
  type TokenCandidate,
  type UniqueConstraint,
  type WorkspaceRow,
  type WriteResult,
  destinationFromStore,
  sourceFromStore,
  uniqueViolation,
  withoutNulls,
} from "../../control-plane/store";
import { AppError } from "../../lib/errors";

/** SQLite names the columns of a violated unique index, not the index: "UNIQUE constraint failed: sources.write_key". */
const UNIQUE_COLUMNS: Record<string, UniqueConstraint> = {
  "sources.workspace_id, sources.name": "sources_workspace_name",
  "sources.write_key": "sources_write_key_unique",
  "destinations.workspace_id, destinations.name": "destinations_workspace_name",
  "transformations.workspace_id, transformations.name": "transformations_workspace_name",
  "libraries.workspace_id, libraries.import_name": "libraries_workspace_import_name",
};

/** Rows a statement changed: bun:sqlite reports them, drizzle's types call the result void. */
function changed(result: unknown): number {
  return (result as Changes).changes;
}

function violatedUnique(err: unknown): string | undefined {
  // drizzle wraps the driver's error (DrizzleQueryError, the SQLiteError as its cause).
  for (let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (e.code !== "SQLITE_CONSTRAINT_UNIQUE") continue;
    const columns = /UNIQUE constraint failed: (.*)$/.exec(String(e.message))?.[1];
    return columns ? UNIQUE_COLUMNS[columns] : undefined;
  }
  return undefined;
}

export class SqliteControlPlaneStore implements ControlPlaneStore {
  constructor(private readonly db: Db) {}

  async routing(): Promise<RoutingRows> {
    const attachments = this.db
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
      .innerJoin(transformationVersions, eq(transformationVersions.id, transformations.versionId))
      .all();
    const pinned = [...new Set(attachments.flatMap((a) => Object.values(a.libraries ?? {})))];
    return {
      sources: this.db.select().from(sources).all().map(sourceFromStore),
      destinations: this.db.select().from(destinations).all().map(destinationFromStore),
      connections: this.db.select().from(connections).orderBy(asc(connections.createdAt)).all(),
      attachments: attachments.map(withoutNulls),
      libraryVersions: [...(await this.libraryVersionCode(pinned))].map(([id, code]) => ({ id, code })),
    };
  }

  /**
   * Statements every authenticated API request runs (a token's candidates) or that a burst of
   * live-event streams runs (a source by id), prepared once: built by drizzle's query builder
   * each time, they cost about 1 ms a request, and 500 streams opened at once held the loop.
   */
  private prepared?: ReturnType<SqliteControlPlaneStore["prepareHot"]>;
  private prepareHot() {
    const db = this.db;
    return {
      source: db.select().from(sources).where(and(eq(sources.id, sql.placeholder("id")), eq(sources.workspaceId, sql.placeholder("workspaceId")))).prepare(),
      tokenCandidates: db
        .select({ id: accessTokens.id, secretHash: accessTokens.secretHash, accountId: accessTokens.accountId, workspaceId: accessTokens.workspaceId, email: accounts.email })
        .from(accessTokens)
        .innerJoin(accounts, eq(accounts.id, accessTokens.accountId))
        .where(eq(accessTokens.lookup, sql.placeholder("lookup")))
        .prepare(),
    };
  }
  private get hot() {
    return (this.prepared ??= this.prepareHot());
  }

  async source(workspaceId: string, id: string): Promise<SourceRow | undefined> {
    const row = this.hot.source.get({ id, workspaceId });
    return row && sourceFromStore(row);
  }

  async sourceByName(workspaceId: string, name: string): Promise<SourceRow | undefined> {
    const row = this.db.select().from(sources).where(and(eq(sources.workspaceId, workspaceId), eq(sources.name, name))).get();
    return row && sourceFromStore(row);
  }

  async sourceByWriteKey(writeKey: string): Promise<SourceRow | undefined> {
    const row = this.db.select().from(sources).where(eq(sources.writeKey, writeKey)).get();
    return row && sourceFromStore(row);
  }

  async sources(workspaceId: string): Promise<SourceRow[]> {
    return this.db.select().from(sources).where(eq(sources.workspaceId, workspaceId)).orderBy(sources.createdAt, sources.id).all().map(sourceFromStore);
  }

  async existingSourceIds(workspaceId: string, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = this.db.select({ id: sources.id }).from(sources).where(and(inArray(sources.id, ids), eq(sources.workspaceId, workspaceId))).all();
    return new Set(rows.map((r) => r.id));
  }

  async destination(workspaceId: string, id: string): Promise<DestinationRow | undefined> {
    const row = this.db.select().from(destinations).where(and(eq(destinations.id, id), eq(destinations.workspaceId, workspaceId))).get();
    return row && destinationFromStore(row);
  }

  async destinationByName(workspaceId: string, name: string): Promise<DestinationRow | undefined> {
    const row = this.db.select().from(destinations).where(and(eq(destinations.workspaceId, workspaceId), eq(destinations.name, name))).get();
    return row && destinationFromStore(row);
  }

  async destinations(workspaceId: string): Promise<DestinationRow[]> {
    return this.db.select().from(destinations).where(eq(destinations.workspaceId, workspaceId)).orderBy(destinations.createdAt, destinations.id).all().map(destinationFromStore);
  }

  async existingDestinationIds(workspaceId: string, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = this.db
      .select({ id: destinations.id })
      .from(destinations)
      .where(and(inArray(destinations.id, ids), eq(destinations.workspaceId, workspaceId)))
      .all();
    return new Set(rows.map((r) => r.id));
  }

  async connections(workspaceId: string): Promise<ConnectionRow[]> {
    return this.db
      .select({ sourceId: connections.sourceId, destinationId: connections.destinationId, createdAt: connections.createdAt })
      .from(connections)
      .innerJoin(destinations, eq(destinations.id, connections.destinationId))
      .where(eq(destinations.workspaceId, workspaceId))
      .orderBy(connections.createdAt, connections.sourceId, connections.destinationId)
      .all();
  }

  async connectionsOfSource(sourceId: string): Promise<ConnectionRow[]> {
    return this.db.select().from(connections).where(eq(connections.sourceId, sourceId)).orderBy(connections.createdAt, connections.destinationId).all();
  }

  async connectionsOfDestination(destinationId: string): Promise<ConnectionRow[]> {
    return this.db.select().from(connections).where(eq(connections.destinationId, destinationId)).orderBy(connections.createdAt, connections.sourceId).all();
  }

  async transformation(workspaceId: string, id: string): Promise<TransformationRow | undefined> {
    const row = this.db.select().from(transformations).where(and(eq(transformations.id, id), eq(transformations.workspaceId, workspaceId))).get();
    return row && withoutNulls(row);
  }

  async transformationByName(workspaceId: string, name: string): Promise<TransformationRow | undefined> {
    const row = this.db.select().from(transformations).where(and(eq(transformations.workspaceId, workspaceId), eq(transformations.name, name))).get();
    return row && withoutNulls(row);
  }

  async transformations(workspaceId: string): Promise<TransformationRow[]> {
    return this.db.select().from(transformations).where(eq(transformations.workspaceId, workspaceId)).orderBy(transformations.createdAt, transformations.id).all().map(withoutNulls);
  }

  async transformationVersions(transformationId: string): Promise<TransformationVersionRow[]> {
    return this.db
      .select()
      .from(transformationVersions)
      .where(eq(transformationVersions.transformationId, transformationId))
      .orderBy(desc(transformationVersions.createdAt), desc(transformationVersions.id))
      .all()
      .map(withoutNulls);
  }

  async transformationVersion(transformationId: string, versionId: string): Promise<TransformationVersionRow | undefined> {
    const row = this.db
      .select()
      .from(transformationVersions)
      .where(and(eq(transformationVersions.id, versionId), eq(transformationVersions.transformationId, transformationId)))
      .get();
    return row && withoutNulls(row);
  }

  async versionCode(versionId: string): Promise<string | null | undefined> {
    return this.db.select({ code: transformationVersions.code }).from(transformationVersions).where(eq(transformationVersions.id, versionId)).get()?.code;
  }

  async versionByExternalId(workspaceId: string, externalId: string): Promise<TransformationVersionRow | undefined> {
    const row = this.db
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
      .limit(1)
      .get();
    return row && withoutNulls(row);
  }

  async transformationByExternalId(workspaceId: string, externalId: string): Promise<TransformationRow | undefined> {
    const row = this.db.select().from(transformations).where(and(eq(transformations.workspaceId, workspaceId), eq(transformations.externalId, externalId))).get();
    return row && withoutNulls(row);
  }

  async libraries(workspaceId: string): Promise<LibraryRow[]> {
    return this.db.select().from(libraries).where(eq(libraries.workspaceId, workspaceId)).orderBy(libraries.importName).all();
  }

  async library(workspaceId: string, id: string): Promise<LibraryRow | undefined> {
    return this.db.select().from(libraries).where(and(eq(libraries.id, id), eq(libraries.workspaceId, workspaceId))).get();
  }

  async libraryByImportName(workspaceId: string, importName: string): Promise<LibraryRow | undefined> {
    return this.db.select().from(libraries).where(and(eq(libraries.workspaceId, workspaceId), eq(libraries.importName, importName))).get();
  }

  async libraryByExternalId(workspaceId: string, externalId: string): Promise<LibraryRow | undefined> {
    return this.db.select().from(libraries).where(and(eq(libraries.workspaceId, workspaceId), eq(libraries.externalId, externalId))).get();
  }

  async libraryVersions(libraryId: string): Promise<LibraryVersionRow[]> {
    return this.db.select().from(libraryVersions).where(eq(libraryVersions.libraryId, libraryId)).orderBy(desc(libraryVersions.createdAt), desc(libraryVersions.id)).all();
  }

  async libraryVersionCode(ids: string[]): Promise<Map<string, string>> {
    if (!ids.length) return new Map();
    const rows = this.db.select({ id: libraryVersions.id, code: libraryVersions.code }).from(libraryVersions).where(inArray(libraryVersions.id, ids)).all();
    return new Map(rows.map((r) => [r.id, r.code]));
  }

  async destinationIdsOfTransformation(transformationId: string): Promise<string[]> {
    return this.db
      .select({ id: destinationTransformations.destinationId })
      .from(destinationTransformations)
      .where(eq(destinationTransformations.transformationId, transformationId))
      .orderBy(asc(destinationTransformations.destinationId))
      .all()
      .map((r) => r.id);
  }

  async transformationIdOfDestination(destinationId: string): Promise<string | undefined> {
    return this.db
      .select({ id: destinationTransformations.transformationId })
      .from(destinationTransformations)
      .where(eq(destinationTransformations.destinationId, destinationId))
      .get()?.id;
  }

  async attachments(workspaceId: string): Promise<DestinationTransformationRow[]> {
    return this.db
      .select({ destinationId: destinationTransformations.destinationId, transformationId: destinationTransformations.transformationId })
      .from(destinationTransformations)
      .innerJoin(destinations, eq(destinations.id, destinationTransformations.destinationId))
      .where(eq(destinations.workspaceId, workspaceId))
      .all();
  }

  async write(ops: ControlPlaneWrite[]): Promise<WriteResult> {
    const changes = this.db.$client.transaction(() => {
      const out = ops.map((op) => {
        try {
          return this.apply(op);
        } catch (err) {
          const constraint = violatedUnique(err);
          throw (constraint && uniqueViolation(op, constraint)) || err;
        }
      });
      // Another process's write (sluice import-transformations) reaches a running server through this (SqliteConfigStore polls it).
      if (ops.length) {
        this.db
          .insert(configEpoch)
          .values({ id: 1, epoch: 1 })
          .onConflictDoUpdate({ target: configEpoch.id, set: { epoch: sql`${configEpoch.epoch} + 1` } })
          .run();
      }
      return out;
    })();
    return { changes };
  }

  private apply(op: ControlPlaneWrite): number {
    const db = this.db;
    switch (op.op) {
      case "insertSource":
        return changed(db.insert(sources).values(op.row).run());
      case "updateSource":
        return changed(db.update(sources).set(op.set).where(eq(sources.id, op.id)).run());
      case "deleteSource":
        return changed(db.delete(sources).where(eq(sources.id, op.id)).run());
      case "insertDestination":
        return changed(db.insert(destinations).values(op.row).run());
      case "updateDestination":
        return changed(db.update(destinations).set(op.set).where(eq(destinations.id, op.id)).run());
      case "deleteDestination":
        return changed(db.delete(destinations).where(eq(destinations.id, op.id)).run());
      case "setDestinationSources": {
        db.delete(connections).where(eq(connections.destinationId, op.destinationId)).run();
        let n = 0;
        for (const sourceId of new Set(op.sourceIds)) {
          n += changed(db.insert(connections).values({ sourceId, destinationId: op.destinationId, createdAt: op.at }).run());
        }
        return n;
      }
      case "connect":
        return changed(db.insert(connections).values({ sourceId: op.sourceId, destinationId: op.destinationId, createdAt: op.at }).onConflictDoNothing().run());
      case "disconnect":
        return changed(db.delete(connections).where(and(eq(connections.sourceId, op.sourceId), eq(connections.destinationId, op.destinationId))).run());
      case "insertTransformation": {
        const n = changed(db.insert(transformations).values(op.row).run());
        db.insert(transformationVersions).values({ ...op.version, id: op.row.versionId, transformationId: op.row.id, code: op.code, createdAt: op.row.createdAt }).run();
        return n;
      }
      case "fillTransformationVersion":
        return changed(
          db
            .update(transformationVersions)
            .set({ code: op.code, libraries: op.libraries })
            .where(and(eq(transformationVersions.id, op.id), isNull(transformationVersions.code)))
            .run(),
        );
      case "insertLibrary": {
        const n = changed(db.insert(libraries).values(op.row).run());
        db.insert(libraryVersions).values({ id: op.row.versionId, libraryId: op.row.id, code: op.code, createdAt: op.row.createdAt, externalId: op.versionExternalId ?? null }).run();
        return n;
      }
      case "insertLibraryVersion":
        return changed(db.insert(libraryVersions).values(op.row).run());
      case "updateLibrary":
        return changed(db.update(libraries).set(op.set).where(eq(libraries.id, op.id)).run());
      case "deleteLibrary":
        return changed(db.delete(libraries).where(eq(libraries.id, op.id)).run());
      case "insertTransformationVersion":
        return changed(db.insert(transformationVersions).values(op.row).run());
      case "updateTransformation":
        return changed(db.update(transformations).set(op.set).where(eq(transformations.id, op.id)).run());
      case "deleteTransformation":
        return changed(db.delete(transformations).where(eq(transformations.id, op.id)).run());
      case "setTransformationDestinations": {
        db.delete(destinationTransformations).where(eq(destinationTransformations.transformationId, op.transformationId)).run();
        let n = 0;
        for (const destinationId of new Set(op.destinationIds)) n += this.attach(destinationId, op.transformationId);
        return n;
      }
      case "attachTransformation":
        return this.attach(op.destinationId, op.transformationId);
    }
  }

  async firstWorkspace(): Promise<WorkspaceRow | undefined> {
    return this.db.select().from(workspaces).orderBy(workspaces.createdAt, workspaces.id).limit(1).get();
  }

  async ownerOf(workspaceId: string): Promise<AccountRow | undefined> {
    return this.db.select().from(accounts).where(eq(accounts.workspaceId, workspaceId)).orderBy(accounts.createdAt, accounts.id).limit(1).get();
  }

  async accountByEmail(email: string): Promise<AccountRow | undefined> {
    return this.db.select().from(accounts).where(eq(accounts.email, email)).get();
  }

  async tokenCandidates(lookup: string): Promise<TokenCandidate[]> {
    return this.hot.tokenCandidates.all({ lookup });
  }

  async token(id: string): Promise<AccessTokenRow | undefined> {
    return this.db.select().from(accessTokens).where(eq(accessTokens.id, id)).get();
  }

  async tokensOfAccount(workspaceId: string, accountId: string): Promise<AccessTokenRow[]> {
    return this.db
      .select()
      .from(accessTokens)
      .where(and(eq(accessTokens.accountId, accountId), eq(accessTokens.workspaceId, workspaceId)))
      .orderBy(accessTokens.createdAt, accessTokens.id)
      .all();
  }

  async session(idHash: string): Promise<SessionWithEmail | undefined> {
    return this.db
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
      .where(eq(sessions.idHash, idHash))
      .get();
  }

  async writeAuth(ops: AuthWrite[]): Promise<number[]> {
    return this.db.$client.transaction(() => ops.map((op) => this.applyAuth(op)))();
  }

  private applyAuth(op: AuthWrite): number {
    const db = this.db;
    switch (op.op) {
      case "insertWorkspace":
        return changed(db.insert(workspaces).values(op.row).run());
      case "insertAccount":
        return changed(db.insert(accounts).values(op.row).run());
      case "insertToken":
        return changed(db.insert(accessTokens).values(op.row).run());
      case "revokeToken": {
        const where = and(eq(accessTokens.id, op.id), eq(accessTokens.accountId, op.accountId), eq(accessTokens.workspaceId, op.workspaceId));
        return changed(db.delete(accessTokens).where(where).run());
      }
      case "touchToken":
        return changed(db.update(accessTokens).set({ lastUsedAt: op.at }).where(eq(accessTokens.id, op.id)).run());
      case "insertSession":
        return changed(db.insert(sessions).values(op.row).run());
      case "deleteSession":
        return changed(db.delete(sessions).where(eq(sessions.idHash, op.idHash)).run());
      case "deleteExpiredSessions":
        return changed(db.delete(sessions).where(lt(sessions.expiresAt, op.before)).run());
      case "requireNoWorkspace":
        // One process writes this file, and the transaction runs without a break.
        if (db.select({ id: workspaces.id }).from(workspaces).limit(1).get()) throw new AppError("CONFLICT", "a workspace exists already");
        return 0;
    }
  }

  private attach(destinationId: string, transformationId: string): number {
    const upsert = this.db
      .insert(destinationTransformations)
      .values({ destinationId, transformationId })
      .onConflictDoUpdate({ target: destinationTransformations.destinationId, set: { transformationId } });
    return changed(upsert.run());
  }
}
