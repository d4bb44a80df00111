/**
 * Load for the soak (scripts/soak.ts): single track calls from a separate process, either
 * unpaced (as fast as the connections allow, to measure capacity) or at a set rate.
 * wrk when installed; else a Bun process (paced-load.ts), so the soak runs anywhere.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REQUEST_ID } from "../bench-lib";

/** Events rotate over this many users: one user's deliveries go one after another. */
export const USERS = 100;

/** The body of a track call by user `user`; REQUEST_ID stands for its messageId. */
export function trackBody(user: number): string {
  return JSON.stringify({
    userId: `soak-user-${user}`,
    event: "Soak Event",
    messageId: REQUEST_ID,
    properties: { plan: "pro", amount: 42, payload: "x".repeat(200) },
    context: { library: { name: "sluice-soak" } },
  });
}

export interface LoadTarget {
  /** The /v1/track URL. */
  url: string;
  /** The Authorization header. */
  auth: string;
}

export interface LoadOptions {
  /** Requests a second; 0: as fast as `connections` allow. */
  rate: number;
  seconds: number;
  connections: number;
}

export interface LoadSummary {
  tool: "wrk" | "bun";
  requests: number;
  /** Answers other than 2xx. */
  non2xx: number;
  /** Connection errors and time-outs. */
  errors: number;
}

export interface LoadRun {
  /** Resolves when the load has run its time (or was stopped). */
  done: Promise<LoadSummary>;
  stop(): Promise<LoadSummary>;
  /** Ends the load process at once, synchronously (for an exit handler). */
  kill(): void;
}

export type LoadTool = "wrk" | "bun";

export function startLoad(tool: LoadTool, target: LoadTarget, opts: LoadOptions): LoadRun {
  return tool === "wrk" ? wrkLoad(target, opts) : bunLoad(target, opts);
}

/**
 * Connections for a paced load: each one sends a request every ~100 ms, so that with wrk (whose
 * cycle is the delay plus the answer's time) a few milliseconds more per answer move the rate little.
 */
export const pacedConnections = (rate: number) => Math.max(1, Math.min(1000, Math.ceil(rate / 10)));

let runs = 0;
/** A prefix for messageIds unique to this run of a load, so no two runs' events deduplicate. */
const runId = () => `${process.pid.toString(36)}${Date.now().toString(36)}x${++runs}`;

function bunLoad(target: LoadTarget, opts: LoadOptions): LoadRun {
  const proc = Bun.spawn(
    [process.execPath, join(import.meta.dir, "paced-load.ts"), "--url", target.url, "--auth", target.auth, "--rate", String(opts.rate), "--seconds", String(opts.seconds), "--connections", String(opts.connections), "--run", runId()],
    { stdout: "pipe", stderr: "inherit" },
  );
  const done = (async (): Promise<LoadSummary> => {
    const out = await new Response(proc.stdout).text();
    await proc.exited;
    const line = out.trim().split("\n").pop() ?? "";
    try {
      const s = JSON.parse(line) as { requests: number; non2xx: number; errors: number };
      return { tool: "bun", requests: s.requests, non2xx: s.non2xx, errors: s.errors };
    } catch {
      throw new Error(`the Bun load process (paced-load.ts) ended with code ${proc.exitCode} and printed no summary: ${out.slice(-500)}`);
    }
  })();
  return {
    done,
    async stop() {
      proc.kill("SIGINT");
      return done;
    },
    kill: () => proc.kill("SIGKILL"),
  };
}

/**
 * wrk keeps each connection busy, so a rate comes from a delay before each request. The
 * delay cannot see the answer's time, so the load runs in segments: after each one the
 * delay is corrected by the rate it reached.
 */
function wrkLoad(target: LoadTarget, opts: LoadOptions): LoadRun {
  const dir = mkdtempSync(join(tmpdir(), "sluice-soak-wrk-"));
  const total: LoadSummary = { tool: "wrk", requests: 0, non2xx: 0, errors: 0 };
  let current: ReturnType<typeof Bun.spawn> | undefined;
  let stopped = false;
  const cycleMs = opts.rate > 0 ? (opts.connections * 1000) / opts.rate : 0;
  // A short first segment corrects the first guess of the delay early.
  const segmentSeconds = (seg: number) => (opts.rate > 0 ? (seg === 0 ? 10 : 30) : opts.seconds);
  const done = (async () => {
    try {
      return await runSegments();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  })();
  async function runSegments(): Promise<LoadSummary> {
    let delayMs = Math.max(0, cycleMs - 1);
    const until = Date.now() + opts.seconds * 1000;
    for (let seg = 0; !stopped; seg++) {
      const left = Math.round((until - Date.now()) / 1000);
      if (left < 1) break;
      const seconds = Math.min(segmentSeconds(seg), left);
      const script = join(dir, `load-${seg}.lua`);
      writeFileSync(script, wrkScript(target.auth, runId(), delayMs, opts.connections));
      current = Bun.spawn(["wrk", "-t1", `-c${opts.connections}`, `-d${seconds}s`, "-s", script, target.url], { stdout: "pipe", stderr: "pipe" });
      const out = await new Response(current.stdout as ReadableStream).text();
      await current.exited;
      const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
      if (!Number.isFinite(requests)) {
        if (stopped) break;
        throw new Error(`wrk printed no result: ${out} ${await new Response(current.stderr as ReadableStream).text()}`);
      }
      total.requests += requests;
      total.non2xx += Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
      const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
      if (sock) total.errors += Number(sock[1]) + Number(sock[2]) + Number(sock[3]) + Number(sock[4]);
      if (opts.rate > 0 && requests > 0) {
        // Per connection, a cycle is the delay plus the answer's time; keep the answer's
        // time as measured and set the delay for the cycle the rate needs.
        const answerMs = Math.max(0, (opts.connections * 1000 * seconds) / requests - delayMs);
        delayMs = Math.max(0, cycleMs - answerMs);
      }
    }
    return { ...total };
  }
  return {
    done,
    async stop() {
      stopped = true;
      current?.kill("SIGINT");
      return done;
    },
    kill() {
      stopped = true;
      current?.kill("SIGKILL");
    },
  };
}

/** wrk's Lua: bodies rotate over the users, each with its own messageId; an optional paced delay. */
function wrkScript(auth: string, run: string, delayMs: number, connections: number): string {
  const bodies = Array.from({ length: USERS }, (_, u) => JSON.stringify(trackBody(u))).join(",\n");
  // wrk asks for a delay before every request, the first included. The first one of each
  // connection is random within a cycle: connections that all start together would otherwise
  // send in bursts, one request each, every cycle. After that, wrk's delay being whole
  // milliseconds, it alternates between the two around delayMs.
  const base = Math.floor(delayMs);
  const pacing =
    delayMs > 0
      ? `local base, frac, acc, calls = ${base}, ${(delayMs - base).toFixed(4)}, 0, 0\n` +
        `delay = function()\n  calls = calls + 1\n  if calls <= ${connections} then return math.random(0, ${Math.ceil(delayMs)}) end\n` +
        `  acc = acc + frac; if acc >= 1 then acc = acc - 1; return base + 1 end; return base\nend\n`
      : "";
  return (
    `wrk.method = "POST"\nwrk.headers["content-type"] = "application/json"\nwrk.headers["authorization"] = ${JSON.stringify(auth)}\n` +
    `local bodies = {\n${bodies}\n}\nlocal n, i = 0, 0\n` +
    `request = function()\n  n = n + 1; i = (i % #bodies) + 1\n` +
    `  local body = string.gsub(bodies[i], "${REQUEST_ID}", "${run}-" .. n)\n  return wrk.format(nil, nil, nil, body)\nend\n` +
    pacing
  );
}
