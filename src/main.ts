/**
 * The `sluice` command: serve, token create, --version, --help.
 * Settings → database + migrations → listen; signals for a graceful stop.
 */
import { join } from "node:path";
import { mkdirSync, readFileSync } from "node:fs";
import { type Logger, createLogger } from "./lib/logger";
import { type Settings, SettingsError, parseSettings, settingsHelp } from "./settings";
import { VERSION } from "./version";

const HELP = `Sluice ${VERSION}: a self-hosted customer-event data plane (RudderStack-compatible HTTP API).

Usage:
  sluice [serve] [options]            serve event calls and the APIs
  sluice token create --email E       issue another personal access token for an account
  sluice --version                    print the version
  sluice --help                       print this help

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

function fail(message: string): never {
  process.stderr.write(`sluice: ${message}\n`);
  process.exit(2);
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
  // Loaded only now, after the restart above: evaluating the app's modules (Elysia, drizzle,
  // the destinations) takes most of a start, and a restart would do it twice.
  const { createSluice } = await import("./app");
  const { WorkspaceFileError } = await import("./control-plane/workspace-file");
  let sluice;
  try {
    sluice = await createSluice(settings, { log });
  } catch (e) {
    if (e instanceof WorkspaceFileError) fail(e.message);
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
  const servers: Array<{ stop(force?: boolean): Promise<void> | void }> = [];
  try {
    if (settings.apiPort !== undefined) {
      const dp = sluice.dataPlane.listen({ port: settings.port, hostname: settings.host });
      const api = sluice.api.listen({ port: settings.apiPort, hostname: settings.host });
      servers.push(dp.server!, api.server!);
      log.info("listening", { dataPlane: `http://${settings.host}:${dp.server!.port}`, api: `http://${settings.host}:${api.server!.port}`, dataDir: settings.dataDir, gcMemoryMb, version: VERSION });
    } else {
      const app = sluice.combined.listen({ port: settings.port, hostname: settings.host });
      servers.push(app.server!);
      log.info("listening", { url: `http://${settings.host}:${app.server!.port}`, dataDir: settings.dataDir, gcMemoryMb, version: VERSION });
    }
  } catch (e) {
    fail(`could not listen on port ${settings.port}: ${(e as Error).message}`);
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
    // Stop accepting, let in-flight requests finish (their commits flush), then close storage.
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
  const { openDatabase } = await import("../db");
  const { createTokenForEmail } = await import("./control-plane/tokens");
  mkdirSync(settings.dataDir, { recursive: true });
  const db = openDatabase(join(settings.dataDir, "sluice.db"), { synchronous: settings.synchronous });
  try {
    const { token } = createTokenForEmail(db, email, Date.now());
    process.stdout.write(`${token}\n`);
  } catch (e) {
    fail((e as Error).message);
  } finally {
    db.$client.close();
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
} else if (cmd === "serve") {
  await serve(rest);
} else if (cmd === undefined || cmd.startsWith("--")) {
  await serve(argv);
} else {
  fail(`unknown command '${cmd}'; see sluice --help`);
}
