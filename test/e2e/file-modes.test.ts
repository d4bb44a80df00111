/**
 * Files are private: whatever the umask Sluice starts with, its data dir is 0700 and the
 * database, its side files and every backup 0600; a data dir an older Sluice left open is
 * warned about, and the database files in it are tightened. Real processes on real files.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { ADMIN_TOKEN, type SluiceProcess, cleanup, createSource, onPostgres, sendEvent, spawnSluice, tempDir, waitFor } from "../support/helpers";

const ROOT = join(import.meta.dir, "../..");
const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

async function stop(p: SluiceProcess) {
  p.proc.kill("SIGTERM");
  await p.proc.exited;
}

/** The warn lines a process logged, parsed. */
const warnings = (p: SluiceProcess) =>
  p
    .output()
    .split("\n")
    .filter((l) => l.startsWith("{") && l.includes('"level":"warn"'))
    .map((l) => JSON.parse(l) as Record<string, any>);

// The child processes inherit the umask: 022, the common default, under which files come out
// 0644 and dirs 0755 unless Sluice says otherwise.
let umaskBefore: number;
beforeAll(() => {
  umaskBefore = process.umask(0o022);
});
afterAll(() => {
  process.umask(umaskBefore);
});

describe.skipIf(onPostgres)("file modes (SQLite data dir)", () => {
  test("under umask 022: a new data dir is 0700; sluice.db, -wal, -shm, `sluice backup`, scheduled backups and a restored database are 0600; nothing is warned about", async () => {
    const root = tempDir("sluice-modes-");
    // A path that does not exist yet: Sluice creates it (tempDir's own dir is already 0700).
    const dataDir = join(root, "data");
    const backupDir = join(root, "backups");
    const server = await spawnSluice({ dataDir, args: ["--backup-dir", backupDir, "--backup-every-hours", "0.0003", "--backup-keep", "2"] });
    try {
      const { writeKey } = await createSource(server.url);
      expect((await sendEvent(server.url, writeKey, "track", { userId: "u1", event: "Signed Up" })).status).toBe(200);
      const db = join(dataDir, "sluice.db");
      await waitFor(() => existsSync(`${db}-wal`) && existsSync(`${db}-shm`), { what: "the WAL and shared-memory files" });

      expect(mode(dataDir)).toBe("700");
      expect(mode(db)).toBe("600");
      expect(mode(`${db}-wal`)).toBe("600");
      expect(mode(`${db}-shm`)).toBe("600");
      expect(mode(join(dataDir, "sluice.pid"))).toBe("600");

      // `sluice backup`, a process of its own with the same umask.
      const out = join(root, "manual.db");
      const backup = Bun.spawn([process.execPath, join(ROOT, "src", "main.ts"), "backup", "--data-dir", dataDir, "--out", out], {
        cwd: ROOT,
        env: { ...process.env, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN },
        stdout: "pipe",
        stderr: "pipe",
      });
      expect(await backup.exited).toBe(0);
      expect(mode(out)).toBe("600");

      // A restore from a backup someone made 0644, into a new data dir: private on arrival.
      chmodSync(out, 0o644);
      const restored = join(root, "restored");
      const restore = Bun.spawn([process.execPath, join(ROOT, "src", "main.ts"), "restore", "--from", out, "--data-dir", restored], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
      expect(await restore.exited).toBe(0);
      expect(mode(restored)).toBe("700");
      expect(mode(join(restored, "sluice.db"))).toBe("600");

      // A scheduled backup (about one a second).
      const scheduled = await waitFor(() => readdirSync(backupDir).find((f) => /^sluice-\d{8}T\d{6}Z\.db$/.test(f)), { timeoutMs: 30_000, what: "a scheduled backup" });
      expect(mode(backupDir)).toBe("700");
      expect(mode(join(backupDir, scheduled))).toBe("600");

      expect(warnings(server).filter((w) => /other users/.test(w.msg))).toEqual([]);
    } finally {
      await stop(server);
      await cleanup(root);
    }
  }, 60_000);

  test("a data dir left 0755 with a 0644 database (an older Sluice): the files are made 0600 and a warn line names the dir and its mode", async () => {
    const root = tempDir("sluice-modes-");
    const dataDir = join(root, "data");
    mkdirSync(dataDir);
    chmodSync(dataDir, 0o755);
    const db = join(dataDir, "sluice.db");
    // A database as an older Sluice left it: WAL mode, 0644, its -wal and -shm too. They outlive
    // a crash; here a connection kept open keeps them (the last close would remove them).
    const old = new Database(db, { create: true });
    old.exec("PRAGMA journal_mode = WAL");
    old.exec("CREATE TABLE leftover (x)");
    for (const f of [db, `${db}-wal`, `${db}-shm`]) chmodSync(f, 0o644);
    const server = await spawnSluice({ dataDir });
    try {
      await waitFor(() => existsSync(`${db}-wal`) && existsSync(`${db}-shm`), { what: "the WAL and shared-memory files" });
      expect(mode(db)).toBe("600");
      expect(mode(`${db}-wal`)).toBe("600");
      expect(mode(`${db}-shm`)).toBe("600");

      const dirWarning = warnings(server).find((w) => w.dataDir === dataDir);
      expect(dirWarning).toMatchObject({ level: "warn", mode: "755" });
      expect(dirWarning!.msg).toContain("chmod 700");
      const fileWarning = warnings(server).find((w) => Array.isArray(w.files));
      for (const file of [db, `${db}-wal`, `${db}-shm`]) expect(fileWarning!.files).toContainEqual({ file, was: "644" });
      // The dir is the operator's: warned about, not changed.
      expect(mode(dataDir)).toBe("755");
    } finally {
      old.close();
      await stop(server);
      await cleanup(root);
    }
  }, 60_000);
});
