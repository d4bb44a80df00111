/**
 * BENCHMARKS.md sections that are replaced rather than appended (bench-lib's record()
 * appends a dated section per run): one current section per title, e.g. the soak's.
 */
import { join } from "node:path";
import { ROOT } from "../bench-lib";

const FILE = join(ROOT, "BENCHMARKS.md");


/**
 * Writes `## {title} — {now}` and `body` in place of the section whose heading starts with
 * `## {title} —` (up to the next `## ` heading), or at the end when there is none.
 */
export async function replaceSection(title: string, body: string): Promise<string> {
  const when = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const section = `## ${title} — ${when}\n\n${body.trim()}\n`;
  const text = (await Bun.file(FILE).exists()) ? await Bun.file(FILE).text() : "# Benchmarks\n";
  const lines = text.split("\n");
  const start = lines.findIndex((l) => l.startsWith(`## ${title} —`));
  let out: string;
  if (start < 0) {
    out = `${text.trimEnd()}\n\n${section}`;
  } else {
    const next = lines.findIndex((l, i) => i > start && l.startsWith("## "));
    const before = lines.slice(0, start).join("\n").trimEnd();
    const after = next < 0 ? "" : `\n${lines.slice(next).join("\n")}`;
    out = `${before}\n\n${section}${after}`;
  }
  await Bun.write(FILE, out.endsWith("\n") ? out : `${out}\n`);
  return section;
}
