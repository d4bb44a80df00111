/**
 * Hybrid mode as rudder-server runs it, from a RudderStack workspace file: a destination in
 * connectionMode "hybrid" gets from the server only the message types its definition's
 * hybridModeCloudEventsFilter lists for the source's type (sourceDefinition.type, e.g. `web`);
 * the SDK on the device sends it the rest. A source of a type the filter does not name sends it
 * every type. The source type is kept from the file (sources.rudder_definition), so this holds
 * through a real server on either store.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type TestServer, api, cleanup, sendEvent, startSink, startSluice, tempDir, waitFor } from "../support/helpers";

const WEB_KEY = "hybrid-web-write-key-0001";
const ANDROID_KEY = "hybrid-android-write-key-0001";

/** RudderStack's exported workspaceConfig.json: one hybrid-mode webhook fed by a web and an Android source. */
function workspaceConfig(sinkUrl: string) {
  const hook = {
    id: "dst-hybrid-hook-0001",
    name: "Hybrid hook",
    enabled: true,
    isProcessorEnabled: true,
    config: { webhookUrl: `${sinkUrl}/hook`, webhookMethod: "POST", connectionMode: "hybrid" },
    transformations: [],
    destinationDefinition: {
      id: "def-webhook",
      name: "WEBHOOK",
      displayName: "Webhook",
      config: {
        transformAt: "processor",
        supportedMessageTypes: ["alias", "group", "identify", "page", "screen", "track"],
        supportedConnectionModes: { web: ["cloud", "hybrid"], android: ["cloud", "hybrid"] },
        hybridModeCloudEventsFilter: { web: { messageType: ["track"] } },
      },
    },
  };
  return {
    workspaceId: "ws-hybrid-0001",
    updatedAt: "2026-11-20T09:00:00.000Z",
    sources: [
      {
        id: "src-hybrid-web-0001",
        name: "Website",
        writeKey: WEB_KEY,
        enabled: true,
        workspaceId: "ws-hybrid-0001",
        config: {},
        sourceDefinition: { id: "def-js", name: "Javascript", displayName: "JavaScript", category: null, type: "web" },
        destinations: [hook],
      },
      {
        id: "src-hybrid-android-0001",
        name: "Android app",
        writeKey: ANDROID_KEY,
        enabled: true,
        workspaceId: "ws-hybrid-0001",
        config: {},
        sourceDefinition: { id: "def-android", name: "Android", displayName: "Android", category: null, type: "android" },
        destinations: [hook],
      },
    ],
  };
}

let server: TestServer;
let sink: ReturnType<typeof startSink>;
let dir: string;

beforeAll(async () => {
  sink = startSink();
  dir = tempDir();
  const file = join(dir, "workspaceConfig.json");
  writeFileSync(file, JSON.stringify(workspaceConfig(sink.url)));
  server = await startSluice({ dataDir: dir, args: ["--config", file] });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  sink?.stop();
  await cleanup(dir);
});

/** What the sink got for one user, as message types in arrival order. */
const typesFor = (userId: string) => sink.received.filter((r) => r.body?.userId === userId).map((r) => r.body.type);

test("the sources keep the file's source type", async () => {
  const { sources } = (await api(server.url, "GET", "/v2/sources")).json;
  const typeOf = Object.fromEntries(sources.map((s: any) => [s.name, s.sourceDefinition?.type]));
  expect(typeOf).toEqual({ Website: "web", "Android app": "android" });
});

test("a web source: the server sends the hybrid destination only the track (the filter's web list); the identify is the SDK's", async () => {
  const user = "web-user-1";
  expect((await sendEvent(server.url, WEB_KEY, "identify", { userId: user, traits: { plan: "pro" } })).status).toBe(200);
  expect((await sendEvent(server.url, WEB_KEY, "track", { userId: user, event: "Product Viewed" })).status).toBe(200);
  // One user's events are routed in order: once the track is there, the identify was routed too.
  await waitFor(() => typesFor(user).includes("track"), { what: "the web track at the hook" });
  expect(typesFor(user)).toEqual(["track"]);
});

test("a source of a type the filter does not name (android): the server sends both", async () => {
  const user = "android-user-1";
  expect((await sendEvent(server.url, ANDROID_KEY, "identify", { userId: user, traits: { plan: "pro" } })).status).toBe(200);
  expect((await sendEvent(server.url, ANDROID_KEY, "track", { userId: user, event: "Product Viewed" })).status).toBe(200);
  await waitFor(() => typesFor(user).length >= 2, { what: "the android identify and track at the hook" });
  expect(typesFor(user)).toEqual(["identify", "track"]);
});
