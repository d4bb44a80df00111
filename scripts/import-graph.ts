/**
 * Checks the import graph of src/ (and db/) against the layers of ARCHITECTURE.md:
 *   1 app (main.ts, app.ts, ops), 2 backend/ (the wiring), 3 features, 4 storage/<engine>/,
 *   5 engines that know nothing above them (destinations, the sandbox, cluster's low-level
 *   pieces, lib, settings, db schema).
 * Imports run down only. Prints every import that runs up and every import cycle between
 * files; exits non-zero when more than MAX_UPWARD imports run up or any cycle exists.
 *
 * One kind of upward import is the design, not a breach: a store implementation
 * (src/storage/<engine>/*.ts) importing the interface it implements, which its feature owns
 * (`<feature>/store.ts`). Those are listed apart and not counted; any other import of a feature
 * from storage/ is.
 * Type-only imports count too: they are dependencies of the design, even if erased at run time.
 *
 *   bun scripts/import-graph.ts            # report, exit 1 on a breach
 *   bun scripts/import-graph.ts --verbose  # also list the files of each layer
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");
const MAX_UPWARD = 3;

const LAYER_NAMES = ["", "app", "backend", "feature", "storage", "engine"] as const;

/** The layer of a file, by its folder (paths relative to the repository root). */
export function layerOf(file: string): number {
  if (file.startsWith("db/")) return 5;
  if (!file.startsWith("src/")) return 0;
  const rest = file.slice("src/".length);
  const top = rest.includes("/") ? rest.slice(0, rest.indexOf("/")) : rest;
  switch (top) {
    case "main.ts":
    case "app.ts":
    case "app-context.ts":
    case "ops.ts":
    case "readiness.ts":
    case "ops":
      return 1;
    case "backend":
      return 2;
    case "gateway":
    case "pipeline":
    case "regulations":
    case "control-plane":
    case "test-api":
    case "warehouse":
    case "object-storage":
    case "dashboard":
      return 3;
    case "storage":
      return 4;
    case "catalog":
      return 3;
    case "tracking-plans":
      // The engine is pure; the service and routes are a control-plane feature.
      return /^tracking-plans\/(routes|service|stage)\.ts$/.test(rest) ? 3 : 5;
    case "transformations":
      // The sandbox is an engine; the routes and the test run are a feature.
      return /^transformations\/(routes|test-run|rudderstack-import|context)\.ts$/.test(rest) ? 3 : 5;
    case "destinations":
    case "sources":
    case "cluster":
    case "lib":
    case "settings.ts":
    case "version.ts":
      return 5;
    default:
      return 0;
  }
}

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, out);
    else if (/\.(ts|tsx)$/.test(name) && !name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

// `import … from "x"`, `export … from "x"`, `import "x"`, `import("x")`: relative specifiers only.
const STATIC = /^\s*(import|export)\s+(type\s+)?([^;]*?)\bfrom\s*["'](\.{1,2}\/[^"']+)["']/gm;
const BARE = /^\s*import\s*["'](\.{1,2}\/[^"']+)["']/gm;
const DYNAMIC = /\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;

function resolveSpecifier(from: string, spec: string): string | undefined {
  const base = resolve(dirname(from), spec);
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, join(base, "index.ts"), join(base, "index.tsx")]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

/** storage/<engine>/… → <feature>/store.ts: an implementation importing its feature's interface. */
export function implementsStore(e: Edge): boolean {
  return layerOf(e.from) === 4 && layerOf(e.to) === 3 && /^src\/[^/]+\/store\.ts$/.test(e.to);
}

export interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
}

export function buildGraph(): { files: string[]; edges: Edge[] } {
  const files = [...walk(join(ROOT, "src")), ...walk(join(ROOT, "db"))]
    .filter((f) => !relative(ROOT, f).startsWith("src/dashboard/ui/"))
    .map((f) => relative(ROOT, f))
    .sort();
  const edges: Edge[] = [];
  for (const file of files) {
    const text = readFileSync(join(ROOT, file), "utf8");
    const found: { spec: string; typeOnly: boolean }[] = [];
    for (const m of text.matchAll(STATIC)) {
      const clause = m[3] ?? "";
      // `import { type A, type B } from` is type-only as well.
      const allTypes = /^\{[^}]*\}\s*$/.test(clause.trim()) &&
        clause.replace(/[{}\s]/g, "").split(",").filter(Boolean).every((n) => n.startsWith("type"));
      found.push({ spec: m[4]!, typeOnly: Boolean(m[2]) || allTypes });
    }
    for (const m of text.matchAll(BARE)) found.push({ spec: m[1]!, typeOnly: false });
    for (const m of text.matchAll(DYNAMIC)) found.push({ spec: m[1]!, typeOnly: false });
    for (const { spec, typeOnly } of found) {
      const target = resolveSpecifier(join(ROOT, file), spec);
      if (!target) continue;
      const to = relative(ROOT, target);
      if (to.startsWith("src/") || to.startsWith("db/")) edges.push({ from: file, to, typeOnly });
    }
  }
  return { files, edges };
}

/** Strongly connected components with more than one file (or a file importing itself). */
export function cycles(files: string[], edges: Edge[]): string[][] {
  const next = new Map<string, string[]>(files.map((f) => [f, []]));
  for (const e of edges) next.get(e.from)?.push(e.to);
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (next.get(v) ?? []).includes(v)) out.push(scc.sort());
    }
  };
  for (const f of files) if (!idx.has(f)) visit(f);
  return out;
}

if (import.meta.main) {
  const verbose = process.argv.includes("--verbose");
  const { files, edges } = buildGraph();
  const unmapped = files.filter((f) => layerOf(f) === 0);
  const implementing = edges.filter(implementsStore);
  const upward = edges.filter((e) => layerOf(e.to) < layerOf(e.from) && !implementsStore(e));
  const circles = cycles(files, edges);

  if (verbose) {
    for (let layer = 1; layer <= 5; layer++) {
      console.log(`layer ${layer} (${LAYER_NAMES[layer]}):`);
      for (const f of files.filter((f) => layerOf(f) === layer)) console.log(`  ${f}`);
    }
  }
  console.log(`${files.length} files, ${edges.length} imports`);
  if (unmapped.length) console.log(`files without a layer (add them to layerOf):\n  ${unmapped.join("\n  ")}`);
  const pairs = [...new Set(implementing.map((e) => `${e.from} → ${e.to}`))];
  console.log(`store implementations importing their feature's interface (allowed): ${pairs.length}`);
  if (verbose) for (const p of pairs) console.log(`  ${p}`);
  console.log(`imports that run up the layers: ${upward.length} (at most ${MAX_UPWARD})`);
  for (const e of upward) {
    const kind = e.typeOnly ? " (type only)" : "";
    console.log(`  ${e.from} [${layerOf(e.from)} ${LAYER_NAMES[layerOf(e.from)]}] → ${e.to} [${layerOf(e.to)} ${LAYER_NAMES[layerOf(e.to)]}]${kind}`);
  }
  console.log(`import cycles: ${circles.length}`);
  for (const c of circles) console.log(`  ${c.join(" ⇄ ")}`);
  const ok = upward.length <= MAX_UPWARD && circles.length === 0 && unmapped.length === 0;
  console.log(ok ? "layers: ok" : "layers: FAILED");
  process.exit(ok ? 0 : 1);
}
