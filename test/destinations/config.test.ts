import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { listDefinitions } from "../../src/destinations/registry";

// A kind's schema lists the keys it reads, once: defaultConfig starts with them (configKeys), and
// the kind reads them through configOf, typed by that schema, never through ctx.config.

/**
 * Kinds whose defaultConfig keeps RudderStack's order, which puts keys the kind never reads
 * before keys it does, so it cannot be the schema's keys followed by the rest: their schema keys
 * still come in the schema's order, with others between them.
 */
const INTERLEAVED = new Set(["HS", "ITERABLE"]);

const ROOT = join(import.meta.dir, "../../src/destinations");
const schemaKeys = (schema: unknown): string[] => Object.keys((schema as { properties?: object }).properties ?? {});

/** Each .ts file of each kind's folder, with its text. */
function kindFiles(): Array<{ path: string; text: string }> {
  return readdirSync(ROOT)
    .filter((dir) => statSync(join(ROOT, dir)).isDirectory())
    .flatMap((dir) =>
      readdirSync(join(ROOT, dir))
        .filter((f) => f.endsWith(".ts"))
        .map((f) => ({ path: `${dir}/${f}`, text: readFileSync(join(ROOT, dir, f), "utf8") })),
    );
}

describe.each(listDefinitions().map((d) => [d.name, d] as const))("%s config", (name, d) => {
  test("defaultConfig lists each key once", () => {
    const seen = new Set<string>();
    const twice = d.config.defaultConfig.filter((k) => seen.has(k) || !seen.add(k));
    expect(twice).toEqual([]);
  });

  test("defaultConfig starts with the schema's keys, in the schema's order", () => {
    const keys = schemaKeys(d.configSchema);
    expect(keys.length).toBeGreaterThan(0);
    const listed = d.config.defaultConfig.filter((k) => keys.includes(k));
    expect(listed).toEqual(keys);
    const atStart = d.config.defaultConfig.slice(0, keys.length);
    if (INTERLEAVED.has(name)) expect(atStart).not.toEqual(keys);
    else expect(atStart).toEqual(keys);
  });

  test("requiredKeys are keys of the schema", () => {
    const keys = new Set(schemaKeys(d.configSchema));
    expect((d.config.requiredKeys ?? []).filter((k) => !keys.has(k))).toEqual([]);
  });
});

test("no kind reads ctx.config itself: config goes through configOf (typed) or requireConfig", () => {
  const files = kindFiles();
  expect(new Set(files.map((f) => f.path.split("/")[0])).size).toBeGreaterThanOrEqual(listDefinitions().length);
  const offenders = files.flatMap(({ path, text }) =>
    text
      .split("\n")
      .map((line, i) => ({ line: line.trim(), at: `${path}:${i + 1}` }))
      .filter(({ line }) => /\bctx\.config\b/.test(line))
      .map(({ line, at }) => `${at}: ${line}`),
  );
  expect(offenders).toEqual([]);
});

test("each kind builds defaultConfig with configKeys, unless its key order is interleaved", () => {
  const listed = kindFiles()
    .filter(({ path }) => path.endsWith("/index.ts"))
    .filter(({ text }) => /\bdefaultConfig:\s*\[/.test(text))
    .map(({ path }) => path)
    .sort();
  expect(listed).toEqual(["hubspot/index.ts", "iterable/index.ts"]);
});
