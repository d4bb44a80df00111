/**
 * Identity resolution tables (issue 22): merge rules from events, and mappings that give each
 * connected group of identifiers one rudder_id. The SQL part runs against a real PostgreSQL
 * (see test/support/pg.ts); each test uses its own schema and drops it after.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { AppError } from "../../src/lib/errors";
import {
  IDENTITY_RESOLUTION_CONFIG_KEY,
  MAPPINGS_TABLE,
  MERGE_RULES_TABLE,
  applyMergeRules,
  isIdentityResolutionEnabled,
  mergeRulesOf,
  type MergeRule,
} from "../../src/warehouse/identity";
import { havePostgres, requirePostgres, testSql } from "../support/pg";

describe("mergeRulesOf", () => {
  test("merge → its two mergeProperties, in order", () => {
    expect(
      mergeRulesOf({
        type: "merge",
        userId: "u1",
        mergeProperties: [
          { type: "email", value: "alex@example.com" },
          { type: "mobile", value: "+1-202-555-0146" },
        ],
      }),
    ).toEqual([
      { merge_property_1_type: "email", merge_property_1_value: "alex@example.com", merge_property_2_type: "mobile", merge_property_2_value: "+1-202-555-0146" },
    ]);
  });

  test("merge with one, three, or incomplete mergeProperties → no rule", () => {
    const one = [{ type: "email", value: "a@x" }];
    expect(mergeRulesOf({ type: "merge", mergeProperties: one })).toEqual([]);
    expect(mergeRulesOf({ type: "merge", mergeProperties: [...one, ...one, ...one] })).toEqual([]);
    expect(mergeRulesOf({ type: "merge", mergeProperties: [...one, { type: "email", value: "  " }] })).toEqual([]);
    expect(mergeRulesOf({ type: "merge", mergeProperties: [...one, { value: "b@x" }] })).toEqual([]);
    expect(mergeRulesOf({ type: "merge" })).toEqual([]);
  });

  test("alias → user_id userId ↔ user_id previousId", () => {
    expect(mergeRulesOf({ type: "alias", userId: "new", previousId: "old", anonymousId: "a" })).toEqual([
      { merge_property_1_type: "user_id", merge_property_1_value: "new", merge_property_2_type: "user_id", merge_property_2_value: "old" },
    ]);
  });

  test("identify with anonymousId and userId → anonymous_id ↔ user_id", () => {
    expect(mergeRulesOf({ type: "identify", anonymousId: "a1", userId: "u1" })).toEqual([
      { merge_property_1_type: "anonymous_id", merge_property_1_value: "a1", merge_property_2_type: "user_id", merge_property_2_value: "u1" },
    ]);
  });

  test("track, page, screen and group give the same pair, as RudderStack's transformer does", () => {
    for (const type of ["track", "page", "screen", "group", "TRACK"]) {
      expect(mergeRulesOf({ type, anonymousId: "a1", userId: "u1" })[0]?.merge_property_2_value).toBe("u1");
    }
  });

  test("only one id → a rule of that identifier alone; none → no rule", () => {
    expect(mergeRulesOf({ type: "identify", userId: "u1", anonymousId: "" })).toEqual([
      { merge_property_1_type: "user_id", merge_property_1_value: "u1", merge_property_2_type: null, merge_property_2_value: null },
    ]);
    expect(mergeRulesOf({ type: "track", anonymousId: "a1" })).toEqual([
      { merge_property_1_type: "anonymous_id", merge_property_1_value: "a1", merge_property_2_type: null, merge_property_2_value: null },
    ]);
    expect(mergeRulesOf({ type: "track", anonymousId: " ", userId: null })).toEqual([]);
  });

  test("non-string ids become strings", () => {
    expect(mergeRulesOf({ type: "identify", anonymousId: 42, userId: 7.5 })[0]).toMatchObject({ merge_property_1_value: "42", merge_property_2_value: "7.5" });
  });
});

describe("isIdentityResolutionEnabled", () => {
  test(`on only when the config's ${IDENTITY_RESOLUTION_CONFIG_KEY} is true`, () => {
    expect(IDENTITY_RESOLUTION_CONFIG_KEY).toBe("enableIDResolution");
    expect(isIdentityResolutionEnabled({ enableIDResolution: true })).toBe(true);
    expect(isIdentityResolutionEnabled({ enableIDResolution: "true" })).toBe(true);
    expect(isIdentityResolutionEnabled({ enableIDResolution: false })).toBe(false);
    expect(isIdentityResolutionEnabled({})).toBe(false);
    expect(isIdentityResolutionEnabled(undefined)).toBe(false);
  });
});

requirePostgres("warehouse-identity.test.ts");

const sql = havePostgres ? testSql() : null;
const namespaces: string[] = [];
const NOW = new Date("2026-03-04T05:06:07.000Z");

function newNamespace(): string {
  const ns = `sluice_idr_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  namespaces.push(ns);
  return ns;
}

afterEach(async () => {
  for (const ns of namespaces.splice(0)) await sql!.unsafe(`DROP SCHEMA IF EXISTS "${ns}" CASCADE`);
});
afterAll(async () => {
  await sql?.close();
});

function rule(t1: string, v1: string, t2?: string, v2?: string): MergeRule {
  return { merge_property_1_type: t1, merge_property_1_value: v1, merge_property_2_type: t2 ?? null, merge_property_2_value: v2 ?? null };
}

async function apply(ns: string, rules: MergeRule[], now = NOW) {
  return sql!.begin((tx) => applyMergeRules(tx, ns, rules, now));
}

/** rudder_id by "type:value". */
async function mappings(ns: string): Promise<Map<string, string>> {
  const rows: Array<{ t: string; v: string; rudder_id: string }> = await sql!.unsafe(
    `SELECT merge_property_type AS t, merge_property_value AS v, rudder_id FROM "${ns}"."${MAPPINGS_TABLE}"`,
  );
  return new Map(rows.map((r) => [`${r.t}:${r.v}`, r.rudder_id]));
}

async function snapshot(ns: string) {
  const rules = await sql!.unsafe(`SELECT * FROM "${ns}"."${MERGE_RULES_TABLE}" ORDER BY id`);
  const maps = await sql!.unsafe(`SELECT * FROM "${ns}"."${MAPPINGS_TABLE}" ORDER BY merge_property_type, merge_property_value`);
  return JSON.stringify({ rules, maps });
}

describe.if(havePostgres)("applyMergeRules (PostgreSQL)", () => {
  test("groups form from merge, alias and identify rules; tables are created with RudderStack's columns", async () => {
    const ns = newNamespace();
    const events = [
      { type: "identify", anonymousId: "anon-1", userId: "alex" },
      { type: "alias", userId: "alex-new", previousId: "alex" },
      { type: "merge", mergeProperties: [{ type: "email", value: "alex@example.com" }, { type: "user_id", value: "alex-new" }] },
    ];
    const result = await apply(ns, events.flatMap(mergeRulesOf));
    expect(result).toEqual({ rules: 3, mappings: 4 });

    const m = await mappings(ns);
    expect([...m.keys()].sort()).toEqual(["anonymous_id:anon-1", "email:alex@example.com", "user_id:alex", "user_id:alex-new"]);
    expect(new Set(m.values()).size).toBe(1);
    expect(m.get("user_id:alex")).toMatch(/^[0-9a-f-]{36}$/);

    const cols = await sql!.unsafe(
      `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = $1 ORDER BY table_name, ordinal_position`,
      [ns],
    );
    const byTable = (t: string) => cols.filter((c: { table_name: string }) => c.table_name === t).map((c: { column_name: string }) => c.column_name);
    expect(byTable(MERGE_RULES_TABLE)).toEqual(["id", "merge_property_1_type", "merge_property_1_value", "merge_property_2_type", "merge_property_2_value", "created_at"]);
    expect(byTable(MAPPINGS_TABLE)).toEqual(["merge_property_type", "merge_property_value", "rudder_id", "updated_at"]);

    const rules = await sql!.unsafe(`SELECT merge_property_1_type AS t1, merge_property_2_value AS v2 FROM "${ns}"."${MERGE_RULES_TABLE}" ORDER BY id`);
    expect(rules).toEqual([
      { t1: "anonymous_id", v2: "alex" },
      { t1: "user_id", v2: "alex" },
      { t1: "email", v2: "alex-new" },
    ]);
    const [{ updated_at }] = await sql!.unsafe(`SELECT min(updated_at) AS updated_at FROM "${ns}"."${MAPPINGS_TABLE}"`);
    expect(new Date(updated_at).toISOString()).toBe(NOW.toISOString());
  });

  test("unrelated identifiers stay apart, each group with its own rudder_id", async () => {
    const ns = newNamespace();
    await apply(ns, [rule("anonymous_id", "a1", "user_id", "u1"), rule("anonymous_id", "a2", "user_id", "u2"), rule("user_id", "u3")]);
    const m = await mappings(ns);
    expect(m.size).toBe(5);
    expect(m.get("anonymous_id:a1")).toBe(m.get("user_id:u1")!);
    expect(m.get("anonymous_id:a2")).toBe(m.get("user_id:u2")!);
    expect(new Set([m.get("user_id:u1"), m.get("user_id:u2"), m.get("user_id:u3")]).size).toBe(3);
    // A later rule about other people leaves these alone.
    const before = await snapshot(ns);
    await apply(ns, [rule("anonymous_id", "a9", "user_id", "u9")]);
    const after = await mappings(ns);
    for (const [k, v] of m) expect(after.get(k)).toBe(v);
    expect(after.get("user_id:u9")).not.toBe(m.get("user_id:u1")!);
    expect(await snapshot(ns)).not.toBe(before);
  });

  test("a rule that connects two groups joins them under the smaller rudder_id, in one load or the next", async () => {
    const ns = newNamespace();
    await apply(ns, [rule("anonymous_id", "a1", "user_id", "u1"), rule("anonymous_id", "a2", "user_id", "u2"), rule("anonymous_id", "a3", "user_id", "u3")]);
    const before = await mappings(ns);
    const g1 = before.get("user_id:u1")!;
    const g2 = before.get("user_id:u2")!;
    const g3 = before.get("user_id:u3")!;
    expect(g1).not.toBe(g2);

    const later = new Date(NOW.getTime() + 60_000);
    const result = await apply(ns, [rule("email", "x@example.com", "user_id", "u1"), rule("email", "x@example.com", "anonymous_id", "a2")], later);
    expect(result.rules).toBe(2);
    const m = await mappings(ns);
    const survivor = g1 < g2 ? g1 : g2;
    for (const k of ["anonymous_id:a1", "user_id:u1", "anonymous_id:a2", "user_id:u2", "email:x@example.com"]) expect(m.get(k)).toBe(survivor);
    // The third group is untouched, and only the moved and new rows carry the new time.
    expect(m.get("user_id:u3")).toBe(g3);
    const moved: Array<{ n: number }> = await sql!.unsafe(`SELECT count(*)::int AS n FROM "${ns}"."${MAPPINGS_TABLE}" WHERE updated_at = $1`, [later.toISOString()]);
    expect(moved[0]!.n).toBe(3);
    expect(result.mappings).toBe(3);
  });

  test("re-applying the same rules changes nothing", async () => {
    const ns = newNamespace();
    const rules = [rule("anonymous_id", "a1", "user_id", "u1"), rule("user_id", "u1", "user_id", "u0"), rule("email", "e", "user_id", "u0"), rule("user_id", "solo")];
    expect((await apply(ns, rules)).rules).toBe(4);
    const first = await snapshot(ns);
    expect(await apply(ns, rules, new Date(NOW.getTime() + 1000))).toEqual({ rules: 0, mappings: 0 });
    expect(await apply(ns, [...rules].reverse(), new Date(NOW.getTime() + 2000))).toEqual({ rules: 0, mappings: 0 });
    expect(await snapshot(ns)).toBe(first);
  });

  test("repeats within one batch count once; nothing to apply touches nothing", async () => {
    const ns = newNamespace();
    const r = rule("anonymous_id", "a1", "user_id", "u1");
    expect(await apply(ns, [r, { ...r }, r])).toEqual({ rules: 1, mappings: 2 });
    expect(await apply(ns, [])).toEqual({ rules: 0, mappings: 0 });
    const [{ n }] = await sql!.unsafe(`SELECT count(*)::int AS n FROM "${ns}"."${MERGE_RULES_TABLE}"`);
    expect(n).toBe(1);
  });

  test("a rolled-back transaction leaves no rules and no mappings behind", async () => {
    const ns = newNamespace();
    await apply(ns, [rule("user_id", "u0")]);
    const before = await snapshot(ns);
    const boom = new Error("load failed after identity resolution");
    await expect(
      sql!.begin(async (tx) => {
        await applyMergeRules(tx, ns, [rule("anonymous_id", "a1", "user_id", "u0")], NOW);
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await snapshot(ns)).toBe(before);
    // Retrying the same rules afterwards applies them.
    expect((await apply(ns, [rule("anonymous_id", "a1", "user_id", "u0")])).rules).toBe(1);
  });

  test("odd values (quotes, NUL, unicode, an odd namespace name) survive the round trip", async () => {
    const ns = newNamespace() + `"x`;
    namespaces.push(ns.replaceAll('"', '""'));
    await apply(ns, [rule("email", `o'brien"\\@x`, "user_id", "ü\u0000ñ"), rule("user_id", "ün")]);
    const m = await mappings(ns.replaceAll('"', '""'));
    expect([...m.keys()].sort()).toEqual([`email:o'brien"\\@x`, "user_id:ün", "user_id:üñ"].sort());
    expect(m.get("user_id:üñ")).toBe(m.get(`email:o'brien"\\@x`)!);
    expect(m.get("user_id:ün")).not.toBe(m.get("user_id:üñ")!);
    await expect(apply("", [rule("user_id", "u")])).rejects.toBeInstanceOf(AppError);
  });

  test("a chain of 1,000 rules resolves to one rudder_id, fast", async () => {
    const ns = newNamespace();
    const chain = Array.from({ length: 1000 }, (_, i) => rule("user_id", `u${i}`, "user_id", `u${i + 1}`));
    const t0 = performance.now();
    const result = await apply(ns, chain);
    const oneLoad = performance.now() - t0;
    expect(result).toEqual({ rules: 1000, mappings: 1001 });
    const m = await mappings(ns);
    expect(m.size).toBe(1001);
    expect(new Set(m.values()).size).toBe(1);

    // The same chain where every identifier already has a group of its own: one load joins 1,000 groups.
    const ns2 = newNamespace();
    await apply(ns2, Array.from({ length: 1000 }, (_, i) => rule("user_id", `u${i}`)));
    const smallest = [...new Set((await mappings(ns2)).values())].sort()[0]!;
    const t1 = performance.now();
    const joins = await apply(ns2, chain);
    const joinLoad = performance.now() - t1;
    expect(joins.rules).toBe(1000);
    const m2 = await mappings(ns2);
    expect(m2.size).toBe(1001);
    expect(new Set(m2.values()).size).toBe(1);
    expect(m2.get("user_id:u0")).toBe(smallest);

    console.log(`identity: 1,000-rule chain in ${oneLoad.toFixed(0)} ms (new identifiers), ${joinLoad.toFixed(0)} ms (joining 1,000 existing groups)`);
    expect(oneLoad).toBeLessThan(2000);
    expect(joinLoad).toBeLessThan(2000);
  });
});
