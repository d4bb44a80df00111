/**
 * Which process holds a data dir: `sluice.pid` in it, written by `serve` (and by `restore`
 * while it swaps the file) and removed when that process ends. A process killed with
 * kill -9 leaves the file behind, so a holder counts only while its pid is alive and, on
 * Linux, is still the same process (its start time in /proc matches: pids are reused).
 */
import { readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AppError } from "../lib/errors";
import { PRIVATE_FILE_MODE, makePrivateDir } from "../lib/private-files";

export const HOLD_FILE = "sluice.pid";

export interface Holder {
  pid: number;
  /** What the holder does: serve or restore. */
  command: string;
  since: string;
  /** Start time of the process in clock ticks since boot (/proc/PID/stat), where known. */
  startTicks?: number;
}

export interface DataDirHold {
  release(): void;
}

/** Field 22 of /proc/PID/stat, and whether the process is a zombie (dead, not yet reaped). */
function procStat(pid: number): { startTicks: number; zombie: boolean } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may contain spaces and parentheses: count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { startTicks: Number(fields[19]), zombie: fields[0] === "Z" };
  } catch {
    return undefined;
  }
}

function isAlive(holder: Holder): boolean {
  try {
    process.kill(holder.pid, 0);
  } catch (e) {
    // EPERM: it exists, under another user.
    if ((e as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const stat = procStat(holder.pid);
  if (!stat) return true;
  if (stat.zombie) return false;
  return holder.startTicks === undefined || stat.startTicks === holder.startTicks;
}

function readHolder(path: string): Holder | undefined {
  try {
    const h = JSON.parse(readFileSync(path, "utf8")) as Holder;
    return Number.isInteger(h.pid) && h.pid > 0 ? h : undefined;
  } catch {
    // Unreadable or half-written (the writer died mid-write): nobody holds the dir through it.
    return undefined;
  }
}

/** The live process holding the data dir, if any. */
export function dataDirHolder(dataDir: string): Holder | undefined {
  const h = readHolder(join(dataDir, HOLD_FILE));
  return h && h.pid !== process.pid && isAlive(h) ? h : undefined;
}

/**
 * Takes the data dir for this process, or throws CONFLICT naming the live process that
 * holds it. A file left by a dead process is taken over.
 */
export function holdDataDir(dataDir: string, command: string): DataDirHold {
  makePrivateDir(dataDir);
  const path = join(dataDir, HOLD_FILE);
  const me: Holder = { pid: process.pid, command, since: new Date().toISOString(), startTicks: procStat(process.pid)?.startTicks };
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(path, JSON.stringify(me) + "\n", { flag: "wx", mode: PRIVATE_FILE_MODE });
      break;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // A full disk must not keep Sluice from starting: it answers 503 and recovers once space
      // is freed (and a restore could not write there either). The empty file "wx" made goes.
      if (code === "ENOSPC" || code === "EDQUOT") {
        try {
          unlinkSync(path);
        } catch {}
        return { release() {} };
      }
      if (code !== "EEXIST" || attempt >= 3) throw e;
    }
    const holder = dataDirHolder(dataDir);
    if (holder) {
      throw new AppError(
        "CONFLICT",
        `the data dir ${dataDir} is held by a running Sluice (pid ${holder.pid}, ${holder.command} since ${holder.since}); stop it first`,
      );
    }
    try {
      unlinkSync(path);
    } catch {}
  }
  return {
    release() {
      // Only our own file: a process that took over after us must keep its hold.
      if (readHolder(path)?.pid !== process.pid) return;
      try {
        unlinkSync(path);
      } catch {}
    },
  };
}
