/**
 * One cluster member for test/cluster/leases.test.ts: a LeaseCluster on its own Bun.sql
 * connection, with every singleton registered. It prints one JSON line per change of what it
 * holds ({id, held, singletons, at}) and leaves gracefully on SIGTERM ({stopped: true}).
 * Env: URL, SCHEMA, ID, TTL_MS, RENEW_MS, ACQUIRE_MS.
 */
import { SQL } from "bun";
import { LeaseCluster } from "../../src/cluster/leases";
import type { SingletonName } from "../../src/cluster/types";

const env = process.env;
const sql = new SQL(env.URL!, { max: 2, connection: { search_path: env.SCHEMA!, application_name: `lease-test-${env.ID}` } });
const cluster = new LeaseCluster({
  sql,
  instanceId: env.ID,
  ttlMs: Number(env.TTL_MS ?? 3000),
  renewMs: Number(env.RENEW_MS ?? 500),
  acquireMs: Number(env.ACQUIRE_MS ?? 250),
});
const running = new Set<SingletonName>();
const report = () =>
  process.stdout.write(JSON.stringify({ id: cluster.instanceId, held: cluster.held().size, singletons: [...running].sort(), at: Date.now() }) + "\n");
for (const name of ["maintenance", "deletions", "warehouse"] as const) {
  cluster.singleton(name, {
    start: () => (running.add(name), report()),
    stop: async () => void (running.delete(name), report()),
  });
}
cluster.onPartitions(report);
process.on("SIGTERM", async () => {
  await cluster.stop();
  process.stdout.write(JSON.stringify({ id: cluster.instanceId, stopped: true }) + "\n");
  await sql.close();
  process.exit(0);
});
await cluster.start();
report();
