/**
 * Issue 23, point 1: backups while serving, scheduled backups, and restore. Every test drives
 * real Sluice processes (`bun src/main.ts`) over real SQLite files and real HTTP.
 */
import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { ADMIN_TOKEN, type SluiceProcess, api, basic, cleanup, createSource, spawnSluice, tempDir, waitFor } from "../support/helpers";

const ROOT = join(import.meta.dir, "../..");

/** Runs a `sluice` command to its end. */
async function sluice(...args: string[]) {
  const proc = Bun.spawn([process.execPath, join(ROOT, "src", "main.ts"), ...args], {
    cwd: ROOT,
    env: { ...process.env, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout, stderr };
}


async function stop(p: SluiceProcess, signal: "SIGTERM" | "SIGKILL" = "SIGTERM") {
  p.proc.kill(signal);
  await p.proc.exited;
}

function messageIds(file: string): Set<string> {
  const db = new Database(file, { readonly: true });
  try {
    return new Set((db.query("SELECT message_id FROM events").all() as Array<{ message_id: string }>).map((r) => r.message_id));
  } finally {
    db.close();
  }
}

function integrity(file: string): string {
  const db = new Database(file, { readonly: true });
  try {
    return (db.query("PRAGMA integrity_check").get() as { integrity_check: string }).integrity_check;
  } finally {
    db.close();
  }
}

/**
 * Overwrites three of the events table's own pages with zeros. Table pages, not just any pages
 * in the middle of the file: VACUUM INTO rebuilds indexes from the tables, so a file damaged
 * only in an index page copies cleanly, and where the middle of the file falls moves with
 * every migration.
 */
function damage(file: string) {
  const db = new Database(file, { readonly: true });
  let pageSize: number;
  let pages: number[];
  try {
    pageSize = (db.query("PRAGMA page_size").get() as { page_size: number }).page_size;
    pages = (db.query("SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' ORDER BY pageno").all() as Array<{ pageno: number }>).map((r) => r.pageno);
  } finally {
    db.close();
  }
  expect(pages.length).toBeGreaterThan(6);
  const fd = openSync(file, "r+");
  const zeros = Buffer.alloc(pageSize);
  const middle = Math.floor(pages.length / 2);
  for (const page of pages.slice(middle - 1, middle + 2)) writeSync(fd, zeros, 0, pageSize, (page - 1) * pageSize);
  closeSync(fd);
}

async function sendBatch(url: string, writeKey: string, ids: string[]) {
  return fetch(`${url}/v1/batch`, {
    method: "POST",
    headers: { authorization: basic(writeKey), "content-type": "application/json" },
    body: JSON.stringify({ batch: ids.map((messageId) => ({ type: "track", userId: `u-${messageId}`, event: "E", messageId, properties: { pad: "x".repeat(500) } })) }),
  });
}

const metric = (text: string, name: string) => Number(new RegExp(`^${name.replace(/[{}"]/g, "\\$&")} (\\S+)$`, "m").exec(text)?.[1] ?? NaN);

test("sluice --help lists backup and restore", async () => {
  const { code, stdout } = await sluice("--help");
  expect(code).toBe(0);
  expect(stdout).toContain("sluice backup --out FILE");
  expect(stdout).toContain("sluice restore --from FILE");
  expect(stdout).toContain("--backup-dir");
});

test("backup during load: every event acknowledged before `sluice backup` started is in the checked copy", async () => {
  const server = await spawnSluice();
  const { writeKey } = await createSource(server.url);
  const acked: string[] = [];
  let stopSending = false;
  let seq = 0;
  let backupRunning = false;
  let worstDuringBackup = 0;
  const sender = async (worker: number) => {
    while (!stopSending) {
      const ids = Array.from({ length: 20 }, () => `w${worker}-${seq++}`);
      const t = performance.now();
      try {
        const res = await sendBatch(server.url, writeKey, ids);
        if (res.status === 200 && (await res.text()) === "OK") acked.push(...ids);
      } catch {
        // A request that got no answer was not acknowledged: not owed.
      }
      if (backupRunning) worstDuringBackup = Math.max(worstDuringBackup, performance.now() - t);
    }
  };
  const senders = Array.from({ length: 8 }, (_, i) => sender(i));
  // Enough (some 15 MB) that the copy takes a while, with writes going on meanwhile.
  await waitFor(() => acked.length >= 20_000, { timeoutMs: 30_000, what: "20,000 acknowledged events" });

  const ackedBefore = [...acked];
  const out = join(tempDir("sluice-backup-"), "copy.db");
  backupRunning = true;
  const backup = await sluice("backup", "--data-dir", server.dataDir, "--out", out);
  backupRunning = false;
  const ackedDuring = acked.length - ackedBefore.length;
  stopSending = true;
  await Promise.all(senders);
  await stop(server);

  expect(backup.stderr).toBe("");
  expect(backup.code).toBe(0);
  expect(backup.stdout).toContain("integrity check ok");
  // The server kept taking events while the command ran, without long stalls.
  expect(ackedDuring).toBeGreaterThan(0);
  expect(worstDuringBackup).toBeLessThan(2000);
  const inCopy = messageIds(out);
  expect(ackedBefore.filter((id) => !inCopy.has(id))).toEqual([]);
  expect(integrity(out)).toBe("ok");
  // Only the checked file, no partial copy, is left beside it.
  expect(readdirSync(join(out, ".."))).toEqual(["copy.db"]);
  cleanup(server.dataDir);
  cleanup(join(out, ".."));
}, 60_000);

test("backup refuses to replace FILE without --force, replaces it with --force; bad usage exits 2", async () => {
  const server = await spawnSluice();
  const { writeKey } = await createSource(server.url);
  expect((await sendBatch(server.url, writeKey, ["a", "b"])).status).toBe(200);
  const dir = tempDir("sluice-backup-");
  const out = join(dir, "b.db");
  writeFileSync(out, "keep me");
  const refused = await sluice("backup", "--data-dir", server.dataDir, "--out", out);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain(`${out} already exists; pass --force`);
  expect(readFileSync(out, "utf8")).toBe("keep me");

  const forced = await sluice("backup", "--data-dir", server.dataDir, "--out", out, "--force");
  expect(forced.code).toBe(0);
  expect(messageIds(out)).toEqual(new Set(["a", "b"]));

  expect((await sluice("backup", "--data-dir", server.dataDir)).code).toBe(2);
  expect((await sluice("backup", "--data-dir", server.dataDir, "--out", join(dir, "c.db"), "--bogus")).code).toBe(2);
  const none = await sluice("backup", "--data-dir", join(dir, "nothing-here"), "--out", join(dir, "d.db"));
  expect(none.code).toBe(1);
  expect(none.stderr).toContain("there is no database to back up");
  await stop(server);
  cleanup(server.dataDir);
  cleanup(dir);
}, 30_000);

test("a damaged backup is refused by restore, and a damaged database by backup; nothing is replaced", async () => {
  const server = await spawnSluice();
  const { writeKey } = await createSource(server.url);
  for (let i = 0; i < 20; i++) expect((await sendBatch(server.url, writeKey, Array.from({ length: 50 }, (_, j) => `m${i}-${j}`))).status).toBe(200);
  const dir = tempDir("sluice-backup-");
  const good = join(dir, "good.db");
  expect((await sluice("backup", "--data-dir", server.dataDir, "--out", good)).code).toBe(0);
  await stop(server);
  const before = readFileSync(join(server.dataDir, "sluice.db"));

  const bad = join(dir, "bad.db");
  writeFileSync(bad, readFileSync(good));
  damage(bad);
  const refused = await sluice("restore", "--from", bad, "--data-dir", server.dataDir);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("failed its integrity check");
  expect(readFileSync(join(server.dataDir, "sluice.db")).equals(before)).toBe(true);
  // No temporary copy and no kept "previous" database: nothing happened.
  expect(readdirSync(server.dataDir).filter((f) => f.startsWith(".") || f.includes("before-restore"))).toEqual([]);

  const notSqlite = join(dir, "notes.txt");
  writeFileSync(notSqlite, "x".repeat(5000));
  const notDb = await sluice("restore", "--from", notSqlite, "--data-dir", server.dataDir);
  expect(notDb.code).toBe(1);
  expect(notDb.stderr).toContain("is not a SQLite database");

  // The damaged file as a data dir's database: the backup fails and writes no FILE.
  const damagedDir = tempDir("sluice-damaged-");
  writeFileSync(join(damagedDir, "sluice.db"), readFileSync(bad));
  const out = join(dir, "from-damaged.db");
  const failed = await sluice("backup", "--data-dir", damagedDir, "--out", out);
  expect(failed.code).toBe(1);
  expect(failed.stderr).toMatch(/malformed|integrity/);
  expect(readdirSync(dir).filter((f) => f.includes("from-damaged"))).toEqual([]);
  cleanup(server.dataDir);
  cleanup(damagedDir);
  cleanup(dir);
}, 30_000);

test("scheduled backups: a file per interval, only the newest --backup-keep remain, counted in /metrics and logged", async () => {
  const dir = tempDir("sluice-backups-");
  // Files this feature did not write are never deleted.
  writeFileSync(join(dir, "notes.txt"), "mine");
  writeFileSync(join(dir, "sluice-manual.db"), "mine");
  const server = await spawnSluice({ args: ["--backup-dir", dir, "--backup-every-hours", "0.0003", "--backup-keep", "2"] });
  const { writeKey } = await createSource(server.url);
  expect((await sendBatch(server.url, writeKey, ["scheduled-1"])).status).toBe(200);
  const written = () => [...server.output().matchAll(/"msg":"backup written".*?"file":"([^"]+)"/g)].map((m) => m[1].split("/").pop()!);
  const backups = () => readdirSync(dir).filter((f) => /^sluice-\d{8}T\d{6}Z\.db$/.test(f)).sort();
  // Between a backup's rename and the deletion of the oldest one there are keep + 1 files: poll
  // until a settled moment.
  await waitFor(
    () => {
      const w = written();
      return w.length >= 4 && JSON.stringify(backups()) === JSON.stringify(w.slice(-2).sort());
    },
    { timeoutMs: 30_000, what: "four scheduled backups, two kept" },
  );
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  expect(metric(metrics, 'sluice_backups_total{outcome="success"}')).toBeGreaterThanOrEqual(4);
  expect(metric(metrics, 'sluice_backups_total{outcome="failure"}')).toBe(0);
  const last = metric(metrics, "sluice_backup_last_success_timestamp_seconds");
  expect(Math.abs(Date.now() / 1000 - last)).toBeLessThan(30);
  for (const f of backups()) {
    expect(integrity(join(dir, f))).toBe("ok");
    expect(messageIds(join(dir, f)).has("scheduled-1")).toBe(true);
  }
  expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("mine");
  expect(readFileSync(join(dir, "sluice-manual.db"), "utf8")).toBe("mine");

  // A backup that cannot be written is counted and logged as a failure.
  rmSync(dir, { recursive: true, force: true });
  await waitFor(
    async () => metric(await (await fetch(`${server.url}/metrics`)).text(), 'sluice_backups_total{outcome="failure"}') >= 1,
    { timeoutMs: 15_000, what: "a failed backup to be counted" },
  );
  expect(server.output()).toContain('"msg":"backup failed"');
  await stop(server);
  expect(server.proc.exitCode).toBe(0);
  cleanup(server.dataDir);
}, 60_000);

test("restore is refused while a server holds the data dir (so is a second server), allowed after that server is killed with kill -9", async () => {
  const server = await spawnSluice();
  const { writeKey } = await createSource(server.url);
  expect((await sendBatch(server.url, writeKey, ["r1"])).status).toBe(200);
  const dir = tempDir("sluice-backup-");
  const copy = join(dir, "copy.db");
  expect((await sluice("backup", "--data-dir", server.dataDir, "--out", copy)).code).toBe(0);
  expect((await sendBatch(server.url, writeKey, ["r2"])).status).toBe(200);

  const refused = await sluice("restore", "--from", copy, "--data-dir", server.dataDir);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain(`held by a running Sluice (pid ${server.proc.pid}, serve`);
  const second = await sluice("serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", server.dataDir);
  expect(second.code).toBe(2);
  expect(second.stderr).toContain(`held by a running Sluice (pid ${server.proc.pid}`);
  expect((await fetch(`${server.url}/health`)).status).toBe(200);

  await stop(server, "SIGKILL");
  // The killed server's file is still there, naming a dead pid: it holds nothing.
  expect(existsSync(join(server.dataDir, "sluice.pid"))).toBe(true);
  // A process that has the database open without a sluice.pid (a server in another
  // container, a sqlite3 shell) holds it too.
  const other = new Database(join(server.dataDir, "sluice.db"));
  other.query("SELECT count(*) FROM events").get();
  const openElsewhere = await sluice("restore", "--from", copy, "--data-dir", server.dataDir);
  expect(openElsewhere.code).toBe(1);
  expect(openElsewhere.stderr).toContain("is open in another process");
  other.close();
  const restored = await sluice("restore", "--from", copy, "--data-dir", server.dataDir);
  expect(restored.stderr).toBe("");
  expect(restored.code).toBe(0);
  expect(messageIds(join(server.dataDir, "sluice.db"))).toEqual(new Set(["r1"]));
  // The replaced database is kept, with its WAL, and still holds r2.
  const kept = readdirSync(server.dataDir).find((f) => /^sluice\.db\.before-restore-\d{8}T\d{6}Z$/.test(f))!;
  expect(kept).toBeDefined();
  expect(messageIds(join(server.dataDir, kept)).has("r2")).toBe(true);
  expect(existsSync(join(server.dataDir, "sluice.db-wal"))).toBe(false);
  expect(existsSync(join(server.dataDir, "sluice.pid"))).toBe(false);

  const again = await spawnSluice({ dataDir: server.dataDir });
  const events = await api(again.url, "GET", "/health");
  expect(events.status).toBe(200);
  await stop(again);
  expect(again.proc.exitCode).toBe(0);
  // A clean stop gives the data dir back.
  expect(existsSync(join(server.dataDir, "sluice.pid"))).toBe(false);
  cleanup(server.dataDir);
  cleanup(dir);
}, 60_000);

test("a restored server delivers what was queued at backup time", async () => {
  // The destination answers 503 until after the backup (held, so no other process can take its
  // port meanwhile); the sink takes the port over after the restore.
  const down = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("down", { status: 503 }) });
  const port = down.port;
  const server = await spawnSluice({ args: ["--retry-backoff-ms", "200"] });
  const src = await createSource(server.url);
  const dst = await api(server.url, "POST", "/v2/destinations", {
    name: "hook",
    type: "WEBHOOK",
    config: { webhookUrl: `http://127.0.0.1:${port}/hook` },
    sourceIds: [src.id],
  });
  expect(dst.status).toBe(201);
  const ids = Array.from({ length: 30 }, (_, i) => `q-${i}`);
  expect((await sendBatch(server.url, src.writeKey, ids)).status).toBe(200);
  // Fanned out and tried at least once against the refusing destination: queued for a retry.
  const dbFile = join(server.dataDir, "sluice.db");
  await waitFor(
    () => {
      const db = new Database(dbFile, { readonly: true });
      try {
        return (db.query("SELECT count(*) AS n FROM deliveries WHERE state = 'retrying'").get() as { n: number }).n === ids.length;
      } finally {
        db.close();
      }
    },
    { timeoutMs: 15_000, what: "every delivery to be waiting for a retry" },
  );
  const dir = tempDir("sluice-backup-");
  const copy = join(dir, "queued.db");
  expect((await sluice("backup", "--data-dir", server.dataDir, "--out", copy)).code).toBe(0);
  await stop(server);
  await down.stop(true);

  const fresh = join(tempDir("sluice-restored-"), "data");
  const restored = await sluice("restore", "--from", copy, "--data-dir", fresh);
  expect(restored.code).toBe(0);
  expect(restored.stdout).not.toContain("kept as");
  const sink = Bun.serve({
    port,
    hostname: "127.0.0.1",
    async fetch(req) {
      received.push(((await req.json()) as { messageId: string }).messageId);
      return new Response("ok");
    },
  });
  const received: string[] = [];
  const again = await spawnSluice({ dataDir: fresh, args: ["--retry-backoff-ms", "200"] });
  await waitFor(() => ids.every((id) => received.includes(id)), { timeoutMs: 30_000, what: "every queued event at the sink" });
  await stop(again);
  sink.stop(true);
  cleanup(server.dataDir);
  cleanup(join(fresh, ".."));
  cleanup(dir);
}, 60_000);
