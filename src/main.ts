/**
 * The `sluice` command: serve, token create, backup, restore, migrate-to-postgres, check-config, import-transformations, --version, --help.
 * Settings → database + migrations → listen; signals for a graceful stop.
 */
import { redactUrl } from "./lib/postgres-url";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import type { ControlPlaneStore } from "./control-plane/store";
import { AppError } from "./lib/errors";
import { type Logger, createLogger } from "./lib/logger";
import { makePrivateDir } from "./lib/private-files";
import { backupDatabase, restoreDatabase } from "./ops/backup";
import { startBackupSchedule } from "./ops/backup-schedule";
import { type DataDirHold, holdDataDir } from "./ops/data-dir-hold";
import { type Settings, SettingsError, envWithoutSettings, parseSettings, settingsHelp } from "./settings";
import { VERSION } from "./version";

const HELP = `Sluice ${VERSION}: a self-hosted customer-event data plane (RudderStack-compatible HTTP API).

Usage:
  sluice [serve] [options]            serve event calls and the APIs
  sluice token create --email E       issue another personal access token for an account
  sluice backup --out FILE [--force]  write a checked copy of the database, also while a server runs
                                      (--force: replace FILE if it exists)
  sluice restore --from FILE          put a backup in place of the database; refused while a server
                                      holds the data dir (the previous database is kept beside it)
  sluice migrate-to-postgres --database URL [--database-schema NAME]
                                      copy the data dir, queued events included, into an empty
                                      PostgreSQL schema in one transaction (all or nothing); refused
                                      while a server holds the data dir. The data dir is left as it
                                      was. Also SLUICE_DATABASE_URL and SLUICE_DATABASE_SCHEMA
                                      (default schema: the server's search_path)
  sluice check-config FILE            say what a workspace file (Sluice's or RudderStack's
                                      workspaceConfig.json) will do: for each source, destination
                                      and transformation, whether it runs, is held and why, or has
                                      a config error; changes nothing. Exit 1 only for a file that
                                      cannot be read as a workspace
  sluice import-transformations FILE  store the code of RudderStack transformations and libraries
                                      from a JSON export of RudderStack's Transformations API (a
                                      list of {id, versionId, name, code, libraries?}, or
                                      {transformations: [...], libraries: [{name, importName?,
                                      code}]}): destinations held for want of that code receive
                                      again, also on a running server. Writes the data dir's
                                      database, or --database in cluster mode; all or nothing
  sluice --version                    print the version
  sluice --help                       print this help

backup, restore and migrate-to-postgres take --data-dir (or SLUICE_DATA_DIR) like serve.
Exit codes: 0 done, 1 failed (nothing was replaced or copied), 2 bad usage.

Options (flags win over environment variables):
${settingsHelp()}
`;

/**
 * On a machine of 16 GB or more JavaScriptCore lets its heap grow to about four times what
 * was live at the last full collection, and every batch in flight when a young collection runs
 * is promoted and waits for that full one: 50-80 MB of garbage under load, more as the
 * deduplication tables (which count as live) grow. Its only knob is the RAM size it believes
 * in, read from BUN_JSC_forceRAMSize when a process starts (Bun ignores --max-old-space-size),
 * so serve re-executes itself once, same pid, with it set.
 */
function paceGarbageCollector(settings: Settings, env: NodeJS.ProcessEnv, log: Logger) {
  if (settings.gcMemoryMb === 0 || env.BUN_JSC_forceRAMSize || process.platform !== "linux") return;
  try {
    const args = readFileSync("/proc/self/cmdline", "utf8").split("\0").slice(0, -1);
    process.execve!("/proc/self/exe", args, { ...env, BUN_JSC_forceRAMSize: String(settings.gcMemoryMb * 1024 * 1024) });
  } catch (e) {
    log.warn("could not restart with the garbage collector paced to --gc-memory-mb; running with JavaScriptCore's own pacing", { error: (e as Error).message });
  }
}

/** Longest time shutdown keeps the address open for requests in flight before it stops accepting. */
const DRAIN_MS = 5000;

function fail(message: string): never {
  process.stderr.write(`sluice: ${message}\n`);
  process.exit(2);
}

/** A command that was used correctly but could not do its work: exit code 1. */
function failed(e: unknown): never {
  process.stderr.write(`sluice: ${(e as Error)?.message ?? String(e)}\n`);
  process.exit(1);
}

/**
 * Takes the data dir for this process until it exits, so that restore refuses to swap the
 * database under it; a kill -9 leaves a file naming a dead pid, which holds nothing.
 */
function holdUntilExit(dataDir: string, command: string): DataDirHold {
  const hold = holdDataDir(dataDir, command);
  process.on("exit", () => hold.release());
  return hold;
}

/** How this program runs itself again: the compiled binary alone, or bun with this entry file. */
function selfCommand(): string[] {
  const compiled = Bun.main.startsWith("/$bunfs/") || /^[A-Z]:[\\/]~BUN[\\/]/i.test(Bun.main);
  return compiled ? [process.execPath] : [process.execPath, Bun.main];
}

/** Splits a command's own options (--out FILE, --force) from the settings flags in args. */
function takeOptions(args: string[], valued: string[], flags: string[] = []) {
  const values: Record<string, string> = {};
  const set = new Set<string>();
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const eq = a.indexOf("=");
    const name = a.startsWith("--") ? a.slice(2, eq > 0 ? eq : undefined) : "";
    if (valued.includes(name)) {
      const v = eq > 0 ? a.slice(eq + 1) : args[++i];
      if (!v) fail(`--${name} needs a value`);
      values[name] = v;
    } else if (flags.includes(name) && eq < 0) set.add(name);
    else rest.push(a);
  }
  return { values, flags: set, rest };
}

function settingsOrFail(args: string[]): Settings {
  try {
    return parseSettings(args, process.env);
  } catch (e) {
    if (e instanceof SettingsError) fail(e.message);
    throw e;
  }
}

async function serve(args: string[]) {
  let settings;
  try {
    settings = parseSettings(args, process.env);
  } catch (e) {
    if (e instanceof SettingsError) fail(e.message);
    throw e;
  }
  const log = createLogger(settings.logLevel);
  paceGarbageCollector(settings, process.env, log);
  if (settings.database && settings.backupDir) {
    fail("--backup-dir backs up the SQLite database; with --database back up PostgreSQL with its own tools (pg_dump, or your provider's backups)");
  }
  // After the restart above, which keeps the pid. In cluster mode the data dir holds nothing.
  if (!settings.database) {
    try {
      holdUntilExit(settings.dataDir, "serve");
    } catch (e) {
      if (e instanceof AppError) fail(e.message);
      throw e;
    }
  }
  // Nothing listens until the app is ready (database checked and migrated, workspace file
  // applied): a probe meets a refused connection before that, never an answer from a half-built
  // app. A stand-in answering 503 meanwhile was tried; handing its socket over to the app reset
  // connections that the kernel had queued on it.
  const where = settings.database ? { database: redactUrl(settings.database), schema: settings.databaseSchema } : { dataDir: settings.dataDir };
  log.info("starting", { ...where, version: VERSION });
  // Loaded only now, after the restart above: evaluating the app's modules (Elysia, drizzle,
  // the destinations) takes most of a start, and a restart would do it twice.
  const { createSluice } = await import("./app");
  const { WorkspaceFileError } = await import("./control-plane/workspace-file");
  const { DataDirRefused } = await import("../db");
  let sluice;
  try {
    sluice = await createSluice(settings, { log });
  } catch (e) {
    if (e instanceof WorkspaceFileError || e instanceof DataDirRefused) fail(e.message);
    fail(`could not start: ${(e as Error).message}`);
  }
  if (sluice.generatedToken) {
    // Printed once, to stderr, so it is not mixed into the JSON log stream.
    process.stderr.write(
      `\nSluice created the owner account ${settings.adminEmail}.\nIts personal access token (shown only this once):\n\n  ${sluice.generatedToken}\n\n`,
    );
  }
  // What the collector actually paces against (absent: JavaScriptCore's own guess), for the log.
  const forced = Number(process.env.BUN_JSC_forceRAMSize);
  const gcMemoryMb = forced > 0 ? Math.round(forced / 1024 / 1024) : undefined;
  const servers: Array<{ stop(force?: boolean): Promise<void> | void; readonly pendingRequests: number }> = [];
  try {
    if (settings.apiPort !== undefined) {
      const dp = sluice.dataPlane.listen({ port: settings.port, hostname: settings.host, idleTimeout: settings.idleTimeoutSeconds });
      const api = sluice.api.listen({ port: settings.apiPort, hostname: settings.host, idleTimeout: settings.idleTimeoutSeconds });
      servers.push(dp.server!, api.server!);
      log.info("listening", { dataPlane: `http://${settings.host}:${dp.server!.port}`, api: `http://${settings.host}:${api.server!.port}`, ...where, gcMemoryMb, version: VERSION });
    } else {
      const app = sluice.combined.listen({ port: settings.port, hostname: settings.host, idleTimeout: settings.idleTimeoutSeconds });
      servers.push(app.server!);
      log.info("listening", { url: `http://${settings.host}:${app.server!.port}`, ...where, gcMemoryMb, version: VERSION });
    }
  } catch (e) {
    fail(`could not listen on port ${settings.port}: ${(e as Error).message}`);
  }

  if (settings.backupDir) {
    const backups = startBackupSchedule({
      dataDir: settings.dataDir,
      dir: settings.backupDir,
      everyMs: settings.backupEveryHours * 3600_000,
      keep: settings.backupKeep,
      command: selfCommand(),
      env: envWithoutSettings(process.env),
      metrics: sluice.ctx.metrics,
      log,
    });
    // Registered before the shutdown below, so they run first: a backup's read transaction
    // would make the final checkpoint wait.
    process.on("SIGTERM", () => backups.stop());
    process.on("SIGINT", () => backups.stop());
    process.on("exit", () => backups.stop());
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down", { signal });
    const deadline = setTimeout(() => {
      log.error("shutdown took longer than 10 s; exiting");
      process.exit(1);
    }, 10_000);
    // Not ready from this moment: /ready answers 503. The address stays open while requests
    // are in flight (at most DRAIN_MS), so a load balancer reads that 503 rather than a refused
    // connection, and calls that still arrive are served as usual. Then stop accepting, let the
    // last requests finish (their commits flush), and close storage.
    sluice.readiness.beginShutdown();
    const drainUntil = Date.now() + DRAIN_MS;
    while (Date.now() < drainUntil && servers.some((s) => s.pendingRequests > 0)) await Bun.sleep(20);
    await Promise.all(servers.map((s) => s.stop(false)));
    await sluice.close();
    clearTimeout(deadline);
    log.info("stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

async function tokenCreate(args: string[]) {
  const i = args.indexOf("--email");
  const email = i >= 0 ? args[i + 1] : undefined;
  if (!email) fail("token create needs --email <account e-mail>");
  const rest = args.filter((_, j) => j !== i && j !== i + 1);
  let settings;
  try {
    settings = parseSettings(rest, process.env);
  } catch (e) {
    if (e instanceof SettingsError) fail(e.message);
    throw e;
  }
  const { createTokenForEmail } = await import("./control-plane/tokens");
  const { store, close } = await openControlPlaneStore(settings);
  try {
    const { token } = await createTokenForEmail(store, email, Date.now());
    process.stdout.write(`${token}\n`);
  } catch (e) {
    fail((e as Error).message);
  } finally {
    await close();
  }
}

/** The account store of `sluice token create`: PostgreSQL in cluster mode (every instance sees the token at once), else the data dir's SQLite. */
async function openControlPlaneStore(settings: Settings): Promise<{ store: ControlPlaneStore; close: () => Promise<void> | void }> {
  if (settings.database) {
    const { openPostgres, closePostgres } = await import("../db/pg");
    const { PgControlPlaneStore } = await import("./storage/postgres/control-plane");
    try {
      const pg = await openPostgres(settings.database, { searchPath: settings.databaseSchema, max: 1, applicationName: "sluice token create" });
      return { store: new PgControlPlaneStore(pg), close: () => closePostgres(pg) };
    } catch (e) {
      failed(new Error(`cannot use PostgreSQL at ${redactUrl(settings.database)}: ${(e as Error).message}`));
    }
  }
  const { openDatabase } = await import("../db");
  const { SqliteControlPlaneStore } = await import("./storage/sqlite/control-plane");
  makePrivateDir(settings.dataDir);
  const db = openDatabase(join(settings.dataDir, "sluice.db"), { synchronous: settings.synchronous });
  return { store: new SqliteControlPlaneStore(db), close: () => db.$client.close() };
}

/** backup and restore are for the SQLite file. */
function refuseWithDatabase(settings: Settings, command: string) {
  if (settings.database) fail(`${command} works on the SQLite data dir; with --database, back up and restore PostgreSQL with its own tools (pg_dump, pg_restore, or your provider's backups)`);
}

async function backupCommand(args: string[]) {
  const { values, flags, rest } = takeOptions(args, ["out"], ["force"]);
  if (!values.out) fail("backup needs --out <file>; see sluice --help");
  const settings = settingsOrFail(rest);
  refuseWithDatabase(settings, "backup");
  try {
    const r = backupDatabase({ dataDir: settings.dataDir, out: values.out, force: flags.has("force") });
    process.stdout.write(`backup written: ${r.file} (${r.bytes} bytes, ${r.events} events, integrity check ok, ${r.ms} ms)\n`);
  } catch (e) {
    failed(e);
  }
}

async function restoreCommand(args: string[]) {
  const { values, rest } = takeOptions(args, ["from"]);
  if (!values.from) fail("restore needs --from <backup file>; see sluice --help");
  const settings = settingsOrFail(rest);
  refuseWithDatabase(settings, "restore");
  try {
    holdUntilExit(settings.dataDir, "restore");
    const r = restoreDatabase({ from: values.from, dataDir: settings.dataDir });
    process.stdout.write(`restored ${r.file} from ${values.from} (${r.events} events, integrity check ok)\n`);
    if (r.previous) process.stdout.write(`the database it replaced is kept as ${r.previous}; delete it when no longer needed\n`);
  } catch (e) {
    failed(e);
  }
}

async function migrateToPostgresCommand(args: string[]) {
  const settings = settingsOrFail(args);
  const url = settings.database;
  if (!url) fail("migrate-to-postgres needs --database postgres://USER:PASSWORD@HOST:PORT/DB (or SLUICE_DATABASE_URL); see sluice --help");
  const schema = settings.databaseSchema;
  const { formatMigrationSummary, migrateToPostgres } = await import("./ops/migrate-to-postgres");
  try {
    const r = await migrateToPostgres({
      dataDir: settings.dataDir,
      url,
      schema,
      // Progress to stderr: the summary on stdout is printed only once the copy is committed.
      onProgress: (table, rows) => process.stderr.write(`copied ${table}: ${rows} rows (not committed yet)\n`),
    });
    process.stdout.write(formatMigrationSummary(r, settings.dataDir));
  } catch (e) {
    failed(e);
  }
}

async function checkConfigCommand(args: string[]) {
  const [file, ...extra] = args;
  if (!file || file.startsWith("-") || extra.length) fail("usage: sluice check-config FILE");
  const { WorkspaceFileError, parseWorkspaceText, transformationFilesBeside } = await import("./control-plane/workspace-file");
  const { checkWorkspace, formatWorkspaceCheck } = await import("./control-plane/workspace-check");
  try {
    const doc = parseWorkspaceText(readFileSync(file, "utf8"), file);
    process.stdout.write(formatWorkspaceCheck(file, checkWorkspace(doc, { file, transformationFiles: transformationFilesBeside(file) })));
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (code === "ENOENT" || code === "EISDIR" || code === "EACCES") failed(new Error(`${file}: cannot be read (${code})`));
    if (e instanceof WorkspaceFileError) failed(e);
    throw e;
  }
}

async function importTransformationsCommand(args: string[]) {
  const [file, ...extra] = args;
  if (!file || file.startsWith("-")) fail("usage: sluice import-transformations FILE [--data-dir DIR | --database URL]");
  const settings = settingsOrFail(extra);
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    failed(new Error(typeof code === "string" ? `${file}: cannot be read (${code})` : `${file}: not valid JSON: ${(e as Error).message}`));
  }
  const { importTransformations, formatImportSummary } = await import("./transformations/rudderstack-import");
  const { store, close } = await openControlPlaneStore(settings);
  try {
    const workspace = await store.firstWorkspace();
    if (!workspace) failed(new Error("this database has no workspace yet: start the server once first"));
    const log = createLogger("warn", {}, (line) => process.stderr.write(line + "\n"));
    // A command's context: no config caches to refresh here. The write reaches a running server
    // by itself (SQLite: config_epoch, which it polls; PostgreSQL: the 'config' epoch).
    const ctx = { controlPlane: store, config: { written() {} }, log, now: () => Date.now(), workspaceId: workspace.id } as unknown as import("./control-plane/context").ScopedContext;
    process.stdout.write(formatImportSummary(file, await importTransformations(ctx, doc)));
  } catch (e) {
    if (e instanceof AppError) failed(new Error(`${file}: ${e.message}`));
    throw e;
  } finally {
    await close();
  }
}

const argv = process.argv.slice(2);
const [cmd, ...rest] = argv;
if (cmd === "--version" || cmd === "-v" || cmd === "version") {
  process.stdout.write(`sluice ${VERSION}\n`);
} else if (cmd === "--help" || cmd === "-h" || cmd === "help") {
  process.stdout.write(HELP);
} else if (cmd === "token") {
  if (rest[0] !== "create") fail("usage: sluice token create --email <account e-mail>");
  await tokenCreate(rest.slice(1));
} else if (cmd === "backup") {
  await backupCommand(rest);
} else if (cmd === "restore") {
  await restoreCommand(rest);
} else if (cmd === "migrate-to-postgres") {
  await migrateToPostgresCommand(rest);
} else if (cmd === "check-config") {
  await checkConfigCommand(rest);
} else if (cmd === "import-transformations") {
  await importTransformationsCommand(rest);
} else if (cmd === "serve") {
  await serve(rest);
} else if (cmd === undefined || cmd.startsWith("--")) {
  await serve(argv);
} else {
  fail(`unknown command '${cmd}'; see sluice --help`);
}
