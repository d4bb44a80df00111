/**
 * GOOGLEPUBSUB end to end against Google's Pub/Sub emulator, started here: with rudder-server's
 * testConfig.endpoint (no credentials), and with a service account whose token the OAuth
 * stand-in grants only for a correctly signed JWT (test/support/google-oauth.ts), the calls then
 * passing a gate that lets through only that token.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type TestServer, ADMIN_EMAIL, ADMIN_TOKEN, api, cleanup, createSource, startSluice, waitFor } from "../support/helpers";
import { startGoogleOAuth } from "../support/google-oauth";
import { type PubSubEmulator, havePubSub, requirePubSub, startPubSubEmulator } from "../support/pubsub-emulator";

requirePubSub("test/destinations/google-pubsub.test.ts");

describe.if(havePubSub)("GOOGLEPUBSUB against the Pub/Sub emulator", () => {
  const PROJECT = "sluice-test";
  let ps: PubSubEmulator;
  let s: TestServer;
  let oauth: ReturnType<typeof startGoogleOAuth>;
  let gate: ReturnType<typeof Bun.serve>;
  const gateSeen: string[] = [];

  beforeAll(async () => {
    ps = await startPubSubEmulator();
    oauth = startGoogleOAuth();
    // Pub/Sub itself, as far as the tests can tell: only a token the stand-in granted passes.
    gate = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const auth = req.headers.get("authorization") ?? "";
        gateSeen.push(auth);
        if (!oauth.grants.some((g) => `Bearer ${g.token}` === auth && g.scope === "https://www.googleapis.com/auth/pubsub")) {
          return Response.json({ error: { code: 401, message: "Request had invalid authentication credentials.", status: "UNAUTHENTICATED" } }, { status: 401 });
        }
        const u = new URL(req.url);
        const answer = await fetch(ps.url + u.pathname + u.search, { method: req.method, headers: { "content-type": "application/json" }, body: await req.text() });
        return new Response(await answer.text(), { status: answer.status, headers: { "content-type": "application/json" } });
      },
    });
    s = await startSluice({ args: ["--destination-base-url", `GOOGLEPUBSUB=http://127.0.0.1:${gate.port}`, "--retry-backoff-ms", "20"] });
  }, 90_000);
  afterAll(async () => {
    await s?.stop();
    await cleanup(s?.dataDir);
    gate?.stop(true);
    oauth?.stop();
    await ps?.stop();
  });

  const connect = async (config: Record<string, unknown>) => {
    const src = await createSource(s.url);
    const res = await api(s.url, "POST", "/v2/destinations", { name: `pubsub-${crypto.randomUUID().slice(0, 6)}`, type: "GOOGLEPUBSUB", config: { projectId: PROJECT, ...config }, sourceIds: [src.id] });
    if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`);
    return { src, dst: res.json as { id: string; name: string } };
  };
  const send = (writeKey: string, events: unknown[]) =>
    fetch(`${s.url}/v1/batch`, { method: "POST", headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${writeKey}:`)}` }, body: JSON.stringify({ batch: events }) });
  const counts = async (id: string) => (await api(s.url, "GET", `/v2/destinations/${id}/stats`)).json.counts as Record<string, number>;

  test("testConfig.endpoint: topics by eventToTopicMap (name, type, *; any case), attributes by eventToAttributesMap, each user's messages in order", async () => {
    await ps.createTopic(PROJECT, "orders");
    await ps.createTopic(PROJECT, "everything");
    await ps.subscribe(PROJECT, "orders", "orders-sub");
    await ps.subscribe(PROJECT, "everything", "everything-sub");
    const { src, dst } = await connect({
      testConfig: { endpoint: ps.hostPort },
      eventToTopicMap: [{ from: "order completed", to: "orders" }, { from: "*", to: "everything" }],
      eventToAttributesMap: [{ from: "Order Completed", to: "properties.currency" }, { from: "Order Completed", to: "plan" }],
    });
    const events = Array.from({ length: 40 }, (_, i) => ({ type: "track", event: i % 2 ? "Order Completed" : "Viewed", userId: `u${i % 4}`, messageId: `ps-${i}`, properties: { i, currency: "EUR" }, context: { traits: { plan: "pro" } } }));
    expect((await send(src.writeKey, events)).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).succeeded === 40, { what: "40 delivered", timeoutMs: 20_000 });
    const orders = await ps.pull(PROJECT, "orders-sub", 20);
    const rest = await ps.pull(PROJECT, "everything-sub", 20);
    expect(orders).toHaveLength(20);
    expect(rest).toHaveLength(20);
    expect(orders.every((m) => m.data.event === "Order Completed")).toBe(true);
    expect(orders[0]!.attributes).toEqual({ currency: "EUR", plan: "pro" });
    expect(rest[0]!.attributes).toEqual({});
    for (const u of ["u1", "u3"]) {
      const is = orders.filter((m) => m.data.userId === u).map((m) => m.data.properties.i);
      expect(is).toEqual([...is].sort((a, b) => a - b));
    }
  });

  test("with a service account: the token comes from a JWT the OAuth stand-in verifies, is kept, and Pub/Sub takes the calls", async () => {
    await ps.createTopic(PROJECT, "authed");
    await ps.subscribe(PROJECT, "authed", "authed-sub");
    const before = oauth.grants.length;
    const { src, dst } = await connect({ credentials: oauth.credentials, eventToTopicMap: [{ from: "*", to: "authed" }] });
    for (let round = 0; round < 3; round++) {
      expect((await send(src.writeKey, [{ type: "identify", userId: `a${round}`, traits: { round } }])).status).toBe(200);
      await waitFor(async () => (await counts(dst.id)).succeeded === round + 1, { what: `round ${round} delivered` });
    }
    expect((await ps.pull(PROJECT, "authed-sub", 3)).map((m) => m.data.traits.round).sort()).toEqual([0, 1, 2]);
    // One token for the three rounds: it is kept until a minute before it expires.
    expect(oauth.grants.length - before).toBe(1);
    expect(oauth.refused).toEqual([]);
  });

  test("a service account the token service refuses aborts with its words; a topic that does not exist aborts with Pub/Sub's", async () => {
    const other = startGoogleOAuth();
    try {
      // Signed with another account's key, but naming this stand-in's token endpoint: the signature fails.
      const forged = JSON.stringify({ ...JSON.parse(other.credentials), token_uri: JSON.parse(oauth.credentials).token_uri, client_email: JSON.parse(oauth.credentials).client_email });
      const bad = await connect({ credentials: forged, eventToTopicMap: [{ from: "*", to: "authed" }] });
      expect((await send(bad.src.writeKey, [{ type: "track", event: "E", userId: "f" }])).status).toBe(200);
      await waitFor(async () => (await counts(bad.dst.id)).aborted === 1, { what: "aborted" });
      expect(JSON.stringify((await api(s.url, "GET", `/v2/destinations/${bad.dst.id}/deliveries?state=aborted`)).json.deliveries)).toContain("Invalid JWT Signature");
    } finally {
      other.stop();
    }
    const missing = await connect({ testConfig: { endpoint: ps.hostPort }, eventToTopicMap: [{ from: "*", to: "no-such-topic" }] });
    expect((await send(missing.src.writeKey, [{ type: "track", event: "E", userId: "m" }])).status).toBe(200);
    await waitFor(async () => (await counts(missing.dst.id)).aborted === 1, { what: "aborted" });
    expect(JSON.stringify((await api(s.url, "GET", `/v2/destinations/${missing.dst.id}/deliveries?state=aborted`)).json.deliveries)).toContain("NOT_FOUND");
  });

  test("configs that cannot work are refused on save, naming the key", async () => {
    const src = await createSource(s.url);
    const save = (config: Record<string, unknown>) => api(s.url, "POST", "/v2/destinations", { name: `ps-bad-${crypto.randomUUID().slice(0, 6)}`, type: "GOOGLEPUBSUB", config: { projectId: PROJECT, ...config }, sourceIds: [src.id] });
    const notJson = await save({ credentials: "{not json", eventToTopicMap: [{ from: "*", to: "topic-x" }] });
    expect(notJson.status).toBe(400);
    expect(notJson.text).toContain("credentials");
    const noKey = await save({ credentials: JSON.stringify({ client_email: "a@b.c" }), eventToTopicMap: [{ from: "*", to: "topic-x" }] });
    expect(noKey.status).toBe(400);
    expect(noKey.text).toContain("private_key");
    const noTopic = await save({ testConfig: { endpoint: ps.hostPort }, eventToTopicMap: [{ from: "*", to: "" }] });
    expect(noTopic.status).toBe(400);
    expect(noTopic.text).toContain("eventToTopicMap");
  });

  test("the emulator down: deliveries are retried, then land once it is back (the same topic and subscription)", async () => {
    await ps.createTopic(PROJECT, "later");
    await ps.subscribe(PROJECT, "later", "later-sub");
    // Sluice reaches the emulator through a gate that is closed, then opens.
    let open = false;
    const door = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        if (!open) return new Response("unavailable", { status: 503 });
        const u = new URL(req.url);
        const answer = await fetch(ps.url + u.pathname, { method: req.method, headers: { "content-type": "application/json" }, body: await req.text() });
        return new Response(await answer.text(), { status: answer.status });
      },
    });
    try {
      const { src, dst } = await connect({ testConfig: { endpoint: `127.0.0.1:${door.port}` }, eventToTopicMap: [{ from: "*", to: "later" }] });
      expect((await send(src.writeKey, [{ type: "track", event: "E", userId: "l", messageId: "later-1" }])).status).toBe(200);
      await waitFor(async () => (await counts(dst.id)).retrying === 1, { what: "retrying" });
      open = true;
      await waitFor(async () => (await counts(dst.id)).succeeded === 1, { what: "delivered once open", timeoutMs: 20_000 });
      expect((await ps.pull(PROJECT, "later-sub", 1)).map((m) => m.data.messageId)).toEqual(["later-1"]);
    } finally {
      door.stop(true);
    }
  });

  test("the Test API does not support GOOGLEPUBSUB (a message queue): the not-tested form", async () => {
    const { dst } = await connect({ testConfig: { endpoint: ps.hostPort }, eventToTopicMap: [{ from: "*", to: "orders" }] });
    const res = await fetch(`${s.url}/v0/testDestination/${dst.id}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${ADMIN_EMAIL}:${ADMIN_TOKEN}`)}` },
      body: JSON.stringify({ message: { type: "track", event: "E", userId: "u" } }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toContain("the Test API does not support GOOGLEPUBSUB destinations (a message queue)");
  });
});
