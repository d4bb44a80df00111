/**
 * Intake's group commit on PostgreSQL (cluster mode, issue 24): one statement per group,
 * duplicates told apart by the unique dedup key, across two logs on one database as across two
 * instances, and the suppression epoch guard; then intake itself (acceptCalls) on it, as two
 * instances would run it. Each test runs in its own schema, dropped after.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import type { SQL } from "bun";
import { closePostgres, openPostgres, type PgDb } from "../../db/pg";
import type { EventRow } from "../../src/gateway/store";
import { AppError } from "../../src/lib/errors";
import { partitionOfKey } from "../../src/cluster/hash";
import { PgEventLog, PgIntakeLog, dedupKey } from "../../src/storage/postgres/event-log";
import { Bus, EpochWatch } from "../../src/cluster/bus";
import type { SourceRuntime } from "../../src/control-plane/config-store";
import { type IntakeDeps, acceptCalls } from "../../src/gateway/intake";
import { silentLogger } from "../../src/lib/logger";
import { Metrics } from "../../src/lib/metrics";
import { LiveEvents } from "../../src/pipeline/live-events";
import { PG_URL as url, havePostgres, requirePostgres, testSql } from "../support/pg";

requirePostgres("pg-event-log.test.ts");

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

/** The partitions of these users' events, as an append tells them. */
const partitionsOf = (...users: string[]) => new Set(users.map((u) => partitionOfKey(u, 256)));

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
      { stored: 2, duplicates: [], partitions: partitionsOf("u1") },
      { stored: 1, duplicates: [], partitions: partitionsOf("u2") },
      { stored: 3, duplicates: [], partitions: partitionsOf("u3") },
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
    expect(await log.append([row("m1")])).toEqual({ stored: 1, duplicates: [], partitions: partitionsOf("u1") });
    const [x, y] = await Promise.all([log.append([row("m1"), row("m2"), row("m3")]), log.append([row("m3"), row("m4")])]);
    expect(x).toEqual({ stored: 2, duplicates: [0], partitions: partitionsOf("u1") });
    expect(y).toEqual({ stored: 1, duplicates: [0], partitions: partitionsOf("u1") });
    // The same messageId from another source is another event.
    expect(await log.append([row("m1", "u1", "src_2")])).toEqual({ stored: 1, duplicates: [], partitions: partitionsOf("u1") });
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
    expect(await log.append([row("e1")])).toEqual({ stored: 1, duplicates: [], partitions: partitionsOf("u1") });
    // A regulation made on another instance moves the epoch on.
    await db.$client.unsafe(`UPDATE cluster_epochs SET value = value + 1 WHERE name = 'suppression'`);
    expect(await log.append([row("e2")])).toEqual({ stored: 0, duplicates: [], epochStale: true });
    expect((await stored(db.$client)).map((r) => r.message_id)).toEqual(["e1"]);
    mine = current + 1;
    expect(await log.append([row("e2")])).toEqual({ stored: 1, duplicates: [], partitions: partitionsOf("u1") });
  });

  test("the guard takes the epoch the rows were checked at, not the one reached by the time the group is sent", async () => {
    const { db } = await freshSchema();
    const current = Number((await db.$client.unsafe(`SELECT value::bigint AS v FROM cluster_epochs WHERE name = 'suppression'`))[0].v);
    let mine = current;
    const log = new PgEventLog(db.$client, { partitions: 256, epoch: () => mine });
    // A regulation committed elsewhere; this instance checks its rows against its old rules…
    await db.$client.unsafe(`UPDATE cluster_epochs SET value = value + 1 WHERE name = 'suppression'`);
    const sent = log.append([row("checked-before")]);
    // …and its reload completes before the group goes out.
    mine = current + 1;
    expect(await sent).toEqual({ stored: 0, duplicates: [], epochStale: true });
    expect(await stored(db.$client)).toEqual([]);
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
    expect(await log.append([row("ok1")])).toEqual({ stored: 1, duplicates: [], partitions: partitionsOf("u1") });
  });

  test("intake on PostgreSQL: a messageId sent to two instances is stored once; a regulation committed elsewhere holds at once", async () => {
    const { db, schema } = await freshSchema();
    const source: SourceRuntime = { id: "src_1", workspaceId: "ws_1", name: "web", enabled: true, settings: {} };
    const stops: Array<() => Promise<void>> = [];
    // One instance: its own client, bus and epoch watch; its suppression rules are the
    // regulations table's active rows, reloaded when the 'suppression' epoch moves.
    const instance = async () => {
      const sql = await another(schema);
      const bus = new Bus({ sql });
      await bus.start();
      // No poll during the test: only the insert's guard can tell this instance of a new rule.
      const watch = new EpochWatch({ bus, pollMs: 3_600_000 });
      const blocked = new Set<string>();
      watch.onChange("suppression", async () => {
        blocked.clear();
        for (const r of await sql.unsafe(`SELECT user_id FROM regulations WHERE NOT canceled`)) blocked.add(r.user_id);
      });
      await watch.start();
      stops.push(async () => {
        await watch.stop();
        await bus.stop();
      });
      const pg = new PgEventLog(sql, { partitions: 256, epoch: () => watch.current("suppression") });
      const deps: IntakeDeps = {
        config: undefined as never,
        events: new PgIntakeLog(pg, () => watch.refresh()),
        suppressor: { isSuppressed: (_ws: string, _src: string, userId: string) => blocked.has(userId) },
        live: new LiveEvents(),
        metrics: new Metrics(),
        log: silentLogger,
      };
      return { deps, watch };
    };
    try {
      const a = await instance();
      const b = await instance();
      const meta = () => ({ receivedAt: Date.now(), ip: "127.0.0.1" });
      const track = (messageId: string, userId: string) => ({ type: "track" as const, call: { messageId, userId, event: "Viewed", properties: {} } });

      // The same messageId to both at once: one row; the other is told it was a duplicate.
      const seen: unknown[] = [];
      b.deps.live.subscribe(`source:${source.id}`, (e) => void seen.push(e));
      await Promise.all([acceptCalls(a.deps, source, [track("m1", "u1")], meta()), acceptCalls(b.deps, source, [track("m1", "u1")], meta())]);
      expect((await stored(db.$client)).map((r) => r.message_id)).toEqual(["m1"]);
      const dup = (d: IntakeDeps) => d.metrics.eventsDuplicate.get({ source: source.id });
      const ok = (d: IntakeDeps) => d.metrics.eventsAccepted.get({ source: source.id });
      expect([dup(a.deps) + dup(b.deps), ok(a.deps) + ok(b.deps)]).toEqual([1, 1]);
      // Live events show what was stored, not the duplicate.
      expect(seen).toHaveLength(ok(b.deps));

      // A regulation committed by another instance (its epoch bump, no notification heard).
      const before = b.watch.current("suppression");
      await db.$client.begin(async (tx) => {
        const [{ value }] = await tx.unsafe(`UPDATE cluster_epochs SET value = value + 1 WHERE name = 'suppression' RETURNING value::bigint AS value`);
        await tx.unsafe(
          `INSERT INTO regulations (id, workspace_id, regulation_type, user_id, attributes, canceled, created_at, updated_at, seq)
           VALUES ('reg_1', 'ws_1', 'suppress', 'u-bad', '{}'::jsonb, false, 1, 1, $1)`,
          [value],
        );
      });
      // B's next request: its group is refused by the guard, B reloads, and asks again.
      await acceptCalls(b.deps, source, [track("m2", "u-bad"), track("m3", "u2"), track("m4", "u-bad")], meta());
      expect(b.watch.current("suppression")).toBe(before + 1);
      expect((await stored(db.$client)).map((r) => r.message_id)).toEqual(["m1", "m3"]);
      expect(b.deps.metrics.eventsSuppressed.get({ source: source.id })).toBe(2);
      // A finds out the same way, with nothing suppressed stored meanwhile.
      await acceptCalls(a.deps, source, [track("m5", "u-bad")], meta());
      expect((await stored(db.$client)).map((r) => r.message_id)).toEqual(["m1", "m3"]);
      expect(a.deps.metrics.eventsSuppressed.get({ source: source.id })).toBe(1);
    } finally {
      for (const stop of stops) await stop();
    }
  });

  test("dedup keys: 64-bit, signed, per source", () => {
    const k = BigInt(dedupKey("src_1", "m1"));
    expect(k >= -(2n ** 63n) && k < 2n ** 63n).toBe(true);
    expect(dedupKey("src_1", "m1")).toBe(dedupKey("src_1", "m1"));
    expect(dedupKey("src_2", "m1")).not.toBe(dedupKey("src_1", "m1"));
  });
});
