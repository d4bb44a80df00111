import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import journal from "../db/migrations/meta/_journal.json";
import { renderMigrationIndex } from "../scripts/embed-migrations";
import { SETTINGS, SettingsError, parseSettings } from "../src/settings";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, api, basic, cleanup, startSluice, tempDir } from "./support/helpers";

describe("settings", () => {
  test("defaults: port 8080, host 0.0.0.0, data dir ./data, FULL sync", () => {
    const s = parseSettings([], {});
    expect(s.port).toBe(8080);
    expect(s.host).toBe("0.0.0.0");
    expect(s.dataDir).toBe("./data");
    expect(s.adminEmail).toBe("admin@localhost");
    expect(s.synchronous).toBe("FULL");
    expect(s.apiPort).toBeUndefined();
  });

  test("a flag wins over its environment twin", () => {
    expect(parseSettings(["--port", "9001"], { PORT: "9002" }).port).toBe(9001);
    expect(parseSettings([], { PORT: "9002" }).port).toBe(9002);
  });

  test("a bad value names the setting", () => {
    expect(() => parseSettings([], { PORT: "eighty" })).toThrow(/PORT must be a whole number/);
    expect(() => parseSettings(["--log-level", "loud"], {})).toThrow(/--log-level must be one of/);
    expect(() => parseSettings(["--nope"], {})).toThrow(SettingsError);
    expect(() => parseSettings([], { SLUICE_ADMIN_EMAIL: "not-an-email" })).toThrow(/SLUICE_ADMIN_EMAIL/);
  });

  test("the warehouse load share: 0.05 by default, above 0 and at most 1", () => {
    expect(parseSettings([], {}).warehouseLoadShare).toBe(0.05);
    expect(parseSettings(["--warehouse-load-share", "1"], {}).warehouseLoadShare).toBe(1);
    expect(parseSettings([], { SLUICE_WAREHOUSE_LOAD_SHARE: "0.25" }).warehouseLoadShare).toBe(0.25);
    for (const bad of ["0", "-0.1", "1.5", "half", " "]) {
      expect(() => parseSettings([`--warehouse-load-share=${bad}`], {})).toThrow(/--warehouse-load-share must be a number above 0 and at most 1/);
    }
    expect(() => parseSettings([], { SLUICE_WAREHOUSE_LOAD_SHARE: "2" })).toThrow(/SLUICE_WAREHOUSE_LOAD_SHARE must be/);
  });

  test("destination base URLs parse as KIND=URL pairs", () => {
    expect(parseSettings([], { SLUICE_DESTINATION_BASE_URLS: "am=http://127.0.0.1:9/x, MP=http://127.0.0.1:8" }).destinationBaseUrls).toEqual({
      AM: "http://127.0.0.1:9/x",
      MP: "http://127.0.0.1:8",
    });
    expect(() => parseSettings(["--destination-base-url", "AM"], {})).toThrow(/KIND=URL/);
    expect(() => parseSettings(["--destination-base-url", "AM=file:///etc/passwd"], {})).toThrow(/--destination-base-url: the URL of AM must be http or https/);
  });

  test("the security settings: host lists, --trust-proxy as a bare flag, the output cap, a 24-character admin token", () => {
    const s = parseSettings(["--allow-destination-hosts", "127.0.0.0/8, ::1,*.corp.example", "--trust-proxy"], { SLUICE_DENY_DESTINATION_HOSTS: "10.0.0.0/8" });
    expect(s.allowDestinationHosts).toEqual(["127.0.0.0/8", "::1", "*.corp.example"]);
    expect(s.denyDestinationHosts).toEqual(["10.0.0.0/8"]);
    expect(s.trustProxy).toBe(true);
    expect(parseSettings([], {}).trustProxy).toBe(false);
    expect(parseSettings([], { SLUICE_TRUST_PROXY: "yes" }).trustProxy).toBe(true);
    expect(() => parseSettings([], { SLUICE_TRUST_PROXY: "maybe" })).toThrow(/SLUICE_TRUST_PROXY must be true or false/);
    expect(() => parseSettings([], { SLUICE_ALLOW_DESTINATION_HOSTS: "10.0.0.0/40" })).toThrow(/SLUICE_ALLOW_DESTINATION_HOSTS: '10.0.0.0\/40'/);
    expect(() => parseSettings(["--deny-destination-hosts", "not a host"], {})).toThrow(/--deny-destination-hosts: 'not a host'/);
    expect(parseSettings([], {}).transformOutputMaxBytes).toBe(4096 * 1024);
    expect(parseSettings(["--transform-output-max-kb", "16"], {}).transformOutputMaxBytes).toBe(16 * 1024);
    expect(() => parseSettings([], { SLUICE_ADMIN_TOKEN: "x".repeat(23) })).toThrow(/SLUICE_ADMIN_TOKEN must be at least 24 characters/);
    expect(parseSettings([], { SLUICE_ADMIN_TOKEN: "x".repeat(24) }).adminToken).toBe("x".repeat(24));
    expect(() => parseSettings(["--metrics-token", "short"], {})).toThrow(/--metrics-token must be at least 16 characters/);
  });

  test("docs/configuration.md documents every setting", async () => {
    const page = await Bun.file(join(import.meta.dir, "..", "docs", "configuration.md")).text();
    for (const s of SETTINGS) {
      if (s.flag) expect(page).toContain(`--${s.flag}`);
      if (s.env) expect(page).toContain(s.env);
    }
  });
});

test("embedded migrations match the drizzle journal (run npm run db:generate after changing db/schema)", async () => {
  const current = await Bun.file(join(import.meta.dir, "..", "db", "migrations", "index.ts")).text();
  expect(current).toBe(renderMigrationIndex(journal.entries.map((e) => e.tag)));
});

test("a new database file gets 16 KB pages; a file made with other pages keeps them and still migrates", async () => {
  const { Database } = await import("bun:sqlite");
  const { openDatabase, PAGE_SIZE } = await import("../db");
  const dir = tempDir();
  const pageSize = (db: { $client: InstanceType<typeof Database> }) => (db.$client.query("PRAGMA page_size").get() as { page_size: number }).page_size;
  const fresh = openDatabase(join(dir, "new.db"));
  expect(pageSize(fresh)).toBe(PAGE_SIZE);
  expect(PAGE_SIZE).toBe(16384);
  fresh.$client.close();
  // As Sluice made them before: 4 KB pages, WAL, a table already there.
  const old = new Database(join(dir, "old.db"), { create: true });
  old.exec("PRAGMA page_size = 4096");
  old.exec("PRAGMA journal_mode = WAL");
  old.exec("CREATE TABLE kept (x)");
  old.close();
  const reopened = openDatabase(join(dir, "old.db"));
  expect(pageSize(reopened)).toBe(4096);
  expect(reopened.$client.query("SELECT count(*) AS n FROM events").get()).toEqual({ n: 0 });
  reopened.$client.close();
  cleanup(dir);
});

describe("first start and tokens", () => {
  test("first start creates a workspace, an owner and a generated token; later starts keep them", async () => {
    const dir = tempDir();
    const first = await startSluice({ dataDir: dir, env: { SLUICE_ADMIN_TOKEN: "" } });
    const token = first.sluice.generatedToken!;
    expect(token).toMatch(/^sluice_/);
    const workspaceId = first.sluice.workspaceId;
    expect((await api(first.url, "GET", "/v2/sources", undefined, token)).status).toBe(200);
    // Only a hash is stored.
    const raw = JSON.stringify(first.sluice.db.$client.query("SELECT * FROM access_tokens").all());
    expect(raw).not.toContain(token);
    await first.stop();

    const second = await startSluice({ dataDir: dir, env: { SLUICE_ADMIN_TOKEN: "" } });
    expect(second.sluice.generatedToken).toBeUndefined();
    expect(second.sluice.workspaceId).toBe(workspaceId);
    expect((await api(second.url, "GET", "/v2/sources", undefined, token)).status).toBe(200);
    await second.stop();
    cleanup(dir);
  });

  test("sluice token create --email issues another working token", async () => {
    const dir = tempDir();
    const server = await startSluice({ dataDir: dir });
    await server.stop();
    const proc = Bun.spawnSync([process.execPath, "src/main.ts", "token", "create", "--email", ADMIN_EMAIL, "--data-dir", dir], { cwd: join(import.meta.dir, "..") });
    expect(proc.exitCode).toBe(0);
    const token = proc.stdout.toString().trim();
    expect(token).toMatch(/^sluice_/);
    const again = await startSluice({ dataDir: dir });
    expect((await api(again.url, "GET", "/v2/sources", undefined, token)).status).toBe(200);
    const bad = Bun.spawnSync([process.execPath, "src/main.ts", "token", "create", "--email", "nobody@x.y", "--data-dir", dir], { cwd: join(import.meta.dir, "..") });
    expect(bad.exitCode).not.toBe(0);
    expect(bad.stderr.toString()).toContain("nobody@x.y");
    await again.stop();
    cleanup(dir);
  });
});

describe("control-plane API", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startSluice();
  });
  afterAll(async () => {
    await s.stop();
    cleanup(s.dataDir);
  });

  test("missing or wrong credentials → 401", async () => {
    expect((await fetch(`${s.url}/v2/sources`)).status).toBe(401);
    expect((await api(s.url, "GET", "/v2/sources", undefined, "wrong-token-wrong-token")).status).toBe(401);
    const viaBasic = await fetch(`${s.url}/v2/sources`, { headers: { authorization: basic(ADMIN_EMAIL, ADMIN_TOKEN) } });
    expect(viaBasic.status).toBe(200);
    const wrongEmail = await fetch(`${s.url}/v2/sources`, { headers: { authorization: basic("other@example.com", ADMIN_TOKEN) } });
    expect(wrongEmail.status).toBe(401);
  });

  test("sources: create, list, read, update, delete", async () => {
    const created = await api(s.url, "POST", "/v2/sources", { name: "web" });
    expect(created.status).toBe(201);
    expect(created.json.writeKey.length).toBeGreaterThanOrEqual(20);
    expect(created.json.enabled).toBe(true);
    const list = await api(s.url, "GET", "/v2/sources");
    expect(list.json.sources.map((x: any) => x.name)).toContain("web");
    const one = await api(s.url, "GET", `/v2/sources/${created.json.id}`);
    expect(one.json).toMatchObject({ id: created.json.id, name: "web", destinationIds: [] });
    const upd = await api(s.url, "PATCH", `/v2/sources/${created.json.id}`, { enabled: false, settings: { lenientValidation: true } });
    expect(upd.json).toMatchObject({ enabled: false, settings: { lenientValidation: true } });
    expect((await api(s.url, "POST", "/v2/sources", { name: "web" })).status).toBe(409);
    expect((await api(s.url, "DELETE", `/v2/sources/${created.json.id}`)).status).toBe(204);
    expect((await api(s.url, "GET", `/v2/sources/${created.json.id}`)).status).toBe(404);
  });

  test("a bad body gets 400 naming the field", async () => {
    const res = await api(s.url, "POST", "/v2/sources", { name: 5 });
    expect(res.status).toBe(400);
    expect(res.json.message).toContain("name");
    const noName = await api(s.url, "POST", "/v2/sources", {});
    expect(noName.status).toBe(400);
    expect(noName.json.message).toContain("name");
    const unknownKey = await api(s.url, "POST", "/v2/sources", { name: "x-unknown", bogus: 1 });
    expect(unknownKey.status).toBe(400);
    expect(unknownKey.json.message).toContain("bogus");
    const stringConfig = await api(s.url, "POST", "/v2/destinations", { name: "d", type: "WEBHOOK", config: "http://x" });
    expect(stringConfig.status).toBe(400);
    expect(stringConfig.json.message).toContain("config");
    expect(stringConfig.json.message).not.toContain("webhookUrl");
    const badJson = await fetch(`${s.url}/v2/sources`, { method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: "{nope" });
    expect(badJson.status).toBe(400);
  });

  test("destinations: config validated against the definition; connections by sourceIds", async () => {
    const src = (await api(s.url, "POST", "/v2/sources", { name: "app" })).json;
    const bad = await api(s.url, "POST", "/v2/destinations", { name: "h", type: "WEBHOOK", config: {} });
    expect(bad.status).toBe(400);
    expect(bad.json.message).toContain("config.webhookUrl");
    const unknown = await api(s.url, "POST", "/v2/destinations", { name: "h", type: "NOPE", config: {} });
    expect(unknown.status).toBe(400);
    expect(unknown.json.message).toContain("type");
    const dst = await api(s.url, "POST", "/v2/destinations", { name: "hook", type: "WEBHOOK", config: { webhookUrl: "http://127.0.0.1:1/x" }, sourceIds: [src.id] });
    expect(dst.status).toBe(201);
    expect(dst.json).toMatchObject({ name: "hook", type: "WEBHOOK", enabled: true, sourceIds: [src.id] });
    const listed = await api(s.url, "GET", "/v2/destinations");
    expect(listed.json.destinations.find((d: any) => d.id === dst.json.id).config.webhookUrl).toBe("http://127.0.0.1:1/x");
    expect((await api(s.url, "GET", `/v2/sources/${src.id}`)).json.destinationIds).toEqual([dst.json.id]);
    expect((await api(s.url, "DELETE", "/v2/connections", { sourceId: src.id, destinationId: dst.json.id })).status).toBe(204);
    expect((await api(s.url, "GET", `/v2/destinations/${dst.json.id}`)).json.sourceIds).toEqual([]);
    expect((await api(s.url, "POST", "/v2/connections", { sourceId: src.id, destinationId: dst.json.id })).status).toBe(201);
    expect((await api(s.url, "GET", "/v2/connections")).json.connections).toContainEqual(expect.objectContaining({ sourceId: src.id, destinationId: dst.json.id }));
    expect((await api(s.url, "POST", "/v2/connections", { sourceId: "src_nope", destinationId: dst.json.id })).status).toBe(404);
  });

  test("a token sees and changes only its own workspace", async () => {
    const db = s.sluice.db.$client;
    const now = Date.now();
    db.run("INSERT INTO workspaces (id, name, created_at) VALUES ('ws_other', 'other', ?)", [now]);
    db.run("INSERT INTO accounts (id, workspace_id, email, role, created_at) VALUES ('acc_other', 'ws_other', 'o@example.com', 'owner', ?)", [now]);
    const { storeToken } = await import("../src/control-plane/tokens");
    storeToken(s.sluice.db, { accountId: "acc_other", workspaceId: "ws_other", token: "other-workspace-token-123", now });
    const mine = (await api(s.url, "POST", "/v2/sources", { name: "mine-only" })).json;
    const theirs = await api(s.url, "GET", "/v2/sources", undefined, "other-workspace-token-123");
    expect(theirs.status).toBe(200);
    expect(theirs.json.sources).toEqual([]);
    expect((await api(s.url, "GET", `/v2/sources/${mine.id}`, undefined, "other-workspace-token-123")).status).toBe(404);
    expect((await api(s.url, "PATCH", `/v2/sources/${mine.id}`, { enabled: false }, "other-workspace-token-123")).status).toBe(404);
    expect((await api(s.url, "DELETE", `/v2/sources/${mine.id}`, undefined, "other-workspace-token-123")).status).toBe(404);
  });

  test("GET /destination-definitions lists WEBHOOK with webhookUrl, webhookMethod, headers", async () => {
    const res = await fetch(`${s.url}/destination-definitions`);
    const defs = (await res.json() as any);
    const webhook = defs.find((d: any) => d.name === "WEBHOOK");
    // The spec's three keys first; then RudderStack's per-platform key and its live-events switches.
    expect(webhook.config.defaultConfig.slice(0, 3)).toEqual(["webhookUrl", "webhookMethod", "headers"]);
    expect(webhook.config.defaultConfig).toEqual(["webhookUrl", "webhookMethod", "headers", "oneTrustCookieCategories", "eventDelivery", "eventDeliveryTS"]);
    expect(webhook.displayName).toBe("Webhook");
  });

  test("health, version, metrics and the OpenAPI description", async () => {
    const health = await fetch(`${s.url}/health`);
    expect(health.status).toBe(200);
    expect(((await health.json() as any)).database).toBe("ok");
    expect(((await (await fetch(`${s.url}/version`)).json()) as any).version).toMatch(/^\d+\.\d+\.\d+/);
    await fetch(`${s.url}/v2/sources`);
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(metrics).toContain('sluice_http_requests_total{method="GET",route="/v2/sources",status="401"}');
    expect(metrics).toContain("sluice_http_request_duration_seconds_bucket");
    // docs/operations.md names every metric.
    const operations = await Bun.file(join(import.meta.dir, "..", "docs", "operations.md")).text();
    const names = [...new Set([...metrics.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]!))];
    expect(names.length).toBeGreaterThan(8);
    expect(names.filter((n) => !operations.includes(`\`${n}\``))).toEqual([]);
    const doc = (await (await fetch(`${s.url}/openapi/json`)).json()) as any;
    for (const p of ["/v1/track", "/v1/batch", "/v2/sources", "/v2/destinations", "/destination-definitions", "/health"]) expect(Object.keys(doc.paths)).toContain(p);
    expect((await fetch(`${s.url}/openapi`)).status).toBe(200);
  });

  test("unknown routes get a JSON 404", async () => {
    const res = await fetch(`${s.url}/nope`);
    expect(res.status).toBe(404);
    expect(((await res.json() as any)).message).toContain("/nope");
  });
});

describe("workspace file", () => {
  const yaml = (hookPort: number) => `
sources:
  - { name: web, writeKey: fixed-write-key-123, enabled: true }
  - { name: mobile }
destinations:
  - name: my-hook
    type: WEBHOOK
    config: { webhookUrl: "http://127.0.0.1:${hookPort}/hook", webhookMethod: POST, headers: [{ from: X-Env, to: prod }] }
    enabled: true
    sources: [web, mobile]
`;

  test("YAML file applied at start, idempotently, keeping generated write keys across restarts", async () => {
    const dir = tempDir();
    const file = join(dir, "workspace.yaml");
    writeFileSync(file, yaml(9000));
    const a = await startSluice({ dataDir: dir, args: ["--config", file] });
    const sources = (await api(a.url, "GET", "/v2/sources")).json.sources;
    expect(sources.map((x: any) => x.name).sort()).toEqual(["mobile", "web"]);
    expect(sources.find((x: any) => x.name === "web").writeKey).toBe("fixed-write-key-123");
    const mobileKey = sources.find((x: any) => x.name === "mobile").writeKey;
    const dests = (await api(a.url, "GET", "/v2/destinations")).json.destinations;
    expect(dests).toHaveLength(1);
    expect(dests[0].sourceIds).toHaveLength(2);
    await a.stop();

    writeFileSync(file, yaml(9001));
    const b = await startSluice({ dataDir: dir, args: ["--config", file] });
    const again = (await api(b.url, "GET", "/v2/sources")).json.sources;
    expect(again).toHaveLength(2);
    expect(again.find((x: any) => x.name === "mobile").writeKey).toBe(mobileKey);
    const d2 = (await api(b.url, "GET", "/v2/destinations")).json.destinations;
    expect(d2).toHaveLength(1);
    expect(d2[0].config.webhookUrl).toBe("http://127.0.0.1:9001/hook");
    await b.stop();
    cleanup(dir);
  });

  test("RudderStack's workspaceConfig.json is accepted", async () => {
    const dir = tempDir();
    const file = join(dir, "workspaceConfig.json");
    const hook = { id: "d1", name: "hook", enabled: true, config: { webhookUrl: "http://127.0.0.1:9/x", webhookMethod: "POST" }, destinationDefinition: { name: "WEBHOOK", displayName: "Webhook" } };
    writeFileSync(
      file,
      JSON.stringify({
        workspaceId: "x",
        sources: [
          { id: "s1", name: "js", writeKey: "rudder-write-key-1", enabled: true, sourceDefinition: { name: "Javascript" }, destinations: [hook] },
          { id: "s2", name: "node", writeKey: "rudder-write-key-2", enabled: false, sourceDefinition: { name: "Node" }, destinations: [hook] },
        ],
      }),
    );
    const s = await startSluice({ dataDir: dir, args: ["--config", file] });
    const sources = (await api(s.url, "GET", "/v2/sources")).json.sources;
    expect(sources.map((x: any) => [x.name, x.writeKey, x.enabled])).toEqual([
      ["js", "rudder-write-key-1", true],
      ["node", "rudder-write-key-2", false],
    ]);
    const dests = (await api(s.url, "GET", "/v2/destinations")).json.destinations;
    expect(dests).toHaveLength(1);
    expect(dests[0].sourceIds).toHaveLength(2);
    await s.stop();
    cleanup(dir);
  });

  test("an invalid file stops start-up naming the file, the path and the problem", async () => {
    const dir = tempDir();
    const file = join(dir, "bad.yaml");
    writeFileSync(file, "destinations:\n  - name: x\n    type: WEBHOOK\n    config: { webhookMethod: POST }\n");
    await expect(startSluice({ dataDir: dir, args: ["--config", file] })).rejects.toThrow(`${file}: destinations[0].config.webhookUrl: is required`);
    writeFileSync(file, "destinations:\n  - name: x\n    type: WEBHOOK\n    config: { webhookUrl: http://h/ }\n    sources: [ghost]\n");
    await expect(startSluice({ dataDir: dir, args: ["--config", file] })).rejects.toThrow("destinations[0].sources[0]: no source named 'ghost'");
    writeFileSync(file, "sources: [ {name: 1} ]\n");
    await expect(startSluice({ dataDir: dir, args: ["--config", file] })).rejects.toThrow("sources[0].name");
    cleanup(dir);
  });
});

test("--api-port serves the APIs on their own listener; event calls stay on --port", async () => {
  const { spawnSluice } = await import("./support/helpers");
  const server = await spawnSluice({ args: ["--api-port", "0"] });
  const apiPort = /"api":"http:\/\/[^:]+:(\d+)"/.exec(server.output())![1];
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const src = await api(apiUrl, "POST", "/v2/sources", { name: "split" });
  expect(src.status).toBe(201);
  // The data plane has no control plane, the API port takes no events.
  expect((await api(server.url, "GET", "/v2/sources")).status).toBe(404);
  const ok = await fetch(`${server.url}/v1/track`, { method: "POST", headers: { authorization: basic(src.json.writeKey) }, body: JSON.stringify({ userId: "u", event: "E" }) });
  expect(ok.status).toBe(200);
  expect((await fetch(`${apiUrl}/v1/track`, { method: "POST", headers: { authorization: basic(src.json.writeKey) }, body: "{}" })).status).toBe(404);
  expect((await fetch(`${server.url}/health`)).status).toBe(200);
  expect((await fetch(`${apiUrl}/destination-definitions`)).status).toBe(200);
  server.proc.kill("SIGTERM");
  expect(await server.proc.exited).toBe(0);
  cleanup(server.dataDir);
});

test("serve restarts itself once (same pid) with the collector paced to --gc-memory-mb; 0 or the user's own BUN_JSC_forceRAMSize is left alone", async () => {
  const { spawnSluice } = await import("./support/helpers");
  const forcedRam = (pid: number) => /(?:^|\0)BUN_JSC_forceRAMSize=([^\0]*)/.exec(readFileSync(`/proc/${pid}/environ`, "utf8"))?.[1];
  const cases: Array<{ args?: string[]; env: Record<string, string | undefined>; bytes: string | undefined; logged: number | undefined }> = [
    { env: { BUN_JSC_forceRAMSize: undefined }, bytes: String(128 * 1024 * 1024), logged: 128 },
    { args: ["--gc-memory-mb", "300"], env: { BUN_JSC_forceRAMSize: undefined }, bytes: String(300 * 1024 * 1024), logged: 300 },
    { args: ["--gc-memory-mb", "0"], env: { BUN_JSC_forceRAMSize: undefined }, bytes: undefined, logged: undefined },
    { env: { BUN_JSC_forceRAMSize: String(64 * 1024 * 1024) }, bytes: String(64 * 1024 * 1024), logged: 64 },
  ];
  for (const c of cases) {
    const server = await spawnSluice({ args: c.args, env: c.env });
    // Read from the pid Bun.spawn started: the restart keeps it.
    expect(forcedRam(server.proc.pid)).toBe(c.bytes);
    const listening = JSON.parse(server.output().split("\n").find((l) => l.includes('"listening"'))!);
    expect(listening.gcMemoryMb).toBe(c.logged);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    server.proc.kill("SIGTERM");
    expect(await server.proc.exited).toBe(0);
    cleanup(server.dataDir);
  }
});

test("docs/configuration.md's workspace file example applies as written", async () => {
  const page = await Bun.file(join(import.meta.dir, "..", "docs", "configuration.md")).text();
  const section = page.slice(page.indexOf("## Workspace file"));
  const yaml = /```yaml\n([\s\S]*?)```/.exec(section)![1];
  const dir = tempDir();
  const file = join(dir, "workspace.yaml");
  writeFileSync(file, yaml);
  const s = await startSluice({ dataDir: dir, args: ["--config", file] });
  const sources = (await api(s.url, "GET", "/v2/sources")).json.sources;
  expect(sources.map((x: any) => x.name).sort()).toEqual(["backend", "forms", "shop", "web"]);
  const byName = new Map(sources.map((x: any) => [x.name, x]));
  expect((byName.get("shop") as any).sourceDefinition).toMatchObject({ name: "Shopify", category: "webhook" });
  expect((byName.get("forms") as any).config).toEqual({ putRequestDetailsInContext: true });
  const dest = (await api(s.url, "GET", "/v2/destinations")).json.destinations[0];
  expect(dest.transformationId).toBeTruthy();
  const t = (await api(s.url, "GET", "/v2/transformations")).json.transformations[0];
  expect(t).toMatchObject({ name: "tag-events", destinationIds: [dest.id] });
  await s.stop();
  cleanup(dir);
});

describe("the docs", () => {
  const root = join(import.meta.dir, "..");

  test("README.md stays under 10 KB (the rest lives in docs/)", () => {
    expect(statSync(join(root, "README.md")).size).toBeLessThan(10_240);
  });

  test("every relative link in README.md, CONTRIBUTING.md and docs/*.md points at a file that exists", () => {
    const pages = ["README.md", "CONTRIBUTING.md", ...readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => join("docs", f))];
    expect(pages.length).toBeGreaterThan(10);
    const broken: string[] = [];
    for (const page of pages) {
      const text = readFileSync(join(root, page), "utf8").replace(/```[\s\S]*?```/g, "");
      for (const m of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const target = m[1]!.split("#")[0]!;
        if (target === "" || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // an anchor on the same page, or a URL
        if (!existsSync(join(root, dirname(page), decodeURIComponent(target)))) broken.push(`${page}: ${m[1]}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
