/**
 * Webhook source types in the control-plane API: the list, a source's type and config, the
 * dry-run sample, and the docs' table of types generated from the registry.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { resolve } from "node:path";
import { SOURCES_DOC, catalogTable, expectedDocument } from "../../scripts/sources-catalog";
import { SOURCE_MAPPINGS } from "../../src/sources/registry";
import { type TestServer, api, cleanup, query, startSluice } from "../support/helpers";

let s: TestServer;
beforeAll(async () => {
  s = await startSluice();
});
afterAll(async () => {
  await s.stop();
  await cleanup(s.dataDir);
});

test("GET /source-types lists every mapped type with its setup and sample, without credentials", async () => {
  const res = await fetch(`${s.url}/source-types`);
  expect(res.status).toBe(200);
  const types = (await res.json()) as Array<{ name: string; displayName: string; category: string; setup: string; sample: { body: unknown }; takesGet: boolean }>;
  expect(types.length).toBe(31);
  expect(types.map((t) => t.name).sort()).toEqual(SOURCE_MAPPINGS.map((m) => m.name).sort());
  expect(types.map((t) => t.displayName)).toEqual([...types.map((t) => t.displayName)].sort((a, b) => a.localeCompare(b)));
  const shopify = types.find((t) => t.name === "Shopify")!;
  expect(shopify).toMatchObject({ displayName: "Shopify", category: "webhook", takesGet: false });
  expect(shopify.setup.length).toBeGreaterThan(40);
  expect(types.filter((t) => t.takesGet).map((t) => t.name).sort()).toEqual(["adjust", "facebook_lead_ads_native"]);
  for (const t of types) expect(t.sample.body).toBeDefined();
});

test("a source takes a type (any case) and a config; an unknown type is a 400 naming the field; the type is fixed", async () => {
  const made = await api(s.url, "POST", "/v2/sources", { name: "shop", type: "shopify", config: { note: "kept" } });
  expect(made.status).toBe(201);
  expect(made.json.sourceDefinition).toEqual({ name: "Shopify", category: "webhook", type: "shopify" });
  expect(made.json.config).toEqual({ note: "kept" });
  const bad = await api(s.url, "POST", "/v2/sources", { name: "nope", type: "Stripe" });
  expect(bad.status).toBe(400);
  expect(bad.json.message).toContain("type: 'Stripe' is not a webhook source type");
  const retype = await api(s.url, "PATCH", `/v2/sources/${made.json.id}`, { type: "Auth0" });
  expect(retype.status).toBe(400);
  const config = await api(s.url, "PATCH", `/v2/sources/${made.json.id}`, { config: { putRequestDetailsInContext: true } });
  expect(config.json.config).toEqual({ putRequestDetailsInContext: true });
  expect(config.json.sourceDefinition.name).toBe("Shopify");
  const plain = await api(s.url, "POST", "/v2/sources", { name: "web" });
  expect([plain.json.sourceDefinition, plain.json.config]).toEqual([null, {}]);
});

test("POST /v2/sources/{id}/sample maps the type's sample, or a given payload, and stores nothing", async () => {
  const src = (await api(s.url, "POST", "/v2/sources", { name: "auth0", type: "Auth0" })).json;
  const run = await api(s.url, "POST", `/v2/sources/${src.id}/sample`);
  expect(run.status).toBe(200);
  expect(run.json.request.method).toBe("POST");
  expect(run.json.request.url).toStartWith(`/v1/webhook?writeKey=${src.writeKey}`);
  expect(run.json.events.length).toBeGreaterThan(0);
  for (const e of run.json.events) expect(e.context.integration.name).toBe("Auth0");
  expect(run.json.error).toBeUndefined();

  const mine = await api(s.url, "POST", `/v2/sources/${src.id}/sample`, { payload: { body: { log_id: "l1", data: { type: "ss", user_id: "auth0|u-1", date: "2024-05-01T12:00:00.000Z", description: "" } } } });
  expect(mine.json.events).toHaveLength(1);
  expect(mine.json.events[0]).toMatchObject({ type: "identify", userId: "auth0|u-1" });

  const refused = await api(s.url, "POST", `/v2/sources/${src.id}/sample`, { payload: { body: null } });
  expect(refused.status).toBe(200);
  expect(refused.json.error.status).toBe(400);
  expect(refused.json.events).toEqual([]);

  const web = (await api(s.url, "POST", "/v2/sources", { name: "sdk" })).json;
  const notWebhook = await api(s.url, "POST", `/v2/sources/${web.id}/sample`);
  expect(notWebhook.status).toBe(400);
  expect(notWebhook.json.message).toContain("not a webhook source");
  // Nothing was taken in.
  expect(await query(s, "SELECT COUNT(*) AS n FROM events")).toEqual([{ n: 0 }]);
});

test("docs/sources.md's table of types is what npm run docs:catalog writes", async () => {
  const doc = await Bun.file(resolve(import.meta.dir, "../..", SOURCES_DOC)).text();
  expect(await expectedDocument(doc)).toBe(doc);
  const table = await catalogTable();
  for (const m of SOURCE_MAPPINGS) expect(table).toContain(`| \`${m.name}\` |`);
});
