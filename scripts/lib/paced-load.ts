/**
 * The soak's load when wrk is not installed: a Bun process that sends single track calls
 * (soak-load.ts's bodies) to --url, at --rate a second on a fixed schedule (a slow answer
 * does not slow the schedule, up to --connections in flight), or with --rate 0 as fast as
 * --connections allow. Prints one JSON line at the end: { requests, non2xx, errors }.
 *
 *   bun scripts/lib/paced-load.ts --url URL --auth HEADER --rate 500 --seconds 60 --connections 20 --run ID
 */
import { REQUEST_ID } from "../bench-lib";
import { trackBody, USERS } from "./soak-load";

const args = process.argv.slice(2);
const arg = (name: string) => {
  const i = args.indexOf(name);
  if (i < 0 || args[i + 1] === undefined) throw new Error(`paced-load.ts needs ${name}`);
  return args[i + 1]!;
};
const url = arg("--url");
const auth = arg("--auth");
const rate = Number(arg("--rate"));
const seconds = Number(arg("--seconds"));
const connections = Number(arg("--connections"));
const run = arg("--run");

const bodies = Array.from({ length: USERS }, (_, u) => trackBody(u));
const headers = { authorization: auth, "content-type": "application/json" };
let sent = 0;
let requests = 0;
let non2xx = 0;
let errors = 0;
let inFlight = 0;
let stopping = false;
process.on("SIGINT", () => (stopping = true));
process.on("SIGTERM", () => (stopping = true));

async function send(): Promise<void> {
  const n = sent++;
  inFlight++;
  try {
    const res = await fetch(url, { method: "POST", headers, body: bodies[n % USERS]!.replace(REQUEST_ID, `${run}-${n}`) });
    await res.arrayBuffer();
    requests++;
    if (res.status < 200 || res.status >= 300) non2xx++;
  } catch {
    errors++;
  } finally {
    inFlight--;
  }
}

const start = performance.now();
const end = start + seconds * 1000;
if (rate > 0) {
  // The schedule says how many calls are due by now; a tick sends those, up to the cap in flight.
  while (!stopping && performance.now() < end) {
    const due = Math.floor(((performance.now() - start) / 1000) * rate);
    while (sent < due && inFlight < connections) void send();
    await Bun.sleep(1); // the pacing tick, not a wait for a condition
  }
} else {
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (!stopping && performance.now() < end) await send();
    }),
  );
}
const drainUntil = Date.now() + 30_000;
while (inFlight > 0 && Date.now() < drainUntil) await Bun.sleep(5); // letting the last answers arrive
console.log(JSON.stringify({ requests, non2xx, errors: errors + inFlight }));
