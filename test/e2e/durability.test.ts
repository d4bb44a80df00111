/**
 * Nothing acknowledged is lost: a real Sluice process takes concurrent event calls,
 * is killed with SIGKILL mid-stream, and every event that got a 200 is in the database.
 */
import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { join } from "node:path";
import { basic, cleanup, createSource, spawnSluice, waitFor } from "../support/helpers";

for (const sync of ["FULL", "NORMAL"]) test(`kill -9 during intake loses no acknowledged event (--sync ${sync})`, async () => {
  const server = await spawnSluice({ args: ["--sync", sync] });
  const { writeKey } = await createSource(server.url);
  const acked: string[] = [];
  let stop = false;
  let seq = 0;
  const sender = async (worker: number) => {
    while (!stop) {
      const ids = Array.from({ length: 10 }, () => `w${worker}-${seq++}`);
      try {
        const res = await fetch(`${server.url}/v1/batch`, {
          method: "POST",
          headers: { authorization: basic(writeKey), "content-type": "application/json" },
          body: JSON.stringify({ batch: ids.map((messageId) => ({ type: "track", userId: `u${worker}`, event: "E", messageId })) }),
        });
        if (res.status === 200 && (await res.text()) === "OK") acked.push(...ids);
      } catch {
        // The connection dies with the process: not acknowledged, so not owed.
      }
    }
  };
  const senders = Array.from({ length: 16 }, (_, i) => sender(i));
  await waitFor(() => acked.length >= 3000, { timeoutMs: 30_000, what: "3,000 acknowledged events" });
  server.proc.kill("SIGKILL");
  await server.proc.exited;
  stop = true;
  await Promise.all(senders);

  const db = new Database(join(server.dataDir, "sluice.db"));
  const stored = new Set((db.query("SELECT message_id FROM events").all() as any[]).map((r) => r.message_id));
  db.close();
  const lost = acked.filter((id) => !stored.has(id));
  expect(acked.length).toBeGreaterThanOrEqual(3000);
  expect(lost).toEqual([]);

  // And the server starts again on the same data.
  const again = await spawnSluice({ dataDir: server.dataDir, args: ["--sync", sync] });
  expect((await fetch(`${again.url}/health`)).status).toBe(200);
  again.proc.kill("SIGTERM");
  expect(await again.proc.exited).toBe(0);
  cleanup(server.dataDir);
});

test("under steady intake the WAL is checkpointed whole and started over, so its file stays bounded", async () => {
  const { startSluice } = await import("../support/helpers");
  const { statSync } = await import("node:fs");
  const s = await startSluice();
  const { writeKey } = await createSource(s.url);
  const restarts = async () => Number(/sluice_wal_restarts_total (\d+)/.exec(await (await fetch(`${s.url}/metrics`)).text())?.[1] ?? 0);
  const pad = "x".repeat(2000);
  const send = (round: number) =>
    Promise.all(
      Array.from({ length: 8 }, (_, c) =>
        fetch(`${s.url}/v1/batch`, {
          method: "POST",
          headers: { authorization: basic(writeKey), "content-type": "application/json" },
          body: JSON.stringify({ batch: Array.from({ length: 150 }, (_, i) => ({ type: "track", userId: `u${i}`, event: "E", properties: { pad, round, c } })) }),
        }),
      ),
    );
  // Written without pause until the WAL has started over twice: without restarts it would hold
  // everything written, more than the database file; with them, about a second of writes.
  const deadline = Date.now() + 40_000;
  for (let round = 0; (await restarts()) < 2; round++) {
    if (Date.now() > deadline) throw new Error(`no WAL restarts after ${round} rounds`);
    expect((await send(round)).every((r) => r.status === 200)).toBe(true);
  }
  const size = (f: string) => statSync(join(s.dataDir, f)).size;
  expect(size("sluice.db-wal")).toBeLessThan(size("sluice.db"));
  await s.stop();
  cleanup(s.dataDir);
}, 60_000);

test("a reader holding a transaction open in another process never holds intake up for long", async () => {
  const { startSluice } = await import("../support/helpers");
  const s = await startSluice();
  const { writeKey } = await createSource(s.url);
  // Another process's long read (here: this test's own connection) pins the WAL, so the
  // checkpoint's RESTART has to give up instead of holding intake's commits while it waits.
  const reader = new Database(join(s.dataDir, "sluice.db"));
  reader.exec("BEGIN");
  reader.query("SELECT count(*) FROM events").get();
  const pad = "x".repeat(2000);
  let worst = 0;
  let sent = 0;
  const until = Date.now() + 3000;
  while (Date.now() < until) {
    const t = performance.now();
    const res = await fetch(`${s.url}/v1/batch`, {
      method: "POST",
      headers: { authorization: basic(writeKey), "content-type": "application/json" },
      body: JSON.stringify({ batch: Array.from({ length: 150 }, (_, i) => ({ type: "track", userId: `u${i}`, event: "E", properties: { pad, sent } })) }),
    });
    expect(res.status).toBe(200);
    worst = Math.max(worst, performance.now() - t);
    sent++;
  }
  reader.exec("COMMIT");
  reader.close();
  // Enough was written for the WAL to pass the restart threshold many times over.
  expect(sent * 150 * 2000).toBeGreaterThan(16 * 1024 * 1024);
  expect(worst).toBeLessThan(1500);
  await s.stop();
  cleanup(s.dataDir);
}, 30_000);

test("a WAL that grew past its limit while a reader pinned it is cut back after the next restart", async () => {
  const { startSluice } = await import("../support/helpers");
  const { statSync } = await import("node:fs");
  const { WAL_FILE_LIMIT_BYTES } = await import("../../src/gateway/checkpoints");
  const s = await startSluice();
  const { writeKey } = await createSource(s.url);
  const walSize = () => statSync(join(s.dataDir, "sluice.db-wal")).size;
  const restarts = async () => Number(/sluice_wal_restarts_total (\d+)/.exec(await (await fetch(`${s.url}/metrics`)).text())?.[1] ?? 0);
  const pad = "x".repeat(4000);
  let round = 0;
  const send = async () => {
    const res = await fetch(`${s.url}/v1/batch`, {
      method: "POST",
      headers: { authorization: basic(writeKey), "content-type": "application/json" },
      body: JSON.stringify({ batch: Array.from({ length: 200 }, (_, i) => ({ type: "track", userId: `u${i}`, event: "E", properties: { pad, round } })) }),
    });
    expect(res.status).toBe(200);
    round++;
  };
  // The reader's snapshot keeps every frame in the WAL, as retention's deletes or a backup do.
  const reader = new Database(join(s.dataDir, "sluice.db"));
  reader.exec("BEGIN");
  reader.query("SELECT count(*) FROM events").get();
  const deadline = Date.now() + 40_000;
  while (walSize() < WAL_FILE_LIMIT_BYTES * 1.25) {
    if (Date.now() > deadline) throw new Error(`the WAL did not grow past its limit (${walSize()} bytes)`);
    await send();
  }
  const grown = walSize();
  reader.exec("COMMIT");
  reader.close();
  const before = await restarts();
  await waitFor(async () => (await send(), (await restarts()) > before && walSize() <= WAL_FILE_LIMIT_BYTES + 4 * 1024 * 1024), {
    timeoutMs: 20_000,
    what: `the WAL cut back from ${grown} bytes`,
  });
  await s.stop();
  cleanup(s.dataDir);
}, 70_000);
