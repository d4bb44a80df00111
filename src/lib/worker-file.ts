/**
 * Finds a worker entry point. From source it sits next to the module that starts it;
 * in a bundle or a `bun build --compile` binary (files in Bun's virtual /$bunfs),
 * `import.meta.url` is the bundle's entry and the worker is an extra entry point
 * somewhere below it, so the directory is searched once.
 */
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const found = new Map<string, string>();

export function locateWorkerFile(callerUrl: string, baseName: string, sourcePath: string): string {
  const cached = found.get(baseName);
  if (cached) return cached;
  const dir = dirname(fileURLToPath(callerUrl));
  for (const name of [`${baseName}.ts`, `${baseName}.js`]) {
    if (existsSync(join(dir, name))) {
      found.set(baseName, join(dir, name));
      return join(dir, name);
    }
  }
  const pattern = new RegExp(`(^|[\\\\/])${baseName.replace(/[-.]/g, "\\$&")}\\.(ts|js)$`);
  let hit: string | undefined;
  try {
    hit = (readdirSync(dir, { recursive: true }) as string[]).find((f) => pattern.test(f) && !f.includes("node_modules"));
  } catch {
    hit = undefined;
  }
  if (!hit) throw new Error(`the worker ${baseName} is missing from this build; pass ${sourcePath} to \`bun build\` as an extra entry point`);
  found.set(baseName, join(dir, hit));
  return join(dir, hit);
}
