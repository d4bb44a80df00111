/**
 * The regulations area's storage seam (cluster mode, design §2.1–2.4 and §3.4 of
 * src/cluster/README.md): the rules (`regulations`), their deletion jobs (`deletion_jobs`), the
 * suppression index's reads, and the deletion runner's claims and outcomes. SQLite
 * (src/storage/sqlite/regulations.ts) and PostgreSQL (src/storage/postgres/regulations.ts)
 * implement it; the services in this folder see only this interface.
 *
 * A unit of work is one call with plain-data input (as src/control-plane/store.ts explains: a
 * SQLite transaction cannot span an `await`). A create is its rows and their jobs, all or none;
 * a cancel is the rule, its jobs not yet run, and the user's rules still in force, read in the
 * same transaction so the suppression index can be set exactly from the answer.
 *
 * On PostgreSQL every write that changes suppression bumps the 'suppression' epoch in its own
 * transaction and stamps the rows it wrote with it (`regulations.seq`), so another instance pulls
 * only newer rows (`suppressionChangesSince`). On SQLite there is one process, every change goes
 * through its index, and the epoch stays 0.
 *
 * The last four methods touch the pipeline's tables (deliveries, events, the processor's
 * position): the deletion runner's removal of a regulated user's copies. They sit here until the
 * deliveries and event-log seams exist, because only regulations use them.
 */
import type { deletionJobs, RegulationAttributes, regulations } from "../../db/schema";
import type { DeletionStatus } from "./schemas";

// The SQLite schema's row types; the pg schema has the same shapes (plus `regulations.seq`, which
// only the PostgreSQL store reads and writes).
export type RegulationRow = typeof regulations.$inferSelect;
export type DeletionJobRow = typeof deletionJobs.$inferSelect;

/** Rules with the deletion jobs of their `suppress_with_delete` destinations: stored all or none. */
export interface NewRegulations {
  regulations: RegulationRow[];
  jobs: DeletionJobRow[];
}

/** A write that changed suppression. */
export interface SuppressionWrite {
  /** PostgreSQL: the 'suppression' epoch this write moved to (and stamped its rows with). SQLite: undefined. */
  epoch?: number;
}

/** A rule's sources: the ids, or null for every source of the workspace. */
export type RuleSources = string[] | null;

export interface CancelResult extends SuppressionWrite {
  userId: string;
  /** False when the regulation was cancelled already: nothing was written. */
  canceled: boolean;
  /** The sources of the user's regulations still in force after the cancel ([] = none). */
  remaining: RuleSources[];
}

/** One regulation in force, as the suppression index holds it. */
export interface ActiveSuppression {
  workspaceId: string;
  userId: string;
  sourceIds: RuleSources;
}

export interface SuppressionSnapshot {
  /** The epoch these rows are as of (read in the same snapshot). SQLite: 0. */
  epoch: number;
  rules: ActiveSuppression[];
}

/** Every rule in force of one user ([] = the user is no longer suppressed). */
export interface UserSuppression {
  workspaceId: string;
  userId: string;
  rules: RuleSources[];
}

export interface SuppressionChanges {
  /** The epoch these users are as of; the next call passes it. */
  epoch: number;
  /** Each user with a rule written after the given epoch, with all of their rules in force now. */
  users: UserSuppression[];
}

/** A due deletion job with its regulation's user. */
export interface DueDeletionJob {
  id: string;
  workspaceId: string;
  destinationId: string;
  attempts: number;
  firstAttemptAt: number | null;
  userId: string;
  attributes: RegulationAttributes;
}

/** How a run ended for one job. */
export interface DeletionJobOutcome {
  id: string;
  status: DeletionStatus;
  reason: string | null;
  attempts: number;
  firstAttemptAt: number;
  nextAttemptAt: number;
  at: number;
}

/** A half-open range of event ids: `afterId < id <= throughId`. */
export interface EventIdSlice {
  afterId: number;
  throughId: number;
}

export interface RegulationsStore {
  // ---------- the Data Regulation API ----------

  /** Stores the rules and their jobs in one transaction, all or none. */
  createRegulations(input: NewRegulations): Promise<SuppressionWrite>;
  /** The workspace's regulations with an id after `afterId` (ids are time-ordered), oldest first. */
  regulationsPage(workspaceId: string, afterId: string | undefined, limit: number): Promise<RegulationRow[]>;
  /** The deletion jobs of these regulations, in no particular order. */
  deletionJobsOf(regulationIds: string[]): Promise<DeletionJobRow[]>;
  /**
   * Marks the workspace's regulation canceled and aborts its jobs still pending or failed (a
   * running one finishes), in one transaction. Undefined when the workspace has no such regulation.
   */
  cancelRegulation(workspaceId: string, id: string, at: number): Promise<CancelResult | undefined>;

  // ---------- the suppression index ----------

  /** Every regulation in force, with the epoch they are as of. */
  activeSuppressions(): Promise<SuppressionSnapshot>;
  /** The database's 'suppression' epoch (SQLite: 0). */
  suppressionEpoch(): Promise<number>;
  /**
   * The users whose rules were written after `epoch` (PostgreSQL: `regulations.seq > epoch`), each
   * with all of their rules in force now. SQLite: none, ever (every change went through this process's index).
   */
  suppressionChangesSince(epoch: number): Promise<SuppressionChanges>;

  // ---------- deletion jobs ----------

  /** Pending and failed jobs due at `now`, by due time then id. */
  dueDeletionJobs(now: number, limit: number): Promise<DueDeletionJob[]>;
  /** When the next pending or failed job is due; undefined when there is none. */
  nextDeletionDueAt(): Promise<number | undefined>;
  /** Moves these jobs from pending or failed to running, in one transaction; answers the ids it moved. */
  claimDeletionJobs(ids: string[], at: number): Promise<string[]>;
  /** Records outcomes of running jobs in one transaction; a job no longer running (a cancel aborted it) is left alone. Answers the jobs changed. */
  finishDeletionJobs(outcomes: DeletionJobOutcome[]): Promise<number>;
  /** Start-up: jobs a crash left running go back to pending. Answers how many. */
  resetRunningDeletionJobs(at: number): Promise<number>;

  // ---------- the regulated users' copies in the pipeline's tables ----------

  /** Deletes every delivery (any state) of these users to the destination. */
  deleteDeliveriesOf(destinationId: string, userIds: string[]): Promise<number>;
  /** Does one of these users have an event from one of these sources that the processor has not fanned out yet? */
  hasUnroutedEvents(workspaceId: string, userIds: string[], routedSourceIds: string[]): Promise<boolean>;
  /** The smallest and largest event id stored; undefined when there are no events. */
  eventIdRange(): Promise<{ min: number; max: number } | undefined>;
  /**
   * Deletes the users' events in the slice that no delivery needs: no delivery row refers to
   * them, and either the processor has passed them or their source feeds no destination.
   */
  purgeEvents(slice: EventIdSlice, workspaceId: string, userIds: string[], routedSourceIds: string[]): Promise<number>;
}
