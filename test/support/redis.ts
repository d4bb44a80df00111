/**
 * The machine's Redis (127.0.0.1:6379, or REDIS_HOST/REDIS_PORT) for the REDIS kind's tests,
 * started from the installed redis-server when it is stopped. Without either the tests are
 * skipped and say so, unless SLUICE_REQUIRE_REDIS is set (CI), where that fails. Also starts
 * throw-away redis-server processes (a node that goes down and comes back, a cluster).
 */
import { expect, test } from "bun:test";
import { RedisClient, type Subprocess } from "bun";
import { tempDir } from "./helpers";

export const REDIS = { host: process.env.REDIS_HOST ?? "127.0.0.1", port: Number(process.env.REDIS_PORT ?? 6379) };
export const redisServerBinary = Bun.which("redis-server");

async function ping(port: number, host = "127.0.0.1"): Promise<string | null> {
  const c = new RedisClient(`redis://${host}:${port}`, { connectionTimeout: 1500, autoReconnect: false, enableOfflineQueue: false });
  try {
    await c.connect();
    return (await c.send("PING", [])) === "PONG" ? null : "no PONG";
  } catch (err) {
    return (err as Error).message || "unreachable";
  } finally {
    c.close();
  }
}

/** Polls until the port answers PING (a fresh redis-server takes a moment). */
export async function waitForRedis(port: number, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await ping(port)) === null) return true;
    await Bun.sleep(50);
  }
  return false;
}

async function reachOrStart(): Promise<string | null> {
  const first = await ping(REDIS.port, REDIS.host);
  if (first === null || REDIS.host !== "127.0.0.1" || !redisServerBinary) return first;
  // The machine's Redis is stopped: start the installed one, keeping nothing on disk (as the machine's does).
  Bun.spawnSync([redisServerBinary, "--port", String(REDIS.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "yes"]);
  return (await waitForRedis(REDIS.port)) ? null : first;
}

const problem = await reachOrStart();
export const haveRedis = problem === null;

/** Call at the top of a test file that needs the machine's Redis. */
export function requireRedis(file: string): void {
  if (!haveRedis) console.warn(`${file}: skipped, no Redis at ${REDIS.host}:${REDIS.port} (${problem})`);
  test.if(!haveRedis && !!process.env.SLUICE_REQUIRE_REDIS)("Redis is reachable (SLUICE_REQUIRE_REDIS is set)", () => {
    expect(problem).toBeNull();
  });
}

export function redisClient(port = REDIS.port, db = 0): RedisClient {
  return new RedisClient(`redis://${REDIS.host}:${port}/${db}`, { connectionTimeout: 3000 });
}

/** A free TCP port on 127.0.0.1 (listened on, then released). */
export function freePort(): number {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

/** A redis-server of the test's own on `port` (memory only); stop() kills it. */
export function spawnRedis(port: number, extra: string[] = []): { proc: Subprocess; stop: () => void } {
  if (!redisServerBinary) throw new Error("redis-server is not installed");
  const dir = tempDir("sluice-redis-");
  const proc = Bun.spawn([redisServerBinary, "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, ...extra], { stdout: "ignore", stderr: "ignore" });
  return { proc, stop: () => proc.kill(9) };
}
