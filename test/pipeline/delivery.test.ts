import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type TestServer, addWorkspace, api, cleanup, createSource, onPostgres, query, sendEvent, spawnSluice, startSink, startSluice, waitFor } from "../support/helpers";
import { basic } from "../support/helpers";

let s: TestServer;
beforeAll(async () => {
  s = await startSluice({ args: ["--retry-backoff-ms", "20", "--destination-timeout-ms", "2000"] });
});
afterAll(async () => {
  await s.stop();
  await cleanup(s.dataDir);
});

async function hook(url: string, sourceIds: string[], config: Record<string, unknown> = {}, name = `hook-${crypto.randomUUID().slice(0, 6)}`) {
  const res = await api(s.url, "POST", "/v2/destinations", { name, type: "WEBHOOK", config: { webhookUrl: `${url}/hook`, ...config }, sourceIds });
  if (res.status !== 201) throw new Error(res.text);
  return res.json as { id: string };
}

const tracks = (sink: { received: any[] }) => sink.received.filter((r) => r.body?.type === "track");

describe("routing and the webhook request", () => {
  test("an accepted event reaches the connected webhook as JSON with config headers and the messageId", async () => {
    const sink = startSink();
    const src = await createSource(s.url);
    await hook(sink.url, [src.id], { headers: [{ from: "X-Env", to: "prod" }] });
    await sendEvent(s.url, src.writeKey, "track", { userId: "u1", event: "Signed Up", properties: { plan: "pro" }, messageId: "m-1" });
    const [req] = await waitFor(() => (sink.received.length ? sink.received : undefined), { what: "the webhook request" });
    expect(req.method).toBe("POST");
    expect(req.path).toBe("/hook");
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["x-env"]).toBe("prod");
    expect(req.headers["x-sluice-message-id"]).toBe("m-1");
    expect(req.body).toMatchObject({ type: "track", event: "Signed Up", userId: "u1", properties: { plan: "pro" }, messageId: "m-1" });
    sink.stop();
  });

  test("GET webhook: no body, properties (traits for identify) flattened into query parameters", async () => {
    const sink = startSink();
    const src = await createSource(s.url);
    await hook(sink.url, [src.id], { webhookMethod: "GET", headers: { "X-Obj": "1" } });
    await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "E", properties: { a: { b: 1 }, list: ["x", "y"], s: "t" } });
    await sendEvent(s.url, src.writeKey, "identify", { userId: "u", traits: { email: "e@x.y" } });
    await waitFor(() => sink.received.length >= 2, { what: "two GET requests" });
    expect(sink.received[0].method).toBe("GET");
    expect(sink.received[0].query).toEqual({ "a.b": "1", "list[0]": "x", "list[1]": "y", s: "t" });
    expect(sink.received[0].body).toBeUndefined();
    expect(sink.received[0].headers["x-obj"]).toBe("1");
    expect(sink.received[1].query).toEqual({ email: "e@x.y" });
    sink.stop();
  });

  test("integrations: keys name the definition's display name (Webhook), exactly; All:false turns destinations off unless named true", async () => {
    const a = startSink();
    const b = startSink();
    const src = await createSource(s.url);
    await hook(a.url, [src.id], {}, "alpha");
    await hook(b.url, [src.id], {}, "beta");
    // A destination's own name, or the definition name WEBHOOK, is not a key rudder-server reads.
    await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "own-name", integrations: { All: false, alpha: true } });
    await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "definition-name", integrations: { WEBHOOK: false } });
    await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "not-webhooks", integrations: { Webhook: false } });
    await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "only-webhooks", integrations: { All: false, Webhook: true } });
    await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "all" });
    await waitFor(() => tracks(a).some((r) => r.body.event === "all") && tracks(b).some((r) => r.body.event === "all"), { what: "deliveries" });
    expect(tracks(a).map((r) => r.body.event)).toEqual(["definition-name", "only-webhooks", "all"]);
    expect(tracks(b).map((r) => r.body.event)).toEqual(["definition-name", "only-webhooks", "all"]);
    a.stop();
    b.stop();
  });
});

describe("outcomes", () => {
  test("a sink failing with 500 for a while receives every event once it recovers, in per-user order", async () => {
    let failUntil = 15;
    const sink = startSink((_r, n) => (n < failUntil ? new Response("down", { status: 500 }) : new Response("ok")));
    const src = await createSource(s.url);
    const dst = await hook(sink.url, [src.id]);
    const users = ["u1", "u2", "u3"];
    for (let i = 0; i < 10; i++) for (const u of users) await sendEvent(s.url, src.writeKey, "track", { userId: u, event: `e${i}`, messageId: `${u}-${i}` });
    await waitFor(
      () => {
        const ok = sink.received.slice(failUntil);
        return new Set(ok.map((r) => r.body.messageId)).size === 30;
      },
      { timeoutMs: 20_000, what: "all 30 events after recovery" },
    );
    // Each user's successful deliveries arrive in the order they were sent.
    const delivered = sink.received.slice(failUntil);
    for (const u of users) {
      const seq = delivered.filter((r) => r.body.userId === u).map((r) => Number(r.body.event.slice(1)));
      const firstSeen = seq.filter((v, i) => seq.indexOf(v) === i);
      expect(firstSeen).toEqual([...Array(10).keys()]);
    }
    const stats = (await api(s.url, "GET", `/v2/destinations/${dst.id}/stats`)).json;
    await waitFor(async () => (await api(s.url, "GET", `/v2/destinations/${dst.id}/stats`)).json.counts.succeeded === 30);
    expect(stats.lastError.error).toBe("destination answered 500");
    sink.stop();
  });

  test("429 with Retry-After is retried after the given delay", async () => {
    const sink = startSink((_r, n) => (n === 0 ? new Response("slow down", { status: 429, headers: { "retry-after": "1" } }) : new Response("ok")));
    const src = await createSource(s.url);
    await hook(sink.url, [src.id]);
    await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "E" });
    await waitFor(() => sink.received.length >= 2, { what: "the retry" });
    expect(sink.received[1].at - sink.received[0].at).toBeGreaterThanOrEqual(900);
    sink.stop();
  });

  test("400 aborts at once; replay delivers after the sink is fixed", async () => {
    let broken = true;
    const sink = startSink(() => (broken ? new Response("bad", { status: 400 }) : new Response("ok")));
    const src = await createSource(s.url);
    const dst = await hook(sink.url, [src.id]);
    await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "E1" });
    await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "E2" });
    await waitFor(async () => (await api(s.url, "GET", `/v2/destinations/${dst.id}/stats`)).json.counts.aborted === 2, { what: "two aborted" });
    expect(sink.received).toHaveLength(2);
    const stats = (await api(s.url, "GET", `/v2/destinations/${dst.id}/stats`)).json;
    expect(stats.lastError.error).toBe("destination answered 400");
    const [row] = await query(s, "SELECT last_status, last_response, attempt_log FROM deliveries WHERE destination_id = ? LIMIT 1", [dst.id]);
    expect(row.last_status).toBe(400);
    expect(row.last_response).toBe("bad");
    expect(JSON.parse(row.attempt_log)[0]).toMatchObject({ status: 400, response: "bad" });
    broken = false;
    const replay = await api(s.url, "POST", `/v2/destinations/${dst.id}/replay`);
    expect(replay.json).toEqual({ replayed: 2 });
    await waitFor(async () => (await api(s.url, "GET", `/v2/destinations/${dst.id}/stats`)).json.counts.succeeded === 2, { what: "replayed events delivered" });
    expect(sink.received.slice(2).map((r) => r.body.event)).toEqual(["E1", "E2"]);
    sink.stop();
  });

  test("GET /v2/destinations/{id}/deliveries: newest first with the event and each attempt's status and answer; ?state=aborted lists what replay sends", async () => {
    const sink = startSink((req) => (req.body?.event === "Bad" ? new Response("no such thing", { status: 404 }) : new Response("fine")));
    const src = await createSource(s.url);
    const dst = await hook(sink.url, [src.id]);
    await sendEvent(s.url, src.writeKey, "track", { userId: "d1", event: "Good", properties: { n: 1 } });
    await sendEvent(s.url, src.writeKey, "track", { userId: "d2", event: "Bad" });
    await waitFor(async () => {
      const c = (await api(s.url, "GET", `/v2/destinations/${dst.id}/stats`)).json.counts;
      return c.succeeded === 1 && c.aborted === 1;
    }, { what: "one delivered, one aborted" });
    const all = await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries`);
    expect(all.status).toBe(200);
    expect(all.json.next).toBeNull();
    expect(all.json.deliveries.map((d: any) => [d.event.event, d.state])).toEqual([["Bad", "aborted"], ["Good", "succeeded"]]);
    const good = all.json.deliveries[1];
    expect(good).toMatchObject({ sourceId: src.id, userKey: "d1", attempts: 1, lastStatus: 200, lastResponse: "fine", nextAttemptAt: null });
    expect(good.event.properties).toEqual({ n: 1 });
    expect(good.attemptLog).toHaveLength(1);
    expect(good.attemptLog[0]).toMatchObject({ status: 200, response: "fine", error: null });
    const aborted = await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?state=aborted`);
    expect(aborted.json.deliveries).toHaveLength(1);
    expect(aborted.json.deliveries[0]).toMatchObject({ state: "aborted", lastStatus: 404, lastResponse: "no such thing", lastError: "destination answered 404" });
    // Pages: one at a time, `next` leads to the older one.
    const p1 = await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?limit=1`);
    expect(p1.json.deliveries.map((d: any) => d.event.event)).toEqual(["Bad"]);
    const p2 = await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?limit=1&before=${p1.json.next}`);
    expect(p2.json.deliveries.map((d: any) => d.event.event)).toEqual(["Good"]);
    expect(p2.json.next).toBeNull();
    sink.stop();
  });

  test("deliveries: a bad query → 400 naming the field; an unknown or another workspace's destination → 404", async () => {
    const src = await createSource(s.url);
    const dst = await hook("http://127.0.0.1:1", [src.id]);
    for (const [q, field] of [["state=lost", "state: expected one of pending"], ["limit=0", "limit"], ["limit=101", "limit"], ["limit=abc", "limit"], ["limit=1.5", "limit"], ["before=-3", "before"], ["colour=red", "colour"]]) {
      const res = await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.json.message, q).toContain(field);
    }
    expect((await api(s.url, "GET", "/v2/destinations/dst_nope/deliveries")).status).toBe(404);
  });

  test("a slow sink does not hold up a fast one", async () => {
    const slow = startSink(async () => {
      await Bun.sleep(1500); // the sink is slow; the test itself polls
      return new Response("ok");
    });
    const fast = startSink();
    const src = await createSource(s.url);
    await hook(slow.url, [src.id]);
    await hook(fast.url, [src.id]);
    for (let i = 0; i < 20; i++) await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: `e${i}` });
    await waitFor(() => fast.received.length === 20, { timeoutMs: 3000, what: "the fast sink to get all 20" });
    expect(slow.received.length).toBeLessThan(20);
    slow.stop();
    fast.stop();
  });

  test("a destination that is disabled holds its events; re-enabling resumes; deleting aborts the pending ones", async () => {
    const sink = startSink();
    const src = await createSource(s.url);
    const dst = await hook(sink.url, [src.id]);
    await api(s.url, "PATCH", `/v2/destinations/${dst.id}`, { enabled: false });
    // Events routed while enabled, then held: route one now by re-enabling a moment.
    await api(s.url, "PATCH", `/v2/destinations/${dst.id}`, { enabled: true });
    await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "first" });
    await waitFor(() => sink.received.length === 1);
    const stopping = startSink(() => new Response("down", { status: 503 }));
    const dst2 = await hook(stopping.url, [src.id]);
    await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "held" });
    await waitFor(() => stopping.received.length >= 1, { what: "a failing attempt" });
    await api(s.url, "PATCH", `/v2/destinations/${dst2.id}`, { enabled: false });
    const seen = stopping.received.length;
    const stats = (await api(s.url, "GET", `/v2/destinations/${dst2.id}/stats`)).json;
    expect(stats.counts.retrying + stats.counts.pending).toBe(1);
    expect((await api(s.url, "DELETE", `/v2/destinations/${dst2.id}`)).status).toBe(204);
    const row = async () => (await query(s, "SELECT state, last_error FROM deliveries WHERE destination_id = ?", [dst2.id]))[0];
    // SQLite: aborted when the DELETE answers. PostgreSQL: by each instance's router once the
    // config change reaches it (the 'config' epoch, design §3.4), so shortly after.
    if (onPostgres) await waitFor(async () => (await row())?.state === "aborted", { timeoutMs: 3000, what: "the pending delivery aborted" });
    expect(await row()).toEqual({ state: "aborted", last_error: "destination deleted" });
    expect(stopping.received.length).toBeLessThanOrEqual(seen + 1);
    sink.stop();
    stopping.stop();
  });

  test("disabling a source holds its queued events; enabling it resumes", async () => {
    let up = false;
    const sink = startSink(() => (up ? new Response("ok") : new Response("down", { status: 503 })));
    const src = await createSource(s.url);
    await hook(sink.url, [src.id]);
    await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "E" });
    await waitFor(() => sink.received.length >= 1);
    await api(s.url, "PATCH", `/v2/sources/${src.id}`, { enabled: false });
    up = true;
    const before = sink.received.length;
    // Retries are 20 ms apart: with the source disabled none may be sent. Poll the
    // router's own state rather than wait: the user's head must stay queued.
    const [{ d }] = (await query(s, "SELECT destination_id AS d FROM deliveries WHERE source_id = ?", [src.id])) as any[];
    await waitFor(() => s.sluice.router.inMemory(d).queued === 1);
    await new Promise((r) => setTimeout(r, 200));
    expect(sink.received.length).toBe(before);
    await api(s.url, "PATCH", `/v2/sources/${src.id}`, { enabled: true });
    await waitFor(() => sink.received.some((r, i) => i >= before && r.body?.event === "E"), { what: "delivery after re-enabling" });
    sink.stop();
  });
});

describe("visibility", () => {
  test("live events: the source stream shows accepted events, the destination stream each attempt", async () => {
    const sink = startSink();
    const src = await createSource(s.url);
    const dst = await hook(sink.url, [src.id]);
    const controller = new AbortController();
    const open = async (path: string) => {
      const res = await fetch(`${s.url}${path}`, { headers: { authorization: "Bearer test-admin-token-0123456789" }, signal: controller.signal });
      expect(res.headers.get("content-type")).toContain("text/event-stream");
      const reader = res.body!.getReader();
      let text = "";
      const dec = new TextDecoder();
      return {
        until: async (needle: string) => {
          while (!text.includes(needle)) {
            const { value, done } = await reader.read();
            if (done) break;
            text += dec.decode(value);
          }
          return text;
        },
      };
    };
    const srcStream = await open(`/v2/sources/${src.id}/live-events`);
    const dstStream = await open(`/v2/destinations/${dst.id}/live-events`);
    await srcStream.until("event: ready");
    await dstStream.until("event: ready");
    await sendEvent(s.url, src.writeKey, "track", { userId: "live-user", event: "Live" });
    expect(await srcStream.until('"event":"Live"')).toContain("live-user");
    expect(await dstStream.until('"state":"succeeded"')).toContain('"status":200');
    controller.abort();
    sink.stop();
  });

  test("stats and replay of another workspace's destination → 404", async () => {
    await addWorkspace(s, "x", "x-workspace-token-12345");
    const src = await createSource(s.url);
    const dst = await hook("http://127.0.0.1:1", [src.id]);
    expect((await api(s.url, "GET", `/v2/destinations/${dst.id}/stats`, undefined, "x-workspace-token-12345")).status).toBe(404);
    expect((await api(s.url, "POST", `/v2/destinations/${dst.id}/replay`, undefined, "x-workspace-token-12345")).status).toBe(404);
    expect((await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries`, undefined, "x-workspace-token-12345")).status).toBe(404);
  });
});

test("kill -9 during delivery: after a restart every acknowledged event arrives", async () => {
  const sink = startSink(async () => new Response("ok"));
  const server = await spawnSluice({ args: ["--retry-backoff-ms", "20"] });
  const src = (await (await fetch(`${server.url}/v2/sources`, { method: "POST", headers: { authorization: "Bearer test-admin-token-0123456789", "content-type": "application/json" }, body: JSON.stringify({ name: "k" }) })).json()) as any;
  await fetch(`${server.url}/v2/destinations`, {
    method: "POST",
    headers: { authorization: "Bearer test-admin-token-0123456789", "content-type": "application/json" },
    body: JSON.stringify({ name: "h", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/hook` }, sourceIds: [src.id] }),
  });
  const acked: string[] = [];
  for (let i = 0; i < 40; i++) {
    const ids = Array.from({ length: 25 }, (_, j) => `k-${i}-${j}`);
    const res = await fetch(`${server.url}/v1/batch`, {
      method: "POST",
      headers: { authorization: basic(src.writeKey) },
      body: JSON.stringify({ batch: ids.map((messageId) => ({ type: "track", userId: `u${messageId.length % 7}`, event: "E", messageId })) }),
    });
    if (res.status === 200) acked.push(...ids);
    if (i === 20) await waitFor(() => sink.received.length > 0, { what: "delivery to begin" });
  }
  server.proc.kill("SIGKILL");
  await server.proc.exited;
  const again = await spawnSluice({ dataDir: server.dataDir });
  await waitFor(() => {
    const got = new Set(sink.received.map((r) => r.body?.messageId));
    return acked.every((id) => got.has(id));
  }, { timeoutMs: 30_000, what: "every acknowledged event at the sink" });
  again.proc.kill("SIGTERM");
  await again.proc.exited;
  sink.stop();
  await cleanup(server.dataDir);
  // On PostgreSQL the new process takes the killed one's partitions once their leases expired (about 12 s, design §3.3).
}, onPostgres ? 60_000 : undefined);

describe("user transformations in delivery", () => {
  async function withTransformation(code: string) {
    const sink = startSink();
    const src = await createSource(s.url);
    const dst = await hook(sink.url, [src.id]);
    const t = await api(s.url, "POST", "/v2/transformations", { name: `t-${crypto.randomUUID().slice(0, 6)}`, code, destinationIds: [dst.id] });
    expect(t.status).toBe(201);
    return { sink, src, dst };
  }

  test("a transformation changes, drops and fans out events before the webhook gets them", async () => {
    const { sink, src, dst } = await withTransformation(`
      export function transformEvent(event, metadata) {
        if (event.event === "drop me") return null;
        if (event.event === "twice") return [{ ...event, event: "copy 1" }, { ...event, event: "copy 2" }];
        return { ...event, properties: { ...event.properties, tagged: true, dest: metadata(event).destinationId } };
      }`);
    for (const name of ["keep", "drop me", "twice", "last"]) await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: name });
    await waitFor(() => tracks(sink).some((r) => r.body.event === "last"), { what: "the last event" });
    expect(tracks(sink).map((r) => r.body.event)).toEqual(["keep", "copy 1", "copy 2", "last"]);
    expect(tracks(sink)[0].body.properties).toEqual({ tagged: true, dest: dst.id });
    // The sink has the last request before its outcome's group commit has run.
    const stats = await waitFor(async () => {
      const st = (await api(s.url, "GET", `/v2/destinations/${dst.id}/stats`)).json;
      return st.counts.pending + st.counts.retrying === 0 ? st : undefined;
    }, { what: "every outcome recorded" });
    expect(stats.counts).toMatchObject({ succeeded: 3, filtered: 1 });
    sink.stop();
  });

  test("a fan-out whose later output the kind refuses is aborted whole: none of its outputs is sent", async () => {
    const { sink, src, dst } = await withTransformation(`
      function transformEvent(event) {
        if (event.event === "split") return [{ ...event, event: "part 1" }, { ...event, type: "not-a-call" }];
        return event;
      }`);
    await sendEvent(s.url, src.writeKey, "track", { userId: "fan", event: "split" });
    await sendEvent(s.url, src.writeKey, "track", { userId: "fan", event: "after" });
    await waitFor(() => tracks(sink).some((r) => r.body.event === "after"), { what: "the event after the refused fan-out" });
    expect(tracks(sink).map((r) => r.body.event)).toEqual(["after"]);
    // The sink has the request before the outcome's group commit has run.
    const stats = await waitFor(async () => {
      const st = (await api(s.url, "GET", `/v2/destinations/${dst.id}/stats`)).json;
      return st.counts.succeeded === 1 ? st : undefined;
    }, { what: "the delivered event's outcome" });
    expect(stats.counts).toMatchObject({ succeeded: 1, aborted: 1 });
    sink.stop();
  });

  test("a transformation that throws aborts only that event, with its error in stats; the next events go on", async () => {
    const { sink, src, dst } = await withTransformation(`
      function transformEvent(event) {
        if (event.event === "bad") throw new Error("no bad events here");
        return event;
      }`);
    await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "bad" });
    await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "good" });
    await waitFor(() => tracks(sink).some((r) => r.body.event === "good"), { what: "the good event" });
    expect(tracks(sink).map((r) => r.body.event)).toEqual(["good"]);
    // Outcomes are written in groups after the attempts: the abort may land just after the delivery.
    const stats = await waitFor(async () => {
      const st = (await api(s.url, "GET", `/v2/destinations/${dst.id}/stats`)).json;
      return st.counts.aborted >= 1 && st;
    }, { what: "the bad event's abort in stats" });
    expect(stats.counts.aborted).toBe(1);
    expect(stats.lastError.error).toContain("no bad events here");
    sink.stop();
  });

  test("an endless loop in a transformation times out, and the server keeps serving", async () => {
    const { sink, src, dst } = await withTransformation(`function transformEvent(event) { if (event.event === "spin") { for (;;) {} } return event; }`);
    await sendEvent(s.url, src.writeKey, "track", { userId: "u1", event: "spin" });
    await sendEvent(s.url, src.writeKey, "track", { userId: "u2", event: "fine" });
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    await waitFor(() => tracks(sink).some((r) => r.body.event === "fine"), { what: "the other user's event", timeoutMs: 15_000 });
    await waitFor(async () => (await api(s.url, "GET", `/v2/destinations/${dst.id}/stats`)).json.counts.aborted === 1, { timeoutMs: 15_000, what: "the spinning event aborted" });
    const stats = (await api(s.url, "GET", `/v2/destinations/${dst.id}/stats`)).json;
    expect(stats.lastError.error).toContain("timed out");
    sink.stop();
  });
});

test("saving code that spins at its top level is refused without stalling the server", async () => {
  const saving = api(s.url, "POST", "/v2/transformations", { name: "spinner", code: "for (;;) {}\nfunction transformEvent(e) { return e; }" });
  const t0 = performance.now();
  expect((await fetch(`${s.url}/health`)).status).toBe(200);
  // Validation takes the whole time limit (1 s) in a worker; the server answers meanwhile.
  expect(performance.now() - t0).toBeLessThan(500);
  const res = await saving;
  expect(res.status).toBe(400);
  expect(res.json.message).toContain("timed out");
});

test("retention removes finished deliveries and their events, keeps unfinished ones", async () => {
  const now = Date.now();
  const old = now - 48 * 3600_000;
  // Stored through intake (which gives the ids), then made old.
  const src = await createSource(s.url);
  for (const m of ["ret-done", "ret-pending", "ret-new"]) expect((await sendEvent(s.url, src.writeKey, "track", { userId: "u", event: "E", messageId: m })).status).toBe(200);
  const idOf = async (m: string) => (await query(s, "SELECT id FROM events WHERE message_id = ?", [m]))[0]!.id as number;
  // Made old as time would: received_at grows with id, so everything stored before them is older too.
  await query(s, "UPDATE events SET received_at = ? WHERE id <= ?", [old, await idOf("ret-pending")]);
  // PostgreSQL's deliveries carry their event's partition.
  const partition = onPostgres ? ", partition" : "";
  const insertDelivery = async (messageId: string, state: string) =>
    query(
      s,
      `INSERT INTO deliveries (event_id, destination_id, source_id, workspace_id, user_key, state, attempts, next_attempt_at, created_at, updated_at${partition})
       SELECT id, 'dst_ret', ?, 'ws', 'u', ?, 1, 0, ?, ?${partition} FROM events WHERE message_id = ?`,
      [src.id, state, old, old, messageId],
    );
  await insertDelivery("ret-done", "succeeded");
  await insertDelivery("ret-pending", "retrying");
  // An event goes only once the processor has passed it. SQLite: one cursor, set past them here;
  // PostgreSQL: a (tx, id) cursor per partition, moved by the processor itself (design §3.3).
  if (onPostgres) {
    await waitFor(
      async () => (await query(s, "SELECT 1 AS x FROM events e JOIN processor_cursors c ON c.partition = e.partition WHERE e.message_id = 'ret-new' AND (e.tx, e.id) <= (c.tx, c.id)")).length === 1,
      { what: "the processor past the events" },
    );
  } else {
    await query(s, "INSERT INTO cursors (name, value) VALUES ('processor', ?) ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value)", [await idOf("ret-new")]);
  }
  await s.sluice.ctx.stats.purgeExpired(now - 24 * 3600_000);
  const left = (await query(s, "SELECT message_id AS m FROM events WHERE source_id = ? ORDER BY id", [src.id])).map((r) => r.m);
  expect(left).toEqual(["ret-pending", "ret-new"]);
  expect((await query(s, "SELECT state FROM deliveries WHERE destination_id = 'dst_ret'")).map((r) => r.state)).toEqual(["retrying"]);
});

// SQLite's retention finds old events by id (received_at follows id in one process); PostgreSQL's
// reads received_at through a BRIN index instead (design §3.7).
test.skipIf(onPostgres)("retention finds the id range of old events by binary search, across gaps in the ids", async () => {
  const { lastEventIdBefore } = await import("../../src/storage/sqlite/stats");
  const { Database } = await import("bun:sqlite");
  const c = new Database(":memory:");
  c.run("CREATE TABLE events (id INTEGER PRIMARY KEY, received_at INTEGER NOT NULL)");
  expect(lastEventIdBefore(c, 1000)).toBe(0);
  // ids with gaps; received_at grows with id.
  const rows = [[3, 10], [4, 20], [9, 30], [10, 40], [57, 50], [58, 60], [200, 70]];
  for (const [id, r] of rows) c.run("INSERT INTO events VALUES (?, ?)", [id, r]);
  expect(lastEventIdBefore(c, 5)).toBe(0);
  expect(lastEventIdBefore(c, 10)).toBe(0);
  expect(lastEventIdBefore(c, 11)).toBe(3);
  expect(lastEventIdBefore(c, 35)).toBe(9);
  expect(lastEventIdBefore(c, 50)).toBe(10);
  expect(lastEventIdBefore(c, 51)).toBe(57);
  expect(lastEventIdBefore(c, 70)).toBe(58);
  expect(lastEventIdBefore(c, 71)).toBe(200);
  expect(lastEventIdBefore(c, 1e15)).toBe(200);
  c.close();
});

test("form bodies are written as RudderStack's server writes them: a list of one JSON string arrives as a JSON array", async () => {
  const { requestBody } = await import("../../src/pipeline/send");
  const { restRequest } = await import("../../src/destinations/types");
  const req = restRequest({ endpoint: "https://api2.amplitude.com/groupidentify", form: { api_key: "k", identification: [JSON.stringify({ group_type: "org", group_value: "acme" })], n: 3, obj: { a: 1 }, list: ["a", "b", 7] } });
  const { body, contentType } = requestBody(req);
  expect(contentType).toBe("application/x-www-form-urlencoded");
  const form = new URLSearchParams(body);
  expect(JSON.parse(form.get("identification")!)).toEqual([{ group_type: "org", group_value: "acme" }]);
  expect(form.get("api_key")).toBe("k");
  expect(form.get("n")).toBe("3");
  expect(form.get("obj")).toBe('{"a":1}');
  expect(form.get("list")).toBe("[a b 7]");
});
