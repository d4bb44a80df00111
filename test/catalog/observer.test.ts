/**
 * The catalog's in-memory half (src/catalog/observer.ts, paths.ts, merge.ts), without a store:
 * events as the reader hands them over, the deltas they make, and a flush's merge of deltas into
 * stored rows. Paths are dot-flattened from the event's root with arrays marked, each counted
 * once per event; types and presence are out of the sampled events; examples follow the source's
 * settings and are never kept for e-mail, phone or IP-like paths and values unless it says so;
 * models and paths beyond the bounds are counted; days are UTC and only 30 are kept.
 */
import { describe, expect, test } from "bun:test";
import { DAYS_KEPT, type MergeOptions, firstDayKept, mergeFlush } from "../../src/catalog/merge";
import { CatalogObserver, DEFAULT_POLICY, GUARANTEED_SAMPLES, type ObserverOptions, type SourcePolicy, trackNameFast } from "../../src/catalog/observer";
import { MAX_ARRAY_ITEMS, MAX_DEPTH, flattenEvent, isPersonalPath } from "../../src/catalog/paths";
import { type CatalogEvent, type CatalogModelRow, type StoredSource, modelKey } from "../../src/catalog/store";

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 11, 7, 12, 0, 0);
const STRICT: SourcePolicy = { examples: true, personal: false, strictNames: true };

let nextId = 1;
function ev(type: string, body: Record<string, unknown>, opts: { source?: string; at?: number } = {}): CatalogEvent {
  const payload = JSON.stringify({ type, messageId: `m${nextId}`, receivedAt: new Date(opts.at ?? T0).toISOString(), context: { library: { name: "test" }, ip: "10.0.0.1" }, ...body });
  return { id: nextId++, partition: 0, sourceId: opts.source ?? "src_a", workspaceId: "ws_a", type, receivedAt: opts.at ?? T0, payload };
}

function observer(opts: Partial<ObserverOptions> & { policy?: (id: string) => SourcePolicy } = {}) {
  let clock = 0;
  const o = new CatalogObserver({ maxModels: 1000, maxPaths: 500, samplePerSecond: 1_000_000, policy: () => STRICT, clock: () => clock, ...opts });
  return { o, tick: (ms: number) => void (clock += ms) };
}

/** The one delta model of a key. */
function model(o: CatalogObserver, type: string, event = "", source = "src_a") {
  const m = o.deltas().find((d) => d.sourceId === source)?.models.get(modelKey(type, event));
  if (!m) throw new Error(`no model ${type}/${event}`);
  return m;
}

function path(o: CatalogObserver, type: string, event: string, p: string) {
  return model(o, type, event).paths.get(p);
}

describe("paths", () => {
  test("objects are dotted, arrays marked with [], each path once per event however many elements hold it", () => {
    const { paths } = flattenEvent({
      type: "track",
      event: "Order Completed",
      userId: "u1",
      properties: { total: 10.5, count: 2, products: [{ sku: "a", price: 3 }, { sku: "b", price: 4.5, tags: ["x", 1] }], matrix: [[1, 2]] },
    });
    expect([...paths.keys()].sort()).toEqual([
      "properties",
      "properties.count",
      "properties.matrix",
      "properties.matrix[]",
      "properties.matrix[][]",
      "properties.products",
      "properties.products[]",
      "properties.products[].price",
      "properties.products[].sku",
      "properties.products[].tags",
      "properties.products[].tags[]",
      "properties.total",
      "userId",
    ]);
    // bits: string 1, integer 2, number 4, object 32, array 64
    expect(paths.get("properties.products[].price")!.types).toBe(2 | 4);
    expect(paths.get("properties.products[].tags[]")!.types).toBe(1 | 2);
    expect(paths.get("properties.products")!.types).toBe(64);
    expect(paths.get("properties.products[]")!.types).toBe(32);
  });

  test("the envelope and the SDK's context are left out; context.traits is catalogued", () => {
    const { paths } = flattenEvent({
      type: "identify",
      messageId: "m",
      receivedAt: "x",
      sentAt: "x",
      timestamp: "x",
      originalTimestamp: "x",
      request_ip: "1.2.3.4",
      channel: "web",
      rudderId: "r",
      integrations: { All: true },
      anonymousId: "a1",
      traits: { plan: "pro" },
      context: { library: { name: "js" }, ip: "1.2.3.4", traits: { email: "a@b.co" }, page: { url: "u" } },
    });
    expect([...paths.keys()].sort()).toEqual(["anonymousId", "context.traits", "context.traits.email", "traits", "traits.plan"]);
  });

  test("depth and array length are bounded", () => {
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 15; i++) deep = { n: deep };
    const { paths } = flattenEvent({ properties: deep, traits: { list: Array.from({ length: 50 }, (_, i) => ({ [`k${i}`]: i })) } });
    const deepest = [...paths.keys()].filter((p) => p.startsWith("properties")).sort((a, b) => b.length - a.length)[0]!;
    expect(deepest.split(".").length).toBe(MAX_DEPTH);
    expect(paths.get(deepest)!.types).toBe(32); // recorded as an object, not opened
    expect([...paths.keys()].filter((p) => /^traits\.list\[\]\.k\d+$/.test(p)).length).toBe(MAX_ARRAY_ITEMS);
  });

  test("personal paths by their last segment, and the event's user ids", () => {
    for (const p of ["traits.email", "properties.E-Mail", "context.traits.phone", "properties.mobileNumber", "properties.ip", "properties.user.ip_address", "properties.request_ip", "userId", "anonymousId", "properties.emails[]"]) {
      expect(isPersonalPath(p)).toBe(true);
    }
    for (const p of ["properties.zip", "properties.tip", "properties.shipping", "traits.userIdentifierType", "properties.description"]) expect(isPersonalPath(p)).toBe(false);
  });
});

describe("event names", () => {
  test("a track's top-level event is read without parsing when it occurs once, else by parsing", () => {
    expect(trackNameFast(JSON.stringify({ event: "Signed Up", properties: { a: 1 } }))).toBe("Signed Up");
    expect(trackNameFast(JSON.stringify({ properties: { event: "inner" }, event: "Outer" }))).toBeUndefined();
    expect(trackNameFast(JSON.stringify({ event: 'Say "hi"' }))).toBeUndefined();
    const { o } = observer();
    o.observe(ev("track", { properties: { event: "inner" }, event: "Outer" }));
    o.observe(ev("track", { event: 'Say "hi"' }));
    o.observe(ev("track", { event: "nul\u0000name" }));
    expect(model(o, "track", "Outer").count).toBe(1);
    expect(model(o, "track", 'Say "hi"').count).toBe(1);
    expect(model(o, "track", "nul\uFFFDname").count).toBe(1);
  });

  test("a lenient or webhook source's track may lack a top-level event: it is parsed, and one without is the model ''", () => {
    const { o } = observer({ policy: () => ({ ...STRICT, strictNames: false }) });
    o.observe(ev("track", { properties: { event: "nested only" } }));
    o.observe(ev("track", { event: "Real" }));
    expect(model(o, "track", "").count).toBe(1);
    expect(model(o, "track", "Real").count).toBe(1);
  });

  test("other types make one model per type, whatever their name", () => {
    const { o } = observer();
    o.observe(ev("page", { name: "Home", properties: { path: "/" } }));
    o.observe(ev("page", { name: "Pricing", properties: { path: "/pricing" } }));
    o.observe(ev("identify", { userId: "u1", traits: { plan: "pro" } }));
    expect(model(o, "page").count).toBe(2);
    expect(model(o, "page").paths.get("name")!.present).toBe(2);
    expect(model(o, "identify").count).toBe(1);
  });
});

describe("counts, types, presence and examples", () => {
  test("types and presence per sampled event; examples at most 3 distinct, text cut to 80 characters", () => {
    const { o } = observer();
    const long = "x".repeat(100);
    o.observe(ev("track", { event: "E", properties: { a: 1, b: "one", list: [1, "two", 3] } }));
    o.observe(ev("track", { event: "E", properties: { a: 1.5, b: null } }));
    o.observe(ev("track", { event: "E", properties: { a: 2, b: long } }));
    o.observe(ev("track", { event: "E", properties: { a: 3, b: "four" } }));
    const m = model(o, "track", "E");
    expect(m.count).toBe(4);
    expect(m.sampled).toBe(4);
    expect(m.paths.get("properties.a")).toMatchObject({ types: { integer: 3, number: 1 }, present: 4, examples: [1, 1.5, 2] });
    expect(m.paths.get("properties.b")).toMatchObject({ types: { string: 3, null: 1 }, present: 4, examples: ["one", `${"x".repeat(79)}…`, "four"] });
    expect(m.paths.get("properties.list[]")).toMatchObject({ types: { integer: 1, string: 1 }, present: 1, examples: [1] });
    expect(m.paths.get("properties.list")).toMatchObject({ types: { array: 1 }, present: 1 });
    expect(m.paths.get("properties.list")!.examples).toBeUndefined();
  });

  test("no examples for e-mail, phone and IP-like paths, nor for e-mail and IP values, unless the source keeps personal ones", () => {
    const body = { userId: "u1", properties: { email: "a@b.co", phone: "+4912345", ip_address: "10.1.2.3", contact: "c@d.org", host: "192.168.0.1", plan: "pro" } };
    const { o } = observer();
    o.observe(ev("track", { event: "E", ...body }));
    const kept = (p: string) => path(o, "track", "E", p)!.examples;
    for (const p of ["userId", "properties.email", "properties.phone", "properties.ip_address", "properties.contact", "properties.host"]) expect(kept(p)).toBeUndefined();
    expect(kept("properties.plan")).toEqual(["pro"]);

    const personal = observer({ policy: () => ({ ...STRICT, personal: true }) }).o;
    personal.observe(ev("track", { event: "E", ...body }));
    expect(path(personal, "track", "E", "properties.email")!.examples).toEqual(["a@b.co"]);
    expect(path(personal, "track", "E", "properties.host")!.examples).toEqual(["192.168.0.1"]);
    expect(path(personal, "track", "E", "userId")!.examples).toEqual(["u1"]);

    const none = observer({ policy: () => ({ ...STRICT, examples: false }) }).o;
    none.observe(ev("track", { event: "E", ...body }));
    expect(path(none, "track", "E", "properties.plan")!.examples).toBeUndefined();
  });

  test("daily counts by UTC day, first and last seen", () => {
    const { o } = observer();
    const midnight = Date.UTC(2026, 11, 8);
    o.observe(ev("track", { event: "E" }, { at: midnight - 1 }));
    o.observe(ev("track", { event: "E" }, { at: midnight }));
    o.observe(ev("track", { event: "E" }, { at: midnight + 5 }));
    o.observe(ev("track", { event: "E" }, { at: midnight - DAY - 1 }));
    const m = model(o, "track", "E");
    expect(Object.fromEntries(m.daily)).toEqual({ "2026-12-06": 1, "2026-12-07": 1, "2026-12-08": 2 });
    expect(m.firstSeen).toBe(midnight - DAY - 1);
    expect(m.lastSeen).toBe(midnight + 5);
  });
});

describe("sampling", () => {
  test("every event is counted; beyond the budget only a model's first events and one budget a second are parsed", () => {
    const { o, tick } = observer({ samplePerSecond: 5 });
    for (let i = 0; i < 40; i++) o.observe(ev("track", { event: "Hot", properties: { i } }));
    // The first GUARANTEED_SAMPLES of a model go past the budget (they use it up, too).
    expect(model(o, "track", "Hot")).toMatchObject({ count: 40, sampled: GUARANTEED_SAMPLES });
    o.observe(ev("track", { event: "Rare", properties: { only: true } }));
    expect(model(o, "track", "Rare")).toMatchObject({ count: 1, sampled: 1 });
    expect(path(o, "track", "Rare", "properties.only")!.present).toBe(1);
    tick(1000);
    for (let i = 0; i < 40; i++) o.observe(ev("track", { event: "Hot", properties: { i } }));
    expect(model(o, "track", "Hot")).toMatchObject({ count: 80, sampled: GUARANTEED_SAMPLES + 5 });
    expect(path(o, "track", "Hot", "properties.i")!.present).toBe(GUARANTEED_SAMPLES + 5);
    expect(o.counters).toMatchObject({ events: 81, sampled: GUARANTEED_SAMPLES + 5 + 1 });
  });

  test("0 a second: counts only", () => {
    const { o } = observer({ samplePerSecond: 0 });
    for (let i = 0; i < 3; i++) o.observe(ev("track", { event: "E", properties: { i } }));
    expect(model(o, "track", "E")).toMatchObject({ count: 3, sampled: 0 });
    expect(model(o, "track", "E").paths.size).toBe(0);
  });
});

describe("bounds", () => {
  test("paths beyond the bound per model are counted, occurrence by occurrence", () => {
    const { o } = observer({ maxPaths: 3 });
    o.observe(ev("track", { event: "E", properties: { a: 1, b: 2 } })); // properties, .a, .b
    o.observe(ev("track", { event: "E", properties: { a: 1, c: 3, d: 4 } })); // .c, .d beyond
    o.observe(ev("track", { event: "E", properties: { c: 3 } }));
    const m = model(o, "track", "E");
    expect([...m.paths.keys()].sort()).toEqual(["properties", "properties.a", "properties.b"]);
    expect(m.overflowPaths).toBe(3);
  });

  test("models beyond the bound in memory are counted as overflow events, not remembered as refused", () => {
    const { o } = observer({ maxModels: 2 });
    for (const name of ["A", "B", "C", "C", "D"]) o.observe(ev("track", { event: name }));
    const d = o.deltas()[0]!;
    expect([...d.models.keys()]).toEqual([modelKey("track", "A"), modelKey("track", "B")]);
    expect(d.overflowEvents).toBe(3);
    expect(o.wasRefused("src_a", modelKey("track", "C"))).toBe(false);
  });
});

function stored(rows: CatalogModelRow[], modelCount = rows.length, sourceId = "src_a"): StoredSource {
  return { sourceId, workspaceId: "ws_a", modelCount, models: new Map(rows.map((r) => [modelKey(r.type, r.event), r])) };
}

function mergeOpts(o: CatalogObserver, over: Partial<MergeOptions> = {}): MergeOptions {
  const pathKeys = new Map(o.deltas().map((d) => [d.sourceId, new Set(d.models.keys())]));
  return { maxModels: 1000, maxPaths: 500, now: T0, policy: () => STRICT, wasRefused: (s, k) => o.wasRefused(s, k), pathKeys, ...over };
}

describe("merge", () => {
  test("counts add, first seen the earlier, last seen the later, days add, paths merge", () => {
    const { o } = observer();
    o.observe(ev("track", { event: "E", properties: { a: 1, b: "x" } }, { at: T0 }));
    o.observe(ev("track", { event: "E", properties: { a: "text" } }, { at: T0 + 10 }));
    const existing: CatalogModelRow = {
      workspaceId: "ws_a",
      sourceId: "src_a",
      type: "track",
      event: "E",
      firstSeen: T0 - DAY,
      lastSeen: T0 - 5,
      count: 7,
      daily: { "2026-12-06": 3, "2026-12-07": 4 },
      sampled: 7,
      paths: { "properties.a": { types: { integer: 7 }, present: 7, examples: [5, 6], firstSeen: T0 - DAY, lastSeen: T0 - 5 } },
      overflowPaths: 2,
    };
    const deltas = new Map(o.deltas().map((d) => [d.sourceId, d]));
    const out = mergeFlush([stored([existing])], deltas, mergeOpts(o));
    expect(out.models).toHaveLength(1);
    expect(out.models[0]).toEqual({
      ...existing,
      count: 9,
      lastSeen: T0 + 10,
      daily: { "2026-12-06": 3, "2026-12-07": 6 },
      sampled: 9,
      paths: {
        "properties": { types: { object: 2 }, present: 2, firstSeen: T0, lastSeen: T0 + 10 },
        "properties.a": { types: { integer: 8, string: 1 }, present: 9, examples: [5, 6, 1], firstSeen: T0 - DAY, lastSeen: T0 + 10 },
        "properties.b": { types: { string: 1 }, present: 1, examples: ["x"], firstSeen: T0, lastSeen: T0 },
      },
    });
    expect(out.overflow).toEqual([]);
  });

  test("only the last 30 days are kept", () => {
    const { o } = observer();
    o.observe(ev("track", { event: "E" }, { at: T0 - DAYS_KEPT * DAY }));
    o.observe(ev("track", { event: "E" }, { at: T0 - (DAYS_KEPT - 1) * DAY }));
    const out = mergeFlush([stored([])], new Map(o.deltas().map((d) => [d.sourceId, d])), mergeOpts(o));
    expect(out.models[0]!.daily).toEqual({ [firstDayKept(T0)]: 1 });
    expect(out.models[0]!.count).toBe(2);
    expect(firstDayKept(T0)).toBe("2026-11-08");
  });

  test("a source at its bound of models: new ones are refused, their events counted, each pair once", () => {
    const { o } = observer();
    for (const name of ["Old", "New1", "New1", "New2"]) o.observe(ev("track", { event: name }));
    const old: CatalogModelRow = { workspaceId: "ws_a", sourceId: "src_a", type: "track", event: "Old", firstSeen: T0, lastSeen: T0, count: 1, daily: {}, sampled: 0, paths: {}, overflowPaths: 0 };
    const out = mergeFlush([stored([old], 2)], new Map(o.deltas().map((d) => [d.sourceId, d])), mergeOpts(o, { maxModels: 2 }));
    expect(out.models.map((m) => [m.event, m.count])).toEqual([["Old", 2]]);
    expect(out.overflow).toEqual([{ sourceId: "src_a", workspaceId: "ws_a", models: 2, events: 3 }]);
    expect(out.refused.get("src_a")).toEqual([modelKey("track", "New1"), modelKey("track", "New2")]);
    o.flushed(out, true);
    // Remembered: later events of a refused pair are overflow at once, and the pair is not counted again.
    o.observe(ev("track", { event: "New1" }));
    o.observe(ev("track", { event: "New3" }));
    const again = mergeFlush([stored([old], 2)], new Map(o.deltas().map((d) => [d.sourceId, d])), mergeOpts(o, { maxModels: 2 }));
    expect(again.overflow).toEqual([{ sourceId: "src_a", workspaceId: "ws_a", models: 1, events: 2 }]);
  });

  test("paths beyond the bound of the stored model count their presence", () => {
    const { o } = observer();
    o.observe(ev("track", { event: "E", properties: { a: 1, b: 2 } }));
    o.observe(ev("track", { event: "E", properties: { b: 2 } }));
    const existing: CatalogModelRow = {
      workspaceId: "ws_a",
      sourceId: "src_a",
      type: "track",
      event: "E",
      firstSeen: T0,
      lastSeen: T0,
      count: 1,
      daily: {},
      sampled: 1,
      paths: { properties: { types: { object: 1 }, present: 1, firstSeen: T0, lastSeen: T0 }, "properties.a": { types: { integer: 1 }, present: 1, firstSeen: T0, lastSeen: T0 } },
      overflowPaths: 0,
    };
    const out = mergeFlush([stored([existing])], new Map(o.deltas().map((d) => [d.sourceId, d])), mergeOpts(o, { maxPaths: 2 }));
    expect(Object.keys(out.models[0]!.paths).sort()).toEqual(["properties", "properties.a"]);
    expect(out.models[0]!.overflowPaths).toBe(2);
  });

  test("a flush without paths writes counts and keeps the sampled paths for the next one", () => {
    const { o } = observer();
    o.observe(ev("track", { event: "E", properties: { a: 1 } }));
    const first = mergeFlush([stored([])], new Map(o.deltas().map((d) => [d.sourceId, d])), mergeOpts(o, { pathKeys: new Map() }));
    expect(first.models[0]).toMatchObject({ count: 1, sampled: 0, paths: {} });
    o.flushed(first, false);
    o.observe(ev("track", { event: "E", properties: { a: 2 } }));
    const row = first.models[0]!;
    const second = mergeFlush([stored([row])], new Map(o.deltas().map((d) => [d.sourceId, d])), mergeOpts(o));
    expect(second.models[0]).toMatchObject({ count: 2, sampled: 2, paths: { "properties.a": { present: 2, examples: [1, 2] } } });
  });

  test("examples a source no longer keeps go at its next flush", () => {
    const { o } = observer();
    o.observe(ev("track", { event: "E", properties: { a: 2 } }));
    const existing: CatalogModelRow = {
      workspaceId: "ws_a",
      sourceId: "src_a",
      type: "track",
      event: "E",
      firstSeen: T0,
      lastSeen: T0,
      count: 1,
      daily: {},
      sampled: 1,
      paths: { "properties.a": { types: { integer: 1 }, present: 1, examples: [1], firstSeen: T0, lastSeen: T0 }, "properties.email": { types: { string: 1 }, present: 1, examples: ["a@b.co"], firstSeen: T0, lastSeen: T0 } },
      overflowPaths: 0,
    };
    const noPersonal = mergeFlush([stored([structuredClone(existing)])], new Map(o.deltas().map((d) => [d.sourceId, d])), mergeOpts(o));
    expect(noPersonal.models[0]!.paths["properties.email"]!.examples).toBeUndefined();
    expect(noPersonal.models[0]!.paths["properties.a"]!.examples).toEqual([1, 2]);
    const off = mergeFlush([stored([structuredClone(existing)])], new Map(o.deltas().map((d) => [d.sourceId, d])), mergeOpts(o, { policy: () => ({ ...DEFAULT_POLICY, examples: false }) }));
    expect(off.models[0]!.paths["properties.a"]!.examples).toBeUndefined();
  });
});
