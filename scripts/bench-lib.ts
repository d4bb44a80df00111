/** Shared pieces of the benchmarks: processes, wrk runs, and where runs are written (docs/benchmarks/, BENCHMARKS.md). */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { cpus as osCpus, release, tmpdir, totalmem, type } from "node:os";
import { join } from "node:path";

export const ROOT = join(import.meta.dir, "..");
export const BINARY = join(ROOT, "dist", "sluice");
export const TOKEN = "bench-admin-token-0123456789";

export function requireWrk(): string {
  const wrk = Bun.which("wrk");
  if (!wrk) {
    console.error("The benchmarks drive load with wrk: apt-get install wrk");
    process.exit(2);
  }
  return wrk;
}

export async function ensureBinary() {
  if (!(await Bun.file(BINARY).exists()) || process.argv.includes("--build")) {
    const b = Bun.spawnSync(["npm", "run", "build"], { cwd: ROOT, stdout: "inherit", stderr: "inherit" });
    if (b.exitCode !== 0) throw new Error("build failed");
  }
}

export interface Proc {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** Starts a process that prints a JSON line with its url (Sluice's "listening" log, or the bare server). */
export async function startProcess(cmd: string[], env: Record<string, string> = {}, cwd = ROOT): Promise<Proc> {
  const proc = Bun.spawn(cmd, { cwd, env: { ...process.env, ...env }, stdout: "pipe", stderr: "inherit" });
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  const dec = new TextDecoder();
  let out = "";
  const deadline = Date.now() + 20_000;
  let url: string | undefined;
  while (!url) {
    if (Date.now() > deadline) throw new Error(`no url from ${cmd.join(" ")}: ${out}`);
    const { value, done } = await reader.read();
    if (done) throw new Error(`${cmd.join(" ")} exited: ${out}`);
    out += dec.decode(value);
    const m = /"url":"(http:\/\/[^"]+)"/.exec(out);
    if (m) url = m[1].replace("0.0.0.0", "127.0.0.1");
  }
  // Keep draining stdout so the process never blocks on a full pipe.
  void (async () => {
    for (;;) {
      const { done } = await reader.read().catch(() => ({ done: true }));
      if (done) break;
    }
  })();
  return {
    url,
    pid: proc.pid,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

export async function startSluice(args: string[] = [], env: Record<string, string> = {}, existingDir?: string, binary = BINARY) {
  const dir = existingDir ?? mkdtempSync(join(tmpdir(), "sluice-bench-"));
  const p = await startProcess([binary, "serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", dir, ...args], {
    SLUICE_ADMIN_TOKEN: TOKEN,
    LOG_LEVEL: "info",
    // The benchmarks' sinks listen on 127.0.0.1, which the outbound policy refuses by default.
    SLUICE_ALLOW_DESTINATION_HOSTS: "127.0.0.0/8,::1",
    ...env,
  }, dir);
  return {
    ...p,
    dir,
    async stop(keepDir = false) {
      await p.stop();
      if (!keepDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function adminApi(url: string, method: string, path: string, body?: unknown) {
  const res = await fetch(url + path, { method, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<any>;
}

export interface WrkResult {
  rps: number;
  p50ms: number;
  p99ms: number;
  non2xx: number;
  /** CPU time of the server process (all its threads) per request, in µs; set when a pid was given. */
  cpuUs?: number;
  /** The same for its main thread alone (the JavaScript thread, whose id is the pid). */
  mainCpuUs?: number;
  /** Requests completed. */
  requests: number;
}

/**
 * The fields of a /proc stat file after the parenthesised command name (which may hold spaces):
 * [0] is the state (field 3 of proc(5)), [1] the parent, [11] and [12] utime and stime.
 */
function procStatFields(path: string): string[] {
  const stat = readFileSync(path, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** User + system CPU time of a process and all its threads so far, or of one thread, in µs (from /proc). */
export function cpuTimeUs(pid: number, tid?: number): number {
  const fields = procStatFields(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`);
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1_000_000) / 100;
}

/** The CPUs a process may run on, as taskset lists them ("0,1"). */
export function cpuList(pid: number): string {
  const r = Bun.spawnSync(["taskset", "-c", "-p", String(pid)]);
  if (r.exitCode !== 0) throw new Error(`taskset -p ${pid}: ${r.stderr.toString().trim()}`);
  return r.stdout.toString().trim().split(": ").pop()!;
}

/** Pins every thread of each process to the CPUs listed (taskset -a); threads made later inherit it. */
export function pinTo(pids: number[], cpus: string) {
  for (const pid of pids) {
    const r = Bun.spawnSync(["taskset", "-a", "-c", "-p", cpus, String(pid)]);
    // A process that ended meanwhile (a PostgreSQL backend) has nothing left to pin.
    if (r.exitCode !== 0 && existsSync(`/proc/${pid}`)) throw new Error(`taskset -p ${cpus} ${pid}: ${r.stderr.toString().trim()}`);
  }
}

/** The parent of a process, from /proc; undefined when it has ended. */
export function parentOf(pid: number): number | undefined {
  try {
    return Number(procStatFields(`/proc/${pid}/stat`)[1]);
  } catch {
    return undefined;
  }
}

/** A process and its children, e.g. PostgreSQL's postmaster and its backends. */
export function processFamily(parent: number): number[] {
  const children = readdirSync("/proc").filter((d) => /^\d+$/.test(d)).map(Number).filter((pid) => parentOf(pid) === parent);
  return [parent, ...children];
}

/** In a body given to wrk(), stands for a value unique to each request. */
export const REQUEST_ID = "@@REQ@@";

/**
 * The intake benchmarks' bodies. Each event carries its own messageId, as every SDK sends
 * one, so the figures include deduplication; wrk makes them unique per request.
 */
export const INTAKE_BODIES = {
  track: JSON.stringify({ userId: "bench-user", event: "Benchmark Event", messageId: REQUEST_ID, properties: { plan: "pro", amount: 42, tags: ["a", "b"] }, context: { library: { name: "wrk" } } }),
  batch: JSON.stringify({
    batch: Array.from({ length: 100 }, (_, i) => ({ type: "track", userId: `user-${i % 10}`, event: "Benchmark Event", messageId: `${REQUEST_ID}-${i}`, properties: { i, plan: "pro" } })),
  }),
};

let wrkRuns = 0;

/** Runs wrk against url with a POST body; returns requests/s and latency percentiles. */
export function wrk(
  url: string,
  opts: { body: string; bodies?: string[]; headers: Record<string, string>; connections: number; seconds: number; threads?: number; pid?: number; cpus?: string },
): WrkResult {
  const script = join(mkdtempSync(join(tmpdir(), "wrk-")), "post.lua");
  const hdrs = Object.entries(opts.headers).map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`).join("\n");
  // With several bodies, each request takes the next one (e.g. to spread events over users).
  const rotate = opts.bodies?.length
    ? `bodies = { ${opts.bodies.map((b) => JSON.stringify(b)).join(", ")} }\ni = 0\nrequest = function() i = (i % #bodies) + 1; return wrk.format(nil, nil, nil, bodies[i]) end\n`
    : "";
  // REQUEST_ID in the body becomes run-thread-counter, unique across runs against one server.
  const run = `${process.pid}x${Date.now().toString(36)}x${++wrkRuns}`;
  const unique = opts.body.includes(REQUEST_ID)
    ? `threads = 0\nsetup = function(thread) threads = threads + 1; thread:set("tid", threads) end\nn = 0\n` +
      `request = function() n = n + 1; local body = string.gsub(wrk.body, "${REQUEST_ID}", "${run}-" .. tid .. "-" .. n); return wrk.format(nil, nil, nil, body) end\n`
    : "";
  writeFileSync(
    script,
    `wrk.method = "POST"\nwrk.body = ${JSON.stringify(opts.body)}\n${hdrs}\n${rotate}${unique}` +
      `done = function(summary, latency, requests) io.write(string.format("NON2XX %d\\n", summary.errors.status)) end\n`,
  );
  const cpuBefore = opts.pid ? cpuTimeUs(opts.pid) : 0;
  const mainBefore = opts.pid ? cpuTimeUs(opts.pid, opts.pid) : 0;
  const r = Bun.spawnSync([...(opts.cpus ? ["taskset", "-c", opts.cpus] : []), "wrk", "-t", String(opts.threads ?? 2), "-c", String(opts.connections), "-d", `${opts.seconds}s`, "--latency", "-s", script, url]);
  const out = r.stdout.toString();
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
  const pct = (p: string) => {
    const m = new RegExp(`\\s${p}%\\s+([\\d.]+)(us|ms|s)`).exec(out);
    if (!m) return NaN;
    const v = Number(m[1]);
    return m[2] === "us" ? v / 1000 : m[2] === "s" ? v * 1000 : v;
  };
  const non2xx = Number(/NON2XX (\d+)/.exec(out)?.[1] ?? 0);
  if (!rps) throw new Error(`wrk failed: ${out} ${r.stderr.toString()}`);
  // CPU per request is steadier than requests/s on a shared machine: it does not count the time
  // the server waited for a core.
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const cpuUs = opts.pid && requests ? (cpuTimeUs(opts.pid) - cpuBefore) / requests : undefined;
  const mainCpuUs = opts.pid && requests ? (cpuTimeUs(opts.pid, opts.pid) - mainBefore) / requests : undefined;
  return { rps, p50ms: pct("50"), p99ms: pct("99"), non2xx, cpuUs, mainCpuUs, requests };
}

/**
 * The order in which benchmarked servers take their turns in round r: a Williams design
 * (0, 1, n-1, 2, n-2, ... shifted by r, mirrored in odd passes when n is odd), so over n
 * rounds (2n when odd) each server comes right after every other as often. A plain rotation,
 * or forward and reverse in turn, puts a server after the same neighbour round after round,
 * and what a turn leaves behind (disk writes, a collection) falls on that neighbour alone.
 */
export function balancedOrder<T>(items: T[], r: number): T[] {
  const n = items.length;
  const first = Array.from({ length: n }, (_, i) => (i === 0 ? 0 : i % 2 ? (i + 1) / 2 : n - i / 2));
  const row = first.map((x) => items[(x + r) % n]!);
  return n % 2 && Math.floor(r / n) % 2 ? row.reverse() : row;
}

/** Peak and current resident memory of a process, in MB. */
export function rssMb(pid: number): { rss: number; peak: number } {
  try {
    const status = require("node:fs").readFileSync(`/proc/${pid}/status`, "utf8") as string;
    const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
    return { rss: kb("VmRSS") / 1024, peak: kb("VmHWM") / 1024 };
  } catch {
    return { rss: NaN, peak: NaN };
  }
}

/**
 * Where a run goes. BENCHMARKS.md holds one short summary per benchmark and has to stay small
 * enough to read (under 8 KB), so a run writes its whole section into docs/benchmarks/{doc}.md
 * and only its marked lines (`<!-- bench:{name}:begin -->` … `end -->`) in BENCHMARKS.md.
 */
export interface RunRecord {
  /** The marker's name in BENCHMARKS.md. */
  name: string;
  /** docs/benchmarks/{doc}.md; the name when not given. */
  doc?: string;
  /** The run's heading: `## {title} — {when}`. */
  title: string;
  /** The section under the heading, in full. */
  body: string;
  /** The run's figures for BENCHMARKS.md, on one line. */
  latest: string;
  /**
   * For a record shown as one line among others (the A/B records): its label. Without it the
   * summary is a Latest and a Machine line.
   */
  label?: string;
  /** The run's instant as an ISO string to the second; now when not given. */
  when?: string;
  commit?: string;
  machine?: string;
}

/** The size BENCHMARKS.md has to stay under. */
export const SUMMARY_LIMIT = 8192;

const LATEST_BEGIN = "<!-- bench:latest:begin -->";
const LATEST_END = "<!-- bench:latest:end -->";
/** Where a doc keeps the runs a newer one replaced, word for word: nothing measured is lost. */
const EARLIER = "## Earlier runs as recorded";

export const markers = (name: string) => [`<!-- bench:${name}:begin -->`, `<!-- bench:${name}:end -->`] as const;

export const isoSeconds = (d = new Date()) => d.toISOString().replace(/\.\d+Z$/, "Z");

/** The lines between a benchmark's markers in BENCHMARKS.md. */
export function summaryLines(run: RunRecord): string {
  const when = run.when ?? isoSeconds();
  const commit = run.commit ?? gitHead();
  if (run.label) return `- ${run.label}: ${when} (commit ${commit}): ${run.latest}`;
  return `- Latest: ${when} (commit ${commit}): ${run.latest}\n- Machine: ${run.machine ?? machine()}`;
}

/**
 * Replaces what lies between a pair of markers; without them, the markers and the content go
 * at the end (under a heading), so a new benchmark still gets its line.
 */
export function replaceMarked(text: string, name: string, content: string, heading = name): string {
  const [begin, end] = markers(name);
  const b = text.indexOf(begin);
  const e = b < 0 ? -1 : text.indexOf(end, b);
  if (b < 0 || e < 0) return `${text.trimEnd()}\n\n## ${heading}\n\n${begin}\n${content}\n${end}\n`;
  return `${text.slice(0, b + begin.length)}\n${content}\n${text.slice(e)}`;
}

/**
 * Puts a run in a doc's latest-run place. The run it replaces moves, as it was, to the top of
 * the doc's earlier runs (its headings a level down), below which the History and Notes stay.
 */
export function replaceLatestRun(doc: string, section: string, title: string): string {
  const b = doc.indexOf(LATEST_BEGIN);
  const e = b < 0 ? -1 : doc.indexOf(LATEST_END, b);
  if (b < 0 || e < 0) {
    const head = doc.trim() ? doc.trimEnd() : `# ${title}`;
    return `${head}\n\n${LATEST_BEGIN}\n${section.trim()}\n${LATEST_END}\n`;
  }
  const old = doc.slice(b + LATEST_BEGIN.length, e).trim();
  let after = doc.slice(e + LATEST_END.length);
  if (old) {
    const demoted = old.replace(/^(#{2,5}) /gm, "#$1 ");
    const at = after.indexOf(`${EARLIER}\n`);
    after =
      at < 0
        ? `\n\n${EARLIER}\n\n${demoted}\n${after.replace(/^\n+/, "\n")}`
        : `${after.slice(0, at + EARLIER.length + 1)}\n${demoted}\n${after.slice(at + EARLIER.length + 1)}`;
  }
  return `${doc.slice(0, b)}${LATEST_BEGIN}\n${section.trim()}\n${LATEST_END}${after.endsWith("\n") ? after : `${after}\n`}`;
}

/**
 * Writes a run: its section into docs/benchmarks/{doc}.md, its summary between its markers in
 * BENCHMARKS.md. `root` is the repository's root, a parameter so a test can write a copy.
 */
export function writeRun(run: RunRecord, root = ROOT): { docPath: string; section: string; summary: string } {
  const when = run.when ?? isoSeconds();
  const commit = run.commit ?? gitHead();
  const full = { ...run, when, commit };
  const section = `## ${run.title} — ${when}\n\n${run.body.trim()}\n`;
  const dir = join(root, "docs", "benchmarks");
  mkdirSync(dir, { recursive: true });
  const docPath = join(dir, `${run.doc ?? run.name}.md`);
  const doc = existsSync(docPath) ? readFileSync(docPath, "utf8") : "";
  writeFileSync(docPath, replaceLatestRun(doc, section, run.title));

  const summaryPath = join(root, "BENCHMARKS.md");
  const summary = summaryLines(full);
  const text = existsSync(summaryPath) ? readFileSync(summaryPath, "utf8") : "# Benchmarks\n";
  const out = replaceMarked(text, run.name, summary, run.title);
  writeFileSync(summaryPath, out);
  const bytes = Buffer.byteLength(out);
  // The run is kept either way; a summary line that grew too long is for a person to shorten.
  if (bytes >= SUMMARY_LIMIT) console.warn(`BENCHMARKS.md is ${bytes} bytes, over its limit of ${SUMMARY_LIMIT}: shorten the summary lines.`);
  return { docPath, section, summary };
}

/**
 * A run with its command line: written by writeRun, or with --no-record only printed.
 * `lines` are the section's tables and paragraphs; `latest` its figures on one line.
 */
export async function record(run: Omit<RunRecord, "body"> & { command: string; lines: string[] }) {
  const commit = run.commit ?? gitHead();
  const host = run.machine ?? machine();
  const body = `Command: \`${run.command}\` (commit ${commit})\n\nMachine: ${host}\n\n${run.lines.join("\n")}`;
  if (process.argv.includes("--no-record")) {
    console.log(`${body}\n\nSummary: ${run.latest}`);
    return;
  }
  const { docPath, section, summary } = writeRun({ ...run, body, commit, machine: host });
  console.log(section);
  console.log(`wrote ${docPath.slice(ROOT.length + 1)} and, in BENCHMARKS.md:\n${summary}`);
}

/** The machine a run ran on, on one line: the figures mean little without it. */
export function machine(): string {
  const cpus = osCpus();
  const model = cpus[0]?.model.replace(/\s+/g, " ").trim() || "unknown CPU";
  let vm = false;
  try {
    vm = /\bhypervisor\b/.test(readFileSync("/proc/cpuinfo", "utf8"));
  } catch {
    // Without /proc (not Linux) the line just does not say whether it is a VM.
  }
  return `${cpus.length} CPUs (${model}${vm ? ", a VM" : ""}), ${Math.round(totalmem() / 2 ** 30)} GB RAM, ${type()} ${release()}`;
}

export function gitHead(): string {
  const r = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { cwd: ROOT });
  return r.stdout.toString().trim() || "unknown";
}

/** A numeric command-line option (`--name N`), or the default when it is missing or not a positive number. */
export const numberArg = (name: string, def: number) => {
  const args = process.argv.slice(2);
  return Number(args[args.indexOf(name) + 1] || def) || def;
};

/** The Authorization header of a source: HTTP Basic with the write key as user name. */
export const basicAuth = (writeKey: string) => `Basic ${btoa(`${writeKey}:`)}`;

export const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
/** The middle value: a tail latency of one disturbed round does not move it. */
export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

export const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "n/a");

/** The lowest and highest of the figures, "min–max". */
export const range = (xs: number[], digits = 0) => `${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)}`;

/** Sends event batches through /v1/batch, `parallel` requests at a time, in order of the list; throws on any answer but 200. */
export async function sendBatches(url: string, auth: string, batches: Array<Array<Record<string, unknown>>>, parallel = 8): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < batches.length) {
        const b = batches[next++];
        const res = await fetch(`${url}/v1/batch`, { method: "POST", headers: { authorization: auth, "content-type": "application/json" }, body: JSON.stringify({ batch: b }) });
        if (res.status !== 200) throw new Error(`intake answered ${res.status}`);
      }
    }),
  );
}
