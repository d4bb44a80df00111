/**
 * Upgrades keep data: every data dir under test/fixtures/datadirs/ (one per release, made by
 * scripts/make-upgrade-fixture.ts with that release's code) opens in this Sluice, is migrated,
 * and keeps its sources, destinations, tokens, transformation, regulation and queued events,
 * which are delivered once a sink listens. A data dir written by a newer Sluice is refused.
 */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { cpSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { type Db, migrate, openDatabase } from "../../db";
import { journal } from "../../db/migrations";
import { VERSION, versionName, versionNumber } from "../../src/version";
import { api, basic, cleanup, spawnSluice, startSink, tempDir, waitFor } from "../support/helpers";

const FIXTURES = join(import.meta.dir, "../fixtures", "datadirs");
const releases = readdirSync(FIXTURES).filter((d) => existsSync(join(FIXTURES, d, "fixture.json")));

interface Fixture {
  version: string;
  owner: { email: string; token: string };
  tokens: Array<{ id: string; name: string; token: string }>;
  sources: Array<{ id: string; name: string; writeKey: string }>;
  destinations: Array<{ id: string; name: string; type: string; enabled: boolean; queued: number; transformationId?: string }>;
  transformations: Array<{ id: string; name: string; marks: { property: string; value: string } }>;
  regulations: Array<{ id: string; regulationType: string; userId: string }>;
  suppressedUserId: string;
  queuedMessageIds: Record<string, string[]>;
}

function copyFixture(release: string): { dir: string; fixture: Fixture } {
  const dir = tempDir("sluice-upgrade-");
  cpSync(join(FIXTURES, release), dir, { recursive: true });
  return { dir, fixture: JSON.parse(readFileSync(join(dir, "fixture.json"), "utf8")) };
}

const userVersion = (file: string) => {
  const db = new Database(file, { readonly: true });
  try {
    return (db.query("PRAGMA user_version").get() as { user_version: number }).user_version;
  } finally {
    db.close();
  }
};

test("there is a fixture data dir for the first release", () => {
  expect(releases).toContain("0.1.0");
});

for (const release of releases) {
  test(`a data dir written by Sluice ${release} opens, is migrated and keeps everything; its queued events are delivered`, async () => {
    const { dir, fixture } = copyFixture(release);
    expect(userVersion(join(dir, "sluice.db"))).toBeLessThan(versionNumber(VERSION));
    const sink = startSink();
    // Never give up on a delivery here: the fixture's first attempts were long ago.
    const server = await spawnSluice({ dataDir: dir, args: ["--destination-base-url", `AM=${sink.url}`, "--retry-backoff-ms", "20", "--retry-min-attempts", "1000"] });
    try {
      const [hook, amplitude, disabled] = fixture.destinations;
      const owner = fixture.owner.token;
      // The queued webhook deliveries still point at the closed port: move them to the sink.
      const patched = await api(server.url, "PATCH", `/v2/destinations/${hook.id}`, { config: { webhookUrl: `${sink.url}/hook`, webhookMethod: "POST" } }, owner);
      expect(patched.status).toBe(200);

      // Tokens: the owner's and the extra one still authenticate; a wrong one does not.
      expect((await api(server.url, "GET", "/v2/sources", undefined, "not-a-token-0123456789")).status).toBe(401);
      const tokens = await api(server.url, "GET", "/v2/tokens", undefined, fixture.tokens[0].token);
      expect(tokens.status).toBe(200);
      expect(JSON.stringify(tokens.json)).toContain(fixture.tokens[0].id);

      const sources = await api(server.url, "GET", "/v2/sources", undefined, owner);
      expect(sources.status).toBe(200);
      const sourceList = sources.json.sources as any[];
      for (const s of fixture.sources) expect(sourceList.find((x) => x.id === s.id)).toMatchObject({ name: s.name, writeKey: s.writeKey });

      const destinations = await api(server.url, "GET", "/v2/destinations", undefined, owner);
      const destinationList = destinations.json.destinations as any[];
      for (const d of fixture.destinations) {
        expect(destinationList.find((x) => x.id === d.id)).toMatchObject({ name: d.name, type: d.type, enabled: d.enabled });
      }
      expect(destinationList.find((x) => x.id === hook.id).transformationId).toBe(hook.transformationId!);

      const transformations = await api(server.url, "GET", "/v2/transformations", undefined, owner);
      const transformationList = transformations.json.transformations as any[];
      for (const t of fixture.transformations) expect(transformationList.find((x) => x.id === t.id)).toMatchObject({ name: t.name });

      const regulations = await api(server.url, "GET", "/v2/regulations", undefined, owner);
      for (const r of fixture.regulations) {
        expect(regulations.json.data.find((x: any) => x.id === r.id)).toMatchObject({ regulationType: r.regulationType, canceled: false, attributes: { userId: r.userId } });
      }

      // Every queued event reaches the sink: through the transformation to the webhook, and to Amplitude.
      const queued = Object.values(fixture.queuedMessageIds).flat();
      const webMessageIds = fixture.queuedMessageIds[fixture.sources[0].id];
      const seen = (path: string) => sink.received.filter((r) => r.path === path).map((r) => JSON.stringify(r.body));
      await waitFor(() => queued.every((id) => seen("/hook").some((b) => b.includes(`"messageId":"${id}"`))), { timeoutMs: 20_000, what: "the queued webhook events at the sink" });
      await waitFor(() => webMessageIds.every((id) => [...seen("/2/httpapi"), ...seen("/batch")].some((b) => b.includes(`"insert_id":"${id}"`))), { timeoutMs: 20_000, what: "the queued Amplitude events at the sink" });
      const mark = fixture.transformations[0].marks;
      for (const r of sink.received.filter((x) => x.path === "/hook")) expect(r.body.properties[mark.property]).toBe(mark.value);
      // Outcomes are written after the answers arrive, and an answer slower than the time-out on
      // a loaded machine is retried (a duplicate at the sink, at least once): poll until settled.
      for (const d of [hook, amplitude, disabled]) {
        const counts = await waitFor(
          async () => {
            const c = (await api(server.url, "GET", `/v2/destinations/${d.id}/stats`, undefined, owner)).json.counts;
            return c.pending === 0 && c.retrying === 0 ? c : undefined;
          },
          { timeoutMs: 20_000, what: `every delivery of ${d.id} settled` },
        );
        expect(counts).toMatchObject({ succeeded: d.queued, aborted: 0, pending: 0, retrying: 0 });
      }

      // Write keys still take events, and the suppression still holds.
      const [web] = fixture.sources;
      const res = await fetch(`${server.url}/v1/batch`, {
        method: "POST",
        headers: { authorization: basic(web.writeKey), "content-type": "application/json" },
        body: JSON.stringify({
          batch: [
            { type: "track", event: "After Upgrade", userId: fixture.suppressedUserId, messageId: "after-suppressed" },
            { type: "track", event: "After Upgrade", userId: "after-user", messageId: "after-1" },
          ],
        }),
      });
      expect(res.status).toBe(200);
      await waitFor(() => seen("/hook").some((b) => b.includes('"after-1"')), { what: "the new event at the sink" });
      expect(seen("/hook").some((b) => b.includes('"after-suppressed"'))).toBe(false);
      expect(await (await fetch(`${server.url}/metrics`)).text()).toMatch(/sluice_events_suppressed_total(\{[^}]*\})? 1\b/);
    } finally {
      server.proc.kill("SIGTERM");
      expect(await server.proc.exited).toBe(0);
      sink.stop();
    }
    // The file now says which Sluice wrote it, and has every migration.
    expect(versionName(userVersion(join(dir, "sluice.db")))).toBe(VERSION);
    const db = new Database(join(dir, "sluice.db"), { readonly: true });
    expect((db.query("SELECT count(*) AS n FROM __drizzle_migrations").get() as { n: number }).n).toBe(journal.entries.length);
    db.close();
    cleanup(dir);
  }, 45_000);
}

describe("every earlier state of the schema migrates", () => {
  test("the migrations journal only grows: each entry is newer than the one before (drizzle applies only those newer than the newest applied)", () => {
    const whens = journal.entries.map((e) => e.when);
    for (let i = 1; i < whens.length; i++) expect(whens[i]).toBeGreaterThan(whens[i - 1]);
  });

  test("a file with only the first k migrations ends with the same schema as a new one, for every k", () => {
    const dir = tempDir();
    const schemaOf = (db: Db) =>
      db.$client.query("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name").all();
    const fresh = openDatabase(join(dir, "fresh.db"));
    const want = schemaOf(fresh);
    fresh.$client.close();
    for (let k = 1; k < journal.entries.length; k++) {
      const file = join(dir, `after-${k}.db`);
      const early = new Database(file, { create: true, strict: true });
      migrate(drizzle({ client: early }) as unknown as Db, k);
      early.close();
      const db = openDatabase(file);
      expect(schemaOf(db)).toEqual(want);
      expect((db.$client.query("SELECT count(*) AS n FROM __drizzle_migrations").get() as { n: number }).n).toBe(journal.entries.length);
      db.$client.close();
    }
    cleanup(dir);
  });
});

describe("a data dir written by a newer Sluice is refused at start", () => {
  /** Runs `sluice serve` on dir until it exits; start-up refusals exit at once. */
  async function refusedStart(dir: string) {
    const proc = Bun.spawn([process.execPath, join(import.meta.dir, "../..", "src", "main.ts"), "serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", dir], {
      env: { ...process.env, SLUICE_ADMIN_TOKEN: "test-admin-token-0123456789" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    return { code, stderr };
  }

  test("its recorded version is higher: one line naming both versions, exit code 2, the file untouched", async () => {
    const { dir } = copyFixture("0.1.0");
    const file = join(dir, "sluice.db");
    const newer = versionName(versionNumber(VERSION) + 1_000);
    const db = new Database(file);
    db.exec(`PRAGMA user_version = ${versionNumber(newer)}`);
    db.close();
    const before = readFileSync(file);
    const { code, stderr } = await refusedStart(dir);
    expect(code).toBe(2);
    expect(stderr).toBe(`sluice: data dir ${dir} was written by Sluice ${newer}; this is Sluice ${VERSION}. Upgrade Sluice, or restore a backup made by ${VERSION}.\n`);
    expect(readFileSync(file).equals(before)).toBe(true);
    cleanup(dir);
  });

  test("its migrations journal has an entry this Sluice does not know: refused the same way", async () => {
    const { dir } = copyFixture("0.1.0");
    const db = new Database(join(dir, "sluice.db"));
    const newest = Math.max(...journal.entries.map((e) => e.when));
    db.query("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('from-a-newer-release', ?)").run(newest + 1);
    db.close();
    const { code, stderr } = await refusedStart(dir);
    expect(code).toBe(2);
    expect(stderr).toBe(
      `sluice: data dir ${dir} was written by a newer Sluice (its database has migrations this version does not know); this is Sluice ${VERSION}. Upgrade Sluice, or restore a backup made by ${VERSION}.\n`,
    );
    cleanup(dir);
  });

  test("the same version opens (the check refuses only what is newer)", async () => {
    const dir = tempDir();
    const first = openDatabase(join(dir, "sluice.db"));
    first.$client.close();
    expect(versionName(userVersion(join(dir, "sluice.db")))).toBe(VERSION);
    const again = openDatabase(join(dir, "sluice.db"));
    again.$client.close();
    cleanup(dir);
  });
});
