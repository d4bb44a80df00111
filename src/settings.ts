/**
 * Every setting of Sluice: a flag with an environment twin. Parsed and validated
 * once at start; nothing else in the program reads process.env.
 */
import { parseArgs } from "node:util";
import { hostPatternProblem } from "./lib/address-policy";
import { databaseUrlProblem } from "./lib/postgres-url";

export interface Settings {
  port: number;
  host: string;
  apiPort?: number;
  dataDir: string;
  /** Cluster mode: all state in this PostgreSQL instead of SQLite in dataDir. */
  database?: string;
  /** The schema of `database` that holds Sluice's tables (the server's default when absent). */
  databaseSchema?: string;
  /** Connections of this instance's pool on `database` (besides its listening one). */
  databasePool: number;
  config?: string;
  adminEmail: string;
  adminToken?: string;
  logLevel: "debug" | "info" | "warn" | "error";
  synchronous: "FULL" | "NORMAL";
  retentionHours: number;
  retryMaxHours: number;
  retryMinAttempts: number;
  retryBackoffMs: number;
  idleTimeoutSeconds: number;
  bodyTimeoutSeconds: number;
  maxSlowBodiesPerAddress: number;
  destinationTimeoutMs: number;
  destinationConcurrency: number;
  transformMemoryMb: number;
  transformTimeoutMs: number;
  transformWorkers: number;
  /** Share of the time a warehouse load sends rows while event intake is busy; 1: it never pauses. */
  warehouseLoadShare: number;
  /** Object storage (S3, MINIO, DIGITAL_OCEAN_SPACES): a file is uploaded at this many events, MB or seconds, whichever comes first. */
  objectStorageBatchEvents: number;
  objectStorageBatchMb: number;
  objectStorageBatchSeconds: number;
  /** Memory (MB) JavaScriptCore's collector paces the heap against; 0 keeps its own guess. */
  gcMemoryMb: number;
  /** Destination kind → base URL replacing the service's scheme and host (for offline tests). */
  destinationBaseUrls: Record<string, string>;
  /** How long a dashboard sign-in lasts. */
  sessionHours: number;
  /** A built dashboard to serve instead of the embedded one (development). */
  dashboardDir?: string;
  /** Folder of scheduled backups; none are made without it. */
  backupDir?: string;
  backupEveryHours: number;
  backupKeep: number;
  /** Hosts, IPs and CIDRs that destinations may reach although the outbound policy refuses them by default. */
  allowDestinationHosts: string[];
  /** More hosts, IPs and CIDRs destinations may never reach. */
  denyDestinationHosts: string[];
  /** Believe X-Forwarded-Host, X-Forwarded-Proto and X-Forwarded-For: only behind a proxy that sets them. */
  trustProxy: boolean;
  /** A bearer token /metrics requires; open without it. */
  metricsToken?: string;
  /** Largest output of one user transformation call for one event, in bytes. */
  transformOutputMaxBytes: number;
  /** The event catalog (src/catalog/): read committed events and keep their models; false turns it off. */
  catalog: boolean;
  /** Models (type, event name) kept per source; events of further ones are counted as overflow. */
  catalogMaxModels: number;
  /** Property paths kept per model; occurrences of further ones are counted. */
  catalogMaxPaths: number;
  /** Payloads parsed a second (per process) for the catalog's property statistics; 0: counts only. */
  catalogSamplePerSecond: number;
  /** How often the catalog saves what it counted. */
  catalogFlushSeconds: number;
}

type Spec = {
  key: keyof Settings;
  /** A flag that takes no value (`--trust-proxy`); its environment twin takes true/false. */
  boolean?: true;
  flag?: string;
  env?: string;
  default?: string;
  help: string;
  parse: (raw: string, name: string) => unknown;
};

export class SettingsError extends Error {}

const int = (min: number, max: number) => (raw: string, name: string) => {
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || n < min || n > max) throw new SettingsError(`${name} must be a whole number from ${min} to ${max}, got '${raw}'`);
  return n;
};
const positive = (raw: string, name: string) => {
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new SettingsError(`${name} must be a positive number, got '${raw}'`);
  return n;
};
const share = (raw: string, name: string) => {
  const n = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(n) || n <= 0 || n > 1) throw new SettingsError(`${name} must be a number above 0 and at most 1, got '${raw}'`);
  return n;
};
const oneOf = (...values: string[]) => (raw: string, name: string) => {
  const v = raw.trim();
  const match = values.find((x) => x.toLowerCase() === v.toLowerCase());
  if (!match) throw new SettingsError(`${name} must be one of ${values.join(", ")}, got '${raw}'`);
  return match;
};
const postgresUrl = (raw: string, name: string) => {
  const problem = databaseUrlProblem(raw.trim());
  if (problem) throw new SettingsError(problem.replace("--database", name));
  return raw.trim();
};
const schemaName = (raw: string, name: string) => {
  const v = raw.trim();
  // PostgreSQL's identifier limit; any other character is quoted where the name is used.
  if (v === "" || Buffer.byteLength(v) > 63) throw new SettingsError(`${name} must be a schema name of 1 to 63 bytes, got '${raw}'`);
  return v;
};
const nonEmpty = (raw: string, name: string) => {
  if (!raw.trim()) throw new SettingsError(`${name} must not be empty`);
  return raw.trim();
};
const email = (raw: string, name: string) => {
  if (!/^[^\s@]+@[^\s@]+$/.test(raw.trim())) throw new SettingsError(`${name} must be an e-mail address, got '${raw}'`);
  return raw.trim();
};
const minLength = (min: number) => (raw: string, name: string) => {
  if (raw.length < min) throw new SettingsError(`${name} must be at least ${min} characters`);
  return raw;
};
const bool = (raw: string, name: string) => {
  const v = raw.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(v)) return true;
  if (["0", "false", "no", "off"].includes(v)) return false;
  throw new SettingsError(`${name} must be true or false, got '${raw}'`);
};
/** Comma-separated hosts, IPs and CIDRs; each is checked by the outbound policy's own parser. */
const hostList = (raw: string, name: string) => {
  const out = raw.split(",").map((s) => s.trim()).filter(Boolean);
  for (const entry of out) {
    const problem = hostPatternProblem(entry);
    if (problem) throw new SettingsError(`${name}: '${entry}' ${problem}`);
  }
  return out;
};
const baseUrls = (raw: string, name: string) => {
  const out: Record<string, string> = {};
  for (const part of raw.split(",").map((s) => s.trim()).filter(Boolean)) {
    const eq = part.indexOf("=");
    const kind = part.slice(0, eq).trim().toUpperCase();
    const url = part.slice(eq + 1).trim();
    if (eq <= 0 || !URL.canParse(url)) throw new SettingsError(`${name} takes KIND=URL pairs separated by commas, got '${part}'`);
    const scheme = new URL(url).protocol;
    if (scheme !== "http:" && scheme !== "https:") throw new SettingsError(`${name}: the URL of ${kind} must be http or https, got '${url}'`);
    out[kind] = url;
  }
  return out;
};

export const SETTINGS: Spec[] = [
  { key: "port", flag: "port", env: "PORT", default: "8080", help: "Port of the data plane (event calls) and, without --api-port, of every API.", parse: int(0, 65535) },
  { key: "host", flag: "host", env: "HOST", default: "0.0.0.0", help: "Address to listen on.", parse: nonEmpty },
  { key: "apiPort", flag: "api-port", env: "API_PORT", help: "Serve the regulation, test, definition and control-plane APIs on their own port (the spec's {api_url}).", parse: int(0, 65535) },
  { key: "dataDir", flag: "data-dir", env: "SLUICE_DATA_DIR", default: "./data", help: "Folder of the SQLite database.", parse: nonEmpty },
  { key: "database", flag: "database", env: "SLUICE_DATABASE_URL", help: "Cluster mode: keep all state in this PostgreSQL (postgres://USER:PASSWORD@HOST:PORT/DB) instead of SQLite in --data-dir; any number of instances may share it.", parse: postgresUrl },
  { key: "databaseSchema", flag: "database-schema", env: "SLUICE_DATABASE_SCHEMA", help: "Schema of --database that holds Sluice's tables, created when missing (default: the server's default schema, usually public).", parse: schemaName },
  { key: "databasePool", flag: "database-pool", env: "SLUICE_DATABASE_POOL", default: "10", help: "Connections each instance keeps open to --database, besides one for LISTEN; PostgreSQL's max_connections must cover every instance's.", parse: int(2, 1000) },
  { key: "config", flag: "config", env: "SLUICE_CONFIG", help: "Workspace file (YAML or JSON, or RudderStack's workspaceConfig.json) applied at every start.", parse: nonEmpty },
  { key: "adminEmail", env: "SLUICE_ADMIN_EMAIL", default: "admin@localhost", help: "E-mail of the owner account created on first start.", parse: email },
  { key: "adminToken", env: "SLUICE_ADMIN_TOKEN", help: "Personal access token of the owner on first start, at least 24 characters (else one is generated and printed once).", parse: minLength(24) },
  { key: "logLevel", flag: "log-level", env: "LOG_LEVEL", default: "info", help: "debug, info, warn or error.", parse: oneOf("debug", "info", "warn", "error") },
  { key: "synchronous", flag: "sync", env: "SLUICE_SYNC", default: "FULL", help: "FULL: every commit is fsynced, an acknowledged event survives a power cut. NORMAL: survives a process crash, not a power cut; faster.", parse: oneOf("FULL", "NORMAL") },
  { key: "retentionHours", flag: "retention-hours", env: "SLUICE_RETENTION_HOURS", default: "24", help: "How long delivered events are kept (replay, debugging, deduplication window).", parse: positive },
  { key: "retryMaxHours", flag: "retry-max-hours", env: "SLUICE_RETRY_MAX_HOURS", default: "3", help: "A failing delivery is retried for at least this long...", parse: positive },
  { key: "retryMinAttempts", flag: "retry-min-attempts", env: "SLUICE_RETRY_MIN_ATTEMPTS", default: "5", help: "...and at least this many attempts, before it is aborted.", parse: int(1, 1000) },
  { key: "retryBackoffMs", flag: "retry-backoff-ms", env: "SLUICE_RETRY_BACKOFF_MS", default: "1000", help: "First retry delay; it doubles per attempt (with jitter) up to 10 minutes. A Retry-After answer wins.", parse: int(1, 3_600_000) },
  { key: "idleTimeoutSeconds", flag: "idle-timeout-seconds", env: "SLUICE_IDLE_TIMEOUT_SECONDS", default: "30", help: "A client connection that neither completes a request nor receives anything for this long is closed; it also bounds how long a client may take to send its headers and body (Bun's idleTimeout, at most 255).", parse: int(1, 255) },
  { key: "bodyTimeoutSeconds", flag: "body-timeout-seconds", env: "SLUICE_BODY_TIMEOUT_SECONDS", default: "30", help: "Time a client has to send a request's whole body (event calls, webhooks, API calls), counted from the end of its headers; past it the connection is closed.", parse: int(1, 3600) },
  { key: "maxSlowBodiesPerAddress", flag: "max-slow-bodies-per-address", env: "SLUICE_MAX_SLOW_BODIES_PER_ADDRESS", default: "256", help: "Request bodies one client address may have still arriving at once (a body sent with its headers, as SDKs send them, counts only for the moment it takes to arrive); past it a request is answered 429 unread. 0: no bound. Behind a proxy, its address is the client's.", parse: int(0, 1_000_000) },
  { key: "destinationTimeoutMs", flag: "destination-timeout-ms", env: "SLUICE_DESTINATION_TIMEOUT_MS", default: "30000", help: "Time limit of one request to a destination; a time-out is retried.", parse: int(1, 600_000) },
  { key: "destinationConcurrency", flag: "destination-concurrency", env: "SLUICE_DESTINATION_CONCURRENCY", default: "16", help: "Concurrent requests (and connections) per destination.", parse: int(1, 256) },
  { key: "transformMemoryMb", flag: "transform-memory-mb", env: "SLUICE_TRANSFORM_MEMORY_MB", default: "64", help: "Memory limit of a user transformation's sandbox.", parse: int(1, 4096) },
  { key: "transformTimeoutMs", flag: "transform-timeout-ms", env: "SLUICE_TRANSFORM_TIMEOUT_MS", default: "1000", help: "Time limit of one user transformation call.", parse: int(1, 600000) },
  { key: "transformWorkers", flag: "transform-workers", env: "SLUICE_TRANSFORM_WORKERS", default: "2", help: "Worker threads running user transformations.", parse: int(1, 64) },
  { key: "objectStorageBatchEvents", flag: "object-storage-batch-events", env: "SLUICE_OBJECT_STORAGE_BATCH_EVENTS", default: "10000", help: "Object storage: a file is closed and uploaded once it holds this many events...", parse: int(1, 10_000_000) },
  { key: "objectStorageBatchMb", flag: "object-storage-batch-mb", env: "SLUICE_OBJECT_STORAGE_BATCH_MB", default: "64", help: "...or this many MB of JSON before compression...", parse: int(1, 4096) },
  { key: "objectStorageBatchSeconds", flag: "object-storage-batch-seconds", env: "SLUICE_OBJECT_STORAGE_BATCH_SECONDS", default: "30", help: "...or once its first event is this many seconds old, whichever comes first.", parse: int(1, 86_400) },
  { key: "warehouseLoadShare", flag: "warehouse-load-share", env: "SLUICE_WAREHOUSE_LOAD_SHARE", default: "0.05", help: "While event intake keeps its thread busy, a warehouse load keeps PostgreSQL working on it this share of the time and pauses the rest, so that PostgreSQL's work does not slow event calls; 1: loads never pause.", parse: share },
  { key: "gcMemoryMb", flag: "gc-memory-mb", env: "SLUICE_GC_MEMORY_MB", default: "128", help: "Memory the garbage collector paces itself against (BUN_JSC_forceRAMSize, which wins when set); not a limit. 0: JavaScriptCore's own guess from the machine's memory.", parse: int(0, 1_048_576) },
  { key: "sessionHours", flag: "session-hours", env: "SLUICE_SESSION_HOURS", default: "12", help: "How long a dashboard sign-in lasts before the browser must sign in again.", parse: positive },
  { key: "dashboardDir", flag: "dashboard-dir", env: "SLUICE_DASHBOARD_DIR", help: "Serve the dashboard from this folder (the output of npm run build:dashboard) instead of the built-in one: for working on its pages.", parse: nonEmpty },
  { key: "backupDir", flag: "backup-dir", env: "SLUICE_BACKUP_DIR", help: "Make scheduled backups of the database into this folder, named sluice-YYYYMMDDTHHMMSSZ.db (none without it).", parse: nonEmpty },
  { key: "backupEveryHours", flag: "backup-every-hours", env: "SLUICE_BACKUP_EVERY_HOURS", default: "24", help: "Hours between scheduled backups (fractions allowed); the first one is made this long after start.", parse: positive },
  { key: "backupKeep", flag: "backup-keep", env: "SLUICE_BACKUP_KEEP", default: "7", help: "Scheduled backups kept in --backup-dir; older ones are deleted after each new one succeeds.", parse: int(1, 100_000) },
  { key: "allowDestinationHosts", flag: "allow-destination-hosts", env: "SLUICE_ALLOW_DESTINATION_HOSTS", help: "HOST,IP,CIDR...: addresses destinations may reach although they are refused by default (loopback, link-local and cloud metadata, unspecified, multicast, broadcast), e.g. 127.0.0.0/8,::1 for a service on this machine.", parse: hostList },
  { key: "denyDestinationHosts", flag: "deny-destination-hosts", env: "SLUICE_DENY_DESTINATION_HOSTS", help: "HOST,IP,CIDR...: more addresses destinations may never reach, e.g. 10.0.0.0/8; a deny wins over an allow.", parse: hostList },
  { key: "trustProxy", flag: "trust-proxy", env: "SLUICE_TRUST_PROXY", boolean: true, default: "false", help: "Believe X-Forwarded-Host, X-Forwarded-Proto and X-Forwarded-For (set only behind a reverse proxy that overwrites them).", parse: bool },
  { key: "metricsToken", flag: "metrics-token", env: "SLUICE_METRICS_TOKEN", help: "Require 'Authorization: Bearer <this>' on /metrics, at least 16 characters (open without it).", parse: minLength(16) },
  { key: "transformOutputMaxBytes", flag: "transform-output-max-kb", env: "SLUICE_TRANSFORM_OUTPUT_MAX_KB", default: "4096", help: "Largest output (KB of JSON) of a user transformation for one event; a larger one fails that event with an error naming the cap.", parse: (raw, name) => int(1, 1_048_576)(raw, name) * 1024 },
  { key: "catalog", flag: "catalog", env: "SLUICE_CATALOG", default: "true", help: "The event catalog: models of the events each source sends (type, name, volume per day, property paths and types), read from committed events off the intake path. false turns it off.", parse: bool },
  { key: "catalogMaxModels", flag: "catalog-max-models", env: "SLUICE_CATALOG_MAX_MODELS", default: "1000", help: "Event models (type and event name) the catalog keeps per source; events of further models are counted as overflow, not kept.", parse: int(1, 100_000) },
  { key: "catalogMaxPaths", flag: "catalog-max-paths", env: "SLUICE_CATALOG_MAX_PATHS", default: "500", help: "Property paths the catalog keeps per event model; occurrences of further paths are counted, not kept.", parse: int(1, 10_000) },
  { key: "catalogSamplePerSecond", flag: "catalog-sample-per-second", env: "SLUICE_CATALOG_SAMPLE_PER_SECOND", default: "1000", help: "Events a second (per process) whose properties the catalog reads; beyond it the rest are counted only. 0: counts only.", parse: int(0, 1_000_000) },
  { key: "catalogFlushSeconds", flag: "catalog-flush-seconds", env: "SLUICE_CATALOG_FLUSH_SECONDS", default: "5", help: "How often the catalog saves its counts (what the catalog API shows lags by about this much).", parse: int(1, 3600) },
  { key: "destinationBaseUrls", flag: "destination-base-url", env: "SLUICE_DESTINATION_BASE_URLS", help: "KIND=URL[,KIND=URL...]: send a destination kind's requests to another base URL (tests, proxies); for the Kafka kinds, its host and port name the bootstrap server.", parse: baseUrls },
];

/**
 * Reads flags (which win) and environment variables. Throws SettingsError with one
 * line naming the setting at fault.
 */
export function parseSettings(args: string[], env: Record<string, string | undefined>): Settings {
  const options: Record<string, { type: "string" | "boolean" }> = {};
  for (const s of SETTINGS) if (s.flag) options[s.flag] = { type: s.boolean ? "boolean" : "string" };
  let values: Record<string, string | undefined>;
  try {
    values = parseArgs({ args, options, strict: true, allowPositionals: false }).values as Record<string, string>;
  } catch (e) {
    throw new SettingsError((e as Error).message.split("\n")[0]);
  }
  const out: Record<string, unknown> = {};
  for (const s of SETTINGS) {
    const flagValue = s.flag ? (values[s.flag] as string | boolean | undefined) : undefined;
    const fromFlag = typeof flagValue === "boolean" ? String(flagValue) : flagValue;
    const fromEnv = s.env ? env[s.env] : undefined;
    const raw = fromFlag ?? (fromEnv !== undefined && fromEnv !== "" ? fromEnv : undefined) ?? s.default;
    const name = fromFlag !== undefined ? `--${s.flag}` : fromEnv ? s.env! : (s.flag ? `--${s.flag}` : s.env!);
    if (raw !== undefined) out[s.key] = s.parse(raw, name);
  }
  out.destinationBaseUrls ??= {};
  out.allowDestinationHosts ??= [];
  out.denyDestinationHosts ??= [];
  return out as unknown as Settings;
}

/**
 * The environment without Sluice's own variables: for a child process that gets its settings
 * as flags, so a variable its parent overrode with a flag cannot trip it.
 */
export function envWithoutSettings(env: Record<string, string | undefined>): Record<string, string> {
  const ours = new Set(SETTINGS.map((s) => s.env));
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => !ours.has(e[0]) && e[1] !== undefined));
}

export function settingsHelp(): string {
  return SETTINGS.map((s) => {
    const names = [s.flag && `--${s.flag}`, s.env].filter(Boolean).join(" / ");
    return `  ${names}${s.default ? ` (default ${s.default})` : ""}\n      ${s.help}`;
  }).join("\n");
}
