/**
 * The Data Regulation API's verbs: create (one record per user), list by cursor, cancel.
 * Suppression and queue removal take effect before the call returns; the deletion at
 * the destination runs as a job.
 */
import type { RegulationAttributes } from "../../db/schema";
import { badRequest, notFound } from "../lib/errors";
import type { Scoped } from "../control-plane/context";
import type { RegulationsContext } from "./context";
import { newId } from "../lib/ids";
import type { DeletionRunner } from "./deletion";
import { type DeletionState, type Regulation, type RegulationPage, REGULATION_TYPES, type RegulationType } from "./schemas";
import type { DeletionJobRow, RegulationRow, RegulationsStore } from "./store";
import type { SuppressionIndex } from "./suppression";

export interface RegulationDeps {
  /** Rules and deletion jobs: SQLite or PostgreSQL behind one interface. */
  store: RegulationsStore;
  suppression: SuppressionIndex;
  deletions: DeletionRunner;
}

export const PAGE_SIZE = 100;
/** Keeps one request's transaction short; RudderStack states no limit. */
export const MAX_USERS = 10_000;

const FIELDS = new Set(["regulationType", "sourceIds", "destinationIds", "users"]);

interface Checked {
  regulationType: RegulationType;
  sourceIds?: string[];
  destinationIds?: string[];
  users: RegulationAttributes[];
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/** An optional list of ids: absent, or a non-empty array of non-empty strings (duplicates dropped). */
function idList(body: Record<string, unknown>, field: "sourceIds" | "destinationIds", what: string): string[] | undefined {
  const v = body[field];
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) throw badRequest(`${field}: must be an array of ${what} ids`);
  if (v.length === 0) {
    throw badRequest(field === "sourceIds" ? "sourceIds: must list at least one source (leave it out to suppress every source)" : `${field}: must list at least one ${what}`);
  }
  v.forEach((id, i) => {
    if (typeof id !== "string" || id === "") throw badRequest(`${field}[${i}]: must be a non-empty string (a ${what} id)`);
  });
  return [...new Set(v as string[])];
}

function checkUsers(body: Record<string, unknown>): RegulationAttributes[] {
  const users = body.users;
  if (users === undefined) throw badRequest("users: is required (a list of users, each with a userId)");
  if (!Array.isArray(users)) throw badRequest("users: must be an array of users, each with a userId");
  if (users.length === 0) throw badRequest("users: must list at least one user");
  if (users.length > MAX_USERS) throw badRequest(`users: at most ${MAX_USERS} users per request`);
  const byId = new Map<string, RegulationAttributes>();
  users.forEach((u, i) => {
    if (!isObject(u)) throw badRequest(`users[${i}]: must be an object with a userId`);
    if (u.userId === undefined) throw badRequest(`users[${i}].userId: is required`);
    if (typeof u.userId !== "string" || u.userId === "") throw badRequest(`users[${i}].userId: must be a non-empty string`);
    for (const [k, v] of Object.entries(u)) {
      if (typeof v !== "string") throw badRequest(`users[${i}].${k}: must be a string`);
    }
    // One record per user: a userId listed twice in one request is kept once.
    if (!byId.has(u.userId)) byId.set(u.userId, { ...(u as Record<string, string>), userId: u.userId });
  });
  return [...byId.values()];
}

/** Checks every rule of the Data Regulation API (docs/api.md), naming the first one broken. */
function checkBody(ctx: Scoped<RegulationsContext>, body: unknown): Checked {
  if (!isObject(body)) throw badRequest("body: must be a JSON object with regulationType and users");
  for (const k of Object.keys(body)) {
    // A misspelt sourceIds would otherwise silently widen a suppression to every source.
    if (!FIELDS.has(k)) throw badRequest(`${k}: unknown field (expected regulationType, sourceIds, destinationIds, users)`);
  }
  const type = body.regulationType;
  if (type === undefined) throw badRequest("regulationType: is required ('suppress' or 'suppress_with_delete')");
  if (!REGULATION_TYPES.includes(type as RegulationType)) {
    throw badRequest(`regulationType: must be 'suppress' or 'suppress_with_delete', not ${JSON.stringify(type)}`);
  }
  const regulationType = type as RegulationType;
  const users = checkUsers(body);
  // Rule 1: suppress takes sourceIds only; suppress_with_delete takes destinationIds only.
  if (regulationType === "suppress" && body.destinationIds !== undefined) {
    throw badRequest("destinationIds: not allowed with regulationType 'suppress' (use 'suppress_with_delete' to delete data at destinations)");
  }
  if (regulationType === "suppress_with_delete" && body.sourceIds !== undefined) {
    throw badRequest("sourceIds: not allowed with regulationType 'suppress_with_delete' (it suppresses every source; use 'suppress' to choose sources)");
  }
  if (regulationType === "suppress_with_delete") {
    const v = body.destinationIds;
    if (v === undefined || (Array.isArray(v) && v.length === 0)) {
      throw badRequest("destinationIds: is required with regulationType 'suppress_with_delete' (the destinations whose data is deleted)");
    }
  }
  const sourceIds = idList(body, "sourceIds", "source");
  const destinationIds = idList(body, "destinationIds", "destination");

  const snap = ctx.config.snapshot();
  for (const id of sourceIds ?? []) {
    if (snap.sources.get(id)?.workspaceId !== ctx.workspaceId) throw badRequest(`sourceIds: source '${id}' not found in this workspace`);
  }
  for (const id of destinationIds ?? []) {
    const dest = snap.destinations.get(id);
    if (dest?.workspaceId !== ctx.workspaceId) throw badRequest(`destinationIds: destination '${id}' not found in this workspace`);
    // Rule 2: key-value and object stores delete by userId alone.
    if (dest.definition?.deletionByUserIdOnly) {
      users.forEach((u, i) => {
        const extra = Object.keys(u).find((k) => k !== "userId");
        if (extra) {
          throw badRequest(`users[${i}].${extra}: destination '${id}' (${dest.type}) deletes users by userId only; leave out other identifiers`);
        }
      });
    }
  }
  return { regulationType, sourceIds, destinationIds, users };
}

/** POST /v2/regulations: validates, stores, and suppresses before returning. */
export async function createRegulations(ctx: Scoped<RegulationsContext>, deps: RegulationDeps, body: unknown): Promise<{ ids: string[] }> {
  const input = checkBody(ctx, body);
  const now = ctx.now();
  const regRows = input.users.map((attributes): RegulationRow => ({
    id: newId("reg"),
    workspaceId: ctx.workspaceId,
    regulationType: input.regulationType,
    userId: attributes.userId,
    attributes,
    sourceIds: input.sourceIds ?? null,
    destinationIds: input.destinationIds ?? null,
    canceled: false,
    createdAt: now,
    updatedAt: now,
  }));
  const jobRows = regRows.flatMap((r) =>
    (input.destinationIds ?? []).map((destinationId): DeletionJobRow => ({
      id: newId("del"),
      regulationId: r.id,
      workspaceId: ctx.workspaceId,
      destinationId,
      status: "pending",
      attempts: 0,
      nextAttemptAt: now,
      firstAttemptAt: null,
      reason: null,
      createdAt: now,
      updatedAt: now,
    })),
  );
  const userIds = input.users.map((u) => u.userId);
  const write = await deps.store.createRegulations({ regulations: regRows, jobs: jobRows });
  // As the commit's answer arrives, before anything else runs, so no event call of this
  // process can pass the check in between; events that passed it earlier are committed and
  // fanned out before their deliveries are removed.
  deps.suppression.added(ctx.workspaceId, userIds, input.sourceIds ?? null);
  await deps.suppression.written(write);
  if (input.destinationIds) {
    try {
      await deps.deletions.removeQueued(ctx.workspaceId, input.destinationIds, userIds);
    } catch (err) {
      // The deletion job removes them again before it asks the destination.
      ctx.log.warn("could not remove queued deliveries at once", { err, workspaceId: ctx.workspaceId });
    }
    deps.deletions.wake();
  }
  return { ids: regRows.map((r) => r.id) };
}

const CURSOR_ID = /^reg_[0-9a-f]{32}$/;

const encodeCursor = (id: string) => Buffer.from(id).toString("base64url");

function decodeCursor(cursor: string): string {
  const id = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, "base64url").toString("utf8") : "";
  if (!CURSOR_ID.test(id)) throw badRequest("after_cursor: not a valid cursor (take it from paging.next of the previous page)");
  return id;
}

function present(row: RegulationRow, jobs: DeletionJobRow[] | undefined): Regulation {
  const out: Regulation = {
    id: row.id,
    workspaceId: row.workspaceId,
    canceled: row.canceled,
    regulationType: row.regulationType as RegulationType,
    attributes: row.attributes,
    createdAt: new Date(row.createdAt).toISOString(),
  };
  if (row.sourceIds) out.sourceIds = row.sourceIds;
  if (row.destinationIds) {
    out.destinationIds = row.destinationIds;
    const order = new Map(row.destinationIds.map((d, i) => [d, i]));
    out.deletion = (jobs ?? [])
      .sort((a, b) => (order.get(a.destinationId) ?? 0) - (order.get(b.destinationId) ?? 0))
      .map((j): DeletionState => {
        const s: DeletionState = { destinationId: j.destinationId, status: j.status as DeletionState["status"], updatedAt: new Date(j.updatedAt).toISOString() };
        if (j.reason) s.reason = j.reason;
        return s;
      });
  }
  return out;
}

/** GET /v2/regulations: the workspace's regulations, oldest first, 100 a page. */
export async function listRegulations(ctx: Scoped<RegulationsContext>, deps: Pick<RegulationDeps, "store">, afterCursor?: string): Promise<RegulationPage> {
  const after = afterCursor === undefined ? undefined : decodeCursor(afterCursor);
  const rows = await deps.store.regulationsPage(ctx.workspaceId, after, PAGE_SIZE + 1);
  const page = rows.slice(0, PAGE_SIZE);
  const withJobs = page.filter((r) => r.destinationIds).map((r) => r.id);
  const jobsBy = new Map<string, DeletionJobRow[]>();
  if (withJobs.length) {
    for (const j of await deps.store.deletionJobsOf(withJobs)) {
      let list = jobsBy.get(j.regulationId);
      if (!list) jobsBy.set(j.regulationId, (list = []));
      list.push(j);
    }
  }
  const paging: RegulationPage["paging"] = {};
  if (rows.length > PAGE_SIZE) paging.next = `/v2/regulations?after_cursor=${encodeCursor(page[page.length - 1]!.id)}`;
  return { data: page.map((r) => present(r, jobsBy.get(r.id))), paging };
}

/**
 * DELETE /v2/regulations/{id}: the record stays, marked canceled; suppression of the
 * user lifts unless another active regulation holds it. Deletion jobs not yet run are
 * aborted; one already running finishes.
 */
export async function cancelRegulation(ctx: Scoped<RegulationsContext>, deps: RegulationDeps, id: string): Promise<void> {
  const result = await deps.store.cancelRegulation(ctx.workspaceId, id, ctx.now());
  if (!result) throw notFound(`regulation '${id}' not found`);
  // The user's rules in force were read in the cancel's own transaction: the index is set to
  // exactly what the database holds, whether or not another regulation still suppresses them.
  deps.suppression.setUser({ workspaceId: ctx.workspaceId, userId: result.userId, rules: result.remaining });
  await deps.suppression.written(result);
}
