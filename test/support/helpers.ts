/**
 * Shared test scaffolding: real SQLite files in temp dirs, real HTTP on 127.0.0.1. With
 * SLUICE_TEST_STORE=postgres the servers run on the test PostgreSQL instead (cluster mode, a
 * fresh schema each), so the behaviour suites check both stores with the same tests.
 */
import { expect, test } from "bun:test";
import { SQL } from "bun";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Sluice, createSluice } from "../../src/app";
import { silentLogger } from "../../src/lib/logger";
import type { DestinationContext, DestinationRequest, LookupClient } from "../../src/destinations/types";
import { LookupCaches, lookupClient } from "../../src/pipeline/lookup";
import type { DestinationRuntime } from "../../src/control-plane/config-store";
import { Outbound } from "../../src/pipeline/outbound";
import { parseSettings } from "../../src/settings";

export const ADMIN_EMAIL = "owner@example.com";
export const ADMIN_TOKEN = "test-admin-token-0123456789";
/**
 * The sinks standing in for destinations listen on 127.0.0.1, which the outbound address policy
 * refuses by default: the test servers allow loopback, as the README's walk does. A test about
 * the policy itself passes its own value.
 */
export const ALLOW_LOOPBACK = { SLUICE_ALLOW_DESTINATION_HOSTS: "127.0.0.0/8,::1" };

export function tempDir(prefix = "sluice-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** The store the behaviour suites run on: SQLite unless SLUICE_TEST_STORE=postgres (.ci/run runs both). */
export const onPostgres = process.env.SLUICE_TEST_STORE === "postgres";

/**
 * On PostgreSQL a server's state is a schema, not its data dir: each data dir gets a schema of
 * its own, so a server started again on the same data dir (a restart) finds its state again.
 * `cleanup(dataDir)` drops it, with the connection the test's own reads used.
 */
const schemaOfDir = new Map<string, { name: string; sql?: SQL }>();

/** test/support/pg.ts connects when imported: loaded only when a suite runs on PostgreSQL. */
const pg = () => import("./pg");

async function storeArgs(dataDir: string, args: string[]): Promise<string[]> {
  // A test that chose its own database (the cluster tests) keeps it.
  if (!onPostgres || args.includes("--database")) return [];
  const { PG_URL } = await pg();
  staleSchemasDropped ??= dropStaleSchemas();
  await staleSchemasDropped;
  let schema = schemaOfDir.get(dataDir);
  if (!schema) schemaOfDir.set(dataDir, (schema = { name: `${SCHEMA_PREFIX}${Math.floor(Date.now() / 1000).toString(36)}_${crypto.randomUUID().slice(0, 8)}` }));
  return ["--database", PG_URL, "--database-schema", schema.name];
}

/** Schema names carry their creation time, so leftovers of runs that died can be told apart from a run in progress. */
const SCHEMA_PREFIX = "t_suite_";
let staleSchemasDropped: Promise<void> | undefined;

/** Drops schemas a killed or failed run left behind (over an hour old): once per test process. */
async function dropStaleSchemas(): Promise<void> {
  const admin = (await pg()).testSql();
  try {
    const rows = await admin`SELECT nspname AS name FROM pg_namespace WHERE nspname LIKE ${SCHEMA_PREFIX + "%"}`;
    const cutoff = Date.now() / 1000 - 3600;
    for (const { name } of rows as Array<{ name: string }>) {
      const made = Number.parseInt(name.slice(SCHEMA_PREFIX.length).split("_")[0] ?? "", 36);
      if (!(made >= cutoff)) await admin.unsafe(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
    }
  } finally {
    await admin.close();
  }
}

export interface TestServer {
  sluice: Sluice;
  url: string;
  dataDir: string;
  stop(): Promise<void>;
}

/** Starts an in-process Sluice on a random port with its own data dir (and schema on PostgreSQL). */
export async function startSluice(opts: { args?: string[]; env?: Record<string, string>; dataDir?: string } = {}): Promise<TestServer> {
  const dataDir = opts.dataDir ?? tempDir();
  const args = opts.args ?? [];
  const settings = parseSettings(["--port", "0", "--host", "127.0.0.1", "--data-dir", dataDir, ...(await storeArgs(dataDir, args)), ...args], {
    SLUICE_ADMIN_EMAIL: ADMIN_EMAIL,
    SLUICE_ADMIN_TOKEN: ADMIN_TOKEN,
    ...ALLOW_LOOPBACK,
    ...opts.env,
  });
  const sluice = await createSluice(settings, { log: silentLogger });
  const app = sluice.combined.listen({ port: 0, hostname: "127.0.0.1" });
  const url = `http://127.0.0.1:${app.server!.port}`;
  return {
    sluice,
    url,
    dataDir,
    async stop() {
      await app.server!.stop(true);
      await sluice.close();
    },
  };
}

/**
 * Removes a data dir, and on PostgreSQL drops its schema (after the server on it was stopped).
 * The files go at once: callers that do not await keep working on SQLite.
 */
export async function cleanup(dir: string): Promise<void> {
  rmSync(dir, { recursive: true, force: true });
  const schema = schemaOfDir.get(dir);
  if (!schema) return;
  schemaOfDir.delete(dir);
  await schema.sql?.close().catch(() => {});
  const admin = (await pg()).testSql();
  try {
    await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema.name}" CASCADE`);
  } finally {
    await admin.close();
  }
}

export const basic = (user: string, password = "") => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
export const bearer = (token = ADMIN_TOKEN) => `Bearer ${token}`;

/** JSON request to the API with the admin token. */
export async function api(url: string, method: string, path: string, body?: unknown, token = ADMIN_TOKEN) {
  const res = await fetch(url + path, {
    method,
    headers: { authorization: bearer(token), ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text, headers: res.headers };
}

/** Polls until `check` returns a truthy value or the deadline passes. Never sleeps blindly. */
export async function waitFor<T>(check: () => T | Promise<T>, { timeoutMs = 10_000, what = "condition" } = {}): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Creates a source through the API and returns it. */
export async function createSource(url: string, input: Record<string, unknown> = {}) {
  const res = await api(url, "POST", "/v2/sources", { name: `src-${crypto.randomUUID().slice(0, 8)}`, ...input });
  if (res.status !== 201) throw new Error(`create source failed: ${res.status} ${res.text}`);
  return res.json as { id: string; writeKey: string; name: string };
}

/** Sends an event call with the write key. */
export function sendEvent(url: string, writeKey: string, call: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${url}/v1/${call}`, {
    method: "POST",
    headers: { authorization: basic(writeKey), "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** SQLite only (a synchronous read); suites that run on both stores use `readEvents`. */
export function storedEvents(server: TestServer): Array<Record<string, any>> {
  return (server.sluice.db.$client.query("SELECT payload FROM events ORDER BY id").all() as any[]).map((r) => JSON.parse(r.payload));
}

/** The stored events' payloads in id order, from whichever store the server runs on. */
export async function readEvents(server: { dataDir: string; sluice?: Sluice }): Promise<Array<Record<string, any>>> {
  return ((await query(server, "SELECT payload FROM events ORDER BY id")) as any[]).map((r) => JSON.parse(r.payload));
}

/**
 * Runs one statement on the server's store and answers its rows. Written once for both: `?`
 * placeholders (numbered for PostgreSQL here), the column names both schemas share, and
 * `CAST(count(*) AS INTEGER)` where a count is compared (PostgreSQL's count is a bigint).
 */
export async function query(server: { dataDir: string; sluice?: Sluice }, sql: string, params: unknown[] = []): Promise<Array<Record<string, any>>> {
  const schema = schemaOfDir.get(server.dataDir);
  if (!schema) {
    if (!server.sluice) throw new Error("query: a spawned SQLite server's database is read through its file");
    return server.sluice.db.$client.query(sql).all(...(params as any[])) as Array<Record<string, any>>;
  }
  schema.sql ??= new SQL((await pg()).PG_URL, { max: 2, connection: { search_path: schema.name } });
  let n = 0;
  return [...(await schema.sql.unsafe(sql.replace(/\?/g, () => `$${++n}`), params as any[]))];
}

/**
 * A second workspace with an owner account and its token, written through the server's own
 * control-plane store (Sluice's API makes no workspaces): same ids on both stores.
 */
export async function addWorkspace(server: TestServer, name: string, token: string, opts: { email?: string; now?: number } = {}): Promise<void> {
  const { tokenRow } = await import("../../src/control-plane/tokens");
  const { email = `${name}@example.com`, now = 0 } = opts;
  await server.sluice.ctx.controlPlane.writeAuth([
    { op: "insertWorkspace", row: { id: `ws_${name}`, name, createdAt: now } },
    { op: "insertAccount", row: { id: `acc_${name}`, workspaceId: `ws_${name}`, email, role: "owner", createdAt: now } },
    { op: "insertToken", row: tokenRow({ accountId: `acc_${name}`, workspaceId: `ws_${name}`, token, now }) },
  ]);
}

export interface SluiceProcess {
  url: string;
  proc: ReturnType<typeof Bun.spawn>;
  dataDir: string;
  /** Lines the process printed so far. */
  output(): string;
}

/**
 * Starts Sluice as a real process (`bun src/main.ts serve`, or the compiled binary) on a
 * free port and waits until it listens.
 */
export async function spawnSluice(opts: { dataDir?: string; args?: string[]; env?: Record<string, string | undefined>; binary?: string; cwd?: string } = {}): Promise<SluiceProcess> {
  const dataDir = opts.dataDir ?? tempDir();
  const root = join(import.meta.dir, "../..");
  const cmd = opts.binary ? [opts.binary] : [process.execPath, join(root, "src", "main.ts")];
  const args = opts.args ?? [];
  const proc = Bun.spawn([...cmd, "serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", dataDir, ...(await storeArgs(dataDir, args)), ...args], {
    cwd: opts.cwd ?? root,
    // An entry set to undefined removes that variable.
    env: Object.fromEntries(Object.entries({ ...process.env, SLUICE_ADMIN_EMAIL: ADMIN_EMAIL, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: "info", ...ALLOW_LOOPBACK, ...opts.env }).filter(([, v]) => v !== undefined)),
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) out += decoder.decode(chunk);
  };
  void pump(proc.stdout as ReadableStream<Uint8Array>);
  void pump(proc.stderr as ReadableStream<Uint8Array>);
  const url = await waitFor(
    () => {
      if (proc.exitCode !== null) throw new Error(`sluice exited with ${proc.exitCode}: ${out}`);
      const m = /"(?:url|dataPlane)":"http:\/\/[^:]+:(\d+)"/.exec(out);
      return m ? `http://127.0.0.1:${m[1]}` : undefined;
    },
    { timeoutMs: 20_000, what: "sluice to listen" },
  );
  return { url, proc, dataDir, output: () => out };
}

export interface SinkRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: any;
  at: number;
}

/**
 * A real HTTP server on 127.0.0.1 standing in for a destination. `respond` decides
 * each answer (default 200); every request is recorded, answered or not.
 */
export function startSink(respond?: (req: SinkRequest, n: number) => Response | Promise<Response>) {
  const received: SinkRequest[] = [];
  let n = 0;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      const url = new URL(request.url);
      const text = await request.text();
      let body: any = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {}
      const rec: SinkRequest = {
        method: request.method,
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: Object.fromEntries(request.headers),
        body,
        at: Date.now(),
      };
      received.push(rec);
      return respond ? respond(rec, n++) : new Response("ok");
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    received,
    stop: () => server.stop(true),
  };
}

/** The request a kind's transform is expected to return: a JSON body, nothing else set. */
export function jsonRequest(method: DestinationRequest["method"], endpoint: string, json: Record<string, unknown>, headers: Record<string, string>): DestinationRequest {
  return { version: "1", type: "REST", method, endpoint, headers, params: {}, body: { JSON: json, JSON_ARRAY: {}, XML: {}, FORM: {} }, files: {} };
}

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const haveChromium = existsSync(CHROMIUM);

/**
 * A browser test file without Chromium is skipped and says so; CI sets SLUICE_REQUIRE_BROWSER,
 * where a missing Chromium fails instead.
 */
export function requireChromium(file: string): void {
  if (!haveChromium) console.warn(`${file}: skipped, no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);
  test.if(!haveChromium && !!process.env.SLUICE_REQUIRE_BROWSER)("Chromium is installed (SLUICE_REQUIRE_BROWSER is set)", () => {
    expect(existsSync(CHROMIUM)).toBe(true);
  });
}

/** Debian's headless Chromium through playwright-core. */
export async function launchChromium(): Promise<import("playwright-core").Browser> {
  const { chromium } = await import("playwright-core");
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // The machine has no outside network: keep Chromium from reaching for it.
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

/**
 * The lookup client delivery hands a kind's transform, for calling a transform directly against
 * a stand-in of the service on 127.0.0.1 (loopback allowed, as the test servers allow it).
 */
export function testLookup(timeoutMs = 5000): LookupClient {
  return lookupClient({ outbound: new Outbound({ allowDestinationHosts: ["127.0.0.0/8", "::1"], denyDestinationHosts: [] }), timeoutMs });
}

/** A destination context for calling a kind's transform directly: config, a stand-in's base URL, the lookup client and a fresh lookup memory. */
export function lookupContext(config: Record<string, any>, baseUrl?: string): DestinationContext {
  // The router keeps one memory per destination runtime; a fresh key object is a fresh memory.
  const cache = new LookupCaches().for({} as DestinationRuntime);
  return { config, destination: { id: "dst_test", name: "test", workspaceId: "ws_test" }, baseUrl, now: Date.now, lookup: testLookup(), cache };
}

export interface HealthProbe {
  /** Stops probing; the latencies (ms) with p50, p99 and max, and the failed calls. */
  stop(): Promise<{ count: number; p50: number; p99: number; max: number; failures: string[] }>;
}

/** Calls `${url}/health` every 20 ms from a process of its own (support/health-probe.ts) until stopped. */
export async function startHealthProbe(url: string, intervalMs = 20): Promise<HealthProbe> {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "health-probe.ts")], {
    env: { ...process.env, URL: url, INTERVAL_MS: String(intervalMs) },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let out = "";
  const readLine = async () => {
    while (!out.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the health probe ended early: ${out}`);
      out += decoder.decode(value);
    }
    const line = out.slice(0, out.indexOf("\n"));
    out = out.slice(out.indexOf("\n") + 1);
    return line;
  };
  await readLine();
  return {
    async stop() {
      proc.stdin!.write("stop\n");
      await proc.stdin!.end();
      const { latencies, failures } = JSON.parse(await readLine()) as { latencies: number[]; failures: string[] };
      await proc.exited;
      const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
      return { count: latencies.length, p50: at(0.5), p99: at(0.99), max: latencies[latencies.length - 1] ?? 0, failures };
    },
  };
}

/** Per user, the seq numbers (`properties.seq` of "step" events) in the order a sink first saw each messageId. */
export function arrivals(sink: { received: SinkRequest[] }): Map<string, number[]> {
  const seen = new Set<string>();
  const byUser = new Map<string, number[]>();
  for (const r of sink.received) {
    const e = r.body;
    if (e?.event !== "step" || seen.has(e.messageId)) continue;
    seen.add(e.messageId);
    let list = byUser.get(e.userId);
    if (!list) byUser.set(e.userId, (list = []));
    list.push(e.properties.seq);
  }
  return byUser;
}
