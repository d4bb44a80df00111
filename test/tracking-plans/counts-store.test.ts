/**
 * The tracking-plan stage's counts (src/tracking-plans/violation-counts.ts and the stores'
 * addCounts), one contract run against SQLite (a data dir opened as the server opens it) and
 * PostgreSQL (its own schema): flushes of two instances add up per (source, day, event,
 * violation type, property); only the newest 100 dropped events of a source are kept, each with
 * its stored event until retention removes it; the stats store answers the counts per day; and
 * retention deletes dropped-event rows with their events and daily counts 8 days after its window.
 */
import { describe, expect, test } from "bun:test";
import type { StatsStore } from "../../src/pipeline/store";
import { PgStatsStore } from "../../src/storage/postgres/stats";
import { PgTrackingPlanStore } from "../../src/storage/postgres/tracking-plans";
import { SqliteStatsStore } from "../../src/storage/sqlite/stats";
import { SqliteTrackingPlanStore } from "../../src/storage/sqlite/tracking-plans";
import { silentLogger } from "../../src/lib/logger";
import { DROPPED_EVENTS_KEPT, type TrackingPlanStore } from "../../src/tracking-plans/store";
import { TrackingPlanCounts, TrackingPlanCountsWriter, utcDay, violationProperty } from "../../src/tracking-plans/violation-counts";
import type { Violation } from "../../src/tracking-plans/validate";
import { dedupKey } from "../../src/storage/postgres/event-log";
import { havePostgres, requirePostgres } from "../support/pg";
import { storeScratch } from "../support/stores";

requirePostgres("counts-store.test.ts (tracking plans)");

const scratch = storeScratch("t_tpcounts");
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 11, 7, 12);

interface Opened {
  store: TrackingPlanStore;
  /** Another instance's store on the same database. */
  other(): Promise<TrackingPlanStore>;
  stats: StatsStore;
  /** Stores an event as intake would; its id. */
  addEvent(sourceId: string, payload: Record<string, unknown>, at: number): Promise<number>;
}

async function openSqlite(): Promise<Opened> {
  const { db } = scratch.sqlite();
  const insert = db.$client.prepare("INSERT INTO events (workspace_id, source_id, message_id, user_key, type, payload, received_at) VALUES ('ws_a', ?, ?, 'u', ?, ?, ?) RETURNING id");
  const store = new SqliteTrackingPlanStore(db);
  return {
    store,
    other: async () => store,
    stats: new SqliteStatsStore(db),
    async addEvent(sourceId, payload, at) {
      return (insert.get(sourceId, crypto.randomUUID(), String(payload.type), JSON.stringify(payload), at) as { id: number }).id;
    },
  };
}

async function openPg(): Promise<Opened> {
  const { open } = scratch.pgSchema();
  const db = await open();
  return {
    store: new PgTrackingPlanStore(db),
    other: async () => new PgTrackingPlanStore(await open()),
    stats: new PgStatsStore(db.$client),
    async addEvent(sourceId, payload, at) {
      const messageId = crypto.randomUUID();
      const [row] = await db.$client.unsafe(
        `INSERT INTO events (workspace_id, source_id, message_id, dedup_key, partition, user_key, type, payload, received_at)
         VALUES ('ws_a', $1, $2, $3::bigint, 0, 'u', $4, $5, $6) RETURNING id`,
        [sourceId, messageId, dedupKey(sourceId, messageId), String(payload.type), JSON.stringify(payload), at],
      );
      return Number(row.id);
    },
  };
}

const STORES = [{ name: "SQLite", open: openSqlite }, ...(havePostgres ? [{ name: "PostgreSQL", open: openPg }] : [])];

const mismatch: Violation = { type: "Datatype-Mismatch", message: "must be number", meta: { instancePath: "/properties/total", schemaPath: "#/properties/properties/properties/total/type" } };
const missing: Violation = { type: "Required-Missing", message: "must have required property 'orderId'", property: "orderId", meta: { instancePath: "/properties", schemaPath: "#/required" } };
const unplanned: Violation = { type: "Unplanned-Event", message: "no schema for event: Signed Up", meta: {} };

test("a violation's property: Ajv's instancePath, with the missing or unplanned property appended; empty when it names none", () => {
  expect(violationProperty(mismatch)).toBe("/properties/total");
  expect(violationProperty(missing)).toBe("/properties/orderId");
  expect(violationProperty({ ...missing, property: "a/b~c" })).toBe("/properties/a~1b~0c");
  expect(violationProperty(unplanned)).toBe("");
});

for (const factory of STORES) {
  describe(`tracking-plan counts: ${factory.name}`, () => {
    test("two instances' flushes add up per source, day, event, violation type and property; the stats store answers them per day", async () => {
      const o = await factory.open();
      let now = T0;
      const a = new TrackingPlanCounts(() => now);
      const b = new TrackingPlanCounts(() => now);
      const order = { type: "track", event: "Order Completed" };
      a.add("src_a", "ws_a", 1, order, [mismatch, missing]);
      a.add("src_a", "ws_a", 2, order, [mismatch]);
      b.add("src_a", "ws_a", 3, order, [mismatch]);
      b.add("src_a", "ws_a", 4, { type: "track", event: "Signed Up" }, [unplanned], { violationType: "Unplanned-Event", error: "dropped" });
      now = T0 + DAY;
      b.add("src_a", "ws_a", 5, { type: "identify", event: "ignored for identify" }, [missing]);
      expect(a.size).toBe(2);
      await new TrackingPlanCountsWriter(a, o.store, silentLogger).flush();
      await new TrackingPlanCountsWriter(b, await o.other(), silentLogger).flush();
      expect(a.size + b.size).toBe(0);
      const counts = (await o.store.violationCounts("src_a", utcDay(T0))).map(({ workspaceId, sourceId, ...c }) => c);
      expect(counts.sort((x, y) => (x.day + x.violationType + x.event < y.day + y.violationType + y.event ? -1 : 1))).toEqual([
        { day: utcDay(T0), type: "track", event: "Order Completed", violationType: "Datatype-Mismatch", property: "/properties/total", count: 3 },
        { day: utcDay(T0), type: "track", event: "Order Completed", violationType: "Required-Missing", property: "/properties/orderId", count: 1 },
        { day: utcDay(T0), type: "track", event: "Signed Up", violationType: "Unplanned-Event", property: "", count: 1 },
        { day: utcDay(T0 + DAY), type: "identify", event: "", violationType: "Required-Missing", property: "/properties/orderId", count: 1 },
      ]);
      expect((await o.store.violationCounts("src_a", utcDay(T0 + DAY))).length).toBe(1);
      expect((await o.store.droppedCounts("src_a", utcDay(T0))).map((d) => [d.day, d.event, d.count])).toEqual([[utcDay(T0), "Signed Up", 1]]);
      const perDay = await o.stats.trackingPlanCounts("ws_a", utcDay(T0));
      const cell = (day: number, type: string | null) => perDay.filter((r) => r.day === utcDay(day) && r.violationType === type).reduce((n, r) => n + r.n, 0);
      expect(cell(T0, "Datatype-Mismatch")).toBe(3);
      expect(cell(T0, null)).toBe(1);
      expect(cell(T0 + DAY, "Required-Missing")).toBe(1);
      expect(await o.stats.trackingPlanCounts("ws_other", utcDay(T0))).toEqual([]);
    });

    test("only the newest 100 dropped events of a source are kept, each with its stored event; retention removes old rows and days", async () => {
      const o = await factory.open();
      let now = T0;
      const counts = new TrackingPlanCounts(() => now);
      const writer = new TrackingPlanCountsWriter(counts, o.store, silentLogger);
      const ids: number[] = [];
      for (let i = 0; i < 130; i++) {
        const payload = { type: "track", event: `E${i}`, userId: "u", context: { violationErrors: [{ type: "Unplanned-Event" }] } };
        const id = await o.addEvent("src_d", payload, now);
        ids.push(id);
        counts.add("src_d", "ws_a", id, payload, [unplanned], { violationType: "Unplanned-Event", error: `error ${i}` });
        now += 1;
        // Three flushes: the bound holds across them, not only in memory.
        if (i === 40 || i === 90) await writer.flush();
      }
      await writer.flush();
      const listed = await o.store.droppedEvents("src_d", 1000);
      expect(listed.length).toBe(DROPPED_EVENTS_KEPT);
      expect(listed[0]!.eventId).toBe(ids.at(-1)!);
      expect(listed.at(-1)!.eventId).toBe(ids[30]!);
      expect(listed[0]).toMatchObject({ sourceId: "src_d", type: "track", event: "E129", violationType: "Unplanned-Event", error: "error 129" });
      expect(listed[0]!.violations).toEqual([{ type: "Unplanned-Event", message: "no schema for event: Signed Up", meta: {}, property: "" }]);
      expect(JSON.parse(listed[0]!.payload!)).toMatchObject({ event: "E129" });
      expect((await o.store.droppedCounts("src_d", utcDay(T0))).reduce((n, d) => n + d.count, 0)).toBe(130);

      // Retention with a window ending just after the dropped events, and days kept 8 days past it.
      await o.stats.purgeExpired(now + 1);
      expect(await o.store.droppedEvents("src_d", 1000)).toEqual([]);
      expect((await o.store.droppedCounts("src_d", utcDay(T0))).length).toBeGreaterThan(0);
      await o.stats.purgeExpired(T0 + 8 * DAY);
      expect((await o.store.droppedCounts("src_d", utcDay(T0))).length).toBeGreaterThan(0);
      await o.stats.purgeExpired(T0 + 9 * DAY);
      expect(await o.store.droppedCounts("src_d", utcDay(T0))).toEqual([]);
      expect(await o.store.violationCounts("src_d", utcDay(T0))).toEqual([]);
    });

    test("a flush the store refuses keeps its counts for the next one", async () => {
      const o = await factory.open();
      const counts = new TrackingPlanCounts(() => T0);
      let refuse = true;
      const store = { addCounts: (f: Parameters<TrackingPlanStore["addCounts"]>[0]) => (refuse ? Promise.reject(new Error("disk full")) : o.store.addCounts(f)) };
      const writer = new TrackingPlanCountsWriter(counts, store, silentLogger);
      counts.add("src_f", "ws_a", 1, { type: "track", event: "A" }, [mismatch], { violationType: "Datatype-Mismatch", error: "e" });
      await writer.flush();
      counts.add("src_f", "ws_a", 2, { type: "track", event: "A" }, [mismatch]);
      refuse = false;
      await writer.flush();
      expect((await o.store.violationCounts("src_f", utcDay(T0)))[0]!.count).toBe(2);
      expect((await o.store.droppedEvents("src_f", 10)).map((e) => e.eventId)).toEqual([1]);
    });
  });
}
