/**
 * The endpoints rudder-server's gateway serves beside the event calls, on a real Sluice process
 * started with a workspace file, delivering to a real HTTP sink: /v1/import, /v1/webhook,
 * /pixel/v1/track and /pixel/v1/page, /robots.txt, and rudder-server's fields of /health.
 * Each goes through the write-key check, validation, suppression, deduplication and commit of
 * the other event calls.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { PIXEL_GIF } from "../../src/gateway/pixel";
import { type SluiceProcess, api, basic, cleanup, spawnSluice, startSink, tempDir, waitFor } from "../support/helpers";

const KEY = "endpoints-test-write-key-01";
/** A generic webhook source's key: /v1/webhook takes only webhook sources' keys. */
const HOOK = "endpoints-test-webhook-key-01";
let s: SluiceProcess;
let sink: ReturnType<typeof startSink>;
let dir: string;

beforeAll(async () => {
  sink = startSink();
  dir = tempDir();
  const config = join(dir, "workspace.yaml");
  await Bun.write(
    config,
    `sources:\n  - { name: web, writeKey: ${KEY} }\n  - { name: hook, writeKey: ${HOOK}, type: webhook }\ndestinations:\n  - { name: sink, type: WEBHOOK, config: { webhookUrl: "${sink.url}/hook" }, sources: [web, hook] }\n`,
  );
  s = await spawnSluice({ args: ["--config", config] });
});
afterAll(async () => {
  s.proc.kill("SIGTERM");
  await s.proc.exited;
  sink.stop();
  await cleanup(s.dataDir);
  await cleanup(dir);
});

/** The events the sink got (the WEBHOOK destination posts each event as it is). */
const delivered = () => sink.received.map((r) => r.body as Record<string, any>);
const arrived = (what: string, match: (e: Record<string, any>) => boolean) =>
  waitFor(() => delivered().find(match), { what, timeoutMs: 15_000 });

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${s.url}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(name))
    .reduce((n, l) => n + Number(l.split(" ").at(-1)), 0);
}

describe("/v1/import: the batch call under RudderStack's other name", () => {
  test("every entry is stored and delivered, answered OK", async () => {
    const res = await fetch(`${s.url}/v1/import`, {
      method: "POST",
      headers: { authorization: basic(KEY), "content-type": "application/json" },
      body: JSON.stringify({ batch: [
        { type: "track", userId: "imp-1", event: "Imported", properties: { n: 1 } },
        { type: "identify", userId: "imp-2", traits: { plan: "pro" } },
      ] }),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("OK");
    expect((await arrived("the imported track", (e) => e.userId === "imp-1")).event).toBe("Imported");
    expect((await arrived("the imported identify", (e) => e.userId === "imp-2")).traits).toEqual({ plan: "pro" });
  });

  test("one bad entry refuses the whole import, naming it; over 4 MB is refused", async () => {
    const bad = await fetch(`${s.url}/v1/import`, {
      method: "POST",
      headers: { authorization: basic(KEY) },
      body: JSON.stringify({ batch: [{ type: "track", userId: "imp-3", event: "ok" }, { type: "track", userId: "imp-3" }] }),
    });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("batch[1]");
    const big = await fetch(`${s.url}/v1/import`, { method: "POST", headers: { authorization: basic(KEY) }, body: JSON.stringify({ batch: [{ type: "track", userId: "x", event: "e", properties: { pad: "p".repeat(4 * 1024 * 1024) } }] }) });
    expect(big.status).toBe(400);
    expect(await big.text()).toContain("larger than 4096 KB");
  });

  test("an unknown write key → 401", async () => {
    const res = await fetch(`${s.url}/v1/import`, { method: "POST", headers: { authorization: basic("nope-nope-nope") }, body: JSON.stringify({ batch: [{ type: "track", userId: "u", event: "e" }] }) });
    expect(res.status).toBe(401);
  });
});

describe("/v1/webhook: any body becomes the track event webhook_source_event", () => {
  test("JSON body with ?writeKey=: properties are the body, a fresh anonymousId, query parameters left out", async () => {
    const res = await fetch(`${s.url}/v1/webhook?writeKey=${HOOK}&utm_source=mail`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ order: { id: "o-17", total: 42.5 }, status: "paid" }),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("ok");
    const e = await arrived("the webhook event", (x) => x.properties?.order?.id === "o-17");
    expect(e.type).toBe("track");
    expect(e.event).toBe("webhook_source_event");
    expect(e.properties).toEqual({ order: { id: "o-17", total: 42.5 }, status: "paid" });
    expect(e.anonymousId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(e.userId).toBeUndefined();
    expect(JSON.stringify(e)).not.toContain("utm_source");
    expect(JSON.stringify(e)).not.toContain(HOOK);
  });

  test("a form body with Basic auth: each field becomes a list of its values (Go's url.Values)", async () => {
    const res = await fetch(`${s.url}/v1/webhook`, {
      method: "POST",
      headers: { authorization: basic(HOOK), "content-type": "application/x-www-form-urlencoded" },
      body: "form_id=f-9&tag=a&tag=b",
    });
    expect(res.status).toBe(200);
    const e = await arrived("the form webhook event", (x) => Array.isArray(x.properties?.form_id) && x.properties.form_id[0] === "f-9");
    expect(e.properties).toEqual({ form_id: ["f-9"], tag: ["a", "b"] });
  });

  test("multipart/form-data as Go's multipart.Form (files by name, type and size); a gzip body is read", async () => {
    const form = new FormData();
    form.append("subject", "Hello mp-1");
    form.append("attachment", new Blob(["12345"], { type: "text/plain" }), "note.txt");
    expect((await fetch(`${s.url}/v1/webhook?writeKey=${HOOK}`, { method: "POST", body: form })).status).toBe(200);
    const mp = await arrived("the multipart webhook event", (x) => x.properties?.Value?.subject?.[0] === "Hello mp-1");
    expect(mp.properties).toEqual({ Value: { subject: ["Hello mp-1"] }, File: { attachment: [{ Filename: "note.txt", Header: { "Content-Type": [expect.stringMatching(/^text\/plain/)] }, Size: 5 }] } });

    const gz = Bun.gzipSync(Buffer.from(JSON.stringify({ gz: "gz-1" })));
    const res = await fetch(`${s.url}/v1/webhook?writeKey=${HOOK}`, { method: "POST", headers: { "content-type": "application/json", "content-encoding": "gzip" }, body: gz });
    expect(res.status).toBe(200);
    await arrived("the gzip webhook event", (x) => x.properties?.gz === "gz-1");
  });

  test("an empty body is the event with empty properties", async () => {
    const before = delivered().filter((e) => e.event === "webhook_source_event").length;
    expect((await fetch(`${s.url}/v1/webhook?writeKey=${HOOK}`, { method: "POST" })).status).toBe(200);
    await waitFor(() => delivered().filter((e) => e.event === "webhook_source_event").length > before, { what: "the empty webhook event" });
  });

  test("refusals in rudder-server's words: no write key, unknown, not a webhook source → 401; bad JSON → 400; GET checks the key and stores nothing", async () => {
    const none = await fetch(`${s.url}/v1/webhook`, { method: "POST", body: "{}" });
    expect(none.status).toBe(401);
    expect(await none.text()).toBe("failed to read writekey from query params");
    const unknown = await fetch(`${s.url}/v1/webhook?writeKey=unknown-key-123`, { method: "POST", body: "{}" });
    expect([unknown.status, await unknown.text()]).toEqual([401, "invalid write key"]);
    // An SDK source's key is refused at the webhook, as rudder-server refuses it.
    const sdk = await fetch(`${s.url}/v1/webhook?writeKey=${KEY}`, { method: "POST", body: "{}" });
    expect([sdk.status, await sdk.text()]).toEqual([401, "invalid write key"]);
    const bad = await fetch(`${s.url}/v1/webhook?writeKey=${HOOK}`, { method: "POST", headers: { "content-type": "application/json" }, body: "{nope" });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toBe("Malformed JSON in request body");
    const get = await fetch(`${s.url}/v1/webhook?writeKey=${HOOK}`);
    expect(get.status).toBe(200);
    expect(await get.text()).toBe("");
    expect((await fetch(`${s.url}/v1/webhook?writeKey=unknown-key-123`)).status).toBe(401);
  });
});

describe("/pixel/v1/track and /pixel/v1/page: the call in the query, a GIF in the answer", () => {
  const gif = async (res: Response) => {
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/gif");
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(PIXEL_GIF);
  };

  test("track: dotted parameters nest, values stay strings, a quoted anonymousId loses its quotes", async () => {
    const q = new URLSearchParams({ writeKey: KEY, anonymousId: '"px-anon-1"', event: "Email Opened", "properties.campaign": "spring", "properties.n": "3", "context.page.url": "https://example.com/a" });
    await gif(await fetch(`${s.url}/pixel/v1/track?${q}`));
    const e = await arrived("the pixel track", (x) => x.anonymousId === "px-anon-1");
    expect(e.type).toBe("track");
    expect(e.event).toBe("Email Opened");
    expect(e.properties).toEqual({ campaign: "spring", n: "3" });
    expect(e.context.page).toEqual({ url: "https://example.com/a" });
    expect(e.channel).toBe("web");
    expect(e.integrations).toEqual({ All: true });
    expect(e.writeKey).toBeUndefined();
  });

  test("page: an empty name becomes Unknown Page", async () => {
    await gif(await fetch(`${s.url}/pixel/v1/page?writeKey=${KEY}&userId=px-page-1&name=`));
    expect((await arrived("the pixel page", (x) => x.userId === "px-page-1")).name).toBe("Unknown Page");
  });

  test("refused calls still get the GIF, and a log line says why", async () => {
    await gif(await fetch(`${s.url}/pixel/v1/track?writeKey=unknown-key-123&userId=u&event=e`));
    await gif(await fetch(`${s.url}/pixel/v1/track?writeKey=${KEY}&userId=px-empty&event=`));
    await gif(await fetch(`${s.url}/pixel/v1/page?anonymousId=a`));
    const lines = () => s.output().split("\n").filter((l) => l.includes('"route":"/pixel/v1/')).map((l) => JSON.parse(l));
    const refusals = await waitFor(() => (lines().length >= 3 ? lines() : undefined), { what: "three refusal lines" });
    expect(refusals.map((l) => [l.route, l.status])).toEqual([
      ["/pixel/v1/track", 401],
      ["/pixel/v1/track", 400],
      ["/pixel/v1/page", 400],
    ]);
    expect(refusals[1].message).toContain("event");
    expect(refusals[0].ip).toBe("127.0.0.1");
  });

  test("suppression and deduplication apply: a suppressed user's pixel is dropped, a repeated messageId stored once", async () => {
    expect((await api(s.url, "POST", "/v2/regulations", { regulationType: "suppress", users: [{ userId: "px-quiet" }] })).status).toBe(201);
    const suppressed = await metric("sluice_events_suppressed_total");
    await waitFor(
      async () => {
        await fetch(`${s.url}/pixel/v1/track?writeKey=${KEY}&userId=px-quiet&event=Opened`);
        return (await metric("sluice_events_suppressed_total")) > suppressed;
      },
      { what: "the suppressed user's pixel to be dropped" },
    );
    for (let i = 0; i < 2; i++) await fetch(`${s.url}/pixel/v1/track?writeKey=${KEY}&userId=px-dup&event=Opened&messageId=px-dup-1`);
    await fetch(`${s.url}/pixel/v1/track?writeKey=${KEY}&userId=px-dup&event=After`);
    await arrived("the event after the duplicate", (x) => x.userId === "px-dup" && x.event === "After");
    expect(delivered().filter((x) => x.messageId === "px-dup-1")).toHaveLength(1);
    expect(delivered().some((x) => x.userId === "px-quiet")).toBe(false);
  });
});

test("/robots.txt is rudder-server's", async () => {
  const res = await fetch(`${s.url}/robots.txt`);
  expect(res.status).toBe(200);
  expect(await res.text()).toBe("User-agent: * \nDisallow: / \n");
});

test("/health carries rudder-server's fields beside Sluice's", async () => {
  const res = await fetch(`${s.url}/health`);
  expect(res.status).toBe(200);
  const h = (await res.json()) as Record<string, string>;
  expect(h).toMatchObject({
    status: "ok",
    database: "ok",
    storage: "ok",
    appType: "EMBEDDED",
    server: "UP",
    db: "UP",
    acceptingEvents: "TRUE",
    routingEvents: "TRUE",
    mode: "NORMAL",
    backendConfigMode: "JSON",
    lastRegulationSync: "",
  });
  expect(h.lastSync).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
  expect(Date.parse(h.lastSync!)).toBeLessThanOrEqual(Date.now());
});

test("the new endpoints are in the OpenAPI document", async () => {
  const doc = (await (await fetch(`${s.url}/openapi/json`)).json()) as { paths: Record<string, Record<string, unknown>> };
  expect(Object.keys(doc.paths["/v1/import"]!)).toContain("post");
  expect(Object.keys(doc.paths["/v1/webhook"]!)).toEqual(expect.arrayContaining(["post", "get"]));
  expect(Object.keys(doc.paths["/pixel/v1/track"]!)).toContain("get");
  expect(Object.keys(doc.paths["/pixel/v1/page"]!)).toContain("get");
});
