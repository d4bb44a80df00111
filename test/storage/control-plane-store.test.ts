/**
 * The control plane's storage seam (cluster mode, issue 24): one contract, run against the SQLite
 * store (a data dir opened as the server opens it) and the PostgreSQL store (its own schema,
 * dropped after). Reads, every write operation, a write's all-or-nothing, the 409 a unique index
 * gives, the services and the workspace file running on the store alone, and on PostgreSQL the
 * 'config' epoch bumped in the write's own transaction.
 */
import { describe, expect, test } from "bun:test";
import type { SQL } from "bun";
import { eq } from "drizzle-orm";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { schema as pgSchema, type PgDb } from "../../db/pg";
import { workspaces } from "../../db/schema";
import { createConnection, deleteConnection, listConnections } from "../../src/control-plane/connections";
import { createDestination, getDestination, listDestinations, updateDestination } from "../../src/control-plane/destinations";
import { createSource, getSource, listSources, updateSource } from "../../src/control-plane/sources";
import { ClusterConfigStore } from "../../src/control-plane/config-store";
import { Bus, EpochWatch } from "../../src/cluster/bus";
import type { ControlPlaneStore, ControlPlaneWrite, DestinationRow, SourceRow, TransformationRow } from "../../src/control-plane/store";
import { authenticateRequest } from "../../src/control-plane/auth";
import { ensureOwner } from "../../src/control-plane/bootstrap";
import { createToken, createTokenForEmail, listTokens, revokeToken, touchToken, verifyToken } from "../../src/control-plane/tokens";
import { sessionPrincipal, signIn, signOut } from "../../src/control-plane/sessions";
import { createTransformation, getTransformation, listTransformationVersions, listTransformations } from "../../src/control-plane/transformations";
import { WorkspaceFileError, applyWorkspaceFile } from "../../src/control-plane/workspace-file";
import type { ScopedContext } from "../../src/control-plane/context";
import { AppError } from "../../src/lib/errors";
import { newId } from "../../src/lib/ids";
import { PgControlPlaneStore, type PgControlPlaneStoreOptions, type PgControlPlaneTx } from "../../src/storage/postgres/control-plane";
import { SqliteControlPlaneStore } from "../../src/storage/sqlite/control-plane";
import { cleanup, tempDir, waitFor } from "../support/helpers";
import { havePostgres, requirePostgres } from "../support/pg";
import { storeScratch } from "../support/stores";

requirePostgres("control-plane-store.test.ts");

const scratch = storeScratch("t_cpstore");

interface Opened {
  store: ControlPlaneStore;
  /** Two workspaces: reads of one never see the other's rows. */
  ws: string;
  other: string;
  dir: string;
  /** PostgreSQL: a connection on the test's schema. */
  sql?: SQL;
  /** PostgreSQL: the 'config' epoch as the database has it. */
  epoch?: () => Promise<number>;
  /** PostgreSQL: the same schema with another store's options (another instance). */
  reopen?: (opts: PgControlPlaneStoreOptions) => Promise<ControlPlaneStore>;
  /** PostgreSQL: another client on the same schema (another instance's). */
  connect?: () => Promise<PgDb>;
}

/** `empty`: no workspace yet, as on a first start. */
async function openSqlite(empty = false): Promise<Opened> {
  const { db, dir } = scratch.sqlite();
  const ws = newId("ws");
  const other = newId("ws");
  if (!empty) db.insert(workspaces).values([{ id: ws, name: "main", createdAt: 1 }, { id: other, name: "other", createdAt: 1 }]).run();
  return { store: new SqliteControlPlaneStore(db), ws, other, dir };
}

async function openPg(empty = false): Promise<Opened> {
  const { open } = scratch.pgSchema();
  // For the workspace file the tests write.
  const dir = tempDir();
  scratch.onStop(() => cleanup(dir));
  const db = await open();
  const ws = newId("ws");
  const other = newId("ws");
  if (!empty) await db.insert(pgSchema.workspaces).values([{ id: ws, name: "main", createdAt: 1 }, { id: other, name: "other", createdAt: 1 }]);
  const epoch = async () => Number((await db.$client`SELECT value FROM cluster_epochs WHERE name = 'config'`)[0].value);
  return { store: new PgControlPlaneStore(db), ws, other, dir, sql: db.$client, epoch, reopen: async (opts) => new PgControlPlaneStore(await open(), opts), connect: open };
}

let clock = 1_760_000_000_000;
const tick = () => ++clock;

function sourceRow(workspaceId: string, name: string, over: Partial<SourceRow> = {}): SourceRow {
  const at = tick();
  return { id: newId("src"), workspaceId, name, writeKey: `wk-${crypto.randomUUID()}`, enabled: true, settings: {}, createdAt: at, updatedAt: at, ...over };
}

function destinationRow(workspaceId: string, name: string, over: Partial<DestinationRow> = {}): DestinationRow {
  const at = tick();
  return { id: newId("dst"), workspaceId, name, type: "WEBHOOK", config: { webhookUrl: "http://127.0.0.1:9/x" }, enabled: true, createdAt: at, updatedAt: at, ...over };
}

function transformationRow(workspaceId: string, name: string): TransformationRow {
  const at = tick();
  return { id: newId("trf"), workspaceId, name, versionId: newId("trv"), createdAt: at, updatedAt: at };
}

/** What a failed write must have left: nothing of its operations. */
async function nothingOf(store: ControlPlaneStore, ws: string, names: { sources?: string[]; destinations?: string[]; transformations?: string[] }) {
  for (const n of names.sources ?? []) expect(await store.sourceByName(ws, n)).toBeUndefined();
  for (const n of names.destinations ?? []) expect(await store.destinationByName(ws, n)).toBeUndefined();
  for (const n of names.transformations ?? []) expect(await store.transformationByName(ws, n)).toBeUndefined();
}

/** The services need only the store, the config cache's `written`, a clock and the workspace. */
function serviceContext(o: Opened): ScopedContext & { invalidations: number } {
  const ctx = { controlPlane: o.store, workspaceId: o.ws, now: () => Date.now(), invalidations: 0 } as unknown as ScopedContext & { invalidations: number };
  // No running configuration: nothing is held (destinations present heldReason from it).
  (ctx as any).config = { written: () => ctx.invalidations++, snapshot: () => ({ destinations: new Map() }) };
  return ctx;
}

const CODE = "export function transformEvent(event) { return event; }";

/** Cluster mode on the test's schema: a store that notifies, its bus and epoch watch, and ClusterConfigStore loaded. */
async function clusterInstance(o: Opened, id: string, pollMs = 1000) {
  const db = await o.connect!();
  const bus = new Bus({ sql: db.$client, instanceId: id });
  await bus.start();
  const watch = new EpochWatch({ bus, pollMs });
  const store = new PgControlPlaneStore(db, { afterWrite: (tx, epoch) => bus.publish("config", { epoch }, tx) });
  const config = new ClusterConfigStore(store, watch);
  scratch.onStop(async () => {
    await watch.stop();
    await bus.stop();
  });
  await watch.start();
  return { store, config, bus, watch };
}

/** An account of the workspace, and the principal its tokens would carry. */
async function account(store: ControlPlaneStore, workspaceId: string, email: string) {
  const id = newId("acc");
  await store.writeAuth([{ op: "insertAccount", row: { id, workspaceId, email, role: "owner", createdAt: tick() } }]);
  return { accountId: id, workspaceId, email, tokenId: "" };
}

const basic = (email: string, token: string) => `Basic ${Buffer.from(`${email}:${token}`).toString("base64")}`;

const stores: Array<{ name: string; enabled: boolean; open: (empty?: boolean) => Promise<Opened> }> = [
  { name: "SQLite", enabled: true, open: openSqlite },
  { name: "PostgreSQL", enabled: havePostgres, open: openPg },
];

for (const kind of stores) {
  describe.if(kind.enabled)(`control-plane store on ${kind.name}`, () => {
    test("sources: insert, read by id, name and write key, list in creation order, update, delete; scoped to their workspace", async () => {
      const { store, ws, other } = await kind.open();
      const a = sourceRow(ws, "web", { settings: { lenientValidation: true } });
      const b = sourceRow(ws, "backend", { enabled: false });
      const elsewhere = sourceRow(other, "web");
      expect((await store.write([{ op: "insertSource", row: b }, { op: "insertSource", row: a }, { op: "insertSource", row: elsewhere }])).changes).toEqual([1, 1, 1]);

      expect(await store.source(ws, a.id)).toEqual(a);
      expect(await store.source(other, a.id)).toBeUndefined();
      expect(await store.sourceByName(ws, "web")).toEqual(a);
      expect(await store.sourceByName(other, "web")).toEqual(elsewhere);
      expect(await store.sourceByWriteKey(b.writeKey)).toEqual(b);
      // By createdAt, not by the order of insertion.
      expect((await store.sources(ws)).map((s) => s.name)).toEqual(["web", "backend"]);
      expect(await store.existingSourceIds(ws, [a.id, elsewhere.id, "src_nope"])).toEqual(new Set([a.id]));
      expect(await store.existingSourceIds(ws, [])).toEqual(new Set());

      const set = { name: "site", writeKey: "another-key-123", enabled: false, settings: {}, updatedAt: tick() };
      expect((await store.write([{ op: "updateSource", id: a.id, set }])).changes).toEqual([1]);
      expect(await store.source(ws, a.id)).toEqual({ ...a, ...set });
      expect(await store.sourceByName(ws, "web")).toBeUndefined();

      expect((await store.write([{ op: "deleteSource", id: a.id }, { op: "deleteSource", id: a.id }, { op: "updateSource", id: a.id, set }])).changes).toEqual([1, 0, 0]);
      expect(await store.source(ws, a.id)).toBeUndefined();
      expect((await store.sources(ws)).map((s) => s.id)).toEqual([b.id]);
    });

    test("destinations: insert, read, list, update, delete; the config comes back as the object it was", async () => {
      const { store, ws, other } = await kind.open();
      const config = { webhookUrl: "http://h/x", headers: [{ from: "X-Env", to: "prod" }], nested: { n: 1, ok: true, none: null } };
      const d = destinationRow(ws, "hook", { config });
      const e = destinationRow(ws, "amp", { type: "AMPLITUDE", config: { apiKey: "k" } });
      await store.write([{ op: "insertDestination", row: d }, { op: "insertDestination", row: e }, { op: "insertDestination", row: destinationRow(other, "hook") }]);
      expect(await store.destination(ws, d.id)).toEqual(d);
      expect(await store.destination(other, d.id)).toBeUndefined();
      expect(await store.destinationByName(ws, "amp")).toEqual(e);
      expect((await store.destinations(ws)).map((x) => x.id)).toEqual([d.id, e.id]);
      expect(await store.existingDestinationIds(ws, [e.id, "dst_nope"])).toEqual(new Set([e.id]));

      const set = { name: "hook2", config: { webhookUrl: "http://h/y" }, enabled: false, updatedAt: tick() };
      expect((await store.write([{ op: "updateDestination", id: d.id, set }])).changes).toEqual([1]);
      expect(await store.destination(ws, d.id)).toEqual({ ...d, ...set });
      expect((await store.write([{ op: "deleteDestination", id: d.id }])).changes).toEqual([1]);
      expect((await store.destinations(ws)).map((x) => x.id)).toEqual([e.id]);
    });

    test("connections: a destination's sources replaced, connect idempotent, disconnect counted; deletes cascade", async () => {
      const { store, ws, other } = await kind.open();
      const [s1, s2, s3] = [sourceRow(ws, "s1"), sourceRow(ws, "s2"), sourceRow(ws, "s3")];
      const [d1, d2] = [destinationRow(ws, "d1"), destinationRow(ws, "d2")];
      const elsewhere = destinationRow(other, "d1");
      const at = tick();
      const { changes } = await store.write([
        ...[s1, s2, s3].map((row): ControlPlaneWrite => ({ op: "insertSource", row })),
        ...[d1, d2, elsewhere].map((row): ControlPlaneWrite => ({ op: "insertDestination", row })),
        // Duplicates are kept once.
        { op: "setDestinationSources", destinationId: d1.id, sourceIds: [s2.id, s1.id, s2.id], at },
      ]);
      expect(changes.at(-1)).toBe(2);
      expect((await store.connectionsOfDestination(d1.id)).map((c) => c.sourceId)).toEqual([s1.id, s2.id]);
      expect(await store.connectionsOfSource(s1.id)).toEqual([{ sourceId: s1.id, destinationId: d1.id, createdAt: at }]);

      // Replaces: s1 leaves, s3 joins.
      const later = tick();
      expect((await store.write([{ op: "setDestinationSources", destinationId: d1.id, sourceIds: [s3.id, s2.id], at: later }])).changes).toEqual([2]);
      expect((await store.connectionsOfDestination(d1.id)).map((c) => c.sourceId)).toEqual([s2.id, s3.id]);
      expect(await store.connectionsOfSource(s1.id)).toEqual([]);

      const connect: ControlPlaneWrite = { op: "connect", sourceId: s1.id, destinationId: d2.id, at: tick() };
      expect((await store.write([connect])).changes).toEqual([1]);
      expect((await store.write([connect])).changes).toEqual([0]);
      expect((await store.connectionsOfSource(s1.id)).map((c) => c.destinationId)).toEqual([d2.id]);
      // The workspace's connections, oldest first; none of the other workspace's.
      expect((await store.connections(ws)).map((c) => [c.sourceId, c.destinationId])).toEqual([
        [s2.id, d1.id],
        [s3.id, d1.id],
        [s1.id, d2.id],
      ]);
      expect(await store.connections(other)).toEqual([]);

      const disconnect: ControlPlaneWrite = { op: "disconnect", sourceId: s1.id, destinationId: d2.id };
      expect((await store.write([disconnect])).changes).toEqual([1]);
      expect((await store.write([disconnect])).changes).toEqual([0]);

      await store.write([{ op: "deleteSource", id: s2.id }]);
      expect((await store.connectionsOfDestination(d1.id)).map((c) => c.sourceId)).toEqual([s3.id]);
      await store.write([{ op: "deleteDestination", id: d1.id }]);
      expect(await store.connectionsOfSource(s3.id)).toEqual([]);
      expect(await store.connections(ws)).toEqual([]);
    });

    test("transformations: the first version with the row, new versions newest first, destinations set and moved, deletes cascade", async () => {
      const { store, ws } = await kind.open();
      const [d1, d2, d3] = [destinationRow(ws, "d1"), destinationRow(ws, "d2"), destinationRow(ws, "d3")];
      const t = transformationRow(ws, "tag");
      const u = transformationRow(ws, "other");
      const { changes } = await store.write([
        ...[d1, d2, d3].map((row): ControlPlaneWrite => ({ op: "insertDestination", row })),
        { op: "insertTransformation", row: t, code: "v1" },
        { op: "insertTransformation", row: u, code: "u1" },
        { op: "setTransformationDestinations", transformationId: t.id, destinationIds: [d2.id, d1.id, d2.id] },
        { op: "attachTransformation", destinationId: d3.id, transformationId: u.id },
      ]);
      expect(changes.slice(3)).toEqual([1, 1, 2, 1]);
      expect(await store.transformation(ws, t.id)).toEqual(t);
      expect(await store.transformationByName(ws, "other")).toEqual(u);
      expect((await store.transformations(ws)).map((x) => x.id)).toEqual([t.id, u.id]);
      expect(await store.versionCode(t.versionId)).toBe("v1");
      expect(await store.transformationVersions(t.id)).toEqual([{ id: t.versionId, transformationId: t.id, code: "v1", createdAt: t.createdAt }]);
      expect(await store.destinationIdsOfTransformation(t.id)).toEqual([d1.id, d2.id].sort());
      expect(await store.transformationIdOfDestination(d3.id)).toBe(u.id);

      // A new version in the same millisecond as the first: the id breaks the tie.
      const v2 = { id: newId("trv"), transformationId: t.id, code: "v2", createdAt: t.createdAt };
      const up = await store.write([
        { op: "updateTransformation", id: t.id, set: { versionId: v2.id, updatedAt: tick() } },
        { op: "insertTransformationVersion", row: v2 },
      ]);
      expect(up.changes).toEqual([1, 1]);
      expect((await store.transformationVersions(t.id)).map((v) => v.code)).toEqual(["v2", "v1"]);
      expect(await store.transformationVersion(t.id, v2.id)).toEqual(v2);
      expect(await store.transformationVersion(u.id, v2.id)).toBeUndefined();
      expect(await store.versionCode((await store.transformation(ws, t.id))!.versionId)).toBe("v2");

      // Exactly d3 now: d1 and d2 leave, d3 moves over from u.
      await store.write([{ op: "setTransformationDestinations", transformationId: t.id, destinationIds: [d3.id] }]);
      expect(await store.destinationIdsOfTransformation(t.id)).toEqual([d3.id]);
      expect(await store.destinationIdsOfTransformation(u.id)).toEqual([]);
      expect(await store.transformationIdOfDestination(d1.id)).toBeUndefined();
      // Attaching replaces the destination's one transformation.
      await store.write([{ op: "attachTransformation", destinationId: d3.id, transformationId: u.id }, { op: "attachTransformation", destinationId: d1.id, transformationId: t.id }]);
      expect((await store.attachments(ws)).sort((a, b) => a.destinationId.localeCompare(b.destinationId))).toEqual(
        [
          { destinationId: d1.id, transformationId: t.id },
          { destinationId: d3.id, transformationId: u.id },
        ].sort((a, b) => a.destinationId.localeCompare(b.destinationId)),
      );

      expect((await store.write([{ op: "deleteTransformation", id: t.id }])).changes).toEqual([1]);
      expect(await store.transformation(ws, t.id)).toBeUndefined();
      expect(await store.transformationVersions(t.id)).toEqual([]);
      expect(await store.transformationIdOfDestination(d1.id)).toBeUndefined();
      expect(await store.transformationIdOfDestination(d3.id)).toBe(u.id);
    });

    test("a write whose last operation fails leaves nothing of the earlier ones (foreign key to a missing destination)", async () => {
      const { store, ws } = await kind.open();
      const s = sourceRow(ws, "s");
      const d = destinationRow(ws, "d");
      const t = transformationRow(ws, "t");
      const write = store.write([
        { op: "insertSource", row: s },
        { op: "insertDestination", row: d },
        { op: "setDestinationSources", destinationId: d.id, sourceIds: [s.id], at: tick() },
        { op: "insertTransformation", row: t, code: CODE },
        { op: "attachTransformation", destinationId: d.id, transformationId: t.id },
        { op: "connect", sourceId: s.id, destinationId: "dst_missing", at: tick() },
      ]);
      await expect(write).rejects.toThrow();
      await nothingOf(store, ws, { sources: ["s"], destinations: ["d"], transformations: ["t"] });
      expect(await store.connections(ws)).toEqual([]);
      expect(await store.versionCode(t.versionId)).toBeUndefined();
      // The store still works after the rollback.
      expect((await store.write([{ op: "insertSource", row: s }])).changes).toEqual([1]);
    });

    test("a unique index hit is the service's error, and the write is undone: names per workspace (409), write keys everywhere (400 that does not say the key is in use)", async () => {
      const { store, ws, other } = await kind.open();
      const web = sourceRow(ws, "web");
      const hook = destinationRow(ws, "hook");
      const tag = transformationRow(ws, "tag");
      await store.write([{ op: "insertSource", row: web }, { op: "insertDestination", row: hook }, { op: "insertTransformation", row: tag, code: CODE }]);

      const cases: Array<[ControlPlaneWrite, string, string]> = [
        [{ op: "insertSource", row: sourceRow(ws, "web") }, "CONFLICT", "name: a source named 'web' already exists"],
        [{ op: "insertSource", row: sourceRow(other, "elsewhere", { writeKey: web.writeKey }) }, "BAD_REQUEST", "writeKey: choose another write key"],
        [{ op: "insertDestination", row: destinationRow(ws, "hook") }, "CONFLICT", "name: a destination named 'hook' already exists"],
        [{ op: "insertTransformation", row: transformationRow(ws, "tag"), code: CODE }, "CONFLICT", "name: a transformation named 'tag' already exists"],
      ];
      for (const [op, code, message] of cases) {
        const fresh = sourceRow(ws, `fresh-${crypto.randomUUID()}`);
        const err = await store.write([{ op: "insertSource", row: fresh }, op]).catch((e) => e);
        expect(err).toBeInstanceOf(AppError);
        expect(err).toMatchObject({ code, message });
        await nothingOf(store, ws, { sources: [fresh.name] });
      }
      // Renaming onto a taken name (an update's own name is in the message).
      const mobile = sourceRow(ws, "mobile");
      await store.write([{ op: "insertSource", row: mobile }]);
      const err = await store.write([{ op: "updateSource", id: mobile.id, set: { name: "web", updatedAt: tick() } }]).catch((e) => e);
      expect(err).toMatchObject({ code: "CONFLICT", message: "name: a source named 'web' already exists" });
      // The same name in another workspace is fine.
      expect((await store.write([{ op: "insertSource", row: sourceRow(other, "web") }])).changes).toEqual([1]);
    });

    test("the services run on the store alone: create, read, connect, disconnect (a second disconnect is a 404), conflicts", async () => {
      const o = await kind.open();
      const ctx = serviceContext(o);
      const src = await createSource(ctx, { name: "web" });
      const dst = await createDestination(ctx, { name: "hook", type: "WEBHOOK", config: { webhookUrl: "http://127.0.0.1:9/x" }, sourceIds: [src.id] });
      expect(dst).toMatchObject({ name: "hook", sourceIds: [src.id], transformationId: null });
      expect((await getSource(ctx, src.id)).destinationIds).toEqual([dst.id]);
      await expect(createSource(ctx, { name: "web" })).rejects.toMatchObject({ code: "CONFLICT" });
      await expect(createSource(ctx, { name: "web2", writeKey: src.writeKey })).rejects.toMatchObject({ code: "BAD_REQUEST", message: "writeKey: choose another write key" });
      await expect(createDestination(ctx, { name: "d2", type: "WEBHOOK", config: { webhookUrl: "http://h/" }, sourceIds: ["src_nope"] })).rejects.toMatchObject({
        code: "BAD_REQUEST",
        message: "sourceIds: source 'src_nope' not found in this workspace",
      });

      await deleteConnection(ctx, { sourceId: src.id, destinationId: dst.id });
      await expect(deleteConnection(ctx, { sourceId: src.id, destinationId: dst.id })).rejects.toMatchObject({ code: "NOT_FOUND" });
      expect(await listConnections(ctx)).toEqual([]);
      await createConnection(ctx, { sourceId: src.id, destinationId: dst.id });
      await createConnection(ctx, { sourceId: src.id, destinationId: dst.id });
      expect((await listConnections(ctx)).map((c) => c.sourceId)).toEqual([src.id]);

      const t = await createTransformation(ctx, { name: "tag", code: CODE, destinationIds: [dst.id] });
      expect((await getDestination(ctx, dst.id)).transformationId).toBe(t.id);
      expect((await listTransformations(ctx)).map((x) => [x.name, x.code, x.destinationIds])).toEqual([["tag", CODE, [dst.id]]]);
      expect((await updateSource(ctx, src.id, { settings: { lenientValidation: true } })).settings).toEqual({ lenientValidation: true });
      expect((await updateDestination(ctx, dst.id, { sourceIds: [] })).sourceIds).toEqual([]);
      expect((await listSources(ctx)).map((s) => s.destinationIds)).toEqual([[]]);
      expect((await listDestinations(ctx)).map((d) => d.transformationId)).toEqual([t.id]);
      // The config cache told of each write that reached the store (the second disconnect too:
      // it moved the epoch on PostgreSQL), of none the service refused before writing.
      expect(ctx.invalidations).toBe(9);
    });

    test("the workspace file on the store: applied as one write, again idempotently, and not at all when one entry clashes", async () => {
      const o = await kind.open();
      const ctx = serviceContext(o);
      const file = join(o.dir, "workspace.yaml");
      const yaml = (url: string, code: string) => `
sources:
  - { name: web, writeKey: fixed-write-key-123 }
  - { name: mobile }
destinations:
  - { name: hook, type: WEBHOOK, config: { webhookUrl: "${url}" }, sources: [web, mobile] }
transformations:
  - { name: tag, code: "${code}", destinations: [hook] }
`;
      writeFileSync(file, yaml("http://127.0.0.1:9/a", CODE));
      expect(await applyWorkspaceFile(ctx, file)).toEqual({ sources: 2, destinations: 1, transformations: 1 });
      const mobileKey = (await o.store.sourceByName(o.ws, "mobile"))!.writeKey;
      const hook = (await listDestinations(ctx))[0];
      expect(hook.sourceIds).toHaveLength(2);
      const tag = (await listTransformations(ctx))[0];
      expect(tag.destinationIds).toEqual([hook.id]);

      // Again with the same code: no new version; a new URL updates the destination in place.
      writeFileSync(file, yaml("http://127.0.0.1:9/b", CODE));
      await applyWorkspaceFile(ctx, file);
      expect((await o.store.sourceByName(o.ws, "mobile"))!.writeKey).toBe(mobileKey);
      expect((await listDestinations(ctx)).map((d) => [d.id, d.config.webhookUrl])).toEqual([[hook.id, "http://127.0.0.1:9/b"]]);
      expect(await listTransformationVersions(ctx, tag.id)).toHaveLength(1);
      // New code: a new version, the same transformation.
      writeFileSync(file, yaml("http://127.0.0.1:9/b", CODE.replace("return event", "return { ...event }")));
      await applyWorkspaceFile(ctx, file);
      expect(await listTransformationVersions(ctx, tag.id)).toHaveLength(2);
      expect((await getTransformation(ctx, tag.id)).code).toContain("{ ...event }");

      // A source the API made holds a key the file gives a new source: nothing of the file applies.
      await createSource(ctx, { name: "api-made", writeKey: "taken-key-456" });
      writeFileSync(file, `sources:\n  - { name: fresh }\n  - { name: clash, writeKey: taken-key-456 }\ndestinations:\n  - { name: hook2, type: WEBHOOK, config: { webhookUrl: "http://h/" }, sources: [fresh] }\n`);
      const err = await applyWorkspaceFile(ctx, file).catch((e) => e);
      expect(err).toBeInstanceOf(WorkspaceFileError);
      expect(err.message).toBe(`${file}: writeKey: choose another write key`);
      await nothingOf(o.store, o.ws, { sources: ["fresh", "clash"], destinations: ["hook2"] });

      // Within one file, a key handed from one source to another is free once the first gives it up.
      writeFileSync(file, `sources:\n  - { name: web, writeKey: moved-key-789 }\n  - { name: newcomer, writeKey: fixed-write-key-123 }\n`);
      await applyWorkspaceFile(ctx, file);
      expect((await o.store.sourceByWriteKey("fixed-write-key-123"))!.name).toBe("newcomer");
    });

    test("tokens: stored as a hash, verified, listed without secrets, touched, revoked; scoped to their account", async () => {
      const o = await kind.open();
      const ctx = serviceContext(o);
      const alice = await account(o.store, o.ws, "alice@example.com");
      const bob = await account(o.store, o.ws, "bob@example.com");
      const mallory = await account(o.store, o.other, "mallory@example.com");

      const first = await createToken(ctx, alice, { name: "ci" });
      const second = await createToken(ctx, alice, { name: "laptop" });
      await createToken(ctx, bob, { name: "bob's" });
      const stored = (await o.store.token(first.id))!;
      expect(stored.secretHash).toBe(new Bun.CryptoHasher("sha256").update(first.token).digest("hex"));
      expect(JSON.stringify(stored)).not.toContain(first.token);

      expect(await verifyToken(o.store, first.token)).toEqual({ accountId: alice.accountId, workspaceId: o.ws, email: "alice@example.com", tokenId: first.id });
      expect((await verifyToken(o.store, second.token, "ALICE@example.com"))?.tokenId).toBe(second.id);
      expect(await verifyToken(o.store, second.token, "bob@example.com")).toBeUndefined();
      expect(await verifyToken(o.store, `${first.token}x`)).toBeUndefined();
      expect(await verifyToken(o.store, "")).toBeUndefined();

      expect((await listTokens(ctx, alice)).map((t) => [t.id, t.name, t.lastUsedAt])).toEqual([
        [first.id, "ci", null],
        [second.id, "laptop", null],
      ]);
      expect(JSON.stringify(await listTokens(ctx, alice))).not.toContain(first.token);

      // Last use: written once, then not again within the minute.
      const at = tick();
      await touchToken(o.store, first.id, at);
      await touchToken(o.store, first.id, at + 1_000);
      expect((await o.store.token(first.id))!.lastUsedAt).toBe(at);
      await touchToken(o.store, first.id, at + 61_000);
      expect((await o.store.token(first.id))!.lastUsedAt).toBe(at + 61_000);

      // Another account's token, even of the same workspace, is not the caller's to revoke.
      await expect(revokeToken(ctx, bob, first.id)).rejects.toMatchObject({ code: "NOT_FOUND" });
      await expect(revokeToken({ controlPlane: o.store }, mallory, first.id)).rejects.toMatchObject({ code: "NOT_FOUND" });
      await revokeToken(ctx, alice, first.id);
      expect(await verifyToken(o.store, first.token)).toBeUndefined();
      expect((await listTokens(ctx, alice)).map((t) => t.id)).toEqual([second.id]);
      await expect(revokeToken(ctx, alice, first.id)).rejects.toMatchObject({ code: "NOT_FOUND" });
    });

    test("authenticateRequest: Bearer, Basic with the account's e-mail, the session cookie; each refusal a 401", async () => {
      const o = await kind.open();
      let now = tick();
      const deps = { controlPlane: o.store, now: () => now, sessionHours: 1 };
      const alice = await account(o.store, o.ws, "alice@example.com");
      const { token, id } = await createToken({ controlPlane: o.store, now: () => now }, alice, { name: "t" });
      const req = (headers: Record<string, string>, method = "GET") => new Request("http://sluice.test/v2/sources", { method, headers: { host: "sluice.test", ...headers } });

      expect((await authenticateRequest(deps, req({ authorization: `Bearer ${token}` }))).tokenId).toBe(id);
      expect((await o.store.token(id))!.lastUsedAt).toBe(now);
      expect((await authenticateRequest(deps, req({ authorization: basic("alice@example.com", token) }), "basic")).accountId).toBe(alice.accountId);
      await expect(authenticateRequest(deps, req({ authorization: `Bearer ${token}` }), "basic")).rejects.toMatchObject({ code: "UNAUTHORIZED" });
      await expect(authenticateRequest(deps, req({ authorization: basic("bob@example.com", token) }))).rejects.toMatchObject({ code: "UNAUTHORIZED" });
      await expect(authenticateRequest(deps, req({ authorization: "Bearer nope" }))).rejects.toMatchObject({ code: "UNAUTHORIZED" });
      await expect(authenticateRequest(deps, req({}))).rejects.toMatchObject({ code: "UNAUTHORIZED" });

      const session = await signIn(deps, { email: "alice@example.com", token });
      const cookie = `sluice_session=${session.id}`;
      expect(await authenticateRequest(deps, req({ cookie }))).toMatchObject({ tokenId: id, expiresAt: session.expiresAt });
      await expect(authenticateRequest(deps, req({ cookie }, "POST"))).rejects.toMatchObject({ code: "FORBIDDEN" });
      expect((await authenticateRequest(deps, req({ cookie, origin: "http://sluice.test" }, "POST"))).tokenId).toBe(id);
      now = session.expiresAt;
      await expect(authenticateRequest(deps, req({ cookie }))).rejects.toMatchObject({ code: "UNAUTHORIZED" });
    });

    test("sessions: sign-in keeps only the id's hash; they expire, end at sign-out and with their token", async () => {
      const o = await kind.open();
      let now = tick();
      const deps = { controlPlane: o.store, now: () => now, sessionHours: 2 };
      const alice = await account(o.store, o.ws, "alice@example.com");
      const { token, id: tokenId } = await createToken({ controlPlane: o.store, now: () => now }, alice, { name: "t" });

      await expect(signIn(deps, { email: "bob@example.com", token })).rejects.toMatchObject({ code: "UNAUTHORIZED" });
      await expect(signIn(deps, { email: "alice@example.com", token: "wrong" })).rejects.toMatchObject({ code: "UNAUTHORIZED" });

      const a = await signIn(deps, { email: " alice@example.com ", token: ` ${token} ` });
      expect(a.expiresAt).toBe(now + 2 * 3_600_000);
      expect(await o.store.session(a.id)).toBeUndefined();
      const row = (await o.store.session(new Bun.CryptoHasher("sha256").update(a.id).digest("hex")))!;
      expect(row).toMatchObject({ tokenId, accountId: alice.accountId, workspaceId: o.ws, email: "alice@example.com", expiresAt: a.expiresAt });
      expect(await sessionPrincipal(deps, a.id)).toEqual({ accountId: alice.accountId, workspaceId: o.ws, email: "alice@example.com", tokenId, expiresAt: a.expiresAt });
      expect(await sessionPrincipal(deps, `${a.id}x`)).toBeUndefined();
      expect(await sessionPrincipal(deps, "")).toBeUndefined();

      // Expired: refused and its row gone; the next sign-in clears every expired row.
      now = a.expiresAt;
      expect(await sessionPrincipal(deps, a.id)).toBeUndefined();
      expect(await o.store.session(row.idHash)).toBeUndefined();
      const b = await signIn(deps, { email: "alice@example.com", token });
      now = b.expiresAt + 1;
      const c = await signIn(deps, { email: "alice@example.com", token });
      expect(await o.store.session(new Bun.CryptoHasher("sha256").update(b.id).digest("hex"))).toBeUndefined();

      await signOut(deps, c.id);
      expect(await sessionPrincipal(deps, c.id)).toBeUndefined();

      // Revoking the token ends the sessions opened with it.
      const d = await signIn(deps, { email: "alice@example.com", token });
      expect(await sessionPrincipal(deps, d.id)).toBeDefined();
      await revokeToken({ controlPlane: o.store }, alice, tokenId);
      expect(await sessionPrincipal(deps, d.id)).toBeUndefined();
    });

    test("first start: ensureOwner makes the workspace, its owner and a token once, also when two start at once", async () => {
      const o = await kind.open(true);
      const now = tick();
      // On PostgreSQL, two instances; on SQLite, two calls whose reads both come before either write.
      const second = o.reopen ? await o.reopen({}) : o.store;
      const [one, two] = await Promise.all([ensureOwner(o.store, { email: "owner@example.com", now }), ensureOwner(second, { email: "owner@example.com", now })]);
      const made = one.created ? one : two;
      expect([one.created, two.created].sort()).toEqual([false, true]);
      expect(one.workspaceId).toBe(two.workspaceId);
      expect(one.accountId).toBe(two.accountId);
      expect((await o.store.firstWorkspace())!.id).toBe(made.workspaceId);
      expect((await o.store.ownerOf(made.workspaceId))!).toMatchObject({ id: made.accountId, email: "owner@example.com", role: "owner" });
      expect(made.generatedToken).toStartWith("sluice_");
      expect(await verifyToken(o.store, made.generatedToken!, "owner@example.com")).toMatchObject({ workspaceId: made.workspaceId, accountId: made.accountId });

      // A later start keeps it all and prints no token.
      expect(await ensureOwner(o.store, { email: "someone-else@example.com", token: "given-token-123", now: tick() })).toEqual({
        workspaceId: made.workspaceId,
        accountId: made.accountId,
        created: false,
      });
      expect(await verifyToken(o.store, "given-token-123")).toBeUndefined();

      // `sluice token create`.
      const cli = await createTokenForEmail(o.store, "owner@example.com", tick());
      expect((await verifyToken(o.store, cli.token))?.tokenId).toBe(cli.tokenId);
      expect((await o.store.token(cli.tokenId))!.name).toBe("cli");
      await expect(createTokenForEmail(o.store, "nobody@example.com", tick())).rejects.toMatchObject({ code: "NOT_FOUND" });
    });

    test("first start: two starting at once with different e-mails make one workspace", async () => {
      const o = await kind.open(true);
      const second = o.reopen ? await o.reopen({}) : o.store;
      const now = tick();
      const results = await Promise.all([
        ensureOwner(o.store, { email: "first@example.com", now }),
        ensureOwner(second, { email: "second@example.com", now }),
      ]);
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(results[0]!.workspaceId).toBe(results[1]!.workspaceId);
      const made = results.find((r) => r.created)!;
      expect((await o.store.ownerOf(made.workspaceId))!.id).toBe(made.accountId);
      // The loser's e-mail has no account: it made nothing.
      const loser = results[0]!.created ? "second@example.com" : "first@example.com";
      expect(await o.store.accountByEmail(loser)).toBeUndefined();
    });

    test("routing(): every workspace's sources, destinations, connections in order, and running transformations with their code", async () => {
      const o = await kind.open();
      const a = sourceRow(o.ws, "a");
      const b = sourceRow(o.other, "b", { enabled: false, settings: { lenientValidation: true } });
      const d1 = destinationRow(o.ws, "d1");
      const d2 = destinationRow(o.other, "d2", { enabled: false, config: { webhookUrl: "http://h/", n: 2 } });
      const t = transformationRow(o.ws, "t");
      await o.store.write([
        { op: "insertSource", row: a },
        { op: "insertSource", row: b },
        { op: "insertDestination", row: d1 },
        { op: "insertDestination", row: d2 },
        { op: "connect", sourceId: a.id, destinationId: d2.id, at: 10 },
        { op: "connect", sourceId: a.id, destinationId: d1.id, at: 20 },
        { op: "connect", sourceId: b.id, destinationId: d2.id, at: 30 },
        { op: "insertTransformation", row: t, code: CODE },
        { op: "attachTransformation", destinationId: d2.id, transformationId: t.id },
      ]);
      const r = await o.store.routing();
      const byId = <T extends { id: string }>(rows: T[]) => [...rows].sort((x, y) => x.id.localeCompare(y.id));
      expect(byId(r.sources)).toEqual(byId([a, b]));
      expect(byId(r.destinations)).toEqual(byId([d1, d2]));
      expect(r.connections.map((c) => [c.sourceId, c.destinationId])).toEqual([
        [a.id, d2.id],
        [a.id, d1.id],
        [b.id, d2.id],
      ]);
      expect(r.attachments).toEqual([{ destinationId: d2.id, transformationId: t.id, versionId: t.versionId, code: CODE }]);
    });

    test("first start with a given token: it is stored, not generated", async () => {
      const o = await kind.open(true);
      const r = await ensureOwner(o.store, { email: "owner@example.com", token: "given-token-123", now: tick() });
      expect(r.created).toBe(true);
      expect(r.generatedToken).toBeUndefined();
      expect((await verifyToken(o.store, "given-token-123"))?.accountId).toBe(r.accountId);
    });

    if (kind.name === "PostgreSQL") {
      test("cluster config: a change made on one instance is in that instance's caches when the call returns, and in another's within a second", async () => {
        const o = await kind.open();
        const one = await clusterInstance(o, "one");
        const two = await clusterInstance(o, "two");
        const ctx = { ...serviceContext({ ...o, store: one.store }), config: one.config } as ScopedContext;
        const src = await createSource(ctx, { name: "web" });
        // Instance one answered only after its own reload.
        expect(one.config.sourceByWriteKey(src.writeKey)?.id).toBe(src.id);
        const seenAt = performance.now();
        await waitFor(() => two.config.sourceByWriteKey(src.writeKey), { timeoutMs: 1000, what: "the new write key on the other instance" });
        expect(performance.now() - seenAt).toBeLessThan(1000);

        const dst = await createDestination(ctx, { name: "hook", type: "WEBHOOK", config: { webhookUrl: "http://127.0.0.1:9/x" }, sourceIds: [src.id] });
        await waitFor(() => two.config.snapshot().bySource.get(src.id)?.length === 1 || undefined, { timeoutMs: 1000, what: "the connection on the other instance" });
        await updateDestination(ctx, dst.id, { enabled: false });
        expect(one.config.snapshot().destinations.get(dst.id)!.enabled).toBe(false);
        await waitFor(() => two.config.snapshot().destinations.get(dst.id)!.enabled === false || undefined, { timeoutMs: 1000, what: "the disabled destination on the other instance" });
        // A key nobody has is a miss on both, without a database read.
        expect(two.config.sourceByWriteKey("no-such-key")).toBeUndefined();
        // Routing as the single-node store builds it.
        expect(two.config.snapshot().bySource.get(src.id)!.map((d) => [d.id, d.type, d.definition?.name])).toEqual([[dst.id, "WEBHOOK", "WEBHOOK"]]);
      });

      test("cluster config: an instance that heard no notification still reloads at its poll", async () => {
        const o = await kind.open();
        const two = await clusterInstance(o, "two", 200);
        const before = two.config.snapshot().version;
        // A write by a store with no afterWrite: the epoch moves, nobody is told.
        await o.store.write([{ op: "insertSource", row: sourceRow(o.ws, "quiet") }]);
        await waitFor(() => two.config.snapshot().version > before || undefined, { timeoutMs: 2000, what: "the poll's reload" });
        expect([...two.config.snapshot().sources.values()].map((s) => s.name)).toContain("quiet");
      });

      test("token and session writes leave the 'config' epoch alone", async () => {
        const o = await kind.open();
        const start = await o.epoch!();
        const alice = await account(o.store, o.ws, "alice@example.com");
        const deps = { controlPlane: o.store, now: () => Date.now(), sessionHours: 1 };
        const { token, id } = await createToken(deps, alice, { name: "t" });
        const s = await signIn(deps, { email: alice.email, token });
        await signOut(deps, s.id);
        await revokeToken(deps, alice, id);
        expect(await o.epoch!()).toBe(start);
      });

      test("every write bumps the 'config' epoch by one in its own transaction; a failed write does not", async () => {
        const o = await kind.open();
        const seen: number[] = [];
        const afterWrite = async (tx: PgControlPlaneTx, epoch: number) => {
          // Inside the transaction: the bump is visible here, not yet to other connections.
          const [row] = await tx.select().from(pgSchema.clusterEpochs).where(eq(pgSchema.clusterEpochs.name, "config"));
          expect(row.value).toBe(epoch);
          expect(await o.epoch!()).toBe(epoch - 1);
          seen.push(epoch);
        };
        const store = await o.reopen!({ afterWrite });
        const start = await o.epoch!();
        const a = await store.write([{ op: "insertSource", row: sourceRow(o.ws, "a") }]);
        expect(a.epoch).toBe(start + 1);
        const b = await store.write([{ op: "insertSource", row: sourceRow(o.ws, "b") }, { op: "insertSource", row: sourceRow(o.ws, "c") }]);
        expect(b.epoch).toBe(start + 2);
        await expect(store.write([{ op: "insertSource", row: sourceRow(o.ws, "d") }, { op: "insertSource", row: sourceRow(o.ws, "a") }])).rejects.toMatchObject({ code: "CONFLICT" });
        expect(await o.epoch!()).toBe(start + 2);
        expect(seen).toEqual([start + 1, start + 2]);
        // An empty write changes nothing and moves nothing.
        expect(await store.write([])).toEqual({ changes: [] });
        expect(await o.epoch!()).toBe(start + 2);
        // Two instances writing at once: each write its own epoch.
        const results = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? store : o.store).write([{ op: "insertSource", row: sourceRow(o.ws, `p${i}`) }])));
        expect(results.map((r) => r.epoch!).sort((x, y) => x - y)).toEqual([3, 4, 5, 6, 7, 8].map((n) => start + n));
        expect(await o.epoch!()).toBe(start + 8);
      });

      test("a throw in afterWrite rolls the write back, epoch included", async () => {
        const o = await kind.open();
        const store = await o.reopen!({
          afterWrite: () => {
            throw new Error("bus down");
          },
        });
        const start = await o.epoch!();
        await expect(store.write([{ op: "insertSource", row: sourceRow(o.ws, "a") }])).rejects.toThrow("bus down");
        await nothingOf(o.store, o.ws, { sources: ["a"] });
        expect(await o.epoch!()).toBe(start);
      });

      test("JSON columns are stored as JSON objects, not as JSON strings", async () => {
        const o = await kind.open();
        const d = destinationRow(o.ws, "hook", { config: { webhookUrl: "http://h/", n: 1 } });
        const s = sourceRow(o.ws, "web", { settings: { lenientValidation: true } });
        await o.store.write([{ op: "insertDestination", row: d }, { op: "insertSource", row: s }]);
        const [row] = await o.sql!`SELECT jsonb_typeof(d.config) AS c, d.config->>'webhookUrl' AS url, jsonb_typeof(s.settings) AS s FROM destinations d, sources s`;
        expect(row).toEqual({ c: "object", url: "http://h/", s: "object" });
      });
    }
  });
}
