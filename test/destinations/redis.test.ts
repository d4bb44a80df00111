import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { redis } from "../../src/destinations/redis";
import { mergeJson, parseNode } from "../../src/destinations/redis/store";
import { type DestinationContext, type SluiceEvent, TransformError } from "../../src/destinations/types";
import { ADMIN_EMAIL, ADMIN_TOKEN, type TestServer, api, cleanup, createSource, sendEvent, startSluice, waitFor } from "../support/helpers";
import { REDIS, freePort, haveRedis, redisClient, redisServerBinary, requireRedis, spawnRedis, waitForRedis } from "../support/redis";

requireRedis("test/destinations/redis.test.ts");

const ctx = (config: Record<string, unknown>): DestinationContext => ({ config: { address: "127.0.0.1:6379", ...config }, destination: { id: "dst_r", name: "r", workspaceId: "ws_1" } });
const identify = (over: Record<string, unknown> = {}): SluiceEvent => ({ type: "identify", messageId: "m1", userId: "u-1", ...over }) as SluiceEvent;
const body = (event: SluiceEvent, config: Record<string, unknown> = {}) => redis.transform(event, ctx(config))[0]!.body.JSON;
const refusal = (event: SluiceEvent, config: Record<string, unknown> = {}) => {
  try {
    redis.transform(event, ctx(config));
  } catch (err) {
    expect(err).toBeInstanceOf(TransformError);
    return (err as Error).message;
  }
  throw new Error("not refused");
};

describe("REDIS transform (RudderStack's shapes)", () => {
  test("traits and context.traits flattened with dots into one hash; lists as JSON, nulls and empty objects left out, the rest as text", () => {
    const event = identify({
      context: { traits: { plan: "free", company: { name: "Acme", size: 10 } } },
      traits: { plan: "pro", tags: ["a", 1], vip: true, gone: null, empty: {}, address: { city: "Oslo", geo: { lat: 59.9 } } },
    });
    expect(body(event)).toEqual({
      message: {
        key: "user:u-1",
        fields: { plan: "pro", "company.name": "Acme", "company.size": "10", tags: '["a",1]', vip: "true", "address.city": "Oslo", "address.geo.lat": "59.9" },
      },
      userId: "u-1",
    });
  });

  test("the prefix is trimmed and joined with ':'; a blank prefix adds nothing; a numeric userId stays a number in the output", () => {
    expect(body(identify({ traits: { a: 1 } }), { prefix: " app " }).message).toEqual({ key: "app:user:u-1", fields: { a: "1" } });
    expect(body(identify({ traits: { a: 1 } }), { prefix: "  " }).message).toMatchObject({ key: "user:u-1" });
    expect(body(identify({ userId: 42, traits: { a: 1 } }))).toEqual({ message: { key: "user:42", fields: { a: "1" } }, userId: 42 });
  });

  test("RudderStack's refusals: other calls, a blank userId, no traits", () => {
    expect(refusal({ type: "track", messageId: "m", userId: "u", event: "E" } as SluiceEvent)).toBe("Only Identify calls are supported");
    expect(refusal(identify({ userId: "  ", traits: { a: 1 } }))).toBe("Blank userId passed in identify event");
    expect(refusal(identify({ userId: undefined, anonymousId: "anon", traits: { a: 1 } }))).toBe("Blank userId passed in identify event");
    expect(refusal(identify({ traits: { gone: null, nested: {} } }))).toBe("context or context.traits or traits is empty");
  });

  test("with the JSON module: the traits as one JSON value under the user's key", () => {
    expect(body(identify({ traits: { a: { b: 1 } } }), { useJSONModule: true, prefix: "p" })).toEqual({ message: { key: "p:user:u-1", value: { a: { b: 1 } } }, userId: "u-1" });
    expect(body(identify({ context: { traits: { c: 2 } } }), { useJSONModule: true })).toEqual({ message: { key: "user:u-1", value: { c: 2 } }, userId: "u-1" });
  });

  test("profiles events (context.sources.profiles_*): one field per model under the workspace, destination, entity and id type", () => {
    const sources = { profiles_entity: "customer", profiles_id_type: "email", profiles_model: "churn" };
    const event = identify({ userId: "a@b.c", traits: { score: 0.7 }, context: { sources } });
    expect(body(event)).toEqual({ message: { hash: "ws_1:dst_r:customer:email:a@b.c", key: "churn", value: '{"score":0.7}' }, userId: "a@b.c" });
    expect(body(event, { useJSONModule: true })).toEqual({ message: { key: "ws_1:dst_r:customer:email:a@b.c", path: "churn", value: { score: 0.7 } }, userId: "a@b.c" });
  });

  test("deletion names the key the transform wrote, prefix included", () => {
    const [req] = redis.deleteUsers!([{ userId: "u-9" }], ctx({ prefix: "app" }));
    expect(req!.body.JSON).toEqual({ delete: ["app:user:u-9"] });
  });

  test("merging into a stored JSON value: objects merge key by key, nulls are kept, other values replace", () => {
    expect(mergeJson({ a: 1, b: { c: 2, d: 3 } }, { b: { c: 9, e: null }, f: [1] })).toEqual({ a: 1, b: { c: 9, d: 3, e: null }, f: [1] });
    expect(mergeJson({ a: 1 }, "x")).toBe("x");
  });

  test("addresses: host:port, a bare host on 6379, [v6]:port; anything else is refused", () => {
    expect(parseNode(" redis.local:7000 ")).toEqual({ host: "redis.local", port: 7000 });
    expect(parseNode("redis.local")).toEqual({ host: "redis.local", port: 6379 });
    expect(parseNode("[::1]:7001")).toEqual({ host: "::1", port: 7001 });
    expect(parseNode("redis://x:1")).toBeUndefined();
    expect(parseNode("x:99999")).toBeUndefined();
  });
});

// One Sluice for the tests that deliver (retries 20 ms apart, so the down-then-up test is quick).
let s: TestServer;
beforeAll(async () => {
  s = await startSluice({ args: ["--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s.stop();
  await cleanup(s.dataDir);
});

describe.if(haveRedis)("REDIS through a real Sluice to the machine's Redis", () => {
  const unique = (p: string) => `${p}-${crypto.randomUUID().slice(0, 8)}`;
  async function connected(config: Record<string, unknown>) {
    const src = await createSource(s.url);
    const dst = await api(s.url, "POST", "/v2/destinations", { name: unique("redis"), type: "REDIS", config, sourceIds: [src.id] });
    expect(dst.status).toBe(201);
    return { src, dst: dst.json as { id: string } };
  }
  const deliveries = async (id: string, state: string) => (await api(s.url, "GET", `/v2/destinations/${id}/deliveries?state=${state}`)).json.deliveries as any[];

  test("identifies are written as hashes in the configured database, later traits updating earlier ones", async () => {
    const prefix = unique("t");
    const { src, dst } = await connected({ address: `${REDIS.host}:${REDIS.port}`, database: "5", prefix, clusterMode: false });
    await sendEvent(s.url, src.writeKey, "identify", { userId: "u1", traits: { plan: "free", seats: 2, address: { city: "Oslo" } } });
    await sendEvent(s.url, src.writeKey, "identify", { userId: "u1", traits: { plan: "pro" } });
    await waitFor(() => deliveries(dst.id, "succeeded").then((l) => l.length === 2), { what: "both identifies delivered" });
    const db5 = redisClient(REDIS.port, 5);
    expect(await db5.send("HGETALL", [`${prefix}:user:u1`])).toEqual({ plan: "pro", seats: "2", "address.city": "Oslo" });
    db5.close();
    const db0 = redisClient();
    expect(await db0.send("EXISTS", [`${prefix}:user:u1`])).toBe(0);
    db0.close();
  });

  test("without clusterMode (RudderStack's cluster default) a standalone Redis is written in database 0", async () => {
    const prefix = unique("c");
    const { src, dst } = await connected({ address: `${REDIS.host}:${REDIS.port}`, database: "5", prefix });
    await sendEvent(s.url, src.writeKey, "identify", { userId: 7, traits: { n: 1 } });
    await waitFor(() => deliveries(dst.id, "succeeded").then((l) => l.length === 1), { what: "the identify delivered" });
    const db0 = redisClient();
    expect(await db0.send("HGETALL", [`${prefix}:user:7`])).toEqual({ n: "1" });
    db0.close();
  });

  test("a write Redis refuses (WRONGTYPE) is aborted with Redis's message; a track never becomes a delivery (identify only, as RudderStack's definition)", async () => {
    const prefix = unique("a");
    const c = redisClient();
    await c.send("SET", [`${prefix}:user:u2`, "a string"]);
    c.close();
    const { src, dst } = await connected({ address: `${REDIS.host}:${REDIS.port}`, prefix, clusterMode: false });
    await sendEvent(s.url, src.writeKey, "track", { userId: "u2", event: "E" });
    await sendEvent(s.url, src.writeKey, "identify", { userId: "u2", traits: { a: 1 } });
    const [row] = await waitFor(() => deliveries(dst.id, "aborted").then((l) => (l.length ? l : undefined)), { what: "the identify aborted" });
    expect(row.lastError).toBe("WRONGTYPE Operation against a key holding the wrong kind of value");
    expect(row.event.type).toBe("identify");
    expect((await api(s.url, "GET", `/v2/destinations/${dst.id}/deliveries`)).json.deliveries).toHaveLength(1);
  });

  test("suppress_with_delete removes the user's hash from Redis", async () => {
    const prefix = unique("d");
    const { src, dst } = await connected({ address: `${REDIS.host}:${REDIS.port}`, prefix, clusterMode: false });
    await sendEvent(s.url, src.writeKey, "identify", { userId: "gone", traits: { a: 1 } });
    await sendEvent(s.url, src.writeKey, "identify", { userId: "stays", traits: { a: 2 } });
    await waitFor(() => deliveries(dst.id, "succeeded").then((l) => l.length === 2), { what: "both delivered" });
    const reg = await api(s.url, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [dst.id], users: [{ userId: "gone" }] });
    expect(reg.status).toBe(201);
    await waitFor(
      async () => {
        const r = await api(s.url, "GET", "/v2/regulations");
        const mine = (r.json.data as any[]).find((x) => x.attributes.userId === "gone" && x.destinationIds?.includes(dst.id));
        const state = mine?.deletion?.[0]?.status;
        if (state === "aborted") throw new Error(`deletion aborted: ${JSON.stringify(mine)}`);
        return state === "complete";
      },
      { what: "the deletion to complete", timeoutMs: 20_000 },
    );
    const c = redisClient();
    expect(await c.send("EXISTS", [`${prefix}:user:gone`])).toBe(0);
    expect(await c.send("HGETALL", [`${prefix}:user:stays`])).toEqual({ a: "2" });
    c.close();
  });

  test("the Test API does not support REDIS (a key-value store, as the spec says): the not-tested form, and nothing is written", async () => {
    const prefix = unique("api");
    const { dst } = await connected({ address: `${REDIS.host}:${REDIS.port}`, prefix, clusterMode: false });
    const res = await fetch(`${s.url}/v0/testDestination/${dst.id}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${ADMIN_EMAIL}:${ADMIN_TOKEN}`)}` },
      body: JSON.stringify({ message: { type: "identify", userId: "t1", traits: { k: "v" } } }),
    });
    expect(res.status).toBe(400);
    const out = (await res.json()) as any;
    expect(out).toEqual({ destinationId: dst.id, destinationName: expect.any(String), error: "the Test API does not support REDIS destinations (a key-value store): the server delivers them itself rather than through a transformer" });
    const c = redisClient();
    expect(await c.send("EXISTS", [`${prefix}:user:t1`])).toBe(0);
    c.close();
  });

  test("the outbound address policy applies: without the loopback allowance the write is refused and aborted", async () => {
    const strict = await startSluice({ env: { SLUICE_ALLOW_DESTINATION_HOSTS: "" } });
    try {
      const src = await createSource(strict.url);
      const dst = await api(strict.url, "POST", "/v2/destinations", { name: unique("redis"), type: "REDIS", config: { address: `127.0.0.1:${REDIS.port}`, clusterMode: false }, sourceIds: [src.id] });
      await sendEvent(strict.url, src.writeKey, "identify", { userId: "u", traits: { a: 1 } });
      const [row] = await waitFor(async () => {
        const l = (await api(strict.url, "GET", `/v2/destinations/${dst.json.id}/deliveries?state=aborted`)).json.deliveries as any[];
        return l.length ? l : undefined;
      }, { what: "the refused write aborted" });
      expect(JSON.stringify(row)).toContain("refused to connect");
    } finally {
      await strict.stop();
      await cleanup(strict.dataDir);
    }
  });
});

describe.if(!!redisServerBinary)("REDIS against redis-servers of the test's own", () => {
  test("a Redis that is down is retried, and every identify lands once it is up", async () => {
    const port = freePort();
    const src = await createSource(s.url);
    const dst = await api(s.url, "POST", "/v2/destinations", { name: "redis-down", type: "REDIS", config: { address: `127.0.0.1:${port}`, clusterMode: false }, sourceIds: [src.id] });
    for (const u of ["a", "b", "c"]) await sendEvent(s.url, src.writeKey, "identify", { userId: u, traits: { who: u } });
    await waitFor(async () => {
      const l = (await api(s.url, "GET", `/v2/destinations/${dst.json.id}/deliveries?state=retrying`)).json.deliveries as any[];
      return l.some((d) => d.attempts >= 2);
    }, { what: "retries while Redis is down" });
    const server = spawnRedis(port);
    try {
      expect(await waitForRedis(port)).toBe(true);
      await waitFor(async () => ((await api(s.url, "GET", `/v2/destinations/${dst.json.id}/deliveries?state=succeeded`)).json.deliveries as any[]).length === 3, { what: "all three delivered", timeoutMs: 30_000 });
      const c = redisClient(port);
      for (const u of ["a", "b", "c"]) expect(await c.send("HGETALL", [`user:${u}`])).toEqual({ who: u });
      c.close();
    } finally {
      server.stop();
    }
  });

  test("cluster mode: each user's hash lands on the node owning its slot, following MOVED from the first node", async () => {
    const ports = [freePort(), freePort(), freePort()];
    const nodes = ports.map((p) => spawnRedis(p, ["--cluster-enabled", "yes", "--cluster-config-file", `nodes-${p}.conf`]));
    try {
      for (const p of ports) expect(await waitForRedis(p)).toBe(true);
      const create = Bun.spawnSync(["redis-cli", "--cluster", "create", ...ports.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", "0", "--cluster-yes"]);
      expect(create.exitCode).toBe(0);
      await waitFor(async () => {
        const c = redisClient(ports[0]);
        const info = String(await c.send("CLUSTER", ["INFO"]));
        c.close();
        return info.includes("cluster_state:ok");
      }, { what: "the cluster to form" });

      const src = await createSource(s.url);
      const address = ports.map((p) => `127.0.0.1:${p}`).join(", ");
      const dst = await api(s.url, "POST", "/v2/destinations", { name: "redis-cluster", type: "REDIS", config: { address, prefix: "cl" }, sourceIds: [src.id] });
      const users = Array.from({ length: 12 }, (_, i) => `user-${i}`);
      for (const u of users) await sendEvent(s.url, src.writeKey, "identify", { userId: u, traits: { who: u } });
      await waitFor(async () => ((await api(s.url, "GET", `/v2/destinations/${dst.json.id}/deliveries?state=succeeded`)).json.deliveries as any[]).length === users.length, { what: "every identify delivered", timeoutMs: 20_000 });

      const owners = new Set<number>();
      for (const u of users) {
        const key = `cl:user:${u}`;
        // The node owning the key answers it; any other answers MOVED.
        let found = false;
        for (const p of ports) {
          const c = redisClient(p);
          try {
            expect(await c.send("HGETALL", [key])).toEqual({ who: u });
            owners.add(p);
            found = true;
          } catch (err) {
            expect((err as Error).message).toStartWith("MOVED");
          } finally {
            c.close();
          }
        }
        expect(found).toBe(true);
      }
      expect(owners.size).toBeGreaterThan(1);
    } finally {
      for (const n of nodes) n.stop();
    }
  });
});
