/**
 * Catalog kinds end to end: events go through the real pipeline to a local sink that
 * stands in for the service (via --destination-base-url), batched where the kind
 * accepts batches, in per-user order.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type TestServer, api, cleanup, createSource, sendEvent, startSink, startSluice, waitFor } from "./helpers";

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

test("AM: events of many users go out batched on /batch with the api key, each user's events in order", async () => {
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
  expect(requests.some((r) => r.path === "/batch")).toBe(true);
  expect(requests.length).toBeLessThan(33);
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
  await sendEvent(local.url, src.writeKey, "batch", { batch: Array.from({ length: 10 }, (_, i) => ({ type: "track", userId: `u${i}`, event: "E", messageId: `seg-${i}` })) });
  const delivered = () => {
    const ok = flaky.received.slice(2);
    return new Set(ok.flatMap((r) => (r.body?.batch ?? [r.body]).map((e: any) => e?.messageId)).filter(Boolean));
  };
  await waitFor(() => delivered().size === 10, { what: "all 10 after recovery" });
  expect(flaky.received[0].headers.authorization).toBe(`Basic ${btoa("seg-key:")}`);
  await local.stop();
  flaky.stop();
  cleanup(local.dataDir);
});
