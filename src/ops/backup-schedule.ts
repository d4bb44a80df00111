/**
 * Scheduled backups of a serving Sluice: every --backup-every-hours a copy named
 * sluice-YYYYMMDDTHHMMSSZ.db in --backup-dir, keeping the newest --backup-keep of them.
 *
 * Each backup is `sluice backup` run as a child process of the server (the same binary, or
 * bun with the same entry file): the copy, its fsync and its integrity check, seconds of
 * disk work for a large database, run on no thread of the server; a crash or an
 * out-of-memory there cannot take the server down; the compiled binary needs no extra
 * worker entry point; and it is the very code path `sluice backup` tests. A process start
 * costs about 0.1 s, nothing at one backup an hour.
 *
 * Only files with that exact name pattern are ever deleted, and only after a backup
 * succeeded: a failing backup never thins out the good ones.
 */
import { readdirSync, statSync, unlinkSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Logger } from "../lib/logger";
import { Counter, Gauge, type Metrics } from "../lib/metrics";
import { makePrivateDir } from "../lib/private-files";
import { fileStamp } from "./backup";

const BACKUP_NAME = /^sluice-\d{8}T\d{6}Z\.db$/;
/** What a `sluice backup` killed by a stop leaves behind (backup.ts names it). */
const PARTIAL_NAME = /^\.sluice-\d{8}T\d{6}Z\.db\.partial-\d+$/;

export interface BackupScheduleOptions {
  dataDir: string;
  dir: string;
  everyMs: number;
  keep: number;
  /** How to run this program again: [binary] or [bun, entry file]. */
  command: string[];
  /** The child's environment (without Sluice's settings: it gets them as flags). */
  env: Record<string, string>;
  metrics: Metrics;
  log: Logger;
  now?: () => number;
}

export interface BackupSchedule {
  /** Stops the timer and kills a backup under way (its partial file is removed at the next start). */
  stop(): void;
}

/** The backups this feature wrote in `dir`, newest first. */
export function listBackups(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.filter((n) => BACKUP_NAME.test(n)).sort().reverse();
}

export function startBackupSchedule(opts: BackupScheduleOptions): BackupSchedule {
  const now = opts.now ?? Date.now;
  const dir = resolve(opts.dir);
  // The backups are 0600 (backup.ts); a new dir hides even their names.
  makePrivateDir(dir);
  for (const name of readdirSync(dir)) {
    if (PARTIAL_NAME.test(name)) {
      try {
        unlinkSync(join(dir, name));
      } catch {}
    }
  }
  const outcomes = opts.metrics.register(new Counter("sluice_backups_total", "Scheduled backups by outcome (success, failure)."));
  // Both series from the start, so an alert on the failure count sees a 0 before the first one.
  outcomes.inc({ outcome: "success" }, 0);
  outcomes.inc({ outcome: "failure" }, 0);
  let lastSuccessMs = 0;
  opts.metrics.register(
    new Gauge("sluice_backup_last_success_timestamp_seconds", "Unix time of the last scheduled backup that succeeded; 0 before the first.", () => lastSuccessMs / 1000),
  );
  const log = opts.log.child({ component: "backup" });

  let stopped = false;
  let timer: Timer | undefined;
  let child: ReturnType<typeof Bun.spawn> | undefined;

  const rotate = (): string[] => {
    const removed: string[] = [];
    for (const name of listBackups(dir).slice(opts.keep)) {
      try {
        unlinkSync(join(dir, name));
        removed.push(name);
      } catch (e) {
        log.warn("could not delete an old backup", { file: join(dir, name), error: (e as Error).message });
      }
    }
    return removed;
  };

  const runOnce = async () => {
    const started = now();
    const file = join(dir, `sluice-${fileStamp(started)}.db`);
    child = Bun.spawn([...opts.command, "backup", "--data-dir", opts.dataDir, "--out", file], {
      env: opts.env,
      stdin: "ignore",
      stdout: "ignore",
      stderr: "pipe",
    });
    const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr as ReadableStream).text()]);
    child = undefined;
    if (stopped) return;
    const ms = now() - started;
    if (code === 0) {
      outcomes.inc({ outcome: "success" });
      lastSuccessMs = now();
      const removed = rotate();
      log.info("backup written", { file, bytes: statSync(file).size, ms, removed });
    } else {
      outcomes.inc({ outcome: "failure" });
      log.error("backup failed", { file, ms, exitCode: code, error: stderr.trim().replace(/^sluice: /, "") });
    }
  };

  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(async () => {
      const started = now();
      try {
        await runOnce();
      } catch (e) {
        outcomes.inc({ outcome: "failure" });
        log.error("backup failed", { error: (e as Error).message });
      }
      // At least a second apart: backups are named to the second.
      schedule(Math.max(opts.everyMs - (now() - started), 1000 - (now() - started), 0));
    }, delayMs);
  };
  schedule(opts.everyMs);
  log.info("scheduled backups", { dir, everyHours: opts.everyMs / 3600_000, keep: opts.keep });

  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      child?.kill("SIGTERM");
    },
  };
}
