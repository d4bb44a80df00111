/**
 * The PostgreSQL warehouse loader (issue 22) against a real PostgreSQL (see test/support/pg.ts): each
 * test loads into its own schema and drops it after.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AppError } from "../../src/lib/errors";
import { PostgresWarehouse, isRetryableLoadError } from "../../src/warehouse/postgres-loader";
import { copyField, fitValue } from "../../src/warehouse/postgres-values";
import { eventRows } from "../../src/warehouse/schema";
import { batchesByNamespace, stagedRowText } from "../../src/warehouse/staged-rows";
import type { TableBatch, WarehouseType } from "../../src/warehouse/types";
import { PG, havePostgres, requirePostgres, testSql, waitFor } from "../support/pg";

requirePostgres("warehouse-postgres.test.ts");

const sql = havePostgres ? testSql() : null;
const namespaces: string[] = [];
const warehouses: PostgresWarehouse[] = [];

function newNamespace(): string {
  const ns = `sluice_wh_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  namespaces.push(ns);
  return ns;
}

function newWarehouse(over: Partial<ConstructorParameters<typeof PostgresWarehouse>[0]> = {}): PostgresWarehouse {
  const wh = new PostgresWarehouse({ ...PG, ...over });
  warehouses.push(wh);
  return wh;
}

afterEach(async () => {
  for (const wh of warehouses.splice(0)) await wh.close().catch(() => {});
  for (const ns of namespaces.splice(0)) await sql!.unsafe(`DROP SCHEMA IF EXISTS "${ns}" CASCADE`);
});
afterAll(async () => {
  await sql?.close();
});

const TRACK_COLUMNS: Record<string, WarehouseType> = {
  id: "string",
  anonymous_id: "string",
  user_id: "string",
  received_at: "datetime",
  sent_at: "datetime",
  timestamp: "datetime",
  original_timestamp: "datetime",
  uuid_ts: "datetime",
  event: "string",
  event_text: "string",
  context_library_name: "string",
  context_ip: "string",
};

function trackRow(id: string, extra: Record<string, unknown> = {}, receivedAt = "2026-01-02T03:04:05.678Z") {
  return {
    id,
    anonymous_id: `anon-${id}`,
    user_id: `user-${id}`,
    received_at: receivedAt,
    sent_at: receivedAt,
    timestamp: receivedAt,
    original_timestamp: receivedAt,
    uuid_ts: "2026-01-02T03:05:00.000Z",
    event: "product_viewed",
    event_text: "Product Viewed",
    context_library_name: "analytics-node",
    context_ip: "10.0.0.1",
    ...extra,
  };
}

function batch(table: string, columns: Record<string, WarehouseType>, rows: Array<Record<string, unknown>>): TableBatch {
  return { table, columns, rows };
}

async function columnsOf(ns: string, table: string): Promise<Record<string, string>> {
  const rows: Array<{ column_name: string; data_type: string }> = await sql!.unsafe(
    `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2`,
    [ns, table],
  );
  return Object.fromEntries(rows.map((r) => [r.column_name, r.data_type]));
}

async function count(ns: string, table: string): Promise<number> {
  const [r] = await sql!.unsafe(`SELECT count(*)::int AS n FROM "${ns}"."${table}"`);
  return r.n;
}

describe("values meet columns (no database)", () => {
  test.each([
    ["text takes anything", "string", 42, "42"],
    ["text takes objects as JSON", "string", { a: [1, "x"] }, '{"a":[1,"x"]}'],
    ["bigint takes integers", "int", 12, "12"],
    ["bigint truncates floats, as RudderStack does", "int", 12.9, "12"],
    ["double takes integers", "float", 3, "3"],
    ["boolean as t/f", "boolean", false, "f"],
    ["timestamptz takes ISO date-times", "datetime", "2026-01-02T03:04:05.678+01:00", "2026-01-02T03:04:05.678+01:00"],
    ["timestamptz takes microseconds", "datetime", "2026-01-02T03:04:05.123456Z", "2026-01-02T03:04:05.123456Z"],
    ["timestamptz takes a leap day", "datetime", "2024-02-29T00:00:00.000Z", "2024-02-29T00:00:00.000Z"],
    ["timestamptz takes a date alone", "datetime", "2026-01-02", "2026-01-02"],
    ["json keeps JSON text", "json", "[1,2]", "[1,2]"],
    ["json quotes other strings", "json", "plain", '"plain"'],
    // jsonb refuses \u0000, and RudderStack strips NUL from every event before its warehouse sees it.
    ["json drops NUL from JSON text", "json", '{"a\\u0000":"b\\u0000c"}', '{"a":"bc"}'],
    ["json drops NUL from a string it quotes", "json", "x\u0000y", '"xy"'],
    ["json drops NUL from an object", "json", { k: ["\u0000v"] }, '{"k":["v"]}'],
    ["json keeps an escaped backslash before u0000", "json", '"\\\\u0000"', '"\\\\u0000"'],
    ["null stays null", "int", null, null],
  ] as const)("%s", (_name, kind, value, expected) => {
    expect(fitValue(value, kind)).toEqual(expected);
  });

  test.each([
    ["a string in a bigint column", "int", "12"],
    ["a string in a double column", "float", "1.5"],
    ["a number in a boolean column", "boolean", 1],
    ["a non-date string in a timestamptz column", "datetime", "yesterday"],
    ["an impossible date in a timestamptz column", "datetime", "2026-13-45T00:00:00Z"],
    // JavaScript's Date.parse rolls these over into the next month; PostgreSQL refuses them.
    ["February 30th in a timestamptz column", "datetime", "2026-02-30T00:00:00.000Z"],
    ["April 31st with an offset in a timestamptz column", "datetime", "2026-04-31 10:00:00+02:00"],
    ["February 29th of a year that is not leap in a timestamptz column", "datetime", "1900-02-29T00:00:00Z"],
    ["year 0 in a timestamptz column", "datetime", "0000-01-01T00:00:00Z"],
    ["a second past 59 in a timestamptz column", "datetime", "2026-01-01T23:59:60Z"],
    ["a number past bigint's range", "int", 1e20],
    ["an object in a bigint column", "int", { a: 1 }],
  ] as const)("%s is a misfit", (_name, kind, value) => {
    expect(fitValue(value, kind)).toMatchObject({ misfit: true });
  });

  test("COPY fields escape backslash, tab and newlines, and drop NUL", () => {
    expect(copyField("a\\b\tc\nd\re\0f")).toBe("a\\\\b\\tc\\nd\\re" + "f");
    expect(copyField(null)).toBe("\\N");
    expect(copyField("plain")).toBe("plain");
  });
});

describe.if(havePostgres)("PostgresWarehouse", () => {
  test("a first load creates the schema, the tables with id as primary key, and typed columns", async () => {
    const ns = newNamespace();
    const wh = newWarehouse();
    const result = await wh.load(
      ns,
      [
        batch("tracks", TRACK_COLUMNS, [trackRow("m1"), trackRow("m2")]),
        batch("product_viewed", { ...TRACK_COLUMNS, price: "float", quantity: "int", in_stock: "boolean", tags: "json" }, [
          trackRow("m1", { price: 9.5, quantity: 2, in_stock: true, tags: ["a", "b"] }),
          trackRow("m2", { price: 3, quantity: 1, in_stock: false, tags: '["c"]' }),
        ]),
      ],
      "load-1",
    );
    expect(result).toEqual({ rows: { tracks: 2, product_viewed: 2 }, discards: 0 });
    const cols = await columnsOf(ns, "product_viewed");
    expect(cols).toMatchObject({
      id: "text",
      received_at: "timestamp with time zone",
      price: "numeric",
      quantity: "bigint",
      in_stock: "boolean",
      tags: "jsonb",
      context_library_name: "text",
    });
    const [pk] = await sql!.unsafe(
      `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
       WHERE i.indrelid = $1::regclass AND i.indisprimary`,
      [`"${ns}"."product_viewed"`],
    );
    expect(pk.attname).toBe("id");
    const rows = await sql!.unsafe(`SELECT id, price::text AS price, quantity, in_stock, tags::text AS tags, received_at FROM "${ns}".product_viewed ORDER BY id`);
    expect(rows.map((r: any) => [r.id, Number(r.price), Number(r.quantity), r.in_stock, r.tags])).toEqual([
      ["m1", 9.5, 2, true, '["a", "b"]'],
      ["m2", 3, 1, false, '["c"]'],
    ]);
    expect(new Date(rows[0].received_at).toISOString()).toBe("2026-01-02T03:04:05.678Z");
  });

  test("a new property adds its column on the next load; older rows have it null", async () => {
    const ns = newNamespace();
    const wh = newWarehouse();
    await wh.load(ns, [batch("tracks", TRACK_COLUMNS, [trackRow("m1")])], "l1");
    await wh.load(ns, [batch("tracks", { ...TRACK_COLUMNS, context_locale: "string", coupon_value: "int" }, [trackRow("m2", { context_locale: "de-DE", coupon_value: 5 })])], "l2");
    expect(await columnsOf(ns, "tracks")).toMatchObject({ context_locale: "text", coupon_value: "bigint" });
    const rows = await sql!.unsafe(`SELECT id, context_locale, coupon_value FROM "${ns}".tracks ORDER BY id`);
    expect(rows.map((r: any) => [r.id, r.context_locale, r.coupon_value === null ? null : Number(r.coupon_value)])).toEqual([
      ["m1", null, null],
      ["m2", "de-DE", 5],
    ]);
  });

  test("a value that does not fit its column's type goes to rudder_discards and the rest of the row loads", async () => {
    const ns = newNamespace();
    const wh = newWarehouse();
    await wh.load(ns, [batch("order_done", { ...TRACK_COLUMNS, amount: "int", paid: "boolean" }, [trackRow("m1", { amount: 10, paid: true })])], "l1");
    const result = await wh.load(
      ns,
      [batch("order_done", { ...TRACK_COLUMNS, amount: "string", paid: "boolean" }, [trackRow("m2", { amount: "ten", paid: false }, "2026-02-03T04:05:06.000Z")])],
      "l2",
    );
    expect(result.discards).toBe(1);
    const [row] = await sql!.unsafe(`SELECT amount, paid, context_ip FROM "${ns}".order_done WHERE id = 'm2'`);
    expect(row).toEqual({ amount: null, paid: false, context_ip: "10.0.0.1" });
    expect(await columnsOf(ns, "order_done")).toMatchObject({ amount: "bigint" });
    const discards = await sql!.unsafe(`SELECT table_name, column_name, column_value, row_id, received_at, reason, uuid_ts FROM "${ns}".rudder_discards`);
    expect(discards).toHaveLength(1);
    expect(discards[0]).toMatchObject({ table_name: "order_done", column_name: "amount", column_value: "ten", row_id: "m2", reason: "incompatible schema conversion from int to string" });
    expect(new Date(discards[0].received_at).toISOString()).toBe("2026-02-03T04:05:06.000Z");
    expect(discards[0].uuid_ts).not.toBeNull();
  });

  test("a date PostgreSQL refuses (February 30th) goes to rudder_discards; the other tables of the load still arrive", async () => {
    const ns = newNamespace();
    const wh = newWarehouse();
    // Several tables, the biggest first: the loader reorders and encodes ahead, which must not
    // lose or mix up a table's discards.
    const tracks = Array.from({ length: 300 }, (_, i) => trackRow(`t${i}`));
    const bad = trackRow("m1", { shipped_at: "2026-02-30T10:00:00.000Z" });
    const result = await wh.load(
      ns,
      [
        batch("tracks", TRACK_COLUMNS, tracks),
        batch("order_shipped", { ...TRACK_COLUMNS, shipped_at: "datetime" }, [bad, trackRow("m2", { shipped_at: "2026-03-01T10:00:00.000Z" })]),
        batch("order_paid", TRACK_COLUMNS, [trackRow("m3")]),
      ],
      "l1",
    );
    expect(result).toEqual({ rows: { tracks: 300, order_shipped: 2, order_paid: 1 }, discards: 1 });
    const rows = await sql!.unsafe(`SELECT id, shipped_at FROM "${ns}".order_shipped ORDER BY id`);
    expect(rows.map((r: { id: string; shipped_at: Date | null }) => [r.id, r.shipped_at?.toISOString() ?? null])).toEqual([
      ["m1", null],
      ["m2", "2026-03-01T10:00:00.000Z"],
    ]);
    const discards = await sql!.unsafe(`SELECT table_name, column_name, column_value, row_id FROM "${ns}".rudder_discards`);
    expect(discards).toEqual([{ table_name: "order_shipped", column_name: "shipped_at", column_value: "2026-02-30T10:00:00.000Z", row_id: "m1" }]);
  });

  test("the same load twice inserts every row once, discards included", async () => {
    const ns = newNamespace();
    const wh = newWarehouse();
    const batches = [
      batch("tracks", TRACK_COLUMNS, [trackRow("m1"), trackRow("m2"), trackRow("m2")]),
      batch("product_viewed", { ...TRACK_COLUMNS, price: "float" }, [trackRow("m1", { price: 1 }), trackRow("m2", { price: 2 })]),
    ];
    await wh.load(ns, batches, "l1");
    await wh.load(ns, [batch("product_viewed", { ...TRACK_COLUMNS, price: "float" }, [trackRow("m3", { price: "cheap" })])], "l2");
    const again = await wh.load(ns, [...batches, batch("product_viewed", { ...TRACK_COLUMNS, price: "float" }, [trackRow("m3", { price: "cheap" })])], "l3");
    expect(again.rows).toEqual({ tracks: 0, product_viewed: 0 });
    expect(await count(ns, "tracks")).toBe(2);
    expect(await count(ns, "product_viewed")).toBe(3);
    expect(await count(ns, "rudder_discards")).toBe(1);
  });

  test("float columns are made numeric and json columns jsonb; columns that exist keep their type", async () => {
    const ns = newNamespace();
    // As an earlier Sluice made it: double precision for floats, text for JSON.
    await sql!.unsafe(`CREATE SCHEMA "${ns}"`);
    await sql!.unsafe(`CREATE TABLE "${ns}".order_done (id text PRIMARY KEY, received_at timestamptz, uuid_ts timestamptz, total double precision, cart text)`);
    const wh = newWarehouse();
    const columns: Record<string, WarehouseType> = { id: "string", received_at: "datetime", uuid_ts: "datetime", total: "float", cart: "json", tax: "float", extra: "json" };
    const row = (id: string, total: number) => ({ id, received_at: "2026-01-02T03:04:05.678Z", uuid_ts: "2026-01-02T03:05:00.000Z", total, cart: '{"items":2}', tax: 0.19, extra: { note: "n\u0000o" } });
    const r = await wh.load(ns, [batch("order_done", columns, [row("m1", 10.25)]), batch("order_new", columns, [row("m2", 0.1)])], "l1");
    expect(r).toEqual({ rows: { order_done: 1, order_new: 1 }, discards: 0 });
    expect(await columnsOf(ns, "order_done")).toMatchObject({ total: "double precision", cart: "text", tax: "numeric", extra: "jsonb" });
    expect(await columnsOf(ns, "order_new")).toMatchObject({ total: "numeric", cart: "jsonb", tax: "numeric", extra: "jsonb" });
    const [old] = await sql!.unsafe(`SELECT total, cart, tax::text AS tax, extra->>'note' AS note FROM "${ns}".order_done`);
    expect(old).toEqual({ total: 10.25, cart: '{"items":2}', tax: "0.19", note: "no" });
    // numeric keeps the decimal the event sent (0.1 stays 0.1, not 0.1000000000000000055…).
    const [fresh] = await sql!.unsafe(`SELECT total::text AS total, cart->>'items' AS items, extra->>'note' AS note FROM "${ns}".order_new`);
    expect(fresh).toEqual({ total: "0.1", items: "2", note: "no" });
  });

  test("jsonPaths end to end: an event's object staged as COPY text loads into a jsonb column, NULs stripped", async () => {
    const ns = newNamespace();
    const event = {
      type: "track",
      event: "Order Completed",
      messageId: "m-json-1",
      userId: "u1",
      receivedAt: "2026-01-02T03:04:05.678Z",
      properties: { cart: { items: [{ sku: "a\u0000b" }], "no\u0000te": "tab\there" }, total: 12.5 },
    };
    const staged = eventRows(event, { uuidTs: "2026-01-02T03:05:00.000Z", jsonPaths: "track.properties.cart" }).map((r) => ({
      namespace: ns,
      tableName: r.table,
      columns: JSON.stringify(r.columns),
      row: stagedRowText(r.table, r.columns, r.row),
    }));
    const batches = batchesByNamespace(staged, "2026-01-02T03:05:00.000Z").get(ns)!;
    const r = await newWarehouse().load(ns, batches, "l1");
    expect(r).toEqual({ rows: { tracks: 1, order_completed: 1 }, discards: 0 });
    expect(await columnsOf(ns, "order_completed")).toMatchObject({ cart: "jsonb", total: "numeric" });
    const [row] = await sql!.unsafe(`SELECT cart::text AS cart, total::text AS total FROM "${ns}".order_completed`);
    expect(JSON.parse(row.cart)).toEqual({ items: [{ sku: "ab" }], note: "tab\there" });
    expect(row.total).toBe("12.5");
  });

  test("an id twice in one batch into a table that exists: one row, the one received last", async () => {
    const ns = newNamespace();
    const wh = newWarehouse();
    const cols = { ...TRACK_COLUMNS, price: "float" as WarehouseType };
    await wh.load(ns, [batch("product_viewed", cols, [trackRow("m1", { price: 1 })])], "l1");
    const r = await wh.load(
      ns,
      [batch("product_viewed", cols, [trackRow("m2", { price: 3 }, "2026-01-02T03:04:06.000Z"), trackRow("m3", { price: 4 }), trackRow("m2", { price: 2 }, "2026-01-02T03:04:05.000Z")])],
      "l2",
    );
    expect(r.rows).toEqual({ product_viewed: 2 });
    const rows = await sql!.unsafe(`SELECT id, price FROM "${ns}".product_viewed ORDER BY id`);
    // numeric comes back as text: it keeps digits a double would lose.
    expect(rows.map((x: { id: string; price: string }) => [x.id, Number(x.price)])).toEqual([
      ["m1", 1],
      ["m2", 3],
      ["m3", 4],
    ]);
  });

  test("ids already loaded are skipped also by a new loader, and in a table made without a key on id (as RudderStack may have)", async () => {
    const ns = newNamespace();
    await newWarehouse().load(ns, [batch("tracks", TRACK_COLUMNS, [trackRow("m1")])], "l1");
    // A table of the same shape without a primary key: no COPY may go in before the ids are checked.
    await sql!.unsafe(`CREATE TABLE "${ns}".order_done AS SELECT * FROM "${ns}".tracks`);
    const fresh = newWarehouse();
    const r = await fresh.load(ns, [batch("tracks", TRACK_COLUMNS, [trackRow("m1"), trackRow("m2")]), batch("order_done", TRACK_COLUMNS, [trackRow("m1"), trackRow("m3")])], "l2");
    expect(r.rows).toEqual({ tracks: 1, order_done: 1 });
    expect((await sql!.unsafe(`SELECT id FROM "${ns}".tracks ORDER BY id`)).map((x: { id: string }) => x.id)).toEqual(["m1", "m2"]);
    expect((await sql!.unsafe(`SELECT id FROM "${ns}".order_done ORDER BY id`)).map((x: { id: string }) => x.id)).toEqual(["m1", "m3"]);
  });

  test("users keeps one row per id with each trait's latest non-null value; an older replay does not overwrite", async () => {
    const ns = newNamespace();
    const wh = newWarehouse();
    const cols: Record<string, WarehouseType> = { id: "string", received_at: "datetime", email: "string", plan: "string", logins: "int" };
    await wh.load(ns, [batch("users", cols, [
      { id: "u1", received_at: "2026-01-01T00:00:00Z", email: "a@x.io", plan: "free", logins: 1 },
      { id: "u1", received_at: "2026-01-03T00:00:00Z", plan: "pro", logins: null },
      { id: "u2", received_at: "2026-01-02T00:00:00Z", email: "b@x.io" },
    ])], "l1");
    await wh.load(ns, [batch("users", cols, [
      { id: "u1", received_at: "2026-01-05T00:00:00Z", logins: 7 },
      { id: "u2", received_at: "2025-12-01T00:00:00Z", email: "old@x.io", plan: "trial" },
    ])], "l2");
    const rows = await sql!.unsafe(`SELECT id, email, plan, logins, received_at FROM "${ns}".users ORDER BY id`);
    expect(rows.map((r: any) => [r.id, r.email, r.plan, r.logins === null ? null : Number(r.logins), new Date(r.received_at).toISOString()])).toEqual([
      ["u1", "a@x.io", "pro", 7, "2026-01-05T00:00:00.000Z"],
      ["u2", "b@x.io", "trial", null, "2026-01-02T00:00:00.000Z"],
    ]);
  });

  test("a load killed (SIGKILL) while a transaction is open leaves no table half loaded; the retry loads everything once", async () => {
    const ns = newNamespace();
    const wh = newWarehouse();
    await wh.load(ns, [batch("tracks", TRACK_COLUMNS, [trackRow("m0")])], "first");
    const ids = Array.from({ length: 500 }, (_, i) => `k${i}`);
    const batches = [
      batch("product_viewed", { ...TRACK_COLUMNS, price: "float" }, ids.map((id, i) => trackRow(id, { price: i }))),
      batch("tracks", TRACK_COLUMNS, ids.map((id) => trackRow(id))),
    ];
    const loadId = `kill-${crypto.randomUUID().slice(0, 8)}`;
    const dir = mkdtempSync(join(tmpdir(), "sluice-pg-kill-"));
    writeFileSync(join(dir, "batches.json"), JSON.stringify(batches));
    writeFileSync(
      join(dir, "child.ts"),
      `import { PostgresWarehouse } from ${JSON.stringify(join(import.meta.dir, "../..", "src", "warehouse", "postgres-loader.ts"))};
       const batches = await Bun.file(${JSON.stringify(join(dir, "batches.json"))}).json();
       const wh = new PostgresWarehouse(${JSON.stringify(PG)});
       await wh.load(${JSON.stringify(ns)}, batches, ${JSON.stringify(loadId)});
       console.log("committed");`,
    );
    // The test holds tracks locked, so the child stops inside the transaction that writes it:
    // product_viewed is created (schema changes commit first) and, in the other lane, filled
    // or about to be.
    const lock = await sql!.reserve();
    let child: ReturnType<typeof Bun.spawn> | undefined;
    try {
      await lock.unsafe("BEGIN");
      await lock.unsafe(`LOCK TABLE "${ns}".tracks IN ACCESS EXCLUSIVE MODE`);
      child = Bun.spawn([process.execPath, join(dir, "child.ts")], { stdout: "pipe", stderr: "pipe" });
      await waitFor(
        async () => (await sql!.unsafe(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND xact_start IS NOT NULL AND wait_event_type = 'Lock'`, [`sluice load ${loadId}`])).length > 0,
        { what: "the child's load to wait on tracks inside its transaction" },
      );
      // The other lane, on its own connection, is not held up by the locked table.
      await waitFor(async () => (await count(ns, "product_viewed")) === 500, { what: "product_viewed's lane to commit while tracks is locked" });
      child.kill("SIGKILL");
      expect(await child.exited).not.toBe(0);
    } finally {
      await lock.unsafe("ROLLBACK").catch(() => {});
      lock.release();
      child?.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
    await waitFor(async () => (await sql!.unsafe(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1`, [`sluice load ${loadId}`])).length === 0, {
      what: "PostgreSQL to end the killed load's session",
    });
    expect(await count(ns, "product_viewed")).toBe(500);
    expect(await count(ns, "tracks")).toBe(1);

    await wh.load(ns, batches, loadId);
    await wh.load(ns, batches, loadId);
    expect(await count(ns, "product_viewed")).toBe(500);
    expect(await count(ns, "tracks")).toBe(501);
  });

  test("an unreachable database fails the load with a retryable error naming it", async () => {
    const wh = newWarehouse({ port: 1, connectTimeoutSeconds: 2 });
    const err = await wh.load("sluice_nowhere", [batch("tracks", TRACK_COLUMNS, [trackRow("m1")])], "l1").catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe("UNAVAILABLE");
    expect(err.message).toContain("127.0.0.1:1/test is unreachable");
    expect(isRetryableLoadError(err)).toBe(true);
  });

  test("a database error that is not about the connection is not retryable", async () => {
    const wh = newWarehouse({ database: "sluice_no_such_database" });
    const err = await wh.ensureSchema("sluice_nowhere").catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err.message).toContain("does not exist");
    expect(isRetryableLoadError(err)).toBe(false);
  });

  test("deleteUsers removes the users' rows from every table, users and their discards included", async () => {
    const ns = newNamespace();
    const wh = newWarehouse();
    await wh.load(ns, [
      batch("tracks", TRACK_COLUMNS, [trackRow("a1", { user_id: "ua" }), trackRow("b1", { user_id: "ub" })]),
      batch("identifies", { ...TRACK_COLUMNS }, [trackRow("a2", { user_id: "ua" }), trackRow("b2", { user_id: "ub" })]),
      batch("users", { id: "string", received_at: "datetime", age: "int" }, [{ id: "ua", received_at: "2026-01-01T00:00:00Z", age: 3 }, { id: "ub", age: 4 }]),
    ], "l1");
    await wh.load(ns, [batch("users", { id: "string", age: "string" }, [{ id: "ua", age: "old" }])], "l2");
    expect(await count(ns, "rudder_discards")).toBe(1);
    const deleted = await wh.deleteUsers(ns, ["ua", "nobody"]);
    expect(deleted).toBe(4);
    expect((await sql!.unsafe(`SELECT user_id FROM "${ns}".tracks`)).map((r: any) => r.user_id)).toEqual(["ub"]);
    expect((await sql!.unsafe(`SELECT user_id FROM "${ns}".identifies`)).map((r: any) => r.user_id)).toEqual(["ub"]);
    expect((await sql!.unsafe(`SELECT id FROM "${ns}".users`)).map((r: any) => r.id)).toEqual(["ub"]);
    expect(await count(ns, "rudder_discards")).toBe(0);
  });

  test("a stale cached view (a table, then the schema, dropped behind the loader's back) is read again and the load succeeds", async () => {
    const ns = newNamespace();
    const wh = newWarehouse();
    await wh.load(ns, [batch("tracks", TRACK_COLUMNS, [trackRow("m1")])], "l1");
    await sql!.unsafe(`DROP TABLE "${ns}".tracks`);
    await wh.load(ns, [batch("tracks", TRACK_COLUMNS, [trackRow("m2")])], "l2");
    expect(await count(ns, "tracks")).toBe(1);
    await sql!.unsafe(`DROP SCHEMA "${ns}" CASCADE`);
    await wh.load(ns, [batch("tracks", TRACK_COLUMNS, [trackRow("m3")])], "l3");
    expect(await count(ns, "tracks")).toBe(1);
  });

  test("names longer than PostgreSQL's 63 bytes are refused before anything is written", async () => {
    const ns = newNamespace();
    const wh = newWarehouse();
    const err = await wh.load(ns, [batch("t".repeat(64), { id: "string" }, [{ id: "x" }])], "l1").catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe("BAD_REQUEST");
  });

  test("throughput: 20 event names × 30 properties (quick version of the benchmark)", async () => {
    const ns = newNamespace();
    const wh = newWarehouse();
    const events = 20_000;
    const propColumns: Record<string, WarehouseType> = {};
    for (let p = 0; p < 30; p++) propColumns[`prop_${p}`] = p % 3 === 0 ? "int" : p % 3 === 1 ? "string" : "float";
    const byEvent = new Map<string, Array<Record<string, unknown>>>();
    const tracks: Array<Record<string, unknown>> = [];
    for (let i = 0; i < events; i++) {
      const name = `event_${i % 20}`;
      const base = trackRow(`e${i}`, { event: name, event_text: name });
      tracks.push(base);
      const props: Record<string, unknown> = {};
      for (let p = 0; p < 30; p++) props[`prop_${p}`] = p % 3 === 0 ? i + p : p % 3 === 1 ? `value ${i} ${p}` : i / 7 + p;
      let rows = byEvent.get(name);
      if (!rows) byEvent.set(name, (rows = []));
      rows.push({ ...base, ...props });
    }
    const batches = [batch("tracks", TRACK_COLUMNS, tracks), ...[...byEvent].map(([name, rows]) => batch(name, { ...TRACK_COLUMNS, ...propColumns }, rows))];
    await wh.ensureSchema(ns);
    const t0 = performance.now();
    await wh.load(ns, batches, "bench");
    const seconds = (performance.now() - t0) / 1000;
    console.log(`warehouse-postgres: ${events} events (20 names × 30 properties) in ${seconds.toFixed(2)} s = ${Math.round(events / seconds)} events/s (first load: tables created)`);
    expect(await count(ns, "tracks")).toBe(events);
    expect(await count(ns, "event_7")).toBe(events / 20);
  }, 60_000);
});
