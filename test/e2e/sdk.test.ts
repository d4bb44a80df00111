/**
 * The Node SDKs our users run, unchanged, under Node.js, against a running Sluice:
 * RudderStack's (gzip with a form-urlencoded Content-Type), Segment's analytics-node
 * and the legacy analytics-node v6.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { type TestServer, cleanup, createSource, startSluice } from "../support/helpers";

let s: TestServer;
let writeKey: string;
const node = Bun.which("node");

beforeAll(async () => {
  s = await startSluice();
  writeKey = (await createSource(s.url)).writeKey;
});
afterAll(async () => {
  await s.stop();
  cleanup(s.dataDir);
});

function eventsOf(userId: string) {
  return (s.sluice.db.$client.query("SELECT payload FROM events WHERE user_key = ? ORDER BY id").all(userId) as any[]).map((r) => JSON.parse(r.payload));
}

for (const [sdk, eventName] of [
  ["rudder", "Rudder Node"],
  ["segment", "Segment Node"],
  ["analytics-node", "Legacy Node"],
] as const) {
  test(`${sdk} SDK: identify, track, page, group and alias arrive as sent`, async () => {
    if (!node) throw new Error("node is required for the SDK tests");
    const runId = crypto.randomUUID();
    const proc = Bun.spawn([node, join(import.meta.dir, "../fixtures", "sdk-send.cjs"), sdk, s.url, writeKey, runId], {
      cwd: join(import.meta.dir, "../.."),
      stdout: "pipe",
      stderr: "pipe",
    });
    const code = await proc.exited;
    if (code !== 0) throw new Error(`SDK process failed: ${await new Response(proc.stderr).text()}`);
    const events = eventsOf(`user-${runId}`);
    expect(events.map((e) => e.type).sort()).toEqual(["alias", "group", "identify", "page", "track"]);
    const track = events.find((e) => e.type === "track");
    expect(track.event).toBe(eventName);
    expect(track.properties.runId).toBe(runId);
    expect(track.messageId).toBeTruthy();
    expect(track.context.library.name).toBeTruthy();
    expect(track.writeKey).toBeUndefined();
  });
}
