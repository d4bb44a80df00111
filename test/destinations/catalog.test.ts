/**
 * The destinations catalog in docs/destinations.md is generated from the registry
 * (scripts/destinations-catalog.ts): CI fails while it is stale, and every kind keeps its own
 * README beside a short folder README.
 */
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  BEGIN_MARKER,
  CATALOG_PATH,
  END_MARKER,
  STALE_MESSAGE,
  catalogKinds,
  catalogProblem,
  expectedDocument,
  kindFolders,
  kindReadmePath,
} from "../../scripts/destinations-catalog";
import { listDefinitions } from "../../src/destinations/registry";

const ROOT = resolve(import.meta.dir, "../..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
const ISSUE_NUMBER = /issue #?\d/i;

test("docs/destinations.md's catalog is what npm run docs:catalog writes", async () => {
  expect(await catalogProblem()).toBeUndefined();
});

test("destinations-catalog --check exits 0 on the current file, naming nothing stale", () => {
  const run = Bun.spawnSync([process.execPath, "scripts/destinations-catalog.ts", "--check"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  expect(run.stderr.toString()).toBe("");
  expect(run.exitCode).toBe(0);
});

test("a catalog changed by hand is stale, and the generator puts back the table between the markers only", async () => {
  const current = read(CATALOG_PATH);
  const begin = current.indexOf(BEGIN_MARKER) + BEGIN_MARKER.length;
  const end = current.indexOf(END_MARKER);
  const edited = `${current.slice(0, begin)}${current.slice(begin, end).replace("| yes |", "| yes! |")}${current.slice(end)}`;
  expect(edited).not.toBe(current);
  expect(await expectedDocument(edited)).toBe(current);
  const outside = current.replace("# ", "# Edited: ");
  expect(await expectedDocument(outside)).toBe(outside);
  expect(STALE_MESSAGE).toBe("docs/destinations.md's catalog is stale: run npm run docs:catalog");
});

test("the catalog has one row per registered kind, sorted by name, each linking the kind's README", async () => {
  const kinds = await catalogKinds();
  const names = listDefinitions().map((d) => d.name);
  expect(kinds.map((k) => k.definition.name)).toEqual([...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  const table = read(CATALOG_PATH);
  for (const k of kinds) expect(table).toContain(`| [\`${k.definition.name}\`](../${kindReadmePath(k.folder)}) |`);
});

test("every registered kind has src/destinations/<kind>/README.md, free of issue numbers", async () => {
  const folders = await kindFolders();
  for (const d of listDefinitions()) {
    const folder = folders.get(d.name);
    expect(folder, `${d.name} has a folder exporting its definition`).toBeDefined();
    const path = kindReadmePath(folder!);
    expect(existsSync(join(ROOT, path)), `${path} exists`).toBe(true);
    expect(read(path), `${path} names no issue number`).not.toMatch(ISSUE_NUMBER);
  }
});

// The contract, how to add a kind and the list of every deliberate difference from RudderStack with its reason; a kind's own details live in its README.
test("src/destinations/README.md stays short (under 16 KB), names no issue number and links every kind's README", async () => {
  const readme = read("src/destinations/README.md");
  expect(Buffer.byteLength(readme)).toBeLessThan(16 * 1024);
  expect(readme).not.toMatch(ISSUE_NUMBER);
  for (const folder of (await kindFolders()).values()) expect(readme).toContain(`](${folder}/README.md)`);
});
