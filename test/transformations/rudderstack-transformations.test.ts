/**
 * Transformations are never silently skipped. A RudderStack workspaceConfig.json names each
 * destination's transformation by versionId; the code stays in RudderStack's control plane.
 * Such a destination is held (its events queue, nothing goes out untransformed) and says why,
 * until the code is supplied: `transformations/<versionId>.js` beside the file, `code` in the
 * file, or `sluice import-transformations` with RudderStack's export (test/fixtures/rudderstack/
 * transformations.json, whose transformation imports a library).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, api, cleanup, onPostgres, sendEvent, startSink, startSluice, tempDir, waitFor } from "../support/helpers";

const ROOT = join(import.meta.dir, "../..");
const FIXTURES = join(import.meta.dir, "../fixtures", "rudderstack");
const WRITE_KEY = "shop-web-write-key-tr01";
const PII_VERSION = "2QfZxRemovePiiV3";
const FOLDER_VERSION = "2QfZxTagOrdersV1";

function webhook(id: string, name: string, url: string, transformations: unknown[] = []) {
  return {
    id,
    name,
    enabled: true,
    isProcessorEnabled: true,
    config: { webhookUrl: url, webhookMethod: "POST" },
    transformations,
    destinationDefinition: { id: "def-webhook", name: "WEBHOOK", displayName: "Webhook", config: { transformAt: "processor" } },
  };
}

/** A RudderStack workspace: a control webhook without a transformation, and the given ones. */
function workspaceFile(dir: string, sinkUrl: string, destinations: unknown[]): string {
  const doc = {
    workspaceId: "ws-shop-tr01",
    sources: [
      {
        id: "src-web-tr01",
        name: "Shop website",
        writeKey: WRITE_KEY,
        enabled: true,
        sourceDefinition: { id: "def-js", name: "Javascript", category: null },
        destinations: [webhook("dst-plain", "Plain", `${sinkUrl}/plain`), ...destinations],
      },
    ],
  };
  const file = join(dir, "workspaceConfig.json");
  writeFileSync(file, JSON.stringify(doc));
  return file;
}

const track = (n: number) => ({ type: "track", event: "Order Completed", userId: `user-${n}`, messageId: `msg-${n}`, context: { traits: { email: "a@example.com", phone: "+100" } }, properties: { n } });

function importTransformations(dataDir: string, file: string) {
  const r = Bun.spawnSync([process.execPath, "src/main.ts", "import-transformations", file, "--data-dir", dataDir], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

// The import command writes the data dir's SQLite (or --database, which these tests do not pass).
describe.skipIf(onPostgres)("a RudderStack transformation whose code is missing", () => {
  let server: TestServer;
  let sink: ReturnType<typeof startSink>;
  let dir: string;

  beforeAll(async () => {
    sink = startSink();
    dir = tempDir();
    const file = workspaceFile(dir, sink.url, [webhook("dst-pii", "Scrubbed", `${sink.url}/pii`, [{ id: "2QfZxRemovePii", versionId: PII_VERSION, config: {} }])]);
    server = await startSluice({ dataDir: dir, args: ["--config", file] });
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    sink?.stop();
    await cleanup(dir);
  });

  test("its destination is held: the event reaches the control destination and not it, and the API says why", async () => {
    expect((await sendEvent(server.url, WRITE_KEY, "track", track(1))).status).toBe(200);
    await waitFor(() => sink.received.find((r) => r.path === "/plain"), { what: "the control destination's delivery" });
    const { transformations } = (await api(server.url, "GET", "/v2/transformations")).json;
    const t = transformations.find((x: any) => x.rudderStackVersionId === PII_VERSION);
    expect(t).toMatchObject({ name: "2QfZxRemovePii", held: `transformation code missing: versionId ${PII_VERSION}`, code: "" });
    const { destinations } = (await api(server.url, "GET", "/v2/destinations")).json;
    const scrubbed = destinations.find((d: any) => d.name === "Scrubbed");
    expect(scrubbed).toMatchObject({ transformationId: t.id, heldReason: `transformation code missing: versionId ${PII_VERSION}` });
    expect(destinations.find((d: any) => d.name !== "Scrubbed").heldReason).toBeNull();
    // The Test API sends nothing untransformed either, even without the transformation stage.
    const tested = await fetch(`${server.url}/v0/testDestination/${scrubbed.id}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${ADMIN_EMAIL}:${ADMIN_TOKEN}`)}` },
      body: JSON.stringify({ message: { type: "track", userId: "u1", event: "Probe" }, stage: { dest_transform: true, send_to_destination: true } }),
    });
    expect(await tested.json()).toMatchObject({ destinationId: scrubbed.id, error: `Destination with id ${scrubbed.id} is held: transformation code missing: versionId ${PII_VERSION}` });
    expect(sink.received.filter((r) => r.path === "/pii")).toEqual([]);
  });

  test("sluice import-transformations on the running server: the held event flows, transformed by code that imports a library", async () => {
    const r = importTransformations(dir, join(FIXTURES, "transformations.json"));
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out).toContain("libraries created: piiHelpers");
    expect(r.out).toContain("now supplied (their destinations receive again): Remove PII");
    const got = await waitFor(() => sink.received.find((r) => r.path === "/pii"), { what: "the held event after the import" });
    expect(got.body.properties).toMatchObject({ n: 1, scrubbed: true });
    expect(got.body.context.traits.email).toBeUndefined();
    const { transformations } = (await api(server.url, "GET", "/v2/transformations")).json;
    const t = transformations.find((x: any) => x.rudderStackVersionId === PII_VERSION);
    expect(t).toMatchObject({ name: "Remove PII", held: null });
    const { libraries } = (await api(server.url, "GET", "/v2/libraries")).json;
    expect(libraries).toMatchObject([{ name: "PII helpers", importName: "piiHelpers" }]);
    expect(t.libraries).toEqual({ piiHelpers: libraries[0].versionId });
  });

  test("importing the same export again changes nothing", () => {
    const r = importTransformations(dir, join(FIXTURES, "transformations.json"));
    expect(r.code).toBe(0);
    expect(r.out).toContain("libraries unchanged: piiHelpers");
    expect(r.out).toContain("transformations unchanged (the version has code already): Remove PII");
  });

  test("an export that is not one is refused naming what is wrong, and nothing is written", () => {
    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify([{ id: "x", versionId: "x1", name: "Uses nothing known", code: `import { f } from "nowhere";\nexport function transformEvent(e) { return f(e); }` }]));
    const r = importTransformations(dir, bad);
    expect(r.code).toBe(1);
    expect(r.err).toContain("imports 'nowhere'");
  });
});

describe("code supplied in the folder beside the file or in the file itself", () => {
  let sink: ReturnType<typeof startSink>;
  let dir: string;
  let server: TestServer | undefined;

  beforeAll(() => {
    sink = startSink();
    dir = tempDir();
  });

  afterAll(async () => {
    await server?.stop();
    sink?.stop();
    await cleanup(dir);
  });

  test("held until transformations/<versionId>.js lies beside the file; at the next start the queued event flows transformed", async () => {
    const ref = [{ id: "2QfZxTagOrders", versionId: FOLDER_VERSION, config: {} }];
    const file = workspaceFile(dir, sink.url, [webhook("dst-tag", "Tagged", `${sink.url}/tag`, ref)]);
    server = await startSluice({ dataDir: dir, args: ["--config", file] });
    expect((await sendEvent(server.url, WRITE_KEY, "track", track(2))).status).toBe(200);
    await waitFor(() => sink.received.find((r) => r.path === "/plain"), { what: "the control destination's delivery" });
    expect(sink.received.filter((r) => r.path === "/tag")).toEqual([]);
    await server.stop();

    mkdirSync(join(dir, "transformations"), { recursive: true });
    cpSync(join(FIXTURES, "transformations", `${FOLDER_VERSION}.js`), join(dir, "transformations", `${FOLDER_VERSION}.js`));
    server = await startSluice({ dataDir: dir, args: ["--config", file] });
    const got = await waitFor(() => sink.received.find((r) => r.path === "/tag"), { what: "the queued event after the restart" });
    expect(got.body.properties).toMatchObject({ n: 2, taggedBy: "folder" });
  });

  test("the file's own code on the destination's transformations entry runs from the start", async () => {
    await server?.stop();
    const code = `export function transformEvent(event) { event.properties = { ...event.properties, taggedBy: "file" }; return event; }`;
    const file = workspaceFile(dir, sink.url, [webhook("dst-own", "Own code", `${sink.url}/own`, [{ id: "2QfZxOwn", versionId: "2QfZxOwnV1", config: {}, code }])]);
    server = await startSluice({ dataDir: dir, args: ["--config", file] });
    expect((await sendEvent(server.url, WRITE_KEY, "track", track(3))).status).toBe(200);
    const got = await waitFor(() => sink.received.find((r) => r.path === "/own"), { what: "the transformed event" });
    expect(got.body.properties).toMatchObject({ n: 3, taggedBy: "file" });
  });
});
