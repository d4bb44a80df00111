/**
 * Warehouse loader benchmark, in two parts. Writes the run into docs/benchmarks/warehouse.md
 * and its line into BENCHMARKS.md.
 *
 * 1. The loader: events of 20 names with 30 properties each become staged rows (`eventRows`
 *    and the staged text, as the stager writes them); the load thread's work on them (grouping,
 *    `PostgresWarehouse.load`) writes them into the local PostgreSQL, several rounds into one
 *    fresh schema (dropped after). In the same run, a baseline: the same rows, already encoded,
 *    sent by plain COPY into tables of the same columns, without a key and with the loader's key
 *    on id (no merge), so the loader's rate is also a ratio to what PostgreSQL itself does.
 * 2. The binary: dist/sluice with a POSTGRES destination and `--staged` events staged on its
 *    disk. Each turn has a load alone (POST /sync; its rate from its recorded start and finish:
 *    the goal's figure) next to a plain COPY of one round's rows, so that the load's rate is also
 *    a ratio to what PostgreSQL does in the same minute; wrk single track calls (to another
 *    source) with the server idle, and the same wrk during a load, so intake's rate during a
 *    load is a ratio to the same server idle.
 *    Then `--split-turns` more turns (idle and during a load) with PostgreSQL pinned to one CPU
 *    and Sluice and wrk to the other: the warehouse's own work off intake's CPU, as when it runs
 *    on another host, so what is left is what the load costs Sluice itself. Needs taskset and
 *    the right to pin PostgreSQL's processes (root, or its user); otherwise that part is skipped.
 *
 *   npm run bench:warehouse [-- --events 50000 --rounds 5 --staged 100000 --turns 4 --split-turns 4 --no-binary --no-record]
 *
 * PostgreSQL: PGHOST/PGPORT/PGUSER/PGDATABASE, default 127.0.0.1:5432, user postgres, database test.
 */
import { SQL } from "bun";
import { PostgresWarehouse } from "../src/warehouse/postgres-loader";
import { columnKind, copyEncoder } from "../src/warehouse/postgres-values";
import { POSTGRES_TYPES, defaultNamespace, eventRows } from "../src/warehouse/schema";
import { batchesByNamespace, stagedRowText } from "../src/warehouse/staged-rows";
import type { TableBatch } from "../src/warehouse/types";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { INTAKE_BODIES, type WrkResult, adminApi, basicAuth, cpuList, ensureBinary, fmt, median, numberArg, parentOf, pinTo, processFamily, range, record, requireWrk, startSluice, wrk } from "./bench-lib";

const eventsPerRound = numberArg("--events", 50_000);
const rounds = numberArg("--rounds", 5);
const stagedEvents = numberArg("--staged", 100_000);
const turns = numberArg("--turns", 4);
const splitTurns = numberArg("--split-turns", turns);
const EVENT_NAMES = 20;
const PROPERTIES = 30;

const PG = {
  host: process.env.PGHOST ?? "127.0.0.1",
  port: Number(process.env.PGPORT ?? 5432),
  database: process.env.PGDATABASE ?? "test",
  user: process.env.PGUSER ?? "postgres",
  password: process.env.PGPASSWORD ?? "",
};
const sql = new SQL({ hostname: PG.host, port: PG.port, database: PG.database, username: PG.user, password: PG.password, max: 1 });
try {
  await sql`SELECT 1`;
} catch (err) {
  console.error(`bench:warehouse needs PostgreSQL at ${PG.host}:${PG.port}/${PG.database}: ${(err as Error).message}`);
  process.exit(2);
}

const names = Array.from({ length: EVENT_NAMES }, (_, i) => `Bench Event ${String.fromCharCode(65 + i)}`);
const base = Date.parse("2026-11-01T00:00:00Z");

/** 30 properties: 14 strings, 7 integers, 5 floats, 2 booleans, 2 date-times, like a product event. */
function properties(i: number): Record<string, unknown> {
  const p: Record<string, unknown> = {};
  for (let k = 0; k < PROPERTIES; k++) {
    const key = `prop${String.fromCharCode(97 + (k % 26))}${k}Field`;
    if (k < 14) p[key] = `value ${i % 977} of ${k} with some text`;
    else if (k < 21) p[key] = (i * 31 + k) % 100_000;
    else if (k < 26) p[key] = ((i * 7 + k) % 10_000) / 100 + 0.5;
    else if (k < 28) p[key] = (i + k) % 2 === 0;
    else p[key] = new Date(base + i * 1000 + k).toISOString();
  }
  return p;
}

function event(round: number, i: number): Record<string, unknown> {
  const at = new Date(base + round * 86_400_000 + i).toISOString();
  return {
    type: "track",
    event: names[i % EVENT_NAMES],
    messageId: `r${round}-${i}-${crypto.randomUUID()}`,
    anonymousId: `anon-${i % 5000}`,
    userId: `user-${i % 5000}`,
    sentAt: at,
    timestamp: at,
    originalTimestamp: at,
    receivedAt: at,
    context: { library: { name: "analytics-node", version: "3.1.0" }, ip: "203.0.113.7", locale: "en-US", userAgent: "bench/1.0" },
    properties: properties(i),
  };
}

/**
 * The round's events as the load thread gets them: staged rows (eventRows, then the staged text
 * the stager writes), and the same rows as plain batches for the baseline's COPY text. `ms` is
 * the stager's share (eventRows and staged text), which runs at delivery, not in a load.
 */
function batchesOf(round: number): { staged: Array<{ namespace: string; tableName: string; columns: string; row: string }>; batches: TableBatch[]; ms: number } {
  const uuidTs = new Date().toISOString();
  const staged: Array<{ namespace: string; tableName: string; columns: string; row: string }> = [];
  const byTable = new Map<string, TableBatch>();
  let ms = 0;
  for (let i = 0; i < eventsPerRound; i++) {
    const e = event(round, i);
    const started = performance.now();
    const rows = eventRows(e, { uuidTs });
    for (const r of rows) staged.push({ namespace: ns, tableName: r.table, columns: JSON.stringify(r.columns), row: stagedRowText(r.table, r.columns, r.row) });
    ms += performance.now() - started;
    for (const r of rows) {
      let b = byTable.get(r.table);
      if (!b) byTable.set(r.table, (b = { table: r.table, columns: {}, rows: [] }));
      Object.assign(b.columns, r.columns);
      b.rows.push(r.row);
    }
  }
  return { staged, batches: [...byTable.values()], ms };
}

/** COPY text of a batch, encoded before the clock starts: the baseline measures PostgreSQL alone. */
function copyText(b: TableBatch): string {
  const cols = Object.keys(b.columns);
  const enc = cols.map((c) => copyEncoder(columnKind(POSTGRES_TYPES[b.columns[c]!])));
  const lines: string[] = [];
  for (const row of b.rows) lines.push(cols.map((c, i) => enc[i]!(row[c]) ?? "\\N").join("\t"));
  return lines.join("\n") + "\n";
}

const ident = (n: string) => `"${n.replaceAll('"', '""')}"`;

/** The batches' tables in schemaName, as plain tables (keyed: a primary key on id, as the loader's). */
async function createTables(client: SQL, schemaName: string, batches: TableBatch[], keyed: boolean): Promise<void> {
  for (const b of batches) {
    const defs = Object.keys(b.columns).map((c) => `${ident(c)} ${POSTGRES_TYPES[b.columns[c]!]}${keyed && c === "id" ? " PRIMARY KEY" : ""}`);
    await client.unsafe(`CREATE TABLE IF NOT EXISTS ${ident(schemaName)}.${ident(b.table)} (${defs.join(", ")})`);
  }
}

/** Plain COPY of the batches' COPY texts (encoded before) into their tables, one transaction on one connection; answers the ms it took. */
async function plainCopy(client: SQL, schemaName: string, batches: TableBatch[], texts: string[]): Promise<number> {
  const t = performance.now();
  await client.begin(async (tx) => {
    for (let k = 0; k < batches.length; k++) {
      const b = batches[k]!;
      const w = tx.unsafe(`COPY ${ident(schemaName)}.${ident(b.table)} (${Object.keys(b.columns).map(ident).join(", ")}) FROM STDIN`).writable().getWriter();
      await w.write(texts[k]!);
      await w.close();
    }
  });
  return performance.now() - t;
}
const ns = `sluice_bench_${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
const baselineNs = `${ns}_copy`;
const keyedNs = `${ns}_keyed`;
const wh = new PostgresWarehouse(PG);

const loaderRates: number[] = [];
const baselineRates: number[] = [];
const keyedRates: number[] = [];
const transformRates: number[] = [];
let rowsPerRound = 0;
let tablesPerRound = 0;
try {
  await sql.unsafe(`CREATE SCHEMA ${ident(baselineNs)}`);
  await sql.unsafe(`CREATE SCHEMA ${ident(keyedNs)}`);
  // Round 0 creates the tables (DDL) in both; it is reported but not in the medians.
  for (let round = 0; round <= rounds; round++) {
    const { staged, batches, ms } = batchesOf(round);
    rowsPerRound = batches.reduce((n, b) => n + b.rows.length, 0);
    tablesPerRound = batches.length;

    // Alternate which goes first so neither always meets a freshly checkpointed server.
    // The load thread's work but reading them from Sluice's database: staged rows into batches, then the load.
    const runLoader = async () => {
      const t = performance.now();
      const [[, grouped]] = [...batchesByNamespace(staged, new Date().toISOString())];
      await wh.load(ns, grouped!, `bench-${round}`);
      return performance.now() - t;
    };
    // Plain COPY of the encoded rows: into tables without a key, and into tables keyed on id as
    // the loader's are (the key is what makes a retried load exactly once; it is PostgreSQL's
    // own cost, and the ceiling for the loader).
    const runBaseline = async (schemaName: string, keyed: boolean) => {
      if (round === 0) await createTables(sql, schemaName, batches, keyed);
      return plainCopy(sql, schemaName, batches, batches.map(copyText));
    };
    let loaderMs: number, baselineMs: number, keyedMs: number;
    if (round % 2 === 0) {
      loaderMs = await runLoader();
      keyedMs = await runBaseline(keyedNs, true);
      baselineMs = await runBaseline(baselineNs, false);
    } else {
      baselineMs = await runBaseline(baselineNs, false);
      keyedMs = await runBaseline(keyedNs, true);
      loaderMs = await runLoader();
    }

    const rate = (ms2: number) => (eventsPerRound / ms2) * 1000;
    console.log(
      `round ${round}: loader ${fmt(rate(loaderMs))} events/s (${fmt(loaderMs)} ms), plain COPY ${fmt(rate(baselineMs))} events/s (${fmt(baselineMs)} ms), keyed COPY ${fmt(rate(keyedMs))} events/s, stager ${fmt(rate(ms))} events/s`,
    );
    if (round > 0) {
      loaderRates.push(rate(loaderMs));
      baselineRates.push(rate(baselineMs));
      keyedRates.push(rate(keyedMs));
      transformRates.push(rate(ms));
    }
  }

  const [count] = await sql.unsafe(`SELECT count(*)::int AS n FROM ${ident(ns)}.tracks`);
  if (count.n !== eventsPerRound * (rounds + 1)) throw new Error(`tracks has ${count.n} rows, expected ${eventsPerRound * (rounds + 1)}`);
} finally {
  await wh.close();
  await sql.unsafe(`DROP SCHEMA IF EXISTS ${ident(ns)} CASCADE`);
  await sql.unsafe(`DROP SCHEMA IF EXISTS ${ident(baselineNs)} CASCADE`);
  await sql.unsafe(`DROP SCHEMA IF EXISTS ${ident(keyedNs)} CASCADE`);
  await sql.close();
}

/** A taskset CPU list ("0-1,3") as CPU numbers. */
function expandCpus(list: string): number[] {
  return list.split(",").flatMap((part) => {
    const [from, to = from] = part.split("-").map(Number);
    return Array.from({ length: to! - from! + 1 }, (_, k) => from! + k);
  });
}

/** wrk windows of one second each as one: requests/s and main-thread CPU over all; p50 and p99 of the median window. */
function pooled(windows: WrkResult[]): WrkResult {
  const requests = windows.reduce((n, w) => n + w.requests, 0);
  const cpu = (pick: (w: WrkResult) => number | undefined) => windows.reduce((t, w) => t + (pick(w) ?? NaN) * w.requests, 0) / requests;
  return {
    rps: windows.reduce((t, w) => t + w.rps, 0) / windows.length,
    p50ms: median(windows.map((w) => w.p50ms)),
    p99ms: median(windows.map((w) => w.p99ms)),
    non2xx: windows.reduce((n, w) => n + w.non2xx, 0),
    cpuUs: cpu((w) => w.cpuUs),
    mainCpuUs: cpu((w) => w.mainCpuUs),
    requests,
  };
}

/** Part 2: the binary. Returns the lines of its table, and its figures for BENCHMARKS.md. */
async function binaryPart(): Promise<{ lines: string[]; latest: string }> {
  requireWrk();
  await ensureBinary();
  const server = await startSluice();
  const pgAdmin = new SQL({ hostname: PG.host, port: PG.port, database: PG.database, username: PG.user, password: PG.password, max: 1 });
  // The schema as Sluice names it (snake case, digits set apart), so reset() drops the one loaded into.
  const whNs = defaultNamespace(`${ns}_bin`);
  try {
    const loaded = await adminApi(server.url, "POST", "/v2/sources", { name: "bench warehouse" });
    const quiet = await adminApi(server.url, "POST", "/v2/sources", { name: "bench intake" });
    // A daily load twelve hours away: only the loads this benchmark asks for run.
    const far = new Date(Date.now() + 12 * 3600_000);
    const dest = await adminApi(server.url, "POST", "/v2/destinations", {
      name: "bench postgres",
      type: "POSTGRES",
      config: { ...PG, port: String(PG.port), namespace: whNs, syncFrequency: "1440", syncStartAt: `${String(far.getUTCHours()).padStart(2, "0")}:00` },
      sourceIds: [loaded.id],
    });
    // Stage the events: /v1/batch of 100, 8 requests at a time; then poll until every one is staged.
    const auth = { authorization: basicAuth(loaded.writeKey), "content-type": "application/json" };
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < stagedEvents) {
          const from = next;
          next += 100;
          const batch = Array.from({ length: Math.min(100, stagedEvents - from) }, (_, k) => event(99, from + k));
          const res = await fetch(`${server.url}/v1/batch`, { method: "POST", headers: auth, body: JSON.stringify({ batch }) });
          if (res.status !== 200) throw new Error(`batch: ${res.status} ${await res.text()}`);
        }
      }),
    );
    const stagedDeadline = Date.now() + 300_000;
    for (;;) {
      const stats = await adminApi(server.url, "GET", `/v2/destinations/${dest.id}/stats`);
      if (JSON.stringify(stats).includes(`"succeeded":${stagedEvents}`)) break;
      if (Date.now() > stagedDeadline) throw new Error(`staging did not finish: ${JSON.stringify(stats)}`);
      await Bun.sleep(200);
    }

    // Each load loads the same staged rows into an empty schema: the rows are marked unloaded
    // again (their marks and loaded ranges gone) and the schema dropped (the loader notices and reads it afresh).
    const db = new Database(join(server.dir, "sluice.db"));
    db.exec("PRAGMA busy_timeout = 5000");
    const reset = async () => {
      await pgAdmin.unsafe(`DROP SCHEMA IF EXISTS ${ident(whNs)} CASCADE`);
      db.run("UPDATE warehouse_staged SET load_id = NULL WHERE destination_id = ?", [dest.id]);
      db.run("DELETE FROM warehouse_loaded_ranges WHERE destination_id = ?", [dest.id]);
    };
    const loadRecord = async (id: string) => (await adminApi(server.url, "GET", `/v2/destinations/${dest.id}/syncs`)).syncs.find((x: any) => x.id === id);
    /**
     * Starts a load; `done` is its finished record (succeeded: written to PostgreSQL and its rows
     * marked loaded). An object, not a promise of a promise: awaiting that would wait for the end.
     */
    const startLoad = async (): Promise<{ id: string; done: Promise<any> }> => {
      const { id } = await adminApi(server.url, "POST", `/v2/destinations/${dest.id}/sync`);
      const done = (async () => {
        const deadline = Date.now() + 300_000;
        for (;;) {
          const l = await loadRecord(id);
          if (l?.status === "failed") throw new Error(`load failed: ${l.error}`);
          // Each load writes every staged event into the emptied schema; fewer rows would mean ids were skipped as loaded before.
          if (l?.status === "succeeded" && l.rows?.tracks !== stagedEvents) throw new Error(`load wrote ${l.rows?.tracks ?? 0} tracks rows, not ${stagedEvents}: ${JSON.stringify(l.rows)}`);
          if (l?.status === "succeeded") return l;
          if (Date.now() > deadline) throw new Error("load did not finish");
          await Bun.sleep(100);
        }
      })();
      return { id, done };
    };
    const loadMs = (l: any) => Date.parse(l.finishedAt) - Date.parse(l.startedAt);
    await reset();
    // A first load creates the tables.
    await (await startLoad()).done;
    const intake = { body: INTAKE_BODIES.track, headers: { authorization: basicAuth(quiet.writeKey), "content-type": "application/json" }, connections: 64, seconds: 1, pid: server.pid };
    wrk(`${server.url}/v1/track`, intake);

    // Each load alone has, next to it in the same turn, a plain COPY of one round's rows into
    // emptied tables keyed on id (PostgreSQL alone, one connection): what the machine gives this
    // minute, so a slow hour shows in both.
    const turnRound = batchesOf(98);
    const turnTexts = turnRound.batches.map(copyText);
    const turnNs = `${ns}_turn`;
    const turnCopy = async () => {
      await pgAdmin.unsafe(`DROP SCHEMA IF EXISTS ${ident(turnNs)} CASCADE`);
      await pgAdmin.unsafe(`CREATE SCHEMA ${ident(turnNs)}`);
      await createTables(pgAdmin, turnNs, turnRound.batches, true);
      return (eventsPerRound / (await plainCopy(pgAdmin, turnNs, turnRound.batches, turnTexts))) * 1000;
    };
    /** Turns of wrk with the server idle and during a load, and (unless `split`) of a load alone, in rotating order. */
    const runTurns = async (count: number, split?: { wrkCpus: string }) => {
      const idle: WrkResult[] = [];
      const during: WrkResult[] = [];
      const loadRates: number[] = [];
      const aloneRates: number[] = [];
      const copyRates: number[] = [];
      const windowed = { ...intake, cpus: split?.wrkCpus };
      for (let turn = 0; turn < count; turn++) {
        const measureIdle = async () => {
          // Two one-second windows, pooled as those during a load are.
          idle.push(pooled([wrk(`${server.url}/v1/track`, windowed), wrk(`${server.url}/v1/track`, windowed)]));
        };
        // wrk in one-second windows from the load's start; a window counts when the load (its
        // rows marked loaded too) was still running at its end, so it lies wholly inside the load.
        const measureLoad = async () => {
          await reset();
          const { id, done } = await startLoad();
          const inside: WrkResult[] = [];
          for (;;) {
            const w = wrk(`${server.url}/v1/track`, windowed);
            const l = await loadRecord(id);
            if (l?.status !== "queued" && l?.status !== "running") break;
            inside.push(w);
          }
          if (inside.length === 0) throw new Error("the load ended within wrk's first second: stage more events (--staged)");
          during.push(pooled(inside));
          loadRates.push((stagedEvents / loadMs(await done)) * 1000);
        };
        // The goal's figure: a load with nothing else asked of the server.
        const measureAlone = async () => {
          const alone = async () => {
            await reset();
            aloneRates.push((stagedEvents / loadMs(await (await startLoad()).done)) * 1000);
          };
          if (turn % 2 === 0) {
            await alone();
            copyRates.push(await turnCopy());
          } else {
            copyRates.push(await turnCopy());
            await alone();
          }
        };
        const order = split ? [measureIdle, measureLoad] : [measureIdle, measureLoad, measureAlone];
        for (let k = 0; k < order.length; k++) await order[(k + turn) % order.length]!();
        console.log(
          `${split ? "split CPUs, " : ""}turn ${turn}: intake idle ${fmt(idle.at(-1)!.rps)}/s, during a load ${fmt(during.at(-1)!.rps)}/s; ` +
            `${split ? "" : `load alone ${fmt(aloneRates.at(-1)!)} events/s (plain COPY ${fmt(copyRates.at(-1)!)}), `}during intake ${fmt(loadRates.at(-1)!)} events/s`,
        );
      }
      return { idle, during, loadRates, aloneRates, copyRates, ratios: during.map((d, i) => d.rps / idle[i]!.rps) };
    };
    const shared = await runTurns(turns);

    // The same with the warehouse on a CPU of its own, as it is when it runs on another host:
    // PostgreSQL (postmaster, backends, and those it starts later) on the last CPU; Sluice (all
    // its threads, the load thread too) and wrk on the first. Put back as they were after.
    let apart: Awaited<ReturnType<typeof runTurns>> | undefined;
    let apartCpus = "";
    if (splitTurns > 0) {
      const [{ pid: backend }] = await pgAdmin`SELECT pg_backend_pid() AS pid`;
      const postmaster = parentOf(backend);
      const cpus = postmaster === undefined ? [] : expandCpus(cpuList(postmaster));
      if (cpus.length < 2) {
        console.log(`split CPUs: skipped: PostgreSQL may run on ${cpus.length ? `CPU ${cpus[0]} only` : "CPUs this process cannot see (another host?)"}`);
      } else {
        const all = cpus.join(",");
        const [sluiceCpu, pgCpu] = [String(cpus[0]), String(cpus.at(-1))];
        apartCpus = `PostgreSQL on CPU ${pgCpu}; Sluice and wrk on CPU ${sluiceCpu}`;
        // PostgreSQL is the machine's, not this benchmark's: it gets all its CPUs back, on ^C too.
        const unpin = () => pinTo(processFamily(postmaster!), all);
        const interrupted = () => {
          unpin();
          process.exit(130);
        };
        process.once("SIGINT", interrupted);
        try {
          pinTo(processFamily(postmaster!), pgCpu);
          pinTo([server.pid], sluiceCpu);
          apart = await runTurns(splitTurns, { wrkCpus: sluiceCpu });
        } finally {
          unpin();
          process.off("SIGINT", interrupted);
          pinTo([server.pid], all);
        }
      }
    }
    db.close();
    const { idle, during, loadRates, aloneRates, copyRates, ratios } = shared;
    const aloneToCopy = aloneRates.map((r, i) => r / copyRates[i]!);
    const rps = (xs: WrkResult[]) => xs.map((x) => x.rps);
    const cpu = (xs: WrkResult[]) => median(xs.map((x) => x.mainCpuUs ?? NaN));
    const latest =
      `a whole load by the binary ${fmt(median(aloneRates))} events/s (≥ 50,000: ${median(aloneRates) >= 50_000 ? "met" : "not met"}); ` +
      `intake during a load ${fmt(median(ratios), 2)} of idle on shared cores${apart ? `, ${fmt(median(apart.ratios), 2)} with the warehouse on a CPU of its own` : ""}.`;
    const lines = [
      "",
      `The binary (dist/sluice, --sync FULL): ${fmt(stagedEvents)} events staged; each load takes all of them into an empty schema. ${turns} turns, each of a load alone with a plain COPY of one round's rows right before or after it, wrk single track calls to another source (64 connections) in two one-second windows with the server idle, and the same wrk in one-second windows from a load's start, counting the windows that ended before the load had (its rows marked loaded included), in rotating order. A load's events/s run from its recorded start to its finish: its rows written to PostgreSQL and marked loaded in Sluice's database.`,
      "",
      "| What | median | min–max |",
      "| --- | --- | --- |",
      `| load by the binary, alone (staged rows read from SQLite, grouped, loaded): events/s | ${fmt(median(aloneRates))} | ${range(aloneRates)} |`,
      `| plain COPY in the same turn (${fmt(eventsPerRound)} events' rows into emptied tables keyed on id, one connection): events/s | ${fmt(median(copyRates))} | ${range(copyRates)} |`,
      `| the load alone / that plain COPY, per turn | ${fmt(median(aloneToCopy), 2)} | ${range(aloneToCopy, 2)} |`,
      `| the same load while wrk sends single calls: events/s | ${fmt(median(loadRates))} | ${range(loadRates)} |`,
      `| intake while idle: requests/s | ${fmt(median(rps(idle)))} | ${range(rps(idle))} |`,
      `| intake during a load: requests/s | ${fmt(median(rps(during)))} | ${range(rps(during))} |`,
      `| intake during / idle, per turn | ${fmt(median(ratios), 2)} | ${range(ratios, 2)} |`,
      `| intake p99 ms (of the median window): idle → during a load | ${fmt(median(idle.map((x) => x.p99ms)), 1)} → ${fmt(median(during.map((x) => x.p99ms)), 1)} | |`,
      `| main-thread CPU µs per call: idle → during a load | ${fmt(cpu(idle), 1)} → ${fmt(cpu(during), 1)} | |`,
      ...(apart
        ? [
            "",
            `The warehouse on a CPU of its own, as on another host (${apartCpus}; pinned with taskset, put back after): ${splitTurns} turns of the same wrk idle and during a load, in rotating order.`,
            "",
            "| What | median | min–max |",
            "| --- | --- | --- |",
            `| intake while idle: requests/s | ${fmt(median(rps(apart.idle)))} | ${range(rps(apart.idle))} |`,
            `| intake during a load: requests/s | ${fmt(median(rps(apart.during)))} | ${range(rps(apart.during))} |`,
            `| intake during / idle, per turn | ${fmt(median(apart.ratios), 2)} | ${range(apart.ratios, 2)} |`,
            `| intake p99 ms (of the median window): idle → during a load | ${fmt(median(apart.idle.map((x) => x.p99ms)), 1)} → ${fmt(median(apart.during.map((x) => x.p99ms)), 1)} | |`,
            `| main-thread CPU µs per call: idle → during a load | ${fmt(cpu(apart.idle), 1)} → ${fmt(cpu(apart.during), 1)} | |`,
            `| the load while wrk sends single calls: events/s | ${fmt(median(apart.loadRates))} | ${range(apart.loadRates)} |`,
          ]
        : []),
    ];
    return { lines, latest };
  } finally {
    await pgAdmin.unsafe(`DROP SCHEMA IF EXISTS ${ident(whNs)} CASCADE`).catch(() => {});
    await pgAdmin.unsafe(`DROP SCHEMA IF EXISTS ${ident(`${ns}_turn`)} CASCADE`).catch(() => {});
    await pgAdmin.close();
    await server.stop();
  }
}

const binary = process.argv.includes("--no-binary") ? undefined : await binaryPart();
const binaryLines = binary?.lines ?? [];

const loader = median(loaderRates);
const baseline = median(baselineRates);
await record({
  name: "warehouse",
  title: "Warehouse load (PostgreSQL)",
  command: `npm run bench:warehouse -- --events ${eventsPerRound} --rounds ${rounds} --staged ${stagedEvents} --turns ${turns} --split-turns ${splitTurns}`,
  latest: binary?.latest ?? `the loader (in-process, no binary) ${fmt(loader)} events/s, ${fmt(loader / baseline, 2)} of plain COPY.`,
  lines: [
    "| What | events/s (median of rounds) | ratio to plain COPY | min–max |",
    "| --- | --- | --- | --- |",
    `| plain COPY of the encoded rows (no key, no merge) | ${fmt(baseline)} | 1.00 | ${range(baselineRates)} |`,
    `| plain COPY of the same rows into tables keyed on id, as the loader's are | ${fmt(median(keyedRates))} | ${fmt(median(keyedRates) / baseline, 2)} | ${range(keyedRates)} |`,
    `| the loader: staged rows grouped, then PostgresWarehouse.load (COPY; loaded ids looked up only when the key refuses one) | ${fmt(loader)} | ${fmt(loader / baseline, 2)} (${fmt(loader / median(keyedRates), 2)} of keyed COPY) | ${range(loaderRates)} |`,
    `| the stager: eventRows and the staged text (at delivery, before any load; not in the figures above) | ${fmt(median(transformRates))} | | |`,
    "",
    `${fmt(eventsPerRound)} track events a round (${EVENT_NAMES} names × ${PROPERTIES} properties: ${fmt(rowsPerRound)} rows in ${tablesPerRound} tables, \`tracks\` and one wide table per name), ${rounds} rounds after a first that creates the tables, into one schema that keeps growing (${fmt(eventsPerRound * (rounds + 1))} events at the end). PostgreSQL ${PG.host}:${PG.port}, same machine. Goal: ≥ 50,000 events/s, for a whole load by the binary${binaryLines.length ? " (below)" : " (not run: --no-binary)"}; the loader row is its PostgreSQL part, run in this process on one page into a schema that keeps growing.`,
    ...binaryLines,
  ],
});
