/**
 * A RudderStack workspace runs on Sluice as it ran before (test/fixtures/rudderstack/import.json,
 * RudderStack's exported workspaceConfig.json shape): kinds Sluice lacks (GCS, BigQuery) are kept
 * with their config and marked unsupported instead of stopping start-up, receive nothing and
 * queue nothing; sources keep their sourceDefinition, and a cloud source (which RudderStack pulls
 * from) is marked unsupported while its write key still takes event calls; device-mode and
 * hybrid destinations reach the SDKs through /sourceConfig; the cloud webhook delivers.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { migrateToPostgres } from "../../src/ops/migrate-to-postgres";
import { type SluiceProcess, api, cleanup, onPostgres, sendEvent, spawnSluice, startSink, startSluice, tempDir, waitFor } from "../support/helpers";
import { PG_URL, havePostgres, testSql } from "../support/pg";

const FIXTURE = join(import.meta.dir, "../fixtures", "rudderstack", "import.json");
const WEB_KEY = "shop-web-write-key-0001";
const NODE_KEY = "shop-node-write-key-0001";

/** The fixture with its webhooks (and any other kind's requests) sent to a sink of the test, and `edit` applied. */
function workspaceFile(dir: string, sinkUrl: string, edit: (doc: any) => void = () => {}): string {
  const doc = JSON.parse(readFileSync(FIXTURE, "utf8"));
  for (const s of doc.sources) for (const d of s.destinations) if (d.config.webhookUrl) d.config.webhookUrl = d.config.webhookUrl.replace("http://127.0.0.1:9", sinkUrl);
  edit(doc);
  const file = join(dir, "workspaceConfig.json");
  writeFileSync(file, JSON.stringify(doc));
  return file;
}

const byName = (list: any[], name: string) => list.find((d) => d.name === name);

describe("a RudderStack workspace with kinds Sluice lacks", () => {
  let server: SluiceProcess;
  let sink: ReturnType<typeof startSink>;
  let dir: string;
  let file: string;

  beforeAll(async () => {
    sink = startSink();
    dir = tempDir();
    // A second GCS destination: the start-up warning is one line per kind, not per destination.
    file = workspaceFile(dir, sink.url, (doc) =>
      doc.sources[1].destinations.push({ ...doc.sources[0].destinations[0], id: "dst-s3-0002", name: "Order archive", config: { ...doc.sources[0].destinations[0].config, bucketName: "shop-orders" } }),
    );
    // Kinds Sluice has are sent to the sink too, so nothing leaves the machine.
    server = await spawnSluice({ dataDir: dir, args: ["--config", file, "--destination-base-url", `AM=${sink.url}/am,BRAZE=${sink.url}/braze`] });
  }, 60_000);

  afterAll(async () => {
    server?.proc.kill();
    await server?.proc.exited;
    sink?.stop();
    await cleanup(dir);
  });

  test("sluice serve starts and logs one warning per kind it lacks, naming its destinations", () => {
    const warnings = server
      .output()
      .split("\n")
      .filter((l) => l.includes("destination kind not in this version of Sluice"))
      .map((l) => JSON.parse(l));
    expect(warnings.map((w) => w.kind).sort()).toEqual(["BQ", "GCS"]);
    expect(warnings.find((w) => w.kind === "GCS").destinations.sort()).toEqual(["Order archive", "Raw events archive"]);
    const pulled = server.output().split("\n").filter((l) => l.includes("source kind that RudderStack pulls from"));
    expect(pulled).toHaveLength(1);
    expect(JSON.parse(pulled[0]!)).toMatchObject({ kind: "salesforce", sources: ["CRM sync"] });
  });

  test("GCS and BigQuery are kept with the file's full config and connections, marked unsupported; the rest are not", async () => {
    const { destinations } = (await api(server.url, "GET", "/v2/destinations")).json;
    const s3 = byName(destinations, "Raw events archive");
    expect(s3).toMatchObject({ type: "GCS", unsupported: true, enabled: true });
    expect(s3.config).toEqual({ bucketName: "shop-raw-events", prefix: "rudder", accessKeyID: "AKIAEXAMPLEKEY", accessKey: "example-secret-access-key", enableSSE: false });
    expect(s3.sourceIds).toHaveLength(1);
    expect(byName(destinations, "Analytics warehouse")).toMatchObject({ type: "BQ", unsupported: true });
    expect(byName(destinations, "Analytics warehouse").config.project).toBe("shop-analytics");
    for (const name of ["Product analytics (browser)", "Engagement", "Order hook", "Enriched hook"]) expect(byName(destinations, name).unsupported).toBe(false);
  });

  test("sources keep the file's sourceDefinition; the cloud source (Salesforce) is marked unsupported, the event-stream ones are not", async () => {
    const { sources } = (await api(server.url, "GET", "/v2/sources")).json;
    const seen = Object.fromEntries(sources.map((s: any) => [s.name, { unsupported: s.unsupported, sourceDefinition: s.sourceDefinition }]));
    expect(seen).toEqual({
      "Shop website": { unsupported: false, sourceDefinition: { name: "Javascript", category: null, type: "web" } },
      "Order service": { unsupported: false, sourceDefinition: { name: "Node", category: null, type: "cloud" } },
      "CRM sync": { unsupported: true, sourceDefinition: { name: "salesforce", category: "cloud", type: "cloud" } },
    });
    const crm = byName(sources, "CRM sync");
    expect((await api(server.url, "GET", `/v2/sources/${crm.id}`)).json).toMatchObject({ name: "CRM sync", writeKey: "shop-salesforce-write-key-0001", unsupported: true, sourceDefinition: { name: "salesforce" } });
    // Made through the API: no file said what kind it is.
    const made = await api(server.url, "POST", "/v2/sources", { name: "made-here" });
    expect(made.json).toMatchObject({ unsupported: false, sourceDefinition: null });
    await api(server.url, "DELETE", `/v2/sources/${made.json.id}`);
  });

  test("connectionMode: the file's is kept; a connection that was not processor-enabled becomes device; cloud ones are left as they were", async () => {
    const { destinations } = (await api(server.url, "GET", "/v2/destinations")).json;
    expect(byName(destinations, "Product analytics (browser)").config.connectionMode).toBe("device");
    expect(byName(destinations, "Engagement").config.connectionMode).toBe("hybrid");
    expect(byName(destinations, "Order hook").config.connectionMode).toBeUndefined();
  });

  test("events reach the cloud webhook; nothing is queued for the unsupported destinations", async () => {
    expect((await sendEvent(server.url, NODE_KEY, "track", { userId: "u-1", event: "Order Completed" })).status).toBe(200);
    expect((await sendEvent(server.url, WEB_KEY, "track", { userId: "u-2", event: "Product Viewed" })).status).toBe(200);
    await waitFor(() => sink.received.filter((r) => r.path === "/orders").length >= 2, { what: "both events at the order hook" });
    const { destinations } = (await api(server.url, "GET", "/v2/destinations")).json;
    for (const name of ["Raw events archive", "Order archive", "Analytics warehouse"]) {
      const { counts } = (await api(server.url, "GET", `/v2/destinations/${byName(destinations, name).id}/stats`)).json;
      expect({ name, queued: Object.values(counts as Record<string, number>).reduce((a, b) => a + b, 0) }).toEqual({ name, queued: 0 });
    }
  });

  test("/sourceConfig lists the source's device-mode and hybrid destinations as RudderStack's control plane does, with only the keys a browser may see", async () => {
    const res = await fetch(`${server.url}/sourceConfig?writeKey=${WEB_KEY}`);
    expect(res.status).toBe(200);
    const { source } = (await res.json()) as any;
    expect(source.name).toBe("Shop website");
    const listed = Object.fromEntries(source.destinations.map((d: any) => [d.name, d]));
    expect(Object.keys(listed).sort()).toEqual(["Engagement", "Product analytics (browser)"]);
    expect(listed["Product analytics (browser)"]).toMatchObject({
      enabled: true,
      destinationDefinition: { name: "AM", displayName: "Amplitude" },
      shouldApplyDeviceModeTransformation: false,
      propagateEventsUntransformedOnError: false,
    });
    // includeKeys, plus the mode the SDK reads; never secretKeys.
    expect(listed["Product analytics (browser)"].config).toEqual({ apiKey: "amplitude-public-key-0001", trackAllPages: true, trackNamedPages: true, residencyServer: "standard", connectionMode: "device" });
    expect(listed.Engagement.destinationDefinition).toMatchObject({ name: "BRAZE", displayName: "Braze" });
    expect(listed.Engagement.config).toEqual({ connectionMode: "hybrid", appKey: "braze-app-key-0001", dataCenter: "US-03", trackAnonymousUser: true });
  });

  test("/sourceConfig of a source with only cloud destinations lists none, as before", async () => {
    const { source } = (await (await fetch(`${server.url}/sourceConfig?writeKey=${NODE_KEY}`)).json()) as any;
    expect(source).toMatchObject({ name: "Order service", enabled: true, config: {}, destinations: [] });
  });

  test("the unsupported cloud source's write key still takes event calls, which reach its destinations", async () => {
    const { sources } = (await api(server.url, "GET", "/v2/sources")).json;
    const { destinations } = (await api(server.url, "GET", "/v2/destinations")).json;
    const crm = byName(sources, "CRM sync");
    const link = { sourceId: crm.id, destinationId: byName(destinations, "Order hook").id };
    expect((await api(server.url, "POST", "/v2/connections", link)).status).toBe(201);
    expect((await sendEvent(server.url, "shop-salesforce-write-key-0001", "track", { userId: "crm-user-1", event: "Lead Created" })).status).toBe(200);
    await waitFor(() => sink.received.find((r) => r.path === "/orders" && r.body?.userId === "crm-user-1"), { what: "the cloud source's event at the order hook" });
    await api(server.url, "DELETE", "/v2/connections", link);
  });

  test("the API still refuses a kind it lacks (400 naming type): holding is for imported files", async () => {
    const r = await api(server.url, "POST", "/v2/destinations", { name: "new-s3", type: "GCS", config: { bucketName: "b" } });
    expect(r.status).toBe(400);
    expect(r.json.message).toStartWith("type: unknown destination type 'GCS'");
    // An unsupported destination can still be switched off and on.
    const { destinations } = (await api(server.url, "GET", "/v2/destinations")).json;
    const off = await api(server.url, "PATCH", `/v2/destinations/${byName(destinations, "Analytics warehouse").id}`, { enabled: false });
    expect(off.json).toMatchObject({ enabled: false, unsupported: true });
  });

  test("POST /v2/workspace-check answers what each entry will do, the same as sluice check-config", async () => {
    const r = await api(server.url, "POST", "/v2/workspace-check", JSON.parse(readFileSync(FIXTURE, "utf8")));
    expect(r.status).toBe(200);
    expect(r.json.format).toBe("rudderstack");
    const status = Object.fromEntries(r.json.entries.map((e: any) => [`${e.kind} ${e.name}`, e.status]));
    expect(status).toEqual({
      "source Shop website": "runs",
      "source Order service": "runs",
      "source CRM sync": "held",
      "destination Raw events archive": "held",
      "destination Analytics warehouse": "held",
      "destination Product analytics (browser)": "device",
      "destination Engagement": "runs",
      "destination Order hook": "runs",
      "destination Enriched hook": "held",
      "transformation trf-enrich-0001": "held",
    });
    expect(r.json.counts).toEqual({ runs: 4, device: 1, held: 5, error: 0 });
    const bad = await api(server.url, "POST", "/v2/workspace-check", [1, 2]);
    expect(bad.status).toBe(400);
    expect(bad.json.message).toContain("expected an object");
    const anonymous = await fetch(`${server.url}/v2/workspace-check`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(anonymous.status).toBe(401);
  });
});

test.skipIf(onPostgres)("a kept destination is served by the kind once the server has it: nothing is stored that holds it back, no new import", async () => {
  const sink = startSink();
  const dir = tempDir();
  // WEBHOOK_NEXT stands in for a kind a later version adds: the row keeps type and config, and
  // the kind is looked up whenever the config is loaded.
  const file = workspaceFile(dir, sink.url, (doc) => {
    doc.sources = [doc.sources[1]];
    doc.sources[0].destinations[0].destinationDefinition.name = "WEBHOOK_NEXT";
  });
  const first = await startSluice({ dataDir: dir, args: ["--config", file] });
  const [held] = (await api(first.url, "GET", "/v2/destinations")).json.destinations;
  expect(held).toMatchObject({ type: "WEBHOOK_NEXT", unsupported: true });
  await first.stop();

  // The later version: the kind now exists under that name (here, by renaming the stored kind).
  const db = new Database(join(dir, "sluice.db"));
  db.run("UPDATE destinations SET type = 'WEBHOOK' WHERE id = ?", [held.id]);
  db.close();
  const later = await startSluice({ dataDir: dir });
  const [served] = (await api(later.url, "GET", "/v2/destinations")).json.destinations;
  expect(served).toMatchObject({ id: held.id, unsupported: false, config: held.config });
  expect((await sendEvent(later.url, NODE_KEY, "track", { userId: "u-3", event: "Order Completed" })).status).toBe(200);
  await waitFor(() => sink.received.find((r) => r.path === "/orders"), { what: "the event at the kept destination" });
  await later.stop();
  sink.stop();
  await cleanup(dir);
}, 60_000);

test.skipIf(onPostgres || !havePostgres)("migrate-to-postgres carries each destination's and source's RudderStack definition over, as a JSON object", async () => {
  const dir = tempDir();
  const first = await startSluice({ dataDir: dir, args: ["--config", workspaceFile(dir, "http://127.0.0.1:9")] });
  await first.stop();
  const schema = `t_rsimport_${Math.random().toString(36).slice(2, 10)}`;
  const sql = testSql();
  try {
    await migrateToPostgres({ dataDir: dir, url: PG_URL, schema });
    const rows = await sql.unsafe(`SELECT type, jsonb_typeof(rudder_definition) AS kind, rudder_definition->>'displayName' AS "displayName", rudder_definition->'config'->'includeKeys'->>0 AS "firstKey" FROM "${schema}".destinations ORDER BY type`);
    expect(rows.map((r: any) => ({ ...r }))).toEqual([
      { type: "AM", kind: "object", displayName: "Amplitude", firstKey: "apiKey" },
      { type: "BQ", kind: "object", displayName: "BigQuery", firstKey: null },
      { type: "BRAZE", kind: "object", displayName: "Braze", firstKey: "appKey" },
      { type: "GCS", kind: "object", displayName: "Google Cloud Storage", firstKey: null },
      { type: "WEBHOOK", kind: "object", displayName: "Webhook", firstKey: null },
      { type: "WEBHOOK", kind: "object", displayName: "Webhook", firstKey: null },
    ]);
    const sources = await sql.unsafe(`SELECT name, jsonb_typeof(rudder_definition) AS kind, rudder_definition->>'type' AS type, rudder_definition->>'category' AS category FROM "${schema}".sources ORDER BY name`);
    expect(sources.map((r: any) => ({ ...r }))).toEqual([
      { name: "CRM sync", kind: "object", type: "cloud", category: "cloud" },
      { name: "Order service", kind: "object", type: "cloud", category: null },
      { name: "Shop website", kind: "object", type: "web", category: null },
    ]);
  } finally {
    await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await sql.close();
    await cleanup(dir);
  }
}, 60_000);
