/**
 * Cluster mode's PostgreSQL schema (issue 24, step 3): the pg schema mirrors the SQLite one,
 * its embedded migrations apply to an empty schema, once, also when several processes start
 * at the same time. Each test that touches PostgreSQL uses its own schema and drops it.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { is } from "drizzle-orm";
import { PgTable, getTableConfig as pgTableConfig } from "drizzle-orm/pg-core";
import { SQLiteTable, getTableConfig as sqliteTableConfig } from "drizzle-orm/sqlite-core";
import pgJournal from "../../db/pg/migrations/meta/_journal.json";
import { DatabaseRefused, MIGRATIONS_TABLE, closePostgres, migratePostgres, openPostgres, schema as pg } from "../../db/pg";
import * as lite from "../../db/schema";
import { renderMigrationIndex } from "../../scripts/embed-migrations";
import { SQLITE_ONLY } from "../../src/ops/migrate-to-postgres";
import { PG_URL as url, havePostgres, requirePostgres, testSql } from "../support/pg";

requirePostgres("pg-schema.test.ts");

/** Tables only cluster mode has (design §3.3–3.5). */
const PG_ONLY_TABLES = new Set(["cluster_settings", "cluster_instances", "partition_leases", "singleton_leases", "processor_cursors", "cluster_epochs"]);
/** Columns only cluster mode has: partitioning, cross-instance dedup, the processor's (tx, id) cursor, the suppression epoch. */
const PG_ONLY_COLUMNS = new Set(["events.dedup_key", "events.partition", "events.tx", "deliveries.partition", "regulations.seq"]);
/** Indexes only the pg schema has. (deliveries_queue exists in both, on other columns: partial on the queue states in pg.) */
const PG_ONLY_INDEXES = new Set(["events_dedup", "events_partition_tx", "events_received", "regulations_seq"]);
/**
 * Tables only SQLite has (src/ops/migrate-to-postgres.ts: migrate-to-postgres copies what they
 * say into rows of other tables): warehouse_loaded_ranges, ranges of staged ids a load took
 * whole, which only SQLite's in-order ids allow (design §3.8).
 */
const SQLITE_ONLY_TABLES = SQLITE_ONLY;
/** table.column whose JS type, nullability or default may differ between the two (none today). */
const SHAPE_DIFFERENCES = new Set<string>();

type Shape = { table: string; columns: Map<string, { dataType: string; notNull: boolean; hasDefault: boolean; primary: boolean }>; pk: string[]; indexes: Map<string, boolean> };

function shapes(tables: unknown[], config: (t: any) => any): Map<string, Shape> {
  const out = new Map<string, Shape>();
  for (const t of tables) {
    const c = config(t);
    const columns = new Map<string, Shape["columns"] extends Map<string, infer V> ? V : never>();
    const indexes = new Map<string, boolean>(); // name → unique
    for (const col of c.columns) {
      columns.set(col.name, { dataType: col.dataType, notNull: col.notNull, hasDefault: col.hasDefault, primary: col.primary });
      if (col.isUnique) indexes.set(col.uniqueName, true);
    }
    for (const i of c.indexes) indexes.set(i.config.name, !!i.config.unique);
    const pk = c.primaryKeys.flatMap((k: any) => k.columns.map((x: any) => x.name)).sort();
    out.set(c.name, { table: c.name, columns, pk, indexes });
  }
  return out;
}

const sqliteShapes = shapes(Object.values(lite).filter((v) => is(v, SQLiteTable)), sqliteTableConfig);
const pgShapes = shapes(Object.values(pg).filter((v) => is(v, PgTable)), pgTableConfig);

describe("the pg schema mirrors the SQLite one (no database)", () => {
  test("every SQLite table and column has a PostgreSQL twin of the same JS type, nullability and default", () => {
    const missing: string[] = [];
    for (const t of SQLITE_ONLY_TABLES) expect(sqliteShapes.has(t) && !pgShapes.has(t)).toBe(true);
    for (const [name, l] of sqliteShapes) {
      if (SQLITE_ONLY_TABLES.has(name)) continue;
      const p = pgShapes.get(name);
      if (!p) {
        missing.push(`table ${name}`);
        continue;
      }
      for (const [col, a] of l.columns) {
        const b = p.columns.get(col);
        if (!b) missing.push(`column ${name}.${col}`);
        else if (!SHAPE_DIFFERENCES.has(`${name}.${col}`)) expect({ column: `${name}.${col}`, ...b }).toEqual({ column: `${name}.${col}`, ...a });
      }
      expect({ table: name, pk: p.pk }).toEqual({ table: name, pk: l.pk });
    }
    expect(missing).toEqual([]);
  });

  test("every pg-only table, column and index is an intended one (listed in this test)", () => {
    const extra: string[] = [];
    for (const [name, p] of pgShapes) {
      const l = sqliteShapes.get(name);
      if (!l) {
        if (!PG_ONLY_TABLES.has(name)) extra.push(`table ${name}`);
        continue;
      }
      for (const col of p.columns.keys()) if (!l.columns.has(col) && !PG_ONLY_COLUMNS.has(`${name}.${col}`)) extra.push(`column ${name}.${col}`);
      for (const i of p.indexes.keys()) if (!l.indexes.has(i) && !PG_ONLY_INDEXES.has(i)) extra.push(`index ${i}`);
    }
    expect(extra).toEqual([]);
    // The allow-lists hold nothing stale either.
    for (const t of PG_ONLY_TABLES) expect(pgShapes.has(t) && !sqliteShapes.has(t)).toBe(true);
    for (const c of PG_ONLY_COLUMNS) {
      const [t, col] = c.split(".") as [string, string];
      expect(pgShapes.get(t)?.columns.has(col) && !sqliteShapes.get(t)?.columns.has(col)).toBe(true);
    }
  });

  test("every SQLite index and unique constraint has a pg twin of the same name and uniqueness (CONFLICT maps by name)", () => {
    for (const [name, l] of sqliteShapes) {
      if (SQLITE_ONLY_TABLES.has(name)) continue;
      const p = pgShapes.get(name)!;
      for (const [index, unique] of l.indexes) expect({ index, unique: p.indexes.get(index) }).toEqual({ index, unique });
    }
  });

  test("embedded pg migrations match the drizzle journal (run npm run db:generate after changing db/pg/schema)", async () => {
    const current = await Bun.file(join(import.meta.dir, "../..", "db", "pg", "migrations", "index.ts")).text();
    expect(current).toBe(renderMigrationIndex(pgJournal.entries.map((e) => e.tag)));
  });

  test("the seed migration agrees with PARTITIONS (singletons and epochs: checked against the database below)", async () => {
    const seed = await Bun.file(join(import.meta.dir, "../..", "db", "pg", "migrations", "0001_cluster-seed.sql")).text();
    expect(seed).toContain(`('partitions', '${pg.PARTITIONS}')`);
    expect(seed.match(/generate_series\(0, (\d+)\)/g)).toEqual([`generate_series(0, ${pg.PARTITIONS - 1})`, `generate_series(0, ${pg.PARTITIONS - 1})`]);
  });
});

describe.if(havePostgres)("openPostgres", () => {
  const admin = havePostgres ? testSql() : null!;
  const made: string[] = [];
  const newSchema = () => {
    const s = `t_pgschema_${Math.random().toString(36).slice(2, 10)}`;
    made.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of made.splice(0)) await admin.unsafe(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  });
  afterAll(() => admin.close());

  const applied = async (s: string) =>
    (await admin.unsafe(`SELECT hash, created_at::text AS at FROM "${s}"."${MIGRATIONS_TABLE}" ORDER BY id`)) as Array<{ hash: string; at: string }>;

  test("migrations apply to an empty schema: every table and column of the pg schema exists there, seeded, with foreign keys inside it", async () => {
    const s = newSchema();
    const db = await openPostgres(url, { searchPath: s });
    try {
      const cols = (await admin`SELECT table_name AS t, column_name AS c FROM information_schema.columns WHERE table_schema = ${s}`) as Array<{ t: string; c: string }>;
      const inDb = new Map<string, Set<string>>();
      for (const { t, c } of cols) (inDb.get(t) ?? inDb.set(t, new Set()).get(t)!).add(c);
      const expected = new Map([...pgShapes].map(([t, sh]) => [t, new Set(sh.columns.keys())]));
      expected.set(MIGRATIONS_TABLE, new Set(["id", "hash", "created_at"]));
      expect(new Map([...inDb].map(([t, c]) => [t, [...c].sort()]))).toEqual(new Map([...expected].map(([t, c]) => [t, [...c].sort()])));
      expect((await applied(s)).map((r) => Number(r.at))).toEqual(pgJournal.entries.map((e) => e.when));

      // Foreign keys point into the same schema (drizzle-kit writes "public"."t"; the migrator strips it).
      const fks = (await admin`SELECT confrelid::regclass::text AS ref, (SELECT nspname FROM pg_namespace n JOIN pg_class r ON r.relnamespace = n.oid WHERE r.oid = confrelid) AS ns
        FROM pg_constraint WHERE contype = 'f' AND connamespace = ${s}::regnamespace`) as Array<{ ns: string }>;
      expect(fks.length).toBeGreaterThan(10);
      expect(new Set(fks.map((f) => f.ns))).toEqual(new Set([s]));

      // The seeded rows.
      const [{ n: leases }] = await db.$client`SELECT count(*)::int AS n FROM partition_leases WHERE owner IS NULL AND epoch = 0`;
      const [{ n: cursors }] = await db.$client`SELECT count(*)::int AS n FROM processor_cursors WHERE tx = '0' AND id = 0`;
      expect([leases, cursors]).toEqual([pg.PARTITIONS, pg.PARTITIONS]);
      expect(await db.select().from(pg.clusterSettings)).toEqual([{ name: "partitions", value: String(pg.PARTITIONS) }]);
      expect((await db.select().from(pg.singletonLeases)).map((r) => r.name).sort()).toEqual([...pg.SINGLETONS].sort());
      expect((await db.select().from(pg.clusterEpochs)).map((r) => [r.name, r.value]).sort()).toEqual(pg.EPOCHS.map((e) => [e, 0]).sort());

      // The values the code reads come back as they do from SQLite: numbers, booleans, parsed JSON.
      const now = Date.now();
      await db.insert(pg.workspaces).values({ id: "ws1", name: "w", createdAt: now });
      const [src] = await db.insert(pg.sources).values({ id: "s1", workspaceId: "ws1", name: "s", writeKey: "k1", createdAt: now, updatedAt: now }).returning();
      expect(src).toEqual({ id: "s1", workspaceId: "ws1", name: "s", writeKey: "k1", enabled: true, settings: {}, rudderDefinition: null, config: null, trackingPlanConfig: null, createdAt: now, updatedAt: now });
      const bad = await db.insert(pg.sources).values({ id: "s2", workspaceId: "nope", name: "x", writeKey: "k2", createdAt: now, updatedAt: now }).catch((e) => e);
      expect(bad.cause?.errno ?? bad.errno).toBe("23503");
      const dup = await db.insert(pg.sources).values({ id: "s3", workspaceId: "ws1", name: "other", writeKey: "k1", createdAt: now, updatedAt: now }).catch((e) => e);
      expect([dup.cause?.errno, dup.cause?.constraint]).toEqual(["23505", "sources_write_key_unique"]);
      const row = { workspaceId: "ws1", sourceId: "s1", messageId: "m1", dedupKey: -(2n ** 63n) + 7n, partition: pg.PARTITIONS - 1, userKey: "u", type: "track", payload: "{}", receivedAt: now };
      const [ev] = await db.insert(pg.events).values(row).returning();
      expect(ev).toMatchObject({ ...row, id: 1 });
      expect(ev!.tx).toMatch(/^\d+$/);
      const again = await db.insert(pg.events).values({ ...row, messageId: "m1-again" }).onConflictDoNothing().returning();
      expect(again).toEqual([]);
    } finally {
      await closePostgres(db);
    }
  });

  test("applying twice is a no-op", async () => {
    const s = newSchema();
    const first = await openPostgres(url, { searchPath: s });
    await first.insert(pg.workspaces).values({ id: "ws1", name: "kept", createdAt: 1 });
    const before = await applied(s);
    expect(await migratePostgres(first.$client, s)).toBe(0);
    await closePostgres(first);
    const second = await openPostgres(url, { searchPath: s });
    try {
      expect(await applied(s)).toEqual(before);
      expect(await second.select().from(pg.workspaces)).toEqual([{ id: "ws1", name: "kept", createdAt: 1 }]);
    } finally {
      await closePostgres(second);
    }
  });

  test("a schema at an earlier migration is brought up to date; one with a migration this build does not know is refused", async () => {
    const s = newSchema();
    const { SQL } = await import("bun");
    const raw = new SQL(url, { max: 1, connection: { search_path: s } });
    try {
      expect(await migratePostgres(raw, s, 1)).toBe(1);
      expect(await raw`SELECT count(*)::int AS n FROM partition_leases`).toEqual([{ n: 0 }] as any);
      expect(await migratePostgres(raw, s)).toBe(pgJournal.entries.length - 1);
      expect(await raw`SELECT count(*)::int AS n FROM partition_leases`).toEqual([{ n: pg.PARTITIONS }] as any);
      const newest = Math.max(...pgJournal.entries.map((e) => e.when));
      await raw.unsafe(`INSERT INTO "${s}"."${MIGRATIONS_TABLE}" (hash, created_at) VALUES ('later', ${newest + 1})`);
    } finally {
      await raw.close();
    }
    const refused = await openPostgres(url, { searchPath: s }).catch((e) => e);
    expect(refused).toBeInstanceOf(DatabaseRefused);
    expect(String(refused.message)).toContain("newer Sluice");
  });

  test("three processes starting at once on one empty schema apply the migrations exactly once, and all succeed", async () => {
    const s = newSchema();
    const startAt = Date.now() + 1500; // all three wait for this moment, so their migrations overlap
    const child = `
      const { openPostgres, closePostgres, migratePostgres } = await import(${JSON.stringify(join(import.meta.dir, "../..", "db", "pg", "index.ts"))});
      const { SQL } = await import("bun");
      await Bun.sleep(Math.max(0, ${startAt} - Date.now()));
      const client = new SQL(process.env.URL, { max: 2, connection: { search_path: process.env.SCHEMA } });
      const applied = await migratePostgres(client, process.env.SCHEMA);
      await client.close();
      const db = await openPostgres(process.env.URL, { searchPath: process.env.SCHEMA });
      const [{ n }] = await db.$client\`SELECT count(*)::int AS n FROM partition_leases\`;
      await closePostgres(db);
      console.log(JSON.stringify({ applied, leases: n }));
    `;
    const procs = [0, 1, 2].map(() =>
      Bun.spawn([process.execPath, "-e", child], { env: { ...process.env, URL: url, SCHEMA: s }, stdout: "pipe", stderr: "pipe" }),
    );
    const results = await Promise.all(
      procs.map(async (p) => ({ code: await p.exited, out: await new Response(p.stdout).text(), err: await new Response(p.stderr).text() })),
    );
    for (const r of results) expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
    const reports = results.map((r) => JSON.parse(r.out.trim().split("\n").at(-1)!) as { applied: number; leases: number });
    expect(reports.map((r) => r.applied).sort()).toEqual([0, 0, pgJournal.entries.length]);
    expect(reports.map((r) => r.leases)).toEqual([pg.PARTITIONS, pg.PARTITIONS, pg.PARTITIONS]);
    expect((await applied(s)).length).toBe(pgJournal.entries.length);
  }, 30_000);
});
