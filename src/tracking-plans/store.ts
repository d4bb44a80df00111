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

export interface TrackingPlanStore {
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
