/**
 * The delivery engine's storage seam (cluster mode, issue 24): one contract over DeliveriesStore,
 * run against every store in `STORES` — SQLite (a data dir opened as the server opens it) and
 * PostgreSQL (its own schema, dropped after) for the methods it implements. Fan-out is all or
 * nothing with its cursor, the queue keeps each user's order, outcomes land, a deleted
 * destination's queue is aborted, and the destinations with work are those with queued rows.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import type { SQL } from "bun";
import { join } from "node:path";
import { openDatabase } from "../db";
import { type PgDb, closePostgres, openPostgres } from "../db/pg";
import type { LeaseFence } from "../src/cluster/types";
import { type DeliveriesStore, type NewDelivery, type OutcomeRow, START_CURSOR, cursorAfter } from "../src/pipeline/deliveries-store";
import { PgDeliveriesStore } from "../src/storage/postgres/deliveries";
import { dedupKey } from "../src/storage/postgres/event-log";
import { SqliteDeliveriesStore } from "../src/storage/sqlite/deliveries";
import { cleanup, tempDir, waitFor } from "./helpers";
import { PG, havePostgres, requirePostgres, testSql } from "./pg";

requirePostgres("deliveries-store.test.ts");

const url = `postgres://${encodeURIComponent(PG.user)}${PG.password ? ":" + encodeURIComponent(PG.password) : ""}@${PG.host}:${PG.port}/${PG.database}`;
const admin = havePostgres ? testSql() : null;

/** What a test writes and reads around the store: rows of other areas (events), and the table as it is. */
interface Opened {
  store: DeliveriesStore;
  partition: number;
  fence: LeaseFence;
  /** Inserts events as intake would (in this order, committed), returning their ids. */
  addEvents(events: TestEvent[]): Promise<number[]>;
  /** Every delivery row, by id. */
  rows(): Promise<DeliveryRow[]>;
  /** PostgreSQL: a connection on the store's schema. */
  sql?: SQL;
}

interface TestEvent {
  sourceId: string;
  userKey: string;
  type?: string;
  payload?: Record<string, unknown>;
}

interface DeliveryRow {
  id: number;
  eventId: number;
  destinationId: string;
  userKey: string;
  state: string;
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
  updatedAt: number;
}

/**
 * Which parts of the contract a store implements (PostgreSQL grows into it). "fencing": writes
 * under a stale lease write nothing; "horizon": events are read only once every transaction
 * that could still commit one behind them has ended.
 */
type Part = "processor" | "router" | "outcomes" | "fencing" | "horizon";

interface StoreFactory {
  name: string;
  implements: ReadonlySet<Part>;
  open(): Promise<Opened>;
}

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await admin?.close();
});

async function openSqlite(): Promise<Opened> {
  const dir = tempDir();
  const db = openDatabase(join(dir, "sluice.db"), { synchronous: "FULL" });
  closers.push(() => {
    db.$client.close();
    cleanup(dir);
  });
  const c = db.$client;
  const insert = c.prepare(
    "INSERT INTO events (workspace_id, source_id, message_id, user_key, type, payload, received_at) VALUES ('ws', ?, ?, ?, ?, ?, ?) RETURNING id",
  );
  return {
    store: new SqliteDeliveriesStore(db),
    partition: 0,
    fence: { partition: 0, epoch: 0 },
    async addEvents(events) {
      return c.transaction(() =>
        events.map((e) => {
          const type = e.type ?? "track";
          const payload = JSON.stringify({ type, userId: e.userKey, ...e.payload });
          return (insert.get(e.sourceId, crypto.randomUUID(), e.userKey, type, payload, Date.now()) as { id: number }).id;
        }),
      )();
    },
    async rows() {
      return c
        .query(
          `SELECT id, event_id AS eventId, destination_id AS destinationId, user_key AS userKey, state, attempts,
                  next_attempt_at AS nextAttemptAt, last_error AS lastError, updated_at AS updatedAt
             FROM deliveries ORDER BY id`,
        )
        .all() as DeliveryRow[];
    },
  };
}

/** The instance the PostgreSQL store writes as, holding the test partition's lease at epoch 7. */
const INSTANCE = "test-instance";
const PG_PARTITION = 3;

async function openPg(): Promise<Opened> {
  const schema = `t_dlvstore_${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
  let db: PgDb | undefined;
  closers.push(async () => {
    if (db) await closePostgres(db);
    await admin!.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  });
  db = await openPostgres(url, { searchPath: schema, max: 4 });
  const sql = db.$client;
  await sql.unsafe("UPDATE partition_leases SET owner = $1, epoch = 7, expires_at = now() + interval '1 hour' WHERE partition = $2", [INSTANCE, PG_PARTITION]);
  return {
    store: new PgDeliveriesStore(sql, { instanceId: INSTANCE }),
    partition: PG_PARTITION,
    fence: { partition: PG_PARTITION, epoch: 7 },
    sql,
    async addEvents(events) {
      const ids: number[] = [];
      for (const e of events) {
        const type = e.type ?? "track";
        const payload = JSON.stringify({ type, userId: e.userKey, ...e.payload });
        const messageId = crypto.randomUUID();
        const [row] = await sql.unsafe(
          `INSERT INTO events (workspace_id, source_id, message_id, dedup_key, partition, user_key, type, payload, received_at)
           VALUES ('ws', $1, $2, $3::bigint, $4, $5, $6, $7, $8) RETURNING id`,
          [e.sourceId, messageId, dedupKey(e.sourceId, messageId), PG_PARTITION, e.userKey, type, payload, Date.now()],
        );
        ids.push(Number(row.id));
      }
      // Committed is not yet readable: other sessions on this server may hold the horizon back.
      await waitFor(async () => (await sql.unsafe(`SELECT bool_and(tx < pg_snapshot_xmin(pg_current_snapshot())) AS below FROM events`))[0].below, {
        what: "the events below the horizon",
      });
      return ids;
    },
    async rows() {
      const rows = await sql.unsafe(
        `SELECT id, event_id AS "eventId", destination_id AS "destinationId", user_key AS "userKey", state, attempts,
                next_attempt_at AS "nextAttemptAt", last_error AS "lastError", updated_at AS "updatedAt"
           FROM deliveries ORDER BY id`,
      );
      return rows.map((r: any) => ({ ...r, id: Number(r.id), eventId: Number(r.eventId), nextAttemptAt: Number(r.nextAttemptAt), updatedAt: Number(r.updatedAt) }));
    },
  };
}

const STORES: StoreFactory[] = [
  { name: "SQLite", implements: new Set<Part>(["processor", "router", "outcomes"]), open: openSqlite },
  ...(havePostgres ? [{ name: "PostgreSQL", implements: new Set<Part>(["processor", "router", "outcomes", "fencing", "horizon"]), open: openPg }] : []),
];

const ALL_SOURCES: ReadonlySet<string> = new Set(["src_a", "src_b"]);

function delivery(eventId: number, destinationId: string, userKey: string, sourceId = "src_a"): NewDelivery {
  return { eventId, destinationId, sourceId, workspaceId: "ws", userKey };
}

function outcome(id: number, set: Partial<OutcomeRow>): OutcomeRow {
  return {
    id,
    state: "succeeded",
    attempts: 1,
    nextAttemptAt: 1000,
    firstAttemptAt: 1000,
    lastStatus: 200,
    lastResponse: "ok",
    lastError: null,
    attemptLog: "[]",
    updatedAt: 1000,
    ...set,
  };
}

/** Events of `users` (in this order) fanned out to the destinations: the rows' ids, in insert order. */
async function queued(o: Opened, users: string[], destinationIds: string[]): Promise<number[]> {
  const ids = await o.addEvents(users.map((userKey) => ({ sourceId: "src_a", userKey })));
  const batch = await o.store.readEventsAfter(o.partition, await o.store.readCursor(o.partition), 10_000, ALL_SOURCES);
  const ds = ids.flatMap((id, i) => destinationIds.map((d) => delivery(id, d, users[i]!)));
  expect(await o.store.fanOut(o.fence, ds, batch.next, 500)).toBe(true);
  return (await o.rows()).map((r) => r.id);
}

for (const factory of STORES) {
  const has = (part: Part) => factory.implements.has(part);

  describe(`${factory.name} deliveries store`, () => {
    describe.if(has("processor"))("processor: events after the cursor, fan-out", () => {
      test("a store that never fanned out starts before the first event", async () => {
        const o = await factory.open();
        expect(await o.store.readCursor(o.partition)).toEqual(START_CURSOR);
      });

      test("events come after the cursor in order, up to the limit; payloads only for routed sources", async () => {
        const o = await factory.open();
        const ids = await o.addEvents([
          { sourceId: "src_a", userKey: "u1", payload: { event: "one" } },
          { sourceId: "src_b", userKey: "u2", type: "identify" },
          { sourceId: "src_a", userKey: "u1", payload: { event: "three" } },
        ]);
        const routed = new Set(["src_a"]);
        const first = await o.store.readEventsAfter(o.partition, START_CURSOR, 2, routed);
        expect(first.events.map((e) => e.id)).toEqual(ids.slice(0, 2));
        expect(first.events[0]).toMatchObject({ id: ids[0], sourceId: "src_a", workspaceId: "ws", userKey: "u1", type: "track" });
        expect(JSON.parse(first.events[0]!.payload!)).toMatchObject({ event: "one" });
        expect(first.events[1]).toMatchObject({ sourceId: "src_b", type: "identify" });
        expect(first.events[1]!.payload).toBeUndefined();
        expect(first.next.id).toBe(ids[1]!);

        const rest = await o.store.readEventsAfter(o.partition, first.next, 2, routed);
        expect(rest.events.map((e) => e.id)).toEqual([ids[2]!]);
        const none = await o.store.readEventsAfter(o.partition, rest.next, 2, routed);
        expect(none.events).toEqual([]);
        expect(none.next).toEqual(rest.next);
      });

      test("a fan-out inserts pending deliveries due at once and saves its cursor with them", async () => {
        const o = await factory.open();
        const ids = await o.addEvents([{ sourceId: "src_a", userKey: "u1" }, { sourceId: "src_a", userKey: "u2" }]);
        const batch = await o.store.readEventsAfter(o.partition, START_CURSOR, 10, ALL_SOURCES);
        await o.store.fanOut(o.fence, [delivery(ids[0]!, "dst_1", "u1"), delivery(ids[0]!, "dst_2", "u1"), delivery(ids[1]!, "dst_1", "u2")], batch.next, 777);
        expect(await o.store.readCursor(o.partition)).toEqual(batch.next);
        const rows = await o.rows();
        expect(rows.map((r) => [r.eventId, r.destinationId, r.userKey, r.state, r.attempts, r.nextAttemptAt])).toEqual([
          [ids[0], "dst_1", "u1", "pending", 0, 777],
          [ids[0], "dst_2", "u1", "pending", 0, 777],
          [ids[1], "dst_1", "u2", "pending", 0, 777],
        ]);
        expect((await o.store.readEventsAfter(o.partition, await o.store.readCursor(o.partition), 10, ALL_SOURCES)).events).toEqual([]);
      });

      test("a fan-out that fails part-way writes nothing: no delivery, and the cursor stays where it was", async () => {
        const o = await factory.open();
        const ids = await o.addEvents([{ sourceId: "src_a", userKey: "u1" }, { sourceId: "src_a", userKey: "u2" }]);
        const batch = await o.store.readEventsAfter(o.partition, START_CURSOR, 10, ALL_SOURCES);
        // The second row breaks a NOT NULL column, after the first was inserted.
        const broken = [delivery(ids[0]!, "dst_1", "u1"), { ...delivery(ids[1]!, "dst_1", "u2"), destinationId: null as unknown as string }];
        await expect(o.store.fanOut(o.fence, broken, batch.next, 1)).rejects.toThrow();
        expect(await o.rows()).toEqual([]);
        expect(await o.store.readCursor(o.partition)).toEqual(START_CURSOR);
        // Read again from the unmoved cursor, the same events come back and fan out whole.
        const again = await o.store.readEventsAfter(o.partition, START_CURSOR, 10, ALL_SOURCES);
        expect(again.events.map((e) => e.id)).toEqual(ids);
        await o.store.fanOut(o.fence, [delivery(ids[0]!, "dst_1", "u1"), delivery(ids[1]!, "dst_1", "u2")], again.next, 1);
        expect((await o.rows()).map((r) => r.eventId)).toEqual(ids);
      });

      test("with nothing to route the cursor jumps to the newest event and is saved alone", async () => {
        const o = await factory.open();
        const ids = await o.addEvents([{ sourceId: "src_a", userKey: "u1" }, { sourceId: "src_a", userKey: "u2" }]);
        const newest = await o.store.newestCursor(o.partition, 0);
        expect(newest.id).toBe(ids[1]!);
        expect(cursorAfter(newest, START_CURSOR)).toBe(true);
        await o.store.saveCursor(o.fence, newest);
        expect(await o.store.readCursor(o.partition)).toEqual(newest);
        expect((await o.store.readEventsAfter(o.partition, newest, 10, ALL_SOURCES)).events).toEqual([]);
        expect(await o.rows()).toEqual([]);
      });
    });

    describe.if(has("router"))("router: queue windows, destinations with work, abort", () => {
      test("the queue comes in id order, so each user's deliveries keep their order, after a position and up to a limit", async () => {
        const o = await factory.open();
        const users = ["u1", "u2", "u1", "u3", "u1", "u2"];
        const ids = await queued(o, users, ["dst_1", "dst_2"]);
        const mine = (await o.rows()).filter((r) => r.destinationId === "dst_1");
        const window = await o.store.loadQueue(o.partition, "dst_1", 0, 4);
        expect(window.map((d) => d.id)).toEqual(mine.slice(0, 4).map((r) => r.id));
        const rest = await o.store.loadQueue(o.partition, "dst_1", window[3]!.id, 100);
        expect(rest.map((d) => d.id)).toEqual(mine.slice(4).map((r) => r.id));
        const all = [...window, ...rest];
        expect(all.filter((d) => d.userKey === "u1").map((d) => d.eventId)).toEqual(mine.filter((r) => r.userKey === "u1").map((r) => r.eventId));
        expect(all.map((d) => d.userKey)).toEqual(users);
        expect(ids.length).toBe(12);
      });

      test("a queued delivery carries what the router needs, with its event's payload", async () => {
        const o = await factory.open();
        const [eventId] = await o.addEvents([{ sourceId: "src_a", userKey: "u1", payload: { event: "Signed Up" } }]);
        const batch = await o.store.readEventsAfter(o.partition, START_CURSOR, 10, ALL_SOURCES);
        await o.store.fanOut(o.fence, [delivery(eventId!, "dst_1", "u1")], batch.next, 42);
        const [d] = await o.store.loadQueue(o.partition, "dst_1", 0, 10);
        expect(d).toMatchObject({ eventId, userKey: "u1", sourceId: "src_a", attempts: 0, firstAttemptAt: null, nextAttemptAt: 42, attemptLog: null, lastError: null });
        expect(JSON.parse(d!.payload)).toMatchObject({ event: "Signed Up", userId: "u1" });
      });

      test("only pending and retrying deliveries are queued, and only their destinations have work", async () => {
        const o = await factory.open();
        const ids = await queued(o, ["u1", "u2", "u3"], ["dst_1", "dst_2", "dst_3"]);
        expect((await o.store.destinationsWithWork(o.partition)).sort()).toEqual(["dst_1", "dst_2", "dst_3"]);
        const rows = await o.rows();
        const of = (d: string) => rows.filter((r) => r.destinationId === d).map((r) => r.id);
        await o.store.recordOutcomes(o.fence, [
          ...of("dst_1").map((id) => outcome(id, { state: "succeeded" })),
          ...of("dst_2").map((id, i) => outcome(id, { state: i === 0 ? "retrying" : "aborted" })),
          ...of("dst_3").map((id) => outcome(id, { state: "filtered" })),
        ]);
        expect(await o.store.destinationsWithWork(o.partition)).toEqual(["dst_2"]);
        expect(await o.store.loadQueue(o.partition, "dst_1", 0, 10)).toEqual([]);
        expect((await o.store.loadQueue(o.partition, "dst_2", 0, 10)).map((d) => d.id)).toEqual([of("dst_2")[0]!]);
        expect(ids.length).toBe(9);
      });

      test("aborting a deleted destination's queue ends its queued deliveries only, with the reason", async () => {
        const o = await factory.open();
        await queued(o, ["u1", "u2", "u1"], ["dst_gone", "dst_kept"]);
        const before = await o.rows();
        const gone = before.filter((r) => r.destinationId === "dst_gone");
        // One of the deleted destination's deliveries had already succeeded: it keeps its state.
        await o.store.recordOutcomes(o.fence, [outcome(gone[0]!.id, { state: "succeeded", updatedAt: 900 })]);
        await o.store.abortQueued(o.fence, "dst_gone", "destination deleted", 5000);
        const after = await o.rows();
        const byId = new Map(after.map((r) => [r.id, r]));
        expect(byId.get(gone[0]!.id)).toMatchObject({ state: "succeeded", lastError: null, updatedAt: 900 });
        for (const r of gone.slice(1)) expect(byId.get(r.id)).toMatchObject({ state: "aborted", lastError: "destination deleted", updatedAt: 5000 });
        for (const r of after.filter((r) => r.destinationId === "dst_kept")) expect(r).toMatchObject({ state: "pending", lastError: null });
        expect(await o.store.destinationsWithWork(o.partition)).toEqual(["dst_kept"]);
        expect(await o.store.loadQueue(o.partition, "dst_gone", 0, 10)).toEqual([]);
      });
    });

    describe.if(has("outcomes"))("outcomes", () => {
      test("every field of an outcome is written, and a later outcome of the same delivery in the batch wins", async () => {
        const o = await factory.open();
        const [a, b] = await queued(o, ["u1", "u2"], ["dst_1"]);
        await o.store.recordOutcomes(o.fence, [
          outcome(a!, { state: "retrying", attempts: 1, nextAttemptAt: 2000, firstAttemptAt: 1000, lastStatus: 503, lastResponse: "busy", lastError: "status 503", attemptLog: '[{"status":503}]', updatedAt: 1000 }),
          outcome(b!, { state: "aborted", attempts: 1, lastStatus: 400, lastResponse: "bad", lastError: "status 400", updatedAt: 1001 }),
          outcome(a!, { state: "retrying", attempts: 2, nextAttemptAt: 4000, firstAttemptAt: 1000, lastStatus: 502, lastResponse: "gateway", lastError: "status 502", attemptLog: '[{"status":503},{"status":502}]', updatedAt: 2000 }),
        ]);
        const [d] = await o.store.loadQueue(o.partition, "dst_1", 0, 10);
        expect(d).toMatchObject({ id: a, attempts: 2, firstAttemptAt: 1000, nextAttemptAt: 4000, lastError: "status 502", attemptLog: '[{"status":503},{"status":502}]' });
        const rows = await o.rows();
        expect(rows.find((r) => r.id === b)).toMatchObject({ state: "aborted", attempts: 1, lastError: "status 400", updatedAt: 1001 });
        expect(rows.find((r) => r.id === a)).toMatchObject({ state: "retrying", updatedAt: 2000 });

        await o.store.recordOutcomes(o.fence, [outcome(a!, { state: "succeeded", attempts: 3, lastStatus: 200, lastError: "status 502", updatedAt: 4000 })]);
        expect(await o.store.loadQueue(o.partition, "dst_1", 0, 10)).toEqual([]);
        expect((await o.rows()).find((r) => r.id === a)).toMatchObject({ state: "succeeded", attempts: 3, lastError: "status 502", updatedAt: 4000 });
      });

      test("an outcome batch is one unit: a failing row leaves every row of the batch as it was", async () => {
        const o = await factory.open();
        const [a, b] = await queued(o, ["u1", "u2"], ["dst_1"]);
        // state is NOT NULL: the second row fails after the first was applied.
        const bad = outcome(b!, { state: null as unknown as OutcomeRow["state"] });
        await expect(o.store.recordOutcomes(o.fence, [outcome(a!, { state: "succeeded" }), bad])).rejects.toThrow();
        expect((await o.rows()).map((r) => r.state)).toEqual(["pending", "pending"]);
      });
    });

    describe.if(has("fencing"))("fencing", () => {
      test("a fan-out or cursor save under a stale lease epoch writes nothing and says so", async () => {
        const o = await factory.open();
        const ids = await o.addEvents([{ sourceId: "src_a", userKey: "u1" }]);
        const batch = await o.store.readEventsAfter(o.partition, START_CURSOR, 10, ALL_SOURCES);
        const stale = { partition: o.fence.partition, epoch: o.fence.epoch - 1 };
        expect(await o.store.fanOut(stale, [delivery(ids[0]!, "dst_1", "u1")], batch.next, 1)).toBe(false);
        expect(await o.store.saveCursor(stale, batch.next)).toBe(false);
        expect(await o.rows()).toEqual([]);
        expect(await o.store.readCursor(o.partition)).toEqual(START_CURSOR);
        // A lease on another partition does not cover this one.
        const other = { partition: o.fence.partition + 1, epoch: o.fence.epoch };
        expect(await o.store.fanOut(other, [delivery(ids[0]!, "dst_1", "u1")], batch.next, 1)).toBe(false);
        expect(await o.rows()).toEqual([]);
        expect(await o.store.fanOut(o.fence, [delivery(ids[0]!, "dst_1", "u1")], batch.next, 1)).toBe(true);
        const [row] = await o.rows();
        expect(row).toMatchObject({ state: "pending" });

        // The router's and the outcome writer's writes are fenced the same way.
        expect(await o.store.recordOutcomes(stale, [outcome(row!.id, { state: "succeeded" })])).toBe(false);
        expect(await o.store.abortQueued(stale, "dst_1", "destination deleted", 2)).toBe(false);
        expect(await o.rows()).toEqual([row]);
        expect(await o.store.abortQueued(o.fence, "dst_1", "destination deleted", 2)).toBe(true);
        expect(await o.rows()).toEqual([{ ...row!, state: "aborted", lastError: "destination deleted", updatedAt: 2 }]);
      });
    });

    describe.if(has("horizon"))("the horizon", () => {
      test("an event committed behind an open transaction is read only once that transaction ends, in commit-safe order", async () => {
        const o = await factory.open();
        const sql = o.sql!;
        const insert = (q: SQL, user: string) => {
          const messageId = crypto.randomUUID();
          return q.unsafe(
            `INSERT INTO events (workspace_id, source_id, message_id, dedup_key, partition, user_key, type, payload, received_at)
             VALUES ('ws', 'src_a', $1, $2::bigint, $3, $4, 'track', '{"type":"track"}', 1) RETURNING id`,
            [messageId, dedupKey("src_a", messageId), o.partition, user],
          );
        };
        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        let tookId!: (id: number) => void;
        const earlyId = new Promise<number>((r) => (tookId = r));
        // A writer that takes an id first and commits last.
        const slow = sql.begin(async (tx) => {
          const [row] = await insert(tx as unknown as SQL, "u-slow");
          tookId(Number(row.id));
          await gate;
        });
        const early = await earlyId;
        const [late] = await insert(sql, "u-fast");
        const lateId = Number(late.id);
        expect(lateId).toBeGreaterThan(early);
        // The later id is committed, but the earlier one could still commit behind it: neither is read.
        const before = await o.store.readEventsAfter(o.partition, START_CURSOR, 10, ALL_SOURCES);
        expect(before.events).toEqual([]);
        expect(before.next).toEqual(START_CURSOR);
        expect(await o.store.newestCursor(o.partition, lateId)).toEqual(START_CURSOR);
        release();
        await slow;
        const after = await waitFor(async () => {
          const b = await o.store.readEventsAfter(o.partition, START_CURSOR, 10, ALL_SOURCES);
          return b.events.length === 2 ? b : undefined;
        }, { what: "both events below the horizon" });
        // (tx, id) order: the transaction that began first comes first, and the cursor passes both.
        expect(after.events.map((e) => e.id)).toEqual([early, lateId]);
        expect((await o.store.readEventsAfter(o.partition, after.next, 10, ALL_SOURCES)).events).toEqual([]);
      });
    });
  });
}
