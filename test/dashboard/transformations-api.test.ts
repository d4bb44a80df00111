/**
 * The transformations API parts the dashboard's editor needs: a transformation's versions
 * (`GET /v2/transformations/{id}/versions`) and one version's code
 * (`GET /v2/transformations/{id}/versions/{versionId}`), scoped to the caller's workspace.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type TestServer, api, cleanup, startSluice } from "../support/helpers";

let s: TestServer;
beforeAll(async () => {
  s = await startSluice();
});
afterAll(async () => {
  await s.stop();
  cleanup(s.dataDir);
});

const code = (n: number) => `function transformEvent(event) {\n  event.properties = { ...event.properties, v: ${n} };\n  return event;\n}`;

async function createTransformation(name: string) {
  const res = await api(s.url, "POST", "/v2/transformations", { name, code: code(1) });
  expect(res.status).toBe(201);
  return res.json as { id: string; versionId: string };
}

test("every save of code is listed newest first with the current one marked; saving a name only adds none", async () => {
  const t = await createTransformation("versions-listed");
  const second = (await api(s.url, "PATCH", `/v2/transformations/${t.id}`, { code: code(2) })).json;
  const third = (await api(s.url, "PATCH", `/v2/transformations/${t.id}`, { code: code(3) })).json;
  expect((await api(s.url, "PATCH", `/v2/transformations/${t.id}`, { name: "versions-renamed" })).status).toBe(200);

  const res = await api(s.url, "GET", `/v2/transformations/${t.id}/versions`);
  expect(res.status).toBe(200);
  const versions = res.json.versions as Array<{ id: string; createdAt: string; current: boolean; lines: number; bytes: number }>;
  expect(versions.map((v) => v.id)).toEqual([third.versionId, second.versionId, t.versionId]);
  expect(versions.map((v) => v.current)).toEqual([true, false, false]);
  expect(versions[0]!.lines).toBe(4);
  expect(versions[0]!.bytes).toBe(code(3).length);
  expect(Number.isNaN(Date.parse(versions[2]!.createdAt))).toBe(false);
  // The list carries no code: a long history stays small.
  expect(JSON.stringify(res.json)).not.toContain("transformEvent");
});

test("one version answers with its code; the current flag follows the latest save", async () => {
  const t = await createTransformation("version-code");
  const next = (await api(s.url, "PATCH", `/v2/transformations/${t.id}`, { code: code(2) })).json;
  const old = await api(s.url, "GET", `/v2/transformations/${t.id}/versions/${t.versionId}`);
  expect(old.status).toBe(200);
  expect(old.json).toEqual({ id: t.versionId, transformationId: t.id, code: code(1), createdAt: expect.any(String), current: false });
  const cur = await api(s.url, "GET", `/v2/transformations/${t.id}/versions/${next.versionId}`);
  expect(cur.json.current).toBe(true);
  expect(cur.json.code).toBe(code(2));
});

test("unknown transformation or version → 404 naming it; another transformation's version → 404", async () => {
  const a = await createTransformation("version-a");
  const b = await createTransformation("version-b");
  const noT = await api(s.url, "GET", `/v2/transformations/trf_nope/versions`);
  expect(noT.status).toBe(404);
  expect(noT.json.message).toContain("trf_nope");
  const noV = await api(s.url, "GET", `/v2/transformations/${a.id}/versions/trv_nope`);
  expect(noV.status).toBe(404);
  expect(noV.json.message).toContain("trv_nope");
  const crossed = await api(s.url, "GET", `/v2/transformations/${a.id}/versions/${b.versionId}`);
  expect(crossed.status).toBe(404);
  // Odd characters in the ids are still a 404, not a 500.
  expect((await api(s.url, "GET", `/v2/transformations/${a.id}/versions/%00%27%22`)).status).toBe(404);
  expect((await api(s.url, "GET", `/v2/transformations/${a.id}/versions/${"x".repeat(500)}`)).status).toBe(404);
  expect((await api(s.url, "GET", `/v2/transformations/${"x".repeat(500)}/versions`)).status).toBe(404);
});

test("versions need credentials and stay inside the caller's workspace", async () => {
  const t = await createTransformation("version-private");
  expect((await fetch(`${s.url}/v2/transformations/${t.id}/versions`)).status).toBe(401);
  expect((await fetch(`${s.url}/v2/transformations/${t.id}/versions/${t.versionId}`)).status).toBe(401);
  // Another workspace's token sees neither the list nor the code: 404, as for an unknown id.
  const db = s.sluice.db.$client;
  db.run("INSERT INTO workspaces (id, name, created_at) VALUES ('ws_other', 'other', 0)");
  db.run("INSERT INTO accounts (id, workspace_id, email, role, created_at) VALUES ('acc_other', 'ws_other', 'other@example.com', 'owner', 0)");
  const { storeToken } = await import("../../src/control-plane/tokens");
  const token = "other-workspace-token-0123456789";
  storeToken(s.sluice.db, { accountId: "acc_other", workspaceId: "ws_other", token, now: 0 });
  expect((await api(s.url, "GET", `/v2/transformations/${t.id}/versions`, undefined, token)).status).toBe(404);
  expect((await api(s.url, "GET", `/v2/transformations/${t.id}/versions/${t.versionId}`, undefined, token)).status).toBe(404);
});

test("deleting a transformation removes its versions", async () => {
  const t = await createTransformation("version-deleted");
  expect((await api(s.url, "DELETE", `/v2/transformations/${t.id}`)).status).toBe(204);
  expect((await api(s.url, "GET", `/v2/transformations/${t.id}/versions`)).status).toBe(404);
  const left = s.sluice.db.$client.query("SELECT count(*) AS n FROM transformation_versions WHERE transformation_id = ?").get(t.id) as { n: number };
  expect(left.n).toBe(0);
});

test("the OpenAPI document describes the versions routes", async () => {
  const doc = (await (await fetch(`${s.url}/openapi/json`)).json()) as any;
  expect(doc.paths["/v2/transformations/{id}/versions"].get.summary).toContain("versions");
  expect(doc.paths["/v2/transformations/{id}/versions/{versionId}"].get.summary).toContain("version");
});

// ---------- libraries: modules a transformation imports by import name ----------

const uses = (lib: string) => `import { shout } from "${lib}";\nexport function transformEvent(e) { return { ...e, event: shout(e.event) }; }`;

test("a library's import name is its name in camelCase; a transformation that imports it pins its current version, and runs it in the test endpoint", async () => {
  const lib = await api(s.url, "POST", "/v2/libraries", { name: "String tools", code: "export function shout(s) { return s.toUpperCase() + '!'; }" });
  expect(lib.status).toBe(201);
  expect(lib.json).toMatchObject({ name: "String tools", importName: "stringTools" });
  const t = await api(s.url, "POST", "/v2/transformations", { name: "uses-string-tools", code: uses("stringTools") });
  expect(t.status).toBe(201);
  expect(t.json.libraries).toEqual({ stringTools: lib.json.versionId });

  const run = await api(s.url, "POST", "/v2/transformations/test", { code: uses("stringTools"), events: [{ type: "track", event: "hi" }] });
  expect(run.json).toMatchObject({ output: [{ event: "HI!" }], errors: [] });
  // An unsaved edit of the library runs in the test without changing what is saved.
  const edited = await api(s.url, "POST", "/v2/transformations/test", { code: uses("stringTools"), libraries: { stringTools: "export const shout = (s) => s + '?';" }, events: [{ type: "track", event: "hi" }] });
  expect(edited.json.output).toEqual([{ type: "track", event: "hi?" }]);

  // New library code is a new version; the transformation keeps the one it pinned until saved again.
  const updated = await api(s.url, "PATCH", `/v2/libraries/${lib.json.id}`, { code: "export function shout(s) { return s + '!!'; }" });
  expect(updated.json.versionId).not.toBe(lib.json.versionId);
  expect((await api(s.url, "GET", `/v2/transformations/${t.json.id}`)).json.libraries).toEqual({ stringTools: lib.json.versionId });
  expect((await api(s.url, "GET", `/v2/libraries/${lib.json.id}/versions`)).json.versions.map((v: any) => v.current)).toEqual([true, false]);

  // Deleting it is refused while a transformation imports it.
  const refused = await api(s.url, "DELETE", `/v2/libraries/${lib.json.id}`);
  expect(refused.status).toBe(409);
  expect(refused.json.error ?? refused.text).toContain("uses-string-tools");
  await api(s.url, "DELETE", `/v2/transformations/${t.json.id}`);
  expect((await api(s.url, "DELETE", `/v2/libraries/${lib.json.id}`)).status).toBe(204);
});

test("saving code that imports a name no library has → 400 naming it; a taken import name → 409", async () => {
  const res = await api(s.url, "POST", "/v2/transformations", { name: "imports-unknown", code: uses("noSuchLib") });
  expect(res.status).toBe(400);
  expect(res.text).toContain("imports 'noSuchLib'");
  expect((await api(s.url, "POST", "/v2/libraries", { name: "dup", importName: "dupLib", code: "export const a = 1;" })).status).toBe(201);
  const dup = await api(s.url, "POST", "/v2/libraries", { name: "dup 2", importName: "dupLib", code: "export const a = 2;" });
  expect(dup.status).toBe(409);
  expect(dup.text).toContain("dupLib");
});
