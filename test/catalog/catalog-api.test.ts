/**
 * The event catalog through a real server: traffic of 100 track event names (properties of every
 * JSON type, some present in only part of the events), identifies and pages, sent as single
 * calls and batches, is listed by GET /v2/catalog/events exactly: one model per name and one per
 * other type, exact counts, and each property path with its types, presence and examples (none
 * for e-mail-like paths). One model answers with its draft JSON Schema. A source of another
 * workspace is 404 both ways; a source's settings turn examples off at once, and personal ones on.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { parseSettings } from "../../src/settings";
import { type TestServer, addWorkspace, api, cleanup, createSource, sendEvent, startSluice, waitFor } from "../support/helpers";

const NAMES = Array.from({ length: 100 }, (_, i) => `Event ${String(i).padStart(3, "0")}`);
/** Event i is sent 1 + i % 4 times. */
const timesOf = (i: number) => 1 + (i % 4);
const OTHER_TOKEN = "other-workspace-token-0123456789";

let server: TestServer;
let source: { id: string; writeKey: string };
const today = new Date().toISOString().slice(0, 10);

function trackBody(i: number, n: number) {
  return {
    type: "track",
    userId: `user-${i}-${n}`,
    event: NAMES[i],
    properties: {
      index: i,
      price: i + 0.25,
      label: `label ${i % 3}`,
      flag: n % 2 === 0,
      tags: ["a", i],
      nested: { level: { deep: `d${i}` } },
      email: `buyer${i}@example.com`,
      // Only the first of each name's events carries it.
      ...(n === 0 ? { first: null } : {}),
    },
    context: { traits: { plan: "pro" }, library: { name: "test" } },
  };
}

/** The catalog as listed, once it shows `check` true. */
async function listed(query: string, check: (json: any) => boolean, what: string) {
  return waitFor(
    async () => {
      const r = await api(server.url, "GET", `/v2/catalog/events?${query}`);
      return r.status === 200 && check(r.json) ? r.json : undefined;
    },
    { timeoutMs: 30_000, what },
  );
}

beforeAll(async () => {
  server = await startSluice({ args: ["--catalog-flush-seconds", "1"] });
  source = await createSource(server.url);
  // Half the names as single track calls, the other half in batches of 50 events.
  const batch: unknown[] = [];
  for (let i = 0; i < NAMES.length; i++) {
    for (let n = 0; n < timesOf(i); n++) {
      if (i < 50) expect((await sendEvent(server.url, source.writeKey, "track", trackBody(i, n))).status).toBe(200);
      else batch.push(trackBody(i, n));
    }
  }
  for (let k = 0; k < batch.length; k += 50) expect((await sendEvent(server.url, source.writeKey, "batch", { batch: batch.slice(k, k + 50) })).status).toBe(200);
  for (let n = 0; n < 3; n++) {
    expect((await sendEvent(server.url, source.writeKey, "identify", { userId: `u${n}`, traits: { email: `p${n}@example.com`, plan: n ? "pro" : "free", seats: n } })).status).toBe(200);
  }
  for (const [name, path] of [["Home", "/"], ["Pricing", "/pricing"]]) {
    expect((await sendEvent(server.url, source.writeKey, "page", { anonymousId: "a1", name, properties: { path, title: name } })).status).toBe(200);
  }
});

afterAll(async () => {
  await server?.stop();
  if (server) await cleanup(server.dataDir);
});

describe("GET /v2/catalog/events", () => {
  const total = NAMES.reduce((sum, _, i) => sum + timesOf(i), 0);

  test("lists exactly the 100 track names, the identify and the page models, with exact counts", async () => {
    // Counts are saved every flush, sampled paths with some flushes only: both are waited for.
    const sum = (j: any, k: "count" | "sampled") => j.events.reduce((s: number, e: any) => s + e[k], 0);
    const body = await listed(`sourceId=${source.id}`, (j) => j.events.length === 102 && sum(j, "count") === total + 5 && sum(j, "sampled") === total + 5, "102 models of every event");
    expect(body.sourceId).toBe(source.id);
    expect(body.overflow).toEqual({ models: 0, events: 0 });
    const tracks = body.events.filter((e: any) => e.type === "track");
    expect(tracks.map((e: any) => e.event).sort()).toEqual([...NAMES].sort());
    for (const e of tracks) {
      const i = NAMES.indexOf(e.event);
      expect(e.count).toBe(timesOf(i));
      expect(e.daily).toEqual({ [today]: timesOf(i) });
      expect(e.sampled).toBe(timesOf(i));
      expect(e.overflowPaths).toBe(0);
    }
    // Most events first; ties by type and name.
    expect(body.events.slice(0, 3).map((e: any) => [e.type, e.event, e.count])).toEqual([
      ["track", "Event 003", 4],
      ["track", "Event 007", 4],
      ["track", "Event 011", 4],
    ]);
    expect(body.events.filter((e: any) => e.type !== "track").map((e: any) => [e.type, e.event, e.count])).toEqual([
      ["identify", "", 3],
      ["page", "", 2],
    ]);
  });

  test("each property: its path, JSON types with counts, presence, examples (none for e-mail-like paths)", async () => {
    const body = await listed(`sourceId=${source.id}&search=event%20007`, (j) => j.events[0]?.count === 4 && j.events[0].sampled === 4, "Event 007 sampled");
    expect(body.events).toHaveLength(1);
    const e = body.events[0];
    const props = Object.fromEntries(e.properties.map((p: any) => [p.path, p]));
    expect(e.properties.map((p: any) => p.path)).toEqual([
      "context.traits",
      "context.traits.plan",
      "properties",
      "properties.email",
      "properties.first",
      "properties.flag",
      "properties.index",
      "properties.label",
      "properties.nested",
      "properties.nested.level",
      "properties.nested.level.deep",
      "properties.price",
      "properties.tags",
      "properties.tags[]",
      "userId",
    ]);
    const stat = (p: string) => ({ types: props[p].types, present: props[p].present, examples: props[p].examples });
    expect(stat("properties.index")).toEqual({ types: { integer: 4 }, present: 1, examples: [7] });
    expect(stat("properties.price")).toEqual({ types: { number: 4 }, present: 1, examples: [7.25] });
    expect(stat("properties.label")).toEqual({ types: { string: 4 }, present: 1, examples: ["label 1"] });
    expect(stat("properties.flag")).toEqual({ types: { boolean: 4 }, present: 1, examples: [true, false] });
    expect(stat("properties.first")).toEqual({ types: { null: 1 }, present: 0.25, examples: undefined });
    expect(stat("properties.tags")).toEqual({ types: { array: 4 }, present: 1, examples: undefined });
    expect(stat("properties.tags[]")).toEqual({ types: { string: 4, integer: 4 }, present: 1, examples: ["a"] });
    expect(stat("properties.nested.level")).toEqual({ types: { object: 4 }, present: 1, examples: undefined });
    expect(stat("properties.nested.level.deep")).toEqual({ types: { string: 4 }, present: 1, examples: ["d7"] });
    expect(stat("properties.email")).toEqual({ types: { string: 4 }, present: 1, examples: undefined });
    expect(stat("userId")).toEqual({ types: { string: 4 }, present: 1, examples: undefined });
    expect(stat("context.traits.plan")).toEqual({ types: { string: 4 }, present: 1, examples: ["pro"] });
    expect(Date.parse(props["properties.index"].firstSeen)).toBeLessThanOrEqual(Date.parse(props["properties.index"].lastSeen));

    const identify = (await listed(`sourceId=${source.id}&type=identify`, (j) => j.events[0]?.sampled === 3, "identify sampled")).events[0];
    expect(identify.properties.map((p: any) => [p.path, p.types, p.present, p.examples])).toEqual([
      ["traits", { object: 3 }, 1, undefined],
      ["traits.email", { string: 3 }, 1, undefined],
      ["traits.plan", { string: 3 }, 1, ["free", "pro"]],
      ["traits.seats", { integer: 3 }, 1, [0, 1, 2]],
      ["userId", { string: 3 }, 1, undefined],
    ]);
    const page = (await listed(`sourceId=${source.id}&type=page`, (j) => j.events[0]?.sampled === 2, "page sampled")).events[0];
    expect(page.properties.map((p: any) => [p.path, p.examples])).toEqual([
      ["anonymousId", undefined],
      ["name", ["Home", "Pricing"]],
      ["properties", undefined],
      ["properties.path", ["/", "/pricing"]],
      ["properties.title", ["Home", "Pricing"]],
    ]);
  });

  test("sort, search and type narrow and order the list", async () => {
    const byName = await listed(`sourceId=${source.id}&sort=event&type=track&search=event%2009`, (j) => j.events.length === 10, "Event 09x");
    expect(byName.events.map((e: any) => e.event)).toEqual(NAMES.slice(90, 100));
    const bad = await api(server.url, "GET", `/v2/catalog/events?sourceId=${source.id}&sort=size`);
    expect(bad.status).toBe(400);
    expect((await api(server.url, "GET", "/v2/catalog/events")).status).toBe(400);
    expect((await api(server.url, "GET", "/v2/catalog/events?sourceId=src_nope")).status).toBe(404);
  });

  test("one model with its draft JSON Schema; a model never seen is 404", async () => {
    const r = await api(server.url, "GET", `/v2/catalog/events/track?sourceId=${source.id}&event=${encodeURIComponent("Event 003")}`);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ type: "track", event: "Event 003", count: 4, sampled: 4 });
    const schema = r.json.jsonSchema;
    expect(schema.$schema).toBe("http://json-schema.org/draft-07/schema#");
    expect(schema.required).toEqual(["context", "properties", "userId"]);
    expect(schema.properties.properties.required).toEqual(["email", "flag", "index", "label", "nested", "price", "tags"]);
    expect(schema.properties.properties.additionalProperties).toBe(false);
    expect(schema.properties.properties.properties.tags).toEqual({ type: "array", items: { type: ["string", "integer"] } });
    expect(schema.properties.properties.properties.first).toEqual({ type: "null" });
    const identify = await api(server.url, "GET", `/v2/catalog/events/identify?sourceId=${source.id}`);
    expect(identify.status).toBe(200);
    expect(identify.json.count).toBe(3);
    const missing = await api(server.url, "GET", `/v2/catalog/events/track?sourceId=${source.id}&event=Nope`);
    expect(missing.status).toBe(404);
    expect(missing.json.message).toBe(`no track events named 'Nope' seen from source '${source.id}'`);
  });

  test("a source of another workspace is 404, both ways", async () => {
    await addWorkspace(server, "other", OTHER_TOKEN);
    const theirs = await api(server.url, "POST", "/v2/sources", { name: "theirs" }, OTHER_TOKEN);
    expect(theirs.status).toBe(201);
    expect((await sendEvent(server.url, theirs.json.writeKey, "track", { userId: "x", event: "Theirs" })).status).toBe(200);
    await waitFor(async () => (await api(server.url, "GET", `/v2/catalog/events?sourceId=${theirs.json.id}`, undefined, OTHER_TOKEN)).json?.events?.length === 1, {
      what: "their model",
      timeoutMs: 30_000,
    });
    const fromUs = await api(server.url, "GET", `/v2/catalog/events?sourceId=${theirs.json.id}`);
    expect(fromUs.status).toBe(404);
    expect(fromUs.json.message).toBe(`source '${theirs.json.id}' not found`);
    expect((await api(server.url, "GET", `/v2/catalog/events/track?sourceId=${theirs.json.id}&event=Theirs`)).status).toBe(404);
    expect((await api(server.url, "GET", `/v2/catalog/events?sourceId=${source.id}`, undefined, OTHER_TOKEN)).status).toBe(404);
    expect((await api(server.url, "GET", `/v2/catalog/events?sourceId=${source.id}`, undefined, "not-a-token-at-all-000000")).status).toBe(401);
  });

  test("settings: examples off at once; personal examples kept once turned on", async () => {
    const examples = (j: any) => j.events.flatMap((e: any) => e.properties.filter((p: any) => p.examples).map((p: any) => p.path));
    expect(examples(await listed(`sourceId=${source.id}`, (j) => j.events.length === 102, "the models")).length).toBeGreaterThan(0);
    expect((await api(server.url, "PATCH", `/v2/sources/${source.id}`, { settings: { catalogExamples: false } })).status).toBe(200);
    const off = await api(server.url, "GET", `/v2/catalog/events?sourceId=${source.id}`);
    expect(examples(off.json)).toEqual([]);
    expect((await api(server.url, "PATCH", `/v2/sources/${source.id}`, { settings: { catalogExamples: 1 } })).status).toBe(400);

    expect((await api(server.url, "PATCH", `/v2/sources/${source.id}`, { settings: { catalogExamples: true, catalogPersonalExamples: true } })).status).toBe(200);
    // The reader takes a source's settings at its next flush: identifies go on until one shows its e-mail.
    let n = 0;
    const identify = await waitFor(
      async () => {
        const at = `late${n++}@example.com`;
        expect((await sendEvent(server.url, source.writeKey, "identify", { userId: "late", traits: { email: at } })).status).toBe(200);
        const r = await api(server.url, "GET", `/v2/catalog/events/identify?sourceId=${source.id}`);
        const email = r.json.properties.find((p: any) => p.path === "traits.email");
        return email?.examples?.length ? email : undefined;
      },
      { what: "an e-mail example", timeoutMs: 30_000 },
    );
    expect(identify.examples[0]).toMatch(/^late\d+@example\.com$/);
  });

  test("the routes are in the OpenAPI document", async () => {
    const doc = (await api(server.url, "GET", "/openapi/json")).json;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/v2/catalog/events", "/v2/catalog/events/{type}"]));
    expect(doc.paths["/v2/catalog/events"].get.tags).toEqual(["Catalog"]);
  });
});

describe("settings", () => {
  test("defaults, and values out of range refused naming the setting", () => {
    const s = parseSettings([], {});
    expect([s.catalog, s.catalogMaxModels, s.catalogMaxPaths, s.catalogSamplePerSecond, s.catalogFlushSeconds]).toEqual([true, 1000, 500, 1000, 5]);
    const set = parseSettings(["--catalog", "false", "--catalog-max-models", "20", "--catalog-max-paths", "30"], { SLUICE_CATALOG_SAMPLE_PER_SECOND: "0", SLUICE_CATALOG_FLUSH_SECONDS: "2" });
    expect([set.catalog, set.catalogMaxModels, set.catalogMaxPaths, set.catalogSamplePerSecond, set.catalogFlushSeconds]).toEqual([false, 20, 30, 0, 2]);
    expect(() => parseSettings(["--catalog-max-models", "0"], {})).toThrow(/--catalog-max-models must be a whole number from 1 to 100000, got '0'/);
    expect(() => parseSettings([], { SLUICE_CATALOG: "maybe" })).toThrow(/SLUICE_CATALOG must be true or false, got 'maybe'/);
  });

  test("--catalog false: no reader and no catalog metrics; the API answers what is stored (nothing here)", async () => {
    const off = await startSluice({ args: ["--catalog", "false"] });
    try {
      expect(off.sluice.catalog).toBeUndefined();
      const src = await createSource(off.url);
      expect((await sendEvent(off.url, src.writeKey, "track", { userId: "u", event: "E" })).status).toBe(200);
      expect((await fetch(`${off.url}/metrics`).then((r) => r.text())).includes("sluice_catalog_")).toBe(false);
      const r = await api(off.url, "GET", `/v2/catalog/events?sourceId=${src.id}`);
      expect([r.status, r.json]).toEqual([200, { sourceId: src.id, events: [], overflow: { models: 0, events: 0 } }]);
    } finally {
      await off.stop();
      await cleanup(off.dataDir);
    }
  });
});

describe("GET /v2/catalog/tracking-plan-draft", () => {
  test("one call drafts a plan of every model seen; stored, it finds no violation in the traffic it came from", async () => {
    await listed(`sourceId=${source.id}`, (j) => j.events.length === NAMES.length + 2 && j.events.every((e: any) => e.sampled > 0), "every model sampled");
    const draft = await api(server.url, "GET", `/v2/catalog/tracking-plan-draft?sourceId=${source.id}`);
    expect(draft.status).toBe(200);
    expect(draft.json.version).toBe(1);
    expect(draft.json.events.length).toBe(NAMES.length + 2);
    expect(draft.json.events.filter((e: any) => e.eventType === "track").map((e: any) => e.name).sort()).toEqual([...NAMES].sort());
    expect(draft.json.events.filter((e: any) => e.eventType !== "track").map((e: any) => [e.eventType, e.name])).toEqual([["identify", ""], ["page", ""]]);
    const stored = await api(server.url, "POST", "/v2/tracking-plans", { ...draft.json, id: "tp_drafted" });
    expect(stored.status).toBe(201);
    expect(stored.json.problems).toEqual([]);
    const preview = await api(server.url, "POST", `/v2/sources/${source.id}/tracking-plan/preview`, { planId: "tp_drafted", settings: { config: { global: { allowUnplannedEvents: "false", anyOtherViolation: "drop", unplannedProperties: "drop" } } } });
    expect(preview.status).toBe(200);
    expect(preview.json.checked).toBeGreaterThan(200);
    expect([preview.json.violating, preview.json.dropped]).toEqual([0, 0]);
    const other = await api(server.url, "GET", "/v2/catalog/tracking-plan-draft?sourceId=src_nope");
    expect(other.status).toBe(404);
  });
});
