import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Outbound } from "../../src/pipeline/outbound";
import type { DestinationRuntime, RoutingSnapshot } from "../../src/control-plane/config-store";
import { findDefinition } from "../../src/destinations/registry";
import { DestinationNotTestable, testDestination, testSource } from "../../src/test-api/service";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, addWorkspace, api, basic, cleanup, createSource, query, startSink, startSluice, waitFor } from "../support/helpers";

let s: TestServer;
const AUTH = basic(ADMIN_EMAIL, ADMIN_TOKEN);

beforeAll(async () => {
  s = await startSluice({ args: ["--destination-timeout-ms", "2000"] });
});
afterAll(async () => {
  await s.stop();
  await cleanup(s.dataDir);
});

/** `authorization: null` sends no header. */
async function call(path: string, body: unknown, authorization: string | null = AUTH) {
  const res = await fetch(s.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...(authorization ? { authorization } : {}) },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, json, text };
}

async function hook(sinkUrl: string, opts: { sourceIds?: string[]; enabled?: boolean; config?: Record<string, unknown>; name?: string } = {}) {
  const res = await api(s.url, "POST", "/v2/destinations", {
    name: opts.name ?? `hook-${crypto.randomUUID().slice(0, 6)}`,
    type: "WEBHOOK",
    config: { webhookUrl: `${sinkUrl}/hook`, ...opts.config },
    enabled: opts.enabled ?? true,
    sourceIds: opts.sourceIds ?? [],
  });
  if (res.status !== 201) throw new Error(res.text);
  return res.json as { id: string; name: string };
}

async function attach(destinationId: string, code: string) {
  const res = await api(s.url, "POST", "/v2/transformations", { name: `t-${crypto.randomUUID().slice(0, 6)}`, code, destinationIds: [destinationId] });
  if (res.status !== 201) throw new Error(res.text);
}

const track = { type: "track", userId: "u1", event: "Signed Up", properties: { plan: "pro" } };
const jsonSink = () => startSink((req) => Response.json({ ok: true, got: req.body?.event ?? null }));

describe("authentication and scope", () => {
  test("HTTP Basic <email>:<token> is accepted; bearer alone, a wrong e-mail or no header → 401", async () => {
    const sink = jsonSink();
    const d = await hook(sink.url);
    const path = `/v0/testDestination/${d.id}`;
    expect((await call(path, { message: track })).status).toBe(200);
    expect((await call(path, { message: track }, `Bearer ${ADMIN_TOKEN}`)).status).toBe(401);
    expect((await call(path, { message: track }, basic("someone@example.com", ADMIN_TOKEN))).status).toBe(401);
    expect((await call(path, { message: track }, basic(ADMIN_EMAIL, "wrong-token-0123456789"))).status).toBe(401);
    expect((await call(path, { message: track }, null)).status).toBe(401);
    expect((await call(`/v0/testSource/src_nope`, { message: track }, `Bearer ${ADMIN_TOKEN}`)).status).toBe(401);
    sink.stop();
  });

  test("unknown ids and another workspace's ids → 404", async () => {
    await addWorkspace(s, "test_other", "other-workspace-token-456", { email: "other@example.com", now: Date.now() });
    const theirs = basic("other@example.com", "other-workspace-token-456");

    const sink = jsonSink();
    const src = await createSource(s.url);
    const d = await hook(sink.url, { sourceIds: [src.id] });
    expect((await call(`/v0/testDestination/${d.id}`, { message: track }, theirs)).status).toBe(404);
    expect((await call(`/v0/testSource/${src.id}`, { message: track }, theirs)).status).toBe(404);
    const unknown = await call(`/v0/testDestination/dst_unknown`, { message: track });
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual({ message: "destination 'dst_unknown' not found" });
    expect((await call(`/v0/testSource/src_unknown`, { message: track })).status).toBe(404);
    expect(sink.received).toHaveLength(0);
    sink.stop();
  });
});

describe("testDestination: stages", () => {
  test("all three stages without a transformation: the exact result, and the sink really receives the request", async () => {
    const sink = jsonSink();
    const d = await hook(sink.url, { config: { headers: [{ from: "X-Env", to: "test" }] } });
    const res = await call(`/v0/testDestination/${d.id}`, { message: { ...track, messageId: "m-test-1" }, stage: { user_transform: true, dest_transform: true, send_to_destination: true } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.json).sort()).toEqual(["data", "destination", "destinationId", "destinationName"]);
    expect(res.json).toMatchObject({ destinationId: d.id, destination: "WEBHOOK", destinationName: d.name });
    expect(res.json.data).toHaveLength(1);
    const [entry] = res.json.data;
    expect(Object.keys(entry).sort()).toEqual(["dest_transformed_payload", "destination_response", "destination_response_status", "user_transformed_payload"]);
    expect(entry.user_transformed_payload).toEqual({ error: "Transformation VersionID not found" });

    expect(entry.dest_transformed_payload).toHaveLength(1);
    const req = entry.dest_transformed_payload[0];
    expect(Object.keys(req).sort()).toEqual(["body", "endpoint", "files", "headers", "method", "params", "type", "version"]);
    expect(req).toMatchObject({ version: "1", type: "REST", method: "POST", endpoint: `${sink.url}/hook`, params: {}, files: {} });
    // Header names from the config are lower-cased, as RudderStack's WEBHOOK does.
    expect(req.headers).toEqual({ "content-type": "application/json", "x-env": "test" });
    expect(Object.keys(req.body).sort()).toEqual(["FORM", "JSON", "JSON_ARRAY", "XML"]);
    // Processing went on with the message as sent, enriched like the gateway does.
    expect(req.body.JSON).toMatchObject({ ...track, messageId: "m-test-1" });
    for (const f of ["receivedAt", "sentAt", "originalTimestamp", "timestamp"]) expect(req.body.JSON[f]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

    expect(entry.destination_response).toEqual([{ ok: true, got: "Signed Up" }]);
    expect(entry.destination_response_status).toEqual([200]);
    expect(sink.received).toHaveLength(1);
    expect(sink.received[0]).toMatchObject({ method: "POST", path: "/hook", body: req.body.JSON });
    expect(sink.received[0].headers["x-env"]).toBe("test");
    sink.stop();
  });

  test("stage omitted runs all three; a key missing from a given stage counts as false", async () => {
    const sink = jsonSink();
    const d = await hook(sink.url);
    const all = await call(`/v0/testDestination/${d.id}`, { message: track });
    expect(Object.keys(all.json.data[0]).sort()).toEqual(["dest_transformed_payload", "destination_response", "destination_response_status", "user_transformed_payload"]);
    expect(sink.received).toHaveLength(1);

    const some = await call(`/v0/testDestination/${d.id}`, { message: track, stage: { dest_transform: true } });
    expect(some.status).toBe(200);
    expect(Object.keys(some.json.data[0])).toEqual(["dest_transformed_payload"]);
    const none = await call(`/v0/testDestination/${d.id}`, { message: track, stage: {} });
    expect(none.json.data).toEqual([{}]);
    expect(sink.received).toHaveLength(1);
    sink.stop();
  });

  test("each stage alone; send_to_destination alone still sends the destination-format request", async () => {
    const sink = startSink(() => new Response("plain text answer", { status: 202 }));
    const d = await hook(sink.url);
    const ut = await call(`/v0/testDestination/${d.id}`, { message: track, stage: { user_transform: true } });
    expect(ut.json.data).toEqual([{ user_transformed_payload: { error: "Transformation VersionID not found" } }]);
    const dt = await call(`/v0/testDestination/${d.id}`, { message: track, stage: { dest_transform: true, user_transform: false } });
    expect(Object.keys(dt.json.data[0])).toEqual(["dest_transformed_payload"]);
    expect(dt.json.data[0].dest_transformed_payload[0].endpoint).toBe(`${sink.url}/hook`);
    expect(sink.received).toHaveLength(0);

    const send = await call(`/v0/testDestination/${d.id}`, { message: track, stage: { send_to_destination: true } });
    expect(send.json.data).toEqual([{ destination_response: ["plain text answer"], destination_response_status: [202] }]);
    expect(sink.received).toHaveLength(1);
    expect(sink.received[0].body).toMatchObject(track);
    sink.stop();
  });

  test("a destination's error answer is reported, not retried; an unreachable one gives its error text", async () => {
    const sink = startSink(() => Response.json({ error: "nope" }, { status: 500 }));
    const d = await hook(sink.url);
    const res = await call(`/v0/testDestination/${d.id}`, { message: track });
    expect(res.status).toBe(200);
    expect(res.json.data[0].destination_response).toEqual([{ error: "nope" }]);
    expect(res.json.data[0].destination_response_status).toEqual([500]);
    expect(sink.received).toHaveLength(1);
    sink.stop();

    const gone = await hook(sink.url);
    const down = await call(`/v0/testDestination/${gone.id}`, { message: track, stage: { send_to_destination: true } });
    expect(down.json.data[0].destination_response[0]).toStartWith("could not connect to 127.0.0.1:");
    expect(down.json.data[0].destination_response_status).toEqual([500]);
  });

  test("a destination transform that fails: its error, and sending aborted naming the failed stage", async () => {
    const sink = jsonSink();
    const d = await hook(sink.url);
    await attach(d.id, "export function transformEvent(event) { event.type = 'login'; return event; }");
    const res = await call(`/v0/testDestination/${d.id}`, { message: track });
    expect(res.status).toBe(200);
    const [entry] = res.json.data;
    expect(entry.user_transformed_payload.type).toBe("login");
    expect(entry.dest_transformed_payload).toEqual({ error: "WEBHOOK does not take 'login' messages" });
    expect(entry.destination_response).toEqual({ error: "aborted: dest_transform stage failed" });
    // Without the dest_transform stage shown, the abort says why.
    const sendOnly = await call(`/v0/testDestination/${d.id}`, { message: track, stage: { user_transform: true, send_to_destination: true } });
    expect(sendOnly.json.data[0].destination_response).toEqual({ error: "aborted: dest_transform stage failed: WEBHOOK does not take 'login' messages" });
    expect(sink.received).toHaveLength(0);
    sink.stop();
  });
});

describe("testDestination: destinationConfig", () => {
  test("replaces the stored configuration for the request: it goes to the override URL", async () => {
    const stored = jsonSink();
    const override = jsonSink();
    const d = await hook(stored.url);
    const res = await call(`/v0/testDestination/${d.id}`, { message: track, destinationConfig: { webhookUrl: `${override.url}/other`, webhookMethod: "PUT" } });
    expect(res.status).toBe(200);
    expect(res.json.data[0].dest_transformed_payload[0]).toMatchObject({ method: "PUT", endpoint: `${override.url}/other` });
    expect(res.json.data[0].destination_response_status).toEqual([200]);
    expect(override.received).toHaveLength(1);
    expect(override.received[0]).toMatchObject({ method: "PUT", path: "/other" });
    expect(stored.received).toHaveLength(0);
    // The stored configuration is unchanged.
    expect((await api(s.url, "GET", `/v2/destinations/${d.id}`)).json.config).toEqual({ webhookUrl: `${stored.url}/hook` });
    stored.stop();
    override.stop();
  });

  test("a key outside the definition's defaultConfig → 400 naming it; a bad value → 400 naming the field", async () => {
    const sink = jsonSink();
    const d = await hook(sink.url);
    const res = await call(`/v0/testDestination/${d.id}`, { message: track, destinationConfig: { webhookUrl: `${sink.url}/x`, apiKey: "k", region: "eu" } });
    expect(res.status).toBe(400);
    expect(res.json.message).toContain("'apiKey'");
    expect(res.json.message).toContain("'region'");
    expect(res.json.message).toStartWith("destinationConfig:");
    const bad = await call(`/v0/testDestination/${d.id}`, { message: track, destinationConfig: { webhookMethod: "POST" } });
    expect(bad.status).toBe(400);
    expect(bad.json.message).toBe("destinationConfig.webhookUrl: is required");
    expect(sink.received).toHaveLength(0);
    sink.stop();
  });

  test("testSource does not take destinationConfig", async () => {
    const sink = jsonSink();
    const src = await createSource(s.url);
    await hook(sink.url, { sourceIds: [src.id] });
    const res = await call(`/v0/testSource/${src.id}`, { message: track, destinationConfig: { webhookUrl: "http://127.0.0.1:1/x" } });
    expect(res.status).toBe(400);
    expect(res.json.message).toStartWith("destinationConfig: is not accepted by testSource");
    expect(sink.received).toHaveLength(0);
    sink.stop();
  });
});

describe("testDestination: user transformations", () => {
  test("a transformation that modifies the event: the transformed event is shown and sent", async () => {
    const sink = jsonSink();
    const d = await hook(sink.url);
    await attach(d.id, "export function transformEvent(event, metadata) { event.event = event.event.toUpperCase(); event.properties.dest = metadata(event).destinationId; return event; }");
    const res = await call(`/v0/testDestination/${d.id}`, { message: track });
    expect(res.status).toBe(200);
    const [entry] = res.json.data;
    expect(entry.user_transformed_payload).toMatchObject({ event: "SIGNED UP", properties: { plan: "pro", dest: d.id } });
    expect(entry.dest_transformed_payload[0].body.JSON).toEqual(entry.user_transformed_payload);
    expect(entry.destination_response).toEqual([{ ok: true, got: "SIGNED UP" }]);
    expect(sink.received[0].body.event).toBe("SIGNED UP");

    // With user_transform off, the connected transformation is skipped and the message goes as sent.
    const skipped = await call(`/v0/testDestination/${d.id}`, { message: track, stage: { dest_transform: true } });
    expect(skipped.json.data).toHaveLength(1);
    expect(skipped.json.data[0].dest_transformed_payload[0].body.JSON.event).toBe("Signed Up");
    sink.stop();
  });

  test("a transformation that drops the event → data: [] and nothing is sent", async () => {
    const sink = jsonSink();
    const d = await hook(sink.url);
    await attach(d.id, "export function transformEvent(event) { return null; }");
    const res = await call(`/v0/testDestination/${d.id}`, { message: track });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ destinationId: d.id, destination: "WEBHOOK", destinationName: d.name, data: [] });
    expect(sink.received).toHaveLength(0);
    sink.stop();
  });

  test("a transformation that fans out → one entry per event, each sent", async () => {
    const sink = jsonSink();
    const d = await hook(sink.url);
    await attach(d.id, "export function transformEvent(event) { return [{ ...event, event: 'first' }, { ...event, event: 'second' }]; }");
    const res = await call(`/v0/testDestination/${d.id}`, { message: track });
    expect(res.status).toBe(200);
    expect(res.json.data).toHaveLength(2);
    expect(res.json.data.map((e: any) => e.user_transformed_payload.event)).toEqual(["first", "second"]);
    expect(res.json.data.map((e: any) => e.destination_response)).toEqual([[{ ok: true, got: "first" }], [{ ok: true, got: "second" }]]);
    expect(res.json.data.map((e: any) => e.destination_response_status)).toEqual([[200], [200]]);
    expect(sink.received.map((r) => r.body.event)).toEqual(["first", "second"]);
    sink.stop();
  });

  test("a transformation that throws: its error, and the later stages aborted naming the failed stage", async () => {
    const sink = jsonSink();
    const d = await hook(sink.url);
    await attach(d.id, "export function transformEvent(event) { throw new Error('bad plan ' + event.properties.plan); }");
    const res = await call(`/v0/testDestination/${d.id}`, { message: track });
    expect(res.status).toBe(200);
    expect(res.json.data).toHaveLength(1);
    const [entry] = res.json.data;
    expect(Object.keys(entry).sort()).toEqual(["dest_transformed_payload", "destination_response", "user_transformed_payload"]);
    expect(entry.user_transformed_payload.error).toContain("bad plan pro");
    expect(entry.dest_transformed_payload).toEqual({ error: "aborted: user_transform stage failed" });
    expect(entry.destination_response).toEqual({ error: "aborted: user_transform stage failed" });
    expect(sink.received).toHaveLength(0);
    sink.stop();
  });
});

describe("errors", () => {
  test("message.type missing or not a string, or unsupported → the exact bodies with 400", async () => {
    const sink = jsonSink();
    const d = await hook(sink.url);
    const src = await createSource(s.url);
    await hook(sink.url, { sourceIds: [src.id] });
    for (const path of [`/v0/testDestination/${d.id}`, `/v0/testSource/${src.id}`]) {
      for (const message of [{ userId: "u" }, { type: 5, userId: "u" }, { type: null }, { type: ["track"] }]) {
        const res = await call(path, { message });
        expect(res.status).toBe(400);
        expect(res.json).toEqual({ message: "message type missing or invalid" });
      }
      for (const type of ["merge", "batch", "Track", "login"]) {
        const res = await call(path, { message: { type, userId: "u" } });
        expect(res.status).toBe(400);
        expect(res.json).toEqual({ message: "message type is unsupported" });
      }
      for (const type of ["identify", "track", "page", "screen", "group", "alias"]) {
        expect((await call(path, { message: { type, userId: "u" }, stage: { dest_transform: true } })).status).toBe(200);
      }
    }
    expect(sink.received).toHaveLength(0);
    sink.stop();
  });

  test("a missing or non-object message, a wrong field type or a bad timestamp → 400 naming it", async () => {
    const sink = jsonSink();
    const d = await hook(sink.url);
    const path = `/v0/testDestination/${d.id}`;
    expect((await call(path, {})).json).toEqual({ message: "message: is required" });
    expect((await call(path, { message: "track" })).json).toEqual({ message: "message: expected an object" });
    expect((await call(path, { message: { ...track, userId: true } })).json.message).toStartWith("message.userId:");
    expect((await call(path, { message: { ...track, timestamp: "yesterday" } })).json.message).toStartWith("message.timestamp:");
    const stage = await call(path, { message: track, stage: { user_transformation: true } });
    expect(stage.status).toBe(400);
    expect(stage.json.message).toStartWith("stage.user_transformation: is not a stage");
    expect((await call(path, { message: track, extra: 1 })).json.message).toStartWith("extra: is not accepted");
    expect((await call(`${path}?force=yes`, { message: track })).status).toBe(400);
    expect(sink.received).toHaveLength(0);
    sink.stop();
  });

  test("a disabled destination: the disabled form with 400, unless force=true", async () => {
    const sink = jsonSink();
    const d = await hook(sink.url, { enabled: false });
    const res = await call(`/v0/testDestination/${d.id}`, { message: track });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ destinationId: d.id, destinationName: d.name, error: `Destination with id ${d.id} is disabled` });
    expect((await call(`/v0/testDestination/${d.id}?force=false`, { message: track })).status).toBe(400);
    expect(sink.received).toHaveLength(0);

    const forced = await call(`/v0/testDestination/${d.id}?force=true`, { message: track });
    expect(forced.status).toBe(200);
    expect(forced.json.data[0].destination_response_status).toEqual([200]);
    expect(sink.received).toHaveLength(1);
    sink.stop();
  });

  test("a kind the server delivers itself → an error entry saying the Test API does not support it", async () => {
    const webhook = findDefinition("WEBHOOK")!;
    const queue: DestinationRuntime = {
      id: "dst_queue",
      workspaceId: s.sluice.workspaceId,
      name: "queue",
      type: "KAFKA",
      enabled: true,
      config: {},
      definition: { ...webhook, name: "KAFKA", serverDelivered: true },
    };
    const snapshot: RoutingSnapshot = {
      version: 0,
      sources: new Map([["src_q", { id: "src_q", workspaceId: s.sluice.workspaceId, name: "q", enabled: true, settings: {} }]]),
      destinations: new Map([["dst_queue", queue]]),
      bySource: new Map([["src_q", [queue]]]),
    };
    const scope = { ...s.sluice.ctx, workspaceId: s.sluice.workspaceId, config: { snapshot: () => snapshot } as any };
    const deps = { stages: { sandbox: s.sluice.sandbox, baseUrls: {}, outbound: new Outbound({ allowDestinationHosts: [], denyDestinationHosts: [] }) }, timeoutMs: 1000 };
    const body = { message: track };
    const err = await testDestination(scope, deps, { destinationId: "dst_queue", body, force: true }).catch((e) => e);
    expect(err).toBeInstanceOf(DestinationNotTestable);
    expect(err.entry).toMatchObject({ destinationId: "dst_queue", destinationName: "queue" });
    expect(err.entry.error).toContain("Test API does not support KAFKA");
    const listed = await testSource(scope, deps, { sourceId: "src_q", body, force: false });
    expect(listed).toEqual([err.entry]);
  });
});

describe("testSource", () => {
  test("every connected destination is tested; a disabled one is the disabled form unless force=true", async () => {
    const a = jsonSink();
    const b = jsonSink();
    const src = await createSource(s.url);
    const on = await hook(a.url, { sourceIds: [src.id], name: `on-${crypto.randomUUID().slice(0, 6)}` });
    const off = await hook(b.url, { sourceIds: [src.id], enabled: false, name: `off-${crypto.randomUUID().slice(0, 6)}` });
    const res = await call(`/v0/testSource/${src.id}`, { message: track });
    expect(res.status).toBe(200);
    expect(res.json).toHaveLength(2);
    expect(res.json[0]).toMatchObject({ destinationId: on.id, destination: "WEBHOOK", destinationName: on.name });
    expect(res.json[0].data[0].destination_response_status).toEqual([200]);
    expect(res.json[1]).toEqual({ destinationId: off.id, destinationName: off.name, error: `Destination with id ${off.id} is disabled` });
    expect(a.received).toHaveLength(1);
    expect(b.received).toHaveLength(0);

    const forced = await call(`/v0/testSource/${src.id}?force=true`, { message: track, stage: { send_to_destination: true } });
    expect(forced.status).toBe(200);
    expect(forced.json.map((r: any) => r.destinationId)).toEqual([on.id, off.id]);
    expect(forced.json.map((r: any) => r.data)).toEqual([
      [{ destination_response: [{ ok: true, got: "Signed Up" }], destination_response_status: [200] }],
      [{ destination_response: [{ ok: true, got: "Signed Up" }], destination_response_status: [200] }],
    ]);
    expect(b.received).toHaveLength(1);
    a.stop();
    b.stop();
  });

  test("the source's transformation metadata names the source", async () => {
    const sink = jsonSink();
    const src = await createSource(s.url);
    const d = await hook(sink.url, { sourceIds: [src.id] });
    await attach(d.id, "export function transformEvent(event, metadata) { event.properties.source = metadata(event).sourceId; return event; }");
    const res = await call(`/v0/testSource/${src.id}`, { message: track, stage: { user_transform: true } });
    expect(res.json[0].data[0].user_transformed_payload.properties.source).toBe(src.id);
    sink.stop();
  });

  test("a source with no connected destination → 400 saying so", async () => {
    const src = await createSource(s.url);
    const res = await call(`/v0/testSource/${src.id}`, { message: track });
    expect(res.status).toBe(400);
    expect(res.json.message).toContain("no connected destinations");
  });

  test("a disabled source → the exact message with 400; force=true tests it", async () => {
    const sink = jsonSink();
    const src = await createSource(s.url, { enabled: false });
    await hook(sink.url, { sourceIds: [src.id] });
    const res = await call(`/v0/testSource/${src.id}`, { message: track });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ message: `Source with ${src.id} is disabled` });
    expect(sink.received).toHaveLength(0);
    const forced = await call(`/v0/testSource/${src.id}?force=true`, { message: track });
    expect(forced.status).toBe(200);
    expect(forced.json[0].data[0].destination_response_status).toEqual([200]);
    expect(sink.received).toHaveLength(1);
    sink.stop();
  });
});

describe("no side effects", () => {
  test("test messages are not stored, queued, shown in live events or counted", async () => {
    const sink = jsonSink();
    const src = await createSource(s.url);
    const d = await hook(sink.url, { sourceIds: [src.id] });
    const seen: unknown[] = [];
    const unsubscribe = [s.sluice.live.subscribe(`source:${src.id}`, (e) => seen.push(e)), s.sluice.live.subscribe(`destination:${d.id}`, (e) => seen.push(e))];
    const count = async (table: string) => (await query(s, `SELECT CAST(count(*) AS INTEGER) AS n FROM ${table}`))[0]!.n as number;
    const before = { events: await count("events"), deliveries: await count("deliveries") };
    const metricsBefore = s.sluice.ctx.metrics.render().split("\n").filter((l) => !/^sluice_(http_|process_|js_|event_loop_)/.test(l)).join("\n");

    expect((await call(`/v0/testSource/${src.id}`, { message: track })).status).toBe(200);
    expect((await call(`/v0/testDestination/${d.id}`, { message: track })).status).toBe(200);
    await waitFor(() => sink.received.length === 2, { what: "both test requests" });

    expect({ events: await count("events"), deliveries: await count("deliveries") }).toEqual(before);
    expect(await count("events")).toBe(0);
    expect(seen).toEqual([]);
    expect(s.sluice.router.inMemory(d.id)).toEqual({ queued: 0, running: 0 });
    expect(s.sluice.ctx.metrics.render().split("\n").filter((l) => !/^sluice_(http_|process_|js_|event_loop_)/.test(l)).join("\n")).toBe(metricsBefore);
    const stats = (await api(s.url, "GET", `/v2/destinations/${d.id}/stats`)).json;
    expect(Object.values(stats.counts).every((n) => n === 0)).toBe(true);
    for (const u of unsubscribe) u();
    sink.stop();
  });
});

describe("RudderStack fidelity", () => {
  test("the processor's output is shown, and what delivery sends is sent: SENDGRID's contact goes out as batch() shapes it", async () => {
    const sendgrid = startSink(() => Response.json({ job_id: "j-1" }, { status: 202 }));
    const local = await startSluice({ args: ["--destination-base-url", `SENDGRID=${sendgrid.url}`] });
    try {
      const dest = await api(local.url, "POST", "/v2/destinations", { name: "sg", type: "SENDGRID", config: { apiKey: "sg-key", listId: "list-1" }, sourceIds: [] });
      expect(dest.status).toBe(201);
      const message = { type: "identify", userId: "u1", traits: { email: "ada@example.com", firstName: "Ada" } };
      const res = await fetch(`${local.url}/v0/testDestination/${dest.json.id}`, { method: "POST", headers: { "content-type": "application/json", authorization: AUTH }, body: JSON.stringify({ message }) });
      expect(res.status).toBe(200);
      const [entry] = ((await res.json()) as any).data;
      // RudderStack's processor shape: one contact with its lists as text.
      expect(entry.dest_transformed_payload[0].body.JSON.contactDetails.email).toBe("ada@example.com");
      expect(entry.destination_response_status).toEqual([202]);
      // What SendGrid takes: the router's upsert body.
      expect(sendgrid.received).toHaveLength(1);
      expect(sendgrid.received[0]).toMatchObject({ method: "PUT", path: "/v3/marketing/contacts" });
      expect(sendgrid.received[0]!.body.contacts[0].email).toBe("ada@example.com");
      expect(sendgrid.received[0]!.body.contactDetails).toBeUndefined();
    } finally {
      await local.stop();
      sendgrid.stop();
      await cleanup(local.dataDir);
    }
  });

  test("numeric ids are accepted and reach the transform as numbers, as rudder-server passes them (WEBHOOK's body, POSTHOG's distinct_id text, a group's groupId)", async () => {
    const hook = await api(s.url, "POST", "/v2/destinations", { name: "hook-num", type: "WEBHOOK", config: { webhookUrl: "https://hooks.example.com/in" }, sourceIds: [] });
    const sent = await call(`/v0/testDestination/${hook.json.id}`, { message: { ...track, userId: 6229828 }, stage: { dest_transform: true } });
    expect(sent.status).toBe(200);
    expect(sent.json.data[0].dest_transformed_payload[0].body.JSON.userId).toBe(6229828);
    const ph = await api(s.url, "POST", "/v2/destinations", { name: "ph-num", type: "POSTHOG", config: { teamApiKey: "phc" }, sourceIds: [] });
    expect(ph.status).toBe(201);
    const res = await call(`/v0/testDestination/${ph.json.id}`, { message: { ...track, userId: 42 }, stage: { dest_transform: true } });
    expect(res.status).toBe(200);
    // PostHog takes distinct ids as text: RudderStack's POSTHOG turns whatever it found into a string.
    expect(res.json.data[0].dest_transformed_payload[0].body.JSON.distinct_id).toBe("42");
    const group = await call(`/v0/testDestination/${ph.json.id}`, { message: { type: "group", userId: "u", groupId: 6229828, traits: { name: "Co" } }, stage: { dest_transform: true } });
    expect(group.status).toBe(200);
    expect(JSON.stringify(group.json.data[0].dest_transformed_payload)).toContain("6229828");
  });

  test("an exported RudderStack config with browser-only keys and live-events switches is kept whole", async () => {
    const config = { apiKey: "am-key", useNativeSDK: true, connectionMode: "cloud", preferAnonymousIdForDeviceId: false, eventDelivery: false, eventDeliveryTS: 1668424218224 };
    const am = await api(s.url, "POST", "/v2/destinations", { name: "am-import", type: "AM", config, sourceIds: [] });
    expect(am.status).toBe(201);
    expect((await api(s.url, "GET", `/v2/destinations/${am.json.id}`)).json.config).toEqual(config);
    const res = await call(`/v0/testDestination/${am.json.id}`, { message: track, stage: { dest_transform: true }, destinationConfig: config });
    expect(res.status).toBe(200);
    expect(res.json.data[0].dest_transformed_payload[0].endpoint).toBe("https://api2.amplitude.com/2/httpapi");
  });

  test("GET webhook: params keep their JSON types in dest_transformed_payload (0 stays 0)", async () => {
    const d = await hook("https://hooks.example.com", { config: { webhookMethod: "GET" } });
    const res = await call(`/v0/testDestination/${d.id}`, { message: { ...track, properties: { count: 0, ok: false, name: "x" } }, stage: { dest_transform: true } });
    expect(res.json.data[0].dest_transformed_payload[0].params).toEqual({ count: 0, ok: false, name: "x" });
  });
});

describe("destination definitions", () => {
  test("GET /destination-definitions lists every kind with defaultConfig; WEBHOOK's is webhookUrl, webhookMethod, headers", async () => {
    const res = await fetch(`${s.url}/destination-definitions`);
    expect(res.status).toBe(200);
    const defs = (await res.json()) as Array<{ name: string; config: { defaultConfig: string[] } }>;
    expect(defs.length).toBeGreaterThan(1);
    for (const d of defs) expect(Array.isArray(d.config.defaultConfig)).toBe(true);
    // RudderStack's WEBHOOK definition: the three keys of the spec, its per-platform key, and the
    // live-events switches RudderStack's control plane keeps in every destination's config.
    expect(defs.find((d) => d.name === "WEBHOOK")!.config.defaultConfig).toEqual(["webhookUrl", "webhookMethod", "headers", "oneTrustCookieCategories", "eventDelivery", "eventDeliveryTS"]);
  });

  test("each definition lists its config fields for a form: type, required, secret (credentials by name), multi-line (PEM text), enum options", async () => {
    const defs = (await (await fetch(`${s.url}/destination-definitions`)).json()) as Array<{ name: string; config: { fields: any[]; requiredKeys: string[] } }>;
    const by = (kind: string) => Object.fromEntries(defs.find((d) => d.name === kind)!.config.fields.map((f) => [f.key, f]));
    const webhook = by("WEBHOOK");
    expect(webhook.webhookUrl).toEqual({ key: "webhookUrl", type: "string", required: true, secret: false, multiline: false });
    expect(webhook.webhookMethod).toEqual({ key: "webhookMethod", type: "enum", options: ["POST", "PUT", "PATCH", "GET", "DELETE"], required: false, secret: false, multiline: false });
    expect(webhook.headers.type).toBe("json");
    const http = by("HTTP");
    expect([http.password.secret, http.bearerToken.secret, http.apiKeyValue.secret, http.apiKeyName.secret, http.username.secret]).toEqual([true, true, true, false, false]);
    expect(http.isBatchingEnabled.type).toBe("boolean");
    expect(by("SEGMENT").writeKey).toMatchObject({ required: true, secret: true });
    expect(by("KLAVIYO").publicApiKey.secret).toBe(false);
    expect(by("KLAVIYO").privateApiKey).toMatchObject({ required: true, secret: true });
    // PEM text keeps its line breaks in a text area; an SSH private key is also secret.
    expect(by("KAFKA").caCertificate).toMatchObject({ secret: false, multiline: true });
    expect(by("KAFKA").sshPrivateKey).toMatchObject({ secret: true, multiline: true });
    expect(by("KAFKA").sshHostKey).toMatchObject({ secret: false, multiline: false });
    // Every required key is a field, and required fields come first.
    for (const d of defs) {
      const fields = d.config.fields;
      for (const k of d.config.requiredKeys) expect(fields.find((f) => f.key === k)?.required, `${d.name}.${k}`).toBe(true);
      const firstOptional = fields.findIndex((f) => !f.required);
      expect(fields.slice(firstOptional < 0 ? fields.length : firstOptional).every((f) => !f.required)).toBe(true);
    }
  });

  test("the OpenAPI document describes both Test API routes with their statuses", async () => {
    const doc = (await (await fetch(`${s.url}/openapi/json`)).json()) as any;
    const dest = doc.paths["/v0/testDestination/{destination_id}"]?.post;
    const src = doc.paths["/v0/testSource/{source_id}"]?.post;
    expect(dest.description).toContain("a missing key counts as false");
    expect(dest.description).toContain("404");
    expect(src.description).toContain("Source with <source_id> is disabled");
  });
});
