/**
 * The webhook sources catalog: the table between `<!-- sources:begin -->` and
 * `<!-- sources:end -->` in docs/sources.md, generated from src/sources/registry.ts so it cannot
 * drift from the code.
 *
 *   bun scripts/sources-catalog.ts           rewrites the table (part of npm run docs:catalog)
 *   bun scripts/sources-catalog.ts --check   exits 1 when the file differs from what it would write
 *
 * One row per type, sorted by display name: the `type` to create the source with, its name in
 * the dashboard, the setup in the service, and a link to its folder's README.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { SOURCE_MAPPINGS } from "../src/sources/registry";

const ROOT = resolve(import.meta.dir, "..");
export const SOURCES_DOC = "docs/sources.md";
export const BEGIN = "<!-- sources:begin -->";
export const END = "<!-- sources:end -->";

/** Type name → folder under src/sources/, found by importing each folder's index.ts. */
async function folders(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const dir = join(ROOT, "src/sources");
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (!e.isDirectory() || !existsSync(join(dir, e.name, "index.ts"))) continue;
    const mod: Record<string, any> = await import(join(dir, e.name, "index.ts"));
    for (const v of Object.values(mod)) if (v && typeof v === "object" && typeof v.map === "function" && typeof v.name === "string") out.set(v.name, e.name);
  }
  return out;
}

const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\s+/g, " ").trim();

export async function catalogTable(): Promise<string> {
  const where = await folders();
  const rows = [...SOURCE_MAPPINGS].sort((a, b) => a.displayName.localeCompare(b.displayName)).map((m) => {
    const folder = where.get(m.name);
    const readme = folder ? `[${folder}](../src/sources/${folder}/README.md)` : "";
    return `| ${cell(m.displayName)} | \`${m.name}\` | ${cell(m.setup)} | ${readme} |`;
  });
  return ["| Service | `type` | Setup in the service | Mapping |", "| --- | --- | --- | --- |", ...rows].join("\n");
}

export async function expectedDocument(current: string): Promise<string> {
  const b = current.indexOf(BEGIN);
  const e = current.indexOf(END);
  if (b < 0 || e < b) throw new Error(`${SOURCES_DOC} has no ${BEGIN} … ${END} markers`);
  return `${current.slice(0, b + BEGIN.length)}\n${await catalogTable()}\n${current.slice(e)}`;
}

if (import.meta.main) {
  const path = join(ROOT, SOURCES_DOC);
  const current = readFileSync(path, "utf8");
  const next = await expectedDocument(current);
  if (process.argv.includes("--check")) {
    if (next !== current) {
      console.error(`${SOURCES_DOC}'s table is stale: run npm run docs:catalog`);
      process.exit(1);
    }
  } else if (next !== current) writeFileSync(path, next);
}
