/**
 * POSTGRES destinations end to end (issue 22): events sent to Sluice are staged, loaded by
 * POST /v2/destinations/{id}/sync into a real PostgreSQL (test/support/pg.ts), and followed through
 * GET /v2/destinations/{id}/syncs. Each test loads into its own schema and drops it after.
 */
import { Database } from "bun:sqlite";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { defaultNamespace } from "../../src/warehouse/schema";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, api, basic, cleanup, createSource, sendEvent, startSluice } from "../support/helpers";
import { PG, havePostgres, requirePostgres, testSql, waitFor } from "../support/pg";

requirePostgres("warehouse-sync.test.ts");

const sql = havePostgres ? testSql() : null;
let s: TestServer;
const namespaces: string[] = [];

function newNamespace(): string {
  // Letters only: the configured namespace goes through RudderStack's naming, which splits digits off.
  const letters = Array.from(crypto.getRandomValues(new Uint8Array(10)), (b) => String.fromCharCode(97 + (b % 26))).join("");
  const ns = defaultNamespace(`sluice_sync_${letters}`);
  namespaces.push(ns);
  return ns;
}

async function postgresDestination(namespace: string, over: Record<string, unknown> = {}) {
  const source = await createSource(s.url);
  const res = await api(s.url, "POST", "/v2/destinations", {
    name: `wh-${crypto.randomUUID().slice(0, 8)}`,
    type: "POSTGRES",
    config: { host: PG.host, port: String(PG.port), database: PG.database, user: PG.user, password: PG.password, namespace, syncFrequency: "30", ...over },
    sourceIds: [source.id],
  });
  expect(res.status).toBe(201);
  return { source, destination: res.json as { id: string } };
}

async function waitStaged(destinationId: string, count: number) {
  await waitFor(
    async () => {
      const stats = await api(s.url, "GET", `/v2/destinations/${destinationId}/stats`);
      return JSON.stringify(stats.json).includes(`"succeeded":${count}`) && stats.json;
    },
    { what: `${count} deliveries staged` },
  );
}

async function syncAndWait(destinationId: string, status: "succeeded" | "failed" = "succeeded") {
  const started = await api(s.url, "POST", `/v2/destinations/${destinationId}/sync`);
  expect(started.status).toBe(202);
  const id = started.json.id as string;
  expect(id).toMatch(/^whl_/);
  const load = await waitFor(
    async () => {
      const list = await api(s.url, "GET", `/v2/destinations/${destinationId}/syncs`);
      const l = (list.json.syncs as any[]).find((x) => x.id === id);
      return l && (l.status === "succeeded" || l.status === "failed") ? l : null;
    },
    { what: `load ${id} to finish`, timeoutMs: 20_000 },
  );
  expect(load.status).toBe(status);
  return load;
}

const track = (userId: string, messageId: string, properties: Record<string, unknown>) => ({
  userId,
  messageId,
  event: "Product Viewed",
  properties,
  context: { library: { name: "analytics-node" } },
});

describe.if(havePostgres)("POSTGRES destination: staging, sync and syncs", () => {
  beforeAll(async () => {
    s = await startSluice();
  });
  afterAll(async () => {
    await s.stop();
    cleanup(s.dataDir);
    await sql?.close();
  });
  afterEach(async () => {
    for (const ns of namespaces.splice(0)) await sql!.unsafe(`DROP SCHEMA IF EXISTS "${ns}" CASCADE`);
  });

  test("track, identify and page events land in tracks, product_viewed, identifies, users and pages; a second sync adds a new property's column", async () => {
    const ns = newNamespace();
    const { source, destination } = await postgresDestination(ns);
    await sendEvent(s.url, source.writeKey, "track", track("u1", "m-track-1", { sku: "A-1", price: 9.5, qty: 2 }));
    await sendEvent(s.url, source.writeKey, "identify", { userId: "u1", messageId: "m-id-1", traits: { email: "u1@example.com", plan: "pro" } });
    await sendEvent(s.url, source.writeKey, "page", { anonymousId: "anon-1", messageId: "m-page-1", name: "Home", properties: { path: "/" } });
    await waitStaged(destination.id, 3);

    const first = await syncAndWait(destination.id);
    expect(first.rows).toMatchObject({ tracks: 1, product_viewed: 1, identifies: 1, users: 1, pages: 1 });
    expect(first.startedAt).toBeString();
    expect(first.finishedAt).toBeString();
    expect(first.error).toBeNull();

    const viewed = await sql!.unsafe(`SELECT id, user_id, event, event_text, sku, price, qty, context_library_name, uuid_ts FROM "${ns}".product_viewed`);
    expect(viewed).toHaveLength(1);
    expect(viewed[0]).toMatchObject({ id: "m-track-1", user_id: "u1", event: "product_viewed", event_text: "Product Viewed", sku: "A-1", price: "9.5", context_library_name: "analytics-node" });
    expect(Number(viewed[0].qty)).toBe(2);
    expect(viewed[0].uuid_ts).toBeInstanceOf(Date);
    expect(await sql!.unsafe(`SELECT id, event FROM "${ns}".tracks`)).toEqual([{ id: "m-track-1", event: "product_viewed" }]);
    expect(await sql!.unsafe(`SELECT id, user_id, email FROM "${ns}".identifies`)).toEqual([{ id: "m-id-1", user_id: "u1", email: "u1@example.com" }]);
    expect(await sql!.unsafe(`SELECT id, email, plan FROM "${ns}".users`)).toEqual([{ id: "u1", email: "u1@example.com", plan: "pro" }]);
    expect(await sql!.unsafe(`SELECT id, anonymous_id, name, path FROM "${ns}".pages`)).toEqual([{ id: "m-page-1", anonymous_id: "anon-1", name: "Home", path: "/" }]);

    // New events: a new property becomes a column; nothing already loaded is loaded again.
    await sendEvent(s.url, source.writeKey, "track", track("u2", "m-track-2", { sku: "B-2", color: "red" }));
    await waitStaged(destination.id, 4);
    const second = await syncAndWait(destination.id);
    expect(second.rows).toEqual({ tracks: 1, product_viewed: 1 });
    const rows = await sql!.unsafe(`SELECT id, sku, color FROM "${ns}".product_viewed ORDER BY id`);
    expect(rows).toEqual([
      { id: "m-track-1", sku: "A-1", color: null },
      { id: "m-track-2", sku: "B-2", color: "red" },
    ]);

    const list = await api(s.url, "GET", `/v2/destinations/${destination.id}/syncs`);
    expect(list.json.syncs.map((l: any) => l.id)).toEqual([second.id, first.id]);
  });

  test("a source with a tracking plan: tracks load the plan's id and version, and context_violation_errors for a kept event with violations (a valid event's [] is blank, no value, as in RudderStack's warehouse)", async () => {
    const ns = newNamespace();
    const { source, destination } = await postgresDestination(ns);
    const planId = `tp_wh_${crypto.randomUUID().slice(0, 8)}`;
    const plan = {
      id: planId,
      name: "Warehouse",
      version: 1,
      events: [{ id: "ev_viewed", name: "Product Viewed", eventType: "track", description: "", rules: { type: "object", properties: { properties: { type: "object", properties: { sku: { type: "string" } } } } } }],
    };
    expect((await api(s.url, "POST", "/v2/tracking-plans", plan)).status).toBe(201);
    const settings = { trackingPlan: { id: planId, version: 1 }, config: { track: { anyOtherViolation: "forward" } } };
    expect((await api(s.url, "PUT", `/v2/sources/${source.id}/tracking-plan`, settings)).status).toBe(200);
    await sendEvent(s.url, source.writeKey, "track", track("u1", "m-valid", { sku: "A-1" }));
    await sendEvent(s.url, source.writeKey, "track", track("u1", "m-wrong", { sku: 42 }));
    await waitStaged(destination.id, 2);
    await syncAndWait(destination.id);
    const rows = await sql!.unsafe(`SELECT id, context_violation_errors, context_tracking_plan_id, context_tracking_plan_version FROM "${ns}".tracks ORDER BY id`);
    expect(rows.map((r: any) => r.id)).toEqual(["m-valid", "m-wrong"]);
    expect(rows[0].context_violation_errors).toBeNull();
    expect(JSON.parse(rows[1].context_violation_errors)).toEqual([expect.objectContaining({ type: "Datatype-Mismatch" })]);
    expect(rows.map((r: any) => [r.context_tracking_plan_id, Number(r.context_tracking_plan_version)])).toEqual([[planId, 1], [planId, 1]]);
  });

  test("an unreachable database → failed syncs naming the error, rows stay staged; after a PATCH fixing the port the next sync loads them once", async () => {
    const ns = newNamespace();
    const { source, destination } = await postgresDestination(ns, { port: "1" });
    for (let i = 0; i < 5; i++) await sendEvent(s.url, source.writeKey, "track", track(`u${i}`, `m-down-${i}`, { n: i }));
    await waitStaged(destination.id, 5);

    const failed = await syncAndWait(destination.id, "failed");
    expect(failed.error).toContain("unreachable");
    expect(failed.rows).toEqual({});
    // Nothing was loaded: every row is waiting, with no mark of its own and no loaded range.
    const marks = s.sluice.db.$client
      .query("SELECT count(*) FILTER (WHERE load_id IS NULL) AS waiting, (SELECT count(*) FROM warehouse_loaded_ranges WHERE destination_id = ?1) AS ranges FROM warehouse_staged WHERE destination_id = ?1")
      .get(destination.id);
    expect(marks).toEqual({ waiting: 10, ranges: 0 });
    // The namespace was never created: nothing reached the database.
    expect(await sql!.unsafe(`SELECT 1 FROM information_schema.schemata WHERE schema_name = $1`, [ns])).toHaveLength(0);

    const get = await api(s.url, "GET", `/v2/destinations/${destination.id}`);
    const patched = await api(s.url, "PATCH", `/v2/destinations/${destination.id}`, { config: { ...get.json.config, port: String(PG.port) } });
    expect(patched.status).toBe(200);

    const ok = await syncAndWait(destination.id);
    expect(ok.rows).toEqual({ tracks: 5, product_viewed: 5 });
    const counts = await sql!.unsafe(`SELECT count(*)::int AS n, count(DISTINCT id)::int AS d FROM "${ns}".product_viewed`);
    expect(counts[0]).toEqual({ n: 5, d: 5 });
    // Once more: nothing is left to load, nothing doubles.
    const again = await syncAndWait(destination.id);
    expect(again.rows).toEqual({});
    expect((await sql!.unsafe(`SELECT count(*)::int AS n FROM "${ns}".tracks`))[0].n).toBe(5);
  });

  test("a load whose outcome SQLite cannot record is closed as failed, not left running; its retry loads nothing twice", async () => {
    const ns = newNamespace();
    const { source, destination } = await postgresDestination(ns);
    await sendEvent(s.url, source.writeKey, "track", track("u1", "m-unrec-1", { sku: "A" }));
    await waitStaged(destination.id, 1);
    // A real SQLite failure at the moment the load is recorded as succeeded (as a full disk would give).
    const db = new Database(`${s.dataDir}/sluice.db`);
    db.exec(`CREATE TRIGGER sluice_test_refuse BEFORE UPDATE OF status ON warehouse_loads WHEN NEW.status = 'succeeded'
             BEGIN SELECT RAISE(ABORT, 'disk I/O error (test)'); END`);
    try {
      const first = await syncAndWait(destination.id, "failed");
      expect(first.error).toContain("could not be recorded");
      expect(first.error).toContain("disk I/O error (test)");
      expect((await sql!.unsafe(`SELECT count(*)::int AS n FROM "${ns}".product_viewed`))[0].n).toBe(1);
    } finally {
      db.exec(`DROP TRIGGER sluice_test_refuse`);
      db.close();
    }
    // The retry queued with backoff is made due by the next request, and loads nothing twice:
    // the rows were marked loaded before the outcome failed to record, so none waits.
    const second = await syncAndWait(destination.id);
    expect(second.trigger).toBe("retry");
    expect(second.rows).toEqual({});
    expect((await sql!.unsafe(`SELECT count(*)::int AS n FROM "${ns}".product_viewed`))[0].n).toBe(1);
    const list = await api(s.url, "GET", `/v2/destinations/${destination.id}/syncs`);
    expect(list.json.syncs.map((l: any) => l.status)).toEqual(["succeeded", "failed"]);
  });

  test("suppress_with_delete naming a POSTGRES destination removes the user's rows from every table", async () => {
    const ns = newNamespace();
    const { source, destination } = await postgresDestination(ns);
    await sendEvent(s.url, source.writeKey, "track", track("gone", "m-gone-1", { sku: "X" }));
    await sendEvent(s.url, source.writeKey, "identify", { userId: "gone", messageId: "m-gone-2", traits: { email: "gone@example.com" } });
    await sendEvent(s.url, source.writeKey, "track", track("stays", "m-stays-1", { sku: "Y" }));
    await waitStaged(destination.id, 3);
    await syncAndWait(destination.id);
    expect((await sql!.unsafe(`SELECT count(*)::int AS n FROM "${ns}".users`))[0].n).toBe(1);

    const reg = await api(s.url, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [destination.id], users: [{ userId: "gone" }] });
    expect(reg.status).toBe(201);
    await waitFor(
      async () => {
        const r = await api(s.url, "GET", "/v2/regulations");
        const mine = (r.json.data as any[]).find((x) => x.attributes.userId === "gone" && x.destinationIds?.includes(destination.id));
        const state = mine?.deletion?.[0]?.status;
        if (state === "aborted") throw new Error(`deletion aborted: ${JSON.stringify(r.json)}`);
        return state === "complete";
      },
      { what: "deletion to complete", timeoutMs: 20_000 },
    );
    for (const table of ["tracks", "product_viewed", "identifies"]) {
      expect(await sql!.unsafe(`SELECT user_id FROM "${ns}"."${table}" ORDER BY user_id`)).toEqual(table === "identifies" ? [] : [{ user_id: "stays" }]);
    }
    expect(await sql!.unsafe(`SELECT id FROM "${ns}".users`)).toEqual([]);
  });

  test("identity resolution (enableIDResolution): merge, alias and identify form groups in rudder_identity_mappings; a later merge joins two groups", async () => {
    const ns = newNamespace();
    const { source, destination } = await postgresDestination(ns, { enableIDResolution: true });
    await sendEvent(s.url, source.writeKey, "identify", { anonymousId: "anon-1", userId: "u1", messageId: "m-ir-1", traits: { plan: "pro" } });
    await sendEvent(s.url, source.writeKey, "alias", { userId: "u2", previousId: "u1", messageId: "m-ir-2" });
    await sendEvent(s.url, source.writeKey, "merge", {
      userId: "u2",
      messageId: "m-ir-3",
      mergeProperties: [
        { type: "email", value: "alex@example.com" },
        { type: "user_id", value: "u2" },
      ],
    });
    await sendEvent(s.url, source.writeKey, "track", track("u9", "m-ir-4", { sku: "Z" }));
    await sendEvent(s.url, source.writeKey, "track", { ...track("u9", "m-ir-5", { sku: "Z" }), anonymousId: "anon-9" });
    await waitStaged(destination.id, 5);
    const first = await syncAndWait(destination.id);
    expect(first.rows).toMatchObject({ identifies: 1, aliases: 1, tracks: 2, rudder_identity_merge_rules: 5 });

    const groups = async () => {
      const rows: Array<{ t: string; v: string; r: string }> = await sql!.unsafe(
        `SELECT merge_property_type AS t, merge_property_value AS v, rudder_id AS r FROM "${ns}".rudder_identity_mappings ORDER BY t, v`,
      );
      const byId = new Map<string, string[]>();
      for (const m of rows) byId.set(m.r, [...(byId.get(m.r) ?? []), `${m.t}:${m.v}`]);
      return [...byId.values()].map((g) => g.sort()).sort();
    };
    expect(await groups()).toEqual([
      ["anonymous_id:anon-1", "email:alex@example.com", "user_id:u1", "user_id:u2"],
      ["anonymous_id:anon-9", "user_id:u9"],
    ]);
    const rules = await sql!.unsafe(`SELECT merge_property_1_type AS t1, merge_property_1_value AS v1, merge_property_2_type AS t2, merge_property_2_value AS v2 FROM "${ns}".rudder_identity_merge_rules ORDER BY id`);
    expect(rules).toContainEqual({ t1: "email", v1: "alex@example.com", t2: "user_id", v2: "u2" });
    expect(rules).toContainEqual({ t1: "user_id", v1: "u2", t2: "user_id", v2: "u1" });
    expect(rules).toContainEqual({ t1: "anonymous_id", v1: "anon-1", t2: "user_id", v2: "u1" });
    const before = await sql!.unsafe(`SELECT DISTINCT rudder_id AS r FROM "${ns}".rudder_identity_mappings ORDER BY r`);

    // A merge naming one identifier of each group joins them under the smaller rudder_id.
    await sendEvent(s.url, source.writeKey, "merge", {
      userId: "u9",
      messageId: "m-ir-6",
      mergeProperties: [
        { type: "user_id", value: "u9" },
        { type: "email", value: "alex@example.com" },
      ],
    });
    await waitStaged(destination.id, 6);
    const second = await syncAndWait(destination.id);
    expect(second.rows).toMatchObject({ rudder_identity_merge_rules: 1 });
    expect(await groups()).toEqual([["anonymous_id:anon-1", "anonymous_id:anon-9", "email:alex@example.com", "user_id:u1", "user_id:u2", "user_id:u9"]]);
    expect(await sql!.unsafe(`SELECT DISTINCT rudder_id AS r FROM "${ns}".rudder_identity_mappings`)).toEqual([before[0]]);
  });

  test("without enableIDResolution no identity tables are made, and a merge call loads nothing", async () => {
    const ns = newNamespace();
    const { source, destination } = await postgresDestination(ns);
    await sendEvent(s.url, source.writeKey, "identify", { anonymousId: "anon-1", userId: "u1", messageId: "m-noir-1" });
    await sendEvent(s.url, source.writeKey, "merge", { userId: "u1", messageId: "m-noir-2", mergeProperties: [{ type: "email", value: "a@x" }, { type: "user_id", value: "u1" }] });
    await waitStaged(destination.id, 2);
    const load = await syncAndWait(destination.id);
    expect(load.rows).toEqual({ identifies: 1, users: 1 });
    const tables = await sql!.unsafe(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, [ns]);
    expect(tables.map((t: any) => t.table_name)).toEqual(["identifies", "users"]);
  });

  test("the Test API refuses a POSTGRES destination: the server loads it itself", async () => {
    const { destination } = await postgresDestination(newNamespace());
    const res = await fetch(`${s.url}/v0/testDestination/${destination.id}`, {
      method: "POST",
      headers: { authorization: basic(ADMIN_EMAIL, ADMIN_TOKEN), "content-type": "application/json" },
      body: JSON.stringify({ message: { type: "track", ...track("u1", "m-test-api", {}) } }),
    });
    expect(await res.text()).toContain("the Test API does not support POSTGRES destinations");
  });

  test("sync of a non-warehouse destination → 400 naming the reason; of another workspace's or a missing one → 404", async () => {
    const source = await createSource(s.url);
    const hook = await api(s.url, "POST", "/v2/destinations", { name: `hook-${crypto.randomUUID().slice(0, 8)}`, type: "WEBHOOK", config: { webhookUrl: "http://127.0.0.1:1/x" }, sourceIds: [source.id] });
    const res = await api(s.url, "POST", `/v2/destinations/${hook.json.id}/sync`);
    expect(res.status).toBe(400);
    expect(res.json.message).toContain("only warehouse destinations (POSTGRES) have syncs");
    expect((await api(s.url, "GET", `/v2/destinations/${hook.json.id}/syncs`)).status).toBe(400);
    expect((await api(s.url, "POST", `/v2/destinations/dst_missing/sync`)).status).toBe(404);
    const doc = (await (await fetch(`${s.url}/openapi/json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/v2/destinations/{id}/sync", "/v2/destinations/{id}/syncs"]));
  });
});
