/**
 * Intake's group commit on PostgreSQL (cluster mode, issue 24): one statement per group,
 * duplicates told apart by the unique dedup key, across two logs on one database as across two
 * instances, and the suppression epoch guard. Each test runs in its own schema, dropped after.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import type { SQL } from "bun";
import { closePostgres, openPostgres, type PgDb } from "../db/pg";
import type { EventRow } from "../src/gateway/group-commit";
import { AppError } from "../src/lib/errors";
import { partitionOfKey } from "../src/cluster/hash";
import { PgEventLog, dedupKey } from "../src/storage/postgres/event-log";
import { PG, havePostgres, requirePostgres, testSql } from "./pg";

requirePostgres("pg-event-log.test.ts");

const url = `postgres://${encodeURIComponent(PG.user)}${PG.password ? ":" + encodeURIComponent(PG.password) : ""}@${PG.host}:${PG.port}/${PG.database}`;
const admin = havePostgres ? testSql() : null;
const open: PgDb[] = [];
const schemas: string[] = [];

async function freshSchema(): Promise<{ db: PgDb; schema: string }> {
  const schema = `t_evlog_${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
  schemas.push(schema);
  const db = await openPostgres(url, { searchPath: schema, max: 4 });
  open.push(db);
  return { db, schema };
}

async function another(schema: string): Promise<SQL> {
  const db = await openPostgres(url, { searchPath: schema, max: 4 });
  open.push(db);
  return db.$client;
}

const row = (messageId: string, userKey = "u1", sourceId = "src_1"): EventRow => ({
  workspaceId: "ws_1",
  sourceId,
  messageId,
  userKey,
  type: "track",
  payload: JSON.stringify({ messageId, userId: userKey }),
  receivedAt: 1_760_000_000_000,
});

async function stored(sql: SQL): Promise<Array<{ id: number; message_id: string; partition: number; source_id: string }>> {
  const rows = await sql.unsafe(`SELECT id::int AS id, message_id, partition, source_id FROM events ORDER BY id`);
  return [...rows];
}

describe.if(havePostgres)("PgEventLog", () => {
  afterEach(async () => {
    for (const db of open.splice(0)) await closePostgres(db);
    for (const s of schemas.splice(0)) await admin!.unsafe(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  });
  afterAll(async () => {
    await admin?.close();
  });

  test("the calls of one turn are one statement; ids follow the calls' order; each call learns what it stored", async () => {
    const { db } = await freshSchema();
    const log = new PgEventLog(db.$client, { partitions: 256 });
    const results = await Promise.all([log.append([row("a1"), row("a2")]), log.append([row("b1", "u2")]), log.append([row("c1", "u3"), row("c2", "u3"), row("c3", "u3")])]);
    expect(results).toEqual([
      { stored: 2, duplicates: [] },
      { stored: 1, duplicates: [] },
      { stored: 3, duplicates: [] },
    ]);
    const rows = await stored(db.$client);
    expect(rows.map((r) => r.message_id)).toEqual(["a1", "a2", "b1", "c1", "c2", "c3"]);
    expect(rows.map((r) => r.partition)).toEqual([...["u1", "u1", "u2", "u3", "u3", "u3"].map((u) => partitionOfKey(u, 256))]);
    // One transaction for the three calls (events.tx is the inserting transaction), not one per call.
    expect((await db.$client.unsafe(`SELECT count(DISTINCT tx)::int AS n FROM events`))[0].n).toBe(1);
  });

  test("duplicates: of a stored event, and within one group (the first copy is stored, in call order)", async () => {
    const { db } = await freshSchema();
    const log = new PgEventLog(db.$client, { partitions: 256 });
    expect(await log.append([row("m1")])).toEqual({ stored: 1, duplicates: [] });
    const [x, y] = await Promise.all([log.append([row("m1"), row("m2"), row("m3")]), log.append([row("m3"), row("m4")])]);
    expect(x).toEqual({ stored: 2, duplicates: [0] });
    expect(y).toEqual({ stored: 1, duplicates: [0] });
    // The same messageId from another source is another event.
    expect(await log.append([row("m1", "u1", "src_2")])).toEqual({ stored: 1, duplicates: [] });
    expect((await stored(db.$client)).map((r) => `${r.source_id}/${r.message_id}`)).toEqual(["src_1/m1", "src_1/m2", "src_1/m3", "src_1/m4", "src_2/m1"]);
  });

  test("two logs on one database (two instances): each messageId is stored once, whichever wins", async () => {
    const { db, schema } = await freshSchema();
    const a = new PgEventLog(db.$client, { partitions: 256 });
    const b = new PgEventLog(await another(schema), { partitions: 256 });
    const ids = Array.from({ length: 300 }, (_, i) => `dup-${i}`);
    // Both get every id, in opposite orders and in several calls, at the same time.
    const calls: Array<Promise<{ stored: number; duplicates: number[] }>> = [];
    for (let i = 0; i < ids.length; i += 50) {
      calls.push(a.append(ids.slice(i, i + 50).map((m) => row(m))));
      calls.push(b.append([...ids].reverse().slice(i, i + 50).map((m) => row(m))));
    }
    const results = await Promise.all(calls);
    expect(results.reduce((n, r) => n + r.stored, 0)).toBe(ids.length);
    expect(results.reduce((n, r) => n + r.duplicates.length, 0)).toBe(ids.length);
    const rows = await stored(db.$client);
    expect(rows).toHaveLength(ids.length);
    expect(new Set(rows.map((r) => r.message_id)).size).toBe(ids.length);
  });

  test("the suppression epoch guard: a stale epoch stores nothing and says so; the current one stores", async () => {
    const { db } = await freshSchema();
    const current = Number((await db.$client.unsafe(`SELECT value::bigint AS v FROM cluster_epochs WHERE name = 'suppression'`))[0].v);
    let mine = current;
    const log = new PgEventLog(db.$client, { partitions: 256, epoch: () => mine });
    expect(await log.append([row("e1")])).toEqual({ stored: 1, duplicates: [] });
    // A regulation made on another instance moves the epoch on.
    await db.$client.unsafe(`UPDATE cluster_epochs SET value = value + 1 WHERE name = 'suppression'`);
    expect(await log.append([row("e2")])).toEqual({ stored: 0, duplicates: [], epochStale: true });
    expect((await stored(db.$client)).map((r) => r.message_id)).toEqual(["e1"]);
    mine = current + 1;
    expect(await log.append([row("e2")])).toEqual({ stored: 1, duplicates: [] });
  });

  test("a failed group fails every call in it with 503-mapped UNAVAILABLE, and nothing of it is stored", async () => {
    const { db } = await freshSchema();
    const log = new PgEventLog(db.$client, { partitions: 256 });
    // A payload PostgreSQL text cannot hold (NUL) fails the whole statement.
    const bad = { ...row("bad"), payload: "x\u0000y" };
    const results = await Promise.allSettled([log.append([row("ok1")]), log.append([bad])]);
    for (const r of results) {
      expect(r.status).toBe("rejected");
      const err = (r as PromiseRejectedResult).reason;
      expect(err).toBeInstanceOf(AppError);
      expect(err.code).toBe("UNAVAILABLE");
    }
    expect(await stored(db.$client)).toEqual([]);
    await log.settled();
    expect(await log.append([row("ok1")])).toEqual({ stored: 1, duplicates: [] });
  });

  test("dedup keys: 64-bit, signed, per source", () => {
    const k = BigInt(dedupKey("src_1", "m1"));
    expect(k >= -(2n ** 63n) && k < 2n ** 63n).toBe(true);
    expect(dedupKey("src_1", "m1")).toBe(dedupKey("src_1", "m1"));
    expect(dedupKey("src_2", "m1")).not.toBe(dedupKey("src_1", "m1"));
  });
});
