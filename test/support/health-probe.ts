/**
 * A process of its own that calls GET <URL>/health every INTERVAL_MS (default 20) until it reads
 * a line on stdin (or stdin closes), then prints one JSON line: the latencies in ms, sorted,
 * and the failures. Apart from the test's process, so a stall the test's own work causes (building
 * bodies, reading answers) is never counted against the server.
 */
const url = `${process.env.URL}/health`;
const interval = Number(process.env.INTERVAL_MS ?? 20);
const latencies: number[] = [];
const failures: string[] = [];
let stopping = false;

async function probe() {
  while (!stopping) {
    const t0 = performance.now();
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
      await res.arrayBuffer();
      if (res.status !== 200) failures.push(`status ${res.status}`);
    } catch (e) {
      failures.push(String((e as Error).message));
    }
    const ms = performance.now() - t0;
    latencies.push(ms);
    if (ms > 100 && process.env.PROBE_DEBUG) process.stderr.write(`probe: ${Math.round(ms)} ms at ${new Date().toISOString()}\n`);
    if (ms < interval) await Bun.sleep(interval - ms);
  }
}

const done = probe();
process.stdout.write("started\n");
for await (const _ of console) break;
stopping = true;
await done;
latencies.sort((a, b) => a - b);
process.stdout.write(JSON.stringify({ latencies, failures }) + "\n");
process.exit(0);
