/** Shared pieces of the benchmarks: processes, wrk runs, and BENCHMARKS.md. */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
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

/** A new BENCHMARKS.md's opening. */
const HEADER =
  "# Benchmarks\n\nFigures from `scripts/`. Each benchmark has one section: its latest recorded run, then a short history of its earlier runs and notes. Each run measures a bare baseline in the same run, so compare ratios, not absolute numbers: the machine (2 cores, shared) is noisy.\n";

/**
 * Writes a run into BENCHMARKS.md as the section `## {title} — {now}`, in place of the run of
 * the same title, so the file stays one section per benchmark. The section's `### ` parts
 * (History, Notes) are kept: the run replaced stays in git's history, and a row for it in
 * History is written by hand where it matters. With --no-record, only prints.
 */
export async function record(title: string, command: string, lines: string[]) {
  const body = `Command: \`${command}\` (commit ${gitHead()})\n\n${lines.join("\n")}`;
  if (process.argv.includes("--no-record")) {
    console.log(body);
    return;
  }
  console.log(await replaceSection(title, body));
}

/** `record` for a body of its own (no command line). */
export async function replaceSection(title: string, body: string): Promise<string> {
  const file = join(ROOT, "BENCHMARKS.md");
  const when = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const run = `## ${title} — ${when}\n\n${body.trim()}\n`;
  const text = (await Bun.file(file).exists()) ? await Bun.file(file).text() : HEADER;
  const lines = text.split("\n");
  const start = lines.findIndex((l) => l.startsWith(`## ${title} —`));
  let out: string;
  if (start < 0) {
    out = `${text.trimEnd()}\n\n${run}`;
  } else {
    const next = lines.findIndex((l, i) => i > start && l.startsWith("## "));
    const end = next < 0 ? lines.length : next;
    const kept = lines.findIndex((l, i) => i > start && i < end && l.startsWith("### "));
    const parts = kept < 0 ? "" : `\n${lines.slice(kept, end).join("\n").trimEnd()}\n`;
    const before = lines.slice(0, start).join("\n").trimEnd();
    const after = next < 0 ? "" : `\n${lines.slice(next).join("\n")}`;
    out = `${before}\n\n${run}${parts}${after}`;
    console.log(`BENCHMARKS.md: replaced the run of ${lines[start]!.slice(3)}; add it to the section's History if it matters.`);
  }
  await Bun.write(file, out.endsWith("\n") ? out : `${out}\n`);
  return run;
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
