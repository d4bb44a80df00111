/**
 * Cluster start (issue "RudderStack workspaces run on Sluice as they ran before", point 8):
 * instances started at the same moment with the same workspace file on one PostgreSQL all
 * start, and the cluster holds one copy of each object the file names. Before, each planned
 * inserts against a database the others had not written yet, and all but one exited on the
 * unique write key.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type SluiceProcess, cleanup, sendEvent, spawnSluice, startSink, tempDir, waitFor } from "../support/helpers";
import { PG_URL, havePostgres, pgScratch, requirePostgres } from "../support/pg";

requirePostgres("cluster-start.test.ts");

const INSTANCES = 5;

describe.if(havePostgres)("cluster start: instances started at once with one workspace file", () => {
  const scratch = pgScratch("t_cstart");

  test(`${INSTANCES} instances started together all start, with one copy of each object`, async () => {
    const schema = scratch.schema();
    const sink = startSink();
    scratch.onStop(async () => sink.stop());
    const dir = tempDir();
    scratch.onStop(async () => cleanup(dir));
    const config = join(dir, "workspace.yaml");
    await Bun.write(
      config,
      [
        "sources:",
        "  - { name: web, writeKey: cluster-start-web-key-01 }",
        "  - { name: app, writeKey: cluster-start-app-key-01 }",
        "destinations:",
        `  - { name: hook, type: WEBHOOK, config: { webhookUrl: "${sink.url}/hook" }, sources: [web, app] }`,
        `  - { name: other, type: WEBHOOK, config: { webhookUrl: "${sink.url}/other" }, sources: [web] }`,
        "transformations:",
        "  - { name: tag, code: 'export function transformEvent(e) { e.tagged = true; return e; }', destinations: [hook] }",
        "",
      ].join("\n"),
    );

    // All at once: none waits for another to be up before it starts.
    const outcomes = await Promise.allSettled(
      Array.from({ length: INSTANCES }, () => spawnSluice({ args: ["--database", PG_URL, "--database-schema", schema, "--config", config] })),
    );
    const started = outcomes.filter((o): o is PromiseFulfilledResult<SluiceProcess> => o.status === "fulfilled").map((o) => o.value);
    for (const p of started) {
      scratch.onStop(async () => {
        p.proc.kill(9);
        await p.proc.exited;
        await cleanup(p.dataDir);
      });
    }
    const failures = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected").map((o) => String(o.reason?.message ?? o.reason).slice(0, 2000));
    expect(failures).toEqual([]);
    expect(started).toHaveLength(INSTANCES);

    const count = async (table: string) =>
      (await scratch.admin.unsafe(`SELECT name, CAST(count(*) AS INTEGER) AS n FROM "${schema}".${table} GROUP BY name ORDER BY name`)).map((r: any) => [r.name, r.n]);
    expect(await count("sources")).toEqual([["app", 1], ["web", 1]]);
    expect(await count("destinations")).toEqual([["hook", 1], ["other", 1]]);
    expect(await count("transformations")).toEqual([["tag", 1]]);
    const [links] = await scratch.admin.unsafe(`SELECT CAST(count(*) AS INTEGER) AS n FROM "${schema}".connections`);
    expect(links.n).toBe(3);
    // The file's code is one version: the instances that came later found it unchanged.
    const [versions] = await scratch.admin.unsafe(`SELECT CAST(count(*) AS INTEGER) AS n FROM "${schema}".transformation_versions`);
    expect(versions.n).toBe(1);

    // Every instance serves the file's sources, and events reach the destination once, transformed.
    for (const [i, p] of started.entries()) {
      expect((await sendEvent(p.url, "cluster-start-web-key-01", "track", { userId: `u${i}`, event: "started", messageId: `m${i}` })).status).toBe(200);
    }
    await waitFor(() => new Set(sink.received.filter((r) => r.path === "/hook").map((r) => r.body.messageId)).size === INSTANCES, {
      timeoutMs: 20_000,
      what: "one event from each instance at the sink",
    });
    expect(sink.received.filter((r) => r.path === "/hook").every((r) => r.body.tagged === true)).toBe(true);
  }, 120_000);
});
