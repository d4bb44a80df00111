/**
 * The regulations area's storage seam (cluster mode, issue 24): one contract, run against the
 * SQLite store (a data dir opened as the server opens it) and the PostgreSQL store (its own
 * schema with the pg migrations, dropped after). Create, list by cursor, cancel, a create's
 * all-or-nothing, the suppression index's reads, the deletion jobs' lifecycle, the purge of a
 * regulated user's copies, the services on the store alone; and on PostgreSQL the 'suppression'
 * epoch bumped with `regulations.seq` in the write's own transaction, and "changed since".
 */
import { describe, expect, test } from "bun:test";
import type { SQL } from "bun";
import { eq } from "drizzle-orm";
import { schema as pgSchema } from "../../db/pg";
import type { ScopedContext } from "../../src/control-plane/context";
import { newId } from "../../src/lib/ids";
import type { DeletionRunner } from "../../src/regulations/deletion";
import { cancelRegulation, createRegulations, listRegulations } from "../../src/regulations/regulations";
import type { DeletionJobRow, RegulationRow, RegulationsStore } from "../../src/regulations/store";
import { SuppressionIndex } from "../../src/regulations/suppression";
import { PgRegulationsStore, type PgRegulationsStoreOptions, type PgRegulationsTx } from "../../src/storage/postgres/regulations";
import { SqliteRegulationsStore } from "../../src/storage/sqlite/regulations";
import { havePostgres, requirePostgres } from "../support/pg";
import { storeScratch } from "../support/stores";

requirePostgres("regulations-store.test.ts");

const scratch = storeScratch("t_regstore");

/** The rows the purge works on, written the way each database holds them. */
interface PipelineRows {
  /** An event; answers its id. */
  event(e: { workspaceId: string; sourceId: string; userKey: string }): Promise<number>;
  delivery(d: { eventId: number; destinationId: string; sourceId: string; workspaceId: string; userKey: string; state: string }): Promise<void>;
  /** The processor has fanned out every event up to and including this one (of its user's partition on PostgreSQL). */
  processed(eventId: number): Promise<void>;
  eventIds(): Promise<number[]>;
  deliveryUsers(destinationId: string): Promise<string[]>;
}

interface Opened {
  store: RegulationsStore;
  ws: string;
  other: string;
  rows: PipelineRows;
  /** PostgreSQL: a connection on the test's schema. */
  sql?: SQL;
  /** PostgreSQL: the 'suppression' epoch as the database has it. */
  epoch?: () => Promise<number>;
  /** PostgreSQL: `regulations.seq` of a row. */
  seq?: (id: string) => Promise<number>;
  /** PostgreSQL: the same schema through another store (another instance). */
  reopen?: (opts: PgRegulationsStoreOptions) => Promise<RegulationsStore>;
}

async function openSqlite(): Promise<Opened> {
  const { db, dir } = scratch.sqlite();
  const c = db.$client;
  const rows: PipelineRows = {
    async event(e) {
      const r = c
        .query("INSERT INTO events (workspace_id, source_id, message_id, user_key, type, payload, received_at) VALUES (?, ?, ?, ?, 'track', '{}', 1) RETURNING id")
        .get(e.workspaceId, e.sourceId, crypto.randomUUID(), e.userKey) as { id: number };
      return r.id;
    },
    async delivery(d) {
      c.query(
        `INSERT INTO deliveries (event_id, destination_id, source_id, workspace_id, user_key, state, next_attempt_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, 1, 1, 1)`,
      ).run(d.eventId, d.destinationId, d.sourceId, d.workspaceId, d.userKey, d.state);
    },
    async processed(eventId) {
      c.query("INSERT OR REPLACE INTO cursors (name, value) VALUES ('processor', ?)").run(eventId);
    },
    async eventIds() {
      return (c.query("SELECT id FROM events ORDER BY id").all() as Array<{ id: number }>).map((r) => r.id);
    },
    async deliveryUsers(destinationId) {
      return (c.query("SELECT user_key AS u FROM deliveries WHERE destination_id = ? ORDER BY id").all(destinationId) as Array<{ u: string }>).map((r) => r.u);
    },
  };
  return { store: new SqliteRegulationsStore(db), ws: newId("ws"), other: newId("ws"), rows };
}

async function openPg(): Promise<Opened> {
  const { schema, open } = scratch.pgSchema();
  const db = await open();
  const sql = db.$client;
  let dedup = 0n;
  // One partition for every event of the tests: the purge reads that partition's cursor.
  const PARTITION = 7;
  const rows: PipelineRows = {
    async event(e) {
      const [r] = await sql`INSERT INTO events (workspace_id, source_id, message_id, dedup_key, partition, user_key, type, payload, received_at)
        VALUES (${e.workspaceId}, ${e.sourceId}, ${crypto.randomUUID()}, ${String(++dedup)}, ${PARTITION}, ${e.userKey}, 'track', '{}', 1) RETURNING id`;
      return Number(r.id);
    },
    async delivery(d) {
      await sql`INSERT INTO deliveries (event_id, destination_id, source_id, workspace_id, user_key, partition, state, next_attempt_at, created_at, updated_at)
        VALUES (${d.eventId}, ${d.destinationId}, ${d.sourceId}, ${d.workspaceId}, ${d.userKey}, ${PARTITION}, ${d.state}, 1, 1, 1)`;
    },
    async processed(eventId) {
      await sql`UPDATE processor_cursors c SET tx = e.tx, id = e.id FROM events e WHERE e.id = ${eventId} AND c.partition = e.partition`;
    },
    async eventIds() {
      return (await sql`SELECT id FROM events ORDER BY id`).map((r: { id: unknown }) => Number(r.id));
    },
    async deliveryUsers(destinationId) {
      return (await sql`SELECT user_key AS u FROM deliveries WHERE destination_id = ${destinationId} ORDER BY id`).map((r: { u: string }) => r.u);
    },
  };
  const epoch = async () => Number((await sql`SELECT value FROM cluster_epochs WHERE name = 'suppression'`)[0].value);
  const seq = async (id: string) => Number((await sql`SELECT seq FROM regulations WHERE id = ${id}`)[0].seq);
  return {
    store: new PgRegulationsStore(db),
    ws: newId("ws"),
    other: newId("ws"),
    rows,
    sql,
    epoch,
    seq,
    reopen: async (opts) => new PgRegulationsStore(await open(), opts),
  };
}

let clock = 1_760_000_000_000;
const tick = () => ++clock;

function regulation(workspaceId: string, userId: string, over: Partial<RegulationRow> = {}): RegulationRow {
  const at = tick();
  return {
    id: newId("reg"),
    workspaceId,
    regulationType: "suppress",
    userId,
    attributes: { userId, email: `${userId}@example.com` },
    sourceIds: null,
    destinationIds: null,
    canceled: false,
    createdAt: at,
    updatedAt: at,
    ...over,
  };
}

function job(reg: RegulationRow, destinationId: string, over: Partial<DeletionJobRow> = {}): DeletionJobRow {
  return {
    id: newId("del"),
    regulationId: reg.id,
    workspaceId: reg.workspaceId,
    destinationId,
    status: "pending",
    reason: null,
    attempts: 0,
    nextAttemptAt: reg.createdAt,
    firstAttemptAt: null,
    createdAt: reg.createdAt,
    updatedAt: reg.createdAt,
    ...over,
  };
}

/** A suppress_with_delete regulation with a job per destination. */
function withDelete(workspaceId: string, userId: string, destinationIds: string[]) {
  const reg = regulation(workspaceId, userId, { regulationType: "suppress_with_delete", destinationIds });
  return { reg, jobs: destinationIds.map((d) => job(reg, d)) };
}

/** The services need the store, a config snapshot to check ids against, a clock and the workspace. */
function serviceContext(workspaceId: string): ScopedContext {
  const config = { snapshot: () => ({ sources: new Map(), destinations: new Map(), bySource: new Map() }) };
  return { workspaceId, config, now: () => tick(), log: { warn() {}, info() {}, error() {}, debug() {} } } as unknown as ScopedContext;
}

const stores: Array<{ name: string; enabled: boolean; open: () => Promise<Opened> }> = [
  { name: "SQLite", enabled: true, open: openSqlite },
  { name: "PostgreSQL", enabled: havePostgres, open: openPg },
];

for (const kind of stores) {
  describe.if(kind.enabled)(`regulations store on ${kind.name}`, () => {
    test("create, then list by cursor: oldest first, scoped to the workspace, with the rows as written", async () => {
      const { store, ws, other } = await kind.open();
      const a = regulation(ws, "u1", { sourceIds: ["src_a", "src_b"] });
      const b = regulation(ws, "u2");
      const { reg: c, jobs } = withDelete(ws, "u3", ["dst_1", "dst_2"]);
      const elsewhere = regulation(other, "u1");
      await store.createRegulations({ regulations: [a, b, c, elsewhere], jobs });

      expect(await store.regulationsPage(ws, undefined, 10)).toEqual([a, b, c]);
      expect(await store.regulationsPage(other, undefined, 10)).toEqual([elsewhere]);
      // Paging: a page of two, then what comes after its last id.
      expect((await store.regulationsPage(ws, undefined, 2)).map((r) => r.id)).toEqual([a.id, b.id]);
      expect((await store.regulationsPage(ws, b.id, 2)).map((r) => r.id)).toEqual([c.id]);
      expect(await store.regulationsPage(ws, c.id, 2)).toEqual([]);

      const stored = await store.deletionJobsOf([c.id, a.id]);
      expect(stored.sort((x, y) => x.destinationId.localeCompare(y.destinationId))).toEqual(jobs);
      expect(await store.deletionJobsOf([])).toEqual([]);
    });

    test("a create is all or nothing: a job that cannot be stored leaves none of the rules", async () => {
      const o = await kind.open();
      const before = await o.epoch?.();
      const { reg, jobs } = withDelete(o.ws, "u1", ["dst_1"]);
      const plain = regulation(o.ws, "u2");
      // The same job id twice: the second insert fails after the rules were written.
      await expect(o.store.createRegulations({ regulations: [plain, reg], jobs: [jobs[0]!, { ...jobs[0]! }] })).rejects.toThrow();
      expect(await o.store.regulationsPage(o.ws, undefined, 10)).toEqual([]);
      expect(await o.store.deletionJobsOf([reg.id])).toEqual([]);
      expect((await o.store.activeSuppressions()).rules).toEqual([]);
      if (o.epoch) expect(await o.epoch()).toBe(before!);
      // More rows than one statement takes: stored whole.
      const many = Array.from({ length: 1203 }, (_, i) => regulation(o.ws, `m${i}`));
      await o.store.createRegulations({ regulations: many, jobs: [] });
      expect((await o.store.regulationsPage(o.ws, undefined, 2000)).length).toBe(1203);
    });

    test("cancel: marks the rule, aborts its jobs not yet run (not a running one), answers the user's rules still in force", async () => {
      const { store, ws, other } = await kind.open();
      const { reg, jobs } = withDelete(ws, "u1", ["dst_1", "dst_2", "dst_3"]);
      const sources = regulation(ws, "u1", { sourceIds: ["src_a"] });
      await store.createRegulations({ regulations: [reg, sources], jobs });
      // dst_2's job is running, dst_3's failed once.
      expect(await store.claimDeletionJobs([jobs[1]!.id], tick())).toEqual([jobs[1]!.id]);
      expect(await store.claimDeletionJobs([jobs[2]!.id], tick())).toEqual([jobs[2]!.id]);
      const failedAt = tick();
      await store.finishDeletionJobs([{ id: jobs[2]!.id, status: "failed", reason: "503", attempts: 1, firstAttemptAt: failedAt, nextAttemptAt: failedAt + 1000, at: failedAt }]);

      expect(await store.cancelRegulation(other, reg.id, tick())).toBeUndefined();
      expect(await store.cancelRegulation(ws, "reg_00000000000000000000000000000000", tick())).toBeUndefined();
      const at = tick();
      const result = await store.cancelRegulation(ws, reg.id, at);
      expect(result).toMatchObject({ userId: "u1", canceled: true, remaining: [["src_a"]] });

      const [row] = await store.regulationsPage(ws, undefined, 1);
      expect(row).toEqual({ ...reg, canceled: true, updatedAt: at });
      const byDest = new Map((await store.deletionJobsOf([reg.id])).map((j) => [j.destinationId, j]));
      expect(byDest.get("dst_1")).toMatchObject({ status: "aborted", reason: "regulation canceled", updatedAt: at });
      expect(byDest.get("dst_2")).toMatchObject({ status: "running", reason: null });
      expect(byDest.get("dst_3")).toMatchObject({ status: "aborted", reason: "regulation canceled" });

      // Again: nothing written, the same answer about what is still in force.
      expect(await store.cancelRegulation(ws, reg.id, tick())).toMatchObject({ userId: "u1", canceled: false, remaining: [["src_a"]] });
      expect((await store.regulationsPage(ws, undefined, 1))[0]!.updatedAt).toBe(at);
      expect(await store.cancelRegulation(ws, sources.id, tick())).toMatchObject({ canceled: true, remaining: [] });
    });

    test("suppression reads: the rules in force, and an index loaded from them answers as they say", async () => {
      const { store, ws, other } = await kind.open();
      const every = regulation(ws, "all-sources");
      const some = regulation(ws, "some", { sourceIds: ["src_a"] });
      const more = regulation(ws, "some", { sourceIds: ["src_b"] });
      const gone = regulation(ws, "gone");
      const elsewhere = regulation(other, "all-sources", { sourceIds: ["src_x"] });
      await store.createRegulations({ regulations: [every, some, more, gone, elsewhere], jobs: [] });
      await store.cancelRegulation(ws, gone.id, tick());

      const snapshot = await store.activeSuppressions();
      const key = (r: { workspaceId: string; userId: string; sourceIds: string[] | null }) => `${r.workspaceId}/${r.userId}/${JSON.stringify(r.sourceIds)}`;
      expect(snapshot.rules.map(key).sort()).toEqual([every, some, more, elsewhere].map(key).sort());
      expect(snapshot.epoch).toBe(await store.suppressionEpoch());

      const index = await SuppressionIndex.load(store);
      expect(index.size).toBe(3);
      expect(index.isSuppressed(ws, "src_any", "all-sources")).toBe(true);
      expect(index.isSuppressed(ws, "src_a", "some")).toBe(true);
      expect(index.isSuppressed(ws, "src_b", "some")).toBe(true);
      expect(index.isSuppressed(ws, "src_c", "some")).toBe(false);
      expect(index.isSuppressed(ws, "src_any", "gone")).toBe(false);
      expect(index.isSuppressed(other, "src_any", "all-sources")).toBe(false);
      expect(index.isSuppressed(other, "src_x", "all-sources")).toBe(true);

      // A cancel's answer sets the user exactly: one rule of two lifted, then the other.
      const first = (await store.cancelRegulation(ws, some.id, tick()))!;
      index.setUser({ workspaceId: ws, userId: first.userId, rules: first.remaining });
      expect(index.isSuppressed(ws, "src_a", "some")).toBe(false);
      expect(index.isSuppressed(ws, "src_b", "some")).toBe(true);
      const second = (await store.cancelRegulation(ws, more.id, tick()))!;
      index.setUser({ workspaceId: ws, userId: second.userId, rules: second.remaining });
      expect(index.isSuppressed(ws, "src_b", "some")).toBe(false);
      expect(index.size).toBe(2);
    });

    test("the API's verbs run on the store alone: create, list by cursor, cancel, with the index kept exact", async () => {
      const { store, ws } = await kind.open();
      const suppression = new SuppressionIndex();
      const deps = { store, suppression, deletions: {} as DeletionRunner };
      const ctx = serviceContext(ws);
      const users = Array.from({ length: 101 }, (_, i) => ({ userId: `user-${i}` }));
      await createRegulations(ctx, deps, { regulationType: "suppress", users });
      await createRegulations(ctx, deps, { regulationType: "suppress", users: [{ userId: "user-0", phone: "+1" }] });
      expect(suppression.isSuppressed(ws, "src_any", "user-100")).toBe(true);

      const first = await listRegulations(ctx, deps);
      expect(first.data.length).toBe(100);
      expect(first.data[0]).toMatchObject({ workspaceId: ws, canceled: false, regulationType: "suppress", attributes: { userId: "user-0" } });
      const cursor = new URL(first.paging.next!, "http://x").searchParams.get("after_cursor")!;
      const second = await listRegulations(ctx, deps, cursor);
      expect(second.data.map((r) => r.attributes.userId)).toEqual(["user-100", "user-0"]);
      expect(second.paging.next).toBeUndefined();

      // user-0 has two regulations: cancelling one leaves the user suppressed.
      await cancelRegulation(ctx, deps, first.data[0]!.id);
      expect(suppression.isSuppressed(ws, "src_any", "user-0")).toBe(true);
      await cancelRegulation(ctx, deps, second.data[1]!.id);
      expect(suppression.isSuppressed(ws, "src_any", "user-0")).toBe(false);
      expect((await listRegulations(ctx, deps)).data[0]!.canceled).toBe(true);
      await expect(cancelRegulation(serviceContext("ws_other"), deps, first.data[1]!.id)).rejects.toMatchObject({ code: "NOT_FOUND" });
      // The index loaded afresh agrees with the one kept up to date.
      const fresh = await SuppressionIndex.load(store);
      expect(fresh.size).toBe(suppression.size);
      expect(fresh.size).toBe(100);
    });

    test("deletion jobs: due, claimed once, finished only while running, retried when due, reset after a crash", async () => {
      const { store, ws } = await kind.open();
      const { reg, jobs } = withDelete(ws, "u1", ["dst_1", "dst_2"]);
      const later = withDelete(ws, "u2", ["dst_1"]);
      later.jobs[0]!.nextAttemptAt = reg.createdAt + 60_000;
      await store.createRegulations({ regulations: [reg, later.reg], jobs: [...jobs, ...later.jobs] });
      const now = reg.createdAt + 10;

      const due = await store.dueDeletionJobs(now, 100);
      expect(due.map((j) => j.id)).toEqual(jobs.map((j) => j.id).sort());
      expect(due[0]).toEqual({
        id: due[0]!.id,
        workspaceId: ws,
        destinationId: jobs.find((j) => j.id === due[0]!.id)!.destinationId,
        attempts: 0,
        firstAttemptAt: null,
        userId: "u1",
        attributes: reg.attributes,
      });
      expect((await store.dueDeletionJobs(now, 1)).length).toBe(1);
      expect(await store.nextDeletionDueAt()).toBe(reg.createdAt);

      // Claimed once: a second claim (another pass, another instance) gets none of them.
      const ids = jobs.map((j) => j.id);
      expect(await store.claimDeletionJobs(ids, now)).toEqual(ids);
      expect(await store.claimDeletionJobs(ids, now)).toEqual([]);
      expect(await store.dueDeletionJobs(now, 100)).toEqual([]);
      expect(await store.nextDeletionDueAt()).toBe(later.jobs[0]!.nextAttemptAt);

      const retryAt = now + 5000;
      const finished = await store.finishDeletionJobs([
        { id: jobs[0]!.id, status: "complete", reason: null, attempts: 1, firstAttemptAt: now, nextAttemptAt: now, at: now + 1 },
        { id: jobs[1]!.id, status: "failed", reason: "HTTP 503", attempts: 1, firstAttemptAt: now, nextAttemptAt: retryAt, at: now + 1 },
      ]);
      expect(finished).toBe(2);
      // Not running any more: a late outcome changes nothing.
      expect(await store.finishDeletionJobs([{ id: jobs[0]!.id, status: "aborted", reason: "late", attempts: 9, firstAttemptAt: now, nextAttemptAt: now, at: now + 2 }])).toBe(0);
      const byId = new Map((await store.deletionJobsOf([reg.id])).map((j) => [j.id, j]));
      expect(byId.get(jobs[0]!.id)).toMatchObject({ status: "complete", reason: null, attempts: 1, firstAttemptAt: now, updatedAt: now + 1 });
      expect(byId.get(jobs[1]!.id)).toMatchObject({ status: "failed", reason: "HTTP 503", attempts: 1, nextAttemptAt: retryAt });

      expect(await store.dueDeletionJobs(retryAt - 1, 100)).toEqual([]);
      expect((await store.dueDeletionJobs(retryAt, 100)).map((j) => [j.id, j.attempts, j.firstAttemptAt])).toEqual([[jobs[1]!.id, 1, now]]);
      expect(await store.claimDeletionJobs([jobs[1]!.id, jobs[0]!.id], retryAt)).toEqual([jobs[1]!.id]);

      // A crash leaves it running; start-up puts it back.
      expect(await store.resetRunningDeletionJobs(retryAt + 1)).toBe(1);
      expect(await store.resetRunningDeletionJobs(retryAt + 2)).toBe(0);
      expect((await store.deletionJobsOf([reg.id])).find((j) => j.id === jobs[1]!.id)).toMatchObject({ status: "pending", updatedAt: retryAt + 1 });
      expect(await store.claimDeletionJobs([], now)).toEqual([]);
    });

    test("a regulated user's copies: deliveries to the destination removed, events purged unless still owed", async () => {
      const { store, ws, rows } = await kind.open();
      const e1 = await rows.event({ workspaceId: ws, sourceId: "src_a", userKey: "bad" });
      const e2 = await rows.event({ workspaceId: ws, sourceId: "src_a", userKey: "bad" });
      const keep = await rows.event({ workspaceId: ws, sourceId: "src_a", userKey: "good" });
      await rows.delivery({ eventId: e1, destinationId: "dst_1", sourceId: "src_a", workspaceId: ws, userKey: "bad", state: "pending" });
      await rows.delivery({ eventId: e1, destinationId: "dst_2", sourceId: "src_a", workspaceId: ws, userKey: "bad", state: "aborted" });
      await rows.delivery({ eventId: keep, destinationId: "dst_1", sourceId: "src_a", workspaceId: ws, userKey: "good", state: "pending" });

      expect(await store.eventIdRange()).toEqual({ min: e1, max: keep });
      // Nothing fanned out yet: both of bad's events are still to be routed from a routed source.
      expect(await store.hasUnroutedEvents(ws, ["bad"], ["src_a"])).toBe(true);
      expect(await store.hasUnroutedEvents(ws, ["bad"], ["src_b"])).toBe(false);
      expect(await store.hasUnroutedEvents("ws_none", ["bad"], ["src_a"])).toBe(false);
      await rows.processed(keep);
      expect(await store.hasUnroutedEvents(ws, ["bad"], ["src_a"])).toBe(false);

      expect(await store.deleteDeliveriesOf("dst_1", ["bad"])).toBe(1);
      expect(await rows.deliveryUsers("dst_1")).toEqual(["good"]);
      expect(await rows.deliveryUsers("dst_2")).toEqual(["bad"]);

      // e1 still has a delivery (to dst_2): kept; e2 has none and was routed: purged.
      const range = (await store.eventIdRange())!;
      expect(await store.purgeEvents({ afterId: range.min - 1, throughId: range.max }, ws, ["bad"], ["src_a"])).toBe(1);
      expect(await rows.eventIds()).toEqual([e1, keep]);
      await store.deleteDeliveriesOf("dst_2", ["bad"]);
      // Outside the slice: untouched.
      expect(await store.purgeEvents({ afterId: e1, throughId: range.max }, ws, ["bad"], ["src_a"])).toBe(0);
      expect(await store.purgeEvents({ afterId: e1 - 1, throughId: e1 }, ws, ["bad"], ["src_a"])).toBe(1);
      expect(await rows.eventIds()).toEqual([keep]);

      // Not yet fanned out: kept while its source feeds destinations, purged when it feeds none.
      const fresh = await rows.event({ workspaceId: ws, sourceId: "src_a", userKey: "bad" });
      const all = (await store.eventIdRange())!;
      expect(await store.purgeEvents({ afterId: all.min - 1, throughId: all.max }, ws, ["bad"], ["src_a"])).toBe(0);
      expect(await store.purgeEvents({ afterId: all.min - 1, throughId: all.max }, ws, ["bad"], [])).toBe(1);
      expect(await rows.eventIds()).toEqual([keep]);
      expect(fresh).toBeGreaterThan(keep);
    });

    if (kind.name === "PostgreSQL") {
      test("a create and a cancel bump the 'suppression' epoch in their own transaction and stamp their rows with it; a no-op or failed write does not", async () => {
        const o = await kind.open();
        const seen: number[] = [];
        const afterWrite = async (tx: PgRegulationsTx, epoch: number) => {
          // Inside the transaction: the bump and the stamped rows are visible here, not yet elsewhere.
          const [row] = await tx.select().from(pgSchema.clusterEpochs).where(eq(pgSchema.clusterEpochs.name, "suppression"));
          expect(row!.value).toBe(epoch);
          const stamped = await tx.select({ id: pgSchema.regulations.id }).from(pgSchema.regulations).where(eq(pgSchema.regulations.seq, epoch));
          expect(stamped.length).toBeGreaterThan(0);
          expect(await o.epoch!()).toBe(epoch - 1);
          seen.push(epoch);
        };
        const store = await o.reopen!({ afterWrite });
        const start = await o.epoch!();
        const a = regulation(o.ws, "u1");
        const b = regulation(o.ws, "u2");
        expect(await store.createRegulations({ regulations: [a, b], jobs: [] })).toEqual({ epoch: start + 1 });
        expect(await o.seq!(a.id)).toBe(start + 1);
        expect(await o.seq!(b.id)).toBe(start + 1);
        expect((await store.cancelRegulation(o.ws, a.id, tick()))?.epoch).toBe(start + 2);
        expect(await o.seq!(a.id)).toBe(start + 2);
        expect(await o.seq!(b.id)).toBe(start + 1);
        // Cancelled already, or not found: nothing written, no epoch moved.
        expect((await store.cancelRegulation(o.ws, a.id, tick()))?.epoch).toBeUndefined();
        expect(await store.cancelRegulation(o.other, b.id, tick())).toBeUndefined();
        await expect(store.createRegulations({ regulations: [regulation(o.ws, "u3"), { ...b }], jobs: [] })).rejects.toThrow();
        expect(await store.createRegulations({ regulations: [], jobs: [] })).toEqual({});
        expect(await o.epoch!()).toBe(start + 2);
        expect(await store.suppressionEpoch()).toBe(start + 2);
        expect(seen).toEqual([start + 1, start + 2]);
        // Two instances writing at once: each write its own epoch.
        const results = await Promise.all(
          Array.from({ length: 6 }, (_, i) => (i % 2 ? store : o.store).createRegulations({ regulations: [regulation(o.ws, `p${i}`)], jobs: [] })),
        );
        expect(results.map((r) => r.epoch!).sort((x, y) => x - y)).toEqual([3, 4, 5, 6, 7, 8].map((n) => start + n));
      });

      test("a throw in afterWrite rolls the write back, epoch included", async () => {
        const o = await kind.open();
        const a = regulation(o.ws, "u1");
        await o.store.createRegulations({ regulations: [a], jobs: [] });
        const store = await o.reopen!({
          afterWrite: () => {
            throw new Error("bus down");
          },
        });
        const start = await o.epoch!();
        await expect(store.createRegulations({ regulations: [regulation(o.ws, "u2")], jobs: [] })).rejects.toThrow("bus down");
        await expect(store.cancelRegulation(o.ws, a.id, tick())).rejects.toThrow("bus down");
        expect((await o.store.regulationsPage(o.ws, undefined, 10)).map((r) => [r.userId, r.canceled])).toEqual([["u1", false]]);
        expect(await o.epoch!()).toBe(start);
      });

      test("changed since: another instance's rules reach an index through catchUp, whole per user", async () => {
        const o = await kind.open();
        const mine = o.store;
        const theirs = await o.reopen!({});
        const keep = regulation(o.ws, "steady");
        await mine.createRegulations({ regulations: [keep], jobs: [] });
        const index = await SuppressionIndex.load(mine);
        const loadedAt = index.epoch;
        expect(loadedAt).toBe(await o.epoch!());
        expect(await mine.suppressionChangesSince(loadedAt)).toEqual({ epoch: loadedAt, users: [] });

        // Another instance: a new user, a second rule for a user, a cancel; the same userId in another workspace stays apart.
        const fresh = regulation(o.ws, "fresh", { sourceIds: ["src_a"] });
        const twice = regulation(o.ws, "steady", { sourceIds: ["src_b"] });
        const untouched = regulation(o.other, "fresh");
        await theirs.createRegulations({ regulations: [fresh, twice], jobs: [] });
        const cancelled = regulation(o.ws, "leaving");
        await theirs.createRegulations({ regulations: [cancelled], jobs: [] });
        const beforeOther = await o.epoch!();
        await theirs.createRegulations({ regulations: [untouched], jobs: [] });
        await theirs.cancelRegulation(o.ws, cancelled.id, tick());
        expect(index.isSuppressed(o.ws, "src_a", "fresh")).toBe(false);

        const changes = await mine.suppressionChangesSince(loadedAt);
        expect(changes.epoch).toBe(loadedAt + 4);
        const byUser = new Map(changes.users.map((u) => [`${u.workspaceId}/${u.userId}`, u.rules]));
        expect(byUser.get(`${o.ws}/fresh`)).toEqual([["src_a"]]);
        expect(byUser.get(`${o.ws}/steady`)?.map((r) => JSON.stringify(r)).sort()).toEqual(['["src_b"]', "null"]);
        expect(byUser.get(`${o.ws}/leaving`)).toEqual([]);
        expect(byUser.get(`${o.other}/fresh`)).toEqual([null]);
        expect(changes.users.length).toBe(4);
        // Only what came after the given epoch.
        expect((await mine.suppressionChangesSince(beforeOther)).users.map((u) => `${u.workspaceId}/${u.userId}`).sort()).toEqual(
          [`${o.other}/fresh`, `${o.ws}/leaving`].sort(),
        );

        expect(await index.catchUp(mine)).toBe(4);
        expect(index.epoch).toBe(loadedAt + 4);
        expect(index.isSuppressed(o.ws, "src_a", "fresh")).toBe(true);
        expect(index.isSuppressed(o.ws, "src_b", "fresh")).toBe(false);
        expect(index.isSuppressed(o.ws, "src_any", "steady")).toBe(true);
        expect(index.isSuppressed(o.ws, "src_any", "leaving")).toBe(false);
        expect(index.isSuppressed(o.other, "src_any", "fresh")).toBe(true);
        expect(await index.catchUp(mine)).toBe(0);
        const reloaded = await SuppressionIndex.load(mine);
        expect(reloaded.size).toBe(index.size);
      });

      test("JSON columns are stored as JSON (attributes, sourceIds), and a rule of every source as SQL NULL", async () => {
        const o = await kind.open();
        const a = regulation(o.ws, "u1", { sourceIds: ["src_a"] });
        const b = regulation(o.ws, "u2");
        await o.store.createRegulations({ regulations: [a, b], jobs: [] });
        const rows = await o.sql!`SELECT user_id, jsonb_typeof(attributes) AS a, attributes->>'email' AS email, jsonb_typeof(source_ids) AS s, source_ids IS NULL AS every
          FROM regulations ORDER BY user_id`;
        expect(rows).toEqual([
          { user_id: "u1", a: "object", email: "u1@example.com", s: "array", every: false },
          { user_id: "u2", a: "object", email: "u2@example.com", s: null, every: true },
        ]);
      });
    } else {
      test("SQLite has no epoch: changes since any epoch are none (every change went through this process's index)", async () => {
        const { store, ws } = await kind.open();
        await store.createRegulations({ regulations: [regulation(ws, "u1")], jobs: [] });
        expect(await store.suppressionEpoch()).toBe(0);
        expect(await store.suppressionChangesSince(0)).toEqual({ epoch: 0, users: [] });
        expect((await store.activeSuppressions()).epoch).toBe(0);
      });
    }
  });
}
