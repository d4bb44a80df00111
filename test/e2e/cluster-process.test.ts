/**
 * Cluster mode end to end (issue 24): three real Sluice processes (`serve --database`) on one
 * PostgreSQL schema, a real HTTP sink as the destination. Events are sent across all three;
 * every acknowledged event reaches the sink with each user's order kept, also when one instance
 * is killed with SIGKILL under load (its partitions are taken over once its leases expire);
 * config and regulations made on one instance hold on the others.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { ADMIN_EMAIL, ADMIN_TOKEN, type SluiceProcess, api, cleanup, sendEvent, spawnSluice, startSink, waitFor, arrivals } from "../support/helpers";
import { PG_URL, havePostgres, pgScratch, requirePostgres } from "../support/pg";

requirePostgres("cluster-process.test.ts");

type Sink = ReturnType<typeof startSink>;

describe.if(havePostgres)("cluster mode: real processes on one PostgreSQL", () => {
  const scratch = pgScratch("t_cproc");

  async function cluster(n: number, respond?: Parameters<typeof startSink>[0]) {
    const schema = scratch.schema();
    // Started at once: one of them migrates the schema and makes the workspace, the others wait for the lock.
    const started = await Promise.all(
      Array.from({ length: n }, () => spawnSluice({ args: ["--database", PG_URL, "--database-schema", schema, "--retry-backoff-ms", "100"] })),
    );
    // Stopped after the test, before its schema is dropped; their data dirs (empty: state is in PostgreSQL) go too.
    for (const p of started) {
      scratch.onStop(async () => {
        p.proc.kill(9);
        await p.proc.exited;
        await cleanup(p.dataDir);
      });
    }
    const sink = startSink(respond);
    scratch.onStop(async () => sink.stop());
    const [a, b] = started;
    const src = (await api(a!.url, "POST", "/v2/sources", { name: "web" })).json;
    // Made on another instance than the source.
    const dst = await api(b!.url, "POST", "/v2/destinations", { name: "hook", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/hook` }, sourceIds: [src.id] });
    expect(dst.status).toBe(201);
    // Every instance knows the write key (the config epoch's notification, within a second).
    for (const p of started) {
      await waitFor(async () => (await sendEvent(p.url, src.writeKey, "track", { userId: "probe", event: "probe" })).status === 200 || undefined, {
        timeoutMs: 3000,
        what: "the write key on every instance",
      });
    }
    return { schema, procs: started, sink, src, dst: dst.json };
  }


  /**
   * Each user sends `steps` events one after another (waiting for each answer, as an SDK does),
   * to the instances in turn; a refused call (an instance gone) is sent again to the next one.
   * Returns what was acknowledged, per user.
   */
  async function send(live: () => SluiceProcess[], writeKey: string, users: string[], steps: number, onStep?: (n: number) => void) {
    const acked = new Map<string, number[]>();
    let total = 0;
    await Promise.all(
      users.map(async (user, u) => {
        const mine: number[] = [];
        acked.set(user, mine);
        for (let seq = 0; seq < steps; seq++) {
          for (let attempt = 0; ; attempt++) {
            const targets = live();
            const p = targets[(u + seq + attempt) % targets.length]!;
            const r = await sendEvent(p.url, writeKey, "track", { userId: user, event: "step", messageId: `${user}-${seq}`, properties: { seq } }).catch(() => undefined);
            if (r?.status === 200) break;
            if (attempt > 20) throw new Error(`no instance took ${user}'s event ${seq}`);
          }
          mine.push(seq);
          onStep?.(++total);
        }
      }),
    );
    return acked;
  }

  test("events sent across three instances are all delivered, each user's in order; config and regulations hold everywhere", async () => {
    const { procs: all, sink, src, dst } = await cluster(3);
    const users = Array.from({ length: 12 }, (_, i) => `user-${i}`);
    const acked = await send(() => all, src.writeKey, users, 15);
    await waitFor(() => [...arrivals(sink).values()].reduce((n, l) => n + l.length, 0) === users.length * 15 || undefined, {
      timeoutMs: 20_000,
      what: "every acknowledged event at the sink",
    });
    const got = arrivals(sink);
    for (const user of users) expect(got.get(user)).toEqual(acked.get(user));
    // Each delivered once: no instance sent another's partition.
    expect(sink.received.filter((r) => r.body?.event === "step").length).toBe(users.length * 15);

    // A regulation made on one instance: the others drop the user's events from the next call on.
    const reg = await api(all[2]!.url, "POST", "/v2/regulations", { regulationType: "suppress", users: [{ userId: "quiet" }] });
    expect(reg.status).toBe(201);
    for (const p of all) expect((await sendEvent(p.url, src.writeKey, "track", { userId: "quiet", event: "step", messageId: `quiet-${p.url}`, properties: { seq: 0 } })).status).toBe(200);
    await sendEvent(all[0]!.url, src.writeKey, "track", { userId: "marker", event: "step", messageId: "marker-0", properties: { seq: 0 } });
    await waitFor(() => arrivals(sink).has("marker") || undefined, { timeoutMs: 10_000, what: "the marker event" });
    expect(arrivals(sink).has("quiet")).toBe(false);

    // A destination disabled on one instance: no instance sends to it from then on. A second
    // destination, made on yet another instance, shows when the events have been routed.
    const other = await api(all[2]!.url, "POST", "/v2/destinations", { name: "other", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/other` }, sourceIds: [src.id] });
    expect(other.status).toBe(201);
    expect((await api(all[1]!.url, "PATCH", `/v2/destinations/${dst.id}`, { enabled: false })).status).toBe(200);
    for (const p of all) {
      await waitFor(async () => (await api(p.url, "GET", `/v2/destinations/${dst.id}`)).json?.enabled === false || undefined, { timeoutMs: 3000, what: "the disabled destination everywhere" });
    }
    // The GETs read the database; each instance's caches follow the epoch's notification, which
    // is sent at the PATCH's commit and arrives in milliseconds, well before these calls.
    for (const p of all) expect((await sendEvent(p.url, src.writeKey, "track", { userId: "late", event: "late", messageId: `late-${p.url}` })).status).toBe(200);
    await waitFor(() => sink.received.filter((r) => r.path === "/other" && r.body?.event === "late").length === 3 || undefined, {
      timeoutMs: 10_000,
      what: "the late events at the other destination",
    });
    expect(sink.received.filter((r) => r.path === "/hook" && r.body?.event === "late")).toEqual([]);
  }, 90_000);

  test("live events: a browser connected to one instance sees the events another instance takes", async () => {
    const { procs: all, src } = await cluster(2);
    const [viewer, taker] = all;
    const abort = new AbortController();
    const res = await fetch(`${viewer!.url}/v2/sources/${src.id}/live-events`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, signal: abort.signal });
    expect(res.status).toBe(200);
    let text = "";
    const reading = (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.body as ReadableStream<Uint8Array>) text += decoder.decode(chunk);
      } catch {}
    })();
    try {
      await waitFor(() => text.includes("event: ready") || undefined, { what: "the stream to open" });
      // The viewer's watch reaches the other instance by the bus; until then nothing is relayed.
      await waitFor(async () => {
        await sendEvent(taker!.url, src.writeKey, "track", { userId: "watched", event: "Seen Elsewhere" });
        return text.includes("Seen Elsewhere") || undefined;
      }, { timeoutMs: 10_000, what: "an event taken by the other instance in the stream" });
    } finally {
      abort.abort();
      await reading;
    }
  }, 60_000);

  test("a replay asked of one instance is carried out by the instances holding the users' partitions", async () => {
    let failing = true;
    const { procs: all, sink, src, dst } = await cluster(2, (req) => new Response(failing && req.body?.event === "step" ? "no" : "ok", { status: failing && req.body?.event === "step" ? 400 : 200 }));
    const users = Array.from({ length: 16 }, (_, i) => `replay-${i}`);
    for (const [i, user] of users.entries()) {
      expect((await sendEvent(all[i % 2]!.url, src.writeKey, "track", { userId: user, event: "step", messageId: `${user}-0`, properties: { seq: 0 } })).status).toBe(200);
    }
    // A 400 aborts at once, on whichever instance holds the user.
    await waitFor(async () => (await api(all[0]!.url, "GET", `/v2/destinations/${dst.id}/stats`)).json?.counts?.aborted === users.length || undefined, {
      timeoutMs: 15_000,
      what: "every event aborted",
    });
    failing = false;
    // Asked of one instance; the users' partitions are spread over both.
    const replay = await api(all[1]!.url, "POST", `/v2/destinations/${dst.id}/replay`);
    expect(replay.json).toEqual({ replayed: users.length });
    // Each user's event again at the sink (its first request was refused), and recorded as delivered.
    await waitFor(() => users.every((u) => sink.received.filter((r) => r.body?.userId === u && r.body?.event === "step").length === 2) || undefined, {
      timeoutMs: 15_000,
      what: "every replayed event at the sink",
    });
    await waitFor(async () => {
      const st = (await api(all[0]!.url, "GET", `/v2/destinations/${dst.id}/stats`)).json;
      // The two instances' probe events, and the replayed ones.
      return (st.counts.aborted === 0 && st.counts.succeeded === users.length + 2) || undefined;
    }, { timeoutMs: 10_000, what: "the replayed deliveries recorded as delivered" });
  }, 60_000);

  test("a deletion job made through the instance that does not run deletions is run by the one that does", async () => {
    const { procs: all, dst } = await cluster(2);
    const runsDeletions = (p: SluiceProcess) => /"msg":"cluster: singleton gained"[^\n]*"singleton":"deletions"/.test(p.output());
    const holder = await waitFor(() => all.find(runsDeletions), { timeoutMs: 10_000, what: "an instance to take the deletions job" });
    const other = all.find((p) => p !== holder)!;
    expect(runsDeletions(other)).toBe(false);
    // WEBHOOK cannot delete users: the job ends at once, with the reason, once an instance runs it.
    const r = await api(other.url, "POST", "/v2/regulations", { regulationType: "suppress_with_delete", destinationIds: [dst.id], users: [{ userId: "erase-me" }] });
    expect(r.status).toBe(201);
    const job = await waitFor(async () => {
      const regs = (await api(other.url, "GET", "/v2/regulations")).json.data as Array<{ attributes: { userId: string }; deletion?: Array<{ status: string; reason?: string }> }>;
      const d = regs.find((x) => x.attributes.userId === "erase-me")?.deletion?.[0];
      return d && d.status !== "pending" && d.status !== "running" ? d : undefined;
    }, { timeoutMs: 10_000, what: "the deletion job run" });
    expect(job).toMatchObject({ status: "aborted" });
    expect(job.reason).toContain("does not support user deletion");
  }, 60_000);

  test("sluice token create --database issues a token every instance takes; backup and restore refuse --database", async () => {
    const { schema, procs: all } = await cluster(2);
    const cli = (args: string[]) => {
      const r = Bun.spawnSync([process.execPath, join(import.meta.dir, "../..", "src", "main.ts"), ...args, "--database", PG_URL, "--database-schema", schema], { stdout: "pipe", stderr: "pipe" });
      return { code: r.exitCode, out: r.stdout.toString().trim(), err: r.stderr.toString() };
    };
    const made = cli(["token", "create", "--email", ADMIN_EMAIL]);
    expect(made.err).toBe("");
    expect(made.code).toBe(0);
    for (const p of all) expect((await api(p.url, "GET", "/v2/sources", undefined, made.out)).status).toBe(200);
    const backup = cli(["backup", "--out", "/nonexistent-dir/b.db"]);
    expect(backup.code).toBe(2);
    expect(backup.err).toContain("pg_dump");
    expect(cli(["restore", "--from", "/nonexistent.db"]).code).toBe(2);
  }, 60_000);

  test("kill -9 of one instance under load: every acknowledged event is delivered, each user's in order", async () => {
    const { procs: all, sink, src } = await cluster(3);
    const users = Array.from({ length: 12 }, (_, i) => `user-${i}`);
    const victim = all[1]!;
    let killed = false;
    const live = () => (killed ? all.filter((p) => p !== victim) : all);
    const acked = await send(live, src.writeKey, users, 25, (n) => {
      if (n === 100 && !killed) {
        killed = true;
        victim.proc.kill(9);
      }
    });
    expect(killed).toBe(true);
    const expected = users.length * 25;
    // The victim's partitions are taken over once its leases expire (about 12 s).
    await waitFor(() => [...arrivals(sink).values()].reduce((n, l) => n + l.length, 0) === expected || undefined, {
      timeoutMs: 60_000,
      what: "every acknowledged event at the sink after the takeover",
    });
    const got = arrivals(sink);
    for (const user of users) expect(got.get(user)).toEqual(acked.get(user));
    // At least once: a delivery the victim had in flight may come twice, never more than a few.
    const dup = sink.received.filter((r) => r.body?.event === "step").length - expected;
    expect(dup).toBeGreaterThanOrEqual(0);
    expect(dup).toBeLessThan(expected / 4);
  }, 120_000);
});
