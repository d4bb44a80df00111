/**
 * Webhook sources' state (src/sources/state-store.ts: Shopify's cart tokens and pixel identities,
 * which RudderStack keeps in Redis): one contract, run against the SQLite store (a data dir
 * opened as the server opens it) and the PostgreSQL store (its own schema, dropped after).
 * Hashes per (workspace, key) that merge field by field, expire (an expired hash reads as none
 * and a later write starts it afresh), are purged by count and by the server's maintenance, and
 * hold text only, as Redis does; a store that fails is a 503 for the webhook, not a 500.
 */
import { describe, expect, test } from "bun:test";
import type { SQL } from "bun";
import { closePostgres } from "../../db/pg";
import type { SourceRuntime } from "../../src/control-plane/config-store";
import type { IntakeDeps } from "../../src/gateway/intake";
import { mapWebhook } from "../../src/gateway/webhook-mapping";
import { AppError } from "../../src/lib/errors";
import { silentLogger } from "../../src/lib/logger";
import { startMaintenance } from "../../src/pipeline/retention";
import type { StatsStore } from "../../src/pipeline/store";
import { shopify } from "../../src/sources/shopify";
import { DEFAULT_STATE_TTL_SECONDS, type SourceStateStore, workspaceState } from "../../src/sources/state-store";
import type { WebhookRequest } from "../../src/sources/types";
import { PgSourceStateStore } from "../../src/storage/postgres/source-state";
import { PgStatsStore } from "../../src/storage/postgres/stats";
import { SqliteSourceStateStore } from "../../src/storage/sqlite/source-state";
import { SqliteStatsStore } from "../../src/storage/sqlite/stats";
import { waitFor } from "../support/helpers";
import { havePostgres, requirePostgres } from "../support/pg";
import { storeScratch } from "../support/stores";

requirePostgres("source-state.test.ts");

const scratch = storeScratch("t_srcstate");

/** A row as the table holds it: each field's JSON type (`string` for text) and the expiry. */
interface RawRow {
  types: Record<string, string>;
  expiresAt: number;
}

interface Opened {
  store: SourceStateStore;
  /** The stats store on the same database, for the maintenance loop. */
  stats: StatsStore;
  raw(workspaceId: string, key: string): Promise<RawRow | null>;
  /** Rows in the table, expired or not. */
  count(): Promise<number>;
  /**
   * Makes every later call of the store fail: PostgreSQL's client closed; SQLite's table dropped
   * (closing a bun:sqlite database whose statements are still prepared leaves them working).
   */
  fail(): Promise<void>;
}

async function openSqlite(): Promise<Opened> {
  const { db } = scratch.sqlite();
  const c = db.$client;
  return {
    store: new SqliteSourceStateStore(db),
    stats: new SqliteStatsStore(db),
    async raw(workspaceId, key) {
      const row = c.query("SELECT expires_at AS expiresAt FROM source_state WHERE workspace_id = ? AND key = ?").get(workspaceId, key) as { expiresAt: number } | null;
      if (!row) return null;
      const fields = c
        .query("SELECT j.key AS k, j.type AS t FROM source_state, json_each(source_state.fields) AS j WHERE workspace_id = ? AND source_state.key = ?")
        .all(workspaceId, key) as Array<{ k: string; t: string }>;
      // SQLite's json_each calls a JSON string `text`.
      return { types: Object.fromEntries(fields.map((f) => [f.k, f.t === "text" ? "string" : f.t])), expiresAt: row.expiresAt };
    },
    async count() {
      return (c.query("SELECT count(*) AS n FROM source_state").get() as { n: number }).n;
    },
    async fail() {
      c.run("DROP TABLE source_state");
    },
  };
}

async function openPg(): Promise<Opened> {
  const db = await scratch.pgSchema().open();
  const sql: SQL = db.$client;
  return {
    store: new PgSourceStateStore(db),
    stats: new PgStatsStore(sql),
    async raw(workspaceId, key) {
      const [row] = await sql`SELECT expires_at FROM source_state WHERE workspace_id = ${workspaceId} AND key = ${key}`;
      if (!row) return null;
      const fields = await sql`SELECT j.key AS k, jsonb_typeof(j.value) AS t FROM source_state, jsonb_each(source_state.fields) AS j WHERE workspace_id = ${workspaceId} AND source_state.key = ${key}`;
      return { types: Object.fromEntries(fields.map((f: { k: string; t: string }) => [f.k, f.t])), expiresAt: Number(row.expires_at) };
    },
    async count() {
      const [row] = await sql`SELECT count(*)::int AS n FROM source_state`;
      return row.n;
    },
    fail: () => closePostgres(db),
  };
}

const STORES: Array<{ name: string; open: () => Promise<Opened>; enabled: boolean }> = [
  { name: "SQLite", open: openSqlite, enabled: true },
  { name: "PostgreSQL", open: openPg, enabled: havePostgres },
];

const T = Date.UTC(2026, 0, 5, 12, 0, 0);
const HOUR = 3_600_000;

/** A Shopify webhook request as the gateway hands it to the mapping. */
function shopifyRequest(body: unknown, query: Record<string, string> = {}): WebhookRequest {
  const all = { writeKey: "wk-state", ...query };
  return {
    method: "POST",
    url: `/v1/webhook?${new URLSearchParams(all)}`,
    proto: "HTTP/1.1",
    headers: { "Content-Type": ["application/json"] },
    query_parameters: Object.fromEntries(Object.entries(all).map(([k, v]) => [k, [v]])),
    body: JSON.stringify(body),
    json: body,
  };
}

const shopSource = (workspaceId: string): SourceRuntime => ({ id: "src_shop", workspaceId, name: "shop", enabled: true, settings: {}, definitionName: "Shopify", category: "webhook", config: {} });
const depsOn = (store: SourceStateStore) => ({ sourceState: store, log: silentLogger }) as unknown as IntakeDeps;

/** The rejection of `p`, which must be one. */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

function expectUnavailable(err: unknown) {
  expect(err).toBeInstanceOf(AppError);
  const e = err as AppError;
  expect([e.status, e.code, e.message, e.retryAfterSeconds]).toEqual([503, "UNAVAILABLE", "webhook source state could not be read or written; retry later", 5]);
}

for (const { name, open, enabled } of STORES) {
  describe.if(enabled)(`source state on ${name}`, () => {
    test("a key never set reads as null; a set is read back; a second set merges, replacing only the fields it names", async () => {
      const { store } = await open();
      expect(await store.get("ws_a", "cart-1", T)).toBeNull();
      await store.set("ws_a", "cart-1", { anonymousId: "anon-1", itemsHash: "h1" }, T + HOUR, T);
      expect(await store.get("ws_a", "cart-1", T)).toEqual({ anonymousId: "anon-1", itemsHash: "h1" });
      await store.set("ws_a", "cart-1", { itemsHash: "h2", sessionId: "s-9" }, T + HOUR, T + 1000);
      expect(await store.get("ws_a", "cart-1", T + 1000)).toEqual({ anonymousId: "anon-1", itemsHash: "h2", sessionId: "s-9" });
      // An empty write changes no field (and renews the expiry).
      await store.set("ws_a", "cart-1", {}, T + 2 * HOUR, T + 2000);
      expect(await store.get("ws_a", "cart-1", T + HOUR + 1)).toEqual({ anonymousId: "anon-1", itemsHash: "h2", sessionId: "s-9" });
      // Another key is another hash.
      expect(await store.get("ws_a", "cart-2", T)).toBeNull();
      // Keys are taken as they are: no pattern, no case folding.
      expect(await store.get("ws_a", "CART-1", T)).toBeNull();
      expect(await store.get("ws_a", "cart-%", T)).toBeNull();
    });

    test("workspaces are apart: the same key holds a hash per workspace", async () => {
      const { store } = await open();
      await store.set("ws_a", "pixel:cart-9", { anonymousId: "anon-a" }, T + HOUR, T);
      expect(await store.get("ws_b", "pixel:cart-9", T)).toBeNull();
      await store.set("ws_b", "pixel:cart-9", { anonymousId: "anon-b", extra: "b" }, T + HOUR, T);
      expect(await store.get("ws_a", "pixel:cart-9", T)).toEqual({ anonymousId: "anon-a" });
      expect(await store.get("ws_b", "pixel:cart-9", T)).toEqual({ anonymousId: "anon-b", extra: "b" });
      // Through workspaceState, as a mapping sees it.
      const a = workspaceState(store, "ws_a", () => T);
      const c = workspaceState(store, "ws_c", () => T);
      await c.set("pixel:cart-9", { anonymousId: "anon-c" });
      expect(await a.get("pixel:cart-9")).toEqual({ anonymousId: "anon-a" });
      expect(await c.get("pixel:cart-9")).toEqual({ anonymousId: "anon-c" });
    });

    test("expiry: read until its expiry (exclusive), none from then; a set after it starts from an empty hash; a set before it renews it", async () => {
      const { store } = await open();
      await store.set("ws_a", "k1", { anonymousId: "anon-1", itemsHash: "h1" }, T + 1000, T);
      expect(await store.get("ws_a", "k1", T + 999)).toEqual({ anonymousId: "anon-1", itemsHash: "h1" });
      expect(await store.get("ws_a", "k1", T + 1000)).toBeNull();
      expect(await store.get("ws_a", "k1", T + 5000)).toBeNull();
      // Written again at its expiry: the old fields are gone, as Redis would have dropped the key.
      await store.set("ws_a", "k1", { sessionId: "s-2" }, T + 9000, T + 1000);
      expect(await store.get("ws_a", "k1", T + 1001)).toEqual({ sessionId: "s-2" });
      expect(await store.get("ws_a", "k1", T + 8999)).toEqual({ sessionId: "s-2" });
      expect(await store.get("ws_a", "k1", T + 9000)).toBeNull();

      // Written again just before its expiry: the fields are kept, with the new expiry.
      await store.set("ws_a", "k2", { anonymousId: "anon-2" }, T + 1000, T);
      await store.set("ws_a", "k2", { itemsHash: "h2" }, T + 3000, T + 999);
      expect(await store.get("ws_a", "k2", T + 2999)).toEqual({ anonymousId: "anon-2", itemsHash: "h2" });
      expect(await store.get("ws_a", "k2", T + 3000)).toBeNull();
      // The new expiry is the one given, also when it is sooner (Redis' EXPIRE sets, it does not extend).
      await store.set("ws_a", "k3", { anonymousId: "anon-3" }, T + 5000, T);
      await store.set("ws_a", "k3", { itemsHash: "h3" }, T + 2000, T + 1);
      expect(await store.get("ws_a", "k3", T + 1999)).toEqual({ anonymousId: "anon-3", itemsHash: "h3" });
      expect(await store.get("ws_a", "k3", T + 2000)).toBeNull();
    });

    test("purgeExpired deletes what expired at or before now, in every workspace, and counts it; what is live stays", async () => {
      const o = await open();
      const { store } = o;
      await store.set("ws_a", "gone-1", { a: "1" }, T + 1000, T);
      await store.set("ws_a", "gone-2", { a: "2" }, T + 2000, T);
      await store.set("ws_b", "gone-3", { a: "3" }, T + 2000, T);
      await store.set("ws_a", "live-1", { a: "4" }, T + 2001, T);
      await store.set("ws_b", "live-2", { a: "5" }, T + HOUR, T);
      expect(await o.count()).toBe(5);
      expect(await store.purgeExpired(T + 999)).toBe(0);
      expect(await store.purgeExpired(T + 1000)).toBe(1);
      expect(await o.raw("ws_a", "gone-1")).toBeNull();
      expect(await store.purgeExpired(T + 2000)).toBe(2);
      expect(await store.purgeExpired(T + 2000)).toBe(0);
      expect(await o.count()).toBe(2);
      expect(await store.get("ws_a", "live-1", T + 2000)).toEqual({ a: "4" });
      expect(await store.get("ws_b", "live-2", T + 2000)).toEqual({ a: "5" });
      // A purged key written again starts afresh.
      await store.set("ws_a", "gone-1", { b: "6" }, T + HOUR, T + 3000);
      expect(await store.get("ws_a", "gone-1", T + 3000)).toEqual({ b: "6" });
    });

    test("the server's maintenance purges expired state", async () => {
      const o = await open();
      await o.store.set("ws_a", "old", { a: "1" }, T - 1, T - HOUR);
      await o.store.set("ws_b", "old", { a: "2" }, T, T - HOUR);
      await o.store.set("ws_a", "new", { a: "3" }, T + 1, T - HOUR);
      const stop = startMaintenance(o.stats, silentLogger, { retentionMs: 24 * HOUR, intervalMs: 20, now: () => T, sourceState: o.store });
      scratch.onStop(stop);
      await waitFor(async () => (await o.count()) === 1, { what: "the expired state purged" });
      stop();
      expect(await o.store.get("ws_a", "new", T)).toEqual({ a: "3" });
      expect(await o.raw("ws_a", "old")).toBeNull();
      expect(await o.raw("ws_b", "old")).toBeNull();
    });

    test("workspaceState keeps values as Redis does, as text (numbers and booleans written out, objects as JSON), leaves undefined out, and sets the expiry from the TTL", async () => {
      const o = await open();
      let now = T;
      const state = workspaceState(o.store, "ws_a", () => now);
      await state.set("pixel:anon-1", { userId: 6207791235123, price: 14.5, accepts: true, zero: 0, cart: { token: "c-1", line_items: [{ qty: 2 }] }, list: ["a", 1], plain: "text", gone: undefined });
      const want = {
        userId: "6207791235123",
        price: "14.5",
        accepts: "true",
        zero: "0",
        cart: '{"token":"c-1","line_items":[{"qty":2}]}',
        list: '["a",1]',
        plain: "text",
      };
      expect(await state.get("pixel:anon-1")).toEqual(want);
      expect(await o.raw("ws_a", "pixel:anon-1")).toEqual({ types: Object.fromEntries(Object.keys(want).map((k) => [k, "string"])), expiresAt: T + DEFAULT_STATE_TTL_SECONDS * 1000 });
      expect(DEFAULT_STATE_TTL_SECONDS).toBe(3600);

      // A TTL given: the expiry is counted from the clock's now.
      now = T + 5000;
      await state.set("pixel:anon-1", { userId: 42 }, 43_200);
      expect((await o.raw("ws_a", "pixel:anon-1"))!.expiresAt).toBe(T + 5000 + 43_200_000);
      expect((await state.get("pixel:anon-1"))!.userId).toBe("42");
      now = T + 5000 + 43_200_000;
      expect(await state.get("pixel:anon-1")).toBeNull();
    });

    test("a store that fails (its database closed or its table gone) is a 503 AppError through workspaceState, with a Retry-After", async () => {
      const o = await open();
      const state = workspaceState(o.store, "ws_a", () => T);
      await state.set("cart-1", { anonymousId: "anon-1" });
      await o.fail();
      // The store's own error is the database's, not an AppError.
      expect(await rejection(o.store.get("ws_a", "cart-1", T))).not.toBeInstanceOf(AppError);
      expectUnavailable(await rejection(state.get("cart-1")));
      expectUnavailable(await rejection(state.set("cart-1", { sessionId: "s-1" })));
    });

    test("through the Shopify mapping: identities are written and read per workspace; with the store failing, an identifier call is a 503 and an order is mapped without the state", async () => {
      const o = await open();
      const deps = depsOn(o.store);
      const identifier = shopifyRequest({ event: "rudderIdentifier", cartToken: "cart-77", anonymousId: "anon-77", cart: { line_items: [] } });
      expect(await mapWebhook(deps, shopSource("ws_a"), shopify, identifier)).toEqual({ events: [], answer: { body: "OK", contentType: "text/plain" } });
      const order = shopifyRequest({ id: 1, cart_token: "cart-77", total_price: "1.00", line_items: [] }, { topic: "orders_create" });
      const inA = await mapWebhook(deps, shopSource("ws_a"), shopify, order);
      expect(inA.events.map((e) => e.anonymousId)).toEqual(["anon-77"]);
      // Another workspace does not see it: the cart token's name-based UUID (RFC 4122 URL namespace).
      const inB = await mapWebhook(deps, shopSource("ws_b"), shopify, order);
      expect(inB.events.map((e) => e.anonymousId)).toEqual(["3dda2141-9191-5370-abee-e695cff06a04"]);
      const row = await o.raw("ws_a", "cart-77");
      expect(row!.types).toEqual({ anonymousId: "string", itemsHash: "string" });

      await o.fail();
      // Storing the identity is not optional (RudderStack answers 500 there, so the storefront retries): 503.
      expectUnavailable(await rejection(mapWebhook(deps, shopSource("ws_a"), shopify, identifier)));
      // Reading a cart's state is: the order is mapped as if there were none.
      const degraded = await mapWebhook(deps, shopSource("ws_a"), shopify, order);
      expect(degraded.events.map((e) => e.anonymousId)).toEqual(["3dda2141-9191-5370-abee-e695cff06a04"]);
      // The pixel app's webhooks need the state (RudderStack fails them without it): 503.
      const pixelOrder = shopifyRequest({ id: 2, cart_token: "cart-77", total_price: "1.00", line_items: [] }, { topic: "orders_create", version: "pixel" });
      expectUnavailable(await rejection(mapWebhook(deps, shopSource("ws_a"), shopify, pixelOrder)));
    });
  });
}

test("an AppError the store throws passes through workspaceState as it is", async () => {
  const tooMany = new AppError("TOO_MANY_REQUESTS", "slow down");
  const store: SourceStateStore = {
    get: async () => {
      throw tooMany;
    },
    set: async () => {
      throw tooMany;
    },
    purgeExpired: async () => 0,
  };
  const state = workspaceState(store, "ws_a", () => T);
  expect(await rejection(state.get("k"))).toBe(tooMany);
  expect(await rejection(state.set("k", { a: 1 }))).toBe(tooMany);
});
