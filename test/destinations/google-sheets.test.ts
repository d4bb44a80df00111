/**
 * GOOGLESHEETS end to end: events in through /v1/batch, rows out to a Sheets stand-in
 * (test/support/google-sheets-stand-in.ts) that takes only a token the OAuth stand-in granted for
 * the spreadsheets scope, from a JWT it verified (test/support/google-oauth.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type TestServer, ADMIN_EMAIL, ADMIN_TOKEN, api, cleanup, createSource, startSluice, waitFor } from "../support/helpers";
import { startGoogleOAuth } from "../support/google-oauth";
import { type SheetsStandIn, startSheetsStandIn } from "../support/google-sheets-stand-in";

const SCOPE = "https://www.googleapis.com/auth/spreadsheets";
const SIMULATOR_TOKEN = "simulator-token-1";

let s: TestServer;
let oauth: ReturnType<typeof startGoogleOAuth>;
let sheets: SheetsStandIn;

beforeAll(async () => {
  oauth = startGoogleOAuth();
  sheets = startSheetsStandIn(oauth, { acceptTokens: [SIMULATOR_TOKEN] });
  s = await startSluice({ args: ["--destination-base-url", `GOOGLESHEETS=http://127.0.0.1:${sheets.port}`, "--retry-backoff-ms", "20"] });
});
afterAll(async () => {
  await s?.stop();
  await cleanup(s?.dataDir);
  sheets?.stop();
  oauth?.stop();
});

const EVENT_KEY_MAP = [
  { from: "userId", to: "User" },
  { from: "event", to: "Event" },
  { from: "i", to: "Index" },
  { from: "address.city", to: "City" },
  { from: "Cart Value", to: "Cart Value" },
  { from: "plan", to: "Plan" },
  { from: "context.library.name", to: "Library" },
];
const HEADER = ["messageId", ...EVENT_KEY_MAP.map((m) => m.to)];

const connect = async (config: Record<string, unknown>) => {
  const src = await createSource(s.url);
  const res = await api(s.url, "POST", "/v2/destinations", {
    name: `sheets-${crypto.randomUUID().slice(0, 6)}`,
    type: "GOOGLESHEETS",
    config: { credentials: oauth.credentials, eventKeyMap: EVENT_KEY_MAP, ...config },
    sourceIds: [src.id],
  });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`);
  return { src, dst: res.json as { id: string } };
};
const send = (writeKey: string, events: unknown[]) =>
  fetch(`${s.url}/v1/batch`, { method: "POST", headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${writeKey}:`)}` }, body: JSON.stringify({ batch: events }) });
const counts = async (id: string) => (await api(s.url, "GET", `/v2/destinations/${id}/stats`)).json.counts as Record<string, number>;
const aborted = async (id: string) => JSON.stringify((await api(s.url, "GET", `/v2/destinations/${id}/deliveries?state=aborted`)).json.deliveries);
const callsTo = (book: string) => sheets.calls.filter((c) => c.spreadsheetId === book);
const sheetGrants = () => oauth.grants.filter((g) => g.scope === SCOPE);

describe("GOOGLESHEETS", () => {
  test("the header row, then one row per event in eventKeyMap order with messageId first; each user's rows in order; one token for every call", async () => {
    sheets.addSpreadsheet("book-rows", ["Events"]);
    const grantsBefore = sheetGrants().length;
    const { src, dst } = await connect({ sheetId: "book-rows", sheetName: "Events" });
    const events = Array.from({ length: 30 }, (_, i) => ({
      type: "track",
      event: "Order Completed",
      userId: `u${i % 3}`,
      messageId: `row-${i}`,
      // Looked up at the root, then in properties, traits, context.traits, as RudderStack does;
      // "Cart Value" (a key with a space) is read whole; 0 is an empty cell, as there.
      properties: { i: i + 1, address: { city: `City ${i}` }, "Cart Value": i % 5 === 0 ? 0 : i * 1.5 },
      context: { traits: { plan: i % 2 ? "pro" : "free" }, library: { name: "sluice-test" } },
    }));
    expect((await send(src.writeKey, events)).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).succeeded === 30, { what: "30 delivered", timeoutMs: 20_000 });

    const rows = sheets.rows("book-rows", "Events")!;
    expect(rows[0]).toEqual(HEADER);
    expect(rows).toHaveLength(31);
    const byId = new Map(rows.slice(1).map((r) => [r[0], r]));
    for (const [i, e] of events.entries()) {
      expect(byId.get(e.messageId)).toEqual([e.messageId, e.userId, "Order Completed", i + 1, `City ${i}`, i % 5 === 0 ? "" : i * 1.5, i % 2 ? "pro" : "free", "sluice-test"]);
    }
    for (const u of ["u0", "u1", "u2"]) {
      const order = rows.slice(1).filter((r) => r[1] === u).map((r) => r[3] as number);
      expect(order).toEqual([...order].sort((a, b) => a - b));
    }

    // A second round: the header is not written again, the token is kept.
    expect((await send(src.writeKey, [{ type: "identify", userId: "u9", messageId: "later-1", traits: { plan: "team" } }])).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).succeeded === 31, { what: "31 delivered" });
    expect(sheets.rows("book-rows", "Events")!.at(-1)).toEqual(["later-1", "u9", "", "", "", "", "team", ""]);

    const calls = callsTo("book-rows");
    expect(calls.filter((c) => c.op === "values.update")).toHaveLength(1);
    expect(calls[0]!.op).toBe("values.update");
    expect(calls[0]!.range).toBe("Events!A1");
    expect(calls.every((c) => c.query.valueInputOption === "RAW" && c.status === 200)).toBe(true);
    const appends = calls.filter((c) => c.op === "values.append");
    expect(appends.reduce((n, c) => n + c.body.values.length, 0)).toBe(31);
    // Rows of a run go together, as RudderStack's router batches them.
    expect(appends.length).toBeLessThan(31);
    expect(sheetGrants().length - grantsBefore).toBe(1);
    expect(new Set(calls.map((c) => c.auth))).toEqual(new Set([`Bearer ${sheetGrants().at(-1)!.token}`]));
    expect(oauth.refused).toEqual([]);
  });

  test("429 and 5xx are retried, then the row lands once", async () => {
    sheets.addSpreadsheet("book-flaky", ["Sheet1"]);
    const { src, dst } = await connect({ sheetId: "book-flaky", sheetName: "Sheet1" });
    // The header write meets the quota, then an outage; the append meets an outage too.
    sheets.failNext(1, 429);
    sheets.failNext(1, 503);
    expect((await send(src.writeKey, [{ type: "track", event: "E", userId: "f", messageId: "flaky-1", properties: { i: 7 } }])).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).succeeded === 1, { what: "delivered after retries", timeoutMs: 20_000 });
    expect(callsTo("book-flaky").map((c) => `${c.op} ${c.status}`).slice(0, 3)).toEqual(["values.update 429", "values.update 503", "values.update 200"]);

    sheets.failNext(1, 500);
    expect((await send(src.writeKey, [{ type: "track", event: "E", userId: "f", messageId: "flaky-2", properties: { i: 8 } }])).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).succeeded === 2, { what: "second delivered after a retry", timeoutMs: 20_000 });
    expect(callsTo("book-flaky").filter((c) => c.op === "values.append").map((c) => c.status)).toEqual([200, 500, 200]);
    expect(sheets.rows("book-flaky", "Sheet1")!.map((r) => [r[0], r[3]])).toEqual([
      ["messageId", "Index"],
      ["flaky-1", 7],
      ["flaky-2", 8],
    ]);
  });

  test("a sheet or a spreadsheet that does not exist aborts with Google's words", async () => {
    sheets.addSpreadsheet("book-tabs", ["Sheet1"]);
    const noSheet = await connect({ sheetId: "book-tabs", sheetName: "Missing" });
    const noBook = await connect({ sheetId: "no-such-book", sheetName: "Sheet1" });
    for (const d of [noSheet, noBook]) expect((await send(d.src.writeKey, [{ type: "track", event: "E", userId: "m" }])).status).toBe(200);
    await waitFor(async () => (await counts(noSheet.dst.id)).aborted === 1, { what: "missing sheet aborted" });
    await waitFor(async () => (await counts(noBook.dst.id)).aborted === 1, { what: "missing spreadsheet aborted" });
    expect(await aborted(noSheet.dst.id)).toContain("Failed to update header");
    expect(await aborted(noSheet.dst.id)).toContain("Unable to parse range: Missing!A1");
    expect(await aborted(noBook.dst.id)).toContain("NOT_FOUND: Requested entity was not found.");
    // Refused at once: not retried.
    expect(callsTo("no-such-book")).toHaveLength(1);
  });

  test("testConfig (rudder-server's simulator settings): its endpoint and access token, no service account", async () => {
    sheets.addSpreadsheet("book-sim", ["Sim"]);
    const grantsBefore = oauth.grants.length;
    const { src, dst } = await connect({ credentials: "", sheetId: "book-sim", sheetName: "Sim", testConfig: { endpoint: `${sheets.url}/`, accessToken: SIMULATOR_TOKEN } });
    expect((await send(src.writeKey, [{ type: "page", userId: "p", messageId: "sim-1", name: "Home" }])).status).toBe(200);
    await waitFor(async () => (await counts(dst.id)).succeeded === 1, { what: "delivered to the simulator" });
    expect(sheets.rows("book-sim", "Sim")!.map((r) => r[0])).toEqual(["messageId", "sim-1"]);
    expect(callsTo("book-sim").every((c) => c.auth === `Bearer ${SIMULATOR_TOKEN}`)).toBe(true);
    expect(oauth.grants.length).toBe(grantsBefore);
  });

  test("configs that cannot work are refused on save, naming the key", async () => {
    const src = await createSource(s.url);
    const save = (config: Record<string, unknown>) =>
      api(s.url, "POST", "/v2/destinations", {
        name: `sheets-bad-${crypto.randomUUID().slice(0, 6)}`,
        type: "GOOGLESHEETS",
        config: { credentials: oauth.credentials, sheetId: "book", sheetName: "Sheet1", eventKeyMap: EVENT_KEY_MAP, ...config },
        sourceIds: [src.id],
      });
    const refused = async (config: Record<string, unknown>, key: string) => {
      const res = await save(config);
      expect(`${res.status} ${res.text}`).toContain("400");
      expect(res.text).toContain(key);
    };
    await refused({ credentials: "{not json" }, "credentials");
    await refused({ credentials: JSON.stringify({ client_email: "a@b.c" }) }, "private_key");
    await refused({ eventKeyMap: [] }, "eventKeyMap");
    await refused({ eventKeyMap: [{ from: "", to: "" }] }, "eventKeyMap");
    await refused({ eventKeyMap: [{ from: "a.__proto__.b", to: "X" }] }, "eventKeyMap[0].from");
    await refused({ sheetName: "" }, "sheetName");
    await refused({ sheetName: undefined }, "sheetName");
    await refused({ sheetId: "" }, "sheetId");
    await refused({ credentials: "", testConfig: { endpoint: "file:///etc/passwd" } }, "testConfig.endpoint");
    expect((await save({})).status).toBe(201);
  });

  test("the Test API does not support GOOGLESHEETS (a spreadsheet service): the not-tested form", async () => {
    sheets.addSpreadsheet("book-test-api", ["Sheet1"]);
    const { dst } = await connect({ sheetId: "book-test-api", sheetName: "Sheet1" });
    const res = await fetch(`${s.url}/v0/testDestination/${dst.id}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${ADMIN_EMAIL}:${ADMIN_TOKEN}`)}` },
      body: JSON.stringify({ message: { type: "track", event: "E", userId: "u" } }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toContain("the Test API does not support GOOGLESHEETS destinations (a spreadsheet service)");
    expect(callsTo("book-test-api")).toHaveLength(0);
  });
});
