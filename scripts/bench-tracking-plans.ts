/**
 * The processor with a tracking plan: how many events a second it checks and fans out on one
 * core, against the same run without a plan (the targets: ≥ 20,000 events/s, ≥ 0.5 of
 * the run without). In-process, no HTTP: a data dir is made by Sluice itself (a source, a
 * WEBHOOK destination, a 50-event plan), 40,000 track events of those 50 names are written into
 * its events table, and the processor is run over them with the stage and without, three times each,
 * alternating; CPU time of this process counts.
 *
 *   npx bun scripts/bench-tracking-plans.ts [--events 40000] [--no-record]
 */
import { Database } from "bun:sqlite";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../db";
import { createSluice } from "../src/app";
import { SqliteConfigStore } from "../src/control-plane/config-store";
import { silentLogger } from "../src/lib/logger";
import { Metrics } from "../src/lib/metrics";
import { Processor } from "../src/pipeline/processor";
import { parseSettings } from "../src/settings";
import { SqliteDeliveriesStore } from "../src/storage/sqlite/deliveries";
import { SqliteTrackingPlanStore } from "../src/storage/sqlite/tracking-plans";
import { TrackingPlanStage } from "../src/tracking-plans/stage";
import { fmt, median, numberArg, record } from "./bench-lib";

const EVENTS = numberArg("--events", 40_000);
const NAMES = Array.from({ length: 50 }, (_, i) => `Event ${i}`);
const plan = {
  id: "tp_bench",
  name: "Bench",
  version: 1,
  events: NAMES.map((name, i) => ({
    id: `ev_${i}`,
    name,
    eventType: "track",
    description: "",
    rules: {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: {
        properties: {
          type: "object",
          properties: { sku: { type: "string" }, price: { type: "number", minimum: 0 }, quantity: { type: "integer" }, tags: { type: "array", items: { type: "string" } }, coupon: { type: ["string", "null"] } },
          required: ["sku", "price"],
          additionalProperties: false,
        },
      },
      required: ["properties"],
    },
  })),
};
const settings = { trackingPlan: { id: "tp_bench", version: 1 }, config: { global: { allowUnplannedEvents: "true", unplannedProperties: "forward", anyOtherViolation: "forward", propagateValidationErrors: "true" } } };

/** A data dir with the source, its destination and the plan, and EVENTS stored events not yet fanned out. */
async function makeDataDir(): Promise<{ dir: string; sourceId: string }> {
  const dir = mkdtempSync(join(tmpdir(), "sluice-bench-tp-"));
  const s = await createSluice(parseSettings(["--data-dir", dir, "--port", "0"], { SLUICE_ADMIN_EMAIL: "bench@example.com", SLUICE_ADMIN_TOKEN: "bench-token-0123456789abcdef" }), { log: silentLogger });
  const app = s.combined.listen({ port: 0, hostname: "127.0.0.1" });
  const url = `http://127.0.0.1:${app.server!.port}`;
  const call = async (method: string, path: string, body: unknown) => {
    const res = await fetch(url + path, { method, headers: { authorization: "Bearer bench-token-0123456789abcdef", "content-type": "application/json" }, body: JSON.stringify(body) });
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<any>;
  };
  const src = await call("POST", "/v2/sources", { name: "bench" });
  // Disabled: fanned out to, never sent, so only the processor works.
  await call("POST", "/v2/destinations", { name: "sink", type: "WEBHOOK", enabled: true, config: { webhookUrl: "http://192.0.2.1/hook" }, sourceIds: [src.id] });
  await call("POST", "/v2/tracking-plans", plan);
  await app.server!.stop(true);
  await s.close();
  const db = new Database(join(dir, "sluice.db"));
  const ws = (db.query("SELECT workspace_id AS w FROM sources WHERE id = ?").get(src.id) as { w: string }).w;
  const insert = db.prepare("INSERT INTO events (workspace_id, source_id, message_id, user_key, type, payload, received_at) VALUES (?, ?, ?, ?, 'track', ?, ?)");
  db.transaction(() => {
    for (let i = 0; i < EVENTS; i++) {
      const event = {
        type: "track",
        event: NAMES[i % NAMES.length],
        userId: `user-${i % 500}`,
        messageId: `m-${i}`,
        properties: i % 10 === 0 ? { sku: 42, price: -1, extra: true } : { sku: `sku-${i}`, price: i * 0.5, quantity: i % 7, tags: ["a", "b"], coupon: null },
        context: { library: { name: "bench" }, ip: "203.0.113.5" },
        receivedAt: "2026-12-07T12:00:00.000Z",
        sentAt: "2026-12-07T12:00:00.000Z",
        originalTimestamp: "2026-12-07T12:00:00.000Z",
        timestamp: "2026-12-07T12:00:00.000Z",
        request_ip: "203.0.113.5",
      };
      insert.run(ws, src.id, event.messageId, event.userId, JSON.stringify(event), Date.now());
    }
  })();
  db.close();
  return { dir, sourceId: src.id };
}

/** Fans out every stored event once, with or without the plan; events/s over this process's CPU time. */
async function run(template: string, sourceId: string, stage: TrackingPlanStage | undefined): Promise<number> {
  const withPlan = stage !== undefined;
  const dir = mkdtempSync(join(tmpdir(), "sluice-bench-tp-run-"));
  cpSync(template, dir, { recursive: true });
  const db = openDatabase(join(dir, "sluice.db"));
  try {
    if (withPlan) db.$client.prepare("UPDATE sources SET tracking_plan_config = ? WHERE id = ?").run(JSON.stringify(settings), sourceId);
    const config = new SqliteConfigStore(db);
    const processor = new Processor(new SqliteDeliveriesStore(db), config, silentLogger, Date.now);
    if (withPlan) processor.useTrackingPlans(stage);
    const last = (db.$client.query("SELECT max(id) AS m FROM events").get() as { m: number }).m;
    const cpu0 = process.cpuUsage();
    while (processor.routedUpTo < last) await processor.run();
    const cpu = process.cpuUsage(cpu0);
    const deliveries = (db.$client.query("SELECT count(*) AS n FROM deliveries").get() as { n: number }).n;
    if (deliveries < EVENTS * 0.8) throw new Error(`only ${deliveries} deliveries for ${EVENTS} events`);
    config.close();
    return EVENTS / ((cpu.user + cpu.system) / 1e6);
  } finally {
    db.$client.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const { dir, sourceId } = await makeDataDir();
try {
  const without: number[] = [];
  const withPlan: number[] = [];
  // One stage for every run with the plan, as a server keeps one: the plan version compiled once
  // (at its first event) and its validators warmed by the JIT, not compiled again in each run.
  const templateDb = openDatabase(join(dir, "sluice.db"));
  const stage = new TrackingPlanStage(new SqliteTrackingPlanStore(templateDb), silentLogger, new Metrics());
  const ws = (templateDb.$client.query("SELECT workspace_id AS w FROM sources WHERE id = ?").get(sourceId) as { w: string }).w;
  await stage.prepare(ws, stage.settingsOf(settings)!);
  templateDb.$client.close();
  await run(dir, sourceId, stage); // warm-up: the JIT
  for (let r = 0; r < 3; r++) {
    without.push(await run(dir, sourceId, undefined));
    withPlan.push(await run(dir, sourceId, stage));
  }
  const a = median(withPlan);
  const b = median(without);
  const lines = [
    `| Run | events/s on one core (median of 3; each) |`,
    `| --- | --- |`,
    `| processor, no plan | ${fmt(b)} (${without.map((x) => fmt(x)).join(", ")}) |`,
    `| processor, 50-event plan (10% of events violating) | ${fmt(a)} (${withPlan.map((x) => fmt(x)).join(", ")}) |`,
    "",
    `${fmt(EVENTS)} stored track events of 50 names fanned out to one destination, by the processor alone in this process (no HTTP, no router), per CPU second of this process; with the plan each event is parsed and validated; one with violations is stored annotated, a valid one's deliveries carry its annotation. The plan is compiled once, before the runs, as a server compiles a version at its first event.`,
  ];
  const latest = `with a 50-event plan ${fmt(a)} events/s on one core (≥ 20,000: ${a >= 20_000 ? "met" : "not met"}), ${fmt(a / b, 2)} of the same run without a plan (≥ 0.5: ${a / b >= 0.5 ? "met" : "not met"}).`;
  if (process.argv.includes("--no-record")) console.log([...lines, "", latest].join("\n"));
  else await record({ name: "tracking-plans", title: "Tracking plans", command: `npx bun scripts/bench-tracking-plans.ts --events ${EVENTS}`, lines, latest });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
