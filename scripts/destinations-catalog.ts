/**
 * The destinations catalog: the table of kinds between `<!-- catalog:begin -->` and
 * `<!-- catalog:end -->` in docs/destinations.md, generated from the registry so it cannot
 * drift from the code.
 *
 *   bun scripts/destinations-catalog.ts           rewrites the table (npm run docs:catalog)
 *   bun scripts/destinations-catalog.ts --check   exits 1 when the file differs from what it would write
 *
 * Every column but two comes from the registry (src/destinations/registry.ts, as
 * GET /destination-definitions shows it). The batching limits and how users are deleted are
 * not in the definitions, so they come from two lines of each kind's README
 * (`- **Batching:** …`, `- **User deletion:** …`), checked against the registry: a kind without
 * `batch()` must say "no", one with `deleteUsers()` must say "yes". Rows are sorted by name;
 * nothing is started and nothing but the table changes.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { listDefinitions, publicDefinition } from "../src/destinations/registry";
import { EVENT_FILTERING_KEYS } from "../src/destinations/shared";
import type { AnyDestinationDefinition } from "../src/destinations/types";

const ROOT = resolve(import.meta.dir, "..");
const DESTINATIONS_DIR = join(ROOT, "src/destinations");
export const CATALOG_PATH = "docs/destinations.md";
export const BEGIN_MARKER = "<!-- catalog:begin -->";
export const END_MARKER = "<!-- catalog:end -->";
export const STALE_MESSAGE = `${CATALOG_PATH}'s catalog is stale: run npm run docs:catalog`;

/** A kind as the catalog shows it: its definition, its folder, and the notes its README gives. */
export interface CatalogKind {
  definition: AnyDestinationDefinition;
  /** Folder under src/destinations/ (AM → amplitude). */
  folder: string;
  batching: string;
  userDeletion: string;
}

/**
 * Kind name → folder, found by importing each folder's index.ts and reading the definitions it
 * exports (folder names follow the service, not RudderStack's name: AM lives in amplitude/).
 */
export async function kindFolders(): Promise<Map<string, string>> {
  const folders = new Map<string, string>();
  const dirs = readdirSync(DESTINATIONS_DIR, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(DESTINATIONS_DIR, e.name, "index.ts")))
    .map((e) => e.name)
    .sort();
  for (const dir of dirs) {
    const mod: Record<string, unknown> = await import(join(DESTINATIONS_DIR, dir, "index.ts"));
    for (const value of Object.values(mod)) {
      const d = value as Partial<AnyDestinationDefinition> | null;
      if (d && typeof d === "object" && typeof d.name === "string" && typeof d.transform === "function" && d.config) folders.set(d.name, dir);
    }
  }
  return folders;
}

/** The README of a kind's folder, relative to the repository root. */
export const kindReadmePath = (folder: string) => `src/destinations/${folder}/README.md`;

/** The text of the README's list item `- **<label>:** …`, its indented continuation lines joined. */
function noteOf(readme: string, label: string, path: string): string {
  const prefix = `- **${label}:** `;
  const lines = readme.split("\n");
  const starts = lines.flatMap((l, i) => (l.startsWith(prefix) ? [i] : []));
  if (starts.length !== 1) throw new Error(`${path} needs exactly one list item "${prefix}…" (found ${starts.length})`);
  const parts = [lines[starts[0]!]!.slice(prefix.length)];
  for (let i = starts[0]! + 1; i < lines.length && /^ {2}\S/.test(lines[i]!); i++) parts.push(lines[i]!);
  // The item ends as a sentence in the README; a table cell does not.
  return parts
    .map((p) => p.trim())
    .join(" ")
    .replace(/\.$/, "");
}

/** Every registered kind with its folder and README notes, sorted by name; throws naming what is missing or contradicts the registry. */
export async function catalogKinds(): Promise<CatalogKind[]> {
  const folders = await kindFolders();
  const kinds = [...listDefinitions()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return kinds.map((definition) => {
    const folder = folders.get(definition.name);
    if (!folder) throw new Error(`kind ${definition.name} is registered but no src/destinations/<kind>/index.ts exports it`);
    const path = kindReadmePath(folder);
    if (!existsSync(join(ROOT, path))) throw new Error(`kind ${definition.name} has no ${path}`);
    const readme = readFileSync(join(ROOT, path), "utf8");
    const batching = noteOf(readme, "Batching", path);
    const userDeletion = noteOf(readme, "User deletion", path);
    const saysNo = (s: string) => /^no\b/i.test(s);
    if (typeof definition.batch !== "function" && !saysNo(batching)) {
      throw new Error(`${path}: Batching must start with "no": ${definition.name} has no batch()`);
    }
    if (typeof definition.batch === "function" && saysNo(batching)) {
      throw new Error(`${path}: Batching says "no" but ${definition.name} has batch()`);
    }
    if (typeof definition.deleteUsers === "function" && !/^yes\b/i.test(userDeletion)) {
      throw new Error(`${path}: User deletion must start with "yes": ${definition.name} has deleteUsers()`);
    }
    // A server-delivered kind (the warehouse) deletes through its own loader, not deleteUsers().
    if (typeof definition.deleteUsers !== "function" && !definition.serverDelivered && !saysNo(userDeletion)) {
      throw new Error(`${path}: User deletion must start with "no": ${definition.name} has no deleteUsers()`);
    }
    return { definition, folder, batching, userDeletion };
  });
}

const cell = (text: string) => text.replace(/\r?\n/g, " ").replace(/\|/g, "\\|");

function row(kind: CatalogKind): string {
  const pub = publicDefinition(kind.definition);
  const keys = pub.config.fields
    .filter((f) => !EVENT_FILTERING_KEYS.includes(f.key))
    .map((f) => (f.required ? `**${f.key}**` : f.key));
  const filtering = pub.config.fields.some((f) => f.key === "eventFilteringOption");
  const byUserIdOnly = kind.definition.deletionByUserIdOnly ? " (by userId only)" : "";
  return [
    `[\`${pub.name}\`](../${kindReadmePath(kind.folder)})`,
    pub.displayName,
    pub.config.supportedMessageTypes.join(", "),
    keys.length > 0 ? keys.join(", ") : "—",
    filtering ? "yes" : "no",
    kind.batching,
    kind.userDeletion + byUserIdOnly,
    pub.capabilities.testable ? "yes" : "no (delivered by the server itself)",
  ]
    .map(cell)
    .join(" | ");
}

/** The lines between the markers. */
export function renderCatalog(kinds: CatalogKind[]): string {
  return [
    "<!-- Generated by scripts/destinations-catalog.ts from src/destinations/registry.ts and each kind's README (its Batching and User deletion lines): edit those and run `npm run docs:catalog`, not this table. -->",
    "",
    "| Kind | Display name | Message types | Config keys (required in **bold**) | Event filtering | Batching (limit) | User deletion | Test API |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ...kinds.map((k) => `| ${row(k)} |`),
    "",
    "",
  ].join("\n");
}

/** `document` with the region between its markers replaced by `catalog`; throws when the markers are missing or out of order. */
export function withCatalog(document: string, catalog: string): string {
  const begin = document.indexOf(BEGIN_MARKER);
  const end = document.indexOf(END_MARKER);
  if (begin < 0 || end < 0 || end < begin) {
    throw new Error(`${CATALOG_PATH} needs the marker lines ${BEGIN_MARKER} and ${END_MARKER}, in that order`);
  }
  return `${document.slice(0, begin + BEGIN_MARKER.length)}\n${catalog}${document.slice(end)}`;
}

/** What docs/destinations.md should hold, given what it holds now. */
export async function expectedDocument(current: string): Promise<string> {
  return withCatalog(current, renderCatalog(await catalogKinds()));
}

/** The stale message when docs/destinations.md differs from what the generator would write, else undefined. */
export async function catalogProblem(root = ROOT): Promise<string | undefined> {
  const path = join(root, CATALOG_PATH);
  if (!existsSync(path)) return `${CATALOG_PATH} does not exist: run npm run docs:catalog`;
  const current = readFileSync(path, "utf8");
  return (await expectedDocument(current)) === current ? undefined : STALE_MESSAGE;
}

async function main(args: string[]) {
  const path = join(ROOT, CATALOG_PATH);
  if (args.includes("--check")) {
    const problem = await catalogProblem();
    if (problem) {
      console.error(problem);
      process.exit(1);
    }
    console.log(`${CATALOG_PATH}: catalog is current`);
    return;
  }
  const current = existsSync(path) ? readFileSync(path, "utf8") : `# Destinations\n\n${BEGIN_MARKER}\n${END_MARKER}\n`;
  const next = await expectedDocument(current);
  if (next === current) {
    console.log(`${CATALOG_PATH}: catalog is current`);
    return;
  }
  writeFileSync(path, next);
  console.log(`${CATALOG_PATH}: catalog of ${listDefinitions().length} kinds written`);
}

if (import.meta.main) {
  main(process.argv.slice(2)).catch((err) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  });
}
