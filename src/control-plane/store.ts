/**
 * The control plane's storage seam (cluster mode, design §2.1–2.4 of src/cluster/README.md):
 * sources, destinations, connections, transformations with their versions, and which
 * transformation each destination runs; and who may call: workspaces, accounts, access tokens
 * and dashboard sessions (`writeAuth`, which moves no config epoch). SQLite
 * (src/storage/sqlite/control-plane.ts) and PostgreSQL (src/storage/postgres/control-plane.ts)
 * implement it; the services in this folder see only this interface.
 *
 * A unit of work is one call. On SQLite a transaction cannot span an `await`: the process has
 * one main connection, so whatever ran during the await (the router, other requests) would write
 * inside the open transaction. So a service reads and validates first (plan), then hands
 * `write()` the whole list of row operations (execute), which applies them in one transaction,
 * all or none. The operations are plain data, never callbacks, so both stores can apply them:
 * synchronously inside one SQLite transaction, in one `BEGIN … COMMIT` on PostgreSQL.
 *
 * Operations name rows by id; the service has checked that they belong to the caller's
 * workspace. A unique index a concurrent writer got to first (two instances creating the same
 * name) surfaces as the same 409 the service's own check gives (`uniqueViolation` below).
 */
import type {
  RudderDefinition,
  RudderSourceDefinition,
  accessTokens,
  accounts,
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
} from "../../db/schema";
import { AppError } from "../lib/errors";

// The SQLite schema's row types; the pg schema has the same shapes (test/storage/pg-schema.test.ts).
/**
 * `rudderDefinition` (the RudderStack file's sourceDefinition) is absent for sources made through
 * the API or Sluice's own file: the stores read its NULL as absent, as for DestinationRow.
 */
export type SourceRow = Omit<typeof sources.$inferSelect, "rudderDefinition" | "config" | "trackingPlanConfig"> & {
  rudderDefinition?: RudderSourceDefinition;
  config?: Record<string, unknown> | null;
  /** RudderStack's dgSourceTrackingPlanConfig (src/tracking-plans/); absent: no plan. */
  trackingPlanConfig?: Record<string, unknown> | null;
};
/**
 * `rudderDefinition` is absent for destinations made through the API or Sluice's own file: the
 * stores read its NULL as absent, so such a row reads back as it was written.
 */
export type DestinationRow = Omit<typeof destinations.$inferSelect, "rudderDefinition"> & { rudderDefinition?: RudderDefinition };
export type ConnectionRow = typeof connections.$inferSelect;
/** `externalId` (RudderStack's id) is absent for transformations made in Sluice: the stores read its NULL as absent. */
export type TransformationRow = Omit<typeof transformations.$inferSelect, "externalId"> & { externalId?: string | null };
/** `externalId` and `libraries` likewise absent when NULL; `code` is null for a RudderStack version whose code is not here yet. */
export type TransformationVersionRow = Omit<typeof transformationVersions.$inferSelect, "externalId" | "libraries"> & {
  externalId?: string | null;
  libraries?: Record<string, string> | null;
};
export type DestinationTransformationRow = typeof destinationTransformations.$inferSelect;
export type LibraryRow = typeof libraries.$inferSelect;
export type LibraryVersionRow = typeof libraryVersions.$inferSelect;
export type WorkspaceRow = typeof workspaces.$inferSelect;
export type AccountRow = typeof accounts.$inferSelect;
export type AccessTokenRow = typeof accessTokens.$inferSelect;
export type SessionRow = typeof sessions.$inferSelect;

/** A token whose hash starts like the one presented, with its account's e-mail: the caller compares hashes in constant time. */
export interface TokenCandidate {
  id: string;
  secretHash: string;
  accountId: string;
  workspaceId: string;
  email: string;
}

/** A session row with its account's e-mail. */
export type SessionWithEmail = SessionRow & { email: string };

export type SourceChanges = Partial<Pick<SourceRow, "name" | "writeKey" | "enabled" | "settings" | "updatedAt" | "rudderDefinition" | "config" | "trackingPlanConfig">>;
/** `rudderDefinition: null` clears it (a new type through the API makes the file's definition wrong). */
export type DestinationChanges = Partial<Pick<DestinationRow, "name" | "type" | "config" | "enabled" | "updatedAt">> & { rudderDefinition?: RudderDefinition | null };
export type TransformationChanges = Partial<Pick<TransformationRow, "name" | "versionId" | "updatedAt" | "externalId">>;
export type LibraryChanges = Partial<Pick<LibraryRow, "name" | "versionId" | "updatedAt" | "externalId">>;
/** What a transformation version holds besides its code: RudderStack's versionId and the pinned library versions. */
export type VersionExtras = Partial<Pick<TransformationVersionRow, "externalId" | "libraries">>;

/**
 * One row operation of a write. What each counts in `WriteResult.changes`: inserts, updates and
 * deletes the rows they changed (0 when the id is gone); `connect` 0 when the connection existed;
 * `disconnect` 0 when there was none; the `set…`/`attach…` operations the rows they inserted.
 */
export type ControlPlaneWrite =
  | { op: "insertSource"; row: SourceRow }
  | { op: "updateSource"; id: string; set: SourceChanges }
  /** Its connections go with it (ON DELETE CASCADE). */
  | { op: "deleteSource"; id: string }
  | { op: "insertDestination"; row: DestinationRow }
  | { op: "updateDestination"; id: string; set: DestinationChanges }
  /** Its connections and its transformation's attachment go with it. */
  | { op: "deleteDestination"; id: string }
  /** Replaces the destination's connections with these sources (duplicates kept once). */
  | { op: "setDestinationSources"; destinationId: string; sourceIds: string[]; at: number }
  /** Idempotent: connecting twice keeps one connection. */
  | { op: "connect"; sourceId: string; destinationId: string; at: number }
  | { op: "disconnect"; sourceId: string; destinationId: string }
  /**
   * The transformation with its first version: `row.versionId` names it, made at `row.createdAt`.
   * `code: null` is a RudderStack version whose code is not here yet (its destinations are held).
   */
  | { op: "insertTransformation"; row: TransformationRow; code: string | null; version?: VersionExtras }
  /** A saved version; `updateTransformation` with its id as `versionId` makes it the one that runs. */
  | { op: "insertTransformationVersion"; row: TransformationVersionRow }
  | { op: "updateTransformation"; id: string; set: TransformationChanges }
  /** Supplies the code of a version that had none (counts 0 when it has code already: versions never change). */
  | { op: "fillTransformationVersion"; id: string; code: string; libraries: Record<string, string> | null }
  /** The library with its first version (`row.versionId`), made at `row.createdAt`. */
  | { op: "insertLibrary"; row: LibraryRow; code: string; versionExternalId?: string | null }
  /** A saved library version; `updateLibrary` with its id as `versionId` makes it the current one. */
  | { op: "insertLibraryVersion"; row: LibraryVersionRow }
  | { op: "updateLibrary"; id: string; set: LibraryChanges }
  /** Its versions go with it. */
  | { op: "deleteLibrary"; id: string }
  /** Its versions and attachments go with it (its destinations then run none). */
  | { op: "deleteTransformation"; id: string }
  /** Exactly these destinations run the transformation: it leaves the others and moves these from any other. */
  | { op: "setTransformationDestinations"; transformationId: string; destinationIds: string[] }
  /** The destination runs this transformation (a destination runs at most one: it replaces any other). */
  | { op: "attachTransformation"; destinationId: string; transformationId: string };

/**
 * Row operations of `writeAuth`: workspaces, accounts, access tokens and dashboard sessions.
 * Each counts the rows it changed in the answer.
 */
export type AuthWrite =
  | { op: "insertWorkspace"; row: WorkspaceRow }
  | { op: "insertAccount"; row: AccountRow }
  | { op: "insertToken"; row: AccessTokenRow }
  /** Only when the token is the account's in that workspace; its sessions go with it (ON DELETE CASCADE). */
  | { op: "revokeToken"; id: string; accountId: string; workspaceId: string }
  | { op: "touchToken"; id: string; at: number }
  | { op: "insertSession"; row: SessionRow }
  | { op: "deleteSession"; idHash: string }
  /** Every session that expired before `before`. */
  | { op: "deleteExpiredSessions"; before: number }
  /**
   * Fails the write (CONFLICT) when a workspace exists. First start puts it before its inserts:
   * on PostgreSQL it also takes a transaction-scoped advisory lock, so of two instances starting
   * at once on an empty database only one makes a workspace, whatever e-mails they were given.
   */
  | { op: "requireNoWorkspace" };

export interface WriteResult {
  /** Per operation, in order: the rows it changed (see ControlPlaneWrite). */
  changes: number[];
  /**
   * PostgreSQL: the 'config' epoch after this write (bumped by one in the same transaction,
   * design §3.4); undefined for an empty list, which changes nothing. SQLite: undefined (one
   * process; SqliteConfigStore drops its caches).
   */
  epoch?: number;
}

/**
 * Everything routing needs, across workspaces: what ConfigStore's cluster variant holds in
 * memory (src/control-plane/config-store.ts).
 */
export interface RoutingRows {
  sources: SourceRow[];
  destinations: DestinationRow[];
  /** Ordered by createdAt (a source's destinations are routed in the order they were connected). */
  connections: ConnectionRow[];
  /** Each destination that runs a transformation, with its current version (code null: not here yet). */
  attachments: RoutingAttachment[];
  /** The code of every library version a running transformation version pins. */
  libraryVersions: Array<{ id: string; code: string }>;
}

export interface RoutingAttachment {
  destinationId: string;
  transformationId: string;
  versionId: string;
  code: string | null;
  /** Absent unless imported from RudderStack (as in TransformationVersionRow). */
  externalId?: string | null;
  /** Import name → library version id; absent when the version imports none. */
  libraries?: Record<string, string> | null;
}

export interface ControlPlaneStore {
  /** Every workspace's sources, destinations, connections and running transformations. */
  routing(): Promise<RoutingRows>;

  source(workspaceId: string, id: string): Promise<SourceRow | undefined>;
  sourceByName(workspaceId: string, name: string): Promise<SourceRow | undefined>;
  /** Write keys are unique across workspaces (they alone pick the source of an event call). */
  sourceByWriteKey(writeKey: string): Promise<SourceRow | undefined>;
  /** Ordered by createdAt, id. */
  sources(workspaceId: string): Promise<SourceRow[]>;
  /** Which of `ids` are sources of the workspace. */
  existingSourceIds(workspaceId: string, ids: string[]): Promise<Set<string>>;

  destination(workspaceId: string, id: string): Promise<DestinationRow | undefined>;
  destinationByName(workspaceId: string, name: string): Promise<DestinationRow | undefined>;
  /** Ordered by createdAt, id. */
  destinations(workspaceId: string): Promise<DestinationRow[]>;
  /** Which of `ids` are destinations of the workspace. */
  existingDestinationIds(workspaceId: string, ids: string[]): Promise<Set<string>>;

  /** The connections of the workspace's destinations, ordered by createdAt, sourceId, destinationId. */
  connections(workspaceId: string): Promise<ConnectionRow[]>;
  /** Ordered by createdAt, destinationId. */
  connectionsOfSource(sourceId: string): Promise<ConnectionRow[]>;
  /** Ordered by createdAt, sourceId. */
  connectionsOfDestination(destinationId: string): Promise<ConnectionRow[]>;

  transformation(workspaceId: string, id: string): Promise<TransformationRow | undefined>;
  transformationByName(workspaceId: string, name: string): Promise<TransformationRow | undefined>;
  /** Ordered by createdAt, id. */
  transformations(workspaceId: string): Promise<TransformationRow[]>;
  /** Newest first (version ids are time-ordered, so they break ties within one millisecond). */
  transformationVersions(transformationId: string): Promise<TransformationVersionRow[]>;
  transformationVersion(transformationId: string, versionId: string): Promise<TransformationVersionRow | undefined>;
  /** The code of one version (a transformation's current one: its versionId); null for a version whose code is not here yet. */
  versionCode(versionId: string): Promise<string | null | undefined>;
  /** The workspace's newest version with this RudderStack versionId, if any. */
  versionByExternalId(workspaceId: string, externalId: string): Promise<TransformationVersionRow | undefined>;
  transformationByExternalId(workspaceId: string, externalId: string): Promise<TransformationRow | undefined>;
  /** Ordered by destinationId. */
  destinationIdsOfTransformation(transformationId: string): Promise<string[]>;
  transformationIdOfDestination(destinationId: string): Promise<string | undefined>;
  /** Which transformation each of the workspace's destinations runs (those that run one). */
  attachments(workspaceId: string): Promise<DestinationTransformationRow[]>;

  /** Ordered by importName. */
  libraries(workspaceId: string): Promise<LibraryRow[]>;
  library(workspaceId: string, id: string): Promise<LibraryRow | undefined>;
  libraryByImportName(workspaceId: string, importName: string): Promise<LibraryRow | undefined>;
  libraryByExternalId(workspaceId: string, externalId: string): Promise<LibraryRow | undefined>;
  /** Newest first. */
  libraryVersions(libraryId: string): Promise<LibraryVersionRow[]>;
  /** The code of these library versions, by id (ids not found are absent). */
  libraryVersionCode(ids: string[]): Promise<Map<string, string>>;

  /** Applies every operation in one transaction, in order: all of them or, if one fails, none. */
  write(ops: ControlPlaneWrite[]): Promise<WriteResult>;

  // ---------- who may call: workspaces, accounts, access tokens, dashboard sessions ----------

  /** The oldest workspace (the one a first start created). */
  firstWorkspace(): Promise<WorkspaceRow | undefined>;
  /** The workspace's oldest account (its owner). */
  ownerOf(workspaceId: string): Promise<AccountRow | undefined>;
  accountByEmail(email: string): Promise<AccountRow | undefined>;
  /** Tokens whose hash begins with `lookup`, joined with their account (a token of no account matches nothing). */
  tokenCandidates(lookup: string): Promise<TokenCandidate[]>;
  token(id: string): Promise<AccessTokenRow | undefined>;
  /** The account's tokens in the workspace, ordered by createdAt, id. */
  tokensOfAccount(workspaceId: string, accountId: string): Promise<AccessTokenRow[]>;
  /** The session with this id hash, joined with its account. */
  session(idHash: string): Promise<SessionWithEmail | undefined>;
  /**
   * Applies the operations in one transaction, all or none, and answers the rows each changed.
   * Apart from `write` because none of them changes what the router delivers: on PostgreSQL
   * they do not bump the 'config' epoch, so signing in or a token's last use never makes every
   * instance reload its config. Revocation needs no epoch either: no instance caches tokens or
   * sessions, each request reads them from the database, so a revoked token (and the sessions
   * that cascade with it) fails on every instance from the commit on.
   */
  writeAuth(ops: AuthWrite[]): Promise<number[]>;
}

/** A source row as a store reads it: a NULL rudderDefinition or config becomes absent (see SourceRow). */
export function sourceFromStore(row: Omit<SourceRow, "rudderDefinition"> & { rudderDefinition?: RudderSourceDefinition | null }): SourceRow {
  if (row.rudderDefinition != null && row.config != null && row.trackingPlanConfig != null) return row as SourceRow;
  const { rudderDefinition, config, trackingPlanConfig, ...rest } = row;
  return { ...rest, ...(rudderDefinition != null ? { rudderDefinition } : {}), ...(config != null ? { config } : {}), ...(trackingPlanConfig != null ? { trackingPlanConfig } : {}) };
}

/** A destination row as a store reads it: a NULL rudderDefinition becomes absent (see DestinationRow). */
export function destinationFromStore(row: Omit<DestinationRow, "rudderDefinition"> & { rudderDefinition?: RudderDefinition | null }): DestinationRow {
  if (row.rudderDefinition != null) return row as DestinationRow;
  const { rudderDefinition: _, ...rest } = row;
  return rest;
}

/** Drops the NULL columns a transformation or version row has only when imported from RudderStack (see TransformationRow). */
export function withoutNulls<T extends object>(row: T): T {
  const out = { ...row } as Record<string, unknown>;
  for (const k of ["externalId", "libraries"]) if (out[k] === null) delete out[k];
  return out as T;
}

/** Unique indexes that a user's input can collide with, by the constraint name both schemas give them. */
export type UniqueConstraint =
  | "sources_workspace_name"
  | "sources_write_key_unique"
  | "destinations_workspace_name"
  | "transformations_workspace_name"
  | "libraries_workspace_import_name";

/**
 * A write key is unique across all workspaces, so its refusal must not tell a workspace that
 * some other workspace uses that key: the answer is the 400 of any unusable key, and its text
 * says what to do, not why. (Sending an event with the key tells as much, so this is about not
 * advertising it, not about hiding it.)
 */
export const writeKeyTaken = () => new AppError("BAD_REQUEST", "writeKey: choose another write key");

/**
 * The error for an operation that hit a unique index: the one the service's own check gives (a
 * 409 for a name, writeKeyTaken's 400 for a write key), so a concurrent writer that got there
 * first (another request, another instance) is told apart from a bug. Undefined for a
 * constraint that no input can break (a primary key).
 */
export function uniqueViolation(op: ControlPlaneWrite, constraint: string): AppError | undefined {
  const name = "row" in op ? (op.row as { name?: string }).name : "set" in op ? op.set.name : undefined;
  switch (constraint as UniqueConstraint) {
    case "sources_workspace_name":
      return new AppError("CONFLICT", `name: a source named '${name}' already exists`);
    case "sources_write_key_unique":
      return writeKeyTaken();
    case "destinations_workspace_name":
      return new AppError("CONFLICT", `name: a destination named '${name}' already exists`);
    case "transformations_workspace_name":
      return new AppError("CONFLICT", `name: a transformation named '${name}' already exists`);
    case "libraries_workspace_import_name": {
      const importName = "row" in op ? (op.row as { importName?: string }).importName : undefined;
      return new AppError("CONFLICT", `importName: a library imported as '${importName}' already exists`);
    }
    default:
      return undefined;
  }
}
