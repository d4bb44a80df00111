import { afterEach, describe, expect, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, SUMMARY_LIMIT, type RunRecord, markers, replaceLatestRun, replaceMarked, writeRun } from "../../scripts/bench-lib";

// The writers run against copies: the real files are other people's work in progress.
const roots: string[] = [];
function tempRoot(): string {
  const root = mkdtempSync(join(tmpdir(), "bench-record-"));
  roots.push(root);
  mkdirSync(join(root, "docs", "benchmarks"), { recursive: true });
  return root;
}
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

const read = (root: string, path: string) => readFileSync(join(root, path), "utf8");
const run = (over: Partial<RunRecord> = {}): RunRecord => ({
  name: "demo",
  title: "Demo",
  body: "Command: `npm run bench:demo`\n\n| a | b |\n| --- | --- |\n| 1 | 2 |",
  latest: "demo figure 1.00 (≥ 0.5: met).",
  when: "2026-12-01T10:00:00Z",
  commit: "abc1234",
  machine: "2 CPUs (test), 24 GB RAM",
  ...over,
});

const SUMMARY = `# Benchmarks

Intro.

## Demo

Target: ≥ 0.5.

${markers("demo")[0]}
- Latest: 2026-11-01T00:00:00Z (commit 0000000): old figure.
- Machine: old machine.
${markers("demo")[1]}

## Other

${markers("other")[0]}
- Latest: untouched.
${markers("other")[1]}
`;

const DOC = `# Demo benchmark

Intro.

<!-- bench:latest:begin -->
## Demo — 2026-11-01T00:00:00Z

Command: \`npm run bench:demo\`

old table

Note on this run: by hand.
<!-- bench:latest:end -->

## History

| Run | figure |
| --- | --- |
| 2026-10-01 | 0.9 |

## Notes

- a note.
`;

describe("writeRun", () => {
  test("replaces the doc's latest run, keeps the one it replaced and the history, and only the marked lines of BENCHMARKS.md", () => {
    const root = tempRoot();
    writeFileSync(join(root, "BENCHMARKS.md"), SUMMARY);
    writeFileSync(join(root, "docs/benchmarks/demo.md"), DOC);

    writeRun(run(), root);
    let doc = read(root, "docs/benchmarks/demo.md");
    const latest = doc.slice(doc.indexOf("<!-- bench:latest:begin -->"), doc.indexOf("<!-- bench:latest:end -->"));
    expect(latest).toContain("## Demo — 2026-12-01T10:00:00Z");
    expect(latest).toContain("| 1 | 2 |");
    expect(latest).not.toContain("old table");
    // The replaced run, word for word, a heading level down, above the history.
    expect(doc).toContain("## Earlier runs as recorded\n\n### Demo — 2026-11-01T00:00:00Z\n\nCommand: `npm run bench:demo`\n\nold table\n\nNote on this run: by hand.\n");
    expect(doc.indexOf("## Earlier runs")).toBeLessThan(doc.indexOf("## History"));
    expect(doc).toContain("| 2026-10-01 | 0.9 |");
    expect(doc).toContain("## Notes\n\n- a note.\n");

    let summary = read(root, "BENCHMARKS.md");
    expect(summary).toBe(
      SUMMARY.replace(
        "- Latest: 2026-11-01T00:00:00Z (commit 0000000): old figure.\n- Machine: old machine.",
        "- Latest: 2026-12-01T10:00:00Z (commit abc1234): demo figure 1.00 (≥ 0.5: met).\n- Machine: 2 CPUs (test), 24 GB RAM",
      ),
    );

    // A second run: the newest replaced run goes first among the earlier ones.
    writeRun(run({ when: "2026-12-02T10:00:00Z", latest: "second." }), root);
    doc = read(root, "docs/benchmarks/demo.md");
    expect(doc.match(/## Earlier runs as recorded/g)?.length).toBe(1);
    const first = doc.indexOf("### Demo — 2026-12-01T10:00:00Z");
    const older = doc.indexOf("### Demo — 2026-11-01T00:00:00Z");
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThan(older);
    expect(older).toBeLessThan(doc.indexOf("## History"));
    summary = read(root, "BENCHMARKS.md");
    expect(summary).toContain("- Latest: 2026-12-02T10:00:00Z (commit abc1234): second.\n");
    expect(summary).not.toContain("demo figure");
    expect(summary).toContain("- Latest: untouched.");
  });

  test("a record with a label is one line; a missing doc and missing markers are made", () => {
    const root = tempRoot();
    writeFileSync(join(root, "BENCHMARKS.md"), SUMMARY);
    writeRun(run({ name: "ab-demo", doc: "ab-history", title: "Demo A/B", label: "Demo" }), root);
    const doc = read(root, "docs/benchmarks/ab-history.md");
    expect(doc.startsWith("# Demo A/B\n\n<!-- bench:latest:begin -->\n## Demo A/B — 2026-12-01T10:00:00Z\n")).toBe(true);
    const summary = read(root, "BENCHMARKS.md");
    expect(summary.startsWith(SUMMARY.trimEnd())).toBe(true);
    expect(summary).toContain(`## Demo A/B\n\n${markers("ab-demo")[0]}\n- Demo: 2026-12-01T10:00:00Z (commit abc1234): demo figure 1.00 (≥ 0.5: met).\n${markers("ab-demo")[1]}\n`);
  });

  test("the pure helpers leave text outside their markers as it was", () => {
    const text = `a\n${markers("x")[0]}\nold\n${markers("x")[1]}\nb\n`;
    expect(replaceMarked(text, "x", "new")).toBe(`a\n${markers("x")[0]}\nnew\n${markers("x")[1]}\nb\n`);
    expect(replaceLatestRun("", "## T — now\n\nbody\n", "T")).toBe("# T\n\n<!-- bench:latest:begin -->\n## T — now\n\nbody\n<!-- bench:latest:end -->\n");
  });

  // Every script's name, as it calls record() or writeRun().
  const SCRIPTS: Array<Pick<RunRecord, "name" | "doc" | "title" | "label">> = [
    { name: "intake", title: "Intake" },
    { name: "floor", title: "Intake floor" },
    { name: "delivery", title: "Delivery" },
    { name: "retention", title: "Retention soak" },
    { name: "soak", title: "Soak" },
    { name: "cluster", title: "Cluster" },
    { name: "warehouse", title: "Warehouse load (PostgreSQL)" },
    { name: "ab-intake", doc: "ab-history", title: "Intake A/B", label: "Intake" },
    { name: "tracking-plans", title: "Tracking plans" },
  ];

  test("on a copy of the real files, a run of every benchmark keeps BENCHMARKS.md under its limit and loses no run", () => {
    const root = tempRoot();
    cpSync(join(ROOT, "BENCHMARKS.md"), join(root, "BENCHMARKS.md"));
    cpSync(join(ROOT, "docs", "benchmarks"), join(root, "docs", "benchmarks"), { recursive: true });
    const before = read(root, "BENCHMARKS.md");
    for (const s of SCRIPTS) {
      expect(before).toContain(markers(s.name)[0]);
      expect(existsSync(join(root, "docs/benchmarks", `${s.doc ?? s.name}.md`))).toBe(true);
    }
    for (const s of SCRIPTS) {
      const path = join(root, "docs/benchmarks", `${s.doc ?? s.name}.md`);
      const old = readFileSync(path, "utf8");
      const oldHeading = /<!-- bench:latest:begin -->\n(## .*)\n/.exec(old)![1]!;
      // A summary as long as the longest a script writes, with room to spare.
      writeRun(run({ ...s, latest: "x".repeat(400) }), root);
      const doc = readFileSync(path, "utf8");
      expect(doc).toContain(`## ${s.title} — 2026-12-01T10:00:00Z`);
      expect(doc).toContain(`#${oldHeading}\n`);
      expect(doc.length).toBeGreaterThan(old.length);
    }
    const after = read(root, "BENCHMARKS.md");
    expect(Buffer.byteLength(after)).toBeLessThan(SUMMARY_LIMIT);
    // Nothing appended: every run found its markers.
    expect(after.split("\n## ").length).toBe(before.split("\n## ").length);
  });
});
