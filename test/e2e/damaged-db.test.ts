/**
 * A damaged database is refused at start with how to restore a backup; Sluice never serves
 * from it and never starts empty in its place. Real files: a database written by Sluice with
 * events in it, then broken the ways disks and copies break them.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, existsSync, openSync, readFileSync, statSync, truncateSync, writeSync, closeSync } from "node:fs";
import { join } from "node:path";
import { basic, cleanup, createSource, spawnSluice, startSluice, tempDir } from "../support/helpers";

let original: string;
let originalDir: string;

beforeAll(async () => {
  // Written by this Sluice, with enough events to span many pages; stopped cleanly, so the
  // WAL is folded into the file and nothing else holds a copy of the pages.
  const s = await startSluice();
  const { writeKey } = await createSource(s.url);
  const pad = "x".repeat(1000);
  for (let round = 0; round < 10; round++) {
    const res = await fetch(`${s.url}/v1/batch`, {
      method: "POST",
      headers: { authorization: basic(writeKey), "content-type": "application/json" },
      body: JSON.stringify({ batch: Array.from({ length: 100 }, (_, i) => ({ type: "track", event: "E", userId: `u${i}`, properties: { pad, round } })) }),
    });
    expect(res.status).toBe(200);
  }
  await s.stop();
  originalDir = s.dataDir;
  original = join(originalDir, "sluice.db");
  expect(existsSync(`${original}-wal`) && statSync(`${original}-wal`).size > 0).toBe(false);
  expect(statSync(original).size).toBeGreaterThan(1024 * 1024);
});

afterAll(() => cleanup(originalDir));

/** A copy of the database in a data dir of its own, broken by `damage`. */
function damagedCopy(damage: (file: string) => void): { dir: string; file: string } {
  const dir = tempDir("sluice-damaged-");
  const file = join(dir, "sluice.db");
  copyFileSync(original, file);
  damage(file);
  return { dir, file };
}

async function start(dir: string) {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "../..", "src", "main.ts"), "serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", dir], {
    env: { ...process.env, SLUICE_ADMIN_TOKEN: "test-admin-token-0123456789" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout, stderr };
}

function expectRefused(result: { code: number; stdout: string; stderr: string }, dir: string) {
  expect(result.code).toBe(2);
  expect(result.stderr).toStartWith(`sluice: the database ${join(dir, "sluice.db")} is damaged (`);
  expect(result.stderr).toContain(`Sluice will not serve from it, nor start empty. Stop every Sluice using ${dir}, then restore the newest backup: sluice restore --from FILE --data-dir ${dir}\n`);
  // One line, and it never got as far as listening.
  expect(result.stderr.trim().split("\n")).toHaveLength(1);
  expect(result.stdout).not.toContain('"listening"');
}

test("the undamaged copy starts and serves (the refusals below come from the damage)", async () => {
  const { dir } = damagedCopy(() => {});
  const server = await spawnSluice({ dataDir: dir });
  expect((await fetch(`${server.url}/ready`)).status).toBe(200);
  server.proc.kill("SIGTERM");
  expect(await server.proc.exited).toBe(0);
  cleanup(dir);
});

test("pages overwritten in the middle of the file (not the header) → refused with how to restore, the file left as it was", async () => {
  const { dir, file } = damagedCopy((f) => {
    const size = statSync(f).size;
    const page = 16384;
    const at = Math.floor(size / 2 / page) * page;
    const fd = openSync(f, "r+");
    writeSync(fd, Buffer.alloc(2 * page, 0xab), 0, 2 * page, at);
    closeSync(fd);
  });
  const before = readFileSync(file);
  const result = await start(dir);
  expectRefused(result, dir);
  expect(readFileSync(file).equals(before)).toBe(true);
  cleanup(dir);
});

test("a file cut to half its length → refused", async () => {
  const { dir, file } = damagedCopy((f) => truncateSync(f, Math.floor(statSync(f).size / 2)));
  const before = readFileSync(file);
  expectRefused(await start(dir), dir);
  expect(readFileSync(file).equals(before)).toBe(true);
  cleanup(dir);
});

test("a file cut to nothing → refused, not taken for a new database", async () => {
  const { dir, file } = damagedCopy((f) => truncateSync(f, 0));
  const result = await start(dir);
  expectRefused(result, dir);
  expect(result.stderr).toContain("the file is empty (0 bytes)");
  expect(statSync(file).size).toBe(0);
  cleanup(dir);
});

test("a header that is not SQLite's → refused", async () => {
  const { dir } = damagedCopy((f) => {
    const fd = openSync(f, "r+");
    writeSync(fd, Buffer.from("this is not a database file at all"), 0, 34, 0);
    closeSync(fd);
  });
  expectRefused(await start(dir), dir);
  cleanup(dir);
});

