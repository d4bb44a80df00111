/**
 * Builds the dashboard (src/dashboard/ui) into dist/dashboard: index.html and content-hashed
 * assets. `npm run build` embeds that folder into the binary (`--asset`); `npm start` and the
 * dashboard tests build it first.
 */
import { mkdirSync, rmSync } from "node:fs";
import { join, relative } from "node:path";

const ROOT = join(import.meta.dir, "..");
export const DASHBOARD_OUT = join(ROOT, "dist/dashboard");

export async function buildDashboard(outdir = DASHBOARD_OUT): Promise<{ files: string[] }> {
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  const result = await Bun.build({
    entrypoints: [join(ROOT, "src/dashboard/ui/main.tsx")],
    outdir,
    target: "browser",
    minify: true,
    splitting: true,
    naming: { entry: "assets/[name]-[hash].[ext]", chunk: "assets/[name]-[hash].[ext]", asset: "assets/[name]-[hash].[ext]" },
    define: { "process.env.NODE_ENV": JSON.stringify("production") },
  });
  if (!result.success) throw new AggregateError(result.logs, "the dashboard did not build");
  const files = result.outputs.map((o) => relative(outdir, o.path));
  // The entry point's own output: a chunk two lazy pages share may be named main-* too.
  const entry = result.outputs.find((o) => o.kind === "entry-point");
  const script = entry ? relative(outdir, entry.path) : undefined;
  const styles = files.filter((f) => f.endsWith(".css"));
  if (!script) throw new Error("the dashboard build has no main script");
  // No inline script or style: the pages' Content-Security-Policy allows only 'self'.
  const html = [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    "<title>Sluice</title>",
    // Served by the server itself (src/dashboard/routes.ts), built or not.
    '<link rel="icon" type="image/svg+xml" href="/favicon.svg">',
    ...styles.map((f) => `<link rel="stylesheet" href="/${f}">`),
    `<script type="module" src="/${script}"></script>`,
    "</head>",
    '<body><div id="app"></div></body>',
    "</html>",
  ].join("\n");
  await Bun.write(join(outdir, "index.html"), html);
  return { files: [...files, "index.html"] };
}

if (import.meta.main) {
  const { files } = await buildDashboard(process.argv[2] ?? DASHBOARD_OUT);
  console.log(`dashboard: ${files.length} files in ${relative(process.cwd(), DASHBOARD_OUT) || "."}`);
}
