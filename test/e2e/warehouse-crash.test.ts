/**
 * Issue 22: warehouse loads are exactly once across a kill -9 in the middle of a load. A real
 * Sluice process (`bun src/main.ts serve`) stages a few hundred track and identify events of a
 * POSTGRES destination (its own schema in the test PostgreSQL, test/support/pg.ts), is killed with
 * SIGKILL at one of the two crash windows of a load, and is started again on the same data dir:
 *
 * 1. inside the load's PostgreSQL transactions (the test holds a lock on a target table, so the
 *    load waits there, found in pg_stat_activity by its application_name): PostgreSQL rolls the
 *    waiting transaction back; a table holds all of the batch or none of it (a load writes its
 *    event tables in two transactions at once, then users), the locked one none; and after the
 *    restart the interrupted load is run again and loads every event once;
 * 2. after the PostgreSQL COMMITs, before SQLite records them (the test holds SQLite's write lock
 *    while the load commits, so Sluice cannot mark the rows loaded): every event is in the
 *    warehouse, SQLite still says the load is running with its rows waiting, and the load run
 *    again after the restart inserts nothing twice.
 *
 * Nothing sleeps: every wait polls with a deadline.
 */
import { Database } from "bun:sqlite";
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { SQL } from "bun";
import { defaultNamespace } from "../../src/warehouse/schema";
import { type SluiceProcess, api, basic, cleanup, spawnSluice, tempDir } from "../support/helpers";
import { PG, havePostgres, lockTable as lockTableOn, requirePostgres, testSql, waitFor } from "../support/pg";

requirePostgres("warehouse-crash.test.ts");

const USERS = 25;
const TRACKS = 300;
const IDENTIFIES = 100;
/** Rows staged per crash batch: a track makes a tracks and a product_viewed row, an identify an identifies and a users row. */
const STAGED_ROWS = 2 * TRACKS + 2 * IDENTIFIES;
/** The table the test locks; the largest of the load, so the tables merged before it are written when the load waits. */
const LOCKED_TABLE = "product_viewed";
const TABLES = ["tracks", "product_viewed", "identifies", "users"] as const;

// Everything a test starts, undone after it whatever happened.
const procs: SluiceProcess[] = [];
const dirs: string[] = [];
const namespaces: string[] = [];
const undo: Array<() => unknown> = [];

afterEach(async () => {
  for (const fn of undo.splice(0).reverse()) await Promise.resolve().then(fn).catch(() => {});
  for (const p of procs.splice(0)) {
    p.proc.kill("SIGKILL");
    await p.proc.exited;
  }
  for (const d of dirs.splice(0)) cleanup(d);
  if (havePostgres) {
    const sql = testSql();
    try {
      for (const ns of namespaces.splice(0)) await sql.unsafe(`DROP SCHEMA IF EXISTS "${ns}" CASCADE`);
    } finally {
      await sql.close();
    }
  }
});

function newNamespace(): string {
  // Letters only: the configured namespace goes through RudderStack's naming, which splits digits off.
  const letters = Array.from(crypto.getRandomValues(new Uint8Array(10)), (b) => String.fromCharCode(97 + (b % 26))).join("");
  const ns = defaultNamespace(`sluice_crash_${letters}`);
  namespaces.push(ns);
  return ns;
}

async function start(dataDir: string): Promise<SluiceProcess> {
  const p = await spawnSluice({ dataDir });
  procs.push(p);
  return p;
}

async function kill9(p: SluiceProcess): Promise<void> {
  p.proc.kill("SIGKILL");
  expect(await p.proc.exited).not.toBe(0);
  expect(p.proc.signalCode).toBe("SIGKILL");
  procs.splice(procs.indexOf(p), 1);
}

/** "HH:MM" UTC twelve hours from now: with a daily frequency no scheduled load falls inside the test. */
function farSyncStart(): string {
  const d = new Date(Date.now() + 12 * 3600_000);
  return `${String(d.getUTCHours()).padStart(2, "0")}:${String(d.getUTCMinutes()).padStart(2, "0")}`;
}

async function setUp(url: string, namespace: string) {
  const source = await api(url, "POST", "/v2/sources", { name: `crash-${crypto.randomUUID().slice(0, 8)}` });
  expect(source.status).toBe(201);
  const dest = await api(url, "POST", "/v2/destinations", {
    name: `wh-${crypto.randomUUID().slice(0, 8)}`,
    type: "POSTGRES",
    config: {
      host: PG.host,
      port: String(PG.port),
      database: PG.database,
      user: PG.user,
      password: PG.password,
      namespace,
      syncFrequency: "1440",
      syncStartAt: farSyncStart(),
    },
    sourceIds: [source.json.id],
  });
  expect(dest.status).toBe(201);
  return { writeKey: source.json.writeKey as string, destinationId: dest.json.id as string };
}

interface Batch {
  prefix: string;
  events: Array<Record<string, unknown>>;
  trackIds: string[];
  identifyIds: string[];
  userIds: string[];
}

/** Track and identify events with known message ids, users interleaved. */
function makeBatch(prefix: string, tracks: number, identifies: number, users: number): Batch {
  const b: Batch = { prefix, events: [], trackIds: [], identifyIds: [], userIds: Array.from({ length: users }, (_, u) => `${prefix}-user-${u}`) };
  for (let i = 0; i < tracks; i++) {
    const messageId = `${prefix}-track-${i}`;
    b.trackIds.push(messageId);
    b.events.push({ type: "track", userId: b.userIds[i % users], messageId, event: "Product Viewed", properties: { sku: `SKU-${i % 17}`, price: i + 0.5, n: i } });
  }
  for (let i = 0; i < identifies; i++) {
    const messageId = `${prefix}-identify-${i}`;
    b.identifyIds.push(messageId);
    b.events.push({ type: "identify", userId: b.userIds[i % users], messageId, traits: { email: `${b.userIds[i % users]}@example.com`, plan: i % 2 ? "pro" : "free", logins: i } });
  }
  return b;
}

async function send(url: string, writeKey: string, batch: Batch): Promise<void> {
  for (let i = 0; i < batch.events.length; i += 50) {
    const res = await fetch(`${url}/v1/batch`, {
      method: "POST",
      headers: { authorization: basic(writeKey), "content-type": "application/json" },
      body: JSON.stringify({ batch: batch.events.slice(i, i + 50) }),
    });
    expect(res.status).toBe(200);
  }
}

/** Waits until the destination's stats count `count` deliveries succeeded (their rows are staged). */
async function waitStaged(url: string, destinationId: string, count: number) {
  await waitFor(
    async () => {
      const stats = await api(url, "GET", `/v2/destinations/${destinationId}/stats`);
      const c = stats.json?.counts;
      if (c && (c.aborted > 0 || c.succeeded > count)) throw new Error(`unexpected delivery counts: ${JSON.stringify(c)}`);
      return c?.succeeded === count;
    },
    { what: `${count} deliveries staged`, timeoutMs: 30_000 },
  );
}

async function syncs(url: string, destinationId: string): Promise<any[]> {
  const res = await api(url, "GET", `/v2/destinations/${destinationId}/syncs`);
  expect(res.status).toBe(200);
  return res.json.syncs;
}

/** Polls /syncs until `pick` finds a finished load. */
async function waitLoad(url: string, destinationId: string, pick: (l: any) => boolean, what: string): Promise<any> {
  return waitFor(
    async () => (await syncs(url, destinationId)).find((l) => pick(l) && (l.status === "succeeded" || l.status === "failed")),
    { what, timeoutMs: 30_000 },
  );
}

async function syncAndWait(url: string, destinationId: string): Promise<any> {
  const started = await api(url, "POST", `/v2/destinations/${destinationId}/sync`);
  expect(started.status).toBe(202);
  const id = started.json.id as string;
  const load = await waitLoad(url, destinationId, (l) => l.id === id, `load ${id} to finish`);
  expect(load.error).toBeNull();
  expect(load.status).toBe("succeeded");
  return load;
}

/** One event of each kind loaded first, so the target tables exist and the test can lock one. */
async function warmUp(url: string, writeKey: string, destinationId: string): Promise<Batch> {
  const warm = makeBatch("warm", 1, 1, 1);
  await send(url, writeKey, warm);
  await waitStaged(url, destinationId, 2);
  const load = await syncAndWait(url, destinationId);
  expect(load.rows).toEqual({ tracks: 1, product_viewed: 1, identifies: 1, users: 1 });
  return warm;
}

/** Every table's ids: how many rows, how many distinct ids, and the ids. */
async function tableIds(sql: SQL, ns: string): Promise<Record<string, { n: number; distinct: number; ids: string[] }>> {
  const out: Record<string, { n: number; distinct: number; ids: string[] }> = {};
  for (const t of TABLES) {
    const [c] = await sql.unsafe(`SELECT count(*)::int AS n, count(DISTINCT id)::int AS d FROM "${ns}"."${t}"`);
    const ids = (await sql.unsafe(`SELECT id FROM "${ns}"."${t}" ORDER BY id`)).map((r: { id: string }) => r.id);
    out[t] = { n: c.n, distinct: c.d, ids };
  }
  return out;
}

/** The ids each table gets from the batches: an event's in each of its tables, a user's in users. */
function idsByTable(batches: Batch[]) {
  const tracks = batches.flatMap((b) => b.trackIds);
  return { tracks, product_viewed: tracks, identifies: batches.flatMap((b) => b.identifyIds), users: batches.flatMap((b) => b.userIds) };
}

/** What the warehouse must hold after the batches: each event once in each of its tables, each user once. */
function expectExactlyOnce(actual: Awaited<ReturnType<typeof tableIds>>, batches: Batch[]) {
  const sorted = (xs: string[]) => [...xs].sort();
  const want = idsByTable(batches);
  for (const t of TABLES) {
    const ids = sorted(want[t]);
    expect({ table: t, n: actual[t]!.n, distinct: actual[t]!.distinct }).toEqual({ table: t, n: ids.length, distinct: ids.length });
    expect(sorted(actual[t]!.ids)).toEqual(ids);
  }
}

/** Whether every table holds each of the batches' ids, as expectExactlyOnce wants them. */
function complete(actual: Awaited<ReturnType<typeof tableIds>>, batches: Batch[]): boolean {
  const want = idsByTable(batches);
  return TABLES.every((t) => want[t].every((id) => actual[t]!.ids.includes(id)));
}

/** The load's backend in pg_stat_activity, once it waits on a lock inside its transaction. */
async function waitLoadBlocked(sql: SQL, loadId: string): Promise<number> {
  const row = await waitFor(
    async () =>
      (
        await sql.unsafe(
          `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND xact_start IS NOT NULL AND wait_event_type = 'Lock'`,
          [`sluice load ${loadId}`],
        )
      )[0] as { pid: number } | undefined,
    { what: `load ${loadId} to wait on ${LOCKED_TABLE} inside its transaction`, timeoutMs: 30_000 },
  );
  return row.pid;
}

/** Holds ACCESS EXCLUSIVE on a table in an open transaction until release() (or the test ends). */
async function lockTable(sql: SQL, ns: string, table: string) {
  const release = await lockTableOn(sql, ns, table);
  undo.push(release);
  return release;
}

/**
 * Both crash windows start alike: a Sluice process, a warmed-up POSTGRES destination, a batch
 * staged, and a load started that waits inside its PostgreSQL transaction (past every SQLite
 * write it makes before loading) on a table the test holds locked.
 */
async function blockedLoad(tag: string) {
  const sql = testSql();
  undo.push(() => sql.close());
  const ns = newNamespace();
  const dataDir = tempDir("sluice-crash-");
  dirs.push(dataDir);

  const sluice = await start(dataDir);
  const { writeKey, destinationId } = await setUp(sluice.url, ns);
  const warm = await warmUp(sluice.url, writeKey, destinationId);

  const batch = makeBatch(tag, TRACKS, IDENTIFIES, USERS);
  await send(sluice.url, writeKey, batch);
  await waitStaged(sluice.url, destinationId, 2 + TRACKS + IDENTIFIES);

  const release = await lockTable(sql, ns, LOCKED_TABLE);
  const started = await api(sluice.url, "POST", `/v2/destinations/${destinationId}/sync`);
  expect(started.status).toBe(202);
  const loadId = started.json.id as string;
  const pid = await waitLoadBlocked(sql, loadId);
  return { sql, ns, dataDir, sluice, destinationId, warm, batch, release, loadId, pid };
}

/** After the restart: the interrupted load is recorded as failed and run again at once; a later sync finds nothing left. */
async function expectRetriedAfterRestart(url: string, destinationId: string, loadId: string, rows: Record<string, number>) {
  const retried = await waitLoad(url, destinationId, (l) => l.trigger === "retry", "the load queued by the restart to finish");
  expect(retried.error).toBeNull();
  expect(retried.status).toBe("succeeded");
  expect(retried.rows).toMatchObject(rows);
  expect((await syncs(url, destinationId)).find((l) => l.id === loadId)).toMatchObject({
    status: "failed",
    error: expect.stringContaining("interrupted by a restart"),
  });
  const again = await syncAndWait(url, destinationId);
  expect(again.rows).toEqual({});
}

describe.if(havePostgres)("POSTGRES loads across kill -9 of the Sluice process", () => {
  test(
    "killed inside the load's PostgreSQL transactions: no table holds part of the batch; after the restart the interrupted load runs again and every event is there once",
    async () => {
      const blocked = await blockedLoad("tx");
      const { sql, ns, dataDir, destinationId, warm, batch, release, loadId, pid } = blocked;
      let sluice = blocked.sluice;
      expect((await syncs(sluice.url, destinationId)).find((l) => l.id === loadId)?.status).toBe("running");

      await kill9(sluice);
      await release();
      // The backend gets the lock, finds its client gone and rolls the transaction back.
      await waitFor(async () => (await sql.unsafe(`SELECT 1 FROM pg_stat_activity WHERE pid = $1`, [pid])).length === 0, {
        what: "PostgreSQL to end the killed load's session",
        timeoutMs: 30_000,
      });
      // Each table holds all of the batch or none of it; the locked one, and users (written
      // after the event tables), none. Nothing is there twice.
      const cut = await tableIds(sql, ns);
      const batchIds = idsByTable([batch]);
      for (const t of TABLES) {
        const there = batchIds[t].filter((id) => cut[t]!.ids.includes(id)).length;
        expect({ table: t, whole: there === 0 || there === batchIds[t].length, distinct: cut[t]!.n === cut[t]!.distinct }).toEqual({ table: t, whole: true, distinct: true });
      }
      expect(complete(cut, [batch])).toBe(false);
      expect(cut[LOCKED_TABLE]!.ids).toEqual(warm.trackIds);
      expect(cut.users!.ids).toEqual(warm.userIds);

      // Restarted on the same data dir: the interrupted load runs again and loads everything once.
      sluice = await start(dataDir);
      // It writes what the killed one had not committed: a table written before the kill takes nothing again.
      const wanted = { tracks: TRACKS, product_viewed: TRACKS, identifies: IDENTIFIES, users: USERS };
      const rows = Object.fromEntries(TABLES.map((t) => [t, batchIds[t].some((id) => cut[t]!.ids.includes(id)) ? 0 : wanted[t]]));
      await expectRetriedAfterRestart(sluice.url, destinationId, loadId, rows);
      expectExactlyOnce(await tableIds(sql, ns), [warm, batch]);
    },
    90_000,
  );

  test(
    "killed after the PostgreSQL commit, before SQLite records the load: every event is in the warehouse; the load run again after the restart adds nothing",
    async () => {
      const blocked = await blockedLoad("commit");
      const { sql, ns, dataDir, destinationId, warm, batch, release, loadId } = blocked;
      let sluice = blocked.sluice;

      // Now the test takes SQLite's write lock: once PostgreSQL commits, the SQLite transaction
      // that marks the rows loaded and the load succeeded cannot happen before the kill.
      const db = new Database(join(dataDir, "sluice.db"));
      undo.push(() => db.close());
      db.exec("PRAGMA busy_timeout = 10000");
      db.exec("BEGIN IMMEDIATE");
      undo.push(() => db.exec("ROLLBACK"));

      await release();
      // users is written last, after the event tables' transactions.
      await waitFor(async () => complete(await tableIds(sql, ns), [warm, batch]), { what: "the load to commit in PostgreSQL", timeoutMs: 30_000 });
      await kill9(sluice);

      // The crash window, as the files show it: PostgreSQL has everything, SQLite has the load
      // still running and its rows still waiting.
      expectExactlyOnce(await tableIds(sql, ns), [warm, batch]);
      const load = db.query(`SELECT status, finished_at AS finishedAt FROM warehouse_loads WHERE id = ?`).get(loadId) as { status: string; finishedAt: number | null };
      expect(load).toEqual({ status: "running", finishedAt: null });
      // Waiting: no mark of its own and above the destination's loaded ranges.
      const waiting = db
        .query(
          `SELECT count(*) AS n FROM warehouse_staged WHERE destination_id = ?1 AND load_id IS NULL
             AND id > coalesce((SELECT max(to_id) FROM warehouse_loaded_ranges WHERE destination_id = ?1), 0)`,
        )
        .get(destinationId) as { n: number };
      expect(waiting.n).toBe(STAGED_ROWS);
      db.exec("ROLLBACK");
      db.close();

      // Restarted: the load is run again; the loader skips the ids already there.
      sluice = await start(dataDir);
      await expectRetriedAfterRestart(sluice.url, destinationId, loadId, { tracks: 0, product_viewed: 0, identifies: 0 });
      expectExactlyOnce(await tableIds(sql, ns), [warm, batch]);
    },
    90_000,
  );
});
