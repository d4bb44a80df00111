/**
 * Facebook Lead Ads' hydration through a real Sluice process: with a Page access token in the
 * source's config, each lead of a leadgen notification is fetched from the Graph API (here a
 * stand-in on 127.0.0.1, reached through `--destination-base-url FACEBOOK_LEAD_ADS_NATIVE=…`) and
 * its answers reach the destination in `context.traits`. A Graph failure that may pass answers
 * the webhook 503 and stores nothing, so Facebook's redelivery is stored once; one that will not
 * (an expired token) stores the lead without its answers. Without a token nothing is asked.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { sourceHttp } from "../../src/gateway/webhook-mapping";
import { AppError } from "../../src/lib/errors";
import { Outbound } from "../../src/pipeline/outbound";
import { facebookLeadAdsNative } from "../../src/sources/facebook_lead_ads_native";
import { addAnswers } from "../../src/sources/facebook_lead_ads_native/hydrate";
import type { MapContext } from "../../src/sources/types";
import { type SluiceProcess, type SinkRequest, api, cleanup, onPostgres, query, spawnSluice, startSink, waitFor } from "../support/helpers";
import { mapContext } from "./support";

const TOKEN = "EAAGtestPageAccessToken0123456789";
const PAGE = "104838212295517";
const FORM = "932710638426081";

/** What the stand-in answers for each lead id; a lead it does not know is a deleted one. */
const answers = new Map<string, () => Response>();
const lead = (fields: Record<string, string[]>) => () => Response.json({ created_time: "2025-03-14T16:02:38+0000", id: "x", field_data: Object.entries(fields).map(([name, values]) => ({ name, values })) });
const graphError = (status: number, error: Record<string, unknown>) => () => Response.json({ error: { type: "OAuthException", fbtrace_id: "AbC", ...error } }, { status });

let graph: ReturnType<typeof startSink>;
let sink: ReturnType<typeof startSink>;
let s: SluiceProcess;
let withToken: { id: string; writeKey: string };
let withoutToken: { id: string; writeKey: string };

beforeAll(async () => {
  graph = startSink((req) => {
    const answer = answers.get(req.path.split("/").pop()!);
    return answer ? answer() : graphError(400, { message: "Unsupported get request. Object with ID does not exist", code: 100, error_subcode: 33 })();
  });
  sink = startSink();
  s = await spawnSluice({ args: ["--destination-base-url", `FACEBOOK_LEAD_ADS_NATIVE=${graph.url}`, "--retry-backoff-ms", "20"] });
  const made = await api(s.url, "POST", "/v2/sources", { name: "leads", type: "facebook_lead_ads_native", config: { pageAccessToken: TOKEN } });
  const plain = await api(s.url, "POST", "/v2/sources", { name: "leads without token", type: "facebook_lead_ads_native" });
  expect([made.status, plain.status]).toEqual([201, 201]);
  withToken = made.json;
  withoutToken = plain.json;
  const dest = await api(s.url, "POST", "/v2/destinations", { name: "sink", type: "WEBHOOK", config: { webhookUrl: `${sink.url}/hook` }, sourceIds: [withToken.id, withoutToken.id] });
  expect(dest.status).toBe(201);
});

afterAll(async () => {
  s.proc.kill("SIGTERM");
  await s.proc.exited;
  graph.stop();
  sink.stop();
  await cleanup(s.dataDir);
});

/** A leadgen notification as Facebook posts it, one change per lead. */
function notification(...leads: string[]) {
  return {
    object: "page",
    entry: [
      {
        id: PAGE,
        time: 1741968161,
        changes: leads.map((leadgen_id) => ({ field: "leadgen", value: { ad_id: "120214561283300512", form_id: FORM, leadgen_id, created_time: 1741968158, page_id: PAGE, adgroup_id: "120214561283300512" } })),
      },
    ],
  };
}

function post(writeKey: string, body: unknown) {
  return fetch(`${s.url}/v1/webhook?writeKey=${writeKey}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

const delivered = (leadId: string) => sink.received.map((r) => r.body as Record<string, any>).filter((e) => e.anonymousId === leadId);
const asked = (leadId: string): SinkRequest[] => graph.received.filter((r) => r.path === `/v24.0/${leadId}`);

/** The stored events of one lead (by the messageId the mapping gives it), read from the server's store. */
async function stored(sourceId: string, leadId: string, server: SluiceProcess = s): Promise<Array<Record<string, any>>> {
  const sql = "SELECT payload FROM events WHERE source_id = ?";
  let rows: Array<{ payload: string }>;
  if (onPostgres) rows = (await query({ dataDir: server.dataDir }, sql, [sourceId])) as Array<{ payload: string }>;
  else {
    const db = new Database(join(server.dataDir, "sluice.db"), { readonly: true });
    try {
      rows = db.query(sql).all(sourceId) as Array<{ payload: string }>;
    } finally {
      db.close();
    }
  }
  return rows.map((r) => JSON.parse(r.payload)).filter((e) => e.messageId === `${sourceId}-${leadId}`);
}

test("a lead becomes an identify whose traits carry its answers; the Graph API was asked with the Page's token", async () => {
  answers.set("1187392640311029", lead({ email: ["ada@example.com"], full_name: ["Ada Lovelace"], phone_number: ["+441632960961", "+441632960962"], "what_is_your_budget?": ["10k"] }));
  answers.set("1187392640311030", lead({ email: ["grace@example.com"], empty: [] }));
  const res = await post(withToken.writeKey, notification("1187392640311029", "1187392640311030"));
  expect([res.status, await res.text()]).toEqual([200, "ok"]);

  const first = await waitFor(() => delivered("1187392640311029")[0], { what: "the first lead at the destination" });
  expect(first.type).toBe("identify");
  expect(first.messageId).toBe(`${withToken.id}-1187392640311029`);
  expect(first.context.traits).toEqual({ pageId: PAGE, formId: FORM, email: "ada@example.com", full_name: "Ada Lovelace", phone_number: "+441632960961", "what_is_your_budget?": "10k" });
  const second = await waitFor(() => delivered("1187392640311030")[0], { what: "the second lead at the destination" });
  expect(second.context.traits).toEqual({ pageId: PAGE, formId: FORM, email: "grace@example.com" });

  const calls = [...asked("1187392640311029"), ...asked("1187392640311030")];
  expect(calls.map((c) => [c.method, c.path, c.query])).toEqual([
    ["GET", "/v24.0/1187392640311029", { access_token: TOKEN }],
    ["GET", "/v24.0/1187392640311030", { access_token: TOKEN }],
  ]);
});

/** A counter's value in /metrics, summed over its labels. */
const metric = async (name: string) =>
  [...(await (await fetch(`${s.url}/metrics`)).text()).matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "gm"))].reduce((sum, m) => sum + Number(m[1]), 0);

test("a Graph API 500 answers the webhook 503 with Retry-After and stores nothing; the redelivery after it recovers is stored once", async () => {
  const id = "2200000000000001";
  answers.set(id, () => new Response("oops", { status: 500 }));
  const [storageBefore, rejectedBefore] = [await metric("sluice_events_storage_rejected_total"), await metric("sluice_events_rejected_total")];
  const failed = await post(withToken.writeKey, notification(id));
  expect(failed.status).toBe(503);
  // Facebook's 503, not the database's: a refused call, not a storage refusal.
  expect(await metric("sluice_events_rejected_total")).toBe(rejectedBefore + 1);
  expect(await metric("sluice_events_storage_rejected_total")).toBe(storageBefore);
  expect(failed.headers.get("retry-after")).toBe("60");
  expect(await failed.text()).toBe(`could not fetch lead ${id} from the Graph API (the Graph API answered 500); nothing was stored, send it again`);
  expect(await stored(withToken.id, id)).toEqual([]);
  expect(asked(id).length).toBe(1);

  answers.set(id, lead({ email: ["retry@example.com"] }));
  const again = await post(withToken.writeKey, notification(id));
  expect([again.status, await again.text()]).toEqual([200, "ok"]);
  // Facebook may deliver it once more: deduplicated by the lead's messageId.
  const twice = await post(withToken.writeKey, notification(id));
  expect(twice.status).toBe(200);
  const rows = await stored(withToken.id, id);
  expect(rows.map((e) => e.context.traits)).toEqual([{ pageId: PAGE, formId: FORM, email: "retry@example.com" }]);
  const event = await waitFor(() => delivered(id)[0], { what: "the redelivered lead at the destination" });
  expect(event.context.traits).toEqual({ pageId: PAGE, formId: FORM, email: "retry@example.com" });
  expect(delivered(id).length).toBe(1);
});

test("a Graph rate limit (400 with code 17, its Retry-After) is worth a retry too: 503, nothing stored", async () => {
  const id = "2200000000000002";
  answers.set(id, () => Response.json({ error: { message: "User request limit reached", code: 17 } }, { status: 400, headers: { "retry-after": "7" } }));
  const res = await post(withToken.writeKey, notification(id));
  expect([res.status, res.headers.get("retry-after")]).toEqual([503, "7"]);
  expect(await res.text()).toBe(`could not fetch lead ${id} from the Graph API (the Graph API answered 400: User request limit reached (code 17)); nothing was stored, send it again`);
  expect(await stored(withToken.id, id)).toEqual([]);
});

test("a 400 for an expired token stores the lead without its answers and logs a warning naming the lead, never the token", async () => {
  const id = "3300000000000001";
  answers.set(id, graphError(400, { message: "Error validating access token: Session has expired on Friday, 14-Mar-25 10:00:00 PDT.", code: 190, error_subcode: 463 }));
  const res = await post(withToken.writeKey, notification(id));
  expect([res.status, await res.text()]).toEqual([200, "ok"]);
  const event = await waitFor(() => delivered(id)[0], { what: "the lead without answers at the destination" });
  expect(event.context.traits).toEqual({ pageId: PAGE, formId: FORM });
  expect(asked(id).length).toBe(1);
  const line = await waitFor(() => s.output().split("\n").find((l) => l.includes("facebook lead stored without its answers") && l.includes(id)), { what: "the warning" });
  const logged = JSON.parse(line);
  expect([logged.level, logged.lead, logged.status, logged.source, logged.type]).toEqual(["warn", id, 400, withToken.id, "facebook_lead_ads_native"]);
  expect(logged.error).toBe("the Graph API answered 400: Error validating access token: Session has expired on Friday, 14-Mar-25 10:00:00 PDT. (code 190, subcode 463)");
  expect(s.output()).not.toContain(TOKEN);
});

test("without a token no Graph call is made: the event carries the ids only", async () => {
  const id = "4400000000000001";
  answers.set(id, lead({ email: ["never@example.com"] }));
  const res = await post(withoutToken.writeKey, notification(id));
  expect([res.status, await res.text()]).toEqual([200, "ok"]);
  const event = await waitFor(() => delivered(id)[0], { what: "the lead from the source without a token" });
  expect(event.messageId).toBe(`${withoutToken.id}-${id}`);
  expect(event.context.traits).toEqual({ pageId: PAGE, formId: FORM });
  expect(asked(id)).toEqual([]);
});

test("the API never shows the token; a config sent back with the mask keeps it; the dry-run sample calls nothing", async () => {
  const shown = await api(s.url, "GET", `/v2/sources/${withToken.id}`);
  expect(shown.json.config).toEqual({ pageAccessToken: "********" });
  expect(shown.text).not.toContain(TOKEN);
  expect((await api(s.url, "GET", "/v2/sources")).text).not.toContain(TOKEN);
  const patched = await api(s.url, "PATCH", `/v2/sources/${withToken.id}`, { config: { ...shown.json.config, verifyToken: "hub-secret" } });
  expect(patched.json.config).toEqual({ pageAccessToken: "********", verifyToken: "********" });

  const id = "5500000000000001";
  answers.set(id, lead({ email: ["kept@example.com"] }));
  expect((await post(withToken.writeKey, notification(id))).status).toBe(200);
  await waitFor(() => delivered(id)[0], { what: "the lead after the update" });
  expect(delivered(id)[0]!.context.traits).toEqual({ pageId: PAGE, formId: FORM, email: "kept@example.com" });
  expect(asked(id).map((c) => c.query.access_token)).toEqual([TOKEN]);

  const before = graph.received.length;
  const sample = await api(s.url, "POST", `/v2/sources/${withToken.id}/sample`);
  expect(sample.status).toBe(200);
  expect(sample.json.events.map((e: any) => e.context.traits)).toEqual([{ pageId: "104838212295517", formId: "932710638426081" }]);
  expect(graph.received.length).toBe(before);
});

test("the outbound address policy applies: without loopback allowed the stand-in is refused and the lead is stored without answers", async () => {
  const other = await spawnSluice({ args: ["--destination-base-url", `FACEBOOK_LEAD_ADS_NATIVE=${graph.url}`], env: { SLUICE_ALLOW_DESTINATION_HOSTS: undefined } });
  try {
    const src = (await api(other.url, "POST", "/v2/sources", { name: "leads", type: "facebook_lead_ads_native", config: { pageAccessToken: TOKEN } })).json;
    const id = "6600000000000001";
    answers.set(id, lead({ email: ["unreachable@example.com"] }));
    const res = await fetch(`${other.url}/v1/webhook?writeKey=${src.writeKey}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(notification(id)) });
    expect([res.status, await res.text()]).toEqual([200, "ok"]);
    expect(asked(id)).toEqual([]);
    expect((await stored(src.id, id, other)).map((e) => e.context.traits)).toEqual([{ pageId: PAGE, formId: FORM }]);
    const line = await waitFor(() => other.output().split("\n").find((l) => l.includes("facebook lead stored without its answers")), { what: "the warning" });
    expect(JSON.parse(line).lead).toBe(id);
    expect(JSON.parse(line).error).toStartWith("refused to connect:");
    expect(other.output()).not.toContain(TOKEN);
  } finally {
    other.proc.kill("SIGTERM");
    await other.proc.exited;
    await cleanup(other.dataDir);
  }
});

/** The mapping called directly with the gateway's HTTP client on a Graph stand-in at `url`. */
function directContext(url: string, timeoutMs = 2000): MapContext & { warnings: Array<Record<string, unknown>> } {
  const warnings: Array<Record<string, unknown>> = [];
  const http = sourceHttp({ outbound: new Outbound({ allowDestinationHosts: ["127.0.0.0/8"], denyDestinationHosts: [] }), baseUrls: { FACEBOOK_LEAD_ADS_NATIVE: url }, timeoutMs }, "facebook_lead_ads_native");
  return { ...mapContext({ uuid: crypto.randomUUID(), now: Date.now(), config: { pageAccessToken: TOKEN }, id: "src-direct" }), http, warn: (message, fields) => void warnings.push({ message, ...fields }), warnings };
}

const request = (body: unknown) => ({ method: "POST", url: "/v1/webhook?writeKey=wk", proto: "HTTP/1.1", headers: { "Content-Type": ["application/json"] }, query_parameters: { writeKey: ["wk"] }, body: JSON.stringify(body) });

test("a Graph API that does not answer in time is a 503 (the client's time-out, then Facebook's retry)", async () => {
  let arrived = 0;
  const hanging = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => (arrived++, new Promise<Response>(() => {})) });
  try {
    const ctx = directContext(`http://127.0.0.1:${hanging.port}`, 150);
    let caught: unknown;
    try {
      await facebookLeadAdsNative.map(request(notification("7700000000000001")), ctx);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(AppError);
    expect([(caught as AppError).status, (caught as AppError).retryAfterSeconds, (caught as AppError).message]).toEqual([
      503,
      60,
      "could not fetch lead 7700000000000001 from the Graph API (timed out after 150 ms); nothing was stored, send it again",
    ]);
    expect(arrived).toBe(1);
    expect(ctx.warnings).toEqual([{ message: "facebook lead not hydrated yet: answered 503 so that Facebook delivers it again", lead: "7700000000000001", error: "timed out after 150 ms", retryAfterSeconds: 60 }]);
  } finally {
    hanging.stop(true);
  }
});

test("a redirect is not followed and a lead id that is no Graph id is not asked for: both stored without answers", async () => {
  const moved = startSink(() => new Response(null, { status: 302, headers: { location: "http://169.254.169.254/latest/meta-data/" } }));
  try {
    const ctx = directContext(moved.url);
    const { events } = await facebookLeadAdsNative.map(request(notification("8800000000000001", "me/accounts")), ctx);
    expect(events.map((e) => [e.anonymousId, (e.context as any).traits])).toEqual([
      ["8800000000000001", { pageId: PAGE, formId: FORM }],
      ["me/accounts", { pageId: PAGE, formId: FORM }],
    ]);
    expect(moved.received.map((r) => r.path)).toEqual(["/v24.0/8800000000000001"]);
    expect(ctx.warnings).toEqual([
      { message: "facebook lead stored without its answers", lead: "8800000000000001", error: "the Graph API answered 302", status: 302 },
      { message: "facebook lead stored without its answers", lead: "me/accounts", error: "its id is not a Graph API id" },
    ]);
  } finally {
    moved.stop();
  }
});

test("answers are written as own keys whatever their names; entries without values add nothing", () => {
  const event: Record<string, unknown> = { anonymousId: "1", context: { traits: { pageId: PAGE, formId: FORM } } };
  addAnswers(event, {
    field_data: [
      { name: "__proto__", values: [{ polluted: true }] },
      { name: "email", values: ["a@example.com", "b@example.com"] },
      { name: "skipped", values: [] },
      { name: "no_values" },
      { name: "not_a_list", values: "x" },
      null,
      { name: 42, values: [null] },
      { name: "pageId", values: ["from the form"] },
    ],
  });
  const traits = (event.context as any).traits;
  expect(Object.keys(traits)).toEqual(["42", "pageId", "formId", "__proto__", "email"]);
  expect(Object.hasOwn(traits, "__proto__")).toBe(true);
  expect(JSON.parse(JSON.stringify(traits))).toEqual(JSON.parse('{"pageId":"from the form","formId":"932710638426081","__proto__":{"polluted":true},"email":"a@example.com","42":null}'));
  expect(({} as any).polluted).toBeUndefined();
  const bare: Record<string, unknown> = { anonymousId: "2" };
  addAnswers(bare, { id: "2" });
  expect(bare).toEqual({ anonymousId: "2", context: { traits: {} } });
});
