/**
 * Where tracking plans are kept: each plan by its id (RudderStack's, kept on import) within a
 * workspace, with every version. The SQLite and PostgreSQL stores are in src/storage/.
 */
export interface PlanProblem {
  event: string;
  message: string;
}

export interface PlanVersionRow {
  workspaceId: string;
  planId: string;
  version: number;
  /** The plan as given, in either of RudderStack's formats. */
  plan: Record<string, unknown>;
  /** Schemas Ajv could not compile; [] when all do. */
  problems: PlanProblem[];
  createdAt: number;
}

export interface PlanRow {
  workspaceId: string;
  id: string;
  name: string;
  currentVersion: number;
  createdAt: number;
  updatedAt: number;
}

export interface TrackingPlanStore extends TrackingPlanCountsStore {
  /** Adds a version (the plan row made or its name and current version moved on); false when that version exists already. */
  addVersion(row: PlanVersionRow, name: string): Promise<boolean>;
  plan(workspaceId: string, id: string): Promise<PlanRow | undefined>;
  plans(workspaceId: string): Promise<PlanRow[]>;
  /** One version, or the current one when none is named. */
  version(workspaceId: string, id: string, version?: number): Promise<PlanVersionRow | undefined>;
  versions(workspaceId: string, id: string): Promise<Array<Omit<PlanVersionRow, "plan">>>;
  /** Every version of every plan: what the processor validates against (a few plans per workspace). */
  allVersions(): Promise<PlanVersionRow[]>;
  deletePlan(workspaceId: string, id: string): Promise<boolean>;
}

/** Violations of one (source, UTC day, event, violation type, property), as counted or added. */
export interface ViolationCount {
  workspaceId: string;
  sourceId: string;
  /** "YYYY-MM-DD", UTC. */
  day: string;
  type: string;
  /** The track event's name; "" for the other types. */
  event: string;
  violationType: string;
  /** The property it is about (the missing or unplanned one, else the instancePath); "" when none. */
  property: string;
  count: number;
}

/** Events dropped of one (source, UTC day, event). */
export interface DroppedCount {
  workspaceId: string;
  sourceId: string;
  day: string;
  type: string;
  event: string;
  count: number;
}

/** A dropped event as the source's page lists it; the event itself stays in `events`. */
export interface DroppedEventRow {
  workspaceId: string;
  sourceId: string;
  eventId: number;
  /** When the stage dropped it (ms). */
  at: number;
  type: string;
  event: string;
  violationType: string;
  error: string;
  violations: Array<Record<string, unknown>>;
}

/** What one flush of the stage's counts writes, in one transaction. */
export interface TrackingPlanCountsFlush {
  violations: ViolationCount[];
  dropped: DroppedCount[];
  /** The newest dropped events; the store keeps the newest DROPPED_EVENTS_KEPT of each source. */
  droppedEvents: DroppedEventRow[];
}

/**
 * Days of counts retention keeps beyond its window (the stats store's purgeExpired): the report's
 * 7 days and the day before, whatever --retention-hours says.
 */
export const COUNT_DAYS_KEPT = 8;

/** Dropped events kept per source (older rows go as new ones come). */
export const DROPPED_EVENTS_KEPT = 100;

/**
 * The counts of the tracking-plan stage: added to by its flushes (several instances' add up),
 * read by the report and the stats. Retention (the stats store's purgeExpired) deletes old rows.
 */
export interface TrackingPlanCountsStore {
  /** Adds the counts and inserts the dropped events, one transaction. */
  addCounts(flush: TrackingPlanCountsFlush): Promise<void>;
  /** A source's violation counts of the days from `fromDay` on ("YYYY-MM-DD"). */
  violationCounts(sourceId: string, fromDay: string): Promise<ViolationCount[]>;
  /** A source's dropped counts of the days from `fromDay` on. */
  droppedCounts(sourceId: string, fromDay: string): Promise<DroppedCount[]>;
  /** A source's newest dropped events, newest first, with the stored (annotated) event; null once it is gone. */
  droppedEvents(sourceId: string, limit: number): Promise<Array<DroppedEventRow & { payload: string | null }>>;
}
