/**
 * Makes a data-dir fixture for test/e2e/upgrade.test.ts with a given Sluice checkout:
 *
 *   npx bun scripts/make-upgrade-fixture.ts <sluice checkout> <output dir>
 *
 * e.g. for a release about to be replaced:
 *   mkdir /tmp/sluice-0.2.0 && git archive v0.2.0 | tar -x -C /tmp/sluice-0.2.0
 *   ln -s "$PWD/node_modules" /tmp/sluice-0.2.0/node_modules
 *   npx bun scripts/make-upgrade-fixture.ts /tmp/sluice-0.2.0 test/fixtures/datadirs/0.2.0
 *
 * It runs that checkout's own server (so the file is exactly what that release writes) and
 * fills it only through the public API, which every release keeps: the owner's token and an
 * extra one, sources, destinations of a few kinds (all pointed at a closed port, so their events
 * stay queued), a transformation, a suppression and queued events. Then it stops the server
 * (SIGTERM), folds the WAL in and VACUUMs, so the fixture is one small sluice.db, and writes
 * fixture.json beside it with what the test must find. Tokens are written in plain text: they
 * are test-only.
 */
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, copyFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const [checkoutArg, outArg] = process.argv.slice(2);
if (!checkoutArg || !outArg) {
  console.error("usage: bun scripts/make-upgrade-fixture.ts <sluice checkout> <output dir>");
  process.exit(2);
}
const checkout = resolve(checkoutArg);
const out = resolve(outArg);
const version: string = JSON.parse(readFileSync(join(checkout, "package.json"), "utf8")).version;
if (existsSync(join(out, "sluice.db"))) {
  console.error(`${out} already holds a sluice.db; remove it first`);
  process.exit(2);
}

const OWNER_EMAIL = "fixture-owner@example.com";
const OWNER_TOKEN = `fixture-${version}-owner-token-0123456789`;
const SUPPRESSED_USER = "suppressed-user";
const QUEUED_PER_SOURCE = 10;

/** A port nothing listens on: bound by us, then released. */
function closedPort(): number {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = s.port!;
  s.stop(true);
  return port;
}

async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

const dataDir = mkdtempSync(join(tmpdir(), "sluice-fixture-"));
const deadPort = closedPort();
const deadUrl = `http://127.0.0.1:${deadPort}`;
const proc = Bun.spawn(
  [process.execPath, join(checkout, "src", "main.ts"), "serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", dataDir, "--destination-base-url", `AM=${deadUrl}`],
  {
    cwd: checkout,
    env: { ...process.env, SLUICE_ADMIN_EMAIL: OWNER_EMAIL, SLUICE_ADMIN_TOKEN: OWNER_TOKEN, LOG_LEVEL: "info" },
    stdout: "pipe",
    stderr: "pipe",
  },
);
let log = "";
for (const stream of [proc.stdout, proc.stderr]) {
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of stream as ReadableStream<Uint8Array>) log += decoder.decode(chunk);
  })();
}

try {
  const url = await until("the server to listen", () => {
    if (proc.exitCode !== null) throw new Error(`sluice exited with ${proc.exitCode}: ${log}`);
    const m = /"(?:url|dataPlane)":"http:\/\/[^:]+:(\d+)"/.exec(log);
    return m ? `http://127.0.0.1:${m[1]}` : undefined;
  });
  const call = async (method: string, path: string, body?: unknown, expectStatus = [200, 201]) => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${OWNER_TOKEN}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!expectStatus.includes(res.status)) throw new Error(`${method} ${path} → ${res.status} ${text}`);
    // Some answers are plain text (POST /v2/regulations answers `Created`).
    try {
      return text ? JSON.parse(text) : undefined;
    } catch {
      return text;
    }
  };

  const extraToken = await call("POST", "/v2/tokens", { name: "fixture-extra" });
  const web = await call("POST", "/v2/sources", { name: "web" });
  const backend = await call("POST", "/v2/sources", { name: "backend", settings: { lenientValidation: true } });
  const hook = await call("POST", "/v2/destinations", {
    name: "hook",
    type: "WEBHOOK",
    config: { webhookUrl: `${deadUrl}/hook`, webhookMethod: "POST" },
    sourceIds: [web.id, backend.id],
  });
  const amplitude = await call("POST", "/v2/destinations", { name: "amplitude", type: "AM", config: { apiKey: "fixture-am-key" }, sourceIds: [web.id] });
  const slack = await call("POST", "/v2/destinations", {
    name: "slack-off",
    type: "SLACK",
    enabled: false,
    config: { webhookUrl: `${deadUrl}/slack` },
    sourceIds: [backend.id],
  });
  const transformation = await call("POST", "/v2/transformations", {
    name: "tag-fixture",
    code: `export function transformEvent(event, metadata) { event.properties = { ...(event.properties || {}), upgradedFrom: "${version}" }; return event; }`,
    destinationIds: [hook.id],
  });
  await call("POST", "/v2/regulations", { regulationType: "suppress", users: [{ userId: SUPPRESSED_USER }] });
  const regulations = (await call("GET", "/v2/regulations")).data;

  const messageIds: Record<string, string[]> = { [web.id]: [], [backend.id]: [] };
  for (const source of [web, backend]) {
    const batch = Array.from({ length: QUEUED_PER_SOURCE }, (_, i) => ({
      type: "track",
      event: "Fixture Event",
      userId: `${source.name}-user-${i}`,
      messageId: `${source.name}-${i}`,
      properties: { i },
    }));
    // One event of the suppressed user: answered 200 but never stored.
    batch.push({ type: "track", event: "Fixture Event", userId: SUPPRESSED_USER, messageId: `${source.name}-suppressed`, properties: { i: -1 } });
    const res = await fetch(`${url}/v1/batch`, {
      method: "POST",
      headers: { authorization: `Basic ${btoa(`${source.writeKey}:`)}`, "content-type": "application/json" },
      body: JSON.stringify({ batch }),
    });
    if (res.status !== 200) throw new Error(`batch to ${source.name} → ${res.status} ${await res.text()}`);
    messageIds[source.id] = batch.filter((e) => e.userId !== SUPPRESSED_USER).map((e) => e.messageId);
  }
  // Each delivery failed once against the closed port and waits for its next try, as queued
  // events do on a server that was stopped while a destination was down.
  const expected: Record<string, number> = { [hook.id]: 2 * QUEUED_PER_SOURCE, [amplitude.id]: QUEUED_PER_SOURCE };
  for (const [id, n] of Object.entries(expected)) {
    let last: unknown;
    await until(`${n} retrying deliveries to ${id}`, async () => {
      const stats = await call("GET", `/v2/destinations/${id}/stats`);
      last = stats.counts;
      return stats.counts.retrying === n ? stats : undefined;
    }).catch((e) => {
      throw new Error(`${(e as Error).message}; last counts ${JSON.stringify(last)}`);
    });
  }

  proc.kill("SIGTERM");
  const code = await proc.exited;
  if (code !== 0) throw new Error(`sluice exited with ${code} on SIGTERM: ${log}`);

  // One file, as small as it gets: the WAL folded in, free pages dropped. Rewritten with 4 KB
  // pages: with 16 KB pages every table and index takes at least 16 KB, about 950 KB in all
  // against 270 KB. The page size is the only change, and a harmless one: data dirs made
  // before 16 KB pages have 4 KB pages, and an existing file keeps its own (db/index.ts).
  const db = new Database(join(dataDir, "sluice.db"));
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  // The page size of a WAL database cannot change; it goes back to WAL after the VACUUM.
  db.exec("PRAGMA journal_mode = DELETE");
  db.exec("PRAGMA page_size = 4096");
  db.exec("VACUUM");
  db.exec("PRAGMA journal_mode = WAL");
  db.close();
  mkdirSync(out, { recursive: true });
  copyFileSync(join(dataDir, "sluice.db"), join(out, "sluice.db"));
  if (existsSync(join(dataDir, "sluice.db-wal")) && statSync(join(dataDir, "sluice.db-wal")).size > 0) throw new Error("the WAL was not folded in");

  const fixture = {
    version,
    madeWith: "scripts/make-upgrade-fixture.ts (page size rewritten to 4 KB, see there)",
    owner: { email: OWNER_EMAIL, token: OWNER_TOKEN },
    tokens: [{ id: extraToken.id, name: "fixture-extra", token: extraToken.token }],
    sources: [web, backend].map((s) => ({ id: s.id, name: s.name, writeKey: s.writeKey })),
    destinations: [
      { id: hook.id, name: "hook", type: "WEBHOOK", enabled: true, queued: expected[hook.id], transformationId: transformation.id },
      { id: amplitude.id, name: "amplitude", type: "AM", enabled: true, queued: expected[amplitude.id], baseUrlFlag: "AM" },
      { id: slack.id, name: "slack-off", type: "SLACK", enabled: false, queued: 0 },
    ],
    transformations: [{ id: transformation.id, name: "tag-fixture", marks: { property: "upgradedFrom", value: version } }],
    regulations: regulations.map((r: any) => ({ id: r.id, regulationType: r.regulationType, userId: r.attributes.userId })),
    suppressedUserId: SUPPRESSED_USER,
    closedPort: deadPort,
    queuedMessageIds: messageIds,
    counts: { sources: 2, destinations: 3, tokens: 2, transformations: 1, regulations: regulations.length, queuedEvents: 2 * QUEUED_PER_SOURCE, queuedDeliveries: 3 * QUEUED_PER_SOURCE },
  };
  await Bun.write(join(out, "fixture.json"), `${JSON.stringify(fixture, null, 2)}\n`);
  console.log(`wrote ${join(out, "sluice.db")} (${statSync(join(out, "sluice.db")).size} bytes) and fixture.json for Sluice ${version}`);
} catch (e) {
  proc.kill("SIGKILL");
  console.error((e as Error).message);
  console.error(log);
  process.exitCode = 1;
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
