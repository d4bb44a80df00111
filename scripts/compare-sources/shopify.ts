/**
 * Shopify's cases for scripts/compare-sources.ts: the Redis data RudderStack's case mocks hold,
 * preloaded into the mapping's state before a case runs.
 *
 * The cases' mocks.ts (test/integrations/sources/shopify/mocks.ts) imports `RedisDB` from
 * src/util/redis/redisConnector and replaces its getVal with `jest.spyOn(RedisDB, 'getVal')
 * .mockImplementation(key => …)`: a lookup answering a few fixed keys. Two things follow here,
 * both read from the checkout at run time, nothing of it copied:
 *  - the harness stands in for src/ modules with globalThis.__sluiceRudderModules[path] (or an
 *    empty object, which a named import `{ RedisDB }` cannot load from), so this module gives a
 *    RedisDB stand-in there when none is given yet; it is imported before the cases are.
 *  - the jest stand-in ignores a spy's implementation, so spyOn on that RedisDB's getVal is
 *    wrapped to keep it; `prepare` then asks it for every key mocks.ts compares against and
 *    puts the non-empty answers into the state.
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { SourceState } from "../../src/sources/types";

type Lookup = (key: string) => unknown;

const MODULE = "src/util/redis/redisConnector";
const modules: Record<string, any> = ((globalThis as any).__sluiceRudderModules ??= {});
modules[MODULE] ??= { RedisDB: { getVal: async () => null, setVal: async () => undefined } };
const redisDB = modules[MODULE].RedisDB;

/** The getVal implementation the current case's mockFns installed. */
let lookup: Lookup | undefined;

const jestStandIn = (globalThis as any).jest;
if (jestStandIn && !jestStandIn.__shopifyWrapped) {
  const spyOn = jestStandIn.spyOn.bind(jestStandIn);
  jestStandIn.spyOn = (obj: unknown, key: string) => {
    if (obj !== redisDB || key !== "getVal") return spyOn(obj, key);
    const spy: Record<string, (arg: any) => unknown> = {
      mockImplementation: (f: Lookup) => ((lookup = f), spy),
      mockImplementationOnce: (f: Lookup) => ((lookup = f), spy),
      mockReturnValue: (v: unknown) => ((lookup = () => v), spy),
      mockResolvedValue: (v: unknown) => ((lookup = () => v), spy),
    };
    return spy;
  };
  jestStandIn.__shopifyWrapped = true;
}

/** The rudder-transformer checkout: the harness's --rudder-transformer argument, or RUDDER_TRANSFORMER. */
function checkout(): string | undefined {
  const i = process.argv.indexOf("--rudder-transformer");
  const dir = i >= 0 ? process.argv[i + 1] : process.env.RUDDER_TRANSFORMER;
  return dir ? resolve(dir) : undefined;
}

/** The keys mocks.ts answers (its `key === '…'` comparisons). */
function mockedKeys(): string[] {
  const dir = checkout();
  const file = dir && join(dir, "test/integrations/sources/shopify/mocks.ts");
  if (!file || !existsSync(file)) return [];
  return [...readFileSync(file, "utf8").matchAll(/\bkey\s*===\s*(['"`])([^'"`]+)\1/g)].map((m) => m[2]!);
}

export async function prepare(tc: { mockFns?: unknown }, state: SourceState): Promise<void> {
  const current = lookup;
  lookup = undefined;
  if (!tc.mockFns || !current) return;
  for (const key of mockedKeys()) {
    const value = await current(key);
    if (value && typeof value === "object" && Object.keys(value).length > 0) await state.set(key, value as Record<string, unknown>);
  }
}
