/**
 * The event catalog's store (src/catalog/store.ts), one contract run against SQLite (a data dir
 * opened as the server opens it) and PostgreSQL (its own schema, dropped after): its own read of
 * the committed events after a cursor, and flushes that merge the deltas of two instances into
 * the same rows (counts add, days add, first and last seen widen, paths merge), hold the bound of
 * models per source across them (also when they flush at the same moment, on PostgreSQL), and
 * save the reader's cursor with the counts it reached, so a reader started again counts nothing
 * twice.
 */
import { describe, expect, test } from "bun:test";
import type { SQL } from "bun";
import type { ConfigStore } from "../../src/control-plane/config-store";
import type { LeaseFence } from "../../src/cluster/types";
import { CatalogObserver, type SourcePolicy } from "../../src/catalog/observer";
import { CatalogReader, type FlushOptions, ReaderPace, flushObserver } from "../../src/catalog/reader";
import type { CatalogEvent, CatalogStore } from "../../src/catalog/store";
import { silentLogger } from "../../src/lib/logger";
import { type EventCursor, type PartitionWork, START_CURSOR } from "../../src/pipeline/store";
import { PgCatalogStore } from "../../src/storage/postgres/catalog";
import { dedupKey } from "../../src/storage/postgres/event-log";
import { SqliteCatalogStore } from "../../src/storage/sqlite/catalog";
import { waitFor } from "../support/helpers";
import { havePostgres, requirePostgres } from "../support/pg";
import { storeScratch } from "../support/stores";

requirePostgres("store.test.ts (catalog)");

const scratch = storeScratch("t_catalog");

const T0 = Date.UTC(2026, 11, 7, 12);
const DAY = 86_400_000;
const POLICY: SourcePolicy = { examples: true, personal: false, strictNames: true };
const INSTANCE = "test-instance";

interface Opened {
  store: CatalogStore;
  /** Another instance's store on the same database (PostgreSQL: its own client). */
  other(): Promise<CatalogStore>;
  partition: number;
  fence: LeaseFence;
  /** Stores events as intake would (committed, readable), in this order. */
  addEvents(events: Array<{ sourceId: string; type: string; body: Record<string, unknown>; at: number }>): Promise<void>;
  sql?: SQL;
}

async function openSqlite(): Promise<Opened> {
  const { db } = scratch.sqlite();
  const c = db.$client;
  const insert = c.prepare("INSERT INTO events (workspace_id, source_id, message_id, user_key, type, payload, received_at) VALUES ('ws_a', ?, ?, 'u', ?, ?, ?)");
  const store = new SqliteCatalogStore(db);
  return {
    store,
    other: async () => store,
    partition: 0,
    fence: { partition: 0, epoch: 0 },
    async addEvents(events) {
      c.transaction(() => {
        for (const e of events) insert.run(e.sourceId, crypto.randomUUID(), e.type, JSON.stringify({ type: e.type, ...e.body }), e.at);
      })();
    },
  };
}

const PG_PARTITION = 5;

async function openPg(): Promise<Opened> {
  const { open } = scratch.pgSchema();
  const db = await open();
  const sql = db.$client;
  await sql.unsafe("UPDATE partition_leases SET owner = $1, epoch = 3, expires_at = now() + interval '1 hour' WHERE partition = $2", [INSTANCE, PG_PARTITION]);
  return {
    store: new PgCatalogStore(sql, { instanceId: INSTANCE }),
    other: async () => new PgCatalogStore((await open()).$client, { instanceId: INSTANCE }),
    partition: PG_PARTITION,
    fence: { partition: PG_PARTITION, epoch: 3 },
    sql,
    async addEvents(events) {
      for (const e of events) {
        const messageId = crypto.randomUUID();
        await sql.unsafe(
          `INSERT INTO events (workspace_id, source_id, message_id, dedup_key, partition, user_key, type, payload, received_at)
           VALUES ('ws_a', $1, $2, $3::bigint, $4, 'u', $5, $6, $7)`,
          [e.sourceId, messageId, dedupKey(e.sourceId, messageId), PG_PARTITION, e.type, JSON.stringify({ type: e.type, ...e.body }), e.at],
        );
      }
      // Committed is not yet readable: other sessions on this server may hold the horizon back.
      await waitFor(async () => (await sql.unsafe(`SELECT bool_and(tx < pg_snapshot_xmin(pg_current_snapshot())) AS below FROM events`))[0].below, { what: "the events below the horizon" });
    },
  };
}

const STORES = [{ name: "SQLite", open: openSqlite }, ...(havePostgres ? [{ name: "PostgreSQL", open: openPg }] : [])];

let nextId = 1;
function event(sourceId: string, type: string, body: Record<string, unknown>, at = T0): CatalogEvent {
  return { id: nextId++, partition: 0, sourceId, workspaceId: "ws_a", type, receivedAt: at, payload: JSON.stringify({ type, ...body }) };
}

function observerOf(events: CatalogEvent[], maxModels = 1000): CatalogObserver {
  const o = new CatalogObserver({ maxModels, maxPaths: 500, samplePerSecond: 1000, policy: () => POLICY, clock: () => 0 });
  for (const e of events) o.observe(e);
  return o;
}

function flushOpts(opened: Opened, over: Partial<FlushOptions> = {}): FlushOptions {
  return { maxModels: 1000, maxPaths: 500, now: T0, policy: () => POLICY, withPaths: true, cursors: new Map(), fences: [opened.fence], ...over };
}

const work = (partition: number): PartitionWork => ({ partitions: () => [partition], fence: (p) => (p === partition ? { partition, epoch: partition === 0 ? 0 : 3 } : undefined), partitionOf: () => partition, onChange: () => {} });
const config = { snapshot: () => ({ sources: new Map(), destinations: new Map(), bySource: new Map(), version: 0 }) } as unknown as ConfigStore;
/** A pace blind to the machine (so taken as busy, 1%): these tests store few events, and the load is not their subject. */
const quickPace = () => new ReaderPace({ mainThread: () => undefined, cpus: () => undefined });

for (const factory of STORES) {
  describe(`catalog store: ${factory.name}`, () => {
    test("two instances' flushes of the same models add up: counts, days, first and last seen, paths and their examples", async () => {
      const o = await factory.open();
      const a = observerOf([
        event("src_a", "track", { event: "Order Completed", properties: { total: 10, coupon: "A" } }, T0),
        event("src_a", "track", { event: "Order Completed", properties: { total: 12.5 } }, T0 + 1000),
        event("src_a", "identify", { userId: "u1", traits: { plan: "pro" } }, T0),
      ]);
      const b = observerOf([
        event("src_a", "track", { event: "Order Completed", properties: { total: "13", coupon: "B" } }, T0 - DAY),
        event("src_a", "track", { event: "Signed Up", properties: {} }, T0 + 5),
      ]);
      await flushObserver(o.store, a, flushOpts(o));
      await flushObserver(await o.other(), b, flushOpts(o));
      const models = (await o.store.models("src_a")).sort((x, y) => (x.event < y.event ? -1 : 1));
      expect(models.map((m) => [m.type, m.event, m.count])).toEqual([
        ["identify", "", 1],
        ["track", "Order Completed", 3],
        ["track", "Signed Up", 1],
      ]);
      const order = models[1]!;
      expect(order).toEqual({
        workspaceId: "ws_a",
        sourceId: "src_a",
        type: "track",
        event: "Order Completed",
        firstSeen: T0 - DAY,
        lastSeen: T0 + 1000,
        count: 3,
        daily: { "2026-12-06": 1, "2026-12-07": 2 },
        sampled: 3,
        paths: {
          properties: { types: { object: 3 }, present: 3, firstSeen: T0 - DAY, lastSeen: T0 + 1000 },
          "properties.total": { types: { integer: 1, number: 1, string: 1 }, present: 3, examples: [10, 12.5, "13"], firstSeen: T0 - DAY, lastSeen: T0 + 1000 },
          "properties.coupon": { types: { string: 2 }, present: 2, examples: ["A", "B"], firstSeen: T0 - DAY, lastSeen: T0 },
        },
        overflowPaths: 0,
      });
      expect(await o.store.model("src_a", "track", "Order Completed")).toEqual(order);
      expect(await o.store.model("src_a", "track", "Nothing")).toBeUndefined();
      expect(await o.store.overflow("src_a")).toEqual({ models: 0, events: 0 });
    });

    test("the bound of models per source holds across instances, also flushing at the same moment; what is refused is counted", async () => {
      const o = await factory.open();
      const other = await o.other();
      const seed = observerOf([event("src_a", "track", { event: "Shared" })], 2);
      await flushObserver(o.store, seed, flushOpts(o, { maxModels: 3 }));
      const a = observerOf([event("src_a", "track", { event: "Shared" }), event("src_a", "track", { event: "A1" }), event("src_a", "track", { event: "A2" }), event("src_a", "track", { event: "A2" })]);
      const b = observerOf([event("src_a", "track", { event: "Shared" }), event("src_a", "track", { event: "B1" }), event("src_a", "track", { event: "B1" }), event("src_a", "track", { event: "B1" })]);
      await Promise.all([flushObserver(o.store, a, flushOpts(o, { maxModels: 3 })), flushObserver(other, b, flushOpts(o, { maxModels: 3 }))]);
      const models = await o.store.models("src_a");
      expect(models).toHaveLength(3);
      expect(models.find((m) => m.event === "Shared")!.count).toBe(3);
      const kept = models.filter((m) => m.event !== "Shared").map((m) => m.event);
      // Whichever flush went first took the two places left: A's A1 and A2 (then B1 was refused),
      // or B's B1 (then A1, and A2 was refused).
      expect(kept.sort()).toEqual(kept.includes("B1") ? ["A1", "B1"] : ["A1", "A2"]);
      expect(await o.store.overflow("src_a")).toEqual({ models: 1, events: kept.includes("B1") ? 2 : 3 });
    });

    test("a flush without paths writes counts and leaves the stored paths as they were", async () => {
      const o = await factory.open();
      await flushObserver(o.store, observerOf([event("src_a", "track", { event: "E", properties: { a: 1 } })]), flushOpts(o));
      const counts = observerOf([event("src_a", "track", { event: "E", properties: { b: 2 } }, T0 + 10)]);
      await flushObserver(o.store, counts, flushOpts(o, { withPaths: false }));
      const m = (await o.store.model("src_a", "track", "E"))!;
      expect([m.count, m.lastSeen, m.sampled, Object.keys(m.paths).sort()]).toEqual([2, T0 + 10, 1, ["properties", "properties.a"]]);
      // The observer kept the sampled paths of `b` for a later flush with paths.
      await flushObserver(o.store, counts, flushOpts(o));
      const after = (await o.store.model("src_a", "track", "E"))!;
      expect([after.count, after.sampled, Object.keys(after.paths).sort()]).toEqual([2, 2, ["properties", "properties.a", "properties.b"]]);
    });

    test("its own read: committed events after the cursor with their payloads; a flush saves the cursor it is handed", async () => {
      const o = await factory.open();
      const cursors = await o.store.readCursors([o.partition]);
      expect(cursors).toEqual(new Map([[o.partition, START_CURSOR]]));
      await o.addEvents([
        { sourceId: "src_a", type: "track", body: { event: "One" }, at: T0 },
        { sourceId: "src_b", type: "page", body: { name: "Home" }, at: T0 + 1 },
        { sourceId: "src_a", type: "identify", body: { traits: {} }, at: T0 + 2 },
      ]);
      const first = await o.store.readEvents(cursors, 2);
      expect(first.events.map((e) => [e.sourceId, e.workspaceId, e.type, e.receivedAt, JSON.parse(e.payload).type])).toEqual([
        ["src_a", "ws_a", "track", T0, "track"],
        ["src_b", "ws_a", "page", T0 + 1, "page"],
      ]);
      const rest = await o.store.readEvents(first.next, 10);
      expect(rest.events.map((e) => e.type)).toEqual(["identify"]);
      expect((await o.store.readEvents(rest.next, 10)).events).toEqual([]);
      const observer = observerOf(first.events);
      await flushObserver(o.store, observer, flushOpts(o, { cursors: first.next }));
      expect(await o.store.readCursors([o.partition])).toEqual(first.next);
    });

    test("a reader counts every committed event once, across a restart, and saves its cursor with its counts", async () => {
      const o = await factory.open();
      const settings = { maxModels: 1000, maxPaths: 500, samplePerSecond: 1000, flushMs: 20 };
      const batch = (n: number, name: string) => Array.from({ length: n }, (_, i) => ({ sourceId: "src_a", type: "track", body: { event: name, properties: { i } }, at: T0 + i }));
      await o.addEvents(batch(250, "Before"));
      const first = new CatalogReader(o.store, config, work(o.partition), silentLogger, settings, () => T0, quickPace());
      first.start();
      await waitFor(async () => (await o.store.model("src_a", "track", "Before"))?.count === 250, { what: "250 events counted", timeoutMs: 20_000 });
      await first.stop();
      await o.addEvents(batch(40, "After"));
      const second = new CatalogReader(o.store, config, work(o.partition), silentLogger, settings, () => T0, quickPace());
      second.start();
      await waitFor(async () => (await o.store.model("src_a", "track", "After"))?.count === 40, { what: "40 more", timeoutMs: 20_000 });
      await second.stop();
      const models = await o.store.models("src_a");
      expect(models.map((m) => [m.event, m.count]).sort()).toEqual([["After", 40], ["Before", 250]]);
      expect(models.find((m) => m.event === "Before")!.paths["properties.i"]!.present).toBe(250);
    });

    if (factory.name === "PostgreSQL") {
      test("a cursor under a lease that was taken over is not saved (its counts are)", async () => {
        const o = await factory.open();
        await o.addEvents([{ sourceId: "src_a", type: "track", body: { event: "E" }, at: T0 }]);
        const batch = await o.store.readEvents(new Map([[o.partition, START_CURSOR]]), 10);
        await o.sql!.unsafe("UPDATE partition_leases SET epoch = 4 WHERE partition = $1", [PG_PARTITION]);
        await flushObserver(o.store, observerOf(batch.events), flushOpts(o, { cursors: batch.next }));
        expect((await o.store.model("src_a", "track", "E"))!.count).toBe(1);
        expect(await o.store.readCursors([o.partition])).toEqual(new Map([[o.partition, START_CURSOR]]));
      });

      test("a saved cursor whose event retention deleted resumes from the processor's position", async () => {
        const o = await factory.open();
        await o.addEvents([{ sourceId: "src_a", type: "track", body: { event: "E" }, at: T0 }]);
        const batch = await o.store.readEvents(new Map([[o.partition, START_CURSOR]]), 10);
        await flushObserver(o.store, observerOf(batch.events), flushOpts(o, { cursors: batch.next }));
        const saved = batch.next.get(o.partition)!;
        expect(await o.store.readCursors([o.partition])).toEqual(new Map([[o.partition, saved]]));
        const processor: EventCursor = { tx: saved.tx, id: saved.id + 7 };
        await o.sql!.unsafe("UPDATE processor_cursors SET tx = $1::xid8, id = $2 WHERE partition = $3", [processor.tx, processor.id, PG_PARTITION]);
        await o.sql!.unsafe("DELETE FROM events");
        expect(await o.store.readCursors([o.partition])).toEqual(new Map([[o.partition, processor]]));
      });
    }
  });
}
