/**
 * Rows staged as COPY text (src/warehouse/staged-rows.ts) must load exactly as the same rows
 * staged as JSON do: the same values in every table, the same discards, into tables Sluice made
 * and into tables of other types made by someone else. Each load goes into two schemas of the
 * real PostgreSQL (see test/support/pg.ts), one per format, which are then compared; both are dropped after.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { PostgresWarehouse } from "../../src/warehouse/postgres-loader";
import { eventRows } from "../../src/warehouse/schema";
import { COPY_ROW_PREFIX, batchesByNamespace, decodeStagedLine, stagedRowText } from "../../src/warehouse/staged-rows";
import { PG, havePostgres, requirePostgres, testSql } from "../support/pg";

requirePostgres("warehouse-staged-rows.test.ts");

const sql = havePostgres ? testSql() : null;
const namespaces: string[] = [];
const warehouses: PostgresWarehouse[] = [];

afterEach(async () => {
  for (const wh of warehouses.splice(0)) await wh.close().catch(() => {});
  for (const ns of namespaces.splice(0)) await sql!.unsafe(`DROP SCHEMA IF EXISTS "${ns}" CASCADE`);
});
afterAll(async () => {
  await sql?.close();
});

const UUID_TS = "2026-03-04T05:06:07.890Z";
// Every character COPY's text format escapes, a literal \N, NUL (which PostgreSQL cannot hold), and non-ASCII.
const AWKWARD = "tab\there new\nline cr\r back\\slash \\N literal a\u0000b émoji 🎉";

function track(id: string, event: string, properties: Record<string, unknown>, at = "2026-01-02T03:04:05.678Z") {
  return { type: "track", event, messageId: id, userId: `u-${id}`, anonymousId: "anon", receivedAt: at, sentAt: at, timestamp: at, originalTimestamp: at, context: { ip: "10.0.0.1", library: { name: "test", version: "1" } }, properties };
}

/** The events' staged rows in one format, as the store hands them to a load. */
function staged(events: Array<Record<string, unknown>>, format: "json" | "copy") {
  return events.flatMap((e) =>
    eventRows(e, { uuidTs: "2026-01-01T00:00:00.000Z" }).map((r) => ({
      namespace: "ns",
      tableName: r.table,
      columns: JSON.stringify(r.columns),
      row: format === "json" ? JSON.stringify(r.row) : stagedRowText(r.table, r.columns, r.row),
    })),
  );
}

async function tableRows(ns: string): Promise<Record<string, unknown[]>> {
  const tables: Array<{ table_name: string }> = await sql!.unsafe(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, [ns]);
  const out: Record<string, unknown[]> = {};
  for (const { table_name } of tables) {
    const rows: Array<Record<string, unknown>> = await sql!.unsafe(`SELECT * FROM "${ns}"."${table_name}"`);
    // rudder_discards.uuid_ts is each load's own clock; rows are compared without order.
    out[table_name] = rows.map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).filter(([k]) => !(table_name === "rudder_discards" && k === "uuid_ts")).sort()))).sort();
  }
  return out;
}

describe("the staged format (no database)", () => {
  test("every kind of value decodes to what the JSON row holds; uuid_ts becomes the load's time", () => {
    const [row] = eventRows(track("m1", "Odd", { s: AWKWARD, n: 42, big: 2 ** 60, f: -0.25, b: false, d: "2026-01-02T03:04:05Z", arr: [1, "a\tb"], none: null, lit: "\\N" }), { uuidTs: "x" });
    const text = stagedRowText("tracks", row!.columns, row!.row);
    expect(text.startsWith(COPY_ROW_PREFIX)).toBe(true);
    const [[, [batch]]] = [...batchesByNamespace([{ namespace: "ns", tableName: "tracks", columns: JSON.stringify(row!.columns), row: text }], UUID_TS)];
    const decoded = decodeStagedLine(batch!.encoded![0]!.lines[0]!, batch!.encoded![0]!.layout, UUID_TS);
    // COPY cannot carry NUL: it is dropped on both paths (copyField), so the decoded text lacks it.
    const expected = { ...JSON.parse(JSON.stringify(row!.row)), uuid_ts: UUID_TS };
    for (const [k, v] of Object.entries(expected)) if (typeof v === "string") expected[k] = v.replaceAll("\u0000", "");
    expect(decoded).toEqual(expected);
    expect(batch!.rows).toEqual([]);
  });

  test("users, merge rules and discards stay JSON, and so does a row whose value does not fit its own type", () => {
    expect(stagedRowText("users", { id: "string" }, { id: "u1" })).toBe('{"id":"u1"}');
    expect(stagedRowText("rudder_identity_merge_rules", { a: "string" }, { a: "x" })).toBe('{"a":"x"}');
    expect(stagedRowText("tracks", { id: "string", n: "int" }, { id: "m", n: "12" })).toBe('{"id":"m","n":"12"}');
    expect(stagedRowText("tracks", { id: "string", n: "int", uuid_ts: "datetime" }, { id: "m", n: 12, uuid_ts: "t" })).toBe(`${COPY_ROW_PREFIX}m\t12`);
  });

  test("JSON rows staged before the format and COPY rows load side by side in one batch", () => {
    const [r] = eventRows(track("m1", "Odd", { a: 1 }), { uuidTs: "x" });
    const input = [
      { namespace: "ns", tableName: "tracks", columns: JSON.stringify(r!.columns), row: JSON.stringify(r!.row) },
      { namespace: "ns", tableName: "tracks", columns: JSON.stringify(r!.columns), row: stagedRowText("tracks", r!.columns, r!.row) },
    ];
    const [batch] = batchesByNamespace(input, UUID_TS).get("ns")!;
    expect(batch!.rows).toEqual([{ ...r!.row, uuid_ts: UUID_TS }]);
    expect(batch!.encoded!.map((g) => g.lines.length)).toEqual([1]);
  });
});

describe.skipIf(!havePostgres)("COPY-staged rows load as JSON-staged rows do (PostgreSQL)", () => {
  test("tables made by Sluice and by someone else with other types, discards, a retried id, pages without a key, users", async () => {
    const suffix = crypto.randomUUID().replaceAll("-", "").slice(0, 10);
    const schemas = { json: `sluice_sr_${suffix}_j`, copy: `sluice_sr_${suffix}_c` } as const;
    namespaces.push(schemas.json, schemas.copy);
    for (const ns of Object.values(schemas)) {
      await sql!.unsafe(`CREATE SCHEMA "${ns}"`);
      // Made by someone else: a keyed event table whose columns have other types than the events'
      // values, and a pages table without a key (as RudderStack may have made them).
      await sql!.unsafe(
        `CREATE TABLE "${ns}".odd (id text PRIMARY KEY, n boolean, f bigint, b text, d text, arr jsonb, s text, big double precision, whole bigint)`,
      );
      await sql!.unsafe(`CREATE TABLE "${ns}".pages (id text, name text, received_at timestamptz, uuid_ts timestamptz)`);
    }
    const first = [
      track("m1", "Odd", { s: AWKWARD, n: 42, f: 1.5, b: true, d: "2026-01-02T03:04:05.678Z", arr: [1, "a\tb"], big: 2 ** 60, whole: 7 }),
      track("m2", "Odd", { n: "not a number", f: 2, whole: 2.5, fresh: "new column" }),
      track("m3", "Fresh Event", { s: AWKWARD, x: 1, y: 1.25, ok: true, _when: "2026-02-30T00:00:00.000Z" }),
      { type: "page", name: "Home", messageId: "p1", userId: "u1", receivedAt: "2026-01-02T03:04:05.678Z", properties: { path: "/" } },
      { type: "identify", messageId: "i1", userId: "u1", receivedAt: "2026-01-02T03:04:05.678Z", traits: { plan: "pro", seats: 3, s: AWKWARD } },
    ];
    // The second load repeats m1 (already loaded) and p1 (into the table without a key), and
    // has an id twice within itself: the latest received wins.
    const second = [
      track("m1", "Odd", { s: "again" }, "2026-01-03T00:00:00.000Z"),
      track("m4", "Odd", { s: "older", n: true }, "2026-01-03T00:00:00.000Z"),
      track("m4", "Odd", { s: "newer", n: false }, "2026-01-04T00:00:00.000Z"),
      { type: "page", name: "Home again", messageId: "p1", userId: "u1", receivedAt: "2026-01-05T00:00:00.000Z", properties: { path: "/" } },
      { type: "identify", messageId: "i2", userId: "u1", receivedAt: "2026-01-05T00:00:00.000Z", traits: { seats: 4 } },
    ];
    const results: Record<string, unknown[]> = { json: [], copy: [] };
    for (const format of ["json", "copy"] as const) {
      const wh = new PostgresWarehouse(PG);
      warehouses.push(wh);
      for (const events of [first, second]) {
        const [[, batches]] = [...batchesByNamespace(staged(events, format), UUID_TS)];
        if (format === "copy") expect(batches!.some((b) => (b.encoded?.length ?? 0) > 0)).toBe(true);
        results[format]!.push(await wh.load(schemas[format], batches!, `t-${format}`));
      }
    }
    expect(results.copy).toEqual(results.json);
    const json = await tableRows(schemas.json);
    expect(await tableRows(schemas.copy)).toEqual(json);

    // And what both hold is what the events said (Bun.sql reads bigint as text).
    const odd: Array<Record<string, unknown>> = await sql!.unsafe(`SELECT id, s, n, f, b, whole, fresh FROM "${schemas.copy}".odd ORDER BY id`);
    expect(odd).toEqual([
      { id: "m1", s: AWKWARD.replaceAll("\u0000", ""), n: null, f: "1", b: "true", whole: "7", fresh: null },
      { id: "m2", s: null, n: null, f: "2", b: null, whole: "2", fresh: "new column" },
      { id: "m4", s: "newer", n: false, f: null, b: null, whole: null, fresh: null },
    ]);
    const discards: Array<{ row_id: string; column_name: string }> = await sql!.unsafe(
      `SELECT row_id, column_name FROM "${schemas.copy}".rudder_discards ORDER BY row_id, column_name`,
    );
    expect(discards).toEqual([
      { row_id: "m1", column_name: "n" },
      { row_id: "m2", column_name: "n" },
    ]);
    // A date that is not one (February 30th) was inferred as text, not discarded (`when` is reserved: `_when`).
    const [fresh] = await sql!.unsafe(`SELECT s, x, y, ok, _when, uuid_ts FROM "${schemas.copy}".fresh_event`);
    expect(fresh).toEqual({ s: AWKWARD.replaceAll("\u0000", ""), x: "1", y: "1.25", ok: true, _when: "2026-02-30T00:00:00.000Z", uuid_ts: new Date(UUID_TS) });
    expect(await sql!.unsafe(`SELECT count(*)::int AS n FROM "${schemas.copy}".pages`)).toEqual([{ n: 1 }]);
  });
});
