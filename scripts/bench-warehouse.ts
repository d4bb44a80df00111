/**
 * Warehouse loader benchmark (issue 22): events of 20 names with 30 properties each become rows
 * (`eventRows`), and `PostgresWarehouse.load` writes them into the local PostgreSQL, several
 * rounds into one fresh schema (dropped after). In the same run, a baseline: the same rows,
 * already encoded, sent by plain COPY into tables of the same columns (no key, no merge), so
 * the loader's rate is also a ratio to what PostgreSQL itself does. Writes BENCHMARKS.md.
 *
 *   npm run bench:warehouse [-- --events 50000 --rounds 5 --no-record]
 *
 * PostgreSQL: PGHOST/PGPORT/PGUSER/PGDATABASE, default 127.0.0.1:5432, user postgres, database test.
 */
import { SQL } from "bun";
import { PostgresWarehouse } from "../src/warehouse/postgres";
import { columnKind, copyEncoder } from "../src/warehouse/postgres-values";
import { POSTGRES_TYPES, eventRows } from "../src/warehouse/schema";
import type { TableBatch } from "../src/warehouse/types";
import { fmt, median, numberArg, record } from "./bench-lib";

const eventsPerRound = numberArg("--events", 50_000);
const rounds = numberArg("--rounds", 5);
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

/** The round's events as one batch per table, as the stager will hand them over. */
function batchesOf(round: number): { batches: TableBatch[]; ms: number } {
  const started = performance.now();
  const uuidTs = new Date().toISOString();
  const byTable = new Map<string, TableBatch>();
  for (let i = 0; i < eventsPerRound; i++) {
    for (const r of eventRows(event(round, i), { uuidTs })) {
      let b = byTable.get(r.table);
      if (!b) byTable.set(r.table, (b = { table: r.table, columns: {}, rows: [] }));
      Object.assign(b.columns, r.columns);
      b.rows.push(r.row);
    }
  }
  return { batches: [...byTable.values()], ms: performance.now() - started };
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
const ns = `sluice_bench_${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
const baselineNs = `${ns}_copy`;
const wh = new PostgresWarehouse(PG);

const loaderRates: number[] = [];
const baselineRates: number[] = [];
const transformRates: number[] = [];
// The load shares the main thread with intake: the longest the event loop waited during each load.
const loopGaps: number[] = [];
let rowsPerRound = 0;
let tablesPerRound = 0;
try {
  await sql.unsafe(`CREATE SCHEMA ${ident(baselineNs)}`);
  // Round 0 creates the tables (DDL) in both; it is reported but not in the medians.
  for (let round = 0; round <= rounds; round++) {
    const { batches, ms } = batchesOf(round);
    rowsPerRound = batches.reduce((n, b) => n + b.rows.length, 0);
    tablesPerRound = batches.length;

    // Alternate which goes first so neither always meets a freshly checkpointed server.
    const runLoader = async () => {
      let last = performance.now();
      let maxGap = 0;
      const ticker = setInterval(() => {
        const now = performance.now();
        maxGap = Math.max(maxGap, now - last);
        last = now;
      }, 1);
      const t = performance.now();
      await wh.load(ns, batches, `bench-${round}`);
      const ms = performance.now() - t;
      clearInterval(ticker);
      if (round > 0) loopGaps.push(maxGap);
      return ms;
    };
    const runBaseline = async () => {
      const texts = batches.map(copyText);
      const t = performance.now();
      await sql.begin(async (tx) => {
        for (let k = 0; k < batches.length; k++) {
          const b = batches[k]!;
          const target = `${ident(baselineNs)}.${ident(b.table)}`;
          const cols = Object.keys(b.columns);
          if (round === 0) {
            await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${target} (${cols.map((c) => `${ident(c)} ${POSTGRES_TYPES[b.columns[c]!]}`).join(", ")})`);
          }
          const w = tx.unsafe(`COPY ${target} (${cols.map(ident).join(", ")}) FROM STDIN`).writable().getWriter();
          await w.write(texts[k]!);
          await w.close();
        }
      });
      return performance.now() - t;
    };
    let loaderMs: number, baselineMs: number;
    if (round % 2 === 0) {
      loaderMs = await runLoader();
      baselineMs = await runBaseline();
    } else {
      baselineMs = await runBaseline();
      loaderMs = await runLoader();
    }

    const rate = (ms2: number) => (eventsPerRound / ms2) * 1000;
    console.log(
      `round ${round}: loader ${fmt(rate(loaderMs))} events/s (${fmt(loaderMs)} ms), plain COPY ${fmt(rate(baselineMs))} events/s (${fmt(baselineMs)} ms), eventRows ${fmt(rate(ms))} events/s`,
    );
    if (round > 0) {
      loaderRates.push(rate(loaderMs));
      baselineRates.push(rate(baselineMs));
      transformRates.push(rate(ms));
    }
  }

  const [count] = await sql.unsafe(`SELECT count(*)::int AS n FROM ${ident(ns)}.tracks`);
  if (count.n !== eventsPerRound * (rounds + 1)) throw new Error(`tracks has ${count.n} rows, expected ${eventsPerRound * (rounds + 1)}`);
} finally {
  await wh.close();
  await sql.unsafe(`DROP SCHEMA IF EXISTS ${ident(ns)} CASCADE`);
  await sql.unsafe(`DROP SCHEMA IF EXISTS ${ident(baselineNs)} CASCADE`);
  await sql.close();
}

const loader = median(loaderRates);
const baseline = median(baselineRates);
await record(
  "Warehouse load (PostgreSQL)",
  `npm run bench:warehouse -- --events ${eventsPerRound} --rounds ${rounds}`,
  [
    "| What | events/s (median of rounds) | ratio to plain COPY | min–max |",
    "| --- | --- | --- | --- |",
    `| plain COPY of the encoded rows (no key, no merge) | ${fmt(baseline)} | 1.00 | ${fmt(Math.min(...baselineRates))}–${fmt(Math.max(...baselineRates))} |`,
    `| PostgresWarehouse.load (encode, COPY to temp, merge on id) | ${fmt(loader)} | ${fmt(loader / baseline, 2)} | ${fmt(Math.min(...loaderRates))}–${fmt(Math.max(...loaderRates))} |`,
    `| eventRows (event → rows, before the load; not in the figures above) | ${fmt(median(transformRates))} | | |`,
    "",
    `Longest wait of the event loop during a load (intake shares that thread): median ${fmt(median(loopGaps))} ms, worst ${fmt(Math.max(...loopGaps))} ms.`,
    "",
    `${fmt(eventsPerRound)} track events a round (${EVENT_NAMES} names × ${PROPERTIES} properties: ${fmt(rowsPerRound)} rows in ${tablesPerRound} tables, \`tracks\` and one wide table per name), ${rounds} rounds after a first that creates the tables, into one schema that keeps growing (${fmt(eventsPerRound * (rounds + 1))} events at the end). PostgreSQL ${PG.host}:${PG.port}, same machine. Goal: ≥ 50,000 events/s.`,
  ],
);
