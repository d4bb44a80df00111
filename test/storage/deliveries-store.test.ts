/**
 * The delivery engine's storage seam (cluster mode, issue 24): one contract over DeliveriesStore,
 * run against every store in `STORES` — SQLite (a data dir opened as the server opens it) and
 * PostgreSQL (its own schema, dropped after) for the methods it implements. Fan-out is all or
 * nothing with its cursor, the queue keeps each user's order, outcomes land, a deleted
 * destination's queue is aborted, and the destinations with work are those with queued rows.
 */
import { describe, expect, test } from "bun:test";
import type { SQL } from "bun";
import type { LeaseFence } from "../../src/cluster/types";
import {
  type DeliveriesStore,
  type EventCursor,
  type NewDelivery,
  type OutcomeRow,
  type RoutedSources,
  START_CURSOR,
  cursorAfter,
} from "../../src/pipeline/store";
import { PgDeliveriesStore } from "../../src/storage/postgres/deliveries";
import { dedupKey } from "../../src/storage/postgres/event-log";
import { SqliteDeliveriesStore } from "../../src/storage/sqlite/deliveries";
import { waitFor } from "../support/helpers";
import { havePostgres, requirePostgres } from "../support/pg";
import { storeScratch } from "../support/stores";

requirePostgres("deliveries-store.test.ts");

const scratch = storeScratch("t_dlvstore");

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
type Part = "processor" | "router" | "outcomes" | "fencing" | "horizon" | "partitions";

interface StoreFactory {
  name: string;
  implements: ReadonlySet<Part>;
  open(): Promise<Opened>;
}

async function openSqlite(): Promise<Opened> {
  const { db, dir } = scratch.sqlite();
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
  const db = await scratch.pgSchema().open();
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
  ...(havePostgres ? [{ name: "PostgreSQL", implements: new Set<Part>(["processor", "router", "outcomes", "fencing", "horizon", "partitions"]), open: openPg }] : []),
];

const ALL_SOURCES: ReadonlySet<string> = new Set(["src_a", "src_b"]);

/** A delivery of the test's partition (the wrappers below put it there). */
function delivery(eventId: number, destinationId: string, userKey: string, sourceId = "src_a"): NewDelivery {
  return { eventId, partition: -1, destinationId, sourceId, workspaceId: "ws", userKey };
}

// The store works many partitions per call; most tests use the one their store holds.
const only = <T>(o: Opened, value: T) => new Map([[o.partition, value]]);
const cursorOf = async (o: Opened) => (await o.store.readCursors([o.partition])).get(o.partition)!;
const read = (o: Opened, cursor: EventCursor, limit: number, routed: RoutedSources) => o.store.readEventsAfter(only(o, cursor), limit, routed);
const fan = (o: Opened, fence: LeaseFence, ds: NewDelivery[], next: ReadonlyMap<number, EventCursor>, at: number) =>
  o.store.fanOut([fence], ds.map((d) => ({ ...d, partition: o.partition })), next, at);
const record = (o: Opened, rows: OutcomeRow[], fence = o.fence) => o.store.recordOutcomes([fence], rows.map((r) => ({ ...r, partition: o.partition })));
const load = (o: Opened, destinationId: string, after: number, limit: number) => o.store.loadQueue(destinationId, only(o, after), limit);
/** The cursor a batch moved the test's partition to. */
const nextOf = (o: Opened, b: { next: ReadonlyMap<number, EventCursor> }) => b.next.get(o.partition)!;

function outcome(id: number, set: Partial<OutcomeRow>): OutcomeRow {
  return {
    id,
    partition: -1,
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
  const batch = await read(o, await cursorOf(o), 10_000, ALL_SOURCES);
  const ds = ids.flatMap((id, i) => destinationIds.map((d) => delivery(id, d, users[i]!)));
  expect(await fan(o, o.fence, ds, batch.next, 500)).toEqual([o.partition]);
  return (await o.rows()).map((r) => r.id);
}

for (const factory of STORES) {
  const has = (part: Part) => factory.implements.has(part);

  describe(`${factory.name} deliveries store`, () => {
    describe.if(has("processor"))("processor: events after the cursor, fan-out", () => {
      test("a store that never fanned out starts before the first event", async () => {
        const o = await factory.open();
        expect(await cursorOf(o)).toEqual(START_CURSOR);
      });

      test("events come after the cursor in order, up to the limit; payloads only for routed sources", async () => {
        const o = await factory.open();
        const ids = await o.addEvents([
          { sourceId: "src_a", userKey: "u1", payload: { event: "one" } },
          { sourceId: "src_b", userKey: "u2", type: "identify" },
          { sourceId: "src_a", userKey: "u1", payload: { event: "three" } },
        ]);
        const routed = new Set(["src_a"]);
        const first = await read(o, START_CURSOR, 2, routed);
        expect(first.events.map((e) => e.id)).toEqual(ids.slice(0, 2));
        expect(first.events[0]).toMatchObject({ id: ids[0], sourceId: "src_a", workspaceId: "ws", userKey: "u1", type: "track" });
        expect(JSON.parse(first.events[0]!.payload!)).toMatchObject({ event: "one" });
        expect(first.events[1]).toMatchObject({ sourceId: "src_b", type: "identify" });
        expect(first.events[1]!.payload).toBeUndefined();
        expect(nextOf(o, first).id).toBe(ids[1]!);

        const rest = await read(o, nextOf(o, first), 2, routed);
        expect(rest.events.map((e) => e.id)).toEqual([ids[2]!]);
        const none = await read(o, nextOf(o, rest), 2, routed);
        expect(none.events).toEqual([]);
        expect(none.next.size).toBe(0);
      });

      test("a fan-out inserts pending deliveries due at once and saves its cursor with them", async () => {
        const o = await factory.open();
        const ids = await o.addEvents([{ sourceId: "src_a", userKey: "u1" }, { sourceId: "src_a", userKey: "u2" }]);
        const batch = await read(o, START_CURSOR, 10, ALL_SOURCES);
        await fan(o, o.fence, [delivery(ids[0]!, "dst_1", "u1"), delivery(ids[0]!, "dst_2", "u1"), delivery(ids[1]!, "dst_1", "u2")], batch.next, 777);
        expect(await cursorOf(o)).toEqual(nextOf(o, batch));
        const rows = await o.rows();
        expect(rows.map((r) => [r.eventId, r.destinationId, r.userKey, r.state, r.attempts, r.nextAttemptAt])).toEqual([
          [ids[0], "dst_1", "u1", "pending", 0, 777],
          [ids[0], "dst_2", "u1", "pending", 0, 777],
          [ids[1], "dst_1", "u2", "pending", 0, 777],
        ]);
        expect((await read(o, await cursorOf(o), 10, ALL_SOURCES)).events).toEqual([]);
      });

      test("a fan-out that fails part-way writes nothing: no delivery, and the cursor stays where it was", async () => {
        const o = await factory.open();
        const ids = await o.addEvents([{ sourceId: "src_a", userKey: "u1" }, { sourceId: "src_a", userKey: "u2" }]);
        const batch = await read(o, START_CURSOR, 10, ALL_SOURCES);
        // The second row breaks a NOT NULL column, after the first was inserted.
        const broken = [delivery(ids[0]!, "dst_1", "u1"), { ...delivery(ids[1]!, "dst_1", "u2"), destinationId: null as unknown as string }];
        await expect(fan(o, o.fence, broken, batch.next, 1)).rejects.toThrow();
        expect(await o.rows()).toEqual([]);
        expect(await cursorOf(o)).toEqual(START_CURSOR);
        // Read again from the unmoved cursor, the same events come back and fan out whole.
        const again = await read(o, START_CURSOR, 10, ALL_SOURCES);
        expect(again.events.map((e) => e.id)).toEqual(ids);
        await fan(o, o.fence, [delivery(ids[0]!, "dst_1", "u1"), delivery(ids[1]!, "dst_1", "u2")], again.next, 1);
        expect((await o.rows()).map((r) => r.eventId)).toEqual(ids);
      });

      test("with nothing to route the cursor jumps to the newest event and is saved alone", async () => {
        const o = await factory.open();
        const ids = await o.addEvents([{ sourceId: "src_a", userKey: "u1" }, { sourceId: "src_a", userKey: "u2" }]);
        const newest = (await o.store.newestCursors([o.partition], 0)).get(o.partition)!;
        expect(newest.id).toBe(ids[1]!);
        expect(cursorAfter(newest, START_CURSOR)).toBe(true);
        expect(await o.store.saveCursors([o.fence], only(o, newest))).toEqual([o.partition]);
        expect(await cursorOf(o)).toEqual(newest);
        expect((await read(o, newest, 10, ALL_SOURCES)).events).toEqual([]);
        expect(await o.rows()).toEqual([]);
      });
    });

    describe.if(has("router"))("router: queue windows, destinations with work, abort", () => {
      test("the queue comes in id order, so each user's deliveries keep their order, after a position and up to a limit", async () => {
        const o = await factory.open();
        const users = ["u1", "u2", "u1", "u3", "u1", "u2"];
        const ids = await queued(o, users, ["dst_1", "dst_2"]);
        const mine = (await o.rows()).filter((r) => r.destinationId === "dst_1");
        const window = await load(o, "dst_1", 0, 4);
        expect(window.map((d) => d.id)).toEqual(mine.slice(0, 4).map((r) => r.id));
        const rest = await load(o, "dst_1", window[3]!.id, 100);
        expect(rest.map((d) => d.id)).toEqual(mine.slice(4).map((r) => r.id));
        const all = [...window, ...rest];
        expect(all.filter((d) => d.userKey === "u1").map((d) => d.eventId)).toEqual(mine.filter((r) => r.userKey === "u1").map((r) => r.eventId));
        expect(all.map((d) => d.userKey)).toEqual(users);
        expect(ids.length).toBe(12);
      });

      test("a queued delivery carries what the router needs, with its event's payload", async () => {
        const o = await factory.open();
        const [eventId] = await o.addEvents([{ sourceId: "src_a", userKey: "u1", payload: { event: "Signed Up" } }]);
        const batch = await read(o, START_CURSOR, 10, ALL_SOURCES);
        await fan(o, o.fence, [delivery(eventId!, "dst_1", "u1")], batch.next, 42);
        const [d] = await load(o, "dst_1", 0, 10);
        expect(d).toMatchObject({ eventId, userKey: "u1", sourceId: "src_a", attempts: 0, firstAttemptAt: null, nextAttemptAt: 42, attemptLog: null, lastError: null });
        expect(JSON.parse(d!.payload)).toMatchObject({ event: "Signed Up", userId: "u1" });
      });

      test("only pending and retrying deliveries are queued, and only their destinations have work", async () => {
        const o = await factory.open();
        const ids = await queued(o, ["u1", "u2", "u3"], ["dst_1", "dst_2", "dst_3"]);
        expect((await o.store.destinationsWithWork([o.partition])).sort()).toEqual(["dst_1", "dst_2", "dst_3"]);
        const rows = await o.rows();
        const of = (d: string) => rows.filter((r) => r.destinationId === d).map((r) => r.id);
        await record(o, [
          ...of("dst_1").map((id) => outcome(id, { state: "succeeded" })),
          ...of("dst_2").map((id, i) => outcome(id, { state: i === 0 ? "retrying" : "aborted" })),
          ...of("dst_3").map((id) => outcome(id, { state: "filtered" })),
        ]);
        expect(await o.store.destinationsWithWork([o.partition])).toEqual(["dst_2"]);
        expect(await load(o, "dst_1", 0, 10)).toEqual([]);
        expect((await load(o, "dst_2", 0, 10)).map((d) => d.id)).toEqual([of("dst_2")[0]!]);
        expect(ids.length).toBe(9);
      });

      test("aborting a deleted destination's queue ends its queued deliveries only, with the reason", async () => {
        const o = await factory.open();
        await queued(o, ["u1", "u2", "u1"], ["dst_gone", "dst_kept"]);
        const before = await o.rows();
        const gone = before.filter((r) => r.destinationId === "dst_gone");
        // One of the deleted destination's deliveries had already succeeded: it keeps its state.
        await record(o, [outcome(gone[0]!.id, { state: "succeeded", updatedAt: 900 })]);
        await o.store.abortQueued([o.fence], "dst_gone", "destination deleted", 5000);
        const after = await o.rows();
        const byId = new Map(after.map((r) => [r.id, r]));
        expect(byId.get(gone[0]!.id)).toMatchObject({ state: "succeeded", lastError: null, updatedAt: 900 });
        for (const r of gone.slice(1)) expect(byId.get(r.id)).toMatchObject({ state: "aborted", lastError: "destination deleted", updatedAt: 5000 });
        for (const r of after.filter((r) => r.destinationId === "dst_kept")) expect(r).toMatchObject({ state: "pending", lastError: null });
        expect(await o.store.destinationsWithWork([o.partition])).toEqual(["dst_kept"]);
        expect(await load(o, "dst_gone", 0, 10)).toEqual([]);
      });
    });

    describe.if(has("outcomes"))("outcomes", () => {
      test("every field of an outcome is written, and a later outcome of the same delivery in the batch wins", async () => {
        const o = await factory.open();
        const [a, b] = await queued(o, ["u1", "u2"], ["dst_1"]);
        await record(o, [
          outcome(a!, { state: "retrying", attempts: 1, nextAttemptAt: 2000, firstAttemptAt: 1000, lastStatus: 503, lastResponse: "busy", lastError: "status 503", attemptLog: '[{"status":503}]', updatedAt: 1000 }),
          outcome(b!, { state: "aborted", attempts: 1, lastStatus: 400, lastResponse: "bad", lastError: "status 400", updatedAt: 1001 }),
          outcome(a!, { state: "retrying", attempts: 2, nextAttemptAt: 4000, firstAttemptAt: 1000, lastStatus: 502, lastResponse: "gateway", lastError: "status 502", attemptLog: '[{"status":503},{"status":502}]', updatedAt: 2000 }),
        ]);
        const [d] = await load(o, "dst_1", 0, 10);
        expect(d).toMatchObject({ id: a, attempts: 2, firstAttemptAt: 1000, nextAttemptAt: 4000, lastError: "status 502", attemptLog: '[{"status":503},{"status":502}]' });
        const rows = await o.rows();
        expect(rows.find((r) => r.id === b)).toMatchObject({ state: "aborted", attempts: 1, lastError: "status 400", updatedAt: 1001 });
        expect(rows.find((r) => r.id === a)).toMatchObject({ state: "retrying", updatedAt: 2000 });

        await record(o, [outcome(a!, { state: "succeeded", attempts: 3, lastStatus: 200, lastError: "status 502", updatedAt: 4000 })]);
        expect(await load(o, "dst_1", 0, 10)).toEqual([]);
        expect((await o.rows()).find((r) => r.id === a)).toMatchObject({ state: "succeeded", attempts: 3, lastError: "status 502", updatedAt: 4000 });
      });

      test("an outcome batch is one unit: a failing row leaves every row of the batch as it was", async () => {
        const o = await factory.open();
        const [a, b] = await queued(o, ["u1", "u2"], ["dst_1"]);
        // state is NOT NULL: the second row fails after the first was applied.
        const bad = outcome(b!, { state: null as unknown as OutcomeRow["state"] });
        await expect(record(o, [outcome(a!, { state: "succeeded" }), bad])).rejects.toThrow();
        expect((await o.rows()).map((r) => r.state)).toEqual(["pending", "pending"]);
      });
    });

    describe.if(has("fencing"))("fencing", () => {
      test("a fan-out or cursor save under a stale lease epoch writes nothing and says so", async () => {
        const o = await factory.open();
        const ids = await o.addEvents([{ sourceId: "src_a", userKey: "u1" }]);
        const batch = await read(o, START_CURSOR, 10, ALL_SOURCES);
        const stale = { partition: o.fence.partition, epoch: o.fence.epoch - 1 };
        expect(await fan(o, stale, [delivery(ids[0]!, "dst_1", "u1")], batch.next, 1)).toEqual([]);
        expect(await o.store.saveCursors([stale], batch.next)).toEqual([]);
        expect(await o.rows()).toEqual([]);
        expect(await cursorOf(o)).toEqual(START_CURSOR);
        // A lease on another partition does not cover this one.
        const other = { partition: o.fence.partition + 1, epoch: o.fence.epoch };
        expect(await fan(o, other, [delivery(ids[0]!, "dst_1", "u1")], batch.next, 1)).toEqual([]);
        expect(await o.rows()).toEqual([]);
        expect(await fan(o, o.fence, [delivery(ids[0]!, "dst_1", "u1")], batch.next, 1)).toEqual([o.partition]);
        const [row] = await o.rows();
        expect(row).toMatchObject({ state: "pending" });

        // The router's and the outcome writer's writes are fenced the same way.
        expect(await record(o, [outcome(row!.id, { state: "succeeded" })], stale)).toEqual([]);
        expect(await o.store.abortQueued([stale], "dst_1", "destination deleted", 2)).toEqual([]);
        expect(await o.rows()).toEqual([row]);
        expect(await o.store.abortQueued([o.fence], "dst_1", "destination deleted", 2)).toEqual([o.partition]);
        expect(await o.rows()).toEqual([{ ...row!, state: "aborted", lastError: "destination deleted", updatedAt: 2 }]);
      });
    });

    describe.if(has("partitions"))("many partitions per call", () => {
      /** A second partition held by the same instance, and events spread over both. */
      async function twoPartitions(o: Opened) {
        const sql = o.sql!;
        const q = o.partition + 1;
        await sql.unsafe("UPDATE partition_leases SET owner = $1, epoch = 5, expires_at = now() + interval '1 hour' WHERE partition = $2", [INSTANCE, q]);
        const ids: Array<{ id: number; partition: number; user: string }> = [];
        // Interleaved: p, q, q, p, q, p, p, q (one transaction each, so (tx, id) follows the order).
        for (const [i, part] of [o.partition, q, q, o.partition, q, o.partition, o.partition, q].entries()) {
          const user = `u${part}-${i % 3}`;
          const messageId = crypto.randomUUID();
          const [row] = await sql.unsafe(
            `INSERT INTO events (workspace_id, source_id, message_id, dedup_key, partition, user_key, type, payload, received_at)
             VALUES ('ws', 'src_a', $1, $2::bigint, $3, $4, 'track', '{"type":"track"}', 1) RETURNING id`,
            [messageId, dedupKey("src_a", messageId), part, user],
          );
          ids.push({ id: Number(row.id), partition: part, user });
        }
        await waitFor(async () => (await sql.unsafe(`SELECT bool_and(tx < pg_snapshot_xmin(pg_current_snapshot())) AS below FROM events`))[0].below, {
          what: "the events below the horizon",
        });
        return { q, qFence: { partition: q, epoch: 5 }, ids };
      }

      test("one read over two partitions: in commit order, each partition's cursor moves to its last event read, nothing skipped or repeated", async () => {
        const o = await factory.open();
        const { q, ids } = await twoPartitions(o);
        let cursors = new Map([[o.partition, START_CURSOR], [q, START_CURSOR]]);
        const seen: number[] = [];
        for (let round = 0; round < 10; round++) {
          const b = await o.store.readEventsAfter(cursors, 3, ALL_SOURCES);
          if (b.events.length === 0) break;
          expect(b.events.length).toBeLessThanOrEqual(3);
          for (const e of b.events) expect(e.partition).toBe(ids.find((x) => x.id === e.id)!.partition);
          seen.push(...b.events.map((e) => e.id));
          cursors = new Map([...cursors, ...b.next]);
        }
        expect(seen).toEqual(ids.map((x) => x.id));
        // Only the partitions asked for.
        expect((await o.store.readEventsAfter(new Map([[q, START_CURSOR]]), 100, ALL_SOURCES)).events.map((e) => e.id)).toEqual(ids.filter((x) => x.partition === q).map((x) => x.id));
      });

      test("a fan-out over two partitions writes the one whose fence holds and says which; the other's rows and cursor stay", async () => {
        const o = await factory.open();
        const { q, qFence, ids } = await twoPartitions(o);
        const b = await o.store.readEventsAfter(new Map([[o.partition, START_CURSOR], [q, START_CURSOR]]), 100, ALL_SOURCES);
        const ds = b.events.map((e) => ({ ...delivery(e.id, "dst_1", e.userKey), partition: e.partition }));
        const stale = { ...qFence, epoch: qFence.epoch - 1 };
        expect(await o.store.fanOut([o.fence, stale], ds, b.next, 9)).toEqual([o.partition]);
        expect((await o.rows()).map((r) => r.eventId)).toEqual(ids.filter((x) => x.partition === o.partition).map((x) => x.id));
        const cursors = await o.store.readCursors([o.partition, q]);
        expect(cursors.get(o.partition)).toEqual(b.next.get(o.partition));
        expect(cursors.get(q)).toEqual(START_CURSOR);
        // With both fences current, the other partition goes through too.
        const again = await o.store.readEventsAfter(new Map([[q, START_CURSOR]]), 100, ALL_SOURCES);
        expect(await o.store.fanOut([o.fence, qFence], again.events.map((e) => ({ ...delivery(e.id, "dst_1", e.userKey), partition: e.partition })), again.next, 9)).toEqual([q]);
        expect((await o.rows()).length).toBe(ids.length);
      });

      test("the queue over two partitions: id order across them, each after its own position; outcomes written per fence", async () => {
        const o = await factory.open();
        const { q, qFence, ids } = await twoPartitions(o);
        const b = await o.store.readEventsAfter(new Map([[o.partition, START_CURSOR], [q, START_CURSOR]]), 100, ALL_SOURCES);
        await o.store.fanOut([o.fence, qFence], b.events.map((e) => ({ ...delivery(e.id, "dst_1", e.userKey), partition: e.partition })), b.next, 9);
        const rows = await o.rows();
        const partOf = (eventId: number) => ids.find((x) => x.id === eventId)!.partition;
        const inP = rows.filter((r) => partOf(r.eventId) === o.partition);
        const inQ = rows.filter((r) => partOf(r.eventId) === q);
        // p's position after its second row, q's at its start.
        const window = await o.store.loadQueue("dst_1", new Map([[o.partition, inP[1]!.id], [q, 0]]), 100);
        expect(window.map((d) => d.id)).toEqual([...inP.slice(2), ...inQ].map((r) => r.id).sort((x, y) => x - y));
        expect(window.every((d) => d.partition === partOf(d.eventId))).toBe(true);
        // A limit keeps each partition's part a prefix of its queue.
        const first = await o.store.loadQueue("dst_1", new Map([[o.partition, 0], [q, 0]]), 3);
        expect(first.map((d) => d.id)).toEqual(rows.slice(0, 3).map((r) => r.id));

        const stale = { ...qFence, epoch: qFence.epoch - 1 };
        const outcomes = window.map((d) => ({ ...outcome(d.id, { state: "succeeded" }), partition: d.partition }));
        expect(await o.store.recordOutcomes([o.fence, stale], outcomes)).toEqual([o.partition]);
        const after = await o.rows();
        for (const r of after) expect(r.state).toBe(partOf(r.eventId) === o.partition && inP.slice(2).some((x) => x.id === r.id) ? "succeeded" : "pending");
        expect((await o.store.destinationsWithWork([q])).sort()).toEqual(["dst_1"]);
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
        const before = await read(o, START_CURSOR, 10, ALL_SOURCES);
        expect(before.events).toEqual([]);
        expect(before.next.size).toBe(0);
        expect((await o.store.newestCursors([o.partition], lateId)).get(o.partition)).toBeUndefined();
        release();
        await slow;
        const after = await waitFor(async () => {
          const b = await read(o, START_CURSOR, 10, ALL_SOURCES);
          return b.events.length === 2 ? b : undefined;
        }, { what: "both events below the horizon" });
        // (tx, id) order: the transaction that began first comes first, and the cursor passes both.
        expect(after.events.map((e) => e.id)).toEqual([early, lateId]);
        expect((await read(o, nextOf(o, after), 10, ALL_SOURCES)).events).toEqual([]);
      });
    });
  });
}
