/**
 * Cluster benchmark (issue 24): the compiled binary on one local PostgreSQL, one and two
 * instances on a fresh schema each, beside the SQLite single node of the same run (the
 * baseline: every figure is also a ratio to it). Writes the run into docs/benchmarks/cluster.md
 * and its line into BENCHMARKS.md.
 *
 *   npm run bench:cluster [-- --seconds 24 --rounds 4 --events 20000 --users 200 --e2e-rounds 3 --takeovers 3 --build --no-record]
 *
 * 1. Intake: wrk (a separate process, 2 threads, 64 connections) sends single track calls. Against
 *    two instances it is the same one wrk, each thread's 32 connections to one instance (the
 *    threads' addresses set in the Lua setup), so the load generator costs the same in every
 *    configuration. The three configurations run from the start and take turns in a balanced
 *    order over `--rounds` rounds, as in bench-intake; `--seconds` is each configuration's time
 *    under load, split over the rounds.
 * 2. End to end: `--events` events over `--users` users go in through /v1/batch (to both instances
 *    in turn when there are two), timed from the first request until a sink (this script run with
 *    --sink-process, a separate process) has every one. Each turn starts its servers afresh (an
 *    empty queue, partitions settled), in a balanced order over `--e2e-rounds` rounds.
 * 3. Takeover: two instances under a light steady load (single calls to both); one is killed with
 *    SIGKILL. Timed from the kill until the sink receives an event received after the kill from a
 *    user in the victim's partitions (its partitions are being delivered again), and until every
 *    event acknowledged by then has arrived (the outage's backlog is delivered).
 *
 * PostgreSQL: --database-url, else PGHOST/PGPORT/PGUSER/PGDATABASE, else postgres@127.0.0.1:5432/test.
 * Every schema this run makes (bench_cluster_…) is dropped at the end, also after a failure.
 */
import { SQL } from "bun";
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { partitionOfKey } from "../src/cluster/hash";
import { INTAKE_BODIES, REQUEST_ID, adminApi, balancedOrder, basicAuth, cpuTimeUs, ensureBinary, fmt, median, numberArg, range, record, requireWrk, startProcess, startSluice } from "./bench-lib";

if (process.argv.includes("--sink-process")) {
  runSink();
} else {
  await main();
}

/**
 * The destination stand-in: counts distinct messageIds (delivery is at least once in cluster
 * mode, so a redelivery after a takeover must not count twice), and for the takeover notes the
 * first arrival, from a watched set of users, of an event received after a given instant.
 */
function runSink() {
  let seen = new Set<string>();
  let arrivals = 0;
  let watch: { users: Set<string>; since: number; first: number | null } | null = null;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/__stats") return Response.json({ distinct: seen.size, arrivals });
      if (path === "/__reset") {
        seen = new Set();
        arrivals = 0;
        watch = null;
        return new Response("ok");
      }
      if (path === "/__watch") {
        const w = (await req.json()) as { users: string[]; since: number };
        watch = { users: new Set(w.users), since: w.since, first: null };
        return new Response("ok");
      }
      if (path === "/__watched") return Response.json({ first: watch?.first ?? null });
      if (path === "/__missing") {
        const ids = (await req.json()) as string[];
        return Response.json({ missing: ids.reduce((n, id) => (seen.has(id) ? n : n + 1), 0) });
      }
      const e = (await req.json()) as { messageId?: string; userId?: string; receivedAt?: string };
      arrivals++;
      if (e.messageId) seen.add(e.messageId);
      if (watch && watch.first === null && e.userId && watch.users.has(e.userId) && Date.parse(e.receivedAt ?? "") > watch.since) watch.first = Date.now();
      return new Response("OK");
    },
  });
  console.log(JSON.stringify({ url: `http://127.0.0.1:${server.port}` }));
}

async function main() {
  const seconds = numberArg("--seconds", 24);
  const rounds = numberArg("--rounds", 4);
  const turn = Math.max(1, Math.round(seconds / rounds));
  const total = numberArg("--events", 20_000);
  const users = numberArg("--users", 200);
  const e2eRounds = numberArg("--e2e-rounds", 3);
  const takeovers = numberArg("--takeovers", 3);
  const args = process.argv.slice(2);
  const databaseUrl =
    (args.includes("--database-url") ? args[args.indexOf("--database-url") + 1] : undefined) ??
    `postgres://${process.env.PGUSER ?? "postgres"}@${process.env.PGHOST ?? "127.0.0.1"}:${process.env.PGPORT ?? 5432}/${process.env.PGDATABASE ?? "test"}`;

  requireWrk();
  await ensureBinary();

  const admin = new SQL(databaseUrl, { max: 2 });
  try {
    await admin`SELECT 1`;
  } catch (err) {
    console.error(`bench:cluster needs PostgreSQL at ${databaseUrl}: ${(err as Error).message}`);
    process.exit(2);
  }
  const schemas: string[] = [];
  const runId = `${Date.now().toString(36)}${process.pid.toString(36)}`;
  const newSchema = () => {
    const s = `bench_cluster_${runId}_${schemas.length}`;
    schemas.push(s);
    return s;
  };
  const running: Array<{ stop(): Promise<void> }> = [];
  const sink = await startProcess([process.execPath, import.meta.path, "--sink-process"]);
  running.push(sink);
  const sinkGet = async <T>(path: string, body?: unknown) =>
    (await (await fetch(sink.url + path, body === undefined ? {} : { method: "POST", body: JSON.stringify(body) })).json()) as T;
  const resetSink = () => fetch(`${sink.url}/__reset`);

  /** Polls `check` (its value, or undefined to go on) until the deadline: never a guessed sleep. */
  async function poll<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>, everyMs = 25): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await check();
      if (v !== undefined) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await Bun.sleep(everyMs);
    }
  }

  type Instance = Awaited<ReturnType<typeof startSluice>> & { id?: string };
  interface Config {
    kind: "sqlite" | "pg1" | "pg2";
    name: string;
    instances: Instance[];
    schema?: string;
    writeKey: string;
    stop(): Promise<void>;
  }

  const leaseOwners = async (schema: string) =>
    (await admin.unsafe(`SELECT owner, count(*)::int AS n FROM "${schema}".partition_leases WHERE owner IS NOT NULL AND expires_at > now() GROUP BY owner`)) as Array<{ owner: string; n: number }>;
  const partitionCount = async (schema: string) => Number((await admin.unsafe(`SELECT value FROM "${schema}".cluster_settings WHERE name = 'partitions'`))[0].value);

  /** Until `n` instances hold every partition between them, as evenly as bounded loads give. */
  async function leasesSettled(schema: string, n: number) {
    const partitions = await partitionCount(schema);
    await poll(`${n} instance(s) holding the partitions of ${schema}`, 60_000, async () => {
      const owners = await leaseOwners(schema);
      const held = owners.reduce((a, o) => a + o.n, 0);
      return owners.length === n && held === partitions && owners.every((o) => o.n >= Math.floor(partitions / n)) ? true : undefined;
    }, 100);
  }

  /**
   * Starts a configuration with a source (and a webhook destination to the sink when `deliver`).
   * Cluster instances start one after the other, each once the ones before hold their
   * partitions, so each instance's id is the row that appeared in cluster_instances with it.
   */
  async function startConfig(kind: Config["kind"], deliver: boolean): Promise<Config> {
    const common = deliver ? ["--destination-concurrency", "16"] : [];
    const instances: Instance[] = [];
    let schema: string | undefined;
    const stop = async () => {
      for (const i of instances) await i.stop();
    };
    try {
      if (kind === "sqlite") instances.push(await startSluice(["--sync", "FULL", ...common]));
      else {
        schema = newSchema();
        for (let n = 1; n <= (kind === "pg1" ? 1 : 2); n++) {
          const inst: Instance = await startSluice(["--database", databaseUrl, "--database-schema", schema, ...common]);
          instances.push(inst);
          await leasesSettled(schema, n);
          const ids = (await admin.unsafe(`SELECT id FROM "${schema}".cluster_instances`)) as Array<{ id: string }>;
          inst.id = ids.map((r) => r.id).find((id) => !instances.some((i) => i.id === id));
        }
      }
      const first = instances[0]!;
      const src = await adminApi(first.url, "POST", "/v2/sources", { name: "bench" });
      if (deliver) await adminApi(first.url, "POST", "/v2/destinations", { name: "sink", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/hook` }, sourceIds: [src.id] });
      // A config write made last: an instance that takes its write key has loaded the config
      // after every earlier write (the destination included), so no event is fanned out without it.
      const probe = await adminApi(first.url, "POST", "/v2/sources", { name: "probe" });
      for (const inst of instances) {
        await poll("the config on every instance", 10_000, async () => {
          const r = await fetch(`${inst.url}/v1/track`, { method: "POST", headers: { authorization: basicAuth(probe.writeKey), "content-type": "application/json" }, body: JSON.stringify({ userId: "probe", event: "probe" }) });
          return r.status === 200 ? true : undefined;
        });
      }
      const name = kind === "sqlite" ? "SQLite, one instance, --sync FULL (baseline)" : kind === "pg1" ? "PostgreSQL, one instance" : "PostgreSQL, two instances";
      return { kind, name, instances, schema, writeKey: src.writeKey, stop };
    } catch (err) {
      await stop();
      throw err;
    }
  }

  /** User + system CPU of every postgres process now running, in µs (connections come and go; it is a rough figure). */
  function postgresCpuUs(): number {
    let us = 0;
    for (const pid of readdirSync("/proc")) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "postgres") us += cpuTimeUs(Number(pid));
      } catch {
        // gone meanwhile
      }
    }
    return us;
  }

  interface IntakeRun {
    rps: number;
    p50ms: number;
    p99ms: number;
    non2xx: number;
    requests: number;
    cpuUs: number;
    pgCpuUs: number;
  }

  let wrkRuns = 0;
  /**
   * wrk with bench-lib's track body and its per-request messageId, and each thread's connections
   * to one of the instances in turn (the thread's address is set in setup()).
   */
  function wrkSplit(c: Config, connections: number, secs: number): IntakeRun {
    const dir = mkdtempSync(join(tmpdir(), "wrk-"));
    const script = join(dir, "post.lua");
    const ports = c.instances.map((i) => new URL(i.url).port);
    const run = `${process.pid}x${Date.now().toString(36)}x${++wrkRuns}`;
    writeFileSync(
      script,
      `wrk.method = "POST"\nwrk.body = ${JSON.stringify(INTAKE_BODIES.track)}\n` +
        `wrk.headers["content-type"] = "application/json"\nwrk.headers["authorization"] = ${JSON.stringify(basicAuth(c.writeKey))}\n` +
        `ports = { ${ports.map((p) => JSON.stringify(p)).join(", ")} }\n` +
        `threads = 0\nsetup = function(thread) threads = threads + 1; thread:set("tid", threads); thread.addr = wrk.lookup("127.0.0.1", ports[((threads - 1) % #ports) + 1])[1] end\n` +
        `n = 0\nrequest = function() n = n + 1; local body = string.gsub(wrk.body, "${REQUEST_ID}", "${run}-" .. tid .. "-" .. n); return wrk.format(nil, nil, nil, body) end\n` +
        `done = function(summary, latency, requests) io.write(string.format("NON2XX %d\\n", summary.errors.status)) end\n`,
    );
    const cpu = () => c.instances.reduce((a, i) => a + cpuTimeUs(i.pid), 0);
    const cpuBefore = cpu();
    const pgBefore = c.kind === "sqlite" ? 0 : postgresCpuUs();
    const r = Bun.spawnSync(["wrk", "-t", "2", "-c", String(connections), "-d", `${secs}s`, "--latency", "-s", script, `${c.instances[0]!.url}/v1/track`]);
    const out = r.stdout.toString();
    const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
    if (!rps) throw new Error(`wrk failed: ${out} ${r.stderr.toString()}`);
    const pct = (p: string) => {
      const m = new RegExp(`\\s${p}%\\s+([\\d.]+)(us|ms|s)`).exec(out);
      if (!m) return NaN;
      const v = Number(m[1]);
      return m[2] === "us" ? v / 1000 : m[2] === "s" ? v * 1000 : v;
    };
    const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
    return {
      rps,
      p50ms: pct("50"),
      p99ms: pct("99"),
      non2xx: Number(/NON2XX (\d+)/.exec(out)?.[1] ?? 0),
      requests,
      cpuUs: (cpu() - cpuBefore) / requests,
      pgCpuUs: c.kind === "sqlite" ? 0 : (postgresCpuUs() - pgBefore) / requests,
    };
  }

  /** Waits (up to 3 s) until the servers and PostgreSQL have used under a tenth of a core for 100 ms. */
  async function settle(c: Config) {
    const usage = () => c.instances.reduce((a, i) => a + cpuTimeUs(i.pid), 0) + (c.kind === "sqlite" ? 0 : postgresCpuUs());
    const deadline = Date.now() + 3000;
    let last = usage();
    while (Date.now() < deadline) {
      await Bun.sleep(100);
      const now = usage();
      if (now - last < 10_000) return;
      last = now;
    }
  }

  const kinds: Config["kind"][] = ["sqlite", "pg1", "pg2"];
  const rows: string[] = [];
  let latest = "";
  try {
    // 1. Intake.
    const configs: Config[] = [];
    for (const k of kinds) {
      const c = await startConfig(k, false);
      configs.push(c);
      running.push(c);
    }
    const intake = new Map<Config, IntakeRun[]>(configs.map((c) => [c, []]));
    for (const c of configs) wrkSplit(c, 16, 2); // warm-up: JIT, page cache, pools
    for (let r = 0; r < rounds; r++) {
      for (const c of balancedOrder(configs, r)) {
        intake.get(c)!.push(wrkSplit(c, 64, turn));
        await settle(c);
      }
    }
    // What each instance holds open once loaded (its pool and its LISTEN connection): the first
    // limit as instances are added.
    const connections: number[] = [];
    for (const c of configs) {
      for (const i of c.instances) {
        if (!i.id) continue;
        const [row] = await admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = ${`sluice ${i.id}`.slice(0, 63)}`;
        connections.push(Number(row.n));
      }
    }
    for (const c of configs) {
      await c.stop();
      running.splice(running.indexOf(c), 1);
    }

    // 2. End to end: fresh servers per turn.
    const e2e = new Map<Config["kind"], Array<{ rate: number; acceptRate: number }>>(kinds.map((k) => [k, []]));
    const batches: Array<Array<Record<string, unknown>>> = [];
    for (let i = 0; i < total; i += 100) {
      batches.push(Array.from({ length: Math.min(100, total - i) }, (_, j) => ({ type: "track", userId: `user-${(i + j) % users}`, event: "Benchmark Event", messageId: `e2e-${i + j}`, properties: { i: i + j, plan: "pro" } })));
    }
    for (let r = 0; r < e2eRounds; r++) {
      for (const k of balancedOrder(kinds, r)) {
        const c = await startConfig(k, true);
        running.push(c);
        await resetSink();
        const auth = basicAuth(c.writeKey);
        const started = performance.now();
        let next = 0;
        await Promise.all(
          Array.from({ length: 8 }, async () => {
            while (next < batches.length) {
              const n = next++;
              const inst = c.instances[n % c.instances.length]!;
              const res = await fetch(`${inst.url}/v1/batch`, { method: "POST", headers: { authorization: auth, "content-type": "application/json" }, body: JSON.stringify({ batch: batches[n] }) });
              if (res.status !== 200) throw new Error(`intake answered ${res.status}: ${await res.text()}`);
            }
          }),
        );
        const accepted = performance.now();
        await poll("every event at the sink", 300_000, async () => ((await sinkGet<{ distinct: number }>("/__stats")).distinct >= total ? true : undefined), 20);
        const done = performance.now();
        e2e.get(k)!.push({ rate: total / ((done - started) / 1000), acceptRate: total / ((accepted - started) / 1000) });
        await c.stop();
        running.splice(running.indexOf(c), 1);
      }
    }

    // 3. Takeover after kill -9.
    const takeover: Array<{ firstMs: number; backlogMs: number; victimPartitions: number; steadyRate: number }> = [];
    for (let t = 0; t < takeovers; t++) {
      const c = await startConfig("pg2", true);
      running.push(c);
      await resetSink();
      const [survivor, victim] = c.instances as [Instance, Instance];
      const partitions = await partitionCount(c.schema!);
      const auth = basicAuth(c.writeKey);
      const acked: string[] = [];
      let killed = false;
      let sending = true;
      let seq = 0;
      // Light load: 4 senders, each a call at a time, paced to about 200 calls/s in all; a
      // call refused by the dead instance is sent again to the survivor (as an SDK retries).
      const senders = Array.from({ length: 4 }, async () => {
        while (sending) {
          const n = seq++;
          const body = JSON.stringify({ userId: `user-${n % users}`, event: "Steady", messageId: `tk-${t}-${n}` });
          for (let attempt = 0; ; attempt++) {
            const inst = killed || attempt > 0 ? survivor : c.instances[n % 2]!;
            const res = await fetch(`${inst.url}/v1/track`, { method: "POST", headers: { authorization: auth, "content-type": "application/json" }, body }).catch(() => undefined);
            if (res?.status === 200) break;
            if (attempt > 20) throw new Error(`no instance took event ${n}`);
          }
          acked.push(`tk-${t}-${n}`);
          await Bun.sleep(20); // pacing of the load, not a wait for a condition
        }
      });
      const loadStarted = performance.now();
      // Running steadily: the first events have arrived from both instances' partitions.
      await poll("the steady load at the sink", 20_000, async () => ((await sinkGet<{ distinct: number }>("/__stats")).distinct >= 400 ? true : undefined), 50);
      const steadyRate = acked.length / ((performance.now() - loadStarted) / 1000);
      const held = (await admin.unsafe(`SELECT partition FROM "${c.schema}".partition_leases WHERE owner = $1 AND expires_at > now()`, [victim.id])) as Array<{ partition: number }>;
      const victimPartitions = new Set(held.map((h) => Number(h.partition)));
      const victimUsers = Array.from({ length: users }, (_, u) => `user-${u}`).filter((u) => victimPartitions.has(partitionOfKey(u, partitions)));
      if (!victimUsers.length) throw new Error("no user of the load falls in the victim's partitions; raise --users");
      const killAt = Date.now();
      await fetch(`${sink.url}/__watch`, { method: "POST", body: JSON.stringify({ users: victimUsers, since: killAt }) });
      process.kill(victim.pid, "SIGKILL");
      killed = true;
      const first = await poll("a delivery in the victim's partitions after the kill", 90_000, async () => (await sinkGet<{ first: number | null }>("/__watched")).first ?? undefined, 20);
      const backlog = [...acked];
      await poll("every event acknowledged until the takeover at the sink", 90_000, async () => ((await sinkGet<{ missing: number }>("/__missing", backlog)).missing === 0 ? true : undefined), 20);
      const backlogAt = Date.now();
      sending = false;
      await Promise.all(senders);
      takeover.push({ firstMs: first - killAt, backlogMs: backlogAt - killAt, victimPartitions: victimPartitions.size, steadyRate });
      await c.stop();
      running.splice(running.indexOf(c), 1);
    }

    // The table.
    const base = configs[0]!;
    const ratio = (xs: number[]) => `${fmt(median(xs), 2)} (${range(xs, 2)})`;
    rows.push("| Configuration | intake: single calls/s (64 conn) | ratio to SQLite (range over rounds) | p50 ms | p99 ms | CPU µs per call: Sluice (PostgreSQL) | non-2xx | end to end: events/s accepted → delivered | ratio to SQLite (range) | events/s accepted |");
    rows.push("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (const c of configs) {
      const runs = intake.get(c)!;
      const baseRuns = intake.get(base)!;
      const requests = runs.reduce((a, w) => a + w.requests, 0);
      const perCall = (k: "cpuUs" | "pgCpuUs") => runs.reduce((a, w) => a + w[k] * w.requests, 0) / requests;
      const ends = e2e.get(c.kind)!;
      const baseEnds = e2e.get("sqlite")!;
      rows.push(
        `| ${c.name} | ${fmt(runs.reduce((a, w) => a + w.rps, 0) / runs.length)} | ${c === base ? "1.00" : ratio(runs.map((w, r) => w.rps / baseRuns[r]!.rps))} | ${fmt(median(runs.map((w) => w.p50ms)), 2)} | ${fmt(median(runs.map((w) => w.p99ms)), 2)} | ${fmt(perCall("cpuUs"), 1)}${c.kind === "sqlite" ? "" : ` (${fmt(perCall("pgCpuUs"), 1)})`} | ${runs.reduce((a, w) => a + w.non2xx, 0)} | ${fmt(ends.reduce((a, e) => a + e.rate, 0) / ends.length)} | ${c === base ? "1.00" : ratio(ends.map((e, r) => e.rate / baseEnds[r]!.rate))} | ${fmt(ends.reduce((a, e) => a + e.acceptRate, 0) / ends.length)} |`,
      );
    }
    const ratioTo = (kind: Config["kind"]) => {
      const c = configs.find((x) => x.kind === kind)!;
      const intakeRatio = median(intake.get(c)!.map((w, r) => w.rps / intake.get(base)![r]!.rps));
      const endRatio = median(e2e.get(kind)!.map((e, r) => e.rate / e2e.get("sqlite")![r]!.rate));
      return { intakeRatio, endRatio };
    };
    const [pg1, pg2] = [ratioTo("pg1"), ratioTo("pg2")];
    latest =
      `PostgreSQL intake ${fmt(pg1.intakeRatio, 2)} of SQLite with one instance, ${fmt(pg2.intakeRatio, 2)} with two; end to end ${fmt(pg1.endRatio, 2)} and ${fmt(pg2.endRatio, 2)}; ` +
      `takeover after kill -9 ${fmt(median(takeover.map((x) => x.firstMs)) / 1000, 1)} s (median).`;
    rows.push("");
    rows.push(
      `Takeover after kill -9 of one of two instances (${takeovers} run${takeovers === 1 ? "" : "s"}, each on a fresh schema; light load of about ${fmt(median(takeover.map((x) => x.steadyRate)))} single calls/s to both instances, a call refused by the dead one sent again to the other): ` +
        `first delivery, in the victim's partitions (${takeover.map((x) => x.victimPartitions).join(", ")} of 256), of an event received after the kill: ${takeover.map((x) => fmt(x.firstMs / 1000, 1)).join(", ")} s (median ${fmt(median(takeover.map((x) => x.firstMs)) / 1000, 1)} s); ` +
        `every event acknowledged until then at the sink: ${takeover.map((x) => fmt(x.backlogMs / 1000, 1)).join(", ")} s after the kill. Leases: 10 s TTL, renewed every 2 s, acquired every 1 s.`,
    );
    rows.push("");
    rows.push(`PostgreSQL connections held by each instance after the intake turns: ${connections.join(", ")} (max_connections here: ${(await admin`SHOW max_connections`)[0].max_connections}).`);
    rows.push("");
    rows.push(
      `Intake: wrk, 2 threads, 64 connections, bench-lib's track body with a messageId unique per request; against two instances each wrk thread's 32 connections go to one instance (one wrk process either way). ${rounds} round(s) in which each configuration takes a turn of ${turn} s in a balanced order, once the one before has gone idle; rates are means over the rounds, latencies medians, each ratio against SQLite's figure of the same round (median, lowest–highest). CPU µs per call: the Sluice processes' user + system time over the turns per request; in brackets, every postgres process's (shared with whatever else uses this PostgreSQL, so a rough figure). No destinations during intake. ` +
        `End to end: ${fmt(total)} events over ${fmt(users)} users in batches of 100 (8 requests in flight, to the instances in turn), timed from the first request until the sink (a separate Bun process) has every messageId; one webhook destination, --destination-concurrency 16; each turn on freshly started servers once their partitions are settled, ${e2eRounds} round(s) in a balanced order; "accepted" is the rate until the last batch was answered. ` +
        `All instances, wrk, the sink and PostgreSQL share this machine's 2 cores, so two instances measure the cost of coordination, not scaling: past 2 cores, scaling is planned, not measured. Schemas: fresh per configuration and turn, dropped after.`,
    );
  } finally {
    for (const p of running.splice(0).reverse()) await p.stop().catch(() => {});
    for (const s of schemas) await admin.unsafe(`DROP SCHEMA IF EXISTS "${s}" CASCADE`).catch((err) => console.error(`could not drop schema ${s}: ${(err as Error).message}`));
    await admin.close();
  }
  await record({
    name: "cluster",
    title: "Cluster",
    command: `npm run bench:cluster -- --seconds ${seconds} --rounds ${rounds} --events ${total} --users ${users} --e2e-rounds ${e2eRounds} --takeovers ${takeovers}`,
    lines: rows,
    latest,
  });
}
