/**
 * Issue 45, "SQLite: the process is killed during a checkpoint, a backup and a retention sweep".
 *
 * One data dir, one real Sluice process after another (`bun src/main.ts serve`), each killed
 * with SIGKILL at a random moment while events keep arriving and, by turns:
 *
 * - checkpoint: the WAL checkpoints (src/gateway/checkpoints.ts: PASSIVE copies four times a
 *   second, and once the WAL holds 8 MB, more passes, intake held, RESTART). Padded events fill
 *   the WAL fast; the kill comes 0-500 ms after a restart under load, about half a cycle;
 * - backup: a scheduled backup (src/ops/backup-schedule.ts, `sluice backup` as a child process)
 *   every second; the kill comes 0-500 ms after its partial copy appeared. Every other time the
 *   backup process is killed too (a container or cgroup dying whole), else it is left to finish
 *   on its own beside the next server;
 * - retention: a retention window of about a second (src/pipeline/retention.ts sweeps every
 *   second), started on what the runs before left (their window was the default 24 hours), so
 *   the first sweep has thousands to tens of thousands of deliveries and events to delete, in
 *   slices; the kill comes just after a sweep was seen deleting.
 *
 * Two kinds of events, both counted when they got a 200 "OK": tracked events, delivered to a
 * webhook sink, and filler events ("Filler", on the destination's deny list), which the
 * processor records as filtered deliveries, owed to nobody: they make the sweeps big without an
 * HTTP request each. The sink keeps one tracked event in 20 waiting (503) until a retention run
 * is over, so every sweep meets old events that are not delivered yet.
 *
 * After every restart the server must open the database and answer /health and /ready; every
 * acknowledged tracked event must still be stored or have reached the sink (retention may remove
 * an event only once it was delivered); every filler event acknowledged since the last server
 * with a short retention window must still be stored (no other server could remove it). At the
 * end every tracked event must have reached the sink, and the database and every backup kept
 * must pass PRAGMA integrity_check.
 */
import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { type SluiceProcess, api, basic, cleanup, createSource, onPostgres, spawnSluice, startSink, tempDir, waitFor } from "../support/helpers";

type Case = "checkpoint" | "backup" | "retention";
/** 7 + 7 + 6 kills, the cases taking turns so each retention run finds the others' leftovers. */
const RUNS: Case[] = Array.from({ length: 20 }, (_, i) => (["checkpoint", "backup", "retention"] as const)[i % 3]);
/** Acknowledged but not yet at the sink: the senders wait above this, so delivery keeps up. */
const MAX_OWED = 3000;
/**
 * One tracked event in 20 is refused by the sink (503, Retry-After: 1) until a server with a
 * short retention window has swept and been killed: every sweep meets events older than the
 * window whose delivery is still waiting for a retry, and must leave them.
 */
const held = (id: string) => Number(/-(\d+)$/.exec(id)?.[1]) % 20 === 0;
const runOf = (id: string) => Number(/^r(\d+)-/.exec(id)?.[1]);

const random = (min: number, max: number) => min + Math.floor(Math.random() * (max - min));

/** Whether a process is running (a zombie is not). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

// SQLite only: its files, WAL and backups are what is at stake.
test.skipIf(onPostgres)("SIGKILL during checkpoints, backups and retention sweeps, 20 times on one data dir: it always opens, and no acknowledged event is lost", async () => {
  const started = performance.now();
  const dataDir = tempDir("sluice-kill-maint-");
  const backupDir = tempDir("sluice-kill-maint-backups-");
  const dbFile = join(dataDir, "sluice.db");
  const delivered = new Set<string>();
  /** The sink refuses one tracked event in 20 of the runs after this one (see `held`). */
  let releasedUpTo = -1;
  const sink = startSink((req) => {
    // The bodies are padded: keep only their messageIds.
    sink.received.length = 0;
    const id = req.body?.messageId;
    if (typeof id !== "string") return new Response("no messageId", { status: 400 });
    if (held(id) && runOf(id) > releasedUpTo) return new Response("later", { status: 503, headers: { "retry-after": "1" } });
    delivered.add(id);
    return new Response("ok");
  });
  const acked: string[] = [];
  const fillerAcked: string[] = [];
  /** Filler events from this index on were acknowledged after the last server with a short retention window died. */
  let fillerOwedFrom = 0;
  const orphans: number[] = [];
  const summary: string[] = [];
  const baseArgs = ["--retry-backoff-ms", "100", "--destination-concurrency", "16"];
  const argsFor = (c: Case | "final") =>
    c === "backup"
      ? [...baseArgs, "--backup-dir", backupDir, "--backup-every-hours", "0.0002", "--backup-keep", "2"]
      : c === "retention"
        ? [...baseArgs, "--retention-hours", "0.0003"]
        : baseArgs;

  /** The server answers /health and /ready, and no acknowledged event is missing. */
  const checkNothingLost = async (p: SluiceProcess, after: string, retention: boolean) => {
    await waitFor(async () => (await fetch(`${p.url}/ready`)).status === 200, { timeoutMs: 15_000, what: `/ready after ${after}` });
    const health = await fetch(`${p.url}/health`);
    expect(health.status).toBe(200);
    // Read first, then look at the sink: an event deleted after this read was read, and one
    // deleted before it had reached the sink before its delivery was marked succeeded.
    const db = new Database(dbFile, { readonly: true });
    let stored: Set<string>;
    try {
      stored = new Set((db.query("SELECT message_id AS m FROM events").all() as Array<{ m: string }>).map((r) => r.m));
    } finally {
      db.close();
    }
    const missing = acked.filter((id) => !stored.has(id) && !delivered.has(id));
    // A server with a short window may already have swept the filler: checked on the others.
    const fillerMissing = retention ? [] : fillerAcked.slice(fillerOwedFrom).filter((id) => !stored.has(id));
    expect({ after, missing: missing.slice(0, 20), count: missing.length, fillerMissing: fillerMissing.slice(0, 20), fillerCount: fillerMissing.length }).toEqual({
      after,
      missing: [],
      count: 0,
      fillerMissing: [],
      fillerCount: 0,
    });
    return stored.size;
  };

  /** Tracked senders (backed off while delivery lags) and a filler sender; `pad` bytes more per event. */
  const startLoad = (url: string, writeKey: string, run: number, pad: number) => {
    let stopped = false;
    let seq = 0;
    const send = async (ids: string[], event: string, into: string[]) => {
      try {
        const res = await fetch(`${url}/v1/batch`, {
          method: "POST",
          headers: { authorization: basic(writeKey), "content-type": "application/json" },
          body: JSON.stringify({ batch: ids.map((messageId) => ({ type: "track", userId: `u-${messageId}`, event, messageId, properties: { pad: "x".repeat(pad) } })) }),
        });
        if (res.status === 200 && (await res.text()) === "OK") into.push(...ids);
      } catch {
        // No answer (the process died): not acknowledged, not owed.
      }
    };
    const tracked = async (w: number) => {
      while (!stopped) {
        // Poll, do not pile up: delivery is the slow part (one HTTP request per event).
        if (acked.length - delivered.size > MAX_OWED) await Bun.sleep(5);
        else await send(Array.from({ length: 25 }, () => `r${run}-w${w}-${seq++}`), "E", acked);
      }
    };
    const filler = async () => {
      while (!stopped) await send(Array.from({ length: 200 }, () => `f${run}-${seq++}`), "Filler", fillerAcked);
    };
    const workers = [tracked(0), tracked(1), tracked(2), filler()];
    return async () => {
      stopped = true;
      await Promise.all(workers);
    };
  };

  const restarts = async (url: string) => Number(/^sluice_wal_restarts_total (\d+)$/m.exec(await (await fetch(`${url}/metrics`)).text())?.[1] ?? 0);
  const purgeLines = (p: SluiceProcess) => [...p.output().matchAll(/"msg":"retention purge".*?"deliveries":(\d+),"events":(\d+)/g)];

  const spawned: SluiceProcess[] = [];
  const start = async (c: Case | "final") => {
    const p = await spawnSluice({ dataDir, args: argsFor(c) });
    spawned.push(p);
    return p;
  };
  /** Every backup process seen; those left running by a killed server are `orphans`. */
  const backupPids: number[] = [];
  let stopLoad: (() => Promise<void>) | undefined;

  try {
    // First start: a source and a webhook destination to the sink that filters the filler out.
    let server = await start("checkpoint");
    const source = await createSource(server.url);
    const dest = await api(server.url, "POST", "/v2/destinations", {
      name: "sink",
      type: "WEBHOOK",
      config: { webhookUrl: `${sink.url}/hook`, eventFilteringOption: "blacklistedEvents", blacklistedEvents: [{ eventName: "Filler" }] },
      sourceIds: [source.id],
    });
    expect(dest.status).toBe(201);
    const destinationId = dest.json.id as string;

    for (const [run, kind] of RUNS.entries()) {
      if (run > 0) {
        server = await start(kind);
        await checkNothingLost(server, `restart ${run} (${kind})`, kind === "retention");
      }
      const before = { acked: acked.length, filler: fillerAcked.length };
      const r0 = kind === "checkpoint" ? await restarts(server.url) : 0;
      stopLoad = startLoad(server.url, source.writeKey, run, kind === "checkpoint" ? 1000 : 100);
      let note = "";
      if (kind === "checkpoint") {
        // Under this load the WAL restarts about every second, with PASSIVE copies between.
        await waitFor(async () => acked.length - before.acked >= 200 && (await restarts(server.url)) > r0, { timeoutMs: 20_000, what: `a WAL restart under load in run ${run}` });
        const delay = random(0, 500);
        await Bun.sleep(delay);
        note = `${delay} ms after a WAL restart under load (${(await restarts(server.url).catch(() => NaN)) - r0} since the load began)`;
      } else if (kind === "backup") {
        const partial = await waitFor(
          () => readdirSync(backupDir).map((f) => /^\.sluice-\d{8}T\d{6}Z\.db\.partial-(\d+)$/.exec(f)).find((m) => m && alive(Number(m[1]))),
          { timeoutMs: 20_000, what: `a scheduled backup under way in run ${run}` },
        );
        const child = Number(partial[1]);
        backupPids.push(child);
        const delay = random(0, 500);
        await Bun.sleep(delay);
        const running = alive(child) && readdirSync(backupDir).includes(partial[0]);
        const killChild = run % 2 === 0;
        if (killChild && alive(child) && readFileSync(`/proc/${child}/cmdline`, "utf8").includes("backup")) process.kill(child, "SIGKILL");
        else orphans.push(child);
        note = `${delay} ms after its copy began, ${running ? "copy under way" : "copy already done"}, backup process ${killChild ? "killed too" : "left running"}`;
      } else {
        // A sweep deletes in slices of 5,000, each committed: the first one takes the oldest
        // filtered or succeeded delivery, so the smallest id of either goes up. Every other time the first sweep (the big one, with
        // what the runs before left) is let finish and the kill comes in the second, which has
        // the last second's deliveries to delete: killed in the first sweep every time, the
        // sweeps would never get to the events, and the database would only grow.
        const inSecond = Math.floor(run / 3) % 2 === 1;
        const db = new Database(dbFile, { readonly: true });
        const oldest = db.query("SELECT min(id) AS m FROM deliveries WHERE destination_id = ? AND state = ?");
        const mins = () => ["filtered", "succeeded"].map((state) => (oldest.get(destinationId, state) as { m: number | null }).m ?? Number.POSITIVE_INFINITY);
        let linesBefore = purgeLines(server).length;
        try {
          if (inSecond) {
            await waitFor(() => purgeLines(server).length > linesBefore, { timeoutMs: 20_000, what: `the first retention sweep in run ${run}` });
            linesBefore = purgeLines(server).length;
          }
          // Up, not just changed: a late success of an older delivery lowers its state's minimum.
          const first = mins();
          await waitFor(() => mins().some((m, i) => m > first[i]!), { timeoutMs: 20_000, what: `a retention sweep in run ${run}` });
        } finally {
          db.close();
        }
        // A sweep of some 20,000 rows takes about 100 ms on an idle machine.
        const delay = random(0, inSecond ? 40 : 100);
        await Bun.sleep(delay);
        const finished = purgeLines(server).length > linesBefore;
        note = `${delay} ms after the ${inSecond ? "second" : "first"} sweep was seen deleting, ${finished ? "after its deletes (vacuum or idle)" : "before its deletes were done"}`;
      }
      server.proc.kill("SIGKILL");
      await server.proc.exited;
      await stopLoad();
      stopLoad = undefined;
      if (kind === "retention") {
        fillerOwedFrom = fillerAcked.length;
        releasedUpTo = run;
      }
      const sweeps = purgeLines(server).map((m) => `${m[1]}/${m[2]}`);
      summary.push(
        `run ${run} ${kind}: +${acked.length - before.acked} tracked, +${fillerAcked.length - before.filler} filler, killed ${note}${kind === "retention" ? `; sweeps logged (deliveries/events): ${sweeps.join(" ") || "none"}` : ""}`,
      );
    }

    // The 21st start: open, nothing lost, and every tracked event reaches the sink in the end.
    releasedUpTo = RUNS.length;
    server = await start("final");
    const storedAtEnd = await checkNothingLost(server, "the last kill", false);
    await waitFor(() => acked.every((id) => delivered.has(id)), { timeoutMs: 40_000, what: "every acknowledged tracked event at the sink" });
    server.proc.kill("SIGTERM");
    expect(await server.proc.exited).toBe(0);

    // Backups left running by a killed server end by themselves.
    await waitFor(() => orphans.every((pid) => !alive(pid)), { timeoutMs: 30_000, what: "the orphaned backup processes to end" });
    // Nothing has the database open any more.
    const db = new Database(dbFile, { readwrite: true, create: false });
    try {
      expect((db.query("PRAGMA integrity_check").get() as { integrity_check: string }).integrity_check).toBe("ok");
    } finally {
      db.close();
    }
    // A file with a backup's name is always a whole backup, kills or not.
    const backups = readdirSync(backupDir).filter((f) => /^sluice-\d{8}T\d{6}Z\.db$/.test(f));
    for (const f of backups) {
      const b = new Database(join(backupDir, f), { readonly: true });
      try {
        expect((b.query("PRAGMA integrity_check").get() as { integrity_check: string }).integrity_check).toBe("ok");
      } finally {
        b.close();
      }
    }
    console.log(
      [
        ...summary,
        `tracked ${acked.length} (delivered ${delivered.size}), filler ${fillerAcked.length}, events stored after the last kill ${storedAtEnd}, backups kept ${backups.length}, ${((performance.now() - started) / 1000).toFixed(1)} s`,
      ].join("\n"),
    );
  } finally {
    // A failed check leaves nothing running: the server, and backups it left behind.
    for (const p of spawned) if (p.proc.exitCode === null && p.proc.signalCode === null) p.proc.kill("SIGKILL");
    await stopLoad?.();
    for (const pid of backupPids) {
      try {
        if (alive(pid) && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(dataDir)) process.kill(pid, "SIGKILL");
      } catch {}
    }
    sink.stop();
    await cleanup(dataDir);
    await cleanup(backupDir);
  }
}, 150_000);
