/**
 * What an event call costs before any of Sluice's own work: the bare server of the intake
 * benchmark, then the same server doing in addition what every event call needs from Bun
 * (parsing the body as JSON, the peer address for `request_ip`, the headers the gateway
 * reads), and the compiled Sluice. All take turns under the same wrk load, so a slow
 * minute of the machine falls on all alike. The single-call target (0.5 of the bare rate
 * with --sync FULL, 0.7 with NORMAL) is about main-thread time: both servers answer from one
 * thread. Writes the run into docs/benchmarks/floor.md and its line into BENCHMARKS.md.
 *
 *   npm run bench:floor [-- --rounds 4 --seconds 3 --build --no-record]
 */
import { join } from "node:path";
import { INTAKE_BODIES, adminApi, balancedOrder, basicAuth, ensureBinary, fmt, mean, numberArg, record, requireWrk, startProcess, startSluice, wrk } from "./bench-lib";

const args = process.argv.slice(2);
const rounds = numberArg("--rounds", 4);
const seconds = numberArg("--seconds", 3);

requireWrk();
await ensureBinary();

const bareWith = (also: string) => [process.execPath, join(import.meta.dir, "bare-server.ts"), "--port", "0", ...(also ? ["--also", also] : [])];
const servers: Array<{ name: string; url: string; pid: number; auth: string; stop(): Promise<void>; main: number[]; rps: number[] }> = [];
for (const [name, also] of [
  ["bare Bun.serve (reads the body, answers OK)", ""],
  ["+ JSON.parse of the body (request.json())", "json"],
  ["+ the peer address (server.requestIP)", "ip"],
  ["+ reading 6 headers", "headers"],
  ["+ all three", "json,ip,headers"],
] as const) {
  const p = await startProcess(bareWith(also));
  servers.push({ name, ...p, auth: "Basic eDo=", main: [], rps: [] });
}
const sluice = await startSluice();
const src = await adminApi(sluice.url, "POST", "/v2/sources", { name: "floor" });
servers.push({ name: "Sluice (compiled, sync FULL)", ...sluice, auth: basicAuth(src.writeKey), main: [], rps: [] });

for (const s of servers) wrk(`${s.url}/v1/track`, { body: INTAKE_BODIES.track, headers: { "content-type": "application/json", authorization: s.auth }, connections: 16, seconds: 1 });
for (let r = 0; r < rounds; r++) {
  for (const s of balancedOrder(servers, r)) {
    const w = wrk(`${s.url}/v1/track`, { body: INTAKE_BODIES.track, headers: { "content-type": "application/json", authorization: s.auth }, connections: 64, seconds, pid: s.pid });
    s.main.push(w.mainCpuUs!);
    s.rps.push(w.rps);
  }
}
for (const s of servers) await s.stop();

const bare = mean(servers[0]!.main);
const rows = [
  "| Server | calls/s | main-thread CPU µs per call | more than bare | bare's main-thread time / this one's |",
  "| --- | --- | --- | --- | --- |",
  ...servers.map((s) => {
    const m = mean(s.main);
    return `| ${s.name} | ${fmt(mean(s.rps))} | ${fmt(m, 1)} | ${fmt(m - bare, 1)} | ${fmt(bare / m, 2)} |`;
  }),
  "",
  `${rounds} interleaved rounds of wrk ${seconds} s per server, single track calls (~200 B, each with its own messageId) at 64 connections; means over the rounds. The last column is the rate a server bound by its main thread can reach, as a share of the bare one's: the single-call target asks 0.5 with --sync FULL (0.7 with NORMAL).`,
];
const share = (s: (typeof servers)[number]) => bare / mean(s.main);
const allThree = servers.find((s) => s.name === "+ all three")!;
const own = servers[servers.length - 1]!;
await record({
  name: "floor",
  title: "Intake floor",
  command: `npm run bench:floor${args.length ? ` -- ${args.join(" ")}` : ""}`,
  lines: rows,
  latest: `what every event call needs from Bun leaves ${fmt(share(allThree), 2)} of the bare server's main-thread time a call; Sluice (FULL) ${fmt(share(own), 2)} (${fmt(mean(own.main), 1)} against ${fmt(bare, 1)} µs a call).`,
});
