/**
 * `sluice migrate-to-postgres` (issue 24): a data dir written by the real server (sources,
 * destinations with queued and delivered events, a transformation, tokens, a session,
 * regulations with a deletion job, warehouse staging and a load) is copied by the command, run as
 * a real process, into a schema of the real PostgreSQL: every row, the cluster columns computed,
 * sequences continued, the processor's cursors placed. The refusals, and all or nothing when the
 * copy fails part way. Each test copies into its own schema and drops it after.
 */
import { Database } from "bun:sqlite";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { openPostgres, closePostgres } from "../../db/pg";
import { partitionOfKey } from "../../src/cluster/hash";
import { AppError } from "../../src/lib/errors";
import { SQLITE_ONLY, migrateToPostgres, migrationPlan } from "../../src/ops/migrate-to-postgres";
import { dedupKey } from "../../src/storage/postgres/event-log";
import { ADMIN_EMAIL, ADMIN_TOKEN, api, cleanup, spawnSluice, startSink, tempDir, type SluiceProcess } from "../support/helpers";
import { PG, PG_URL as url, havePostgres, requirePostgres, testSql, waitFor } from "../support/pg";

requirePostgres("migrate-to-postgres.test.ts");

const ROOT = join(import.meta.dir, "../..");
const plan = migrationPlan();
const USERS = Array.from({ length: 12 }, (_, i) => `user-${i}`);

/** The data dir every test copies: written by a real server, which was then stopped. */
let template = "";
let fixture: { sources: { web: string; backend: string }; dead: string; live: string; warehouse: string; webEvents: number; backendEvents: number } = null!;
// Letters only: the warehouse puts namespaces in snake case, which would split digits off.
const warehouseNamespace = `t_mig_wh_${Array.from({ length: 10 }, () => String.fromCharCode(97 + Math.floor(Math.random() * 26))).join("")}`;
const admin = havePostgres ? testSql() : null!;
const schemas: string[] = [];
const dirs: string[] = [];
const servers: SluiceProcess[] = [];

function newSchema(): string {
  const s = `t_mig_${Math.random().toString(36).slice(2, 10)}`;
  schemas.push(s);
  return s;
}

function copyOfTemplate(): string {
  const dir = tempDir("sluice-migrate-");
  dirs.push(dir);
  cpSync(template, dir, { recursive: true });
  return dir;
}

const sha = (file: string) => new Bun.CryptoHasher("sha256").update(readFileSync(file)).digest("hex");

async function migrate(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([process.execPath, join(ROOT, "src", "main.ts"), "migrate-to-postgres", ...args], {
    cwd: ROOT,
    env: { ...process.env, SLUICE_DATABASE_URL: "", SLUICE_DATABASE_SCHEMA: "", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** A port nothing listens on. */
function closedPort(): number {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = s.port!;
  s.stop(true);
  return port;
}

async function stop(server: SluiceProcess) {
  server.proc.kill("SIGTERM");
  await server.proc.exited;
}

async function batch(serverUrl: string, writeKey: string, events: unknown[]) {
  const res = await fetch(`${serverUrl}/v1/batch`, {
    method: "POST",
    headers: { authorization: `Basic ${btoa(`${writeKey}:`)}`, "content-type": "application/json" },
    body: JSON.stringify({ batch: events }),
  });
  expect(res.status).toBe(200);
}

/** JSON with object keys sorted: jsonb keeps its own key order, SQLite's text the writer's. */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === "object") return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]));
  return v;
}

/** The table's rows as comparable values: the copied columns, normalised by their pg type, sorted. */
function normalise(rows: Array<Record<string, unknown>>, table: string): string[] {
  const columns = plan.find((p) => p.table === table)!.columns.filter((c) => !c.compute);
  return rows
    .map((r) =>
      JSON.stringify(
        columns.map((c) => {
          const v = r[c.name];
          if (v === null || v === undefined) return null;
          if (c.type === "boolean") return v === true || v === 1;
          if (c.type === "jsonb") return canonical(typeof v === "string" ? JSON.parse(v) : v);
          if (c.type === "bigint" || c.type === "integer" || c.type === "smallint") return Number(v);
          return v;
        }),
      ),
    )
    .sort();
}

function sqliteRows(dir: string, table: string, where = ""): Array<Record<string, unknown>> {
  // Not read-only: a read-only connection leaves the -wal and -shm it made behind, and the test
  // checks that the data dir keeps only its own files.
  const db = new Database(join(dir, "sluice.db"), { readwrite: true, create: false });
  try {
    const rows = db.query(`SELECT * FROM "${table}" ${where}`).all() as Array<Record<string, unknown>>;
    if (table !== "warehouse_staged") return rows;
    // PostgreSQL marks each row: a row in a range SQLite recorded as loaded has that load's id.
    const ranges = db.query(`SELECT destination_id, load_id, from_id, to_id FROM warehouse_loaded_ranges`).all() as Array<Record<string, any>>;
    return rows.map((r) => ({
      ...r,
      load_id: r.load_id ?? ranges.find((g) => g.destination_id === r.destination_id && (r.id as number) >= g.from_id && (r.id as number) <= g.to_id)?.load_id ?? null,
    }));
  } finally {
    db.close();
  }
}

/**
 * A messageId sent again after the deduplication window: a second row in SQLite, fanned out too
 * (a delivery, the cursor at it). And one event the processor has not reached yet.
 */
function addDuplicateAndUnroutedEvent(dir: string) {
  const lite = new Database(join(dir, "sluice.db"));
  try {
    const first = lite.query("SELECT * FROM events WHERE source_id = ? ORDER BY id LIMIT 1").get(fixture.sources.web) as Record<string, any>;
    const maxId = (lite.query("SELECT max(id) AS id FROM events").get() as { id: number }).id;
    const dupId = maxId + 1;
    const freshId = maxId + 2;
    lite.run(
      "INSERT INTO events (id, workspace_id, source_id, message_id, user_key, type, payload, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      [dupId, first.workspace_id, first.source_id, first.message_id, first.user_key, first.type, first.payload, first.received_at + 3 * 86_400_000],
    );
    lite.run(
      "INSERT INTO deliveries (event_id, destination_id, source_id, workspace_id, user_key, state, attempts, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'pending', 0, 1, 1, 1)",
      [dupId, fixture.dead, first.source_id, first.workspace_id, first.user_key],
    );
    lite.run("UPDATE cursors SET value = ? WHERE name = 'processor'", [dupId]);
    lite.run(
      "INSERT INTO events (id, workspace_id, source_id, message_id, user_key, type, payload, received_at) VALUES (?, ?, ?, 'not-fanned-out', 'user-late', 'track', '{}', ?)",
      [freshId, first.workspace_id, first.source_id, first.received_at + 3 * 86_400_000],
    );
    return { first, dupId, freshId };
  } finally {
    lite.close();
  }
}

/**
 * Rows the run above does not make (it stores no tracking plan, checks no event against one, and
 * ends before the catalog writes): one in each such table, written here, so the copy is tested on
 * them too. Only where the run left one empty.
 */
function fillTablesNoApiWritesYet(dir: string) {
  const db = new Database(join(dir, "sluice.db"));
  try {
    const ws = (db.query("SELECT id FROM workspaces LIMIT 1").get() as { id: string }).id;
    const src = (db.query("SELECT id FROM sources LIMIT 1").get() as { id: string }).id;
    const rows: Record<string, [string, unknown[]]> = {
      tracking_plans: ["INSERT INTO tracking_plans VALUES (?, 'tp-1', 'Plan', 1, 1, 1)", [ws]],
      tracking_plan_versions: ["INSERT INTO tracking_plan_versions VALUES (?, 'tp-1', 1, '{\"name\":\"Plan\",\"events\":[]}', '[]', 1)", [ws]],
      catalog_models: ["INSERT INTO catalog_models VALUES (?, ?, 'track', 'Order Completed', 1, 2, 3, '{\"2026-12-07\":3}', '{}', 0)", [ws, src]],
      catalog_overflow: ["INSERT INTO catalog_overflow VALUES (?, ?, 1, 5)", [src, ws]],
      tracking_plan_violation_counts: [
        "INSERT INTO tracking_plan_violation_counts (workspace_id, source_id, day, type, event, violation_type, property, count) VALUES (?, ?, '2026-12-07', 'track', 'Order Completed', 'Datatype-Mismatch', '/properties/total', 3)",
        [ws, src],
      ],
      tracking_plan_dropped_counts: ["INSERT INTO tracking_plan_dropped_counts (workspace_id, source_id, day, type, event, count) VALUES (?, ?, '2026-12-07', 'track', 'Signed Up', 2)", [ws, src]],
      tracking_plan_dropped_events: [
        "INSERT INTO tracking_plan_dropped_events (workspace_id, source_id, event_id, at, type, event, violation_type, error, violations) VALUES (?, ?, 1, 1, 'track', 'Signed Up', 'Unplanned-Event', 'Unplanned-Event', '[]')",
        [ws, src],
      ],
    };
    for (const [table, [sql, params]] of Object.entries(rows)) {
      const exists = db.query(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '${table}'`).get();
      if (exists && !(db.query(`SELECT 1 FROM "${table}" LIMIT 1`).get())) db.query(sql).run(...(params as any[]));
    }
  } finally {
    db.close();
  }
}

async function pgCount(schema: string, table: string): Promise<number> {
  return (await admin.unsafe(`SELECT count(*)::int AS n FROM "${schema}"."${table}"`))[0].n;
}

test("usage: --help lists the command; no --database, or a URL of another database, is bad usage (exit 2)", async () => {
  const help = Bun.spawnSync([process.execPath, join(ROOT, "src", "main.ts"), "--help"], { cwd: ROOT });
  expect(help.stdout.toString()).toContain("sluice migrate-to-postgres --database URL [--database-schema NAME]");
  const dir = tempDir("sluice-migrate-usage-");
  try {
    const none = await migrate(["--data-dir", dir]);
    expect(none.code).toBe(2);
    expect(none.stderr).toBe("sluice: migrate-to-postgres needs --database postgres://USER:PASSWORD@HOST:PORT/DB (or SLUICE_DATABASE_URL); see sluice --help\n");
    const mysql = await migrate(["--data-dir", dir, "--database", "mysql://root@127.0.0.1:3306/test"]);
    expect(mysql.code).toBe(2);
    expect(mysql.stderr).toBe("sluice: --database must be a postgres:// or postgresql:// URL, not mysql://…\n");
    expect(readdirSync(dir)).toEqual([]);
  } finally {
    cleanup(dir);
  }
});

describe.if(havePostgres)("sluice migrate-to-postgres", () => {
  beforeAll(async () => {
    const sink = startSink();
    const server = await spawnSluice({ args: ["--retry-backoff-ms", "600000"] });
    template = server.dataDir;
    try {
      const u = server.url;
      const web = (await api(u, "POST", "/v2/sources", { name: "web" })).json;
      const backend = (await api(u, "POST", "/v2/sources", { name: "backend" })).json;
      // Nothing listens there: its deliveries stay queued (pending, then retrying).
      const dead = await api(u, "POST", "/v2/destinations", {
        name: "dead",
        type: "WEBHOOK",
        config: { webhookUrl: `http://127.0.0.1:${closedPort()}/hook` },
        sourceIds: [web.id, backend.id],
      });
      const live = await api(u, "POST", "/v2/destinations", { name: "live", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/hook` }, sourceIds: [web.id] });
      const warehouse = await api(u, "POST", "/v2/destinations", {
        name: "warehouse",
        type: "POSTGRES",
        config: { host: PG.host, port: String(PG.port), database: PG.database, user: PG.user, password: PG.password, namespace: warehouseNamespace, syncFrequency: "1440" },
        sourceIds: [backend.id],
      });
      for (const r of [dead, live, warehouse]) expect(r.status).toBe(201);
      // A library, so its tables and the version's pinned library are copied too.
      expect((await api(u, "POST", "/v2/libraries", { name: "Tags", code: "export const tag = (p) => ({ ...p, tagged: true });" })).status).toBe(201);
      const transformation = await api(u, "POST", "/v2/transformations", {
        name: "tag",
        code: 'import { tag } from "tags";\nexport function transformEvent(event) { event.properties = tag(event.properties); return event; }',
        destinationIds: [live.json.id],
      });
      expect(transformation.status).toBe(201);
      expect((await api(u, "POST", "/v2/tokens", { name: "ci" })).status).toBe(201);
      const session = await fetch(`${u}/v2/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: ADMIN_EMAIL, token: ADMIN_TOKEN }) });
      expect(session.status).toBe(200);
      expect((await api(u, "POST", "/v2/regulations", { regulationType: "suppress", sourceIds: [web.id], users: [{ userId: "blocked" }] })).status).toBe(201);
      expect((await api(u, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [dead.json.id], users: [{ userId: "gone" }] })).status).toBe(201);

      const track = (i: number, source: string) => ({
        type: "track",
        userId: USERS[i % USERS.length],
        messageId: `${source}-${i}`,
        event: i % 3 ? "Product Viewed" : "Order Completed",
        properties: { i, sku: `sku-${i % 7}`, price: i * 1.5, text: "quote \" backslash \\ comma , brace { unicode é ✓" },
      });
      const webEvents = Array.from({ length: 200 }, (_, i) => track(i, "web"));
      const backendEvents = Array.from({ length: 120 }, (_, i) => track(i, "backend"));
      for (let i = 0; i < webEvents.length; i += 50) await batch(u, web.writeKey, webEvents.slice(i, i + 50));
      for (let i = 0; i < backendEvents.length; i += 40) await batch(u, backend.writeKey, backendEvents.slice(i, i + 40));

      // Every web event reaches the live sink: the processor's cursor has moved past them.
      await waitFor(() => sink.received.length >= webEvents.length, { what: "the live destination to get every web event", timeoutMs: 30_000 });
      const stats = async (id: string) => JSON.stringify((await api(u, "GET", `/v2/destinations/${id}/stats`)).json);
      await waitFor(async () => (await stats(warehouse.json.id)).includes(`"succeeded":${backendEvents.length}`), { what: "every backend event staged", timeoutMs: 30_000 });
      const sync = await api(u, "POST", `/v2/destinations/${warehouse.json.id}/sync`);
      expect(sync.status).toBe(202);
      await waitFor(
        async () => ((await api(u, "GET", `/v2/destinations/${warehouse.json.id}/syncs`)).json.syncs as any[]).some((l) => l.id === sync.json.id && l.status === "succeeded"),
        { what: "the warehouse load", timeoutMs: 30_000 },
      );
      // A Shopify storefront's cart identity: a row of webhook sources' state.
      const shop = (await api(u, "POST", "/v2/sources", { name: "shop", type: "Shopify" })).json;
      const identified = await fetch(`${u}/v1/webhook?writeKey=${shop.writeKey}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ event: "rudderIdentifier", anonymousId: "anon-1", cartToken: "cart-1", cart: { line_items: [] } }) });
      expect(identified.status).toBe(200);
      fixture = {
        sources: { web: web.id, backend: backend.id },
        dead: dead.json.id,
        live: live.json.id,
        warehouse: warehouse.json.id,
        webEvents: webEvents.length,
        backendEvents: backendEvents.length,
      };
    } finally {
      await stop(server);
      sink.stop();
    }
    fillTablesNoApiWritesYet(template);
  }, 90_000);

  afterEach(async () => {
    // A server on PostgreSQL was given an empty data dir of its own: it goes too.
    for (const s of servers.splice(0)) {
      await stop(s);
      await cleanup(s.dataDir);
    }
    for (const s of schemas.splice(0)) await admin.unsafe(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    for (const d of dirs.splice(0)) cleanup(d);
  });

  afterAll(async () => {
    await admin.unsafe(`DROP SCHEMA IF EXISTS "${warehouseNamespace}" CASCADE`);
    if (template) cleanup(template);
    await admin.close();
  });

  test("every table a real data dir holds is one the migration copies, and the data dir built here fills every one", () => {
    const db = new Database(join(template, "sluice.db"), { readonly: true });
    try {
      const tables = (db.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>)
        .map((r) => r.name)
        .filter((n) => !n.startsWith("sqlite_") && n !== "__drizzle_migrations");
      const copied = tables.filter((t) => !SQLITE_ONLY.has(t));
      expect(copied.filter((t) => !plan.some((p) => p.table === t))).toEqual([]);
      expect(plan.map((p) => p.table).sort()).toEqual(copied);
      // So the copy below is tested on rows of every table, not on empty ones.
      const empty = tables.filter((t) => (db.query(`SELECT count(*) AS n FROM "${t}"`).get() as { n: number }).n === 0);
      expect(empty).toEqual([]);
    } finally {
      db.close();
    }
  });

  test("copies every row of every table; partitions, dedup keys, sequences, processor cursors, regulation seq and epochs are set; the data dir is unchanged", async () => {
    const dir = copyOfTemplate();
    const file = join(dir, "sluice.db");
    const { first, dupId, freshId } = addDuplicateAndUnroutedEvent(dir);
    const before = sha(file);

    const schema = newSchema();
    const r = await migrate(["--data-dir", dir, "--database", url, "--database-schema", schema]);
    expect(r.stderr).not.toContain("sluice:");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`schema ${schema}`);
    expect(r.stdout).toContain("skipped 1 events that repeat the messageId");
    expect(r.stdout).toContain("and their 1 deliveries");
    expect(r.stdout).toContain(`events up to id ${dupId} were already fanned out to deliveries; the 1 after it`);
    expect(r.stdout).toContain(`the data dir ${dir} was left as it was`);

    // Every row of every table, column by column; only the duplicate and its delivery are left out.
    for (const p of plan) {
      const where = p.table === "events" ? `WHERE id <> ${dupId}` : p.table === "deliveries" ? `WHERE event_id <> ${dupId}` : "";
      const expected = normalise(sqliteRows(dir, p.table, where), p.table);
      const got = normalise([...(await admin.unsafe(`SELECT * FROM "${schema}"."${p.table}"`))], p.table);
      expect({ table: p.table, rows: got }).toEqual({ table: p.table, rows: expected });
      expect(r.stdout).toMatch(new RegExp(`\\n  ${p.table} +${expected.length} rows`));
    }

    // Cluster columns: partition and dedup key from each row, one tx for the whole copy.
    const events = (await admin.unsafe(`SELECT id::float8 AS id, source_id, message_id, user_key, partition, dedup_key::text AS dk, tx::text AS tx FROM "${schema}".events`)) as any[];
    for (const e of events) {
      expect(e.partition).toBe(partitionOfKey(e.user_key, 256));
      expect(e.dk).toBe(dedupKey(e.source_id, e.message_id));
    }
    expect(new Set(events.map((e) => e.partition)).size).toBeGreaterThan(5);
    expect(new Set(events.map((e) => e.tx)).size).toBe(1);
    const deliveries = (await admin.unsafe(`SELECT user_key, partition FROM "${schema}".deliveries`)) as any[];
    for (const d of deliveries) expect(d.partition).toBe(partitionOfKey(d.user_key, 256));
    const states = new Set(((await admin.unsafe(`SELECT DISTINCT state FROM "${schema}".deliveries`)) as any[]).map((x) => x.state));
    expect(states.has("succeeded")).toBe(true);
    expect(states.has("pending") || states.has("retrying")).toBe(true);

    // The processor's cursors: (the copy's tx, the SQLite cursor) in every partition, so what it
    // would read next is exactly the event SQLite had not fanned out.
    const cursors = (await admin.unsafe(`SELECT partition, tx::text AS tx, id::float8 AS id FROM "${schema}".processor_cursors`)) as any[];
    expect(cursors.length).toBe(256);
    for (const c of cursors) expect({ tx: c.tx, id: c.id }).toEqual({ tx: events[0].tx, id: dupId });
    const next = (await admin.unsafe(
      `SELECT e.id::float8 AS id FROM "${schema}".events e JOIN "${schema}".processor_cursors c ON c.partition = e.partition WHERE (e.tx, e.id) > (c.tx, c.id) ORDER BY e.id`,
    )) as any[];
    expect(next.map((x) => x.id)).toEqual([freshId]);

    // Sequences continue after the copied ids.
    const ws = first.workspace_id;
    const [ev] = await admin.unsafe(
      `INSERT INTO "${schema}".events (workspace_id, source_id, message_id, dedup_key, partition, user_key, type, payload, received_at) VALUES ($1, 'src', 'new', 1, 0, 'u', 'track', '{}', 0) RETURNING id::float8 AS id`,
      [ws],
    );
    expect(ev.id).toBe(freshId + 1);
    const maxDelivery = (sqliteRows(dir, "deliveries", `WHERE event_id <> ${dupId} ORDER BY id DESC LIMIT 1`)[0] as { id: number }).id;
    const [dl] = await admin.unsafe(
      `INSERT INTO "${schema}".deliveries (event_id, destination_id, source_id, workspace_id, user_key, partition, state, next_attempt_at, created_at, updated_at) VALUES (1, 'd', 's', $1, 'u', 0, 'pending', 0, 0, 0) RETURNING id::float8 AS id`,
      [ws],
    );
    expect(dl.id).toBe(maxDelivery + 1);
    const maxStaged = (sqliteRows(dir, "warehouse_staged", "ORDER BY id DESC LIMIT 1")[0] as { id: number }).id;
    const [st] = await admin.unsafe(
      `INSERT INTO "${schema}".warehouse_staged (destination_id, workspace_id, namespace, table_name, columns, row, event_id, user_key, staged_at) VALUES ('d', $1, 'n', 't', '{}', '{}', 'e', 'u', 0) RETURNING id::float8 AS id`,
      [ws],
    );
    expect(st.id).toBe(maxStaged + 1);

    // Regulations carry the suppression epoch the copy bumped to; config moved on too.
    const seqs = (await admin.unsafe(`SELECT DISTINCT seq::int AS seq FROM "${schema}".regulations`)) as any[];
    expect(seqs.map((x) => x.seq)).toEqual([1]);
    const epochs = Object.fromEntries(((await admin.unsafe(`SELECT name, value::int AS value FROM "${schema}".cluster_epochs`)) as any[]).map((x) => [x.name, x.value]));
    expect(epochs).toEqual({ suppression: 1, config: 1 });

    // The data dir: the same bytes, no hold left, no snapshot left.
    expect(sha(file)).toBe(before);
    expect(readdirSync(dir).filter((f) => f !== "sluice.db")).toEqual([]);
  }, 60_000);

  test("then served from PostgreSQL: the event not yet fanned out is delivered, write keys, tokens and regulations still hold", async () => {
    const dir = copyOfTemplate();
    // An event stored on SQLite that the processor had not reached when the server stopped.
    const lite = new Database(join(dir, "sluice.db"));
    try {
      const first = lite.query("SELECT * FROM events WHERE source_id = ? ORDER BY id LIMIT 1").get(fixture.sources.web) as Record<string, any>;
      const freshId = (lite.query("SELECT max(id) AS id FROM events").get() as { id: number }).id + 1;
      const payload = JSON.stringify({ ...JSON.parse(first.payload), messageId: "not-fanned-out" });
      lite.run(
        "INSERT INTO events (id, workspace_id, source_id, message_id, user_key, type, payload, received_at) VALUES (?, ?, ?, 'not-fanned-out', ?, 'track', ?, ?)",
        [freshId, first.workspace_id, first.source_id, first.user_key, payload, first.received_at],
      );
    } finally {
      lite.close();
    }
    const schema = newSchema();
    expect((await migrate(["--data-dir", dir, "--database", url, "--database-schema", schema])).code).toBe(0);

    const sink = startSink();
    try {
      const server = await spawnSluice({ args: ["--database", url, "--database-schema", schema] });
      servers.push(server);
      const u = server.url;
      // The token made on SQLite works (its hash was copied); the live destination now points here.
      expect((await api(u, "PATCH", `/v2/destinations/${fixture.live}`, { config: { webhookUrl: `${sink.url}/hook` } })).status).toBe(200);
      // Fanned out and delivered now, through the destination's transformation.
      const delivered = await waitFor(() => sink.received.find((r) => r.body?.messageId === "not-fanned-out"), { timeoutMs: 15_000, what: "the event not fanned out on SQLite" });
      expect(delivered.body.properties.tagged).toBe(true);
      // The events already delivered on SQLite are not sent again.
      expect(sink.received.filter((r) => /^web-\d+$/.test(r.body?.messageId ?? ""))).toEqual([]);

      const sources = (await api(u, "GET", "/v2/sources")).json;
      const web = (Array.isArray(sources) ? sources : sources.sources).find((x: { id: string }) => x.id === fixture.sources.web);
      const send = (userId: string, messageId: string) => batch(u, web.writeKey, [{ type: "track", userId, messageId, event: "After Move" }]);
      // A regulation made on SQLite still drops its user's events; another user's go through.
      await send("blocked", "after-blocked");
      await send("user-0", "after-ok");
      await waitFor(() => sink.received.find((r) => r.body?.messageId === "after-ok"), { timeoutMs: 15_000, what: "a new event through the migrated source" });
      expect(sink.received.some((r) => r.body?.messageId === "after-blocked")).toBe(false);
      expect((await admin.unsafe(`SELECT count(*)::int AS n FROM "${schema}".events WHERE message_id = 'after-blocked'`))[0].n).toBe(0);
    } finally {
      sink.stop();
    }
  }, 60_000);

  test("refused while a server holds the data dir: nothing is written to PostgreSQL", async () => {
    const dir = copyOfTemplate();
    const server = await spawnSluice({ dataDir: dir });
    servers.push(server);
    const schema = newSchema();
    const r = await migrate(["--data-dir", dir, "--database", url, "--database-schema", schema]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`is held by a running Sluice (pid ${server.proc.pid}, serve since`);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect((await admin.unsafe(`SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = $1`, [schema]))[0].n).toBe(0);
  }, 60_000);

  test("a second run into the same schema is refused (no merging of installations) and changes nothing; URL and schema from the environment", async () => {
    const dir = copyOfTemplate();
    const schema = newSchema();
    const env = { SLUICE_DATABASE_URL: url, SLUICE_DATABASE_SCHEMA: schema };
    const first = await migrate(["--data-dir", dir], env);
    expect(first.code).toBe(0);
    const snapshot = async () => {
      const counts: Record<string, number> = {};
      for (const p of plan) counts[p.table] = await pgCount(schema, p.table);
      const epochs = await admin.unsafe(`SELECT name, value::int AS value FROM "${schema}".cluster_epochs ORDER BY name`);
      const cursors = await admin.unsafe(`SELECT DISTINCT tx::text AS tx, id::float8 AS id FROM "${schema}".processor_cursors`);
      return { counts, epochs: [...epochs], cursors: [...cursors] };
    };
    const before = await snapshot();
    expect(before.counts.workspaces).toBe(1);
    const second = await migrate(["--data-dir", dir], env);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(new RegExp(`^sluice: schema ${schema} in PostgreSQL at ${PG.host}:${PG.port} already holds a workspace \\(.+, ws_\\w+\\); Sluice does not merge installations`));
    expect(second.stdout).toBe("");
    expect(await snapshot()).toEqual(before);
  }, 60_000);

  test("an unreachable database: one line naming host:port and the error, without the password; exit 1", async () => {
    const dir = copyOfTemplate();
    const port = closedPort();
    const r = await migrate(["--data-dir", dir, "--database", `postgres://sluice:s3cret-pw@127.0.0.1:${port}/sluice`]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`sluice: cannot reach PostgreSQL at 127.0.0.1:${port} (postgres://sluice@127.0.0.1:${port}/sluice): connection refused (ERR_POSTGRES_CONNECTION_REFUSED)\n`);
    expect(r.stdout + r.stderr).not.toContain("s3cret");
    // The hold was released.
    expect(existsSync(join(dir, "sluice.pid"))).toBe(false);
  }, 30_000);

  test("refused: no database in the data dir, one written by a newer Sluice, a table this Sluice cannot copy", async () => {
    const schema = newSchema();
    const empty = tempDir("sluice-migrate-empty-");
    dirs.push(empty);
    const none = await migrate(["--data-dir", empty, "--database", url, "--database-schema", schema]);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe(`sluice: there is no Sluice database in ${empty} (no sluice.db); check --data-dir\n`);
    expect(readdirSync(empty)).toEqual([]);

    const newer = copyOfTemplate();
    const db = new Database(join(newer, "sluice.db"));
    db.run("PRAGMA user_version = 9000000");
    db.close();
    const before = sha(join(newer, "sluice.db"));
    const r = await migrate(["--data-dir", newer, "--database", url, "--database-schema", schema]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`sluice: data dir ${newer} was written by Sluice 9.0.0; this is Sluice`);
    expect(sha(join(newer, "sluice.db"))).toBe(before);

    const extra = copyOfTemplate();
    const db2 = new Database(join(extra, "sluice.db"));
    db2.run("CREATE TABLE notes (x TEXT)");
    db2.run("INSERT INTO notes VALUES ('kept')");
    db2.close();
    const e = await migrate(["--data-dir", extra, "--database", url, "--database-schema", schema]);
    expect(e.code).toBe(1);
    expect(e.stderr).toContain("has tables this Sluice cannot copy (notes); nothing was copied");
    // Refused before PostgreSQL was touched.
    expect((await admin.unsafe(`SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = $1`, [schema]))[0].n).toBe(0);
  }, 60_000);

  test("all or nothing: a copy that fails at the 50th event leaves no row in any table, and the epochs and cursors as they were", async () => {
    const dir = copyOfTemplate();
    const schema = newSchema();
    const db = await openPostgres(url, { searchPath: schema, max: 1 });
    await closePostgres(db);
    const fiftieth = (sqliteRows(dir, "events", "ORDER BY id LIMIT 1 OFFSET 49")[0] as { id: number }).id;
    await admin.unsafe(`CREATE FUNCTION "${schema}".refuse_fiftieth() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.id = ${fiftieth} THEN RAISE EXCEPTION 'test trigger refuses event %', NEW.id; END IF; RETURN NEW; END $$`);
    await admin.unsafe(`CREATE TRIGGER refuse_fiftieth BEFORE INSERT ON "${schema}".events FOR EACH ROW EXECUTE FUNCTION "${schema}".refuse_fiftieth()`);

    const r = await migrate(["--data-dir", dir, "--database", url, "--database-schema", schema]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`failed while copying events: test trigger refuses event ${fiftieth}`);
    expect(r.stderr).toContain("nothing was copied (the transaction was rolled back)");
    // Tables before events in the plan were copied inside the transaction, then rolled back.
    expect(r.stderr).toContain("copied workspaces: 1 rows (not committed yet)");
    for (const p of plan) expect({ table: p.table, rows: await pgCount(schema, p.table) }).toEqual({ table: p.table, rows: 0 });
    const epochs = await admin.unsafe(`SELECT value::int AS value FROM "${schema}".cluster_epochs`);
    expect([...epochs].map((x: any) => x.value)).toEqual([0, 0]);
    expect((await admin.unsafe(`SELECT count(*)::int AS n FROM "${schema}".processor_cursors WHERE id <> 0 OR tx <> '0'`))[0].n).toBe(0);
  }, 60_000);

  test("in small batches (one in flight while the next is built): the same rows, the duplicate found in a later batch; a failure in a later batch still rolls everything back", async () => {
    const dir = copyOfTemplate();
    const { dupId } = addDuplicateAndUnroutedEvent(dir);
    const schema = newSchema();
    const r = await migrateToPostgres({ dataDir: dir, url, schema, batchRows: 7 });
    expect({ skippedEvents: r.skippedEvents, skippedDeliveries: r.skippedDeliveries }).toEqual({ skippedEvents: 1, skippedDeliveries: 1 });
    for (const p of plan) {
      const where = p.table === "events" ? `WHERE id <> ${dupId}` : p.table === "deliveries" ? `WHERE event_id <> ${dupId}` : "";
      expect({ table: p.table, rows: await pgCount(schema, p.table) }).toEqual({ table: p.table, rows: sqliteRows(dir, p.table, where).length });
    }
    expect(r.tables.find((t) => t.table === "events")).toEqual({ table: "events", rows: sqliteRows(dir, "events").length - 1, skipped: 1 });

    const failing = newSchema();
    await closePostgres(await openPostgres(url, { searchPath: failing, max: 1 }));
    const fiftieth = (sqliteRows(dir, "events", "ORDER BY id LIMIT 1 OFFSET 49")[0] as { id: number }).id;
    await admin.unsafe(`CREATE FUNCTION "${failing}".refuse() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.id = ${fiftieth} THEN RAISE EXCEPTION 'test trigger refuses event %', NEW.id; END IF; RETURN NEW; END $$`);
    await admin.unsafe(`CREATE TRIGGER refuse BEFORE INSERT ON "${failing}".events FOR EACH ROW EXECUTE FUNCTION "${failing}".refuse()`);
    const error = await migrateToPostgres({ dataDir: dir, url, schema: failing, batchRows: 7 }).catch((e) => e);
    expect(error).toBeInstanceOf(AppError);
    expect(error.message).toContain(`failed while copying events: test trigger refuses event ${fiftieth}`);
    for (const p of plan) expect({ table: p.table, rows: await pgCount(failing, p.table) }).toEqual({ table: p.table, rows: 0 });
    expect(existsSync(join(dir, "sluice.pid"))).toBe(false);
  }, 60_000);

  test("a data dir of Sluice 0.1.0 is copied from an upgraded snapshot; the data dir keeps its bytes, still readable by 0.1.0", async () => {
    const dir = tempDir("sluice-migrate-010-");
    dirs.push(dir);
    cpSync(join(import.meta.dir, "../fixtures", "datadirs", "0.1.0"), dir, { recursive: true });
    const file = join(dir, "sluice.db");
    const before = sha(file);
    const schema = newSchema();
    const r = await migrate(["--data-dir", dir, "--database", url, "--database-schema", schema]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("the data dir was written by Sluice 0.1.0 or earlier: a snapshot of it was upgraded");
    expect(sha(file)).toBe(before);
    expect(readdirSync(dir).sort()).toEqual(["fixture.json", "sluice.db"]);
    const queued = JSON.parse(readFileSync(join(dir, "fixture.json"), "utf8")).queuedMessageIds as Record<string, string[]>;
    const ids = new Set(((await admin.unsafe(`SELECT message_id FROM "${schema}".events`)) as any[]).map((x) => x.message_id));
    for (const list of Object.values(queued)) for (const m of list) expect(ids.has(m)).toBe(true);
    expect(await pgCount(schema, "events")).toBe(sqliteRows(dir, "events").length);
  }, 60_000);
});
