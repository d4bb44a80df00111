/**
 * Catalog kinds end to end: events go through the real pipeline to a local sink that
 * stands in for the service (via --destination-base-url), batched where the kind
 * accepts batches, in per-user order.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "../support/helpers";

let s: TestServer;
const sink = startSink();
beforeAll(async () => {
  s = await startSluice({ args: ["--destination-base-url", `AM=${sink.url},SEGMENT=${sink.url}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  sink.stop();
  cleanup(s.dataDir);
});

test("AM: events of many users go out in calls of one user each (a lone event on /2/httpapi) with the api key, each user's events in order", async () => {
  const src = await createSource(s.url);
  const dst = await api(s.url, "POST", "/v2/destinations", { name: "amp", type: "AM", config: { apiKey: "amp-key" }, sourceIds: [src.id] });
  expect(dst.status).toBe(201);
  const batch = [];
  for (let i = 0; i < 30; i++) batch.push({ type: "track", userId: `user-${i}`, event: "Bought", properties: { i } });
  for (let k = 0; k < 3; k++) batch.push({ type: "track", userId: "ordered-user", event: `step ${k}` });
  const res = await sendEvent(s.url, src.writeKey, "batch", { batch });
  expect(res.status).toBe(200);
  const events = () => sink.received.filter((r) => r.body?.api_key === "amp-key").flatMap((r) => r.body.events ?? []);
  await waitFor(() => events().length >= 33, { what: "33 events at the Amplitude stand-in" });
  const requests = sink.received.filter((r) => r.body?.api_key === "amp-key");
  expect(requests.every((r) => r.method === "POST")).toBe(true);
  expect(requests.every((r) => new Set(r.body.events.map((e: any) => e.user_id)).size === 1)).toBe(true);
  expect(requests.every((r) => r.path === (r.body.events.length === 1 ? "/2/httpapi" : "/batch"))).toBe(true);
  expect(events().filter((e: any) => e.user_id === "ordered-user").map((e: any) => e.event_type)).toEqual(["step 0", "step 1", "step 2"]);
  expect(events().find((e: any) => e.user_id === "user-7").event_properties.i).toBe(7);
  const stats = (await api(s.url, "GET", `/v2/destinations/${dst.json.id}/stats`)).json;
  await waitFor(async () => (await api(s.url, "GET", `/v2/destinations/${dst.json.id}/stats`)).json.counts.succeeded === 33);
  expect(stats.counts.aborted).toBe(0);
});

test("SEGMENT: a batched request's failure retries every event in it, and all arrive once the service recovers", async () => {
  let failures = 2;
  const flaky = startSink((r) => (r.path.startsWith("/v1/") && failures-- > 0 ? new Response("busy", { status: 503 }) : new Response("{}")));
  const local = await startSluice({ args: ["--destination-base-url", `SEGMENT=${flaky.url}`, "--retry-backoff-ms", "20"] });
  const src = await createSource(local.url);
  await api(local.url, "POST", "/v2/destinations", { name: "seg", type: "SEGMENT", config: { writeKey: "seg-key" }, sourceIds: [src.id] });
  await sendEvent(local.url, src.writeKey, "batch", { batch: Array.from({ length: 10 }, (_, i) => ({ type: "track", userId: `u${i}`, event: `seg-${i}` })) });
  const delivered = () => {
    const ok = flaky.received.slice(2);
    return new Set(ok.flatMap((r) => (r.body?.batch ?? [r.body]).map((e: any) => e?.event)).filter(Boolean));
  };
  await waitFor(() => delivered().size === 10, { what: "all 10 after recovery" });
  expect(flaky.received[0].headers.authorization).toBe(`Basic ${btoa("seg-key:")}`);
  await local.stop();
  flaky.stop();
  cleanup(local.dataDir);
});

test("SEGMENT: a batched call answered 400 sends each event again alone, so only the one the service refuses is aborted", async () => {
  // Segment answers 400 for a call holding an item it refuses; here, one whose properties say bad.
  const strict = startSink((r) => (r.path === "/v1/batch" && (r.body?.batch ?? []).some((e: any) => e?.properties?.bad) ? new Response('{"error":"bad item"}', { status: 400 }) : new Response("{}")));
  const local = await startSluice({ args: ["--destination-base-url", `SEGMENT=${strict.url}`, "--retry-backoff-ms", "20"] });
  const src = await createSource(local.url);
  const dst = (await api(local.url, "POST", "/v2/destinations", { name: "seg", type: "SEGMENT", config: { writeKey: "seg-key" }, sourceIds: [src.id] })).json;
  const batch = ["a", "b", "c", "d"].map((u) => ({ type: "track", userId: `user-${u}`, event: `ev-${u}`, properties: { bad: u === "c" } }));
  await sendEvent(local.url, src.writeKey, "batch", { batch });
  const stats = async () => (await api(local.url, "GET", `/v2/destinations/${dst.id}/stats`)).json;
  await waitFor(async () => (await stats()).counts.succeeded === 3 && (await stats()).counts.aborted === 1, { what: "3 delivered and 1 aborted" });
  // The first call carried all four and was refused; then one call each, the bad one refused again.
  expect(strict.received[0]!.body.batch.map((e: any) => e.event)).toEqual(["ev-a", "ev-b", "ev-c", "ev-d"]);
  const alone = strict.received.slice(1).map((r) => r.body.batch.map((e: any) => e.event));
  expect(alone.every((events) => events.length === 1)).toBe(true);
  expect(alone.flat().sort()).toEqual(["ev-a", "ev-b", "ev-c", "ev-d"]);
  expect((await stats()).lastError.error).toBe("destination answered 400");
  await local.stop();
  strict.stop();
  cleanup(local.dataDir);
});

/**
 * Every kind, through the real pipeline: what arrives at the stand-in is exactly what
 * the kind's transform (whose mapping its own test file checks against the service's
 * documentation) produced, with base URL, method, path, query, headers and body intact.
 */
const KINDS: Array<{ type: string; config: Record<string, unknown>; call?: string; body?: Record<string, unknown> }> = [
  { type: "HTTP", config: { apiUrl: "https://api.example.com/collect", method: "POST", format: "JSON", auth: "bearerTokenAuth", bearerToken: "tok" } },
  { type: "SLACK", config: { webhookUrl: "https://hooks.slack.com/services/T/B/X", eventTemplateSettings: [{ eventName: "Bought", eventTemplate: "{{name}} bought" }] } },
  { type: "SEGMENT", config: { writeKey: "seg-key" } },
  { type: "POSTHOG", config: { teamApiKey: "ph-key", yourInstance: "https://app.posthog.com" } },
  { type: "AM", config: { apiKey: "amp-key" } },
  { type: "MP", config: { token: "mp-token", apiSecret: "mp-secret" } },
  { type: "GA4", config: { apiSecret: "ga-secret", typesOfClient: "gtag", measurementId: "G-123" } },
  { type: "HEAP", config: { appId: "heap-app" } },
  { type: "CUSTOMERIO", config: { siteID: "cio-site", apiKey: "cio-key" } },
  { type: "BRAZE", config: { restApiKey: "braze-key", dataCenter: "US-01" } },
  { type: "ITERABLE", config: { apiKey: "it-key" } },
  { type: "HS", config: { authorizationType: "legacyApiKey", apiKey: "hs-key", hubID: "123", apiVersion: "legacyApi" }, call: "identify", body: { traits: { email: "ada@example.com", firstName: "Ada" } } },
  { type: "MAUTIC", config: { userName: "admin@example.com", password: "pw", subDomainName: "acme" }, call: "identify", body: { traits: { email: "ada@example.com", firstName: "Ada" } } },
  { type: "INTERCOM", config: { apiKey: "ic-token", apiVersion: "v2" }, call: "identify", body: { traits: { email: "ada@example.com", name: "Ada" } } },
  { type: "KLAVIYO", config: { privateApiKey: "pk_kl" } },
  { type: "SENDGRID", config: { apiKey: "sg-key", eventNamesSettings: [{ event: "Bought" }], fromEmail: "from@example.com", subject: "Hi", contents: [{ type: "text/plain", value: "hello" }], mailFromTraits: true } },
  { type: "ZENDESK", config: { domain: "acme", email: "agent@example.com", apiToken: "zd-token" } },
  { type: "CLEVERTAP", config: { accountId: "ct-acc", passcode: "ct-pass", region: "in1" } },
  { type: "MOENGAGE", config: { apiId: "moe-app", apiKey: "moe-key", region: "EU" } },
  { type: "FRESHSALES", config: { apiKey: "fs-key", domain: "acme" }, call: "identify", body: { traits: { email: "ada@example.com", firstName: "Ada" } } },
];

describe("every kind: the stand-in receives exactly the requests the kind's transform makes", () => {
  const stand = startSink(() => new Response("{}", { headers: { "content-type": "application/json" } }));
  let local: TestServer;
  beforeAll(async () => {
    local = await startSluice({ args: ["--destination-base-url", KINDS.map((k) => `${k.type}=${stand.url}`).join(",")] });
  });
  afterAll(async () => {
    await local.stop();
    stand.stop();
    cleanup(local.dataDir);
  });

  // Kinds that ask the service first need a stand-in that answers their lookups as the service
  // would; each has its own end-to-end tests against one (test/destinations/<kind>*.test.ts).
  const LOOKUP_KINDS = new Set(["HS", "INTERCOM", "ZENDESK", "FRESHSALES", "MAUTIC"]);
  // One test per kind (run one alone with -t KIND); they share the server and take turns at the stand-in.
  for (const k of KINDS.filter((k) => !LOOKUP_KINDS.has(k.type))) {
    test(k.type, async () => {
      const { findDefinition } = await import("../../src/destinations/registry");
      const { requestUrl, requestBody } = await import("../../src/pipeline/send");
      stand.received.length = 0;
      const src = await createSource(local.url);
      const dst = await api(local.url, "POST", "/v2/destinations", { name: `d-${k.type}`, type: k.type, config: k.config, sourceIds: [src.id] });
      expect(dst.status).toBe(201);
      const call = { userId: `user-${k.type}`, anonymousId: `anon-${k.type}`, event: "Bought", properties: { price: 9.5, currency: "EUR" }, messageId: `m-${k.type}`, context: { traits: { name: "Ada", email: "ada@example.com" } }, ...k.body };
      expect((await sendEvent(local.url, src.writeKey, k.call ?? "track", call)).status).toBe(200);
      const stored = local.sluice.db.$client.query("SELECT payload FROM events WHERE message_id = ?").get(`m-${k.type}`) as { payload: string };
      const def = findDefinition(k.type)!;
      // The config as the API stored it (with the kind's dashboard defaults), which delivery reads.
      const ctx = { config: dst.json.config as Record<string, unknown>, destination: { id: dst.json.id, name: `d-${k.type}`, workspaceId: local.sluice.workspaceId }, baseUrl: stand.url };
      let expected = await def.transform(JSON.parse(stored.payload), ctx);
      if (def.batch) expected = def.batch(expected, ctx);
      expect(expected.length).toBeGreaterThan(0);
      await waitFor(() => stand.received.length >= expected.length, { what: `${k.type} requests at the stand-in` });
      expect(stand.received.length).toBe(expected.length);
      expected.forEach((req, i) => {
        const got = stand.received[i];
        const url = new URL(requestUrl(req));
        expect(`${k.type} ${got.method} ${got.path}`).toBe(`${k.type} ${req.method} ${url.pathname}`);
        expect(got.query).toEqual(Object.fromEntries(url.searchParams));
        for (const [h, v] of Object.entries(req.headers)) expect(got.headers[h.toLowerCase()]).toBe(v);
        const body = requestBody(req).body;
        if (body === undefined) expect(got.body).toBeUndefined();
        else if (typeof got.body === "string") expect(got.body).toBe(body);
        else expect(got.body).toEqual(JSON.parse(body));
      });
    });
  }
});
