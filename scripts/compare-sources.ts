/**
 * Compares Sluice's webhook source mappings (src/sources/<type>/) with RudderStack's published
 * cases (rudder-transformer's test/integrations/sources/<type>/data.ts). A developer tool, not
 * part of `npm test`: it needs a checkout of rudder-transformer (Elastic License 2.0), which it
 * reads and never writes into.
 *
 *   npx bun scripts/compare-sources.ts --rudder-transformer /path/to/rudder-transformer [type ...] [-v] [--case N] [--direct]
 *
 * Each case's requests go to `/v1/webhook` of a real Sluice process (compare-sources/server.ts),
 * or with --direct straight to the mapping (quicker, for work on one mapping), and what comes
 * out is compared with the published output: the events of `output.batch` as they reach a
 * destination, the answer of `outputToSource`, or the error's status and text. RudderStack's
 * `skip` cases are left out, as its own harness leaves them out. Equal means deep-equal, key order aside, and with two more rules: a UUID that both sides
 * generated counts as equal (the cases fix RudderStack's generator; Sluice's is not fixed), and an
 * event without `context` equals one with an empty `context` (rudder-transformer's framing adds
 * one to every event; Sluice's gateway does too). Cases RudderStack marks `skipGo` (not
 * reproducible through its own gateway) are counted apart.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { FixtureCopy, caseClock, installJestStandIn, restoreReplacedProperties, type RsCase } from "./compare-rudderstack/fixtures";
import { diffText, stable } from "./compare-rudderstack/compare";
import type { MapContext, SourceMapping, WebhookRequest } from "../src/sources/types";
import { AppError } from "../src/lib/errors";
import { memoryState } from "../src/sources/state-store";
import { ServerRun } from "./compare-sources/server";

const USAGE = "usage: npx bun scripts/compare-sources.ts --rudder-transformer /path/to/rudder-transformer [type ...] [-v] [--case N] [--direct]";
function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

let checkout: string | undefined;
let verbose = false;
let caseIndex: number | undefined;
let serverMode = true;
const wanted: string[] = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!;
  if (a === "--rudder-transformer") checkout = resolve(argv[++i] ?? fail("--rudder-transformer needs a value"));
  else if (a === "-v") verbose = true;
  else if (a === "--case") caseIndex = Number(argv[++i]);
  else if (a === "--direct") serverMode = false;
  else if (a.startsWith("-")) fail(`unknown option ${a}`);
  else wanted.push(a.toLowerCase());
}
if (!checkout) fail("--rudder-transformer is required");
if (!existsSync(join(checkout, "test/integrations/sources"))) fail(`${checkout} has no test/integrations/sources`);

export const SOURCE_FOLDERS = [
  "adjust", "appcenter", "appsflyer", "auth0", "braze", "canny", "close_crm", "cordial", "customerio", "extole",
  "facebook_lead_ads", "facebook_lead_ads_native", "formsort", "gainsightpx", "iterable", "mailjet", "mailmodo",
  "moengage", "monday", "olark", "ortto", "pagerduty", "pipedream", "refiner", "revenuecat", "satismeter", "segment",
  "shopify", "signl4", "slack", "webhook",
];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Both sides normalized for comparison: UUIDs become one token; an event's missing context becomes {}. */
function norm(v: unknown): unknown {
  if (typeof v === "string") return UUID.test(v) ? "<uuid>" : v;
  if (Array.isArray(v)) return v.map(norm);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== undefined).map(([k, x]) => [k, norm(x)]));
  return v;
}

function normEvents(events: any[]): any[] {
  return events.map((e) => norm({ context: {}, ...e }));
}

/**
 * The UUIDs a case fixes for RudderStack's generator (jest.spyOn(utils, 'generateUUID')): Sluice's
 * mapping is handed the same ones, so a fixed value that is not a UUID (`dummy-anonymous-id-0-0`)
 * still compares. Values set with mockReturnValueOnce are used once each, then the lasting one.
 */
const mockedUuid: { once: string[]; always?: string } = { once: [] };
function uuidMock(): any {
  const api: any = {
    mockReturnValue: (v: string) => ((mockedUuid.always = v), api),
    mockReturnValueOnce: (v: string) => (mockedUuid.once.push(v), api),
    mockImplementation: (f: () => string) => ((mockedUuid.always = f()), api),
    mockImplementationOnce: (f: () => string) => (mockedUuid.once.push(f()), api),
  };
  return api;
}
const nextUuid = () => mockedUuid.once.shift() ?? mockedUuid.always ?? crypto.randomUUID();

/** What a case's mockFns gets as its HTTP mock adapter: anything called on it is accepted and ignored. */
const anyMock: any = new Proxy(function () {}, { get: (_t, k) => (k === "then" ? undefined : anyMock), apply: () => anyMock });

function requestOf(item: any): WebhookRequest {
  const r = item?.request ?? {};
  return {
    method: r.method ?? "POST",
    url: r.url ?? "/v1/webhook",
    proto: r.proto ?? "HTTP/1.1",
    headers: r.headers ?? {},
    query_parameters: r.query_parameters ?? {},
    body: r.body,
  };
}

async function loadMapping(folder: string): Promise<SourceMapping | undefined> {
  const file = join(import.meta.dir, "../src/sources", folder, "index.ts");
  if (!existsSync(file)) return undefined;
  const mod = await import(file);
  return Object.values(mod).find((v: any) => v && typeof v === "object" && typeof v.map === "function") as SourceMapping | undefined;
}

/**
 * A source's own preparation of a case (scripts/compare-sources/<type>.ts exporting `prepare`):
 * the state RudderStack's case mocks hold in Redis before the case runs, e.g. Shopify's.
 */
const prepares = new Map<string, ((c: RsCase, state: MapContext["state"]) => Promise<void> | void) | undefined>();
function prepareOf(folder: string) {
  return prepares.get(folder);
}
async function loadPrepare(folder: string) {
  const file = join(import.meta.dir, "compare-sources", `${folder}.ts`);
  prepares.set(folder, existsSync(file) ? (await import(file)).prepare : undefined);
}

/** What Sluice makes of one input item, in the published output's shape. */
async function runDirect(mapping: SourceMapping, item: any, state: MapContext["state"]): Promise<any> {
  const ctx: MapContext = {
    source: {
      id: item?.source?.ID ?? "src-compare",
      name: item?.source?.Name ?? "compare",
      workspaceId: item?.source?.WorkspaceID ?? "ws-compare",
      writeKey: item?.source?.WriteKey ?? "write_key",
      config: item?.source?.Config ?? item?.source?.config ?? {},
    },
    state,
    uuid: nextUuid,
    now: () => caseClock.now ?? Date.now(),
  };
  try {
    const result = await mapping.map(requestOf(item), ctx);
    if (result.answer) return { outputToSource: { body: Buffer.from(result.answer.body).toString("base64"), contentType: result.answer.contentType }, statusCode: result.answer.status ?? 200 };
    return { output: { batch: result.events } };
  } catch (err) {
    if (err instanceof AppError) return { error: err.message, statusCode: err.status };
    return { error: `CRASH ${(err as Error)?.stack ?? err}`, statusCode: 500 };
  }
}

/**
 * A hydration case (RudderStack's `/v2/sources/<type>/hydrate`, a separate endpoint): its batch's
 * events through Sluice's hydration (src/sources/<type>/hydrate.ts, which the mapping runs in the
 * webhook request), with the case's Graph API mocks (`mock.onGet(url).reply(status, body)`) as
 * the HTTP client, answered in RudderStack's shape ({status, body: {batch}}). Only Facebook Lead
 * Ads hydrates, with the `pageAccessToken` of the case's `internalSecret`.
 */
async function runHydrate(folder: string, c: any): Promise<any> {
  const file = join(import.meta.dir, "../src/sources", folder, "hydrate.ts");
  if (!existsSync(file)) return { error: "no hydration" };
  const { lookUpLeads, addAnswers } = await import(file);
  const replies = new Map<string, { status: number; body: unknown }>();
  const mock: any = new Proxy({}, { get: (_t, k) => (k === "onGet" ? (url: string) => ({ reply: (status: number, body: unknown) => void replies.set(url, { status, body }) }) : () => anyMock) });
  c.mockFns?.(mock);
  // axios-mock-adapter matches the URL whatever the params, and answers 404 when nothing does.
  const http = async (url: string) => {
    const r = replies.get(url.split("?")[0]!);
    return r ? new Response(JSON.stringify(r.body), { status: r.status }) : new Response("", { status: 404 });
  };
  const { batch, source } = c.input.request.body;
  const events = batch.map((item: any) => structuredClone(item.event));
  const results: any[] = await lookUpLeads(events, source?.internalSecret?.pageAccessToken ?? "", http);
  results.forEach((r, i) => r?.ok && addAnswers(events[i], r.lead));
  const statusOf = (r: any) => (r?.ok ? 200 : (r?.status ?? 500));
  const failed = results.find((r) => !r?.ok);
  return { status: failed ? statusOf(failed) : 200, body: { batch: batch.map((item: any, i: number) => ({ ...item, event: events[i], statusCode: statusOf(results[i]) })) } };
}

/** In server mode events arrive in delivery order, which keeps each user's order only: compared as a set. */
const sortedIfServer = (events: any[]) => (serverMode ? [...events].sort((a, b) => (stable(a) < stable(b) ? -1 : 1)) : events);

function comparable(out: any): any {
  if (out?.output?.batch) return { batch: sortedIfServer(normEvents(out.output.batch)) };
  if (out?.outputToSource) return { outputToSource: out.outputToSource, statusCode: out.statusCode ?? 200 };
  return { error: out?.error, statusCode: out?.statusCode };
}

installJestStandIn();
{
  const jest = (globalThis as any).jest;
  const spyOn = jest.spyOn;
  jest.spyOn = (obj: unknown, key: string) => (key === "generateUUID" ? uuidMock() : spyOn(obj, key));
}
const copy = new FixtureCopy(checkout);
const server = serverMode ? await ServerRun.start() : undefined;
const folders = wanted.length ? wanted : SOURCE_FOLDERS;
let total = 0;
let matched = 0;
let apart = 0;
const rows: string[] = [];
try {
  for (const folder of folders) {
    if (!copy.addSource(folder)) {
      rows.push(`${folder}: no published cases`);
      continue;
    }
    const mapping = await loadMapping(folder);
    await loadPrepare(folder);
    const cases = await copy.sourceCases(folder);
    let t = 0, m = 0, a = 0;
    const notes: string[] = [];
    for (const [i, tc] of cases.entries()) {
      if (caseIndex !== undefined && i !== caseIndex) continue;
      const c = tc as RsCase & { skipGo?: string };
      // RudderStack's hydration step (a separate endpoint, not the mapping) has cases of its own.
      if ((c.input as any).pathSuffix === "/hydrate") {
        const got = await runHydrate(folder, c);
        const expected = c.output.response;
        const ok = stable(norm(got)) === stable(norm(expected));
        t++;
        if (ok) m++;
        else if (verbose) notes.push(`  [${i}] ${c.description} (hydration)\n${diffText(norm(got), norm(expected)).slice(0, 30).map((l) => "      " + l).join("\n")}`);
        continue;
      }
      if (!Array.isArray(c.input.request.body)) {
        if (verbose) notes.push(`  [${i}] ${c.description}: not a mapping case (pathSuffix ${(c.input as any).pathSuffix})`);
        continue;
      }
      mockedUuid.once = [];
      mockedUuid.always = undefined;
      (c as any).mockFns?.(anyMock);
      const items: any[] = c.input.request.body;
      const expected: any[] = c.output.response.body;
      server?.resetState();
      const state = server ? server.state() : memoryState();
      await prepareOf(folder)?.(c, state);
      const got: any[] = [];
      for (const [j, item] of items.entries()) {
        if (!mapping) got.push({ error: "no mapping", statusCode: 0 });
        else if (server) {
          // What the case fixes that a server cannot be told: its source's id, its generated ids.
          let exp = JSON.stringify(expected[j] ?? null);
          const caseSourceId = item?.source?.ID;
          if (typeof caseSourceId === "string" && caseSourceId) exp = exp.split(JSON.stringify(caseSourceId).slice(1, -1)).join("@@SRC@@");
          for (const v of [...mockedUuid.once, mockedUuid.always]) if (v && !UUID.test(v)) exp = exp.split(`"${v}"`).join(`"${crypto.randomUUID()}"`);
          const out = await server.run(mapping, item, JSON.parse(exp));
          expected[j] = JSON.parse(exp.split("@@SRC@@").join(server.lastSourceId));
          got.push(out);
        }
        else got.push(await runDirect(mapping, item, state));
      }
      restoreReplacedProperties();
      const ok = stable(expected.map(comparable)) === stable(got.map(comparable));
      if (c.skipGo) {
        a++;
        if (verbose) notes.push(`  [${i}] ${c.description}: apart (skipGo: ${c.skipGo}) ${ok ? "matches" : "differs"}`);
        continue;
      }
      t++;
      if (ok) m++;
      else if (verbose) notes.push(`  [${i}] ${c.description}\n${diffText(got.map(comparable), expected.map(comparable)).slice(0, 30).map((l) => "      " + l).join("\n")}`);
    }
    total += t;
    matched += m;
    apart += a;
    rows.push(`${folder}: ${m}/${t}${a ? ` (+${a} apart)` : ""}${mapping ? "" : " (no mapping)"}`);
    if (notes.length) rows.push(...notes);
  }
} finally {
  copy.remove();
  await server?.close();
}
console.log(rows.join("\n"));
console.log(`\n${matched}/${total} matched; ${apart} set apart (skipGo)`);
