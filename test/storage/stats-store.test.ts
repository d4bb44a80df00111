/**
 * The pipeline's read-side storage seam (cluster mode, issue 24): one contract over StatsStore,
 * run against the SQLite store (a data dir opened as the server opens it) and the PostgreSQL
 * store (its own schema with the pg migrations, dropped after). The same rows go in through the
 * tables; every method must give the same answers on both: the deliveries API's list, stats and
 * replay, the overview's counts, failed attempts, aborted destinations and failing deletions,
 * retention's purge in batches, and the health check. The services (overview, deliveries API)
 * then run on each store alone.
 */
import { describe, expect, test } from "bun:test";
import type { SQL } from "bun";
import { closePostgres } from "../../db/pg";
import type { ControlPlaneStore } from "../../src/control-plane/store";
import type { ScopedContext } from "../../src/control-plane/context";
import { storageHealth } from "../../src/lib/storage-health";
import { destinationStats, listDeliveries } from "../../src/pipeline/delivery-service";
import { eventTimeseries, needsAttention } from "../../src/pipeline/overview";
import { DELIVERY_STATES, type MinuteCount, OPEN_END, type StatsStore } from "../../src/pipeline/store";
import { PgControlPlaneStore } from "../../src/storage/postgres/control-plane";
import { PgStatsStore } from "../../src/storage/postgres/stats";
import { SqliteControlPlaneStore } from "../../src/storage/sqlite/control-plane";
import { SqliteStatsStore } from "../../src/storage/sqlite/stats";
import { havePostgres, requirePostgres } from "../support/pg";
import { storeScratch } from "../support/stores";

requirePostgres("stats-store.test.ts");

const scratch = storeScratch("t_stats");

type Row = Record<string, unknown>;

/** What a test reaches around the store: the tables themselves, written and read with plain SQL. */
interface Opened {
  store: StatsStore;
  controlPlane: ControlPlaneStore;
  /** Inserts a row (snake_case columns), returning its id. */
  insert(table: string, row: Row): Promise<number | string>;
  /** `n` old events of `src_bulk`, each with one succeeded delivery, in one statement. */
  bulk(n: number, at: number): Promise<void>;
  /** The processor has fanned out every event up to this one (SQLite: the id; PostgreSQL: its (tx, id) in its partition). */
  passProcessor(eventId: number): Promise<void>;
  ids(table: "events" | "deliveries"): Promise<number[]>;
  delivery(id: number): Promise<{ state: string; attempts: number; nextAttemptAt: number; updatedAt: number; firstAttemptAt: number | null }>;
  /** Closes the database under the store. */
  close(): Promise<void>;
  /** SQLite: pages on the free list. */
  freePages?(): number;
  /** SQLite: the database file. */
  path?: string;
  /** PostgreSQL: a connection on the test's schema. */
  sql?: SQL;
}

async function openSqlite(): Promise<Opened> {
  const { db, file: path } = scratch.sqlite();
  const c = db.$client;
  return {
    store: new SqliteStatsStore(db),
    controlPlane: new SqliteControlPlaneStore(db),
    async insert(table, row) {
      const cols = Object.keys(row);
      const values = cols.map((k) => (typeof row[k] === "object" && row[k] !== null ? JSON.stringify(row[k]) : row[k]));
      const r = c.prepare(`INSERT INTO ${table} (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")}) RETURNING id`).get(...(values as any[])) as { id: number | string };
      return r.id;
    },
    async bulk(n, at) {
      c.transaction(() => {
        c.run(
          `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?)
           INSERT INTO events (workspace_id, source_id, message_id, user_key, type, payload, received_at)
           SELECT 'ws_bulk', 'src_bulk', 'bulk-' || i, 'u' || i, 'track', '{}', ? FROM k`,
          [n, at],
        );
        c.run(
          `INSERT INTO deliveries (event_id, destination_id, source_id, workspace_id, user_key, state, attempts, next_attempt_at, created_at, updated_at)
           SELECT id, 'dst_bulk', source_id, workspace_id, user_key, 'succeeded', 1, ?1, ?1, ?1 FROM events WHERE source_id = 'src_bulk'`,
          [at],
        );
      })();
    },
    async passProcessor(eventId) {
      c.run("INSERT INTO cursors (name, value) VALUES ('processor', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value", [eventId]);
    },
    async ids(table) {
      return (c.query(`SELECT id FROM ${table} ORDER BY id`).all() as Array<{ id: number }>).map((r) => r.id);
    },
    async delivery(id) {
      return c
        .query("SELECT state, attempts, next_attempt_at AS nextAttemptAt, updated_at AS updatedAt, first_attempt_at AS firstAttemptAt FROM deliveries WHERE id = ?")
        .get(id) as any;
    },
    async close() {
      c.close();
    },
    path,
    freePages: () => (c.query("PRAGMA freelist_count").get() as { freelist_count: number }).freelist_count,
  };
}

const PG_JSON = new Set(["settings", "config", "attributes", "source_ids", "destination_ids"]);

async function openPg(): Promise<Opened> {
  const db = await scratch.pgSchema().open();
  const sql = db.$client;
  let dedup = 0;
  return {
    store: new PgStatsStore(sql),
    controlPlane: new PgControlPlaneStore(db),
    sql,
    async insert(table, input) {
      const row: Row = { ...input };
      // The cluster columns the SQLite schema has not: every test row is in partition 0.
      if (table === "events") Object.assign(row, { partition: 0, dedup_key: String(++dedup) });
      if (table === "deliveries") row.partition = 0;
      const cols = Object.keys(row);
      const values = cols.map((k) => (PG_JSON.has(k) ? JSON.stringify(row[k]) : row[k]));
      const [r] = await sql.unsafe(
        `INSERT INTO ${table} (${cols.join(", ")}) VALUES (${cols.map((k, i) => (PG_JSON.has(k) ? `$${i + 1}::text::jsonb` : `$${i + 1}`)).join(", ")}) RETURNING id`,
        values,
      );
      return typeof r.id === "string" && /^\d+$/.test(r.id) ? Number(r.id) : r.id;
    },
    async bulk(n, at) {
      await sql.begin(async (tx) => {
        await tx.unsafe(
          `INSERT INTO events (workspace_id, source_id, message_id, dedup_key, partition, user_key, type, payload, received_at)
           SELECT 'ws_bulk', 'src_bulk', 'bulk-' || i, 1000000 + i, 0, 'u' || i, 'track', '{}', $2::bigint FROM generate_series(1, $1::int) i`,
          [n, at],
        );
        await tx.unsafe(
          `INSERT INTO deliveries (event_id, destination_id, source_id, workspace_id, user_key, partition, state, attempts, next_attempt_at, created_at, updated_at)
           SELECT id, 'dst_bulk', source_id, workspace_id, user_key, 0, 'succeeded', 1, $1::bigint, $1::bigint, $1::bigint FROM events WHERE source_id = 'src_bulk'`,
          [at],
        );
      });
    },
    async passProcessor(eventId) {
      await sql.unsafe(
        "UPDATE processor_cursors c SET tx = e.tx, id = e.id FROM events e WHERE e.id = $1 AND c.partition = e.partition",
        [eventId],
      );
    },
    async ids(table) {
      return (await sql.unsafe(`SELECT id FROM ${table} ORDER BY id`)).map((r: any) => Number(r.id));
    },
    async delivery(id) {
      const [r] = await sql.unsafe(
        `SELECT state, attempts, next_attempt_at AS "nextAttemptAt", updated_at AS "updatedAt", first_attempt_at AS "firstAttemptAt" FROM deliveries WHERE id = $1`,
        [id],
      );
      return { ...r, nextAttemptAt: Number(r.nextAttemptAt), updatedAt: Number(r.updatedAt), firstAttemptAt: r.firstAttemptAt === null ? null : Number(r.firstAttemptAt) };
    },
    close: () => closePostgres(db),
  };
}

// Minute-aligned, so each figure below falls in a known minute.
const T0 = Date.UTC(2026, 0, 5, 12, 0, 0);
const M0 = T0 / 60_000;
const s = (seconds: number) => T0 + seconds * 1000;
const iso = (ms: number) => new Date(ms).toISOString();
const attempt = (at: number, status: number | null, error: string | null = null) => ({ at: iso(at), status, response: null, error, ms: 5 });

/** The rows every test starts from; ids as the store gave them. */
interface Seeded {
  e: Record<string, number>;
  d: Record<string, number>;
}

/**
 * Workspace `ws` with sources a, b and destinations x, y (z has no row), and one event and
 * delivery of workspace `ws_other` that no answer for `ws` may count.
 */
async function seed(o: Opened): Promise<Seeded> {
  for (const id of ["ws", "ws_other"]) await o.insert("workspaces", { id, name: id, created_at: 1 });
  for (const [id, ws, name, at] of [["src_a", "ws", "A", 1], ["src_b", "ws", "B", 2], ["src_o", "ws_other", "O", 3]] as const) {
    await o.insert("sources", { id, workspace_id: ws, name, write_key: `wk_${id}`, enabled: true, settings: {}, created_at: at, updated_at: at });
  }
  for (const [id, name, at] of [["dst_x", "X", 1], ["dst_y", "Y", 2]] as const) {
    await o.insert("destinations", { id, workspace_id: "ws", name, type: "WEBHOOK", config: {}, enabled: true, created_at: at, updated_at: at });
  }
  const event = (sourceId: string, ws: string, at: number, n: number) =>
    o.insert("events", { workspace_id: ws, source_id: sourceId, message_id: `m${n}`, user_key: "u1", type: "track", payload: JSON.stringify({ messageId: `m${n}` }), received_at: at }) as Promise<number>;
  const e: Seeded["e"] = {};
  e.e1 = await event("src_a", "ws", s(5), 1);
  e.e2 = await event("src_a", "ws", s(20), 2);
  e.e3 = await event("src_b", "ws", s(65), 3);
  e.e4 = await event("src_o", "ws_other", s(70), 4);
  e.e5 = await event("src_a", "ws", s(130), 5);
  const delivery = (eventId: number, sourceId: string, destinationId: string, state: string, attempts: number, updatedAt: number, log: unknown, lastError: string | null = null, ws = "ws") =>
    o.insert("deliveries", {
      event_id: eventId,
      destination_id: destinationId,
      source_id: sourceId,
      workspace_id: ws,
      user_key: "u1",
      state,
      attempts,
      next_attempt_at: updatedAt + 1000,
      first_attempt_at: attempts ? T0 : null,
      last_status: attempts ? 500 : null,
      last_response: attempts ? "nope" : null,
      last_error: lastError,
      attempt_log: log === null ? null : typeof log === "string" ? log : JSON.stringify(log),
      created_at: T0,
      updated_at: updatedAt,
    }) as Promise<number>;
  const d: Seeded["d"] = {};
  d.d1 = await delivery(e.e1, "src_a", "dst_x", "succeeded", 1, s(10), [attempt(s(10), 200)]);
  // Two failures, then the success at its updated_at: two failed attempts, one delivered.
  d.d2 = await delivery(e.e2, "src_a", "dst_x", "succeeded", 3, s(90), [attempt(s(30), 500), attempt(s(61), 503), attempt(s(90), 200)], "HTTP 500");
  // Aborted: its last attempt is the abort, its first a failure.
  d.d3 = await delivery(e.e3, "src_b", "dst_y", "aborted", 2, s(100), [attempt(s(70), 500), attempt(s(100), 400)], "HTTP 400");
  // Retrying: every attempt failed.
  d.d4 = await delivery(e.e3, "src_b", "dst_x", "retrying", 2, s(80), [attempt(s(66), 500), attempt(s(80), 502)], "timeout");
  d.d5 = await delivery(e.e5, "src_a", "dst_x", "pending", 0, s(130), null);
  // An attempt log that is not JSON counts nothing.
  d.d6 = await delivery(e.e1, "src_a", "dst_z", "retrying", 2, s(50), "[{not json");
  d.d7 = await delivery(e.e4, "src_o", "dst_o", "succeeded", 1, s(75), [attempt(s(75), 200)], null, "ws_other");
  d.d8 = await delivery(e.e2, "src_a", "dst_y", "aborted", 1, s(110), [attempt(s(110), 401)], "HTTP 401");
  // A delivery whose event retention already removed.
  d.d9 = await delivery(999_999, "src_a", "dst_w", "aborted", 1, s(120), [attempt(s(120), 400)], "gone");
  return { e, d };
}

const byKey = (cells: MinuteCount[]) =>
  [...cells].sort((a, b) => `${a.kind}|${a.sourceId}|${a.destinationId}|${a.minute}`.localeCompare(`${b.kind}|${b.sourceId}|${b.destinationId}|${b.minute}`));
const cell = (kind: MinuteCount["kind"], sourceId: string, destinationId: string | null, minute: number, n: number): MinuteCount => ({ kind, minute, sourceId, destinationId, n });

const STORES: Array<{ name: string; open: () => Promise<Opened>; enabled: boolean }> = [
  { name: "SQLite", open: openSqlite, enabled: true },
  { name: "PostgreSQL", open: openPg, enabled: havePostgres },
];

for (const { name, open, enabled } of STORES) {
  describe.if(enabled)(`stats store on ${name}`, () => {
    test("health: answers while the database does, throws once it is gone", async () => {
      const o = await open();
      expect(await o.store.health()).toBeUndefined();
      await o.close();
      await expect(o.store.health()).rejects.toThrow();
    });

    test("deliveriesPage: newest first, by state, before an id, a limit; the event's payload, null once it is gone", async () => {
      const o = await open();
      const { e, d } = await seed(o);
      const ids = async (states: readonly (typeof DELIVERY_STATES)[number][], before: number, limit: number) =>
        (await o.store.deliveriesPage("dst_x", states, before, limit)).map((r) => r.id);
      expect(await ids(DELIVERY_STATES, Number.MAX_SAFE_INTEGER, 10)).toEqual([d.d5, d.d4, d.d2, d.d1]);
      expect(await ids(DELIVERY_STATES, Number.MAX_SAFE_INTEGER, 2)).toEqual([d.d5, d.d4]);
      expect(await ids(DELIVERY_STATES, d.d4, 10)).toEqual([d.d2, d.d1]);
      expect(await ids(["succeeded"], Number.MAX_SAFE_INTEGER, 10)).toEqual([d.d2, d.d1]);
      expect(await ids(["aborted"], Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
      const [row] = await o.store.deliveriesPage("dst_x", ["succeeded"], d.d2 + 1, 1);
      expect(row).toEqual({
        id: d.d2,
        eventId: e.e2,
        sourceId: "src_a",
        userKey: "u1",
        state: "succeeded",
        attempts: 3,
        nextAttemptAt: s(91),
        lastStatus: 500,
        lastResponse: "nope",
        lastError: "HTTP 500",
        attemptLog: JSON.stringify([attempt(s(30), 500), attempt(s(61), 503), attempt(s(90), 200)]),
        createdAt: T0,
        updatedAt: s(90),
        payload: JSON.stringify({ messageId: "m2" }),
        annotation: null,
      });
      const [gone] = await o.store.deliveriesPage("dst_w", DELIVERY_STATES, Number.MAX_SAFE_INTEGER, 5);
      expect(gone.id).toBe(d.d9);
      expect(gone.payload).toBeNull();
    });

    test("destinationStats: counts by state, delivered per minute since a time, the newest error", async () => {
      const o = await open();
      await seed(o);
      expect(await o.store.destinationStats("dst_x", T0)).toEqual({
        counts: { pending: 1, retrying: 1, succeeded: 2 },
        deliveredPerMinute: [{ minute: T0, delivered: 1 }, { minute: T0 + 60_000, delivered: 1 }],
        lastError: { error: "HTTP 500", at: s(90) },
      });
      expect((await o.store.destinationStats("dst_x", s(60))).deliveredPerMinute).toEqual([{ minute: T0 + 60_000, delivered: 1 }]);
      expect(await o.store.destinationStats("dst_none", T0)).toEqual({ counts: {}, deliveredPerMinute: [], lastError: null });
    });

    test("replayAborted: the destination's aborted deliveries become pending, due at once, attempts reset; nothing else moves", async () => {
      const o = await open();
      const { d } = await seed(o);
      expect(await o.store.replayAborted("dst_y", s(500))).toBe(2);
      for (const id of [d.d3, d.d8]) expect(await o.delivery(id)).toEqual({ state: "pending", attempts: 0, nextAttemptAt: s(500), updatedAt: s(500), firstAttemptAt: null });
      expect((await o.delivery(d.d9)).state).toBe("aborted");
      expect((await o.delivery(d.d4)).state).toBe("retrying");
      expect(await o.store.replayAborted("dst_y", s(600))).toBe(0);
      expect(await o.store.abortedByDestination(["dst_x", "dst_y"])).toEqual([]);
    });

    test("countOutcomes: received per source and minute, delivered and aborted per destination, of the workspace only", async () => {
      const o = await open();
      await seed(o);
      expect(byKey(await o.store.countOutcomes("ws", T0, s(120)))).toEqual(
        byKey([
          cell("received", "src_a", null, M0, 2),
          cell("received", "src_b", null, M0 + 1, 1),
          cell("delivered", "src_a", "dst_x", M0, 1),
          cell("delivered", "src_a", "dst_x", M0 + 1, 1),
          cell("aborted", "src_b", "dst_y", M0 + 1, 1),
          cell("aborted", "src_a", "dst_y", M0 + 1, 1),
        ]),
      );
      // To the open end: the later event and the delivery without its event too.
      expect(byKey(await o.store.countOutcomes("ws", s(60), OPEN_END))).toEqual(
        byKey([
          cell("received", "src_b", null, M0 + 1, 1),
          cell("received", "src_a", null, M0 + 2, 1),
          cell("delivered", "src_a", "dst_x", M0 + 1, 1),
          cell("aborted", "src_b", "dst_y", M0 + 1, 1),
          cell("aborted", "src_a", "dst_y", M0 + 1, 1),
          cell("aborted", "src_a", "dst_w", M0 + 2, 1),
        ]),
      );
      expect(await o.store.countOutcomes("ws", s(200), OPEN_END)).toEqual([]);
      expect(byKey(await o.store.countOutcomes("ws_other", T0, OPEN_END))).toEqual(
        byKey([cell("received", "src_o", null, M0 + 1, 1), cell("delivered", "src_o", "dst_o", M0 + 1, 1)]),
      );
    });

    test("countFailedAttempts: every attempt but a finished delivery's last, in the minute it was made, windows on rows and on attempts", async () => {
      const o = await open();
      const { e } = await seed(o);
      // Aborted without an attempt of its own (its destination was deleted): its last attempt, before updated_at, failed too.
      await o.insert("deliveries", {
        event_id: e.e1, destination_id: "dst_q", source_id: "src_a", workspace_id: "ws", user_key: "u1", state: "aborted", attempts: 2, next_attempt_at: s(95),
        attempt_log: JSON.stringify([attempt(s(40), 500), attempt(s(45), 500)]), last_error: "destination deleted", created_at: T0, updated_at: s(95),
      });
      expect(byKey(await o.store.countFailedAttempts("ws", T0, OPEN_END, T0, OPEN_END))).toEqual(
        byKey([
          cell("failed", "src_a", "dst_q", M0, 2),
          cell("failed", "src_a", "dst_x", M0, 1),
          cell("failed", "src_a", "dst_x", M0 + 1, 1),
          cell("failed", "src_b", "dst_y", M0 + 1, 1),
          cell("failed", "src_b", "dst_x", M0 + 1, 2),
        ]),
      );
      // Attempts made in [61 s, 67 s) only.
      expect(byKey(await o.store.countFailedAttempts("ws", T0, OPEN_END, s(61), s(67)))).toEqual(
        byKey([cell("failed", "src_a", "dst_x", M0 + 1, 1), cell("failed", "src_b", "dst_x", M0 + 1, 1)]),
      );
      // Rows updated in [85 s, 95 s) only: d2.
      expect(byKey(await o.store.countFailedAttempts("ws", s(85), s(95), T0, OPEN_END))).toEqual(
        byKey([cell("failed", "src_a", "dst_x", M0, 1), cell("failed", "src_a", "dst_x", M0 + 1, 1)]),
      );
      expect(await o.store.countFailedAttempts("ws_other", T0, OPEN_END, T0, OPEN_END)).toEqual([]);
    });

    test("abortedByDestination: count and newest aborted delivery's error, only destinations holding some", async () => {
      const o = await open();
      await seed(o);
      const found = await o.store.abortedByDestination(["dst_x", "dst_y", "dst_w", "dst_z"]);
      expect(found.sort((a, b) => a.destinationId.localeCompare(b.destinationId))).toEqual([
        { destinationId: "dst_w", aborted: 1, lastError: "gone", at: s(120) },
        { destinationId: "dst_y", aborted: 2, lastError: "HTTP 401", at: s(110) },
      ]);
      expect(await o.store.abortedByDestination([])).toEqual([]);
    });

    test("failingDeletions: failed and aborted jobs of active regulations, newest first, with the destination's name; the total", async () => {
      const o = await open();
      await seed(o);
      const regulation = (id: string, userId: string, canceled: boolean) =>
        o.insert("regulations", { id, workspace_id: "ws", regulation_type: "suppress_with_delete", user_id: userId, attributes: { userId }, canceled, created_at: T0, updated_at: T0 });
      await regulation("reg_1", "u1", false);
      await regulation("reg_2", "u2", true);
      const job = (id: string, regulationId: string, destinationId: string, status: string, updatedAt: number, reason: string | null) =>
        o.insert("deletion_jobs", { id, regulation_id: regulationId, workspace_id: "ws", destination_id: destinationId, status, reason, attempts: 2, next_attempt_at: T0, created_at: T0, updated_at: updatedAt });
      await job("job_1", "reg_1", "dst_x", "failed", s(10), "HTTP 500");
      await job("job_2", "reg_1", "dst_gone", "aborted", s(20), null);
      await job("job_3", "reg_1", "dst_y", "pending", s(30), null);
      await job("job_4", "reg_2", "dst_x", "failed", s(40), "canceled regulation");
      const all = await o.store.failingDeletions("ws", 50);
      expect(all).toEqual({
        deletions: [
          { regulationId: "reg_1", userId: "u1", destinationId: "dst_gone", destinationName: null, status: "aborted", reason: null, attempts: 2, updatedAt: s(20) },
          { regulationId: "reg_1", userId: "u1", destinationId: "dst_x", destinationName: "X", status: "failed", reason: "HTTP 500", attempts: 2, updatedAt: s(10) },
        ],
        total: 2,
      });
      expect(await o.store.failingDeletions("ws", 1)).toEqual({ deletions: all.deletions.slice(0, 1), total: 2 });
      expect(await o.store.failingDeletions("ws_other", 50)).toEqual({ deletions: [], total: 0 });
    });

    test("purgeExpired: finished old deliveries go; an event goes once it is old, passed by the processor and has no delivery left", async () => {
      const o = await open();
      for (const id of ["ws"]) await o.insert("workspaces", { id, name: id, created_at: 1 });
      const cutoff = s(3600);
      const event = (n: number, at: number) =>
        o.insert("events", { workspace_id: "ws", source_id: "src_a", message_id: `r${n}`, user_key: "u1", type: "track", payload: "{}", received_at: at }) as Promise<number>;
      const delivery = (eventId: number, state: string, updatedAt: number) =>
        o.insert("deliveries", { event_id: eventId, destination_id: "dst_x", source_id: "src_a", workspace_id: "ws", user_key: "u1", state, attempts: 1, next_attempt_at: updatedAt, created_at: T0, updated_at: updatedAt }) as Promise<number>;
      // Received in id order, as on one instance: old, old, old, old, new.
      const eA = await event(1, s(1));
      const eF = await event(2, s(2));
      const eB = await event(3, s(3));
      const eC = await event(4, s(4));
      const eD = await event(5, s(7200));
      await delivery(eA, "succeeded", s(10));
      await delivery(eA, "filtered", s(10));
      const dF = await delivery(eF, "aborted", s(7200)); // finished, but not old
      const dB = await delivery(eB, "retrying", s(10)); // old, but unfinished
      await o.passProcessor(eB);
      expect(await o.store.purgeExpired(cutoff)).toEqual({ deliveries: 2, events: 1 });
      expect(await o.ids("deliveries")).toEqual([dF, dB]);
      // eC: not yet passed by the processor; eD: not old.
      expect(await o.ids("events")).toEqual([eF, eB, eC, eD]);
      await o.passProcessor(eD);
      expect(await o.store.purgeExpired(cutoff)).toEqual({ deliveries: 0, events: 1 });
      expect(await o.ids("events")).toEqual([eF, eB, eD]);
      expect(await o.store.purgeExpired(cutoff)).toEqual({ deliveries: 0, events: 0 });
    });

    test("purgeExpired: more rows than one batch all go, then reclaimSpace gives the space back", async () => {
      const o = await open();
      const n = 5000 * 2 + 3;
      await o.bulk(n, T0);
      const ids = await o.ids("events");
      await o.passProcessor(ids[ids.length - 1]!);
      expect(await o.store.purgeExpired(s(60))).toEqual({ deliveries: n, events: n });
      expect(await o.ids("events")).toEqual([]);
      expect(await o.ids("deliveries")).toEqual([]);
      const free = o.freePages?.();
      await o.store.reclaimSpace();
      if (free !== undefined) {
        expect(free).toBeGreaterThan(0);
        expect(o.freePages!()).toBeLessThan(free);
      }
    }, 30_000);

    test("the services on the store alone: overview, attention, deliveries list and stats", async () => {
      const o = await open();
      const { d } = await seed(o);
      const ctx = { stats: o.store, controlPlane: o.controlPlane, workspaceId: "ws", now: () => s(210) } as unknown as ScopedContext;
      const series = await eventTimeseries(ctx, 5);
      expect(series.minuteStarts[0]).toBe(iso(T0 - 60_000));
      expect(series.total.totals).toEqual({ received: 4, delivered: 2, failed: 5, aborted: 3 });
      expect(series.total.received).toEqual([0, 2, 1, 1, 0]);
      expect(series.total.failed).toEqual([0, 1, 4, 0, 0]);
      expect(series.sources.map((x) => [x.id, x.totals])).toEqual([
        ["src_a", { received: 3, delivered: 2, failed: 2, aborted: 2 }],
        ["src_b", { received: 1, delivered: 0, failed: 3, aborted: 1 }],
      ]);
      expect(series.destinations.map((x) => [x.id, x.totals])).toEqual([
        ["dst_x", { delivered: 2, failed: 4, aborted: 0 }],
        ["dst_y", { delivered: 0, failed: 1, aborted: 2 }],
      ]);

      const attention = await needsAttention(ctx);
      expect(attention.destinations).toEqual([{ id: "dst_y", name: "Y", type: "WEBHOOK", enabled: true, aborted: 2, lastError: { error: "HTTP 401", at: iso(s(110)) } }]);
      expect(attention.deletionsTotal).toBe(0);

      const page = await listDeliveries(ctx, "dst_x", { limit: 3 });
      expect(page.deliveries.map((x) => x.id)).toEqual([d.d5, d.d4, d.d2]);
      expect(page.next).toBe(d.d2);
      expect(page.deliveries[2]!.attemptLog).toHaveLength(3);
      expect(page.deliveries[2]!.event).toEqual({ messageId: "m2" });
      const rest = await listDeliveries(ctx, "dst_x", { before: page.next! });
      expect(rest.deliveries.map((x) => x.id)).toEqual([d.d1]);
      expect(rest.next).toBeNull();

      const stats = await destinationStats({ ...ctx, now: () => s(120) } as ScopedContext, "dst_x");
      expect(stats.counts).toEqual({ pending: 1, retrying: 1, succeeded: 2, aborted: 0, filtered: 0 });
      expect(stats.lastError).toEqual({ error: "HTTP 500", at: iso(s(90)) });
    });
  });
}

describe.if(havePostgres)("stats store on PostgreSQL only", () => {
  /** An event of src_a with the given id, received at `at`. */
  const inserter = (o: Awaited<ReturnType<typeof openPg>>) => (id: number, at: number) =>
    o.insert("events", { id, workspace_id: "ws", source_id: "src_a", message_id: `o${id}`, user_key: "u1", type: "track", payload: "{}", received_at: at });

  test("retention goes by received_at, not by id: ids of instances commit out of order", async () => {
    const o = await openPg();
    const event = inserter(o);
    // A lower id received after the cutoff, a higher id before it (another instance's slower clock or commit).
    await event(100, s(7200));
    await event(101, s(1));
    await event(102, s(7300));
    await o.passProcessor(102);
    expect(await o.store.purgeExpired(s(3600))).toEqual({ deliveries: 0, events: 1 });
    expect(await o.ids("events")).toEqual([100, 102]);
  });

  test("the overview counts every instance's events: received_at decides, whatever the id order", async () => {
    const o = await openPg();
    const event = inserter(o);
    await event(200, s(70));
    await event(201, s(5));
    await event(202, s(10));
    expect(byKey(await o.store.countOutcomes("ws", T0, s(60)))).toEqual([cell("received", "src_a", null, M0, 2)]);
    expect(byKey(await o.store.countOutcomes("ws", s(60), OPEN_END))).toEqual([cell("received", "src_a", null, M0 + 1, 1)]);
  });
});

test("SQLite: the health check reports the writes the disk refused", async () => {
  const o = await openSqlite();
  const health = storageHealth(o.path!);
  health.failed("intake", Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" }), T0);
  try {
    expect(await o.store.health()).toEqual({ cause: expect.stringContaining("disk full"), since: T0, writers: ["intake"] });
  } finally {
    health.recovered("intake");
  }
  expect(await o.store.health()).toBeUndefined();
});
