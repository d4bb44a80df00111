/**
 * REDIS's own client: writes what the transform made with Bun's built-in Redis client, as
 * rudder-server's router writes it (services/kvstoremanager): HSET of a user's fields, HSET of one
 * field for profiles, or JSON.GET, an RFC 7386 merge and JSON.SET at the root with the JSON module.
 *
 * Connections are kept per node, password, database and TLS settings and closed when idle. In
 * cluster mode (RudderStack's default) the address lists nodes; a command goes to the first node
 * that answers and follows the cluster's MOVED and ASK redirections, so no slot map is needed.
 * Redis Cluster has one database, so `database` applies only outside cluster mode.
 */
import { RedisClient } from "bun";
import { rejectAfter } from "../../lib/deadline";
import { isPlainObject } from "../shared";
import { type DestinationRequest, type ProtocolAnswer, type ProtocolContext, configOf } from "../types";
import { RedisConfig, type RedisWrite, databaseOf, isClusterMode } from "./config";

/** A connection unused this long is closed. */
const IDLE_CLOSE_MS = 60_000;
const DEFAULT_PORT = 6379;
/** Redirections one command may follow before it is retried later (a cluster resharding). */
const MAX_REDIRECTS = 5;

interface Kept {
  client: RedisClient;
  lastUsed: number;
}

const connections = new Map<string, Kept>();
let sweeper: ReturnType<typeof setInterval> | undefined;

function sweepIdle() {
  const now = Date.now();
  for (const [key, kept] of connections) {
    if (now - kept.lastUsed < IDLE_CLOSE_MS) continue;
    connections.delete(key);
    kept.client.close();
  }
  if (!connections.size && sweeper) {
    clearInterval(sweeper);
    sweeper = undefined;
  }
}

/** A failure worth retrying (a node down, a time-out, a cluster moving slots) or one that never passes (a refused password, a wrong type). */
class RedisFailure extends Error {
  constructor(
    message: string,
    readonly retry: boolean,
  ) {
    super(message);
  }
}

interface Node {
  host: string;
  port: number;
}

/** `host:port`, `[v6]:port` or a bare host, as go-redis reads an address. */
export function parseNode(text: string): Node | undefined {
  const s = text.trim();
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(s);
  if (v6) return { host: v6[1]!, port: v6[2] ? Number(v6[2]) : DEFAULT_PORT };
  const m = /^([^:\s/]+)(?::(\d+))?$/.exec(s);
  if (!m) return undefined;
  const port = m[2] ? Number(m[2]) : DEFAULT_PORT;
  return port > 0 && port < 65536 ? { host: m[1]!, port } : undefined;
}

interface Settings {
  password: string;
  database: number;
  cluster: boolean;
  tls: false | { rejectUnauthorized: boolean; ca?: string };
}

function settingsOf(c: RedisConfig): Settings {
  const cluster = isClusterMode(c);
  return {
    password: c.password ?? "",
    database: databaseOf(c) ?? 0,
    cluster,
    tls: c.secure ? { rejectUnauthorized: c.skipVerify !== true, ca: c.caCertificate?.trim() ? c.caCertificate : undefined } : false,
  };
}

async function clientFor(node: Node, s: Settings, ctx: ProtocolContext): Promise<RedisClient> {
  const reached = await ctx.reach(node.host);
  if (!reached.ok) throw new RedisFailure(reached.error, reached.retry);
  const host = reached.address.includes(":") ? `[${reached.address}]` : reached.address;
  const key = `${host}:${node.port}|${node.host}|${s.database}|${s.password}|${JSON.stringify(s.tls)}`;
  const kept = connections.get(key);
  if (kept) {
    kept.lastUsed = Date.now();
    return kept.client;
  }
  const auth = s.password ? `:${encodeURIComponent(s.password)}@` : "";
  const client = new RedisClient(`${s.tls ? "rediss" : "redis"}://${auth}${host}:${node.port}/${s.database}`, {
    connectionTimeout: ctx.timeoutMs,
    autoReconnect: false,
    enableOfflineQueue: false,
    // The certificate is checked against the name the config gave, not the pinned address.
    tls: s.tls ? { ...s.tls, serverName: node.host } : false,
  });
  connections.set(key, { client, lastUsed: Date.now() });
  client.onclose = () => {
    if (connections.get(key)?.client === client) connections.delete(key);
  };
  sweeper ??= setInterval(sweepIdle, IDLE_CLOSE_MS / 2);
  (sweeper as { unref?: () => void }).unref?.();
  return client;
}

function forget(client: RedisClient) {
  for (const [key, kept] of connections) if (kept.client === client) connections.delete(key);
  client.close();
}

const NEVER_PASSES = /^(WRONGPASS|NOAUTH|NOPERM|WRONGTYPE|ERR|EXECABORT)\b/;

/** A server error's meaning: a redirection to follow, one that may pass later, or one that never will. */
function readFailure(err: unknown): RedisFailure | { moved: Node; ask: boolean } {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: string })?.code ?? "";
  const redirect = /^(MOVED|ASK) \d+ (\S+)$/.exec(message);
  if (redirect) {
    const node = parseNode(redirect[2]!);
    if (node) return { moved: node, ask: redirect[1] === "ASK" };
  }
  if (err instanceof RedisFailure) return err;
  if (code === "ERR_REDIS_AUTHENTICATION_FAILED" || code === "ERR_REDIS_INVALID_PASSWORD") return new RedisFailure(message, false);
  if (code === "ERR_REDIS_SERVER_ERROR" && NEVER_PASSES.test(message)) return new RedisFailure(message, false);
  // Connection failures, time-outs, and LOADING, BUSY, TRYAGAIN, CLUSTERDOWN, MASTERDOWN, READONLY.
  return new RedisFailure(message || "Redis connection failed", true);
}

/** One command on the cluster (or the single node): the first node that answers, then wherever it redirects. */
async function run(nodes: Node[], s: Settings, ctx: ProtocolContext, command: string, args: string[]): Promise<unknown> {
  let lastFailure: RedisFailure | undefined;
  for (const first of nodes) {
    let node = first;
    let asking = false;
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      let client: RedisClient | undefined;
      try {
        client = await clientFor(node, s, ctx);
        const c = client;
        const work = (async () => {
          if (!c.connected) await c.connect();
          if (asking) await c.send("ASKING", []);
          return c.send(command, args);
        })();
        return await rejectAfter(work, ctx.timeoutMs, () => {
          forget(c);
          return new RedisFailure(`Redis did not answer within ${ctx.timeoutMs} ms`, true);
        });
      } catch (err) {
        const failure = readFailure(err);
        if ("moved" in failure) {
          if (!s.cluster) return Promise.reject(new RedisFailure(`Redis answered a cluster redirection (${String((err as Error).message)}) outside cluster mode: set clusterMode`, false));
          node = failure.moved;
          asking = failure.ask;
          continue;
        }
        if (!failure.retry) throw failure;
        if (client && !client.connected) forget(client);
        lastFailure = failure;
        break;
      }
    }
    if (!s.cluster) break;
  }
  throw lastFailure ?? new RedisFailure("Redis cluster kept redirecting", true);
}

/** RFC 7386 merge of two patches as rudder-server merges them (evanphx/json-patch MergeMergePatches): nulls are kept. */
export function mergeJson(into: unknown, from: unknown): unknown {
  if (!isPlainObject(from)) return from;
  const out: Record<string, unknown> = isPlainObject(into) ? { ...into } : {};
  for (const [k, v] of Object.entries(from)) out[k] = v === null ? null : mergeJson(out[k], v);
  return out;
}

/** `{}` with the value set at a dotted path, as sjson sets it. */
function nestedAt(path: string, value: unknown): Record<string, unknown> {
  const parts = path.split(".");
  const root: Record<string, unknown> = {};
  let at = root;
  parts.forEach((p, i) => {
    if (i === parts.length - 1) at[p] = value;
    else at = (at[p] = {}) as Record<string, unknown>;
  });
  return root;
}

async function write(w: RedisWrite, nodes: Node[], s: Settings, ctx: ProtocolContext, useJson: boolean): Promise<string> {
  if ("delete" in w) {
    // One DEL per key: in a cluster the keys may live on different nodes.
    let removed = 0;
    for (const key of w.delete) removed += Number(await run(nodes, s, ctx, "DEL", [key]));
    return `deleted ${removed} of ${w.delete.length} keys`;
  }
  const m = w.message as Record<string, any>;
  if (useJson) {
    const kept = await run(nodes, s, ctx, "JSON.GET", [m.key]);
    const current = typeof kept === "string" && kept !== "" ? JSON.parse(kept) : {};
    const patch = m.path ? nestedAt(String(m.path), m.value) : m.value;
    return String(await run(nodes, s, ctx, "JSON.SET", [m.key, "$", JSON.stringify(mergeJson(current, patch))]));
  }
  if (m.hash !== undefined && m.key !== undefined && m.value !== undefined) {
    return String(await run(nodes, s, ctx, "HSET", [String(m.hash), String(m.key), String(m.value)]));
  }
  const args = [String(m.key)];
  for (const [field, value] of Object.entries((m.fields ?? {}) as Record<string, string>)) args.push(field, value);
  return String(await run(nodes, s, ctx, "HSET", args));
}

/** The kind's `send`: one write of the transform (or one deletion), its failure classified for the pipeline. */
export async function sendToRedis(request: DestinationRequest, ctx: ProtocolContext): Promise<ProtocolAnswer> {
  const c = configOf(ctx, RedisConfig);
  const s = settingsOf(c);
  const texts = s.cluster ? String(c.address ?? "").split(",") : [String(c.address ?? "")];
  const nodes = texts.map(parseNode);
  const bad = texts.findIndex((_, i) => !nodes[i]);
  if (bad >= 0 || !nodes.length) return { outcome: "abort", error: `address '${texts[Math.max(bad, 0)]?.trim()}' is not host:port` };
  try {
    const response = await write(request.body.JSON as unknown as RedisWrite, nodes as Node[], s, ctx, c.useJSONModule === true);
    return { outcome: "ok", response };
  } catch (err) {
    const failure = readFailure(err);
    if ("moved" in failure) return { outcome: "retry", error: "Redis cluster kept redirecting" };
    return { outcome: failure.retry ? "retry" : "abort", error: failure.message };
  }
}
