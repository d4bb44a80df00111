/**
 * The warehouse area's storage seam (cluster mode, issue 24): one contract, run against the
 * SQLite store (a data dir opened as the server opens it) and the PostgreSQL store (its own
 * schema with the pg migrations, dropped after). Staging and reading staged rows, queueing and
 * starting loads, the load thread's marks of the rows it loaded, a load's outcome with the load
 * after it in one call,
 * recovery after a crash, purge and a regulation's deletion, the stager over the store; whole
 * loads (stage → load thread reading this store through its own connection → the user's
 * PostgreSQL, a namespace per test → rows marked); and on PostgreSQL the exact-ids marking of
 * design §3.8 against a writer that commits out of order, store-level and through a whole load,
 * and two instances queueing and starting loads at once.
 */
import { describe, expect, test } from "bun:test";
import type { SQL } from "bun";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { ConfigStore, DestinationRuntime, RoutingSnapshot } from "../../src/control-plane/config-store";
import { newId } from "../../src/lib/ids";
import { createLogger, silentLogger } from "../../src/lib/logger";
import { PgStagedReader, PgWarehouseStore } from "../../src/storage/postgres/warehouse";
import { SqliteStagedReader, SqliteWarehouseStore } from "../../src/storage/sqlite/warehouse";
import { LoadThread } from "../../src/warehouse/load-thread";
import { DEFAULT_LOAD_SETTINGS, type LoadView, WarehouseLoads } from "../../src/warehouse/loads";
import { defaultNamespace } from "../../src/warehouse/schema";
import { WarehouseStager } from "../../src/warehouse/staging";
import type { NewLoad, NewStagedRow, StagedRowsLocation, StagedRowsReader, WarehouseStore } from "../../src/warehouse/store";
import { waitFor } from "../support/helpers";
import { PG, PG_URL as url, havePostgres, lockTable as lockTableOn, requirePostgres } from "../support/pg";
import { storeScratch } from "../support/stores";

requirePostgres("warehouse-store.test.ts");

const scratch = storeScratch("t_whstore");
const admin = havePostgres ? scratch.admin : null;

interface Opened {
  store: WarehouseStore;
  /** Where a load thread reads this store's staged rows. */
  location: StagedRowsLocation;
  /** A load thread's own connection there (its reads and marks), closed after the test. */
  reader: StagedRowsReader;
  /** The staged rows as the database holds them: id → load id. */
  marks(destinationId: string): Promise<Map<number, string | null>>;
  /** PostgreSQL: the same schema through another pool (another instance). */
  reopen?: () => Promise<{ store: WarehouseStore; sql: SQL }>;
  /** A statement on the store's own database ($1, $2 … placeholders on both). */
  query(text: string, ...params: unknown[]): Promise<Array<Record<string, unknown>>>;
}

function readerClosedAfter(reader: StagedRowsReader): StagedRowsReader {
  scratch.onStop(() => reader.close());
  return reader;
}

async function openSqlite(): Promise<Opened> {
  const { db, file } = scratch.sqlite();
  return {
    store: new SqliteWarehouseStore(db),
    location: { kind: "sqlite", file },
    reader: readerClosedAfter(new SqliteStagedReader(file)),
    async marks(destinationId) {
      // A row's own mark, else the loaded range it falls in (SQLite marks whole pages so).
      const rows = db.$client
        .query(
          `SELECT s.id, coalesce(s.load_id, (SELECT r.load_id FROM warehouse_loaded_ranges r
             WHERE r.destination_id = s.destination_id AND s.id BETWEEN r.from_id AND r.to_id)) AS loadId
           FROM warehouse_staged s WHERE s.destination_id = ? ORDER BY s.id`,
        )
        .all(destinationId) as Array<{ id: number; loadId: string | null }>;
      return new Map(rows.map((r) => [r.id, r.loadId]));
    },
    async query(text, ...params) {
      return db.$client.query(text.replace(/\$(\d+)/g, "?$1")).all(...(params as never[])) as Array<Record<string, unknown>>;
    },
  };
}

async function openPg(): Promise<Opened> {
  const { schema, open } = scratch.pgSchema();
  const db = await open();
  return {
    store: new PgWarehouseStore(db),
    location: { kind: "postgres", url, schema },
    reader: readerClosedAfter(new PgStagedReader(url, schema)),
    async marks(destinationId) {
      const rows = await db.$client.unsafe("SELECT id, load_id FROM warehouse_staged WHERE destination_id = $1 ORDER BY id", [destinationId]);
      return new Map((rows as Array<{ id: string; load_id: string | null }>).map((r) => [Number(r.id), r.load_id]));
    },
    async query(text, ...params) {
      return (await db.$client.unsafe(text, params)) as Array<Record<string, unknown>>;
    },
    async reopen() {
      const other = await open();
      return { store: new PgWarehouseStore(other), sql: other.$client };
    },
  };
}

let clock = 1_760_000_000_000;
const tick = () => (clock += 1000);

function staged(destinationId: string, over: Partial<NewStagedRow> = {}): NewStagedRow {
  const eventId = crypto.randomUUID();
  return {
    destinationId,
    workspaceId: "ws_1",
    namespace: "web",
    tableName: "tracks",
    columns: JSON.stringify({ id: "string", event: "string" }),
    row: JSON.stringify({ id: eventId, event: "Clicked" }),
    eventId,
    userKey: "u1",
    stagedAt: tick(),
    ...over,
  };
}

function load(destinationId: string, over: Partial<NewLoad> = {}): NewLoad {
  const at = tick();
  return { workspaceId: "ws_1", destinationId, trigger: "api", attempt: 1, dueAt: at, createdAt: at, ...over };
}

/** Linux: each thread of this process, with its niceness (field 19 of its stat). */
function threadNiceness(): Array<{ tid: number; name: string; nice: number }> {
  return readdirSync("/proc/self/task").map((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { tid: Number(tid), name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")), nice: Number(fields[16]) };
  });
}

const ids = async (store: WarehouseStore, destinationId: string) => (await store.readStaged(destinationId, 1000)).map((r) => r.id);

/**
 * A POSTGRES destination loading into its own namespace of the test PostgreSQL (dropped after),
 * with WarehouseLoads over the store and a LoadThread reading the store's staged rows.
 */
async function warehouseOn(o: Opened, settings = DEFAULT_LOAD_SETTINGS, log = silentLogger) {
  const letters = Array.from(crypto.getRandomValues(new Uint8Array(10)), (b) => String.fromCharCode(97 + (b % 26))).join("");
  const namespace = defaultNamespace(`sluice_whstore_${letters}`);
  scratch.onStop(() => admin!.unsafe(`DROP SCHEMA IF EXISTS "${namespace}" CASCADE`).then(() => {}));
  const sourceId = newId("src");
  const dest = {
    id: newId("dst"),
    workspaceId: "ws_1",
    name: "warehouse",
    type: "POSTGRES",
    enabled: true,
    config: { host: PG.host, port: String(PG.port), database: PG.database, user: PG.user, password: PG.password, namespace },
    definition: undefined,
  } satisfies DestinationRuntime;
  const snapshot = {
    version: 1,
    sources: new Map([[sourceId, { name: "My Web Site" }]]),
    destinations: new Map([[dest.id, dest]]),
    bySource: new Map([[sourceId, [dest]]]),
  } as unknown as RoutingSnapshot;
  const config = { snapshot: () => snapshot } as unknown as ConfigStore;
  // A clock that stands still: no scheduled load (every syncFrequency) comes in between the test's own.
  const now = Date.now();
  const loads = new WarehouseLoads(o.store, new LoadThread(o.location), config, log, settings, () => now);
  scratch.onStop(() => loads.stop());
  await loads.start();
  const stager = new WarehouseStager(o.store, config, () => now);
  const track = (messageId: string) => ({ type: "track", event: "Product Viewed", messageId, userId: "u1", timestamp: "2026-01-01T00:00:00.000Z", properties: { sku: messageId } });
  const finished = (id: string) =>
    waitFor(async () => (await loads.listSyncs(dest.workspaceId, dest.id)).find((l) => l.id === id && (l.status === "succeeded" || l.status === "failed")), {
      what: `load ${id} to finish`,
      timeoutMs: 20_000,
    });
  return {
    dest,
    namespace,
    loads,
    /** Stages one track per message id (a tracks and a product_viewed row each), for `destinationId` (default: this destination). */
    async stage(messageIds: string[], destinationId = dest.id) {
      const results = await stager.stage({ ...dest, id: destinationId }, messageIds.map((m) => ({ sourceId, userKey: "u1", events: [track(m)] })));
      expect(results.every((r) => r.kind === "staged")).toBe(true);
    },
    async sync(): Promise<LoadView> {
      return finished((await loads.requestSync(dest.workspaceId, dest.id)).id);
    },
    /** Starts a load without waiting for it. */
    async requestSync(): Promise<string> {
      return (await loads.requestSync(dest.workspaceId, dest.id)).id;
    },
    finished,
    /** Message ids in a table of the user's warehouse. */
    async inWarehouse(table: string): Promise<string[]> {
      return ((await admin!.unsafe(`SELECT id FROM "${namespace}"."${table}" ORDER BY id`)) as Array<{ id: string }>).map((r) => r.id);
    },
  };
}

/** Holds ACCESS EXCLUSIVE on a table of the user's warehouse until the answer is called (or the test ends). */
async function lockTable(namespace: string, table: string): Promise<() => Promise<void>> {
  const release = await lockTableOn(admin!, namespace, table);
  scratch.onStop(release);
  return release;
}

const stores: Array<{ name: string; enabled: boolean; open: () => Promise<Opened> }> = [
  { name: "SQLite", enabled: true, open: openSqlite },
  { name: "PostgreSQL", enabled: havePostgres, open: openPg },
];

for (const kind of stores) {
  describe.if(kind.enabled)(`warehouse store on ${kind.name}`, () => {
    test("staged rows read back waiting, in id order, per destination, after an id, up to the limit; namespaces listed once", async () => {
      const { store } = await kind.open();
      const dst = newId("dst");
      const other = newId("dst");
      const rows = [staged(dst), staged(dst, { namespace: "app", tableName: "identifies" }), staged(other), staged(dst)];
      await store.stage(rows);
      await store.stage([]);

      const read = await store.readStaged(dst, 10);
      expect(read.map(({ namespace, tableName, columns, row }) => ({ namespace, tableName, columns, row }))).toEqual(
        [rows[0]!, rows[1]!, rows[3]!].map(({ namespace, tableName, columns, row }) => ({ namespace, tableName, columns, row })),
      );
      expect(read.every((r) => typeof r.id === "number")).toBe(true);
      expect([...read.map((r) => r.id)].sort((a, b) => a - b)).toEqual(read.map((r) => r.id));
      expect((await store.readStaged(dst, 2)).map((r) => r.id)).toEqual(read.slice(0, 2).map((r) => r.id));
      // A load reads page after page: the rows after a given id.
      expect((await store.readStaged(dst, 10, read[0]!.id)).map((r) => r.id)).toEqual(read.slice(1).map((r) => r.id));
      expect(await store.readStaged(dst, 10, read[2]!.id)).toEqual([]);
      expect((await store.stagedNamespaces(dst)).sort()).toEqual(["app", "web"]);
      expect(await store.stagedNamespaces(newId("dst"))).toEqual([]);
    });

    test("a columns text is stored once and named by id; a row staged before that, with its text inline, reads back alike", async () => {
      const o = await kind.open();
      const dst = newId("dst");
      const wide = JSON.stringify(Object.fromEntries(Array.from({ length: 120 }, (_, i) => [`property_number_${i}`, "string"])));
      await o.store.stage([staged(dst), staged(dst, { columns: wide }), staged(dst)]);
      await o.store.stage([staged(dst, { columns: wide })]);
      await o.query(
        `INSERT INTO warehouse_staged (destination_id, workspace_id, namespace, table_name, columns, row, event_id, user_key, staged_at) VALUES ($1, 'ws_1', 'web', 'tracks', $2, '{"id":"old"}', 'old', 'u1', 1)`,
        dst,
        wide,
      );
      const read = await o.store.readStaged(dst, 10);
      expect(read.map((r) => r.columns)).toEqual([staged(dst).columns, wide, staged(dst).columns, wide, wide]);
      // In the database: the staged rows carry an id, not the text; each text is there once.
      const shapes = await o.query(`SELECT columns, columns_id FROM warehouse_staged WHERE destination_id = $1 ORDER BY id`, dst);
      expect(shapes.slice(0, 4).map((r) => r.columns)).toEqual(["", "", "", ""]);
      expect(new Set(shapes.slice(0, 4).map((r) => String(r.columns_id))).size).toBe(2);
      expect(shapes[4]).toEqual({ columns: wide, columns_id: null });
      expect(await o.query(`SELECT count(*) AS n FROM warehouse_columns WHERE columns = $1`, wide)).toEqual([{ n: kind.name === "PostgreSQL" ? "1" : 1 }]);
    });

    test("a staging pass is all or nothing: a row that cannot be stored leaves none of its pass", async () => {
      const { store } = await kind.open();
      const dst = newId("dst");
      await expect(store.stage([staged(dst), staged(dst, { userKey: null as unknown as string })])).rejects.toThrow();
      expect(await store.readStaged(dst, 10)).toEqual([]);
      // More rows than one statement of bound parameters takes: stored whole.
      await store.stage(Array.from({ length: 7001 }, () => staged(dst)));
      expect((await store.readStaged(dst, 10_000)).length).toBe(7001);
    });

    test("queueing: one queued load per destination, brought forward and never back; due, next due and a start that only one caller gets", async () => {
      const { store } = await kind.open();
      const dst = newId("dst");
      const later = clock + 60_000;
      const id = await store.queueLoad(load(dst, { dueAt: later, trigger: "schedule" }));
      expect(id).toStartWith("whl_");
      expect(await store.nextDueAt()).toBe(later);
      expect(await store.dueLoads(clock, 10)).toEqual([]);

      const sooner = clock + 10_000;
      expect(await store.queueLoad(load(dst, { dueAt: sooner }))).toBe(id);
      expect(await store.queueLoad(load(dst, { dueAt: later + 5000 }))).toBe(id);
      expect(await store.nextDueAt()).toBe(sooner);
      const otherId = await store.queueLoad(load(newId("dst"), { dueAt: sooner + 1 }));
      expect(otherId).not.toBe(id);

      const due = await store.dueLoads(sooner + 1, 10);
      expect(due.map((l) => l.id)).toEqual([id, otherId]);
      expect(due[0]).toMatchObject({ destinationId: dst, workspaceId: "ws_1", status: "queued", trigger: "schedule", attempt: 1, dueAt: sooner, startedAt: null, finishedAt: null, rows: null, error: null });
      expect((await store.dueLoads(sooner + 1, 1)).map((l) => l.id)).toEqual([id]);

      const at = tick();
      expect(await store.startLoad(id, at)).toBe(true);
      expect(await store.startLoad(id, at)).toBe(false);
      expect((await store.dueLoads(sooner + 1, 10)).map((l) => l.id)).toEqual([otherId]);
      expect((await store.listLoads(dst, 10))[0]).toMatchObject({ id, status: "running", startedAt: at });
      // A load running does not count as queued: the next request queues a new one.
      const next = await store.queueLoad(load(dst));
      expect(next).not.toBe(id);
      expect(await store.nextDueAt()).toBe(Math.min(sooner + 1, (await store.listLoads(dst, 1))[0]!.dueAt));
    });

    test("the load thread marks exactly the ids read, of the namespaces that committed; finishLoad records the outcome and queues the next load in one call", async () => {
      const { store, reader, marks } = await kind.open();
      const dst = newId("dst");
      await store.stage([staged(dst), staged(dst, { namespace: "app" }), staged(dst)]);
      const loadId = await store.queueLoad(load(dst));
      expect(await store.startLoad(loadId, tick())).toBe(true);
      const read = await ids(store, dst);
      // Staged after the load read: not the load's, whatever its id.
      await store.stage([staged(dst)]);
      await reader.markLoaded(loadId, dst, { namespaces: ["web"], ids: read });
      const finishedAt = tick();
      await store.finishLoad({
        loadId,
        destinationId: dst,
        status: "failed",
        finishedAt,
        rows: { tracks: 2 },
        discards: 1,
        error: "namespace app: connection refused",
        next: load(dst, { trigger: "retry", attempt: 2, dueAt: finishedAt + 10_000 }),
      });

      const m = await marks(dst);
      const [first, app, third, late] = [...m.keys()];
      expect([m.get(first!), m.get(app!), m.get(third!), m.get(late!)]).toEqual([loadId, null, loadId, null]);
      expect(await ids(store, dst)).toEqual([app!, late!]);

      const [retry, done] = await store.listLoads(dst, 10);
      expect(done).toEqual({
        id: loadId,
        workspaceId: "ws_1",
        destinationId: dst,
        status: "failed",
        trigger: "api",
        attempt: 1,
        dueAt: done!.dueAt,
        createdAt: done!.createdAt,
        startedAt: done!.startedAt,
        finishedAt,
        rows: JSON.stringify({ tracks: 2 }),
        discards: 1,
        error: "namespace app: connection refused",
      });
      expect(retry).toMatchObject({ status: "queued", trigger: "retry", attempt: 2, dueAt: finishedAt + 10_000 });

      // Rows are marked only while waiting: a second load naming the same ids takes only the ones left.
      const second = await store.queueLoad(load(dst, { dueAt: 0 }));
      expect(second).toBe(retry!.id);
      await store.startLoad(second, tick());
      await reader.markLoaded(second, dst, { namespaces: ["web", "app"], ids: [first!, app!] });
      await store.finishLoad({ loadId: second, destinationId: dst, status: "succeeded", finishedAt: tick(), rows: {}, discards: 0, error: null });
      const after = await marks(dst);
      expect([after.get(first!), after.get(app!), after.get(late!)]).toEqual([loadId, second, null]);
      expect((await store.listLoads(dst, 1))[0]).toMatchObject({ id: second, status: "succeeded", error: null, rows: "{}" });
      // Nothing loaded, nothing queued after: only the record changes.
      expect((await store.listLoads(dst, 10)).length).toBe(2);
    });

    test("after a crash: running loads are recorded failed and one retry per destination is queued, due now", async () => {
      const { store } = await kind.open();
      const a = newId("dst");
      const b = newId("dst");
      const la = await store.queueLoad(load(a));
      await store.startLoad(la, tick());
      const lb = await store.queueLoad(load(b));
      await store.startLoad(lb, tick());
      const queuedB = await store.queueLoad(load(b, { dueAt: clock + 3_600_000, trigger: "schedule" }));

      const now = tick();
      expect(await store.failInterrupted(now, "interrupted by a restart")).toBe(2);
      const [retryA, failedA] = await store.listLoads(a, 10);
      expect(failedA).toMatchObject({ id: la, status: "failed", finishedAt: now, error: "interrupted by a restart" });
      expect(retryA).toMatchObject({ status: "queued", trigger: "retry", attempt: 1, dueAt: now });
      // b had a load queued already: brought forward, not a second one.
      const loadsB = await store.listLoads(b, 10);
      expect(loadsB.map((l) => [l.id, l.status])).toEqual([
        [queuedB, "queued"],
        [lb, "failed"],
      ]);
      expect(loadsB[0]!.dueAt).toBe(now);
      expect(await store.failInterrupted(tick(), "again")).toBe(0);
    });

    test("a deleted destination's queued loads are cancelled; the history is newest first, limited", async () => {
      const { store } = await kind.open();
      const dst = newId("dst");
      const first = await store.queueLoad(load(dst));
      await store.startLoad(first, tick());
      await store.finishLoad({ loadId: first, destinationId: dst, status: "succeeded", finishedAt: tick(), rows: {}, discards: 0, error: null });
      const second = await store.queueLoad(load(dst));
      const other = await store.queueLoad(load(newId("dst")));
      const now = tick();
      await store.cancelQueued(dst, now, "destination deleted");
      const list = await store.listLoads(dst, 10);
      expect(list.map((l) => [l.id, l.status, l.error])).toEqual([
        [second, "failed", "destination deleted"],
        [first, "succeeded", null],
      ]);
      expect(list[0]!.finishedAt).toBe(now);
      expect((await store.listLoads(dst, 1)).map((l) => l.id)).toEqual([second]);
      expect((await store.dueLoads(now, 10)).map((l) => l.id)).toEqual([other]);
    });

    test("a load of more rows than a statement marks: the event loop turns meanwhile, every row is marked, and purge removes them all", async () => {
      const { store, reader, marks } = await kind.open();
      const dst = newId("dst");
      await store.stage(Array.from({ length: 9_001 }, () => staged(dst)));
      const read = await store.readStaged(dst, 10_000);
      const loadId = await store.queueLoad(load(dst));
      await store.startLoad(loadId, tick());
      const finishedAt = tick();
      let done = false;
      const marking = reader.markLoaded(loadId, dst, { namespaces: ["web"], ids: read.map((r) => r.id) }).then(() => (done = true));
      // One statement for all of them held SQLite's write lock, which intake's commits wait for, for seconds on a big load.
      expect(await new Promise((resolve) => setImmediate(() => resolve(done)))).toBe(false);
      await marking;
      await store.finishLoad({ loadId, destinationId: dst, status: "succeeded", finishedAt, rows: {}, discards: 0, error: null });
      expect(new Set((await marks(dst)).values())).toEqual(new Set([loadId]));
      expect((await store.listLoads(dst, 1))[0]!.status).toBe("succeeded");
      await reader.purgeLoaded(dst, finishedAt + 1);
      expect((await marks(dst)).size).toBe(0);
    });

    test("purge removes rows of loads that finished before the cutoff, failed ones included (their marked rows were loaded); a regulation deletes a user's rows, loaded or not", async () => {
      const { store, reader, marks } = await kind.open();
      const dst = newId("dst");
      const other = newId("dst");
      await store.stage([staged(dst, { userKey: "u1" }), staged(dst, { userKey: "u2" }), staged(other, { userKey: "u1" })]);
      const loadId = await store.queueLoad(load(dst));
      await store.startLoad(loadId, tick());
      const [r1] = await ids(store, dst);
      const finishedAt = tick();
      await reader.markLoaded(loadId, dst, { namespaces: ["web"], ids: [r1!] });
      await store.finishLoad({ loadId, destinationId: dst, status: "succeeded", finishedAt, rows: {}, discards: 0, error: null });
      await store.stage([staged(dst, { userKey: "u1" }), staged(dst, { userKey: "u3" })]);
      // A load that loaded one namespace and failed on another.
      const failedId = await store.queueLoad(load(dst));
      await store.startLoad(failedId, tick());
      const r4 = (await ids(store, dst)).at(-1)!;
      await reader.markLoaded(failedId, dst, { namespaces: ["web"], ids: [r4] });
      await store.finishLoad({ loadId: failedId, destinationId: dst, status: "failed", finishedAt, rows: {}, discards: 0, error: "boom" });

      await reader.purgeLoaded(dst, finishedAt);
      expect((await marks(dst)).size).toBe(4);
      await reader.purgeLoaded(other, finishedAt + 1);
      expect((await marks(dst)).size).toBe(4);
      await reader.purgeLoaded(dst, finishedAt + 1);
      expect([...(await marks(dst)).values()]).toEqual([null, null]);

      await store.deleteStaged(dst, ["u1", "u9"]);
      await store.deleteStaged(dst, []);
      expect((await store.readStaged(dst, 10)).length).toBe(1);
      expect((await store.readStaged(other, 10)).length).toBe(1);
      expect((await marks(dst)).size).toBe(1);
    });

    test("the stager stages through the store: rows per table in the source's namespace; an event that cannot become rows is aborted alone", async () => {
      const { store } = await kind.open();
      const dest = { id: newId("dst"), workspaceId: "ws_1", type: "POSTGRES", config: {} } as unknown as DestinationRuntime;
      const config = { snapshot: () => ({ sources: new Map([["src_1", { name: "My Web Site" }]]) }) } as unknown as ConfigStore;
      const stager = new WarehouseStager(store, config, () => clock);
      const track = { type: "track", event: "Product Viewed", messageId: "m1", userId: "u1", timestamp: "2026-01-01T00:00:00.000Z", properties: { sku: "a" } };
      const results = await stager.stage(dest, [
        { sourceId: "src_1", userKey: "u1", events: [track] },
        { sourceId: "src_1", userKey: "u2", events: [{ type: "no-such-type", messageId: "m2" }] },
      ]);
      expect(results[0]).toEqual({ kind: "staged" });
      expect(results[1]!.kind).toBe("abort");
      const rows = await store.readStaged(dest.id, 10);
      expect(rows.map((r) => [r.namespace, r.tableName]).sort()).toEqual([
        ["my_web_site", "product_viewed"],
        ["my_web_site", "tracks"],
      ]);
      expect(await stager.stage(dest, [{ sourceId: "src_1", userKey: "u1", events: [{ ...track, messageId: "m3" }] }])).toEqual([{ kind: "staged" }]);
      expect((await store.readStaged(dest.id, 10)).length).toBe(4);
    });

    test.skipIf(!existsSync(`/proc/${process.pid}/task/${process.pid}/schedstat`))(
      "Linux: a load pauses for intake while the main thread is busy, and not while it is idle",
      async () => {
        const o = await kind.open();
        const logged: Array<Record<string, unknown>> = [];
        // Pauses as long as the work, so the test is quick.
        const settings = { ...DEFAULT_LOAD_SETTINGS, intakeYield: { busyAbove: 0.5, sendShare: 0.5 } };
        const w = await warehouseOn(o, settings, createLogger("info", {}, (line) => logged.push(JSON.parse(line))));
        const yieldedMs = (loadId: string) => logged.find((l) => l.msg === "warehouse load finished" && l.loadId === loadId)?.yieldedMs;
        // Long ids make rows of about 1 and 2 KB: each table's COPY is several chunks, and a pause follows each.
        const ids = (prefix: string) => Array.from({ length: 6000 }, (_, i) => `${prefix}-${i}-${"x".repeat(1000)}`);
        await w.stage(ids("quiet"));
        const quiet = await w.sync();
        expect(quiet.status).toBe("succeeded");
        expect(yieldedMs(quiet.id)).toBe(0);

        await w.stage(ids("busy"));
        const id = await w.requestSync();
        let done: LoadView | undefined;
        const finishing = w.finished(id).then((l) => (done = l));
        // The main thread works as intake under load does, giving other work a turn every 20 ms.
        while (!done) {
          const until = performance.now() + 20;
          while (performance.now() < until) {
            // busy, as intake answering event calls
          }
          await nextTurn();
        }
        expect((await finishing).status).toBe("succeeded");
        expect(yieldedMs(id)).toBeGreaterThan(0);
        expect((await w.inWarehouse("tracks")).length).toBe(12_000);
      },
      60_000,
    );

    test("a whole load: the load thread reads this store's staged rows, loads them into the user's PostgreSQL, and exactly those are marked", async () => {
      const o = await kind.open();
      const w = await warehouseOn(o);
      await w.stage(["m1", "m2"]);
      const first = await w.sync();
      expect(first).toMatchObject({ status: "succeeded", trigger: "api", error: null, rows: { tracks: 2, product_viewed: 2 } });
      expect(await w.inWarehouse("tracks")).toEqual(["m1", "m2"]);
      expect(await w.inWarehouse("product_viewed")).toEqual(["m1", "m2"]);
      expect([...(await o.marks(w.dest.id)).values()]).toEqual([first.id, first.id, first.id, first.id]);
      // Linux: the load thread runs below intake's priority; the main thread keeps its own.
      if (existsSync("/proc/thread-self")) {
        const threads = threadNiceness();
        expect(threads.find((t) => t.tid === process.pid)?.nice).toBe(0);
        expect(threads.some((t) => t.name === "Worker" && t.nice === 10)).toBe(true);
      }
      const readerPids = async () => (await admin!.unsafe(`SELECT pid FROM pg_stat_activity WHERE application_name = 'sluice load thread'`)).map((r: { pid: number }) => r.pid);
      const pidsAfterFirst = kind.name === "PostgreSQL" ? await readerPids() : [];
      if (kind.name === "PostgreSQL") expect(pidsAfterFirst.length).toBe(1);

      // Only rows still waiting go to the next load; loaded ones are not read again.
      await w.stage(["m3"]);
      const second = await w.sync();
      expect(second).toMatchObject({ status: "succeeded", rows: { tracks: 1, product_viewed: 1 } });
      expect(await w.inWarehouse("tracks")).toEqual(["m1", "m2", "m3"]);
      const marks = [...(await o.marks(w.dest.id)).values()];
      expect(marks.slice(4)).toEqual([second.id, second.id]);
      expect(await o.store.readStaged(w.dest.id, 10)).toEqual([]);
      // The thread opened one connection of its own to read, and kept it across both loads.
      if (kind.name === "PostgreSQL") expect(await readerPids()).toEqual(pidsAfterFirst);
    });

    test("after a load, its thread purges the staged rows of loads that finished the kept time before it started; rows still waiting and its own stay", async () => {
      const o = await kind.open();
      // Kept for no time: every load finished before the next one starts is purged after it.
      const w = await warehouseOn(o, { ...DEFAULT_LOAD_SETTINGS, keepLoadedMs: 0 });
      await w.stage(["m1", "m2"]);
      const first = await w.sync();
      expect(first.status).toBe("succeeded");
      expect([...(await o.marks(w.dest.id)).values()]).toEqual([first.id, first.id, first.id, first.id]);
      // This clock stands still: the first load finished a moment before the second starts.
      await o.query(`UPDATE warehouse_loads SET finished_at = finished_at - 1 WHERE id = $1`, first.id);
      // Another destination's loaded rows are not this load's to purge.
      const other = newId("dst");
      await o.store.stage([staged(other)]);
      const [otherRow] = await ids(o.store, other);
      const otherLoad = await o.store.queueLoad(load(other));
      await o.store.startLoad(otherLoad, tick());
      await o.reader.markLoaded(otherLoad, other, { namespaces: ["web"], ids: [otherRow!] });
      await o.store.finishLoad({ loadId: otherLoad, destinationId: other, status: "succeeded", finishedAt: 0, rows: {}, discards: 0, error: null });

      await w.stage(["m3"]);
      const second = await w.sync();
      expect(second).toMatchObject({ status: "succeeded", rows: { tracks: 1, product_viewed: 1 } });
      // The purge runs after the load is recorded.
      await waitFor(async () => (await o.marks(w.dest.id)).size === 2, { what: "the first load's staged rows to be purged", timeoutMs: 4_000 });
      expect([...(await o.marks(w.dest.id)).values()]).toEqual([second.id, second.id]);
      expect([...(await o.marks(other)).values()]).toEqual([otherLoad]);
      expect(await w.inWarehouse("tracks")).toEqual(["m1", "m2", "m3"]);
    });

    test("a load that reads rowsPerLoad rows queues the next at once; each row is loaded once, by exactly one load", async () => {
      const o = await kind.open();
      const w = await warehouseOn(o, { ...DEFAULT_LOAD_SETTINGS, rowsPerLoad: 3 });
      await w.stage(["m1", "m2", "m3", "m4"]);
      const first = await w.sync();
      expect(first.status).toBe("succeeded");
      // 8 rows, 3 per load: three loads in all, the last one reading fewer than 3.
      const all = await waitFor(
        async () => {
          const list = await w.loads.listSyncs(w.dest.workspaceId, w.dest.id);
          return list.length === 3 && list.every((l) => l.status === "succeeded") ? list : null;
        },
        { what: "three succeeded loads" },
      );
      expect(all.map((l) => l.trigger)).toEqual(["more", "more", "api"]);
      const marks = [...(await o.marks(w.dest.id)).values()];
      const perLoad = all.map((l) => marks.filter((m) => m === l.id).length);
      expect(perLoad).toEqual([2, 3, 3]);
      expect(await w.inWarehouse("tracks")).toEqual(["m1", "m2", "m3", "m4"]);
      expect(await w.inWarehouse("product_viewed")).toEqual(["m1", "m2", "m3", "m4"]);
    });

    test("a load reads and commits a page at a time (pageRows) while it reads the next: every row once, all marked by that one load", async () => {
      const o = await kind.open();
      const w = await warehouseOn(o, { ...DEFAULT_LOAD_SETTINGS, pageRows: 3 });
      const ids = ["m1", "m2", "m3", "m4", "m5"];
      await w.stage(ids);
      const load = await w.sync();
      expect(load).toMatchObject({ status: "succeeded", error: null, rows: { tracks: 5, product_viewed: 5 } });
      expect(await w.inWarehouse("tracks")).toEqual(ids);
      expect(await w.inWarehouse("product_viewed")).toEqual(ids);
      expect([...(await o.marks(w.dest.id)).values()]).toEqual(Array(10).fill(load.id));
      // 10 rows, a first page of 1 (a fifth, rounded up), then 3 a page: tracks | product_viewed
      // + tracks + product_viewed | … Each table of a page is one COPY under its own savepoint, a
      // subtransaction whose id is its rows' xmin: 1+2+2+2 COPYs; one page would have made 2.
      const [{ n }] = await admin!.unsafe(
        `SELECT count(DISTINCT x)::int AS n FROM (SELECT xmin::text AS x FROM "${w.namespace}".tracks UNION ALL SELECT xmin::text FROM "${w.namespace}".product_viewed) t`,
      );
      expect(n).toBe(7);
    });

    test("a page that fails ends the load as failed; the pages committed before it are marked, the rest wait", async () => {
      const o = await kind.open();
      // The first page is a fifth of the others: m1's two rows, then pages of 10.
      const w = await warehouseOn(o, { ...DEFAULT_LOAD_SETTINGS, pageRows: 10 });
      await w.stage(["m1", "m2"]);
      // A row the loader refuses (a table name over PostgreSQL's 63 bytes), in the second page.
      await o.store.stage([staged(w.dest.id, { namespace: w.namespace, tableName: "t".repeat(70) })]);
      await w.stage(["m3"]);
      const load = await w.sync();
      expect(load.status).toBe("failed");
      expect(load.error).toContain("table name must be 1–63 bytes");
      expect(await w.inWarehouse("tracks")).toEqual(["m1"]);
      expect([...(await o.marks(w.dest.id)).values()]).toEqual([load.id, load.id, null, null, null, null, null]);
    });

    if (kind.name === "SQLite") {
      test("SQLite: a page taken whole is one range row, not a mark per row; nothing up to the destination's highest range is read again; purge takes the range's rows, then the range", async () => {
        const o = await kind.open();
        const dst = newId("dst");
        const other = newId("dst");
        await o.store.stage([staged(dst), staged(other), staged(dst), staged(dst), staged(dst)]);
        const [a, b, c, d] = await ids(o.store, dst);
        const [elsewhere] = await ids(o.store, other);
        const first = await o.store.queueLoad(load(dst));
        await o.store.startLoad(first, tick());
        await o.reader.markLoaded(first, dst, { namespaces: ["web"], ids: [a!, b!], whole: true });
        expect(await o.query(`SELECT count(*) AS n FROM warehouse_staged WHERE load_id IS NOT NULL`)).toEqual([{ n: 0 }]);
        expect(await o.query(`SELECT load_id AS loadId, from_id AS fromId, to_id AS toId FROM warehouse_loaded_ranges WHERE destination_id = $1`, dst)).toEqual([
          { loadId: first, fromId: a!, toId: b! },
        ]);
        // The other destination's row between a and b is its own, still waiting.
        expect(await ids(o.store, other)).toEqual([elsewhere!]);
        expect(await ids(o.store, dst)).toEqual([c!, d!]);
        // Not whole (a namespace failed in this page): c is marked by itself.
        await o.reader.markLoaded(first, dst, { namespaces: ["web"], ids: [c!] });
        expect((await o.reader.readStaged(dst, 10)).map((r) => r.id)).toEqual([d!]);
        const finishedAt = tick();
        await o.store.finishLoad({ loadId: first, destinationId: dst, status: "failed", finishedAt, rows: {}, discards: 0, error: "namespace app failed" });

        // A later load takes d whole, its range reaching past c's own mark.
        const second = await o.store.queueLoad(load(dst));
        await o.store.startLoad(second, tick());
        await o.reader.markLoaded(second, dst, { namespaces: ["web"], ids: [d!], whole: true });
        expect(await ids(o.store, dst)).toEqual([]);
        await o.store.finishLoad({ loadId: second, destinationId: dst, status: "succeeded", finishedAt: tick(), rows: {}, discards: 0, error: null });

        // The first load's rows go, by its range and by its own mark; the second's stay, and so does its range.
        await o.reader.purgeLoaded(dst, finishedAt + 1);
        expect([...(await o.marks(dst))]).toEqual([[d!, second]]);
        expect(await o.query(`SELECT load_id AS loadId FROM warehouse_loaded_ranges WHERE destination_id = $1`, dst)).toEqual([{ loadId: second }]);
        expect(await ids(o.store, other)).toEqual([elsewhere!]);
      });
    }

    if (kind.name === "PostgreSQL") {
      test("PostgreSQL: a staged row committed late with a lower id, while a load runs, is loaded by the next load, not lost (design §3.8)", async () => {
        const o = await kind.open();
        const { sql } = await o.reopen!();
        const w = await warehouseOn(o);
        // A first load creates the warehouse's tables, which the test locks below.
        await w.stage(["m-first"]);
        expect((await w.sync()).status).toBe("succeeded");
        // The late event's rows, staged for another destination, copied below by the slow writer.
        const template = newId("dst");
        await w.stage(["m-late"], template);

        // A writer takes its ids first and commits last.
        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        let late: number[] = [];
        let taken!: () => void;
        const idsTaken = new Promise<void>((r) => (taken = r));
        const slow = sql.begin(async (tx) => {
          const rows = await tx.unsafe(
            `INSERT INTO warehouse_staged (destination_id, workspace_id, namespace, table_name, columns, columns_id, row, event_id, user_key, staged_at)
             SELECT $1, workspace_id, namespace, table_name, columns, columns_id, row, event_id, user_key, staged_at FROM warehouse_staged WHERE destination_id = $2
             RETURNING id`,
            [w.dest.id, template],
          );
          late = (rows as Array<{ id: string }>).map((r) => Number(r.id));
          taken();
          await gate;
        });
        await idsTaken;
        await w.stage(["m-early"]);

        // The load reads m-early's rows, then waits on the locked table inside its transaction;
        // meanwhile the late rows commit, below the ids it read. Marking "up to its last id" would take them.
        const unlock = await lockTable(w.namespace, "product_viewed");
        const { id: loadId } = await w.loads.requestSync(w.dest.workspaceId, w.dest.id);
        await waitFor(
          async () =>
            (
              await admin!.unsafe(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND xact_start IS NOT NULL AND wait_event_type = 'Lock'`, [
                `sluice load ${loadId}`,
              ])
            ).length > 0,
          { what: `load ${loadId} to wait on the locked table`, timeoutMs: 20_000 },
        );
        release();
        await slow;
        await unlock();
        const first = await w.finished(loadId);
        expect(first).toMatchObject({ status: "succeeded", rows: { tracks: 1, product_viewed: 1 } });
        const marks = await o.marks(w.dest.id);
        const early = [...marks].filter(([, loadedBy]) => loadedBy === loadId).map(([id]) => id);
        expect(early.length).toBe(2);
        expect(late.length).toBe(2);
        expect(Math.max(...late)).toBeLessThan(Math.min(...early));
        expect(late.map((id) => marks.get(id))).toEqual([null, null]);
        expect(await w.inWarehouse("tracks")).toEqual(["m-early", "m-first"]);

        const second = await w.sync();
        expect(second).toMatchObject({ status: "succeeded", rows: { tracks: 1, product_viewed: 1 } });
        const after = await o.marks(w.dest.id);
        expect(late.map((id) => after.get(id))).toEqual([second.id, second.id]);
        expect(await w.inWarehouse("tracks")).toEqual(["m-early", "m-first", "m-late"]);
        expect(await w.inWarehouse("product_viewed")).toEqual(["m-early", "m-first", "m-late"]);
      });

      test("PostgreSQL: a row committed late below the load's ids is not the load's; it waits for the next (design §3.8)", async () => {
        const o = await kind.open();
        const { sql } = await o.reopen!();
        const dst = newId("dst");
        // A writer takes its id first and commits last.
        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        let early!: number;
        let taken!: () => void;
        const idTaken = new Promise<void>((r) => (taken = r));
        const slow = sql.begin(async (tx) => {
          const [r] = await tx.unsafe(
            `INSERT INTO warehouse_staged (destination_id, workspace_id, namespace, table_name, columns, row, event_id, user_key, staged_at)
             VALUES ($1, 'ws_1', 'web', 'tracks', '{}', '{}', 'late', 'u1', 1) RETURNING id`,
            [dst],
          );
          early = Number(r.id);
          taken();
          await gate;
        });
        await idTaken;
        await o.store.stage([staged(dst)]);
        const loadId = await o.store.queueLoad(load(dst));
        await o.store.startLoad(loadId, tick());
        const read = await ids(o.store, dst);
        expect(read.length).toBe(1);
        expect(read[0]!).toBeGreaterThan(early);
        release();
        await slow;
        await o.reader.markLoaded(loadId, dst, { namespaces: ["web"], ids: read });
        await o.store.finishLoad({ loadId, destinationId: dst, status: "succeeded", finishedAt: tick(), rows: {}, discards: 0, error: null });
        const m = await o.marks(dst);
        expect(m.get(early)).toBeNull();
        expect(m.get(read[0]!)).toBe(loadId);
        expect(await ids(o.store, dst)).toEqual([early]);
      });

      test("PostgreSQL: two instances queueing at once make one load; starting it at once, one of them gets it", async () => {
        const o = await kind.open();
        const { store: other } = await o.reopen!();
        const dst = newId("dst");
        const queued = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? other : o.store).queueLoad(load(dst))));
        expect(new Set(queued).size).toBe(1);
        expect((await o.store.listLoads(dst, 10)).length).toBe(1);
        const at = tick();
        const started = await Promise.all([o.store.startLoad(queued[0]!, at), other.startLoad(queued[0]!, at), o.store.startLoad(queued[0]!, at), other.startLoad(queued[0]!, at)]);
        expect(started.filter(Boolean).length).toBe(1);
      });
    }
  });
}
