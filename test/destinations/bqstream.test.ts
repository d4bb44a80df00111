/**
 * BQSTREAM end to end: a real Sluice streams track events' properties into a BigQuery stand-in
 * (test/support/bigquery-stand-in.ts) that takes only tokens the OAuth stand-in granted for a
 * correctly signed JWT (test/support/google-oauth.ts), and answers as BigQuery does: 404 for an
 * unknown table, insertErrors naming refused rows (the others `stopped`), 429 and 5xx when told.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bqStream } from "../../src/destinations/bqstream";
import { type BigQueryStandIn, startBigQuery } from "../support/bigquery-stand-in";
import { startGoogleOAuth } from "../support/google-oauth";
import { type TestServer, ADMIN_EMAIL, ADMIN_TOKEN, api, cleanup, createSource, startSluice, waitFor } from "../support/helpers";

const PROJECT = "sluice-test";
const DATASET = "events";

describe("BQSTREAM against a BigQuery stand-in", () => {
  let s: TestServer;
  let oauth: ReturnType<typeof startGoogleOAuth>;
  let bq: BigQueryStandIn;

  beforeAll(async () => {
    oauth = startGoogleOAuth();
    bq = startBigQuery({ grants: oauth.grants });
    s = await startSluice({ args: ["--destination-base-url", `BQSTREAM=${bq.url}`, "--retry-backoff-ms", "20"] });
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    await cleanup(s?.dataDir);
    bq?.stop();
    oauth?.stop();
  });

  const connect = async (config: Record<string, unknown>) => {
    const src = await createSource(s.url);
    const res = await api(s.url, "POST", "/v2/destinations", {
      name: `bq-${crypto.randomUUID().slice(0, 6)}`,
      type: "BQSTREAM",
      config: { projectId: PROJECT, datasetId: DATASET, credentials: oauth.credentials, ...config },
      sourceIds: [src.id],
    });
    if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`);
    return { src, dst: res.json as { id: string; name: string } };
  };
  const send = (writeKey: string, events: unknown[]) =>
    fetch(`${s.url}/v1/batch`, { method: "POST", headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${writeKey}:`)}` }, body: JSON.stringify({ batch: events }) });
  const counts = async (id: string) => (await api(s.url, "GET", `/v2/destinations/${id}/stats`)).json.counts as Record<string, number>;
  const deliveries = async (id: string, state: string) => JSON.stringify((await api(s.url, "GET", `/v2/destinations/${id}/deliveries?state=${state}`)).json.deliveries);
  const callsTo = (table: string) => bq.calls.filter((c) => c.path.endsWith(`/tables/${table}/insertAll`));

  test("tracks become rows (their properties, insertId from the named property), batched; a track without properties aborts with RudderStack's words; other types are not routed", async () => {
    bq.createTable(PROJECT, DATASET, "products");
    const before = oauth.grants.length;
    const { src, dst } = await connect({ tableId: "products", insertId: "sku" });
    const tracks = Array.from({ length: 30 }, (_, i) => ({ type: "track", event: "Product Added", userId: `u${i % 3}`, messageId: `bq-${i}`, properties: { i, sku: i === 0 ? "" : `sku-${i}`, price: i * 1.5, tags: ["a"] } }));
    const others = [
      { type: "identify", userId: "u1", messageId: "bq-id", traits: { plan: "pro" } },
      { type: "page", userId: "u1", messageId: "bq-page", name: "Home", properties: { path: "/" } },
      { type: "track", event: "Bare", userId: "u2", messageId: "bq-bare" },
    ];
    expect((await send(src.writeKey, [...tracks, ...others])).status).toBe(200);
    await waitFor(async () => {
      const c = await counts(dst.id);
      return c.succeeded === 30 && c.aborted === 1;
    }, { what: "30 delivered, 1 aborted", timeoutMs: 20_000 });
    expect(await deliveries(dst.id, "aborted")).toContain("Invalid payload for the destination");
    // The identify and the page were never the destination's: no delivery of any state.
    expect(await counts(dst.id)).toEqual({ pending: 0, retrying: 0, succeeded: 30, aborted: 1, filtered: 0 });

    const rows = bq.rows(PROJECT, DATASET, "products");
    expect(rows).toHaveLength(30);
    const byI = new Map(rows.map((r) => [r.json.i as number, r]));
    // The row is the properties as they came; insertId leaves the row and names it.
    expect(byI.get(7)).toEqual({ insertId: "sku-7", json: { i: 7, sku: "sku-7", price: 10.5, tags: ["a"] } });
    // An empty insertId property gives none (RudderStack's), so the row gets a random one (Google's Go client's).
    expect(byI.get(0)!.insertId).toMatch(/^[0-9a-f-]{36}$/);
    expect(byI.get(0)!.json).toEqual({ i: 0, sku: "", price: 0, tags: ["a"] });
    // Each user's rows in order; the identify and the page never reach the table.
    for (const u of [0, 1, 2]) {
      const is = rows.map((r) => r.json.i as number).filter((i) => i % 3 === u);
      expect(is).toEqual([...is].sort((a, b) => a - b));
    }
    const calls = callsTo("products");
    expect(calls.length).toBeLessThan(30);
    expect(calls.every((c) => c.status === 200 && c.rows.length <= 500)).toBe(true);
    expect(calls.every((c) => c.path === `/bigquery/v2/projects/${PROJECT}/datasets/${DATASET}/tables/products/insertAll`)).toBe(true);
    // One token for every call, granted for the insertdata scope.
    expect(oauth.grants.length - before).toBe(1);
    expect(oauth.grants.at(-1)!.scope).toBe("https://www.googleapis.com/auth/bigquery.insertdata");
    expect(new Set(calls.map((c) => c.authorization))).toEqual(new Set([`Bearer ${oauth.grants.at(-1)!.token}`]));
    expect(oauth.refused).toEqual([]);
  });

  test("a message of another type that reaches the transform is refused in RudderStack's words", () => {
    const ctx = { config: { projectId: PROJECT, datasetId: DATASET, tableId: "t", credentials: oauth.credentials }, destination: { id: "d", name: "d", workspaceId: "w" } };
    expect(() => bqStream.transform({ type: "identify", messageId: "m", userId: "u", traits: {} }, ctx)).toThrow("Message Type not supported: identify");
  });

  test("the same insertId twice is stored once (BigQuery's de-duplication); a later round reuses the token", async () => {
    bq.createTable(PROJECT, DATASET, "dedup");
    const { src, dst } = await connect({ tableId: "dedup", insertId: "orderId" });
    const grants = oauth.grants.length;
    for (let round = 0; round < 2; round++) {
      expect((await send(src.writeKey, [{ type: "track", event: "Order", userId: `d${round}`, properties: { orderId: 42, round } }])).status).toBe(200);
      await waitFor(async () => (await counts(dst.id)).succeeded === round + 1, { what: `round ${round} delivered` });
    }
    expect(bq.rows(PROJECT, DATASET, "dedup")).toEqual([{ insertId: "42", json: { orderId: 42, round: 0 } }]);
    expect(oauth.grants.length).toBe(grants);
  });

  test("insertErrors: a row refused for itself (invalid) aborts with BigQuery's words; the rows it stopped, and a backendError row, are retried and land", async () => {
    bq.createTable(PROJECT, DATASET, "partial");
    const { src, dst } = await connect({ tableId: "partial" });
    let flaky = 0;
    bq.refuseRows((json) => {
      if (json.bad) return { reason: "invalid", message: "no such field: bad." };
      if (json.flaky && flaky++ === 0) return { reason: "backendError", message: "Error encountered during execution. Retrying may solve the problem." };
      return undefined;
    });
    try {
      const events = [
        { type: "track", event: "E", userId: "p0", messageId: "p-0", properties: { n: 0 } },
        { type: "track", event: "E", userId: "p1", messageId: "p-1", properties: { n: 1, bad: true } },
        { type: "track", event: "E", userId: "p2", messageId: "p-2", properties: { n: 2, flaky: true } },
      ];
      expect((await send(src.writeKey, events)).status).toBe(200);
      await waitFor(async () => {
        const c = await counts(dst.id);
        return c.succeeded === 2 && c.aborted === 1;
      }, { what: "two delivered, one aborted", timeoutMs: 20_000 });
    } finally {
      bq.refuseRows(undefined);
    }
    const aborted = await deliveries(dst.id, "aborted");
    expect(aborted).toContain("invalid");
    expect(aborted).toContain("no such field: bad.");
    expect(bq.rows(PROJECT, DATASET, "partial").map((r) => r.json.n).sort()).toEqual([0, 2]);
    // The first call carried all three: nothing was inserted, the good row was stopped and sent again.
    const calls = callsTo("partial");
    expect(calls[0]!.rows).toHaveLength(3);
    const sent = (n: number) => calls.flatMap((c) => c.rows).filter((r) => r.json.n === n).length;
    expect(sent(0)).toBe(2);
    expect(sent(1)).toBe(1);
    expect(sent(2)).toBe(2);
  });

  test("a table that does not exist aborts with BigQuery's words", async () => {
    const { src, dst } = await connect({ tableId: "missing" });
    expect((await send(src.writeKey, [{ type: "track", event: "E", userId: "m", properties: { a: 1 } }])).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).aborted === 1, { what: "aborted" });
    const aborted = await deliveries(dst.id, "aborted");
    expect(aborted).toContain(`Not found: Table ${PROJECT}:${DATASET}.missing`);
    expect(callsTo("missing")).toHaveLength(1);
  });

  test("429 and 5xx are retried, then the rows land once", async () => {
    bq.createTable(PROJECT, DATASET, "busy");
    const { src, dst } = await connect({ tableId: "busy", insertId: "k" });
    bq.failNext(2, 429);
    bq.failNext(1, 503);
    expect((await send(src.writeKey, [{ type: "track", event: "E", userId: "b", properties: { k: "b-1" } }])).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).succeeded === 1, { what: "delivered after retries", timeoutMs: 20_000 });
    expect(callsTo("busy").map((c) => c.status)).toEqual([429, 429, 503, 200]);
    expect(bq.rows(PROJECT, DATASET, "busy")).toEqual([{ insertId: "b-1", json: { k: "b-1" } }]);
  });

  test("configs that cannot work are refused on save, naming the key", async () => {
    const src = await createSource(s.url);
    const save = (config: Record<string, unknown>) =>
      api(s.url, "POST", "/v2/destinations", { name: `bq-bad-${crypto.randomUUID().slice(0, 6)}`, type: "BQSTREAM", config: { projectId: PROJECT, datasetId: DATASET, tableId: "t", credentials: oauth.credentials, ...config }, sourceIds: [src.id] });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ credentials: "{not json" }, "credentials"],
      [{ credentials: JSON.stringify({ client_email: "a@b.c" }) }, "private_key"],
      [{ credentials: undefined }, "credentials"],
      [{ tableId: "" }, "tableId"],
      [{ projectId: undefined }, "projectId"],
      [{ datasetId: "my-dataset" }, "datasetId"],
    ];
    for (const [config, key] of cases) {
      const res = await save(config);
      expect(res.status).toBe(400);
      expect(res.text).toContain(key);
    }
  });

  test("the Test API does not support BQSTREAM (a warehouse stream insert): the not-tested form", async () => {
    const { dst } = await connect({ tableId: "products" });
    const res = await fetch(`${s.url}/v0/testDestination/${dst.id}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${ADMIN_EMAIL}:${ADMIN_TOKEN}`)}` },
      body: JSON.stringify({ message: { type: "track", event: "E", userId: "u", properties: { a: 1 } } }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toContain("the Test API does not support BQSTREAM destinations (a warehouse stream insert)");
  });
});
