/**
 * Cluster mode's runtime (issue 24): two instances on one PostgreSQL schema, each with its own
 * pool, bus, epoch watch and caches, as two processes would have them. A first start of both at
 * once, a source made on one and used on the other, a regulation made on one in force on the
 * other before the API answered, and its cancel lifted everywhere. Each test uses its own schema.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { ensureOwner } from "../../src/control-plane/bootstrap";
import type { SourceRuntime } from "../../src/control-plane/config-store";
import { createSource } from "../../src/control-plane/sources";
import { openClusterRuntime, type ClusterRuntime } from "../../src/backend/postgres-runtime";
import { type IntakeDeps, acceptCalls } from "../../src/gateway/intake";
import type { ScopedContext } from "../../src/control-plane/context";
import { silentLogger } from "../../src/lib/logger";
import { Metrics } from "../../src/lib/metrics";
import { LiveEvents } from "../../src/pipeline/live-events";
import { cancelRegulation, createRegulations, type RegulationDeps } from "../../src/regulations/regulations";
import { waitFor } from "../support/helpers";
import { PG_URL as url, havePostgres, requirePostgres, testSql } from "../support/pg";

requirePostgres("cluster-runtime.test.ts");

const admin = havePostgres ? testSql() : null;
const runtimes: ClusterRuntime[] = [];
const schemas: string[] = [];

afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.close();
  for (const s of schemas.splice(0)) await admin!.unsafe(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
});
afterAll(async () => {
  await admin?.close();
});

/** Two instances on one fresh schema, started at once (both migrate under the lock). */
async function twoInstances(pollMs: number): Promise<[ClusterRuntime, ClusterRuntime]> {
  const schema = `t_crun_${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
  schemas.push(schema);
  const opened = await Promise.all(["one", "two"].map((id) => openClusterRuntime({ url, schema, instanceId: id, log: silentLogger, poolSize: 3, pollMs })));
  runtimes.push(...opened);
  return opened as [ClusterRuntime, ClusterRuntime];
}

function scoped(rt: ClusterRuntime, workspaceId: string): ScopedContext {
  return { db: undefined as never, log: silentLogger, config: rt.config, controlPlane: rt.controlPlane, stats: rt.stats, metrics: new Metrics(), now: Date.now, sessionHours: 1, workspaceId };
}

function intakeOf(rt: ClusterRuntime): IntakeDeps {
  return { config: rt.config, events: rt.events, suppressor: rt.suppression, live: new LiveEvents(), metrics: new Metrics(), log: silentLogger };
}

/** Regulations without destinations need no deletion runner. */
const regulationDeps = (rt: ClusterRuntime): RegulationDeps => ({ store: rt.regulations, suppression: rt.suppression, deletions: undefined as never });

describe.if(havePostgres)("cluster runtime: two instances on one PostgreSQL", () => {
  test("first start on both at once: one workspace; a source made on one is served by the other (told by NOTIFY, not the poll)", async () => {
    // No poll: instance two can learn of the source only by NOTIFY.
    const [one, two] = await twoInstances(3_600_000);
    const now = Date.now();
    const [a, b] = await Promise.all([ensureOwner(one.controlPlane, { email: "a@example.com", now }), ensureOwner(two.controlPlane, { email: "b@example.com", now })]);
    expect(a.workspaceId).toBe(b.workspaceId);
    expect([a.created, b.created].filter(Boolean)).toHaveLength(1);

    const src = await createSource(scoped(one, a.workspaceId), { name: "web" });
    expect(one.config.sourceByWriteKey(src.writeKey)?.id).toBe(src.id);
    const source = await waitFor(() => two.config.sourceByWriteKey(src.writeKey), { timeoutMs: 3000, what: "the write key on instance two" });

    // Instance two takes its events at once.
    const deps = intakeOf(two);
    await acceptCalls(deps, source, [{ type: "track", call: { messageId: "m1", userId: "u1", event: "Viewed", properties: {} } }], { receivedAt: Date.now(), ip: "127.0.0.1" });
    expect(deps.metrics.eventsAccepted.get({ source: src.id })).toBe(1);
    const [{ n }] = await one.db.$client`SELECT count(*)::int AS n FROM events WHERE source_id = ${src.id}`;
    expect(n).toBe(1);
  });

  test("a regulation made on one instance holds on the other before the API answers; its cancel lifts it everywhere", async () => {
    // A poll too slow to matter: the other instance learns by NOTIFY, or by intake's guard.
    const [one, two] = await twoInstances(3_600_000);
    const owner = await ensureOwner(one.controlPlane, { email: "a@example.com", now: Date.now() });
    const src = await createSource(scoped(one, owner.workspaceId), { name: "web" });
    const source: SourceRuntime = await waitFor(() => two.config.sourceByWriteKey(src.writeKey), { timeoutMs: 3000, what: "the source on two" });
    const track = (messageId: string, userId: string) => ({ type: "track" as const, call: { messageId, userId, event: "Viewed", properties: {} } });

    await createRegulations(scoped(one, owner.workspaceId), regulationDeps(one), { regulationType: "suppress", users: [{ userId: "u-bad" }] });
    // Instance one: in force as its API answers.
    expect(one.suppression.isSuppressed(owner.workspaceId, src.id, "u-bad")).toBe(true);
    // Instance two, at once, whether or not it has heard: its insert is guarded by the epoch.
    const deps = intakeOf(two);
    await acceptCalls(deps, source, [track("m1", "u-bad"), track("m2", "u-ok")], { receivedAt: Date.now(), ip: "127.0.0.1" });
    const stored = async () => (await one.db.$client`SELECT message_id FROM events ORDER BY id`).map((r: { message_id: string }) => r.message_id);
    expect(await stored()).toEqual(["m2"]);
    expect(deps.metrics.eventsSuppressed.get({ source: src.id })).toBe(1);
    expect(two.suppression.isSuppressed(owner.workspaceId, src.id, "u-bad")).toBe(true);

    // Cancelled on two: lifted on two as it answers, on one by the notification.
    const [reg] = await one.db.$client`SELECT id FROM regulations`;
    await cancelRegulation(scoped(two, owner.workspaceId), regulationDeps(two), reg.id);
    expect(two.suppression.isSuppressed(owner.workspaceId, src.id, "u-bad")).toBe(false);
    await waitFor(() => !one.suppression.isSuppressed(owner.workspaceId, src.id, "u-bad") || undefined, { timeoutMs: 3000, what: "the cancel on instance one" });
    await acceptCalls(intakeOf(one), source, [track("m3", "u-bad")], { receivedAt: Date.now(), ip: "127.0.0.1" });
    expect(await stored()).toEqual(["m2", "m3"]);
  });
});
