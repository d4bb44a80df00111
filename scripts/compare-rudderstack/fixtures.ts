/**
 * Loading RudderStack's published cases (test/integrations/destinations/<folder>/{processor,router}/data.ts
 * and the folder's network.ts mocks) from a rudder-transformer checkout, without installing its
 * dependencies and without writing into the checkout.
 *
 * The data files import RudderStack's test harness (test/integrations/testUtils.ts), which imports
 * packages (glob, lodash, zod, axios-mock-adapter, …) and parts of its src/ that pull in the whole
 * transformer. So the files the cases need are copied into a temporary directory, laid out as in
 * the checkout (the masked secrets are named after their folder), next to small stand-ins for
 * those packages and src/ modules written here. Only what the case builders call does real work
 * (removeUndefinedAndNullValues, lodash's head and isMatch, base64Convertor); the rest are empty.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { KIND_OPTIONS } from "./kinds";

/** A case as RudderStack publishes it: only the fields read here. */
export interface RsCase {
  id?: string;
  name?: string;
  description?: string;
  feature?: string;
  input: { request: { body: any } };
  output: { response: { body: any } };
  mockFns?: (adapter: unknown) => unknown;
  envOverrides?: Record<string, unknown>;
}

/** A mocked HTTP exchange of a network.ts (RudderStack's MockHttpCallsData). */
export interface NetworkMock {
  httpReq: { method: string; url: string; params?: Record<string, unknown>; headers?: Record<string, unknown>; data?: unknown };
  httpRes: { status?: number; data?: unknown; headers?: Record<string, string> };
}

/** Stand-ins for the packages the harness and the data import (our own, minimal). */
const PACKAGES: Record<string, Record<string, string>> = {
  glob: { "index.js": "exports.globSync = () => [];\n" },
  commander: { "index.js": "exports.Command = function Command() {};\n" },
  "axios-mock-adapter": { "index.js": "module.exports = function MockAdapter() {};\n" },
  zod: { "index.js": "const z = new Proxy(function () {}, { get: () => z, apply: () => z });\nexports.z = z;\n" },
  lodash: {
    "isMatch.js": [
      "// Does `object` hold every key of `source` with an equal value (deep, partial for objects)?",
      "function isMatch(object, source) {",
      "  if (source === undefined || source === null) return true;",
      "  if (typeof source !== 'object') return object === source;",
      "  if (object === undefined || object === null || typeof object !== 'object') return false;",
      "  return Object.keys(source).every((k) => isMatch(object[k], source[k]));",
      "}",
      "module.exports = isMatch;",
      "",
    ].join("\n"),
    "index.js": "const isMatch = require('./isMatch.js');\nconst head = (a) => (a && a.length ? a[0] : undefined);\nmodule.exports = { head, isMatch };\n",
  },
  "@rudderstack/integrations-lib": {
    "index.js": [
      "const defined = (v) => v !== undefined && v !== null;",
      "exports.removeUndefinedAndNullValues = (o) => (o && typeof o === 'object' && !Array.isArray(o) ? Object.fromEntries(Object.entries(o).filter(([, v]) => defined(v))) : o);",
      "exports.isDefinedAndNotNull = defined;",
      "exports.isDefinedAndNotNullAndNotEmpty = (v) => defined(v) && v !== '' && !(typeof v === 'object' && Object.keys(v).length === 0);",
      "exports.base64Convertor = (s) => Buffer.from(String(s)).toString('base64');",
      "exports.filter = (x) => x;",
      "exports.BaseTestCase = class BaseTestCase {};",
      "",
    ].join("\n"),
  },
};

/**
 * Stand-ins for the src/ modules the harness and the data import (paths relative to the
 * checkout). src/types is imported for its types only; zodTypes would load the transformer.
 */
const SRC_STUBS: Record<string, string> = {
  "src/types/index.ts": "export {};\n",
  "src/types/zodTypes.ts": [
    "ProcessorTransformationResponseSchema", "ProcessorTransformationResponseListSchema", "RouterTransformationResponseSchema",
    "RouterTransformationResponseListSchema", "ProxyMetadataSchema", "ProxyV0RequestSchema", "ProxyV1RequestSchema", "DeliveryV0ResponseSchema",
    "DeliveryV0ResponseSchemaForOauth", "DeliveryV1ResponseSchema", "DeliveryV1ResponseSchemaForOauth", "ProcessorStreamingResponseSchema",
    "ProcessorStreamingResponseListSchema", "RouterStreamingResponseSchema", "RouterStreamingResponseListSchema",
  ].map((n) => `export const ${n}: any = {};\n`).join(""),
};

/**
 * A src/ module a case file imports that SRC_STUBS does not name (tiktok_ads/mocks.ts imports its
 * config to lower the batch size): the object a kind gives in kinds.ts `rudderModules` for that
 * path, so what a mockFns replaces on it reaches the kind, else an empty object. CommonJS, so
 * default and named imports both load.
 */
function standInFor(rel: string): string {
  return `module.exports = globalThis.__sluiceRudderModules?.[${JSON.stringify(withoutExtension(rel))}] ?? {};\n`;
}

const withoutExtension = (path: string) => path.replace(/\.[cm]?[jt]s$/, "");
/** SRC_STUBS by path without extension (AM's stub is config.ts where the checkout has config.js). */
const STUBBED = new Set(Object.keys(SRC_STUBS).map(withoutExtension));

/** Files of the checkout copied as they are (the harness itself; tags.js is a plain table). */
const HARNESS = ["test/integrations/testUtils.ts", "test/integrations/testTypes.ts", "test/integrations/envUtils.ts", "test/integrations/common", "src/v0/util/tags.js"];

const RELATIVE_IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)(['"])(\.{1,2}\/[^'"]+)\1/gm;

/** The file a relative specifier names, as Node/Bun would find it (.ts, .js, index). */
function resolveFile(from: string, spec: string): string | undefined {
  const base = resolve(dirname(from), spec);
  for (const c of [base, `${base}.ts`, `${base}.js`, join(base, "index.ts"), join(base, "index.js")]) {
    if (existsSync(c) && statSync(c).isFile()) return c;
  }
  return undefined;
}

/** A temporary copy of what the cases of some destination folders need, with the stand-ins. */
export class FixtureCopy {
  readonly dir: string;
  private copied = new Set<string>();
  /** The folder whose cases were loaded last: a clock its cases assigned is kept until another's load. */
  private clockFolder?: string;

  constructor(readonly checkout: string) {
    this.dir = mkdtempSync(join(tmpdir(), "sluice-compare-rs-"));
    (globalThis as any).__sluiceRudderModules = Object.assign({}, ...Object.values(KIND_OPTIONS).map((o) => o.rudderModules ?? {}));
    for (const [name, files] of Object.entries(PACKAGES)) {
      mkdirSync(join(this.dir, "node_modules", name), { recursive: true });
      writeFileSync(join(this.dir, "node_modules", name, "package.json"), JSON.stringify({ name, main: "index.js" }));
      for (const [file, text] of Object.entries(files)) writeFileSync(join(this.dir, "node_modules", name, file), text);
    }
    for (const [path, text] of Object.entries(SRC_STUBS)) this.write(path, text);
    for (const path of HARNESS) if (existsSync(join(checkout, path))) this.copy(join(checkout, path));
  }

  private write(path: string, text: string) {
    mkdirSync(dirname(join(this.dir, path)), { recursive: true });
    writeFileSync(join(this.dir, path), text);
    this.copied.add(join(this.checkout, path));
  }

  /** Copies a file (and, for .ts, every file of test/ it imports) or a whole folder. */
  private copy(source: string) {
    if (this.copied.has(source)) return;
    this.copied.add(source);
    const target = join(this.dir, relative(this.checkout, source));
    if (statSync(source).isDirectory()) {
      cpSync(source, target, { recursive: true });
      return;
    }
    mkdirSync(dirname(target), { recursive: true });
    cpSync(source, target);
    if (!/\.[cm]?[jt]s$/.test(source)) return;
    for (const m of readFileSync(source, "utf8").matchAll(RELATIVE_IMPORT)) {
      const file = resolveFile(source, m[2]!);
      if (!file) continue;
      const rel = relative(this.checkout, file);
      // test/ files are the cases' own; src/ modules are stood in for (SRC_STUBS, or standInFor).
      if (rel.startsWith("test/")) this.copy(file);
      else if (rel.startsWith("src/") && !this.copied.has(file) && !STUBBED.has(withoutExtension(rel)) && !HARNESS.includes(rel)) this.write(rel, standInFor(rel));
    }
  }

  /** Copies a destination folder's cases and mocks (and what they import); false when the checkout has no such folder. */
  addDestination(folder: string): boolean {
    const root = join(this.checkout, "test/integrations/destinations", folder);
    if (!existsSync(root)) return false;
    for (const sub of ["processor/data.ts", "router/data.ts", "network.ts"]) {
      const f = join(root, sub);
      if (existsSync(f)) this.copy(f);
    }
    return true;
  }

  /** Copies a webhook source's case files (test/integrations/sources/<folder>/, with what they import); false when there is none. */
  addSource(folder: string): boolean {
    const root = join(this.checkout, "test/integrations/sources", folder);
    if (!existsSync(join(root, "data.ts"))) return false;
    this.copy(join(root, "data.ts"));
    return true;
  }

  /** The published cases of a webhook source. */
  async sourceCases(folder: string): Promise<RsCase[]> {
    if (folder !== this.clockFolder) assignedClock = undefined;
    this.clockFolder = folder;
    const mod = await import(join(this.dir, "test/integrations/sources", folder, "data.ts"));
    // As RudderStack's harness filters them: `skip` cases are not run, and `only` ones alone are.
    const all = ((mod.data as Array<RsCase & { skip?: boolean; only?: boolean }>) ?? []).filter((c) => !c.skip);
    return all.some((c) => c.only) ? all.filter((c) => c.only) : all;
  }

  private path(folder: string, sub: string): string {
    return join(this.dir, "test/integrations/destinations", folder, sub);
  }

  has(folder: string, sub: string): boolean {
    return existsSync(this.path(folder, sub));
  }

  /** The cases of `<folder>/<feature>/data.ts` whose feature is that one (undefined: no such file). */
  async cases(folder: string, feature: "processor" | "router"): Promise<RsCase[] | undefined> {
    if (folder !== this.clockFolder) assignedClock = undefined;
    this.clockFolder = folder;
    if (!this.has(folder, `${feature}/data.ts`)) return undefined;
    const mod = await import(this.path(folder, `${feature}/data.ts`));
    if (mod.skip) return [];
    return (mod.data as RsCase[]).filter((tc) => !tc.feature || tc.feature === feature);
  }

  /** The shared mocks (test/integrations/common/network.ts), then the folder's network.ts ones: the order RudderStack's harness registers them in. */
  async mocks(folder: string): Promise<NetworkMock[]> {
    const own = this.has(folder, "network.ts") ? ((await import(this.path(folder, "network.ts"))).networkCallsData as NetworkMock[]) : [];
    const commonFile = join(this.dir, "test/integrations/common/network.ts");
    const common = existsSync(commonFile) ? ((await import(commonFile)).networkCallsData as NetworkMock[]) : [];
    return [...(common ?? []), ...(own ?? [])];
  }

  remove() {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The clock a case's mockFns fixes. Cases fix it with jest.spyOn(Date, 'now'); `jest` is stood
 * in for by an object that records the value and ignores everything else (the mocks a mockFns
 * adds on its adapter argument are the stand-in's: stand-in.ts).
 */
let ownClock: number | undefined;
export const caseClock: { now?: number } = {
  get now() {
    return ownClock ?? assignedClock;
  },
  set now(v: number | undefined) {
    ownClock = v;
  },
};

/**
 * A clock assigned to Date.now by a case's mockFns (below). Jest never puts it back, so in
 * RudderStack's run it holds for the later cases of the same files too (snapchat_conversion's
 * router cases without a mockFns rely on it); it is forgotten when the next kind's cases load.
 */
let assignedClock: number | undefined;

function chain(onValue?: (v: unknown) => void): any {
  const api: any = new Proxy(function () {}, {
    get(_t, key) {
      if (key === "then") return undefined; // not a promise
      if (key === "mockReturnValue" || key === "mockReturnValueOnce") return (v: unknown) => (onValue?.(v), api);
      if (key === "mockImplementation" || key === "mockImplementationOnce") return (f: () => unknown) => (onValue?.(f()), api);
      return api;
    },
    apply: () => api,
  });
  return api;
}

/** What jest.replaceProperty changed during a case, to put back after it (jest restores them per test). */
const replaced: Array<{ obj: any; key: string; had: boolean; value: unknown }> = [];

export function restoreReplacedProperties() {
  for (const r of replaced.splice(0).reverse()) {
    if (r.had) r.obj[r.key] = r.value;
    else delete r.obj[r.key];
  }
}

export function installJestStandIn() {
  // Some cases fix the clock by assigning `Date.now = jest.fn(() => date)` (snapchat_conversion's
  // commonConfig.ts): the assignment is read as the case's clock, and Date.now stays the real one.
  const realNow = Date.now;
  Object.defineProperty(Date, "now", {
    configurable: true,
    get: () => realNow,
    set: (fn: unknown) => {
      const impl = typeof fn === "function" ? (fn as any).implementation : undefined;
      if (typeof impl !== "function") return;
      try {
        caseClock.now = assignedClock = Number(impl());
      } catch {}
    },
  });
  (globalThis as any).jest = {
    // FACEBOOK_PIXEL's cases fix the clock through jest's fake timers.
    useFakeTimers() {
      const timers: any = { setSystemTime(d: unknown) { caseClock.now = new Date(d as any).getTime(); return timers; } };
      return timers;
    },
    spyOn(obj: unknown, key: string) {
      return chain(obj === Date && key === "now" ? (v) => (caseClock.now = Number(v)) : undefined);
    },
    replaceProperty(obj: any, key: string, value: unknown) {
      replaced.push({ obj, key, had: Object.hasOwn(obj, key), value: obj[key] });
      obj[key] = value;
    },
    // A mock with an implementation calls it, and keeps it for a clock assigned to Date.now (above).
    fn: (impl?: unknown) => {
      if (typeof impl !== "function") return chain();
      return Object.assign((...args: unknown[]) => (impl as (...a: unknown[]) => unknown)(...args), { implementation: impl });
    },
    mock: () => undefined,
  };
}
