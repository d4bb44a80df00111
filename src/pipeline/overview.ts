/**
 * The dashboard's overview: events received, delivered, failed and aborted per minute, in
 * total and per source and destination, and what needs attention (destinations holding
 * aborted events, deletions that failed). Beside them, tracking-plan violations and dropped
 * events per day, from the daily counts the tracking-plan stage keeps.
 *
 * No table of its own: the stored rows already answer it, read through the stats store
 * (StatsStore in store.ts; on PostgreSQL the shared tables, so every instance's events count). Received
 * is counted from `events` by received_at; delivered and aborted from `deliveries` by state and
 * updated_at (index deliveries_updated);
 * failed from the attempt log each delivery keeps (its last ten attempts, each with its time),
 * so a failed attempt is counted in the minute it happened, even for a delivery that later
 * succeeded. The final attempt of an aborted delivery counts as aborted, not failed.
 * Settled minutes are counted once and kept in memory (see SettledMinutes), so a request reads
 * about the last minute's rows; after a start the first request counts the whole range once.
 */
import { utcDay } from "../tracking-plans/violation-counts";
import { Elysia, type Static, t } from "elysia";
import { withWorkspace } from "../control-plane/routes";
import type { Scoped } from "../control-plane/context";
import type { PipelineApiContext } from "./context";
import { badRequest } from "../lib/errors";
import { type MinuteCount, OPEN_END, type StatsStore } from "./store";
import { setImmediate as nextTurn } from "node:timers/promises";

const MINUTE = 60_000;
export const MAX_MINUTES = 1440;

const Counts = t.Array(t.Integer(), { description: "One count per minute, oldest first (aligned with `minuteStarts`)." });
const Totals = t.Object({ received: t.Integer(), delivered: t.Integer(), failed: t.Integer(), aborted: t.Integer() });

const MINUTES_RULE = `expected a whole number of minutes from 1 to ${MAX_MINUTES}`;

// A string checked by hand: t.Numeric reports its range errors without the field's name.
export const TimeseriesQuery = t.Object({
  minutes: t.Optional(
    t.String({ pattern: "^[0-9]{1,5}$", errorMessage: MINUTES_RULE, description: `How many minutes back, the current one included: 1 to ${MAX_MINUTES}, default 60.` }),
  ),
});

/** `?minutes=` as a number, or a 400 naming it. */
export function parseMinutes(raw: string | undefined): number {
  if (raw === undefined) return 60;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_MINUTES) throw badRequest(`query.minutes: ${MINUTES_RULE}`);
  return n;
}

export const Timeseries = t.Object({
  minutes: t.Integer(),
  minuteStarts: t.Array(t.String({ format: "date-time" })),
  total: t.Object({ received: Counts, delivered: Counts, failed: Counts, aborted: Counts, totals: Totals }),
  sources: t.Array(t.Object({ id: t.String(), name: t.String(), received: Counts, delivered: Counts, failed: Counts, aborted: Counts, totals: Totals })),
  destinations: t.Array(
    t.Object({
      id: t.String(),
      name: t.String(),
      type: t.String(),
      delivered: Counts,
      failed: Counts,
      aborted: Counts,
      totals: t.Object({ delivered: t.Integer(), failed: t.Integer(), aborted: t.Integer() }),
    }),
    { description: "Without `received`: the per-minute count of events routed to a destination is not kept." },
  ),
});
export type Timeseries = Static<typeof Timeseries>;

export const Attention = t.Object({
  destinations: t.Array(
    t.Object({
      id: t.String(),
      name: t.String(),
      type: t.String(),
      enabled: t.Boolean(),
      aborted: t.Integer({ description: "Aborted deliveries still kept (within retention); replay puts them back in the queue." }),
      lastError: t.Union([t.Null(), t.Object({ error: t.String(), at: t.String({ format: "date-time" }) })]),
    }),
  ),
  deletions: t.Array(
    t.Object({
      regulationId: t.String(),
      userId: t.String(),
      destinationId: t.String(),
      destinationName: t.Union([t.Null(), t.String()], { description: "null when the destination was deleted." }),
      status: t.Union([t.Literal("failed"), t.Literal("aborted")], { description: "failed: will be retried; aborted: given up." }),
      reason: t.Union([t.Null(), t.String()]),
      attempts: t.Integer(),
      updatedAt: t.String({ format: "date-time" }),
    }),
  ),
  deletionsTotal: t.Integer({ description: "All failing deletions; `deletions` lists the latest 50." }),
});
export type Attention = Static<typeof Attention>;

const DELETIONS_SHOWN = 50;

type Kind = "received" | "delivered" | "failed" | "aborted";
type Series = Record<Kind, number[]>;

const emptySeries = (n: number): Series => ({
  received: new Array(n).fill(0),
  delivered: new Array(n).fill(0),
  failed: new Array(n).fill(0),
  aborted: new Array(n).fill(0),
});

const totalsOf = (s: Series) => ({
  received: s.received.reduce((a, b) => a + b, 0),
  delivered: s.delivered.reduce((a, b) => a + b, 0),
  failed: s.failed.reduce((a, b) => a + b, 0),
  aborted: s.aborted.reduce((a, b) => a + b, 0),
});

type Cell = MinuteCount;

/** Outcomes and commits reach the database a moment after their time; a minute counts as settled this long after its end. */
const SETTLE_MS = 15_000;
/** Time slices of a long range, so that counting a cold day gives intake its turn between slices. */
const SLICE_MS = 10 * MINUTE;
const FAR = OPEN_END;

function slices(from: number, to: number, now: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let x = from;
  while (to - x > SLICE_MS && x + SLICE_MS <= now) {
    out.push([x, x + SLICE_MS]);
    x += SLICE_MS;
  }
  out.push([x, to]);
  return out;
}

/**
 * What happened in [from, to): events received, deliveries that succeeded or were aborted, and
 * failed attempts. A failed attempt is found on its delivery, which may have been updated any
 * time since, so those rows are read from `from` on, each once, slice by slice.
 */
async function countRange(store: StatsStore, workspaceId: string, from: number, to: number, now: number): Promise<Cell[]> {
  const cells: Cell[] = [];
  const parts = slices(from, to, now);
  for (const [a, b] of parts) {
    cells.push(...(await store.countOutcomes(workspaceId, a, b)));
    if (parts.length > 1) await nextTurn();
  }
  const rowParts = slices(from, FAR, now);
  for (const [a, b] of rowParts) {
    cells.push(...(await store.countFailedAttempts(workspaceId, a, b, from, to)));
    if (rowParts.length > 1) await nextTurn();
  }
  return cells;
}

/**
 * Settled minutes of one workspace, [from, to) as minute indexes: their counts no longer change
 * (a later replay or purge does not rewrite history), so each is counted once, and a request
 * reads the database only for the minutes since (about one).
 */
interface SettledMinutes {
  from: number;
  to: number;
  cells: Map<number, Cell[]>;
  filling?: Promise<void>;
}
const settledByStore = new WeakMap<StatsStore, Map<string, SettledMinutes>>();

async function settledCells(store: StatsStore, workspaceId: string, first: number, settledTo: number, now: number): Promise<SettledMinutes> {
  let byWorkspace = settledByStore.get(store);
  if (!byWorkspace) settledByStore.set(store, (byWorkspace = new Map()));
  let st = byWorkspace.get(workspaceId);
  if (!st) byWorkspace.set(workspaceId, (st = { from: first, to: first, cells: new Map() }));
  // One filler at a time: a second request waits and then finds the minutes there.
  while (st.filling) await st.filling;
  const fill = async (from: number, to: number) => {
    if (to <= from) return;
    const found = new Map<number, Cell[]>();
    for (const cell of await countRange(store, workspaceId, from * MINUTE, to * MINUTE, now)) {
      if (cell.minute < from || cell.minute >= to) continue;
      let list = found.get(cell.minute);
      if (!list) found.set(cell.minute, (list = []));
      list.push(cell);
    }
    for (let m = from; m < to; m++) st!.cells.set(m, found.get(m) ?? []);
  };
  const work = (async () => {
    // A gap between what is kept and what is asked: start over rather than keep two ranges.
    if (st.to < first || st.from > settledTo) {
      st.cells.clear();
      st.from = st.to = first;
    }
    if (first < st.from) {
      await fill(first, st.from);
      st.from = first;
    }
    if (st.to < settledTo) {
      await fill(st.to, settledTo);
      st.to = settledTo;
    }
    const oldest = Math.floor(now / MINUTE) - MAX_MINUTES;
    for (const m of st.cells.keys()) if (m < oldest) st.cells.delete(m);
    st.from = Math.max(st.from, oldest);
  })();
  st.filling = work;
  try {
    await work;
  } finally {
    st.filling = undefined;
  }
  return st;
}

/** Per-minute counts over the last `minutes` minutes (the current, unfinished one last). */
export async function eventTimeseries(ctx: Scoped<PipelineApiContext>, minutes = 60): Promise<Timeseries> {
  const now = ctx.now();
  const lastMinute = Math.floor(now / MINUTE);
  const firstMinute = lastMinute - (minutes - 1);
  const since = firstMinute * MINUTE;
  const settledTo = Math.max(firstMinute, Math.min(lastMinute, Math.floor((now - SETTLE_MS) / MINUTE)));

  const settled = await settledCells(ctx.stats, ctx.workspaceId, firstMinute, settledTo, now);
  const recent = await countRange(ctx.stats, ctx.workspaceId, settledTo * MINUTE, FAR, now);

  const total = emptySeries(minutes);
  const bySource = new Map<string, Series>();
  const byDestination = new Map<string, Series>();
  // Names are read after counting: a source made meanwhile shows, with zeros.
  const sources = await ctx.controlPlane.sources(ctx.workspaceId);
  const destinations = await ctx.controlPlane.destinations(ctx.workspaceId);
  for (const s of sources) bySource.set(s.id, emptySeries(minutes));
  for (const d of destinations) byDestination.set(d.id, emptySeries(minutes));

  const add = (cell: Cell) => {
    const i = cell.minute - firstMinute;
    // A clock step back can put a row after "now": it belongs to no minute shown.
    if (i < 0 || i >= minutes) return;
    total[cell.kind][i] += cell.n;
    const s = bySource.get(cell.sourceId);
    if (s) s[cell.kind][i] += cell.n;
    if (cell.destinationId) {
      const d = byDestination.get(cell.destinationId);
      if (d) d[cell.kind][i] += cell.n;
    }
  };
  for (let m = firstMinute; m < settledTo; m++) for (const cell of settled.cells.get(m) ?? []) add(cell);
  for (const cell of recent) if (cell.minute >= settledTo) add(cell);

  return {
    minutes,
    minuteStarts: Array.from({ length: minutes }, (_, i) => new Date(since + i * MINUTE).toISOString()),
    total: { ...total, totals: totalsOf(total) },
    sources: sources.map((s) => {
      const series = bySource.get(s.id)!;
      return { id: s.id, name: s.name, ...series, totals: totalsOf(series) };
    }),
    destinations: destinations.map((d) => {
      const { delivered, failed, aborted } = byDestination.get(d.id)!;
      const { received: _, ...totals } = totalsOf({ received: [], delivered, failed, aborted });
      return { id: d.id, name: d.name, type: d.type, delivered, failed, aborted, totals };
    }),
  };
}

/** Destinations holding aborted deliveries, and deletions of regulations that failed. */
export async function needsAttention(ctx: Scoped<PipelineApiContext>): Promise<Attention> {
  const all = await ctx.controlPlane.destinations(ctx.workspaceId);
  const aborted = new Map((await ctx.stats.abortedByDestination(all.map((d) => d.id))).map((a) => [a.destinationId, a]));
  const destinations: Attention["destinations"] = [];
  for (const d of all) {
    const a = aborted.get(d.id);
    if (!a) continue;
    destinations.push({
      id: d.id,
      name: d.name,
      type: d.type,
      enabled: Boolean(d.enabled),
      aborted: a.aborted,
      lastError: a.lastError ? { error: a.lastError, at: new Date(a.at).toISOString() } : null,
    });
  }
  destinations.sort((a, b) => b.aborted - a.aborted);
  const failing = await ctx.stats.failingDeletions(ctx.workspaceId, DELETIONS_SHOWN);
  const deletions = failing.deletions.map((r) => ({ ...r, destinationName: r.destinationName ?? null, reason: r.reason ?? null, updatedAt: new Date(r.updatedAt).toISOString() }));
  return { destinations, deletions, deletionsTotal: failing.total };
}

const DAY = 86_400_000;
/** Days the tracking-plan stats go back at most: retention keeps COUNT_DAYS_KEPT days of counts beyond its window. */
export const MAX_PLAN_DAYS = 8;
const DAYS_RULE = `expected a whole number of days from 1 to ${MAX_PLAN_DAYS}`;

export const TrackingPlanStatsQuery = t.Object({
  days: t.Optional(t.String({ pattern: "^[0-9]{1,2}$", errorMessage: DAYS_RULE, description: `How many UTC days back, the current one included: 1 to ${MAX_PLAN_DAYS}, default 7.` })),
});

const DayCounts = t.Array(t.Integer(), { description: "One count per UTC day, oldest first (aligned with `dayStarts`)." });
const PlanTotals = t.Object({ violations: t.Integer(), dropped: t.Integer() });

export const TrackingPlanStats = t.Object({
  days: t.Integer(),
  dayStarts: t.Array(t.String({ description: "YYYY-MM-DD, UTC." })),
  total: t.Object({ violations: DayCounts, dropped: DayCounts, totals: PlanTotals }),
  sources: t.Array(
    t.Object({
      id: t.String(),
      name: t.String(),
      violations: DayCounts,
      dropped: DayCounts,
      totals: PlanTotals,
      byViolationType: t.Record(t.String(), t.Integer(), { description: "Violations over the days shown, by violation type." }),
    }),
    { description: "Sources with a violation or a dropped event in the days shown." },
  ),
});
export type TrackingPlanStats = Static<typeof TrackingPlanStats>;

/** `?days=` as a number, or a 400 naming it. */
export function parsePlanDays(raw: string | undefined): number {
  if (raw === undefined) return 7;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_PLAN_DAYS) throw badRequest(`query.days: ${DAYS_RULE}`);
  return n;
}

/**
 * Tracking-plan violations and dropped events per UTC day, in total and per source: the daily
 * counts the processor's tracking-plan stage writes every few seconds (src/tracking-plans/violation-counts.ts).
 */
export async function trackingPlanStats(ctx: Scoped<PipelineApiContext>, days = 7): Promise<TrackingPlanStats> {
  const today = Math.floor(ctx.now() / DAY);
  const first = today - (days - 1);
  const dayStarts = Array.from({ length: days }, (_, i) => utcDay((first + i) * DAY));
  const index = new Map(dayStarts.map((d, i) => [d, i]));
  const rows = await ctx.stats.trackingPlanCounts(ctx.workspaceId, dayStarts[0]!);
  const total = { violations: new Array<number>(days).fill(0), dropped: new Array<number>(days).fill(0) };
  const bySource = new Map<string, { violations: number[]; dropped: number[]; byViolationType: Record<string, number> }>();
  for (const r of rows) {
    const i = index.get(r.day);
    if (i === undefined) continue;
    let s = bySource.get(r.sourceId);
    if (!s) bySource.set(r.sourceId, (s = { violations: new Array<number>(days).fill(0), dropped: new Array<number>(days).fill(0), byViolationType: {} }));
    if (r.violationType === null) {
      s.dropped[i]! += r.n;
      total.dropped[i]! += r.n;
    } else {
      s.violations[i]! += r.n;
      total.violations[i]! += r.n;
      s.byViolationType[r.violationType] = (s.byViolationType[r.violationType] ?? 0) + r.n;
    }
  }
  const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
  const names = new Map((await ctx.controlPlane.sources(ctx.workspaceId)).map((s) => [s.id, s.name]));
  return {
    days,
    dayStarts,
    total: { ...total, totals: { violations: sum(total.violations), dropped: sum(total.dropped) } },
    sources: [...bySource]
      // A deleted source's counts stay until retention: shown under its id.
      .map(([id, s]) => ({ id, name: names.get(id) ?? id, ...s, totals: { violations: sum(s.violations), dropped: sum(s.dropped) } }))
      .sort((a, b) => b.totals.dropped - a.totals.dropped || b.totals.violations - a.totals.violations),
  };
}

export function overviewRoutes(ctx: PipelineApiContext) {
  const detail = (summary: string, description: string) => ({ tags: ["Delivery"], summary, description });
  return new Elysia({ name: "overview" })
    .use(withWorkspace(ctx))
    .get("/v2/stats/timeseries", ({ scope, query }) => eventTimeseries(scope, parseMinutes(query.minutes)), {
      query: TimeseriesQuery,
      response: Timeseries,
      detail: detail(
        "Events received, delivered, failed and aborted per minute",
        "Over the last `minutes` minutes (default 60, at most 1440), in total, per source and per destination of the workspace. " +
          "received: events accepted (stored; duplicates and suppressed events are not); delivered / aborted: deliveries that reached that state in the minute; " +
          "failed: delivery attempts that failed and were to be retried (the final attempt of an aborted delivery counts as aborted). " +
          "A source's delivered, failed and aborted count its events' deliveries to every destination.",
      ),
    })
    .get("/v2/stats/tracking-plans", ({ scope, query }) => trackingPlanStats(scope, parsePlanDays(query.days)), {
      query: TrackingPlanStatsQuery,
      response: TrackingPlanStats,
      detail: detail(
        "Tracking-plan violations and dropped events per day",
        "Over the last `days` UTC days (default 7, at most 8), in total and per source with any: violations found by the sources' tracking plans (each violation of an event counts once) and events dropped by their settings (never delivered). " +
          "Counted when the processor checks an event, and written every 5 seconds by each instance; per event, violation type and property in `GET /v2/sources/{id}/tracking-plan/report`.",
      ),
    })
    .get("/v2/stats/attention", ({ scope }) => needsAttention(scope), {
      response: Attention,
      detail: detail(
        "What needs attention",
        "Destinations holding aborted deliveries (most first, with the latest error; `POST /v2/destinations/{id}/replay` puts them back in the queue), " +
          "and deletions of active regulations that failed (`failed`: will be retried) or were given up (`aborted`).",
      ),
    });
}
