/**
 * Retention soak: the compiled binary under steady load (wrk on 127.0.0.1, events
 * delivered to a local webhook sink) with a short retention window, sampling the size
 * of the database file and its WAL. Under steady load the size should level off once
 * the first window has passed. Writes the samples into docs/benchmarks/retention.md and
 * their line into BENCHMARKS.md.
 *
 *   npm run bench:retention [-- --seconds 90 --retention-seconds 15]
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import { adminApi, basicAuth, ensureBinary, fmt, numberArg, record, requireWrk, startProcess, startSluice } from "./bench-lib";

const seconds = numberArg("--seconds", 90);
const retentionSeconds = numberArg("--retention-seconds", 15);

requireWrk();
await ensureBinary();
const sink = await startProcess([process.execPath, join(import.meta.dir, "bare-server.ts"), "--port", "0", "--sink"]);
const s = await startSluice(["--retention-hours", String(retentionSeconds / 3600)]);
const src = await adminApi(s.url, "POST", "/v2/sources", { name: "soak" });
await adminApi(s.url, "POST", "/v2/destinations", { name: "hook", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/hook` }, sourceIds: [src.id] });

const size = (f: string) => {
  try {
    return statSync(join(s.dir, f)).size;
  } catch {
    return 0;
  }
};
const samples: Array<{ t: number; db: number; wal: number; delivered: number }> = [];
// Spread over 100 users: one user's events are delivered one after another, and a single
// user would saturate delivery and grow a backlog (which retention rightly keeps).
const bodies = Array.from({ length: 100 }, (_, u) => JSON.stringify({ userId: `soak-user-${u}`, event: "Soak", properties: { payload: "x".repeat(300) } }));
const script =
  `wrk.method="POST"\nwrk.headers["content-type"]="application/json"\nwrk.headers["authorization"]="${basicAuth(src.writeKey)}"\n` +
  `bodies = { ${bodies.map((b) => JSON.stringify(b)).join(", ")} }\ni = 0\nrequest = function() i = (i % #bodies) + 1; return wrk.format(nil, nil, nil, bodies[i]) end\n`;
await Bun.write(join(s.dir, "soak.lua"), script);
// Steady, not saturating: 4 connections for the whole soak.
const load = Bun.spawn(["wrk", "-t1", "-c4", `-d${seconds}s`, "-s", join(s.dir, "soak.lua"), `${s.url}/v1/track`], { stdout: "pipe" });
const t0 = Date.now();
while (Date.now() - t0 < seconds * 1000) {
  await Bun.sleep(5000); // a sampling interval, not a wait for a condition
  const delivered = ((await (await fetch(`${sink.url}/__stats`)).json()) as { count: number }).count;
  samples.push({ t: Math.round((Date.now() - t0) / 1000), db: size("sluice.db"), wal: size("sluice.db-wal"), delivered });
}
await load.exited;
const out = await new Response(load.stdout).text();
await s.stop();
await sink.stop();

const mb = (n: number) => fmt(n / 1048576, 1);
const rows = [
  "| t (s) | database MB | WAL MB | delivered so far |",
  "| --- | --- | --- | --- |",
  ...samples.map((x) => `| ${x.t} | ${mb(x.db)} | ${mb(x.wal)} | ${fmt(x.delivered)} |`),
  "",
  `Steady load: ${/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? "?"} requests/s of ~400 B track events from 100 users (wrk, 4 connections), delivered to a local webhook; retention ${retentionSeconds} s.`,
];
const rate = /Requests\/sec:\s+([\d.]+)/.exec(out)?.[1];
// The size is judged once the first window has passed: before it nothing is old enough to go.
const settled = samples.filter((x) => x.t > retentionSeconds);
const spread = (f: (x: (typeof samples)[number]) => number) => (settled.length ? `${mb(Math.min(...settled.map(f)))}–${mb(Math.max(...settled.map(f)))}` : "n/a");
const last = samples[samples.length - 1];
await record({
  name: "retention",
  title: "Retention soak",
  command: `npm run bench:retention -- --seconds ${seconds} --retention-seconds ${retentionSeconds}`,
  lines: rows,
  latest: `${rate ? fmt(Number(rate)) : "?"} requests/s for ${seconds} s, retention ${retentionSeconds} s: after the first window the database ${spread((x) => x.db)} MB (${last ? mb(last.db) : "?"} at the end), the WAL ${spread((x) => x.wal)} MB.`,
});
